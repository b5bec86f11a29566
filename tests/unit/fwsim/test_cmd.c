// SPDX-License-Identifier: MIT
/*
 * firmware-sim command processor: DMA copy (1D/2D, host and HBM, many sizes
 * and strides, checked byte for byte against a reference copy done here),
 * fill, fence, timestamp, semaphores across queues, malformed commands,
 * opcodes the firmware disables, and dispatch to the tensor engine.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "maia/hw/model.h"
#include "maia/hw/tensor.h"
#include "tap.h"

static struct env env;
static struct tq q0, q1;

/* Memory regions used as copy sources/targets: bus or HBM addresses. */
#define REGION	(2u << 20)

static uint8_t *region_ptr(uint64_t addr)
{
	if (addr & MAIA_PHYS_HBM)
		return env.hbm + (addr & ~MAIA_PHYS_HBM);
	return host_ptr(&env, addr);
}

struct copy_case {
	uint64_t width;
	uint32_t height;
	uint64_t src_stride, dst_stride;
};

/* Runs one copy and checks the whole destination region against a model. */
static bool check_copy(uint64_t src, uint64_t dst, const struct copy_case *c, uint32_t seed)
{
	static uint8_t expect[REGION];
	uint8_t *s = region_ptr(src), *d = region_ptr(dst);
	struct maia_cq_entry cqe;
	struct cmdbuf cb;

	fill_random(s, REGION, seed);
	fill_random(d, REGION, seed ^ 0x5555);
	memcpy(expect, d, REGION);
	for (uint32_t r = 0; r < c->height; r++)
		memcpy(expect + r * (c->height > 1 ? c->dst_stride : 0),
		       s + r * (c->height > 1 ? c->src_stride : 0), c->width);
	cb_init(&cb);
	cmd_copy(&cb, src, dst, c->width, c->height, c->src_stride, c->dst_stride);
	cqe = run_cb(&env, &q0, &cb);
	return cqe.status == MAIA_STATUS_OK && cqe.flags == MAIA_CQE_VALID &&
	       memcmp(expect, d, REGION) == 0;
}

static void test_copy(void)
{
	static const struct copy_case cases[] = {
		{ 1, 1, 0, 0 }, { 3, 1, 0, 0 }, { 4096, 1, 0, 0 }, { 4097, 1, 0, 0 },
		{ 65535, 1, 0, 0 }, { 300000, 1, 0, 0 }, { REGION - 1, 1, 0, 0 }, { REGION, 1, 0, 0 },
		{ 16, 4, 16, 16 }, { 7, 13, 9, 31 }, { 64, 64, 128, 64 }, { 1000, 100, 1000, 4096 },
		{ 1, 1000, 3, 7 }, { 4096, 200, 8192, 4100 }, { 100, 10, 0, 100 },
		{ 333, 777, 2048, 1024 }, { 70000, 20, 70001, 80000 },
	};
	uint64_t host_a = host_alloc(&env, REGION, 4096), host_b = host_alloc(&env, REGION, 4096);
	uint64_t hbm_a = MAIA_PHYS_HBM | hbm_alloc(&env, REGION, 4096);
	uint64_t hbm_b = MAIA_PHYS_HBM | hbm_alloc(&env, REGION, 4096);
	const struct { uint64_t src, dst; const char *name; } dirs[] = {
		{ host_a, host_b, "host->host" }, { host_a, hbm_a, "host->HBM" },
		{ hbm_a, host_b, "HBM->host" }, { hbm_a, hbm_b, "HBM->HBM" },
	};

	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		unsigned int bad = 0, n = 0;

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			n++;
			if (!check_copy(dirs[d].src, dirs[d].dst, &cases[i], (uint32_t)(i * 7 + d + 1))) {
				bad++;
				printf("# %s copy %llu x %u strides %llu/%llu wrong\n", dirs[d].name,
				       (unsigned long long)cases[i].width, cases[i].height,
				       (unsigned long long)cases[i].src_stride,
				       (unsigned long long)cases[i].dst_stride);
			}
		}
		tap_ok(bad == 0, "%s: %u 1D/2D copies match the reference byte for byte",
		       dirs[d].name, n);
	}

	/* Random shapes, host -> HBM. */
	{
		unsigned int bad = 0;
		uint32_t x = 12345;

		for (int i = 0; i < 60; i++) {
			struct copy_case c;

			x = x * 1103515245u + 12345u;
			c.height = 1 + (x >> 8) % 64;
			c.width = 1 + (x >> 3) % 5000;
			c.src_stride = c.width + (x >> 12) % 300;
			c.dst_stride = c.width + (x >> 20) % 500;
			if (c.height * (c.src_stride > c.dst_stride ? c.src_stride : c.dst_stride) > REGION)
				continue;
			bad += !check_copy(host_a, hbm_a, &c, x);
		}
		tap_ok(bad == 0, "60 random 2D shapes host->HBM match the reference");
	}

	/* Zero-sized copies do nothing and succeed. */
	{
		struct copy_case c0 = { 0, 5, 1, 1 }, c1 = { 5, 0, 1, 1 };

		tap_ok(check_copy(host_a, host_b, &c0, 9) && check_copy(host_a, host_b, &c1, 9),
		       "width 0 or height 0 copies nothing and succeeds");
	}
}

