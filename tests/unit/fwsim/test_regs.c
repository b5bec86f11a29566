// SPDX-License-Identifier: MIT
/* firmware-sim register file: identification, control, time, interrupts, bad accesses. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "maia/hw/dtype.h"
#include "tap.h"

/* A bad access is reported once and changes nothing. */
static void expect_guest_error(struct env *e, const char *what, unsigned int before)
{
	tap_ok(guest_errors(e) == before + 1, "%s is reported as a guest error (%u reports)",
	       what, guest_errors(e) - before);
}

static void test_id(struct env *e)
{
	tap_ok(rd(e, MAIA_REG_ID) == MAIA_ID_MAGIC, "ID reads the MAIA magic");
	tap_ok(rd(e, MAIA_REG_REVISION) == 0x010cu, "REVISION is 1.12");
	tap_ok((rd(e, MAIA_REG_CAPS) & (MAIA_CAP_MMU | MAIA_CAP_SEMAPHORES | MAIA_CAP_TENSOR)) ==
	       (MAIA_CAP_MMU | MAIA_CAP_SEMAPHORES | MAIA_CAP_TENSOR),
	       "CAPS advertises MMU, semaphores and tensor");
	tap_ok(rd(e, MAIA_REG_DTYPES) == (1u << MAIA_DTYPE_COUNT) - 1,
	       "DTYPES advertises all %u dtypes (0x%x)", MAIA_DTYPE_COUNT, rd(e, MAIA_REG_DTYPES));
	tap_ok(rd(e, MAIA_REG_TOPOLOGY) == (16u | (4u << MAIA_TOPOLOGY_TILES_SHIFT)),
	       "TOPOLOGY is 16 clusters x 4 tiles");
	tap_ok(rd(e, MAIA_REG_NUM_QUEUES) == 4, "NUM_QUEUES matches the config");
	tap_ok(rd(e, MAIA_REG_HBM_SIZE_LO) == (uint32_t)e->hbm_size &&
	       rd(e, MAIA_REG_HBM_SIZE_HI) == (uint32_t)(e->hbm_size >> 32), "HBM_SIZE matches");
	tap_ok(rd(e, MAIA_REG_SRAM_KIB) == 8192, "SRAM_KIB is the default 8192");
	tap_ok(rd(e, MAIA_REG_MSIX_VECTORS) == MAIA_NUM_VECTORS(4), "MSIX_VECTORS = 1 + queues");
	tap_ok(rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_WAIT_FW, "BOOT_STATUS starts WAIT_FW");
	tap_ok(guest_errors(e) == 0, "reading identification raises no guest error");
}

static void test_scratch_and_reset(struct env *e)
{
	wr(e, MAIA_REG_SCRATCH, 0xdeadbeef);
	tap_ok(rd(e, MAIA_REG_SCRATCH) == 0xdeadbeef, "SCRATCH holds a value");
	wr(e, MAIA_REG_INT_MASK, MAIA_INT_THERMAL);
	unsigned int before = guest_errors(e);

	wr(e, MAIA_REG_RESET, 0x12345678);
	expect_guest_error(e, "RESET with a wrong magic", before);
	tap_ok(rd(e, MAIA_REG_SCRATCH) == 0xdeadbeef, "a wrong RESET magic resets nothing");
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd(e, MAIA_REG_SCRATCH) == 0 && rd(e, MAIA_REG_INT_MASK) == 0,
	       "RESET magic clears SCRATCH and INT_MASK");
}

static uint64_t read_time(struct env *e)
{
	uint32_t lo = rd(e, MAIA_REG_TIME_LO);

	return ((uint64_t)rd(e, MAIA_REG_TIME_HI) << 32) | lo;
}

