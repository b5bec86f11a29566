// SPDX-License-Identifier: MIT
/*
 * HBM ECC (hardware revision 1.2): injected correctable (CE) and
 * uncorrectable (UE) errors, the checks every device read of HBM makes, the
 * counters and the UE record (maia/hw/regs.h, Documentation/hw/registers.rst).
 *
 * The model's HBM data is never really damaged: a CE is a note that the
 * next device read of the page must be "corrected" (counted), a UE marks the
 * page poisoned so that reads of it fail. The table of such pages is small
 * and usually empty, so the read paths check an atomic count first.
 *
 * Locking: sim->ecc_lock protects the table and the counters; it nests
 * inside sim->lock. The UE record (ECC_INFO/ADDR) and the injection address
 * are register state under sim->lock.
 */
#include <errno.h>
#include <string.h>

#include "fw_internal.h"

#define PAGE_MASK	(~(uint64_t)(MAIA_ECC_PAGE_SIZE - 1u))

static struct fw_ecc_page *find_page(struct maia_sim *sim, uint64_t page)
{
	for (unsigned int i = 0; i < sim->ecc.n; i++)
		if (sim->ecc.pages[i].page == page)
			return &sim->ecc.pages[i];
	return NULL;
}

static void drop_page(struct maia_sim *sim, struct fw_ecc_page *p)
{
	unsigned int n = sim->ecc.n - 1;

	*p = sim->ecc.pages[n];
	__atomic_store_n(&sim->ecc.n, n, __ATOMIC_RELEASE);
}

/*
 * Latches the next poisoned page nobody has been told about, if the record
 * is free. Caller holds sim->lock. Returns true if the event vector must fire.
 */
bool fw_ecc_latch_next_locked(struct maia_sim *sim)
{
	bool raise = false;

	if (sim->irq.status & MAIA_INT_HBM_ECC)
		return false;
	pthread_mutex_lock(&sim->ecc_lock);
	for (unsigned int i = 0; i < sim->ecc.n; i++) {
		struct fw_ecc_page *p = &sim->ecc.pages[i];

		if (p->ue && !p->reported) {
			p->reported = true;
			sim->ecc_rec.info = 0;	/* found by the scrubber, not a job */
			sim->ecc_rec.addr = p->page;
			raise = fw_int_assert_locked(sim, MAIA_INT_HBM_ECC);
			break;
		}
	}
	pthread_mutex_unlock(&sim->ecc_lock);
	return raise;
}

/* Caller holds sim->lock. */
int fw_ecc_inject_locked(struct maia_sim *sim, unsigned int what, uint64_t addr, bool *raise)
{
	uint64_t page = addr & PAGE_MASK;
	struct fw_ecc_page *p;

	*raise = false;
	if ((what != MAIA_INJECT_ECC_CE && what != MAIA_INJECT_ECC_UE) ||
	    addr >= sim->cfg.hbm_size)
		return -EINVAL;
	pthread_mutex_lock(&sim->ecc_lock);
	p = find_page(sim, page);
	if (!p) {
		if (sim->ecc.n == FW_ECC_MAX_PAGES) {
			pthread_mutex_unlock(&sim->ecc_lock);
			return -EINVAL;
		}
		p = &sim->ecc.pages[sim->ecc.n];
		memset(p, 0, sizeof(*p));
		p->page = page;
		__atomic_store_n(&sim->ecc.n, sim->ecc.n + 1, __ATOMIC_RELEASE);
	}
	if (what == MAIA_INJECT_ECC_CE) {
		p->ce_pending++;
	} else if (!p->ue) {
		p->ue = true;
		sim->ecc.ue_count++;
	}
	pthread_mutex_unlock(&sim->ecc_lock);
	fw_trace(sim, "HBM ECC %s injected at page 0x%llx",
		 what == MAIA_INJECT_ECC_CE ? "CE" : "UE", (unsigned long long)page);
	if (what == MAIA_INJECT_ECC_UE)
		*raise = fw_ecc_latch_next_locked(sim);
	return 0;
}