static void test_fill_fence_timestamp(void)
{
	uint64_t buf = host_alloc(&env, 1 << 20, 4096);
	uint64_t hbm = MAIA_PHYS_HBM | hbm_alloc(&env, 1 << 20, 4096);
	uint64_t fence = host_alloc(&env, 16, 8), ts = host_alloc(&env, 16, 8);
	uint64_t v, t0, t1, t2;
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	bool ok = true;

	memset(host_ptr(&env, buf), 0xee, 1 << 20);
	cb_init(&cb);
	cmd_fill(&cb, buf + 4, 1000000, 0xa1b2c3d4u);
	cmd_fill(&cb, hbm, 1 << 20, 0x01020304u);
	cmd_timestamp(&cb, ts);
	cmd_fence(&cb, fence, 0x1122334455667788ull);
	cmd_timestamp(&cb, ts + 8);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_OK, "fill + timestamp + fence job completes OK");
	for (uint32_t i = 0; i < 1000000; i += 4) {
		uint32_t w;

		memcpy(&w, (uint8_t *)host_ptr(&env, buf) + 4 + i, 4);
		ok &= w == 0xa1b2c3d4u;
	}
	ok &= *(uint8_t *)host_ptr(&env, buf + 3) == 0xee &&
	      *(uint8_t *)host_ptr(&env, buf + 4 + 1000000) == 0xee;
	tap_ok(ok, "fill writes the pattern exactly over 1000000 bytes at an odd offset");
	ok = true;
	for (uint32_t i = 0; i < (1u << 20); i += 4) {
		uint32_t w;

		memcpy(&w, region_ptr(hbm) + i, 4);
		ok &= w == 0x01020304u;
	}
	tap_ok(ok, "fill covers 1 MiB of HBM");
	memcpy(&v, host_ptr(&env, fence), 8);
	tap_ok(v == 0x1122334455667788ull, "fence writes its 64-bit value");
	memcpy(&t1, host_ptr(&env, ts), 8);
	memcpy(&t2, host_ptr(&env, ts + 8), 8);
	/* modeled: after the job's fixed cost and the fills, the fence between them takes time */
	t0 = rd(&env, MAIA_REG_MODEL_JOB_NS);
	tap_ok(t1 >= cqe.start_ns + t0 && t2 > t1 && t2 < cqe.end_ns,
	       "timestamps are modeled times inside the job's start..end (%llu, %llu in %llu..%llu)",
	       (unsigned long long)t1, (unsigned long long)t2,
	       (unsigned long long)cqe.start_ns, (unsigned long long)cqe.end_ns);

	cb_init(&cb);
	cmd_fill(&cb, buf, 6, 0);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "fill size not a multiple of 4 is BAD_CMD");
	cb_init(&cb);
	cmd_fence(&cb, fence + 4, 1);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "misaligned fence address is BAD_CMD");
	cb_init(&cb);
	cmd_timestamp(&cb, ts + 1);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "misaligned timestamp address is BAD_CMD");
	cb_init(&cb);
	cmd_fence(&cb, 0x2000, 1);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_DMA_ERROR, "fence to an unreachable address is DMA_ERROR");
	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM | (env.hbm_size - 8), 16, 0);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT, "fill past the end of HBM is MMU_FAULT");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

