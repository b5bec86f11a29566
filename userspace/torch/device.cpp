// SPDX-License-Identifier: MIT
/*
 * The device as torch 2.x sees a PrivateUse1 backend: a device guard
 * (devices maia:0 .. N-1, a current device per thread, one in-order stream
 * per device whose events complete at once, since every job finishes
 * before the call that made it returns) and the
 * PrivateUse1 hooks (availability, which device a pointer is on, storage
 * resize). maia/torch.py renames the backend to "maia" and registers the
 * Python device module (torch.maia).
 */
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cstring>

#include "runtime.h"

namespace maia_torch {

static const c10::DeviceType kMaia = c10::DeviceType::PrivateUse1;

/*
 * The current device is per thread (runtime.cpp), as CUDA's is; each
 * device has one in-order stream (DEFAULT): its jobs are submitted to the
 * device's queue and run in order (runtime.h). An event is the last job
 * submitted to its device when it was recorded: done when that job is.
 */
struct MaiaEvent {
	int dev;
	uint64_t seqno;
};

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
	c10::DeviceIndex deviceCount() const noexcept override
	{
		return (c10::DeviceIndex)device_count();
	}
	void record(void **event, const c10::Stream &stream, const c10::DeviceIndex index,
		    const c10::EventFlag flag) const override
	{
		(void)flag;
		(void)index;
		auto *e = static_cast<MaiaEvent *>(*event);

		if (!e) {
			e = new MaiaEvent();
			*event = e;
		}
		e->dev = stream.device_index() < 0 ? current_device() : stream.device_index();
		e->seqno = last_seqno(e->dev);
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
		delete static_cast<MaiaEvent *>(event);
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
