// The device coherency engine of a shared Type-3 device (CXL 3.x HDM-DB):
// a snoop filter of which hosts hold which lines of the device's memory,
// and the back-invalidate snoops (BISnp) that keep them coherent. A host's
// MemRd asks for a state (S for a load, E for ownership, I for a read that
// keeps no copy); the filter finds the hosts whose copies conflict, snoops
// them, and lets the read go on to the media once every BIRsp is in. Reads
// of one line are served one at a time; a line the filter must make room
// for is first invalidated in every host holding it.
//
// Each grant is numbered, and a BISnp carries the number of the last grant
// its host was sent: a host that has not yet received that grant (its data
// is still on the way, behind the snoop) waits for it before answering. The
// specification resolves the same race with BIConflict/BIConflictAck, whose
// round trip is not modelled.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/config/params.hpp"
#include "cxlcore/kernel/rng.hpp"
#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

class CoherenceChecker;

struct DcohStats {
    uint64_t bisnpInv = 0, bisnpData = 0;  // snoops sent, by kind
    uint64_t birspI = 0, birspS = 0;       // answers received
    uint64_t evictSnoops = 0;              // snoops sent to make room in the filter (within bisnpInv)
    uint64_t sfEvictions = 0;              // filter entries given up for another line
    uint64_t lookups = 0, hits = 0;        // filter lookups by caching reads, and those finding the line
    uint64_t snooped = 0;                  // reads that waited for back-invalidates
    uint64_t lineWaits = 0;                // reads that waited for an earlier read of the same line
    uint64_t unownedWrites = 0;            // writes from a host that did not own the line
};

class Dcoh {
  public:
    Dcoh(const DeviceParams& p, const std::string& where, TxnPool& pool, uint64_t seed);
    enum Admit { kGo, kParked, kFull };
    // A host's MemRd at the controller's ingress, at t. kGo: granted (its
    // state and grant number set), on to the media now; kParked: held until
    // its snoops are answered (then released()); kFull: the engine holds as
    // many reads as the controller can, try again after a release.
    Admit admit(Txn* x, Tick t);
    // Reads whose back-invalidates are done, granted, in the order they were.
    bool hasReleased() const { return !released_.empty(); }
    Txn* popReleased();
    // BISnps to send, each for Txn::host, ready at `ready` (time the snoop
    // left the filter) and in order.
    bool hasSnoop() const { return !snoops_.empty(); }
    Txn* frontSnoop() { return snoops_.front(); }
    void popSnoop() { snoops_.pop_front(); }
    // A host's answer to a snoop, received at t.
    void answer(Txn* m, Tick t);
    // A host's MemWr (a write-back): the line's value, and what its host
    // holds of the line afterwards (Txn::state).
    void write(const Txn& x);
    // A MemData leaving: the line's current value.
    void respond(Txn& x, Tick t);
    void setChecker(CoherenceChecker* c) { checker_ = c; }
    uint32_t held() const { return held_; }
    size_t entries() const;  // lines the filter tracks now
    const DcohStats& stats() const { return stats_; }
    void resetStats() { stats_ = DcohStats(); }
    // The read waiting longest, and for what (stall reports).
    void oldest(Oldest& o) const;
    std::string describe() const;  // every line it is busy with, for stall reports

  private:
    static constexpr uint8_t kNone = 0xff;
    struct Entry {
        uint64_t line = 0, stamp = 0;
        uint16_t sharers = 0;  // hosts with a copy (bit h), the owner included
        uint8_t owner = kNone; // the host holding it E or M
        bool valid = false;
        uint32_t last[kMaxHosts] = {};  // number of the last grant to each host
    };
    // A line with a read in progress (snoops out) or an eviction from the filter.
    struct Busy {
        Txn* req = nullptr;           // the read holding the line
        std::deque<Txn*> waiting;     // later reads of the line
        std::vector<Txn*> retry;      // reads of other lines waiting for this one's filter way
        uint32_t rsps = 0;            // snoop answers still due
        bool evicting = false;
        Tick since = 0;
    };
    Entry* find(uint64_t line);
    Entry* freeWay(uint64_t line);
    uint64_t setOf(uint64_t line) const { return (line / kLineBytes) % sets_; }
    // Whose copies a read by x's host conflicts with (bits), and which snoop.
    uint16_t conflicts(const Txn& x, const Entry& e, Opc& snoop) const;
    // x holds its line, whose filter entry is e (nullptr: none): snoop what
    // conflicts (false) or grant at once (true).
    bool decide(Txn* x, Tick t, Entry* e);
    void grant(Txn* x, Entry* e);
    void snoop(Opc op, uint64_t line, uint8_t host, uint32_t seq, Tick t);
    void release(Txn* x, Tick t);
    // The line's current read is done: the next waiting read takes it.
    void pass(uint64_t line, Tick t);
    void drop(Entry& e);

    DeviceParams p_;
    std::string where_;
    const char* name_;  // the controller's: back-invalidate waits are its spans
    TxnPool& pool_;
    Rng rng_;
    uint64_t sets_;
    std::vector<Entry> sf_;
    uint64_t clock_ = 0;  // LRU stamps
    uint32_t seq_ = 0;    // grants so far
    uint32_t held_ = 0, cap_;
    std::unordered_map<uint64_t, Busy> busy_;
    std::deque<Txn*> released_, snoops_;
    Values values_;
    CoherenceChecker* checker_ = nullptr;
    DcohStats stats_;
};

}  // namespace cxlcore
