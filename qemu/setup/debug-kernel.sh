#!/usr/bin/env bash
# The debug guest kernel (Documentation/running.rst, "The debug kernel"):
# the pinned Debian linux-source (the same version as the stock guest
# kernel), configured as `make tinyconfig` + qemu/setup/debug-kernel.config
# (what our guest needs, plus lockdep, KASAN, UBSAN, DEBUG_OBJECTS,
# kmemleak, KFENCE, DEBUG_LIST), and maia.ko built against it.
#
#   qemu/setup/debug-kernel.sh              build the kernel unless it is ready
#   qemu/setup/debug-kernel.sh --driver     ... and build maia.ko against it in
#                                           build/debug-kernel/driver/ (W=1)
#   qemu/setup/debug-kernel.sh --print-dir  print the kernel's build directory
#                                           (built or not)
#   qemu/setup/debug-kernel.sh --print-ko   print the path of the debug maia.ko
#
# The full source tree is unpacked once per version into
# $MAIA_CACHE/linux-full-src-<version> (about 1.5 GB); the build directory,
# $MAIA_CACHE/debug-kernel-<version>-<hash>, is keyed by the hash of the
# config fragment and of the Kconfig addition below, so a changed config
# makes a new build and a warm cache costs nothing. Builds run under `nice`
# with $JOBS (default 2) jobs, serialised by a lock (qemu.sh does the same).
# The vmlinux boots directly through its PVH entry point (run-guest
# --debug-kernel); no bzImage, no modules of its own: everything our guest
# needs is built in, so maia.ko is the only module.
#
# The normal driver build (make driver, in the source tree) is untouched:
# the debug maia.ko is built in a mirror of the tree made of symlinks, so
# its objects land in build/debug-kernel/driver/.
. "$(dirname "$0")/common.sh"

FRAGMENT=$MAIA_TOP/qemu/setup/debug-kernel.config
# Three helpers maia.ko needs have no prompt upstream (an in-tree driver
# selects them); this entry, appended to drivers/accel/Kconfig, does.
KCONFIG_ADDITION='
# maia: the helpers the out-of-tree maia.ko needs, which have no prompt
# (added by the maia stack'"'"'s qemu/setup/debug-kernel.sh).
config MAIA_DEBUG_KERNEL_DEPS
	bool "Helpers for the out-of-tree maia driver"
	depends on DRM_ACCEL
	select DRM_SCHED
	select DRM_GEM_SHMEM_HELPER
	select GPU_BUDDY'
KEY=$( (cat "$FRAGMENT"; printf '%s\n' "$KCONFIG_ADDITION") | sha256sum | cut -c1-12)
SRC=$MAIA_CACHE/linux-full-src-$GUEST_KERNEL_DEB_VERSION
DK_BUILD=$MAIA_CACHE/debug-kernel-$GUEST_KERNEL_DEB_VERSION-$KEY
DRIVER_OUT=$MAIA_TOP/build/debug-kernel/driver
JOBS=${JOBS:-2}

want_driver=0
case "${1:-}" in
--print-dir) echo "$DK_BUILD"; exit 0 ;;
--print-ko) echo "$DRIVER_OUT/maia.ko"; exit 0 ;;
--driver) want_driver=1 ;;
"") ;;
*) echo "usage: $0 [--driver | --print-dir | --print-ko]" >&2; exit 2 ;;
esac

