// RAO kernels' operation streams (after CircusTent) and the check of a run's
// configuration; the run itself is in rao.cpp.
#include <algorithm>

#include "cxlcore/workloads/rao.hpp"

namespace cxlcore {

namespace {

const char* const kKernels[] = {"rand", "stride1", "striden", "central", "scatter", "gather", "ptrchase"};
enum Kernel { Rand, Stride1, StrideN, Central, Scatter, Gather, PtrChase };

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

int kernelOf(const std::string& k) {
    for (int i = 0; i < 7; ++i)
        if (k == kKernels[i]) return i;
    throw ConfigError("rao.kernel = '" + k +
                      "' is not allowed; allowed values: rand, stride1, striden, central, scatter, gather, ptrchase");
}

}  // namespace

void checkRao(const SystemParams& p, const NicParams& n, const RaoConfig& c) {
    p.validate();
    n.validate("nic");
    // The NIC is the system's first device; any others stay idle beside it.
    need(!p.accelerators.empty(), "rao: the system has no device; allowed: a Type-1 device first, the NIC");
    kernelOf(c.kernel);
    need(c.op == "add" || c.op == "cas", "rao.op = '" + c.op + "' is not allowed; allowed values: add, cas");
    need(c.mechanism == "cxl-nic" || c.mechanism == "pcie-nic" || c.mechanism == "host",
         "rao.mechanism = '" + c.mechanism + "' is not allowed; allowed values: cxl-nic, pcie-nic, host");
    need(c.threads >= 1 && c.threads <= 256, "rao.threads = " + fmtNum(c.threads) + " is out of range; allowed: 1 to 256");
    need(c.iters >= 1 && c.iters <= (1ull << 32),
         "rao.iters = " + fmtNum(double(c.iters)) + " is out of range; allowed: 1 to 4294967296");
    need(c.elements >= 8 && c.elements <= (1ull << 30),
         "rao.elements = " + fmtNum(double(c.elements)) + " is out of range; allowed: 8 to 1073741824");
    need(c.stride >= 1 && c.stride <= (1ull << 30),
         "rao.stride = " + fmtNum(double(c.stride)) + " is out of range; allowed: 1 to 1073741824");
    need(c.noise_threads <= 64, "rao.noise_threads = " + fmtNum(c.noise_threads) + " is out of range; allowed: 0 to 64");
    need(c.noise_threads == 0 || c.mechanism == "cxl-nic",
         "rao.noise_threads = " + fmtNum(c.noise_threads) + " is not allowed with mechanism '" + c.mechanism +
             "'; allowed: 0 (host cores touch the NIC's lines only with cxl-nic)");
    const int k = kernelOf(c.kernel);
    if (k == Scatter || k == Gather)
        need(uint64_t(c.threads) * c.iters <= (1ull << 28),
             "rao.iters = " + fmtNum(double(c.iters)) + " is out of range for " + c.kernel + " with " +
                 fmtNum(c.threads) + " threads; allowed: threads x iters up to 268435456 (its index array)");
    need(!c.record || uint64_t(c.threads) * c.iters <= 10000000,
         "rao.record is not allowed with threads x iters = " + fmtNum(double(uint64_t(c.threads) * c.iters)) +
             "; allowed: up to 10000000 when recording");
}

RaoKernel::RaoKernel(const RaoConfig& c, uint64_t seed) : c_(c), seed_(seed), kernel_(kernelOf(c.kernel)) {
    const bool cas = c.op == "cas";
    per_ = kernel_ == Scatter || kernel_ == Gather ? (cas ? 5 : 3) : cas ? 2 : 1;
    Rng rng(seed * 7919 + 17);
    if (kernel_ == Scatter || kernel_ == Gather) {
        idx_.resize(size_t(c.threads) * c.iters + 2);
        for (auto& v : idx_) v = rng.below(c.elements);
    } else if (kernel_ == PtrChase) {
        // One cycle through every element (Sattolo's shuffle), so no chase ends early.
        idx_.resize(c.elements);
        for (uint64_t i = 0; i < c.elements; ++i) idx_[i] = i;
        for (uint64_t i = c.elements - 1; i > 0; --i) std::swap(idx_[i], idx_[rng.below(i)]);
    } else {
        idx_.assign(1, 0);
    }
}

AtomicOp RaoKernel::op(uint32_t t, uint64_t i) const {
    const uint64_t it = i / per_, j = i % per_, base = it * per_;
    const bool cas = c_.op == "cas";
    const uint64_t E = c_.elements, n = c_.iters;
    AtomicOp out[5];
    uint32_t m = 0;
    // "word += v" (v: an immediate plus the result of operation vDep): one
    // FETCH_ADD/ADD, or a FETCH and a CAS of the value fetched to the sum.
    // Returns the operation whose result is the word's previous value.
    auto modify = [&](uint8_t region, uint64_t index, int64_t addrDep, AtomicCode code, uint64_t imm, int64_t vDep) {
        AtomicOp o;
        o.region = region;
        o.index = index;
        o.addrDep = addrDep;
        if (!cas) {
            o.code = code;
            o.aImm = imm;
            o.aDep[0] = vDep;
            out[m++] = o;
            return int64_t(base + m - 1);
        }
        o.code = AtomicCode::Fetch;
        out[m++] = o;
        const int64_t f = int64_t(base + m - 1);
        o.code = AtomicCode::Cas;
        o.aDep[0] = f;
        o.bDep[0] = f;
        o.bDep[1] = vDep;
        o.bImm = imm;
        out[m++] = o;
        return f;
    };
    auto fetch = [&](uint8_t region, uint64_t index, int64_t addrDep) {
        AtomicOp o;
        o.region = region;
        o.index = index;
        o.addrDep = addrDep;
        out[m++] = o;
        return int64_t(base + m - 1);
    };
    // The thread's share of the arrays, as CircusTent splits them; an endless run
    // (beside other workloads) goes over its share again.
    const uint64_t g = uint64_t(t) * n + it % n;
    switch (kernel_) {
        case Rand: modify(0, Rng(seed_ * 1000003 + (uint64_t(t) << 40) + it).next() % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Stride1: modify(0, g % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case StrideN: modify(0, (uint64_t(t) * n * c_.stride + it * c_.stride) % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Central: modify(0, 0, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Scatter: {
            const int64_t d = fetch(1, g + 1, -1);
            const int64_t v = modify(0, g % E, -1, AtomicCode::FetchAdd, 1, -1);
            modify(0, 0, d, AtomicCode::Add, 0, v);
            break;
        }
        case Gather: {
            const int64_t d = fetch(1, g + 1, -1);
            const int64_t v = modify(0, 0, d, AtomicCode::FetchAdd, 1, -1);
            modify(0, g % E, -1, AtomicCode::Add, 0, v);
            break;
        }
        case PtrChase: {
            // Each step reads the next element's index from the one before.
            const uint64_t start = uint64_t(t) * E / c_.threads;
            const int64_t prev = it ? int64_t((it - 1) * per_) : -1;
            const int64_t x = fetch(1, start, prev);
            if (cas) {
                AtomicOp o = out[0];
                o.code = AtomicCode::Cas;
                o.aDep[0] = x;
                o.bDep[0] = x;
                out[m++] = o;
            }
            break;
        }
    }
    return out[j];
}

}  // namespace cxlcore
