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

#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/devices/cxl_nic.hpp"
#include "cxlcore/devices/type3.hpp"
#include "cxlcore/fabric/cache_switch.hpp"
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
// A protocol name as a statistic's part ("RdOwn" -> "rdown").
std::string lowerCase(std::string name);

// Each over the interval [s, e] (ticks) where rates are concerned.
void reportDram(Report& r, const std::string& path, const DramController& d, Tick s, Tick e);
// `dir`: "rev_" for an inter-switch link's second direction.
void reportLink(Report& r, const std::string& path, const CxlLink& l, Tick s, Tick e, const std::string& dir = "");
// A link built once for each copy of an accelerator (accel.devices of them):
// the copies' counters and rates summed, utilization their mean.
void reportLink(Report& r, const std::string& path, const std::vector<const CxlLink*>& copies, Tick s, Tick e,
                const std::string& dir = "");
void reportType3(Report& r, const std::string& path, const Type3Device& d, Tick s, Tick e);
void reportSwitchPort(Report& r, const std::string& path, const PortStats& ps);
void reportSwitch(Report& r, const std::string& path, const CxlSwitch& sw, Tick s, Tick e);
// A switch below a home agent's root port (CXL.cache), under the names a CXL.mem switch's go by.
void reportCacheSwitch(Report& r, const std::string& path, const CacheSwitch& sw);
void reportHostBridge(Report& r, const std::string& path, const HostBridge& b);

// The CXL.cache part counts from the run's start. The home agent (`devices`:
// the accelerators on its root ports, whose down wires it reports).
void reportHomeAgent(Report& r, const std::string& path, const HomeAgent& h, size_t devices);
// An accelerator (or the NIC's device), its copies (accel.devices) summed,
// maxima the largest of them.
void reportAccelerator(Report& r, const std::string& path, const std::vector<const Accelerator*>& copies);
// The messages each CXL channel carried on an accelerator's link (its copies
// summed): upstream as its devices sent them, downstream as the home did.
void reportCacheChannels(Report& r, const std::string& path, const std::vector<const Wire*>& ups,
                         const std::vector<const Wire*>& downs);
// The host DRAM's accesses from the run's start (a system with a home agent).
void reportDramAccesses(Report& r, const std::string& path, const DramController& d);
// A NIC's atomic engine in a RAO run: `s` its counters when it is a CXL-NIC
// (null: the PCIe NIC the workload models on it), the ordering of its
// operations, its wire out and the most operations it had in flight.
void reportNic(Report& r, const std::string& path, const NicStats* s, const AtomicOrdering& order, const NetWire& wire,
               size_t maxInFlight);
// The remote socket's inter-socket link (its DRAM is a dram component of its own).
void reportRemoteSocket(Report& r, const std::string& path, const InterSocket& rs, Tick s, Tick e);
// What a host's address map sent to each window, `windows[i]` naming window i.
void reportHostWindows(Report& r, const std::string& path, const Uncore& u, const std::vector<std::string>& windows,
                       Tick s, Tick e);

}  // namespace cxlcore
