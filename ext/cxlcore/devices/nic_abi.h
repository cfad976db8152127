/* The CXL-NIC's rings as bytes in host memory: the format a guest program
   (benchmarks/guest/nic_rao.c) and the gem5 NIC (devices/cxl_nic.cc) share.
   Where each ring's lines are is makeRings' layout (devices/cxl_nic.cpp):
   per ring, entries / per_desc descriptor lines, entries / per_cq
   completion lines, then the doorbell line; rings follow one another. Plain
   C, so the guest can include it. */
#ifndef CXLCORE_DEVICES_NIC_ABI_H
#define CXLCORE_DEVICES_NIC_ABI_H

#include <stdint.h>

/* Operation codes, in AtomicCode's order. */
enum { CXLNIC_FETCH = 0, CXLNIC_FETCH_ADD = 1, CXLNIC_ADD = 2, CXLNIC_CAS = 3, CXLNIC_SWAP = 4 };

/* A descriptor: the host writes the other words first and seq_code last.
   FETCH_ADD and ADD add a; SWAP stores a; CAS stores b where the word is a. */
struct cxlnic_desc {
    uint64_t seq_code; /* (operation number + 1) << 8 | code */
    uint64_t index;    /* the operand word: array_base + 8 * (index % array_words) */
    uint64_t a, b;
};

/* A completion: the word's previous value. */
struct cxlnic_cqe {
    uint64_t seq; /* operation number + 1 */
    uint64_t result;
};

#define CXLNIC_LINE 64u
#define CXLNIC_MAX_PER_DESC (CXLNIC_LINE / sizeof(struct cxlnic_desc))
#define CXLNIC_MAX_PER_CQ (CXLNIC_LINE / sizeof(struct cxlnic_cqe))

/* Bytes of one ring; ring t starts at ring_base + t * span. */
static inline uint64_t cxlnic_ring_span(uint64_t entries, uint64_t per_desc, uint64_t per_cq) {
    return (entries / per_desc + entries / per_cq + 1) * CXLNIC_LINE;
}
static inline uint64_t cxlnic_desc_at(uint64_t entries, uint64_t per_desc, uint64_t op) {
    return (op / per_desc % (entries / per_desc)) * CXLNIC_LINE + (op % per_desc) * sizeof(struct cxlnic_desc);
}
static inline uint64_t cxlnic_cqe_at(uint64_t entries, uint64_t per_desc, uint64_t per_cq, uint64_t op) {
    return (entries / per_desc + op / per_cq % (entries / per_cq)) * CXLNIC_LINE +
           (op % per_cq) * sizeof(struct cxlnic_cqe);
}
static inline uint64_t cxlnic_doorbell_at(uint64_t entries, uint64_t per_desc, uint64_t per_cq) {
    return (entries / per_desc + entries / per_cq) * CXLNIC_LINE;
}

#endif
