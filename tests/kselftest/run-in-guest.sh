#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the maia kselftests in a guest and pass their TAP and exit status on.
#
#   tests/kselftest/run-in-guest.sh [--no-build] [--devices N] [TEST...]
#
# One boot with two maia devices (so two_devices runs rather than skips)
# with a non-default HBM size (so the probe test sees the QEMU property
# come through, not a default). The guest's console log level is lowered
# to emergencies only, because firmware_fail makes the driver print errors
# on purpose and they would interleave with the TAP; a kernel warning or
# oops still fails the run (--fail-on-taint) and its log goes to stderr.
# slub_debug=U records the allocation stack of every live slab object, which
# load_cycles reads to find objects maia.ko allocated and never freed
# (Documentation/reliability.rst; it costs a few seconds in this boot).
# Exit status: 0 if every test passed or skipped; else nonzero (124 on
# timeout, 125 if the guest died).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
devices=2
hbm_size=$((2 << 30))
build=()
while [ $# -gt 0 ]; do
	case "$1" in
	--no-build) build=(--no-build) ;;
	--devices) devices=$2; shift ;;
	-h | --help) sed -n '3,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
	--) shift; break ;;
	-*) echo "run-in-guest.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done

exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --fabric ring \
	--devices "$devices" --device-opts "hbm-size=$hbm_size" \
	--append slub_debug=U --loglevel 1 --fail-on-taint --timeout 1800 -- \
	env MAIA_EXPECT_DEVICES="$devices" MAIA_EXPECT_HBM_SIZE="$hbm_size" \
	/kselftest/run_kselftest.sh "$@"
