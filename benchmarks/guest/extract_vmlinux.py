#!/usr/bin/env python3
"""Pull the uncompressed kernel (an ELF vmlinux, which gem5's X86 full-system
loader needs) out of a compressed bzImage such as a distribution's
/boot/vmlinuz-*.

    python3 benchmarks/guest/extract_vmlinux.py /boot/vmlinuz-6.1.0-57-cloud-amd64 vmlinux

A bzImage is a setup stub followed by the compressed kernel; the kernel's
build picks the compressor. Each known compressor's magic is tried at every
place it occurs until one decompresses to an ELF file. gzip and xz use
Python's own modules; lz4 and zstd use the `lz4` and `zstd` commands.
"""

import gzip
import lzma
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

ELF = b"\x7fELF"


def _gzip(blob: bytes) -> bytes:
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(blob)


def _xz(blob: bytes) -> bytes:
    return lzma.LZMADecompressor().decompress(blob)


def _tool(*cmd):
    def run(blob: bytes) -> bytes:
        if not shutil.which(cmd[0]):
            raise RuntimeError(f"needs the {cmd[0]} command")
        return subprocess.run(list(cmd), input=blob, capture_output=True).stdout
    return run


COMPRESSORS = (
    ("gzip", b"\x1f\x8b\x08", _gzip),
    ("xz", b"\xfd7zXZ\x00", _xz),
    ("lz4", b"\x02\x21\x4c\x18", _tool("lz4", "-dc")),
    ("zstd", b"\x28\xb5\x2f\xfd", _tool("zstd", "-dc")),
)


def extract(image: bytes) -> bytes:
    if image[:4] == ELF:
        return image
    missing = []
    for name, magic, decompress in COMPRESSORS:
        at = image.find(magic)
        while at != -1:
            try:
                out = decompress(image[at:])
            except RuntimeError as e:
                missing.append(f"{name}: {e}")
                break
            except (zlib.error, lzma.LZMAError, EOFError, gzip.BadGzipFile):
                out = b""
            if out[:4] == ELF:
                return out
            at = image.find(magic, at + 1)
    raise ValueError("no compressed ELF kernel found in the image"
                     + (f" ({'; '.join(missing)})" if missing else ""))


def main(argv) -> int:
    if len(argv) != 3:
        print("usage: extract_vmlinux.py BZIMAGE OUT", file=sys.stderr)
        return 2
    try:
        kernel = extract(Path(argv[1]).read_bytes())
    except (OSError, ValueError) as e:
        print(f"extract_vmlinux: {argv[1]}: {e}", file=sys.stderr)
        return 1
    Path(argv[2]).write_bytes(kernel)
    print(f"wrote {argv[2]}: {len(kernel)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
