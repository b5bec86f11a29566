// SPDX-License-Identifier: MIT
/*
 * torch.ops.maia.triton_launch: the launch of a Triton kernel compiled by
 * the maia backend (userspace/triton/maia_triton/, Documentation/triton.rst).
 * The binary (TVP instruction words) becomes a maia_kernel once per device
 * and kernel key, cached for the process's life; each launch appends one
 * KERNEL command to a job on the device's stream, like any op of the
 * backend, so it runs in order with the ops around it and batches with them.
 */
#include <torch/library.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernel_launch.h"
#include "runtime.h"

namespace maia_torch {

/* Kernels made so far, by (device, key): key names one binary (the compiled kernel's hash). */
static std::mutex kernels_lock;		/* protects kernels */
static std::map<std::pair<int, std::string>, struct maia_kernel *> kernels;

struct maia_kernel *triton_kernel(int dev, const std::string &key, const void *binary, size_t size)
{
	std::lock_guard<std::mutex> guard(kernels_lock);
	auto it = kernels.find({ dev, key });

	if (it != kernels.end())
		return it->second;
	TORCH_CHECK(dev >= 0 && dev < device_count(), "maia::triton_launch: no device maia:", dev);
	TORCH_CHECK(size > 0 && size % sizeof(struct maia_tvp_insn) == 0,
		    "maia::triton_launch: binary of ", size,
		    " bytes is not a whole number of TVP instructions");
	uint32_t count = (uint32_t)(size / sizeof(struct maia_tvp_insn));
	/* Copied out: the binary's bytes need not be 8-byte aligned. */
	std::vector<struct maia_tvp_insn> insns(count);
	std::memcpy(insns.data(), binary, size);
	struct maia_kernel *k = nullptr;

	check(maia_kernel_create(device(dev), insns.data(), count, &k), "maia_kernel_create");
	kernels[{ dev, key }] = k;
	return k;
}

static struct maia_kernel *kernel_for(int dev, const std::string &key, const at::Tensor &binary)
{
	TORCH_CHECK(binary.device().is_cpu() && binary.scalar_type() == at::kByte &&
			    binary.is_contiguous() && binary.dim() == 1,
		    "maia::triton_launch: binary must be a contiguous 1-D uint8 CPU tensor");
	return triton_kernel(dev, key, binary.data_ptr(), (size_t)binary.numel());
}

/*
 * Early submission of an open batch (maia.inductor.batched_call sets it for
 * a compiled graph's call): a launch submits its device's open batch once
 * flush_min launches went since the rule last submitted and the device is
 * done with what it submitted then, so the device starts on a graph's
 * kernels while the host still writes the rest. 0: off (the batch goes
 * when it ends). Setting it starts the count again.
 */
static std::mutex flush_lock;		/* protects flush_min, flushed, since */
static int64_t flush_min;
static uint64_t flushed[kMaxDevices];	/* seqno of the batch the rule submitted last */
static int64_t since[kMaxDevices];	/* launches since then */

static void flush_launches(int64_t launches)
{
	TORCH_CHECK(launches >= 0, "maia::flush_launches: ", launches, " launches");
	std::lock_guard<std::mutex> guard(flush_lock);

	flush_min = launches;
	for (int64_t &n : since)
		n = 0;
}

static void maybe_flush(int dev)
{
	std::lock_guard<std::mutex> guard(flush_lock);

	if (!flush_min || ++since[dev] < flush_min || !job_done(dev, flushed[dev]))
		return;
	flushed[dev] = last_seqno(dev);		/* submits the open batch */
	since[dev] = 0;
}

static void triton_launch(const at::Tensor &binary, c10::string_view key, int64_t dev_index,
			  at::IntArrayRef grid, at::IntArrayRef args, int64_t budget)
{
	int dev = dev_index < 0 ? current_device() : (int)dev_index;
	uint32_t g[3];
	uint64_t a[MAIA_TVP_MAX_ARGS];

	TORCH_CHECK(dev < device_count(), "maia::triton_launch: no device maia:", dev);
	TORCH_CHECK(grid.size() == 3, "maia::triton_launch: grid must have 3 dimensions");
	for (int i = 0; i < 3; i++) {
		TORCH_CHECK(grid[i] >= 0 && grid[i] <= (int64_t)MAIA_TVP_MAX_GRID,
			    "maia::triton_launch: grid[", i, "] = ", grid[i], " is not in 0..",
			    MAIA_TVP_MAX_GRID);
		g[i] = (uint32_t)grid[i];
	}
	TORCH_CHECK(args.size() <= MAIA_TVP_MAX_ARGS, "maia::triton_launch: ", args.size(),
		    " arguments, at most ", MAIA_TVP_MAX_ARGS);
	TORCH_CHECK(budget >= 0 && budget <= UINT32_MAX, "maia::triton_launch: bad budget ", budget);
	/* Triton launches nothing for an empty grid. */
	if (!g[0] || !g[1] || !g[2])
		return;
	for (size_t i = 0; i < args.size(); i++)
		a[i] = (uint64_t)args[i];
	triton_launch_words(dev, kernel_for(dev, std::string(key), binary), g, a,
			    (uint32_t)args.size(), (uint32_t)budget);
}

void triton_launch_words(int dev, struct maia_kernel *k, const uint32_t grid[3], const uint64_t *args,
			 uint32_t nargs, uint32_t budget)
{
	{
		Job job(dev);

		job.add(maia_cmd_kernel(job.cmdbuf(), k, grid, args, nargs, budget),
			"maia_cmd_kernel");
		job.run();
	}
	count_device_op("maia::triton_launch");
	maybe_flush(dev);
}

TORCH_LIBRARY_FRAGMENT(maia, m)
{
	m.def("triton_launch(Tensor binary, str key, int device, int[] grid, int[] args, "
	      "int budget=0) -> ()",
	      triton_launch);
	m.def("flush_launches(int launches) -> ()", flush_launches);
}

} // namespace maia_torch
