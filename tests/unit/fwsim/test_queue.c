// SPDX-License-Identifier: MIT
/*
 * firmware-sim queues: NOP round trips and completion entries, ring wrap,
 * configuration and doorbell errors, priority and round-robin order, shadow
 * tails, fault injection, disable and reset with jobs in flight, FETCHED,
 * aging (a busy HIGH queue does not starve a LOW one), and the inline
 * doorbell fast path (one thread at a time in the worker's place).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "tap.h"

/* Bound on a wait for an interrupt: a hang guard, never a performance limit. */
#define WAIT_MS	30000u

static void fresh(struct env *e)
{
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(e);
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

/* A command buffer of one NOP command, in host memory. */
static uint64_t nop_buffer(struct env *e)
{
	struct maia_cmd_nop nop = { .hdr = { .opcode = MAIA_OP_NOP, .size = sizeof(nop) } };
	struct cmdbuf cb;

	cb_init(&cb);
	cb_add(&cb, &nop, sizeof(nop));
	return cb_to_host(e, &cb);
}

static void test_nop_round_trip(struct env *e)
{
	unsigned int qv = irq_count(e, MAIA_VEC_QUEUE(1)), q0v = irq_count(e, MAIA_VEC_QUEUE(0));
	struct maia_cq_entry *c;
	uint32_t slot;
	uint64_t t0;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_STATUS)) == 0 &&
	       (rd(e, MAIA_REG_Q(1, MAIA_Q_CTRL)) & MAIA_Q_CTRL_ENABLE), "queue 1 enables cleanly");
	t0 = rd(e, MAIA_REG_TIME_LO);
	t0 |= (uint64_t)rd(e, MAIA_REG_TIME_HI) << 32;

	slot = queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, 0xabcdef0123ull, true);
	tap_ok(wait_irq(e, MAIA_VEC_QUEUE(1), qv + 1, WAIT_MS), "a NOP entry raises queue 1's vector");
	maia_sim_drain(e->sim);
	c = cqe_at(e, &q, slot);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK &&
	       c->job_id == 0xabcdef0123ull, "the completion is VALID, OK, with the job id");
	tap_ok(c->end_ns > c->start_ns && t0 != UINT64_MAX,
	       "start/end are modeled times in order (%llu..%llu ns)",
	       (unsigned long long)c->start_ns, (unsigned long long)c->end_ns);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_HEAD)) == 1 && rd(e, MAIA_REG_Q(1, MAIA_Q_TAIL)) == 1 &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 1, "HEAD, TAIL and COMPLETED advance to 1");
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_FETCHED)) == 1, "FETCHED counts the NOP as started");
	tap_ok(irq_count(e, MAIA_VEC_QUEUE(0)) == q0v && irq_count(e, MAIA_VEC_QUEUE(1)) == qv + 1,
	       "only queue 1's vector fired, once");

	slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 77, true);
	maia_sim_drain(e->sim);
	c = cqe_at(e, &q, slot);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK && c->job_id == 77,
	       "a command buffer holding one NOP command completes OK");
}

static void test_wrap(struct env *e)
{
	uint64_t nop = nop_buffer(e);
	bool all = true;
	struct tq q;

	queue_setup(e, &q, 2, 4, MAIA_QUEUE_PRIO_NORMAL);
	for (unsigned int i = 0; i < 11; i++) {
		uint32_t slot = queue_push(e, &q, nop, 8, 0, 0, 1000 + i, true);
		struct maia_cq_entry *c;

		maia_sim_drain(e->sim);
		c = cqe_at(e, &q, slot);
		if (c->job_id != 1000 + i || c->status || c->flags != MAIA_CQE_VALID)
			all = tap_ok(0, "job %u in slot %u", i, slot);
	}
	tap_ok(all, "11 jobs through a 4-entry ring complete in their own slots");
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_HEAD)) == 11 % 4 &&
	       rd(e, MAIA_REG_Q(2, MAIA_Q_COMPLETED)) == 11, "HEAD wraps, COMPLETED counts 11");

	/* Three entries queued before one doorbell all run. */
	for (unsigned int i = 0; i < 3; i++)
		queue_push(e, &q, nop, 8, 0, 0, 2000 + i, i == 2);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_COMPLETED)) == 14, "one doorbell covers a batch of 3");
}

