#!/usr/bin/env bash
# Fetch the pinned QEMU source, graft the maia device into it and build
# qemu-system-x86_64 plus the maia qtest.
#
#   qemu.sh          the normal build, $QEMU_BUILD_DIR
#   qemu.sh --asan   a second build of the same grafted tree with AddressSanitizer
#                    and UndefinedBehaviorSanitizer, $QEMU_ASAN_BUILD_DIR, only
#                    qemu-system-x86_64 (for tests/device-fuzz; about 9 minutes
#                    on 2 cores, never started by make check)
#
# The pristine tree lives in the cache, keyed by version. Our files are linked
# into it (hw/misc/maia/, tests/qtest/maia-test.c) on every run, so editing the
# device in this repository and re-running rebuilds only what changed.
. "$(dirname "$0")/common.sh"

SANITIZE=false
NINJA_TARGETS=(qemu-system-x86_64 tests/qtest/maia-test tests/qtest/maia-fabric-test)
if [ "${1:-}" = --asan ]; then
	SANITIZE=true
	QEMU_BUILD_DIR=$QEMU_ASAN_BUILD_DIR
	NINJA_TARGETS=(qemu-system-x86_64)
fi

QEMU_TARBALL=$MAIA_CACHE/qemu_${QEMU_UPSTREAM_VERSION}+ds.orig.tar.xz

fetch_source() {
	[ -f "$QEMU_SRC_DIR/.extracted" ] && return
	if [ ! -f "$QEMU_TARBALL" ]; then
		log "downloading QEMU source $QEMU_DEB_VERSION"
		tmp=$(mktemp -d "$MAIA_CACHE/qemu-dl.XXXXXX")
		chmod 755 "$tmp"
		# The archive keeps only the newest Debian revision; every revision of
		# the same upstream release ships the identical .orig tarball.
		version=$QEMU_DEB_VERSION
		if ! apt-cache showsrc qemu 2>/dev/null | grep -x "Version: $version" >/dev/null; then
			version=$(apt-cache showsrc qemu 2>/dev/null |
				sed -n "s/^Version: \(1:$QEMU_UPSTREAM_VERSION+ds-.*\)/\1/p" | head -n 1)
			[ -n "$version" ] || { log "no qemu $QEMU_UPSTREAM_VERSION source in apt"; exit 1; }
			log "qemu $QEMU_DEB_VERSION is gone from the archive; using $version (same upstream tarball)"
		fi
		(cd "$tmp" && apt-get source --tar-only -qq "qemu=$version")
		mv "$tmp"/qemu_*.orig.tar.xz "$QEMU_TARBALL"
		rm -rf "$tmp"
	fi
	log "extracting QEMU source"
	rm -rf "$QEMU_SRC_DIR"
	mkdir -p "$QEMU_SRC_DIR"
	tar -xJf "$QEMU_TARBALL" -C "$QEMU_SRC_DIR" --strip-components=1
	# The +ds tarball has no edk2 blobs; we never use them.
	sed -i 's/unpack_edk2_blobs = bzip2.found()/unpack_edk2_blobs = false/' \
		"$QEMU_SRC_DIR/meson.build"
	touch "$QEMU_SRC_DIR/.extracted"
}

# qemu/hw/meson.build lists the firmware-sim sources (meson has no glob):
# stop if the list and firmware-sim/src differ, so no file is left out.
check_device_sources() {
	local listed actual
	listed=$(sed -n "s|^ *'fwsim/\(src/[^']*\.c\)',\?\$|\1|p" "$MAIA_TOP/qemu/hw/meson.build" | sort)
	actual=$(cd "$MAIA_TOP/firmware-sim" && ls src/*.c src/*/*.c 2>/dev/null | sort)
	if [ "$listed" != "$actual" ]; then
		log "qemu/hw/meson.build does not list the firmware-sim sources (< listed, > on disk):"
		diff <(printf '%s\n' "$listed") <(printf '%s\n' "$actual") | grep '^[<>]' >&2
		exit 1
	fi
}

