// SPDX-License-Identifier: MIT
/*
 * Job address spaces (maia/hw/mmu.h, queue.h).
 *
 * ASID 0 is physical: a host bus address, or an HBM offset with
 * MAIA_PHYS_HBM. Other ASIDs walk four levels of page tables in HBM, with a
 * small fully associative TLB per ASID. Leaf permissions decide access;
 * intermediate entries only need VALID. SYSMEM leaves go to host memory by
 * DMA, the others index HBM with bounds checks. Every read of HBM data
 * (not of page tables) goes through fw_ecc_check_read() (fw_ecc.c).
 */
#include <string.h>

#include "fw_internal.h"

struct xlate {
	uint64_t pa;		/* bus address (sysmem) or HBM offset */
	uint64_t avail;		/* bytes mapped contiguously from pa */
	bool sysmem;
};

bool fw_asid_usable(struct maia_sim *sim, unsigned int asid)
{
	bool ok;

	if (asid == MAIA_ASID_PHYS)
		return true;
	if (asid >= MAIA_MAX_ASIDS)
		return false;
	pthread_mutex_lock(&sim->mmu_lock);
	ok = sim->ctx[asid].enabled;
	pthread_mutex_unlock(&sim->mmu_lock);
	return ok;
}

static void tlb_flush(struct fw_asid_ctx *ctx)
{
	memset(ctx->tlb, 0, sizeof(ctx->tlb));
	ctx->next_victim = 0;
}

int fw_mmu_set_context(struct maia_sim *sim, unsigned int asid, uint64_t root)
{
	struct fw_asid_ctx *ctx = &sim->ctx[asid];

	pthread_mutex_lock(&sim->mmu_lock);
	ctx->root = root;
	ctx->enabled = root != 0;
	tlb_flush(ctx);
	pthread_mutex_unlock(&sim->mmu_lock);
	return 0;
}

void fw_mmu_invalidate(struct maia_sim *sim, unsigned int asid)
{
	pthread_mutex_lock(&sim->mmu_lock);
	if (asid == MAIA_ASID_ALL) {
		for (unsigned int i = 0; i < MAIA_MAX_ASIDS; i++)
			tlb_flush(&sim->ctx[i]);
	} else {
		tlb_flush(&sim->ctx[asid]);
	}
	pthread_mutex_unlock(&sim->mmu_lock);
}

void fw_mmu_reset(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->mmu_lock);
	memset(sim->ctx, 0, sizeof(sim->ctx));
	pthread_mutex_unlock(&sim->mmu_lock);
}

/* Reads one page-table entry from HBM; false if the table is outside HBM. */
static bool read_pte(struct maia_sim *sim, uint64_t table, unsigned int index, uint64_t *pte)
{
	uint64_t off = table + 8ull * index;

	if (table >= sim->cfg.hbm_size || off > sim->cfg.hbm_size - 8)
		return false;
	*pte = __atomic_load_n((uint64_t *)((uint8_t *)sim->cfg.hbm + off), __ATOMIC_RELAXED);
	return true;
}

/* Walks the tables; on success fills the TLB entry. Caller holds mmu_lock. */
static bool walk(struct maia_sim *sim, const struct fw_asid_ctx *ctx, uint64_t va,
		 struct fw_tlb_entry *out)
{
	uint64_t table = ctx->root, pte = 0;

	for (int level = 0; level < MAIA_PT_LEVELS; level++) {
		if (!read_pte(sim, table, MAIA_PT_INDEX(va, level), &pte) ||
		    !(pte & MAIA_PTE_VALID))
			return false;
		if (level == 2 && (pte & MAIA_PTE_HUGE)) {
			out->size = MAIA_HUGE_PAGE_SIZE;
			break;
		}
		if (level < 2 && (pte & MAIA_PTE_HUGE))
			return false;	/* no 1 GiB pages */
		if (level == 3) {
			out->size = MAIA_PAGE_SIZE;
			break;
		}
		table = pte & MAIA_PTE_ADDR_MASK;
	}
	out->va_base = va & ~(out->size - 1);
	out->pte = pte;
	return true;
}

