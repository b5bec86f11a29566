// SPDX-License-Identifier: MIT
/*
 * firmware-sim device MMU: jobs in ASIDs with page tables the test writes
 * itself (4 KiB pages scattered in HBM, 2 MiB pages, host pages), faults with
 * the exact FAULT_* record while another ASID keeps working, permissions,
 * TLB caching and invalidation, fault latching, the fault queue (every
 * fault's own entry, overflow, refused settings), and fault injection.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "maia/hw/tensor.h"
#include "tap.h"

#define VA_CMD		0x0000100000000000ull	/* command buffers (host pages) */
#define VA_SMALL	0x0000000020000000ull	/* 4 KiB pages in HBM */
#define VA_HUGE		0x0000000040000000ull	/* one 2 MiB page in HBM */
#define VA_SYS		0x0000000050000000ull	/* host pages */
#define VA_RO		0x0000000060000000ull	/* read-only page */
#define SMALL_PAGES	8

static struct env env;
static struct tq q0, q1;
static uint64_t root1, root2;
static uint64_t small_pa[SMALL_PAGES], huge_pa, sys_bus, ro_pa;
static uint64_t cmd_bus[2];	/* host pages behind VA_CMD, per ASID */

static const uint64_t RW = MAIA_PTE_READ | MAIA_PTE_WRITE;

static uint8_t *pa_ptr(uint64_t hbm_off)
{
	return env.hbm + hbm_off;
}

