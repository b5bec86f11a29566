// SPDX-License-Identifier: MIT
/*
 * The backend's runtime (runtime.h): device, jobs, DMA staging, the caching
 * sub-allocator and op accounting.
 */
#include "runtime.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace maia_torch {

/* A command buffer of a device's ring and the job last submitted from it. */
struct Slot {
	struct maia_cmdbuf *cb = nullptr;
	uint64_t seqno = 0;
	bool pending = false;
};

static const int kSlots = 16;

/* Per device: opened once; its ring of job command buffers and DMA staging buffer (under job_mu). */
struct DeviceState {
	std::once_flag open_once;
	struct maia_device *dev = nullptr;
	int open_err = 0;
	Slot ring[kSlots];
	int next = 0;
	int batching = 0;		/* batch() depth: jobs append to open_slot */
	int open_slot = -1;		/* the slot whose command buffer collects them */
	uint64_t last = 0;		/* seqno of the last job submitted */
	struct maia_bo *staging = nullptr;
	void *staging_cpu = nullptr;
};
static DeviceState devices[kMaxDevices];

int device_count()
{
	static int count = [] {
		int n = maia_device_count();

		return n < 0 ? 0 : std::min(n, kMaxDevices);
	}();
	return count;
}

static thread_local int current = 0;

int current_device()
{
	return current;
}

void set_current_device(int index)
{
	TORCH_CHECK(index >= 0 && index < std::max(device_count(), 1), "maia: no device maia:", index,
		    " (", device_count(), " Maia devices)");
	current = index;
}

int device_index(const c10::Device &d)
{
	int index = d.has_index() ? d.index() : current;

	TORCH_CHECK(index >= 0 && index < std::max(device_count(), 1), "maia: no device maia:", index,
		    " (", device_count(), " Maia devices)");
	return index;
}

struct maia_device *device(int index)
{
	TORCH_CHECK(index >= 0 && index < kMaxDevices, "maia: no device maia:", index);
	DeviceState &d = devices[index];

	std::call_once(d.open_once, [&] { d.open_err = maia_device_open(index, &d.dev); });
	if (d.open_err < 0) {
		const char *why = maia_last_error();

		TORCH_CHECK(false, "maia: cannot open Maia device ", index, ": ",
			    why && *why ? why : maia_strerror(d.open_err));
	}
	return d.dev;
}

void check(int err, const char *what)
{
	if (err >= 0)
		return;
	const char *why = maia_last_error();

	TORCH_CHECK(false, "maia: ", what, ": ", why && *why ? why : maia_strerror(err));
}

/* ---- jobs ---------------------------------------------------------------- */

/* job_mu: one job at a time; protects the devices' rings and staging buffers. */
static std::recursive_mutex job_mu;
static const uint32_t job_capacity = 256 * 1024;
/* A batch is submitted before a job starts once its command buffer holds this much. */
static const uint32_t batch_limit = 128 * 1024;
static const int64_t job_timeout_ns = 120LL * 1000 * 1000 * 1000;
static const bool sync_mode = std::getenv("MAIA_TORCH_SYNC") &&
			      std::strcmp(std::getenv("MAIA_TORCH_SYNC"), "0");

static std::atomic<int64_t> waits{ 0 };

int64_t host_waits()
{
	return waits;
}

/* Wait for slot's job; raises if it failed. Under job_mu. */
static void retire(int dev, Slot &slot, bool earlier)
{
	struct maia_job_status st = {};
	int err;

	if (!slot.pending)
		return;
	slot.pending = false;
	waits++;
	err = maia_wait(devices[dev].dev, slot.seqno, job_timeout_ns, &st);
	if (err == 0 && st.status != 0)	/* DRM_MAIA_JOB_OK */
		err = -EIO;
	if (err < 0) {
		const char *why = maia_last_error();

		TORCH_CHECK(false, "maia: ", earlier ? "an earlier job on maia:" : "job on maia:", dev,
			    " failed (", maia_job_status_name(st.status), ", device status ",
			    st.device_status, " at command offset ", st.error_offset, "): ",
			    why && *why ? why : maia_strerror(err));
	}
}

