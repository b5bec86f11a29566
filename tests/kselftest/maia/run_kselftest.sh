#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Runs the maia kselftests in the guest and prints one TAP stream in the
# format of the kernel's kselftest runner (tools/testing/selftests/kselftest/
# runner.sh): each test's own TAP indented with "# ", then one result line.
#
#   run_kselftest.sh [TEST...]     default: every test in kselftest-list.txt
#                                  (the Makefile's TEST_GEN_PROGS order)
#
# Exit status 0 if every test passed or skipped, 1 otherwise.

COLLECTION=drivers/accel/maia
DIR=$(cd "$(dirname "$0")" && pwd)
TIMEOUT=900
[ -f "$DIR/settings" ] && TIMEOUT=$(sed -n 's/^timeout=//p' "$DIR/settings")
KSFT_SKIP=4

if [ $# -eq 0 ]; then
	if [ ! -f "$DIR/kselftest-list.txt" ]; then
		echo "run_kselftest.sh: no $DIR/kselftest-list.txt (make kselftest)" >&2
		exit 1
	fi
	# shellcheck disable=SC2046 # one test name a line
	set -- $(sed -n "s|^$COLLECTION:||p" "$DIR/kselftest-list.txt")
fi

echo "TAP version 13"
echo "1..$#"
n=0
failed=0
rc_file=$(mktemp)
for t in "$@"; do
	n=$((n + 1))
	echo "# timeout set to $TIMEOUT"
	echo "# selftests: $COLLECTION: $t"
	if [ ! -x "$DIR/$t" ]; then
		echo "not ok $n selftests: $COLLECTION: $t # no such test binary"
		failed=$((failed + 1))
		continue
	fi
	{
		(cd "$DIR" && timeout "$TIMEOUT" "./$t" 2>&1)
		echo $? >"$rc_file"
	} | sed 's/^/# /'
	rc=$(cat "$rc_file")
	case "$rc" in
	0) echo "ok $n selftests: $COLLECTION: $t" ;;
	"$KSFT_SKIP") echo "ok $n selftests: $COLLECTION: $t # SKIP" ;;
	124 | 143) echo "not ok $n selftests: $COLLECTION: $t # TIMEOUT $TIMEOUT seconds"
		failed=$((failed + 1)) ;;
	*) echo "not ok $n selftests: $COLLECTION: $t # exit=$rc"
		failed=$((failed + 1)) ;;
	esac
done
rm -f "$rc_file"
[ $failed -eq 0 ]
