/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: register access and device-level operations
 * (identification, reset).
 */
#ifndef __MAIA_HW_H__
#define __MAIA_HW_H__

#include <linux/io.h>

#include <maia/hw/regs.h>

#include "maia_drv.h"

/* All registers are 32 bits, little-endian, accessed aligned. */
static inline u32 maia_rd(struct maia_device *mdev, u32 reg)
{
	return readl(mdev->regs + reg);
}

/*
 * writel() orders all earlier CPU writes to memory, including DMA-coherent
 * rings and buffers, before the register write reaches the device.
 */
static inline void maia_wr(struct maia_device *mdev, u32 reg, u32 val)
{
	writel(val, mdev->regs + reg);
}

/*
 * Whether the device is at least @revision (MAIA_HW_REVISION_*): minor
 * revisions add registers. The major is checked at probe.
 */
static inline bool maia_hw_has(const struct maia_device *mdev, u32 revision)
{
	return (mdev->hw.revision & 0xffu) >= (revision & 0xffu);
}

int maia_hw_identify(struct maia_device *mdev);
const char *maia_model_name(const struct maia_device *mdev);
int maia_hw_reset(struct maia_device *mdev);

#endif /* __MAIA_HW_H__ */
