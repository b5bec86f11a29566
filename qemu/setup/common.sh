# Shared by the set-up scripts: pinned versions and the cache location.
# shellcheck shell=bash
set -euo pipefail
# depmod, modinfo and modprobe live in /sbin, outside a normal user's PATH.
PATH=$PATH:/usr/sbin:/sbin
MAIA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=/dev/null
. "$MAIA_TOP/versions.env"
MAIA_CACHE=${MAIA_CACHE:-$HOME/.cache/maia-stack}
mkdir -p "$MAIA_CACHE"
MAIA_CACHE=$(cd "$MAIA_CACHE" && pwd)

# Paths derived from the versions: a new version gets a new directory.
QEMU_SRC_DIR=$MAIA_CACHE/qemu-src-$QEMU_UPSTREAM_VERSION
QEMU_BUILD_DIR=$MAIA_CACHE/qemu-build-$QEMU_UPSTREAM_VERSION
# Built only on request (qemu.sh --asan, by the device fuzzer): ASan + UBSan.
QEMU_ASAN_BUILD_DIR=$MAIA_CACHE/qemu-build-asan-$QEMU_UPSTREAM_VERSION
KERNEL_DIR=$MAIA_CACHE/kernel-$GUEST_KERNEL_ABI
KERNEL_HEADERS=$KERNEL_DIR/usr/src/linux-headers-$GUEST_KERNEL_ABI-amd64
LINUX_SOURCE_DIR=$MAIA_CACHE/linux-source-$GUEST_KERNEL_DEB_VERSION

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

log() { printf '[setup] %s\n' "$*" >&2; }
