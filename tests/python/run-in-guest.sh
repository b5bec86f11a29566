#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check's "python" suite: one guest boot with the host's root shared
# read-only (run-guest --host-root) runs the maia module tests, then the
# PyTorch backend tests in one process, so `import torch` (45-100 s under
# TCG) is paid once. Prints TAP; non-zero exit if any failed (124 timeout,
# 125 guest died). Needs Debian's python3-numpy and python3-torch (deps.sh).
#
#   tests/python/run-in-guest.sh [--no-build]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2
fi

cd "$TOP/tests/python"
# shellcheck disable=SC2016 # the script runs in the guest's shell
# The kernel logs the MMU fault the error-path test provokes: --loglevel 1.
exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --host-root --fail-on-taint --loglevel 1 \
	--memory 3G --timeout 900 -- /bin/sh -c '
		export PYTHONPATH=../../build/userspace/python
		/usr/bin/python3 test_maia_module.py; a=$?
		/usr/bin/python3 -W ignore::UserWarning test_torch_backend.py; b=$?
		[ $a = 0 ] && [ $b = 0 ]'