static void map_cmd_pages(uint64_t root, unsigned int asid)
{
	cmd_bus[asid - 1] = host_alloc(&env, 4 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	for (unsigned int i = 0; i < 4; i++)
		pt_map(&env, root, VA_CMD + i * MAIA_PAGE_SIZE, cmd_bus[asid - 1] + i * MAIA_PAGE_SIZE,
		       MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
}

static void setup_tables(void)
{
	root1 = pt_new_root(&env);
	root2 = pt_new_root(&env);
	/* 4 KiB pages mapped in reverse order, so VA-contiguous is PA-scattered. */
	for (int i = 0; i < SMALL_PAGES; i++)
		small_pa[i] = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	for (int i = 0; i < SMALL_PAGES; i++)
		pt_map(&env, root1, VA_SMALL + i * MAIA_PAGE_SIZE, small_pa[SMALL_PAGES - 1 - i], RW, false);
	huge_pa = hbm_alloc(&env, MAIA_HUGE_PAGE_SIZE, MAIA_HUGE_PAGE_SIZE);
	pt_map(&env, root1, VA_HUGE, huge_pa, RW, true);
	sys_bus = host_alloc(&env, 4 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	for (int i = 0; i < 4; i++)
		pt_map(&env, root1, VA_SYS + i * MAIA_PAGE_SIZE, sys_bus + i * MAIA_PAGE_SIZE,
		       RW | MAIA_PTE_SYSMEM, false);
	ro_pa = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	pt_map(&env, root1, VA_RO, ro_pa, MAIA_PTE_READ, false);
	map_cmd_pages(root1, 1);

	/* ASID 2: the same small pages read-only and one writable page, nothing else. */
	for (int i = 0; i < SMALL_PAGES; i++)
		pt_map(&env, root2, VA_SMALL + i * MAIA_PAGE_SIZE, small_pa[SMALL_PAGES - 1 - i],
		       MAIA_PTE_READ, false);
	pt_map(&env, root2, VA_HUGE, hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE), RW, false);
	map_cmd_pages(root2, 2);
}

/* Byte at VA in ASID 1, read through the test's own view of the mappings. */
static uint8_t *va1_ptr(uint64_t va)
{
	if (va >= VA_SMALL && va < VA_SMALL + SMALL_PAGES * MAIA_PAGE_SIZE) {
		uint64_t page = (va - VA_SMALL) / MAIA_PAGE_SIZE;

		return pa_ptr(small_pa[SMALL_PAGES - 1 - page]) + (va & (MAIA_PAGE_SIZE - 1));
	}
	if (va >= VA_HUGE && va < VA_HUGE + MAIA_HUGE_PAGE_SIZE)
		return pa_ptr(huge_pa) + (va - VA_HUGE);
	if (va >= VA_SYS && va < VA_SYS + 4 * MAIA_PAGE_SIZE)
		return host_ptr(&env, sys_bus + (va - VA_SYS));
	abort();
}

/* Submits cb in asid (command buffer in that ASID's VA_CMD pages). */
static uint32_t submit_in(struct tq *q, unsigned int asid, const struct cmdbuf *cb, uint64_t id)
{
	memcpy(host_ptr(&env, cmd_bus[asid - 1]), cb->buf, cb->len);
	return queue_push(&env, q, VA_CMD, cb->len, (uint16_t)asid, 0, id, true);
}

static struct maia_cq_entry run_in(struct tq *q, unsigned int asid, const struct cmdbuf *cb)
{
	uint32_t slot = submit_in(q, asid, cb, 0x100 + asid);

	maia_sim_drain(env.sim);
	return *cqe_at(&env, q, slot);
}

static void test_contexts(void)
{
	tap_ok(mbox(&env, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)root1, (uint32_t)(root1 >> 32), NULL) ==
	       MAIA_MBOX_OK, "SET_CONTEXT asid 1");
	tap_ok(mbox(&env, MAIA_MBOX_SET_CONTEXT, 2, (uint32_t)root2, (uint32_t)(root2 >> 32), NULL) ==
	       MAIA_MBOX_OK, "SET_CONTEXT asid 2");
}

static void test_mappings(void)
{
	uint64_t len = SMALL_PAGES * MAIA_PAGE_SIZE - 100;
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	bool ok = true;

	for (uint64_t i = 0; i < len; i++)
		*va1_ptr(VA_SMALL + 50 + i) = (uint8_t)(i * 7 + 3);
	memset(pa_ptr(huge_pa), 0, MAIA_HUGE_PAGE_SIZE);
	memset(host_ptr(&env, sys_bus), 0, 4 * MAIA_PAGE_SIZE);

	cb_init(&cb);
	/* 4K pages (scattered) -> 2M page, crossing page boundaries on the source. */
	cmd_copy(&cb, VA_SMALL + 50, VA_HUGE + MAIA_HUGE_PAGE_SIZE - len - 1, len, 1, 0, 0);
	/* 2M page -> host pages, 2D: 3 rows of 3000 bytes (below the filled page). */
	cmd_copy(&cb, VA_HUGE + MAIA_HUGE_PAGE_SIZE - len - 1, VA_SYS + 10, 3000, 3, 5001, 4000);
	cmd_fill(&cb, VA_SYS + 3 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE, 0xcafef00du);
	cqe = run_in(&q0, 1, &cb);
	tap_ok(cqe.status == MAIA_STATUS_OK, "copies across 4K, 2M and host pages in ASID 1 complete OK "
	       "(status %u at %u)", cqe.status, cqe.error_offset);
	for (uint64_t i = 0; i < len; i++)
		ok &= *va1_ptr(VA_HUGE + MAIA_HUGE_PAGE_SIZE - len - 1 + i) == (uint8_t)(i * 7 + 3);
	tap_ok(ok, "the 2M page holds the bytes gathered from 8 scattered 4K pages");
	ok = true;
	for (uint64_t r = 0; r < 3; r++)
		for (uint64_t i = 0; i < 3000; i++)
			ok &= *va1_ptr(VA_SYS + 10 + r * 4000 + i) == (uint8_t)((r * 5001 + i) * 7 + 3);
	tap_ok(ok, "the 2D copy into host pages matches the reference");
	tap_ok(*(uint32_t *)va1_ptr(VA_SYS + 3 * MAIA_PAGE_SIZE + 4092) == 0xcafef00du,
	       "fill through a host page mapping");
}

static uint32_t fault_info(unsigned int asid, unsigned int access, unsigned int queue)
{
	return asid | (access << MAIA_FAULT_ACCESS_SHIFT) | (queue << MAIA_FAULT_QUEUE_SHIFT);
}

static uint64_t fault_addr(void)
{
	return rd(&env, MAIA_REG_FAULT_ADDR_LO) | (uint64_t)rd(&env, MAIA_REG_FAULT_ADDR_HI) << 32;
}

static void test_fault_beside_good(void)
{
	unsigned int ev = irq_count(&env, MAIA_VEC_EVENT);
	struct maia_cq_entry *good, *bad;
	struct cmdbuf cgood, cbad;
	uint32_t sg, sb;

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	/* ASID 2 writes 8 KiB where only the first page is mapped. */
	cb_init(&cbad);
	cmd_copy(&cbad, VA_SMALL, VA_HUGE, 2 * MAIA_PAGE_SIZE, 1, 0, 0);
	/* ASID 1 keeps copying meanwhile. */
	cb_init(&cgood);
	for (int i = 0; i < 20; i++)
		cmd_copy(&cgood, VA_SMALL, VA_HUGE + 4096 * (uint64_t)i, 4096, 1, 0, 0);
	sb = submit_in(&q1, 2, &cbad, 0xbad);
	sg = submit_in(&q0, 1, &cgood, 0x600d);
	maia_sim_drain(env.sim);
	good = cqe_at(&env, &q0, sg);
	bad = cqe_at(&env, &q1, sb);
	tap_ok(bad->status == MAIA_STATUS_MMU_FAULT && bad->error_offset == 0 && bad->job_id == 0xbad,
	       "ASID 2 writing past its mapping completes MMU_FAULT at offset 0");
	tap_ok(good->status == MAIA_STATUS_OK, "ASID 1 beside it completes OK");
	tap_ok(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_MMU_FAULT &&
	       irq_count(&env, MAIA_VEC_EVENT) > ev, "MMU_FAULT is raised on the event vector");
	tap_ok(rd(&env, MAIA_REG_FAULT_INFO) == fault_info(2, MAIA_ACCESS_WRITE, 1),
	       "FAULT_INFO = asid 2, write, queue 1 (0x%08x)", rd(&env, MAIA_REG_FAULT_INFO));
	tap_ok(fault_addr() == VA_HUGE + MAIA_PAGE_SIZE,
	       "FAULT_ADDR is the first unmapped byte (0x%llx)", (unsigned long long)fault_addr());

	/* A second fault while the first is pending leaves the record alone. */
	{
		struct cmdbuf c;

		cb_init(&c);
		cmd_copy(&c, 0x7000000000ull, VA_HUGE, 8, 1, 0, 0);
		tap_ok(run_in(&q0, 1, &c).status == MAIA_STATUS_MMU_FAULT, "ASID 1 reading unmapped VA faults");
		tap_ok(rd(&env, MAIA_REG_FAULT_INFO) == fault_info(2, MAIA_ACCESS_WRITE, 1) &&
		       fault_addr() == VA_HUGE + MAIA_PAGE_SIZE, "the pending fault record is kept");
		wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_MMU_FAULT);
		tap_ok(run_in(&q0, 1, &c).status == MAIA_STATUS_MMU_FAULT &&
		       rd(&env, MAIA_REG_FAULT_INFO) == fault_info(1, MAIA_ACCESS_READ, 0) &&
		       fault_addr() == 0x7000000000ull, "after clearing, the next fault is recorded (read)");
	}
}

