// Protocol-buffer messages as a NIC's RPC engine sees them: a message tree
// of varint, length-delimited string, nested-message and packed repeated
// fields, laid out in host memory as objects (an 8-byte slot per field),
// string buffers and repeated arrays; and the size of its wire encoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

struct PbField {
    enum Kind : uint8_t { Varint, String, Nested, Packed } kind = Varint;
    uint32_t number = 1;
    uint64_t value = 0;             // varint value, or string length
    int32_t child = -1;             // nested: the message's index
    std::vector<uint64_t> elems;    // packed repeated varints
    uint64_t addr = 0;              // string buffer or repeated array in host memory
};

struct PbMessage {
    std::vector<PbField> fields;
    uint64_t addr = 0;  // the object: one 8-byte slot per field
    uint64_t objectBytes() const { return fields.size() * 8; }
};

// A message shape: its wire size target, fields per message, nesting depth
// and the share of its bytes in strings.
struct PbShape {
    std::string name;
    uint64_t bytes;
    uint32_t fields, depth;
    double stringFraction;
};
const std::vector<PbShape>& pbShapes();
const PbShape& pbShape(const std::string& name);  // ConfigError naming the allowed shapes

// A message tree of a shape (index 0 the root), placed from `base`.
std::vector<PbMessage> makeMessage(const PbShape& s, uint64_t seed, uint64_t base);

uint32_t varintBytes(uint64_t v);
// Wire bytes of message m of the tree (tags, varints, length prefixes, payloads).
uint64_t wireBytes(const std::vector<PbMessage>& tree, size_t m = 0);
// Fields of every message of the tree (a packed repeated field counts once).
uint64_t fieldCount(const std::vector<PbMessage>& tree);

}  // namespace cxlcore
