#include "cxlcore/host/cache_hierarchy.hpp"

#include <algorithm>

namespace cxlcore {

TagArray::TagArray(uint64_t entries, uint32_t assoc, double bimodalProb, Index index, uint64_t seed)
    : sets_(std::max<uint64_t>(1, entries / assoc)), assoc_(assoc), stride_(setStride<uint32_t>(assoc)),
      rrip_(bimodalProb >= 0),
      pageHash_(index == Index::kPageHash),
      bimodal_(uint64_t(std::min(1.0, std::max(0.0, bimodalProb)) * 4294967296.0)), rng_(seed) {
    if (rrip_) {
        fp_.assign(sets_ * stride_, 0);
    } else {
        tags_.assign(sets_ * assoc_, 0);
        stamp_.assign(sets_ * assoc_, 0);
    }
    pow2_ = (sets_ & (sets_ - 1)) == 0;
}

void TagArray::clear() {
    if (rrip_) fp_.fill(0);
    std::fill(tags_.begin(), tags_.end(), 0);
    std::fill(stamp_.begin(), stamp_.end(), 0);
    psel_ = 512;
}

namespace {
inline uint64_t setOf(uint64_t key, bool pageHash, bool pow2, uint64_t sets) {
    // kPageHash: lines of a page fill consecutive sets, pages scatter.
    const uint64_t k = pageHash ? (mix64(key >> 6) << 6) | (key & 63) : key;
    return pow2 ? k & (sets - 1) : k % sets;
}
}  // namespace

void TagArray::prefetch(uint64_t key) const {
    if (!rrip_) return;
    const uint32_t* t = &fp_[setOf(key, pageHash_, pow2_, sets_) * stride_];
    __builtin_prefetch(t);
    if (assoc_ > 16) __builtin_prefetch(t + assoc_ - 1);  // a set of more than a line
}

bool TagArray::access(uint64_t key) {
    if (rrip_) {
        // Large arrays keep a 30-bit fingerprint of a 64-bit hash next to the
        // 2-bit RRPV: a third of the memory of full tags and stamps; a false
        // match has odds ~assoc/2^30.
        const uint64_t h = mix64(key);
        const uint64_t set = setOf(key, pageHash_, pow2_, sets_);
        const uint32_t f = (uint32_t(h >> 32) | 4u) & ~3u;
        uint32_t* t = &fp_[set * stride_];
        uint32_t w = 0;
        for (; w < assoc_; ++w) {
            if ((t[w] & ~3u) == f) {
                t[w] = f;  // a hit: near-immediate re-reference (RRPV 0)
                return true;
            }
            if (t[w] == 0) break;  // ways fill in order, so the rest are empty too
        }
        duel(set);
        const bool distant = brrip(set) && (rng_.next() >> 32) >= bimodal_;
        if (w == assoc_) w = victim(t);
        t[w] = f | (distant ? 3u : 2u);
        return false;
    }
    const uint64_t set = setOf(key, pageHash_, pow2_, sets_);
    uint64_t* t = &tags_[set * assoc_];
    uint64_t* s = &stamp_[set * assoc_];
    const uint64_t k = key + 1;
    ++clock_;
    // One pass: a hit, or the least recent way (invalid ways have stamp 0).
    // The oldest stamp so far stays in a register: reloading s[victim] made
    // each way wait for the comparison of the one before.
    uint32_t victim = 0;
    uint64_t oldest = s[0];
    for (uint32_t w = 0; w < assoc_; ++w) {
        if (t[w] == k) {
            s[w] = clock_;
            return true;
        }
        if (s[w] < oldest) {
            oldest = s[w];
            victim = w;
        }
    }
    t[victim] = k;
    s[victim] = clock_;
    return false;
}

// A full DRRIP set: the first way predicted for distant re-reference, ageing
// all until one is.
uint32_t TagArray::victim(uint32_t* t) const {
    uint32_t oldest = 0;
    for (uint32_t v = 0; v < assoc_; ++v) oldest = std::max(oldest, t[v] & 3u);
    const uint32_t age = 3 - oldest;
    uint32_t w = assoc_;
    for (uint32_t v = 0; v < assoc_; ++v) {
        t[v] += age;
        if (w == assoc_ && (t[v] & 3u) == 3) w = v;
    }
    return w;
}

// Set dueling: 1/64 of the sets always use SRRIP, 1/64 always BRRIP; their
// misses steer the policy of the other sets.
void TagArray::duel(uint64_t set) {
    const uint64_t leader = set & 63;
    if (leader == 0) psel_ = std::min<uint32_t>(1023, psel_ + 1);
    else if (leader == 1) psel_ = psel_ ? psel_ - 1 : 0;
}

bool TagArray::brrip(uint64_t set) const {
    const uint64_t leader = set & 63;
    return leader == 1 || (leader != 0 && psel_ >= 512);
}

bool TagArray::take(uint64_t key) {
    const uint64_t set = setOf(key, pageHash_, pow2_, sets_);
    const uint32_t f = (uint32_t(mix64(key) >> 32) | 4u) & ~3u;
    uint32_t* t = &fp_[set * stride_];
    for (uint32_t w = 0; w < assoc_ && t[w]; ++w) {
        if ((t[w] & ~3u) != f) continue;
        // Keep the valid ways first: the last one fills the hole.
        uint32_t last = w;
        while (last + 1 < assoc_ && t[last + 1]) ++last;
        t[w] = t[last];
        t[last] = 0;
        return true;
    }
    duel(set);  // a miss steers set dueling as an inclusive LLC's does
    return false;
}

void TagArray::insert(uint64_t key, bool reused) {
    const uint64_t set = setOf(key, pageHash_, pow2_, sets_);
    const uint32_t f = (uint32_t(mix64(key) >> 32) | 4u) & ~3u;
    uint32_t* t = &fp_[set * stride_];
    uint32_t w = 0;
    for (; w < assoc_ && t[w]; ++w)
        if ((t[w] & ~3u) == f) {
            t[w] = f;
            return;
        }
    if (w == assoc_) w = victim(t);
    const bool distant = brrip(set) && (rng_.next() >> 32) >= bimodal_;
    t[w] = f | (reused ? 0u : distant ? 3u : 2u);
}

L2Array::L2Array(uint64_t entries, uint32_t assoc)
    : sets_(std::max<uint64_t>(1, entries / assoc)), assoc_(assoc), stride_(setStride<uint64_t>(assoc)),
      ageStride_(setStride<uint8_t>(assoc)) {
    tags_.assign(sets_ * stride_, 0);
    age_.assign(sets_ * ageStride_, 3);
    pow2_ = (sets_ & (sets_ - 1)) == 0;
}

void L2Array::clear() {
    tags_.fill(0);
    age_.fill(3);
}

// U1: the lines other than `keep` age until one of them is 3.
void L2Array::age(uint8_t* a, uint32_t keep) const {
    uint8_t m = 0;
    for (uint32_t w = 0; w < assoc_; ++w)
        if (w != keep) m = std::max(m, a[w]);
    if (m == 3) return;
    for (uint32_t w = 0; w < assoc_; ++w)
        if (w != keep) a[w] = uint8_t(a[w] + 3 - m);
}

bool L2Array::hit(uint64_t key) {
    const uint64_t set = pow2_ ? key & (sets_ - 1) : key % sets_;
    uint64_t* t = &tags_[set * stride_];
    uint8_t* a = &age_[set * ageStride_];
    for (uint32_t w = 0; w < assoc_; ++w)
        if (t[w] >> 1 == key + 1) {
            a[w] = 0;  // H00
            age(a, w);
            return true;
        }
    return false;
}

void L2Array::prefetch(uint64_t key) const {
    const uint64_t set = pow2_ ? key & (sets_ - 1) : key % sets_;
    const uint64_t* t = &tags_[set * stride_];
    __builtin_prefetch(t);
    __builtin_prefetch(t + assoc_ - 1);  // a set of 16 tags spans two lines
    __builtin_prefetch(&age_[set * ageStride_]);
}

// The way a fill of `key`'s set takes.
uint32_t L2Array::fillWay(const uint64_t* t, const uint8_t* a) const {
    uint32_t w = assoc_;
    for (uint32_t v = assoc_; v-- > 0;)  // R2: the last empty way
        if (!t[v]) {
            w = v;
            break;
        }
    if (w == assoc_)
        for (uint32_t v = 0; v < assoc_; ++v)
            if (a[v] == 3) {
                w = v;
                break;
            }
    if (w == assoc_) w = 0;  // U1 leaves a line of age 3 beside the last accessed; unreachable
    return w;
}

bool L2Array::peekVictim(uint64_t key, uint64_t& victim) const {
    const uint64_t set = pow2_ ? key & (sets_ - 1) : key % sets_;
    const uint64_t* t = &tags_[set * stride_];
    const uint32_t w = fillWay(t, &age_[set * ageStride_]);
    if (!t[w]) return false;
    victim = (t[w] >> 1) - 1;
    return true;
}

bool L2Array::fill(uint64_t key, bool reused, uint64_t& victim, bool& victimReused) {
    const uint64_t set = pow2_ ? key & (sets_ - 1) : key % sets_;
    uint64_t* t = &tags_[set * stride_];
    uint8_t* a = &age_[set * ageStride_];
    const uint32_t w = fillWay(t, a);
    const bool evicts = t[w] != 0;
    if (evicts) {
        victim = (t[w] >> 1) - 1;
        victimReused = t[w] & 1;
    }
    t[w] = (key + 1) << 1 | (reused ? 1 : 0);
    a[w] = 1;  // M1
    age(a, w);
    return evicts;
}

CacheHierarchy::CacheHierarchy(const HostParams& p, uint64_t seed)
    : l1_(p.l1_bytes / kLineBytes, p.l1_assoc, -1, TagArray::Index::kDirect, seed),
      l2_(p.l2_bytes / kLineBytes, p.l2_assoc),
      // DRRIP; the slice hash scatters pages over the slices' sets.
      llc_(p.llc_bytes / kLineBytes, p.llc_assoc, p.llc_bimodal_insert_prob, TagArray::Index::kPageHash, seed + 2),
      dtlb_(p.dtlb_entries, p.dtlb_assoc, -1, TagArray::Index::kDirect, seed + 3),
      stlb_(p.stlb_entries, p.stlb_assoc, -1, TagArray::Index::kDirect, seed + 4), inclusive_(p.llc_inclusive != 0) {
    pageShift_ = 0;
    while ((1ull << pageShift_) < p.page_bytes) ++pageShift_;
}

CacheHierarchy::Level CacheHierarchy::access(uint64_t addr) {
    const uint64_t line = addr / kLineBytes;
    if (l1_.access(line)) return kL1;
    if (l2_.hit(line)) return kL2;
    const bool llcHit = inclusive_ ? llc_.access(line) : llc_.take(line);
    uint64_t victim = 0;
    bool reused = false;
    if (l2_.fill(line, llcHit, victim, reused) && !inclusive_) llc_.insert(victim, reused);
    return llcHit ? kLLC : kMem;
}

int CacheHierarchy::translate(uint64_t vaddr) {
    const uint64_t vpn = vaddr >> pageShift_;
    if (dtlb_.access(vpn)) return 0;
    if (stlb_.access(vpn)) return 1;
    return 2;
}

}  // namespace cxlcore