static void test_permissions(void)
{
	struct cmdbuf cb;
	struct maia_cq_entry cqe;

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	cb_init(&cb);
	cmd_fence(&cb, VA_SYS, 1);
	cmd_fence(&cb, VA_RO + 8, 2);
	cqe = run_in(&q0, 1, &cb);
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT && cqe.error_offset == sizeof(struct maia_cmd_fence_write),
	       "a write to a read-only page faults at the second command");
	tap_ok(rd(&env, MAIA_REG_FAULT_INFO) == fault_info(1, MAIA_ACCESS_WRITE, 0) &&
	       fault_addr() == VA_RO + 8, "FAULT record: asid 1, write, VA_RO + 8");
	cb_init(&cb);
	cmd_copy(&cb, VA_RO, VA_SYS, 64, 1, 0, 0);
	tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK, "reading the read-only page is fine");

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	cb_init(&cb);
	cmd_fence(&cb, 1ull << 48, 1);
	cqe = run_in(&q0, 1, &cb);
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT && fault_addr() == 1ull << 48,
	       "a VA beyond 48 bits faults");

	/* The command buffer itself is fetched through the ASID. */
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	{
		uint32_t slot = queue_push(&env, &q0, VA_CMD + 16 * MAIA_PAGE_SIZE, 8, 1, 0, 1, true);

		maia_sim_drain(env.sim);
		tap_ok(cqe_at(&env, &q0, slot)->status == MAIA_STATUS_MMU_FAULT &&
		       fault_addr() == VA_CMD + 16 * MAIA_PAGE_SIZE &&
		       rd(&env, MAIA_REG_FAULT_INFO) == fault_info(1, MAIA_ACCESS_READ, 0),
		       "an unmapped command buffer faults on fetch");
	}
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

