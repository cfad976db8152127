// A memory device's register block (CXL 3.1 section 8.2.8): the device
// capabilities array, device status, the primary mailbox and memory device
// status. The mailbox runs the memory device commands Linux's cxl_pci and
// cxl_mem issue while they probe (section 8.2.9): commands complete at once,
// with the return codes of table 8-34.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/cxlio/regs.hpp"

namespace cxlcore {
namespace cxlio {

// Mailbox return codes (CXL 3.1 table 8-34).
enum MboxRc : uint16_t {
    kRcSuccess = 0x00, kRcInvalidInput = 0x02, kRcUnsupported = 0x03, kRcInvalidHandle = 0x0E,
    kRcInvalidAddress = 0x0F, kRcPoisonLimit = 0x10, kRcInvalidPayloadLength = 0x16, kRcInvalidLog = 0x17
};
// Command opcodes served (CXL 3.1 tables 8-37 and 8-126).
enum MboxOp : uint16_t {
    kOpGetEventRecords = 0x0100, kOpClearEventRecords = 0x0101, kOpGetEventPolicy = 0x0102,
    kOpSetEventPolicy = 0x0103, kOpGetTimestamp = 0x0300, kOpSetTimestamp = 0x0301, kOpGetSupportedLogs = 0x0400,
    kOpGetLog = 0x0401, kOpIdentify = 0x4000, kOpGetPartitionInfo = 0x4100, kOpGetLsa = 0x4102, kOpSetLsa = 0x4103,
    kOpGetHealthInfo = 0x4200, kOpGetPoisonList = 0x4300, kOpInjectPoison = 0x4301, kOpClearPoison = 0x4302
};
// Where this model places each capability within the block.
constexpr uint32_t kDeviceBytes = 0x10000, kStatusOffset = 0x100, kMailboxOffset = 0x200, kMemdevOffset = 0xC00;
constexpr uint32_t kPayloadCode = 11, kPayloadBytes = 1u << kPayloadCode;  // 2 KiB: Linux needs at least 256 B
constexpr uint32_t kMbCaps = 0x00, kMbCtrl = 0x04, kMbCmd = 0x08, kMbStatus = 0x10, kMbPayload = 0x20;
constexpr uint32_t kInjectPoisonLimit = 16;

class DeviceRegs {
  public:
    DeviceRegs(uint64_t capacity, uint32_t lsaBytes, const std::string& firmware);
    uint64_t read(uint32_t off, unsigned size);
    void write(uint32_t off, unsigned size, uint64_t value);
    // Memory Device Status: media ready (the default) or not, as Linux's cxl_await_media_ready reads it.
    void setMediaReady(bool ready);
    // Checkpoints: registers, label storage, timestamp, event policy and injected poison.
    void save(StateOut& out) const;
    void load(StateIn& in);
    IoStats* stats = &own_;  // the owning function's counters

  private:
    void execute();
    uint16_t run(uint16_t op, const std::vector<uint8_t>& in, std::vector<uint8_t>& out);
    uint16_t poisonList(const std::vector<uint8_t>& in, std::vector<uint8_t>& out) const;
    uint16_t poisonChange(uint16_t op, const std::vector<uint8_t>& in);
    RegBlock regs_;
    uint64_t capacity_;
    std::vector<uint8_t> lsa_;
    std::string firmware_;
    uint64_t timestamp_ = 0;
    uint32_t eventPolicy_ = 0;
    std::vector<uint64_t> poison_;  // DPAs of poisoned 64-byte lines, as injected
    IoStats own_;
};

}  // namespace cxlio
}  // namespace cxlcore