static void test_semaphores(void)
{
	uint64_t flag = host_alloc(&env, 8, 8), data = host_alloc(&env, 8, 8);
	struct maia_cq_entry *cw, *cs;
	struct cmdbuf wait_cb, sig_cb;
	uint32_t sw, ss;
	uint64_t v;

	/* Queue 0 waits for queue 1: the wait must not block queue 1. */
	cb_init(&wait_cb);
	cmd_sem_wait(&wait_cb, 3, 2, 2000000);
	cmd_copy(&wait_cb, data, flag, 8, 1, 0, 0);
	cb_init(&sig_cb);
	cmd_fence(&sig_cb, data, 0xfeedull);
	cmd_sem_signal(&sig_cb, 3, 1);
	cmd_sem_signal(&sig_cb, 3, 1);
	sw = queue_push(&env, &q0, cb_to_host(&env, &wait_cb), wait_cb.len, 0, 0, 1, true);
	ss = queue_push(&env, &q1, cb_to_host(&env, &sig_cb), sig_cb.len, 0, 0, 2, true);
	maia_sim_drain(env.sim);
	cw = cqe_at(&env, &q0, sw);
	cs = cqe_at(&env, &q1, ss);
	memcpy(&v, host_ptr(&env, flag), 8);
	tap_ok(cs->status == MAIA_STATUS_OK && cw->status == MAIA_STATUS_OK,
	       "a wait on queue 0 is released by signals on queue 1");
	tap_ok(v == 0xfeed && cw->end_ns >= cs->end_ns,
	       "the waiter ran after the signaller's writes");

	/* The wait consumed the value: a second wait times out. */
	cb_init(&wait_cb);
	cmd_sem_wait(&wait_cb, 3, 1, 20000);
	sw = queue_push(&env, &q0, cb_to_host(&env, &wait_cb), wait_cb.len, 0, 0, 3, true);
	maia_sim_drain(env.sim);
	cw = cqe_at(&env, &q0, sw);
	tap_ok(cw->status == MAIA_STATUS_SEM_TIMEOUT && cw->error_offset == 0 &&
	       cw->end_ns - cw->start_ns >= 20000,
	       "a wait that is never signalled times out after 20 us (%llu ns)",
	       (unsigned long long)(cw->end_ns - cw->start_ns));

	/* A parked wait sleeps: the worker must not spin until the deadline. */
	{
		struct timespec c0, c1, w0, w1;
		double cpu, wall;

		cb_init(&wait_cb);
		cmd_sem_wait(&wait_cb, 6, 1, 200000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		clock_gettime(CLOCK_MONOTONIC, &w0);
		sw = queue_push(&env, &q0, cb_to_host(&env, &wait_cb), wait_cb.len, 0, 0, 8, true);
		maia_sim_drain(env.sim);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &w1);
		cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
		wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9;
		tap_ok(cqe_at(&env, &q0, sw)->status == MAIA_STATUS_SEM_TIMEOUT && wall >= 0.2 &&
		       cpu < 0.1 * wall, "a 200 ms wait times out without spinning (%.0f ms CPU in %.0f ms)",
		       cpu * 1e3, wall * 1e3);
	}

	cb_init(&wait_cb);
	cmd_sem_wait(&wait_cb, 4, 1, 0);
	sw = queue_push(&env, &q0, cb_to_host(&env, &wait_cb), wait_cb.len, 0, 0, 4, true);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q0, sw)->status == MAIA_STATUS_SEM_TIMEOUT,
	       "timeout 0 is a poll that fails at once");

	cb_init(&sig_cb);
	cmd_sem_signal(&sig_cb, 10, 5);
	cmd_sem_wait(&sig_cb, 10, 5, 0);
	cmd_sem_wait(&sig_cb, 10, 0, 0);
	sw = queue_push(&env, &q0, cb_to_host(&env, &sig_cb), sig_cb.len, 0, 0, 5, true);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q0, sw)->status == MAIA_STATUS_OK,
	       "signal then wait in one job, and a wait for 0, succeed");

	cb_init(&sig_cb);
	cmd_sem_signal(&sig_cb, MAIA_NUM_SEMAPHORES, 1);
	sw = queue_push(&env, &q0, cb_to_host(&env, &sig_cb), sig_cb.len, 0, 0, 6, true);
	cb_init(&wait_cb);
	cmd_sem_wait(&wait_cb, 200, 1, 10);
	ss = queue_push(&env, &q0, cb_to_host(&env, &wait_cb), wait_cb.len, 0, 0, 7, true);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q0, sw)->status == MAIA_STATUS_BAD_CMD &&
	       cqe_at(&env, &q0, ss)->status == MAIA_STATUS_BAD_CMD,
	       "semaphore index out of range is BAD_CMD for signal and wait");
}