Job::Job(int dev) : dev_(dev)
{
	start();
}

Job::Job(const at::Tensor &t) : dev_(device_index(t.device()))
{
	start();
}

static void submit(int dev, int index);

/* Submit the open batch of device dev, if any. Under job_mu. */
static void flush_locked(int dev)
{
	DeviceState &d = devices[dev];
	int open = d.open_slot;

	d.open_slot = -1;
	if (open >= 0 && maia_cmdbuf_size(d.ring[open].cb))
		submit(dev, open);
}

void Job::start()
{
	struct maia_device *dev = device(dev_);
	DeviceState &d = devices[dev_];

	job_mu.lock();
	if (d.open_slot >= 0 && d.batching && maia_cmdbuf_size(d.ring[d.open_slot].cb) < batch_limit) {
		slot_ = d.open_slot;		/* append to the batch */
		return;
	}
	try {
		flush_locked(dev_);
	} catch (...) {
		job_mu.unlock();
		throw;
	}
	slot_ = d.next;
	Slot &slot = d.ring[slot_];
	try {
		retire(dev_, slot, true);
		if (!slot.cb)
			check(maia_cmdbuf_create(dev, job_capacity, &slot.cb), "maia_cmdbuf_create");
	} catch (...) {
		job_mu.unlock();
		throw;
	}
	maia_cmdbuf_reset(slot.cb);
	d.next = (slot_ + 1) % kSlots;
	if (d.batching)
		d.open_slot = slot_;
}

Job::~Job()
{
	job_mu.unlock();
}

struct maia_cmdbuf *Job::cmdbuf()
{
	return devices[dev_].ring[slot_].cb;
}

void Job::add(int err, const char *what)
{
	check(err, what);
}

static std::atomic<int64_t> submits{ 0 };

int64_t jobs_submitted()
{
	return submits;
}

/* Submit slot index of device dev. Under job_mu. */
static void submit(int dev, int index)
{
	DeviceState &d = devices[dev];
	Slot &slot = d.ring[index];

	check(maia_submit(d.dev, slot.cb, nullptr, &slot.seqno), "maia_submit");
	slot.pending = true;
	d.last = slot.seqno;
	submits++;
	if (sync_mode)
		retire(dev, slot, false);
}

void Job::run()
{
	DeviceState &d = devices[dev_];

	TORCH_CHECK(!ran_, "maia: a Job runs once");
	ran_ = true;
	if (slot_ == d.open_slot)
		return;			/* submitted with its batch */
	if (maia_cmdbuf_size(cmdbuf()) == 0)
		return;
	submit(dev_, slot_);
}

void Job::run_sync()
{
	DeviceState &d = devices[dev_];

	ran_ = true;
	if (slot_ == d.open_slot)
		d.open_slot = -1;	/* the batch goes now, this job last */
	if (maia_cmdbuf_size(cmdbuf()) == 0)
		return;
	submit(dev_, slot_);
	retire(dev_, d.ring[slot_], false);
}

int Job::run_status(struct maia_job_status *st)
{
	DeviceState &d = devices[dev_];
	int err;

	*st = {};
	ran_ = true;
	if (slot_ == d.open_slot)
		d.open_slot = -1;	/* the batch goes now, this job last */
	if (maia_cmdbuf_size(cmdbuf()) == 0)
		return 0;
	Slot &slot = d.ring[slot_];
	/* Not submit(): in sync mode it would raise the failure this returns. */
	check(maia_submit(d.dev, slot.cb, nullptr, &slot.seqno), "maia_submit");
	d.last = slot.seqno;
	submits++;
	waits++;
	err = maia_wait(d.dev, slot.seqno, job_timeout_ns, st);
	slot.pending = err == -ETIME;	/* still running: the slot waits for it again */
	if (err == 0 && st->status != 0)	/* DRM_MAIA_JOB_OK */
		err = -EIO;
	return err;
}

