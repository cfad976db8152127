// Type-2 device memory of an accelerator: the bias table (host or device
// bias per page, with flips both ways), HDM-DB's back-invalidate snoops, and
// the host's CXL.mem reads and writes of the device's memory.
#include <algorithm>
#include <vector>

#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"

namespace cxlcore {

bool Accelerator::deviceBias(uint64_t line) const {
    auto it = bias_.find(line / ap_.bias_page_bytes);
    return it == bias_.end() ? ap_.device_bias != 0 : it->second;
}

void Accelerator::localFill(uint64_t line, Txn* a, Mshr& ms) {
    ++stats_.localMemReads;
    ms.biPending = false;
    if (a->addr != line) protocolError("device memory fill for another line's access");
    defer(now() + memLat_, Later::LocalFill, a);
}

void Accelerator::done(Txn* r) {
    if (r->tag == kServeRead) {
        // The host's MemRd becomes its MemData (S2M DRS).
        Txn* m = static_cast<Txn*>(r->ctx);
        if (m->parent) m->parent->absorb(*r, kStageDevice, now(), tname_);
        m->opc = responseOf(m->opc);
        m->dev = index_;
        m->value = valueOf(memVals_, m->addr);
        up_.send(m);
        requestWake(now());
        return;
    }
    Txn* a = static_cast<Txn*>(r->ctx);
    const uint64_t line = a->addr;
    Mshr* it = mshrs_.find(line);
    if (!it) protocolError("device memory fill without an MSHR");
    Mshr& m = *it;
    a->absorb(*r, kStageDevice, now(), tname_);
    m.value = valueOf(memVals_, line);
    bool fromMemory = true;  // the value is memory's, for the checker
    if (r->tag == kFwdFillRead) {
        // Host bias: the host resolved coherence; the run put its grant in the access.
        m.granted = a->state;
    } else {
        m.gotGo = m.gotData = true;
        const bool sharedWithHost = ap_.hdm_db && hostCopy_.count(line);
        m.granted = sharedWithHost ? MState::S : isWrite(a->kind) ? MState::M : MState::E;
        fromMemory = !sharedWithHost;
    }
    if (checker_ && fromMemory) checker_->memory(line, m.value, now());
    install(line, m);
}

Tick Accelerator::flipToHostBias(uint64_t page, Txn* cause) {
    // Flush the page's resident lines from the device cache (one cache access
    // each, dirty ones written back), then serve the host in host bias. The
    // walk visits the page's lines or the cache's ways, whichever are fewer.
    ++stats_.hostBiasFlips;
    const uint64_t base = page * ap_.bias_page_bytes;
    uint64_t n = 0;
    auto flush = [&](CLine& c) {
        if (c.st == MState::M) {
            memVals_[c.line] = c.value;
            mem_->write(c.line - memBase_);
        }
        setState(c, MState::I);
        ++n;
    };
    if (ap_.bias_page_bytes / kLineBytes <= ways_.size()) {
        for (uint64_t l = base; l < base + ap_.bias_page_bytes; l += kLineBytes) {
            CLine* c = find(l);
            if (c && c->st != MState::I) flush(*c);
        }
    } else {
        for (CLine& c : ways_)
            if (c.st != MState::I && c.line >= base && c.line < base + ap_.bias_page_bytes) flush(c);
    }
    stats_.flushedLines += n;
    bias_[page] = false;
    const Tick cost = flipLat_ + Tick(n) * lat_;
    if (cause) {
        // Charged to the flip stage; the access's clock moves past it.
        cause->leave(kStageBiasFlip, cause->mark + cost, tname_);
    }
    return cost;
}

void Accelerator::hostMemAccess(Txn* m) {
    // The host reads or writes device memory over CXL.mem.
    const uint64_t L = m->addr;
    const uint64_t page = L / ap_.bias_page_bytes;
    Tick extra = 0;
    if (m->opc == Opc::MemRd || m->opc == Opc::MemRdFwd) {
        Mshr* ms = mshrs_.find(L);
        if (ms && ms->kind == Mshr::Local && !ms->biPending) {
            memBlocked_[L].push_back(m);  // a local fill is reading the line: serve after it
            return;
        }
        if (!ap_.hdm_db && deviceBias(L)) {
            // Device bias: wait for local fills of the page, then flip it to host bias.
            // The first such fill in mshrOrder_ (see there).
            for (uint64_t x : mshrOrder_) {
                const Mshr& o = *mshrs_.find(x);
                if (o.kind == Mshr::Local && x / ap_.bias_page_bytes == page && !o.biPending) {
                    memBlocked_[x].push_back(m);
                    return;
                }
            }
            extra = flipToHostBias(page, m->parent);
        }
        if (ms && ms->kind == Mshr::Local && ms->biPending) ms->hostReacquired = true;
    }
    if (m->opc == Opc::MemRdFwd) {
        // Host bias: the host resolved coherence; read locally and fill.
        Mshr* it = mshrs_.find(L);
        if (!it || it->waiting.empty()) protocolError("MemRdFwd without a pending request");
        Mshr& ms = *it;
        ms.gotGo = true;
        Txn* a = ms.waiting.front();
        const MState g = m->state;
        pool_.put(m);
        ++stats_.localMemReads;
        if (a->addr != L) protocolError("MemRdFwd for another line's access");
        defer(now() + memLat_ + extra, Later::FwdFill, a, g);
        return;
    }
    if (m->opc == Opc::MemWr) {
        memVals_[L] = m->value;
        mem_->write(L - memBase_);
        Txn* r = msg(Opc::Cmp, L);
        r->htxn = m->htxn;  // a bias flip waits for its write-backs
        pool_.put(m);
        sendUp(r);
        return;
    }
    // MemRd: in HDM-DB the device resolves its own cache first.
    CLine* c = find(L);
    if (ap_.hdm_db && c && c->st != MState::I) {
        if (c->st == MState::M) memVals_[L] = c->value;
        if (m->state == MState::S)
            setState(*c, MState::S);
        else
            setState(*c, MState::I);
    }
    if (ap_.hdm_db) hostCopy_[L] = m->state;
    defer(now() + memLat_ + extra, Later::MemServe, m);
}

void Accelerator::biasFlipDone(Txn* m) {
    const uint64_t L = m->addr;
    link_.credits_[m->channel()].give(now());
    const uint64_t page = L / ap_.bias_page_bytes;
    bias_[page] = true;
    flipping_.erase(page);
    // Fills of this page that waited for the flip read locally now.
    std::vector<uint64_t> ready;
    mshrs_.each([&](uint64_t x, const Mshr& m) {
        if (m.kind == Mshr::Local && m.biPending && x / ap_.bias_page_bytes == page) ready.push_back(x);
    });
    std::sort(ready.begin(), ready.end());
    for (uint64_t l : ready) {
        Mshr& ms = *mshrs_.find(l);
        if (ms.waiting.empty()) protocolError("bias flip completion without a waiting access");
        Txn* a = ms.waiting.front();
        a->leave(kStageBiasFlip, now(), tname_);
        localFill(l, a, ms);
    }
}

void Accelerator::backInvalidateResponse(Txn* m) {
    const uint64_t L = m->addr;
    link_.credits_[m->channel()].give(now());
    Mshr* it = mshrs_.find(L);
    if (m->opc == Opc::BIRspI)
        hostCopy_.erase(L);
    else
        hostCopy_[L] = MState::S;
    if (!it) return;
    Mshr& ms = *it;
    if (ms.waiting.empty()) protocolError("BIRsp without a waiting access");
    Txn* a = ms.waiting.front();
    a->leave(kStageBackInv, now(), tname_);
    if (ms.hostReacquired || (ms.biInv && hostCopy_.count(L))) {
        // The host took the line again meanwhile: snoop it again.
        ms.hostReacquired = false;
        ms.biInv = true;
        ++stats_.biSnps;
        sendUp(msg(Opc::BISnpInv, L));
        return;
    }
    localFill(L, a, ms);
}

}  // namespace cxlcore
