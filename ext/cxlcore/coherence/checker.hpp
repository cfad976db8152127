// Single-writer/multiple-reader and data-value checker of the coherence
// invariants, fed by every cache state change, read, write and memory supply.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "cxlcore/coherence/line_table.hpp"
#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/config/params.hpp"

namespace cxlcore {

// Agents are the devices' caches and the host (index = number of devices).
class CoherenceChecker {
  public:
    explicit CoherenceChecker(uint32_t agents) : agents_(agents) {
        if (agents > kMaxAgents) throw std::invalid_argument("coherence checker: more than 33 agents");
    }
    void state(uint64_t line, uint32_t agent, MState s, Tick now);
    void read(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    void write(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    // Memory supplies a line no cache holds dirty: it must be the latest value.
    void memory(uint64_t line, uint64_t value, Tick now);
    // What messages call each agent (else device 0, 1, ... and the host).
    void name(std::vector<std::string> names) { names_ = std::move(names); }
    // Lines an agent reaches at [base, end) are checked as their offset from
    // base: a shared region mapped at different host addresses is one set of lines.
    void window(uint32_t agent, uint64_t base, uint64_t end) { windows_.push_back({agent, base, end}); }
    uint64_t violations() const { return violations_; }
    uint64_t checks() const { return checks_; }
    const std::string& first() const { return first_; }

  private:
    // Every device the home's 32-bit sharer masks can name, and the host.
    static constexpr uint32_t kMaxAgents = 33;
    // A line's states in place (MState::I is 0): a checked run allocated a
    // hash node and a vector for every line it touched.
    struct L {
        MState st[kMaxAgents] = {};
        uint64_t value = 0;
    };
    L& get(uint64_t line) { return lines_.get(line); }
    uint64_t key(uint32_t agent, uint64_t line) const {
        for (const Win& w : windows_)
            if (w.agent == agent && line >= w.base && line < w.end) return line - w.base;
        return line;
    }
    struct Win {
        uint32_t agent;
        uint64_t base, end;
    };
    std::vector<Win> windows_;
    void fail(const std::string& what, Tick now);
    std::string who(uint32_t agent) const;
    std::vector<std::string> names_;
    uint32_t agents_;
    LineTable<L> lines_;
    uint64_t violations_ = 0, checks_ = 0;
    std::string first_;
};

}  // namespace cxlcore
