/*
 * Loaded latency (cf. Intel MLC's --loaded_latency): THREADS traffic threads
 * stream over their own buffers, reading and writing whole 64 B lines in a
 * READS:WRITES ratio, while one more thread runs a dependent pointer chase
 * (one load per line, random cyclic order, as in chase.c) and times it. The
 * traffic's bandwidth is counted over the chase's timed window only, so each
 * latency comes with the bandwidth that loaded it. Place the buffers with
 * numactl (e.g. `numactl --membind=1 loaded_latency ...` for CXL memory).
 *
 *   loaded_latency [-a ACCESSES] [-t THREADS] [-b TRAFFIC_BYTES] [-r READS:WRITES] [-d DELAY] [-m] CHASE_BYTES
 *
 * -t: traffic threads (default 1; 0 gives the idle latency).
 * -b: each traffic thread's buffer (default 64 MiB).
 * -r: of every READS + WRITES lines a traffic thread touches, the first READS
 *     are read and the rest written (default 1:0, reads only; 1:1 is MLC's W5).
 * -d: DELAY empty loop turns after each traffic line, to lower the injected
 *     bandwidth (MLC's -d; 0 by default).
 * -m: the timed chase is bracketed with gem5's work_begin/work_end ops (an
 *     invalid opcode outside gem5's own CPU models).
 *
 * Prints "traffic_threads=<n> rw=<r>:<w> delay=<n> traffic_bytes=<n>
 * chase_bytes=<n> accesses=<n> latency_ns=<x> traffic_gbps=<x> end=<p>".
 *
 * Build: cc -O2 -static -pthread -o loaded_latency loaded_latency.c
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

#define LINE 64

struct counter {
    _Atomic unsigned long lines;
    char pad[LINE - sizeof(unsigned long)];
};

static unsigned long traffic_bytes = 64ul << 20, reads = 1, writes, delay;
static atomic_int stop, ready;
static struct counter *done; /* lines touched per traffic thread */
static char **bufs;

static void *traffic(void *arg)
{
    const unsigned long t = (unsigned long)(uintptr_t)arg, n = traffic_bytes / LINE, group = reads + writes;
    volatile uint64_t *buf = (volatile uint64_t *)bufs[t];
    uint64_t sum = 0;
    unsigned long k = 0;
    atomic_fetch_add(&ready, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (unsigned long i = 0; i < n; i++) {
            volatile uint64_t *l = buf + i * (LINE / sizeof(uint64_t));
            if (k < reads) {
                for (unsigned w = 0; w < LINE / sizeof(uint64_t); w++)
                    sum += l[w];
            } else {
                for (unsigned w = 0; w < LINE / sizeof(uint64_t); w++)
                    l[w] = sum + w;
            }
            k = k + 1 == group ? 0 : k + 1;
            for (volatile unsigned long d = 0; d < delay; d++)
                ;
            atomic_fetch_add_explicit(&done[t].lines, 1, memory_order_relaxed);
        }
    }
    buf[0] = sum; /* keeps the reads */
    return NULL;
}

static unsigned long total_lines(unsigned long threads)
{
    unsigned long s = 0;
    for (unsigned long t = 0; t < threads; t++)
        s += atomic_load_explicit(&done[t].lines, memory_order_relaxed);
    return s;
}

/* A random cycle through n lines (Sattolo), its order from a splitmix64 stream. */
static void **build_chain(size_t n)
{
    void **lines = aligned_alloc(4096, n * LINE);
    size_t *order = malloc(n * sizeof(size_t));
    if (!lines || !order)
        return NULL;
    uint64_t s = 0x243f6a8885a308d3ull;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        size_t j = (z ^ (z >> 31)) % i, x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (size_t i = 0; i < n; i++)
        lines[order[i] * (LINE / sizeof(void *))] = &lines[order[(i + 1) % n] * (LINE / sizeof(void *))];
    free(order);
    return lines;
}

static int usage(void)
{
    fprintf(stderr, "usage: loaded_latency [-a ACCESSES] [-t THREADS] [-b TRAFFIC_BYTES] [-r READS:WRITES] "
                    "[-d DELAY] [-m] CHASE_BYTES\n");
    return 2;
}

