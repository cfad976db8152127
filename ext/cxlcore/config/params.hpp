// Parameter structs of every model. Each list is X(type, name, default, min, max):
// the Python dataclasses in simcxl/params.py are the source of truth and a test
// keeps these names, defaults and ranges equal to theirs.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

#define CXL_HOST_FIELDS(X)                                  \
    X(uint32_t, cores, 8, 1, 1024)                          \
    X(uint32_t, mshrs_per_core, 16, 1, 256)                 \
    X(uint32_t, writeback_buffer, 32, 1, 1024)              \
    X(uint64_t, l1_bytes, 49152, 1024, 1ull << 30)          \
    X(uint32_t, l1_assoc, 12, 1, 64)                        \
    X(double, l1_latency_ns, 1.7, 0, 100)                   \
    X(uint64_t, l2_bytes, 2097152, 1024, 1ull << 34)        \
    X(uint32_t, l2_assoc, 16, 1, 64)                        \
    X(double, l2_latency_ns, 5.5, 0, 200)                   \
    X(uint64_t, llc_bytes, 102236160, 1024, 1ull << 36)     \
    X(uint32_t, llc_assoc, 15, 1, 64)                       \
    X(double, llc_latency_ns, 36.0, 0, 500)                 \
    X(double, llc_bimodal_insert_prob, 0.0625, 0, 1)        \
    X(uint32_t, llc_inclusive, 0, 0, 1)                     \
    X(uint32_t, dtlb_entries, 64, 1, 65536)                 \
    X(uint32_t, dtlb_assoc, 4, 1, 65536)                    \
    X(uint32_t, stlb_entries, 2048, 1, 1048576)             \
    X(uint32_t, stlb_assoc, 8, 1, 1048576)                  \
    X(double, stlb_latency_ns, 2.5, 0, 100)                 \
    X(double, walk_latency_ns, 4.0, 0, 1000)                \
    X(uint64_t, page_bytes, 4096, 4096, 1ull << 30)         \
    X(uint32_t, frame_run_pages, 8, 1, 1u << 20)            \
    X(double, uncore_req_latency_ns, 10.0, 0, 1000)         \
    X(double, uncore_resp_latency_ns, 10.0, 0, 1000)

#define CXL_DRAM_FIELDS(X)                                  \
    X(uint32_t, channels, 2, 1, 64)                         \
    X(uint32_t, ranks, 1, 1, 16)                            \
    X(uint32_t, bank_groups, 8, 1, 16)                      \
    X(uint32_t, banks_per_group, 4, 1, 16)                  \
    X(uint32_t, row_bytes, 4096, 256, 65536)                \
    X(double, data_rate_mts, 4800, 100, 20000)              \
    X(uint32_t, bus_bytes, 4, 1, 64)                        \
    X(uint32_t, burst_length, 16, 1, 64)                    \
    X(uint32_t, interleave_bytes, 256, 64, 65536)           \
    X(double, tRCD_ns, 16.67, 0, 200)                       \
    X(double, tCL_ns, 16.67, 0, 200)                        \
    X(double, tCWL_ns, 15.83, 0, 200)                       \
    X(double, tRP_ns, 16.67, 0, 200)                        \
    X(double, tRAS_ns, 32.0, 0, 500)                        \
    X(double, tWR_ns, 30.0, 0, 500)                         \
    X(double, tWTR_ns, 10.0, 0, 200)                        \
    X(double, tWTR_S_ns, 2.5, 0, 200)                       \
    X(double, tRTW_ns, 5.0, 0, 200)                         \
    X(double, tRTP_ns, 7.5, 0, 200)                         \
    X(double, tRTRS_ns, 0.83, 0, 100)                       \
    X(double, tRRD_ns, 3.33, 0, 200)                        \
    X(double, tRRD_L_ns, 5.0, 0, 200)                       \
    X(double, tFAW_ns, 13.33, 0, 500)                       \
    X(double, tCCD_S_ns, 3.33, 0, 100)                      \
    X(double, tCCD_L_ns, 5.0, 0, 100)                       \
    X(double, tREFI_ns, 3900, 0, 100000)                    \
    X(double, tRFC_ns, 295, 0, 5000)                        \
    X(uint32_t, refresh_per_bank, 0, 0, 1)                  \
    X(double, tRFCsb_ns, 130, 0, 5000)                      \
    X(uint32_t, refresh_postpone, 4, 0, 8)                  \
    X(uint32_t, read_queue, 64, 1, 4096)                    \
    X(uint32_t, write_queue, 64, 1, 4096)                   \
    X(uint32_t, write_buffer, 0, 0, 65536)                  \
    X(uint32_t, posted_writes, 1, 0, 1)                     \
    X(double, write_high_watermark, 0.85, 0.01, 1)          \
    X(double, write_low_watermark, 0.5, 0, 0.99)            \
    X(uint32_t, min_writes_per_switch, 16, 1, 4096)         \
    X(uint32_t, max_writes_per_switch, 0, 0, 4096)          \
    X(double, frontend_latency_ns, 5.0, 0, 1000)            \
    X(double, backend_latency_ns, 5.0, 0, 1000)