# The whole linux-source tree, once per version, with the Kconfig entry.
fetch_source() {
	local tmp tarball
	if [ ! -f "$SRC/.extracted" ]; then
		tmp=$(mktemp -d "$MAIA_CACHE/linux-full-src-dl.XXXXXX")
		chmod 755 "$tmp"
		log "downloading $LINUX_SOURCE_PACKAGE $GUEST_KERNEL_DEB_VERSION"
		(cd "$tmp" && apt-get download -qq "$LINUX_SOURCE_PACKAGE=$GUEST_KERNEL_DEB_VERSION") ||
			{ rm -rf "$tmp"; log "cannot download $LINUX_SOURCE_PACKAGE"; exit 1; }
		dpkg -x "$tmp"/*.deb "$tmp/x"
		tarball=$(echo "$tmp"/x/usr/src/linux-source-*.tar.xz)
		log "extracting the kernel source into $SRC"
		rm -rf "$SRC"
		mkdir -p "$SRC"
		tar -xJf "$tarball" -C "$SRC" --strip-components=1
		rm -rf "$tmp"
		touch "$SRC/.extracted"
	fi
	if ! grep -q '^config MAIA_DEBUG_KERNEL_DEPS$' "$SRC/drivers/accel/Kconfig"; then
		printf '%s\n' "$KCONFIG_ADDITION" >>"$SRC/drivers/accel/Kconfig"
	fi
}

configure() {
	local line name missing=0
	[ -f "$DK_BUILD/.configured" ] && return
	log "configuring the debug kernel in $DK_BUILD"
	rm -rf "$DK_BUILD"
	mkdir -p "$DK_BUILD"
	make -s -C "$SRC" O="$DK_BUILD" ARCH=x86_64 tinyconfig >/dev/null
	"$SRC/scripts/kconfig/merge_config.sh" -m -O "$DK_BUILD" "$DK_BUILD/.config" "$FRAGMENT" >/dev/null
	make -s -C "$SRC" O="$DK_BUILD" ARCH=x86_64 olddefconfig >/dev/null
	# Every line of the fragment must have survived (a missing dependency
	# drops an option silently).
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qxF "$line" "$DK_BUILD/.config" || {
			name=${line%%=*}
			log "debug-kernel.config: $line did not survive olddefconfig (now: $(grep -E "^$name=|^# $name is not set" "$DK_BUILD/.config" || echo unset))"
			missing=1
		} ;;
		"# CONFIG_"*" is not set") name=${line#\# }; name=${name%% *}
			! grep -q "^$name=" "$DK_BUILD/.config" || {
			log "debug-kernel.config: $name is set after olddefconfig"
			missing=1
		} ;;
		esac
	done <"$FRAGMENT"
	[ $missing = 0 ] || exit 1
	touch "$DK_BUILD/.configured"
}

build_kernel() {
	local t0 t1
	[ -f "$DK_BUILD/.ready" ] && return
	t0=$(date +%s)
	log "building the debug kernel in $DK_BUILD (cold: about a quarter of an hour on 2 cores; log: $DK_BUILD/build.log)"
	# vmlinux for the PVH boot, `modules` for Module.symvers (no module of
	# its own) so that external modules link against it.
	nice make -C "$SRC" O="$DK_BUILD" ARCH=x86_64 -j"$JOBS" vmlinux modules \
		>"$DK_BUILD/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$DK_BUILD/build.log" | head -40; tail -20 "$DK_BUILD/build.log"; exit 1; }
	t1=$(date +%s)
	echo "$((t1 - t0))" >"$DK_BUILD/build-seconds"
	touch "$DK_BUILD/.ready"
	log "debug kernel ready in $((t1 - t0)) s: $DK_BUILD/vmlinux"
}

# maia.ko against the debug kernel, in a mirror of the source tree (symlinks
# to every source file), so the objects land outside the tree.
build_driver() {
	local f
	mkdir -p "$DRIVER_OUT/driver"
	ln -sfn "$MAIA_TOP/Kbuild" "$DRIVER_OUT/Kbuild"
	# Headers only: no object is written there.
	mkdir -p "$DRIVER_OUT/firmware-sim"
	ln -sfn "$MAIA_TOP/uapi" "$DRIVER_OUT/uapi"
	ln -sfn "$MAIA_TOP/firmware-sim/include" "$DRIVER_OUT/firmware-sim/include"
	# The sources one by one (the tree's own objects are not ours); a link
	# to a file that is gone would break the build.
	find "$DRIVER_OUT/driver" -maxdepth 1 -type l -delete
	for f in "$MAIA_TOP"/driver/*.[ch]; do
		ln -s "$f" "$DRIVER_OUT/driver/"
	done
	nice make -s -C "$DK_BUILD" M="$DRIVER_OUT" W=1 -j"$JOBS" modules
}

exec 9>"$MAIA_CACHE/debug-kernel.lock"
flock 9
fetch_source
configure
build_kernel
flock -u 9
if [ $want_driver = 1 ]; then
	mkdir -p "$MAIA_TOP/build"
	exec 8>"$MAIA_TOP/build/debug-kernel.lock"
	flock 8
	build_driver
fi
