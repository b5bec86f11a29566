/* SPDX-License-Identifier: MIT */
/*
 * Booting a bare struct maia_sim (a test's own ops, no struct env) from the
 * real v1 firmware image: the image sits at FW_IMAGE_ADDR of the bus that
 * fw_image_dma_read() serves. A device's fabric ports run only while its
 * firmware does (Documentation/hw/fabric.rst, "Attaching ports").
 */
#ifndef MAIA_TEST_FW_IMAGE_H
#define MAIA_TEST_FW_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/sim.h"

#define FW_IMAGE_ADDR	0x100000ull

/* A maia_sim_ops.dma_read that serves the image and refuses anything else. */
int fw_image_dma_read(void *opaque, uint64_t addr, void *buf, size_t len);
/* Boots sim (loads the image on first use); true once BOOT_STATUS is READY. */
bool fw_image_boot(struct maia_sim *sim);

#endif
