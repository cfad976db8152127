// Port-based routing (CXL 3.x PBR): the routes of a fabric of switches joined
// by inter-switch links (ISLs), which may form cycles (rings, meshes). Every
// edge port (one a host's root port or a device sits on) has a 12-bit PBR ID;
// each switch forwards a message by its destination's PID through a table
// computed here, once, from the fabric's graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cxlcore {

constexpr uint32_t kPbrPids = 4096;  // PIDs are 12 bits
constexpr uint32_t kNoRoute = ~0u;

struct PbrFabricGraph {
    struct Isl {
        uint32_t a, pa, b, pb;  // switch a's port pa joined to switch b's port pb
    };
    struct Edge {
        uint32_t pid, sw, port;
        bool host;  // a host's root port (responses end there), else a device (requests end there)
    };
    std::vector<std::string> switches;  // names, for messages
    // Each switch's port names (up<i>, then dsp<j>: the port numbers routes tie-break on).
    std::vector<std::vector<std::string>> ports;
    std::vector<Isl> isls;
    std::vector<Edge> edges;
};

struct PbrRoutes {
    // "shortest": shortest paths in switch hops, ties to the lowest port number;
    // "up*/down*": the shortest legal up*/down* routes over a BFS spanning tree
    // rooted at `root`, used when the shortest paths' channel dependencies form a cycle.
    std::string algorithm;
    uint32_t root = 0;
    std::string cycle;  // the shortest paths' dependency cycle that made up*/down* necessary
    // out[s][e]: the port switch s forwards toward edge e (graph.edges order) by.
    std::vector<std::vector<uint32_t>> out;
};

// Shortest-path routes, checked deadlock-free (Dally and Seitz: the channel
// dependency graph of the routes, requests and responses apart, is acyclic),
// else up*/down* routes. Throws ConfigError naming a device a host cannot reach.
PbrRoutes routePbr(const PbrFabricGraph& g);

// Routes from every host edge to every device edge (requests) and back
// (responses) as the ISL channels they take in order; "" if the channel
// dependency graph of those routes is acyclic, else one cycle as text.
std::string pbrDependencyCycle(const PbrFabricGraph& g, const std::vector<std::vector<uint32_t>>& out);

}  // namespace cxlcore
