#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# torch.distributed's maia backend (test_distributed.py): one guest boot of 6
# devices cabled as two rings (devices 0-1 and 2-5), the host's root shared
# read-only; the test forks 4 ranks on the ring of 4, then 2 on the ring of
# 2. Prints TAP; non-zero exit if any failed (124 timeout, 125 guest died).
#
#   tests/python/run-distributed.sh [--no-build]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
if [ "${1:-}" = --no-build ]; then
	build=(--no-build)
	shift
fi
[ $# -eq 0 ] || { echo "usage: $0 [--no-build]" >&2; exit 2; }
[ ${#build[@]} -gt 0 ] || make -C "$TOP" --no-print-directory userspace >&2
PY=$("$TOP/qemu/setup/python-env.sh" --print-python)
[ -x "$PY" ] || { echo "run-distributed: no Python venv ($PY): make setup" >&2; exit 1; }
case $PY in
/tmp/*) echo "run-distributed: the venv is under /tmp; use run-in-guest.sh's MAIA_CACHE rules" >&2; exit 1 ;;
esac

cd "$TOP/tests/python"
# shellcheck disable=SC2016 # the script runs in the guest's shell
exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --host-root --fail-on-taint --loglevel 1 \
	--devices 6 --fabric rings:2,4 --memory 3G --timeout 1200 -- /bin/sh -c '
		cd "$1/tests/python" || exit 1
		PYTHONPATH="$1/build/userspace/python" exec "$2" test_distributed.py' sh "$TOP" "$PY"