static void test_tlb(void)
{
	uint64_t va = VA_HUGE + 0x10000, other = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	uint64_t dst = VA_SYS, v;
	struct cmdbuf cb;
	uint64_t *pte;

	/* Map a fresh 4K page at va in ASID 2 (it has a 4K page table there). */
	pt_map(&env, root2, va, small_pa[0], RW, false);
	pt_map(&env, root2, VA_SYS, sys_bus, RW | MAIA_PTE_SYSMEM, false);
	memset(pa_ptr(small_pa[0]), 0x11, 8);
	memset(pa_ptr(other), 0x22, 8);
	cb_init(&cb);
	cmd_copy(&cb, va, dst, 8, 1, 0, 0);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_OK &&
	       (memcpy(&v, host_ptr(&env, sys_bus), 8), v == 0x1111111111111111ull),
	       "ASID 2 reads the page mapped at va");

	/* Remap the PTE behind the device's back: the TLB still has the old one. */
	pt_map(&env, root2, va, other, RW, false);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_OK &&
	       (memcpy(&v, host_ptr(&env, sys_bus), 8), v == 0x1111111111111111ull),
	       "without TLB_INVALIDATE the cached translation is used");
	tap_ok(mbox(&env, MAIA_MBOX_TLB_INVALIDATE, 2, 0, 0, NULL) == MAIA_MBOX_OK,
	       "TLB_INVALIDATE asid 2");
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_OK &&
	       (memcpy(&v, host_ptr(&env, sys_bus), 8), v == 0x2222222222222222ull),
	       "after invalidation the new mapping is used");

	/* Unmap: invalid PTE + invalidate -> fault. */
	pte = NULL;
	pt_map(&env, root2, va, 0, 0, false);
	for (uint64_t t = root2, lvl = 0; lvl < 4; lvl++) {
		pte = (uint64_t *)(env.hbm + t + 8 * MAIA_PT_INDEX(va, lvl));
		t = *pte & MAIA_PTE_ADDR_MASK;
	}
	*pte = 0;
	mbox(&env, MAIA_MBOX_TLB_INVALIDATE, MAIA_ASID_ALL, 0, 0, NULL);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_MMU_FAULT, "an unmapped page faults after invalidation");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);

	/* Disabling a context makes its jobs BAD_CONTEXT. */
	mbox(&env, MAIA_MBOX_SET_CONTEXT, 2, 0, 0, NULL);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_BAD_CONTEXT, "a disabled ASID is BAD_CONTEXT");
	mbox(&env, MAIA_MBOX_SET_CONTEXT, 2, (uint32_t)root2, (uint32_t)(root2 >> 32), NULL);
}

static void test_inject(void)
{
	struct cmdbuf cb;
	uint32_t slot;

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	cb_init(&cb);
	cmd_fence(&cb, VA_SYS, 5);
	tap_ok(maia_sim_inject(env.sim, MAIA_SIM_INJECT_MMU_FAULT, 1) == 0, "inject an MMU fault on queue 1");
	slot = submit_in(&q1, 1, &cb, 0x1f);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q1, slot)->status == MAIA_STATUS_MMU_FAULT &&
	       (rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_MMU_FAULT) &&
	       rd(&env, MAIA_REG_FAULT_INFO) == fault_info(1, MAIA_ACCESS_READ, 1) &&
	       fault_addr() == VA_CMD, "the next job on queue 1 faults with a full record");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	slot = submit_in(&q1, 1, &cb, 0x20);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q1, slot)->status == MAIA_STATUS_OK, "the job after it runs normally");
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