static struct maia_cq_entry run_raw(const void *cmds, uint32_t len)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cb_add(&cb, cmds, len);
	return run_cb(&env, &q0, &cb);
}

static void test_malformed(void)
{
	struct maia_cmd_nop nop = { .hdr = { .opcode = MAIA_OP_NOP, .size = 8 } };
	struct maia_cmd_header h;
	struct maia_cq_entry cqe;
	uint8_t raw[256];
	struct cmdbuf cb;

	/* Unknown opcode after two good commands: offset of the third. */
	cb_init(&cb);
	cb_add(&cb, &nop, 8);
	cmd_fill(&cb, host_alloc(&env, 64, 8), 64, 1);
	h = (struct maia_cmd_header){ .opcode = 0x3f, .size = 8 };
	cb_add(&cb, &h, 8);
	cb_add(&cb, &nop, 8);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_OPCODE &&
	       cqe.error_offset == 8 + sizeof(struct maia_cmd_fill),
	       "unknown opcode 0x3f: BAD_OPCODE at offset %u", cqe.error_offset);
	h = (struct maia_cmd_header){ .opcode = 0xffff, .size = 8 };
	cqe = run_raw(&h, 8);
	tap_ok(cqe.status == MAIA_STATUS_BAD_OPCODE, "opcode 0xffff: BAD_OPCODE");

	h = (struct maia_cmd_header){ .opcode = MAIA_OP_NOP, .size = 0 };
	cqe = run_raw(&h, 8);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD && cqe.error_offset == 0,
	       "command size 0: BAD_CMD (no endless loop)");
	h.size = 12;
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &h, 8);
	cqe = run_raw(raw, 16);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "command size not a multiple of 8: BAD_CMD");
	h.size = 64;
	memcpy(raw + 8, &h, 8);
	memcpy(raw, &nop, 8);
	cqe = run_raw(raw, 16);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD && cqe.error_offset == 8,
	       "command running past the buffer end: BAD_CMD at offset 8");
	h = (struct maia_cmd_header){ .opcode = MAIA_OP_NOP, .size = 32 };
	memset(raw, 0, 32);
	memcpy(raw, &h, 8);
	cqe = run_raw(raw, 32);
	tap_ok(cqe.status == MAIA_STATUS_OK, "a 32-byte NOP pads the buffer");
	h = (struct maia_cmd_header){ .opcode = MAIA_OP_NOP, .flags = 1, .size = 8 };
	cqe = run_raw(&h, 8);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "NOP with flags: BAD_CMD");

	{
		struct maia_cmd_dma_copy c = {
			.hdr = { .opcode = MAIA_OP_DMA_COPY, .size = sizeof(c) + 8 },
			.src = HOST_BASE, .dst = HOST_BASE, .width = 8, .height = 1,
		};

		memset(raw, 0, sizeof(raw));
		memcpy(raw, &c, sizeof(c));
		cqe = run_raw(raw, sizeof(c) + 8);
		tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "DMA_COPY with the wrong size: BAD_CMD");
		c.hdr.size = sizeof(c);
		c.reserved = 1;
		cqe = run_raw(&c, sizeof(c));
		tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "DMA_COPY with reserved set: BAD_CMD");
		c.reserved = 0;
		c.hdr.flags = 4;
		cqe = run_raw(&c, sizeof(c));
		tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "DMA_COPY with flags: BAD_CMD");
		c.hdr.flags = 0;
		c.height = 3;
		c.src_stride = UINT64_MAX / 2;
		cqe = run_raw(&c, sizeof(c));
		tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "DMA_COPY whose strides overflow: BAD_CMD");
		c.height = 1;
		c.src = 0x1000;
		cqe = run_raw(&c, sizeof(c));
		tap_ok(cqe.status == MAIA_STATUS_DMA_ERROR, "DMA_COPY from an unreachable address: DMA_ERROR");
	}

	/* Fuzz: random bytes as commands never crash, always complete. */
	{
		unsigned int done = 0;
		uint32_t seed = 99;

		for (int i = 0; i < 300; i++) {
			struct maia_cmd_header *hp = (struct maia_cmd_header *)raw;

			fill_random(raw, sizeof(raw), seed++);
			hp->opcode %= 0x40;
			hp->size = 8u * (1 + raw[5] % 8);
			cqe = run_raw(raw, 64);
			done += cqe.flags == MAIA_CQE_VALID;
		}
		tap_ok(done == 300, "300 random command buffers all complete (%u)", done);
		wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	}
}

