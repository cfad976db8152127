// The host's tag-only caches and TLBs, which shape the load-to-use curve.
#pragma once

#include <algorithm>
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

// Storage whose sets start on the simulator's own 64-byte cache lines: a
// set is fetched as the lines it fills, never one more across a boundary
// (the prefetches of a walk name a set's first and last lines).
template <typename T>
class LineArray {
  public:
    LineArray() = default;
    LineArray(const LineArray&) = delete;  // data_ points into buf_
    LineArray& operator=(const LineArray&) = delete;
    void assign(size_t n, T v) {
        buf_.assign(n + 64 / sizeof(T), v);
        const uintptr_t p = (reinterpret_cast<uintptr_t>(buf_.data()) + 63) & ~uintptr_t(63);
        data_ = reinterpret_cast<T*>(p);
        n_ = n;
    }
    void fill(T v) { std::fill(data_, data_ + n_, v); }
    T& operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }

  private:
    std::vector<T> buf_;
    T* data_ = nullptr;
    size_t n_ = 0;
};

// Entries a set of `assoc` spans in a LineArray of T: a set of at most a
// line is padded to a power of two (sets never straddle a line), a larger
// one to whole lines.
template <typename T>
uint32_t setStride(uint32_t assoc) {
    const uint32_t line = 64 / sizeof(T);
    uint32_t s = 1;
    if (assoc > line) return (assoc + line - 1) / line * line;
    while (s < assoc) s *= 2;
    return s;
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
    // A victim-filled (non-inclusive) LLC, DRRIP only. take: hit? a hit
    // hands the line to the L2 and frees its way (data one core uses lives
    // in one level); a miss counts for set dueling. insert: an L2 victim.
    // One that came from this LLC (`reused`) goes in at near re-reference,
    // where a hit leaves a line in an inclusive LLC, others as DRRIP inserts
    // a miss: an exclusive LLC learns reuse from a line's trips between the
    // levels (Gaur, Chaudhuri, Subramoney, ISCA 2011), and without it a
    // cyclic working set past the LLC keeps no hits.
    bool take(uint64_t key);
    void insert(uint64_t key, bool reused);
    void prefetch(uint64_t key) const;  // brings the key's set into the simulator's own caches
    void clear();
    uint64_t sets() const { return sets_; }

  private:
    uint32_t victim(uint32_t* set) const;  // DRRIP: the way a full set gives up
    void duel(uint64_t set);               // DRRIP: a miss in `set`
    bool brrip(uint64_t set) const;        // DRRIP: does `set` insert as BRRIP?
    uint64_t sets_;
    uint32_t assoc_;
    uint32_t stride_;  // DRRIP: entries from one set to the next in fp_
    bool rrip_, pageHash_, pow2_;
    uint64_t bimodal_;            // DRRIP: P(long insertion) in units of 2^-32
    uint32_t psel_ = 512;         // DRRIP: 10-bit policy selector, high = BRRIP misses less
    LineArray<uint32_t> fp_;      // DRRIP: hash fingerprint << 2 | RRPV; 0 = invalid
    std::vector<uint64_t> tags_;  // LRU: key + 1; 0 = invalid
    std::vector<uint64_t> stamp_;
    uint64_t clock_ = 0;
    Rng rng_;
};

// The L2: full tags, since its victims fill a non-inclusive LLC, and 2-bit
// QLRU ages: QLRU_H00_M1_R2_U1 in Abel and Reineke's notation, the policy
// nanoBench measured on Coffee Lake's L2 (Cannon Lake's differs only in the
// empty way it fills first; Golden Cove's is not published). A miss goes in
// at age 1, a hit makes a line age 0, the victim is the first line of age 3,
// and after each access the other lines age until one of them is 3. Hit
// lines outlive lines that were not, so hot page-table lines stay while a
// streaming working set passes, and a cyclic working set somewhat larger
// than a set keeps some of its hits, where LRU or SRRIP keep none.
class L2Array {
  public:
    L2Array(uint64_t entries, uint32_t assoc);
    bool hit(uint64_t key);
    // Installs a missed key; `reused`: it came from the LLC. Returns whether
    // a valid line was evicted, and which (with its flag).
    bool fill(uint64_t key, bool reused, uint64_t& victim, bool& victimReused);
    void clear();
    // Hints for the simulator's own caches, which never change a result:
    // the key's set, and the line a fill of the key would evict now (false
    // when none would).
    void prefetch(uint64_t key) const;
    bool peekVictim(uint64_t key, uint64_t& victim) const;

  private:
    void age(uint8_t* a, uint32_t keep) const;
    uint32_t fillWay(const uint64_t* t, const uint8_t* a) const;
    uint64_t sets_;
    uint32_t assoc_, stride_, ageStride_;  // entries from one set to the next in tags_, age_
    bool pow2_;
    LineArray<uint64_t> tags_;  // (key + 1) << 1 | reused; 0 = invalid
    LineArray<uint8_t> age_;
};

// L1, L2 and LLC, DTLB/STLB, page walks through the caches. L1 and the TLBs
// are LRU and fill on every miss; the L2 fills on every L1 miss. The LLC is
// either inclusive (filled on every L2 miss) or, as Intel's server LLCs
// since Skylake-SP are, non-inclusive and victim-filled: a line from memory
// fills the L2 only, the L2's victims fill the LLC, and a line a core takes
// from the LLC leaves it, so L2 and LLC hold their sum (Cornell Virtual
// Workshop, "Last level cache": Skylake-SP's L3 "mainly holds cache lines
// that have been evicted from the cores' L2 caches"). Page-walk reads go
// through the same caches as data.
// The caches take physical addresses (the TLBs virtual ones): the L2's set
// is the address's low bits, so which of its sets a page fills depends on
// the frame the OS gave it (ChaseWalk's frame runs).
class CacheHierarchy {
  public:
    explicit CacheHierarchy(const HostParams& p, uint64_t seed);
    enum Level : int { kL1 = 0, kL2 = 1, kLLC = 2, kMem = 3 };
    Level access(uint64_t addr);
    void prefetch(uint64_t addr) const { llc_.prefetch(addr / kLineBytes); }
    // Hints for a load some steps ahead (they never change a result): its
    // L2 and LLC sets, and, a few steps later, the LLC set its L2 victim
    // will go to in a non-inclusive LLC. Without them nearly every step of a
    // working set larger than the simulator's own caches waits for memory
    // three times: the L2 set, the LLC set, and the victim's LLC set.
    void prefetchSets(uint64_t addr) const {
        l2_.prefetch(addr / kLineBytes);
        llc_.prefetch(addr / kLineBytes);
    }
    void prefetchVictim(uint64_t addr) const {
        uint64_t v;
        if (!inclusive_ && l2_.peekVictim(addr / kLineBytes, v)) llc_.prefetch(v);
    }
    // 0: DTLB hit, 1: STLB hit, 2: page walk needed.
    int translate(uint64_t vaddr);
    static uint64_t pteAddr(uint64_t vaddr, uint64_t pageBytes) { return pteOfPage(vaddr / pageBytes); }
    static uint64_t pteOfPage(uint64_t vpn) { return kPageTableFlag | (kPageTableBase + vpn * 8); }

  private:
    TagArray l1_;
    L2Array l2_;
    TagArray llc_, dtlb_, stlb_;
    bool inclusive_;
    uint64_t pageShift_;
};

}  // namespace cxlcore
