// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the firmware mailbox.
 *
 * Mailbox commands are rare (context set-up and teardown, TLB invalidation
 * after an unmap) and complete in microseconds, so the caller polls
 * MBOX_STATUS rather than waiting for MAIA_INT_MBOX_DONE: the status
 * register is the truth, and a lost or late interrupt cannot wedge a
 * caller. The interrupt is still raised and acknowledged by the event
 * handler.
 */

#include <drm/drm_managed.h>
#include <linux/iopoll.h>

#include "maia_drv.h"
#include "maia_hw.h"
#include "maia_mbox.h"

#define MAIA_MBOX_POLL_US	5
#define MAIA_MBOX_TIMEOUT_US	(2 * USEC_PER_SEC)

int maia_mbox_init(struct maia_device *mdev)
{
	return drmm_mutex_init(&mdev->drm, &mdev->mbox.lock);
}

static int maia_mbox_errno(u32 result)
{
	switch (result) {
	case MAIA_MBOX_OK:
		return 0;
	case MAIA_MBOX_EINVAL:
		return -EINVAL;
	case MAIA_MBOX_EUNKNOWN:
		return -EOPNOTSUPP;
	case MAIA_MBOX_ENOTREADY:
		return -EAGAIN;
	case MAIA_MBOX_ENOSPC:
		return -ENOSPC;
	case MAIA_MBOX_ENOENT:
		return -ENOENT;
	default:
		return -EIO;
	}
}

static int maia_mbox_wait_idle(struct maia_device *mdev, u32 *status)
{
	return readl_poll_timeout(mdev->regs + MAIA_REG_MBOX_STATUS, *status,
				  !(*status & MAIA_MBOX_STATUS_BUSY),
				  MAIA_MBOX_POLL_US, MAIA_MBOX_TIMEOUT_US);
}

/*
 * Runs one mailbox command and returns its result as an errno. @resp may
 * be NULL. The caller is inside drm_dev_enter() (the registers are
 * unmapped after unplug) and may sleep.
 */
int maia_mbox_cmd(struct maia_device *mdev, u32 cmd,
		  const u32 args[MAIA_MBOX_NARGS], u32 resp[MAIA_MBOX_NARGS])
{
	u32 status;
	unsigned int i;
	int ret;

	mutex_lock(&mdev->mbox.lock);

	/* Only a command that timed out earlier can still be running. */
	ret = maia_mbox_wait_idle(mdev, &status);
	if (ret)
		goto timeout;

	for (i = 0; i < MAIA_MBOX_NARGS; i++)
		maia_wr(mdev, MAIA_REG_MBOX_ARG(i), args ? args[i] : 0);
	maia_wr(mdev, MAIA_REG_MBOX_CMD, cmd);

	ret = maia_mbox_wait_idle(mdev, &status);
	if (ret)
		goto timeout;

	if (resp)
		for (i = 0; i < MAIA_MBOX_NARGS; i++)
			resp[i] = maia_rd(mdev, MAIA_REG_MBOX_RESP(i));
	mutex_unlock(&mdev->mbox.lock);

	ret = maia_mbox_errno(status & MAIA_MBOX_STATUS_RESULT_MASK);
	/* A full table or an unknown object is an answer, not a failure. */
	if (ret && ret != -ENOSPC && ret != -ENOENT)
		maia_err_ratelimited(mdev, "mailbox command %#x failed: result %u\n",
				     cmd, status & MAIA_MBOX_STATUS_RESULT_MASK);
	return ret;

timeout:
	mutex_unlock(&mdev->mbox.lock);
	maia_err_ratelimited(mdev, "mailbox command %#x timed out (status %#x)\n",
			     cmd, status);
	return -ETIMEDOUT;
}
