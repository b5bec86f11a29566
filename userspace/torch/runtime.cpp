// SPDX-License-Identifier: MIT
/*
 * The backend's runtime (runtime.h): device, jobs, DMA staging, the caching
 * sub-allocator and op accounting.
 */
#include "runtime.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace maia_torch {

/* Per device: opened once; its job command buffer and DMA staging buffer (under job_mu). */
struct DeviceState {
	std::once_flag open_once;
	struct maia_device *dev = nullptr;
	int open_err = 0;
	struct maia_cmdbuf *cb = nullptr;
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

/* job_mu: one job at a time; protects the devices' cb and staging buffers. */
static std::mutex job_mu;
static const uint32_t job_capacity = 64 * 1024;
static const int64_t job_timeout_ns = 120LL * 1000 * 1000 * 1000;

Job::Job(int dev) : dev_(dev)
{
	start();
}

Job::Job(const at::Tensor &t) : dev_(device_index(t.device()))
{
	start();
}

void Job::start()
{
	struct maia_device *dev = device(dev_);
	DeviceState &d = devices[dev_];

	job_mu.lock();
	if (!d.cb) {
		int err = maia_cmdbuf_create(dev, job_capacity, &d.cb);

		if (err < 0) {
			d.cb = nullptr;
			job_mu.unlock();
			check(err, "maia_cmdbuf_create");
		}
	}
	maia_cmdbuf_reset(d.cb);
}

Job::~Job()
{
	job_mu.unlock();
}

struct maia_cmdbuf *Job::cmdbuf()
{
	return devices[dev_].cb;
}

void Job::add(int err, const char *what)
{
	check(err, what);
}

void Job::run()
{
	struct maia_job_status st = {};
	int err;

	TORCH_CHECK(!ran_, "maia: a Job runs once");
	ran_ = true;
	if (maia_cmdbuf_size(cmdbuf()) == 0)
		return;
	err = maia_run(device(dev_), cmdbuf(), job_timeout_ns, &st);
	if (err < 0) {
		const char *why = maia_last_error();

		TORCH_CHECK(false, "maia: job failed (", maia_job_status_name(st.status),
			    ", device status ", st.device_status, " at command offset ",
			    st.error_offset, "): ", why && *why ? why : maia_strerror(err));
	}
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
		job.run();
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
		job.run();
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
 * made. empty_cache() gives the large blocks' buffer objects back.
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
	int dev_;

	/* mu protects everything below. */
	mutable std::mutex mu;
	mutable std::unordered_map<size_t, std::vector<uint64_t>> cache;	/* size -> free VAs */
	mutable std::unordered_map<uint64_t, size_t> live;			/* VA -> size */
	mutable std::unordered_map<uint64_t, struct maia_bo *> large_bos;	/* VA -> its BO */
	mutable std::vector<struct maia_bo *> chunks;
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
		chunks.push_back(bo);
		chunk_va = maia_bo_va(bo);
		chunk_left = chunk_size;
	}
	va = chunk_va;
	chunk_va += size;
	chunk_left -= size;
	return va;
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
	std::lock_guard<std::mutex> lock(mu);

	for (auto &entry : cache) {
		std::vector<uint64_t> keep;

		for (uint64_t va : entry.second) {
			auto bo = large_bos.find(va);

			if (bo == large_bos.end()) {
				keep.push_back(va);
				continue;
			}
			st.bo_bytes -= maia_bo_size(bo->second);
			st.cached_bytes -= entry.first;
			maia_bo_destroy(bo->second);
			large_bos.erase(bo);
		}
		entry.second.swap(keep);
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

/* count_mu protects both maps. */
static std::mutex count_mu;
static std::map<std::string, int64_t> device_ops, fallback_ops;
static std::atomic<bool> strict_mode{ std::getenv("MAIA_TORCH_STRICT") &&
				      std::strcmp(std::getenv("MAIA_TORCH_STRICT"), "0") };

void count_device_op(const char *name)
{
	std::lock_guard<std::mutex> lock(count_mu);

	device_ops[name]++;
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

	return device_ops;
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
