#!/usr/bin/env bash
# The Python environment of the maia module, the PyTorch backend and their
# tests (Documentation/python.rst): a venv in the cache made from
# userspace/python/requirements.txt (exact pins: torch 2.13.0, CPU build),
# named by a hash of that file, so a second run is instant and a new pin
# makes a new venv. Old venvs stay (about 1 GB each): remove
# $MAIA_CACHE/python-venv-* by hand when no tree uses them.
#
#   qemu/setup/python-env.sh                 make the venv unless it is ready
#   qemu/setup/python-env.sh --print-python  print the venv's python (made or not)
#
# The interpreter: the torch wheel on these machines' disk is for CPython
# 3.11. Debian 12's /usr/bin/python3 is 3.11.2 (venv from python3-venv,
# headers from python3-dev: deps.sh). Debian 13's is 3.13, for which the
# disk has no CPU build of torch: there the newest pyenv CPython 3.11
# ($PYENV_ROOT or ~/.pyenv, versions/3.11.*) is used when present, else the
# script stops and says so. MAIA_PYTHON_BASE=/path/to/python3.11 overrides.
#
# torch comes from the disk only (pip's find-links, with --no-index): pip
# asked for torch==2.13.0 elsewhere takes PyPI's CUDA build (several GB).
# MAIA_TORCH_FROM_INDEX=1 allows that download anyway.
#
# The venv works inside a guest too: run-guest --host-root chroots into the
# host's /, where its bin/python -> the base interpreter resolves as on the
# host. Not under /tmp, though, which the guest replaces by a tmpfs (only
# the current directory's top /tmp directory is kept: tests/python copes).
. "$(dirname "$0")/common.sh"

REQUIREMENTS=$MAIA_TOP/userspace/python/requirements.txt
VENV=$MAIA_CACHE/python-venv-$(sha256sum "$REQUIREMENTS" | cut -c1-16)
PY=$VENV/bin/python
READY=$VENV/.maia-ready

case "${1:-}" in
--print-python) echo "$PY"; exit 0 ;;
"") ;;
*) echo "usage: $0 [--print-python]" >&2; exit 2 ;;
esac

# -x follows bin/python's link: a base interpreter gone means a new venv.
ready() { [ -f "$READY" ] && [ -x "$PY" ]; }
ready && exit 0

die() { log "python-env: $*"; exit 1; }

# A CPython 3.11 that can make a venv (ensurepip) and build extensions (Python.h).
usable() {
	[ -x "$1" ] && "$1" - <<'PY' 2>/dev/null
import os, sys, sysconfig, ensurepip, venv
ok = sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
sys.exit(0 if ok and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)
PY
}

pick_base() {
	local p
	if [ -n "${MAIA_PYTHON_BASE:-}" ]; then
		usable "$MAIA_PYTHON_BASE" && { echo "$MAIA_PYTHON_BASE"; return; }
		die "MAIA_PYTHON_BASE=$MAIA_PYTHON_BASE is not a CPython 3.11 with venv and Python.h"
	fi
	# Debian 12 (python3 -> python3.11); never a pyenv shim first on PATH.
	for p in /usr/bin/python3 /usr/bin/python3.11; do
		usable "$p" && { echo "$p"; return; }
	done
	# Debian 13: a pyenv CPython 3.11, newest first.
	for p in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11.* 2>/dev/null | sort -rV); do
		usable "$p/bin/python3.11" && { echo "$p/bin/python3.11"; return; }
	done
	die "no CPython 3.11 here ($(/usr/bin/python3 -V 2>&1) is /usr/bin/python3, Debian $(cat /etc/debian_version)).
  The CPU build of torch on this machine's disk is for Python 3.11 only; other
  Pythons would download PyPI's CUDA build (several GB), which this script does
  not do. Install a CPython 3.11 (e.g. pyenv install 3.11) or set
  MAIA_PYTHON_BASE=/path/to/python3.11, then run make setup again."
}

mkdir -p "$MAIA_CACHE"
exec 9>"$VENV.lock"
flock 9
ready && exit 0		# made by another run while this one waited

start=$(date +%s)
base=$(pick_base)
unset PYTHONPATH PYTHONHOME
log "making the Python venv $VENV with $base ($("$base" -V 2>&1))"
rm -rf "$VENV"
"$base" -m venv "$VENV"
pip_log=$VENV/pip.log
run_pip() {
	"$PY" -m pip --disable-pip-version-check --no-input "$@" >>"$pip_log" 2>&1 ||
		{ tail -n 15 "$pip_log" >&2; return 1; }
}
torch_pin=$(sed -n 's/^torch==\([0-9][^ ;#]*\).*/\1/p' "$REQUIREMENTS")
[ -n "$torch_pin" ] || die "$REQUIREMENTS pins no torch==VERSION"
if [ "${MAIA_TORCH_FROM_INDEX:-0}" = 1 ]; then
	log "MAIA_TORCH_FROM_INDEX=1: pip may download torch $torch_pin (PyPI's is a CUDA build of several GB)"
else
	log "installing torch $torch_pin from this machine's disk (pip's find-links)"
	run_pip install --no-index --no-deps "torch==$torch_pin" ||
		die "torch==$torch_pin for $("$base" -V 2>&1) is not in pip's find-links (this machine's disk).
  From PyPI, torch $torch_pin is a CUDA build of several GB. Set MAIA_TORCH_FROM_INDEX=1
  to let pip take it from its index anyway (a file:// index on this disk costs no download)."
fi
log "installing the rest of $(basename "$REQUIREMENTS") (numpy, torch's requirements)"
run_pip install -r "$REQUIREMENTS" || die "pip install -r $REQUIREMENTS failed (log: $pip_log)"
run_pip check || die "pip check found broken requirements (log: $pip_log)"
versions=$("$PY" -c 'import numpy, torch; print("torch %s, numpy %s" % (torch.__version__, numpy.__version__))') ||
	die "the new venv's python cannot import torch and numpy"
echo "$base" >"$READY"
log "python venv ready: $versions, $(du -sm "$VENV" | cut -f1) MB, $(($(date +%s) - start)) s"
