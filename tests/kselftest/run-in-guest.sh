#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the maia kselftests in a guest and pass their TAP and exit status on.
#
#   tests/kselftest/run-in-guest.sh [--no-build] [--devices N] [--model M]
#                                   [--device-opts OPTS] [TEST...]
#
# One boot with two maia devices, cabled as a fabric ring (so two_devices and
# fabric_test run rather than skip), with a non-default HBM size (so the probe test sees the QEMU property
# come through, not a default). The guest's console log level is lowered
# to emergencies only, because firmware_fail makes the driver print errors
# on purpose and they would interleave with the TAP; a kernel warning or
# oops still fails the run (--fail-on-taint) and its log goes to stderr.
# slub_debug=U records the allocation stack of every live slab object, which
# load_cycles reads to find objects maia.ko allocated and never freed
# (Documentation/reliability.rst; it costs a few seconds in this boot).
# --model maia100|maia200 boots that chip model (the QEMU property model=;
# hardware 1.8) and tells the tests which to expect (MAIA_EXPECT_MODEL, and
# the preset's tile layout: 16x4 or 32x4); --device-opts adds QEMU device
# properties after hbm-size (e.g. "queues=4").
# Exit status: 0 if every test passed or skipped; else nonzero (124 on
# timeout, 125 if the guest died).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
devices=2
hbm_size=$((2 << 30))
build=()
model=
extra_opts=
while [ $# -gt 0 ]; do
	case "$1" in
	--no-build) build=(--no-build) ;;
	--devices) devices=$2; shift ;;
	--model) model=$2; shift ;;
	--device-opts) extra_opts=$2; shift ;;
	-h | --help) sed -n '3,21s/^# \{0,1\}//p' "$0"; exit 0 ;;
	--) shift; break ;;
	-*) echo "run-in-guest.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done

opts="hbm-size=$hbm_size"
expect=(MAIA_EXPECT_DEVICES="$devices" MAIA_EXPECT_HBM_SIZE="$hbm_size")
case "$model" in
"") ;;
maia100) opts+=",model=maia100"; expect+=(MAIA_EXPECT_MODEL=maia100) ;;
maia200) opts+=",model=maia200"
	expect+=(MAIA_EXPECT_MODEL=maia200 MAIA_EXPECT_CLUSTERS=32 MAIA_EXPECT_TILES=4) ;;
*) echo "run-in-guest.sh: --model is maia100 or maia200, not $model" >&2; exit 2 ;;
esac
[ -z "$extra_opts" ] || opts+=",$extra_opts"

exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --fabric ring \
	--devices "$devices" --device-opts "$opts" \
	--append slub_debug=U --loglevel 1 --fail-on-taint --timeout 1800 -- \
	env "${expect[@]}" /kselftest/run_kselftest.sh "$@"
