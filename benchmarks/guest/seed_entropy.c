/*
 * Credit the guest kernel's random pool with a fixed seed, so that its CRNG is
 * ready from the start.
 *
 * A simulated machine has almost no entropy: the first blocking getrandom()
 * (json-c's hash seed in cxl-cli, libuuid; glibc's malloc asks with
 * GRND_NONBLOCK and does not wait) blocks until the kernel
 * has gathered enough, and Linux 5.18 and later gather it by running a
 * jitter loop on the CPU meanwhile: about 1.6 simulated seconds of busy
 * cycles on gem5's cores (tens of minutes on an atomic core) before
 * `cxl list` prints a line. A fixed seed keeps runs reproducible; nothing in
 * a simulated guest needs secrets.
 *
 * Build: cc -O2 -static -o seed_entropy seed_entropy.c
 */
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
    struct {
        int entropy_count;
        int buf_size;
        unsigned char buf[32];
    } seed;
    seed.entropy_count = 8 * (int)sizeof seed.buf; /* bits credited */
    seed.buf_size = (int)sizeof seed.buf;
    for (unsigned i = 0; i < sizeof seed.buf; ++i)
        seed.buf[i] = (unsigned char)(0x9E + 37 * i);
    int fd = open("/dev/urandom", O_WRONLY);
    if (fd < 0 || ioctl(fd, RNDADDENTROPY, &seed) != 0) {
        perror("seed_entropy: RNDADDENTROPY on /dev/urandom");
        return 1;
    }
    close(fd);
    return 0;
}
