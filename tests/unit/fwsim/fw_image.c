// SPDX-License-Identifier: MIT
/* The v1 firmware image for devices without struct env (fw_image.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_image.h"
#include "harness.h"
#include "maia/hw/boot.h"
#include "maia/hw/regs.h"

#define FW_BOOT_WAIT_MS	20000u	/* a loaded machine, not a bound on speed */

static uint8_t fw_img[MAIA_FW_MAX_SIZE];
static size_t fw_len;

/* Read once, before any device can ask for it. */
static void load(void)
{
	const char *path = fw_path("maia_fw_v1.bin");
	FILE *f;

	if (fw_len)
		return;
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s (build firmware-sim first)\n", path);
		exit(2);
	}
	fw_len = fread(fw_img, 1, sizeof(fw_img), f);
	fclose(f);
}

int fw_image_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque;
	if (addr < FW_IMAGE_ADDR || addr - FW_IMAGE_ADDR > fw_len ||
	    len > fw_len - (addr - FW_IMAGE_ADDR))
		return -1;
	memcpy(buf, fw_img + (addr - FW_IMAGE_ADDR), len);
	return 0;
}

bool fw_image_boot(struct maia_sim *sim)
{
	struct timespec slice = { 0, 1000000 };
	uint32_t status = 0;

	load();
	maia_sim_mmio_write(sim, MAIA_REG_BOOT_ADDR_LO, (uint32_t)FW_IMAGE_ADDR);
	maia_sim_mmio_write(sim, MAIA_REG_BOOT_ADDR_HI, (uint32_t)(FW_IMAGE_ADDR >> 32));
	maia_sim_mmio_write(sim, MAIA_REG_BOOT_SIZE, (uint32_t)fw_len);
	maia_sim_mmio_write(sim, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	for (unsigned int ms = 0; ms < FW_BOOT_WAIT_MS; ms++) {
		status = maia_sim_mmio_read(sim, MAIA_REG_BOOT_STATUS);
		if (status == MAIA_BOOT_STATUS_READY || status == MAIA_BOOT_STATUS_FAILED)
			break;
		nanosleep(&slice, NULL);
	}
	return status == MAIA_BOOT_STATUS_READY;
}