#define CXL_INTERSOCKET_FIELDS(X)                           \
    X(double, latency_ns, 35.0, 0, 10000)                   \
    X(double, bandwidth_gbps, 48.0, 0.1, 10000)             \
    X(uint32_t, req_bytes, 16, 1, 4096)                     \
    X(uint32_t, data_bytes, 80, 64, 4096)                   \
    X(uint32_t, max_outstanding, 256, 1, 65536)             \
    X(uint32_t, directory_writes, 1, 0, 1)

#define CXL_BRIDGE_FIELDS(X)                                \
    X(double, req_latency_ns, 15.0, 0, 10000)               \
    X(double, resp_latency_ns, 15.0, 0, 10000)              \
    X(uint32_t, req_queue, 128, 1, 65536)                   \
    X(uint32_t, resp_queue, 128, 1, 65536)                  \
    X(uint32_t, root_ports, 1, 1, 64)                       \
    X(uint32_t, interleave_ways, 1, 1, 16)                  \
    X(uint32_t, interleave_bytes, 4096, 256, 16384)

#define CXL_LINK_FIELDS(X)                                  \
    X(uint32_t, gen, 5, 5, 6)                               \
    X(uint32_t, lanes, 16, 1, 16)                           \
    X(uint32_t, flit_bytes, 68, 68, 256)                    \
    X(uint32_t, latency_optimized, 0, 0, 1)                 \
    X(double, phy_latency_ns, 20.0, 0, 10000)               \
    X(uint32_t, credits_req, 64, 1, 65536)                  \
    X(uint32_t, credits_rwd, 64, 1, 65536)                  \
    X(uint32_t, credits_ndr, 64, 1, 65536)                  \
    X(uint32_t, credits_drs, 64, 1, 65536)                  \
    X(double, bit_error_rate, 0, 0, 1e-3)                   \
    X(double, replay_latency_ns, 60.0, 0, 100000)

#define CXL_DEVICE_FIELDS(X)                                \
    X(double, req_latency_ns, 30.0, 0, 10000)               \
    X(double, resp_latency_ns, 20.0, 0, 10000)              \
    X(uint32_t, req_queue, 64, 1, 65536)                    \
    X(uint32_t, resp_queue, 64, 1, 65536)                   \
    X(uint32_t, write_tracker, 0, 0, 65536)                 \
    X(double, devload_optimal, 0.25, 0, 1)                  \
    X(double, devload_moderate, 0.75, 0, 1)                 \
    X(double, devload_severe, 0.95, 0, 1)

// CXL.cache: the device's coherent cache, its six channels' credits, and the
// CXL 3.x back-invalidate channels (S2M BISnp, M2S BIRsp) of HDM-DB.
#define CXL_DCACHE_FIELDS(X)                                \
    X(uint64_t, bytes, 131072, 1024, 1ull << 30)            \
    X(uint32_t, assoc, 8, 1, 64)                            \
    X(double, latency_ns, 10.0, 0, 1000)                    \
    X(uint32_t, mshrs, 64, 1, 4096)                         \
    X(double, snoop_latency_ns, 15.0, 0, 1000)              \
    X(uint32_t, credits_d2h_req, 64, 1, 65536)              \
    X(uint32_t, credits_d2h_rsp, 64, 1, 65536)              \
    X(uint32_t, credits_d2h_data, 64, 1, 65536)             \
    X(uint32_t, credits_h2d_req, 32, 1, 65536)              \
    X(uint32_t, credits_h2d_rsp, 64, 1, 65536)              \
    X(uint32_t, credits_h2d_data, 64, 1, 65536)             \
    X(uint32_t, credits_bisnp, 64, 1, 65536)                \
    X(uint32_t, credits_birsp, 64, 1, 65536)

