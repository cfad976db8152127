// A CXL component register block (CXL 3.1 section 8.2.3/8.2.4): 64 KiB, whose
// CXL.cache/CXL.mem part at 0x1000 starts with a capability header array
// pointing to the RAS capability, the link capability and the HDM decoder
// capability. The HDM decoders are what the OS programs to build regions:
// `committed()` is what the engine routes by.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cxlcore/cxlio/regs.hpp"

namespace cxlcore {
struct LinkParams;
namespace cxlio {

// Which component the block belongs to: an endpoint's decoders translate HPA
// to DPA (their target list registers hold the DPA skip); a host bridge's or
// switch upstream port's route to downstream ports (their target list names
// port numbers). Root and switch downstream ports have no decoders.
enum class ComponentKind : uint8_t { Endpoint, HostBridge, SwitchUpstream, RootPort, SwitchDownstream };

constexpr uint32_t kComponentBytes = 0x10000, kCacheMemOffset = 0x1000;
// Capability IDs (CXL 3.1 table 8-22) and where this model places them in the CXL.cache/mem range.
constexpr uint16_t kCapIdCacheMem = 1, kCapIdRas = 2, kCapIdLink = 4, kCapIdHdm = 5;
constexpr uint32_t kRasOffset = 0x40, kRasBytes = 0x58, kLinkOffset = 0xA0, kLinkBytes = 0x38, kHdmOffset = 0x100;
constexpr uint64_t kHdmUnit = 256ull << 20;  // decoder bases and sizes are multiples of 256 MiB

struct CommittedDecoder {
    uint32_t index = 0;
    uint64_t base = 0, size = 0;          // host physical range
    uint32_t ways = 1, granularity = 256; // interleave ways and bytes
    std::vector<uint32_t> targets;        // downstream port numbers, one per way (bridges and switches)
    uint64_t dpaBase = 0, dpaSize = 0;    // device physical range (endpoints: size / ways, after the skip)
    bool locked = false, hostOnly = true;
};

class ComponentRegs {
  public:
    // decoders: 1, 2, 4, 6, 8 or 10 (0 for ports without decoders); targets: the
    // target list length (1, 2, 4 or 8) of bridges and switches; dpaCapacity: an
    // endpoint's memory (decoders may not map past it).
    ComponentRegs(ComponentKind kind, uint32_t decoders, uint32_t targets, uint64_t dpaCapacity, const LinkParams& link);

    // Accesses at offsets within the 64 KiB block: 4 or 8 bytes, naturally aligned
    // (CXL 3.1 section 8.2.2); others are counted and dropped (reads: all ones).
    uint64_t read(uint32_t off, unsigned size);
    void write(uint32_t off, unsigned size, uint64_t value);

    // The decoders committed as the OS programmed them, in decoder order.
    std::vector<CommittedDecoder> committed() const;
    bool hdmEnabled() const;  // decodes by its committed decoders (endpoints: HDM Decoder Enable set)
    bool poisonOnDecodeError() const;  // reads no decoder covers answer poison (else all ones)
    uint32_t decoders() const { return decoders_; }
    const std::string& lastCommitError() const { return lastError_; }
    // Programs and commits decoder `i` as platform firmware or cxl_decoder_commit
    // does, by register writes (interleave into control, base, size, target list
    // or DPA skip, then Commit), and sets HDM Decoder Enable. Returns the
    // registers' reason when they refuse (empty: committed).
    std::string commitDecoder(uint32_t i, const CommittedDecoder& d, uint64_t skip = 0);
    // Called after a decoder commits or uncommits and after HDM Decoder Global
    // Control changes: what a host bridge routes by may have changed.
    void onDecoderChange(std::function<void()> f) { changed_ = std::move(f); }
    // A RAS event as hardware reports it: sets an (un)correctable status bit and,
    // for the first uncorrectable error, the First Error Pointer.
    void injectRas(bool uncorrectable, unsigned bit);
    // Checkpoints: the registers; loading them tells onDecoderChange (the routes follow).
    void save(StateOut& out) const { out.bytes(regs_.bytes()); }
    void load(StateIn& in);
    IoStats* stats = &own_;  // the owning function's counters

  private:
    uint32_t decoderReg(uint32_t i, uint32_t reg) const { return kCacheMemOffset + kHdmOffset + 0x10 + 0x20 * i + reg; }
    bool isCommitted(uint32_t i) const;
    CommittedDecoder decode(uint32_t i) const;
    std::string checkCommit(uint32_t i) const;  // empty: the decoder may commit
    void writeDecoder(uint32_t i, uint32_t reg, unsigned size, uint64_t value);
    RegBlock regs_;
    ComponentKind kind_;
    uint32_t decoders_, targets_;
    uint64_t capacity_;
    std::string lastError_;
    std::function<void()> changed_;
    IoStats own_;
};

}  // namespace cxlio
}  // namespace cxlcore
