// CXL.cache: Type-1/Type-2 accelerators with coherent device caches, the
// host's home agent (ordering point and snoop filter), Type-2 device memory
// with host/device bias or back-invalidate (HDM-DB), a PCIe-style DMA engine
// over CXL.io, and an optional checker of the coherence invariants.
//
// All protocol messages ride the same flit channels as CXL.mem, each class
// with its own credits. Host-to-device messages leave the home in order (a
// snoop never passes an earlier GO or write to the same line); device-to-host
// requests have their own queue so responses never wait behind them.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cxlcore/mem/dram.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

enum class MState : uint8_t { I, S, E, M };
const char* stateName(MState s);

enum class Opc : uint8_t {
    // D2H Req
    RdCurr, RdOwn, RdShared, RdAny, ItoMWr, WrInv, CleanEvict, DirtyEvict, BiasFlipReq,
    // D2H Rsp
    RspIHitI, RspVHitV, RspIHitSE, RspSHitSE, RspSFwdM, RspIFwdM, RspVFwdV,
    // H2D Req (snoops)
    SnpData, SnpInv, SnpCur,
    // H2D Rsp
    GO, GO_WritePull, BiasFlipDone,
    // home-internal: a snoop-filter eviction
    SFEvict,
    // data of either direction
    Data,
    // CXL.mem to and from Type-2 device memory, with CXL 3.x back-invalidate
    MemRd, MemRdFwd, MemWr, MemData, Cmp, BISnpData, BISnpInv, BIRspI, BIRspS,
    // CXL.io TLPs
    IoMemRd, IoMemWr, IoCplD,
    kCount
};
const char* opName(Opc o);

// Message classes: credits and flit slots are per class. CXL 3.x gives
// back-invalidate snoops (S2M BISnp) and their answers (M2S BIRsp) channels of
// their own: a BISnp holds its credit until the home answers, and the home may
// first need MemData (S2M DRS), so sharing one class can deadlock.
enum CClass : uint8_t {
    kCD2HReq, kCD2HRsp, kCD2HData, kCH2DReq, kCH2DRsp, kCH2DData,
    kCM2SReq, kCM2SRwD, kCM2SBIRsp, kCS2M, kCS2MBISnp, kCIoD2H, kCIoH2D, kNumCClasses
};
const char* className(CClass c);

// Where an accelerator or host access spent its time.
enum AStage : uint8_t {
    kAQueue,      // waiting for an MSHR, a tracker entry or an earlier request to the line
    kACache,      // device (or host) cache lookup
    kALinkUp,     // link device->host
    kAHome,       // home agent pipeline
    kASnoop,      // waiting for snoop responses from other caches
    kAMemory,     // memory read (host DRAM or device memory)
    kALinkDown,   // link host->device
    kABiasFlip,   // Type-2 bias flips
    kABackInv,    // CXL 3.x back-invalidate snoops
    kNumAStages
};
const char* stageName(AStage s);

constexpr uint64_t kDevMemBase = 1ull << 44;  // device memory above all host memory

struct Access;
struct HTxn;
struct DmaJob;

// Progress of a coherent run, for the watchdog: requests (accesses and DMA
// transfers) outstanding and the last time anything completed.
struct CoherentProgress {
    uint64_t outstanding = 0;
    Tick lastProgress = 0;
    void progress(Tick now) { lastProgress = now; }
};

// The oldest outstanding request found in a system, and where it waits.
struct Oldest {
    Tick issued = kNever;
    std::string where;
    template <typename F>
    void see(Tick t, F&& describe) {
        if (t < issued) {
            issued = t;
            where = describe();
        }
    }
};

struct Msg {
    Opc op = Opc::Data;
    CClass cls = kCD2HReq;
    MState state = MState::I;  // GO and MemRdFwd: the state granted
    bool bogus = false;        // D2H data of a line snooped away during its eviction
    uint16_t dev = 0;
    uint32_t bytes = 0;        // CXL.io payload
    uint64_t line = 0;         // line address (bytes, 64 B aligned)
    uint64_t value = 0;        // the line's data, as a version number
    Access* acc = nullptr;     // the access whose latency this message carries
    HTxn* txn = nullptr;       // home transaction a snoop or write-pull belongs to
    DmaJob* job = nullptr;     // CXL.io: the DMA transfer a TLP belongs to
    uint64_t tag = 0;
};

