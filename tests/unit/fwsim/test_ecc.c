// SPDX-License-Identifier: MIT
/*
 * firmware-sim HBM ECC (hardware revision 1.2): an uncorrectable error
 * fails exactly the jobs that read the poisoned page (DMA source, command
 * fetch, tensor operand; through the MMU or physical) with
 * MAIA_STATUS_HBM_ECC and the ECC record, while another ASID on another
 * queue keeps working; writes do not clear it; every poisoned page is
 * reported once the record is free; correctable errors are counted on the
 * read that corrects them and the data is right; reset clears the poison
 * and keeps the counters.
 */
#include <string.h>

#include "harness.h"
#include "maia/hw/tensor.h"
#include "tap.h"

#define VA_CMD		0x0000100000000000ull	/* command buffer (host pages) */
#define VA_BUF		0x0000000020000000ull	/* 4 HBM pages, per ASID */
#define VA_DST		0x0000000030000000ull	/* 4 HBM pages, per ASID */
#define PAGES		4

static struct env env;
static struct tq q0, q1;
static uint64_t root[3], buf_pa[3], dst_pa[3], cmd_bus[3];

static const uint64_t RW = MAIA_PTE_READ | MAIA_PTE_WRITE;

static void setup_asid(unsigned int asid)
{
	root[asid] = pt_new_root(&env);
	buf_pa[asid] = hbm_alloc(&env, PAGES * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	dst_pa[asid] = hbm_alloc(&env, PAGES * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	cmd_bus[asid] = host_alloc(&env, 4 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	for (unsigned int i = 0; i < PAGES; i++) {
		pt_map(&env, root[asid], VA_BUF + i * MAIA_PAGE_SIZE,
		       buf_pa[asid] + i * MAIA_PAGE_SIZE, RW, false);
		pt_map(&env, root[asid], VA_DST + i * MAIA_PAGE_SIZE,
		       dst_pa[asid] + i * MAIA_PAGE_SIZE, RW, false);
		pt_map(&env, root[asid], VA_CMD + i * MAIA_PAGE_SIZE,
		       cmd_bus[asid] + i * MAIA_PAGE_SIZE, MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
	}
	fill_random(env.hbm + buf_pa[asid], PAGES * MAIA_PAGE_SIZE, 77 + asid);
	memset(env.hbm + dst_pa[asid], 0, PAGES * MAIA_PAGE_SIZE);
}

static void set_contexts(void)
{
	for (unsigned int a = 1; a <= 2; a++)
		mbox(&env, MAIA_MBOX_SET_CONTEXT, a, (uint32_t)root[a], (uint32_t)(root[a] >> 32), NULL);
}

static uint32_t submit_in(struct tq *q, unsigned int asid, const struct cmdbuf *cb, uint64_t id)
{
	memcpy(host_ptr(&env, cmd_bus[asid]), cb->buf, cb->len);
	return queue_push(&env, q, VA_CMD, cb->len, (uint16_t)asid, 0, id, true);
}

static struct maia_cq_entry run_in(struct tq *q, unsigned int asid, const struct cmdbuf *cb)
{
	uint32_t slot = submit_in(q, asid, cb, 0x100 + asid);

	maia_sim_drain(env.sim);
	return *cqe_at(&env, q, slot);
}

static void inject(unsigned int what, uint64_t addr)
{
	wr(&env, MAIA_REG_DEBUG_INJECT_ADDR_LO, (uint32_t)addr);
	wr(&env, MAIA_REG_DEBUG_INJECT_ADDR_HI, (uint32_t)(addr >> 32));
	wr(&env, MAIA_REG_DEBUG_INJECT, what);
}

static uint64_t ecc_addr(void)
{
	return rd(&env, MAIA_REG_ECC_ADDR_LO) | (uint64_t)rd(&env, MAIA_REG_ECC_ADDR_HI) << 32;
}

static uint32_t job_info(unsigned int asid, unsigned int queue)
{
	return asid | MAIA_ECC_JOB | (queue << MAIA_ECC_QUEUE_SHIFT);
}

static void copy_all(struct cmdbuf *cb)
{
	cb_init(cb);
	cmd_copy(cb, VA_BUF, VA_DST, PAGES * MAIA_PAGE_SIZE, 1, 0, 0);
}

static void test_registers(void)
{
	unsigned int before;

	tap_ok(rd(&env, MAIA_REG_REVISION) >= MAIA_HW_REVISION_ECC,
	       "REVISION is 1.2 or later (0x%x)", rd(&env, MAIA_REG_REVISION));
	tap_ok(rd(&env, MAIA_REG_ECC_CE_COUNT) == 0 && rd(&env, MAIA_REG_ECC_UE_COUNT) == 0 &&
	       rd(&env, MAIA_REG_ECC_INFO) == 0 && ecc_addr() == 0, "ECC counters and record start at 0");
	wr(&env, MAIA_REG_DEBUG_INJECT_ADDR_LO, 0x12345000u);
	wr(&env, MAIA_REG_DEBUG_INJECT_ADDR_HI, 0x1u);
	tap_ok(rd(&env, MAIA_REG_DEBUG_INJECT_ADDR_LO) == 0x12345000u &&
	       rd(&env, MAIA_REG_DEBUG_INJECT_ADDR_HI) == 1, "DEBUG_INJECT_ADDR reads back");
	before = guest_errors(&env);
	wr(&env, MAIA_REG_DEBUG_INJECT, MAIA_INJECT_ECC_UE);	/* beyond HBM */
	inject(MAIA_INJECT_ECC_CE | (1u << MAIA_INJECT_QUEUE_SHIFT), buf_pa[1]);
	before = guest_errors(&env) - before;
	tap_ok(before == 2 && rd(&env, MAIA_REG_ECC_UE_COUNT) == 0 &&
	       !(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC),
	       "an address beyond HBM or a queue byte is a guest error and injects nothing (%u)", before);
	before = guest_errors(&env);
	wr(&env, MAIA_REG_ECC_UE_COUNT, 5);
	wr(&env, MAIA_REG_ECC_INFO, 5);
	tap_ok(guest_errors(&env) == before + 2 && rd(&env, MAIA_REG_ECC_UE_COUNT) == 0,
	       "the ECC counters and record are read-only");
}

static void test_ue(void)
{
	uint64_t bad = buf_pa[1] + MAIA_PAGE_SIZE;	/* ASID 1's second page */
	unsigned int ev = irq_count(&env, MAIA_VEC_EVENT);
	struct maia_cq_entry *c1, *c2;
	struct cmdbuf cb1, cb2;
	uint32_t s1, s2;

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	inject(MAIA_INJECT_ECC_UE, bad + 100);
	tap_ok(rd(&env, MAIA_REG_ECC_UE_COUNT) == 1, "a UE counts once in ECC_UE_COUNT");
	tap_ok((rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC) && irq_count(&env, MAIA_VEC_EVENT) > ev &&
	       rd(&env, MAIA_REG_ECC_INFO) == 0 && ecc_addr() == bad,
	       "HBM_ECC is raised at once with the page (0x%llx) and no job (scrub)",
	       (unsigned long long)ecc_addr());
	inject(MAIA_INJECT_ECC_UE, bad);
	tap_ok(rd(&env, MAIA_REG_ECC_UE_COUNT) == 1, "a second UE on the same page is not a new error");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
	tap_ok(!(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC),
	       "clearing the cause with nothing else to report leaves it clear");

	/* ASID 1 on queue 0 reads the page; ASID 2 on queue 1 copies its own pages. */
	copy_all(&cb1);
	copy_all(&cb2);
	s1 = submit_in(&q0, 1, &cb1, 0xbad);
	s2 = submit_in(&q1, 2, &cb2, 0x600d);
	maia_sim_drain(env.sim);
	c1 = cqe_at(&env, &q0, s1);
	c2 = cqe_at(&env, &q1, s2);
	tap_ok(c1->status == MAIA_STATUS_HBM_ECC && c1->error_offset == 0,
	       "ASID 1's copy over the poisoned page completes HBM_ECC at offset 0 (status %u)", c1->status);
	tap_ok(memcmp(env.hbm + dst_pa[1], env.hbm + buf_pa[1], MAIA_PAGE_SIZE) == 0,
	       "the page before the poisoned one was copied");
	tap_ok(rd(&env, MAIA_REG_ECC_INFO) == job_info(1, 0) && ecc_addr() == bad,
	       "ECC record: asid 1, queue 0, the page (0x%08x)", rd(&env, MAIA_REG_ECC_INFO));
	tap_ok(c2->status == MAIA_STATUS_OK &&
	       memcmp(env.hbm + dst_pa[2], env.hbm + buf_pa[2], PAGES * MAIA_PAGE_SIZE) == 0,
	       "ASID 2 on queue 1 beside it completes OK with the right data");

	/* A second hit while the record is pending leaves it alone. */
	{
		struct maia_tensor_desc x = { .addr = bad + 64, .shape = { 16 }, .strides = { 1 },
					      .dtype = MAIA_DTYPE_FP32, .rank = 1 };
		struct maia_cmd_convert cp = { .hdr = { .opcode = MAIA_OP_COPY, .size = sizeof(cp) } };
		struct maia_cq_entry c;
		struct cmdbuf cb;

		cp.x = x;
		cp.x.addr = VA_BUF + MAIA_PAGE_SIZE + 64;
		cp.out = x;
		cp.out.addr = VA_DST;
		cb_init(&cb);
		cb_add(&cb, &cp, sizeof(cp));
		c = run_in(&q1, 1, &cb);
		tap_ok(c.status == MAIA_STATUS_HBM_ECC && rd(&env, MAIA_REG_ECC_INFO) == job_info(1, 0),
		       "a tensor operand on the page fails too; the pending record is kept (%u)", c.status);
		wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
		c = run_in(&q1, 1, &cb);
		tap_ok(c.status == MAIA_STATUS_HBM_ECC && rd(&env, MAIA_REG_ECC_INFO) == job_info(1, 1),
		       "after clearing, the next hit is recorded (asid 1, queue 1)");
		wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);

		/* Writing the whole page does not clear the poison. */
		cb_init(&cb);
		cmd_fill(&cb, VA_BUF + MAIA_PAGE_SIZE, MAIA_PAGE_SIZE, 0x5a5a5a5au);
		tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK, "a FILL of the poisoned page succeeds");
		copy_all(&cb);
		tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_HBM_ECC, "the page is still poisoned after it");
		wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
		/* Reads that end before the page are fine. */
		cb_init(&cb);
		cmd_copy(&cb, VA_BUF, VA_DST, MAIA_PAGE_SIZE, 1, 0, 0);
		cmd_copy(&cb, VA_BUF + 2 * MAIA_PAGE_SIZE, VA_DST, 2 * MAIA_PAGE_SIZE, 1, 0, 0);
		tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK &&
		       !(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC),
		       "ASID 1 reading its other pages completes OK");
	}
}

