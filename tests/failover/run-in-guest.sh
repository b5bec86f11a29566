#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fabric failover on a ring of two (Documentation/hw/fabric.rst, "Failover"):
# boot a guest with two maia devices ring-cabled (two hubport cables between
# them), wait until both cables are up, take cable 0's carrier away with QMP
# set_link off (device 0's port 0 to device 1's port 1), wait until both of
# its ends are DOWN, and check that:
#   - each end of cable 0 counted exactly one link DOWN (a dead peer) and
#     cable 1 none (clean boot, then one cut);
#   - all-reduces in FP32 and BF16, at 4100 bytes per rank (gather-reduce)
#     and 1 MiB (the ring), run over cable 1 both ways and match the CPU
#     (maia-coll-perf: 0 wrong elements), with no device reset.
# The cable is cut before the collectives; a cut during one still fails it
# (FABRIC_LINK), which the cluster suite checks.
#
#   tests/failover/run-in-guest.sh [--no-build]
#
# Prints TAP. Exit status 0 if everything passed; 124 on timeout.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TIMEOUT=180		# the whole guest run
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
-h | --help) sed -n '3,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/maia-failover.XXXXXX")
qmp=$tmp/qmp.sock
guest_pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	# run-guest leads its own process group: QEMU goes with it.
	if [ -n "$guest_pid" ] && kill -0 "$guest_pid" 2>/dev/null; then
		kill -TERM -- "-$guest_pid" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$guest_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# In the guest: both cables up, then the host cuts cable 0; every wait is
# bounded (60 s: a loaded host, not a timing claim).
# shellcheck disable=SC2016 # expanded by the guest's shell
GUEST='
f0=/sys/class/accel/accel0/device/fabric f1=/sys/class/accel/accel1/device/fabric
i=0
while [ $i -lt 600 ] && grep -qx down $f0/port*/state $f1/port*/state; do sleep 0.1; i=$((i + 1)); done
# run-guest holds a line'"'"'s newline back until the next line: a second one.
echo FAILOVER-READY
echo "# waiting for the host to cut cable 0"
i=0
while [ $i -lt 600 ] && { grep -qx up $f0/port0/state || grep -qx up $f1/port1/state; }; do
	sleep 0.1; i=$((i + 1))
done
for p in $f0/port0 $f1/port1 $f0/port1 $f1/port0; do
	echo "PORT ${p#/sys/class/accel/} $(cat $p/state) link_downs $(cat $p/link_downs) dead_peer $(cat $p/dead_peer)"
done
maia-coll-perf --first-dev 0 --ndev 2 --op all_reduce --dtype all --sizes 4100,1048580 \
	--iters 2 --warmup 0
echo "RESETS $(cat /sys/class/accel/accel0/device/reset_count) $(cat /sys/class/accel/accel1/device/reset_count)"'

mkfifo "$tmp/out"
setsid "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices 2 --fabric ring --qmp "$qmp" \
	--timeout "$TIMEOUT" -- sh -c "$GUEST" >"$tmp/out" 2>&1 &
guest_pid=$!
exec 3<"$tmp/out"

n=0
tap() { # tap ok|not-ok TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
ready=0 done0=0 ports="" resets=""
deadline=$(($(date +%s) + TIMEOUT + 10))
while :; do
	left=$((deadline - $(date +%s)))
	if [ $left -le 0 ]; then
		tap not-ok "the guest run did not end within $TIMEOUT s"
		exit 124
	fi
	IFS= read -r -t "$left" line <&3 || { [ -z "${line:-}" ] && break; }
	case "$line" in
	*"is not connected to host network"*) ;;
	FAILOVER-READY)
		ready=1
		if out=$("$TOP/tests/failover/qmp-set-link" "$qmp" fab0p0 off); then
			tap ok "both cables up; QMP set_link fab0p0 off (cable 0: device 0 port 0 - device 1 port 1): $out"
		else
			tap not-ok "QMP set_link fab0p0 off: $out"
		fi
		;;
	RESETS*)
		echo "# $line"
		resets=${line#RESETS }
		;;
	PORT*)
		echo "# $line"
		ports="$ports${line#PORT }
"
		;;
	*) echo "# $line" ;;
	esac
	case "$line" in "# done: 0 wrong elements") done0=$((done0 + 1)) ;; esac
	line=
done
exec 3<&-
rc=0
wait "$guest_pid" || rc=$?
guest_pid=
[ $ready = 1 ] || tap not-ok "the guest never saw both cables up (FAILOVER-READY)"
want="accel0/device/fabric/port0 down link_downs 1 dead_peer 1
accel1/device/fabric/port1 down link_downs 1 dead_peer 1
accel0/device/fabric/port1 up link_downs 0 dead_peer 0
accel1/device/fabric/port0 up link_downs 0 dead_peer 0
"
if [ "$ports" = "$want" ]; then
	tap ok "cable 0 cut: both of its ends DOWN with exactly one link down (a dead peer) each; cable 1 up, no link down"
else
	tap not-ok "cable 0 cut: the ports' states and counters are not one down each on cable 0 and none on cable 1"
fi
if [ $rc -eq 0 ] && [ $done0 -ge 1 ] && [ "$resets" = "0 0" ]; then
	tap ok "all-reduce FP32 and BF16 at 4100 B (gather-reduce) and 1 MiB (ring) per rank over cable 1 both ways: 0 wrong elements, no device reset"
else
	tap not-ok "all-reduce over the remaining cable (guest status $rc, $done0 runs with 0 wrong, resets: $resets)"
fi
echo "1..$n"
[ $rc -eq 0 ]
