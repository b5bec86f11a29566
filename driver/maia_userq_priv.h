/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: what the user-queue files share (maia_userq.c:
 * state, set-up and the ioctls; maia_userq_mmap.c: the process's
 * mappings; maia_userq_watch.c: the watchdog, faults and errors).
 */
#ifndef __MAIA_USERQ_PRIV_H__
#define __MAIA_USERQ_PRIV_H__

#include <drm/maia_accel.h>
#include <linux/kref.h>
#include <linux/mm_types.h>

#include "maia_reset.h"
#include "maia_userq.h"

#define MAIA_USERQ_WATCHDOG_TICK_MS	250

/*
 * mmap offsets: below DRM_FILE_PAGE_OFFSET_START, where GEM objects never
 * are. Each hardware queue has MAIA_USERQ_PAGES pages: ring, array, doorbell.
 */
#define MAIA_USERQ_PGOFF_BASE	((1ul << 30) >> PAGE_SHIFT)
#define MAIA_USERQ_PAGES	4ul
#define MAIA_USERQ_PAGE_SQ	0ul
#define MAIA_USERQ_PAGE_CQ	1ul
#define MAIA_USERQ_PAGE_DB	2ul
#define MAIA_USERQ_PGOFF(hwq, page) \
	(MAIA_USERQ_PGOFF_BASE + (unsigned long)(hwq) * MAIA_USERQ_PAGES + (page))

struct maia_userq {
	struct kref ref;		/* the slot's, and each waiter's */
	struct maia_userqs *uqs;
	struct maia_userq_slot *slot;
	struct maia_context *ctx;
	struct drm_file *file;
	struct page *sq_page, *cq_page;
	/* What the doorbell mapping reaches once the queue is gone; freed last. */
	struct page *dummy_page;
	dma_addr_t sq_dma, cq_dma;
	/* The rest under uqs->lock; @state also read with READ_ONCE by waiters. */
	u32 state;			/* DRM_MAIA_USERQ_* */
	bool dying;			/* DESTROY or close under way: no new mapping */
	/*
	 * Process mappings of the queue's pages (VMAs). A slot whose queue was
	 * torn down is not given out again until they are gone: a mapping made
	 * while the teardown zapped the others could still reach the doorbell.
	 */
	unsigned int maps;
	bool torn_down;			/* disabled and unbound by the teardown */
	u32 completed_at_stop;		/* MAIA_Q_COMPLETED when it stopped */
	u32 wd_completed;		/* watchdog: COMPLETED when last seen moving */
	struct maia_hang_watch wd;	/* watchdog: the hang monitor's view */
};

void maia_userq_release(struct kref *ref);
void maia_userq_set_state(struct maia_userq *uq, u32 state);
void maia_userq_stop_locked(struct maia_userq *uq, u32 state);
void maia_userq_revoke_doorbell(struct maia_device *mdev, unsigned int hwq);
void maia_userq_watchdog(struct work_struct *work);
void maia_userq_cancel_watchdog(void *arg);

#endif /* __MAIA_USERQ_PRIV_H__ */
