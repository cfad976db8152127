// The host's CXL.io completer: rings a device's DMA doorbell, orders and
// resolves DMA reads line by line at the home (snooping caches that hold the
// lines) and returns them as completions of at most max_payload bytes, and
// takes the device's completion-record and MSI-X writes to the driver.
#include <algorithm>
#include <memory>

#include "cxlcore/coherence/home_agent.hpp"

namespace cxlcore {

void HomeAgent::doorbell(uint16_t dev, DmaJob* job, Tick delay) {
    job->start = now() + delay;
    job->dev = dev;
    if (watch_) ++watch_->outstanding;
    const Tick t = job->start + nsToTicks(ports_[dev].dp.setup_ns);
    later_.push(t, [this, dev, job] {
        Msg* m = msg(Opc::IoMemWr, kCIoH2D, job->addr);
        m->bytes = 8;
        m->job = job;
        sendDown(dev, m);
    });
    requestWake(t);
}

void HomeAgent::ioRead(Msg* m) {
    // A DMA read: each line it covers is ordered and resolved at the home
    // like any read (snooping the caches that hold it), then completions of
    // at most max_payload bytes each go back down.
    ++stats_.ioReads;
    const uint64_t first = lineOf(m->line);
    const uint64_t end = m->line + std::max<uint32_t>(m->bytes, 1);
    auto left = std::make_shared<uint32_t>(uint32_t((end - first + kLineBytes - 1) / kLineBytes));
    const uint16_t dev = m->dev;
    DmaJob* job = m->job;
    const uint32_t bytes = m->bytes;
    const bool data = m->tag != 0;
    pool_.put(m);
    for (uint64_t x = first; x < end; x += kLineBytes) {
        HTxn* t = txns_.get();
        t->op = Opc::IoMemRd;
        t->dev = dev;
        t->line = x;
        t->issued = now();
        t->onDone = [this, left, dev, job, bytes, data, first](HTxn* r) {
            if (data) {
                if (r->line == first) job->firstValue = r->value;
                job->cachedLines += !r->memHave || r->dirty;
            }
            if (--*left) return;
            const uint32_t mps = ports_[dev].dp.max_payload;
            uint32_t sent = 0;
            do {
                const uint32_t n = std::min(mps, bytes - sent);
                Msg* c = msg(Opc::IoCplD, kCIoH2D, job->addr);
                c->bytes = n;
                c->job = job;
                sent += n;
                c->tag = (data && sent >= bytes) ? 1 : 0;
                sendDown(dev, c);
            } while (sent < bytes);
        };
        enqueue(t);
    }
}

void HomeAgent::jobNoticed(DmaJob* job) {
    job->noticedAt = now();
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    if (job->onDone) job->onDone(job);
}

void HomeAgent::ioWrite(Msg* m) {
    ++stats_.ioWrites;
    DmaJob* job = m->job;
    const uint64_t tag = m->tag;
    dram_.write(lineOf(m->line));
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
        later_.push(seen, [this, job] { jobNoticed(job); });
        requestWake(seen);
    } else if (tag == 3) {
        const Tick seen = now() + nsToTicks(dp.interrupt_ns);
        later_.push(seen, [this, job] { jobNoticed(job); });
        requestWake(seen);
    }
}

}  // namespace cxlcore
