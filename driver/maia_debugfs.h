/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: debugfs files of the device.
 */
#ifndef __MAIA_DEBUGFS_H__
#define __MAIA_DEBUGFS_H__

struct maia_device;

void maia_debugfs_init(struct maia_device *mdev);

#endif /* __MAIA_DEBUGFS_H__ */
