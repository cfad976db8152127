#include "dram.hpp"

#include <algorithm>

namespace cxlcore {

DramController::DramController(Host& host, const DramParams& p, const std::string& where)
    : Component(host), p_(p) {
    p_.validate(where);
    const double tck_ns = 2000.0 / p_.data_rate_mts;  // two transfers per clock
    tBurst_ = nsToTicks(tck_ns * p_.burst_length / 2.0);
    tRCD_ = nsToTicks(p_.tRCD_ns);
    tCL_ = nsToTicks(p_.tCL_ns);
    tCWL_ = nsToTicks(p_.tCWL_ns);
    tRP_ = nsToTicks(p_.tRP_ns);
    tRAS_ = nsToTicks(p_.tRAS_ns);
    tWR_ = nsToTicks(p_.tWR_ns);
    tWTR_ = nsToTicks(p_.tWTR_ns);
    tRTW_ = nsToTicks(p_.tRTW_ns);
    tRRD_ = nsToTicks(p_.tRRD_ns);
    tFAW_ = nsToTicks(p_.tFAW_ns);
    tCCD_L_ = nsToTicks(p_.tCCD_L_ns);
    tREFI_ = nsToTicks(p_.tREFI_ns);
    tRFC_ = nsToTicks(p_.tRFC_ns);
    front_ = nsToTicks(p_.frontend_latency_ns);
    back_ = nsToTicks(p_.backend_latency_ns);
    // Commit a request early enough that a row miss leaves no bubble on the bus.
    lookahead_ = tRP_ + tRCD_ + std::max(tCL_, tCWL_);

    ch_.resize(p_.channels);
    for (uint32_t c = 0; c < p_.channels; ++c) {
        Channel& ch = ch_[c];
        ch.ranks.resize(p_.ranks);
        for (uint32_t r = 0; r < p_.ranks; ++r) {
            ch.ranks[r].banks.resize(p_.bank_groups * p_.banks_per_group);
            ch.ranks[r].groupColAllowed.assign(p_.bank_groups, 0);
            // Stagger refreshes across ranks and channels as controllers do.
            uint32_t k = c * p_.ranks + r, n = p_.channels * p_.ranks;
            ch.ranks[r].nextRefresh = tREFI_ ? tREFI_ * (k + 1) / n : kNever;
        }
        ch.resp.reset(p_.read_queue);
    }
    acks_.reset(size_t(p_.write_queue) * p_.channels);
}

double DramController::peakBytesPerSec() const {
    return p_.channels * p_.bus_bytes * p_.data_rate_mts * 1e6;
}

DramController::Loc DramController::decode(uint64_t addr) const {
    const uint64_t chunk = addr / p_.interleave_bytes;
    const uint64_t linesPerChunk = p_.interleave_bytes / kLineBytes;
    Loc l;
    l.channel = uint32_t(chunk % p_.channels);
    // Lines of one channel rotate over bank groups, so a sequential stream
    // issues at the burst rate (tCCD_S) instead of tCCD_L, then fill a row
    // in every group before moving to the next bank: streams hit open rows.
    uint64_t line = (chunk / p_.channels) * linesPerChunk + (addr % p_.interleave_bytes) / kLineBytes;
    const uint32_t group = uint32_t(line % p_.bank_groups);
    line /= p_.bank_groups;
    line /= p_.row_bytes / kLineBytes;  // column within the row
    const uint32_t bank = uint32_t(line % p_.banks_per_group);
    line /= p_.banks_per_group;
    const uint32_t rank = uint32_t(line % p_.ranks);
    l.row = line / p_.ranks;
    // Permutation-based interleaving: a hash of the row rotates the (rank,
    // bank, group) index (a bijection within each row), as controllers XOR row
    // bits into bank bits so that streams at aligned strides spread out.
    const uint64_t banks = uint64_t(p_.bank_groups) * p_.banks_per_group * p_.ranks;
    const uint64_t h = (l.row * 0x9E3779B97F4A7C15ull) >> 32;
    const uint64_t idx = (group + p_.bank_groups * (bank + uint64_t(p_.banks_per_group) * rank) + h) % banks;
    const uint32_t g = uint32_t(idx % p_.bank_groups);
    const uint32_t b = uint32_t(idx / p_.bank_groups % p_.banks_per_group);
    l.rank = uint32_t(idx / (uint64_t(p_.bank_groups) * p_.banks_per_group));
    l.bank = g * p_.banks_per_group + b;
    return l;
}

size_t DramController::queued() const {
    size_t n = acks_.size();
    for (const Channel& c : ch_) n += c.readQ.size() + c.writeQ.size() + c.resp.size();
    return n;
}

void DramController::resetStats(Tick now) {
    stats_ = DramStats();
    readOcc_.reset(now);
}

bool DramController::tryReq(Txn* t) {
    Tick n = now();
    Loc loc = decode(t->addr);
    Channel& ch = ch_[loc.channel];
    if (t->op == Op::Read) {
        if (ch.readQ.size() + ch.resp.size() >= p_.read_queue) {
            needRetry_ = true;
            ++stats_.readRetries;
            return false;
        }
        ch.readQ.push_back(Req{t, loc, n + front_});
        readOcc_.set(n, ++readsQueued_);
    } else {
        if (ch.writeQ.size() >= p_.write_queue || acks_.full()) {
            needRetry_ = true;
            ++stats_.writeRetries;
            return false;
        }
        ch.writeQ.push_back(Req{nullptr, loc, n + front_});
        t->leave(kStageMediaQueue, n + front_);
        acks_.push(n + front_, t);  // posted: acknowledged once in the write queue
    }
    if (ch.nextDecision < n) ch.nextDecision = n;
    requestWake(std::max(ch.nextDecision, n + front_));
    return true;
}

void DramController::retryResp() {
    respBlocked_ = false;
    requestWake(now());
}

void DramController::refreshRank(Rank& r, Tick t) {
    while (r.nextRefresh <= t) {
        // All-bank refresh: rows close and the rank is busy for tRP + tRFC.
        Tick start = r.nextRefresh;
        for (Bank& b : r.banks) {
            Tick s = std::max(start, b.preAllowed);
            b.actAllowed = std::max(b.actAllowed, s + tRP_ + tRFC_);
            b.openRow = ~0ull;
        }
        r.nextRefresh += tREFI_;
        ++stats_.refreshes;
    }
}

bool DramController::pickMode(Channel& ch) {
    const double wcap = p_.write_queue;
    if (ch.writeMode) {
        bool drained = ch.writeQ.size() <= p_.write_low_watermark * wcap &&
                       ch.writesThisBurst >= p_.min_writes_per_switch;
        if (ch.writeQ.empty() || (drained && !ch.readQ.empty())) ch.writeMode = false;
    } else if (ch.writeQ.size() >= p_.write_high_watermark * wcap || (ch.readQ.empty() && !ch.writeQ.empty())) {
        ch.writeMode = true;
        ch.writesThisBurst = 0;
        ++stats_.writeBursts;
    }
    return ch.writeMode;
}

void DramController::schedule(Channel& ch, Tick t) {
    bool write = pickMode(ch);
    std::deque<Req>& q = write ? ch.writeQ : ch.readQ;
    // FR-FCFS over a window of the queue: the request whose column command can
    // go first (row hits win, having no precharge or activate), oldest on ties.
    size_t pick = q.size();
    Tick best = kNever;
    const size_t window = std::min<size_t>(q.size(), 32);
    for (size_t i = 0; i < window && q[i].ready <= t; ++i) {
        const Req& r = q[i];
        const Rank& rk = ch.ranks[r.loc.rank];
        const Bank& b = rk.banks[r.loc.bank];
        Tick est;
        if (b.openRow == r.loc.row)
            est = std::max(t, rk.groupColAllowed[r.loc.bank / p_.banks_per_group]);
        else if (b.openRow != ~0ull)
            est = std::max(t, b.preAllowed) + tRP_ + tRCD_;
        else
            est = std::max(t, b.actAllowed) + tRCD_;
        if (est < best) {
            best = est;
            pick = i;
        }
    }
    if (pick == q.size()) {  // nothing has cleared the front end yet
        ch.nextDecision = q.empty() ? kNever : q.front().ready;
        return;
    }
    Req r = q[pick];
    q.erase(q.begin() + long(pick));

    Rank& rk = ch.ranks[r.loc.rank];
    refreshRank(rk, t);
    Bank& b = rk.banks[r.loc.bank];
    Tick start, col;
    if (b.openRow == r.loc.row) {
        ++stats_.rowHits;
        start = col = t;
    } else {
        Tick act;
        if (b.openRow != ~0ull) {
            ++stats_.rowConflicts;
            start = std::max(t, b.preAllowed);
            act = std::max(start + tRP_, b.actAllowed);
        } else {
            ++stats_.rowMisses;
            start = act = std::max(t, b.actAllowed);
        }
        act = std::max({act, rk.lastAct + tRRD_, rk.faw[rk.fawHead] + tFAW_});
        rk.faw[rk.fawHead] = act;
        rk.fawHead = (rk.fawHead + 1) & 3;
        rk.lastAct = act;
        b.openRow = r.loc.row;
        b.preAllowed = act + tRAS_;
        col = act + tRCD_;
    }
    uint32_t group = r.loc.bank / p_.banks_per_group;
    col = std::max(col, rk.groupColAllowed[group]);
    const Tick cas = write ? tCWL_ : tCL_;
    Tick minData = ch.busFree;
    if (ch.busFree && ch.lastWrite != write) {
        minData += write ? tRTW_ : tWTR_ + tCL_;
        ++stats_.turnarounds;
    }
    Tick data = std::max(col + cas, minData);
    col = data - cas;
    Tick end = data + tBurst_;
    rk.groupColAllowed[group] = col + tCCD_L_;
    b.preAllowed = std::max(b.preAllowed, write ? end + tWR_ : col + tBurst_);
    ch.busFree = end;
    ch.lastWrite = write;
    stats_.busBusy += tBurst_;

    if (write) {
        ++ch.writesThisBurst;
        ++stats_.writes;
    } else {
        ++stats_.reads;
        Txn* x = r.txn;
        x->stage[kStageMediaQueue] += start - x->mark;
        x->stage[kStageMediaService] += end + back_ - start;
        x->mark = end + back_;
        ch.resp.push(end + back_, x);
    }
    ch.nextDecision = std::max(t, end > lookahead_ ? end - lookahead_ : 0);
    if (needRetry_ && up_) {
        needRetry_ = false;
        up_->retryReq();
    }
}

Tick DramController::nextEvent() const {
    Tick w = kNever;
    if (!respBlocked_) {
        w = acks_.headReady();
        for (const Channel& c : ch_) w = std::min(w, c.resp.headReady());
    }
    for (const Channel& c : ch_)
        if (!c.readQ.empty() || !c.writeQ.empty()) w = std::min(w, c.nextDecision);
    return w;
}

void DramController::process() {
    const Tick t = now();
    for (Channel& ch : ch_) {
        while (ch.nextDecision <= t && (!ch.readQ.empty() || !ch.writeQ.empty())) schedule(ch, t);
    }
    // Responses: write acknowledgements and reads in completion order.
    while (!respBlocked_) {
        Txn* x = nullptr;
        TimedFifo<Txn*>* src = nullptr;
        Tick best = acks_.headReady();
        if (best <= t) src = &acks_;
        for (Channel& c : ch_) {
            Tick h = c.resp.headReady();
            if (h <= t && h < best) {
                best = h;
                src = &c.resp;
            }
        }
        if (!src) break;
        x = src->front();
        if (!up_->tryResp(x)) {
            respBlocked_ = true;
            break;
        }
        src->pop();
        if (src != &acks_) {
            readOcc_.set(t, --readsQueued_);
            if (needRetry_) {
                needRetry_ = false;
                up_->retryReq();
            }
        }
    }
    Tick w = nextEvent();
    if (w != kNever) requestWake(std::max(w, t));
}

}  // namespace cxlcore
