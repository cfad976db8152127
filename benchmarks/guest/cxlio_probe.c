/* CXL.io through gem5 as a driver sees it (gem5_configs/cxl_io_probe.py maps
 * the ECAM window and a BAR window into this process, uncached): dumps each
 * function's 4 KiB of configuration space, places the Type-3 device's BAR 0,
 * enables memory space, reads its register blocks, runs a mailbox command as
 * cxl_pci does, and makes malformed accesses the devices must count and
 * answer with all ones. Prints "key value" lines.
 *
 * usage: cxlio_probe ECAM_VA FIRST_BUS BAR_VA BAR_PA BUS:DEV.FN... (the first
 * function given is the Type-3 device; a function that does not exist is
 * probed at dev 31 of the first bus) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint8_t *ecam, *bar;
static unsigned first_bus;

static volatile uint8_t *cfg(unsigned bus, unsigned dev, unsigned fn, unsigned off)
{
    return ecam + ((unsigned long)(bus - first_bus) << 20) + (dev << 15) + (fn << 12) + off;
}

static uint32_t rd32(volatile uint8_t *p) { return *(volatile uint32_t *)p; }
static void wr32(volatile uint8_t *p, uint32_t v) { *(volatile uint32_t *)p = v; }
static uint64_t rd64(volatile uint8_t *p) { return *(volatile uint64_t *)p; }
static void wr64(volatile uint8_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s ECAM_VA FIRST_BUS BAR_VA BAR_PA BUS:DEV.FN...\n", argv[0]);
        return 2;
    }
    ecam = (volatile uint8_t *)strtoul(argv[1], NULL, 0);
    first_bus = (unsigned)strtoul(argv[2], NULL, 0);
    bar = (volatile uint8_t *)strtoul(argv[3], NULL, 0);
    const uint64_t bar_pa = strtoull(argv[4], NULL, 0);
    unsigned b[8], d[8], f[8];
    int n = 0;
    for (int i = 5; i < argc && n < 8; ++i, ++n)
        if (sscanf(argv[i], "%x:%x.%x", &b[n], &d[n], &f[n]) != 3) {
            fprintf(stderr, "bad function %s\n", argv[i]);
            return 2;
        }
    for (int i = 0; i < n; ++i)
        for (unsigned off = 0; off < 4096; off += 4)
            printf("cfg %02x:%02x.%x %03x %08x\n", b[i], d[i], f[i], off, rd32(cfg(b[i], d[i], f[i], off)));
    printf("absent %08x\n", rd32(cfg(first_bus, 31, 0, 0)));

    /* Malformed: a misaligned dword read, a quadword read and a misaligned dword write (one cache line each). */
    volatile uint8_t *dev = cfg(b[0], d[0], f[0], 0);
    printf("misaligned %08x\n", rd32(dev + 2));
    printf("quadword %016llx\n", (unsigned long long)rd64(dev + 8));
    *(volatile uint32_t *)(dev + 0x101) = 0;

    /* BAR 0 (64-bit) where the config script mapped it, then memory space on. */
    wr32(dev + 0x10, (uint32_t)bar_pa);
    wr32(dev + 0x14, (uint32_t)(bar_pa >> 32));
    wr32(dev + 0x04, rd32(dev + 0x04) | 0x2);
    printf("bar0 %08x %08x\n", rd32(dev + 0x10), rd32(dev + 0x14));
    /* CXL.cache/mem capability headers, RAS and the HDM decoders, as cxl_port reads them. */
    for (unsigned off = 0x1000; off < 0x1200; off += 4) printf("component %05x %08x\n", off, rd32(bar + off));
    for (unsigned off = 0x10000; off < 0x10040; off += 8)
        printf("device %05x %016llx\n", off, (unsigned long long)rd64(bar + off));

    /* Mailbox (device registers at 64 KiB, mailbox at +0x200): IDENTIFY, no input. */
    volatile uint8_t *mb = bar + 0x10000 + 0x200;
    wr64(mb + 0x08, 0x4000);
    wr32(mb + 0x04, 1);
    printf("mbox_status %016llx\n", (unsigned long long)rd64(mb + 0x10));
    const unsigned len = (unsigned)(rd64(mb + 0x08) >> 16 & 0x1FFFFF);
    printf("mbox_len %u\n", len);
    printf("mbox_payload ");
    for (unsigned i = 0; i < len && i < 2048; ++i) printf("%02x", mb[0x20 + i]);
    printf("\n");
    return 0;
}
