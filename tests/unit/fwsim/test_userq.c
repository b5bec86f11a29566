// SPDX-License-Identifier: MIT
/*
 * firmware-sim user-queue hardware (revision 1.3): a queue bound to one
 * address space (MAIA_Q_ASID) fails every entry that names another, NOP
 * included, and runs its own; the binding is writable only while the queue
 * is disabled and reset clears it. BAR1 doorbell pages: page q's doorbell
 * rings queue q only, everything else on the page is inert, and a bound
 * queue fed garbage, a storm of doorbells or a tail that runs backwards
 * fails its own jobs while another queue keeps running.
 */
#include <string.h>

#include "harness.h"
#include "tap.h"

#define VA_CMD		0x200000000ull

static uint64_t cmd_bus[2];

static void fresh(struct env *e)
{
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(e);
	wr(e, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

/* ASIDs 1 and 2, each with one page at VA_CMD holding a one-NOP command buffer. */
static void setup_contexts(struct env *e)
{
	struct maia_cmd_nop nop = { .hdr = { .opcode = MAIA_OP_NOP, .size = sizeof(nop) } };

	for (unsigned int asid = 1; asid <= 2; asid++) {
		uint64_t root = pt_new_root(e);

		cmd_bus[asid - 1] = host_alloc(e, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
		memcpy(host_ptr(e, cmd_bus[asid - 1]), &nop, sizeof(nop));
		pt_map(e, root, VA_CMD, cmd_bus[asid - 1], MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
		if (mbox(e, MAIA_MBOX_SET_CONTEXT, asid, (uint32_t)root, (uint32_t)(root >> 32),
			 NULL) != MAIA_MBOX_OK)
			tap_ok(0, "SET_CONTEXT asid %u", asid);
	}
}

/* Enables queue qi bound to asid (queue_setup() with MAIA_Q_ASID written first). */
static void bound_queue(struct env *e, struct tq *q, unsigned int qi, uint32_t size,
			unsigned int asid)
{
	wr(e, MAIA_REG_Q(qi, MAIA_Q_CTRL), 0);
	wr(e, MAIA_REG_Q(qi, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | asid);
	queue_setup(e, q, qi, size, MAIA_QUEUE_PRIO_NORMAL);
}

static uint32_t status_of(struct env *e, struct tq *q, uint32_t slot, uint64_t id)
{
	struct maia_cq_entry *c = cqe_at(e, q, slot);

	if (c->flags != MAIA_CQE_VALID || c->job_id != id)
		return 0xffffffffu;
	return c->status;
}

static void test_asid_binding(struct env *e)
{
	uint32_t s1, s2, s3, s4, s5;
	struct tq q;

	fresh(e);
	setup_contexts(e);
	tap_ok(rd(e, MAIA_REG_REVISION) >= 0x0103u, "REVISION is 1.3 or later (user queues)");
	bound_queue(e, &q, 1, 8, 1);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_ASID)) == (MAIA_Q_ASID_BOUND | 1u),
	       "MAIA_Q_ASID reads back BOUND | 1");

	s1 = queue_push(e, &q, VA_CMD, 8, 1, 0, 11, true);
	s2 = queue_push(e, &q, VA_CMD, 8, 2, 0, 12, true);
	s3 = queue_push(e, &q, 0, 0, 2, MAIA_SQE_NOP, 13, true);
	s4 = queue_push(e, &q, 0x1000, 8, 0, 0, 14, true);
	s5 = queue_push(e, &q, VA_CMD, 8, 1, 0, 15, true);
	maia_sim_drain(e->sim);
	tap_ok(status_of(e, &q, s1, 11) == MAIA_STATUS_OK, "an entry in the bound asid runs");
	tap_ok(status_of(e, &q, s2, 12) == MAIA_STATUS_ASID_DENIED,
	       "an entry naming another context fails with ASID_DENIED");
	tap_ok(status_of(e, &q, s3, 13) == MAIA_STATUS_ASID_DENIED,
	       "so does a NOP entry naming another context");
	tap_ok(status_of(e, &q, s4, 14) == MAIA_STATUS_ASID_DENIED,
	       "and one naming the physical context (asid 0)");
	tap_ok(status_of(e, &q, s5, 15) == MAIA_STATUS_OK && rd(e, MAIA_REG_Q(1, MAIA_Q_STATUS)) == 0,
	       "the queue keeps running its own context's entries, no queue error");
	tap_ok(!(rd(e, MAIA_REG_INT_STATUS) & MAIA_INT_MMU_FAULT), "no MMU fault was raised");

	wr(e, MAIA_REG_Q(1, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | 2u);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_ASID)) == (MAIA_Q_ASID_BOUND | 1u),
	       "the binding cannot change while the queue is enabled");
	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), 0);
	wr(e, MAIA_REG_Q(1, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | 0x4000u);
	wr(e, MAIA_REG_Q(1, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | MAIA_MAX_ASIDS);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_ASID)) == (MAIA_Q_ASID_BOUND | 1u),
	       "undefined bits and an ASID beyond MAIA_MAX_ASIDS are refused");
	wr(e, MAIA_REG_Q(1, MAIA_Q_ASID), 0);
	queue_setup(e, &q, 1, 8, MAIA_QUEUE_PRIO_NORMAL);
	s1 = queue_push(e, &q, VA_CMD, 8, 2, 0, 21, true);
	maia_sim_drain(e->sim);
	tap_ok(status_of(e, &q, s1, 21) == MAIA_STATUS_OK, "unbound again, any context runs");

	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), 0);
	wr(e, MAIA_REG_Q(1, MAIA_Q_ASID), MAIA_Q_ASID_BOUND | 1u);
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_ASID)) == 0, "reset clears the binding");
	boot_or_die(e);
}

