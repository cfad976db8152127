/* What the gem5 SE guests share: simulated time, argument parsing, gem5's work ops. */
#ifndef SIMCXL_GUEST_H
#define SIMCXL_GUEST_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* gem5 pseudo-ops on x86: 0F 04 then the op number (include/gem5/asm/generic/m5ops.h) */
#define M5OP_WORK_BEGIN 0x5a
#define M5OP_WORK_END 0x5b
#define M5_WORK(op) __asm__ volatile(".byte 0x0f, 0x04; .word %c0" ::"i"(op), "D"(0L), "S"(0L) : "memory")

/* gem5's SE mode answers clock_gettime from simulated time. */
static inline double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A positive integer argument, or exit 2 naming it (`prog` prefixes the message). */
static inline unsigned long parse_arg(const char *prog, const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*s == '\0' || *end != '\0' || v == 0) {
        fprintf(stderr, "%s: %s must be a positive integer, got '%s'\n", prog, what, s);
        exit(2);
    }
    return v;
}

#endif
