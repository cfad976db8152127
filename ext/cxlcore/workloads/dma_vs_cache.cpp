// Device reads of host buffers by DMA and by CXL.cache.
#include <algorithm>
#include <cmath>

#include "cxlcore/workloads/accel_common.hpp"

namespace cxlcore {

using namespace accelwl;

// ---------------------------------------------------------------- DMA vs CXL.cache

namespace {

// The bandwidth half of a size's row: `transfers` of `bytes` each, the last done at `last`.
void addBandwidth(Report& r, uint64_t bytes, uint64_t transfers, Tick last, bool dma) {
    r.emplace_back("bandwidth_gbps", double(bytes * transfers) / ticksToNs(last));
    r.emplace_back("bandwidth_transfers", double(transfers));
    r.emplace_back("mechanism_dma", dma ? 1.0 : 0.0);
}

}  // namespace

std::vector<Report> runDmaVsCache(const SystemParams& p, const DmaVsCacheConfig& c, const Progress& progress) {
    need(!c.sizes.empty(), "dma_vs_cache.sizes is empty; allowed: one or more sizes from 1 to 1073741824 bytes");
    for (uint64_t s : c.sizes)
        need(s >= 1 && s <= (1ull << 30), "dma_vs_cache.sizes contains " + fmtNum(double(s)) +
                                              ", out of range; allowed: 1 to 1073741824 bytes");
    need(c.cache_op == "load" || c.cache_op == "rdcurr",
         "dma_vs_cache.cache_op = '" + c.cache_op + "' is not allowed; allowed values: load, rdcurr");
    need(c.min_transfers >= 1 && c.min_transfers <= 1000000,
         "dma_vs_cache.min_transfers = " + fmtNum(c.min_transfers) + " is out of range; allowed: 1 to 1000000");
    need(c.stream_bytes <= (1ull << 34), "dma_vs_cache.stream_bytes = " + fmtNum(double(c.stream_bytes)) +
                                             " is out of range; allowed: up to 17179869184");
    std::vector<Report> out;
    const Txn::Kind kind = c.cache_op == "load" ? Txn::Load : Txn::LoadCurrent;
    size_t step = 0;
    const size_t steps = c.sizes.size() * 4;
    auto tick = [&] {
        ++step;
        if (progress && !progress(double(step) / double(steps))) throw Cancelled();
    };
    for (uint64_t size : c.sizes) {
        const uint64_t count = std::max<uint64_t>(c.min_transfers, (c.stream_bytes + size - 1) / size);
        // DMA: one transfer alone (latency), then `count` back to back (bandwidth).
        for (int bw = 0; bw < 2; ++bw) {
            System sys(p, false);
            const uint64_t n = bw ? count : 1;
            std::vector<std::unique_ptr<DmaJob>> jobs;
            struct Noticed final : DmaClient {
                Tick last = 0;
                uint64_t finished = 0;
                void dmaDone(DmaJob* x) override {
                    last = std::max(last, x->noticedAt);
                    ++finished;
                }
            } noticed;
            Tick& last = noticed.last;
            uint64_t& finished = noticed.finished;
            const uint64_t stride = (size + 4095) / 4096 * 4096;
            for (uint64_t i = 0; i < n; ++i) {
                jobs.emplace_back(new DmaJob());
                DmaJob* j = jobs.back().get();
                j->addr = kHostBase + i * stride;
                j->bytes = size;
                j->client = &noticed;
                // The driver prepares and rings descriptors one after another.
                sys.home->doorbell(0, j, Tick(i) * nsToTicks(p.accelerators[0].dma.setup_ns));
            }
            sys.run();
            need(finished == n, "internal: DMA run stopped with transfers outstanding");
            Report r;
            if (!bw) {
                const DmaJob& j = *jobs[0];
                r.emplace_back("transfer_bytes", double(size));
                r.emplace_back("latency_ns", ticksToNs(j.noticedAt - j.start));
                r.emplace_back("phase_doorbell_ns", ticksToNs(j.doorbellAt - j.start));
                r.emplace_back("phase_descriptor_ns", ticksToNs(j.descriptorAt - j.doorbellAt));
                r.emplace_back("phase_data_ns", ticksToNs(j.dataAt - j.descriptorAt));
                r.emplace_back("phase_completion_ns", ticksToNs(j.noticedAt - j.dataAt));
                out.push_back(r);
            } else {
                addBandwidth(out.back(), size, n, last, true);
            }
            tick();
        }
        // CXL.cache: the device loads the lines itself, as many at once as its MSHRs allow.
        for (int bw = 0; bw < 2; ++bw) {
            System sys(p, false);
            const uint64_t lines = (size + kLineBytes - 1) / kLineBytes;
            const uint64_t total = bw ? lines * count : lines;
            const uint64_t stride = (size + 4095) / 4096 * 4096;
            uint64_t issued = 0, done = 0;
            Tick last = 0;
            LatencyStats lat;
            std::function<void()> pump;
            auto finished = makeClient([&](Txn* x) {
                lat.add(*x, x->done);
                last = std::max(last, x->done);
                sys.pool.put(x);
                ++done;
                pump();
            });
            pump = [&] {
                while (issued < total && issued - done < p.accelerators[0].cache.mshrs) {
                    const uint64_t t = issued / lines, l = issued % lines;
                    Txn* a = sys.pool.get();
                    a->kind = kind;
                    a->addr = kHostBase + t * stride + l * kLineBytes;
                    a->birth = sys.loop.now();
                    ++issued;
                    a->client = &finished;
                    sys.accels[0]->access(a);
                }
            };
            pump();
            sys.run();
            need(done == total, "internal: CXL.cache run stopped with loads outstanding");
            if (!bw) {
                Report r;
                r.emplace_back("transfer_bytes", double(size));
                r.emplace_back("latency_ns", ticksToNs(last));
                reportLatency(r, lat, "line_");
                out.push_back(r);
            } else {
                addBandwidth(out.back(), size, count, last, false);
            }
            tick();
        }
    }
    return out;
}

}  // namespace cxlcore
