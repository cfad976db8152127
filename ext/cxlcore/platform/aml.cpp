#include "cxlcore/platform/aml.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "cxlcore/config/params.hpp"

namespace cxlcore {
namespace acpi {

namespace {

using Code = std::vector<uint8_t>;

[[noreturn]] void bad(const std::string& what) { throw ConfigError(what); }

std::string hex(uint64_t v) {
    char s[24];
    std::snprintf(s, sizeof s, "%#llx", static_cast<unsigned long long>(v));
    return s;
}

void put(Code& o, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) o.push_back(uint8_t(v >> (8 * i)));
}

Code cat(std::initializer_list<Code> parts) {
    Code o;
    for (const Code& p : parts) o.insert(o.end(), p.begin(), p.end());
    return o;
}

// PkgLength (ACPI 6.5 section 20.2.4): the length of what follows, itself
// included, in one byte below 64 or in a lead byte (count in bits 7-6, low
// nibble) and up to three more.
Code withLength(const Code& rest) {
    Code o;
    const size_t n = rest.size();
    if (n + 1 < 64) {
        o.push_back(uint8_t(n + 1));
    } else {
        int k = 1;
        while (k <= 3 && n + 1 + k >= (size_t(1) << (4 + 8 * k))) ++k;
        if (k > 3) bad("dsdt: an AML object of " + std::to_string(n) + " bytes is too long for a PkgLength");
        const size_t total = n + 1 + k;
        o.push_back(uint8_t((k << 6) | (total & 0xF)));
        for (int i = 0; i < k; ++i) o.push_back(uint8_t(total >> (4 + 8 * i)));
    }
    o.insert(o.end(), rest.begin(), rest.end());
    return o;
}

Code seg(const std::string& s) { return Code(s.begin(), s.end()); }  // a 4-character NameSeg

Code integer(uint64_t v) {
    if (v == 0) return {0x00};  // ZeroOp
    if (v == 1) return {0x01};  // OneOp
    const int bytes = v <= 0xFF ? 1 : v <= 0xFFFF ? 2 : v <= 0xFFFFFFFFull ? 4 : 8;
    Code o{uint8_t(bytes == 1 ? 0x0A : bytes == 2 ? 0x0B : bytes == 4 ? 0x0C : 0x0E)};
    put(o, v, bytes);
    return o;
}

Code string(const std::string& s) {
    // Byte by byte: GCC 12 at gem5's -O3 flags a range insert from an empty string (stringop-overread).
    Code o{0x0D};
    for (char c : s) o.push_back(uint8_t(c));
    o.push_back(0);
    return o;
}

// A compressed EISA ID ("PNP0A08"): three letters in 5 bits each, then four
// hex digits, as a DWord whose bytes read in that order.
Code eisaId(const std::string& id) {
    const uint32_t vendor = ((id[0] - 0x40) & 0x1F) << 10 | ((id[1] - 0x40) & 0x1F) << 5 | ((id[2] - 0x40) & 0x1F);
    const uint32_t product = uint32_t(std::stoul(id.substr(3), nullptr, 16));
    const uint32_t v = (vendor >> 8) | (vendor & 0xFF) << 8 | (product >> 8) << 16 | (product & 0xFF) << 24;
    Code o{0x0C};
    put(o, v, 4);
    return o;
}

Code name(const std::string& s, const Code& value) { return cat({{0x08}, seg(s), value}); }

Code package(std::initializer_list<Code> elements) {
    Code body{uint8_t(elements.size())};
    for (const Code& e : elements) body.insert(body.end(), e.begin(), e.end());
    return cat({{0x12}, withLength(body)});
}

Code packageOf(const std::vector<Code>& elements) {
    Code body{uint8_t(elements.size())};
    for (const Code& e : elements) body.insert(body.end(), e.begin(), e.end());
    return cat({{0x12}, withLength(body)});
}

Code buffer(const Code& bytes) { return cat({{0x11}, withLength(cat({integer(bytes.size()), bytes}))}); }

// ToUUID (ACPI 6.5 section 19.6.142): "aabbccdd-eeff-gghh-iijj-kkllmmnnoopp"
// is the bytes dd cc bb aa ff ee hh gg ii jj kk ll mm nn oo pp.
Code uuid(const std::string& text) {
    std::string h;
    for (char c : text)
        if (c != '-') h.push_back(c);
    Code b;
    for (size_t i = 0; i + 1 < h.size(); i += 2) b.push_back(uint8_t(std::stoul(h.substr(i, 2), nullptr, 16)));
    return buffer({b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                   b[15]});
}

// Statements (ACPI 6.5 section 20.2.5): Method with its argument count
// (not serialized, sync level 0), If, LEqual, ArgN and Return.
Code method(const std::string& s, int args, const Code& body) {
    return cat({{0x14}, withLength(cat({seg(s), {uint8_t(args & 7)}, body}))});
}
Code ifThen(const Code& predicate, const Code& body) { return cat({{0xA0}, withLength(cat({predicate, body}))}); }
Code lEqual(const Code& a, const Code& b) { return cat({{0x93}, a, b}); }
Code arg(int n) { return {uint8_t(0x68 + n)}; }
Code ret(const Code& value) { return cat({{0xA4}, value}); }

// The QTG _DSM (see QtgDsm): Arg0 the UUID, Arg1 the revision, Arg2 the
// function, Arg3 the performance asked about (which one answer suits here).
Code qtgDsm(const QtgDsm& q) {
    if (q.ids.size() > 255) bad("dsdt.qtg_ids has " + std::to_string(q.ids.size()) + " entries; allowed: at most 255");
    std::vector<Code> ids;
    for (size_t i = 0; i < q.ids.size(); ++i) {
        if (q.ids[i] > q.maxId)
            bad("dsdt.qtg_ids[" + std::to_string(i) + "] = " + std::to_string(q.ids[i]) +
                " is not allowed; allowed: 0 to qtg_max (" + std::to_string(q.maxId) + ")");
        ids.push_back(integer(q.ids[i]));
    }
    const Code functions = cat({ifThen(lEqual(arg(2), integer(0)), ret(buffer({0x03}))),  // functions 0 and 1
                                ifThen(lEqual(arg(2), integer(1)),
                                       ret(packageOf({integer(q.maxId), packageOf(ids)})))});
    return method("_DSM", 4, cat({ifThen(lEqual(arg(0), uuid("f365f9a6-a7de-4071-a66a-b40c0b4f8e52")), functions),
                                  ret(buffer({0x00}))}));
}

Code device(const std::string& s, const Code& body) { return cat({{0x5B, 0x82}, withLength(cat({seg(s), body}))}); }

// A ResourceTemplate: the descriptors and an End Tag, as a Buffer.
Code resources(const Code& descriptors) {
    return buffer(cat({descriptors, {0x79, 0x00}}));
}

// Address space descriptors (ACPI 6.5 section 6.4.3.5): general flags are
// MinFixed and MaxFixed, positive decode, bit 0 set for a consumer.
Code wordBusNumber(uint16_t first, uint16_t last) {
    Code o{0x88, 0x0D, 0x00, 0x02, 0x0C, 0x00};
    for (uint64_t v : {uint64_t(0), uint64_t(first), uint64_t(last), uint64_t(0), uint64_t(last - first + 1)}) put(o, v, 2);
    return o;
}

Code qwordMemory(bool consumer, uint64_t base, uint64_t size) {
    // Type-specific flags 0x01: read-write, non-cacheable, address range memory.
    Code o{0x8A, 0x2B, 0x00, 0x00, uint8_t(consumer ? 0x0D : 0x0C), 0x01};
    for (uint64_t v : {uint64_t(0), base, base + size - 1, uint64_t(0), size}) put(o, v, 8);
    return o;
}

constexpr uint64_t kMiB = 1ull << 20, kAddressLimit = 1ull << 52;

// Where a range's configuration space lies: [start, end).
uint64_t ecamStart(const EcamRange& e) { return e.base + uint64_t(e.firstBus) * kMiB; }
uint64_t ecamEnd(const EcamRange& e) { return e.base + (uint64_t(e.lastBus) + 1) * kMiB; }

void checkEcam(const std::vector<EcamRange>& ecam) {
    for (size_t i = 0; i < ecam.size(); ++i) {
        const EcamRange& e = ecam[i];
        const std::string at = "ecam[" + std::to_string(i) + "]";
        if (e.base % kMiB) bad(at + ".base = " + hex(e.base) + " is not allowed; allowed: a multiple of 1 MiB");
        if (e.firstBus > e.lastBus)
            bad(at + ".first_bus = " + std::to_string(e.firstBus) + " is not allowed; allowed: 0 to last_bus (" +
                std::to_string(e.lastBus) + ")");
        if (e.base >= kAddressLimit || ecamEnd(e) > kAddressLimit)
            bad(at + ".base = " + hex(e.base) + " is not allowed; allowed: its buses' configuration space below 2^52");
        for (size_t j = 0; j < i; ++j) {
            const EcamRange& f = ecam[j];
            if (f.segment == e.segment && e.firstBus <= f.lastBus && f.firstBus <= e.lastBus)
                bad(at + " covers buses of ecam[" + std::to_string(j) + "] in segment " + std::to_string(e.segment) +
                    "; allowed: each bus in one range");
            if (ecamStart(e) < ecamEnd(f) && ecamStart(f) < ecamEnd(e))
                bad(at + " overlaps ecam[" + std::to_string(j) + "] in memory; allowed: disjoint ranges");
        }
    }
}

}  // namespace

std::vector<uint8_t> mcfgBody(const std::vector<EcamRange>& ecam) {
    if (ecam.empty()) bad("mcfg: no ECAM range; allowed: at least one");
    checkEcam(ecam);
    Code o;
    put(o, 0, 8);  // reserved
    for (const EcamRange& e : ecam) {
        put(o, e.base, 8);
        put(o, e.segment, 2);
        o.push_back(e.firstBus);
        o.push_back(e.lastBus);
        put(o, 0, 4);
    }
    return o;
}

std::vector<uint8_t> dsdtBody(const std::vector<CxlRootBridge>& bridges, const std::vector<EcamRange>& ecam,
                              const QtgDsm& qtg) {
    checkEcam(ecam);
    if (bridges.size() > 256) bad("dsdt: " + std::to_string(bridges.size()) + " host bridges; allowed: at most 256");
    Code scope = device("CXLR", cat({name("_HID", string("ACPI0017")), qtgDsm(qtg)}));
    for (size_t i = 0; i < bridges.size(); ++i) {
        const CxlRootBridge& b = bridges[i];
        const std::string at = "dsdt.bridges[" + std::to_string(i) + "]";
        if (b.firstBus > b.lastBus)
            bad(at + ".first_bus = " + std::to_string(b.firstBus) + " is not allowed; allowed: 0 to last_bus (" +
                std::to_string(b.lastBus) + ")");
        if (b.mmioSize == 0 || b.mmioBase >= kAddressLimit || b.mmioSize > kAddressLimit - b.mmioBase)
            bad(at + ".mmio = [" + hex(b.mmioBase) + ", +" + hex(b.mmioSize) +
                ") is not allowed; allowed: a non-empty window below 2^52");
        // Linux reaches a CXL function's DVSECs (offset 0x100 on) only through ECAM.
        const bool reachable = std::any_of(ecam.begin(), ecam.end(), [&](const EcamRange& e) {
            return e.segment == b.segment && e.firstBus <= b.firstBus && b.lastBus <= e.lastBus;
        });
        if (!reachable)
            bad(at + " (UID " + std::to_string(b.uid) + ") has buses " + std::to_string(b.firstBus) + "-" +
                std::to_string(b.lastBus) + " of segment " + std::to_string(b.segment) +
                " that no ECAM range covers; allowed: buses inside one ecam range");
        for (size_t j = 0; j < i; ++j) {
            const CxlRootBridge& c = bridges[j];
            const std::string other = "dsdt.bridges[" + std::to_string(j) + "]";
            if (c.uid == b.uid) bad(at + ".uid = " + std::to_string(b.uid) + " is also " + other + "'s; allowed: one each");
            if (c.segment == b.segment && b.firstBus <= c.lastBus && c.firstBus <= b.lastBus)
                bad(at + " shares buses with " + other + "; allowed: disjoint bus ranges");
            if (b.mmioBase < c.mmioBase + c.mmioSize && c.mmioBase < b.mmioBase + b.mmioSize)
                bad(at + ".mmio overlaps " + other + ".mmio; allowed: disjoint windows");
        }
        char nm[5];
        std::snprintf(nm, sizeof nm, "HB%02X", unsigned(i));
        const Code body = cat({name("_HID", string("ACPI0016")),
                               name("_CID", package({eisaId("PNP0A08"), eisaId("PNP0A03")})),
                               name("_UID", integer(b.uid)), name("_SEG", integer(b.segment)),
                               name("_BBN", integer(b.firstBus)),
                               name("_CRS", resources(cat({wordBusNumber(b.firstBus, b.lastBus),
                                                           qwordMemory(false, b.mmioBase, b.mmioSize)})))});
        scope = cat({scope, device(nm, body)});
    }
    if (!ecam.empty()) {
        Code reserved;
        for (const EcamRange& e : ecam) reserved = cat({reserved, qwordMemory(true, ecamStart(e), ecamEnd(e) - ecamStart(e))});
        scope = cat({scope, device("ECAM", cat({name("_HID", eisaId("PNP0C02")), name("_UID", string("ECAM")),
                                                name("_CRS", resources(reserved))}))});
    }
    // At the definition block's top level "_SB_" is \_SB_ (iasl writes it so too).
    return cat({{0x10}, withLength(cat({seg("_SB_"), scope}))});
}

}  // namespace acpi
}  // namespace cxlcore
