// Host side: tag-only caches and TLBs for the load-to-use curve, the uncore
// path from a core's LLC miss to the memory port, and the inter-socket link.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "dram.hpp"
#include "link.hpp"

namespace cxlcore {

// Page tables live in the host's local DRAM whatever memory the data is in.
constexpr uint64_t kPageTableFlag = 1ull << 62;
constexpr uint64_t kPageTableBase = 1ull << 38;

// Tag-only set-associative array. LRU, or DRRIP: the adaptive, thrash-
// resistant replacement of Intel's LLCs since Ivy Bridge (2-bit re-reference
// prediction values; set dueling between SRRIP and bimodal BRRIP insertion,
// Jaleel et al., ISCA 2010). A cyclic working set just beyond the LLC keeps
// most of the LLC's worth of hits under DRRIP; under LRU it keeps none.
class TagArray {
  public:
    // bimodalProb < 0: LRU; otherwise DRRIP, whose BRRIP sets insert a miss
    // at "long" re-reference with this probability and at "distant" otherwise.
    TagArray(uint64_t entries, uint32_t assoc, double bimodalProb, bool hashedIndex, uint64_t seed);
    bool access(uint64_t key);  // hit? a miss installs the key
    void prefetch(uint64_t key) const;  // brings the key's set into the simulator's own caches
    void clear();
    uint64_t sets() const { return sets_; }

  private:
    uint64_t sets_;
    uint32_t assoc_;
    bool rrip_, hashed_, pow2_;
    uint64_t bimodal_;            // DRRIP: P(long insertion) in units of 2^-32
    uint32_t psel_ = 512;         // DRRIP: 10-bit policy selector, high = BRRIP misses less
    std::vector<uint32_t> fp_;    // DRRIP: hash fingerprint << 2 | RRPV; 0 = invalid
    std::vector<uint64_t> tags_;  // LRU: key + 1; 0 = invalid
    std::vector<uint64_t> stamp_;
    uint64_t clock_ = 0;
    Rng rng_;
};

// L1/L2/LLC inclusive fill, DTLB/STLB, page walks through the caches. L1
// and the TLBs are LRU; L2 is SRRIP (the QLRU family of Intel's L2s since
// Skylake: lines that were hit outlive lines that were not, so the hot page-
// table lines of a walk stay in L2 while a streaming working set passes).
class CacheHierarchy {
  public:
    explicit CacheHierarchy(const HostParams& p, uint64_t seed);
    enum Level : int { kL1 = 0, kL2 = 1, kLLC = 2, kMem = 3 };
    Level access(uint64_t addr);
    void prefetch(uint64_t addr) const { llc_.prefetch(addr / kLineBytes); }
    // 0: DTLB hit, 1: STLB hit, 2: page walk needed.
    int translate(uint64_t vaddr);
    static uint64_t pteAddr(uint64_t vaddr, uint64_t pageBytes) {
        return kPageTableFlag | (kPageTableBase + (vaddr / pageBytes) * 8);
    }

  private:
    TagArray l1_, l2_, llc_, dtlb_, stlb_;
    uint64_t pageShift_;
};

// From the cores' LLC misses to the memory targets and back: the LLC miss
// and the mesh/home-agent latency each way. Bounded by the cores' own MSHRs.
// Requests may be issued for a time in the future (a core reacting to a
// response that lands then), so each route is ordered by ready time; the
// response latency is added on the way through, without an event.
class Uncore : public Component, public Target, public Requester {
  public:
    Uncore(Host& host, const HostParams& p, Target* memory, Target* pageTables);
    bool tryReq(Txn* t) override;  // t->birth: when the miss leaves the core (>= now)
    bool tryResp(Txn* t) override;
    void retryReq() override;

  protected:
    void process() override;

  private:
    struct Route {
        Target* target = nullptr;
        TimedQueue<Txn*> out;
        bool blocked = false;
    };
    Route routes_[2];
    int nRoutes_;
    Tick reqLat_, respLat_;
};

// Remote NUMA memory: an inter-socket link (latency and bandwidth per
// direction) in front of the other socket's DRAM controller.
class InterSocket : public Component, public Target, public Requester {
  public:
    InterSocket(Host& host, const InterSocketParams& p, const DramParams& dram);
    bool tryReq(Txn* t) override;
    bool tryResp(Txn* t) override;
    void retryReq() override;
    void retryResp() override;

    DramController& dram() { return dram_; }
    FlitChannel out_, back_;
    double bytesPerSec() const { return p_.bandwidth_gbps * 1e9; }

  protected:
    void process() override;

  private:
    InterSocketParams p_;
    DramController dram_;
    TimedFifo<Txn*> rx_, tx_;
    // Directory writes: made here, sent to DRAM when it has room, recycled
    // when DRAM completes them.
    std::vector<std::unique_ptr<Txn>> dirStore_;
    std::vector<Txn*> dirFree_;
    std::deque<Txn*> dirQ_;
    uint64_t dirSeq_ = 0;
    uint32_t outstanding_ = 0, reqUnits_, dataUnits_;
    bool needRetry_ = false, dramBlocked_ = false, respBlocked_ = false;
};

}  // namespace cxlcore
