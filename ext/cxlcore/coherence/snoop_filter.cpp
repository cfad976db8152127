// The home agent's snoop filter: which devices hold each line (HLine::sharers)
// is kept through setSharers, which counts the lines with a device copy and,
// past snoop_filter_lines, evicts the oldest idle one by invalidating it in
// the devices (an SFEvict transaction).
#include "cxlcore/coherence/home_agent.hpp"

namespace cxlcore {

void HomeAgent::setSharers(HLine& l, uint64_t line, uint32_t sharers) {
    const bool was = l.sharers != 0, is = sharers != 0;
    l.sharers = sharers;
    if (was == is) return;
    if (!is) {
        --sfLines_;
        return;
    }
    ++sfLines_;
    if (!p_.snoop_filter_lines) return;
    sfOrder_.push_back(line);
    if (sfLines_ > p_.snoop_filter_lines) sfMakeRoom(line);
    if (sfOrder_.size() > 4 * size_t(p_.snoop_filter_lines) + 64) {
        // Drop entries of lines that left the filter since.
        std::deque<uint64_t> keep;
        for (uint64_t x : sfOrder_) {
            const HLine* it = lines_.find(x);
            if (it && it->sharers) keep.push_back(x);
        }
        sfOrder_.swap(keep);
    }
}

void HomeAgent::sfMakeRoom(uint64_t except) {
    // The oldest tracked line that is not busy is invalidated in the devices.
    for (size_t n = sfOrder_.size(); n; --n) {
        const uint64_t v = sfOrder_.front();
        sfOrder_.pop_front();
        const HLine* it = lines_.find(v);
        if (!it || !it->sharers) continue;
        if (v == except || it->active || !it->wait.empty()) {
            sfOrder_.push_back(v);
            continue;
        }
        HTxn* t = txns_.get();
        t->opc = Opc::SFEvict;
        t->line = v;
        enqueue(t);
        return;
    }
}

}  // namespace cxlcore