static void test_tensor_through_mmu(void)
{
	struct maia_cmd_eltwise mul = { .hdr = { .opcode = MAIA_OP_MUL, .size = sizeof(mul) } };
	const uint32_t n = 2000;	/* 8000 bytes: spans scattered 4K pages */
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	bool ok = true;

	for (uint32_t i = 0; i < n; i++) {
		float x = (float)i - 1000.0f, y = 0.25f * (float)(i % 17);

		memcpy(va1_ptr(VA_SMALL + 4 * i), &x, 4);
		memcpy(va1_ptr(VA_HUGE + 4 * i), &y, 4);
	}
	desc1(&mul.x, VA_SMALL, n);
	desc1(&mul.y, VA_HUGE, n);
	desc1(&mul.out, VA_HUGE + 65536, n);
	cb_init(&cb);
	cb_add(&cb, &mul, sizeof(mul));
	cqe = run_in(&q0, 1, &cb);
	for (uint32_t i = 0; i < n; i++) {
		float o;

		memcpy(&o, va1_ptr(VA_HUGE + 65536 + 4 * i), 4);
		ok &= o == ((float)i - 1000.0f) * (0.25f * (float)(i % 17));
	}
	tap_ok(cqe.status == MAIA_STATUS_OK && ok, "MUL on the tensor engine reads and writes through ASID 1");

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	desc1(&mul.out, VA_RO, n);
	cb_init(&cb);
	cb_add(&cb, &mul, sizeof(mul));
	cqe = run_in(&q0, 1, &cb);
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT &&
	       (rd(&env, MAIA_REG_FAULT_INFO) & MAIA_FAULT_ACCESS_MASK) >> MAIA_FAULT_ACCESS_SHIFT ==
	       MAIA_ACCESS_WRITE, "a tensor write to a read-only page is an MMU fault with a record");
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

/*
 * Semaphores are per address space: ASID 1 signalling semaphore 5 does not
 * release a wait on semaphore 5 in ASID 2; ASID 2's own signal does; and
 * SET_CONTEXT starts a context's semaphores at 0.
 */
static void test_semaphores_per_context(void)
{
	struct cmdbuf cb;

	cb_init(&cb);
	cmd_sem_signal(&cb, 5, 1);
	tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK, "ASID 1 signals its semaphore 5");
	cb_init(&cb);
	cmd_sem_wait(&cb, 5, 1, 50000);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_SEM_TIMEOUT,
	       "ASID 2 waiting on its semaphore 5 is not released by ASID 1's signal");
	cb_init(&cb);
	cmd_sem_signal(&cb, 5, 1);
	cmd_sem_wait(&cb, 5, 1, 50000);
	tap_ok(run_in(&q0, 2, &cb).status == MAIA_STATUS_OK, "ASID 2's own signal releases it");
	cb_init(&cb);
	cmd_sem_wait(&cb, 5, 1, 0);
	tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_OK,
	       "ASID 1's semaphore 5 still holds its own signal");
	cb_init(&cb);
	cmd_sem_signal(&cb, 6, 3);
	run_in(&q0, 1, &cb);
	tap_ok(mbox(&env, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)root1, (uint32_t)(root1 >> 32),
		    NULL) == MAIA_MBOX_OK, "SET_CONTEXT again for ASID 1");
	cb_init(&cb);
	cmd_sem_wait(&cb, 6, 1, 0);
	tap_ok(run_in(&q0, 1, &cb).status == MAIA_STATUS_SEM_TIMEOUT,
	       "after SET_CONTEXT its semaphores start at 0");
}

/*
 * BF16 -> FP32 COPY: the engine decodes HBM in place through the MMU's
 * map() (rows crossing scattered 4 KiB pages) and falls back to DMA reads
 * for host pages, which cannot be mapped. Both must give the exact values.
 */
