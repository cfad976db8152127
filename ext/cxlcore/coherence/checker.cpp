#include "cxlcore/coherence/checker.hpp"

#ifdef CXL_TRACE
#include <cstdio>
#include <cstdlib>
#endif

namespace cxlcore {

void CoherenceChecker::fail(const std::string& what, Tick now) {
    if (!violations_++) first_ = "at " + fmtNum(ticksToNs(now)) + " ns: " + what;
}

std::string CoherenceChecker::who(uint32_t agent) const {
    if (agent < names_.size()) return names_[agent];
    return agent + 1 == agents_ ? std::string("host") : "device " + std::to_string(agent);
}

void CoherenceChecker::state(uint64_t line, uint32_t agent, MState s, Tick now) {
    if (!windows_.empty()) line = key(agent, line);
#ifdef CXL_TRACE
    if (getenv("TRACE_LINE") && line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
        fprintf(stderr, "%10.3f   state %s -> %s\n", ticksToNs(now), who(agent).c_str(), stateName(s));
#endif
    L& l = get(line);
    l.st[agent] = s;
    ++checks_;
    uint32_t writers = 0, readers = 0;
    for (uint32_t i = 0; i < agents_; ++i) {
        writers += l.st[i] == MState::E || l.st[i] == MState::M;
        readers += l.st[i] == MState::S;
    }
    if (writers > 1 || (writers == 1 && readers > 0)) {
        std::string states;
        for (uint32_t i = 0; i < agents_; ++i)
            states += (i ? ", " : "") + who(i) + " " + stateName(l.st[i]);
        fail("single-writer/multiple-reader violated on line " + hexAddr(line) + " (" + states + ")", now);
    }
}

void CoherenceChecker::read(uint64_t line, uint32_t agent, uint64_t value, Tick now) {
    if (!windows_.empty()) line = key(agent, line);
    L& l = get(line);
    ++checks_;
    if (l.st[agent] == MState::I)
        fail(who(agent) + " read line " + hexAddr(line) + " without holding it", now);
    if (value != l.value)
        fail(who(agent) + " read stale data on line " + hexAddr(line) + ": got version " + std::to_string(value) +
                 ", latest is " + std::to_string(l.value),
             now);
}

void CoherenceChecker::write(uint64_t line, uint32_t agent, uint64_t value, Tick now) {
    if (!windows_.empty()) line = key(agent, line);
#ifdef CXL_TRACE
    if (getenv("TRACE_LINE") && line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
        fprintf(stderr, "%10.3f   write %s v=%llu\n", ticksToNs(now), who(agent).c_str(), (unsigned long long)value);
#endif
    L& l = get(line);
    ++checks_;
    if (agent < agents_ && l.st[agent] != MState::M && l.st[agent] != MState::E)
        fail(who(agent) + " wrote line " + hexAddr(line) + " in state " + stateName(l.st[agent]), now);
    l.value = value;
}

void CoherenceChecker::memory(uint64_t line, uint64_t value, Tick now) {
    L& l = get(line);
    ++checks_;
    if (value != l.value)
        fail("memory supplied stale data on line " + hexAddr(line) + ": version " + std::to_string(value) + ", latest is " +
                 std::to_string(l.value),
             now);
}

}  // namespace cxlcore