using MsgPool = ObjectPool<Msg>;

// Single-writer/multiple-reader and data-value checker. Agents are the
// devices' caches and the host (index = number of devices).
class CoherenceChecker {
  public:
    explicit CoherenceChecker(uint32_t agents) : agents_(agents) {}
    void state(uint64_t line, uint32_t agent, MState s, Tick now);
    void read(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    void write(uint64_t line, uint32_t agent, uint64_t value, Tick now);
    // Memory supplies a line no cache holds dirty: it must be the latest value.
    void memory(uint64_t line, uint64_t value, Tick now);
    uint64_t violations() const { return violations_; }
    uint64_t checks() const { return checks_; }
    const std::string& first() const { return first_; }

  private:
    struct L {
        std::vector<MState> st;
        uint64_t value = 0;
    };
    L& get(uint64_t line);
    void fail(const std::string& what, Tick now);
    uint32_t agents_;
    std::unordered_map<uint64_t, L> lines_;
    uint64_t violations_ = 0, checks_ = 0;
    std::string first_;
};

// A load or store of one line by a requester (device thread or host core).
struct Access {
    enum Kind : uint8_t { Load, Store, LoadCurrent, StoreNoAlloc, StoreWrInv, LoadAny };
    Kind kind = Load;
    uint64_t line = 0;
    uint64_t value = 0;   // store: value written; load: value read
    uint32_t agent = 0;   // device index, or the host
    Tick issued = 0, mark = 0, done = 0;
    Tick stage[kNumAStages] = {};
    bool hit = false;     // served by the first cache lookup
    bool missed = false;
    std::function<void(Access*)> onDone;
    void leave(AStage s, Tick now) {
        stage[s] += now - mark;
        mark = now;
    }
};

// Functional memory contents: a version number per line, 0 until written.
using Values = std::unordered_map<uint64_t, uint64_t>;

// A DRAM controller used from a component that is not itself a Requester.
class MemPort : public Requester {
  public:
    MemPort(Host& host, const DramParams& p, const std::string& where);
    void read(uint64_t addr, std::function<void()> done);
    void write(uint64_t addr);
    bool tryResp(Txn* t) override;
    void retryReq() override;
    DramController& dram() { return dram_; }
    const DramController& dram() const { return dram_; }
    size_t pending() const { return waiting_.size() + refused_.size(); }

  private:
    void pump();
    Host& host_;
    DramController dram_;
    TxnPool pool_;
    std::unordered_map<uint64_t, std::function<void()>> waiting_;
    std::deque<Txn*> refused_;
};

class Endpoint;

// One direction of a device's link: per-class queues (or one ordered queue),
// per-class credits, and the flit channel they share.
class Wire {
  public:
    void init(FlitChannel* ch, Component* sender, Endpoint* receiver, bool ordered, const uint32_t* credits,
              Tick creditReturn, uint32_t tlpOverhead);
    void send(Msg* m);
    void pump();
    void giveCredit(CClass c, Tick now) { credits_[c].give(now); }
    size_t queued() const;
    size_t maxQueued() const { return maxQueued_; }
    uint64_t sent(CClass c) const { return sent_[c]; }
    uint32_t units(const Msg* m) const;
    template <typename F>
    void each(F f) const {
        for (auto& q : q_)
            for (const Msg* m : q) f(m);
    }

  private:
    FlitChannel* ch_ = nullptr;
    Component* sender_ = nullptr;
    Endpoint* rx_ = nullptr;
    bool ordered_ = false;
    uint32_t tlpOverhead_ = 24;
    std::array<CreditPool, kNumCClasses> credits_;
    std::array<std::deque<Msg*>, kNumCClasses> q_;
    std::array<uint64_t, kNumCClasses> sent_ = {};
    uint32_t busy_ = 0;  // queues holding messages
    size_t maxQueued_ = 0;
};

class Endpoint : public Component {
  public:
    using Component::Component;
    void receive(Msg* m, Tick arrival) {
        inbox_.push(arrival, m);
        requestWake(arrival);
    }