int main(int argc, char **argv)
{
    unsigned long accesses = 200000, threads = 1;
    int marks = 0, a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        const char *o = argv[a];
        if (strcmp(o, "-m") == 0) {
            marks = 1;
            continue;
        }
        if (a + 1 >= argc)
            return usage();
        const char *v = argv[++a];
        if (strcmp(o, "-a") == 0) {
            accesses = parse_arg("loaded_latency", v, "ACCESSES");
        } else if (strcmp(o, "-t") == 0) {
            threads = strcmp(v, "0") == 0 ? 0 : parse_arg("loaded_latency", v, "THREADS");
        } else if (strcmp(o, "-b") == 0) {
            traffic_bytes = parse_arg("loaded_latency", v, "TRAFFIC_BYTES");
        } else if (strcmp(o, "-d") == 0) {
            delay = strcmp(v, "0") == 0 ? 0 : parse_arg("loaded_latency", v, "DELAY");
        } else if (strcmp(o, "-r") == 0) {
            char *end;
            reads = strtoul(v, &end, 10);
            if (end == v || *end != ':' || end[1] < '0' || end[1] > '9' || (writes = strtoul(end + 1, &end, 10), *end) ||
                reads + writes == 0) {
                fprintf(stderr, "loaded_latency: READS:WRITES must be two integers, not both 0, got '%s'\n", v);
                return 2;
            }
        } else {
            return usage();
        }
    }
    if (a + 1 != argc)
        return usage();
    const unsigned long chase_bytes = parse_arg("loaded_latency", argv[a], "CHASE_BYTES");
    if (chase_bytes < 2 * LINE || traffic_bytes < LINE) {
        fprintf(stderr, "loaded_latency: CHASE_BYTES must be at least %d and TRAFFIC_BYTES at least %d\n", 2 * LINE,
                LINE);
        return 2;
    }
    if (threads > 1024) {
        fprintf(stderr, "loaded_latency: THREADS = %lu is above the maximum of 1024\n", threads);
        return 2;
    }

    const size_t n = chase_bytes / LINE;
    void **chain = build_chain(n);
    done = aligned_alloc(LINE, (threads + 1) * sizeof *done);
    bufs = calloc(threads + 1, sizeof *bufs);
    pthread_t *tid = calloc(threads + 1, sizeof *tid);
    if (!chain || !done || !bufs || !tid) {
        fprintf(stderr, "loaded_latency: cannot allocate a %lu-byte chase\n", chase_bytes);
        return 1;
    }
    memset(done, 0, (threads + 1) * sizeof *done);
    for (unsigned long t = 0; t < threads; t++) {
        /* Touched here, so that its pages are placed before the timing starts */
        if (!(bufs[t] = aligned_alloc(4096, traffic_bytes / LINE * LINE))) {
            fprintf(stderr, "loaded_latency: cannot allocate traffic buffer %lu of %lu bytes\n", t, traffic_bytes);
            return 1;
        }
        memset(bufs[t], 1, traffic_bytes / LINE * LINE);
    }
    for (unsigned long t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, traffic, (void *)(uintptr_t)t) != 0) {
            fprintf(stderr, "loaded_latency: cannot start traffic thread %lu\n", t);
            return 1;
        }
    while ((unsigned long)atomic_load(&ready) < threads)
        ;

    void **p = chain;
    for (size_t i = 0; i < n && i < accesses; i++) /* warm what fits in the caches */
        p = *p;
    if (marks)
        M5_WORK(M5OP_WORK_BEGIN);
    const unsigned long l0 = total_lines(threads);
    const double t0 = now_ns();
    for (unsigned long i = 0; i < accesses; i++)
        p = *p;
    const double t1 = now_ns();
    const unsigned long l1 = total_lines(threads);
    if (marks)
        M5_WORK(M5OP_WORK_END);
    atomic_store(&stop, 1);
    for (unsigned long t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);

    printf("traffic_threads=%lu rw=%lu:%lu delay=%lu traffic_bytes=%lu chase_bytes=%zu accesses=%lu latency_ns=%.3f "
           "traffic_gbps=%.3f end=%p\n",
           threads, reads, writes, delay, traffic_bytes / LINE * LINE, n * LINE, accesses,
           (t1 - t0) / (double)accesses, (double)(l1 - l0) * LINE / (t1 - t0), (void *)p);
    return 0;
}
