// What every CXL.cache component shares besides the message itself
// (kernel/txn.hpp): protocol errors, line addresses, the functional line
// values a coherent run checks, and what its watchdog sees of requests
// outstanding.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "cxlcore/config/params.hpp"
#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

// A broken protocol invariant: reported as an error, never undefined behaviour.
[[noreturn]] inline void protocolError(const std::string& what) {
    throw std::logic_error("CXL.cache protocol error: " + what);
}

// A line address as it appears in reports ("0x1c0").
inline std::string hexAddr(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

constexpr uint64_t lineOf(uint64_t a) { return a & ~uint64_t(kLineBytes - 1); }

// Functional memory contents: a version number per line, 0 until written.
using Values = std::unordered_map<uint64_t, uint64_t>;

// Reads do not grow the functional store: unwritten lines read as 0.
inline uint64_t valueOf(const Values& v, uint64_t line) {
    auto it = v.find(line);
    return it == v.end() ? 0 : it->second;
}

// Progress of a coherent run, for the watchdog: requests (accesses and DMA
// transfers) outstanding and the last time anything completed.
struct CoherentProgress {
    uint64_t outstanding = 0;
    Tick lastProgress = 0;
    void progress(Tick now) { lastProgress = now; }
};

// The oldest outstanding request found in a system, and where it waits.
struct Oldest {
    Tick issued = kNever;
    std::string where;
    template <typename F>
    void see(Tick t, F&& describe) {
        if (t < issued) {
            issued = t;
            where = describe();
        }
    }
};

}  // namespace cxlcore
