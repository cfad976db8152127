// Where page-table entries live: in the host's local DRAM whatever memory
// the data is in, marked by a flag bit the uncore routes on.
#pragma once

#include <cstdint>

namespace cxlcore {

constexpr uint64_t kPageTableFlag = 1ull << 62;
constexpr uint64_t kPageTableBase = 1ull << 38;

}  // namespace cxlcore
