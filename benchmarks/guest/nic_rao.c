/* One host thread of a CXL-NIC remote-atomics run in gem5's SE mode (one
 * process per core; gem5_configs/cxl_nic_se.py maps the same physical region
 * at the same address into each).
 *
 * The thread posts its operations into its own ring as the standalone
 * engine's host threads do (workloads/rao.cpp): a descriptor while the ring
 * has room and fewer than post_batch are unannounced, then the doorbell, then
 * completions polled in order. Every operation adds 1 to a word: FETCH_ADD 1
 * (op add), or FETCH then CAS(old, old + 1), again until it succeeds (op cas).
 * With -H the thread also adds 1 to words itself (LOCK XADD) between posts, on
 * the same lines the NIC works on. Every previous value returned goes to the
 * results area; thread 0 waits for all threads and checks them: the array's
 * sum is the number of increments, and on one word (kernel central) the
 * previous values are exactly 0 .. increments - 1, each once.
 *
 *   nic_rao -t thread -T threads -n ops -k rand|central|stride1 -o add|cas
 *           -H host_ops -w words -e entries -d per_desc -c per_cq -b batch
 *           -V region_va -A array_offset -S results_offset -Y sync_offset
 *           -G core_clock_ghz [-P doorbell_mmio_va]
 *
 * With -P the NIC is the PCIe baseline: the doorbell is the ring's 8-byte
 * MMIO register at doorbell_mmio_va + 8 * thread, not a line in the ring.
 *
 * Prints "thread=<t> ops=<n> latency_ns=<mean post to completion>
 * elapsed_ns=<first post to last completion>" and, for
 * thread 0, "check increments=<n> sum=<s> distinct=<d> max=<m> ringwait=<w>".
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../../ext/cxlcore/devices/nic_abi.h"
#include "guest.h"

#define BARRIER() __asm__ volatile("" ::: "memory")

static const char *prog = "nic_rao";

/* gem5's x86 TSC counts core cycles: cheap timestamps (clock_gettime is an
 * emulated system call, costing the core far more than an operation). The
 * fence keeps an out-of-order core from reading it before the accesses the
 * timestamp follows are done. */
