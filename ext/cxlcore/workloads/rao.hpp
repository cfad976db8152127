// Remote atomic operation (RAO) kernels after CircusTent, run by host threads
// through a CXL-NIC, through a PCIe NIC on the DMA engine, or by the host
// cores themselves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/devices/atomic_ops.hpp"
#include "cxlcore/system/system.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {

struct RaoConfig {
    std::string kernel = "rand";      // rand, stride1, striden, central, scatter, gather, ptrchase
    std::string op = "add";           // add, cas
    std::string mechanism = "cxl-nic";  // cxl-nic, pcie-nic, host
    uint32_t threads = 4;             // host threads issuing
    uint64_t iters = 1000;            // kernel iterations per thread
    uint64_t elements = 1 << 16;      // 8-byte words of the array
    uint64_t stride = 9;              // striden: elements between operations
    uint32_t noise_threads = 0;       // cxl-nic: host cores doing atomics on the array meanwhile
    bool check = false;               // the coherence checker
    bool record = false;              // return the order operations performed in, and the final memory
};

// A kernel's operation streams: operation i of thread t, a pure function of
// the configuration and seed, and the index array's initial contents.
class RaoKernel {
  public:
    RaoKernel(const RaoConfig& c, uint64_t seed);
    uint64_t opsPerThread() const { return c_.iters * per_; }
    AtomicOp op(uint32_t thread, uint64_t i) const;
    const std::vector<uint64_t>& index() const { return idx_; }

  private:
    RaoConfig c_;
    uint64_t seed_;
    int kernel_;
    uint32_t per_;  // operations per iteration
    std::vector<uint64_t> idx_;
};

// Checks a configuration; throws ConfigError naming the field.
void checkRao(const SystemParams& p, const NicParams& n, const RaoConfig& c);

struct RaoResult {
    Report report;
    std::vector<AtomicMemory::Entry> log;
    std::vector<uint64_t> array, index;
};
RaoResult runRao(const SystemParams& p, const NicParams& n, const RaoConfig& c, const Progress& progress);

class RaoRun;  // rao.cpp
// RAO on a system someone else builds and runs (runMixed), its NIC on
// accelerator `device`. `endless`: the threads run until the system's owner
// stops it, measured over the window open() and close() mark; otherwise
// they run iters operations each, and done() says when all completed.
class RaoLoad {
  public:
    RaoLoad(System& s, const NicParams& n, const RaoConfig& c, uint32_t device, bool endless, const Progress& progress);
    ~RaoLoad();
    void start();
    void open(Tick t);
    void close(Tick t);
    bool done() const;
    Tick last() const;  // the latest completion
    // Over the window, under `k`: ops, ops_per_second, latency_ns_mean, its tail and stages.
    void report(Report& r, const std::string& k) const;

  private:
    std::unique_ptr<RaoRun> run_;
};

}  // namespace cxlcore
