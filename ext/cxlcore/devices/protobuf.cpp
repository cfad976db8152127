#include "cxlcore/devices/protobuf.hpp"

#include <algorithm>

#include "cxlcore/config/params.hpp"

namespace cxlcore {

const std::vector<PbShape>& pbShapes() {
    // Sizes from 64 B to 64 KiB; small messages are mostly scalars, large
    // ones mostly strings, and nesting grows with size (the trend
    // HyperProtoBench's fleet-derived message shapes show).
    static const std::vector<PbShape> s = {
        {"64B", 64, 6, 1, 0.25},         {"512B", 512, 16, 2, 0.5},     {"4KiB", 4096, 40, 2, 0.7},
        {"16KiB", 16384, 80, 3, 0.8},    {"64KiB", 65536, 160, 3, 0.9},
    };
    return s;
}

const PbShape& pbShape(const std::string& name) {
    for (const auto& s : pbShapes())
        if (s.name == name) return s;
    std::string list;
    for (const auto& s : pbShapes()) list += (list.empty() ? "" : ", ") + s.name;
    throw ConfigError("rpc.shape = '" + name + "' is not allowed; allowed values: " + list);
}

uint32_t varintBytes(uint64_t v) {
    uint32_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}

namespace {

uint32_t tagBytes(uint32_t number) { return varintBytes(uint64_t(number) << 3); }

// Builds message `at` with `fields` fields and about `budget` wire bytes.
void build(std::vector<PbMessage>& tree, size_t at, uint32_t fields, uint32_t depth, double sf, uint64_t budget,
           Rng& rng) {
    const uint32_t nested = depth > 1 ? 2 : 0;
    const uint32_t strings = std::max<uint32_t>(1, uint32_t(fields * sf * 0.5));
    const uint64_t childBudget = nested ? budget / (4 * nested) : 0;
    const uint64_t strBudget = uint64_t(double(budget) * sf);
    for (uint32_t i = 0; i < fields; ++i) {
        PbField f;
        f.number = i + 1;
        if (i < nested) {
            f.kind = PbField::Nested;
            f.child = int32_t(tree.size());
            tree.emplace_back();
            build(tree, size_t(f.child), std::max<uint32_t>(2, fields / 4), depth - 1, sf, childBudget, rng);
        } else if (i < nested + strings) {
            f.kind = PbField::String;
            f.value = std::max<uint64_t>(1, strBudget / strings);
        } else if (i == fields - 1 && fields > 3) {
            f.kind = PbField::Packed;
            f.elems.resize(1 + rng.below(8));
            for (auto& e : f.elems) e = rng.below(1ull << (7 * (1 + rng.below(4))));
        } else {
            f.value = rng.below(1ull << (7 * (1 + rng.below(5))));
        }
        tree[at].fields.push_back(f);
    }
}

}  // namespace

std::vector<PbMessage> makeMessage(const PbShape& s, uint64_t seed, uint64_t base) {
    std::vector<PbMessage> tree(1);
    Rng rng(seed * 6151 + s.bytes);
    build(tree, 0, s.fields, s.depth, s.stringFraction, s.bytes, rng);
    // Strings take their share of the size; the root's repeated field (one
    // byte per small element) fills the rest.
    uint64_t str = 0;
    for (auto& m : tree)
        for (auto& f : m.fields) str += f.kind == PbField::String ? f.value : 0;
    const double k = double(s.bytes) * s.stringFraction / double(std::max<uint64_t>(str, 1));
    for (auto& m : tree)
        for (auto& f : m.fields)
            if (f.kind == PbField::String) f.value = std::max<uint64_t>(1, uint64_t(double(f.value) * k));
    PbField* fill = nullptr;
    for (auto& f : tree[0].fields)
        if (f.kind == PbField::Packed) fill = &f;
    if (fill) {
        uint64_t have = wireBytes(tree);
        if (have < s.bytes) fill->elems.resize(fill->elems.size() + (s.bytes - have), 1);
        while (wireBytes(tree) > s.bytes && fill->elems.size() > 1) fill->elems.pop_back();
    }
    // Place the objects, then the strings and arrays, each on lines of its own.
    uint64_t at = base;
    auto place = [&](uint64_t bytes) {
        const uint64_t a = at;
        at += (bytes + kLineBytes - 1) / kLineBytes * kLineBytes;
        return a;
    };
    for (auto& m : tree) m.addr = place(m.objectBytes());
    for (auto& m : tree)
        for (auto& f : m.fields) {
            if (f.kind == PbField::String) f.addr = place(f.value);
            if (f.kind == PbField::Packed) f.addr = place(f.elems.size() * 8);
        }
    return tree;
}

uint64_t wireBytes(const std::vector<PbMessage>& tree, size_t m) {
    uint64_t n = 0;
    for (const auto& f : tree[m].fields) {
        n += tagBytes(f.number);
        switch (f.kind) {
            case PbField::Varint: n += varintBytes(f.value); break;
            case PbField::String: n += varintBytes(f.value) + f.value; break;
            case PbField::Nested: {
                const uint64_t c = wireBytes(tree, size_t(f.child));
                n += varintBytes(c) + c;
                break;
            }
            case PbField::Packed: {
                uint64_t p = 0;
                for (uint64_t e : f.elems) p += varintBytes(e);
                n += varintBytes(p) + p;
                break;
            }
        }
    }
    return n;
}

uint64_t fieldCount(const std::vector<PbMessage>& tree) {
    uint64_t n = 0;
    for (const auto& m : tree)
        n += m.fields.size();  // a packed repeated field is one field (its elements are bytes)
    return n;
}

}  // namespace cxlcore
