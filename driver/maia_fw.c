// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: firmware image loading and the boot handshake.
 *
 * The image is checked completely on the host before the device sees it, so
 * that a missing, corrupt or incompatible file produces one message naming
 * the file and both versions, instead of a device-side boot error code.
 *
 * Version policy: the image's ABI major must equal MAIA_FW_ABI_MAJOR; any
 * minor is accepted, since minors only add to the ABI.
 */

#include <linux/crc32.h>
#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include <maia/hw/boot.h>

#include "maia_fw.h"
#include "maia_hw.h"

/* Tried in order when no firmware= override is given; newest first. */
static const char * const maia_fw_names[] = {
	"maia/maia_fw_v1.bin",
};

static char *maia_fw_override;
module_param_named(firmware, maia_fw_override, charp, 0444);
MODULE_PARM_DESC(firmware, "Firmware file to load instead of the default (path under /lib/firmware)");

static unsigned int maia_boot_timeout_ms = 5000;
module_param_named(boot_timeout_ms, maia_boot_timeout_ms, uint, 0644);
MODULE_PARM_DESC(boot_timeout_ms, "Time the firmware has to boot, in ms (default 5000)");

MODULE_FIRMWARE("maia/maia_fw_v1.bin");

#define FW_ABI_MAJOR(abi)	((abi) >> 16)
#define FW_ABI_MINOR(abi)	((abi) & 0xffffu)
#define FW_ABI(major, minor)	((u32)(major) << 16 | (minor))

/* "firmware 1.2.3 (ABI 1.0)", for messages. */
struct maia_fw_desc {
	char str[48];
};

static const char *maia_fw_describe(struct maia_fw_desc *desc, u32 version, u32 abi)
{
	snprintf(desc->str, sizeof(desc->str), "firmware %u.%u.%u (ABI %u.%u)",
		 MAIA_FW_VERSION_MAJOR(version), MAIA_FW_VERSION_MINOR(version),
		 MAIA_FW_VERSION_PATCH(version), FW_ABI_MAJOR(abi), FW_ABI_MINOR(abi));
	return desc->str;
}

static const char *maia_boot_error_str(u32 err)
{
	switch (err) {
	case MAIA_BOOT_OK:		return "no error";
	case MAIA_BOOT_ERR_DMA:		return "image fetch failed";
	case MAIA_BOOT_ERR_SIZE:	return "bad image size";
	case MAIA_BOOT_ERR_MAGIC:	return "bad magic";
	case MAIA_BOOT_ERR_ABI:		return "ABI not supported";
	case MAIA_BOOT_ERR_CHECKSUM:	return "checksum mismatch";
	case MAIA_BOOT_ERR_PAYLOAD:	return "malformed payload";
	case MAIA_BOOT_ERR_STATE:	return "not waiting for firmware";
	default:			return "unknown error";
	}
}

/*
 * Finds the image: the firmware= override alone if given, otherwise the
 * first file of maia_fw_names[] that exists. Quiet lookups, so that a
 * missing file is reported once, here.
 */
static int maia_fw_request(struct maia_device *mdev, const struct firmware **fw)
{
	unsigned int i;
	int ret;

	if (maia_fw_override && *maia_fw_override) {
		mdev->fw.name = maia_fw_override;
		ret = firmware_request_nowarn(fw, mdev->fw.name, mdev->drm.dev);
	} else {
		for (i = 0; i < ARRAY_SIZE(maia_fw_names); i++) {
			mdev->fw.name = maia_fw_names[i];
			ret = firmware_request_nowarn(fw, mdev->fw.name, mdev->drm.dev);
			if (ret != -ENOENT)
				break;
		}
		if (ret == -ENOENT)
			mdev->fw.name = maia_fw_names[0];
	}

	if (ret)
		maia_err(mdev, "%s: cannot load firmware (%pe); driver needs firmware ABI %u.x\n",
			 mdev->fw.name, ERR_PTR(ret), MAIA_FW_ABI_MAJOR);
	return ret;
}

/* Checks the image header and payload; reports the first problem found. */
static int maia_fw_validate(struct maia_device *mdev, const struct firmware *fw)
{
	const char *name = mdev->fw.name;
	struct maia_fw_header hdr;
	struct maia_fw_desc desc;
	u32 crc;

	if (fw->size < sizeof(hdr) || fw->size > MAIA_FW_MAX_SIZE) {
		maia_err(mdev, "%s: image size %zu bytes outside %zu..%u; driver needs firmware ABI %u.x\n",
			 name, fw->size, sizeof(hdr), MAIA_FW_MAX_SIZE, MAIA_FW_ABI_MAJOR);
		return -EINVAL;
	}
	memcpy(&hdr, fw->data, sizeof(hdr));

	if (hdr.magic != MAIA_FW_MAGIC) {
		maia_err(mdev, "%s: not a Maia firmware image (magic %#010x, expected %#010x); driver needs firmware ABI %u.x\n",
			 name, hdr.magic, MAIA_FW_MAGIC, MAIA_FW_ABI_MAJOR);
		return -EINVAL;
	}

	if (hdr.abi_major != MAIA_FW_ABI_MAJOR) {
		maia_err(mdev, "%s: firmware ABI %u.%u not supported (driver supports %u.x)\n",
			 name, hdr.abi_major, hdr.abi_minor, MAIA_FW_ABI_MAJOR);
		return -EINVAL;
	}

	/* A later minor may grow the header; the payload follows it. */
	if (hdr.header_size < sizeof(hdr) || hdr.header_size % 4 ||
	    hdr.header_size > fw->size ||
	    hdr.payload_size != fw->size - hdr.header_size ||
	    hdr.flags || hdr.reserved ||
	    !memchr(hdr.build_id, '\0', sizeof(hdr.build_id))) {
		maia_err(mdev, "%s: %s has a malformed header (header %u + payload %u bytes in a %zu-byte file, flags %#x); driver supports ABI %u.x\n",
			 name, maia_fw_describe(&desc, hdr.fw_version,
						FW_ABI(hdr.abi_major, hdr.abi_minor)),
			 hdr.header_size, hdr.payload_size, fw->size,
			 hdr.flags, MAIA_FW_ABI_MAJOR);
		return -EINVAL;
	}

	crc = ~crc32_le(~0, fw->data + hdr.header_size, hdr.payload_size);
	if (crc != hdr.payload_crc32) {
		maia_err(mdev, "%s: %s is corrupt: payload CRC-32 %#010x, header says %#010x\n",
			 name, maia_fw_describe(&desc, hdr.fw_version,
						FW_ABI(hdr.abi_major, hdr.abi_minor)),
			 crc, hdr.payload_crc32);
		return -EBADMSG;
	}

	strscpy(mdev->fw.build_id, hdr.build_id, sizeof(mdev->fw.build_id));
	mdev->fw.version = hdr.fw_version;
	mdev->fw.abi = FW_ABI(hdr.abi_major, hdr.abi_minor);
	return 0;
}

