// The accelerator's DMA engine: doorbells queue transfers for the engines,
// each fetches its descriptor, keeps up to read_tags reads of host memory in
// flight, then writes its completion record (and an MSI-X write).
#include <algorithm>

#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"

namespace cxlcore {

void Accelerator::dmaDoorbell(Msg* m) {
    home_.down(index_).giveCredit(m->cls, now());
    doorbells_.push_back(m);
    m->job->doorbellAt = now();
    dmaStart();
}

void Accelerator::dmaCompletion(Msg* m) {
    home_.down(index_).giveCredit(m->cls, now());
    if (watch_) watch_->progress(now());
    DmaJob& j = *m->job;
    if (!j.haveDescriptor) {
        j.haveDescriptor = true;
        j.descriptorAt = now();
        if (j.holdData && j.holdData(&j)) return;
        dmaPump(j);
    } else {
        j.received += m->bytes;
        if (m->tag) --j.readsInFlight;
        if (j.received >= j.bytes) {
            j.dataAt = now();
            if (j.onData) j.onData(&j);
            if (j.computeTicks) {
                DmaJob* jp = &j;
                later_.push(now() + j.computeTicks, [this, jp] { dmaFinish(*jp); });
                requestWake(now() + j.computeTicks);
            } else {
                dmaFinish(j);
            }
        } else {
            dmaPump(j);
        }
    }
}

void Accelerator::dmaFinish(DmaJob& j) {
    // The write-back in TLPs of at most max_payload bytes.
    for (uint32_t sent = 0; sent < j.writeBytes;) {
        const uint32_t n = std::min(dp_.max_payload, j.writeBytes - sent);
        Msg* d = msg(Opc::IoMemWr, kCIoD2H, j.addr + sent);
        d->bytes = n;
        d->job = &j;
        d->tag = 4;
        sendUp(d);
        sent += n;
    }
    // Completion record, then (optionally) the MSI-X write.
    Msg* w = msg(Opc::IoMemWr, kCIoD2H, j.descAddr ? j.descAddr : j.addr);
    w->bytes = 16;
    w->job = &j;
    w->tag = 2;
    sendUp(w);
    if (dp_.interrupt) {
        Msg* i = msg(Opc::IoMemWr, kCIoD2H, j.addr);
        i->bytes = 4;
        i->job = &j;
        i->tag = 3;
        sendUp(i);
    }
    ++stats_.dmaTransfers;
    --enginesBusy_;
    dmaStart();
}

void Accelerator::dmaRelease(DmaJob* j) {
    dmaPump(*j);
}

void Accelerator::dmaStart() {
    while (!doorbells_.empty() && enginesBusy_ < dp_.engines) {
        Msg* d = doorbells_.front();
        doorbells_.pop_front();
        ++enginesBusy_;
        DmaJob* j = d->job;
        pool_.put(d);
        const Tick t = now() + nsToTicks(dp_.engine_latency_ns);
        later_.push(t, [this, j] {
            Msg* r = msg(Opc::IoMemRd, kCIoD2H, j->descAddr ? j->descAddr : j->addr);
            r->bytes = dp_.descriptor_bytes;
            r->job = j;
            sendUp(r);
        });
        requestWake(t);
    }
}

void Accelerator::dmaPump(DmaJob& j) {
    while (j.nextRead < j.bytes && j.readsInFlight < dp_.read_tags) {
        const uint64_t n = std::min<uint64_t>(dp_.max_read_request, j.bytes - j.nextRead);
        Msg* r = msg(Opc::IoMemRd, kCIoD2H, j.addr + j.nextRead);
        r->bytes = uint32_t(n);
        r->job = &j;
        r->tag = 1;
        j.nextRead += n;
        ++j.readsInFlight;
        sendUp(r);
    }
}

}  // namespace cxlcore
