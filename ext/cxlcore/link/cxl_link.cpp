#include "cxlcore/link/link.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

CxlLink::CxlLink(const LinkParams& p, const std::string& where, uint64_t seed) : p_(p), name_(internName(where)) {
    p_.validate(where);
    const double gts = p_.gen == 5 ? 32e9 : 64e9;
    const double coding = p_.gen == 5 ? 128.0 / 130.0 : 1.0;  // Gen6 flit mode: FEC/CRC inside the flit
    rawRate_ = gts * p_.lanes * coding / 8.0;
    // 68 B: 4 slots of 16 B; 256 B: 15 slots (240 B); latency-optimised 256 B:
    // 236 B of slot space, rounded down to whole half-slots. Its first 128 B
    // half carries 120 B of slots (after the 2 B header and that half's 6 B
    // CRC), so a message within the first 15 half-slots is usable after half
    // the flit.
    const uint32_t units = p_.flit_bytes == 68 ? 8 : (p_.latency_optimized ? 29 : 30);
    const uint32_t firstHalf = p_.flit_bytes == 256 && p_.latency_optimized ? 15 : 0;
    const double flitPs = p_.flit_bytes / rawRate_ * 1e12;
    const double bits = p_.flit_bytes * 8.0;
    const double perr = p_.bit_error_rate > 0 ? -std::expm1(bits * std::log1p(-p_.bit_error_rate)) : 0.0;
    const Tick lat = nsToTicks(p_.phy_latency_ns);
    const Tick replay = nsToTicks(p_.replay_latency_ns);
    m2s_.configure(flitPs, units, lat, perr, replay, seed * 2 + 1, firstHalf);
    s2m_.configure(flitPs, units, lat, perr, replay, seed * 2 + 2, firstHalf);
    // A returned credit rides the next flit the other way.
    const Tick ret = m2s_.flitTime() + lat;
    creditReturn_ = ret;
    credits_[kM2SReq].init(p_.credits_req, ret);
    credits_[kM2SRwD].init(p_.credits_rwd, ret);
    credits_[kS2MNdr].init(p_.credits_ndr, ret);
    credits_[kS2MDrs].init(p_.credits_drs, ret);
    credits_[kM2SBIRsp].init(p_.credits_birsp, ret);
    credits_[kS2MBISnp].init(p_.credits_bisnp, ret);
}

double CxlLink::peakDataBytesPerSec(Channel c) const {
    const double flitsPerSec = rawRate_ / p_.flit_bytes;
    return flitsPerSec * m2s_.unitsPerFlit() / messageUnits(c) * kLineBytes;
}

}  // namespace cxlcore
