/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: user queues, hardware queues whose rings and
 * doorbell page are mapped into one process (hardware revision 1.3).
 */
#ifndef __MAIA_USERQ_H__
#define __MAIA_USERQ_H__

#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "maia_drv.h"

struct drm_file;
struct maia_userq;
struct vm_area_struct;

/* Ring slots of a user queue: its completion array fills one page. */
#define MAIA_USERQ_ENTRIES	64u

/* One hardware queue kept for user queues, and who owns it. */
struct maia_userq_slot {
	struct maia_userqs *uqs;
	unsigned int hwq;		/* hardware queue index */
	char name[24];			/* "maia-uq<N>", its interrupt */
	/* Woken by the queue's interrupt and when its queue stops. */
	wait_queue_head_t wq;
	struct maia_userq *uq;		/* owner, or NULL; under uqs->lock */
};

/* Device-wide user-queue state (mdev->userqs). */
struct maia_userqs {
	struct maia_device *mdev;
	phys_addr_t doorbells;		/* BAR1 bus address */
	unsigned int first;		/* first hardware queue kept */
	unsigned int count;		/* queues kept; 0: no user queues */
	/*
	 * Protects the slots' owners, every queue's state and hardware
	 * registers (enable, disable) and the watchdog's records. Taken after
	 * the reset lock, never held while waiting for the device.
	 */
	struct mutex lock;
	struct maia_userq_slot slots[MAIA_MAX_QUEUES];
	struct delayed_work watchdog;	/* runs while a queue is active */
};

int maia_userq_init(struct maia_device *mdev);
unsigned int maia_userq_count(struct maia_device *mdev);
void maia_userq_file_close(struct maia_device *mdev, struct drm_file *file);
int maia_userq_mmap(struct file *filp, struct vm_area_struct *vma);
bool maia_userq_mmap_offset(unsigned long pgoff);
void maia_userq_handle_fault(struct maia_device *mdev, const struct maia_fault_record *fault);
void maia_userq_report_errors(struct maia_device *mdev);
void maia_userq_reset(struct maia_device *mdev);
void maia_userq_ctx_quiesce(struct maia_context *ctx);
void maia_userq_unplug(struct maia_device *mdev);

int maia_userq_create_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_userq_destroy_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_userq_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_USERQ_H__ */
