// The CXL-NIC's ring entries as bytes (devices/nic_abi.h) to and from the
// core's operations: what every engine working on a guest's memory (the gem5
// CXL-NIC and PCIe NIC) reads and writes.
#pragma once

#include <cstdint>
#include <cstring>

#include "cxlcore/devices/atomic_ops.hpp"
#include "cxlcore/devices/nic_abi.h"

namespace cxlcore {

inline uint64_t loadWord(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Operation `op`'s descriptor at p, into o; false (o a FETCH of word 0) when
// the entry does not hold that operation or names no code.
inline bool decodeDescriptor(const uint8_t* p, uint64_t op, AtomicOp& o) {
    cxlnic_desc d;
    std::memcpy(&d, p, sizeof d);
    o = AtomicOp();
    const uint64_t code = d.seq_code & 0xff;
    if ((d.seq_code >> 8) != op + 1 || code > CXLNIC_SWAP) return false;
    o.code = AtomicCode(code);
    o.index = d.index;
    o.aImm = d.a;
    o.bImm = d.b;
    return true;
}

}  // namespace cxlcore