/* A command buffer in a poisoned page (physical ASID 0, HBM) fails at fetch. */
static void test_ue_fetch(void)
{
	uint64_t pa = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	struct cmdbuf cb;
	uint32_t slot;

	cb_init(&cb);
	cmd_fill(&cb, MAIA_PHYS_HBM | dst_pa[1], 64, 1);
	memcpy(env.hbm + pa, cb.buf, cb.len);
	inject(MAIA_INJECT_ECC_UE, pa);
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
	slot = queue_push(&env, &q0, MAIA_PHYS_HBM | pa, cb.len, 0, 0, 0xf00, true);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q0, slot)->status == MAIA_STATUS_HBM_ECC &&
	       rd(&env, MAIA_REG_ECC_INFO) == job_info(0, 0) && ecc_addr() == pa,
	       "a command fetch from a poisoned page (physical) fails with the record");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
}

/* Pages poisoned while the record is busy are reported one after another. */
static void test_ue_queue_of_reports(void)
{
	uint64_t a = dst_pa[2] + 2 * MAIA_PAGE_SIZE, b = dst_pa[2] + 3 * MAIA_PAGE_SIZE;
	uint32_t ue = rd(&env, MAIA_REG_ECC_UE_COUNT);
	unsigned int ev;

	inject(MAIA_INJECT_ECC_UE, a);
	inject(MAIA_INJECT_ECC_UE, b);
	tap_ok(rd(&env, MAIA_REG_ECC_UE_COUNT) == ue + 2 && ecc_addr() == a,
	       "two UEs: both counted, the first latched");
	ev = irq_count(&env, MAIA_VEC_EVENT);
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
	tap_ok((rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC) && ecc_addr() == b &&
	       rd(&env, MAIA_REG_ECC_INFO) == 0 && irq_count(&env, MAIA_VEC_EVENT) > ev,
	       "clearing the cause latches the second and raises the event again");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
	tap_ok(!(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC), "then nothing is left to report");
}