graft_device() {
	local dev=$QEMU_SRC_DIR/hw/misc/maia f
	check_device_sources
	mkdir -p "$dev"
	ln -sfn "$MAIA_TOP/firmware-sim" "$dev/fwsim"
	# The glue, trace-events, meson.build and Kconfig.
	for f in "$MAIA_TOP"/qemu/hw/*; do
		ln -sfn "$f" "$dev/$(basename "$f")"
	done
	grep -q "subdir('maia')" "$QEMU_SRC_DIR/hw/misc/meson.build" ||
		echo "subdir('maia')" >>"$QEMU_SRC_DIR/hw/misc/meson.build"
	# Older grafts appended the Kconfig entry itself; it is in maia/Kconfig now.
	! grep -q "^config MAIA_PCI$" "$QEMU_SRC_DIR/hw/misc/Kconfig" ||
		sed -i '/^config MAIA_PCI$/,/^    depends on PCI && MSI_NONBROKEN$/d' "$QEMU_SRC_DIR/hw/misc/Kconfig"
	grep -q "^source maia/Kconfig$" "$QEMU_SRC_DIR/hw/misc/Kconfig" ||
		echo "source maia/Kconfig" >>"$QEMU_SRC_DIR/hw/misc/Kconfig"
	grep -q "'hw/misc/maia'," "$QEMU_SRC_DIR/meson.build" ||
		sed -i "s|^    'hw/misc',$|    'hw/misc',\n    'hw/misc/maia',|" "$QEMU_SRC_DIR/meson.build"
	# The qtest.
	ln -sfn "$MAIA_TOP/tests/qtest/maia-test.c" "$QEMU_SRC_DIR/tests/qtest/maia-test.c"
	grep -q "maia-test" "$QEMU_SRC_DIR/tests/qtest/meson.build" ||
		sed -i "s|^  (config_all_devices.has_key('CONFIG_IVSHMEM_DEVICE') ? \['ivshmem-test'\] : \[\])$|&                 \\\\\n  + (config_all_devices.has_key('CONFIG_MAIA_PCI') ? ['maia-test'] : [])|" \
			"$QEMU_SRC_DIR/tests/qtest/meson.build"
	# The qtest includes the hardware ABI headers (maia/hw/*.h).
	grep -q "'maia-test':" "$QEMU_SRC_DIR/tests/qtest/meson.build" ||
		sed -i "s|^qtests = {$|&\\n  'maia-test': [declare_dependency(include_directories: include_directories('../../hw/misc/maia/fwsim/include'))],|" \
			"$QEMU_SRC_DIR/tests/qtest/meson.build"
	# The fabric qtest, the same way (its own guards: trees grafted before it).
	ln -sfn "$MAIA_TOP/tests/qtest/maia-fabric-test.c" "$QEMU_SRC_DIR/tests/qtest/maia-fabric-test.c"
	# Their shared firmware-image helpers, found next to them.
	ln -sfn "$MAIA_TOP/tests/qtest/maia-qtest-fw.h" "$QEMU_SRC_DIR/tests/qtest/maia-qtest-fw.h"
	grep -q "'maia-fabric-test'\]" "$QEMU_SRC_DIR/tests/qtest/meson.build" ||
		sed -i "s|^  + (config_all_devices.has_key('CONFIG_MAIA_PCI') ? \['maia-test'\] : \[\])|&                 \\\\\n  + (config_all_devices.has_key('CONFIG_MAIA_PCI') ? ['maia-fabric-test'] : [])|" \
			"$QEMU_SRC_DIR/tests/qtest/meson.build"
	grep -q "'maia-fabric-test':" "$QEMU_SRC_DIR/tests/qtest/meson.build" ||
		sed -i "s|^qtests = {$|&\\n  'maia-fabric-test': [declare_dependency(include_directories: include_directories('../../hw/misc/maia/fwsim/include'))],|" \
			"$QEMU_SRC_DIR/tests/qtest/meson.build"
}

# Two QEMU 10.0.2 bugs in net/stream.c, patched in the source tree (each
# once; a changed upstream file stops the build rather than go unpatched):
#
# 1. A `-netdev stream,server=on` has no channel until its listening socket
#    is set up (asynchronously), but its link is up, so a NIC that transmits
#    at once (a maia fabric port sends HELLOs from realize on) makes
#    net_stream_receive() write to a NULL channel and QEMU segfaults. The
#    client side already starts with its link down; do the same for the
#    server.
# 2. The server's accepted socket stays blocking (on Linux accept() does not
#    inherit O_NONBLOCK from the listening socket; the client side sets its
#    own), so net_stream_receive() blocks the main loop in sendmsg() once the
#    peer's socket buffer is full. Two QEMUs cabled in a ring, each the
#    server of one cable, then wait for each other for ever with the BQL
#    held (a 1 MiB all-reduce between two cluster ranks froze both guests).
#    Make it non-blocking, as the client side is: a full buffer then queues
#    the frame and waits for G_IO_OUT, as net_stream_receive() expects.
# 3. A TCG vCPU keeps using its cached memory dispatch (CPUAddressSpace's
#    memory_dispatch) until it runs the tcg_commit_cpu() work queued for it,
#    but nothing keeps that dispatch's FlatView alive meanwhile: the commit
#    drops the old FlatView, RCU frees it once the readers of the moment are
#    done, and a vCPU that then enters cpu_exec() and delivers an interrupt
#    before it looks at its queued work walks the guest's page tables
#    through the freed dispatch. QEMU segfaulted in
#    address_space_translate_for_iotlb() about once in 15 boots of a guest
#    with 9 maia devices on a loaded host (PCI enumeration changes the
#    memory map many times while the timer interrupts). The vCPU now holds
#    a reference to the FlatView of the dispatch it caches, and drops it
#    when it switches to the new one.
# 4. A unix stream socket's buffer holds three 60 KiB fabric frames by
#    default (net.core.wmem_default), so a cable between two QEMUs moved a
#    few frames per main-loop wake-up. Both ends of a unix stream netdev ask
#    for 4 MiB (the kernel caps it at net.core.wmem_max and rmem_max); TCP
#    keeps its autotuning. Documentation/cluster.rst has the figures.
patch_qemu() {
	local f=$QEMU_SRC_DIR/net/stream.c p=$QEMU_SRC_DIR/system/physmem.c
	if ! grep -q "maia: no frame before listening" "$f"; then
		sed -i '/^static int net_stream_server_init(/,/^}/ s|^    qemu_set_info_str(&s->nc, "initializing");$|&\n    s->nc.link_down = true; /* maia: no frame before listening */|' "$f"
		grep -q "maia: no frame before listening" "$f" ||
			{ log "could not patch $f (net_stream_server_init changed?)"; exit 1; }
	fi
	if ! grep -q "maia: never block the main loop" "$f"; then
		sed -i '/^static void net_stream_listen(/,/^}/ s|^    s->ioc = QIO_CHANNEL(cioc);$|&\n    qio_channel_set_blocking(s->ioc, false, NULL); /* maia: never block the main loop */|' "$f"
		grep -q "maia: never block the main loop" "$f" ||
			{ log "could not patch $f (net_stream_listen changed?)"; exit 1; }
	fi
	if ! grep -q "maia: unix socket buffers" "$f"; then
		perl -0pi -e '
			s{\n(static void net_stream_listen\(QIONetListener \*listener,\n)}
			 {\n/* maia: unix socket buffers for a window of fabric frames (capped by the kernel) */\nstatic void net_stream_unix_buffers(QIOChannelSocket *sioc)\n{\n    int size = 4 * 1024 * 1024;\n\n    if (sioc->localAddr.ss_family != AF_UNIX) {\n        return;\n    }\n    setsockopt(sioc->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));\n    setsockopt(sioc->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));\n}\n\n$1};
			s{(    qio_channel_set_blocking\(s->ioc, false, NULL\); /\* maia: never block the main loop \*/\n)}
			 {$1    net_stream_unix_buffers(cioc);\n};
			s{(    g_assert\(ret == 0\);\n\n    net_socket_rs_init\(&s->rs, net_stream_rs_finalize, false\);\n)}
			 {    g_assert(ret == 0);\n    net_stream_unix_buffers(sioc);\n\n    net_socket_rs_init(&s->rs, net_stream_rs_finalize, false);\n};
		' "$f"
		[ "$(grep -c "net_stream_unix_buffers" "$f")" = 3 ] ||
			{ log "could not patch $f (net_stream_listen or client_connected changed?)"; exit 1; }
	fi
	if ! grep -q "maia: keep the cached dispatch alive" "$p"; then
		perl -0pi -e '
			s{(    struct AddressSpaceDispatch \*memory_dispatch;\n)}
			 {$1    /* maia: keep the cached dispatch alive: its FlatView, referenced */\n    FlatView *memory_dispatch_fv;\n};
			s{(static void tcg_commit_cpu\(CPUState \*cpu, run_on_cpu_data data\)\n\{\n    CPUAddressSpace \*cpuas = data.host_ptr;\n)\n    cpuas->memory_dispatch = address_space_to_dispatch\(cpuas->as\);\n    tlb_flush\(cpu\);\n}
			 {$1    FlatView *old = cpuas->memory_dispatch_fv;\n\n    cpuas->memory_dispatch_fv = address_space_get_flatview(cpuas->as);\n    cpuas->memory_dispatch = flatview_to_dispatch(cpuas->memory_dispatch_fv);\n    tlb_flush(cpu);\n    if (old) {\n        flatview_unref(old);\n    }\n};
			s{(        memory_listener_unregister\(&cpuas->tcg_as_listener\);\n    \}\n)}
			 {$1    if (cpuas->memory_dispatch_fv) {\n        flatview_unref(cpuas->memory_dispatch_fv);\n        cpuas->memory_dispatch_fv = NULL;\n    }\n};
		' "$p"
		[ "$(grep -c "memory_dispatch_fv" "$p")" = 7 ] ||
			{ log "could not patch $p (tcg_commit_cpu changed?)"; exit 1; }
	fi
}

