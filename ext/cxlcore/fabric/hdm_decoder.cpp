#include "cxlcore/fabric/hdm_decoder.hpp"

#include "cxlcore/kernel/sim.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

HdmDecoder::HdmDecoder(const std::string& where, uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity)
    : base_(base), size_(size), ways_(ways), gran_(granularity) {
    if (!waysAllowed(ways))
        throw ConfigError(where + ": " + std::to_string(ways) + "-way interleave is not allowed; allowed " +
                          kWaysAllowed);
    // Any size decodes one to one (a last partial row of chunks just ends
    // early); the base is chunk-aligned, as the specification's is.
    if (size == 0 || !granularity || granularity & (granularity - 1) || base % granularity ||
        base > kMaxWindow || size > kMaxWindow - base) {
        std::ostringstream os;
        os << where << ": host window base 0x" << std::hex << base << " size 0x" << size << std::dec
           << " is not allowed; allowed: a base that is a multiple of interleave_bytes (" << granularity
           << " B, a power of two) and a non-empty window within the 52-bit physical address space";
        throw ConfigError(os.str());
    }
    while ((1u << granShift_) < granularity) ++granShift_;
    if (!(ways & (ways - 1)))
        for (waysShift_ = 0; (1u << waysShift_) < ways;) ++waysShift_;
}

void HdmDecoder::outside(uint64_t hpa) const {
    std::ostringstream os;
    os << "address 0x" << std::hex << hpa << " is outside the CXL window [0x" << base_ << ", 0x" << base_ + size_
       << ")";
    throw ConfigError(os.str());
}

}  // namespace cxlcore
