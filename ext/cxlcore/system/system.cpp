#include "cxlcore/system/system.hpp"

namespace cxlcore {

System::System(const SystemParams& p) : p_(p) {
    p_.validate();
    localDram = std::make_unique<DramController>(loop, p_.local_dram, "local_dram");
    Target* memory = localDram.get();
    if (p_.kind == MemoryKind::RemoteNuma) {
        remote = std::make_unique<InterSocket>(loop, p_.intersocket, p_.remote_dram);
        memory = remote.get();
    } else if (p_.kind == MemoryKind::CxlType3) {
        bridge = std::make_unique<HostBridge>(loop, p_.bridge, "cxl.bridge");
        for (uint32_t i = 0; i < p_.bridge.root_ports; ++i) {
            links.push_back(std::make_unique<CxlLink>(p_.link, "cxl.link", p_.seed + 17 * i));
            devices.push_back(std::make_unique<Type3Device>(loop, p_.device, p_.device_dram, *links.back(), "cxl"));
            // Named as the report names them.
            if (p_.bridge.root_ports > 1) devices.back()->name("cxl" + std::to_string(i));
            devices.back()->stopAfter(p_.fault_device_stops_after);
            bridge->addPort(links.back().get(), devices.back().get());
        }
        memory = bridge.get();
    }
    uncore_ = std::make_unique<Uncore>(loop, p_.host, memory, localDram.get());
    localDram->setRequester(uncore_.get());
    memory->setRequester(uncore_.get());
}

void System::run() {
    loop.watch(&watchdog_);
    loop.run();
    if (!loop.stopped()) watchdog_.drained(loop.now());
}

double System::mediaPeakBytesPerSec() const {
    switch (p_.kind) {
        case MemoryKind::RemoteNuma: return remote->dram().peakBytesPerSec();
        case MemoryKind::CxlType3: {
            double s = 0;
            for (auto& d : devices) s += d->media().peakBytesPerSec();
            return s;
        }
        default: return localDram->peakBytesPerSec();
    }
}

void System::resetStats() {
    const Tick t = loop.now();
    localDram->resetStats(t);
    if (remote) {
        remote->dram().resetStats(t);
        remote->out_.resetStats();
        remote->back_.resetStats();
    }
    if (bridge) bridge->resetStats();
    for (auto& l : links) {
        l->m2s_.resetStats();
        l->s2m_.resetStats();
    }
    for (auto& d : devices) d->resetStats(t);
}

namespace {
void dramReport(Report& r, const std::string& k, const DramController& d, Tick s, Tick e) {
    const DramStats& st = d.stats();
    const double secs = double(e - s) * 1e-12;
    const double acc = double(st.reads + st.writes);
    r.emplace_back(k + ".read_gbps", secs > 0 ? st.reads * 64.0 / secs / 1e9 : 0);
    r.emplace_back(k + ".write_gbps", secs > 0 ? st.writes * 64.0 / secs / 1e9 : 0);
    r.emplace_back(k + ".peak_gbps", d.peakBytesPerSec() / 1e9);
    r.emplace_back(k + ".bus_utilization",
                   e > s ? double(st.busBusy) / double(e - s) / d.params().channels : 0);
    r.emplace_back(k + ".row_hit_rate", acc > 0 ? st.rowHits / acc : 0);
    r.emplace_back(k + ".row_conflict_rate", acc > 0 ? st.rowConflicts / acc : 0);
    r.emplace_back(k + ".refreshes", double(st.refreshes));
    r.emplace_back(k + ".turnarounds", double(st.turnarounds));
    r.emplace_back(k + ".mean_read_queue", d.meanReadQueue(s, e));
    r.emplace_back(k + ".retries", double(st.readRetries + st.writeRetries));
}

void channelReport(Report& r, const std::string& k, const FlitChannel& c, double rawBytesPerSec, Tick s, Tick e) {
    const ChannelStats& st = c.stats();
    const double secs = double(e - s) * 1e-12;
    r.emplace_back(k + ".data_gbps", secs > 0 ? st.dataBytes / secs / 1e9 : 0);
    r.emplace_back(k + ".raw_gbps", rawBytesPerSec / 1e9);
    r.emplace_back(k + ".utilization", e > s ? std::min(1.0, double(c.busy()) / double(e - s)) : 0);
    r.emplace_back(k + ".flits", double(st.flits));
    r.emplace_back(k + ".messages", double(st.messages));
    r.emplace_back(k + ".slot_fill",
                   st.flits ? double(st.units) / (double(st.flits) * c.unitsPerFlit()) : 0);
    r.emplace_back(k + ".crc_errors", double(st.crcErrors));
    r.emplace_back(k + ".replayed_flits", double(st.replayedFlits));
}
}  // namespace

void System::report(Report& r, Tick s, Tick e) const {
    dramReport(r, "local_dram", *localDram, s, e);
    if (remote) {
        dramReport(r, "remote.dram", remote->dram(), s, e);
        channelReport(r, "remote.link.out", remote->out_, remote->bytesPerSec(), s, e);
        channelReport(r, "remote.link.back", remote->back_, remote->bytesPerSec(), s, e);
    }
    for (size_t i = 0; i < devices.size(); ++i) {
        const std::string k = devices.size() == 1 ? "cxl" : "cxl" + std::to_string(i);
        channelReport(r, k + ".link.m2s", links[i]->m2s_, links[i]->rawBytesPerSec(), s, e);
        channelReport(r, k + ".link.s2m", links[i]->s2m_, links[i]->rawBytesPerSec(), s, e);
        dramReport(r, k + ".media", devices[i]->media(), s, e);
        const DeviceStats& ds = devices[i]->stats();
        r.emplace_back(k + ".device.mean_occupancy", devices[i]->meanOccupancy(s, e));
        const char* names[4] = {"light", "optimal", "moderate", "severe"};
        for (int j = 0; j < 4; ++j) r.emplace_back(k + ".device.devload_" + names[j], double(ds.devLoad[j]));
        r.emplace_back(k + ".device.media_retries", double(ds.mediaRetries));
    }
    if (bridge) r.emplace_back("cxl.bridge.refused", double(bridge->stats().refused));
}

}  // namespace cxlcore
