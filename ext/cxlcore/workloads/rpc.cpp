#include "cxlcore/workloads/rpc.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include "cxlcore/devices/cxl_nic.hpp"
#include "cxlcore/devices/protobuf.hpp"

namespace cxlcore {

namespace {

constexpr uint64_t kObjects = 1ull << 34, kBuffer = 1ull << 35;

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

// Touches groups of lines, a group once the group it hangs from is done (an
// object's strings and sub-objects after the object, whose slots point to
// them), at most `limit` accesses at a time.
class LineWalk : public Client {
  public:
    struct Group {
        std::vector<uint64_t> lines;
        int parent = -1;
        size_t left = 0;
    };
    LineWalk(TxnPool& pool, Txn::Kind kind, uint32_t limit, std::function<void(Txn*)> issue,
             std::function<Tick()> now)
        : kind_(kind), limit_(limit), issue_(std::move(issue)), now_(std::move(now)), pool_(pool) {}
    std::vector<Group> groups;
    void start(std::function<void()> done) {
        done_ = std::move(done);
        for (size_t g = 0; g < groups.size(); ++g) {
            groups[g].left = groups[g].lines.size();
            if (groups[g].parent < 0) open(g);
        }
        pump();
        if (remaining() == 0) done_();
    }
    // One of its accesses is done (ctx: its group).
    void done(Txn* x) override {
        const size_t gi = size_t(reinterpret_cast<uintptr_t>(x->ctx));
        pool_.put(x);
        --out_;
        if (--groups[gi].left == 0) finishGroup(gi);
        pump();
        if (remaining() == 0 && out_ == 0 && ready_.empty() && done_) {
            auto d = std::move(done_);
            done_ = nullptr;
            d();
        }
    }
    uint64_t lines() const {
        uint64_t n = 0;
        for (auto& g : groups) n += g.lines.size();
        return n;
    }

  private:
    void open(size_t g) {
        if (groups[g].lines.empty()) {
            finishGroup(g);
            return;
        }
        for (uint64_t l : groups[g].lines) ready_.push_back({g, l});
    }
    void finishGroup(size_t g) {
        ++groupsDone_;
        for (size_t c = 0; c < groups.size(); ++c)
            if (groups[c].parent == int(g)) open(c);
    }
    size_t remaining() const { return groups.size() - groupsDone_; }
    void pump() {
        while (!ready_.empty() && out_ < limit_) {
            auto [g, line] = ready_.front();
            ready_.pop_front();
            Txn* a = newAccess(pool_, kind_, line, kind_ == Txn::Load ? 0 : ++seq_, now_());
            a->client = this;
            a->ctx = reinterpret_cast<void*>(uintptr_t(g));
            ++out_;
            issue_(a);
        }
    }
    Txn::Kind kind_;
    uint32_t limit_;
    std::function<void(Txn*)> issue_;
    std::function<Tick()> now_;
    std::function<void()> done_;
    std::deque<std::pair<size_t, uint64_t>> ready_;
    TxnPool& pool_;
    uint32_t out_ = 0;
    size_t groupsDone_ = 0;
    uint64_t seq_ = 1ull << 40;
};

std::vector<uint64_t> linesOf(uint64_t addr, uint64_t bytes) {
    std::vector<uint64_t> v;
    for (uint64_t a = lineOf(addr); a < addr + std::max<uint64_t>(bytes, 1); a += kLineBytes) v.push_back(a);
    return v;
}

// The message's objects, strings and arrays as walk groups: serialising
// reads an object before what its slots point to; deserialising writes
// everything as it is parsed.
void addGroups(LineWalk& w, const std::vector<PbMessage>& tree, bool dependent) {
    std::vector<int> objectGroup(tree.size(), -1);
    for (size_t m = 0; m < tree.size(); ++m) {
        LineWalk::Group g;
        g.lines = linesOf(tree[m].addr, tree[m].objectBytes());
        objectGroup[m] = int(w.groups.size());
        w.groups.push_back(g);
    }
    for (size_t m = 0; m < tree.size(); ++m)
        for (const auto& f : tree[m].fields) {
            if (f.kind == PbField::Nested) {
                if (dependent) w.groups[size_t(objectGroup[size_t(f.child)])].parent = objectGroup[m];
            } else if (f.kind == PbField::String || f.kind == PbField::Packed) {
                LineWalk::Group g;
                g.lines = linesOf(f.addr, f.kind == PbField::String ? f.value : f.elems.size() * 8);
                g.parent = dependent ? objectGroup[m] : -1;
                w.groups.push_back(g);
            }
        }
}

// A one-shot timer on the event loop.
class Timer : public Component {
  public:
    using Component::Component;
    void at(Tick t, std::function<void()> f) {
        q_.push(t, std::move(f));
        requestWake(t);
    }

  protected:
    void process() override {
        while (q_.headReady() <= now()) q_.pop()();
        if (q_.headReady() != kNever) requestWake(q_.headReady());
    }

