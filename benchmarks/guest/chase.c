/*
 * Guest pointer chase for gem5 SE runs (cf. LMbench lat_mem_rd): one dependent
 * load per 64 B line in a random cyclic order, so every load waits for the one
 * before it. Time comes from clock_gettime, which gem5's SE mode answers from
 * simulated time. Before timing, every line is written with its own address and
 * read back: a data check of the whole memory path (caches, writebacks, CXL).
 *
 *   chase [-a ACCESSES] [-m] [-w WARM_LINES] SIZE_BYTES [SIZE_BYTES ...]
 *
 * -w WARM_LINES: only the part of each cycle that matters is built: the
 * WARM_LINES lines before the timed ones, walked once so that the caches hold
 * what a long-running chase leaves there (give WARM_LINES about twice what the
 * last-level cache holds, so that every set sees more lines than it has ways),
 * then the timed ones. Lines are visited in a keyed random order computed per
 * index, so a GiB working set costs no more than its warm window; the data check
 * then re-reads the window's pointers.
 *
 * -m (for gem5's atomic-warm runs): the same keyed cycle (the whole of it
 * without -w), with the timed loads bracketed by gem5's work_begin/work_end
 * ops, so a config builds and warms on a fast atomic core and times on a
 * detailed one. Without gem5 the ops are illegal instructions: use -m under
 * gem5 only.
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

#include "guest.h"

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

/* A keyed bijection on [0, 2^bits): odd multiplies and xor-shifts. */
static uint64_t mix(uint64_t x, unsigned bits, uint64_t mask)
{
    const unsigned sh = (bits + 1) / 2;
    x = (x * 0x9e3779b97f4a7c15ull) & mask;
    x ^= x >> sh;
    x = (x * 0xbf58476d1ce4e5b9ull) & mask;
    x ^= x >> sh;
    return x;
}

/* Line visited at step i of a cycle over n lines: cycle-walking keeps the
 * bijection inside [0, n) for any n. */
static uint64_t visit(uint64_t i, uint64_t n, unsigned bits, uint64_t mask)
{
    uint64_t x = i;
    do
        x = mix(x, bits, mask);
    while (x >= n);
    return x;
}

/* Step j of a window that starts at step `start` of an n-step cycle (start < n, j <= n). */
static size_t window_line(size_t start, size_t j, size_t n)
{
    const size_t i = start + j;
    return i >= n ? i - n : i;
}

int main(int argc, char **argv)
{
    unsigned long accesses = 20000;
    unsigned long warm = 0; /* 0: the whole cycle */
    int first = 1, marks = 0;
    for (;;) {
        if (argc > first + 1 && strcmp(argv[first], "-a") == 0) {
            accesses = parse_arg("chase", argv[first + 1], "ACCESSES");
            first += 2;
        } else if (argc > first + 1 && strcmp(argv[first], "-w") == 0) {
            warm = parse_arg("chase", argv[first + 1], "WARM_LINES");
            first += 2;
        } else if (argc > first && strcmp(argv[first], "-m") == 0) {
            marks = 1;
            first += 1;
        } else {
            break;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "usage: chase [-a ACCESSES] [-m] [-w WARM_LINES] SIZE_BYTES [SIZE_BYTES ...]\n");
        return 2;
    }
    unsigned long biggest = 0;
    for (int i = first; i < argc; i++) {
        unsigned long s = parse_arg("chase", argv[i], "SIZE_BYTES");
        if (s < 2 * LINE) {
            fprintf(stderr, "chase: SIZE_BYTES = %lu is below the minimum of %d\n", s, 2 * LINE);
            return 2;
        }
        if (s > biggest)
            biggest = s;
    }
    /* A keyed window (-w or -m) builds only part of each cycle; without one, Sattolo's shuffle builds all of it. */
    const int keyed = marks || warm;
    size_t n_max = biggest / LINE;
    struct line *buf = aligned_alloc(4096, n_max * LINE);
    uint32_t *order = keyed ? NULL : malloc(n_max * sizeof(uint32_t));
    if (!buf || (!keyed && !order)) {
        fprintf(stderr, "chase: cannot allocate %lu bytes\n", biggest);
        return 1;
    }

    unsigned long mismatches = 0, checked = 0;
    if (!keyed) {
        for (size_t i = 0; i < n_max; i++)
            buf[i].tag = (uint64_t)(uintptr_t)&buf[i];
        for (size_t i = 0; i < n_max; i++)
            mismatches += buf[i].tag != (uint64_t)(uintptr_t)&buf[i];
        checked = 2 * n_max;
    }

    for (int a = first; a < argc; a++) {
        size_t n = parse_arg("chase", argv[a], "SIZE_BYTES") / LINE;
        struct line *p;
        size_t span = n, lead = n; /* lines built, and warm steps before the timed ones */
        unsigned bits = 1;
        uint64_t mask;
        size_t start = 0; /* the window's first step in the keyed cycle */
        while ((1ull << bits) < n)
            bits++;
        mask = (1ull << bits) - 1;
        if (!keyed) {
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
            p = &buf[order[0]];
            for (size_t i = 0; i < n && i < accesses; i++) /* warm what fits in the caches */
                p = p->next;
        } else {
            /* The window: `lead` warm steps then the timed ones, as a cycle of its own. */
            if (warm && warm + accesses + 1 < n) {
                lead = warm;
                span = warm + accesses + 1;
                start = n - warm;
            }
            /* The timed lines are written first, so that they are the oldest
             * in the caches when the warm walk has passed. No division in
             * these loops: gem5's X86 runs DIV as a microcode loop, which made
             * building a GiB window cost minutes of simulation. */
            size_t j = lead % span, cur = visit(window_line(start, j, n), n, bits, mask);
            for (size_t k = 0; k < span; k++) {
                const size_t nj = j + 1 == span ? 0 : j + 1;
                const size_t nxt = visit(window_line(start, nj, n), n, bits, mask);
                buf[cur].next = &buf[nxt];
                cur = nxt;
                j = nj;
            }
            p = &buf[visit(start, n, bits, mask)];
            for (size_t i = 0; i < lead; i++)
                p = p->next;
            if (marks)
                M5_WORK(M5OP_WORK_BEGIN);
        }
        double t0 = now_ns();
        for (unsigned long i = 0; i < accesses; i++)
            p = p->next;
        double t1 = now_ns();
        if (keyed) {
            if (marks)
                M5_WORK(M5OP_WORK_END);
            struct line *q = &buf[visit(start, n, bits, mask)];
            for (size_t j = 1; j <= span; j++) {
                struct line *want = &buf[visit(window_line(start, j == span ? 0 : j, n), n, bits, mask)];
                mismatches += q->next != want;
                q = q->next;
            }
            checked += span;
        }
        /* p is printed so the chase cannot be optimised away */
        printf("size_bytes=%zu accesses=%lu latency_ns=%.3f end=%p\n", n * LINE, accesses,
               (t1 - t0) / (double)accesses, (void *)p);
    }
    if (!keyed) {
        for (size_t i = 0; i < n_max; i++)
            mismatches += buf[i].tag != (uint64_t)(uintptr_t)&buf[i];
    }
    printf("verify_lines=%lu mismatches=%lu\n", checked, mismatches);
    return mismatches ? 1 : 0;
}
