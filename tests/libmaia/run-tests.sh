#!/bin/sh
# SPDX-License-Identifier: MIT
# In the guest: run the libmaia tests as one TAP stream (each program's own
# TAP indented with "# ", as the kernel's kselftest runner does). The unplug
# test runs last because it removes and rescans the device.
DIR=$(cd "$(dirname "$0")" && pwd)
set -- libmaia_test libmaia_telemetry libmaia_unplug
echo "TAP version 13"
echo "1..$#"
n=0
failed=0
rc_file=$(mktemp)
for t in "$@"; do
	n=$((n + 1))
	{
		"$DIR/$t" 2>&1
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
