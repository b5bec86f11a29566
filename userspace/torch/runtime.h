// SPDX-License-Identifier: MIT
/*
 * The Maia PyTorch backend's runtime: the device it runs on, device memory
 * (a caching sub-allocator over HBM buffer objects), host<->device DMA
 * through a pinned staging buffer, and jobs built from libmaia's command
 * builders. A device tensor's data pointer IS its device virtual address:
 * the CPU never dereferences it; kernels put it in tensor descriptors.
 */
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

#include <cstdint>
#include <map>
#include <string>

#include "libmaia.h"

namespace maia_torch {

/* The device every Maia (PrivateUse1) tensor lives on (Maia device 0). */
struct maia_device *device();

/* Throws c10::Error "maia: what: libmaia's message" when err < 0. */
void check(int err, const char *what);

/*
 * One job: commands appended with the libmaia builders on cmdbuf(), then
 * run() submits and waits. Jobs run one at a time (the backend is
 * synchronous, like a single in-order stream); a Job holds the job lock for
 * its whole life.
 */
class Job {
public:
	Job();
	~Job();
	Job(const Job &) = delete;
	Job &operator=(const Job &) = delete;
	struct maia_cmdbuf *cmdbuf();
	/* Append with a libmaia builder's return value checked. */
	void add(int err, const char *what);
	void run();
private:
	bool ran_ = false;
};

/* Caching sub-allocator statistics, bytes and counts. */
struct MemoryStats {
	int64_t in_use_bytes;		/* handed to tensors now */
	int64_t cached_bytes;		/* freed by tensors, kept for reuse */
	int64_t bo_bytes;		/* HBM held in buffer objects */
	int64_t bo_count;		/* buffer objects created */
	int64_t allocations;		/* allocate() calls */
	int64_t reuses;			/* ... served from the cache */
};
MemoryStats memory_stats();
/* Free the cached blocks' buffer objects that hold nothing in use. */
void empty_cache();

/* The c10::Allocator of Maia (PrivateUse1) tensors. */
c10::Allocator *allocator();
/* Give storage a new block of newsize bytes, the common bytes copied over. */
void resize_storage(const c10::Storage &storage, size_t newsize);

/* DMA: host memory <-> device VA, through the pinned staging buffer. */
void copy_to_device(uint64_t dst_va, const void *src, size_t bytes);
void copy_from_device(void *dst, uint64_t src_va, size_t bytes);
/* DMA: a byte copy between two device VAs. */
void copy_on_device(uint64_t dst_va, uint64_t src_va, size_t bytes);

/* Device VA of a device tensor's first element. */
inline uint64_t va_of(const at::Tensor &t)
{
	return reinterpret_cast<uint64_t>(t.data_ptr());
}

/* Op accounting: which ops ran on the device, which on the CPU fallback. */
void count_device_op(const char *name);
/* Count a CPU fallback of name; throws in strict mode. */
void count_fallback(const std::string &name);
std::map<std::string, int64_t> device_op_counts();
std::map<std::string, int64_t> fallback_counts();
void reset_counts();
void set_strict(bool on);
bool strict();

} // namespace maia_torch
