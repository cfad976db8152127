// A system as a graph: named components of registered types joined port to
// port. The registry below is the one list of component types, their
// parameter groups and their ports (Python's topology files and the gem5
// configs read it through the bindings); Graph::system() walks a legal graph
// into the description the engine builds from.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/cxlio/component_regs.hpp"
#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/fabric/pbr.hpp"

namespace cxlcore {

// `mem`: the host's memory path; `cxl`: a Flex Bus port carrying the protocols of its far end.
enum class PortChannel : uint8_t { Mem, Cxl };

struct PortSpec {
    std::string name;
    PortChannel channel;
    std::vector<std::string> protocols;  // of a cxl end: cxl.mem, cxl.cache
    bool down;      // requests leave through it (toward memory and devices)
    bool multi;     // indexed: name[i], several connections
    bool required;  // a graph leaving it open is refused
    std::string doc;
};

// A parameter group of a type: its key in the component ("" = the top level)
// and the schema struct it holds (HostParams, DramParams, ...).
struct GroupSpec {
    std::string key;
    std::string schema;
};

struct TypeSpec {
    std::string name, doc;
    std::vector<GroupSpec> groups;
    std::vector<PortSpec> ports;
    // Parameters of the top-level group that follow from the connections.
    std::vector<std::pair<std::string, std::string>> derived;  // name, why
    const PortSpec* port(const std::string& name) const;
};

const std::vector<TypeSpec>& componentTypes();
const TypeSpec* findType(const std::string& name);  // nullptr if unknown
// The type of component `comp`; throws, listing the registered types, when there is none.
const TypeSpec& typeOf(const std::string& comp, const std::string& type);

// Every group any type may hold; a type uses those its TypeSpec lists (one per schema struct).
struct ComponentParams {
#define CXL_COMPONENT_MEMBER(Struct, LIST) Struct Struct##_;
    CXL_PARAM_GROUPS(CXL_COMPONENT_MEMBER)
#undef CXL_COMPONENT_MEMBER
};

struct Node {
    std::string name, type;
    ComponentParams params;
};

struct PortRef {
    std::string comp, port;
    int index = -1;  // -1: a single port
    std::string str() const;
};

struct Connection {
    PortRef from, to;  // from a down-facing port to an up-facing one
    bool window = false;  // a host.mem connection with base and size
    uint64_t base = 0, size = 0;
    bool hasQos = false;  // qos_limit or qos_allocation given (host.mem connections only)
    LdQos qos;
    int pid = -1;  // a PBR switch's edge port: its PBR ID (-1: assigned)
};

// The HDM decoders software committed in one component's registers (a
// host_bridge or a type3), as cxlio::ComponentRegs::committed() reads them,
// and its Poison On Decode Error Enable bit.
struct ComponentDecoders {
    bool poison = false;
    std::vector<cxlio::CommittedDecoder> committed;
};

struct Graph {
    std::string name = "system";
    uint64_t seed = 1;
    uint64_t fault_device_stops_after = 0;  // tests only: see SystemParams
    // A single-device accelerator preset's parameters and messages keep their
    // bare names (cache.mshrs, not dev0.cache.mshrs), as they always had; its
    // statistics are under its graph components like every other's.
    bool loneDeviceUnnamed = false;
    std::vector<Node> components;
    std::vector<Connection> connections;
    // Committed HDM decoders by component: a host bridge named here routes by
    // them (system/decoders.cpp), not by its own interleave parameters.
    std::map<std::string, ComponentDecoders> decoders;

    // Refuses, in one line naming the component and port, what no engine can
    // build: unknown types, components or ports, indexes on single ports, a
    // port used twice, channel and protocol mismatches, open ports, chains
    // other than root port -> link -> device.
    void check() const;
    // The engine's description of the checked graph (parameters validated).
    SystemParams system() const;
    // One host's part of the description: its parameters, DRAM and windows.
    void fillHost(const Node& host, HostDesc& p) const;
    // The one nic's parameters, validated; throws when the graph has none or several.
    NicParams nic() const;

    // The committed decoders agree between host bridges and devices: each
    // bridge decoder's targets are root ports with a Type-3 device whose
    // decoder maps the same range at the same ways and granularity, and every
    // device decoder is reached so (system/decoders.cpp).
    void checkDecoders() const;
    // A checked host bridge's committed decoders as the routes it takes.
    std::vector<CommittedRegion> regions(const std::string& hostBridge) const;
    // A checked switch's decoders committed at its upstream port as the routes it takes.
    std::vector<CommittedRegion> switchRegions(const std::string& sw) const;
    // Follows a host bridge decoder through the switch decoders of its range
    // down to the devices and checks that each receives exactly the addresses
    // its own decoder gives its position; `positions`: each device's.
    void walkRegion(const std::string& hostBridge, const cxlio::CommittedDecoder& d,
                    std::map<std::string, uint32_t>* positions = nullptr) const;

    // Switches joined by links (an inter-switch link: `down` leaves the upper
    // switch's dsp for the link, `up` leaves the link for the lower switch's up port).
    struct SwitchLink {
        const Connection *down, *up;
        std::string upper, lower, link;
    };
    std::vector<SwitchLink> switchLinks() const;
    bool portBased(const std::string& comp) const;  // a switch with routing = pbr
    // Refuses HBR switches in a cycle (alone or with PBR ones), HBR and PBR
    // switches joined, and PIDs given where no PBR edge port is.
    void checkSwitchFabric() const;
    // The PBR switches joined by inter-switch links, each fabric with its
    // edges (PIDs assigned, checked unique), links and routes.
    struct PbrFabric {
        PbrFabricGraph g;
        std::vector<const Connection*> edgeConn;  // g.edges[i]'s connection onto its switch's port
        std::vector<SwitchLink> isls;             // g.isls[i]'s
        PbrRoutes routes;
    };
    std::vector<PbrFabric> pbrFabrics() const;

    const Node* find(const std::string& name) const;
    // The hosts, in the order of the components: the first holds the CXL.cache devices.
    std::vector<const Node*> hosts() const;
    // Every component a path from `comp` reaches, itself included.
    std::set<std::string> reachedFrom(const std::string& comp) const;
    std::vector<const Connection*> leaving(const std::string& comp, const std::string& port) const;
    const Node& below(const Connection& c) const;
    // What a root port or downstream port reaches through its link (checked graphs only).
    const Node& pastLink(const Connection& port) const;
};

}  // namespace cxlcore
