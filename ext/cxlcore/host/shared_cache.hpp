// A host's coherent cache for the windows of a shared device (HDM-DB): the
// lines of memory several hosts share, kept coherent by the device's
// back-invalidate snoops instead of by a home agent of the host's own.
//
// Accesses perform at once on the state they find (a hit completes a lookup
// later); a miss sends a MemRd asking for S (a load) or E (a store) down the
// host's memory path and waits for its grant. Dirty victims and the lines a
// snoop takes are written back past the host bridge's request tracker
// (HostBridge::sendCoherent): a snoop's answer must never wait behind reads
// the snoop holds up. A BISnp is answered once the host has the grant it
// names (Txn::seq) and no write-back of its line is in flight; a line with a
// write-back in flight is not read again until the write completes, so the
// read cannot pass it.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/line_table.hpp"
#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

struct SharedCacheParams {
    uint64_t lines = 16384;  // capacity in lines
    uint32_t ways = 16;
    double hit_ns = 40;      // lookup (a hit's latency)
    double snoop_ns = 40;    // a snoop's lookup before the host answers it
};

struct SharedCacheStats {
    uint64_t loads = 0, stores = 0, hits = 0, misses = 0, upgrades = 0;
    uint64_t writebacks = 0, snoopWritebacks = 0;
    uint64_t snoops = 0, snoopsDeferred = 0, snoopHits = 0;  // BISnps received, waiting for a grant or write, finding the line
};

class SharedCache final : public Component, public Requester, public BiAgent {
  public:
    // `agent`: this host's number for the checker; `down`: the uncore input
    // its reads take. Windows are added with the bridge that decodes each.
    SharedCache(Host& host, TxnPool& pool, const SharedCacheParams& p, uint8_t hostIndex, const std::string& name,
                CoherenceChecker* checker);
    void setInput(Target* down) { down_ = down; }
    void addWindow(uint64_t base, uint64_t end, HostBridge* bridge);
    // An access (Txn::kind Load or Store of the line at Txn::hostAddr; a
    // store writes Txn::value). Its client is told when it completes; a load's
    // value is in Txn::value then.
    void access(Txn* a);

    bool tryResp(Txn* t) override;  // MemData from the uncore
    void retryReq() override;
    void snooped(Txn* snp, Tick at) override;
    void written(Txn* cmp, Tick at) override;

    const SharedCacheStats& stats() const { return stats_; }
    uint64_t outstanding() const { return mshrs_.size(); }

  protected:
    void process() override;

  private:
    struct Line {
        uint64_t line = 0, value = 0, stamp = 0;
        MState st = MState::I;
    };
    struct Mshr {
        std::vector<Txn*> waiting;   // accesses, in order
        std::vector<Txn*> snoops;    // BISnps waiting for the grant this read brings
        MState want = MState::S;
        bool sent = false;           // its MemRd has left (else it waits for a write-back of the line)
    };
    enum Kind : uint8_t { kDone, kFill, kSnoop, kWritten };
    struct Ev {
        Kind kind = kDone;
        Txn* t = nullptr;
    };
    Line* find(uint64_t line);
    void setState(Line& l, MState s);
    void perform(Txn* a, Line& l, Tick t);  // a hit: reads or writes the line
    void miss(Txn* a, uint64_t line);
    void sendRead(uint64_t line, MState want, Tick at);
    void fill(Txn* m, Tick t);
    void writeBack(uint64_t line, uint64_t value, MState after, Txn* snoop, Tick t);
    void snoop(Txn* s, Tick t);
    void answer(Txn* s, MState kept, Tick t);
    // Snoops of the line that can be answered now, after a grant or a write-back.
    void ready(uint64_t line, Tick t);
    HostBridge* bridgeOf(uint64_t addr) const;
    // The line as the checker knows it: its offset in the shared region, the same on every host.
    uint64_t key(uint64_t addr) const;

    TxnPool& pool_;
    SharedCacheParams p_;
    uint8_t host_;
    std::string name_;
    const char *missName_, *wbName_;
    CoherenceChecker* checker_;
    Target* down_ = nullptr;
    struct Window {
        uint64_t base, end;
        HostBridge* bridge;
    };
    std::vector<Window> windows_;
    uint64_t sets_;
    std::vector<Line> lines_;
    uint64_t clock_ = 0;
    Tick hit_, snoopLat_;
    LineTable<Mshr> mshrs_;
    LineTable<uint32_t> lastSeq_;   // the last grant received for each line
    LineTable<uint32_t> wb_;        // write-backs of each line in flight
    std::unordered_map<uint64_t, std::vector<Txn*>> wbSnoops_;  // snoops answered when the line's write-back completes
    std::unordered_map<uint64_t, std::vector<Txn*>> deferred_;  // snoops waiting for a write-back to finish first
    TimedQueue<Ev> events_;
    std::vector<Txn*> unsent_;      // reads the uncore had no room for
    SharedCacheStats stats_;
};

}  // namespace cxlcore
