// Serial links: one direction packs messages into flits; credits bound what a
// sender may have outstanding in the receiver's buffers.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/kernel/sim.hpp"
#include "cxlcore/link/message_sizes.hpp"

namespace cxlcore {

struct ChannelStats {
    uint64_t messages = 0, flits = 0, units = 0, replayedFlits = 0, crcErrors = 0;
    uint64_t dataBytes = 0;  // payload of data-carrying messages
};

// One direction of a link. Time is divided into flits of `unitsPerFlit`
// units; a message needs whole units. A message may join the newest flit
// only while that flit has not started on the wire, so an idle link sends
// padded flits and a busy one packs them full.
//
// Flit boundaries are kept to 2^-32 ps: a flit rarely lasts a whole number
// of picoseconds (68 B on Gen5 x16 is 1079.1015625 ps), and rounding each one
// would skew long-run bandwidth by up to half a tick per flit. Arrivals are
// reported at the first whole tick at or after the exact time.
//
// A flit whose first `firstHalfUnits` units are covered by their own CRC (the
// CXL 3.x latency-optimised 256 B flit) delivers a message that ends there
// at the end of that half; 0 means the whole flit is checked at once.
class FlitChannel {
  public:
    void configure(double flitPs, uint32_t unitsPerFlit, Tick latency, double flitErrorProb, Tick replayPenalty,
                   uint64_t seed, uint32_t firstHalfUnits = 0) {
        flit_ = fromPs(flitPs);
        upf_ = unitsPerFlit;
        half_ = firstHalfUnits < unitsPerFlit ? firstHalfUnits : 0;
        latency_ = latency;
        replay_ = replayPenalty;
        rng_ = Rng(seed);
        logKeep_ = flitErrorProb > 0 ? std::log1p(-flitErrorProb) : 0.0;
        untilError_ = drawGap();
    }

    // Returns the time the message is fully received (the CRC covering its
    // last unit checked). Inlined, with its rare general case out of line:
    // several messages per request, and the call's register saves were a
    // quarter of its cost.
    [[gnu::always_inline]] Tick send(Tick now, uint32_t units, uint32_t dataBytes) {
        ++stats_.messages;
        stats_.units += units;
        stats_.dataBytes += dataBytes;
        // The open flit has not started while its exact start is at or after now.
        if (open_ && openStart_ >= now && openUsed_ < upf_) {
            uint32_t take = std::min(units, upf_ - openUsed_);
            openUsed_ += take;
            units -= take;
        }
        if (units && units <= upf_ && untilError_ > 1) {
            // One new flit, not corrupted: the general case below with n = 1
            // and no replay (its additions of zero and times(flit_, 0) left out).
            Fixed start = open_ ? add(openStart_, openFrac_, flit_) : Fixed{now, 0};
            if (start.t < now) start = Fixed{now, 0};
            --untilError_;
            ++stats_.flits;
            openStart_ = start.t;
            openFrac_ = start.f;
            openUsed_ = units;
            open_ = true;
            busy_ = add(busy_.t, busy_.f, flit_);
        } else if (units) {
            sendFlits(now, units);
        }
        const bool early = half_ && openUsed_ <= half_;
        return ceil(add(openStart_, openFrac_, early ? halfFlit() : flit_)) + latency_;
    }

    // send's general case: a message of several new flits, or one hit by a
    // bit error (go-back-N replay).
    [[gnu::noinline]] void sendFlits(Tick now, uint32_t units) {
        // Nearly every message fits one flit: no division for those.
        const uint64_t n = units <= upf_ ? 1 : (units + upf_ - 1) / upf_;
        Fixed start = open_ ? add(openStart_, openFrac_, flit_) : Fixed{now, 0};
        if (start.t < now) start = Fixed{now, 0};  // the wire was idle
        Fixed extra{0, 0};
        // Go-back-N replay: a corrupted flit costs a NAK round trip plus its
        // resend, and everything behind it waits.
        uint64_t left = n;
        while (untilError_ <= left) {
            left -= untilError_;
            ++stats_.crcErrors;
            stats_.replayedFlits += 1 + replay_ / std::max<Tick>(flitTime(), 1);
            extra = add(add(extra.t, extra.f, flit_), Fixed{replay_, 0});
            untilError_ = drawGap();
        }
        untilError_ -= left;
        stats_.flits += n;
        const Fixed last = add(add(start.t, start.f, extra), times(flit_, n - 1));
        openStart_ = last.t;
        openFrac_ = last.f;
        openUsed_ = uint32_t(units - (n - 1) * upf_);
        open_ = true;
        busy_ = add(add(busy_.t, busy_.f, times(flit_, n)), extra);
    }

