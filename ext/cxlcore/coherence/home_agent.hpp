// The host side of CXL.cache: the home agent (the ordering point of every
// line, with a snoop filter of the devices' copies), the host's own caches as
// one coherent agent, host DRAM, and the CXL.io completer for DMA.
//
// Host-to-device messages leave the home in order (a snoop never passes an
// earlier GO or write to the same line); device-to-host requests have their
// own queue so responses never wait behind them.
//
// The class's concerns live in separate files: line state, the host cache and
// memory access (coherence/home_agent.cpp), a transaction's life with Type-2
// bias/back-invalidate handling (coherence/home_txn.cpp), device-to-host
// messages (coherence/home_d2h.cpp), the snoop filter's capacity
// (coherence/snoop_filter.cpp) and the CXL.io completer (coherence/io_completer.cpp).
#pragma once

#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/line_table.hpp"
#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/coherence/wire.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/devices/dma_engine.hpp"
#include "cxlcore/mem/mem_port.hpp"

namespace cxlcore {

struct HomeStats {
    uint64_t requests[int(Opc::kCount)] = {};
    uint64_t snoops[kNumSnoops] = {};  // by snoopIndex
    uint64_t hostHits = 0, hostMisses = 0, memReads = 0, memWrites = 0, biSnps = 0, biasFlips = 0;
    uint64_t ioReads = 0, ioWrites = 0, conflicts = 0, sfEvictions = 0;
    uint64_t hostEvictions = 0, hostWritebacks = 0, hostDirtied = 0, flushedLines = 0;
    size_t maxTracker = 0, maxLineQueue = 0, maxLineStates = 0, maxHostLines = 0;
};

// A DMA read being resolved line by line at the home.
struct IoRead {
    uint32_t left = 0, bytes = 0;  // lines not yet resolved; the read's size
    uint16_t dev = 0;
    bool data = false;             // a data read (not a descriptor fetch)
    uint64_t first = 0;            // its first line
    DmaJob* job = nullptr;
};

struct HomeLine;

// A home transaction: one request being ordered and resolved for one line.
struct HTxn {
    Opc opc = Opc::RdShared;
    int dev = -1;            // requesting device, -1 for a host core
    uint64_t line = 0;
    Txn* parent = nullptr;    // the access it serves (a device's or a host core's)
    Txn* req = nullptr;
    uint32_t snoopsOut = 0, dataOut = 0;
    bool memOut = false, haveData = false, dirty = false, memHave = false, snoopedCur = false;
    uint64_t value = 0, memValue = 0;
    Tick birth = 0;           // CXL.io reads: when the read reached the home
    struct IoRead* io = nullptr;  // CXL.io reads: the DMA read this line belongs to
    // The line's state entry, found once as the transaction is queued: it
    // stays while the transaction is at the line (bias flips: none).
    HomeLine* hl = nullptr;
    // Lines of a shared device (SharedHome): `granted` once the host's
    // shared cache holds the line as the request needs (until then the
    // transaction has snooped nothing: phase A); `recall`: a back-invalidate
    // the shared cache asked for (`tag` is its own), `side`: run beside the
    // line's transaction in phase A, which waits for the cache.
    bool granted = false, phaseA = false, recall = false, urgent = false, side = false;
    void* tag = nullptr;
};

// A host's coherent cache of a shared device's region (host/shared_cache.hpp)
// as its home agent sees it: the host holds those lines at the device (S or
// E), the home tracks which of its devices' caches hold them within the host.
class SharedHome {
  public:
    virtual bool covers(uint64_t line) const = 0;
    // Transaction t needs the line held by the host for sharing (own false) or
    // ownership; HomeAgent::sharedGranted(t, value) when it is.
    virtual void homeRead(HTxn* t, uint64_t line, bool own) = 0;
    // Dirty data from a device cache: the host's copy is now the newest.
    virtual void homeWrite(uint64_t line, uint64_t value) = 0;
    // A recall (HomeAgent::recall) is done; `kept`: some device cache still holds the line (S).
    virtual void recalled(uint64_t line, void* tag, bool kept) = 0;

