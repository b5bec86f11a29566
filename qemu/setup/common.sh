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

# QEMU's configure flags. VirtFS (with glibc's xattr calls, no libattr
# needed) is for run-guest --host-root.
QEMU_CONFIGURE_FLAGS=(--python=/usr/bin/python3
	--target-list=x86_64-softmmu --without-default-features
	--enable-kvm --enable-tcg --disable-docs --disable-download
	--disable-install-blobs --disable-werror --enable-virtfs --enable-attr)
# qemu.sh configures a build directory once (a warm cache keeps it), so the
# directory name carries a short hash of the flags: new flags, new build.
# Everyone (Makefile, run-guest, tests) takes the path from here.
QEMU_FLAGS_KEY=$(printf '%s\n' "${QEMU_CONFIGURE_FLAGS[@]}" | sha256sum | cut -c1-8)

# Paths derived from the versions and flags: a new one gets a new directory.
QEMU_SRC_DIR=$MAIA_CACHE/qemu-src-$QEMU_UPSTREAM_VERSION
QEMU_BUILD_DIR=$MAIA_CACHE/qemu-build-$QEMU_UPSTREAM_VERSION-$QEMU_FLAGS_KEY
# Built only on request (qemu.sh --asan, by the device fuzzer): ASan + UBSan.
QEMU_ASAN_BUILD_DIR=$MAIA_CACHE/qemu-build-asan-$QEMU_UPSTREAM_VERSION-$QEMU_FLAGS_KEY
KERNEL_DIR=$MAIA_CACHE/kernel-$GUEST_KERNEL_ABI
KERNEL_HEADERS=$KERNEL_DIR/usr/src/linux-headers-$GUEST_KERNEL_ABI-amd64
LINUX_SOURCE_DIR=$MAIA_CACHE/linux-source-$GUEST_KERNEL_DEB_VERSION

# The device's sources as one hash (their names and contents: firmware-sim and
# the QEMU glue). qemu.sh stores it beside each build it finishes, so a user of
# a build can tell whether it was built from the sources in front of it.
device_sources_hash() {
	(cd "$MAIA_TOP" && find firmware-sim/src firmware-sim/include qemu/hw -type f \
		\( -name '*.[ch]' -o -name meson.build -o -name Kconfig -o -name trace-events \) |
		LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

log() { printf '[setup] %s\n' "$*" >&2; }