void batch_begin(int dev)
{
	std::lock_guard<std::recursive_mutex> lock(job_mu);

	devices[dev].batching++;
}

void batch_end(int dev)
{
	std::lock_guard<std::recursive_mutex> lock(job_mu);
	DeviceState &d = devices[dev];

	if (d.batching > 0 && --d.batching == 0 && d.dev)
		flush_locked(dev);
}

void flush(int dev)
{
	std::lock_guard<std::recursive_mutex> lock(job_mu);

	if (devices[dev].dev)
		flush_locked(dev);
}

void synchronize(int dev)
{
	std::lock_guard<std::recursive_mutex> lock(job_mu);

	for (int i = 0; i < kMaxDevices; i++) {
		DeviceState &d = devices[i];

		if ((dev >= 0 && i != dev) || !d.dev)
			continue;
		flush_locked(i);
		/* Oldest first: the slot after the last one used. */
		for (int k = 0; k < kSlots; k++)
			retire(i, d.ring[(d.next + k) % kSlots], true);
	}
}

uint64_t last_seqno(int dev)
{
	std::lock_guard<std::recursive_mutex> lock(job_mu);

	if (devices[dev].dev)
		flush_locked(dev);
	return devices[dev].last;
}

bool job_done(int dev, uint64_t seqno)
{
	struct maia_job_status st = {};

	if (!seqno)
		return true;
	return maia_wait(device(dev), seqno, 0, &st) != -ETIME;
}

void wait_job(int dev, uint64_t seqno)
{
	struct maia_job_status st = {};

	if (!seqno)
		return;
	waits++;
	check(maia_wait(device(dev), seqno, job_timeout_ns, &st), "maia_wait");
}

/* ---- DMA staging ------------------------------------------------------------ */

/* A pinned host buffer object per device that its DMA copies through; under job_mu. */
static const size_t staging_max = 32u << 20;

static size_t staging_reserve(int dev, size_t want)
{
	DeviceState &d = devices[dev];
	size_t size = d.staging ? maia_bo_size(d.staging) : 0;

	if (want > staging_max)
		want = staging_max;
	if (size >= want)
		return size;
	size = 1u << 20;
	while (size < want)
		size *= 2;
	if (d.staging)
		maia_bo_destroy(d.staging);
	d.staging = nullptr;
	check(maia_bo_create(device(dev), size, MAIA_BO_HOST, &d.staging), "maia_bo_create (staging)");
	check(maia_bo_map(d.staging, &d.staging_cpu), "maia_bo_map (staging)");
	return size;
}

void copy_to_device(int dev, uint64_t dst_va, const void *src, size_t bytes)
{
	const char *p = static_cast<const char *>(src);

	while (bytes) {
		Job job(dev);
		size_t n = std::min(bytes, staging_reserve(dev, bytes));
		DeviceState &d = devices[dev];

		std::memcpy(d.staging_cpu, p, n);
		job.add(maia_cmd_copy(job.cmdbuf(), dst_va, maia_bo_va(d.staging), n), "maia_cmd_copy");
		job.run_sync();		/* the staging buffer is reused next */
		p += n;
		dst_va += n;
		bytes -= n;
	}
}

void copy_from_device(int dev, void *dst, uint64_t src_va, size_t bytes)
{
	char *p = static_cast<char *>(dst);

	while (bytes) {
		Job job(dev);
		size_t n = std::min(bytes, staging_reserve(dev, bytes));
		DeviceState &d = devices[dev];

		job.add(maia_cmd_copy(job.cmdbuf(), maia_bo_va(d.staging), src_va, n), "maia_cmd_copy");
		job.run_sync();		/* the host reads the result */
		std::memcpy(p, d.staging_cpu, n);
		p += n;
		src_va += n;
		bytes -= n;
	}
}

