// The C++ benchmarks' system, built as a graph as every front end builds it:
// one host with its local DRAM and a CXL window over `ports` root ports, each
// with a link and a Type-3 expander. `tune` adjusts every component's
// parameters before the graph is checked.
#pragma once

#include <functional>
#include <string>

#include "cxlcore/system/graph.hpp"

namespace bench {

inline cxlcore::SystemParams cxlSystem(uint32_t ports, const std::function<void(cxlcore::Node&)>& tune) {
    using namespace cxlcore;
    Graph g;
    auto add = [&g, &tune](const std::string& name, const std::string& type) {
        g.components.push_back(Node{name, type, {}});
        tune(g.components.back());
    };
    auto join = [&g](const std::string& a, const std::string& pa, int ia, const std::string& b) {
        Connection k;
        k.from = PortRef{a, pa, ia};
        k.to = PortRef{b, "up", -1};
        g.connections.push_back(k);
    };
    add("host", "host");
    add("ddr", "dram");
    add("cxl", "host_bridge");
    join("host", "local", -1, "ddr");
    join("host", "mem", -1, "cxl");
    for (uint32_t i = 0; i < ports; ++i) {
        const std::string n = std::to_string(i);
        add("link" + n, "link");
        add("dev" + n, "type3");
        join("cxl", "root_port", int(i), "link" + n);
        join("link" + n, "down", -1, "dev" + n);
    }
    return g.system();
}

}  // namespace bench
