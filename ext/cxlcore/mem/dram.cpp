#include "cxlcore/mem/dram.hpp"

#include <algorithm>

namespace cxlcore {

DramController::DramController(Host& host, const DramParams& p, const std::string& where) : p_(p) {
    p_.validate(where);
    const double tck_ns = 2000.0 / p_.data_rate_mts;  // two transfers per clock
    tBurst_ = nsToTicks(tck_ns * p_.burst_length / 2.0);
    tRCD_ = nsToTicks(p_.tRCD_ns);
    tCL_ = nsToTicks(p_.tCL_ns);
    tCWL_ = nsToTicks(p_.tCWL_ns);
    tRP_ = nsToTicks(p_.tRP_ns);
    tRAS_ = nsToTicks(p_.tRAS_ns);
    tWR_ = nsToTicks(p_.tWR_ns);
    tWTR_L_ = nsToTicks(p_.tWTR_ns);
    tWTR_S_ = nsToTicks(p_.tWTR_S_ns);
    tRTW_ = nsToTicks(p_.tRTW_ns);
    tRTP_ = nsToTicks(p_.tRTP_ns);
    tRTRS_ = nsToTicks(p_.tRTRS_ns);
    tRRD_S_ = nsToTicks(p_.tRRD_ns);
    tRRD_L_ = nsToTicks(p_.tRRD_L_ns);
    tFAW_ = nsToTicks(p_.tFAW_ns);
    tCCD_S_ = nsToTicks(p_.tCCD_S_ns);
    tCCD_L_ = nsToTicks(p_.tCCD_L_ns);
    // The interval between a rank's refresh commands. Same-bank refresh is
    // a fine-granularity-mode command (JESD79-5, 4.13): every bank of a group
    // is refreshed once per tREFI2 = tREFI / 2, one REFsb a bank index.
    tREFI_ = nsToTicks(p_.tREFI_ns) / (p_.refresh_per_bank ? 2 * p_.banks_per_group : 1);
    tRFC_ = nsToTicks(p_.refresh_per_bank ? p_.tRFCsb_ns : p_.tRFC_ns);
    pageTimeout_ = p_.page_policy == 2 ? nsToTicks(p_.page_timeout_ns) : kNever;
    pageTimeoutMax_ = nsToTicks(p_.page_timeout_max_ns);
    front_ = nsToTicks(p_.frontend_latency_ns);
    back_ = nsToTicks(p_.backend_latency_ns);
    // Commit a request early enough that a row miss leaves no bubble on the bus.
    lookahead_ = tRP_ + tRCD_ + std::max(tCL_, tCWL_);
    interleave_ = Divisor(p_.interleave_bytes);
    linesPerChunk_ = Divisor(p_.interleave_bytes / kLineBytes);
    channels_ = Divisor(p_.channels);
    groups_ = Divisor(p_.bank_groups);
    perGroup_ = Divisor(p_.banks_per_group);
    ranks_ = Divisor(p_.ranks);
    rowLines_ = Divisor(p_.row_bytes / kLineBytes);
    banks_ = Divisor(uint64_t(p_.bank_groups) * p_.banks_per_group * p_.ranks);
    for (uint32_t c = 0; c < p_.channels; ++c) ch_.push_back(std::make_unique<DramChannel>(host, *this, c));
    name(where);
}

DramController::~DramController() = default;

void DramController::name(const std::string& n) {
    for (size_t c = 0; c < ch_.size(); ++c) ch_[c]->name(n + ".channel" + std::to_string(c));
}

void DramChannel::name(const std::string& n) {
    readQName_ = internName(n + ".read_queue");
    name_ = internName(n);
    resp_.name(n + ".read_data (responses the requester has not taken)");
    acks_.name(n + ".write_acks (posted writes the requester has not taken)");
}

double DramController::peakBytesPerSec() const { return p_.channels * p_.bus_bytes * p_.data_rate_mts * 1e6; }

DramController::Loc DramController::decode(uint64_t addr) const {
    const uint64_t chunk = interleave_.div(addr);
    Loc l;
    l.channel = uint32_t(channels_.mod(chunk));
    // Lines of one channel rotate over bank groups, so a sequential stream
    // issues at the burst rate (tCCD_S) instead of tCCD_L, then fill a row
    // in every group before moving to the next bank: streams hit open rows.
    uint64_t line = channels_.div(chunk) * linesPerChunk_.d + (interleave_.mod(addr) >> 6);
    const uint64_t group = groups_.mod(line);
    line = rowLines_.div(groups_.div(line));  // drop the column within the row
    const uint64_t bank = perGroup_.mod(line);
    line = perGroup_.div(line);
    const uint64_t rank = ranks_.mod(line);
    l.row = ranks_.div(line);
    // Permutation-based interleaving: a hash of the row rotates the (rank,
    // bank, group) index (a bijection within each row), as controllers XOR row
    // bits into bank bits so that streams at aligned strides spread out.
    const uint64_t h = (l.row * 0x9E3779B97F4A7C15ull) >> 32;
    const uint64_t idx = banks_.mod(group + groups_.d * (bank + perGroup_.d * rank) + h);
    l.bank = uint32_t(groups_.mod(idx) * perGroup_.d + perGroup_.mod(groups_.div(idx)));
    l.rank = uint32_t(perGroup_.div(groups_.div(idx)));
    return l;
}

void DramController::resetStats(Tick now) {
    stats_ = DramStats();
    readOcc_.reset(now);
}

bool DramController::tryReq(Txn* t) {
    const Loc l = decode(t->addr);
    DramChannel& ch = *ch_[l.channel];
    if (t->isRead() ? ch.tryRead(t, l) : ch.tryWrite(t, l)) return true;
    needRetry_ = true;
    ++(t->isRead() ? stats_.readRetries : stats_.writeRetries);
    return false;
}

void DramController::retryResp() {
    for (auto& c : ch_) c->unblock();
}

void DramController::checkpoint(StateVisitor& v, const std::string& n) {
    v(n + ".needRetry", needRetry_);
    v(n + ".writesQueued", writesQueued_);
    for (size_t i = 0; i < ch_.size(); ++i) ch_[i]->checkpoint(v, n + ".ch" + std::to_string(i));
}

void DramController::slotFreed() {
    if (needRetry_ && up_) {
        needRetry_ = false;
        up_->retryReq();
    }
}

// ---------------------------------------------------------------- channel

DramChannel::DramChannel(Host& host, DramController& c, uint32_t index) : Component(host), c_(c) {
    const DramParams& p = c.p_;
    ranks_.resize(p.ranks);
    for (uint32_t r = 0; r < p.ranks; ++r) {
        ranks_[r].banks.resize(p.bank_groups * p.banks_per_group);
        for (Bank& b : ranks_[r].banks) b.timeout = c.pageTimeout_;
        ranks_[r].groupColAllowed.assign(p.bank_groups, 0);
        ranks_[r].groupActAllowed.assign(p.bank_groups, 0);
        ranks_[r].groupReadAllowed.assign(p.bank_groups, 0);
        // Stagger refreshes across ranks and channels as controllers do.
        uint32_t k = index * p.ranks + r, n = p.channels * p.ranks;
        ranks_[r].nextRefresh = c.tREFI_ ? c.tREFI_ * (k + 1) / n : kNever;
    }
    resp_.reset(p.read_queue);
    acks_.reset(p.write_queue);
}

void DramChannel::checkpoint(StateVisitor& v, const std::string& n) {
    for (size_t r = 0; r < ranks_.size(); ++r) {
        Rank& rk = ranks_[r];
        const std::string rn = n + ".rank" + std::to_string(r);
        for (size_t b = 0; b < rk.banks.size(); ++b) {
            const std::string bn = rn + ".bank" + std::to_string(b);
            v(bn + ".openRow", rk.banks[b].openRow);
            v(bn + ".actAllowed", rk.banks[b].actAllowed);
            v(bn + ".preAllowed", rk.banks[b].preAllowed);
            v(bn + ".closeAt", rk.banks[b].closeAt);
            v(bn + ".timeout", rk.banks[b].timeout);
            v(bn + ".closedRow", rk.banks[b].closedRow);
        }
        for (size_t g = 0; g < rk.groupColAllowed.size(); ++g) {
            v(rn + ".colAllowed" + std::to_string(g), rk.groupColAllowed[g]);
            v(rn + ".actAllowed" + std::to_string(g), rk.groupActAllowed[g]);
            v(rn + ".readAllowed" + std::to_string(g), rk.groupReadAllowed[g]);
        }
        v(rn + ".colAllowed", rk.colAllowed);
        v(rn + ".readAllowed", rk.readAllowed);
        v(rn + ".lastUse", rk.lastUse);
        v(rn + ".owed", rk.owed);
        v(rn + ".refBank", rk.refBank);
        v(rn + ".queued", rk.queued);
        for (int i = 0; i < 4; ++i) v(rn + ".faw" + std::to_string(i), rk.faw[i]);
        v(rn + ".fawHead", rk.fawHead);
        v(rn + ".lastAct", rk.lastAct);
        v(rn + ".nextRefresh", rk.nextRefresh);
    }
    v(n + ".busFree", busFree_);
    v(n + ".nextDecision", nextDecision_);
    v(n + ".busDecision", busDecision_);
    v(n + ".deferred", deferred_);
    v(n + ".lastWrite", lastWrite_);
    v(n + ".writeMode", writeMode_);
    v(n + ".respBlocked", respBlocked_);
    v(n + ".writesThisBurst", writesThisBurst_);
    v(n + ".lastRank", lastRank_);
}

// A request arrives at t->mark (now, or later when the sender's pipeline
// reserved this entry ahead of its arrival).
bool DramChannel::tryRead(Txn* t, const DramController::Loc& l) {
    if (readQ_.size() + resp_.size() >= c_.p_.read_queue) return false;
    const Tick n = std::max(now(), t->mark);
    readQ_.push_back(Req{t, l.rank, l.bank, l.row, n + c_.front_, l.bank / c_.p_.banks_per_group});
    arrive(l.rank);
    t->at = readQName_;
    c_.readOcc_.set(now(), ++c_.readsQueued_);
    wakeForDecision();
    return true;
}

bool DramChannel::tryWrite(Txn* t, const DramController::Loc& l) {
    const bool posted = c_.p_.posted_writes;
    // Every write queued will take an acknowledgement slot: a posted one now,
    // a non-posted one when its data is written, so those count as taken.
    if (writeQ_.size() >= c_.p_.write_queue || acks_.size() + (posted ? 0 : writeQ_.size()) >= c_.p_.write_queue)
        return false;
    if (c_.p_.write_buffer && c_.writesQueued_ >= c_.p_.write_buffer) return false;
    ++c_.writesQueued_;
    const Tick n = std::max(now(), t->mark);
    writeQ_.push_back(Req{posted ? nullptr : t, l.rank, l.bank, l.row, n + c_.front_, l.bank / c_.p_.banks_per_group});
    arrive(l.rank);
    if (posted) {
        t->leave(kStageMediaQueue, n + c_.front_, name_);
        acks_.push(n + c_.front_, t);  // acknowledged once in the write queue
    } else {
        t->mark = n;
    }
    wakeForDecision();
    requestWake(n + c_.front_);
    return true;
}

// The next decision waits for the bus lookahead and for a request to clear
// the front end.
void DramChannel::wakeForDecision() {
    const Tick n = now();
    // A deferred decision is taken again for a request that arrives sooner.
    if (nextDecision_ == kNever || nextDecision_ < n || deferred_) nextDecision_ = std::max(n, busDecision_);
    Tick first = kNever;
    if (!readQ_.empty()) first = readQ_.front().ready;
    if (!writeQ_.empty()) first = std::min(first, writeQ_.front().ready);
    if (first != kNever) requestWake(std::max(nextDecision_, first));
}

void DramChannel::unblock() {
    if (respBlocked_) {
        respBlocked_ = false;
        requestWake(now());
    }
}

// Refreshes close the banks they touch and keep them busy for tRP + tRFC
// each, back to back: all banks (all-bank refresh) or, per same-bank
// refresh, the next bank of every group.
void DramChannel::refresh(Rank& r, Tick start, uint32_t count) {
    const DramParams& p = c_.p_;
    c_.stats_.refreshes += count;
    if (!p.refresh_per_bank) {
        for (Bank& b : r.banks) {
            const Tick s = std::max(start, b.preAllowed);
            b.actAllowed = std::max(b.actAllowed, s + c_.tRP_ + count * c_.tRFC_);
            b.openRow = ~0ull;
            b.closeAt = kNever;
        }
        return;
    }
    for (uint32_t i = 0; i < count; ++i, start += c_.tRFC_) {
        for (uint32_t g = 0; g < p.bank_groups; ++g) {
            Bank& b = r.banks[g * p.banks_per_group + r.refBank];
            const Tick s = std::max(start, b.preAllowed);
            b.actAllowed = std::max(b.actAllowed, s + c_.tRP_ + c_.tRFC_);
            b.openRow = ~0ull;
            b.closeAt = kNever;
        }
        r.refBank = (r.refBank + 1) % p.banks_per_group;
    }
}

// A request for an idle rank. While the rank was idle the controller, not
// knowing when the next request would come, paid the refreshes it had
// postponed one after another from the rank's last burst on, and issued
// each one falling due at its time: those begun before now hold the banks.
void DramChannel::arrive(uint32_t rank) {
    Rank& r = ranks_[rank];
    if (r.queued++ || c_.tREFI_ == 0) return;
    const Tick until = now(), each = c_.tRP_ + c_.tRFC_;
    Tick s = r.lastUse;
    for (; r.owed && s < until; s += each, --r.owed) refresh(r, s, 1);
    // After a long gap only the latest refreshes leave a trace in the banks
    // (each sets later limits than the one before): count the others at once,
    // so a gap of seconds costs no more than one interval.
    if (!r.owed && r.nextRefresh >= s && r.nextRefresh + c_.tREFI_ <= until) {
        const uint64_t skipped = (until - r.nextRefresh) / c_.tREFI_;
        r.nextRefresh += skipped * c_.tREFI_;
        c_.stats_.refreshes += skipped;
        r.refBank = uint32_t((r.refBank + skipped) % c_.p_.banks_per_group);
    }
    for (; r.nextRefresh < until; r.nextRefresh += c_.tREFI_) {
        const Tick start = std::max(r.nextRefresh, s);
        if (start < until || r.owed >= c_.p_.refresh_postpone) {
            refresh(r, start, 1);
            s = start + each;
        } else {  // due while owed ones were still running: postponed again
            ++r.owed;
            ++c_.stats_.refreshesPostponed;
        }
    }
}

// A rank with queued requests postpones its refreshes up to the limit; at
// the limit it refreshes when each one falls due, still owing the others
// (never more than the limit postponed, as JEDEC requires), and pays them
// when it idles. Paying them all at once would stall the rank for several
// tRFC while the requests queued for it hold the device's trackers.
void DramChannel::refreshRank(Rank& r, Tick t) {
    for (; r.nextRefresh <= t; r.nextRefresh += c_.tREFI_) {
        if (r.owed < c_.p_.refresh_postpone) {
            ++r.owed;
            ++c_.stats_.refreshesPostponed;
        } else {
            refresh(r, r.nextRefresh, 1);
        }
    }
}

// The earliest column command the rank's tCCD and, for a read, tWTR allow.
Tick DramChannel::colReady(const Rank& rk, uint32_t group, bool write) const {
    const Tick c = std::max(rk.groupColAllowed[group], rk.colAllowed);
    return write ? c : std::max({c, rk.readAllowed, rk.groupReadAllowed[group]});
}

// The earliest activate of a row in bank b, its precharge-or-activate
// starting at `start`: after tRP for a precharge, tRRD_S/L after the rank's
// last activates and tFAW after its fourth last.
Tick DramChannel::activateAt(const Rank& rk, const Bank& b, uint32_t group, Tick start) const {
    Tick act = std::max(b.openRow != ~0ull ? start + c_.tRP_ : start, b.actAllowed);
    act = std::max(act, rk.groupActAllowed[group]);
    if (rk.lastAct != kNever) act = std::max(act, rk.lastAct + c_.tRRD_S_);
    if (rk.faw[rk.fawHead] != kNever) act = std::max(act, rk.faw[rk.fawHead] + c_.tFAW_);
    return act;
}

// The data bus after its last burst: a write after a read waits tRTW, a
// burst of another rank tRTRS. A read after a write waits tWTR in its own
// rank only (colReady).
Tick DramChannel::busGap(uint32_t rank, bool write) const {
    Tick gap = lastWrite_ != write && write ? c_.tRTW_ : 0;
    return rank != lastRank_ ? std::max(gap, c_.tRTRS_) : gap;
}

bool DramChannel::pickMode() {
    const DramParams& p = c_.p_;
    const double wcap = p.write_queue;
    if (writeMode_) {
        // A burst ends once the queue is drained to its low watermark or, with
        // a cap, after that many writes when reads wait: writes arriving as
        // fast as they drain would otherwise hold the bus from reads.
        const bool drained = writeQ_.size() <= p.write_low_watermark * wcap && writesThisBurst_ >= p.min_writes_per_switch;
        const bool capped = p.max_writes_per_switch && writesThisBurst_ >= p.max_writes_per_switch;
        if (writeQ_.empty() || ((drained || capped) && !readQ_.empty())) writeMode_ = false;
    } else if (writeQ_.size() >= p.write_high_watermark * wcap || (readQ_.empty() && !writeQ_.empty())) {
        writeMode_ = true;
        writesThisBurst_ = 0;
        ++c_.stats_.writeBursts;
    }
    return writeMode_;
}

// Page policy 2: the bank's timer learns from the access that follows it
// (Intel's adaptive page management, patent EP1461706): the row the timer
// closed wanted again, it was too short, so it doubles; another row found
// still open, too long, so it halves; within page_timeout_ns..._max_ns.
void DramChannel::adaptTimer(Bank& b, uint64_t row) const {
    if (b.openRow == ~0ull && b.closedRow == row)
        b.timeout = std::min(std::max(2 * b.timeout, nsToTicks(1.0)), c_.pageTimeoutMax_);
    else if (b.openRow != ~0ull && b.openRow != row)
        b.timeout = std::max(b.timeout / 2, c_.pageTimeout_);
    b.closedRow = ~0ull;
}

bool DramChannel::pendingHit(const Req& r, const NearEraseQueue<Req>& q) {
    for (const Req& o : q)
        if (o.row == r.row && o.bank == r.bank && o.rank == r.rank) return true;
    return false;
}

void DramChannel::schedule(Tick t) {
    const DramController& c = c_;
    // Refreshes due start first, so the choice below sees their banks busy.
    for (Rank& rk : ranks_)
        if (rk.queued && rk.nextRefresh <= t) refreshRank(rk, t);
    const bool write = pickMode();
    NearEraseQueue<Req>& q = write ? writeQ_ : readQ_;
    // FR-FCFS over a window of the queue, by when each request's data could
    // go on the bus: while the bus is busy every candidate waits for it, one
    // of the other rank waits tRTRS more (a write after a read tRTW), so the
    // rank on the bus keeps it; a miss counts its precharge, activate and the
    // activate windows (tRRD_S/L, tFAW). A row hit wins a tie: when the bus
    // or the column timings (tCCD, tWTR) hold every candidate to the same
    // time, opening another row would close one in use. Oldest on ties.
    size_t pick = q.size();
    const Tick cas = write ? c.tCWL_ : c.tCL_;
    // No request's data can go on the bus before `floor`: the column command
    // is at t at the earliest, and after a burst the bus also waits for the
    // smallest gap (the rank on the bus, no turnaround).
    Tick floor = t + cas;
    if (busFree_) floor = std::max(floor, busFree_ + busGap(lastRank_, write));
    // What activateAt, colReady and busGap take from the rank, once per rank
    // rather than once per candidate (0 where they impose nothing): the
    // same estimates with a third of the work.
    struct RankView {
        Bank* banks;
        const Tick *groupAct, *groupCol, *groupRead;
        Tick act, col, bus;
    } view[16];  // DramParams allows up to 16 ranks
    for (size_t k = 0; k < ranks_.size(); ++k) {
        Rank& rk = ranks_[k];
        RankView& v = view[k];
        v.banks = rk.banks.data();
        v.groupAct = rk.groupActAllowed.data();
        v.groupCol = rk.groupColAllowed.data();
        v.groupRead = rk.groupReadAllowed.data();
        v.act = rk.lastAct != kNever ? rk.lastAct + c.tRRD_S_ : 0;
        if (rk.faw[rk.fawHead] != kNever) v.act = std::max(v.act, rk.faw[rk.fawHead] + c.tFAW_);
        v.col = write ? rk.colAllowed : std::max(rk.colAllowed, rk.readAllowed);
        v.bus = busFree_ ? busFree_ + busGap(uint32_t(k), write) : 0;
    }
    Tick best = kNever;
    bool bestHit = false;
    const size_t window = std::min<size_t>(q.size(), 32);
    size_t i = 0;
    for (; i < window && q[i].ready <= t; ++i) {
        const Req& r = q[i];
        const RankView& v = view[r.rank];
        Bank& b = v.banks[r.bank];
        expire(b, r.rank, r.bank, t);
        const bool hit = b.openRow == r.row;
        Tick est = t;
        if (!hit) {  // activateAt
            const Tick start = b.openRow != ~0ull ? std::max(t, b.preAllowed) + c.tRP_ : t;
            est = std::max({start, b.actAllowed, v.groupAct[r.group], v.act}) + c.tRCD_;
        }
        Tick col = std::max(v.groupCol[r.group], v.col);  // colReady
        if (!write) col = std::max(col, v.groupRead[r.group]);
        est = std::max(std::max(est, col) + cas, v.bus);
        if (est < best || (est == best && hit && !bestHit)) {
            best = est;
            bestHit = hit;
            pick = i;
            if (est == floor) break;  // nothing later is earlier
        }
    }
    // A miss at the floor loses only to a later row hit at the floor: the rest
    // of the window needs only the row check, not the whole estimate (the
    // same pick as estimating every candidate, at a fraction of the cost).
    if (best == floor && !bestHit) {
        for (++i; i < window && q[i].ready <= t; ++i) {
            const Req& r = q[i];
            expire(view[r.rank].banks[r.bank], r.rank, r.bank, t);
            if (view[r.rank].banks[r.bank].openRow != r.row) continue;
            const Tick est = std::max(std::max(t, colReady(ranks_[r.rank], r.group, write)) + cas, view[r.rank].bus);
            if (est == floor) {
                pick = i;
                break;
            }
        }
    }
    if (pick == q.size()) {  // nothing has cleared the front end yet
        nextDecision_ = q.empty() ? kNever : q.front().ready;
        return;
    }
    // Commit only a request whose commands may start now. One held by its
    // bank or rank (a refresh, tRAS, tWR, tFAW), not by the bus, would
    // reserve the bus from now until its data, and every request behind it,
    // to any other bank or rank, would wait that long: a controller issues
    // commands to the banks that are ready and comes back to it. Decide
    // again when its commands may start or the next request clears the
    // front end, whichever is first.
    const Tick busHold = busFree_ ? busFree_ + std::max(c.tRTW_, c.tRTRS_) : 0;
    if (best > std::max(t + c.lookahead_, busHold)) {
        deferred_ = true;
        nextDecision_ = best - c.lookahead_;
        if (i < window && i < q.size()) nextDecision_ = std::min(nextDecision_, std::max(t, q[i].ready));
        return;
    }
    deferred_ = false;
    const Req r = q[pick];
    q.erase(pick);

    Rank& rk = ranks_[r.rank];
    Bank& b = rk.banks[r.bank];
    DramStats& st = c_.stats_;
    if (c.pageTimeout_ != kNever) adaptTimer(b, r.row);
    Tick start, col;
    if (b.openRow == r.row) {
        ++st.rowHits;
        start = col = t;
    } else {
        if (b.openRow != ~0ull) {
            ++st.rowConflicts;
            start = std::max(t, b.preAllowed);
        } else {
            ++st.rowMisses;
            start = std::max(t, b.actAllowed);
        }
        const Tick act = activateAt(rk, b, r.group, start);
        rk.groupActAllowed[r.group] = act + c.tRRD_L_;
        rk.faw[rk.fawHead] = act;
        rk.fawHead = (rk.fawHead + 1) & 3;
        rk.lastAct = act;
        b.openRow = r.row;
        b.preAllowed = act + c.tRAS_;
        col = act + c.tRCD_;
    }
    const uint32_t group = r.group;
    col = std::max(col, colReady(rk, group, write));
    Tick minData = busFree_;
    if (busFree_) {
        st.turnarounds += lastWrite_ != write;
        st.rankSwitches += r.rank != lastRank_;
        minData += busGap(r.rank, write);
    }
    const Tick data = std::max(col + cas, minData);
    col = data - cas;
    const Tick end = data + c.tBurst_;
    rk.groupColAllowed[group] = col + c.tCCD_L_;
    rk.colAllowed = col + c.tCCD_S_;
    if (write) {
        rk.readAllowed = std::max(rk.readAllowed, end + c.tWTR_S_);
        rk.groupReadAllowed[group] = std::max(rk.groupReadAllowed[group], end + c.tWTR_L_);
        b.preAllowed = std::max(b.preAllowed, end + c.tWR_);
    } else {
        b.preAllowed = std::max(b.preAllowed, col + c.tRTP_);
    }
    // Closed adaptive: with no queued request for this row, the bank precharges
    // as soon as it may, so the next access to it pays no precharge.
    if (c.p_.page_policy == 1 && !pendingHit(r, readQ_) && !pendingHit(r, writeQ_)) {
        b.openRow = ~0ull;
        b.actAllowed = std::max(b.actAllowed, b.preAllowed + c.tRP_);
    }
    // Timer: the row stays open for the next access that comes within the
    // timeout, then precharges (Ramulator's `Timeout` row policy; Intel's
    // adaptive page management closes a row on a per-bank idle timer).
    b.closeAt = c.p_.page_policy == 2 ? std::max(b.preAllowed, col + b.timeout) : kNever;
    rk.lastUse = end;
    --rk.queued;
    busFree_ = end;
    lastWrite_ = write;
    lastRank_ = r.rank;
    st.busBusy += c.tBurst_;

    if (write) {
        ++writesThisBurst_;
        ++st.writes;
        --c_.writesQueued_;
        if (Txn* x = r.txn) {  // not posted: acknowledged once its data is written
            x->leave(kStageMediaQueue, start, name_);
            x->leave(kStageMediaService, end + c.back_, name_);
            acks_.push(end + c.back_, x);
        }
        c_.slotFreed();
    } else {
        ++st.reads;
        Txn* x = r.txn;
        x->leave(kStageMediaQueue, start, name_);
        x->leave(kStageMediaService, end + c.back_, name_);
        resp_.push(end + c.back_, x);
    }
    nextDecision_ = busDecision_ = std::max(t, end > c.lookahead_ ? end - c.lookahead_ : 0);
}

void DramChannel::process() {
    const Tick t = now();
    while (nextDecision_ <= t && (!readQ_.empty() || !writeQ_.empty())) schedule(t);
    // Responses: write acknowledgements and reads, each in time order.
    Requester* up = c_.requester();
    while (!respBlocked_) {
        const Tick ta = acks_.headReady(), tr = resp_.headReady();
        const bool ack = ta <= tr;
        if ((ack ? ta : tr) > t) break;
        Txn* x = ack ? acks_.front() : resp_.front();
        if (!up->tryResp(x)) {
            respBlocked_ = true;
            break;
        }
        if (ack) {
            acks_.pop();
        } else {
            resp_.pop();
            c_.readOcc_.set(t, --c_.readsQueued_);
        }
        c_.slotFreed();
    }
    Tick w = (readQ_.empty() && writeQ_.empty()) ? kNever : nextDecision_;
    if (!respBlocked_) w = std::min({w, acks_.headReady(), resp_.headReady()});
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