    // The flit being packed and the error draw (busy time and counters are statistics).
    void checkpoint(StateVisitor& v, const std::string& n) {
        v(n + ".openStart", openStart_);
        v(n + ".openFrac", openFrac_);
        v(n + ".openUsed", openUsed_);
        v(n + ".open", open_);
        v(n + ".untilError", untilError_);
        rng_.checkpoint(v, n + ".rng");
    }

    // Flit time rounded to a whole tick, and exact in picoseconds.
    Tick flitTime() const { return flit_.t + (flit_.f >> 31); }
    double flitPs() const { return double(flit_.t) + double(flit_.f) / kOne; }
    uint32_t unitsPerFlit() const { return upf_; }
    uint32_t firstHalfUnits() const { return half_; }
    Tick latency() const { return latency_; }
    Tick busy() const { return busy_.t + (busy_.f >> 31); }
    const ChannelStats& stats() const { return stats_; }
    void resetStats() {
        stats_ = ChannelStats();
        busy_ = Fixed{0, 0};
    }

  private:
    // A time in ticks plus a fraction of a tick in units of 2^-32.
    struct Fixed {
        Tick t;
        uint32_t f;
    };
    static constexpr double kOne = 4294967296.0;  // 2^32
    static Fixed fromPs(double ps) {
        const double whole = std::floor(ps);
        const double frac = std::floor((ps - whole) * kOne + 0.5);
        if (frac >= kOne) return Fixed{Tick(whole) + 1, 0};
        return Fixed{Tick(whole), uint32_t(frac)};
    }
    static Fixed add(Tick t, uint32_t f, Fixed b) {
        const uint64_t s = uint64_t(f) + b.f;
        return Fixed{t + b.t + (s >> 32), uint32_t(s)};
    }
    static Fixed add(Fixed a, Fixed b) { return add(a.t, a.f, b); }
    static Fixed times(Fixed a, uint64_t n) {
        const uint64_t frac = uint64_t(a.f) * n;  // n is a message's flit count, far below 2^32
        return Fixed{a.t * n + (frac >> 32), uint32_t(frac)};
    }
    static Tick ceil(Fixed a) { return a.t + (a.f ? 1 : 0); }
    Fixed halfFlit() const { return Fixed{flit_.t / 2, uint32_t(((flit_.t & 1) << 31) | (flit_.f >> 1))}; }

    uint64_t drawGap() {
        if (logKeep_ == 0.0) return ~0ull;
        double u = rng_.uniform();
        double g = std::floor(std::log1p(-u) / logKeep_) + 1.0;
        return g > 1e18 ? ~0ull : uint64_t(g);
    }