static void test_time(struct env *e)
{
	struct timespec ts = { 0, 2000000 };
	uint64_t t0, t1;

	t0 = read_time(e);
	nanosleep(&ts, NULL);
	t1 = read_time(e);
	tap_ok(t1 > t0 && t1 - t0 >= 2000000 && t1 - t0 < 1000000000ull,
	       "device time advances in ns (%llu ns over a 2 ms sleep)",
	       (unsigned long long)(t1 - t0));
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	t1 = read_time(e);
	tap_ok(t1 < t0 + 100000000ull, "device time restarts at reset (%llu ns)",
	       (unsigned long long)t1);
}

static void test_interrupts(struct env *e)
{
	unsigned int ev = irq_count(e, MAIA_VEC_EVENT), before;
	uint32_t resp[4];

	/* Mailbox before the firmware runs still completes (ENOTREADY) and interrupts. */
	wr(e, MAIA_REG_INT_MASK, MAIA_INT_MBOX_DONE);
	before = guest_errors(e);
	wr(e, MAIA_REG_MBOX_CMD, MAIA_MBOX_PING);
	maia_sim_drain(e->sim);
	tap_ok((rd(e, MAIA_REG_MBOX_STATUS) & MAIA_MBOX_STATUS_RESULT_MASK) == MAIA_MBOX_ENOTREADY,
	       "mailbox before boot answers ENOTREADY");
	tap_ok(guest_errors(e) == before + 1, "mailbox before boot is a guest error");
	tap_ok(rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_MBOX_DONE, "MBOX_DONE is pending");
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev, "a masked cause raises no interrupt");
	wr(e, MAIA_REG_INT_MASK, 0);
	tap_ok(irq_count(e, MAIA_VEC_EVENT) == ev + 1, "unmasking a pending cause interrupts");
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_BOOT_DONE);
	tap_ok(rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_MBOX_DONE,
	       "INT_STATUS clears only the bits written (W1C)");
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_MBOX_DONE);
	tap_ok(rd(e, MAIA_REG_INT_STATUS) == 0, "writing 1 clears the cause");
	(void)resp;
}

