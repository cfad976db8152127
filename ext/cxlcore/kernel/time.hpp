// Simulated time and the errors every component may raise.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace cxlcore {

using Tick = uint64_t;  // picoseconds, gem5's default tick
constexpr Tick kNever = std::numeric_limits<Tick>::max();
constexpr uint32_t kLineBytes = 64;

inline Tick nsToTicks(double ns) { return static_cast<Tick>(ns * 1000.0 + 0.5); }
inline double ticksToNs(Tick t) { return static_cast<double>(t) / 1000.0; }

// Bad parameters: names the field and the allowed values.
class ConfigError : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// A run that stopped making progress: the message names the component and
// queue holding the oldest request and its age, so a hang is never silent.
class StallError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Checkpoints. Some timing state outlives a drain (open rows, refresh phase,
// the flit being packed, credits still on their way back), so a host that
// checkpoints (gem5) walks it as named integers; the same walk saves and
// restores. Components are walked only when idle: no transaction in flight.
class StateVisitor {
  public:
    virtual ~StateVisitor() = default;
    virtual bool loading() const = 0;
    virtual void field(const std::string& name, uint64_t& v) = 0;
    template <typename T>
    void operator()(const std::string& name, T& x) {
        uint64_t u = static_cast<uint64_t>(x);
        field(name, u);
        x = static_cast<T>(u);
    }
};

}  // namespace cxlcore