static void test_in_place_reads(void)
{
	struct maia_cmd_convert cp = { .hdr = { .opcode = MAIA_OP_COPY, .size = sizeof(cp) } };
	const uint32_t n_hbm = 6000, n_sys = 3000;	/* 12000 / 6000 bytes of BF16 */
	const uint64_t srcs[2] = { VA_SMALL + 2, VA_SYS + 2 };	/* odd halves of words */
	const uint32_t ns[2] = { n_hbm, n_sys };
	struct maia_cq_entry cqe;
	struct cmdbuf cb;

	for (int t = 0; t < 2; t++) {
		bool ok = true;

		for (uint32_t i = 0; i < ns[t]; i++) {
			uint16_t h = (uint16_t)(0x3f80u + (i * 37u) % 0x7f00u);	/* finite BF16 */

			memcpy(va1_ptr(srcs[t] + 2 * i), &h, 2);
		}
		desc1(&cp.x, srcs[t], ns[t]);
		cp.x.dtype = MAIA_DTYPE_BF16;
		desc1(&cp.out, VA_HUGE + 131072, ns[t]);
		cb_init(&cb);
		cb_add(&cb, &cp, sizeof(cp));
		cqe = run_in(&q0, 1, &cb);
		for (uint32_t i = 0; i < ns[t]; i++) {
			uint32_t want = (uint32_t)(0x3f80u + (i * 37u) % 0x7f00u) << 16, got;

			memcpy(&got, va1_ptr(VA_HUGE + 131072 + 4 * i), 4);
			ok &= got == want;
		}
		tap_ok(cqe.status == MAIA_STATUS_OK && ok, "BF16 -> FP32 copy of %u elements from %s: exact",
		       ns[t], t ? "host pages (DMA, no in-place map)" : "scattered 4K HBM pages (in place)");
	}
}

/* Sets up the fault queue with @entries entries at a fresh ring; returns the ring. */
static struct maia_fault_entry *faultq_setup(uint32_t entries)
{
	uint64_t ring = host_alloc(&env, entries * sizeof(struct maia_fault_entry),
				   MAIA_FAULTQ_ALIGN);

	memset(host_ptr(&env, ring), 0xa5, entries * sizeof(struct maia_fault_entry));
	wr(&env, MAIA_REG_FAULTQ_BASE_LO, (uint32_t)ring);
	wr(&env, MAIA_REG_FAULTQ_BASE_HI, (uint32_t)(ring >> 32));
	wr(&env, MAIA_REG_FAULTQ_SIZE, entries);
	return host_ptr(&env, ring);
}

static bool entry_is(const struct maia_fault_entry *e, unsigned int asid, unsigned int access,
		     unsigned int q, uint64_t addr, uint64_t job_id)
{
	return e->info == fault_info(asid, access, q) && e->addr == addr && e->job_id == job_id;
}

/*
 * The fault queue (1.7): faults close together each keep their record
 * (the latched FAULT_INFO keeps only the first), in order, with the job
 * that faulted; a full queue counts overflows and takes entries again once
 * the host moves CONS; bad settings are refused; reset turns it off.
 */
