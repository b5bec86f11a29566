// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: identification registers and device reset.
 */

#include <linux/bitfield.h>
#include <linux/iopoll.h>

#include <maia/hw/boot.h>
#include <maia/hw/model.h>

#include "maia_hw.h"

/* How long a reset may take to bring BOOT_STATUS back to WAIT_FW. */
#define MAIA_RESET_TIMEOUT_US	100000
#define MAIA_RESET_POLL_US	10

#define MAIA_REVISION_MAJOR(rev)	(((rev) >> 8) & 0xffu)
#define MAIA_REVISION_MINOR(rev)	((rev) & 0xffu)

/*
 * The chip model block (hardware 1.8). Constant for the device's life, so
 * read once; an unknown model id is kept (the uAPI reports it as none) but
 * its parameters are still what the device says.
 */
static void maia_hw_read_model(struct maia_device *mdev)
{
	struct maia_model_info *m = &mdev->model;
	unsigned int d;

	if (!maia_hw_has(mdev, MAIA_HW_REVISION_MODEL))
		return;
	m->id = maia_rd(mdev, MAIA_REG_MODEL_ID);
	m->hbm_mbps = maia_rd(mdev, MAIA_REG_MODEL_HBM_MBPS);
	m->host_mbps = maia_rd(mdev, MAIA_REG_MODEL_HOST_MBPS);
	m->link_mbps = maia_rd(mdev, MAIA_REG_MODEL_LINK_MBPS);
	m->link_lat_ns = maia_rd(mdev, MAIA_REG_MODEL_LINK_LAT_NS);
	m->cmd_ns = maia_rd(mdev, MAIA_REG_MODEL_CMD_NS);
	m->job_ns = maia_rd(mdev, MAIA_REG_MODEL_JOB_NS);
	m->vector_gflops = maia_rd(mdev, MAIA_REG_MODEL_VECTOR_GFLOPS);
	m->sram_kib = maia_rd(mdev, MAIA_REG_MODEL_SRAM_KIB);
	m->design_power_mw = maia_rd(mdev, MAIA_REG_MODEL_DESIGN_POWER_MW);
	for (d = 0; d < MAIA_DTYPE_COUNT; d++)
		m->peak_gflops[d] = maia_rd(mdev, MAIA_REG_MODEL_PEAK_GFLOPS(d));
}

/* The chip model's name as the QEMU property spells it; "" without a model block. */
const char *maia_model_name(const struct maia_device *mdev)
{
	switch (mdev->model.id) {
	case 0:
		return "";
	case MAIA_MODEL_MAIA100:
		return "maia100";
	case MAIA_MODEL_MAIA200:
		return "maia200";
	default:
		return "unknown";
	}
}

/*
 * Reads the identification block and checks it describes a device this
 * driver can run: every count is used to size rings, vectors and uAPI
 * answers, so out-of-range values are refused here rather than trusted.
 */
int maia_hw_identify(struct maia_device *mdev)
{
	struct maia_hw_info *hw = &mdev->hw;
	u32 id, topology;

	id = maia_rd(mdev, MAIA_REG_ID);
	if (id != MAIA_ID_MAGIC) {
		maia_err(mdev, "not a Maia device: ID register %#010x, expected %#010x\n",
			 id, MAIA_ID_MAGIC);
		return -ENODEV;
	}

	hw->revision = maia_rd(mdev, MAIA_REG_REVISION);
	if (MAIA_REVISION_MAJOR(hw->revision) != MAIA_REVISION_MAJOR(MAIA_HW_REVISION)) {
		maia_err(mdev, "hardware revision %u.%u not supported (driver supports %u.x)\n",
			 MAIA_REVISION_MAJOR(hw->revision),
			 MAIA_REVISION_MINOR(hw->revision),
			 MAIA_REVISION_MAJOR(MAIA_HW_REVISION));
		return -ENODEV;
	}

	topology = maia_rd(mdev, MAIA_REG_TOPOLOGY);
	hw->clusters = FIELD_GET(MAIA_TOPOLOGY_CLUSTERS_MASK, topology);
	hw->tiles_per_cluster = FIELD_GET(MAIA_TOPOLOGY_TILES_MASK, topology);
	hw->caps = maia_rd(mdev, MAIA_REG_CAPS);
	hw->dtypes = maia_rd(mdev, MAIA_REG_DTYPES);
	hw->num_queues = maia_rd(mdev, MAIA_REG_NUM_QUEUES);
	hw->sram_kib = maia_rd(mdev, MAIA_REG_SRAM_KIB);
	hw->msix_vectors = maia_rd(mdev, MAIA_REG_MSIX_VECTORS);
	hw->hbm_size = maia_rd(mdev, MAIA_REG_HBM_SIZE_LO) |
		       (u64)maia_rd(mdev, MAIA_REG_HBM_SIZE_HI) << 32;

	if (!hw->clusters || hw->clusters > MAIA_MAX_CLUSTERS ||
	    !hw->tiles_per_cluster ||
	    hw->tiles_per_cluster > MAIA_MAX_TILES_PER_CLUSTER) {
		maia_err(mdev, "device reports an invalid topology %#010x\n", topology);
		return -ENODEV;
	}
	if (!hw->num_queues || hw->num_queues > MAIA_MAX_QUEUES) {
		maia_err(mdev, "device reports %u queues (1..%u supported)\n",
			 hw->num_queues, MAIA_MAX_QUEUES);
		return -ENODEV;
	}
	if (hw->msix_vectors < MAIA_NUM_VECTORS(hw->num_queues)) {
		maia_err(mdev, "device has %u MSI-X vectors, %u needed for %u queues\n",
			 hw->msix_vectors, MAIA_NUM_VECTORS(hw->num_queues),
			 hw->num_queues);
		return -ENODEV;
	}

	maia_hw_read_model(mdev);
	return 0;
}

/*
 * Full device reset: stops the firmware, aborts queued jobs and ends all
 * device DMA, then waits for the device to accept a new firmware image.
 * Silent: the caller knows what the failure means in its context.
 */
int maia_hw_reset(struct maia_device *mdev)
{
	u32 status;

	maia_wr(mdev, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	return readl_poll_timeout(mdev->regs + MAIA_REG_BOOT_STATUS, status,
				  status == MAIA_BOOT_STATUS_WAIT_FW,
				  MAIA_RESET_POLL_US, MAIA_RESET_TIMEOUT_US);
}
