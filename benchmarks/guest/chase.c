/*
 * Guest pointer chase for gem5 SE runs (cf. LMbench lat_mem_rd): one dependent
 * load per 64 B line in a random cyclic order, so every load waits for the one
 * before it. Time comes from clock_gettime, which gem5's SE mode answers from
 * simulated time. Before timing, every line is written with its own address and
 * read back: a data check of the whole memory path (caches, writebacks, CXL).
 *
 *   chase [-a ACCESSES] SIZE_BYTES [SIZE_BYTES ...]
 *
 * Prints one line per size: "size_bytes=<n> accesses=<n> latency_ns=<x>",
 * then "verify_lines=<n> mismatches=<n>".
 *
 * Build: cc -O2 -static -o chase chase.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64

struct line {
    struct line *next;
    uint64_t tag; /* the line's own address, for the data check */
    char pad[LINE - sizeof(struct line *) - sizeof(uint64_t)];
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic, so every run chases the same chain */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static unsigned long parse(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*s == '\0' || *end != '\0' || v == 0) {
        fprintf(stderr, "chase: %s must be a positive integer, got '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long accesses = 20000;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-a") == 0) {
        accesses = parse(argv[2], "ACCESSES");
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: chase [-a ACCESSES] SIZE_BYTES [SIZE_BYTES ...]\n");
        return 2;
    }
    unsigned long biggest = 0;
    for (int i = first; i < argc; i++) {
        unsigned long s = parse(argv[i], "SIZE_BYTES");
        if (s < 2 * LINE) {
            fprintf(stderr, "chase: SIZE_BYTES = %lu is below the minimum of %d\n", s, 2 * LINE);
            return 2;
        }
        if (s > biggest)
            biggest = s;
    }
    size_t n_max = biggest / LINE;
    struct line *buf = aligned_alloc(4096, n_max * LINE);
    uint32_t *order = malloc(n_max * sizeof(uint32_t));
    if (!buf || !order) {
        fprintf(stderr, "chase: cannot allocate %lu bytes\n", biggest);
        return 1;
    }

    unsigned long mismatches = 0;
    for (size_t i = 0; i < n_max; i++)
        buf[i].tag = (uint64_t)(uintptr_t)&buf[i];
    for (size_t i = 0; i < n_max; i++)
        mismatches += buf[i].tag != (uint64_t)(uintptr_t)&buf[i];

    for (int a = first; a < argc; a++) {
        size_t n = parse(argv[a], "SIZE_BYTES") / LINE;
        /* Sattolo's shuffle: one cycle through all n lines */
        for (size_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rng() % i;
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (size_t i = 0; i < n; i++)
            buf[order[i]].next = &buf[order[(i + 1) % n]];

        struct line *p = &buf[order[0]];
        for (size_t i = 0; i < n && i < accesses; i++) /* warm what fits in the caches */
            p = p->next;
        double t0 = now_ns();
        for (unsigned long i = 0; i < accesses; i++)
            p = p->next;
        double t1 = now_ns();
        /* p is printed so the chase cannot be optimised away */
        printf("size_bytes=%zu accesses=%lu latency_ns=%.3f end=%p\n", n * LINE, accesses,
               (t1 - t0) / (double)accesses, (void *)p);
    }
    for (size_t i = 0; i < n_max; i++)
        mismatches += buf[i].tag != (uint64_t)(uintptr_t)&buf[i];
    printf("verify_lines=%zu mismatches=%lu\n", 2 * n_max, mismatches);
    return mismatches ? 1 : 0;
}