static void test_doorbell_pages(struct env *e, struct maia_sim *sim)
{
	unsigned int errs;
	uint32_t slot;
	struct tq q1, q2;

	fresh(e);
	setup_contexts(e);
	bound_queue(e, &q1, 1, 8, 1);
	bound_queue(e, &q2, 2, 8, 2);

	slot = queue_push(e, &q1, VA_CMD, 8, 1, 0, 31, false);
	maia_sim_udb_write(sim, MAIA_UDB_PAGE(1) + MAIA_UDB_DOORBELL, q1.tail);
	maia_sim_drain(sim);
	tap_ok(status_of(e, &q1, slot, 31) == MAIA_STATUS_OK && rd(e, MAIA_REG_Q(1, MAIA_Q_TAIL)) == 1,
	       "page 1's doorbell rings queue 1");
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_TAIL)) == 0, "and not queue 2");

	errs = guest_errors(e);
	queue_push(e, &q2, VA_CMD, 8, 2, 0, 32, false);
	maia_sim_udb_write(sim, MAIA_UDB_PAGE(1) + 4, q2.tail);
	maia_sim_udb_write(sim, MAIA_UDB_PAGE(2) + 0x800, q2.tail);
	maia_sim_udb_write(sim, MAIA_UDB_PAGE(4), 1);	/* the env has 4 queues: 0..3 */
	maia_sim_udb_write(sim, MAIA_UDB_PAGE(2) + 2, 1);
	maia_sim_drain(sim);
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_TAIL)) == 0 && rd(e, MAIA_REG_Q(1, MAIA_Q_TAIL)) == 1,
	       "other offsets, a page past the last queue and a misaligned write ring nothing");
	tap_ok(guest_errors(e) == errs + 4, "each is reported as a guest error");
	tap_ok(maia_sim_udb_read(sim, MAIA_UDB_PAGE(2)) == 0 &&
	       maia_sim_udb_read(sim, MAIA_UDB_PAGE(2) + 0x10) == 0, "the pages read as 0");

	maia_sim_udb_write(sim, MAIA_UDB_PAGE(2) + MAIA_UDB_DOORBELL, q2.size);
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_STATUS)) & MAIA_Q_STATUS_ERR_DOORBELL,
	       "a tail out of range sets ERR_DOORBELL, as on BAR0");
	tap_ok(rd(e, MAIA_REG_Q(2, MAIA_Q_TAIL)) == 0, "and the queue keeps its old tail");
}

/*
 * A hostile ring on queue 1 (bound to asid 1): garbage entries, a tail that
 * runs backwards (the device wraps around and runs stale slots) and a storm
 * of doorbells, while queue 2 (asid 2) runs its own jobs.
 */