configure() {
	[ -f "$QEMU_BUILD_DIR/build.ninja" ] && return
	local extra=()
	$SANITIZE && extra=(--enable-asan --enable-ubsan)
	log "configuring QEMU${extra[*]:+ (${extra[*]})}"
	mkdir -p "$QEMU_BUILD_DIR"
	(cd "$QEMU_BUILD_DIR" && "$QEMU_SRC_DIR/configure" \
		"${QEMU_CONFIGURE_FLAGS[@]}" "${extra[@]}") \
		>"$QEMU_BUILD_DIR/configure.log" 2>&1 ||
		{ tail -30 "$QEMU_BUILD_DIR/configure.log"; exit 1; }
}

link_firmware() {
	# SeaBIOS and the option ROMs come from Debian's packages.
	local share=$QEMU_BUILD_DIR/qemu-bundle/usr/local/share/qemu f
	mkdir -p "$share"
	for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/share/qemu/*.rom; do
		[ -e "$f" ] && ln -sfn "$(readlink -f "$f")" "$share/$(basename "$f")"
	done
	return 0
}

# Builds may overlap (parallel make targets, several users of one cache) and
# meson refuses to regenerate a build directory twice at once: serialise.
# The shared source tree (extract, graft) has one lock; each build directory
# has its own, so the normal build never waits for a long sanitizer build.
exec 9>"$MAIA_CACHE/qemu-build.lock"
flock 9
fetch_source
patch_qemu
graft_device
if $SANITIZE; then
	exec 8>"$QEMU_BUILD_DIR.lock"
	flock 8
	flock -u 9
fi
configure
log "building QEMU in $QEMU_BUILD_DIR (first build takes several minutes)"
ninja -C "$QEMU_BUILD_DIR" -j"${JOBS:-2}" "${NINJA_TARGETS[@]}" >"$QEMU_BUILD_DIR/ninja.log" 2>&1 ||
	{ grep -E 'error|Error' "$QEMU_BUILD_DIR/ninja.log" | head -40; tail -20 "$QEMU_BUILD_DIR/ninja.log"; exit 1; }
link_firmware
device_sources_hash >"$QEMU_BUILD_DIR/maia-device-sources"
log "QEMU ready: $QEMU_BUILD_DIR/qemu-system-x86_64"