static int translate(struct fw_as *as, uint64_t va, unsigned int access, struct xlate *x)
{
	struct maia_sim *sim = as->sim;
	struct fw_asid_ctx *ctx;
	struct fw_tlb_entry e = { 0 };
	uint64_t perm = access == MAIA_ACCESS_WRITE ? MAIA_PTE_WRITE : MAIA_PTE_READ;
	bool hit = false, mapped;

	if (as->asid == MAIA_ASID_PHYS) {
		if (!(va & MAIA_PHYS_HBM)) {
			x->pa = va;
			x->sysmem = true;
			x->avail = UINT64_MAX - va + 1;
			if (!x->avail)
				x->avail = UINT64_MAX;
			return MAIA_STATUS_OK;
		}
		x->pa = va & ~MAIA_PHYS_HBM;
		if (x->pa >= sim->cfg.hbm_size)
			return MAIA_STATUS_MMU_FAULT;
		x->sysmem = false;
		x->avail = sim->cfg.hbm_size - x->pa;
		return MAIA_STATUS_OK;
	}
	if (va >> MAIA_VA_BITS)
		return MAIA_STATUS_MMU_FAULT;

	ctx = &sim->ctx[as->asid];
	pthread_mutex_lock(&sim->mmu_lock);
	for (unsigned int i = 0; i < FW_TLB_ENTRIES; i++) {
		const struct fw_tlb_entry *t = &ctx->tlb[i];

		if (t->size && va - t->va_base < t->size) {
			e = *t;
			hit = true;
			break;
		}
	}
	mapped = hit;
	if (!hit && ctx->enabled && walk(sim, ctx, va, &e)) {
		ctx->tlb[ctx->next_victim] = e;
		ctx->next_victim = (ctx->next_victim + 1) % FW_TLB_ENTRIES;
		mapped = true;
	}
	pthread_mutex_unlock(&sim->mmu_lock);
	if (!mapped || !(e.pte & perm))
		return MAIA_STATUS_MMU_FAULT;

	x->sysmem = e.pte & MAIA_PTE_SYSMEM;
	x->pa = (e.pte & MAIA_PTE_ADDR_MASK & ~(e.size - 1)) + (va - e.va_base);
	x->avail = e.size - (va - e.va_base);
	if (!x->sysmem) {
		if (x->pa >= sim->cfg.hbm_size)
			return MAIA_STATUS_MMU_FAULT;
		if (x->avail > sim->cfg.hbm_size - x->pa)
			x->avail = sim->cfg.hbm_size - x->pa;
	}
	return MAIA_STATUS_OK;
}

/* Records the job's first fault; engine threads may fault concurrently. */
static int fault(struct fw_as *as, uint64_t va, unsigned int access)
{
	pthread_mutex_lock(&as->sim->mmu_lock);
	if (!as->faulted) {
		as->faulted = true;
		as->fault_va = va;
		as->fault_access = access;
	}
	pthread_mutex_unlock(&as->sim->mmu_lock);
	return MAIA_STATUS_MMU_FAULT;
}

/* Records the job's first read of a poisoned HBM page. */
static int ecc_hit(struct fw_as *as, uint64_t page)
{
	pthread_mutex_lock(&as->sim->mmu_lock);
	if (!as->ecc_hit) {
		as->ecc_hit = true;
		as->ecc_page = page;
	}
	pthread_mutex_unlock(&as->sim->mmu_lock);
	return MAIA_STATUS_HBM_ECC;
}

/*
 * Translates va for one access of at most len bytes; MAIA_STATUS_MMU_FAULT
 * and MAIA_STATUS_HBM_ECC are recorded. A read's segment ends before a
 * poisoned HBM page.
 */
int fw_as_segment(struct fw_as *as, uint64_t va, unsigned int access, uint64_t len,
		  struct fw_seg *seg)
{
	struct xlate x;
	uint64_t bad;

	if (translate(as, va, access, &x) != MAIA_STATUS_OK)
		return fault(as, va, access);
	if (x.avail > len)
		x.avail = len;
	if (!x.sysmem && access == MAIA_ACCESS_READ &&
	    fw_ecc_check_read(as->sim, x.pa, &x.avail, &bad) != MAIA_STATUS_OK)
		return ecc_hit(as, bad);
	seg->sysmem = x.sysmem;
	seg->pa = x.pa;
	seg->hbm = x.sysmem ? NULL : (uint8_t *)as->sim->cfg.hbm + x.pa;
	seg->avail = x.avail;
	return MAIA_STATUS_OK;
}