  protected:
    TimedQueue<Msg*> inbox_;
};

class HomeAgent;
struct CohCounters;

struct AccelStats {
    uint64_t loads = 0, stores = 0, hits = 0, misses = 0, mshrFull = 0;
    uint64_t snoopsRecv[3] = {0, 0, 0};  // SnpData, SnpInv, SnpCur
    uint64_t cleanEvicts = 0, dirtyEvicts = 0, bogusData = 0, hostBiasFlips = 0, deviceBiasFlips = 0;
    uint64_t biSnps = 0, localMemReads = 0, fwdReads = 0;
    uint64_t grants[4] = {0, 0, 0, 0};  // fills installed, by state granted
    uint64_t dmaTransfers = 0, flushedLines = 0;
};

// One DMA read of host memory into the device, with the time of each phase.
struct DmaJob {
    uint64_t addr = 0, bytes = 0;
    uint16_t dev = 0;
    Tick start = 0, doorbellAt = 0, descriptorAt = 0, dataAt = 0, completionAt = 0, noticedAt = 0;
    bool haveDescriptor = false;
    uint64_t received = 0, nextRead = 0;
    uint32_t readsInFlight = 0;
    uint64_t cachedLines = 0, firstValue = 0;  // lines a cache supplied; the first line's version
    std::function<void(DmaJob*)> onDone;
};

// A CXL.cache accelerator: Type-1 (coherent cache) or Type-2 (cache plus
// device memory in host/device bias or HDM-DB), with a DMA engine.
class Accelerator : public Endpoint {
  public:
    Accelerator(Host& host, uint16_t index, const DCacheParams& cp, const AccelParams& ap, const DmaParams& dp,
                const DramParams& media, CxlLink& link, HomeAgent& home, MsgPool& pool, CoherenceChecker* checker,
                const std::string& where);
    // A requester's access, performed after the cache lookup; misses wait
    // for an MSHR inside the device, so a device never refuses one.
    void access(Access* a);
    const AccelStats& stats() const { return stats_; }
    Wire& up() { return up_; }
    uint16_t index() const { return index_; }
    bool ownsMemory(uint64_t line) const { return memBase_ && line >= memBase_ && line < memBase_ + memBytes_; }
    uint64_t memBase() const { return memBase_; }
    size_t mshrsInUse() const { return mshrs_.size(); }
    size_t maxMshrs() const { return maxMshrs_; }
    // Test hook: deliberately break the protocol (or stop answering snoops,
    // silently or by deferring them forever, to exercise the watchdog).
    enum Bug : uint8_t { None, SnpInvKeepsCopy, DropDirtyData, DropSnoops, DeferSnoops };
    void inject(Bug b) { bug_ = b; }
    void setWatch(CoherentProgress* w) { watch_ = w; }
    bool quiet() const;
    std::string describe() const;  // outstanding work, for deadlock reports
    void oldest(Oldest& o) const;
    const std::string& name() const { return name_; }

  protected:
    void process() override;

  private:
    struct CLine {
        uint64_t line = 0;
        MState st = MState::I;
        uint64_t value = 0;
        uint64_t lru = 0;
        bool reserved = false;  // way held for an outstanding fill
    };
    struct Mshr {
        enum Kind : uint8_t { Fill, Uncached, Evict, Local } kind = Fill;
        Opc op = Opc::RdShared;
        std::deque<Access*> waiting;  // first is the primary
        bool gotGo = false, gotData = false, snooped = false;
        MState granted = MState::I, evictState = MState::I;
        uint64_t value = 0;
        CLine* way = nullptr;
        bool biPending = false, hostReacquired = false, biInv = false;
        std::deque<Msg*> snoops;  // snoops that arrived after GO, answered once the fill lands
    };