static void test_fault_queue(void)
{
	struct maia_fault_entry *ring;
	struct cmdbuf c1, c2;
	uint32_t s1, s2;

	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	ring = faultq_setup(4);
	tap_ok(rd(&env, MAIA_REG_FAULTQ_SIZE) == 4 && !rd(&env, MAIA_REG_FAULTQ_PROD) &&
	       !rd(&env, MAIA_REG_FAULTQ_CONS) && !rd(&env, MAIA_REG_FAULTQ_OVERFLOWS),
	       "fault queue of 4 entries set up: PROD, CONS, OVERFLOWS 0");
	/* Two ASIDs fault at once, on two queues; the interrupt is not acknowledged. */
	cb_init(&c1);
	cmd_fence(&c1, VA_RO + 16, 1);
	cb_init(&c2);
	cmd_copy(&c2, VA_SMALL, VA_HUGE, 2 * MAIA_PAGE_SIZE, 1, 0, 0);
	s1 = submit_in(&q0, 1, &c1, 0xf1);
	s2 = submit_in(&q1, 2, &c2, 0xf2);
	maia_sim_drain(env.sim);
	tap_ok(cqe_at(&env, &q0, s1)->status == MAIA_STATUS_MMU_FAULT &&
	       cqe_at(&env, &q1, s2)->status == MAIA_STATUS_MMU_FAULT, "both jobs fault");
	tap_ok(rd(&env, MAIA_REG_FAULTQ_PROD) == 2, "PROD = 2 (%u)", rd(&env, MAIA_REG_FAULTQ_PROD));
	tap_ok((entry_is(&ring[0], 1, MAIA_ACCESS_WRITE, 0, VA_RO + 16, 0xf1) &&
		entry_is(&ring[1], 2, MAIA_ACCESS_WRITE, 1, VA_HUGE + MAIA_PAGE_SIZE, 0xf2)) ||
	       (entry_is(&ring[1], 1, MAIA_ACCESS_WRITE, 0, VA_RO + 16, 0xf1) &&
		entry_is(&ring[0], 2, MAIA_ACCESS_WRITE, 1, VA_HUGE + MAIA_PAGE_SIZE, 0xf2)),
	       "each fault has its entry: ASID, access, queue, address, job id (0x%08x 0x%08x)",
	       ring[0].info, ring[1].info);
	tap_ok(rd(&env, MAIA_REG_FAULT_INFO) == ring[0].info,
	       "the latched FAULT_INFO is the first of them");

	/* Fill it: 2 more fit, the next 2 overflow. */
	for (int i = 0; i < 4; i++)
		run_in(&q0, 1, &c1);
	tap_ok(rd(&env, MAIA_REG_FAULTQ_PROD) == 4 && rd(&env, MAIA_REG_FAULTQ_OVERFLOWS) == 2,
	       "4 more faults: PROD 4, OVERFLOWS 2 (%u, %u)", rd(&env, MAIA_REG_FAULTQ_PROD),
	       rd(&env, MAIA_REG_FAULTQ_OVERFLOWS));
	/* The host took 3: the next fault goes to slot 0 again. */
	wr(&env, MAIA_REG_FAULTQ_CONS, 3);
	ring[0].job_id = 0;
	cb_init(&c1);
	cmd_fence(&c1, VA_RO + 24, 1);
	run_in(&q0, 1, &c1);
	tap_ok(rd(&env, MAIA_REG_FAULTQ_PROD) == 5 &&
	       entry_is(&ring[0], 1, MAIA_ACCESS_WRITE, 0, VA_RO + 24, 0x101) &&
	       rd(&env, MAIA_REG_FAULTQ_OVERFLOWS) == 2,
	       "after CONS = 3 the next fault wraps to entry 0, no overflow");

	/* Bad settings: the queue stays off and nothing is written. */
	wr(&env, MAIA_REG_FAULTQ_SIZE, 3);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_SIZE), "SIZE 3 (not a power of two) is refused");
	wr(&env, MAIA_REG_FAULTQ_SIZE, MAIA_FAULTQ_MAX_ENTRIES * 2);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_SIZE), "SIZE beyond the maximum is refused");
	wr(&env, MAIA_REG_FAULTQ_BASE_LO, rd(&env, MAIA_REG_FAULTQ_BASE_LO) + 8);
	wr(&env, MAIA_REG_FAULTQ_SIZE, 4);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_SIZE), "a base not 32-byte aligned is refused");
	run_in(&q0, 1, &c1);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_PROD) && !rd(&env, MAIA_REG_FAULTQ_OVERFLOWS),
	       "with the queue off a fault is not queued or counted");
	wr(&env, MAIA_REG_FAULTQ_PROD, 7);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_PROD), "PROD is read-only");

	/* A ring the device cannot write counts the fault as lost. */
	wr(&env, MAIA_REG_FAULTQ_BASE_LO, 0);
	wr(&env, MAIA_REG_FAULTQ_BASE_HI, 0x7000);
	wr(&env, MAIA_REG_FAULTQ_SIZE, 4);
	run_in(&q0, 1, &c1);
	tap_ok(!rd(&env, MAIA_REG_FAULTQ_PROD) && rd(&env, MAIA_REG_FAULTQ_OVERFLOWS) == 1,
	       "a ring outside host memory: PROD stays 0, OVERFLOWS 1");
	wr(&env, MAIA_REG_FAULTQ_SIZE, 0);
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
}

int main(void)
{
	if (env_init(&env, 2, 64u << 20, 16u << 20)) {
		tap_ok(0, "env_init");
		return tap_done();
	}
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
	queue_setup(&env, &q1, 1, 64, MAIA_QUEUE_PRIO_NORMAL);
	setup_tables();
	test_contexts();
	test_mappings();
	test_fault_beside_good();
	test_fault_queue();
	test_permissions();
	test_tlb();
	test_inject();
	test_tensor_through_mmu();
	test_in_place_reads();
	test_semaphores_per_context();
	env_fini(&env);
	return tap_done();
}
