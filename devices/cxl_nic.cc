#include "devices/cxl_nic.hh"

#include <cstring>
#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "cxlcore/devices/nic_bytes.hpp"
#include "debug/CXLNic.hh"
#include "sim/system.hh"

namespace gem5
{

namespace
{

#define CXL_COPY_NIC(type, name, def, lo, hi) n.name = static_cast<type>(p.nic_##name);

cxlcore::NicParams
nicParams(const CXLNicParams &p)
{
    cxlcore::NicParams n;
    CXL_NIC_FIELDS(CXL_COPY_NIC)
    return n;
}

// The operation a descriptor asks for, on the word the cache holds with
// ownership; the packet gets the word's previous value back.
struct NicAmo : public AtomicOpFunctor
{
    NicAmo(uint8_t c, uint64_t x, uint64_t y) : code(c), a(x), b(y) {}
    void
    operator()(uint8_t *p) override
    {
        const uint64_t v = cxlcore::atomicResult(cxlcore::AtomicCode(code),
                                                 cxlcore::loadWord(p), a, b);
        std::memcpy(p, &v, sizeof v);
    }
    AtomicOpFunctor *clone() override { return new NicAmo(*this); }
    uint8_t code;
    uint64_t a, b;
};

} // anonymous namespace

CXLNic::CXLNic(const Params &p)
    : ClockedObject(p), port(name() + ".port", *this), system(p.system),
      requestor(p.system->getRequestorId(this)),
      host(*this, name(), [] {}), params_(nicParams(p)), stats(*this)
{
    try {
        params_.validate("nic");
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad CXLNic parameter (nic.field is the parameter "
              "nic_field): %s", name(), e.what());
    }
    fatal_if(params_.descriptors_per_line > CXLNIC_MAX_PER_DESC,
             "%s: nic.descriptors_per_line = %d is not allowed with guest "
             "descriptors of %d B; allowed: 1 to %d", name(),
             params_.descriptors_per_line, sizeof(cxlnic_desc),
             CXLNIC_MAX_PER_DESC);
    fatal_if(params_.completions_per_line > CXLNIC_MAX_PER_CQ,
             "%s: nic.completions_per_line = %d is not allowed with guest "
             "completions of %d B; allowed: 1 to %d", name(),
             params_.completions_per_line, sizeof(cxlnic_cqe),
             CXLNIC_MAX_PER_CQ);
    fatal_if(params_.network, "%s: nic.network = 1 is not allowed in gem5 "
             "yet; allowed: 0", name());
    fatal_if(p.rings < 1 || p.rings > 1024, "%s: rings = %d is out of "
             "range; allowed: 1 to 1024", name(), p.rings);
    fatal_if(p.ring_base % cxlcore::kLineBytes, "%s: ring_base %#x is not "
             "allowed; allowed: a multiple of 64", name(), p.ring_base);
    fatal_if(p.array_base % 8, "%s: array_base %#x is not allowed; "
             "allowed: a multiple of 8", name(), p.array_base);
    fatal_if(p.array_words < 1 || p.array_words > (1ull << 27),
             "%s: array_words = %d is out of range; allowed: 1 to 2^27",
             name(), p.array_words);
    mem = std::make_unique<cxlcore::AtomicMemory>(
        p.array_base, p.array_words, 0, std::vector<uint64_t>(), false);
    rings = cxlcore::makeRings(p.rings, params_, p.ring_base);
    cq.resize(p.rings);
    for (auto &c : cq)
        c.resize(params_.ring_entries / params_.completions_per_line);
    nic = std::make_unique<cxlcore::CxlNic>(host, params_, *this, rings,
                                            *mem, storeSeq, pool, this);

    const cxlcore::NicStats &s = nic->stats();
    stats.ops.functor([&s] { return double(s.ops); });
    stats.polls.functor([&s] { return double(s.polls); });
    stats.doorbellChanges.functor([&s] { return double(s.doorbellChanges); });
    stats.descriptors.functor([&s] { return double(s.descriptors); });
    stats.ringErrors.functor([&s] { return double(s.ringErrors); });
    stats.maxInFlight.functor([&s] { return double(s.maxInFlight); });
    stats.executingTicks.functor([&s] { return double(s.executing); });
}

Port &
CXLNic::getPort(const std::string &n, PortID idx)
{
    if (n == "port")
        return port;
    return ClockedObject::getPort(n, idx);
}

void
CXLNic::init()
{
    ClockedObject::init();
    fatal_if(!port.isConnected(), "%s: port is not connected to the NIC's "
             "device cache", name());
}

void
CXLNic::startup()
{
    // The engine keeps operations in flight in its cache; an atomic-mode
    // access would finish before it was issued.
    fatal_if(!system->isTimingMode(), "%s: the CXL-NIC needs the timing "
             "memory mode (timing or O3 cores)", name());
    nic->start();
}

DrainState
CXLNic::drain()
{
    // The engine polls on: a drained system must not be checkpointed.
    fatal("%s: systems with a CXLNic cannot be drained or checkpointed yet",
          name());
}

void
CXLNic::access(cxlcore::Txn *x)
{
    Access &a = accesses[x];  // operand() and completions() said what; else a line read
    RequestPtr req;
    PacketPtr pkt;
    switch (a.kind) {
      case Access::LineRead:
        req = std::make_shared<Request>(x->addr, cxlcore::kLineBytes, 0,
                                        requestor);
        pkt = Packet::createRead(req);
        break;
      case Access::Fetch:
        req = std::make_shared<Request>(a.word, 8, 0, requestor);
        pkt = Packet::createRead(req);
        break;
      case Access::Atomic:
        req = std::make_shared<Request>(a.word, 8, Request::ATOMIC_RETURN_OP,
                                        requestor);
        req->setAtomicOpFunctor(
            AtomicOpFunctorPtr(new NicAmo(a.code, a.a, a.b)));
        pkt = Packet::createWrite(req);
        break;
      case Access::LineWrite:
        req = std::make_shared<Request>(x->addr, cxlcore::kLineBytes, 0,
                                        requestor);
        pkt = Packet::createWrite(req);
        break;
    }
    pkt->allocate();
    if (a.kind == Access::LineWrite)
        pkt->setData(a.bytes.data());
    pkt->pushSenderState(new TxnState(x));
    DPRINTF(CXLNic, "issue %s %#x\n", pkt->cmdString(), pkt->getAddr());
    blocked.push_back(pkt);
    if (!waitingRetry)
        retry();
}

void
CXLNic::retry()
{
    waitingRetry = false;
    while (!blocked.empty()) {
        if (!port.sendTimingReq(blocked.front())) {
            waitingRetry = true;
            return;
        }
        blocked.pop_front();
    }
}

bool
CXLNic::recvResp(PacketPtr pkt)
{
    auto *st = safe_cast<TxnState *>(pkt->popSenderState());
    cxlcore::Txn *x = st->txn;
    delete st;
    auto it = accesses.find(x);
    panic_if(it == accesses.end(), "%s: a response to no access", name());
    // The hooks read it while the core handles the completion, and the
    // core may reuse the Txn for its next access before it returns.
    done = std::move(it->second);
    accesses.erase(it);
    doneTxn = x;
    if (done.kind != Access::LineWrite)
        pkt->writeData(done.bytes.data());
    DPRINTF(CXLNic, "done %s %#x\n", pkt->cmdString(), pkt->getAddr());
    delete pkt;
    cxlcore::notifyDone(x);
    doneTxn = nullptr;
    return true;
}

const CXLNic::Access &
CXLNic::accessOf(const cxlcore::Txn &x) const
{
    panic_if(&x != doneTxn, "%s: data of an access that is not done", name());
    return done;
}

bool
CXLNic::descriptor(cxlcore::AtomicSlot &s, const cxlcore::Txn &x)
{
    const cxlcore::NicRing &r = rings[s.ring];
    if (cxlcore::decodeDescriptor(accessOf(x).bytes.data() +
                                  (s.op % r.perDesc) * sizeof(cxlnic_desc),
                                  s.op, s.o))
        return true;
    // Not the descriptor the doorbell announced: counted, and only read.
    warn_once("%s: ring %d operation %d: descriptor not visible or bad "
              "code (counted in ringErrors)", name(), s.ring, s.op);
    return false;
}

uint64_t
CXLNic::tail(uint32_t, const cxlcore::Txn &x)
{
    return cxlcore::loadWord(accessOf(x).bytes.data());
}

void
CXLNic::operand(cxlcore::Txn &a, const cxlcore::AtomicSlot &s)
{
    Access &acc = accesses[&a];
    acc.kind = s.o.writes() ? Access::Atomic : Access::Fetch;
    acc.word = params().array_base + 8 * s.index;
    acc.code = uint8_t(s.o.code);
    acc.a = s.a;
    acc.b = s.b;
}

uint64_t
CXLNic::perform(cxlcore::AtomicSlot &, const cxlcore::Txn &x)
{
    return cxlcore::loadWord(accessOf(x).bytes.data());
}

void
CXLNic::completions(cxlcore::Txn &a, uint32_t ring,
                    const std::vector<cxlcore::AtomicSlot *> &ops)
{
    const cxlcore::NicRing &r = rings[ring];
    auto &line = cq[ring][(r.cqLine(ops.front()->op) - r.cqBase) /
                          cxlcore::kLineBytes];
    for (const cxlcore::AtomicSlot *s : ops) {
        const cxlnic_cqe e{s->op + 1, s->result};
        std::memcpy(line.data() + (s->op % r.perCq) * sizeof e, &e,
                    sizeof e);
    }
    Access &acc = accesses[&a];
    acc.kind = Access::LineWrite;
    acc.bytes = line;
}

void
CXLNic::completed(uint32_t, const std::vector<cxlcore::AtomicSlot *> &,
                  const cxlcore::Txn &)
{
}

CXLNic::NicStats::NicStats(CXLNic &n)
    : statistics::Group(&n),
      ADD_STAT(ops, statistics::units::Count::get(),
               "Atomic operations completed"),
      ADD_STAT(polls, statistics::units::Count::get(),
               "Doorbell reads"),
      ADD_STAT(doorbellChanges, statistics::units::Count::get(),
               "Doorbell reads that found a new tail"),
      ADD_STAT(descriptors, statistics::units::Count::get(),
               "Descriptors fetched"),
      ADD_STAT(ringErrors, statistics::units::Count::get(),
               "Descriptors not visible when read (a guest ordering bug)"),
      ADD_STAT(maxInFlight, statistics::units::Count::get(),
               "Most operations in the engine at once"),
      ADD_STAT(executingTicks, statistics::units::Tick::get(),
               "Summed time from an operand access's issue to its line held")
{
}

} // namespace gem5