static void test_config_errors(struct env *e)
{
	unsigned int ev = irq_count(e, MAIA_VEC_EVENT), before;
	static const uint32_t bad_sizes[] = { 0, 1, 3, 6, MAIA_QUEUE_MAX_ENTRIES * 2 };
	uint64_t ring = host_alloc(e, 4096, 4096);
	struct tq q;

	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		wr(e, MAIA_REG_Q(3, MAIA_Q_CTRL), 0);
		wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_LO), (uint32_t)ring);
		wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_HI), (uint32_t)(ring >> 32));
		wr(e, MAIA_REG_Q(3, MAIA_Q_CQ_LO), (uint32_t)ring);
		wr(e, MAIA_REG_Q(3, MAIA_Q_CQ_HI), (uint32_t)(ring >> 32));
		wr(e, MAIA_REG_Q(3, MAIA_Q_SIZE), bad_sizes[i]);
		wr(e, MAIA_REG_Q(3, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE);
		tap_ok(rd(e, MAIA_REG_Q(3, MAIA_Q_STATUS)) == MAIA_Q_STATUS_ERR_CONFIG &&
		       !(rd(e, MAIA_REG_Q(3, MAIA_Q_CTRL)) & MAIA_Q_CTRL_ENABLE),
		       "size %u is refused with ERR_CONFIG", bad_sizes[i]);
	}
	tap_ok((rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_QUEUE_ERROR) &&
	       irq_count(e, MAIA_VEC_EVENT) > ev, "config errors raise QUEUE_ERROR");
	wr(e, MAIA_REG_Q(3, MAIA_Q_SIZE), 4);
	wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_LO), 0);
	wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_HI), 0);
	wr(e, MAIA_REG_Q(3, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE);
	tap_ok(rd(e, MAIA_REG_Q(3, MAIA_Q_STATUS)) == MAIA_Q_STATUS_ERR_CONFIG,
	       "a zero SQ address is refused");
	wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_LO), (uint32_t)ring + 4);
	wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_HI), (uint32_t)(ring >> 32));
	wr(e, MAIA_REG_Q(3, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE);
	tap_ok(rd(e, MAIA_REG_Q(3, MAIA_Q_STATUS)) == MAIA_Q_STATUS_ERR_CONFIG,
	       "a misaligned SQ address is refused");

	/* Ring registers are frozen while enabled. */
	queue_setup(e, &q, 3, 4, MAIA_QUEUE_PRIO_NORMAL);
	before = guest_errors(e);
	wr(e, MAIA_REG_Q(3, MAIA_Q_SIZE), 8);
	wr(e, MAIA_REG_Q(3, MAIA_Q_SQ_LO), 0);
	tap_ok(guest_errors(e) == before + 2 && rd(e, MAIA_REG_Q(3, MAIA_Q_SIZE)) == 4 &&
	       rd(e, MAIA_REG_Q(3, MAIA_Q_SQ_LO)) == (uint32_t)q.sq,
	       "SIZE and SQ writes while enabled are refused");

	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	before = guest_errors(e);
	wr(e, MAIA_REG_DOORBELL(3), 4);
	maia_sim_drain(e->sim);
	tap_ok((rd(e, MAIA_REG_Q(3, MAIA_Q_STATUS)) & MAIA_Q_STATUS_ERR_DOORBELL) &&
	       (rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_QUEUE_ERROR) && guest_errors(e) == before + 1 &&
	       rd(e, MAIA_REG_Q(3, MAIA_Q_TAIL)) == 0 && rd(e, MAIA_REG_Q(3, MAIA_Q_COMPLETED)) == 0,
	       "doorbell 4 on a 4-entry queue: ERR_DOORBELL, QUEUE_ERROR, nothing runs");

	/* The queue still works after a bad doorbell. */
	queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, 5, true);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(3, MAIA_Q_COMPLETED)) == 1, "and still runs good doorbells");

	before = guest_errors(e);
	wr(e, MAIA_REG_Q(3, MAIA_Q_CTRL), 0);
	wr(e, MAIA_REG_DOORBELL(3), 1);
	tap_ok(guest_errors(e) == before + 1, "a doorbell on a disabled queue is reported");
}

