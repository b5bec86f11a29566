#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check's "prometheus" suite: one guest boot with 2 devices ring-cabled
# and the host's root shared read-only (run-guest --host-root), in which
# test_prometheus.py runs maia-exporter and Debian's Prometheus server (from
# the host's /usr/bin, deps.sh installs it) next to each other, runs a GEMM
# and an all-reduce, and checks the series, the Grafana dashboard's queries
# and the alerting rules (promtool, and the server's evaluation) through
# Prometheus's HTTP API; then scrapes maia-serve after one completion. Prints TAP; non-zero exit if any test failed (124
# timeout, 125 guest died). Costs about 20 s warm (boot, Prometheus start-up
# under TCG, the work, 25 checks; 19 s measured).
#
#   tests/prometheus/run-in-guest.sh [--no-build]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
if ! command -v prometheus >/dev/null; then
	echo "not ok 1 - no prometheus on this host (qemu/setup/deps.sh installs Debian's)"
	exit 1
fi
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2
fi

cd "$TOP/tests/prometheus"
exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices 2 --fabric ring --host-root \
	--fail-on-taint --timeout 600 -- /usr/bin/python3 test_prometheus.py
