#!/bin/sh
# SPDX-License-Identifier: MIT
# In the guest: run the libmaia tests as one TAP stream (each program's own
# TAP indented with "# ", as the kernel's kselftest runner does). The unplug
# test runs last because it removes and rescans the device. libmaia_test
# and libmaia_tvp run twice: as libmaia chooses (user queues when the driver has them) and
# with MAIA_USERQ=0 (every job through the SUBMIT ioctl).
DIR=$(cd "$(dirname "$0")" && pwd)
set -- libmaia_test libmaia_test@kernel-submit libmaia_tvp libmaia_tvp@kernel-submit libmaia_telemetry libmaia_unplug
echo "TAP version 13"
echo "1..$#"
n=0
failed=0
rc_file=$(mktemp)
for t in "$@"; do
	n=$((n + 1))
	case "$t" in
	*@kernel-submit) prog=${t%@*} userq=0 ;;
	*) prog=$t userq=${MAIA_USERQ:-1} ;;
	esac
	{
		MAIA_USERQ=$userq "$DIR/$prog" 2>&1
		echo $? >"$rc_file"
	} | sed 's/^/# /'
	case "$(cat "$rc_file")" in
	0) echo "ok $n libmaia: $t" ;;
	4) echo "ok $n libmaia: $t # SKIP" ;;
	*) echo "not ok $n libmaia: $t"; failed=$((failed + 1)) ;;
	esac
done
rm -f "$rc_file"
[ "$failed" -eq 0 ]