static void test_bad_entries(struct env *e)
{
	struct maia_cq_entry *c;
	uint32_t slot;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0x8000, 1, true);
	maia_sim_drain(e->sim);
	c = cqe_at(e, &q, slot);
	tap_ok(c->status == MAIA_STATUS_BAD_CMD && c->flags == MAIA_CQE_VALID,
	       "an entry with undefined flags completes BAD_CMD");
	slot = queue_push(e, &q, nop_buffer(e), 12, 0, 0, 2, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_BAD_CMD,
	       "a command buffer size that is not a multiple of 8 is BAD_CMD");
	slot = queue_push(e, &q, nop_buffer(e), 0, 0, 0, 3, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_BAD_CMD, "size 0 without NOP is BAD_CMD");
	slot = queue_push(e, &q, nop_buffer(e), MAIA_CMDBUF_MAX_SIZE + 8, 0, 0, 4, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_BAD_CMD,
	       "a command buffer over the limit is BAD_CMD");
	slot = queue_push(e, &q, nop_buffer(e) + 4, 8, 0, 0, 5, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_BAD_CMD,
	       "a misaligned command buffer is BAD_CMD");
	slot = queue_push(e, &q, nop_buffer(e), 8, 9, 0, 6, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_BAD_CONTEXT,
	       "a job in an ASID without a context is BAD_CONTEXT");
	slot = queue_push(e, &q, 0x10, 8, 0, 0, 7, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_DMA_ERROR,
	       "a command buffer at an unreachable bus address is DMA_ERROR");
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 7, "every bad entry still completes");

	/* A ring the device cannot read stops the queue. */
	wr(e, MAIA_REG_Q(1, MAIA_Q_SQ_LO), 0x1000);
	wr(e, MAIA_REG_Q(1, MAIA_Q_SQ_HI), 0);
	wr(e, MAIA_REG_Q(1, MAIA_Q_CQ_LO), (uint32_t)q.cq);
	wr(e, MAIA_REG_Q(1, MAIA_Q_CQ_HI), (uint32_t)(q.cq >> 32));
	wr(e, MAIA_REG_Q(1, MAIA_Q_SIZE), 2);
	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE);
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	wr(e, MAIA_REG_DOORBELL(1), 1);
	maia_sim_drain(e->sim);
	tap_ok((rd(e, MAIA_REG_Q(1, MAIA_Q_STATUS)) & MAIA_Q_STATUS_ERR_DMA) &&
	       (rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_QUEUE_ERROR) &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_HEAD)) == 0,
	       "an unreadable ring sets ERR_DMA and QUEUE_ERROR and stops");
	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), 0);
}

/* Records the order jobs ran in, through TIMESTAMP commands. */
static uint64_t ts_job(struct env *e, uint64_t *slot_addr)
{
	struct cmdbuf cb;

	*slot_addr = host_alloc(e, 8, 8);
	cb_init(&cb);
	cmd_timestamp(&cb, *slot_addr);
	return cb_to_host(e, &cb);
}

static uint64_t host_u64(struct env *e, uint64_t a)
{
	uint64_t v;

	memcpy(&v, host_ptr(e, a), 8);
	return v;
}

/*
 * Keeps the worker busy while the host rings doorbells: eight 48 MiB fills
 * in HBM (tens of ms; one fill was sometimes over before the second
 * doorbell on a loaded machine).
 */
/*
 * Holds the worker inside the fetch of a job on @q (harness gate) until
 * release_worker(): doorbells rung meanwhile are all seen before it picks
 * the next queue, however long the test thread is descheduled.
 */
static void stall_worker(struct env *e, struct tq *q)
{
	struct cmdbuf cb;
	uint64_t addr;

	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM, 4096, 0);
	addr = cb_to_host(e, &cb);
	gate_close(e, addr);
	queue_push(e, q, addr, cb.len, 0, 0, 0x57a11, true);
	gate_wait_hit(e);
}

static void release_worker(struct env *e)
{
	gate_open(e);
}

