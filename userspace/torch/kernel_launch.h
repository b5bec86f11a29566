// SPDX-License-Identifier: MIT
/*
 * The launch of a Triton kernel on a maia device (kernel_launch.cpp), for
 * the Python extension that launches without torch's dispatcher
 * (python/launch_module.cpp, maia._maia_launch).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct maia_kernel;

namespace maia_torch {

/* The device's kernel for a binary of size bytes (TVP instructions) named key, made once. */
__attribute__((visibility("default")))
struct maia_kernel *triton_kernel(int dev, const std::string &key, const void *binary, size_t size);

/*
 * One KERNEL command of k over grid with its argument words on device
 * dev's stream, counted as maia::triton_launch (flush_launches applies).
 * grid: no dimension 0 or above MAIA_TVP_MAX_GRID; nargs <= MAIA_TVP_MAX_ARGS.
 */
__attribute__((visibility("default")))
void triton_launch_words(int dev, struct maia_kernel *k, const uint32_t grid[3], const uint64_t *args,
			 uint32_t nargs, uint32_t budget);

} // namespace maia_torch
