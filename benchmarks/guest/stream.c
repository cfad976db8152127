/*
 * Guest STREAM kernel for gem5 SE runs (cf. McCalpin's STREAM): THREADS
 * pthreads each run one kernel over their own slice of three arrays, and the
 * bandwidth is counted as STREAM counts it (the bytes of the arrays read and
 * written, no write-allocate). The arrays are touched first; the timed passes
 * are bracketed with gem5's work_begin/work_end ops (-m), so a config can run
 * the set-up on a fast atomic core and the passes on detailed ones. Time comes
 * from clock_gettime, which gem5's SE mode answers from simulated time.
 *
 *   stream [-m] [-g GATE] [-s TURN INDEX] [-p PASSES] [-t TIMED] [-w] KERNEL THREADS ELEMENTS_PER_THREAD
 *
 * -w: one untimed pass of the kernel over each whole slice first, so that
 * the timed passes find memory and caches as STREAM's own passes leave them
 * (clean lines of the arrays read, dirty ones of the array written); give
 * slices of more than twice the caches a thread's core has.
 *
 * -t: the timed passes cover the first TIMED elements of each slice (all by
 * default), so that a detailed core need not run over all of it.
 *
 * -g: a host file that starts and stops copies run as separate processes
 * together (SE mode passes file calls to the host): the timed passes wait
 * for GATE to exist, and the copy then waits for it to go, so that no copy
 * checks its elements while another is still timed.
 *
 * -s: copies run as separate processes touch their arrays in turn. Copy
 * INDEX waits for the host file TURN.INDEX (copy 0 does not), touches its
 * arrays, then creates TURN.<INDEX + 1>. gem5's SE mode hands frames out from
 * one counter as pages fault, so copies touching theirs at once would
 * interleave their pages; in turn, each gets consecutive frames (a page of
 * a, b and c in turn), as a Linux thread does from its CPU's page lists.
 *
 * KERNEL is copy, scale, add, triad or read (a sum over a, reads only, as
 * lmbench's bw_mem rd; four partial sums so that no add chain bounds it). Prints "kernel=<k> threads=<n>
 * bytes=<n> stream_gbps=<x> check=<ok|bad> t0_ns=<t> t1_ns=<t>"; check
 * compares every element with what the kernel must have written, t0 and t1
 * bound the timed passes (so that copies run as separate processes, as gem5
 * needs to switch cores under them, can be added up).
 *
 * Build: cc -O2 -static -pthread -o stream stream.c
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"

/* gem5's quiesce_ns op: a copy that waits for the gate sleeps on its core,
   where a spin would cost as much simulation as the timed passes */
#define M5OP_QUIESCE_NS 0x02
static void m5_sleep_ns(long ns)
{
    __asm__ volatile(".byte 0x0f, 0x04; .word %c0" ::"i"(M5OP_QUIESCE_NS), "D"(ns), "S"(0L) : "memory");
}

static int kernel, marks, passes = 1;
static int warm;
static unsigned long timed;
static const char *gate, *turn;
static unsigned long turn_index;
static unsigned long threads, per;
static double *a, *b, *c;
static pthread_barrier_t bar;
static double t0, t1;
static const double scalar = 3.0;
static double *sums; /* read: each thread's sum over every pass */

static double run(double *restrict x, double *restrict y, double *restrict z, unsigned long n)
{
    if (kernel == 4) {
        double s[4] = {0, 0, 0, 0};
        unsigned long j = 0;
        for (; j + 4 <= n; j += 4)
            for (int k = 0; k < 4; k++)
                s[k] += x[j + k];
        for (; j < n; j++)
            s[0] += x[j];
        return s[0] + s[1] + s[2] + s[3];
    }
    switch (kernel) {
    case 0: for (unsigned long j = 0; j < n; j++) z[j] = x[j]; break;           /* c = a */
    case 1: for (unsigned long j = 0; j < n; j++) y[j] = scalar * z[j]; break;  /* b = s c */
    case 2: for (unsigned long j = 0; j < n; j++) z[j] = x[j] + y[j]; break;    /* c = a + b */
    default: for (unsigned long j = 0; j < n; j++) x[j] = y[j] + scalar * z[j]; /* a = b + s c */
    }
    return 0;
}

static void turn_file(char *path, size_t size, unsigned long index)
{
    snprintf(path, size, "%s.%lu", turn, index);
}