static void test_priority(struct env *e)
{
	uint64_t lo_ts[3], hi_ts[3], a_ts[4], b_ts[4];
	struct tq lo, hi, n1, n2, blk;
	bool ok;

	fresh(e);
	queue_setup(e, &lo, 0, 8, MAIA_QUEUE_PRIO_LOW);
	queue_setup(e, &hi, 1, 8, MAIA_QUEUE_PRIO_HIGH);
	queue_setup(e, &blk, 2, 8, MAIA_QUEUE_PRIO_LOW);
	for (int i = 0; i < 3; i++) {
		queue_push(e, &lo, ts_job(e, &lo_ts[i]), sizeof(struct maia_cmd_timestamp), 0, 0, i, false);
		queue_push(e, &hi, ts_job(e, &hi_ts[i]), sizeof(struct maia_cmd_timestamp), 0, 0, i, false);
	}
	stall_worker(e, &blk);
	wr(e, MAIA_REG_DOORBELL(0), 3);		/* low first */
	wr(e, MAIA_REG_DOORBELL(1), 3);
	release_worker(e);
	maia_sim_drain(e->sim);
	ok = host_u64(e, hi_ts[2]) < host_u64(e, lo_ts[0]) &&
	     host_u64(e, hi_ts[0]) < host_u64(e, hi_ts[1]) &&
	     host_u64(e, hi_ts[1]) < host_u64(e, hi_ts[2]) &&
	     host_u64(e, lo_ts[0]) < host_u64(e, lo_ts[1]) &&
	     host_u64(e, lo_ts[1]) < host_u64(e, lo_ts[2]);
	tap_ok(ok, "all high-priority jobs run before any low-priority job, each queue in order");

	/* Equal priority: the two queues alternate. */
	wr(e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), 0);
	queue_setup(e, &n1, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &n2, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	for (int i = 0; i < 4; i++) {
		queue_push(e, &n1, ts_job(e, &a_ts[i]), sizeof(struct maia_cmd_timestamp), 0, 0, i, false);
		queue_push(e, &n2, ts_job(e, &b_ts[i]), sizeof(struct maia_cmd_timestamp), 0, 0, i, false);
	}
	stall_worker(e, &blk);
	wr(e, MAIA_REG_DOORBELL(0), 4);
	wr(e, MAIA_REG_DOORBELL(1), 4);
	release_worker(e);
	maia_sim_drain(e->sim);
	ok = true;
	for (int i = 0; i < 4; i++) {
		/* a0 < b0 < a1 < b1 < ... or b0 < a0 < b1 < a1 < ... */
		uint64_t a = host_u64(e, a_ts[i]), b = host_u64(e, b_ts[i]);

		if (i < 3)
			ok &= a < host_u64(e, b_ts[i + 1]) && b < host_u64(e, a_ts[i + 1]);
		ok &= a != b;
	}
	tap_ok(ok, "equal-priority queues take turns job by job");

	/*
	 * A long job yields at its quantum (2 ms in the v1 image) to an equal
	 * queue. The worker is held at the long job's second command (harness
	 * gate) while the short job is queued and for longer than a quantum, so
	 * the short one is waiting when the slice ends, however slowly this
	 * thread runs.
	 */
	{
		struct timespec quantum_and_more = { 0, 3000000 };
		struct maia_cq_entry *cl, *cs;
		uint32_t sl, ss;
		uint64_t short_ts, addr;
		struct cmdbuf cb;

		cb_init(&cb);
		for (int i = 0; i < 200; i++)
			cmd_fill(&cb, MAIA_PHYS_HBM, 1u << 20, (uint32_t)i);
		addr = cb_to_host(e, &cb);
		gate_close(e, addr + sizeof(struct maia_cmd_fill));
		sl = queue_push(e, &n1, addr, cb.len, 0, 0, 0x10c, true);
		gate_wait_hit(e);
		ss = queue_push(e, &n2, ts_job(e, &short_ts), sizeof(struct maia_cmd_timestamp), 0, 0,
				0x5c, true);
		nanosleep(&quantum_and_more, NULL);
		gate_open(e);
		maia_sim_drain(e->sim);
		cl = cqe_at(e, &n1, sl);
		cs = cqe_at(e, &n2, ss);
		/* modeled time: the short job's place on the timeline is inside the long one's */
		tap_ok(cl->status == MAIA_STATUS_OK && cs->status == MAIA_STATUS_OK &&
		       cs->end_ns < cl->end_ns && cs->start_ns > cl->start_ns,
		       "a long job yields to a short job on an equal queue (modeled %llu us into its %llu us)",
		       (unsigned long long)((cs->end_ns - cl->start_ns) / 1000),
		       (unsigned long long)((cl->end_ns - cl->start_ns) / 1000));
	}
}

/* Device time of one run of @cb's commands on @q alone, ns. */
static uint64_t time_alone(struct env *e, struct tq *q, const struct cmdbuf *cb)
{
	struct maia_cq_entry c = run_cb(e, q, cb);

	return c.end_ns > c.start_ns ? c.end_ns - c.start_ns : 1;
}

/*
 * Aging: a HIGH queue kept busy for most of a second with long jobs (HBM
 * fills, sized on this machine) does not starve a LOW queue; its job runs
 * while HIGH still has work queued, and FETCHED tracks what started.
 */
