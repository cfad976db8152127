// RPC (de)serialisation of protocol-buffer messages: by the CXL-NIC's RPC
// engine walking host objects through its coherent cache (and writing
// arriving messages into host memory), by a PCIe NIC with the host core
// (de)serialising into a DMA buffer, and by host cores alone.
#pragma once

#include <string>

#include "cxlcore/system/system.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {

struct RpcConfig {
    std::string shape = "4KiB";
    std::string direction = "serialize";  // serialize, deserialize
    std::string mechanism = "cxl-nic";    // cxl-nic, pcie-nic, host
    bool check = false;
};

Report runRpc(const SystemParams& p, const NicParams& n, const RpcConfig& c);

}  // namespace cxlcore