  private:
    TimedQueue<std::function<void()>> q_;
};

}  // namespace

Report runRpc(const SystemParams& p, const NicParams& n, const RpcConfig& c) {
    p.validate();
    n.validate("nic");
    const PbShape& shape = pbShape(c.shape);
    need(c.direction == "serialize" || c.direction == "deserialize",
         "rpc.direction = '" + c.direction + "' is not allowed; allowed values: serialize, deserialize");
    need(c.mechanism == "cxl-nic" || c.mechanism == "pcie-nic" || c.mechanism == "host",
         "rpc.mechanism = '" + c.mechanism + "' is not allowed; allowed values: cxl-nic, pcie-nic, host");
    System sys(p, c.check);
    Timer timer(sys.loop);
    const std::vector<PbMessage> tree = makeMessage(shape, p.seed, kObjects);
    const uint64_t bytes = wireBytes(tree), fields = fieldCount(tree);
    const bool ser = c.direction == "serialize";
    auto now = [&] { return sys.loop.now(); };
    auto onHost = [&](Txn* a) { sys.home->hostAccess(a); };
    auto onNic = [&](Txn* a) { sys.accels[0]->access(a); };
    const Tick nicCompute = nsToTicks(double(fields) * n.rpc_field_ns + double(bytes) / n.rpc_gbps);
    const Tick hostCompute = nsToTicks(double(fields) * n.host_field_ns + double(bytes) / n.host_copy_gbps);
    Tick done = 0;
    bool finished = false;
    // The PCIe NIC's transfer: what follows its data, or the driver's notice of it.
    struct Then final : DmaClient {
        std::function<void()> data, noticed;
        void dataIn(DmaJob*) override {
            if (data) data();
        }
        void dmaDone(DmaJob*) override {
            if (noticed) noticed();
        }
    } then;
    DmaJob job;
    job.client = &then;
    const uint32_t half = std::max<uint32_t>(1, n.host_outstanding / 2);  // host line fills per stream
    // Objects: read (serialising, pointers first) or written (deserialising).
    const bool nicWalks = c.mechanism == "cxl-nic";
    LineWalk objects(sys.pool, ser ? Txn::Load : (nicWalks ? Txn::StoreNoAlloc : Txn::Store),
                     nicWalks ? p.accelerators.at(0).cache.mshrs : std::max<uint32_t>(1, n.host_outstanding - half),
                     nicWalks ? std::function<void(Txn*)>(onNic) : std::function<void(Txn*)>(onHost), now);
    addGroups(objects, tree, ser);
    // The encoded message's buffer: a host core serialising writes it as it
    // reads the objects, one deserialising reads it as it writes them; the
    // two streams share the core's line fills.
    LineWalk buffer(sys.pool, ser ? Txn::Store : Txn::Load, half, onHost, now);
    buffer.groups.push_back(LineWalk::Group{linesOf(kBuffer, bytes), -1, 0});
    // Serialising: the application has just built the objects, so they sit
    // dirty in the host's caches (written by a host core, untimed).
    // Deserialising on the host core alone: the message has just arrived in
    // a buffer in its caches.
    Tick t0 = 0;
    if (ser || c.mechanism == "host") {
        LineWalk build(sys.pool, Txn::Store, n.host_outstanding, onHost, now);
        if (ser)
            addGroups(build, tree, false);
        else
            build.groups.push_back(LineWalk::Group{linesOf(kBuffer, bytes), -1, 0});
        build.start([] {});
        sys.run();
        t0 = now();
    }
    auto finish = [&] {
        done = now() - t0;
        finished = true;
    };
    // The engine (NIC or host core) computes while its accesses are in
    // flight: done at the later of its compute time and its walks.
    auto overlapped = [&](std::vector<LineWalk*> walks, Tick compute, std::function<void()> then) {
        auto left = std::make_shared<size_t>(walks.size() + 1);
        auto one = [left, then] {
            if (--*left == 0) then();
        };
        timer.at(now() + compute, one);
        for (LineWalk* w : walks) w->start(one);
    };
    if (c.mechanism == "cxl-nic") {
        overlapped({&objects}, nicCompute, finish);
    } else if (c.mechanism == "host") {
        overlapped({&objects, &buffer}, hostCompute, finish);
    } else if (ser) {
        // The host core serialises into the DMA buffer and rings the doorbell;
        // the NIC fetches the descriptor and reads the buffer.
        job.addr = kBuffer;
        job.bytes = bytes;
        then.data = finish;
        overlapped({&objects, &buffer}, hostCompute, [&] { sys.home->doorbell(0, &job); });
    } else {
        // The NIC writes the message into a posted receive buffer (after fetching
        // its descriptor and header word); the driver notices, and the host core
        // parses it from memory into objects.
        job.addr = kBuffer;
        job.bytes = 8;
        job.writeBytes = uint32_t(bytes);
        then.noticed = [&] { overlapped({&objects, &buffer}, hostCompute, finish); };
        sys.home->doorbell(0, &job);
    }
    sys.run();
    need(finished, "internal: the RPC run stopped before the message was done");
    Report r;
    r.emplace_back("bytes", double(bytes));
    r.emplace_back("fields", double(fields));
    r.emplace_back("messages", double(tree.size()));
    r.emplace_back("object_lines", double(objects.lines()));
    r.emplace_back("latency_ns", ticksToNs(done));
    r.emplace_back("throughput_gbps", done ? double(bytes) / ticksToNs(done) : 0.0);
    sys.report(r, 0, done);
    return r;
}

}  // namespace cxlcore