static void test_aging(struct env *e)
{
	enum { NHIGH = 14 };	/* + 2 timing jobs: one slot of 16 stays free */
	uint32_t hslot[NHIGH], lslot, fills, fetched_lo;
	struct maia_cq_entry *lc, *last;
	uint64_t one, lo_ts, job, high_left;
	struct cmdbuf cb;
	struct tq hi, lo;
	int after = 0;

	fresh(e);
	queue_setup(e, &hi, 1, 16, MAIA_QUEUE_PRIO_HIGH);
	queue_setup(e, &lo, 2, 8, MAIA_QUEUE_PRIO_LOW);
	/* A fill that backs the HBM pages, then four fills timed alone. */
	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM, 48u << 20, 0);
	time_alone(e, &hi, &cb);
	for (int i = 0; i < 3; i++)
		cmd_fill(&cb, MAIA_PHYS_HBM, 48u << 20, (uint32_t)i);
	one = time_alone(e, &hi, &cb) / 4;
	/* About 60 ms per HIGH job, so NHIGH of them outlast the 100 ms bound many times. */
	fills = (uint32_t)(60000000u / (one ? one : 1)) + 1;
	if (fills < 8)
		fills = 8;
	if (fills > 200)
		fills = 200;
	cb_init(&cb);
	for (uint32_t i = 0; i < fills; i++)
		cmd_fill(&cb, MAIA_PHYS_HBM, 48u << 20, i);
	job = cb_to_host(e, &cb);
	for (int i = 0; i < NHIGH; i++)
		hslot[i] = queue_push(e, &hi, job, cb.len, 0, 0, 0x100 + i, i == NHIGH - 1);
	lslot = queue_push(e, &lo, ts_job(e, &lo_ts), sizeof(struct maia_cmd_timestamp), 0, 0,
			   0x10, true);
	maia_sim_drain(e->sim);

	lc = cqe_at(e, &lo, lslot);
	last = cqe_at(e, &hi, hslot[NHIGH - 1]);
	for (int i = 0; i < NHIGH; i++)
		if (cqe_at(e, &hi, hslot[i])->start_ns > lc->end_ns)
			after++;
	high_left = last->end_ns > lc->end_ns ? last->end_ns - lc->end_ns : 0;
	fetched_lo = rd(e, MAIA_REG_Q(2, MAIA_Q_FETCHED));
	tap_ok(lc->flags == MAIA_CQE_VALID && lc->status == MAIA_STATUS_OK &&
	       last->status == MAIA_STATUS_OK && after >= 2,
	       "a LOW job runs while HIGH is busy (%d fills/job, %llu ms of HIGH work left, %d HIGH jobs after it)",
	       (int)fills, (unsigned long long)(high_left / 1000000u), after);
	tap_ok(fetched_lo == 1 && rd(e, MAIA_REG_Q(1, MAIA_Q_FETCHED)) == NHIGH + 2 &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == NHIGH + 2,
	       "FETCHED counts every job started (LOW %u, HIGH %u)", fetched_lo,
	       rd(e, MAIA_REG_Q(1, MAIA_Q_FETCHED)));
}

static void test_shadow(struct env *e)
{
	uint64_t shadow = host_alloc(e, 4, 4);
	unsigned int ev, before;
	uint32_t tail;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	ev = e->shadow_events;
	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_LO), (uint32_t)shadow);
	tap_ok(e->shadow_events == ev + 1 && e->shadow_queue == 0 && e->shadow_enabled,
	       "setting a shadow tail calls shadow_changed(0, enabled)");
	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_HI), (uint32_t)(shadow >> 32));
	tap_ok(e->shadow_events == ev + 1, "changing a nonzero shadow address is no new event");

	for (int i = 0; i < 3; i++)
		queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, i, false);
	tail = 3;
	memcpy(host_ptr(e, shadow), &tail, 4);
	wr(e, MAIA_REG_DOORBELL(0), 0);		/* value ignored */
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 3 && rd(e, MAIA_REG_Q(0, MAIA_Q_TAIL)) == 3,
	       "with a shadow tail the doorbell value is ignored and the shadow is read");

	queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, 9, false);
	tail = 4;
	memcpy(host_ptr(e, shadow), &tail, 4);
	maia_sim_doorbell_kick(e->sim, 0);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 4, "a value-less kick reads the shadow tail");

	tail = 99;
	memcpy(host_ptr(e, shadow), &tail, 4);
	before = guest_errors(e);
	maia_sim_doorbell_kick(e->sim, 0);
	maia_sim_drain(e->sim);
	tap_ok((rd(e, MAIA_REG_Q(0, MAIA_Q_STATUS)) & MAIA_Q_STATUS_ERR_DOORBELL) &&
	       guest_errors(e) == before + 1 && rd(e, MAIA_REG_Q(0, MAIA_Q_TAIL)) == 4,
	       "an out-of-range shadow tail sets ERR_DOORBELL and is ignored");

	before = guest_errors(e);
	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_LO), 2);
	tap_ok(guest_errors(e) == before + 1, "a misaligned shadow address is refused");

	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_LO), 0);
	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_HI), 0);
	tap_ok(e->shadow_events == ev + 2 && !e->shadow_enabled,
	       "clearing the shadow calls shadow_changed(0, disabled)");
	before = guest_errors(e);
	maia_sim_doorbell_kick(e->sim, 0);
	tap_ok(guest_errors(e) == before + 1, "a kick without a shadow tail is reported");
	queue_push(e, &q, 0, 0, 0, MAIA_SQE_NOP, 10, true);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 5, "without a shadow the doorbell value counts");

	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_LO), (uint32_t)shadow);
	wr(e, MAIA_REG_Q(0, MAIA_Q_SHADOW_HI), (uint32_t)(shadow >> 32));
	ev = e->shadow_events;
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(e->shadow_events == ev + 1 && !e->shadow_enabled && e->shadow_queue == 0,
	       "reset clears the shadow and says so");
}

