// Parameter structs of every model. Their fields (and allowed-value lists) come from the X-macro lists
// X(type, name, default, min, max) of params_fields.hpp, generated from the
// Python dataclasses in simcxl/config/groups.py (the source of truth) by
// `python -m simcxl.config.schema_gen`; the structs and their validation are here.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cxlcore/config/params_fields.hpp"
#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

struct Graph;

#define CXL_DECLARE_FIELD(type, name, def, lo, hi) type name = def;

struct HostParams { CXL_HOST_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DramParams { CXL_DRAM_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct InterSocketParams { CXL_INTERSOCKET_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct BridgeParams { CXL_BRIDGE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct SwitchParams { CXL_SWITCH_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct LinkParams { CXL_LINK_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DeviceParams { CXL_DEVICE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DCacheParams { CXL_DCACHE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct HomeParams { CXL_HOME_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct AccelParams { CXL_ACCEL_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DmaParams { CXL_DMA_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct NicParams { CXL_NIC_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };

enum class MemoryKind : uint8_t { LocalDram = 0, RemoteNuma = 1, CxlType3 = 2 };

// One window of the host physical address map, [base, base + size), and the
// memory behind it: the host's local DRAM (SystemParams::local_dram, where the
// page tables live too), the remote socket, or a CXL host bridge (a CFMWS
// window decoded by an HDM decoder) whose root ports, links, switches and
// Type-3 devices the builder walks in the graph, from the component `node`.
// size 0 is the window of a description without a map: the rest of the address
// space, checked by the memory itself as before.
// What the fabric manager gives a host's logical device on each MLD its
// window reaches (CXL 2.0 QoS telemetry: the QoS Limit and Allocation
// Fractions), as fractions of the device's peak completions: above its limit
// an LD's responses report at least Moderate overload; below its allocation,
// at most Optimal, whatever the device's own load.
struct LdQos {
    double limit = 1.0, allocation = 0.0;
    bool active() const { return limit < 1.0 || allocation > 0.0; }
};

struct MemoryParams {
    InterSocketParams intersocket;
    DramParams remote_dram;
    BridgeParams bridge;
    std::string node;  // the graph component behind the window (host_bridge, remote_socket or dram)
    LdQos qos;         // its host.mem connection's qos_limit and qos_allocation
};

struct WindowParams : MemoryParams {
    std::string name;
    MemoryKind kind = MemoryKind::LocalDram;
    uint64_t base = 0, size = 0;
    uint64_t end() const { return size ? base + size : ~0ull; }
};

// The largest physical address space a host decodes (52 bits, as CXL's HDM decoders).
constexpr uint64_t kPhysAddrBits = 52;
// Hosts one system may hold (Txn::host numbers them).
constexpr uint32_t kMaxHosts = 16;
// Where Type-2 device memory is placed by default: above all host memory.
constexpr uint64_t kDevMemBase = 1ull << 44;

// A CXL.cache accelerator (Type-1; Type-2 in host or device bias, or HDM-DB)
// on a root port and link of its own, with its cache, DMA engine and (Type-2)
// memory media; accel.devices identical copies of it are built, one after another.
struct AccelDeviceParams {
    std::string name;  // prefix of its parameters' names ("": none, a single-device system)
    // Its graph components, the names its statistics go under: the device and its link.
    std::string node, linkNode;
    LinkParams link;
    DCacheParams cache;
    AccelParams accel;
    DmaParams dma;
    DramParams media;
    // Behind a switch on the home's root port (switchNode empty: on a root
    // port of its own): the switch, the link above it and the device's
    // downstream port. Devices naming one switch share it and that link.
    std::string switchNode, upLinkNode;
    SwitchParams sw;
    LinkParams upLink;
    uint32_t switchPort = 0;
    std::string prefix() const { return name.empty() ? "" : name + "."; }
    // The name of its copy k (system-wide index `index`) in messages and reports.
    std::string instance(uint32_t k, uint32_t index) const;
};

// One host: its cores and caches, its DRAM and the windows of its host
// physical address map (without `windows`, the one memory of `kind` in the
// inherited groups: a single-memory system).
struct HostDesc : MemoryParams {
    std::string name = "host";  // its graph component
    MemoryKind kind = MemoryKind::LocalDram;
    HostParams host;
    DramParams local_dram;
    // How messages name the local DRAM's group (an accelerator preset calls it host_dram).
    std::string local_dram_name = "local_dram";
    // The host physical address map. Empty: one window, of `kind` and the groups
    // above, named and reported as a single-memory system always was.
    std::vector<WindowParams> windows;
    // The map the host is built from: `windows`, or that one window.
    std::vector<WindowParams> addressMap() const;
    // CXL.cache below a host after the first (the first host's are
    // SystemParams::home and accelerators): only shared runs build them.
    std::string peer_home_node;
    HomeParams peer_home;
    std::vector<AccelDeviceParams> peer_accelerators;
    void validate() const;
};

// A system: its first host (this description itself), with the CXL.cache
// accelerators beside its memories, coherent through its home agent, and
// any further hosts sharing the fabric (switches, multi-logical devices).
struct SystemParams : HostDesc {
    HomeParams home;
    std::string homeNode = "home";  // the home agent's graph component
    std::vector<AccelDeviceParams> accelerators;
    // The hosts after the first, in the graph's order: each its own cores,
    // caches, DRAM and address map, reaching the devices they share through switches.
    std::vector<HostDesc> peers;
    uint64_t seed = 1;
    // Fault injection for the watchdog's tests, never set by a preset: the
    // Type-3 device sends no response after this many (0: off).
    uint64_t fault_device_stops_after = 0;
    // Builds the CXL.cache devices of hosts after the first (a shared run
    // does; other workloads refuse them).
    bool peer_accelerators_run = false;
    // The graph this description was read from: the builder walks the CXL
    // part of each window (root ports, links, switches, devices) in it.
    std::shared_ptr<const Graph> graph;
    // Accelerators in all (accel.devices summed over the descriptions).
    uint32_t accelInstances() const;
    // Where each Type-2 description's memory lies, [base, base + memory_bytes
    // x accel.devices): at accel.memory_base, or (0) after the previous
    // description's, from kDevMemBase. 0 for Type-1.
    std::vector<uint64_t> accelMemoryBases() const;
    void validate() const;

  private:
    void validateAccelerators() const;
};

// Schema introspection for the bindings and the sync test.
struct FieldInfo {
    std::string name;
    bool integer;
    double def, lo, hi;
};
const std::vector<std::pair<std::string, std::vector<FieldInfo>>>& schema();

// Formats a number the way the error messages quote it.
std::string fmtNum(double v);

}  // namespace cxlcore