// The host's home agent for CXL.cache: ordering point and snoop filter.
#define CXL_HOME_FIELDS(X)                                  \
    X(double, latency_ns, 20.0, 0, 10000)                   \
    X(double, host_hit_ns, 36.0, 0, 10000)                  \
    X(uint32_t, tracker, 128, 1, 65536)                     \
    X(uint32_t, snoop_filter_lines, 0, 0, 1u << 26)         \
    X(uint64_t, host_cache_bytes, 102236160, 4096, 1ull << 36)

// The accelerator: Type-1 (cache only) or Type-2 (cache plus device memory).
#define CXL_ACCEL_FIELDS(X)                                 \
    X(uint32_t, type, 1, 1, 2)                              \
    X(uint32_t, devices, 1, 1, 16)                          \
    X(uint64_t, memory_bytes, 1ull << 30, 4096, 1ull << 44) \
    X(uint64_t, memory_base, 0, 0, 1ull << 52)              \
    X(uint32_t, hdm_db, 0, 0, 1)                            \
    X(uint32_t, device_bias, 0, 0, 1)                       \
    X(uint32_t, auto_bias_flip, 1, 0, 1)                    \
    X(uint64_t, bias_page_bytes, 4096, 64, 1ull << 30)      \
    X(double, bias_flip_ns, 300.0, 0, 1e6)                  \
    X(double, memory_latency_ns, 10.0, 0, 10000)

// A PCIe-style DMA engine on the device, driven through CXL.io.
#define CXL_DMA_FIELDS(X)                                   \
    X(double, setup_ns, 100.0, 0, 1e6)                      \
    X(double, engine_latency_ns, 50.0, 0, 1e6)              \
    X(uint32_t, descriptor_bytes, 64, 16, 4096)             \
    X(uint32_t, max_read_request, 512, 64, 4096)            \
    X(uint32_t, max_payload, 256, 64, 4096)                 \
    X(uint32_t, read_tags, 32, 1, 1024)                     \
    X(uint32_t, tlp_overhead_bytes, 24, 0, 128)             \
    X(uint32_t, interrupt, 0, 0, 1)                         \
    X(double, poll_interval_ns, 50.0, 1, 1e6)               \
    X(double, interrupt_ns, 2000.0, 0, 1e7)                 \
    X(uint32_t, engines, 1, 1, 64)

// A CXL-NIC (a Type-1 device: the accelerator's cache with an atomic engine
// and a network port) and the host-side costs of its baselines.
#define CXL_NIC_FIELDS(X)                                   \
    X(uint32_t, ops_in_flight, 32, 1, 4096)                 \
    X(double, alu_ns, 2.0, 0, 1000)                         \
    X(uint32_t, ring_entries, 64, 1, 65536)                 \
    X(uint32_t, post_batch, 16, 1, 65536)                   \
    X(uint32_t, descriptors_per_line, 2, 1, 4)              \
    X(uint32_t, completions_per_line, 8, 1, 8)              \
    X(double, poll_ns, 20.0, 1, 1e6)                        \
    X(double, host_poll_ns, 50.0, 1, 1e6)                   \
    X(uint32_t, network, 0, 0, 1)                           \
    X(double, wire_gbps, 12.5, 0.01, 10000)                 \
    X(double, wire_latency_ns, 500.0, 0, 1e7)               \
    X(uint32_t, op_bytes, 64, 1, 65536)                     \
    X(uint32_t, result_bytes, 64, 1, 65536)                 \
    X(double, host_atomic_ns, 7.0, 0, 10000)                \
    X(double, host_transfer_ns, 60.0, 0, 10000)             \
    X(double, rpc_field_ns, 1.0, 0, 10000)                  \
    X(double, rpc_gbps, 32.0, 0.01, 10000)                  \
    X(double, host_field_ns, 8.0, 0, 10000)                 \
    X(double, host_copy_gbps, 8.0, 0.01, 10000)             \
    X(uint32_t, host_outstanding, 10, 1, 1024)

#define CXL_DECLARE_FIELD(type, name, def, lo, hi) type name = def;

