// simcxl._core._testing: probes of single components, for the tests.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cxlcore/kernel/stats.hpp"
#include "readers.hpp"

using namespace binding;

namespace {

// A host that refuses every response until `unblockAt`, as gem5's port does
// while it waits for a retry: the host bridge must hold them within its
// response buffer and deliver each once the host takes them.
py::list bridgeBehindBlockedHost(const py::dict& sys, uint32_t reads, double unblockNs) {
    SystemParams sp = readSystem(sys);
    if (sp.kind != MemoryKind::CxlType3 || !sp.windows.empty())
        throw ConfigError("system.kind must be cxl-type3 for this probe");
    struct Up : Requester {
        EventLoop* loop;
        TxnPool* pool;
        Tick unblock;
        py::list done;
        bool tryResp(Txn* t) override {
            if (loop->now() < unblock) return false;
            done.append(py::make_tuple(t->id, t->addr, ticksToNs(std::max(t->mark, loop->now()))));
            pool->put(t);
            return true;
        }
        void retryReq() override {}
    };
    struct Unblocker : Component {
        HostBridge& b;
        Unblocker(Host& h, HostBridge& br) : Component(h), b(br) {}
        void process() override { b.retryResp(); }
    };
    // The system's own bridge, links and devices, with this host in place of its uncore.
    System s(sp);
    Up up;
    up.loop = &s.loop;
    up.pool = &s.pool;
    up.unblock = nsToTicks(unblockNs);
    HostBridge& bridge = *s.host().windows[0].bridge;
    bridge.setRequester(&up);
    Unblocker unblocker(s.loop, bridge);
    unblocker.requestWake(up.unblock);
    for (uint32_t i = 0; i < reads; ++i) {
        Txn* t = s.pool.get();
        t->addr = t->hostAddr = uint64_t(i) * kLineBytes;
        if (!bridge.tryReq(t)) throw ConfigError("probe: the bridge's tracker (cxl.bridge.req_queue) is below reads");
    }
    s.run();
    return up.done;
}

// Components that attach to the event loop while it runs (the loop's arrays
// grow under it): every one of them must fire once.
uint64_t attachDuringRun(uint32_t spawn) {
    struct Child : Component {
        uint64_t& fired;
        Child(Host& h, uint64_t& f) : Component(h), fired(f) {}
        void process() override { ++fired; }
    };
    struct Parent : Component {
        EventLoop& loop;
        uint32_t spawn;
        uint64_t fired = 0;
        std::vector<std::unique_ptr<Child>> kids;
        Parent(EventLoop& l, uint32_t n) : Component(l), loop(l), spawn(n) {}
        void process() override {
            for (uint32_t i = 0; i < spawn; ++i) {
                kids.push_back(std::make_unique<Child>(loop, fired));
                kids.back()->requestWake(now() + 1000 * (i + 1));
            }
        }
    };
    EventLoop loop;
    Parent p(loop, spawn);
    p.requestWake(0);
    loop.run();
    return p.fired;
}

// Components that follow a script, for the event loop's property test: the
// k-th event of the run (whichever component fires) performs actions[k], each
// (kind, target, delay): "wake" asks component `target` for a wake-up at
// now + delay (clamped at 0), "spawn" attaches a new component and wakes it
// so, "detach" takes `target` off the loop, "stop" stops the run. The loop
// then runs once per entry of `untils` (None: no limit).
using LoopActions = std::vector<std::vector<std::tuple<std::string, uint32_t, int64_t>>>;

class LoopScript : public Watch {
  public:
    explicit LoopScript(const LoopActions& a) : actions_(a) {}
    EventLoop loop;
    py::list fired, checks;

    void check(Tick now) override { checks.append(py::make_tuple(loop.events(), now)); }
    void add() {
        comps_.push_back(std::make_unique<Scripted>(loop, *this, comps_.size()));
        gone_.push_back(false);
        if (comps_.back()->slot != comps_.size() - 1) throw std::logic_error("event loop: slots out of order");
    }
    void wake(uint32_t i, int64_t delay) {
        Scripted& c = at(i);
        if (gone_[i]) return;
        const Tick n = loop.now();
        c.requestWake(delay < 0 && Tick(-delay) > n ? 0 : n + Tick(delay));
    }

