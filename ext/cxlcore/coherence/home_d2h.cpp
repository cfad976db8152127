// Device-to-host messages arriving at the home: requests, snoop responses,
// data, memory completions, back-invalidate snoops and CXL.io.
#include "cxlcore/coherence/home_agent.hpp"

#include <algorithm>

namespace cxlcore {

void HomeAgent::handle(Txn* m) {
    const uint16_t dev = m->dev;
    CxlLink& up = *ports_[dev].link;  // the link at its root port (a switch's, behind one)
    if (m->parent) m->parent->leave(kStageLinkUp, now(), ports_[dev].link->name());
    switch (m->channel()) {
        case kD2HReq: {
            // A tracker entry holds the request until it completes (its credit returns then).
            HTxn* t = txns_.get();
            t->opc = m->opc;
            t->dev = dev;
            t->line = m->addr;
            t->parent = m->parent;
            t->req = m;
            ++tracker_;
            stats_.maxTracker = std::max(stats_.maxTracker, tracker_);
            defer(now() + lat_, Later::Enqueue, t);
            return;
        }
        case kD2HRsp: {
            up.credits_[m->channel()].give(now());
            HTxn* t = m->htxn;
            if (!t) protocolError("snoop response without a transaction");
            HLine& l = line(t, m->addr);
            const uint32_t bit = 1u << dev;
            // What the snooped cache kept, and whether its line follows, are the response's.
            const Command& rsp = m->cmd();
            if (rsp.is(kLeavesI)) setSharers(l, m->addr, l.sharers & ~bit);
            if (rsp.is(kLeavesI) || rsp.is(kLeavesS)) {
                if (l.owner == dev) l.owner = -1;
            }
            if (rsp.is(kDataFollows)) ++t->dataOut;
            --t->snoopsOut;
            if (!t->snoopsOut && t->parent && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kD2HData: {
            up.credits_[m->channel()].give(now());
            HTxn* t = m->htxn;
            if (!t) {
                // Write data answering a GO_WritePull: the line's active transaction.
                const HLine* it = lines_.find(m->addr);
                t = it ? it->active : nullptr;
            }
            if (!t) {
                pool_.put(m);
                return;
            }
            // Snoop data names its transaction; write-pull data does not. (With
            // few D2H Rsp credits a snooped line's data can overtake its response.)
            const bool pulled = !m->htxn;
            if (pulled && (t->opc == Opc::DirtyEvict || t->opc == Opc::ItoMWr || t->opc == Opc::WrInv)) {
                HLine& l = line(t, t->line);
                if (t->opc == Opc::DirtyEvict) {
                    if (!m->bogus && l.owner == int(dev)) memWrite(t->line, m->value);
                } else {
                    // The write is performed at the home: into the host's cache (ItoMWr) or memory (WrInv).
                    if (checker_) checker_->write(t->line, numDevs_ + 1, m->value, now());
                    if (t->opc == Opc::ItoMWr) {
                        l.value = m->value;
                        setHost(l, t->line, MState::M);
                    } else {
                        memWrite(t->line, m->value);
                    }
                }
                t->dataOut = 0;
            } else if (t->opc == Opc::BiasFlipReq) {
                // A peer gave up a dirty line of the page: it goes back to device memory.
                memWrite(m->addr, m->value, t);
                --t->dataOut;
            } else if (t->opc == Opc::ItoMWr || t->opc == Opc::WrInv) {
                // A snooped dirty copy is superseded by the full-line write.
                --t->dataOut;
                if (t->parent && !t->snoopsOut && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            } else {
                // Forwarded dirty data from a snooped cache: newer than memory.
                t->value = m->value;
                t->haveData = true;
                t->dirty = true;
                --t->dataOut;
                if (t->parent && !t->snoopsOut && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            }
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kS2MNdr:
        case kS2MDrs: {
            // Data and completions free their buffers at once.
            up.credits_[m->channel()].give(now());
            HTxn* t = m->htxn;
            if (m->opc == Opc::MemData) {
                if (!t) protocolError("memory data without a transaction");
                t->memOut = false;
                t->memValue = m->value;
                t->memHave = true;
                pool_.put(m);
                maybeFinish(t);
                return;
            }
            pool_.put(m);
            if (t) {  // a write-back a bias flip waits for
                --t->dataOut;
                maybeFinish(t);
            }
            return;
        }
        case kS2MBISnp: {
            // A BISnp holds its buffer until answered, ordered with the host's
            // other requests to the line.
            HTxn* t = txns_.get();
            t->opc = m->opc;
            t->dev = dev;
            t->line = m->addr;
            pool_.put(m);
            enqueue(t);
            return;
        }
        case kIoUp:
            up.credits_[m->channel()].give(now());
            if (m->opc == Opc::IoMemRd) {
                // The root complex orders (and snoops for) DMA reads like any request.
                defer(now() + lat_, Later::IoRead, m);
            } else {
                ioWrite(m);
            }
            return;
        default:
            pool_.put(m);
            return;
    }
}

}  // namespace cxlcore
