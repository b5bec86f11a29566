// SPDX-License-Identifier: MIT
/*
 * The backend's TVP kernel library (tvp_kernels.cpp): hand-written Tile
 * Vector Processor programs, assembled once per process, a maia_kernel per
 * device, launched as KERNEL commands on the device's stream. tvp_ops.cpp
 * registers the aten ops that use them.
 */
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime.h"

namespace maia_torch {
namespace tvp {

/* One KERNEL command: a library program ("exp.f32"), its grid (axis 0) and arguments. */
struct Launch {
	std::string program;
	uint32_t grid;
	std::vector<uint64_t> args;
};

/* The TVP dtype name of a float tensor type the kernels take (f32, bf16, f16), or nullptr. */
const char *elem(at::ScalarType t);
/* Instances for n elements, one per 1024-lane block (the last one masked). */
uint32_t blocks(int64_t n);
/* The largest element count an element-wise kernel takes (grid limit x 1024). */
int64_t max_elements();
/* v as binary32 bits, zero-extended (a kernel's float argument). */
uint64_t f32_bits(double v);

/*
 * Run the launches, in order, as one job on device dev (one per 256
 * launches), for aten op `op`.
 * Returns how many of them completed: all of them (queued on the stream:
 * done before anything submitted later), or fewer when the device ended
 * the job with an error status at launch [return value]: that is logged
 * on stderr and the caller falls back to the CPU for the rest. A program's
 * first launch on a device (and, with MAIA_TORCH_SYNC=1, every launch)
 * waits for its result, so its device errors are caught here; later
 * launches run asynchronously and a device error raises at the next wait,
 * like any job's. Host-side errors (libmaia, a job timeout) raise.
 */
size_t run(int dev, const std::vector<Launch> &launches, const char *op);

/*
 * Debug hook (torch.ops.maia.tvp_inject_fault): the next launch of kernel
 * `kind` ("exp", "adamw", ...; every dtype) runs with an instruction
 * budget of 1, so the device ends it with KERNEL_WATCHDOG before it stores
 * anything. Throws for an unknown kind.
 */
void inject_fault(const std::string &kind);
/*
 * Program families kept beside the ops that use them (ops_*.cpp): gen(kind,
 * t) returns program "kind.t"'s text for one of kinds, or "" when there is
 * no such element type t. Registered by a static initialiser.
 */
using Family = std::string (*)(const std::string &kind, const std::string &t);
bool add_family(const std::vector<std::string> &kinds, Family gen);
/* The assembly text of program "kind.T" (T: f32, bf16, f16; a family's own). Throws for an unknown one. */
std::string source(const std::string &program);
/* The kernel kinds of the library. */
std::vector<std::string> kinds();

} // namespace tvp
} // namespace maia_torch
