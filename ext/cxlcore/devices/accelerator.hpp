// A CXL.cache accelerator: Type-1 (coherent cache) or Type-2 (cache plus
// device memory in host/device bias or HDM-DB), with a DMA engine.
//
// The class's concerns live in separate files: the device cache, its MSHRs
// and snoop handling (devices/accelerator.cpp), Type-2 device memory with
// its bias table and back-invalidate (devices/accelerator_memory.cpp), and
// the DMA engine (devices/dma_engine.cpp).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/line_table.hpp"
#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/coherence/wire.hpp"
#include "cxlcore/devices/dma_engine.hpp"
#include "cxlcore/devices/line_access.hpp"
#include "cxlcore/kernel/trace.hpp"
#include "cxlcore/link/link.hpp"
#include "cxlcore/mem/dram.hpp"
#include "cxlcore/mem/mem_port.hpp"

namespace cxlcore {

class HomeAgent;

struct AccelStats {
    uint64_t loads = 0, stores = 0, hits = 0, misses = 0, mshrFull = 0;
    uint64_t snoopsRecv[kNumSnoops] = {};  // by snoopIndex
    uint64_t cleanEvicts = 0, dirtyEvicts = 0, bogusData = 0, hostBiasFlips = 0, deviceBiasFlips = 0;
    uint64_t biSnps = 0, localMemReads = 0, fwdReads = 0;
    uint64_t grants[4] = {0, 0, 0, 0};  // fills installed, by state granted
    uint64_t dmaTransfers = 0, flushedLines = 0;
    void add(const AccelStats& o) {
        loads += o.loads;
        stores += o.stores;
        hits += o.hits;
        misses += o.misses;
        mshrFull += o.mshrFull;
        for (uint32_t k = 0; k < kNumSnoops; ++k) snoopsRecv[k] += o.snoopsRecv[k];
        cleanEvicts += o.cleanEvicts;
        dirtyEvicts += o.dirtyEvicts;
        bogusData += o.bogusData;
        hostBiasFlips += o.hostBiasFlips;
        deviceBiasFlips += o.deviceBiasFlips;
        biSnps += o.biSnps;
        localMemReads += o.localMemReads;
        fwdReads += o.fwdReads;
        dmaTransfers += o.dmaTransfers;
        flushedLines += o.flushedLines;
        for (int k = 0; k < 4; ++k) grants[k] += o.grants[k];
    }
};

class Accelerator : public Endpoint, public Client, public LineAccess {
  public:
    Accelerator(Host& host, uint16_t index, const DCacheParams& cp, const AccelParams& ap, const DmaParams& dp,
                const DramParams& media, uint64_t memBase, CxlLink& link, HomeAgent& home, TxnPool& pool,
                CoherenceChecker* checker, const std::string& where);
    // A requester's access, performed after the cache lookup; misses wait
    // for an MSHR inside the device, so a device never refuses one.
    void access(Txn* a) override;
    const AccelStats& stats() const { return stats_; }
    Wire& up() { return up_; }
    // Its messages up go to a switch's downstream port (which forwards them to the home).
    void viaSwitch(Endpoint& sw) { up_.init(&link_, this, &sw, false); }
    const Wire& up() const { return up_; }
    uint16_t index() const { return index_; }
    bool ownsMemory(uint64_t line) const { return memBase_ && line >= memBase_ && line < memBase_ + memBytes_; }
    uint64_t memBase() const { return memBase_; }
    uint64_t memBytes() const { return memBytes_; }
    uint64_t biasPageBytes() const { return ap_.bias_page_bytes; }
    const DCacheParams& cacheParams() const { return cp_; }
    const DmaParams& dmaParams() const { return dp_; }
    size_t mshrsInUse() const { return mshrs_.size(); }
    size_t maxMshrs() const { return maxMshrs_; }
    // Test hook: deliberately break the protocol (or stop answering snoops,
    // silently or by deferring them forever, to exercise the watchdog).
    enum Bug : uint8_t { None, SnpInvKeepsCopy, DropDirtyData, DropSnoops, DeferSnoops };
    void inject(Bug b) { bug_ = b; }
    void setWatch(CoherentProgress* w) { watch_ = w; }
    // The checker this device reports to, as agent `agent` (default: its index at its home).
    void setChecker(CoherenceChecker* c, uint32_t agent) {
        checker_ = c;
        agent_ = agent;
    }
    bool quiet() const;
    std::string describe() const;  // outstanding work, for deadlock reports
    void oldest(Oldest& o) const;
    const std::string& name() const { return name_; }
    // Lets a DMA transfer its client held go on to its data reads.
    void dmaRelease(DmaJob* j);
    // A read of the device's own media (Type-2 memory) is done.
    void done(Txn* r) override;

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
        SmallFifo<Txn*> waiting;  // first is the primary (no allocation per miss)
        bool gotGo = false, gotData = false, snooped = false;
        MState granted = MState::I, evictState = MState::I;
        uint64_t value = 0;
        CLine* way = nullptr;
        bool biPending = false, hostReacquired = false, biInv = false;
        SmallFifo<Txn*> snoops;  // snoops that arrived after GO, answered once the fill lands
    };