static void test_bad_accesses(struct env *e)
{
	static const uint32_t ro[] = {
		MAIA_REG_ID, MAIA_REG_CAPS, MAIA_REG_HBM_SIZE_LO, MAIA_REG_BOOT_STATUS,
		MAIA_REG_FW_VERSION, MAIA_REG_TIME_LO, MAIA_REG_FAULT_INFO, MAIA_REG_MBOX_STATUS,
		MAIA_REG_MBOX_RESP(3), MAIA_REG_Q(0, MAIA_Q_HEAD), MAIA_REG_Q(1, MAIA_Q_STATUS),
		MAIA_REG_Q(3, MAIA_Q_COMPLETED), MAIA_REG_Q(2, MAIA_Q_FETCHED),
		MAIA_REG_Q(1, MAIA_Q_FABRIC_WAITS),
	};
	static const uint32_t unmapped[] = {
		0x0028, 0x0038, 0x0068, 0x0088, 0x00ac, 0x00bc, 0x02fc, 0x03fc,
		MAIA_REG_Q(4, MAIA_Q_SQ_LO), MAIA_REG_Q(4, MAIA_Q_FABRIC_WAITS), /* only 4 queues */
		MAIA_REG_DOORBELL(4), 0x1800, 0x1ffc, MAIA_BAR0_SIZE, 0xfffffffc,
	};
	unsigned int before;
	bool all;

	all = true;
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		uint32_t old = rd(e, ro[i]);

		before = guest_errors(e);
		wr(e, ro[i], 0xa5a5a5a5);
		if (guest_errors(e) != before + 1 ||
		    (ro[i] != MAIA_REG_TIME_LO && rd(e, ro[i]) != old))
			all = tap_ok(0, "write to read-only 0x%04x", ro[i]);
	}
	tap_ok(all, "writes to %zu read-only registers are reported and ignored",
	       sizeof(ro) / sizeof(ro[0]));

	all = true;
	for (size_t i = 0; i < sizeof(unmapped) / sizeof(unmapped[0]); i++) {
		before = guest_errors(e);
		if (rd(e, unmapped[i]) != 0 || guest_errors(e) != before + 1)
			all = tap_ok(0, "read of unmapped 0x%04x", unmapped[i]);
		wr(e, unmapped[i], 0xffffffff);
		if (guest_errors(e) != before + 2)
			all = tap_ok(0, "write to unmapped 0x%04x", unmapped[i]);
	}
	tap_ok(all, "unmapped offsets read 0 and report reads and writes");
	tap_ok(strstr(e->last_error, "0xfffffffc") != NULL,
	       "the report names the offset (\"%s\")", e->last_error);

	before = guest_errors(e);
	tap_ok(rd(e, MAIA_REG_SCRATCH + 1) == 0, "unaligned read returns 0");
	wr(e, MAIA_REG_SCRATCH + 2, 1);
	tap_ok(guest_errors(e) == before + 2 && rd(e, MAIA_REG_SCRATCH) == 0,
	       "unaligned accesses are reported and ignored");

	before = guest_errors(e);
	wr(e, MAIA_REG_BOOT_CTRL, 2);
	expect_guest_error(e, "BOOT_CTRL with an undefined value", before);
	tap_ok(rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_WAIT_FW, "and starts nothing");

	before = guest_errors(e);
	wr(e, MAIA_REG_INT_MASK, 0xffffffff);
	expect_guest_error(e, "INT_MASK with undefined bits", before);
	tap_ok(rd(e, MAIA_REG_INT_MASK) == MAIA_INT_ALL, "INT_MASK keeps only defined bits");
	wr(e, MAIA_REG_INT_MASK, 0);

	before = guest_errors(e);
	wr(e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0x80000001);
	expect_guest_error(e, "queue CTRL with undefined bits", before);
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_CTRL)) == 0, "and is not applied");
	before = guest_errors(e);
	wr(e, MAIA_REG_Q(0, MAIA_Q_CTRL), 3u << MAIA_Q_CTRL_PRIO_SHIFT);
	expect_guest_error(e, "queue priority 3", before);

	before = guest_errors(e);
	maia_sim_doorbell(e->sim, 99, 1);
	maia_sim_doorbell_kick(e->sim, 99);
	tap_ok(guest_errors(e) == before + 2, "doorbells on nonexistent queues are reported");
	tap_ok(maia_sim_inject(e->sim, MAIA_SIM_INJECT_HANG, 99) < 0 &&
	       maia_sim_inject(e->sim, (enum maia_sim_inject)77, 0) < 0,
	       "fault injection rejects a bad queue or kind");
}

static void test_create_rejects(void)
{
	struct maia_sim_config cfg;
	struct maia_sim_ops ops = { 0 };
	static uint8_t hbm[65536];

	maia_sim_config_defaults(&cfg);
	cfg.hbm = hbm;
	cfg.hbm_size = sizeof(hbm);
	tap_ok(maia_sim_create(&cfg, &ops, NULL) == NULL, "create without DMA callbacks fails");
	tap_ok(maia_sim_create(NULL, &ops, NULL) == NULL, "create without a config fails");
}

/* The host's clock and thread factory (maia_sim_ops now_ns, thread_create). */
struct hooks {
	uint64_t now;			/* fake device clock, ns; atomic */
	unsigned int threads;		/* atomic */
};

static uint64_t hook_now_ns(void *opaque)
{
	return __atomic_load_n(&((struct hooks *)opaque)->now, __ATOMIC_RELAXED);
}

static int hook_thread_create(void *opaque, pthread_t *thread, const char *name,
			      void *(*fn)(void *), void *arg)
{
	struct hooks *h = opaque;

	if (!name || strncmp(name, "maia-", 5))
		return EINVAL;
	__atomic_fetch_add(&h->threads, 1, __ATOMIC_RELAXED);
	return pthread_create(thread, NULL, fn, arg);
}

