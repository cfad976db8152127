// Statistics shared by every workload: a bounded log-linear histogram of
// non-negative integers (latencies in ticks), HdrHistogram-style, and the
// latency statistics of a stream of requests built on it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/kernel/trace.hpp"
#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

// Values below 2^kSubBits have a bucket each; above, every power of two
// [2^e, 2^(e+1)) is cut into 2^kSubBits linear buckets of width 2^(e-kSubBits).
// A percentile is reported as the middle of the bucket holding the exact
// order statistic (clamped to [min, max]), so it is within half a bucket of
// it: relative error < 2^-(kSubBits+1) = 1/128. Count, sum, mean, min and max
// are exact (the sum while below 2^64: 213 days of picoseconds). Memory is
// bounded by the largest value seen (at most kMaxBuckets counters, 30 KiB),
// never by the number of values.
class LogHistogram {
  public:
    static constexpr uint32_t kSubBits = 6;
    static constexpr uint32_t kSub = 1u << kSubBits;
    static constexpr size_t kMaxBuckets = size_t(64 - kSubBits + 1) * kSub;
    static constexpr double kRelativeError = 1.0 / (2 * kSub);

    void add(uint64_t v) {
        const size_t i = bucket(v);
        if (i >= counts_.size()) grow(i + 1);
        ++counts_[i];
        ++n_;
        sum_ += v;
        min_ = std::min(min_, v);
        max_ = std::max(max_, v);
    }
    void merge(const LogHistogram& o) {
        if (o.counts_.size() > counts_.size()) grow(o.counts_.size());
        for (size_t i = 0; i < o.counts_.size(); ++i) counts_[i] += o.counts_[i];
        n_ += o.n_;
        sum_ += o.sum_;
        min_ = std::min(min_, o.min_);
        max_ = std::max(max_, o.max_);
    }
    void reset() { *this = LogHistogram(); }

    uint64_t count() const { return n_; }
    const std::vector<uint64_t>& counts() const { return counts_; }
    uint64_t sum() const { return sum_; }
    uint64_t min() const { return n_ ? min_ : 0; }
    uint64_t max() const { return max_; }
    double mean() const { return n_ ? double(sum_) / double(n_) : 0.0; }
    // The q-quantile (0 <= q <= 1) by nearest rank: the ceil(q * n)-th smallest
    // value (at least the first), i.e. numpy's "inverted_cdf"; 0 when empty.
    double percentile(double q) const {
        if (!n_) return 0.0;
        const double r = std::ceil(std::min(std::max(q, 0.0), 1.0) * double(n_));
        const uint64_t rank = std::max<uint64_t>(1, std::min<uint64_t>(n_, uint64_t(r)));
        uint64_t c = 0;
        for (size_t i = 0; i < counts_.size(); ++i) {
            c += counts_[i];
            if (c >= rank) return std::min(std::max(middle(i), double(min_)), double(max_));
        }
        return double(max_);
    }
    // Memory held by the counters.
    size_t bytes() const { return counts_.capacity() * sizeof(uint64_t); }

    static size_t bucket(uint64_t v) {
        if (v < kSub) return size_t(v);
        const uint32_t e = 63 - uint32_t(__builtin_clzll(v));  // v in [2^e, 2^(e+1)), e >= kSubBits
        const uint32_t shift = e - kSubBits;
        return size_t(shift + 1) * kSub + size_t((v >> shift) - kSub);
    }
    // The bucket's lowest value and its width.
    static uint64_t lower(size_t i) {
        if (i < kSub) return i;
        const uint32_t shift = uint32_t(i / kSub) - 1;
        return (uint64_t(kSub) + i % kSub) << shift;
    }
    static uint64_t width(size_t i) { return i < kSub ? 1 : uint64_t(1) << (uint32_t(i / kSub) - 1); }
    static double middle(size_t i) { return double(lower(i)) + double(width(i) - 1) / 2.0; }

  private:
    void grow(size_t n) {
        if (n > counts_.capacity()) counts_.reserve(std::min(kMaxBuckets, std::max(n, 2 * counts_.capacity())));
        counts_.resize(n, 0);
    }
    std::vector<uint64_t> counts_;
    uint64_t n_ = 0, sum_ = 0, min_ = ~uint64_t(0), max_ = 0;
};

// The latency histograms of the streams the runs report while it is current on
// their thread (a run reports each stream's once, with its tails).
class HistogramSink {
  public:
    struct Entry {
        uint64_t run;
        std::string stream;
        LogHistogram hist;
    };
    // `run`: how many histograms of this stream came before (the runs in the order they reported).
    void add(const std::string& stream, const LogHistogram& h) {
        uint64_t run = 0;
        for (const Entry& e : entries_) run += e.stream == stream;
        entries_.push_back({run, stream, h});
    }
    const std::vector<Entry>& entries() const { return entries_; }
    static HistogramSink* current() { return tls_; }
    class Scope {
      public:
        explicit Scope(HistogramSink* s) : prev_(tls_) { tls_ = s; }
        ~Scope() { tls_ = prev_; }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

      private:
        HistogramSink* prev_;
    };

  private:
    static inline thread_local HistogramSink* tls_ = nullptr;
    std::vector<Entry> entries_;
};

// The tail every workload reports, `<prefix>latency_p50_ns` ... `_p999_ns`, from
// a histogram in ticks; the histogram itself goes to the current HistogramSink.
template <typename Out>
void reportTails(Out& r, const std::string& prefix, const LogHistogram& h) {
    static const std::pair<const char*, double> qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
    for (const auto& q : qs) r.emplace_back(prefix + "latency_" + q.first + "_ns", h.percentile(q.second) / 1000.0);
    if (HistogramSink* s = HistogramSink::current()) s->add(prefix + "latency", h);
}

// Completed requests of one stream: their latency (a bounded histogram),
// where it went (the stages, summed), and how many hit in the first cache.
class LatencyStats {
  public:
    void add(const Txn& x, Tick done) {
        hist_.add(done - x.birth);
        for (int s = 0; s < kNumStages; ++s) stage_[s] += x.stage[s];
        hits_ += x.hit;
        if (x.trace) TraceSink::counted(x, done, this);
    }
    void reset() { *this = LatencyStats(); }
    const LogHistogram& hist() const { return hist_; }
    uint64_t count() const { return hist_.count(); }
    double meanNs() const { return hist_.count() ? double(hist_.sum()) / 1000.0 / double(hist_.count()) : 0.0; }
    double percentileNs(double q) const { return hist_.percentile(q) / 1000.0; }  // ticks to ns
    template <typename Out>
    void tails(Out& r, const std::string& prefix) const {
        reportTails(r, prefix, hist_);
    }
    double maxNs() const { return double(hist_.max()) / 1000.0; }
    double stageNs(int s) const { return hist_.count() ? double(stage_[s]) / 1000.0 / double(hist_.count()) : 0.0; }
    double hitRate() const { return hist_.count() ? double(hits_) / double(hist_.count()) : 0.0; }

  private:
    LogHistogram hist_;
    Tick stage_[kNumStages] = {};
    uint64_t hits_ = 0;
};

}  // namespace cxlcore