static void *worker(void *arg)
{
    const unsigned long t = (unsigned long)(uintptr_t)arg, lo = t * per;
    for (unsigned long j = lo; j < lo + per; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.5;
    }
    pthread_barrier_wait(&bar);
    if (t == 0 && turn) {
        char path[4096];
        turn_file(path, sizeof path, turn_index + 1);
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
    }
    if (warm)
        sums[t] += run(a + lo, b + lo, c + lo, per);
    pthread_barrier_wait(&bar);
    if (t == 0) {
        if (marks)
            M5_WORK(M5OP_WORK_BEGIN);
        /* Short naps: a spin would cost simulation while later copies still
           touch their arrays, a long one would start this copy late. */
        while (gate && access(gate, F_OK) != 0)
            if (marks)
                m5_sleep_ns(100);
        t0 = now_ns();
    }
    pthread_barrier_wait(&bar);
    for (int p = 0; p < passes; p++)
        sums[t] += run(a + lo, b + lo, c + lo, timed);
    pthread_barrier_wait(&bar);
    if (t == 0) {
        t1 = now_ns();
        if (marks)
            M5_WORK(M5OP_WORK_END);
        while (gate && access(gate, F_OK) == 0)
            if (marks)
                m5_sleep_ns(2000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static const char *names[] = {"copy", "scale", "add", "triad", "read"};
    int i = 1;
    for (;;) {
        if (i < argc && strcmp(argv[i], "-m") == 0) {
            marks = 1;
            i++;
        } else if (i < argc && strcmp(argv[i], "-w") == 0) {
            warm = 1;
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "-t") == 0) {
            timed = parse_arg("stream", argv[i + 1], "TIMED");
            i += 2;
        } else if (i + 1 < argc && strcmp(argv[i], "-g") == 0) {
            gate = argv[i + 1];
            i += 2;
        } else if (i + 2 < argc && strcmp(argv[i], "-s") == 0) {
            turn = argv[i + 1];
            char *end;
            turn_index = strtoul(argv[i + 2], &end, 10);
            if (argv[i + 2][0] < '0' || argv[i + 2][0] > '9' || *end != '\0') {
                fprintf(stderr, "stream: INDEX must be a non-negative integer, got '%s'\n", argv[i + 2]);
                return 2;
            }
            i += 3;
        } else if (i + 1 < argc && strcmp(argv[i], "-p") == 0) {
            passes = (int)parse_arg("stream", argv[i + 1], "PASSES");
            i += 2;
        } else {
            break;
        }
    }
    if (argc - i != 3) {
        fprintf(stderr, "usage: stream [-m] [-g GATE] [-s TURN INDEX] [-p PASSES] [-t TIMED] [-w] KERNEL THREADS "
                        "ELEMENTS_PER_THREAD\n");
        return 2;
    }
    kernel = -1;
    for (int k = 0; k < 5; k++)
        if (strcmp(argv[i], names[k]) == 0)
            kernel = k;
    if (kernel < 0) {
        fprintf(stderr, "stream: KERNEL = '%s' is not allowed; allowed: copy, scale, add, triad, read\n", argv[i]);
        return 2;
    }
    threads = parse_arg("stream", argv[i + 1], "THREADS");
    per = parse_arg("stream", argv[i + 2], "ELEMENTS_PER_THREAD");
    if (threads > 256) {
        fprintf(stderr, "stream: THREADS = %lu is out of range; allowed: 1 to 256\n", threads);
        return 2;
    }
    if (!timed)
        timed = per;
    if (timed > per) {
        fprintf(stderr, "stream: TIMED = %lu is out of range; allowed: 1 to ELEMENTS_PER_THREAD (%lu)\n", timed, per);
        return 2;
    }
    /* 64 B-aligned arrays a page apart beyond their size, as STREAM's offsets avoid aliasing */
    const size_t bytes = threads * per * sizeof(double), gap = (bytes + 4095) / 4096 * 4096 + 4096;
    char *base = aligned_alloc(4096, 3 * gap);
    if (!base) {
        fprintf(stderr, "stream: cannot allocate %zu bytes\n", 3 * gap);
        return 1;
    }
    a = (double *)base;
    b = (double *)(base + gap);
    c = (double *)(base + 2 * gap);
    if (turn && turn_index > 0) {
        char path[4096];
        turn_file(path, sizeof path, turn_index);
        while (access(path, F_OK) != 0)
            if (marks)
                m5_sleep_ns(2000);
    }
    sums = calloc(threads, sizeof(double));
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    pthread_t *tid = malloc(threads * sizeof(pthread_t));
    for (unsigned long t = 1; t < threads; t++)
        pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)t);
    worker((void *)0);
    for (unsigned long t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);

    /* From a=1, b=2, c=0.5, what every element must hold: each kernel writes
       an array it does not read, so one pass or many leave the same. */
    double ea = 1.0, eb = 2.0, ec = 0.5;
    if (kernel == 0) ec = ea;
    else if (kernel == 1) eb = scalar * ec;
    else if (kernel == 2) ec = ea + eb;
    else if (kernel == 3) ea = eb + scalar * ec;
    unsigned long bad = 0;
    /* Thread by thread, with no division per element (gem5's X86 runs DIV as a microcode loop). */
    for (size_t t = 0; t < threads; t++)
        for (size_t i = 0, j = t * per; i < per; i++, j++) {
            const int done = warm || i < timed;
            bad += a[j] != (done ? ea : 1.0) || b[j] != (done ? eb : 2.0) || c[j] != (done ? ec : 0.5);
        }
    /* read: a holds ones, so each sum counts the elements read (exact below 2^53) */
    for (size_t t = 0; kernel == 4 && t < threads; t++)
        bad += sums[t] != (double)(warm ? per : 0) + (double)timed * passes;
    const double moved = (double)threads * timed * sizeof(double) * (kernel == 4 ? 1 : kernel < 2 ? 2 : 3) * passes;
    printf("kernel=%s threads=%lu bytes=%.0f stream_gbps=%.3f check=%s t0_ns=%.0f t1_ns=%.0f\n", names[kernel],
           threads, moved, moved / (t1 - t0), bad ? "bad" : "ok", t0, t1);
    return bad ? 1 : 0;
}