static int hook_dma(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static int hook_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static void hook_irq(void *opaque, unsigned int vector)
{
	(void)opaque, (void)vector;
}

static void test_host_hooks(void)
{
	static uint8_t hbm[1u << 20];
	struct maia_sim_ops ops = {
		.dma_read = hook_dma, .dma_write = hook_dma_write, .raise_irq = hook_irq,
		.now_ns = hook_now_ns, .thread_create = hook_thread_create,
	};
	struct hooks h = { .now = 5000000000ull };
	struct maia_sim_config cfg;
	struct maia_sim *sim;
	uint32_t lo, hi;

	maia_sim_config_defaults(&cfg);
	cfg.hbm = hbm;
	cfg.hbm_size = sizeof(hbm);
	cfg.worker_threads = 3;
	sim = maia_sim_create(&cfg, &ops, &h);
	tap_ok(sim != NULL, "create with host clock and thread hooks");
	if (!sim)
		return;
	/* The worker, and two pool threads (the caller is the third tensor worker). */
	tap_ok(__atomic_load_n(&h.threads, __ATOMIC_RELAXED) == 3,
	       "every library thread comes from thread_create (%u)", h.threads);
	lo = maia_sim_mmio_read(sim, MAIA_REG_TIME_LO);
	hi = maia_sim_mmio_read(sim, MAIA_REG_TIME_HI);
	tap_ok(lo == 0 && hi == 0, "device time starts at 0 on the host clock (%u:%u)", hi, lo);
	__atomic_store_n(&h.now, h.now + 0x123456789ull, __ATOMIC_RELAXED);
	lo = maia_sim_mmio_read(sim, MAIA_REG_TIME_LO);
	hi = maia_sim_mmio_read(sim, MAIA_REG_TIME_HI);
	tap_ok(lo == 0x23456789u && hi == 1, "device time is the host clock (0x%x%08x)", hi, lo);
	maia_sim_destroy(sim);
}

/* Random register traffic over the whole BAR never crashes or wedges the device. */
static void test_mmio_storm(struct env *e)
{
	static const uint32_t base[] = { 0x0000, MAIA_REG_QUEUE_BASE, MAIA_REG_DOORBELL_BASE, 0 };
	static const uint32_t span[] = { 0x0100, 4 * MAIA_REG_QUEUE_STRIDE, 16, MAIA_BAR0_SIZE + 64 };
	uint32_t x = 2024, done, bad_id = 0, before = guest_errors(e);
	struct tq q;

	for (int i = 0; i < 50000; i++) {
		uint32_t off, val, region;

		x = x * 1664525u + 1013904223u;
		region = (x >> 4) % 4;
		off = (base[region] + (x >> 8) % span[region]) & ~3u;
		x = x * 1664525u + 1013904223u;
		val = (x & 0x100) ? x : (x >> 28);	/* many small values */
		if (off == MAIA_REG_RESET && (x & 0x3f))
			continue;			/* reset now and then, not always */
		if (x & 0x10000)
			wr(e, off, val);
		else if (off == MAIA_REG_ID)
			bad_id += rd(e, off) != MAIA_ID_MAGIC;
		else
			(void)rd(e, off);
		if ((i & 1023) == 0)
			maia_sim_drain(e->sim);
	}
	maia_sim_drain(e->sim);
	tap_ok(bad_id == 0 && rd(e, MAIA_REG_ID) == MAIA_ID_MAGIC && guest_errors(e) > before,
	       "50000 random register accesses (%u guest errors) leave the device answering",
	       guest_errors(e) - before);

	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(e);
	queue_setup(e, &q, 0, 4, MAIA_QUEUE_PRIO_NORMAL);
	queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, 1, true);
	maia_sim_drain(e->sim);
	done = rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED));
	tap_ok(done == 1 && cqe_at(e, &q, 0)->flags == MAIA_CQE_VALID,
	       "after reset the device boots and runs a job");
}

int main(void)
{
	struct env e;

	if (env_init(&e, 4, 16u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	test_id(&e);
	test_scratch_and_reset(&e);
	test_time(&e);
	test_interrupts(&e);
	test_bad_accesses(&e);
	test_create_rejects();
	test_host_hooks();
	test_mmio_storm(&e);
	env_fini(&e);
	return tap_done();
}
