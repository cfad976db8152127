// Single-writer/multiple-reader and data-value checker of the coherence
// invariants, fed by every cache state change, read, write and memory supply.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/config/params.hpp"

namespace cxlcore {

// Agents are the devices' caches and the host (index = number of devices).
class CoherenceChecker {
  public:
    explicit CoherenceChecker(uint32_t agents) : agents_(agents) {}
    void state(uint64_t line, uint32_t agent, MState s, Tick now);
    void read(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    void write(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    // Memory supplies a line no cache holds dirty: it must be the latest value.
    void memory(uint64_t line, uint64_t value, Tick now);
    uint64_t violations() const { return violations_; }
    uint64_t checks() const { return checks_; }
    const std::string& first() const { return first_; }

  private:
    struct L {
        std::vector<MState> st;
        uint64_t value = 0;
    };
    L& get(uint64_t line);
    void fail(const std::string& what, Tick now);
    uint32_t agents_;
    std::unordered_map<uint64_t, L> lines_;
    uint64_t violations_ = 0, checks_ = 0;
    std::string first_;
};

}  // namespace cxlcore
