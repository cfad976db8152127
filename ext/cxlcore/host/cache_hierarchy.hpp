// The host's tag-only caches and TLBs, which shape the load-to-use curve.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/host/page_tables.hpp"

namespace cxlcore {

inline uint64_t mix64(uint64_t x) {  // murmur3 finaliser
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

// Tag-only set-associative array. LRU, or DRRIP: the adaptive, thrash-
// resistant replacement of Intel's LLCs since Ivy Bridge (2-bit re-reference
// prediction values; set dueling between SRRIP and bimodal BRRIP insertion,
// Jaleel et al., ISCA 2010). A cyclic working set just beyond the LLC keeps
// most of the LLC's worth of hits under DRRIP; under LRU it keeps none.
class TagArray {
  public:
    // How a key picks its set: its low bits (a cache indexed by physical
    // address, a TLB by page number), or its page's bits through a hash (the
    // LLC's slice hash, which spreads the pages of a contiguous run too).
    enum class Index { kDirect, kPageHash };
    // bimodalProb < 0: LRU; otherwise DRRIP, whose BRRIP sets insert a miss
    // at "long" re-reference with this probability and at "distant" otherwise.
    TagArray(uint64_t entries, uint32_t assoc, double bimodalProb, Index index, uint64_t seed);
    bool access(uint64_t key);  // hit? a miss installs the key
    void prefetch(uint64_t key) const;  // brings the key's set into the simulator's own caches
    void clear();
    uint64_t sets() const { return sets_; }

  private:
    uint64_t sets_;
    uint32_t assoc_;
    bool rrip_, pageHash_, pow2_;
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
// The caches take physical addresses (the TLBs virtual ones): the L2's set
// is the address's low bits, so which of its sets a page fills depends on
// the frame the OS gave it (ChaseWalk's frame runs).
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

}  // namespace cxlcore
