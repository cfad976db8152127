// Where a workload's pages lie in the host address map.
#pragma once

#include <string>
#include <vector>

#include "cxlcore/system/system.hpp"

namespace cxlcore {

// A workload's target: one window of the map, or several interleaved by
// integer weights. Empty: the first window (a trace: host physical addresses).
struct MemTarget {
    std::vector<std::string> windows;
    std::vector<uint32_t> weights;  // one per window, 1 to 255; empty: all 1
};

// Virtual to physical placement by pages of the host's page size, with the
// semantics of Linux's weighted_interleave (mm/mempolicy.c,
// weighted_interleave_nid): with weights w_1..w_k and W = sum w_j, virtual page
// n goes to the window at position n mod W of the sequence w_1 x window 1,
// w_2 x window 2, ...; each window fills its own pages in order, so page n is
// that window's page (n / W) * w_j + (its rank within those w_j positions).
// One window: physical = its base + virtual.
class PagePlacement {
  public:
    // Identity: a trace's host physical addresses.
    PagePlacement() = default;
    // Over the windows of host `s`'s address map.
    PagePlacement(const HostPart& s, const MemTarget& t, const std::string& workload);

    uint64_t operator()(uint64_t va) const {
        if (ways_ == 0) return va;
        if (ways_ == 1) {
            if (va >= limit_[0]) overflow(va, 0);
            return base_[0] + va;
        }
        const uint64_t page = va >> shift_, slot = total_.mod(page);
        const uint32_t j = slotWindow_[slot];
        const uint64_t off = ((total_.div(page) * weight_[j] + slotRank_[slot]) << shift_) | (va & mask_);
        if (off >= limit_[j]) overflow(va, j);
        return base_[j] + off;
    }
    // Indices into HostPart::windows of the windows used.
    const std::vector<uint32_t>& windows() const { return index_; }
    // "name" or "name:w,name:w" (what the target was).
    std::string describe() const;

  private:
    [[noreturn]] void overflow(uint64_t va, uint32_t j) const;
    uint32_t ways_ = 0;
    int shift_ = 12;
    uint64_t mask_ = 4095;
    Divisor total_;
    std::vector<uint64_t> base_, limit_;
    std::vector<uint32_t> weight_, index_, slotWindow_, slotRank_;
    std::vector<std::string> names_;
    std::string workload_;
};

}  // namespace cxlcore
