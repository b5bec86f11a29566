// SPDX-License-Identifier: MIT
/*
 * The device time model's engines in the running simulator
 * (Documentation/hw/time-model.rst, "The modeled clock"): jobs of three
 * queues of one device, all queued while the worker is held, so that the
 * device sees them together. The costs come from the Maia 100 preset (the
 * default): a FILL of 18,000,000 bytes of HBM is 1000 ns fixed plus
 * 10000 ns at 1.8 TB/s, a control command 100 ns. Whatever order the
 * scheduler picks, a semaphore orders a waiting queue after the signal,
 * and two fills of one DMA engine never overlap in modeled time.
 */
#include <string.h>

#include "harness.h"
#include "tap.h"

#define FILL_BYTES	18000000u
#define FILL_NS		(1000u + 10000u)
#define LIGHT_NS	100u

/* A job: fill HBM at off, then signal semaphore sem. */
static uint64_t fill_signal_job(struct env *e, uint64_t off, uint32_t sem, uint32_t *len)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM | off, FILL_BYTES, 0x5a5a5a5a);
	cmd_sem_signal(&cb, sem, 1);
	*len = cb.len;
	return cb_to_host(e, &cb);
}

/* A job: wait for semaphore sem, then write the modeled time at *ts. */
static uint64_t wait_ts_job(struct env *e, uint32_t sem, uint64_t *ts, uint32_t *len)
{
	struct cmdbuf cb;

	*ts = host_alloc(e, 8, 8);
	cb_init(&cb);
	cmd_sem_wait(&cb, sem, 1, 10u * 1000000u);
	cmd_timestamp(&cb, *ts);
	*len = cb.len;
	return cb_to_host(e, &cb);
}

static uint64_t fill_job(struct env *e, uint64_t off, uint32_t *len)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM | off, FILL_BYTES, 0);
	*len = cb.len;
	return cb_to_host(e, &cb);
}

static void test_queues_and_engines(struct env *e)
{
	struct maia_cq_entry *ca, *cb, *cc;
	struct tq qa, qb, qc, blk;
	uint32_t la, lb, lc, sa, sb, sc;
	uint64_t ja, jb, jc, ts, gate, a_fill_end, c_fill_end;
	struct cmdbuf g;

	queue_setup(e, &qa, 0, 8, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &qb, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &qc, 2, 8, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(e, &blk, 3, 8, MAIA_QUEUE_PRIO_NORMAL);
	ja = fill_signal_job(e, 0, 5, &la);
	jb = wait_ts_job(e, 5, &ts, &lb);
	jc = fill_job(e, 32u << 20, &lc);
	/* Hold the worker at a job of its own while the three are queued. */
	cb_init(&g);
	cmd_fill(&g, MAIA_PHYS_HBM | (60u << 20), 4096, 0);
	gate = cb_to_host(e, &g);
	gate_close(e, gate);
	queue_push(e, &blk, gate, g.len, 0, 0, 0x9a7e, true);
	gate_wait_hit(e);
	sb = queue_push(e, &qb, jb, lb, 0, 0, 0xb, true);
	sa = queue_push(e, &qa, ja, la, 0, 0, 0xa, true);
	sc = queue_push(e, &qc, jc, lc, 0, 0, 0xc, true);
	gate_open(e);
	maia_sim_drain(e->sim);
	ca = cqe_at(e, &qa, sa);
	cb = cqe_at(e, &qb, sb);
	cc = cqe_at(e, &qc, sc);
	tap_ok(ca->status == MAIA_STATUS_OK && cb->status == MAIA_STATUS_OK &&
	       cc->status == MAIA_STATUS_OK, "three jobs on three queues complete");

	/* A's fill ends one control command before its end; C's fill is its last. */
	a_fill_end = ca->end_ns - LIGHT_NS;
	c_fill_end = cc->end_ns;
	memcpy(&ts, host_ptr(e, ts), 8);
	tap_ok(ts >= a_fill_end + LIGHT_NS && ts + LIGHT_NS == cb->end_ns,
	       "the queue waiting on the semaphore runs after the signal: timestamp %llu ns, "
	       "signal at %llu ns", (unsigned long long)ts, (unsigned long long)a_fill_end);
	tap_ok(a_fill_end + FILL_NS <= c_fill_end || c_fill_end + FILL_NS <= a_fill_end,
	       "two fills on one DMA engine do not overlap: they end at %llu and %llu ns, each "
	       "%u ns long", (unsigned long long)a_fill_end, (unsigned long long)c_fill_end,
	       FILL_NS);
}

int main(void)
{
	struct env e;

	if (env_init(&e, 4, 64u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&e);
	test_queues_and_engines(&e);
	env_fini(&e);
	return tap_done();
}
