#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Surprise hot-unplug: boot a guest with two maia devices behind hotpluggable
# PCIe root ports, put work and waiters on the first (tests/hotplug/
# unplug_test.c), unplug it with QMP device_del while they are blocked, and
# check that they all wake with an error, everything unmaps and closes,
# maia.ko unloads, the second device keeps working and the kernel did not
# warn (Documentation/reliability.rst, "Surprise hot-unplug").
#
#   tests/hotplug/run-in-guest.sh [--no-build]
#
# Prints TAP. Exit status 0 if everything passed; 124 on timeout.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$TOP/build/hotplug-tests
TIMEOUT=120		# the whole guest run
UNPLUG_TIMEOUT=30	# device_del to DEVICE_DELETED
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
-h | --help) sed -n '3,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2
fi
make -C "$TOP/tests/hotplug" --no-print-directory OUTPUT="$OUT" \
	USERSPACE_BUILD="$TOP/build/userspace" >&2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/maia-hotplug.XXXXXX")
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

mkfifo "$tmp/out"
start=$(date +%s.%N)
setsid "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --hotplug --devices 2 --qmp "$qmp" \
	--fail-on-taint --timeout "$TIMEOUT" --file "$OUT:/root/hotplug" -- \
	/root/hotplug/guest-run.sh 0000:01:00.0 0000:02:00.0 >"$tmp/out" &
guest_pid=$!
exec 3<"$tmp/out"

n=0
tap() { # tap ok|not-ok TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
ready=0
deadline=$(($(date +%s) + TIMEOUT + 10))
while :; do
	left=$((deadline - $(date +%s)))
	if [ $left -le 0 ]; then
		tap not-ok "the guest run did not end within $TIMEOUT s"
		exit 124
	fi
	IFS= read -r -t "$left" line <&3 || { [ -z "${line:-}" ] && break; }
	case "$line" in
	"ok - "*) tap ok "${line#ok - }" ;;
	"not ok - "*) tap not-ok "${line#not ok - }" ;;
	HOTPLUG-READY)
		ready=1
		t0=$(date +%s.%N)
		if qmp_out=$("$TOP/tests/hotplug/qmp-device-del" "$qmp" maia0 "$UNPLUG_TIMEOUT"); then
			tap ok "QMP device_del maia0: $(echo "$qmp_out" | tail -1 | sed 's/^qmp: //')"
		else
			tap not-ok "QMP device_del maia0: $(echo "$qmp_out" | tail -1 | sed 's/^qmp: //')"
		fi
		echo "$qmp_out" | sed 's/^/# /'
		;;
	*) echo "# $line" ;;
	esac
	line=
done
exec 3<&-
rc=0
wait "$guest_pid" || rc=$?
guest_pid=
[ $ready = 1 ] || tap not-ok "the guest never reported its waiters blocked (HOTPLUG-READY)"
if [ $rc -ne 0 ]; then
	tap not-ok "the guest run exited with status $rc (run-guest: 1 = failure or new kernel taint)"
fi
echo "1..$n"
awk -v s="$start" -v e="$(date +%s.%N)" -v t="${t0:-0}" \
	'BEGIN { printf "# %.1f s in all, unplug started %.1f s after boot began\n", e - s, t - s }'
[ $rc -eq 0 ]
