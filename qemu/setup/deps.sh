#!/usr/bin/env bash
# Install the Debian packages the project builds and runs with, adding
# bookworm-backports (with deb-src) for meson and the QEMU source.
# Idempotent: a stamp keyed by this file's content skips the work next time.
# Python: python3-dev and python3-venv for the maia module's venv and its C
# extension; torch and numpy go into that venv (python-env.sh), not apt.
# prometheus (a 19 MB download, 96 MB installed, about 35 s) is the real
# server the "prometheus" suite starts in a guest against maia-exporter, with
# its own config and storage. On a host with systemd the package also enables
# its own service (port 9090); the suite neither needs nor touches it.
. "$(dirname "$0")/common.sh"

PACKAGES=(
	build-essential pkgconf git bc bison flex cpio xz-utils zstd kmod
	ninja-build python3-venv zlib1g-dev libglib2.0-dev libfdt-dev
	dpkg-dev dwarves libelf-dev sparse
	busybox-static seabios ipxe-qemu qemu-system-data
	libdrm-dev libpci-dev libkmod-dev libopenblas-dev libmicrohttpd-dev
	clang llvm lld libclang-rt-14-dev
	python3-dev
	prometheus
	openmpi-bin libopenmpi-dev
	python3-docutils
	gnuplot-nox
)
BACKPORTS_PACKAGES=(meson python3-pycotap)

stamp=$MAIA_CACHE/deps.$(sha256sum "$0" | cut -c1-16).stamp
if [ -f "$stamp" ]; then
	exit 0
fi

src=/etc/apt/sources.list.d/maia-backports.sources
if [ ! -f "$src" ]; then
	log "adding $DEBIAN_SUITE-backports (deb, deb-src)"
	as_root tee "$src" >/dev/null <<SRC
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: $DEBIAN_SUITE-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
log "apt-get update"
as_root apt-get update -qq
log "installing packages"
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"${PACKAGES[@]}" >/dev/null
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	-t "$DEBIAN_SUITE-backports" "${BACKPORTS_PACKAGES[@]}" >/dev/null
touch "$stamp"
log "packages ready"
