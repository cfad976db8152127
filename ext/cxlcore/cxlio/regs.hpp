// A block of little-endian device registers with per-bit access types, the
// way the PCIe and CXL specifications describe them: RO (hardware sets, software
// writes ignored), RW, and RW1C (software clears a status bit by writing 1).
// Configuration space and memory-mapped register blocks are both built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cxlcore {
namespace cxlio {

// Little-endian field access on a byte vector (registers and mailbox payloads).
inline uint64_t getLe(const std::vector<uint8_t>& b, size_t off, unsigned size) {
    uint64_t v = 0;
    for (unsigned i = 0; i < size && off + i < b.size(); ++i) v |= uint64_t(b[off + i]) << (8 * i);
    return v;
}
inline void putLe(std::vector<uint8_t>& b, size_t off, unsigned size, uint64_t v) {
    if (b.size() < off + size) b.resize(off + size);
    for (unsigned i = 0; i < size; ++i) b[off + i] = uint8_t(v >> (8 * i));
}

// A register access is naturally aligned and 1, 2, 4 (or, where allowed, 8)
// bytes wide, and lies within the block. Anything else is a malformed access
// that hardware drops (writes) or answers with all ones (reads).
inline bool accessOk(uint64_t off, unsigned size, uint64_t limit, unsigned maxSize) {
    return (size == 1 || size == 2 || size == 4 || (size == 8 && maxSize >= 8)) && off % size == 0 && off < limit &&
           size <= limit - off;
}

// What a refused read answers: all ones, as wide as the access (at most 8 bytes).
inline uint64_t allOnes(unsigned size) { return size == 0 ? 0 : size >= 8 ? ~0ull : (1ull << (8 * size)) - 1; }

class RegBlock {
  public:
    explicit RegBlock(size_t bytes) : data_(bytes), rw_(bytes), w1c_(bytes) {}
    size_t size() const { return data_.size(); }
    uint64_t get(size_t off, unsigned size) const { return getLe(data_, off, size); }
    // The hardware's view: sets bits whatever their access type.
    void set(size_t off, unsigned size, uint64_t v) { putLe(data_, off, size, v); }
    void setBits(size_t off, unsigned size, uint64_t bits, bool on) {
        const uint64_t v = get(off, size);
        set(off, size, on ? v | bits : v & ~bits);
    }
    // Which bits software may write (rw) or clear by writing 1 (w1c); the rest are RO.
    void access(size_t off, unsigned size, uint64_t rw, uint64_t w1c = 0) {
        putLe(rw_, off, size, rw);
        putLe(w1c_, off, size, w1c);
    }
    // Software's write: RW bits take the new value, RW1C bits clear where it has ones.
    void write(size_t off, unsigned size, uint64_t v) {
        const uint64_t rw = getLe(rw_, off, size), w1c = getLe(w1c_, off, size), old = get(off, size);
        set(off, size, (old & ~rw & ~(w1c & v)) | (v & rw));
    }
    const std::vector<uint8_t>& bytes() const { return data_; }
    std::vector<uint8_t>& values() { return data_; }  // for restoring a saved state only

  private:
    std::vector<uint8_t> data_, rw_, w1c_;
};

// What software left in a function's registers, as bytes, for a simulator's
// checkpoints: each part a length and its bytes, read back in the same order.
class StateOut {
  public:
    explicit StateOut(std::vector<uint8_t>& out) : out_(out) {}
    void u64(uint64_t v) { putLe(out_, out_.size(), 8, v); }
    void bytes(const std::vector<uint8_t>& b) {
        u64(b.size());
        out_.insert(out_.end(), b.begin(), b.end());
    }

  private:
    std::vector<uint8_t>& out_;
};

class StateIn {
  public:
    // `what` names the state in errors (a function's name).
    StateIn(const std::vector<uint8_t>& in, std::string what) : in_(in), what_(std::move(what)) {}
    uint64_t u64();
    // Fills `b`, which must already have the saved length (registers never change size).
    void bytes(std::vector<uint8_t>& b, const char* part);
    void done() const;  // all of it read
    [[noreturn]] void fail(const char* part) const;

  private:
    const std::vector<uint8_t>& in_;
    std::string what_;
    size_t pos_ = 0;
};

// A function's or register block's state as one byte string, and back; a state
// saved by another kind or size of function is a ConfigError naming `name`.
template <class T>
std::vector<uint8_t> saveState(const T& regs) {
    std::vector<uint8_t> state;
    StateOut out(state);
    regs.save(out);
    return state;
}

template <class T>
void loadState(T& regs, const std::vector<uint8_t>& state, const std::string& name) {
    StateIn in(state, name);
    regs.load(in);
    in.done();
}

// Malformed or refused accesses, counted rather than fatal: a guest driver's
// bug must never stop the simulation.
struct IoStats {
    uint64_t configReads = 0, configWrites = 0, badConfigAccesses = 0;
    uint64_t mmioReads = 0, mmioWrites = 0, badMmioAccesses = 0;
    uint64_t lockedWrites = 0;     // writes to a committed or locked decoder, dropped
    uint64_t commits = 0, commitErrors = 0;
    uint64_t doeRequests = 0, doeErrors = 0;
    uint64_t mailboxCommands = 0, mailboxFailures = 0;  // failures: any return code but Success
};

}  // namespace cxlio
}  // namespace cxlcore
