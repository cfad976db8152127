#!/bin/sh
# simcxl-region ROOT_DECODER GRANULARITY SIZE MEMDEV...
#
# Create, commit and enable a volatile CXL region through the kernel's sysfs
# interface (Documentation/ABI/testing/sysfs-bus-cxl): the steps `cxl
# create-region -t ram` takes, for cxl-cli releases (Debian 12's 76) that
# refuse ram regions. The kernel's cxl_region driver commits the decoders
# (cxl_decoder_commit: the same register writes) and hands the region to dax
# and kmem. Prints the region's name.
set -e
[ $# -ge 4 ] || { echo "usage: simcxl-region ROOT_DECODER GRANULARITY SIZE MEMDEV..." >&2; exit 2; }
bus=/sys/bus/cxl/devices
root=$bus/$1 gran=$2 size=$3
shift 3
ways=$#
region=$(cat $root/create_ram_region)
echo $region > $root/create_ram_region
r=$bus/$region
echo $gran > $r/interleave_granularity
echo $ways > $r/interleave_ways
echo $size > $r/size
i=0
for mem in "$@"; do
    ep=
    for e in $bus/endpoint*; do
        [ "$(basename "$(readlink -f $e/uport)")" = "$mem" ] && ep=$e
    done
    [ -n "$ep" ] || { echo "simcxl-region: no endpoint port for $mem" >&2; exit 1; }
    # The endpoint's first decoder with no capacity yet (decoders commit in order).
    dec=
    for d in $ep/decoder[0-9]*.[0-9]*; do
        # dpa_size reads 0x0 when nothing is allocated (sysfs prints it in hex).
        [ -z "$dec" ] && [ $(($(cat $d/dpa_size))) -eq 0 ] && dec=$d
    done
    [ -n "$dec" ] || { echo "simcxl-region: no free decoder on $(basename $ep)" >&2; exit 1; }
    echo ram > $dec/mode
    echo $((size / ways)) > $dec/dpa_size
    echo $(basename $dec) > $r/target$i
    i=$((i + 1))
done
echo 1 > $r/commit
echo $region > /sys/bus/cxl/drivers/cxl_region/bind
echo "simcxl-region: $region"
