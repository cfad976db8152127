/*
 * gem5's pseudo-ops from a full-system guest: exit, checkpoint, readfile.
 *
 *   m5exit [-i] [exit [DELAY_NS] | checkpoint [DELAY_NS [PERIOD_NS]] | readfile]
 *
 * (also installed as /bin/m5). With no operation it exits the simulation.
 * readfile copies the host file given to gem5 as the system's readfile to
 * standard output, as gem5's own `m5 readfile` does.
 *
 * Two ways to reach gem5 on x86 (gem5's include/gem5/asm/generic/m5ops.h and
 * util/m5/src/abi/x86):
 *  - by default, a load from the board's m5ops window (x86 boards: 64 KiB at
 *    0xFFFF0000, reserved in the e820 map) at offset op << 8, mapped through
 *    /dev/mem. gem5 serves it on every CPU model, KVM included, so this is the
 *    way to checkpoint after a KVM boot.
 *  - -i: the reserved two-byte opcode 0F 04 followed by the op number as a
 *    16-bit immediate. Only gem5's own CPU models decode it; under KVM, QEMU
 *    or on real hardware it is an invalid opcode and the process dies of
 *    SIGILL.
 * Arguments go in rdi, rsi, rdx and the result comes back in rax, the
 * System V calling convention, in both ways. Outside gem5 the window is
 * either absent (mmap fails: exit 1 with a message) or plain memory.
 *
 * Build: cc -O2 -static -o m5exit m5exit.c
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define M5OP_ADDR 0xFFFF0000ul
#define M5OP_WINDOW 0x10000ul
#define M5OP_EXIT 0x21
#define M5OP_CHECKPOINT 0x43
#define M5OP_READ_FILE 0x50

static volatile uint8_t *window; /* NULL: instruction mode */

/* The opcode carries the op number in its immediate, so each op is its own asm. */
#define M5_INST(op, a, b, c, ret)                                                  \
    __asm__ volatile(".byte 0x0f, 0x04; .word %c1"                                \
                     : "=a"(ret)                                                   \
                     : "i"(op), "D"(a), "S"(b), "d"(c)                             \
                     : "memory")

static uint64_t m5op_addr(unsigned op, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t ret;
    const volatile uint64_t *slot = (const volatile uint64_t *)(window + ((uintptr_t)op << 8));
    __asm__ volatile("movq (%1), %0" : "=a"(ret) : "r"(slot), "D"(a), "S"(b), "d"(c) : "memory");
    return ret;
}

static uint64_t m5_exit(uint64_t delay)
{
    uint64_t ret;
    if (window)
        return m5op_addr(M5OP_EXIT, delay, 0, 0);
    M5_INST(M5OP_EXIT, delay, 0, 0, ret);
    return ret;
}

static uint64_t m5_checkpoint(uint64_t delay, uint64_t period)
{
    uint64_t ret;
    if (window)
        return m5op_addr(M5OP_CHECKPOINT, delay, period, 0);
    M5_INST(M5OP_CHECKPOINT, delay, period, 0, ret);
    return ret;
}

static uint64_t m5_read_file(void *buf, uint64_t len, uint64_t offset)
{
    uint64_t ret;
    if (window)
        return m5op_addr(M5OP_READ_FILE, (uint64_t)(uintptr_t)buf, len, offset);
    M5_INST(M5OP_READ_FILE, (uint64_t)(uintptr_t)buf, len, offset, ret);
    return ret;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "m5exit: %s must be a non-negative integer, got '%s'\n", what, s);
        exit(2);
    }
    return v;
}

static int usage(void)
{
    fprintf(stderr, "usage: m5exit [-i] [exit [DELAY_NS] | checkpoint [DELAY_NS [PERIOD_NS]] | readfile]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int a = 1, inst = 0;
    if (a < argc && strcmp(argv[a], "-i") == 0) {
        inst = 1;
        a++;
    }
    const char *op = a < argc ? argv[a++] : "exit";
    const int nargs = argc - a;
    if ((strcmp(op, "exit") == 0 && nargs > 1) || (strcmp(op, "checkpoint") == 0 && nargs > 2) ||
        (strcmp(op, "readfile") == 0 && nargs > 0))
        return usage();
    if (strcmp(op, "exit") && strcmp(op, "checkpoint") && strcmp(op, "readfile"))
        return usage();
    if (!inst) {
        int fd = open("/dev/mem", O_RDWR | O_SYNC);
        void *m = fd < 0 ? MAP_FAILED
                         : mmap(NULL, M5OP_WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)M5OP_ADDR);
        if (m == MAP_FAILED) {
            perror("m5exit: cannot map gem5's m5ops window at 0xFFFF0000 through /dev/mem");
            return 1;
        }
        window = m;
    }
    if (strcmp(op, "exit") == 0) {
        m5_exit(nargs ? number(argv[a], "DELAY_NS") : 0);
    } else if (strcmp(op, "checkpoint") == 0) {
        m5_checkpoint(nargs ? number(argv[a], "DELAY_NS") : 0, nargs > 1 ? number(argv[a + 1], "PERIOD_NS") : 0);
    } else {
        static char buf[4096];
        uint64_t offset = 0, got;
        /* gem5 writes through the guest's page tables: the page must be mapped (Linux pages on demand) */
        memset(buf, 1, sizeof buf);
        while ((got = m5_read_file(buf, sizeof buf, offset)) > 0) {
            if (got > sizeof buf || fwrite(buf, 1, got, stdout) != got) {
                fprintf(stderr, "m5exit: readfile failed at offset %llu\n", (unsigned long long)offset);
                return 1;
            }
            offset += got;
        }
    }
    return 0;
}
