#!/bin/sh
# SPDX-License-Identifier: MIT
# In the guest (busybox sh): run unplug_test against the first maia device
# while the host unplugs it, then check that maia.ko is unused and unloads
# and that the kernel log has no warning. TAP lines without numbers.
#
#   guest-run.sh VICTIM_PCI_ADDRESS [OTHER_PCI_ADDRESS]
dir=$(dirname "$0")
status=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; status=1; }

# A parked job must not count as hung while the unplug is on its way.
echo 0 >/sys/module/maia/parameters/job_timeout_ms || notok "job_timeout_ms=0"
if ! "$dir/unplug_test" "$@"; then
	status=1
	# Whatever is still stuck in the kernel (a removal that never ends).
	for t in /proc/[0-9]*/task/[0-9]*; do
		grep -q '^State:.*D' "$t/status" 2>/dev/null || continue
		echo "# blocked task $(cat "$t/comm") (${t#/proc/}):"
		sed 's/^/#   /' "$t/stack"
	done
fi

refcnt=$(cat /sys/module/maia/refcnt)
if [ "$refcnt" = 0 ]; then ok "maia.ko unused (refcnt 0)"; else notok "maia.ko refcnt $refcnt"; fi
if out=$(rmmod maia 2>&1); then ok "rmmod maia"; else notok "rmmod maia: $out"; fi
if [ -e /sys/module/maia ]; then notok "maia.ko still loaded"; fi
# The debug kernel's kmemleak announces itself at boot: not a report.
bad=$(dmesg | grep -E 'BUG|WARNING|Oops|INFO: task|refcount_t|leak|general protection' |
	grep -v 'kmemleak: Kernel memory leak detector initialized' || true)
if [ -z "$bad" ]; then
	ok "no BUG/WARNING/Oops/hung task in the kernel log"
else
	notok "the kernel log has:"
	echo "$bad" | sed 's/^/# /'
fi
exit $status
