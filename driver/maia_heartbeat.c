// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the firmware heartbeat monitor.
 *
 * Running firmware counts MAIA_REG_FW_HEARTBEAT up by one every
 * MAIA_FW_HEARTBEAT_PERIOD_MS, from a timer of its own, whatever its queues
 * are doing. A delayed work reads it every heartbeat_check_ms (at least two
 * periods). When two reads in a row of running firmware see the same value,
 * the firmware has stopped: it would answer neither its mailbox nor its
 * queues, and no job timeout fires for a device with nothing in flight. The
 * device is then reset (reason "firmware not responding").
 */

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/workqueue.h>

#include <maia/hw/boot.h>

#include "maia_heartbeat.h"
#include "maia_hw.h"
#include "maia_reset.h"

static unsigned int maia_heartbeat_check_ms = 1000;
module_param_named(heartbeat_check_ms, maia_heartbeat_check_ms, uint, 0644);
MODULE_PARM_DESC(heartbeat_check_ms,
		 "How often the firmware heartbeat is checked, in ms (0 = never; default 1000)");

struct maia_heartbeat {
	struct maia_device *mdev;
	struct delayed_work work;
	/* Only the work reads and writes these. */
	u32 last;			/* the value read last time */
	u32 last_resets;		/* reset count at that reading */
	bool last_valid;		/* @last was read from running firmware */
};

static unsigned long maia_heartbeat_interval(void)
{
	unsigned int ms = READ_ONCE(maia_heartbeat_check_ms);

	/* Off still ticks, slowly, so that turning it on takes effect. */
	return msecs_to_jiffies(ms ? max(ms, 2 * MAIA_FW_HEARTBEAT_PERIOD_MS) : 1000);
}

static void maia_heartbeat_work(struct work_struct *work)
{
	struct maia_heartbeat *hb = container_of(to_delayed_work(work),
						 struct maia_heartbeat, work);
	struct maia_device *mdev = hb->mdev;
	bool running, stuck = false;
	u32 beat;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return;
	/* A reset in progress restarts the firmware: look again next time. */
	if (READ_ONCE(maia_heartbeat_check_ms) && maia_reset_read_trylock(mdev)) {
		u32 resets = maia_reset_count(mdev);

		running = maia_rd(mdev, MAIA_REG_BOOT_STATUS) == MAIA_BOOT_STATUS_READY;
		beat = maia_rd(mdev, MAIA_REG_FW_HEARTBEAT);
		maia_reset_read_unlock(mdev);
		/* A firmware booted since counts from 0 again: not comparable. */
		stuck = running && hb->last_valid && hb->last_resets == resets &&
			beat == hb->last;
		hb->last = beat;
		hb->last_resets = resets;
		hb->last_valid = running && !stuck;
	} else {
		hb->last_valid = false;
	}
	if (stuck) {
		maia_err(mdev, "firmware heartbeat stopped at %u: resetting the device\n", beat);
		maia_reset_schedule(mdev, "firmware not responding");
	}
	queue_delayed_work(system_wq, &hb->work, maia_heartbeat_interval());
	drm_dev_exit(idx);
}

static void maia_heartbeat_stop(void *arg)
{
	struct maia_heartbeat *hb = arg;

	cancel_delayed_work_sync(&hb->work);
}

/* After maia_reset_init() (recovery); devices before revision 1.1 have no heartbeat. */
int maia_heartbeat_init(struct maia_device *mdev)
{
	struct maia_heartbeat *hb;

	if (!maia_hw_has(mdev, MAIA_HW_REVISION_1_1)) {
		maia_info(mdev, "hardware revision %#x has no firmware heartbeat\n",
			  mdev->hw.revision);
		return 0;
	}
	hb = drmm_kzalloc(&mdev->drm, sizeof(*hb), GFP_KERNEL);
	if (!hb)
		return -ENOMEM;
	hb->mdev = mdev;
	INIT_DELAYED_WORK(&hb->work, maia_heartbeat_work);
	queue_delayed_work(system_wq, &hb->work, maia_heartbeat_interval());
	return devm_add_action_or_reset(mdev->drm.dev, maia_heartbeat_stop, hb);
}