static void test_ce(void)
{
	uint32_t ce = rd(&env, MAIA_REG_ECC_CE_COUNT), ue = rd(&env, MAIA_REG_ECC_UE_COUNT);
	struct maia_cq_entry c;
	struct cmdbuf cb;

	memset(env.hbm + dst_pa[2], 0, PAGES * MAIA_PAGE_SIZE);
	inject(MAIA_INJECT_ECC_CE, buf_pa[2]);
	inject(MAIA_INJECT_ECC_CE, buf_pa[2] + 8);
	inject(MAIA_INJECT_ECC_CE, buf_pa[2] + 3 * MAIA_PAGE_SIZE);
	tap_ok(rd(&env, MAIA_REG_ECC_CE_COUNT) == ce && !(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC),
	       "CEs count when read, not when they happen, and raise no event");
	cb_init(&cb);
	cmd_copy(&cb, VA_BUF, VA_DST, 2 * MAIA_PAGE_SIZE, 1, 0, 0);
	c = run_in(&q1, 2, &cb);
	tap_ok(c.status == MAIA_STATUS_OK && rd(&env, MAIA_REG_ECC_CE_COUNT) == ce + 2,
	       "reading the first pages corrects their two CEs (%u)", rd(&env, MAIA_REG_ECC_CE_COUNT) - ce);
	copy_all(&cb);
	c = run_in(&q1, 2, &cb);
	tap_ok(c.status == MAIA_STATUS_OK && rd(&env, MAIA_REG_ECC_CE_COUNT) == ce + 3 &&
	       rd(&env, MAIA_REG_ECC_UE_COUNT) == ue,
	       "reading them all corrects the third; UE count unchanged");
	tap_ok(memcmp(env.hbm + dst_pa[2], env.hbm + buf_pa[2], PAGES * MAIA_PAGE_SIZE) == 0,
	       "the data read is right");
	c = run_in(&q1, 2, &cb);
	tap_ok(c.status == MAIA_STATUS_OK && rd(&env, MAIA_REG_ECC_CE_COUNT) == ce + 3,
	       "a corrected error is counted once");
}

