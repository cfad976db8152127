#include "cxlcore/system/system.hpp"

#include <algorithm>

namespace cxlcore {

System::System(const SystemParams& p) : p_(p), mapped_(!p.windows.empty()) {
    p_.validate();
    const std::vector<WindowParams> map = p_.addressMap();
    // The host's DRAM is named after the window that maps it, if any.
    localName_ = "local_dram";
    if (mapped_)
        for (const WindowParams& w : map)
            if (w.kind == MemoryKind::LocalDram) localName_ = w.name;
    localDram = std::make_unique<DramController>(loop, p_.local_dram, localName_);
    windows.resize(map.size());
    uint32_t cxlWindows = 0;
    for (size_t k = 0; k < map.size(); ++k) {
        MemoryWindow& w = windows[k];
        w.p = map[k];
        const std::string& n = w.p.name;
        if (w.p.kind == MemoryKind::LocalDram) {
            w.target = localDram.get();
        } else if (w.p.kind == MemoryKind::RemoteNuma) {
            w.remote = std::make_unique<InterSocket>(loop, w.p.intersocket, w.p.remote_dram);
            w.target = w.remote.get();
        } else {
            // A map window decodes [base, base + size); the one window of a
            // single-memory system the whole 52-bit space, as it always did.
            w.bridge = w.p.size ? std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge", w.p.base, w.p.size)
                                : std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge");
            const uint32_t ports = w.p.bridge.root_ports;
            for (uint32_t i = 0; i < ports; ++i) {
                // The first CXL window keeps the seeds a single-memory system has.
                const uint64_t seed = p_.seed + 17 * i + 1000003ull * cxlWindows;
                w.links.push_back(std::make_unique<CxlLink>(w.p.link, n + ".link", seed));
                w.devices.push_back(std::make_unique<Type3Device>(loop, w.p.device, w.p.device_dram, *w.links.back(), n));
                // Single-memory systems keep their names (cxl, or cxl0, cxl1, ...).
                w.deviceNames.push_back(ports == 1 ? n : mapped_ ? n + ".dev" + std::to_string(i) : n + std::to_string(i));
                if (ports > 1) w.devices.back()->name(w.deviceNames.back());
                w.devices.back()->stopAfter(p_.fault_device_stops_after);
                w.bridge->addPort(w.links.back().get(), w.devices.back().get());
            }
            w.target = w.bridge.get();
            ++cxlWindows;
        }
    }
    uncore_ = std::make_unique<Uncore>(loop, p_.host);
    for (MemoryWindow& w : windows) {
        // DRAM behind the window sees offsets into it; a host bridge decodes host addresses.
        const bool rebase = w.p.kind != MemoryKind::CxlType3;
        uncore_->addWindow(w.p.name, mapped_ ? w.p.name : "memory", w.p.base, w.p.end(), w.target, rebase);
        w.target->setRequester(uncore_.get());
    }
    uncore_->setPageTables(localDram.get());
    localDram->setRequester(uncore_.get());
}

int System::windowIndex(const std::string& name) const {
    for (size_t i = 0; i < windows.size(); ++i)
        if (windows[i].p.name == name) return int(i);
    return -1;
}

void System::run() {
    loop.watch(&watchdog_);
    loop.run();
    if (!loop.stopped()) watchdog_.drained(loop.now());
}

double System::mediaPeakBytesPerSec(const std::vector<uint32_t>& which) const {
    double s = 0;
    for (size_t i = 0; i < windows.size(); ++i) {
        if (!which.empty() && std::find(which.begin(), which.end(), uint32_t(i)) == which.end()) continue;
        const MemoryWindow& w = windows[i];
        if (w.remote) s += w.remote->dram().peakBytesPerSec();
        else if (w.bridge)
            for (auto& d : w.devices) s += d->media().peakBytesPerSec();
        else s += localDram->peakBytesPerSec();
    }
    return s;
}

void System::resetStats() {
    const Tick t = loop.now();
    localDram->resetStats(t);
    for (MemoryWindow& w : windows) {
        if (w.remote) {
            w.remote->dram().resetStats(t);
            w.remote->out_.resetStats();
            w.remote->back_.resetStats();
        }
        if (w.bridge) w.bridge->resetStats();
        for (auto& l : w.links) {
            l->m2s_.resetStats();
            l->s2m_.resetStats();
        }
        for (auto& d : w.devices) d->resetStats(t);
    }
    uncore_->resetStats();
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
    r.emplace_back(k + ".refreshes_postponed", double(st.refreshesPostponed));
    r.emplace_back(k + ".turnarounds", double(st.turnarounds));
    r.emplace_back(k + ".rank_switches", double(st.rankSwitches));
    r.emplace_back(k + ".write_bursts", double(st.writeBursts));
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
    dramReport(r, localName_, *localDram, s, e);
    for (const MemoryWindow& w : windows) {
        if (w.remote) {
            const std::string k = w.p.name;
            dramReport(r, k + ".dram", w.remote->dram(), s, e);
            channelReport(r, k + ".link.out", w.remote->out_, w.remote->bytesPerSec(), s, e);
            channelReport(r, k + ".link.back", w.remote->back_, w.remote->bytesPerSec(), s, e);
        }
        for (size_t i = 0; i < w.devices.size(); ++i) {
            const std::string& k = w.deviceNames[i];
            const CxlLink& l = *w.links[i];
            channelReport(r, k + ".link.m2s", l.m2s_, l.rawBytesPerSec(), s, e);
            channelReport(r, k + ".link.s2m", l.s2m_, l.rawBytesPerSec(), s, e);
            dramReport(r, k + ".media", w.devices[i]->media(), s, e);
            const DeviceStats& ds = w.devices[i]->stats();
            r.emplace_back(k + ".device.mean_occupancy", w.devices[i]->meanOccupancy(s, e));
            const char* names[4] = {"light", "optimal", "moderate", "severe"};
            for (int j = 0; j < 4; ++j) r.emplace_back(k + ".device.devload_" + names[j], double(ds.devLoad[j]));
            r.emplace_back(k + ".device.media_retries", double(ds.mediaRetries));
        }
        if (w.bridge) r.emplace_back(w.p.name + ".bridge.refused", double(w.bridge->stats().refused));
    }
    if (!mapped_) return;
    // What the address map sent to each window: data requests, not page walks.
    const double secs = double(e - s) * 1e-12;
    for (size_t i = 0; i < windows.size(); ++i) {
        const WindowStats& st = uncore_->windowStats()[i];
        const std::string k = "window." + windows[i].p.name;
        r.emplace_back(k + ".read_gbps", secs > 0 ? st.reads * double(kLineBytes) / secs / 1e9 : 0);
        r.emplace_back(k + ".write_gbps", secs > 0 ? st.writes * double(kLineBytes) / secs / 1e9 : 0);
        r.emplace_back(k + ".requests", double(st.reads + st.writes));
    }
}

}  // namespace cxlcore