    Fixed flit_{1, 0}, busy_{0, 0};
    Tick latency_ = 0, replay_ = 0, openStart_ = 0;
    uint32_t openFrac_ = 0, upf_ = 1, half_ = 0, openUsed_ = 0;
    bool open_ = false;
    double logKeep_ = 0;
    uint64_t untilError_ = ~0ull;
    Rng rng_;
    ChannelStats stats_;
};

// Credits (or tracker entries): a count of free buffers at the receiver.
// Returned credits become usable at a known time, possibly in the future
// and out of order, so senders see them exactly when they land without an
// event of their own.
class CreditPool {
  public:
    void init(uint32_t n, Tick returnDelay) {
        avail_ = n;
        total_ = n;
        delay_ = returnDelay;
        // Grown on demand (push): a ring as long as the pool cycled through
        // all of it however few returns were in flight. A power of two, so
        // positions wrap by a mask.
        uint32_t slots = 1;
        while (slots < std::min<uint32_t>(n, 8)) slots <<= 1;
        ring_.assign(slots, 0);
        mask_ = slots - 1;
        head_ = size_ = 0;
    }
    bool take(Tick now) {
        land(now);
        if (!avail_) return false;
        --avail_;
        return true;
    }
    // A credit could be taken at `now` (nothing is taken).
    bool available(Tick now) {
        land(now);
        return avail_ > 0;
    }
    // Takes the credit available(now) has just found (what landed by now is counted already).
    void takeAvailable() { --avail_; }
    // The receiver frees a buffer at `now`; the credit lands after the return delay.
    [[gnu::always_inline]] void give(Tick now) { giveAt(now + delay_); }
    [[gnu::always_inline]] void giveAt(Tick at) {
        push(at);
        if (waiter_) {
            waiter_->requestWake(at);
            waiter_ = nullptr;
        }
    }
    // A sender that found no credit is woken when the next one lands.
    void wait(Component* c) {
        if (size_)
            c->requestWake(ring_[head_]);
        else
            waiter_ = c;
    }
    uint32_t total() const { return total_; }
    // When the next credit on its way back lands (kNever: none on its way).
    Tick nextLanding() const { return size_ ? ring_[head_] : kNever; }
    // Free credits and the ones still on their way back, with their landing times.
    void checkpoint(StateVisitor& v, const std::string& n) {
        v(n + ".avail", avail_);
        uint64_t pending = size_;
        v(n + ".pending", pending);
        if (v.loading()) head_ = size_ = 0;
        for (uint64_t i = 0; i < pending; ++i) {
            Tick at = v.loading() ? 0 : at_(uint32_t(i));
            v(n + ".return" + std::to_string(i), at);
            if (v.loading()) push(at);
        }
    }

  private:
    // Returns in flight, in landing order, in a ring held with the pool: its
    // state is a few words that share cache lines with the pool's counters.
    Tick& at_(uint32_t i) { return ring_[(head_ + i) & mask_]; }
    // More returns in flight than ever before: twice the slots, in order from 0.
    [[gnu::noinline, gnu::cold]] void grow() {
        std::vector<Tick> r(ring_.size() * 2);
        for (uint32_t i = 0; i < size_; ++i) r[i] = at_(i);
        ring_.swap(r);
        mask_ = uint32_t(ring_.size()) - 1;
        head_ = 0;
    }
    void push(Tick at) {
        if (size_ > mask_) grow();
        // Nearly always the latest; an earlier one is moved into place from the back.
        uint32_t i = size_++;
        while (i > 0 && at_(i - 1) > at) {
            at_(i) = at_(i - 1);
            --i;
        }
        at_(i) = at;
    }
    void land(Tick now) {
        // In locals: stores to the members would make the loop reload them.
        uint32_t n = size_, h = head_, landed = 0;
        const Tick* r = ring_.data();
        while (n && r[h] <= now) {
            h = (h + 1) & mask_;
            --n;
            ++landed;
        }
        if (!landed) return;
        avail_ += landed;
        size_ = n;
        head_ = n ? h : 0;  // an empty ring starts again at its first (cached) slot
    }
    uint32_t avail_ = 0, total_ = 0, head_ = 0, size_ = 0, mask_ = 0;
    Tick delay_ = 0;
    Component* waiter_ = nullptr;
    std::vector<Tick> ring_ = std::vector<Tick>(1);  // one slot before init()
};

// The far end of a link: every CXL message, of any channel, is sent by
// taking a credit of its channel (CxlLink::credits_) and CxlLink::send, and
// handed to the receiver with the time it is fully received. Host bridge
// ports, Type-3 devices, the home agent and accelerators are receivers alike.
class LinkReceiver {
  public:
    virtual void receive(Txn* m, Tick arrival) = 0;

  protected:
    ~LinkReceiver() = default;
};

// What sits below a link on the CXL.mem path: a Type-3 device or a switch's
// upstream port. It receives M2S messages from the link and sends S2M ones
// back up to the receiver `attach` names (a root port, a switch's downstream port).
class MemEndpoint : public LinkReceiver {
  public:
    virtual void attach(LinkReceiver* up) = 0;
    // Host `host` (< kMaxHosts) reaches it, sending addresses [0, window): a
    // switch routes that host's responses back up the port it came by, and
    // an MLD gives it a logical device with `qos`.
    virtual void bind(uint8_t host, uint64_t window, const LdQos& qos) = 0;

