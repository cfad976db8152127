#include "cxlcore/fabric/pbr.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <utility>

#include "cxlcore/config/params.hpp"

namespace cxlcore {

namespace {

constexpr uint32_t kFar = ~0u;

struct Hop {
    uint32_t port, to;
};

// Each switch's ISL ports and where they lead, lowest port first.
std::vector<std::vector<Hop>> adjacency(const PbrFabricGraph& g) {
    std::vector<std::vector<Hop>> adj(g.switches.size());
    for (const auto& l : g.isls) {
        adj[l.a].push_back({l.pa, l.b});
        adj[l.b].push_back({l.pb, l.a});
    }
    for (auto& a : adj) std::sort(a.begin(), a.end(), [](const Hop& x, const Hop& y) { return x.port < y.port; });
    return adj;
}

// Hops from `from` to every switch, over the steps x -> y that `allow(x, y)` lets through.
template <typename Allow>
std::vector<uint32_t> bfs(const std::vector<std::vector<Hop>>& adj, uint32_t from, Allow allow) {
    std::vector<uint32_t> d(adj.size(), kFar);
    std::deque<uint32_t> q{from};
    d[from] = 0;
    while (!q.empty()) {
        const uint32_t x = q.front();
        q.pop_front();
        for (const Hop& h : adj[x])
            if (d[h.to] == kFar && allow(x, h.to)) {
                d[h.to] = d[x] + 1;
                q.push_back(h.to);
            }
    }
    return d;
}

std::vector<uint32_t> bfs(const std::vector<std::vector<Hop>>& adj, uint32_t from) {
    return bfs(adj, from, [](uint32_t, uint32_t) { return true; });
}

std::vector<std::vector<uint32_t>> shortest(const PbrFabricGraph& g, const std::vector<std::vector<Hop>>& adj) {
    std::vector<std::vector<uint32_t>> out(g.switches.size(), std::vector<uint32_t>(g.edges.size(), kNoRoute));
    for (size_t e = 0; e < g.edges.size(); ++e) {
        const std::vector<uint32_t> d = bfs(adj, g.edges[e].sw);
        for (uint32_t x = 0; x < adj.size(); ++x) {
            if (x == g.edges[e].sw) {
                out[x][e] = g.edges[e].port;
                continue;
            }
            if (d[x] == kFar) continue;
            for (const Hop& h : adj[x])  // lowest port first: the first closer neighbour
                if (d[h.to] + 1 == d[x]) {
                    out[x][e] = h.port;
                    break;
                }
        }
    }
    return out;
}

// Up*/down* (Autonet): a BFS spanning tree from the root gives each switch a
// level; a hop is up toward the lower (level, index), down otherwise. A route
// of up hops then down hops never closes a cycle of channel dependencies.
std::vector<std::vector<uint32_t>> upDown(const PbrFabricGraph& g, const std::vector<std::vector<Hop>>& adj,
                                          uint32_t root) {
    const size_t n = adj.size();
    const std::vector<uint32_t> level = bfs(adj, root);
    auto rank = [&](uint32_t x) { return std::make_pair(level[x], x); };
    auto isUp = [&](uint32_t from, uint32_t to) { return rank(to) < rank(from); };
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return rank(a) < rank(b); });
    std::vector<std::vector<uint32_t>> out(n, std::vector<uint32_t>(g.edges.size(), kNoRoute));
    for (size_t e = 0; e < g.edges.size(); ++e) {
        const uint32_t dst = g.edges[e].sw;
        // Hops to dst going down only (backwards from dst: a step y -> x where x -> y is down).
        const std::vector<uint32_t> down = bfs(adj, dst, [&](uint32_t y, uint32_t x) { return !isUp(x, y); });
        // The legal route's length: down at once where possible, else up first (the root reaches all going down).
        std::vector<uint32_t> legal(n, kFar);
        for (uint32_t x : order) {
            legal[x] = down[x];
            if (legal[x] != kFar) continue;
            for (const Hop& h : adj[x])
                if (isUp(x, h.to) && legal[h.to] != kFar) legal[x] = std::min(legal[x], legal[h.to] + 1);
        }
        for (uint32_t x = 0; x < n; ++x) {
            if (x == dst) {
                out[x][e] = g.edges[e].port;
                continue;
            }
            for (const Hop& h : adj[x]) {
                const bool ok = down[x] != kFar ? !isUp(x, h.to) && down[h.to] + 1 == down[x]
                                                : isUp(x, h.to) && legal[h.to] != kFar && legal[h.to] + 1 == legal[x];
                if (ok) {
                    out[x][e] = h.port;
                    break;
                }
            }
        }
    }
    return out;
}