/* An image whose OPCODES record leaves out FILL. */
static void test_opcode_bitmap(void)
{
	struct maia_fw_header hdr = {
		.magic = MAIA_FW_MAGIC, .abi_major = MAIA_FW_ABI_MAJOR,
		.fw_version = MAIA_FW_VERSION(1, 1, 0), .header_size = sizeof(hdr),
	};
	struct maia_fw_tlv t = { .type = MAIA_FW_TLV_OPCODES, .length = 8 };
	uint64_t ops = 0x7full & ~(1ull << MAIA_OP_FILL);
	uint8_t rec[sizeof(t) + sizeof(ops)];
	uint8_t img[sizeof(hdr) + sizeof(rec)];
	struct maia_cq_entry cqe;
	struct cmdbuf cb;

	memcpy(rec, &t, sizeof(t));
	memcpy(rec + sizeof(t), &ops, sizeof(ops));
	hdr.payload_size = sizeof(rec);
	hdr.payload_crc32 = ref_crc32(rec, sizeof(rec));
	memcpy(img, &hdr, sizeof(hdr));
	memcpy(img + sizeof(hdr), rec, sizeof(rec));
	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(boot_image(&env, img, sizeof(img)) == MAIA_BOOT_STATUS_READY,
	       "an image without FILL in its opcode bitmap boots");
	queue_setup(&env, &q0, 0, 16, MAIA_QUEUE_PRIO_NORMAL);
	cb_init(&cb);
	cmd_fill(&cb, host_alloc(&env, 8, 8), 8, 0);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_OPCODE, "FILL is then BAD_OPCODE");
	cb_init(&cb);
	cmd_fence(&cb, host_alloc(&env, 8, 8), 1);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_OK, "FENCE_WRITE still works (status %u flags %u)", cqe.status, cqe.flags);
	{
		struct maia_cmd_eltwise add = { .hdr = { .opcode = MAIA_OP_ADD, .size = sizeof(add) } };

		cqe = run_raw(&add, sizeof(add));
		tap_ok(cqe.status == MAIA_STATUS_BAD_OPCODE,
		       "a tensor opcode left out of the bitmap is BAD_OPCODE");
	}
}

static void desc1(struct maia_tensor_desc *d, uint64_t addr, uint32_t n)
{
	memset(d, 0, sizeof(*d));
	d->addr = addr;
	d->shape[0] = n;
	d->strides[0] = 1;
	d->dtype = MAIA_DTYPE_FP32;
	d->rank = 1;
}

static void test_tensor_dispatch(void)
{
	uint64_t x = MAIA_PHYS_HBM | hbm_alloc(&env, 4096, 64);
	uint64_t y = host_alloc(&env, 4096, 64), out = host_alloc(&env, 4096, 64);
	struct maia_cmd_eltwise add = { .hdr = { .opcode = MAIA_OP_ADD, .size = sizeof(add) } };
	float *xf = (float *)region_ptr(x), *yf = host_ptr(&env, y), *of = host_ptr(&env, out);
	struct maia_cq_entry cqe;
	bool ok = true;

	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 16, MAIA_QUEUE_PRIO_NORMAL);
	for (int i = 0; i < 1000; i++) {
		xf[i] = (float)i * 0.5f;
		yf[i] = 3.0f - (float)i;
	}
	desc1(&add.x, x, 1000);
	desc1(&add.y, y, 1000);
	desc1(&add.out, out, 1000);
	cqe = run_raw(&add, sizeof(add));
	for (int i = 0; i < 1000; i++)
		ok &= of[i] == xf[i] + yf[i];
	tap_ok(cqe.status == MAIA_STATUS_OK && ok,
	       "ADD of 1000 FP32 (HBM + host -> host) runs on the tensor engine (status %u)",
	       cqe.status);
	add.out.addr = MAIA_PHYS_HBM | (env.hbm_size - 64);
	cqe = run_raw(&add, sizeof(add));
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT,
	       "a tensor output past the end of HBM faults (status %u)", cqe.status);
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

int main(void)
{
	if (env_init(&env, 2, 32u << 20, 32u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 16, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&env, &q1, 1, 16, MAIA_QUEUE_PRIO_NORMAL);
	test_copy();
	test_fill_fence_timestamp();
	test_semaphores();
	test_malformed();
	test_opcode_bitmap();
	test_tensor_dispatch();
	env_fini(&env);
	return tap_done();
}