  protected:
    ~MemEndpoint() = default;
};

// A CXL link: two independent directions (full duplex) and per-class credits.
class CxlLink {
  public:
    CxlLink(const LinkParams& p, const std::string& where, uint64_t seed);

    // Raw byte rate per direction after line coding, bytes per second.
    double rawBytesPerSec() const { return rawRate_; }
    // Best-case data bandwidth per direction for a stream of one data channel.
    double peakDataBytesPerSec(Channel c) const;
    uint32_t unitsPerFlit() const { return m2s_.unitsPerFlit(); }

    FlitChannel m2s_, s2m_;
    // One credit class per channel, each used in its own direction. CXL.mem's
    // come from the link's parameters; a CXL.cache device sets the others
    // (setCredits) from its cache's and DMA engine's.
    CreditPool credits_[kNumChannels];
    void setCredits(const uint32_t* perChannel) {
        for (int c = 0; c < kNumChannels; ++c) credits_[c].init(perChannel[c], creditReturn_);
    }
    // CXL.io TLP framing, header, sequence number and LCRC (a DMA engine's).
    void setTlpOverhead(uint32_t bytes) { tlpOverhead_ = bytes; }
    // Half-slots and payload of any message on this link: a CXL.cachemem
    // message as the command table sizes its opcode, a CXL.io TLP by its payload.
    uint32_t units(const Txn& m) const {
        const CommandWire& c = wireOf(m.opc);
        return c.units ? c.units : tlpUnits(tlpOverhead_, tlpPayload(m));
    }
    static uint32_t dataBytes(const Txn& m) {
        const CommandWire& c = wireOf(m.opc);
        return c.units ? c.dataBytes : tlpPayload(m);
    }
    // Sends a message in its channel's direction; returns when it is fully received.
    Tick send(Tick now, const Txn& m) {
        return (isUpstream(m.channel()) ? s2m_ : m2s_).send(now, units(m), dataBytes(m));
    }
    // Puts x on the wire at `at` (its credit taken by the caller): closes the
    // sender's stage `from` then, and the link's stage when x is fully
    // received, which it returns. Root ports, switches and devices send so.
    Tick carry(Txn& x, Tick at, Stage from, const char* who) {
        x.leave(from, at, who);
        const Tick arr = send(at, x);
        if (x.trace) {
            x.note("credit", at, name_);
            x.note("flit", at, name_, units(x));
        }
        x.leave(isUpstream(x.channel()) ? kStageLinkUp : kStageLinkDown, arr, name_);
        return arr;
    }
    // The host bridge's response buffer for this port (HostBridge::addPort
    // sizes it): every S2M response needs an entry besides its class credit.
    CreditPool respBuffer_;
    // How long a credit freed at one end takes to be usable at the other.
    Tick creditReturn() const { return creditReturn_; }
    const LinkParams& params() const { return p_; }
    // The link's own name (traces name its spans after it).
    const char* name() const { return name_; }
    void checkpoint(StateVisitor& v, const std::string& n) {
        m2s_.checkpoint(v, n + ".m2s");
        s2m_.checkpoint(v, n + ".s2m");
        static const char* const names[] = {"req", "rwd", "ndr", "drs"};
        const Channel mem[] = {kM2SReq, kM2SRwD, kS2MNdr, kS2MDrs};
        for (int c = 0; c < 4; ++c) credits_[mem[c]].checkpoint(v, n + ".credits_" + names[c]);
        respBuffer_.checkpoint(v, n + ".resp_buffer");
    }

  private:
    // A read request TLP carries no payload; writes and completions carry their bytes.
    static uint32_t tlpPayload(const Txn& m) { return m.cmd().is(kHasPayload) ? m.size : 0; }
    LinkParams p_;
    double rawRate_;
    uint32_t tlpOverhead_ = 24;
    Tick creditReturn_ = 0;
    const char* name_;
};

}  // namespace cxlcore