  protected:
    ~SharedHome() = default;
};

// The home's state of one line: its holders, and the transactions at it.
struct HomeLine {
    uint64_t x = 0;        // its line address
    uint32_t sharers = 0;  // devices holding the line (any valid state)
    int owner = -1;        // device holding it E or M
    MState host = MState::I;
    uint64_t value = 0;    // host copy
    HTxn* active = nullptr;
    SmallFifo<HTxn*> wait;  // no allocation for a line made and dropped with one miss
    // Neighbours in the host caches' LRU order, while host != I (a list
    // through the entries themselves: no node to allocate per host fill).
    HomeLine* lruPrev = nullptr;
    HomeLine* lruNext = nullptr;
};

// The host side: home agent with a snoop filter, the host's own caches as
// one coherent agent, host DRAM, and the CXL.io completer for DMA.
class HomeAgent : public Endpoint, public Client {
  public:
    // `memory`: the host's memory as the home reaches it (an input of the
    // uncore, which routes by the address map).
    HomeAgent(Host& host, const HomeParams& p, Target& memory, TxnPool& pool, CoherenceChecker* checker);
    // A device on its own root port and link (its credits already set by the
    // device); or, with `via`, a switch below the root port, `link` the switch's upstream link.
    void addDevice(Accelerator* d, CxlLink* link, const DmaParams& dp, Endpoint* via = nullptr);
    // A host core's access to one line.
    void hostAccess(Txn* a);
    // A read of host DRAM a home transaction waited for.
    void done(Txn* r) override;
    // Rings a device's DMA doorbell for a read of [addr, addr + bytes).
    void doorbell(uint16_t dev, DmaJob* job, Tick delay = 0);
    const HomeStats& stats() const { return stats_; }
    Wire& down(uint16_t dev) { return ports_[dev].down; }
    const Wire& down(uint16_t dev) const { return ports_[dev].down; }
    Values& memory() { return values_; }
    const DmaParams& dma(uint16_t dev) const { return ports_[dev].dp; }
    bool quiet() const;
    std::string describe() const;
    void oldest(Oldest& o) const;
    void setWatch(CoherentProgress* w) { watch_ = w; }
    // Lines of a shared device's region: the host's shared cache holds them
    // for the home's device caches (nullptr: none).
    void setShared(SharedHome* s) { shared_ = s; }
    void sharedGranted(HTxn* t, uint64_t value, Tick at);
    // Takes the line back from the device caches (inv: all copies; else the
    // owner's, which keeps S), as for a BISnp from device memory; then
    // SharedHome::recalled(line, tag, kept). `urgent`: a device's BISnp
    // (it must not wait behind a request that waits for the shared cache).
    void recall(uint64_t line, bool inv, bool urgent, void* tag);
    // What the device caches may hold of a line: I, S (sharers) or E (an
    // owner, or a request at the line that may make one).
    MState deviceHolding(uint64_t line) const;
    // Line-state entries held now (lines some cache holds or a request is at).
    size_t lineStates() const { return lines_.size(); }
    size_t hostLines() const { return hostLines_; }
    uint64_t hostDirtyLines() const;

  protected:
    void process() override;