/* Copies len bytes between buf and the address space, page by page. */
static int access_as(struct fw_as *as, uint64_t va, void *buf, size_t len,
		     unsigned int access)
{
	struct maia_sim *sim = as->sim;
	uint8_t *p = buf;

	while (len) {
		struct xlate x;
		uint64_t bad;
		size_t n;
		int rc;

		if (translate(as, va, access, &x) != MAIA_STATUS_OK)
			return fault(as, va, access);
		if (x.avail > len)
			x.avail = len;
		if (!x.sysmem && access == MAIA_ACCESS_READ &&
		    fw_ecc_check_read(sim, x.pa, &x.avail, &bad) != MAIA_STATUS_OK)
			return ecc_hit(as, bad);
		n = (size_t)x.avail;
		if (x.sysmem) {
			rc = access == MAIA_ACCESS_WRITE ?
			     sim->ops.dma_write(sim->opaque, x.pa, p, n) :
			     sim->ops.dma_read(sim->opaque, x.pa, p, n);
			if (rc)
				return MAIA_STATUS_DMA_ERROR;
		} else if (access == MAIA_ACCESS_WRITE) {
			memcpy((uint8_t *)sim->cfg.hbm + x.pa, p, n);
		} else {
			memcpy(p, (uint8_t *)sim->cfg.hbm + x.pa, n);
		}
		p += n;
		va += n;
		len -= n;
	}
	return MAIA_STATUS_OK;
}

int fw_as_read(struct fw_as *as, uint64_t va, void *buf, size_t len)
{
	return access_as(as, va, buf, len, MAIA_ACCESS_READ);
}

int fw_as_write(struct fw_as *as, uint64_t va, const void *buf, size_t len)
{
	return access_as(as, va, (void *)buf, len, MAIA_ACCESS_WRITE);
}

/*
 * The tensor engine copies operands through these between tasks: a pending
 * reset makes them fail, so a long operation stops within one task instead
 * of holding up the reset until it finishes.
 */
static bool job_mem_reset_pending(const struct fw_as *as)
{
	return __atomic_load_n(&as->sim->reset_req, __ATOMIC_ACQUIRE);
}

static int job_mem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	if (job_mem_reset_pending(opaque))
		return MAIA_STATUS_ABORTED;
	return fw_as_read(opaque, va, buf, len);
}

static int job_mem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	if (job_mem_reset_pending(opaque))
		return MAIA_STATUS_ABORTED;
	return fw_as_write(opaque, va, buf, len);
}

/*
 * In-place access for map()/map_write(): HBM is handed out, host memory
 * goes through read()/write(), i.e. DMA (*ptr NULL). A translation fault is
 * not recorded here: the engine's read() or write() of the same bytes
 * records it, if the command really makes that access.
 */
static int map_in_place(struct fw_as *as, uint64_t va, size_t len, unsigned int access,
			void **ptr, size_t *avail)
{
	struct xlate x;
	uint64_t bad;

	if (job_mem_reset_pending(as))
		return MAIA_STATUS_ABORTED;
	if (translate(as, va, access, &x) != MAIA_STATUS_OK)
		return MAIA_STATUS_MMU_FAULT;
	if (x.avail > len)
		x.avail = len;
	/* A poisoned page: the read() the engine falls back to reports it. */
	if (!x.sysmem && access == MAIA_ACCESS_READ &&
	    fw_ecc_check_read(as->sim, x.pa, &x.avail, &bad) != MAIA_STATUS_OK)
		return MAIA_STATUS_HBM_ECC;
	*ptr = x.sysmem ? NULL : (uint8_t *)as->sim->cfg.hbm + x.pa;
	*avail = (size_t)x.avail;
	return MAIA_STATUS_OK;
}

static int job_mem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	void *p = NULL;
	int st = map_in_place(opaque, va, len, MAIA_ACCESS_READ, &p, avail);

	*ptr = p;
	return st;
}

static int job_mem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return map_in_place(opaque, va, len, MAIA_ACCESS_WRITE, ptr, avail);
}

void fw_as_init(struct fw_as *as, struct maia_sim *sim, unsigned int asid)
{
	memset(as, 0, sizeof(*as));
	as->sim = sim;
	as->asid = asid;
}

void fw_as_job_mem(struct fw_as *as, struct maia_job_mem *mem)
{
	mem->opaque = as;
	mem->read = job_mem_read;
	mem->write = job_mem_write;
	mem->map = job_mem_map;
	mem->map_write = job_mem_map_write;
}
