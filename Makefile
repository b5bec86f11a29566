# Maia accelerator stack: top-level build.
#
#   make run     set up everything, boot a guest with the device, run work on it
#   make check   set up everything and run every test; ends with "N passed, N failed"
#   make check-debug  the in-guest suites under a debug kernel (lockdep, KASAN,
#                UBSAN, kmemleak ...; built once into the cache): tests/debug-kernel/run
#   make fuzz    the long runs (tests/run-fuzz): 1,000,000 ioctl fuzzer calls,
#                libFuzzer, kill -9 of 100 processes, 1,000 load cycles, fuzz-device
#                (FUZZ_CALLS, FUZZ_SECONDS, MAIA_FUZZ_SEED, MAIA_LOAD_CYCLES)
#
# Set-up (apt packages, QEMU source and build, guest kernel, linux-source, the
# Python venv) is cached in $(MAIA_CACHE), default ~/.cache/maia-stack, keyed
# by version.

include versions.env

MAIA_CACHE ?= $(HOME)/.cache/maia-stack
export MAIA_CACHE

TOP := $(CURDIR)
BUILD := $(TOP)/build
KERNEL_RELEASE := $(GUEST_KERNEL_ABI)-amd64
KDIR := $(MAIA_CACHE)/kernel-$(GUEST_KERNEL_ABI)/usr/src/linux-headers-$(KERNEL_RELEASE)
LINUX_SRC := $(MAIA_CACHE)/linux-source-$(GUEST_KERNEL_DEB_VERSION)
# The build directory is keyed by QEMU's configure flags in common.sh.
QEMU_BUILD := $(shell bash -c '. qemu/setup/common.sh && echo "$$QEMU_BUILD_DIR"')
# The venv of the Python module and the torch backend, keyed by the hash of
# userspace/python/requirements.txt (qemu/setup/python-env.sh).
MAIA_PYTHON := $(shell MAIA_CACHE='$(MAIA_CACHE)' qemu/setup/python-env.sh --print-python)
JOBS ?= 2

.PHONY: all setup deps guest-kernel linux-source qemu python-env firmware-sim firmware driver \
	userspace kselftest cluster unit-tests run check fuzz fuzz-device bench lint clean

all: firmware-sim driver userspace kselftest cluster

# --- set-up -----------------------------------------------------------------
setup: deps guest-kernel linux-source qemu python-env

deps:
	@qemu/setup/deps.sh

guest-kernel: deps
	@qemu/setup/guest-kernel.sh

linux-source: deps
	@qemu/setup/linux-source.sh

qemu: deps
	@qemu/setup/qemu.sh

python-env: deps
	@qemu/setup/python-env.sh

# --- the stack --------------------------------------------------------------
firmware-sim: deps
	@$(MAKE) --no-print-directory -C firmware-sim BUILD=$(BUILD)/firmware-sim -j$(JOBS)

firmware: firmware-sim

driver: guest-kernel
	@$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP) W=1 -j$(JOBS) modules

userspace: deps python-env
	@$(MAKE) --no-print-directory -C userspace BUILD=$(BUILD)/userspace PYTHON=$(MAIA_PYTHON) \
		-j$(JOBS)

kselftest: linux-source
	@$(MAKE) --no-print-directory -C tests/kselftest/maia OUTPUT=$(BUILD)/kselftest \
		KSFT_DIR=$(LINUX_SRC)/tools/testing/selftests -j$(JOBS)

# The MPI cluster launcher (Documentation/cluster.rst), on libmaia.
cluster: userspace
	@$(MAKE) --no-print-directory -C qemu/cluster BUILD=$(BUILD)/cluster \
		USER_BUILD=$(BUILD)/userspace

unit-tests: firmware-sim
	@$(MAKE) --no-print-directory -C tests/unit BUILD=$(BUILD)/unit -j$(JOBS)

# --- what users run ---------------------------------------------------------
# The demo lives in userspace/examples/run-demo.sh when present (installed into
# build/userspace/bin); otherwise the bring-up sequence below.
RUN_DEMO := $(if $(wildcard userspace/examples/run-demo.sh),run-demo.sh,\
	sh -c 'maia-smi && maia-hello && maia-smi ping -n 100 && maia-gemm')

run: setup all
	@qemu/run-guest --no-build --devices 4 --fabric ring --timeout 900 -- $(RUN_DEMO)

check: setup all unit-tests
	@tests/run-all

# The in-guest suites under the debug kernel (qemu/setup/debug-kernel.sh builds
# it once into $(MAIA_CACHE)); fails on a report that names maia code.
.PHONY: check-debug
check-debug: setup all
	@tests/debug-kernel/run

fuzz: setup all
	@tests/run-fuzz

bench: setup all
	@tests/run-bench

lint: guest-kernel linux-source
	@tests/lint/kernel-style

# A hostile guest against the QEMU device over the qtest protocol, on a QEMU
# built with ASan + UBSan (built on first use, ~9 min; cached beside the normal
# build). DEVICE_FUZZ_OPS (default 1000000), DEVICE_FUZZ_SEED (default: clock).
fuzz-device: deps
	@tests/device-fuzz/run --asan

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C $(KDIR) M=$(TOP) clean >/dev/null 2>&1