void copy_on_device(int dev, uint64_t dst_va, uint64_t src_va, size_t bytes)
{
	Job job(dev);

	if (!bytes)
		return;
	job.add(maia_cmd_copy(job.cmdbuf(), dst_va, src_va, bytes), "maia_cmd_copy");
	job.run();
}

/* ---- the caching sub-allocator --------------------------------------------- */

/*
 * Small requests (up to small_max) are rounded to a power of two of at
 * least 512 bytes and carved from 32 MiB HBM buffer objects; larger ones
 * are rounded to 2 MiB and get a buffer object each. Freed blocks stay in a
 * per-size cache for the next request of their size class: a training step
 * allocates the same sizes each time, so after the first step no ioctl is
 * made. empty_cache() gives back to the driver the large blocks' buffer
 * objects and every chunk none of whose blocks is in use.
 */
class CachingAllocator final : public c10::Allocator {
public:
	explicit CachingAllocator(int dev = 0) : dev_(dev) {}
	void set_device(int dev) { dev_ = dev; }
	c10::DataPtr allocate(size_t n) override;
	c10::DeleterFnPtr raw_deleter() const override
	{
		return nullptr;
	}
	/* Allocator::clone(): a device-to-device copy by the DMA engine. */
	void copy_data(void *dst, const void *src, size_t n) const override
	{
		copy_on_device(dev_, reinterpret_cast<uint64_t>(dst), reinterpret_cast<uint64_t>(src), n);
	}
	void release(uint64_t va) const;
	MemoryStats stats() const;
	void empty_cache() const;

private:
	static const size_t small_max = 4u << 20;
	static const size_t chunk_size = 32u << 20;
	static size_t size_class(size_t n);
	uint64_t carve(size_t size) const;
	/* A 32 MiB buffer object that small blocks are carved from. */
	struct Chunk {
		struct maia_bo *bo;
		size_t in_use;		/* bytes of its blocks handed to tensors */
	};
	/* The chunk holding small block va (chunks.end() for a large block); under mu. */
	std::map<uint64_t, Chunk>::iterator chunk_of(uint64_t va) const;
	int dev_;

	/* mu protects everything below. */
	mutable std::mutex mu;
	mutable std::unordered_map<size_t, std::vector<uint64_t>> cache;	/* size -> free VAs */
	mutable std::unordered_map<uint64_t, size_t> live;			/* VA -> size */
	mutable std::unordered_map<uint64_t, struct maia_bo *> large_bos;	/* VA -> its BO */
	mutable std::map<uint64_t, Chunk> chunks;				/* by VA */
	mutable uint64_t chunk_va = 0;	/* next free byte of the last chunk */
	mutable size_t chunk_left = 0;
	mutable MemoryStats st = {};
};

