// SPDX-License-Identifier: MIT
/* Command-buffer builder: device commands appended into a host BO. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "maia/hw/cmd.h"

#include "internal.h"

MAIA_EXPORT int maia_cmdbuf_create(struct maia_device *dev, uint32_t capacity,
				   struct maia_cmdbuf **out)
{
	struct maia_cmdbuf *cb;
	void *cpu;
	int err;

	maia_error_clear();
	if (!dev || !out || capacity < 8 || capacity > MAIA_CMDBUF_MAX_SIZE)
		return maia_error(-EINVAL, "maia_cmdbuf_create: NULL argument or capacity %u not "
				  "in 8..%u", capacity, MAIA_CMDBUF_MAX_SIZE);
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	err = maia_bo_create(dev, capacity, MAIA_BO_HOST, &cb->bo);
	if (!err)
		err = maia_bo_map(cb->bo, &cpu);
	if (err) {
		maia_bo_destroy(cb->bo);
		free(cb);
		return err;
	}
	cb->dev = dev;
	cb->cpu = cpu;
	cb->capacity = capacity & ~7u;
	*out = cb;
	return 0;
}

MAIA_EXPORT void maia_cmdbuf_destroy(struct maia_cmdbuf *cb)
{
	if (!cb)
		return;
	maia_bo_destroy(cb->bo);
	free(cb);
}

MAIA_EXPORT void maia_cmdbuf_reset(struct maia_cmdbuf *cb)
{
	if (cb)
		cb->used = 0;
}

MAIA_EXPORT uint32_t maia_cmdbuf_size(const struct maia_cmdbuf *cb)
{
	return cb ? cb->used : 0;
}

/* Appends a command whose header is valid (a size multiple of 8); -ENOSPC if it does not fit. */
int maia_cmdbuf_put(struct maia_cmdbuf *cb, const void *cmd)
{
	const struct maia_cmd_header *hdr = cmd;

	if (hdr->size > cb->capacity - cb->used)
		return maia_error(-ENOSPC, "command buffer full (%u of %u bytes used, command "
				  "needs %u)", cb->used, cb->capacity, hdr->size);
	memcpy(cb->cpu + cb->used, cmd, hdr->size);
	cb->used += hdr->size;
	return 0;
}

MAIA_EXPORT int maia_cmd_raw(struct maia_cmdbuf *cb, const void *cmd)
{
	const struct maia_cmd_header *hdr = cmd;

	maia_error_clear();
	if (!cb || !cmd)
		return maia_error(-EINVAL, "maia_cmd_raw: NULL command buffer or command");
	if (hdr->size < sizeof(*hdr) || hdr->size % 8)
		return maia_error(-EINVAL, "maia_cmd_raw: command size %u is not a multiple of 8 "
				  "of at least %zu", hdr->size, sizeof(*hdr));
	return maia_cmdbuf_put(cb, cmd);
}

#define CMD_INIT(op, type) { .hdr = { .opcode = (op), .size = sizeof(type) } }

MAIA_EXPORT int maia_cmd_nop(struct maia_cmdbuf *cb)
{
	struct maia_cmd_nop c = CMD_INIT(MAIA_OP_NOP, struct maia_cmd_nop);

	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_copy_2d(struct maia_cmdbuf *cb, uint64_t dst, uint64_t dst_stride,
				 uint64_t src, uint64_t src_stride, uint64_t width,
				 uint32_t height)
{
	struct maia_cmd_dma_copy c = CMD_INIT(MAIA_OP_DMA_COPY, struct maia_cmd_dma_copy);
	uint64_t span;

	if (!width || !height)
		return maia_error(-EINVAL, "maia_cmd_copy: nothing to copy (width %llu, height %u)",
				  (unsigned long long)width, height);
	/* The device rejects rows that run past the end of the address space. */
	span = width;
	if (height > 1) {
		uint64_t stride = src_stride > dst_stride ? src_stride : dst_stride;

		if (__builtin_mul_overflow(stride, (uint64_t)(height - 1), &span) ||
		    __builtin_add_overflow(span, width, &span))
			return maia_error(-EINVAL, "maia_cmd_copy_2d: the copied area overflows");
	}
	if (src + span < src || dst + span < dst)
		return maia_error(-EINVAL, "maia_cmd_copy: the range wraps the address space");
	c.dst = dst;
	c.dst_stride = dst_stride;
	c.src = src;
	c.src_stride = src_stride;
	c.width = width;
	c.height = height;
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_copy(struct maia_cmdbuf *cb, uint64_t dst, uint64_t src, uint64_t bytes)
{
	return maia_cmd_copy_2d(cb, dst, 0, src, 0, bytes, 1);
}

MAIA_EXPORT int maia_cmd_fill(struct maia_cmdbuf *cb, uint64_t dst, uint64_t bytes,
			      uint32_t pattern)
{
	struct maia_cmd_fill c = CMD_INIT(MAIA_OP_FILL, struct maia_cmd_fill);

	if (bytes % 4 || dst + bytes < dst)
		return maia_error(-EINVAL, "maia_cmd_fill: size %llu is not a multiple of 4 or "
				  "wraps the address space", (unsigned long long)bytes);
	c.dst = dst;
	c.size = bytes;
	c.pattern = pattern;
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_fence_write(struct maia_cmdbuf *cb, uint64_t addr, uint64_t value)
{
	struct maia_cmd_fence_write c = CMD_INIT(MAIA_OP_FENCE_WRITE, struct maia_cmd_fence_write);

	if (addr % 8)
		return maia_error(-EINVAL, "maia_cmd_fence_write: address 0x%llx is not 8-byte "
				  "aligned", (unsigned long long)addr);
	c.addr = addr;
	c.value = value;
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_timestamp(struct maia_cmdbuf *cb, uint64_t addr)
{
	struct maia_cmd_timestamp c = CMD_INIT(MAIA_OP_TIMESTAMP, struct maia_cmd_timestamp);

	if (addr % 8)
		return maia_error(-EINVAL, "maia_cmd_timestamp: address 0x%llx is not 8-byte "
				  "aligned", (unsigned long long)addr);
	c.addr = addr;
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_sem_signal(struct maia_cmdbuf *cb, uint32_t index, uint32_t value)
{
	struct maia_cmd_sem_signal c = CMD_INIT(MAIA_OP_SEM_SIGNAL, struct maia_cmd_sem_signal);

	if (index >= MAIA_NUM_SEMAPHORES)
		return maia_error(-EINVAL, "maia_cmd_sem_signal: semaphore %u, the device has %u",
				  index, MAIA_NUM_SEMAPHORES);
	c.index = index;
	c.value = value;
	return maia_cmd_raw(cb, &c);
}

MAIA_EXPORT int maia_cmd_sem_wait(struct maia_cmdbuf *cb, uint32_t index, uint32_t value,
				  uint32_t timeout_us)
{
	struct maia_cmd_sem_wait c = CMD_INIT(MAIA_OP_SEM_WAIT, struct maia_cmd_sem_wait);

	if (index >= MAIA_NUM_SEMAPHORES)
		return maia_error(-EINVAL, "maia_cmd_sem_wait: semaphore %u, the device has %u",
				  index, MAIA_NUM_SEMAPHORES);
	c.index = index;
	c.value = value;
	c.timeout_us = timeout_us;
	return maia_cmd_raw(cb, &c);
}