    void handle(Msg* m);
    void lookup(Access* a);
    bool startMiss(Access* a, CLine* hitLine);
    CLine* find(uint64_t line);
    CLine* victim(uint64_t line);
    void install(uint64_t line, Mshr& ms);
    void finishMshr(uint64_t line);
    void complete(Access* a);
    void setState(CLine& l, MState s);
    void snoop(Msg* m);
    void sendUp(Msg* m, Access* a = nullptr);
    Msg* msg(Opc op, CClass c, uint64_t line);
    // Type-2 device memory
    bool deviceBias(uint64_t line) const;
    void localFill(uint64_t line, Access* a, Mshr& ms);
    void hostMemAccess(Msg* m);
    Tick flipToHostBias(uint64_t page, Access* cause);
    // DMA
    void dmaStart();
    void dmaPump(DmaJob& j);

    uint16_t index_;
    std::string name_;
    CoherentProgress* watch_ = nullptr;
    DCacheParams cp_;
    AccelParams ap_;
    DmaParams dp_;
    CxlLink& link_;
    HomeAgent& home_;
    MsgPool& pool_;
    CoherenceChecker* checker_;
    Bug bug_ = None;
    uint32_t sets_;
    std::vector<CLine> ways_;
    uint64_t lruClock_ = 0;
    std::unordered_map<uint64_t, Mshr> mshrs_;
    size_t maxMshrs_ = 0;
    TimedQueue<Access*> pipe_;
    std::deque<Access*> stalled_;
    TimedQueue<Msg*> snoopQ_;   // snoops being answered
    TimedQueue<std::function<void()>> later_;
    Wire up_;
    Tick lat_, snoopLat_, memLat_, flipLat_;
    // Type-2 memory
    uint64_t memBase_ = 0, memBytes_ = 0;
    std::unique_ptr<MemPort> mem_;
    Values memVals_;
    std::unordered_map<uint64_t, bool> bias_;  // page -> device bias
    std::unordered_map<uint64_t, bool> flipping_;  // pages with a flip to device bias in flight
    std::unordered_map<uint64_t, MState> hostCopy_;  // HDM-DB: lines the host may hold
    std::unordered_map<uint64_t, std::deque<Msg*>> memBlocked_;  // host requests waiting for a local op
    // DMA
    std::deque<Msg*> doorbells_;
    std::vector<std::unique_ptr<DmaJob>> jobs_;
    uint32_t enginesBusy_ = 0;
    AccelStats stats_;
    friend class HomeAgent;
};

struct HomeStats {
    uint64_t requests[int(Opc::kCount)] = {};
    uint64_t snoops[3] = {0, 0, 0};
    uint64_t hostHits = 0, hostMisses = 0, memReads = 0, memWrites = 0, biSnps = 0, biasFlips = 0;
    uint64_t ioReads = 0, ioWrites = 0, conflicts = 0, sfEvictions = 0;
    uint64_t hostEvictions = 0, hostWritebacks = 0, hostDirtied = 0, flushedLines = 0;
    size_t maxTracker = 0, maxLineQueue = 0, maxLineStates = 0, maxHostLines = 0;
};

// A home transaction: one request being ordered and resolved for one line.
struct HTxn {
    Opc op = Opc::RdShared;
    int dev = -1;            // requesting device, -1 for a host core
    uint64_t line = 0;
    Access* acc = nullptr;
    Msg* req = nullptr;
    uint32_t snoopsOut = 0, dataOut = 0;
    bool memOut = false, haveData = false, dirty = false, memHave = false, snoopedCur = false;
    uint64_t value = 0, memValue = 0;
    Tick issued = 0;                    // CXL.io reads: when the read reached the home
    std::function<void(HTxn*)> onDone;  // CXL.io reads: the line's data is resolved
};

// The host side: home agent with a snoop filter, the host's own caches as
// one coherent agent, host DRAM, and the CXL.io completer for DMA.
class HomeAgent : public Endpoint {
  public:
    HomeAgent(Host& host, const HomeParams& p, const DramParams& dram, MsgPool& pool, CoherenceChecker* checker,
              const std::string& where);
    void addDevice(Accelerator* d, CxlLink* link, const DCacheParams& cp, const DmaParams& dp);
    // A host core's access to one line.
    void hostAccess(Access* a);
    // Rings a device's DMA doorbell for a read of [addr, addr + bytes).
    void doorbell(uint16_t dev, DmaJob* job, Tick delay = 0);
    const HomeStats& stats() const { return stats_; }
    const DramStats& dramStats() const { return dram_.dram().stats(); }
    Wire& down(uint16_t dev) { return ports_[dev].down; }
    Values& memory() { return mem_; }
    const DmaParams& dma(uint16_t dev) const { return ports_[dev].dp; }
    bool quiet() const;
    std::string describe() const;
    void oldest(Oldest& o) const;
    void setWatch(CoherentProgress* w) { watch_ = w; }
    // Line-state entries held now (lines some cache holds or a request is at).
    size_t lineStates() const { return lines_.size(); }
    size_t hostLines() const { return hostLru_.size(); }
    uint64_t hostDirtyLines() const;