  private:
    const char* name_ = "home";                // as trace spans name it
    TraceSink* trace_ = TraceSink::current();  // the run's request trace, if any
    using HLine = HomeLine;
    struct Port {
        Accelerator* dev;
        CxlLink* link;
        Wire down;
        DmaParams dp;
        Endpoint* via;  // a switch between root port and device (nullptr: none)
    };
    // Work done after a fixed delay, as plain records (no allocation per event).
    enum class Later : uint8_t { HostHit, Enqueue, DataDone, IoRead, Doorbell, JobNoticed, Proceed, Recall };
    struct Deferred {
        Later what;
        uint16_t dev;
        void* p;  // the access, home transaction, message or DMA job it is about
    };
    void defer(Tick at, Later what, void* p, uint16_t dev = 0);
    void run(const Deferred& d);
    void handle(Txn* m);
    // The line's state entry, made (and indexed by page) if it has none.
    HLine& line(uint64_t x);
    // Line x's entry as transaction t reaches it (its own line: the entry it holds).
    HLine& line(HTxn* t, uint64_t x) { return t->hl && x == t->line ? *t->hl : line(x); }
    // Drops the entry of a line nothing holds or waits for.
    void forget(uint64_t x);
    // The host caches' LRU order: appends a line (most recent) or takes it out.
    void lruAppend(HLine& l);
    void lruUnlink(HLine& l);
    // The bias page of a device-memory line (pages are the owner's), else the line.
    uint64_t pageOf(uint64_t x, const Accelerator* owner) const {
        return owner ? x & ~(owner->biasPageBytes() - 1) : x;
    }
    void hostEvict();
    void flush(HTxn* t, const std::vector<uint64_t>& lines);
    void finishAccess(Txn* a);
    void pumpInTurn();
    void jobNoticed(DmaJob* job);
    void enqueue(HTxn* t);
    void start(HTxn* t);
    void proceed(HTxn* t);  // start's work once a shared line is granted
    void placeRecall(HTxn* t);
    void maybeFinish(HTxn* t);
    void finish(HTxn* t);
    void snoop(HTxn* t, uint16_t dev, Opc op, uint64_t line);
    bool pageBusy(HTxn* flip);
    void release(uint64_t line, HLine* entry = nullptr);  // entry: the line's, if known
    void memRead(HTxn* t);
    void memWrite(uint64_t line, uint64_t value, HTxn* waiter = nullptr);
    Accelerator* memOwner(uint64_t line) const;
    void sendDown(uint16_t dev, Txn* m);
    Txn* msg(Opc op, uint64_t line);  // on the opcode's channel
    void setHost(HLine& l, uint64_t line, MState s);
    // Every change to a line's device copies goes here: it keeps the
    // snoop filter's occupancy and evicts from it when it is full
    // (coherence/snoop_filter.cpp).
    void setSharers(HLine& l, uint64_t line, uint32_t sharers);
    void sfMakeRoom(uint64_t except);
    // CXL.io completer (coherence/io_completer.cpp)
    void ringDoorbell(uint16_t dev, DmaJob* job);
    void ioRead(Txn* m);
    void ioLineDone(HTxn* t);
    void ioWrite(Txn* m);

    HomeParams p_;
    TxnPool& pool_;
    CoherenceChecker* checker_;
    MemPort mem_;  // host memory, by the address map
    std::vector<Port> ports_;
    LineTable<HLine> lines_;
    // Device-memory lines with an entry, by bias page: a flip visits only these.
    std::unordered_map<uint64_t, std::unordered_set<uint64_t>> pageLines_;
    std::unordered_map<uint64_t, HTxn*> lockedPages_;  // pages a bias flip holds
    HLine* lruHead_ = nullptr;  // lines the host caches hold, least recent first
    HLine* lruTail_ = nullptr;
    size_t hostLines_ = 0, hostCap_ = 0;
    bool deviceMemory_ = false;  // a device has memory of its own (memOwner can be one)
    CoherentProgress* watch_ = nullptr;
    SharedHome* shared_ = nullptr;
    Values values_;  // host memory's contents
    Tick lat_, hostHit_;
    size_t tracker_ = 0;
    ObjectPool<HTxn> txns_;
    ObjectPool<IoRead> ioReads_;
    TimedQueue<Deferred> later_;
    std::deque<HTxn*> deferredFlips_;
    size_t sfLines_ = 0;            // lines with at least one device copy
    std::deque<uint64_t> sfOrder_;  // insertion order (stale entries skipped), for victims
    uint32_t numDevs_ = 0;
    bool sharedPorts_ = false;  // some devices sit behind a switch (addDevice's via)
    uint32_t pumpFrom_ = 0;     // the wire pumpInTurn starts at next
    HomeStats stats_;
    friend class Accelerator;
};

}  // namespace cxlcore
