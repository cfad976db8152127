// Statistics named by component path: every counter a built component keeps
// is reported as `<path>.<stat>`, `path` being its graph component's name.
// System::report calls these functions for every component it built; the gem5
// wrappers call the same ones under their SimObjects, so the standalone report
// and gem5's stats.txt use the same names. componentStats() lists what each
// component type reports (docs/reference/stats.md is generated from it).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cxlcore/devices/type3.hpp"
#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/fabric/switch.hpp"
#include "cxlcore/host/remote_socket.hpp"
#include "cxlcore/host/uncore.hpp"
#include "cxlcore/link/link.hpp"
#include "cxlcore/mem/dram.hpp"

namespace cxlcore {

// Ordered name -> value pairs: every result the engine returns.
using Report = std::vector<std::pair<std::string, double>>;

// One statistic of a component type: its name after `<path>.` (`<i>` stands
// for an index, as in dsp<i>), its unit, when it is reported ("" always) and
// what it counts.
struct StatSpec {
    std::string name, unit, when, doc;
};

// The statistics of a registered component type (graph.hpp's types); empty
// for a type that reports none of its own yet.
const std::vector<StatSpec>& componentStats(const std::string& type);

// Each over the interval [s, e] (ticks) where rates are concerned.
void reportDram(Report& r, const std::string& path, const DramController& d, Tick s, Tick e);
// `dir`: "rev_" for an inter-switch link's second direction.
void reportLink(Report& r, const std::string& path, const CxlLink& l, Tick s, Tick e, const std::string& dir = "");
void reportType3(Report& r, const std::string& path, const Type3Device& d, Tick s, Tick e);
void reportSwitch(Report& r, const std::string& path, const CxlSwitch& sw, Tick s, Tick e);
void reportHostBridge(Report& r, const std::string& path, const HostBridge& b);
// The remote socket's inter-socket link (its DRAM is a dram component of its own).
void reportRemoteSocket(Report& r, const std::string& path, const InterSocket& rs, Tick s, Tick e);
// What a host's address map sent to each window, `windows[i]` naming window i.
void reportHostWindows(Report& r, const std::string& path, const Uncore& u, const std::vector<std::string>& windows,
                       Tick s, Tick e);

}  // namespace cxlcore
