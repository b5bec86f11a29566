#!/usr/bin/env bash
# Fetch linux-source for the pinned kernel and extract only what we use:
# the kselftest harness headers, checkpatch.pl and its data files.
. "$(dirname "$0")/common.sh"

stamp=$LINUX_SOURCE_DIR/.ready
[ -f "$stamp" ] && exit 0

tmp=$(mktemp -d "$MAIA_CACHE/linux-source-dl.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
log "downloading $LINUX_SOURCE_PACKAGE $GUEST_KERNEL_DEB_VERSION"
(cd "$tmp" && apt-get download -qq "$LINUX_SOURCE_PACKAGE=$GUEST_KERNEL_DEB_VERSION")
dpkg -x "$tmp"/*.deb "$tmp/x"
tarball=$(echo "$tmp"/x/usr/src/linux-source-*.tar.xz)
top=$(basename "$tarball" .tar.xz)
rm -rf "$LINUX_SOURCE_DIR"
mkdir -p "$LINUX_SOURCE_DIR"
log "extracting kselftest headers and checkpatch"
tar -xJf "$tarball" -C "$LINUX_SOURCE_DIR" --strip-components=1 \
	"$top/tools/testing/selftests/kselftest_harness.h" \
	"$top/tools/testing/selftests/kselftest.h" \
	"$top/tools/testing/selftests/lib.mk" \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch" \
	"$top/drivers/accel/ivpu" \
	"$top/drivers/accel/qaic" \
	"$top/include/uapi/drm/ivpu_accel.h" \
	"$top/Documentation/gpu/drm-usage-stats.rst"
touch "$stamp"
log "linux-source pieces ready in $LINUX_SOURCE_DIR"
