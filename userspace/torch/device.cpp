// SPDX-License-Identifier: MIT
/*
 * The device as torch 2.x sees a PrivateUse1 backend: a device guard
 * (devices maia:0 .. N-1, a current device per thread, one in-order stream
 * per device, its events and their timing) and the
 * PrivateUse1 hooks (availability, which device a pointer is on, storage
 * resize). maia/torch.py renames the backend to "maia" and registers the
 * Python device module (torch.maia).
 */
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "runtime.h"

namespace maia_torch {

static const c10::DeviceType kMaia = c10::DeviceType::PrivateUse1;

/*
 * The current device is per thread (runtime.cpp), as CUDA's is; each
 * device has one in-order stream (DEFAULT): its jobs are submitted to the
 * device's queue and run in order (runtime.h). An event is the last job
 * submitted to its device when it was recorded: done when that job is. A
 * timing event (enable_timing=True: EventFlag::BACKEND_DEFAULT) also
 * enqueues a TIMESTAMP command there, in order after the ops before it,
 * which writes the device's clock (modeled time on hardware 1.8,
 * Documentation/hw/time-model.rst) into the event's stamp slot.
 */
struct StampSlot {
	uint64_t va = 0;		/* 0: none */
	const uint64_t *cpu = nullptr;	/* the host's view of the same 8 bytes */
};

struct MaiaEvent {
	int dev;
	uint64_t seqno;
	bool timing;
	StampSlot stamp;
};

/*
 * Stamp slots: 8 bytes each in pinned host buffer objects of the device
 * (4 KiB, 512 slots), kept for later events as the staging buffer is. A
 * slot freed while its TIMESTAMP is still queued is safe to hand out
 * again: the next owner's TIMESTAMP comes later on the same stream.
 * stamp_mu protects free_stamps and stamp_count.
 */
static std::mutex stamp_mu;
static std::vector<StampSlot> free_stamps[kMaxDevices];
static size_t stamp_count[kMaxDevices];
static const size_t kStampBo = 4096;

static StampSlot stamp_get(int dev)
{
	std::lock_guard<std::mutex> lock(stamp_mu);
	std::vector<StampSlot> &fl = free_stamps[dev];

	if (fl.empty()) {
		struct maia_bo *bo = nullptr;
		void *cpu = nullptr;
		size_t n = kStampBo / sizeof(uint64_t);

		check(maia_bo_create(device(dev), kStampBo, MAIA_BO_HOST, &bo),
		      "maia_bo_create (event timestamps)");
		int err = maia_bo_map(bo, &cpu);

		if (err < 0)
			maia_bo_destroy(bo);
		check(err, "maia_bo_map (event timestamps)");
		/* Room for every slot: stamp_put() must not allocate. */
		stamp_count[dev] += n;
		fl.reserve(stamp_count[dev]);
		for (size_t i = n; i-- > 0;)
			fl.push_back({ maia_bo_va(bo) + i * sizeof(uint64_t),
				       static_cast<const uint64_t *>(cpu) + i });
	}
	StampSlot s = fl.back();

	fl.pop_back();
	return s;
}

static void stamp_put(int dev, const StampSlot &s) noexcept
{
	std::lock_guard<std::mutex> lock(stamp_mu);

	if (s.va)
		free_stamps[dev].push_back(s);
}

struct MaiaGuardImpl final : public c10::impl::DeviceGuardImplInterface {
	c10::DeviceType type() const override
	{
		return kMaia;
	}
	c10::Device exchangeDevice(c10::Device d) const override
	{
		c10::Device old(kMaia, (c10::DeviceIndex)current_device());

		if (d.index() != -1)
			set_current_device(d.index());
		return old;
	}
	c10::Device getDevice() const override
	{
		return c10::Device(kMaia, (c10::DeviceIndex)current_device());
	}
	void setDevice(c10::Device d) const override
	{
		if (d.index() != -1)
			set_current_device(d.index());
	}
	void uncheckedSetDevice(c10::Device d) const noexcept override
	{
		if (d.index() >= 0 && d.index() < std::max(device_count(), 1))
			set_current_device(d.index());
	}
	c10::Stream getStream(c10::Device d) const override
	{
		int index = d.index() == -1 ? current_device() : d.index();

		return c10::Stream(c10::Stream::DEFAULT, c10::Device(kMaia, (c10::DeviceIndex)index));
	}
	c10::Stream getNewStream(c10::Device d, int priority) const override
	{
		(void)priority;
		return getStream(d);
	}
	c10::Stream exchangeStream(c10::Stream s) const override
	{
		return getStream(s.device());
	}
	/*
	 * At least 1, as the index checks (runtime.cpp) allow maia:0 with no
	 * device: fake and meta maia tensors (FakeTensorMode, AOTAutograd)
	 * live there. torch's autograd engine sizes its per-device ready
	 * queues and the caller streams it syncs leaf streams with
	 * (GraphTask::stash_current_streams) by this count and indexes them
	 * with maia:0 unchecked: 0 made backward() of fake maia tensors fail
	 * an internal assert, or read past the end and crash with
	 * multithreading off (AOTAutograd). torch.maia.device_count() and
	 * torch.accelerator.device_count() still say how many devices exist.
	 */
	c10::DeviceIndex deviceCount() const noexcept override
	{
		return (c10::DeviceIndex)std::max(device_count(), 1);
	}
	void record(void **event, const c10::Stream &stream, const c10::DeviceIndex index,
		    const c10::EventFlag flag) const override
	{
		(void)index;
		auto *e = static_cast<MaiaEvent *>(*event);
		int dev = stream.device_index() < 0 ? current_device() : stream.device_index();

		if (!e) {
			e = new MaiaEvent();
			e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
			*event = e;
		}
		if (e->stamp.va && e->dev != dev) {
			stamp_put(e->dev, e->stamp);
			e->stamp = StampSlot();
		}
		e->dev = dev;
		if (e->timing) {
			if (!e->stamp.va)
				e->stamp = stamp_get(dev);
			Job job(dev);

			job.add(maia_cmd_timestamp(job.cmdbuf(), e->stamp.va), "maia_cmd_timestamp");
			job.run();
		}
		/* The TIMESTAMP's job or a later one: done means the stamp is written. */
		e->seqno = last_seqno(dev);
	}
	/* The stream waits for the event: the host waits (one stream per device). */
	void block(void *event, const c10::Stream &stream) const override
	{
		(void)stream;
		auto *e = static_cast<MaiaEvent *>(event);

		if (e)
			wait_job(e->dev, e->seqno);
	}
	bool queryEvent(void *event) const override
	{
		auto *e = static_cast<MaiaEvent *>(event);

		return !e || job_done(e->dev, e->seqno);
	}
	void destroyEvent(void *event, const c10::DeviceIndex index) const noexcept override
	{
		(void)index;
		auto *e = static_cast<MaiaEvent *>(event);

		if (e)
			stamp_put(e->dev, e->stamp);
		delete e;
	}
	/*
	 * Milliseconds of device time from event1's TIMESTAMP to event2's,
	 * after both are written (torch's Event checks they are done first,
	 * as torch.cuda's does; a direct call waits). The messages are
	 * torch.cuda's.
	 */
	double elapsedTime(void *event1, void *event2, const c10::DeviceIndex index) const override
	{
		(void)index;
		auto *a = static_cast<MaiaEvent *>(event1);
		auto *b = static_cast<MaiaEvent *>(event2);

		TORCH_CHECK_VALUE(a && b, "Both events must be recorded before calculating elapsed time.");
		TORCH_CHECK_VALUE(a->timing && b->timing,
				  "Both events must be created with argument 'enable_timing=True'.");
		TORCH_CHECK(a->dev == b->dev, "maia: events on maia:", a->dev, " and maia:", b->dev,
			    " have no common clock");
		wait_job(a->dev, a->seqno);
		wait_job(b->dev, b->seqno);
		/* Written by the device: read once each, after the wait. */
		uint64_t t1 = __atomic_load_n(a->stamp.cpu, __ATOMIC_ACQUIRE);
		uint64_t t2 = __atomic_load_n(b->stamp.cpu, __ATOMIC_ACQUIRE);

		return (static_cast<double>(t2) - static_cast<double>(t1)) / 1e6;
	}
	bool queryStream(const c10::Stream &stream) const override
	{
		int dev = stream.device_index() < 0 ? current_device() : stream.device_index();

		return job_done(dev, last_seqno(dev));
	}
	void synchronizeStream(const c10::Stream &stream) const override
	{
		synchronize(stream.device_index() < 0 ? current_device() : stream.device_index());
	}
	void synchronizeEvent(void *event) const override
	{
		auto *e = static_cast<MaiaEvent *>(event);

		if (e)
			wait_job(e->dev, e->seqno);
	}
	void synchronizeDevice(const c10::DeviceIndex index) const override
	{
		synchronize(index < 0 ? current_device() : index);
	}
	void recordDataPtrOnStream(const c10::DataPtr &data, const c10::Stream &stream) const override
	{
		(void)data;
		(void)stream;
	}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, MaiaGuardImpl);

struct MaiaHooks final : public at::PrivateUse1HooksInterface {
	bool isBuilt() const override
	{
		return true;
	}
	/* A Maia device is there (each is opened on first use). */
	bool isAvailable() const override
	{
		return device_count() > 0;
	}
	bool hasPrimaryContext(c10::DeviceIndex index) const override
	{
		(void)index;
		return true;
	}
	/* Device VAs do not name their device: the current one. */
	c10::Device getDeviceFromPtr(void *data) const override
	{
		(void)data;
		return c10::Device(kMaia, (c10::DeviceIndex)current_device());
	}
	/* UntypedStorage.resize_(): a new block, the common bytes copied on the device. */
	void resizePrivateUse1Bytes(const c10::Storage &storage, size_t newsize) const override
	{
		resize_storage(storage, newsize);
	}
};

[[maybe_unused]] static bool hooks_registered = [] {
	at::RegisterPrivateUse1HooksInterface(new MaiaHooks());
	return true;
}();

} // namespace maia_torch
