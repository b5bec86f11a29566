/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: the firmware heartbeat monitor.
 */
#ifndef __MAIA_HEARTBEAT_H__
#define __MAIA_HEARTBEAT_H__

struct maia_device;

int maia_heartbeat_init(struct maia_device *mdev);

#endif /* __MAIA_HEARTBEAT_H__ */
