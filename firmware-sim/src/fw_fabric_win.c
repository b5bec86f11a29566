// SPDX-License-Identifier: MIT
/*
 * Fabric windows (maia/hw/fabric.h "Windows", mbox.h
 * MAIA_MBOX_FABRIC_WINDOW_OPEN/CLOSE): the parts of its address spaces a
 * device lets its fabric peers write and read.
 *
 * A key is slot | generation << 8. A slot's generation grows at every close
 * (reset included) and never returns to 0, so a key, once closed, never
 * opens anything again, not even after a reset. win_lock protects the
 * table; a remote access holds it from the key check to the last byte
 * moved, so CLOSE (which takes it) returns only once no access is in
 * progress, and none starts after. Lock order: sim->lock, win_lock,
 * mmu_lock.
 */
#include <string.h>

#include "fw_internal.h"

#define FW_WIN_GEN_MAX	0xffffffu

void fw_win_init(struct maia_sim *sim)
{
	pthread_mutex_init(&sim->win_lock, NULL);
	for (unsigned int i = 0; i < MAIA_FABRIC_MAX_WINDOWS; i++)
		sim->win[i].gen = 1;
}

static void close_slot(struct fw_window *w)
{
	w->open = false;
	w->gen = w->gen == FW_WIN_GEN_MAX ? 1 : w->gen + 1;
}

static uint32_t key_of(unsigned int slot, const struct fw_window *w)
{
	return slot | w->gen << 8;
}

/* OPEN: arg0 = asid | access << 16, arg1/2 = VA, arg3 = pages. */
uint32_t fw_win_open(struct maia_sim *sim, const uint32_t *arg, uint32_t *key)
{
	unsigned int asid = arg[0] & 0xffffu, access = arg[0] >> 16;
	uint64_t va = arg[1] | (uint64_t)arg[2] << 32, size = (uint64_t)arg[3] * MAIA_PAGE_SIZE;
	uint64_t end;

	if (asid == MAIA_ASID_PHYS || !fw_asid_usable(sim, asid) || !access ||
	    (access & ~(MAIA_ACCESS_READ | MAIA_ACCESS_WRITE)) || !size ||
	    (va & (MAIA_PAGE_SIZE - 1)) || __builtin_add_overflow(va, size, &end)) {
		fw_guest_error(sim, "maia: FABRIC_WINDOW_OPEN asid %u access 0x%x va 0x%llx pages %u invalid",
			       asid, access, (unsigned long long)va, arg[3]);
		return MAIA_MBOX_EINVAL;
	}
	pthread_mutex_lock(&sim->win_lock);
	for (unsigned int i = 0; i < MAIA_FABRIC_MAX_WINDOWS; i++) {
		struct fw_window *w = &sim->win[i];

		if (w->open)
			continue;
		w->open = true;
		w->asid = asid;
		w->access = access;
		w->va = va;
		w->size = size;
		*key = key_of(i, w);
		pthread_mutex_unlock(&sim->win_lock);
		fw_trace(sim, "fabric window 0x%x: asid %u va 0x%llx size 0x%llx access %u", *key,
			 asid, (unsigned long long)va, (unsigned long long)size, access);
		return MAIA_MBOX_OK;
	}
	pthread_mutex_unlock(&sim->win_lock);
	return MAIA_MBOX_ENOSPC;
}

/* The open window of key, or NULL; win_lock held. */
static struct fw_window *lookup(struct maia_sim *sim, uint32_t key)
{
	struct fw_window *w = &sim->win[MAIA_FABRIC_KEY_SLOT(key)];

	return w->open && w->gen == MAIA_FABRIC_KEY_GEN(key) ? w : NULL;
}

uint32_t fw_win_close(struct maia_sim *sim, uint32_t key)
{
	struct fw_window *w;

	pthread_mutex_lock(&sim->win_lock);
	w = lookup(sim, key);
	if (w)
		close_slot(w);
	pthread_mutex_unlock(&sim->win_lock);
	return w ? MAIA_MBOX_OK : MAIA_MBOX_ENOENT;
}

void fw_win_close_asid(struct maia_sim *sim, unsigned int asid)
{
	pthread_mutex_lock(&sim->win_lock);
	for (unsigned int i = 0; i < MAIA_FABRIC_MAX_WINDOWS; i++)
		if (sim->win[i].open && sim->win[i].asid == asid)
			close_slot(&sim->win[i]);
	pthread_mutex_unlock(&sim->win_lock);
}

void fw_win_close_all(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->win_lock);
	for (unsigned int i = 0; i < MAIA_FABRIC_MAX_WINDOWS; i++)
		if (sim->win[i].open)
			close_slot(&sim->win[i]);
	pthread_mutex_unlock(&sim->win_lock);
}

/* Key, access and range; win_lock held. */
static unsigned int check(struct maia_sim *sim, uint32_t key, uint64_t offset, uint32_t len,
			  unsigned int access, struct fw_window **out)
{
	struct fw_window *w = lookup(sim, key);

	if (!w)
		return MAIA_FABRIC_RESP_BAD_KEY;
	if (!(w->access & access) || offset > w->size || len > w->size - offset)
		return MAIA_FABRIC_RESP_ACCESS;
	*out = w;
	return MAIA_FABRIC_RESP_OK;
}

unsigned int fw_win_write(struct maia_sim *sim, uint32_t key, uint64_t offset, const void *buf,
			  uint32_t len, bool sem, uint32_t sem_index, uint32_t sem_value,
			  uint64_t model_ns, bool *sem_done)
{
	struct fw_window *w;
	unsigned int rc;
	struct fw_as as;

	*sem_done = false;
	pthread_mutex_lock(&sim->win_lock);
	rc = check(sim, key, offset, len, MAIA_ACCESS_WRITE, &w);
	if (rc == MAIA_FABRIC_RESP_OK && sem && sem_index >= MAIA_NUM_SEMAPHORES)
		rc = MAIA_FABRIC_RESP_ACCESS;
	if (rc == MAIA_FABRIC_RESP_OK && len) {
		/* Through the window ASID's page tables, like any job's write. */
		fw_as_init(&as, sim, w->asid);
		if (fw_as_write(&as, w->va + offset, buf, len) != MAIA_STATUS_OK)
			rc = MAIA_FABRIC_RESP_FAULT;
	}
	if (rc == MAIA_FABRIC_RESP_OK && sem) {
		/* After the data: a SEM_WAIT that sees the value sees the data. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		/* a waiter that takes it continues after its modeled arrival */
		fw_tl_sem_signal_at(sim, w->asid, sem_index, model_ns);
		if (fw_sem_add(&sim->sems[w->asid][sem_index], sem_value))
			*sem_done = true;
		else
			rc = MAIA_FABRIC_RESP_ACCESS;
	}
	pthread_mutex_unlock(&sim->win_lock);
	return rc;
}

unsigned int fw_win_read(struct maia_sim *sim, uint32_t key, uint64_t offset, void *buf,
			 uint32_t len)
{
	struct fw_window *w;
	unsigned int rc;
	struct fw_as as;

	pthread_mutex_lock(&sim->win_lock);
	rc = check(sim, key, offset, len, MAIA_ACCESS_READ, &w);
	if (rc == MAIA_FABRIC_RESP_OK && len) {
		fw_as_init(&as, sim, w->asid);
		if (fw_as_read(&as, w->va + offset, buf, len) != MAIA_STATUS_OK)
			rc = MAIA_FABRIC_RESP_FAULT;
	}
	pthread_mutex_unlock(&sim->win_lock);
	return rc;
}
