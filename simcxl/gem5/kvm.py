"""Can this host's /dev/kvm fast-forward a gem5 X86 guest? A one-second probe.

gem5's X86 KVM cores (X86KvmCPU) run the guest, kernel included, on the
host's KVM with no in-kernel interrupt controller. That is fast only where
KVM runs guest supervisor code natively (hardware virtualisation, VMX or
SVM, nested or not). Some hosts offer a /dev/kvm that does not: a software
hypervisor (e.g. PVM, "pagetable-based virtual machine", which cloud sandboxes
use inside their own VMs) runs guest user code natively but steps the guest's
ring-0 code through KVM's instruction emulator, about a microsecond an
instruction, no faster than gem5's own atomic core, and that emulator cannot run
instructions a stock Linux kernel uses there (RDTSCP, MONITOR/MWAIT, x87 and
SSE such as FNCLEX), which ends gem5 with "KVM: Internal error (suberror: 1)".

`probe()` builds a minimal VM as gem5 does (64-bit mode from the first
instruction, no irqchip), times a ring-0 loop of `instructions` instructions,
and says whether KVM cores are worth using. Standard library only (it runs in
gem5's embedded Python too); Linux x86-64 only.
"""
from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import struct
import time
from dataclasses import dataclass

# ioctl numbers (linux/kvm.h, x86-64)
KVM_GET_API_VERSION = 0xAE00
KVM_CREATE_VM = 0xAE01
KVM_GET_VCPU_MMAP_SIZE = 0xAE04
KVM_GET_SUPPORTED_CPUID = 0xC008AE05
KVM_SET_CPUID2 = 0x4008AE90
KVM_CREATE_VCPU = 0xAE41
KVM_SET_USER_MEMORY_REGION = 0x4020AE46
KVM_RUN = 0xAE80
KVM_SET_REGS = 0x4090AE82
KVM_GET_SREGS = 0x8138AE83
KVM_SET_SREGS = 0x4138AE84
KVM_EXIT_HLT, KVM_EXIT_INTERNAL_ERROR = 5, 17

#: Guest ring-0 instructions per second below which KVM cores are slower than
#: gem5's atomic core (a few million a second on gem5.opt): a native KVM runs
#: billions, an emulating one well under one million.
NATIVE_MIN_IPS = 50e6


@dataclass
class KvmProbe:
    usable: bool
    ring0_ips: float    # guest ring-0 instructions per wall second (0 if the probe could not run)
    reason: str         # one line: why KVM cores are (not) worth using here


def _segment(selector: int, type_: int, l: int, db: int) -> bytes:
    # struct kvm_segment: base, limit, selector, type, present, dpl, db, s, l, g, avl, unusable, padding
    return struct.pack("<QIHBBBBBBBBBB", 0, 0xFFFFFFFF, selector, type_, 1, 0, db, 1, l, 1, 0, 0, 0)