static void test_reset(void)
{
	uint32_t ce = rd(&env, MAIA_REG_ECC_CE_COUNT), ue = rd(&env, MAIA_REG_ECC_UE_COUNT);
	struct cmdbuf cb;

	tap_ok(ce > 0 && ue > 0, "counters are nonzero before the reset (%u CE, %u UE)", ce, ue);
	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd(&env, MAIA_REG_ECC_CE_COUNT) == ce && rd(&env, MAIA_REG_ECC_UE_COUNT) == ue,
	       "reset keeps the ECC counters");
	tap_ok(rd(&env, MAIA_REG_ECC_INFO) == 0 && ecc_addr() == 0 &&
	       rd(&env, MAIA_REG_DEBUG_INJECT_ADDR_LO) == 0, "reset clears the record and DEBUG_INJECT_ADDR");
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&env, &q1, 1, 64, MAIA_QUEUE_PRIO_NORMAL);
	set_contexts();
	copy_all(&cb);
	tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK &&
	       memcmp(env.hbm + dst_pa[1], env.hbm + buf_pa[1], PAGES * MAIA_PAGE_SIZE) == 0,
	       "after reset the formerly poisoned page reads fine");
}

int main(void)
{
	if (env_init(&env, 2, 16u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&env, &q1, 1, 64, MAIA_QUEUE_PRIO_NORMAL);
	setup_asid(1);
	setup_asid(2);
	set_contexts();
	test_registers();
	test_ue();
	test_ue_fetch();
	test_ue_queue_of_reports();
	test_ce();
	test_reset();
	env_fini(&env);
	return tap_done();
}