  protected:
    void process() override;

  private:
    struct HLine {
        uint32_t sharers = 0;  // devices holding the line (any valid state)
        int owner = -1;        // device holding it E or M
        MState host = MState::I;
        uint64_t value = 0;    // host copy
        HTxn* active = nullptr;
        std::deque<HTxn*> wait;
        std::list<uint64_t>::iterator lru;  // place in the host cache's LRU order, while host != I
    };
    using LineMap = std::unordered_map<uint64_t, HLine>;
    struct Port {
        Accelerator* dev;
        CxlLink* link;
        Wire down;
        DmaParams dp;
    };
    void handle(Msg* m);
    // The line's state entry, made (and indexed by page) if it has none.
    HLine& line(uint64_t x);
    // Drops the entry of a line nothing holds or waits for.
    void forget(LineMap::iterator it);
    uint64_t pageOf(uint64_t x) const { return x & ~(pageBytes_ - 1); }
    void hostEvict();
    void flush(HTxn* t, const std::vector<uint64_t>& lines);
    void finishAccess(Access* a);
    void jobNoticed(DmaJob* job);
    void enqueue(HTxn* t);
    void start(HTxn* t);
    void maybeFinish(HTxn* t);
    void finish(HTxn* t);
    void snoop(HTxn* t, uint16_t dev, Opc op, uint64_t line);
    bool pageBusy(HTxn* flip);
    void release(uint64_t line);
    void memRead(HTxn* t);
    void memWrite(uint64_t line, uint64_t value, HTxn* waiter = nullptr);
    Accelerator* memOwner(uint64_t line) const;
    void sendDown(uint16_t dev, Msg* m);
    Msg* msg(Opc op, CClass c, uint64_t line);
    void setHost(HLine& l, uint64_t line, MState s);
    // Every change to a line's device copies goes here: it keeps the
    // snoop filter's occupancy and evicts from it when it is full.
    void setSharers(HLine& l, uint64_t line, uint32_t sharers);
    void sfMakeRoom(uint64_t except);
    void backInvalidate(Msg* m);
    void ioRead(Msg* m);
    void ioWrite(Msg* m);

    HomeParams p_;
    MsgPool& pool_;
    CoherenceChecker* checker_;
    MemPort dram_;
    std::vector<Port> ports_;
    LineMap lines_;
    // Device-memory lines with an entry, by bias page: a flip visits only these.
    std::unordered_map<uint64_t, std::unordered_set<uint64_t>> pageLines_;
    std::unordered_map<uint64_t, HTxn*> lockedPages_;  // pages a bias flip holds
    uint64_t pageBytes_ = 0;
    std::list<uint64_t> hostLru_;  // lines the host caches hold, least recent first
    size_t hostCap_ = 0;
    CoherentProgress* watch_ = nullptr;
    Values mem_;
    Tick lat_, hostHit_;
    size_t tracker_ = 0;
    ObjectPool<HTxn> txns_;
    TimedQueue<std::function<void()>> later_;
    std::deque<HTxn*> deferredFlips_;
    size_t sfLines_ = 0;            // lines with at least one device copy
    std::deque<uint64_t> sfOrder_;  // insertion order (stale entries skipped), for victims
    uint32_t numDevs_ = 0;
    HomeStats stats_;
    friend class Accelerator;
};

}  // namespace cxlcore