static void test_inject_and_reset(struct env *e)
{
	struct maia_cq_entry *c;
	uint32_t hang_slot, slot;
	struct tq q, other;

	fresh(e);
	queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &other, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	tap_ok(maia_sim_inject(e->sim, MAIA_SIM_INJECT_HANG, 0) == 0, "inject a hang on queue 0");
	hang_slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 0x4a4e, true);
	queue_push(e, &q, nop_buffer(e), 8, 0, 0, 0x4a4f, true);
	slot = queue_push(e, &other, nop_buffer(e), 8, 0, 0, 0x0707, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, hang_slot)->flags == 0 && rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 0,
	       "the hung job and the one behind it never complete");
	tap_ok(rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED)) == 1,
	       "FETCHED is 1: the hung job started, the one behind it did not");
	tap_ok(cqe_at(e, &other, slot)->flags == MAIA_CQE_VALID,
	       "another queue keeps running beside the hang");

	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	c = cqe_at(e, &q, hang_slot);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_ABORTED && c->job_id == 0x4a4e,
	       "reset completes the hung job as ABORTED");
	tap_ok(rd(e, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_WAIT_FW &&
	       rd(e, MAIA_REG_Q(0, MAIA_Q_CTRL)) == 0 && rd(e, MAIA_REG_Q(0, MAIA_Q_COMPLETED)) == 0 &&
	       rd(e, MAIA_REG_FW_VERSION) == 0, "reset returns to WAIT_FW with queues off");

	/* Reset in the middle of a long job: a 64 MiB fill in HBM. */
	fresh(e);
	queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	{
		struct cmdbuf cb;
		struct timespec ts = { 0, 1000000 };

		cb_init(&cb);
		for (int i = 0; i < 64; i++)
			cmd_fill(&cb, MAIA_PHYS_HBM, 16u << 20, 0x11111111u * (unsigned int)i);
		slot = queue_push(e, &q, cb_to_host(e, &cb), cb.len, 0, 0, 0xbeef, true);
		/* Decide by the device's own event, not a delay: the job has started. */
		while (rd(e, MAIA_REG_Q(0, MAIA_Q_FETCHED)) == 0)
			nanosleep(&ts, NULL);
		wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
		c = cqe_at(e, &q, slot);
		tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_ABORTED &&
		       c->error_offset < cb.len,
		       "reset mid-job completes it ABORTED at command offset %u", c->error_offset);
	}
	fresh(e);
	queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 1, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_OK, "the device works again after reset");

	/* Disabling a queue drops its parked job without a completion. */
	{
		struct cmdbuf cb;

		cb_init(&cb);
		cmd_sem_wait(&cb, 5, 1, 10000000);
		slot = queue_push(e, &q, cb_to_host(e, &cb), cb.len, 0, 0, 2, true);
		wr(e, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
		maia_sim_drain(e->sim);
		tap_ok(cqe_at(e, &q, slot)->flags == 0, "disable drops a parked job");
		queue_setup(e, &q, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
		slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 3, true);
		maia_sim_drain(e->sim);
		tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_OK && slot == 0,
		       "re-enabling restarts the ring at slot 0");
	}
}

/*
 * A firmware crash (MAIA_REG_DEBUG_INJECT): the heartbeat stops, the
 * mailbox and the queues answer nothing, until a reset and a new boot.
 */