// The ISL channels (switch, port) a route from edge `src` to edge `dst` takes; throws if it never arrives.
std::vector<std::pair<uint32_t, uint32_t>> walk(const PbrFabricGraph& g, const std::vector<std::vector<Hop>>& adj,
                                                const std::vector<std::vector<uint32_t>>& out, size_t src, size_t dst) {
    std::vector<std::pair<uint32_t, uint32_t>> hops;
    uint32_t x = g.edges[src].sw;
    const PbrFabricGraph::Edge& d = g.edges[dst];
    const PbrFabricGraph::Edge& h = g.edges[d.host ? dst : src];
    const PbrFabricGraph::Edge& dev = g.edges[d.host ? src : dst];
    for (size_t steps = 0; steps <= adj.size(); ++steps) {
        const uint32_t p = out[x][dst];
        if (p == kNoRoute) break;
        if (x == d.sw && p == d.port) return hops;
        hops.emplace_back(x, p);
        auto it = std::find_if(adj[x].begin(), adj[x].end(), [&](const Hop& k) { return k.port == p; });
        if (it == adj[x].end()) break;
        x = it->to;
    }
    throw ConfigError(g.switches[dev.sw] + "." + g.ports[dev.sw][dev.port] + " (PID " + std::to_string(dev.pid) +
                      "): the device there is not reachable from the host on " + g.switches[h.sw] + "." +
                      g.ports[h.sw][h.port] + " (PID " + std::to_string(h.pid) +
                      "), which maps it; join their switches by inter-switch links");
}

}  // namespace

std::string pbrDependencyCycle(const PbrFabricGraph& g, const std::vector<std::vector<uint32_t>>& out) {
    const auto adj = adjacency(g);
    // Requests and responses use separate channels (M2S and S2M buffers and credits): one graph each.
    for (int cls = 0; cls < 2; ++cls) {
        std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>> dep;
        for (size_t s = 0; s < g.edges.size(); ++s)
            for (size_t d = 0; d < g.edges.size(); ++d) {
                if (g.edges[s].host != (cls == 0) || g.edges[d].host != (cls == 1)) continue;
                const auto hops = walk(g, adj, out, s, d);
                for (size_t i = 0; i + 1 < hops.size(); ++i) dep[hops[i]].push_back(hops[i + 1]);
                for (const auto& c : hops) dep[c];
            }
        // Depth-first search for a back edge.
        std::map<std::pair<uint32_t, uint32_t>, int> state;
        std::vector<std::pair<uint32_t, uint32_t>> path;
        std::string found;
        auto name = [&](const std::pair<uint32_t, uint32_t>& c) { return g.switches[c.first] + "." + g.ports[c.first][c.second]; };
        std::function<bool(const std::pair<uint32_t, uint32_t>&)> visit = [&](const std::pair<uint32_t, uint32_t>& c) {
            state[c] = 1;
            path.push_back(c);
            for (const auto& n : dep[c]) {
                if (state[n] == 1) {
                    auto at = std::find(path.begin(), path.end(), n);
                    for (; at != path.end(); ++at) found += name(*at) + " -> ";
                    found += name(n);
                    return true;
                }
                if (state[n] == 0 && visit(n)) return true;
            }
            path.pop_back();
            state[c] = 2;
            return false;
        };
        for (const auto& kv : dep)
            if (state[kv.first] == 0 && visit(kv.first)) return std::string(cls ? "responses: " : "requests: ") + found;
    }
    return "";
}

PbrRoutes routePbr(const PbrFabricGraph& g) {
    const auto adj = adjacency(g);
    PbrRoutes r;
    r.algorithm = "shortest";
    r.out = shortest(g, adj);
    r.cycle = pbrDependencyCycle(g, r.out);  // also refuses a device a host cannot reach
    if (r.cycle.empty()) return r;
    // The root: the switch holding the lowest PID.
    uint32_t low = kPbrPids;
    for (const auto& e : g.edges)
        if (e.pid < low) {
            low = e.pid;
            r.root = e.sw;
        }
    r.algorithm = "up*/down*";
    r.out = upDown(g, adj, r.root);
    const std::string left = pbrDependencyCycle(g, r.out);
    if (!left.empty()) throw ConfigError(g.switches[r.root] + ": up*/down* routes left a dependency cycle (" + left + ")");
    return r;
}

}  // namespace cxlcore
