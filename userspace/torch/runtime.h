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
 * cmdbuf(), then run() submits it to the device's queue (the user queue
 * where the driver has one) and returns: the device's stream. Jobs of a
 * device run in submission order, so the next op, a later read or a reuse
 * of freed memory comes after them. run_sync() also waits for it (reads
 * of device memory by the host). Each device has a ring of command
 * buffers; a slot is reused once its job is done, and a job that failed
 * raises there or at synchronize() ("an earlier job failed"). A Job holds
 * the job lock for its whole life. Job(t): on the device of tensor t
 * (every operand of the job must be on that device). MAIA_TORCH_SYNC=1
 * makes every run() wait.
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
	void run_sync();
	/*
	 * Submit and wait like run_sync(), but a failed job is returned, not
	 * raised: 0, or a negative errno with *st saying how it ended (the
	 * TVP kernels' fall back on a device error, tvp_kernels.cpp).
	 */
	int run_status(struct maia_job_status *st);
	int dev() const { return dev_; }
private:
	void start();
	int dev_;
	int slot_ = -1;
	bool ran_ = false;
};

/* Wait for every job submitted to device dev (-1: every device); raises if one failed. */
void synchronize(int dev);
/* The last job submitted to device dev (0: none yet), and whether a job is done. */
uint64_t last_seqno(int dev);
bool job_done(int dev, uint64_t seqno);
void wait_job(int dev, uint64_t seqno);
/*
 * Batching (torch.compile's backend, maia.torch.batched()): between
 * batch_begin and batch_end, the jobs of device dev append to one command
 * buffer, submitted as one job at batch_end, before a host read, at
 * synchronize, when an event is recorded, or when it holds 128 KiB.
 */
void batch_begin(int dev);
void batch_end(int dev);
void flush(int dev);
/* Jobs submitted to the devices since the start. */
int64_t jobs_submitted();
/* Jobs the host has waited for (a read, a synchronize, a full ring), since the start. */
int64_t host_waits();

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
/*
 * A new contiguous tensor on device dev, as at::empty would make it but
 * without the dispatcher's round trip (BackendSelect, then empty): for an
 * op's outputs, which run per call (memory_ops.cpp).
 */
at::Tensor empty_on(int dev, at::IntArrayRef size, at::ScalarType dtype);
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