static void test_fw_crash(struct env *e)
{
	struct timespec quarter = { 0, 250000000 };
	uint32_t hb0, hb1, slot, errors;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	hb0 = rd(e, MAIA_REG_FW_HEARTBEAT);
	nanosleep(&quarter, NULL);
	hb1 = rd(e, MAIA_REG_FW_HEARTBEAT);
	tap_ok(hb1 >= hb0 + 2, "the heartbeat counts %u ms periods (%u -> %u over 250 ms)",
	       MAIA_FW_HEARTBEAT_PERIOD_MS, hb0, hb1);

	errors = guest_errors(e);
	wr(e, MAIA_REG_DEBUG_INJECT, MAIA_INJECT_HANG | 99u << MAIA_INJECT_QUEUE_SHIFT);
	wr(e, MAIA_REG_DEBUG_INJECT, 0x7fu);
	tap_ok(guest_errors(e) == errors + 2 && rd(e, MAIA_REG_DEBUG_INJECT) == 0,
	       "an injection of a queue or error that does not exist is a guest error");

	wr(e, MAIA_REG_DEBUG_INJECT, MAIA_INJECT_FW_CRASH);
	hb0 = rd(e, MAIA_REG_FW_HEARTBEAT);
	nanosleep(&quarter, NULL);
	tap_ok(rd(e, MAIA_REG_FW_HEARTBEAT) == hb0, "a crashed firmware's heartbeat stops at %u", hb0);
	tap_ok(mbox(e, MAIA_MBOX_PING, 1, 0, 0, NULL) == 0xffffffffu,
	       "a crashed firmware leaves a mailbox command BUSY");
	slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 0xc0de, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->flags == 0 && rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 0,
	       "a crashed firmware runs no job");

	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd(e, MAIA_REG_FW_HEARTBEAT) == 0, "reset clears the heartbeat");
	boot_or_die(e);
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	tap_ok(mbox(e, MAIA_MBOX_PING, 1, 0, 0, NULL) == MAIA_MBOX_OK,
	       "after a reset and a boot the mailbox answers");
	slot = queue_push(e, &q, nop_buffer(e), 8, 0, 0, 0xc0df, true);
	maia_sim_drain(e->sim);
	tap_ok(cqe_at(e, &q, slot)->status == MAIA_STATUS_OK && cqe_at(e, &q, slot)->flags,
	       "and jobs run again");
}

/*
 * The mailbox does not wait for the engines: with the worker held in the
 * middle of a job, SET_CONTEXT, TLB_INVALIDATE and PING still answer.
 */
/* A mailbox command without waiting for the worker (the harness's mbox() drains it). */
static uint32_t mbox_now(struct env *e, uint32_t cmd, uint32_t a0, uint32_t a1, uint32_t a2)
{
	uint32_t st;

	wr(e, MAIA_REG_MBOX_ARG(0), a0);
	wr(e, MAIA_REG_MBOX_ARG(1), a1);
	wr(e, MAIA_REG_MBOX_ARG(2), a2);
	wr(e, MAIA_REG_MBOX_CMD, cmd);
	st = rd(e, MAIA_REG_MBOX_STATUS);
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_MBOX_DONE);
	return st;
}

static void test_mbox_beside_job(struct env *e)
{
	uint64_t root;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	root = hbm_alloc(e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	stall_worker(e, &q);
	tap_ok(mbox_now(e, MAIA_MBOX_SET_CONTEXT, 7, (uint32_t)root, (uint32_t)(root >> 32)) ==
	       MAIA_MBOX_OK, "SET_CONTEXT answers while the worker is held inside a job");
	tap_ok(mbox_now(e, MAIA_MBOX_TLB_INVALIDATE, 7, 0, 0) == MAIA_MBOX_OK &&
	       mbox_now(e, MAIA_MBOX_PING, 0x1234, 0, 0) == MAIA_MBOX_OK &&
	       rd(e, MAIA_REG_MBOX_RESP(0)) == ~0x1234u, "so do TLB_INVALIDATE and PING");
	release_worker(e);
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 1, "and the held job then completes");
	mbox(e, MAIA_MBOX_SET_CONTEXT, 7, 0, 0, NULL);
}

/*
 * Doorbell fast path (maia_sim_set_inline_doorbell()): with the worker
 * asleep, a doorbell write runs a cheap job before it returns, interrupt
 * included; at the first other command the worker takes over; a busy
 * worker keeps the doorbell on the usual path.
 */