/*
 * Hands the image to the device and waits for MAIA_INT_BOOT_DONE. On any
 * failure the device is reset before returning, so that it no longer reads
 * the image buffer the caller is about to free.
 */
static int maia_fw_start(struct maia_device *mdev, const struct firmware *fw,
			 dma_addr_t image_dma)
{
	const char *name = mdev->fw.name;
	struct maia_fw_desc desc;
	unsigned long left;
	u32 status, err, abi;
	int ret;

	/* What the image header claims, until the running firmware says. */
	maia_fw_describe(&desc, mdev->fw.version, mdev->fw.abi);

	status = maia_rd(mdev, MAIA_REG_BOOT_STATUS);
	if (status != MAIA_BOOT_STATUS_WAIT_FW) {
		maia_err(mdev, "%s: device not ready for firmware (boot status %u)\n",
			 name, status);
		return -EIO;
	}

	reinit_completion(&mdev->fw.boot_done);
	maia_wr(mdev, MAIA_REG_BOOT_ADDR_LO, lower_32_bits(image_dma));
	maia_wr(mdev, MAIA_REG_BOOT_ADDR_HI, upper_32_bits(image_dma));
	maia_wr(mdev, MAIA_REG_BOOT_SIZE, fw->size);
	maia_wr(mdev, MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);

	left = wait_for_completion_timeout(&mdev->fw.boot_done,
					   msecs_to_jiffies(maia_boot_timeout_ms));
	status = maia_rd(mdev, MAIA_REG_BOOT_STATUS);

	if (status == MAIA_BOOT_STATUS_FAILED) {
		err = maia_rd(mdev, MAIA_REG_BOOT_ERROR);
		maia_err(mdev, "%s: device rejected %s: boot error %u (%s); driver supports ABI %u.x\n",
			 name, desc.str, err, maia_boot_error_str(err),
			 MAIA_FW_ABI_MAJOR);
		ret = -EIO;
		goto err_reset;
	}
	if (status != MAIA_BOOT_STATUS_READY) {
		maia_err(mdev, "%s: %s did not boot within %u ms (boot status %u)\n",
			 name, desc.str, maia_boot_timeout_ms, status);
		ret = -ETIMEDOUT;
		goto err_reset;
	}
	if (!left) {
		maia_err(mdev, "%s: %s booted, but no boot-done interrupt within %u ms: MSI-X delivery is broken\n",
			 name, desc.str, maia_boot_timeout_ms);
		ret = -ETIMEDOUT;
		goto err_reset;
	}

	/* Trust what the running firmware says over what its file header said. */
	abi = maia_rd(mdev, MAIA_REG_FW_ABI);
	if (FW_ABI_MAJOR(abi) != MAIA_FW_ABI_MAJOR) {
		maia_err(mdev, "%s: running firmware reports ABI %u.%u, not supported (driver supports %u.x)\n",
			 name, FW_ABI_MAJOR(abi), FW_ABI_MINOR(abi),
			 MAIA_FW_ABI_MAJOR);
		ret = -EPROTO;
		goto err_reset;
	}
	mdev->fw.abi = abi;
	mdev->fw.version = maia_rd(mdev, MAIA_REG_FW_VERSION);
	return 0;

err_reset:
	if (maia_hw_reset(mdev))
		maia_warn(mdev, "device did not come out of reset after the failed boot\n");
	return ret;
}

int maia_fw_boot(struct maia_device *mdev)
{
	struct maia_fw_desc desc;
	const struct firmware *fw;
	dma_addr_t image_dma;
	void *image;
	int ret;

	ret = maia_fw_request(mdev, &fw);
	if (ret)
		return ret;

	ret = maia_fw_validate(mdev, fw);
	if (ret)
		goto out_release;

	/* The device fetches the image by DMA during boot only. */
	image = dma_alloc_coherent(mdev->drm.dev, fw->size, &image_dma, GFP_KERNEL);
	if (!image) {
		ret = -ENOMEM;
		goto out_release;
	}
	memcpy(image, fw->data, fw->size);

	ret = maia_fw_start(mdev, fw, image_dma);
	dma_free_coherent(mdev->drm.dev, fw->size, image, image_dma);
	if (!ret)
		maia_info(mdev, "%s: %s running, build %s\n", mdev->fw.name,
			  maia_fw_describe(&desc, mdev->fw.version, mdev->fw.abi),
			  mdev->fw.build_id);
out_release:
	release_firmware(fw);
	return ret;
}
