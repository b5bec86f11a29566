// SPDX-License-Identifier: MIT
/*
 * The device as torch 2.x sees a PrivateUse1 backend: a device guard (one
 * device, index 0, one in-order stream whose events complete at once, since
 * every job finishes before the call that made it returns) and the
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

static void check_index(c10::DeviceIndex index)
{
	TORCH_CHECK(index == 0 || index == -1, "maia: the backend drives device 0 only, not ", index);
}

struct MaiaGuardImpl final : public c10::impl::DeviceGuardImplInterface {
	c10::DeviceType type() const override
	{
		return kMaia;
	}
	c10::Device exchangeDevice(c10::Device d) const override
	{
		check_index(d.index());
		return c10::Device(kMaia, 0);
	}
	c10::Device getDevice() const override
	{
		return c10::Device(kMaia, 0);
	}
	void setDevice(c10::Device d) const override
	{
		check_index(d.index());
	}
	void uncheckedSetDevice(c10::Device d) const noexcept override
	{
		(void)d;
	}
	c10::Stream getStream(c10::Device d) const override
	{
		(void)d;
		return c10::Stream(c10::Stream::DEFAULT, c10::Device(kMaia, 0));
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
		return 1;
	}
	/* Work is synchronous: an event is complete once recorded. */
	void record(void **event, const c10::Stream &stream, const c10::DeviceIndex index,
		    const c10::EventFlag flag) const override
	{
		(void)event;
		(void)stream;
		(void)flag;
		check_index(index);
	}
	void block(void *event, const c10::Stream &stream) const override
	{
		(void)event;
		(void)stream;
	}
	bool queryEvent(void *event) const override
	{
		(void)event;
		return true;
	}
	void destroyEvent(void *event, const c10::DeviceIndex index) const noexcept override
	{
		(void)event;
		(void)index;
	}
	bool queryStream(const c10::Stream &stream) const override
	{
		(void)stream;
		return true;
	}
	void synchronizeStream(const c10::Stream &stream) const override
	{
		(void)stream;
	}
	void synchronizeEvent(void *event) const override
	{
		(void)event;
	}
	void synchronizeDevice(const c10::DeviceIndex index) const override
	{
		(void)index;
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
	/* A Maia device is there (the first use opens device 0). */
	bool isAvailable() const override
	{
		return maia_device_count() > 0;
	}
	bool hasPrimaryContext(c10::DeviceIndex index) const override
	{
		(void)index;
		return true;
	}
	c10::Device getDeviceFromPtr(void *data) const override
	{
		(void)data;
		return c10::Device(kMaia, 0);
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
