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

/* Devices maia:0 .. maia:N-1 are libmaia's devices 0 .. N-1, opened on first use. */
static const int kMaxDevices = 16;
/* How many Maia devices there are (at most kMaxDevices). */
int device_count();
/* Maia device index, opened on first use; throws when it cannot be. */
struct maia_device *device(int index);
/* The calling thread's current device (the device guard's), 0 at first. */
int current_device();
void set_current_device(int index);
/* The index of a Maia device (-1: the current one); checked against device_count(). */
int device_index(const c10::Device &d);

/* Throws c10::Error "maia: what: libmaia's message" when err < 0. */
void check(int err, const char *what);

/*
 * One job on one device: commands appended with the libmaia builders on
 * cmdbuf(), then run() submits and waits. Jobs run one at a time (the
 * backend is synchronous, like a single in-order stream per device); a Job
 * holds the job lock for its whole life. Job(t): on the device of tensor t
 * (every operand of the job must be on that device).
 */
class Job {
public:
	explicit Job(int dev);
	explicit Job(const at::Tensor &t);
	~Job();
	Job(const Job &) = delete;
	Job &operator=(const Job &) = delete;
	struct maia_cmdbuf *cmdbuf();
	/* Append with a libmaia builder's return value checked. */
	void add(int err, const char *what);
	void run();
	int dev() const { return dev_; }
private:
	void start();
	int dev_;
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

/* The c10::Allocator of Maia (PrivateUse1) tensors: of the current device. */
c10::Allocator *allocator();
/* The allocator of device index's memory. */
c10::Allocator *allocator(int index);
/* Give storage a new block of newsize bytes, the common bytes copied over. */
void resize_storage(const c10::Storage &storage, size_t newsize);

/* DMA: host memory <-> a VA of device dev, through its pinned staging buffer. */
void copy_to_device(int dev, uint64_t dst_va, const void *src, size_t bytes);
void copy_from_device(int dev, void *dst, uint64_t src_va, size_t bytes);
/* DMA: a byte copy between two VAs of device dev. */
void copy_on_device(int dev, uint64_t dst_va, uint64_t src_va, size_t bytes);

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