static void test_inline_doorbell(struct env *e)
{
	unsigned int qv = irq_count(e, MAIA_VEC_QUEUE(1));
	struct maia_cmd_nop nop = { .hdr = { .opcode = MAIA_OP_NOP, .size = sizeof(nop) } };
	uint64_t fence = host_alloc(e, 8, 8), dst = hbm_alloc(e, 4096, 4096);
	struct maia_cq_entry *c;
	struct cmdbuf cb;
	uint32_t slot;
	struct tq q;

	fresh(e);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	maia_sim_set_inline_doorbell(e->sim, true);
	maia_sim_drain(e->sim);

	cb_init(&cb);
	cb_add(&cb, &nop, sizeof(nop));
	cmd_fence(&cb, fence, 0x1234);
	slot = queue_push(e, &q, cb_to_host(e, &cb), cb.len, 0, 0, 91, true);
	c = cqe_at(e, &q, slot);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK && c->job_id == 91 &&
	       irq_count(e, MAIA_VEC_QUEUE(1)) == qv + 1 && host_u64(e, fence) == 0x1234,
	       "inline doorbell: a NOP + FENCE_WRITE job completes, interrupt raised, before the write returns");
	maia_sim_drain(e->sim);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_HEAD)) == 1 && rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 1 &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_FETCHED)) == 1, "inline doorbell: HEAD, COMPLETED, FETCHED as usual");

	cb_init(&cb);
	cb_add(&cb, &nop, sizeof(nop));
	cmd_fill(&cb, MAIA_PHYS_HBM | dst, 4096, 0x5a5a5a5au);
	slot = queue_push(e, &q, cb_to_host(e, &cb), cb.len, 0, 0, 92, true);
	tap_ok(wait_irq(e, MAIA_VEC_QUEUE(1), qv + 2, WAIT_MS), "inline doorbell: a FILL job completes");
	maia_sim_drain(e->sim);
	c = cqe_at(e, &q, slot);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK && c->job_id == 92 &&
	       e->hbm[dst] == 0x5a && e->hbm[dst + 4095] == 0x5a,
	       "inline doorbell: the worker ran the FILL the fast path left it");

	/* The gate must hold the worker, not this thread: no fast path for it. */
	maia_sim_set_inline_doorbell(e->sim, false);
	stall_worker(e, &q);
	maia_sim_set_inline_doorbell(e->sim, true);
	cb_init(&cb);
	cb_add(&cb, &nop, sizeof(nop));
	slot = queue_push(e, &q, cb_to_host(e, &cb), cb.len, 0, 0, 93, true);
	c = cqe_at(e, &q, slot);
	tap_ok(!c->flags, "inline doorbell: not taken while the worker is busy");
	release_worker(e);
	maia_sim_drain(e->sim);
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 4, "inline doorbell: the worker then runs it");
	maia_sim_set_inline_doorbell(e->sim, false);
}

/*
 * One thread at a time in the worker's place. A doorbell writer that took
 * it (the worker asleep) holds it until its run ends, also while it calls
 * out with sim->lock dropped before the run (here: the QUEUE_ERROR event of
 * its own bad doorbell, the window in which the fabric thread, too, may
 * hold it). A second doorbell written meanwhile from another thread must
 * not run its job itself: its job is not done when that write returns, and
 * the first writer's run, or the worker, runs it once.
 */
struct second_db {
	struct tq *q;
	uint32_t slot;
	bool done_at_return;
};

static struct second_db *second_db;

static void *ring_second(void *arg)
{
	struct env *e = arg;
	struct second_db *s = second_db;

	s->slot = queue_push(e, s->q, 0, 0, 0, MAIA_SQE_NOP, 95, true);
	s->done_at_return = cqe_at(e, s->q, s->slot)->flags != 0;
	return NULL;
}

/* In the first doorbell writer's thread, inside its write: ring the second. */
static void ring_second_on_event(struct env *e, unsigned int vector)
{
	pthread_t t;

	if (vector != MAIA_VEC_EVENT)
		return;
	__atomic_store_n(&e->irq_hook, NULL, __ATOMIC_RELEASE);
	if (pthread_create(&t, NULL, ring_second, e) == 0)
		pthread_join(t, NULL);
}

static void test_inline_one_runner(struct env *e)
{
	struct second_db s = { .done_at_return = true };
	struct maia_cq_entry *c;
	struct tq bad, q;

	fresh(e);
	queue_setup(e, &bad, 0, 4, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	maia_sim_set_inline_doorbell(e->sim, true);
	maia_sim_drain(e->sim);

	s.q = &q;
	second_db = &s;
	__atomic_store_n(&e->irq_hook, ring_second_on_event, __ATOMIC_RELEASE);
	wr(e, MAIA_REG_DOORBELL(0), 4);		/* out of range: QUEUE_ERROR */
	__atomic_store_n(&e->irq_hook, NULL, __ATOMIC_RELEASE);
	maia_sim_drain(e->sim);
	c = cqe_at(e, &q, s.slot);
	tap_ok(!s.done_at_return,
	       "inline doorbell: a second writer does not run its job while the first holds the worker's place");
	tap_ok(c->flags == MAIA_CQE_VALID && c->status == MAIA_STATUS_OK && c->job_id == 95 &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 1 && rd(e, MAIA_REG_Q(1, MAIA_Q_FETCHED)) == 1,
	       "inline doorbell: its job then completes once");
	maia_sim_set_inline_doorbell(e->sim, false);
}

int main(void)
{
	struct env e;

	if (env_init(&e, 4, 64u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&e);
	test_nop_round_trip(&e);
	test_wrap(&e);
	test_config_errors(&e);
	test_bad_entries(&e);
	test_priority(&e);
	test_aging(&e);
	test_shadow(&e);
	test_inject_and_reset(&e);
	test_fw_crash(&e);
	test_mbox_beside_job(&e);
	test_inline_doorbell(&e);
	test_inline_one_runner(&e);
	env_fini(&e);
	return tap_done();
}
