#include "host.hpp"

#include <algorithm>

namespace cxlcore {

namespace {
inline uint64_t mix(uint64_t x) {  // murmur3 finaliser
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}
}  // namespace

TagArray::TagArray(uint64_t entries, uint32_t assoc, double bimodalProb, bool hashedIndex, uint64_t seed)
    : sets_(std::max<uint64_t>(1, entries / assoc)), assoc_(assoc), rrip_(bimodalProb >= 0), hashed_(hashedIndex),
      bimodal_(uint64_t(std::min(1.0, std::max(0.0, bimodalProb)) * 4294967296.0)), rng_(seed) {
    if (rrip_)
        fp_.assign(sets_ * assoc_, 0);
    else {
        tags_.assign(sets_ * assoc_, 0);
        stamp_.assign(sets_ * assoc_, 0);
    }
    pow2_ = (sets_ & (sets_ - 1)) == 0;
}

void TagArray::clear() {
    std::fill(fp_.begin(), fp_.end(), 0);
    std::fill(tags_.begin(), tags_.end(), 0);
    std::fill(stamp_.begin(), stamp_.end(), 0);
    psel_ = 512;
}

namespace {
inline uint64_t rripSet(uint64_t key, bool hashed, bool pow2, uint64_t sets) {
    // 4 KiB pages land on random physical frames: lines of a page fill
    // consecutive sets, pages scatter (hashedIndex: every line scatters).
    const uint64_t frame = hashed ? key : (mix(key >> 6) << 6) | (key & 63);
    return pow2 ? frame & (sets - 1) : frame % sets;
}
}  // namespace

void TagArray::prefetch(uint64_t key) const {
    if (rrip_) __builtin_prefetch(&fp_[rripSet(key, hashed_, pow2_, sets_) * assoc_]);
}

bool TagArray::access(uint64_t key) {
    if (rrip_) {
        // Large arrays keep a 30-bit fingerprint of a 64-bit hash next to the
        // 2-bit RRPV: a third of the memory of full tags and stamps; a false
        // match has odds ~assoc/2^30.
        const uint64_t h = mix(key);
        const uint64_t set = rripSet(key, hashed_, pow2_, sets_);
        const uint32_t f = (uint32_t(h >> 32) | 4u) & ~3u;
        uint32_t* t = &fp_[set * assoc_];
        uint32_t w = 0;
        for (; w < assoc_; ++w) {
            if ((t[w] & ~3u) == f) {
                t[w] = f;  // a hit: near-immediate re-reference (RRPV 0)
                return true;
            }
            if (t[w] == 0) break;  // ways fill in order, so the rest are empty too
        }
        // Set dueling: 1/64 of the sets always use SRRIP, 1/64 always BRRIP;
        // their misses steer the policy of the other sets.
        const uint64_t leader = set & 63;
        bool brrip;
        if (leader == 0) {
            psel_ = std::min<uint32_t>(1023, psel_ + 1);
            brrip = false;
        } else if (leader == 1) {
            psel_ = psel_ ? psel_ - 1 : 0;
            brrip = true;
        } else {
            brrip = psel_ >= 512;
        }
        if (w == assoc_) {  // full: the first way predicted for distant re-reference, ageing all until one is
            uint32_t oldest = 0;
            for (uint32_t v = 0; v < assoc_; ++v) oldest = std::max(oldest, t[v] & 3u);
            const uint32_t age = 3 - oldest;
            w = assoc_;
            for (uint32_t v = 0; v < assoc_; ++v) {
                t[v] += age;
                if (w == assoc_ && (t[v] & 3u) == 3) w = v;
            }
        }
        const bool distant = brrip && (rng_.next() >> 32) >= bimodal_;
        t[w] = f | (distant ? 3u : 2u);
        return false;
    }
    const uint64_t hk = hashed_ ? mix(key) : key;
    const uint64_t set = pow2_ ? (hk & (sets_ - 1)) : hk % sets_;
    uint64_t* t = &tags_[set * assoc_];
    uint64_t* s = &stamp_[set * assoc_];
    const uint64_t k = key + 1;
    ++clock_;
    // One pass: a hit, or the least recent way (invalid ways have stamp 0).
    uint32_t victim = 0;
    for (uint32_t w = 0; w < assoc_; ++w) {
        if (t[w] == k) {
            s[w] = clock_;
            return true;
        }
        if (s[w] < s[victim]) victim = w;
    }
    t[victim] = k;
    s[victim] = clock_;
    return false;
}

CacheHierarchy::CacheHierarchy(const HostParams& p, uint64_t seed)
    : l1_(p.l1_bytes / kLineBytes, p.l1_assoc, -1, false, seed),
      l2_(p.l2_bytes / kLineBytes, p.l2_assoc, 1.0, false, seed + 1),  // SRRIP: every insertion "long"
      // Indexed by physical line address (pages on random frames); DRRIP.
      llc_(p.llc_bytes / kLineBytes, p.llc_assoc, p.llc_bimodal_insert_prob, false, seed + 2),
      dtlb_(p.dtlb_entries, p.dtlb_assoc, -1, false, seed + 3),
      stlb_(p.stlb_entries, p.stlb_assoc, -1, false, seed + 4) {
    pageShift_ = 0;
    while ((1ull << pageShift_) < p.page_bytes) ++pageShift_;
}

CacheHierarchy::Level CacheHierarchy::access(uint64_t addr) {
    const uint64_t line = addr / kLineBytes;
    if (l1_.access(line)) return kL1;
    if (l2_.access(line)) return kL2;
    if (llc_.access(line)) return kLLC;
    return kMem;
}

int CacheHierarchy::translate(uint64_t vaddr) {
    const uint64_t vpn = vaddr >> pageShift_;
    if (dtlb_.access(vpn)) return 0;
    if (stlb_.access(vpn)) return 1;
    return 2;
}

// ---------------------------------------------------------------- uncore

Uncore::Uncore(Host& host, const HostParams& p, Target* memory, Target* pageTables) : Component(host) {
    routes_[0].target = memory;
    nRoutes_ = 1;
    if (pageTables != memory) {
        routes_[1].target = pageTables;
        nRoutes_ = 2;
    }
    routes_[0].out.name("host.uncore (LLC miss path to memory)");
    routes_[1].out.name("host.uncore (LLC miss path to the page tables)");
    // A miss leaves the core once the LLC lookup has failed.
    reqLat_ = nsToTicks(p.llc_latency_ns + p.uncore_req_latency_ns);
    respLat_ = nsToTicks(p.uncore_resp_latency_ns);
}

bool Uncore::tryReq(Txn* t) {
    Route& r = routes_[(t->addr & kPageTableFlag) && nRoutes_ == 2 ? 1 : 0];
    t->addr &= ~kPageTableFlag;
    const Tick ready = std::max(t->birth, now()) + reqLat_;
    r.out.push(ready, t);
    if (!r.blocked) requestWake(ready);
    return true;
}

bool Uncore::tryResp(Txn* t) {
    // t->mark: when the response reaches the memory port; the core has it later.
    t->stage[kStageUncore] += respLat_;
    t->mark += respLat_;
    return up_->tryResp(t);  // cores always take their own responses
}

void Uncore::retryReq() {
    // A target that had no room calls this when it has, often from inside its
    // own process(): drain on a wake-up of our own at the same tick rather than
    // re-enter it with a request.
    for (int i = 0; i < nRoutes_; ++i) routes_[i].blocked = false;
    requestWake(now());
}

void Uncore::process() {
    const Tick t = now();
    Tick w = kNever;
    for (int i = 0; i < nRoutes_; ++i) {
        Route& r = routes_[i];
        while (!r.blocked && r.out.headReady() <= t) {
            Txn* x = r.out.front();
            x->leave(kStageUncore, t);
            if (!r.target->tryReq(x)) {
                r.blocked = true;
                break;
            }
            r.out.pop();
        }
        if (!r.blocked) w = std::min(w, r.out.headReady());
    }
    if (w != kNever) requestWake(w);
}

// ---------------------------------------------------------------- remote socket

InterSocket::InterSocket(Host& host, const InterSocketParams& p, const DramParams& dram)
    : Component(host), p_(p), dram_(host, dram, "remote.dram") {
    p_.validate("remote.link");
    constexpr uint32_t kUnit = 16;  // bytes per transfer unit on the link
    const double unitPs = kUnit / p_.bandwidth_gbps * 1000.0;  // exact: the channel keeps fractions
    const Tick lat = nsToTicks(p_.latency_ns);
    out_.configure(unitPs, 1, lat, 0.0, 0, 1);
    back_.configure(unitPs, 1, lat, 0.0, 0, 2);
    reqUnits_ = (p_.req_bytes + kUnit - 1) / kUnit;
    dataUnits_ = (p_.data_bytes + kUnit - 1) / kUnit;
    rx_.reset(p_.max_outstanding);
    tx_.reset(p_.max_outstanding);
    rx_.name("remote.link.out (inter-socket link to the remote home)");
    tx_.name("remote.link.back (inter-socket link back)");
    dram_.setRequester(this);
}

bool InterSocket::tryReq(Txn* t) {
    if (outstanding_ >= p_.max_outstanding) {
        needRetry_ = true;
        return false;
    }
    ++outstanding_;
    const bool rd = t->op == Op::Read;
    Tick arr = out_.send(now(), rd ? reqUnits_ : dataUnits_, rd ? 0 : t->size);
    t->leave(kStageLinkReq, arr);
    rx_.push(arr, t);
    requestWake(arr);
    return true;
}

bool InterSocket::tryResp(Txn* t) {
    if (t->internal) {  // a directory write is done
        dirFree_.push_back(t);
        return true;
    }
    const bool rd = t->op == Op::Read;
    if (rd && t->own && p_.directory_writes) {
        // The home agent's memory directory: a remote read for ownership
        // marks the line as cached by the other socket, a state kept in the
        // line's ECC bits, so the home writes the line back to DRAM (the
        // modified line's writeback later clears it with its own write; a
        // clean read-only line keeps the state and costs nothing more).
        Txn* d;
        if (dirFree_.empty()) {
            dirStore_.emplace_back(new Txn());
            d = dirStore_.back().get();
        } else {
            d = dirFree_.back();
            dirFree_.pop_back();
            *d = Txn();
        }
        d->id = (1ull << 63) | dirSeq_++;  // ids of their own: components key work by id
        d->op = Op::Write;
        d->addr = d->hostAddr = t->addr;
        d->internal = true;
        d->birth = d->mark = now();
        dirQ_.push_back(d);
        requestWake(now());
    }
    Tick arr = back_.send(now(), rd ? dataUnits_ : reqUnits_, rd ? t->size : 0);
    t->leave(kStageLinkResp, arr);
    tx_.push(arr, t);
    requestWake(arr);
    return true;
}

void InterSocket::retryReq() {
    dramBlocked_ = false;
    requestWake(now());
}

void InterSocket::retryResp() {
    respBlocked_ = false;
    requestWake(now());
}

void InterSocket::process() {
    const Tick t = now();
    // Directory writes first: the reads that made them are older than
    // anything still on the link, and the home agent cannot hold them for long.
    while (!dramBlocked_ && !dirQ_.empty()) {
        if (!dram_.tryReq(dirQ_.front())) {
            dramBlocked_ = true;
            break;
        }
        dirQ_.pop_front();
    }
    while (!dramBlocked_ && rx_.headReady() <= t) {
        Txn* x = rx_.front();
        x->leave(kStageLinkReq, t);
        if (!dram_.tryReq(x)) {
            dramBlocked_ = true;
            break;
        }
        rx_.pop();
    }
    while (!respBlocked_ && tx_.headReady() <= t) {
        Txn* x = tx_.front();
        x->leave(kStageLinkResp, t);
        if (!up_->tryResp(x)) {
            respBlocked_ = true;
            break;
        }
        tx_.pop();
        --outstanding_;
        if (needRetry_) {
            needRetry_ = false;
            up_->retryReq();
        }
    }
    Tick w = std::min(dramBlocked_ ? kNever : due(rx_.headReady(), t), respBlocked_ ? kNever : due(tx_.headReady(), t));
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
