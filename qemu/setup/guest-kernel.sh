#!/usr/bin/env bash
# Fetch the pinned guest kernel (image, headers, kbuild) and unpack it into the
# cache. Never installed system-wide: apt-get download + dpkg -x only.
. "$(dirname "$0")/common.sh"

stamp=$KERNEL_DIR/.ready
[ -f "$stamp" ] && exit 0

abi=$GUEST_KERNEL_ABI
tmp=$(mktemp -d "$MAIA_CACHE/kernel-dl.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
log "downloading guest kernel $abi"
(cd "$tmp" && apt-get download -qq \
	"linux-image-$abi-amd64-unsigned=$GUEST_KERNEL_DEB_VERSION" \
	"linux-headers-$abi-amd64=$GUEST_KERNEL_DEB_VERSION" \
	"linux-headers-$abi-common=$GUEST_KERNEL_DEB_VERSION" \
	"linux-kbuild-$abi=$GUEST_KERNEL_DEB_VERSION")
rm -rf "$KERNEL_DIR"
mkdir -p "$KERNEL_DIR"
for deb in "$tmp"/*.deb; do
	dpkg -x "$deb" "$KERNEL_DIR"
done

# The arch headers' Makefile includes the -common tree by absolute path.
sed -i "s|/usr/src/linux-headers-$abi-common|$KERNEL_DIR/usr/src/linux-headers-$abi-common|g" \
	"$KERNEL_HEADERS/Makefile"
# kbuild's scripts and tools are relative links into /usr/lib/linux-kbuild-*;
# point them into the cache instead.
for link in scripts tools; do
	for tree in "$KERNEL_HEADERS" "$KERNEL_DIR/usr/src/linux-headers-$abi-common"; do
		if [ -L "$tree/$link" ]; then
			target=$(readlink "$tree/$link")
			case $target in
			/*) ln -sfn "$KERNEL_DIR$target" "$tree/$link" ;;
			esac
		fi
	done
done

# The image .deb ships no modules.dep: generate it so modprobe can resolve
# the load order of the modules the driver depends on.
depmod -b "$KERNEL_DIR" -F "$KERNEL_DIR/boot/System.map-$abi-amd64" "$abi-amd64"
touch "$stamp"
log "guest kernel ready in $KERNEL_DIR"
