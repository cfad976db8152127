#include "cxlcore/system/placement.hpp"

#include <sstream>

namespace cxlcore {

PagePlacement::PagePlacement(const HostPart& s, const MemTarget& t, const std::string& workload) : workload_(workload) {
    std::vector<std::string> names = t.windows;
    if (names.empty()) names.push_back(s.windows.front().p.name);
    if (!t.weights.empty() && t.weights.size() != names.size())
        throw ConfigError(workload + ".target: " + std::to_string(t.weights.size()) + " weights for " +
                          std::to_string(names.size()) + " windows; allowed: one weight per window");
    std::string allowed;
    for (const MemoryWindow& w : s.windows) allowed += (allowed.empty() ? "" : ", ") + w.p.name;
    const uint64_t page = s.p.host.page_bytes;
    while ((1ull << shift_) < page) ++shift_;
    mask_ = page - 1;
    uint32_t total = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        const int k = s.windowIndex(names[i]);
        if (k < 0)
            throw ConfigError(workload + ".target = '" + names[i] + "' is not a window of the address map; allowed: " +
                              allowed);
        for (uint32_t j : index_)
            if (j == uint32_t(k))
                throw ConfigError(workload + ".target names window '" + names[i] + "' twice; allowed: each window once");
        const uint32_t w = t.weights.empty() ? 1 : t.weights[i];
        if (w < 1 || w > 255)
            throw ConfigError(workload + ".target weight of " + names[i] + " = " + fmtNum(w) +
                              " is out of range; allowed: a whole number from 1 to 255");
        const WindowParams& wp = s.windows[size_t(k)].p;
        index_.push_back(uint32_t(k));
        names_.push_back(names[i]);
        weight_.push_back(w);
        base_.push_back(wp.base);
        limit_.push_back(wp.size ? wp.size : ~0ull - wp.base);
        for (uint32_t r = 0; r < w; ++r) {
            slotWindow_.push_back(uint32_t(i));
            slotRank_.push_back(r);
        }
        total += w;
    }
    total_ = Divisor(total);
    ways_ = uint32_t(names.size());
}

std::string PagePlacement::describe() const {
    std::string out;
    for (size_t i = 0; i < names_.size(); ++i)
        out += (i ? "," : "") + names_[i] + (ways_ > 1 ? ":" + std::to_string(weight_[i]) : "");
    return out;
}

void PagePlacement::overflow(uint64_t va, uint32_t j) const {
    std::ostringstream os;
    os << workload_ << ": virtual address 0x" << std::hex << va << " lands beyond the end of window " << names_[j]
       << std::dec << " (" << limit_[j] << " bytes); allowed: a footprint the target's windows hold (make "
       << names_[j] << ".size larger)";
    throw ConfigError(os.str());
}

}  // namespace cxlcore
