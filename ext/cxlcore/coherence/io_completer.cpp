// The host's CXL.io completer: rings a device's DMA doorbell, orders and
// resolves DMA reads line by line at the home (snooping caches that hold the
// lines) and returns them as completions of at most max_payload bytes, and
// takes the device's completion-record and MSI-X writes to the driver.
#include <algorithm>

#include "cxlcore/coherence/home_agent.hpp"

namespace cxlcore {

void HomeAgent::doorbell(uint16_t dev, DmaJob* job, Tick delay) {
    job->start = now() + delay;
    job->dev = dev;
    if (watch_) ++watch_->outstanding;
    defer(job->start + nsToTicks(ports_[dev].dp.setup_ns), Later::Doorbell, job, dev);
}

void HomeAgent::ringDoorbell(uint16_t dev, DmaJob* job) {
    Txn* m = msg(Opc::IoMmioWr, job->addr);
    m->size = 8;
    m->job = job;
    sendDown(dev, m);
}

void HomeAgent::ioRead(Txn* m) {
    // A DMA read: each line it covers is ordered and resolved at the home
    // like any read (snooping the caches that hold it), then completions of
    // at most max_payload bytes each go back down.
    ++stats_.ioReads;
    const uint64_t first = lineOf(m->addr);
    const uint64_t end = m->addr + std::max<uint32_t>(m->size, 1);
    IoRead* io = ioReads_.get();
    io->left = uint32_t((end - first + kLineBytes - 1) / kLineBytes);
    io->bytes = m->size;
    io->dev = m->dev;
    io->data = m->tag != 0;
    io->first = first;
    io->job = m->job;
    pool_.put(m);
    for (uint64_t x = first; x < end; x += kLineBytes) {
        HTxn* t = txns_.get();
        t->opc = Opc::IoMemRd;
        t->dev = io->dev;
        t->line = x;
        t->birth = now();
        t->io = io;
        enqueue(t);
    }
}

void HomeAgent::ioLineDone(HTxn* r) {
    IoRead* io = r->io;
    DmaJob* job = io->job;
    if (io->data) {
        if (r->line == io->first) job->firstValue = r->value;
        job->cachedLines += !r->memHave || r->dirty;
    }
    if (--io->left) return;
    const uint32_t mps = ports_[io->dev].dp.max_payload;
    uint32_t sent = 0;
    do {
        const uint32_t n = std::min(mps, io->bytes - sent);
        Txn* c = msg(Opc::IoCplD, job->addr);
        c->size = n;
        c->job = job;
        sent += n;
        c->tag = (io->data && sent >= io->bytes) ? 1 : 0;
        sendDown(io->dev, c);
    } while (sent < io->bytes);
    ioReads_.put(io);
}

void HomeAgent::jobNoticed(DmaJob* job) {
    job->noticedAt = now();
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    if (job->client) job->client->dmaDone(job);
}

void HomeAgent::ioWrite(Txn* m) {
    ++stats_.ioWrites;
    DmaJob* job = m->job;
    const uint64_t tag = m->tag;
    mem_.write(lineOf(m->addr));
    pool_.put(m);
    if (!job) return;
    const DmaParams& dp = ports_[job->dev].dp;
    if (tag == 2) {
        job->completionAt = now();
        if (dp.interrupt) return;
        // The driver polls the completion record every poll interval.
        const Tick iv = nsToTicks(dp.poll_interval_ns);
        const Tick since = now() + lat_ - job->start;
        const Tick seen = job->start + (since + iv - 1) / iv * iv + hostHit_;
        defer(seen, Later::JobNoticed, job);
    } else if (tag == 3) {
        const Tick seen = now() + nsToTicks(dp.interrupt_ns);
        defer(seen, Later::JobNoticed, job);
    }
}

}  // namespace cxlcore