    // Work done after a fixed delay, as plain records (no allocation per event).
    enum class Later : uint8_t { LocalFill, FwdFill, MemServe, DmaFinish, DmaDescriptor };
    struct Deferred {
        Later what;
        MState granted;  // FwdFill: the state the host granted
        void* p;         // the access, the host's MemRd message or the DMA job
    };
    // Media reads of Type-2 memory, by what they are for (Txn::tag).
    enum MediaRead : uint8_t { kFillRead, kFwdFillRead, kServeRead };
    void defer(Tick at, Later what, void* p, MState granted = MState::I);
    void run(const Deferred& d);
    void handle(Txn* m);
    void lookup(Txn* a);
    // `fill`: the way victim(line) picks, when the caller found the line
    // absent (find's second form), else null.
    bool startMiss(Txn* a, CLine* hitLine, CLine* fill = nullptr);
    CLine* find(uint64_t line);
    // As find; on a miss also victim(line)'s choice in *fill.
    CLine* find(uint64_t line, CLine** fill);
    CLine* victim(uint64_t line);
    // MSHRs are made and dropped here only (the order kept for Type-2 memory).
    Mshr& newMshr(uint64_t line);
    void dropMshr(uint64_t line);
    void install(uint64_t line, Mshr& ms);
    void finishMshr(uint64_t line, Mshr& ms);  // ms: line's MSHR, dropped here
    void complete(Txn* a);
    void setState(CLine& l, MState s);
    void snoop(Txn* m);
    void sendUp(Txn* m, Txn* a = nullptr);
    Txn* msg(Opc op, uint64_t line);  // on the opcode's channel
    // Type-2 device memory (devices/accelerator_memory.cpp)
    bool deviceBias(uint64_t line) const;
    void localFill(uint64_t line, Txn* a, Mshr& ms);
    void hostMemAccess(Txn* m);
    Tick flipToHostBias(uint64_t page, Txn* cause);
    void biasFlipDone(Txn* m);
    void backInvalidateResponse(Txn* m);
    // DMA (devices/dma_engine.cpp)
    void dmaDoorbell(Txn* m);
    void dmaCompletion(Txn* m);
    void dmaStart();
    void dmaPump(DmaJob& j);
    void dmaFinish(DmaJob& j);
    void dmaFetchDescriptor(DmaJob* j);

    uint16_t index_;
    std::string name_;
    const char* tname_;                               // name_, interned: trace spans carry it
    TraceSink* trace_ = TraceSink::current();         // the run's request trace, if any
    CoherentProgress* watch_ = nullptr;
    DCacheParams cp_;
    AccelParams ap_;
    DmaParams dp_;
    CxlLink& link_;
    HomeAgent& home_;
    TxnPool& pool_;
    CoherenceChecker* checker_;
    uint32_t agent_;  // its number at the checker
    Bug bug_ = None;
    uint32_t sets_;
    std::vector<CLine> ways_;
    uint64_t lruClock_ = 0;
    LineTable<Mshr> mshrs_;
    // Type-2 memory in host/device bias: the lines with an MSHR, in the order
    // a std::unordered_map of the MSHRs iterated, which picks the local fill
    // a host read waits behind (hostMemAccess); kept so results stay as they were.
    std::unordered_set<uint64_t> mshrOrder_;
    bool keepOrder_ = false;
    size_t maxMshrs_ = 0;
    TimedQueue<Txn*> pipe_;
    std::deque<Txn*> stalled_;
    TimedQueue<Txn*> snoopQ_;   // snoops being answered
    TimedQueue<Deferred> later_;
    Wire up_;
    Tick lat_, snoopLat_, memLat_, flipLat_;
    // Type-2 memory
    uint64_t memBase_ = 0, memBytes_ = 0;
    std::unique_ptr<DramController> media_;
    std::unique_ptr<MemPort> mem_;
    Values memVals_;
    std::unordered_map<uint64_t, bool> bias_;  // page -> device bias
    std::unordered_map<uint64_t, bool> flipping_;  // pages with a flip to device bias in flight
    std::unordered_map<uint64_t, MState> hostCopy_;  // HDM-DB: lines the host may hold
    std::unordered_map<uint64_t, std::deque<Txn*>> memBlocked_;  // host requests waiting for a local op
    // DMA
    std::deque<Txn*> doorbells_;
    uint32_t enginesBusy_ = 0;
    AccelStats stats_;
    friend class HomeAgent;
};

}  // namespace cxlcore
