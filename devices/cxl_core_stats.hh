// The core's statistics of one component as gem5 stats of a SimObject, named
// by the same report function the standalone engine calls
// (cxlcore/system/report.hpp): `<stat>` under the object, so stats.txt reads
// system.<object path>.<stat> where the standalone report reads
// <component>.<stat>. Values are read from the core when stats are dumped.
#ifndef __DEVICES_CXL_CORE_STATS_HH__
#define __DEVICES_CXL_CORE_STATS_HH__

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/statistics.hh"
#include "cxlcore/system/report.hpp"
#include "sim/cur_tick.hh"

namespace gem5
{

class CXLCoreStats
{
  public:
    // One of the report functions bound to its component: reports it over
    // [start, end] under `path`.
    using Fill = std::function<void(cxlcore::Report &, const std::string &,
                                    cxlcore::Tick, cxlcore::Tick)>;

    // Registers, under `parent`, every stat `fill` reports now (with the
    // component built: call it from regStats()), each `prefix.<stat>` or,
    // with no prefix, `<stat>`.
    void
    reg(statistics::Group *parent, const std::string &prefix, Fill fill)
    {
        fills.push_back({prefix, std::move(fill)});
        cxlcore::Report r;
        fills.back().second(r, prefix, start, curTick());
        for (const auto &kv : r) {
            const std::string name =
                prefix.empty() ? kv.first.substr(1) : kv.first;
            auto v = std::make_unique<statistics::Value>(
                parent, name.c_str(), statistics::units::Unspecified::get(),
                "the core's statistic (docs/reference/stats.md)");
            v->functor([this, name] { return value(name); });
            values.push_back(std::move(v));
        }
    }

    // gem5 reset its stats: rates and averages start again here (the
    // owner resets the core's counters).
    void reset() { start = curTick(); at = MaxTick; }

  private:
    double
    value(const std::string &name)
    {
        // One report per dump, however many of its stats are read.
        if (at != curTick()) {
            cache.clear();
            for (auto &f : fills) {
                cxlcore::Report r;
                f.second(r, f.first, start, curTick());
                for (const auto &kv : r)
                    cache[f.first.empty() ? kv.first.substr(1) : kv.first] =
                        kv.second;
            }
            at = curTick();
        }
        auto it = cache.find(name);
        return it == cache.end() ? 0.0 : it->second;
    }

    std::vector<std::pair<std::string, Fill>> fills;
    std::vector<std::unique_ptr<statistics::Value>> values;
    std::map<std::string, double> cache;
    Tick start = 0, at = MaxTick;
};

} // namespace gem5

#endif // __DEVICES_CXL_CORE_STATS_HH__
