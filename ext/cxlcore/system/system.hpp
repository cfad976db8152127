// A whole system wired from one description (SystemParams, read from a
// graph): hosts, each with its cores' path into the memory (the uncore) and
// the windows of its host physical address map (local DRAM, the remote
// socket, CXL host bridges whose root ports lead, through links and any
// switches, to Type-3 expanders, which switches let several hosts share), and
// the CXL.cache accelerators beside the first host's memories on root ports
// of their own, coherent through its home agent, whose memory traffic goes
// through the same address map.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/devices/type3.hpp"
#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/fabric/cache_switch.hpp"
#include "cxlcore/fabric/switch.hpp"
#include "cxlcore/host/remote_socket.hpp"
#include "cxlcore/host/uncore.hpp"
#include "cxlcore/kernel/trace.hpp"
#include "cxlcore/system/report.hpp"

namespace cxlcore {

struct Connection;

// One window of a host's address map and the components that serve it. A
// local-dram window is served by the host's own DRAM (HostPart::localDram).
struct MemoryWindow {
    WindowParams p;
    Target* target = nullptr;
    std::unique_ptr<InterSocket> remote;
    std::string remoteDram;  // the graph name of the remote socket's DRAM
    std::unique_ptr<HostBridge> bridge;
    // Every Type-3 device below the bridge, behind switches too, whoever built it.
    std::vector<Type3Device*> reach;  // every Type-3 device below the bridge, whoever built it
};

// One host: its DRAM, the windows of its address map and its uncore, the
// path its cores' misses take into them.
struct HostPart {
    HostDesc p;
    uint8_t index = 0;
    bool mapped = false;    // built from an explicit map (else the one window of a single-memory system)
    std::string localName;  // its DRAM's component name
    std::unique_ptr<DramController> localDram;
    std::vector<MemoryWindow> windows;  // the address map, in its order
    std::unique_ptr<Uncore> uncore;
    // The window of a name, or -1.
    int windowIndex(const std::string& name) const;
};

class System {
  public:
    // `check`: run the coherence checker over every CXL.cache access.
    explicit System(const SystemParams& p, bool check = false);

    EventLoop loop;
    TxnPool pool;  // every access and message of the run
    // The request trace this run records into (TraceSink::Scope), if any.
    TraceSink* const trace = TraceSink::enterRun();
    const SystemParams& params() const { return p_; }
    // Host i (0: the first, with the accelerators), and how many there are.
    HostPart& host(size_t i = 0) { return *hosts_[i]; }
    const HostPart& host(size_t i = 0) const { return *hosts_[i]; }
    size_t hosts() const { return hosts_.size(); }
    // The host of a component name, or -1.
    int hostIndex(const std::string& name) const;
    // The Type-3 device of that name (as the report names it), or a ConfigError listing them.
    Type3Device& device(const std::string& name) const;
    // Theoretical limit the results must respect, bytes per second: the media
    // of the given windows of a host (indices into its `windows`; empty: every window).
    double mediaPeakBytesPerSec(const std::vector<uint32_t>& which = {}, size_t host = 0) const;

    // Runs the event loop until no work is left, under watchdogs: a run that
    // stops making progress throws StallError naming where its oldest request is.
    void run();

    void resetStats();
    // Statistics over [start, end]: the memories, and the coherent part's counters.
    void report(Report& r, Tick start, Tick end) const;

    // CXL.cache (when the description has accelerators): the checker, the
    // home agent, and every copy of every accelerator description with its link.
    std::unique_ptr<CoherenceChecker> checker;
    std::unique_ptr<HomeAgent> home;
    std::vector<std::unique_ptr<CxlLink>> accelLinks;
    std::vector<std::unique_ptr<Accelerator>> accels;
    std::vector<uint32_t> accelEntry;  // the description each accelerator was built from
    // Switches below the home's root ports (CXL.cache) and the links above them, in the order built.
    std::vector<std::unique_ptr<CacheSwitch>> cacheSwitches;
    std::vector<std::unique_ptr<CxlLink>> cacheUpLinks;
    CoherentProgress watch;            // CXL.cache accesses and DMA transfers outstanding
    // The CXL.cache part of a host after the first (built for shared runs
    // only: SystemParams::peer_accelerators_run): its home agent and devices.
    struct PeerCache {
        size_t host = 0;
        std::unique_ptr<HomeAgent> home;
        std::vector<std::unique_ptr<CxlLink>> links;
        std::vector<std::unique_ptr<Accelerator>> accels;
    };
    std::vector<PeerCache> peerCaches;
    // How long CXL.cache requests may wait before the run counts as stalled.
    Tick stallWindow() const;
    // Nothing left in flight anywhere in the coherent part.
    bool quiet() const;

  private:
    void buildHost(HostPart& h, const HostDesc& d, uint32_t& cxlWindows);
    void buildCxl(HostPart& h, MemoryWindow& w, uint32_t cxlWindows);
    void buildAccelerators(bool check);
    void buildPeerAccelerators(size_t host);
    // Device i (just built from d) below d's switch, made with its upstream link the first time.
    void viaSwitch(const AccelDeviceParams& d, uint32_t i);
    void runCoherent();
    void reportMemory(Report& r, Tick s, Tick e) const;
    void reportCoherent(Report& r, Tick end) const;
    SystemParams p_;
    std::vector<std::unique_ptr<HostPart>> hosts_;
    // The fabric below the host bridges: every link, Type-3 device and
    // switch, each built once however many hosts reach it.
    std::vector<std::unique_ptr<CxlLink>> links_;
    std::vector<std::unique_ptr<Type3Device>> devices_;
    std::vector<std::unique_ptr<CxlSwitch>> switches_;
    // Port-based routing: each inter-switch link's second direction (reported
    // as its graph link's rev_m2s, rev_s2m), and the fabrics' host edges.
    std::vector<std::unique_ptr<CxlLink>> reverse_;
    std::vector<std::string> reverseNames_;
    std::map<const Connection*, std::pair<CxlLink*, MemEndpoint*>> pbrEdges_;
    std::map<const void*, std::string> pbrFabricOf_;
    std::vector<CxlLink*> switchLinks_;  // above each switch's upstream ports, in the order they were built
    // The graph component names reports give them (links_[i] is linkNames_[i]).
    std::vector<std::string> linkNames_;
    std::map<const Type3Device*, std::string> deviceNames_;
    Watchdog watchdog_{pool};
};

}  // namespace cxlcore
