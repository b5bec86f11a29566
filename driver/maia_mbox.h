/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: the firmware mailbox (maia/hw/mbox.h).
 */
#ifndef __MAIA_MBOX_H__
#define __MAIA_MBOX_H__

#include <linux/mutex.h>
#include <linux/types.h>

#include <maia/hw/mbox.h>
#include <maia/hw/regs.h>

struct maia_device;

struct maia_mbox {
	/*
	 * Serializes mailbox commands: the device takes one at a time, so
	 * this protects MBOX_ARG/CMD/STATUS/RESP from writing ARG to reading
	 * RESP.
	 */
	struct mutex lock;
};

int maia_mbox_init(struct maia_device *mdev);
int maia_mbox_cmd(struct maia_device *mdev, u32 cmd,
		  const u32 args[MAIA_MBOX_NARGS], u32 resp[MAIA_MBOX_NARGS]);

#endif /* __MAIA_MBOX_H__ */