struct HostParams { CXL_HOST_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DramParams { CXL_DRAM_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct InterSocketParams { CXL_INTERSOCKET_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct BridgeParams { CXL_BRIDGE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct LinkParams { CXL_LINK_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DeviceParams { CXL_DEVICE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DCacheParams { CXL_DCACHE_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct HomeParams { CXL_HOME_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct AccelParams { CXL_ACCEL_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct DmaParams { CXL_DMA_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };
struct NicParams { CXL_NIC_FIELDS(CXL_DECLARE_FIELD) void validate(const std::string& where) const; };

enum class MemoryKind : uint8_t { LocalDram = 0, RemoteNuma = 1, CxlType3 = 2 };

// One window of the host physical address map, [base, base + size), and the
// memory behind it: the host's local DRAM (SystemParams::local_dram, where the
// page tables live too), the remote socket, or a CXL host bridge with its root
// ports, links and Type-3 devices (a CFMWS window decoded by an HDM decoder).
// size 0 is the window of a description without a map: the rest of the address
// space, checked by the memory itself as before.
// The memory part: which groups a kind uses (remote: intersocket and
// remote_dram; CXL: bridge, link, device and device_dram).
// One root port's link and Type-3 device, where the ports of a host bridge differ.
struct RootPortParams {
    LinkParams link;
    DeviceParams device;
    DramParams device_dram;
};

struct MemoryParams {
    InterSocketParams intersocket;
    DramParams remote_dram;
    BridgeParams bridge;
    LinkParams link;
    DeviceParams device;
    DramParams device_dram;
    // Empty: every root port has link, device and device_dram; else one entry per root port.
    std::vector<RootPortParams> ports;
    const LinkParams& portLink(uint32_t i) const { return ports.empty() ? link : ports[i].link; }
    const DeviceParams& portDevice(uint32_t i) const { return ports.empty() ? device : ports[i].device; }
    const DramParams& portMedia(uint32_t i) const { return ports.empty() ? device_dram : ports[i].device_dram; }
};

struct WindowParams : MemoryParams {
    std::string name;
    MemoryKind kind = MemoryKind::LocalDram;
    uint64_t base = 0, size = 0;
    uint64_t end() const { return size ? base + size : ~0ull; }
};

// The largest physical address space a host decodes (52 bits, as CXL's HDM decoders).
constexpr uint64_t kPhysAddrBits = 52;
// Where Type-2 device memory is placed by default: above all host memory.
constexpr uint64_t kDevMemBase = 1ull << 44;

// A CXL.cache accelerator (Type-1; Type-2 in host or device bias, or HDM-DB)
// on a root port and link of its own, with its cache, DMA engine and (Type-2)
// memory media; accel.devices identical copies of it are built, one after another.
struct AccelDeviceParams {
    std::string name;  // prefix of its parameters' names ("": none, a single-device system)
    LinkParams link;
    DCacheParams cache;
    AccelParams accel;
    DmaParams dma;
    DramParams media;
    std::string prefix() const { return name.empty() ? "" : name + "."; }
    // The name of its copy k (system-wide index `index`) in messages and reports.
    std::string instance(uint32_t k, uint32_t index) const;
};

// A host, its memories and its devices: the windows of the host physical
// address map (without `windows`, the one memory of `kind` in the inherited
// groups: a single-memory system), and the CXL.cache accelerators beside them,
// coherent through the host's home agent.
struct SystemParams : MemoryParams {
    MemoryKind kind = MemoryKind::LocalDram;
    HostParams host;
    DramParams local_dram;
    // How messages name the local DRAM's group (an accelerator preset calls it host_dram).
    std::string local_dram_name = "local_dram";
    HomeParams home;
    std::vector<AccelDeviceParams> accelerators;
    uint64_t seed = 1;
    // Fault injection for the watchdog's tests, never set by a preset: the
    // Type-3 device sends no response after this many (0: off).
    uint64_t fault_device_stops_after = 0;
    // The host physical address map. Empty: one window, of `kind` and the groups
    // above, named and reported as a single-memory system always was.
    std::vector<WindowParams> windows;
    // The map the system is built from: `windows`, or that one window.
    std::vector<WindowParams> addressMap() const;
    // Accelerators in all (accel.devices summed over the descriptions).
    uint32_t accelInstances() const;
    // Where each Type-2 description's memory lies, [base, base + memory_bytes
    // x accel.devices): at accel.memory_base, or (0) after the previous
    // description's, from kDevMemBase. 0 for Type-1.
    std::vector<uint64_t> accelMemoryBases() const;
    void validate() const;

  private:
    void validateAccelerators() const;
};

// Schema introspection for the bindings and the sync test.
struct FieldInfo {
    std::string name;
    bool integer;
    double def, lo, hi;
};
const std::vector<std::pair<std::string, std::vector<FieldInfo>>>& schema();

// Formats a number the way the error messages quote it.
std::string fmtNum(double v);

}  // namespace cxlcore