static double ghz = 0;
static double tsc_ns(void)
{
    uint32_t lo, hi;
    __asm__ volatile("mfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (double)(((uint64_t)hi << 32) | lo) / ghz;
}

struct ring {
    volatile uint8_t *base;
    volatile uint64_t *mmio; /* PCIe NIC: the doorbell register */
    uint64_t entries, per_desc, per_cq, batch;
    uint64_t posted, rung, consumed;
    double post_t[65536];
    double lat_sum;
    uint64_t lat_n;
};

static volatile struct cxlnic_cqe *cqe_of(struct ring *r, uint64_t op)
{
    return (volatile struct cxlnic_cqe *)(r->base + cxlnic_cqe_at(r->entries, r->per_desc, r->per_cq, op));
}

static void post(struct ring *r, uint8_t code, uint64_t index, uint64_t a, uint64_t b)
{
    volatile struct cxlnic_desc *d =
        (volatile struct cxlnic_desc *)(r->base + cxlnic_desc_at(r->entries, r->per_desc, r->posted));
    r->post_t[r->posted % r->entries] = tsc_ns(); /* the operation's latency starts with its descriptor's write */
    d->index = index;
    d->a = a;
    d->b = b;
    BARRIER(); /* x86 keeps stores in order: seq_code becomes visible last */
    d->seq_code = ((r->posted + 1) << 8) | code;
    r->posted++;
}

static void ring_doorbell(struct ring *r)
{
    BARRIER();
    if (r->mmio)
        *r->mmio = r->posted;
    else
        *(volatile uint64_t *)(r->base + cxlnic_doorbell_at(r->entries, r->per_desc, r->per_cq)) = r->posted;
    r->rung = r->posted;
}

/* The previous value of operation `op`, once its completion is seen. */
static uint64_t wait_done(struct ring *r, uint64_t op)
{
    volatile struct cxlnic_cqe *e = cqe_of(r, op);
    while (e->seq != op + 1)
        BARRIER();
    uint64_t v = e->result;
    r->lat_sum += tsc_ns() - r->post_t[op % r->entries];
    r->lat_n++;
    return v;
}

static uint64_t rng_state;
static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

int main(int argc, char **argv)
{
    unsigned long thread = 0, threads = 1, ops = 0, host_ops = 0, words = 0, entries = 0, per_desc = 0, per_cq = 0,
                  batch = 0, va = 0, array_off = 0, results_off = 0, sync_off = 0, mmio = 0;
    int central = 0, stride1 = 0, cas = 0, opt;
    while ((opt = getopt(argc, argv, "t:T:n:k:o:H:w:e:d:c:b:V:A:S:Y:G:P:")) != -1) {
        switch (opt) {
        case 't': thread = strtoul(optarg, NULL, 0); break;
        case 'T': threads = parse_arg(prog, optarg, "-T threads"); break;
        case 'n': ops = parse_arg(prog, optarg, "-n ops"); break;
        case 'k':
            central = !strcmp(optarg, "central");
            stride1 = !strcmp(optarg, "stride1");
            if (!central && !stride1 && strcmp(optarg, "rand")) {
                fprintf(stderr, "%s: -k must be rand, central or stride1, got '%s'\n", prog, optarg);
                return 2;
            }
            break;
        case 'o':
            cas = !strcmp(optarg, "cas");
            if (!cas && strcmp(optarg, "add")) {
                fprintf(stderr, "%s: -o must be add or cas, got '%s'\n", prog, optarg);
                return 2;
            }
            break;
        case 'H': host_ops = strtoul(optarg, NULL, 0); break;
        case 'w': words = parse_arg(prog, optarg, "-w words"); break;
        case 'e': entries = parse_arg(prog, optarg, "-e entries"); break;
        case 'd': per_desc = parse_arg(prog, optarg, "-d per_desc"); break;
        case 'c': per_cq = parse_arg(prog, optarg, "-c per_cq"); break;
        case 'b': batch = parse_arg(prog, optarg, "-b batch"); break;
        case 'V': va = parse_arg(prog, optarg, "-V region_va"); break;
        case 'A': array_off = parse_arg(prog, optarg, "-A array_offset"); break;
        case 'S': results_off = parse_arg(prog, optarg, "-S results_offset"); break;
        case 'Y': sync_off = parse_arg(prog, optarg, "-Y sync_offset"); break;
        case 'G': ghz = strtod(optarg, NULL); break;
        case 'P': mmio = parse_arg(prog, optarg, "-P doorbell_mmio_va"); break;
        default: return 2;
        }
    }
    if (!ops || !words || !(ghz > 0) || !entries || !per_desc || !per_cq || !batch || !va || thread >= threads || entries > 65536 ||
        per_desc > CXLNIC_MAX_PER_DESC || per_cq > CXLNIC_MAX_PER_CQ || entries % per_desc || entries % per_cq) {
        fprintf(stderr, "%s: bad or missing arguments (-G clock in GHz, thread < threads, entries <= 65536 and a multiple of "
                "per_desc <= %u and per_cq <= %u)\n", prog, (unsigned)CXLNIC_MAX_PER_DESC,
                (unsigned)CXLNIC_MAX_PER_CQ);
        return 2;
    }
    uint8_t *region = (uint8_t *)va;
    static struct ring r;
    r.base = region + thread * cxlnic_ring_span(entries, per_desc, per_cq);
    r.entries = entries;
    r.per_desc = per_desc;
    r.per_cq = per_cq;
    r.batch = batch;
    r.mmio = mmio ? (volatile uint64_t *)mmio + thread : NULL;
    uint64_t *array = (uint64_t *)(region + array_off);
    uint64_t per_thread = ops + host_ops;
    uint64_t *results = (uint64_t *)(region + results_off) + thread * per_thread;
    uint64_t *ready = (uint64_t *)(region + sync_off), *finished = ready + 8;
    rng_state = 0x9e3779b97f4a7c15ull ^ (thread + 1) * 0xbf58476d1ce4e5b9ull;

    /* Start together, so the threads contend. */
    __atomic_fetch_add(ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(ready, __ATOMIC_SEQ_CST) < threads)
        ;

    uint64_t nres = 0, host_done = 0, ringwait = 0;
    double start = tsc_ns();
    for (uint64_t i = 0; i < ops; i++) {
        uint64_t idx = central ? 0 : stride1 ? (thread * ops + i) % words : next_rand() % words;
        if (!cas) {
            /* Post while there is room; ring at post_batch or when the ring is full. */
            if (r.posted - r.consumed == entries) {
                /* Full: announce what is posted, then take every completion already there (as the
                 * standalone engine's host threads do), at least one. */
                if (r.rung < r.posted)
                    ring_doorbell(&r);
                results[nres++] = wait_done(&r, r.consumed);
                r.consumed++;
                while (r.consumed < r.posted && cqe_of(&r, r.consumed)->seq == r.consumed + 1) {
                    results[nres++] = wait_done(&r, r.consumed);
                    r.consumed++;
                }
                ringwait++;
            }
            post(&r, CXLNIC_FETCH_ADD, idx, 1, 0);
            if (r.posted - r.rung >= batch || i + 1 == ops)
                ring_doorbell(&r);
        } else {
            uint64_t old, seen;
            post(&r, CXLNIC_FETCH, idx, 0, 0);
            ring_doorbell(&r);
            old = wait_done(&r, r.consumed++);
            for (;;) {
                post(&r, CXLNIC_CAS, idx, old, old + 1);
                ring_doorbell(&r);
                seen = wait_done(&r, r.consumed++);
                if (seen == old)
                    break;
                old = seen;
            }
            results[nres++] = old;
        }
        if (host_done < host_ops && i * host_ops / ops >= host_done) {
            results[nres++] = __atomic_fetch_add(&array[idx], 1, __ATOMIC_SEQ_CST);
            host_done++;
        }
    }
    while (r.consumed < r.posted) {
        results[nres++] = wait_done(&r, r.consumed);
        r.consumed++;
    }
    while (host_done < host_ops) {
        uint64_t idx = central ? 0 : host_done % words;
        results[nres++] = __atomic_fetch_add(&array[idx], 1, __ATOMIC_SEQ_CST);
        host_done++;
    }
    printf("thread=%lu ops=%lu latency_ns=%.2f elapsed_ns=%.1f\n", thread, (unsigned long)r.lat_n,
           r.lat_n ? r.lat_sum / (double)r.lat_n : 0.0, tsc_ns() - start);
    fflush(stdout);
    __atomic_fetch_add(finished, 1, __ATOMIC_SEQ_CST);
    if (thread != 0)
        return 0;

    while (__atomic_load_n(finished, __ATOMIC_SEQ_CST) < threads)
        ;
    uint64_t n = threads * per_thread, sum = 0, distinct = 0, max = 0;
    for (uint64_t w = 0; w < words; w++)
        sum += array[w];
    if (central) {
        /* Every previous value 0 .. n-1 exactly once. */
        uint64_t *all = (uint64_t *)(region + results_off);
        static uint8_t seen[1 << 20];
        if (n > sizeof seen) {
            fprintf(stderr, "%s: too many increments to check (%lu)\n", prog, (unsigned long)n);
            return 2;
        }
        for (uint64_t k = 0; k < n; k++) {
            if (all[k] > max)
                max = all[k];
            if (all[k] < n && !seen[all[k]]) {
                seen[all[k]] = 1;
                distinct++;
            }
        }
    }
    printf("check increments=%lu sum=%lu distinct=%lu max=%lu ringwait=%lu\n", (unsigned long)n,
           (unsigned long)sum, (unsigned long)distinct, (unsigned long)max, (unsigned long)ringwait);
    return 0;
}
