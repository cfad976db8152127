// Host-managed device memory (HDM) decoding: a host window interleaved over
// root ports.
#pragma once

#include <cstdint>

namespace cxlcore {

// Host-managed device memory decoder: the host window [base, base + size)
// interleaved over root ports at a granularity, with the 3/6/12-way modes CXL
// allows. The way is the chunk index modulo the ways, which is the
// specification's rule: for 3 x 2^k ways, HPA[IG+8+k-1 : IG+8] picks within a
// group of 2^k and HPA[51 : IG+8+k] modulo 3 picks the group.
class HdmDecoder {
  public:
    // The whole physical address space a 52-bit host can address: the
    // standalone engine's window, where nothing else shares the map.
    static constexpr uint64_t kMaxWindow = 1ull << 52;
    HdmDecoder(uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity);
    struct Target {
        uint32_t port;
        uint64_t dpa;
    };
    bool contains(uint64_t hpa) const { return hpa >= base_ && hpa - base_ < size_; }
    // An address outside the window is a configuration error (a trace or a
    // host map that sends it here), not a device access.
    Target decode(uint64_t hpa) const {
        if (!contains(hpa)) outside(hpa);
        uint64_t off = hpa - base_;
        uint64_t chunk = off / gran_;
        return Target{uint32_t(chunk % ways_), (chunk / ways_) * gran_ + off % gran_};
    }
    uint64_t encode(uint32_t port, uint64_t dpa) const {
        return base_ + ((dpa / gran_) * ways_ + port) * gran_ + dpa % gran_;
    }
    uint64_t base() const { return base_; }
    uint64_t size() const { return size_; }

  private:
    [[noreturn]] void outside(uint64_t hpa) const;
    uint64_t base_, size_;
    uint32_t ways_, gran_;
};

}  // namespace cxlcore
