// Seeded random numbers: identical inputs give bit-identical results.
#pragma once

#include <cstdint>
#include <string>

#include "cxlcore/kernel/time.hpp"

namespace cxlcore {

// SplitMix64: small, seedable, good enough for traffic generation.
class Rng {
  public:
    explicit Rng(uint64_t seed = 1) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    void checkpoint(StateVisitor& v, const std::string& n) { v(n, s_); }

  private:
    uint64_t s_;
};

}  // namespace cxlcore
