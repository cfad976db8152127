// The accelerator's DMA engine: doorbells queue transfers for the engines,
// each fetches its descriptor, keeps up to read_tags reads of host memory in
// flight, then writes its completion record (and an MSI-X write).
#include <algorithm>

#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"

namespace cxlcore {

void Accelerator::dmaDoorbell(Txn* m) {
    link_.credits_[m->channel()].give(now());
    doorbells_.push_back(m);
    m->job->doorbellAt = now();
    dmaStart();
}

void Accelerator::dmaCompletion(Txn* m) {
    link_.credits_[m->channel()].give(now());
    if (watch_) watch_->progress(now());
    DmaJob& j = *m->job;
    if (!j.haveDescriptor) {
        j.haveDescriptor = true;
        j.descriptorAt = now();
        if (j.client && j.client->holdData(&j)) return;
        dmaPump(j);
    } else {
        j.received += m->size;
        if (m->tag) --j.readsInFlight;
        if (j.received >= j.bytes) {
            j.dataAt = now();
            if (j.client) j.client->dataIn(&j);
            if (j.computeTicks) {
                defer(now() + j.computeTicks, Later::DmaFinish, &j);
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
        Txn* d = msg(Opc::IoMemWr, j.addr + sent);
        d->size = n;
        d->job = &j;
        d->tag = 4;
        sendUp(d);
        sent += n;
    }
    // Completion record, then (optionally) the MSI-X write.
    Txn* w = msg(Opc::IoMemWr, j.descAddr ? j.descAddr : j.addr);
    w->size = 16;
    w->job = &j;
    w->tag = 2;
    sendUp(w);
    if (dp_.interrupt) {
        Txn* i = msg(Opc::IoMemWr, j.addr);
        i->size = 4;
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
        Txn* d = doorbells_.front();
        doorbells_.pop_front();
        ++enginesBusy_;
        DmaJob* j = d->job;
        pool_.put(d);
        defer(now() + nsToTicks(dp_.engine_latency_ns), Later::DmaDescriptor, j);
    }
}

void Accelerator::dmaFetchDescriptor(DmaJob* j) {
    Txn* r = msg(Opc::IoMemRd, j->descAddr ? j->descAddr : j->addr);
    r->size = dp_.descriptor_bytes;
    r->job = j;
    sendUp(r);
}

void Accelerator::dmaPump(DmaJob& j) {
    while (j.nextRead < j.bytes && j.readsInFlight < dp_.read_tags) {
        const uint64_t n = std::min<uint64_t>(dp_.max_read_request, j.bytes - j.nextRead);
        Txn* r = msg(Opc::IoMemRd, j.addr + j.nextRead);
        r->size = uint32_t(n);
        r->job = &j;
        r->tag = 1;
        j.nextRead += n;
        ++j.readsInFlight;
        sendUp(r);
    }
}

}  // namespace cxlcore