int maia_sim_inject_ecc(struct maia_sim *sim, enum maia_sim_inject what, uint64_t hbm_addr)
{
	bool raise;
	int ret;

	pthread_mutex_lock(&sim->lock);
	ret = fw_ecc_inject_locked(sim, what, hbm_addr, &raise);
	pthread_mutex_unlock(&sim->lock);
	if (raise)
		fw_raise(sim, MAIA_VEC_EVENT);
	return ret;
}

/*
 * A device read of HBM [pa, pa + *len). If pa's page is poisoned, returns
 * MAIA_STATUS_HBM_ECC with the page in *bad. Otherwise *len is cut short
 * before the first poisoned page in the range (the caller's next piece
 * then fails there), and pending CEs of pages in what remains are
 * corrected and counted. No lock held by the caller.
 */
int fw_ecc_check_read(struct maia_sim *sim, uint64_t pa, uint64_t *len, uint64_t *bad)
{
	uint64_t first = pa & PAGE_MASK, end;
	int st = MAIA_STATUS_OK;

	if (!__atomic_load_n(&sim->ecc.n, __ATOMIC_ACQUIRE) || !*len)
		return MAIA_STATUS_OK;
	pthread_mutex_lock(&sim->ecc_lock);
	end = pa + *len;
	for (unsigned int i = 0; i < sim->ecc.n; i++) {
		const struct fw_ecc_page *p = &sim->ecc.pages[i];

		if (!p->ue || p->page < first || p->page >= end)
			continue;
		if (p->page == first) {
			*bad = first;
			st = MAIA_STATUS_HBM_ECC;
			goto out;
		}
		end = p->page;
	}
	*len = end - pa;
	for (unsigned int i = 0; i < sim->ecc.n; i++) {
		struct fw_ecc_page *p = &sim->ecc.pages[i];

		if (!p->ce_pending || p->page < first || p->page >= end)
			continue;
		sim->ecc.ce_count += p->ce_pending;
		p->ce_pending = 0;
		if (!p->ue) {
			drop_page(sim, p);
			i--;	/* the last entry moved here */
		}
	}
out:
	pthread_mutex_unlock(&sim->ecc_lock);
	return st;
}

/*
 * A job completed with MAIA_STATUS_HBM_ECC after reading page: latch the
 * record with its ASID and queue if the record is free (otherwise the page
 * has been or will be reported anyway). Caller holds sim->lock.
 */
bool fw_ecc_job_hit_locked(struct maia_sim *sim, unsigned int asid, unsigned int qi,
			   uint64_t page)
{
	struct fw_ecc_page *p;

	if (sim->irq.status & MAIA_INT_HBM_ECC)
		return false;
	pthread_mutex_lock(&sim->ecc_lock);
	p = find_page(sim, page);
	if (p)
		p->reported = true;
	pthread_mutex_unlock(&sim->ecc_lock);
	sim->ecc_rec.info = (asid & MAIA_ECC_ASID_MASK) | MAIA_ECC_JOB |
			((qi << MAIA_ECC_QUEUE_SHIFT) & MAIA_ECC_QUEUE_MASK);
	sim->ecc_rec.addr = page;
	return fw_int_assert_locked(sim, MAIA_INT_HBM_ECC);
}

/* Caller holds sim->lock. */
uint32_t fw_ecc_count_locked(struct maia_sim *sim, bool ue)
{
	uint32_t v;

	pthread_mutex_lock(&sim->ecc_lock);
	v = ue ? sim->ecc.ue_count : sim->ecc.ce_count;
	pthread_mutex_unlock(&sim->ecc_lock);
	return v;
}

/*
 * Reset: poison and pending CEs go (the model's data was never damaged, so
 * nothing is lost), and so do the record and the injection address; the
 * counters stay until power-off. Caller holds sim->lock.
 */
void fw_ecc_reset_locked(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->ecc_lock);
	__atomic_store_n(&sim->ecc.n, 0, __ATOMIC_RELEASE);
	memset(sim->ecc.pages, 0, sizeof(sim->ecc.pages));
	pthread_mutex_unlock(&sim->ecc_lock);
	sim->ecc_rec.info = 0;
	sim->ecc_rec.addr = 0;
	sim->inject_addr = 0;
}