  private:
    struct Scripted : Component {
        LoopScript& s;
        size_t index;
        Scripted(Host& h, LoopScript& sc, size_t i) : Component(h), s(sc), index(i) {}
        void process() override { s.fire(index); }
    };
    Scripted& at(uint32_t i) {
        if (i >= comps_.size())
            throw ConfigError("event loop script: component " + std::to_string(i) + " does not exist; allowed: 0 to " +
                              std::to_string(comps_.size() - 1));
        return *comps_[i];
    }
    void fire(size_t i) {
        fired.append(py::make_tuple(i, loop.now()));
        const size_t k = events_++;
        if (k >= actions_.size()) return;
        for (auto& [kind, target, delay] : actions_[k]) {
            if (kind == "wake") {
                wake(target, delay);
            } else if (kind == "spawn") {
                add();
                wake(uint32_t(comps_.size() - 1), delay);
            } else if (kind == "detach") {
                // Off the loop at once (the destructor's detach, which runs
                // later, finds it gone): the firing component may detach itself.
                loop.detach(&at(target));
                gone_[target] = true;
            } else if (kind == "stop") {
                loop.stop();
            } else {
                throw ConfigError("event loop script: action '" + kind +
                                  "' is not allowed; allowed: wake, spawn, detach, stop");
            }
        }
    }
    const LoopActions& actions_;
    std::vector<std::unique_ptr<Scripted>> comps_;
    std::vector<bool> gone_;
    size_t events_ = 0;
};

py::dict eventLoopScript(uint32_t components, const std::vector<std::pair<uint32_t, int64_t>>& initial,
                         const LoopActions& actions, const std::vector<std::optional<uint64_t>>& untils, bool watch) {
    LoopScript s(actions);
    for (uint32_t i = 0; i < components; ++i) s.add();
    for (auto& [i, t] : initial) s.wake(i, t);
    if (watch) s.loop.watch(&s);
    py::list stops;
    for (auto& u : untils) {
        s.loop.run(u ? *u : kNever);
        stops.append(s.loop.now());
    }
    py::dict d;
    d["fired"] = s.fired;
    d["stops"] = stops;
    d["checks"] = s.checks;
    d["events"] = s.loop.events();
    return d;
}

}  // namespace

void bindTesting(py::module_& m) {
    py::module_ testing = m.def_submodule("_testing", "Probes of single components, for the tests.");
    testing.def("bridge_behind_blocked_host", &bridgeBehindBlockedHost, py::arg("system"), py::arg("reads"),
                py::arg("unblock_ns"),
                "Reads at t=0 through a host bridge whose host refuses responses until unblock_ns: "
                "[(txn id, host address, done ns)] in delivery order.");
    testing.def("histogram", [](const std::vector<uint64_t>& values, const std::vector<double>& qs) {
        LogHistogram h;
        for (uint64_t v : values) h.add(v);
        py::dict d;
        d["count"] = h.count();
        d["sum"] = h.sum();
        d["min"] = h.min();
        d["max"] = h.max();
        d["mean"] = h.mean();
        std::vector<double> p;
        for (double q : qs) p.push_back(h.percentile(q));
        d["percentiles"] = p;
        d["bytes"] = h.bytes();
        d["relative_error"] = LogHistogram::kRelativeError;
        return d;
    }, py::arg("values"), py::arg("quantiles"), "The statistics histogram (kernel/stats.hpp) of the values.");
    testing.def("histogram_bytes", [](uint64_t n, uint64_t maxValue) {
        // n pseudo-random values in [0, maxValue), without passing them through Python.
        LogHistogram h;
        uint64_t x = 88172645463325252ull;
        for (uint64_t i = 0; i < n; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.add(x % maxValue);
        }
        return h.bytes();
    }, py::arg("n"), py::arg("max_value"), "Memory the histogram holds after n values below max_value.");
    testing.def("attach_during_run", &attachDuringRun, py::arg("spawn"),
                "A component that attaches `spawn` more while the loop runs; how many of them fired.");
    testing.def("event_loop_script", &eventLoopScript, py::arg("components"), py::arg("initial"), py::arg("actions"),
                py::arg("untils"), py::arg("watch") = false,
                "Scripted components on an EventLoop: action list k runs at the k-th event ((kind, target, delay); "
                "kind wake, spawn, detach or stop); one run per entry of untils (None: no limit). Returns the "
                "firings [(component, time)], the time after each run, the Watch checks [(events, time)] and the "
                "event count.");
}
