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
//
// With a home agent (setHome), the host's CXL.cache devices share the lines
// too: the home asks this cache for a line before it grants one to a device
// (homeRead: the host holds it for them, inclusively: such a line stays here
// while they may hold it), their dirty data comes back here (homeWrite), and
// a BISnp of a line they may hold is answered once the home has snooped them
// (HomeAgent::recall), as a core access that conflicts with their copies waits
// for the home to take them back first.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/home_agent.hpp"
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
    // With a home agent: its reads for device caches (and those that missed
    // here), and back-invalidates of device caches it was asked for (for a
    // BISnp, for a core access).
    uint64_t homeReads = 0, homeMisses = 0, snoopRecalls = 0, coreRecalls = 0;
};

class SharedCache final : public Component, public Requester, public BiAgent, public SharedHome {
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

    // The host's home agent, whose device caches share the lines.
    void setHome(HomeAgent* h) {
        home_ = h;
        h->setShared(this);
    }
    bool covers(uint64_t line) const override;
    void homeRead(HTxn* t, uint64_t line, bool own) override;
    void homeWrite(uint64_t line, uint64_t value) override;
    void recalled(uint64_t line, void* tag, bool kept) override;

    const SharedCacheStats& stats() const { return stats_; }
    uint64_t outstanding() const { return mshrs_.size(); }
    std::string describe() const;  // what waits here, for stall reports

  protected:
    void process() override;

  private:
    struct Line {
        uint64_t line = 0, value = 0, stamp = 0;
        MState st = MState::I;
        MState acc = MState::I;  // what the home's device caches may hold of it (lent: S or E)
    };
    struct Mshr {
        std::vector<Txn*> waiting;   // accesses, in order
        std::vector<Txn*> snoops;    // BISnps waiting for the grant this read brings
        MState want = MState::S;
        bool sent = false;           // its MemRd has left (else it waits for a write-back of the line)
    };
    enum Kind : uint8_t { kDone, kFill, kSnoop, kWritten, kRecalled };
    struct Ev {
        Kind kind = kDone;
        Txn* t = nullptr;
        uint64_t line = 0;  // kRecalled: its line (t: the BISnp it was for, or none)
    };
    Line* find(uint64_t line);
    void setState(Line& l, MState s);
    void perform(Txn* a, Line& l, Tick t);  // a hit: reads or writes the line
    void tryAccess(Txn* a, Tick t);
    // What the cores may do with a line the device caches may share: the
    // checker's state of the host (I while they may own it, at most S while they share it).
    MState view(const Line& l) const;
    void setAcc(Line& l, MState a);
    void refresh(Line& l);  // lowers acc to what the home says the devices may hold now
    bool conflicts(Line& l, const Txn* a);  // a core access that needs the devices' copies back first
    void recallFor(Txn* a, uint64_t line);
    void lend(Txn* marker, Line& l, Tick at, const Txn* read = nullptr);  // serves the home's read (`read`: its miss's)
    void snoopLocal(Txn* s, Tick t);           // a BISnp, the device caches done with
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
    const char *missName_, *wbName_, *recallName_;
    CoherenceChecker* checker_;
    Target* down_ = nullptr;
    struct Window {
        uint64_t base, end;
        HostBridge* bridge;
    };
    std::vector<Window> windows_;
    uint64_t sets_;
    std::vector<Line> lines_;
    LineTable<Line> extra_;  // lines lent to the home with no way free in their set
    HomeAgent* home_ = nullptr;
    // Lines whose device copies the home is taking back: recalls out for core
    // accesses and for BISnps, and the accesses waiting for them (home reads
    // wait only for a BISnp's: a core's recall may itself wait for them at the home).
    struct Pending {
        uint32_t core = 0, snoop = 0;
        std::vector<Txn*> waiting;
    };
    std::unordered_map<uint64_t, Pending> pending_;
    void drain(uint64_t line, Tick t);
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