def probe(instructions: int = 200_000, device: str = "/dev/kvm") -> KvmProbe:
    """Time `instructions` guest ring-0 instructions (a dec/jnz loop) on `device`."""
    if not os.path.exists(device):
        return KvmProbe(False, 0.0, f"{device} does not exist (no KVM on this host)")
    if not os.access(device, os.R_OK | os.W_OK):
        return KvmProbe(False, 0.0, f"{device} is not readable and writable by this user")
    fds = []
    try:
        kvm = os.open(device, os.O_RDWR | os.O_CLOEXEC)
        fds.append(kvm)
        if fcntl.ioctl(kvm, KVM_GET_API_VERSION) != 12:
            return KvmProbe(False, 0.0, f"{device}: unexpected KVM API version")
        vm = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        fds.append(vm)
        size = 1 << 21
        mem = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        fcntl.ioctl(vm, KVM_SET_USER_MEMORY_REGION, struct.pack("<IIQQQ", 0, 0, 0, size, addr))
        # Page tables: PML4 0x1000 -> PDPT 0x2000 -> PD 0x3000, one 2 MiB page at 0.
        mem[0x1000:0x1008] = struct.pack("<Q", 0x2003)
        mem[0x2000:0x2008] = struct.pack("<Q", 0x3003)
        mem[0x3000:0x3008] = struct.pack("<Q", 0x83)
        # GDT at 0x500: null, 64-bit code (0x8), data (0x10).
        mem[0x500:0x518] = struct.pack("<QQQ", 0, 0x00AF9A000000FFFF, 0x00CF92000000FFFF)
        loops = max(1, instructions // 2)
        # 0x4000: mov ecx, loops; 1: dec rcx; jnz 1b; hlt
        code = b"\xb9" + struct.pack("<I", loops) + b"\x48\xff\xc9\x75\xfb\xf4"
        mem[0x4000:0x4000 + len(code)] = code
        vcpu = fcntl.ioctl(vm, KVM_CREATE_VCPU, 0)
        fds.append(vcpu)
        # The host's CPUID as the guest's: hardware KVM refuses long mode (EFER.LME)
        # to a vCPU whose CPUID does not offer it.
        nent = 256
        cpuid = bytearray(struct.pack("<II", nent, 0) + bytes(40 * nent))
        fcntl.ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid)
        fcntl.ioctl(vcpu, KVM_SET_CPUID2, cpuid)
        run = mmap.mmap(vcpu, fcntl.ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0), flags=mmap.MAP_SHARED,
                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
        sregs = bytearray(fcntl.ioctl(vcpu, KVM_GET_SREGS, bytes(312)))
        code_seg, data_seg = _segment(0x8, 11, 1, 0), _segment(0x10, 3, 0, 1)
        sregs[0:24] = code_seg                  # cs
        for i in (1, 2, 3, 4, 5):               # ds es fs gs ss
            sregs[24 * i:24 * i + 24] = data_seg
        sregs[192:208] = struct.pack("<QH6x", 0x500, 23)           # gdt
        # cr0 (PE, MP, ET, NE, PG), cr2, cr3, cr4 (PAE), cr8, efer (LME, LMA)
        sregs[224:272] = struct.pack("<QQQQQQ", 0x80000033, 0, 0x1000, 0x20, 0, 0x500)
        fcntl.ioctl(vcpu, KVM_SET_SREGS, bytes(sregs))
        regs = [0] * 18
        regs[6], regs[16], regs[17] = 0x8000, 0x4000, 0x2   # rsp, rip, rflags
        fcntl.ioctl(vcpu, KVM_SET_REGS, struct.pack("<18Q", *regs))
        start = time.perf_counter()
        for _ in range(100000):
            fcntl.ioctl(vcpu, KVM_RUN, 0)
            reason = struct.unpack_from("<I", run, 8)[0]
            if reason == KVM_EXIT_HLT:
                break
            if reason == KVM_EXIT_INTERNAL_ERROR:
                return KvmProbe(False, 0.0, f"{device} could not run a ring-0 loop (KVM internal error)")
        else:
            return KvmProbe(False, 0.0, f"{device}: the probe's guest never halted")
        wall = time.perf_counter() - start
        run.close()
        ips = 2 * loops / max(wall, 1e-9)
    except OSError as e:
        return KvmProbe(False, 0.0, f"{device}: the probe VM failed ({e.strerror or e})")
    finally:
        for fd in reversed(fds):
            os.close(fd)
    if ips < NATIVE_MIN_IPS:
        return KvmProbe(False, ips, f"{device} emulates guest kernel code ({ips / 1e6:.2f} M instructions/s: no "
                                    "hardware virtualisation), no faster than gem5's atomic core")
    return KvmProbe(True, ips, f"{device} runs guest kernel code natively ({ips / 1e6:.0f} M instructions/s)")


if __name__ == "__main__":
    p = probe()
    print(f"usable={p.usable} ring0_ips={p.ring0_ips:.3g} reason={p.reason}")
