// Trace replay on one host core.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cxlcore/workloads/driver.hpp"

namespace cxlcore {

using namespace memload;

// ---------------------------------------------------------------- trace replay

namespace {

class TraceDriver : public Driver {
  public:
    TraceDriver(System& s, const TraceConfig& c, const Progress& p)
        : Driver(s), in_(c.path), path_(c.path), max_(c.max_outstanding), progress_(p) {
        if (!in_) throw ConfigError("trace.path = '" + c.path + "' cannot be opened");
        in_.seekg(0, std::ios::end);
        size_ = std::max<double>(1.0, double(in_.tellg()));
        in_.seekg(0);
        readNext();
    }
    void start() { process(); }
    uint64_t requests_ = 0, readBytes_ = 0, writeBytes_ = 0;
    Tick first_ = kNever, last_ = 0;
    LatencyStats reads_, writes_;

  protected:
    void process() override {
        const Tick t = now();
        while (have_ && outstanding_ < max_ && nextTime_ <= t) {
            issue(0, nextOp_, nextAddr_, 0, t);
            ++outstanding_;
            first_ = std::min(first_, t);
            if (nextBytes_ > kLineBytes) {
                nextBytes_ -= kLineBytes;
                nextAddr_ += kLineBytes;
            } else {
                readNext();
            }
        }
        if (have_ && outstanding_ < max_) requestWake(std::max(nextTime_, t));
    }
    void complete(Txn* x, Tick done) override {
        --outstanding_;
        ++requests_;
        last_ = done;
        if (x->isRead()) {
            readBytes_ += x->size;
            reads_.add(*x, last_);
        } else {
            writeBytes_ += x->size;
            writes_.add(*x, last_);
        }
        if (progress_ && (requests_ & 0xffff) == 0 && !progress_(double(in_.tellg()) / size_)) throw Cancelled();
        requestWake(done);
    }

  private:
    // The line's own bytes are shown escaped where they are not printable
    // ASCII: the message must be one line of text whatever the file holds.
    [[noreturn]] void bad(const std::string& what) {
        std::string shown;
        for (unsigned char ch : what) {
            if (ch >= 0x20 && ch < 0x7f) {
                shown += char(ch);
            } else {
                static const char* hex = "0123456789abcdef";
                shown += "\\x";
                shown += hex[ch >> 4];
                shown += hex[ch & 15];
            }
        }
        throw ConfigError("trace " + path_ + " line " + std::to_string(line_) + ": " + shown);
    }
    void readNext() {
        have_ = false;
        std::string s;
        while (std::getline(in_, s)) {
            ++line_;
            if (s.find('\0') != std::string::npos) bad("holds a NUL byte; a trace is a text file");
            auto hash = s.find('#');
            if (hash != std::string::npos) s.resize(hash);
            for (char& ch : s)
                if (ch == ',') ch = ' ';
            std::istringstream ls(s);
            std::string ts, op, addr, size;
            if (!(ls >> ts)) continue;  // blank or comment
            if (!(ls >> op >> addr)) bad("expected 'time_ns op address [size]'");
            ls >> size;
            std::string extra;
            if (ls >> extra) bad("unexpected field '" + extra + "'; expected 'time_ns op address [size]'");
            char* end = nullptr;
            double tns = std::strtod(ts.c_str(), &end);
            if (*end || !(tns >= 0) || tns > 1e15) bad("time_ns '" + ts + "' is not a number from 0 to 1e15");
            Tick tt = nsToTicks(tns);
            if (tt < lastTime_) bad("time_ns " + ts + " is earlier than the previous line; times must not decrease");
            if (op == "R" || op == "r" || op == "READ" || op == "read") nextOp_ = Opc::MemRd;
            else if (op == "W" || op == "w" || op == "WRITE" || op == "write") nextOp_ = Opc::MemWr;
            else bad("op '" + op + "' is not allowed; allowed values: R, W");
            errno = 0;
            // Hex with 0x, decimal otherwise (a leading zero is not octal).
            const bool hex = addr.size() > 2 && addr[0] == '0' && (addr[1] == 'x' || addr[1] == 'X');
            unsigned long long a = std::strtoull(addr.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
            if (*end || addr.empty() || !std::isxdigit(static_cast<unsigned char>(addr[hex ? 2 : 0])) || errno)
                bad("address '" + addr + "' is not a hex (0x...) or decimal number");
            uint64_t bytes = kLineBytes;
            if (!size.empty()) {
                unsigned long long b = std::strtoull(size.c_str(), &end, 10);
                if (*end || size[0] == '-' || b < 1 || b > (1u << 20)) bad("size '" + size + "' is out of range; allowed: 1 to 1048576");
                bytes = b;
            }
            if (bytes - 1 > ~0ull - a) bad("address '" + addr + "' plus size runs past the end of the address space");
            // Whole cache lines: the request covers every line the access touches.
            uint64_t first = a / kLineBytes * kLineBytes, lastL = (a + bytes - 1) / kLineBytes * kLineBytes;
            nextAddr_ = first;
            nextBytes_ = lastL - first + kLineBytes;
            nextTime_ = lastTime_ = tt;
            have_ = true;
            return;
        }
    }

    std::ifstream in_;
    std::string path_;
    uint32_t max_, outstanding_ = 0;
    Progress progress_;
    double size_ = 1;
    uint64_t line_ = 0, nextAddr_ = 0, nextBytes_ = 0;
    Tick nextTime_ = 0, lastTime_ = 0;
    Opc nextOp_ = Opc::MemRd;
    bool have_ = false;
};

}  // namespace

Report runTrace(const SystemParams& sp, const TraceConfig& cfg, const Progress& progress) {
    if (cfg.max_outstanding < 1 || cfg.max_outstanding > 65536)
        throw ConfigError("trace.max_outstanding = " + fmtNum(cfg.max_outstanding) +
                          " is out of range; allowed: 1 to 65536");
    System s(sp);
    TraceDriver d(s, cfg, progress);
    if (!cfg.target.windows.empty()) d.place_ = PagePlacement(s.host(), cfg.target, "trace");
    d.start();
    s.run();
    Report r;
    r.emplace_back("requests", double(d.requests_));
    const Tick start = d.first_ == kNever ? 0 : d.first_;
    commonReport(r, s, d.place_, start, std::max(d.last_, start), d.readBytes_, d.writeBytes_);
    reportLatency(r, d.reads_, "read");
    reportLatency(r, d.writes_, "write");
    return r;
}

}  // namespace cxlcore