static void test_hostile_ring(struct env *e, struct maia_sim *sim)
{
	unsigned int ok_other = 0, bad = 0;
	struct tq q1, q2;
	uint32_t slot;

	fresh(e);
	setup_contexts(e);
	bound_queue(e, &q1, 1, 16, 1);
	bound_queue(e, &q2, 2, 16, 2);

	fill_random(host_ptr(e, q1.sq), 16 * sizeof(struct maia_sq_entry), 1234);
	for (unsigned int i = 0; i < 2000; i++) {
		maia_sim_udb_write(sim, MAIA_UDB_PAGE(1) + MAIA_UDB_DOORBELL, (i * 7u) % 16u);
		if (i % 100 == 0) {
			slot = queue_push(e, &q2, VA_CMD, 8, 2, 0, 5000 + i, false);
			maia_sim_udb_write(sim, MAIA_UDB_PAGE(2) + MAIA_UDB_DOORBELL, q2.tail);
			maia_sim_drain(sim);
			ok_other += status_of(e, &q2, slot, 5000 + i) == MAIA_STATUS_OK;
		}
	}
	maia_sim_drain(sim);
	tap_ok(ok_other == 20, "queue 2 ran all 20 of its jobs through the storm (%u)", ok_other);
	for (unsigned int s = 0; s < 16; s++) {
		struct maia_cq_entry *c = cqe_at(e, &q1, s);

		if ((c->flags & MAIA_CQE_VALID) && c->status == MAIA_STATUS_OK)
			bad++;
	}
	tap_ok(bad == 0, "no garbage entry of queue 1 ran (random asids fail, %u ok)", bad);
	tap_ok(!(rd(e, MAIA_REG_Q(2, MAIA_Q_STATUS))), "queue 2 has no error");

	/* Queue 1 still works once its owner writes sane entries again. */
	wr(e, MAIA_REG_Q(1, MAIA_Q_CTRL), 0);
	bound_queue(e, &q1, 1, 16, 1);
	slot = queue_push(e, &q1, VA_CMD, 8, 1, 0, 77, true);
	maia_sim_drain(sim);
	tap_ok(status_of(e, &q1, slot, 77) == MAIA_STATUS_OK, "queue 1 runs again after re-enable");
}

/* MAIA_Q_IRQ: with ON_ARM, a completion interrupts only while armed, once. */
static void test_irq_on_arm(struct env *e, struct maia_sim *sim)
{
	unsigned int v;
	struct tq q;

	fresh(e);
	setup_contexts(e);
	bound_queue(e, &q, 1, 16, 1);
	wr(e, MAIA_REG_Q(1, MAIA_Q_IRQ), MAIA_Q_IRQ_ON_ARM);
	v = irq_count(e, MAIA_VEC_QUEUE(1));
	for (unsigned int i = 0; i < 5; i++)
		queue_push(e, &q, VA_CMD, 8, 1, 0, 100 + i, true);
	maia_sim_drain(sim);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_COMPLETED)) == 5 && irq_count(e, MAIA_VEC_QUEUE(1)) == v,
	       "ON_ARM, not armed: 5 completions, no interrupt");
	wr(e, MAIA_REG_Q(1, MAIA_Q_IRQ), MAIA_Q_IRQ_ON_ARM | MAIA_Q_IRQ_ARMED);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_IRQ)) == (MAIA_Q_IRQ_ON_ARM | MAIA_Q_IRQ_ARMED),
	       "IRQ reads back ON_ARM | ARMED");
	for (unsigned int i = 0; i < 3; i++)
		queue_push(e, &q, VA_CMD, 8, 1, 0, 200 + i, true);
	maia_sim_drain(sim);
	tap_ok(irq_count(e, MAIA_VEC_QUEUE(1)) == v + 1 &&
	       rd(e, MAIA_REG_Q(1, MAIA_Q_IRQ)) == MAIA_Q_IRQ_ON_ARM,
	       "armed: the next completion interrupts once and disarms (%u)",
	       irq_count(e, MAIA_VEC_QUEUE(1)) - v);
	wr(e, MAIA_REG_Q(1, MAIA_Q_IRQ), 0);
	queue_push(e, &q, VA_CMD, 8, 1, 0, 300, true);
	maia_sim_drain(sim);
	tap_ok(irq_count(e, MAIA_VEC_QUEUE(1)) == v + 2, "without ON_ARM every completion interrupts");
	wr(e, MAIA_REG_Q(1, MAIA_Q_IRQ), 0x10);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_IRQ)) == 0, "undefined bits are refused");
	wr(e, MAIA_REG_Q(1, MAIA_Q_IRQ), MAIA_Q_IRQ_ON_ARM);
	wr(e, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd(e, MAIA_REG_Q(1, MAIA_Q_IRQ)) == 0, "reset clears IRQ");
	boot_or_die(e);
}

int main(void)
{
	struct env e;

	if (env_init(&e, 4, 16u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&e);
	test_asid_binding(&e);
	test_doorbell_pages(&e, e.sim);
	test_hostile_ring(&e, e.sim);
	test_irq_on_arm(&e, e.sim);
	env_fini(&e);
	return tap_done();
}