size_t CachingAllocator::size_class(size_t n)
{
	size_t s = 512;

	if (n > small_max)
		return (n + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	while (s < n)
		s *= 2;
	return s;
}

/* A new block of size bytes from the chunks or its own BO; under mu. */
uint64_t CachingAllocator::carve(size_t size) const
{
	struct maia_bo *bo;
	uint64_t va;

	if (size > small_max) {
		check(maia_bo_create(device(dev_), size, MAIA_BO_HBM, &bo), "maia_bo_create");
		st.bo_bytes += maia_bo_size(bo);
		st.bo_count++;
		large_bos[maia_bo_va(bo)] = bo;
		return maia_bo_va(bo);
	}
	if (chunk_left < size) {
		check(maia_bo_create(device(dev_), chunk_size, MAIA_BO_HBM, &bo), "maia_bo_create");
		st.bo_bytes += chunk_size;
		st.bo_count++;
		chunks[maia_bo_va(bo)] = Chunk{ bo, 0 };
		chunk_va = maia_bo_va(bo);
		chunk_left = chunk_size;
	}
	va = chunk_va;
	chunk_va += size;
	chunk_left -= size;
	return va;
}

std::map<uint64_t, CachingAllocator::Chunk>::iterator CachingAllocator::chunk_of(uint64_t va) const
{
	auto it = chunks.upper_bound(va);

	if (it == chunks.begin())
		return chunks.end();
	--it;
	return va < it->first + chunk_size ? it : chunks.end();
}

static void delete_block(void *ctx);

c10::DataPtr CachingAllocator::allocate(size_t n)
{
	c10::Device dev(c10::DeviceType::PrivateUse1, (c10::DeviceIndex)dev_);
	uint64_t va;
	size_t size;

	if (n == 0)
		return c10::DataPtr(nullptr, nullptr, &delete_block, dev);
	size = size_class(n);
	TORCH_CHECK(size >= n, "maia: cannot allocate ", n, " bytes");
	std::lock_guard<std::mutex> lock(mu);
	st.allocations++;
	auto it = cache.find(size);
	if (it != cache.end() && !it->second.empty()) {
		va = it->second.back();
		it->second.pop_back();
		st.cached_bytes -= size;
		st.reuses++;
	} else {
		va = carve(size);
	}
	live[va] = size;
	st.in_use_bytes += size;
	if (size <= small_max)
		chunk_of(va)->second.in_use += size;
	void *p = reinterpret_cast<void *>(va);
	/* The context names the device above the VA (VAs are below 2^47). */
	void *ctx = reinterpret_cast<void *>(va | ((uint64_t)(dev_ + 1) << 48));
	return c10::DataPtr(p, ctx, &delete_block, dev);
}

void CachingAllocator::release(uint64_t va) const
{
	std::lock_guard<std::mutex> lock(mu);
	auto it = live.find(va);

	if (it == live.end())
		return;
	cache[it->second].push_back(va);
	if (it->second <= small_max)
		chunk_of(va)->second.in_use -= it->second;
	st.in_use_bytes -= it->second;
	st.cached_bytes += it->second;
	live.erase(it);
}

MemoryStats CachingAllocator::stats() const
{
	std::lock_guard<std::mutex> lock(mu);

	return st;
}

void CachingAllocator::empty_cache() const
{
	/*
	 * Queued jobs may still use a block freed since (the driver does not
	 * know what a user-queue job touches): let them end first, before mu
	 * (a job takes mu under job_mu when it allocates its output).
	 */
	synchronize(dev_);
	std::lock_guard<std::mutex> lock(mu);

	/* A block goes with its BO: a large one's own, or a chunk with nothing in use. */
	for (auto &entry : cache) {
		std::vector<uint64_t> keep;

		for (uint64_t va : entry.second) {
			auto bo = large_bos.find(va);

			if (bo != large_bos.end()) {
				st.bo_bytes -= maia_bo_size(bo->second);
				maia_bo_destroy(bo->second);
				large_bos.erase(bo);
			} else if (chunk_of(va)->second.in_use) {
				keep.push_back(va);
				continue;
			}
			st.cached_bytes -= entry.first;
		}
		entry.second.swap(keep);
	}
	for (auto it = chunks.begin(); it != chunks.end();) {
		if (it->second.in_use) {
			++it;
			continue;
		}
		if (chunk_va >= it->first && chunk_va < it->first + chunk_size)
			chunk_left = 0;		/* carve the next block from a new chunk */
		st.bo_bytes -= chunk_size;
		maia_bo_destroy(it->second.bo);
		it = chunks.erase(it);
	}
}

static CachingAllocator allocators[kMaxDevices];
[[maybe_unused]] static bool allocators_numbered = [] {
	for (int i = 0; i < kMaxDevices; i++)
		allocators[i].set_device(i);
	return true;
}();

static void delete_block(void *ctx)
{
	uint64_t v = reinterpret_cast<uint64_t>(ctx);

	if (v)
		allocators[(v >> 48) - 1].release(v & ((1ull << 48) - 1));
}

/* What torch finds as the PrivateUse1 allocator: the current device's. */
class CurrentAllocator final : public c10::Allocator {
public:
	c10::DataPtr allocate(size_t n) override
	{
		return allocators[current_device()].allocate(n);
	}
	c10::DeleterFnPtr raw_deleter() const override
	{
		return nullptr;
	}
	void copy_data(void *dst, const void *src, size_t n) const override
	{
		allocators[current_device()].copy_data(dst, src, n);
	}
};

static CurrentAllocator the_allocator;

c10::Allocator *allocator()
{
	return &the_allocator;
}

c10::Allocator *allocator(int index)
{
	TORCH_CHECK(index >= 0 && index < kMaxDevices, "maia: no device maia:", index);
	return &allocators[index];
}

void resize_storage(const c10::Storage &storage, size_t newsize)
{
	c10::Storage s = storage;	/* a handle: changes the caller's storage */
	int dev = device_index(s.device());
	c10::DataPtr fresh = allocators[dev].allocate(newsize);
	size_t keep = std::min(s.nbytes(), newsize);

	if (keep && s.data())
		copy_on_device(dev, reinterpret_cast<uint64_t>(fresh.get()),
			       reinterpret_cast<uint64_t>(s.data()), keep);
	s.set_data_ptr_noswap(std::move(fresh));
	s.set_nbytes(newsize);
}

/* Summed over the devices. */
MemoryStats memory_stats()
{
	MemoryStats sum = {};

	for (const CachingAllocator &a : allocators) {
		MemoryStats s = a.stats();

		sum.in_use_bytes += s.in_use_bytes;
		sum.cached_bytes += s.cached_bytes;
		sum.bo_bytes += s.bo_bytes;
		sum.bo_count += s.bo_count;
		sum.allocations += s.allocations;
		sum.reuses += s.reuses;
	}
	return sum;
}

void empty_cache()
{
	for (const CachingAllocator &a : allocators)
		a.empty_cache();
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &the_allocator);

/* ---- op accounting ---------------------------------------------------------- */

/* Hashed by the name's characters: a count looks up a string_view, no std::string made. */
struct NameHash {
	using is_transparent = void;
	size_t operator()(std::string_view s) const
	{
		return std::hash<std::string_view>{}(s);
	}
};

/* count_mu protects both maps. */
static std::mutex count_mu;
static std::unordered_map<std::string, int64_t, NameHash, std::equal_to<>> device_ops;
static std::map<std::string, int64_t> fallback_ops;
static std::atomic<bool> strict_mode{ std::getenv("MAIA_TORCH_STRICT") &&
				      std::strcmp(std::getenv("MAIA_TORCH_STRICT"), "0") };

/* Per device op, so cheap: no std::string, no ordered map's string compares. */
void count_device_op(const char *name)
{
	std::string_view key(name);
	std::lock_guard<std::mutex> lock(count_mu);
	auto it = device_ops.find(key);

	if (it != device_ops.end())
		it->second++;
	else
		device_ops.emplace(key, 1);
}

void count_fallback(const std::string &name)
{
	{
		std::lock_guard<std::mutex> lock(count_mu);

		fallback_ops[name]++;
	}
	TORCH_CHECK(!strict_mode, "maia strict mode: ", name,
		    " has no Maia kernel and would run on the CPU");
}

std::map<std::string, int64_t> device_op_counts()
{
	std::lock_guard<std::mutex> lock(count_mu);

	return std::map<std::string, int64_t>(device_ops.begin(), device_ops.end());
}

std::map<std::string, int64_t> fallback_counts()
{
	std::lock_guard<std::mutex> lock(count_mu);

	return fallback_ops;
}

void reset_counts()
{
	std::lock_guard<std::mutex> lock(count_mu);

	device_ops.clear();
	fallback_ops.clear();
}

void set_strict(bool on)
{
	strict_mode = on;
}

bool strict()
{
	return strict_mode;
}

} // namespace maia_torch
