#include "cxlcore/config/params.hpp"

#include <sstream>

#include <algorithm>
#include <type_traits>

namespace cxlcore {

std::string fmtNum(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream os;
    if (v == std::floor(v) && std::fabs(v) < 9.2e18)
        os << static_cast<long long>(v);
    else if (v != 0 && std::fabs(v) < 1e-3)
        os << v;
    else if (v == std::floor(v))
        os << static_cast<long long>(v);
    else
        os << v;
    return os.str();
}

namespace {

void checkRange(const std::string& where, const char* name, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))  // also rejects NaN
        throw ConfigError(where + "." + name + " = " + fmtNum(v) + " is out of range; allowed: " +
                          fmtNum(lo) + " to " + fmtNum(hi));
}

void checkChoice(const std::string& where, const char* name, double v, std::vector<double> ok) {
    if (std::find(ok.begin(), ok.end(), v) != ok.end()) return;
    std::string list;
    for (double o : ok) list += (list.empty() ? "" : ", ") + fmtNum(o);
    throw ConfigError(where + "." + name + " = " + fmtNum(v) + " is not allowed; allowed values: " + list);
}

void require(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

bool pow2(uint64_t v) { return v && !(v & (v - 1)); }

#define CXL_CHECK_FIELD(type, name, def, lo, hi) \
    checkRange(where, #name, static_cast<double>(name), lo, hi);
// The generated lists of allowed values (CXL_*_CHOICES), checked after all of a
// group's ranges: a value out of range is reported as out of range.
#define CXL_CHECK_CHOICE(name, ...) checkChoice(where, #name, name, {__VA_ARGS__});

void checkCache(const std::string& where, const char* what, uint64_t bytes, uint32_t assoc) {
    require(bytes % (uint64_t(kLineBytes) * assoc) == 0,
            where + "." + what + "_bytes = " + fmtNum(double(bytes)) + " must be a multiple of 64 x " +
                where + "." + what + "_assoc (" + fmtNum(assoc) + ")");
}

}  // namespace

void HostParams::validate(const std::string& where) const {
    CXL_HOST_FIELDS(CXL_CHECK_FIELD)
    CXL_HOST_CHOICES(CXL_CHECK_CHOICE)
    checkCache(where, "l1", l1_bytes, l1_assoc);
    checkCache(where, "l2", l2_bytes, l2_assoc);
    checkCache(where, "llc", llc_bytes, llc_assoc);
    require(pow2(page_bytes), where + ".page_bytes = " + fmtNum(double(page_bytes)) +
                                  " is not allowed; allowed values: a power of two from 4096 to 1073741824");
    require(dtlb_entries % dtlb_assoc == 0,
            where + ".dtlb_entries = " + fmtNum(dtlb_entries) + " must be a multiple of dtlb_assoc");
    require(stlb_entries % stlb_assoc == 0,
            where + ".stlb_entries = " + fmtNum(stlb_entries) + " must be a multiple of stlb_assoc");
}

void DramParams::validate(const std::string& where) const {
    CXL_DRAM_FIELDS(CXL_CHECK_FIELD)
    CXL_DRAM_CHOICES(CXL_CHECK_CHOICE)
    require(bus_bytes * burst_length == kLineBytes,
            where + ".bus_bytes x burst_length = " + fmtNum(bus_bytes * burst_length) +
                " is not allowed; allowed: 64 (one cache line per burst)");
    require(pow2(interleave_bytes), where + ".interleave_bytes = " + fmtNum(interleave_bytes) +
                                        " is not allowed; allowed values: a power of two from 64 to 65536");
    require(pow2(row_bytes) && row_bytes >= interleave_bytes,
            where + ".row_bytes = " + fmtNum(row_bytes) +
                " is not allowed; allowed: a power of two, at least interleave_bytes");
    require(write_low_watermark < write_high_watermark,
            where + ".write_low_watermark = " + fmtNum(write_low_watermark) +
                " is not allowed; allowed: below write_high_watermark (" + fmtNum(write_high_watermark) + ")");
    require(max_writes_per_switch == 0 || max_writes_per_switch >= min_writes_per_switch,
            where + ".max_writes_per_switch = " + fmtNum(max_writes_per_switch) +
                " is not allowed; allowed: 0 (no limit) or at least min_writes_per_switch (" +
                fmtNum(min_writes_per_switch) + ")");
    require(page_timeout_max_ns >= page_timeout_ns, where + ".page_timeout_max_ns = " + fmtNum(page_timeout_max_ns) +
                                                        " is not allowed; allowed: at least page_timeout_ns (" +
                                                        fmtNum(page_timeout_ns) + ") up to 100000");
    require(tREFI_ns == 0 || tREFI_ns > tRFC_ns,
            where + ".tREFI_ns = " + fmtNum(tREFI_ns) + " is not allowed; allowed: 0 (no refresh) or above tRFC_ns");
    require(!refresh_per_bank || tREFI_ns == 0 || tREFI_ns > 2 * tRFCsb_ns * banks_per_group,
            where + ".tREFI_ns = " + fmtNum(tREFI_ns) +
                " is not allowed with refresh_per_bank = 1; allowed: 0 (no refresh) or above 2 x tRFCsb_ns x banks_per_group");
}

void InterSocketParams::validate(const std::string& where) const {
    CXL_INTERSOCKET_FIELDS(CXL_CHECK_FIELD)
    CXL_INTERSOCKET_CHOICES(CXL_CHECK_CHOICE)
}

void BridgeParams::validate(const std::string& where) const {
    CXL_BRIDGE_FIELDS(CXL_CHECK_FIELD)
    CXL_BRIDGE_CHOICES(CXL_CHECK_CHOICE)
    // The window interleaves over every root port: fewer ways would leave
    // ports (and their devices) that no address reaches.
    require(interleave_ways == root_ports,
            where + ".interleave_ways = " + fmtNum(interleave_ways) + " is not allowed with root_ports = " +
                fmtNum(root_ports) + "; allowed: interleave_ways equal to root_ports, one of 1, 2, 3, 4, 6, 8, 12, 16");
}

void SwitchParams::validate(const std::string& where) const {
    CXL_SWITCH_FIELDS(CXL_CHECK_FIELD)
    CXL_SWITCH_CHOICES(CXL_CHECK_CHOICE)
    require(egress_moderate <= egress_severe, where + ".egress_moderate = " + fmtNum(egress_moderate) +
                                                  " is not allowed with egress_severe = " + fmtNum(egress_severe) +
                                                  "; allowed: egress_moderate <= egress_severe");
}

void LinkParams::validate(const std::string& where) const {
    CXL_LINK_FIELDS(CXL_CHECK_FIELD)
    CXL_LINK_CHOICES(CXL_CHECK_CHOICE)
    require(!(gen == 6 && flit_bytes != 256),
            where + ".flit_bytes = 68 is not allowed with gen = 6; allowed values: 256");
    require(!(latency_optimized && flit_bytes != 256),
            where + ".latency_optimized = 1 is not allowed with flit_bytes = 68; allowed values: 0");
}

void DeviceParams::validate(const std::string& where) const {
    CXL_DEVICE_FIELDS(CXL_CHECK_FIELD)
    CXL_DEVICE_CHOICES(CXL_CHECK_CHOICE)
    require(devload_optimal <= devload_moderate && devload_moderate <= devload_severe,
            where + ".devload_* thresholds must satisfy devload_optimal <= devload_moderate <= devload_severe");
    require(snoop_filter_entries % snoop_filter_ways == 0,
            where + ".snoop_filter_entries = " + std::to_string(snoop_filter_entries) +
                " is not allowed; allowed: a multiple of snoop_filter_ways (" + std::to_string(snoop_filter_ways) + ")");
    require(!shared || logical_devices == 1, where + ".shared = 1 is not allowed with logical_devices = " +
                                                 std::to_string(logical_devices) + "; allowed values: 0");
}

void DCacheParams::validate(const std::string& where) const {
    CXL_DCACHE_FIELDS(CXL_CHECK_FIELD)
    CXL_DCACHE_CHOICES(CXL_CHECK_CHOICE)
    require(bytes % (uint64_t(kLineBytes) * assoc) == 0, where + ".bytes = " + fmtNum(double(bytes)) +
                                                             " must be a multiple of 64 x assoc (" + fmtNum(assoc) + ")");
}

void HomeParams::validate(const std::string& where) const {
    CXL_HOME_FIELDS(CXL_CHECK_FIELD)
    CXL_HOME_CHOICES(CXL_CHECK_CHOICE)
    require(host_cache_bytes % kLineBytes == 0,
            where + ".host_cache_bytes = " + fmtNum(double(host_cache_bytes)) + " must be a multiple of 64");
}

void AccelParams::validate(const std::string& where) const {
    CXL_ACCEL_FIELDS(CXL_CHECK_FIELD)
    CXL_ACCEL_CHOICES(CXL_CHECK_CHOICE)
    require(pow2(bias_page_bytes), where + ".bias_page_bytes = " + fmtNum(double(bias_page_bytes)) +
                                       " is not allowed; allowed values: a power of two from 64 to 1073741824");
    require(memory_bytes % bias_page_bytes == 0, where + ".memory_bytes = " + fmtNum(double(memory_bytes)) +
                                                     " must be a multiple of bias_page_bytes");
    require(type == 2 || !hdm_db, where + ".hdm_db = 1 is not allowed with type = 1; allowed values: 0");
    // Device memory lies above every host address (host buffers end below 16 TiB).
    require(memory_base == 0 || memory_base >= (1ull << 44),
            where + ".memory_base = " + fmtNum(double(memory_base)) +
                " is not allowed; allowed: 0 (after the previous device's memory) or 17592186044416 (16 TiB) to "
                "4503599627370496");
    require(memory_base % bias_page_bytes == 0,
            where + ".memory_base = " + fmtNum(double(memory_base)) + " must be a multiple of bias_page_bytes");
}

void DmaParams::validate(const std::string& where) const {
    CXL_DMA_FIELDS(CXL_CHECK_FIELD)
    CXL_DMA_CHOICES(CXL_CHECK_CHOICE)
}

void NicParams::validate(const std::string& where) const {
    CXL_NIC_FIELDS(CXL_CHECK_FIELD)
    CXL_NIC_CHOICES(CXL_CHECK_CHOICE)
    for (uint32_t per : {descriptors_per_line, completions_per_line})
        require(ring_entries % per == 0, where + ".ring_entries = " + fmtNum(ring_entries) +
                                             " is not allowed; allowed: a multiple of descriptors_per_line (" +
                                             fmtNum(descriptors_per_line) + ") and completions_per_line (" +
                                             fmtNum(completions_per_line) + ")");
    require(post_batch <= ring_entries, where + ".post_batch = " + fmtNum(post_batch) +
                                            " is not allowed; allowed: 1 to ring_entries (" + fmtNum(ring_entries) + ")");
}

std::vector<WindowParams> HostDesc::addressMap() const {
    if (!windows.empty()) return windows;
    WindowParams w;
    static_cast<MemoryParams&>(w) = *this;
    w.kind = kind;
    w.name = kind == MemoryKind::RemoteNuma ? "remote" : kind == MemoryKind::CxlType3 ? "cxl" : "local_dram";
    return {w};
}

namespace {
std::string hexRange(const WindowParams& w) {
    std::ostringstream os;
    os << w.name << " [0x" << std::hex << w.base << ", 0x" << w.end() << ")";
    return os.str();
}

void validateWindow(const WindowParams& w) {
    const std::string& n = w.name;
    if (w.kind == MemoryKind::RemoteNuma) {
        w.intersocket.validate(n + ".link");
        w.remote_dram.validate(n + ".dram");
    } else if (w.kind == MemoryKind::CxlType3) {
        w.bridge.validate(n + ".bridge");
    }
}
}  // namespace

std::string AccelDeviceParams::instance(uint32_t k, uint32_t index) const {
    if (name.empty()) return "accel[" + std::to_string(index) + "]";
    return accel.devices == 1 ? name : name + "[" + std::to_string(k) + "]";
}

uint32_t SystemParams::accelInstances() const {
    uint32_t n = 0;
    for (auto& d : accelerators) n += d.accel.devices;
    return n;
}

std::vector<uint64_t> SystemParams::accelMemoryBases() const {
    std::vector<uint64_t> out;
    uint64_t next = kDevMemBase;
    for (auto& d : accelerators) {
        if (d.accel.type != 2) {
            out.push_back(0);
            continue;
        }
        const uint64_t page = d.accel.bias_page_bytes;
        const uint64_t base = d.accel.memory_base ? d.accel.memory_base : (next + page - 1) / page * page;
        out.push_back(base);
        next = base + d.accel.memory_bytes * d.accel.devices;
    }
    return out;
}

void SystemParams::validateAccelerators() const {
    home.validate("home");
    for (size_t i = 0; i < accelerators.size(); ++i) {
        const AccelDeviceParams& d = accelerators[i];
        const std::string g = d.prefix();
        d.link.validate(g + "link");
        d.cache.validate(g + "cache");
        d.accel.validate(g + "accel");
        d.dma.validate(g + "dma");
        d.media.validate(g + "media");
        for (size_t j = 0; j < i; ++j)
            require(accelerators[j].name != d.name, "devices[" + std::to_string(i) + "].name = '" + d.name +
                                                        "' appears twice; allowed: a name of its own for each device");
    }
    const uint32_t n = accelInstances();
    require(n <= 16, "devices: " + std::to_string(n) +
                         " accelerators in all (accel.devices summed over the devices) is out of range; allowed: 1 "
                         "to 16");
    // Each Type-2 description's memory is a window of its own: no two overlap,
    // and none overlaps a window of the host's address map.
    const std::vector<uint64_t> base = accelMemoryBases();
    const uint64_t top = 1ull << kPhysAddrBits;
    auto hex = [](uint64_t v) {
        std::ostringstream os;
        os << "0x" << std::hex << v;
        return os.str();
    };
    for (size_t i = 0; i < accelerators.size(); ++i) {
        if (!base[i]) continue;
        const AccelParams& a = accelerators[i].accel;
        const std::string g = accelerators[i].prefix();
        const uint64_t size = a.memory_bytes * a.devices;
        require(base[i] <= top && size <= top - base[i],
                g + "accel.memory_bytes x devices = " + fmtNum(double(size)) + " at " + hex(base[i]) + " ends above " +
                    hex(top) + "; allowed: device memory below " + hex(top));
        const uint64_t end = base[i] + size;
        for (size_t j = 0; j < i; ++j) {
            if (!base[j]) continue;
            const uint64_t endj = base[j] + accelerators[j].accel.memory_bytes * accelerators[j].accel.devices;
            require(!(base[i] < endj && base[j] < end),
                    g + "accel.memory_base = " + fmtNum(double(a.memory_base)) + " is not allowed: " +
                        accelerators[i].name + "'s device memory [" + hex(base[i]) + ", " + hex(end) + ") overlaps " +
                        accelerators[j].name + "'s [" + hex(base[j]) + ", " + hex(endj) +
                        "); allowed: windows that do not overlap");
        }
        for (const WindowParams& w : windows)
            require(!(base[i] < w.end() && w.base < end),
                    g + "accel.memory_base = " + fmtNum(double(a.memory_base)) + " is not allowed: the device memory [" +
                        hex(base[i]) + ", " + hex(end) + ") overlaps window " + hexRange(w) +
                        " of the address map; allowed: device memory outside every window");
    }
}

void SystemParams::validate() const {
    HostDesc::validate();
    if (!accelerators.empty()) validateAccelerators();
    for (const HostDesc& h : peers) h.validate();
}

void HostDesc::validate() const {
    host.validate(name);
    if (!peer_accelerators.empty()) {
        peer_home.validate(peer_home_node);
        require(peer_accelerators.size() <= 16, peer_home_node + ".root_port: " +
                                                    std::to_string(peer_accelerators.size()) +
                                                    " accelerators; allowed: up to 16 per host");
        for (const AccelDeviceParams& d : peer_accelerators) {
            d.link.validate(d.linkNode);
            d.cache.validate(d.node + ".cache");
            d.accel.validate(d.node + ".accel");
            d.dma.validate(d.node + ".dma");
            d.media.validate(d.node + ".media");
            require(d.accel.devices == 1, d.node + ".accel.devices = " + std::to_string(d.accel.devices) +
                                              " is not allowed below " + name +
                                              "; allowed: 1 (one component per device below a host after the first)");
            require(d.accel.type == 1, d.node + ".accel.type = " + std::to_string(d.accel.type) +
                                           " is not allowed below " + name +
                                           "; allowed: 1 (Type-2 device memory is modelled below the first host only)");
        }
    }
    local_dram.validate(local_dram_name);
    if (windows.empty()) {
        validateWindow(addressMap()[0]);
        return;
    }
    const uint64_t space = 1ull << kPhysAddrBits;
    uint32_t locals = 0;
    for (size_t i = 0; i < windows.size(); ++i) {
        const WindowParams& w = windows[i];
        const std::string at = "map[" + std::to_string(i) + "]";
        require(!w.name.empty() && w.name.find_first_of(". =+:,") == std::string::npos,
                at + ".name = '" + w.name + "' is not allowed; allowed: a non-empty name without . = + : , or spaces");
        require(w.size > 0 && w.base < space && w.size <= space - w.base,
                w.name + ".size = " + fmtNum(double(w.size)) + " with base " + fmtNum(double(w.base)) +
                    " is not allowed; allowed: a non-empty window within the 52-bit physical address space");
        require(w.base % kLineBytes == 0 && w.size % kLineBytes == 0,
                w.name + ".base and .size must be multiples of 64 bytes");
        locals += w.kind == MemoryKind::LocalDram;
        require(locals <= 1, w.name + ".kind = local-dram is not allowed: the host has one local DRAM "
                                      "(local_dram), which one window maps; allowed: one local-dram window");
        for (size_t j = 0; j < i; ++j) {
            require(windows[j].name != w.name, at + ".name = '" + w.name + "' names two windows; allowed: unique names");
            require(w.base >= windows[j].end() || windows[j].base >= w.end(),
                    "windows " + hexRange(windows[j]) + " and " + hexRange(w) +
                        " overlap; allowed: windows that share no address");
        }
        require(w.kind != MemoryKind::CxlType3 || w.base % w.bridge.interleave_bytes == 0,
                w.name + ".base = " + fmtNum(double(w.base)) + " is not allowed; allowed: a multiple of " + w.name +
                    ".bridge.interleave_bytes (" + fmtNum(w.bridge.interleave_bytes) + ")");
        validateWindow(w);
    }
}

#define CXL_FIELD_INFO(type, name, def, lo, hi) \
    v.push_back(FieldInfo{#name, std::is_integral<type>::value, double(def), double(lo), double(hi)});

// Every group of the generated list, in its order.
#define CXL_GROUP_INFO(Struct, LIST) \
    LIST(CXL_FIELD_INFO) out.emplace_back(#Struct, v); v.clear();

const std::vector<std::pair<std::string, std::vector<FieldInfo>>>& schema() {
    static const auto s = [] {
        std::vector<std::pair<std::string, std::vector<FieldInfo>>> out;
        std::vector<FieldInfo> v;
        CXL_PARAM_GROUPS(CXL_GROUP_INFO)
        return out;
    }();
    return s;
}

}  // namespace cxlcore
