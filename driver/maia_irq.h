/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: MSI-X vectors and the event interrupt.
 */
#ifndef __MAIA_IRQ_H__
#define __MAIA_IRQ_H__

#include "maia_drv.h"

int maia_irq_init(struct maia_device *mdev);
void maia_irq_enable(struct maia_device *mdev);
void maia_irq_disable(struct maia_device *mdev);
void maia_irq_sync(struct maia_device *mdev);
int maia_irq_request_queue(struct maia_device *mdev, struct maia_queue *q,
			   const char *name);

#endif /* __MAIA_IRQ_H__ */
