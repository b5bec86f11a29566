/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: firmware image format and boot protocol.
 *
 * Boot: after reset BOOT_STATUS is WAIT_FW. The host places the image in
 * DMA-able memory, writes BOOT_ADDR_LO/HI and BOOT_SIZE, then writes
 * MAIA_BOOT_CTRL_START to BOOT_CTRL. The device fetches the image by DMA,
 * checks it, and sets BOOT_STATUS to READY (FW_VERSION and FW_ABI valid) or
 * FAILED (BOOT_ERROR says why), then raises MAIA_INT_BOOT_DONE.
 * See Documentation/hw/boot.rst.
 */
#ifndef MAIA_HW_BOOT_H
#define MAIA_HW_BOOT_H

#include <linux/types.h>

/* MAIA_REG_BOOT_STATUS */
#define MAIA_BOOT_STATUS_WAIT_FW	0x0u
#define MAIA_BOOT_STATUS_LOADING	0x1u
#define MAIA_BOOT_STATUS_READY		0x2u
#define MAIA_BOOT_STATUS_FAILED		0x3u

/* MAIA_REG_BOOT_ERROR */
#define MAIA_BOOT_OK			0x0u
#define MAIA_BOOT_ERR_DMA		0x1u	/* image fetch failed */
#define MAIA_BOOT_ERR_SIZE		0x2u	/* too small, too big, or sizes disagree */
#define MAIA_BOOT_ERR_MAGIC		0x3u
#define MAIA_BOOT_ERR_ABI		0x4u	/* ABI major not supported */
#define MAIA_BOOT_ERR_CHECKSUM		0x5u
#define MAIA_BOOT_ERR_PAYLOAD		0x6u	/* malformed TLV record */
#define MAIA_BOOT_ERR_STATE		0x7u	/* START while not WAIT_FW */

#define MAIA_FW_MAGIC			0x3157464du	/* "MFW1" */
#define MAIA_FW_ABI_MAJOR		1u
#define MAIA_FW_ABI_MINOR		0u
#define MAIA_FW_MAX_SIZE		(1u << 20)

#define MAIA_FW_VERSION(maj, min, pat)	(((maj) << 16) | ((min) << 8) | (pat))
#define MAIA_FW_VERSION_MAJOR(v)	(((v) >> 16) & 0xffffu)
#define MAIA_FW_VERSION_MINOR(v)	(((v) >> 8) & 0xffu)
#define MAIA_FW_VERSION_PATCH(v)	((v) & 0xffu)

/*
 * Image = header + payload. The payload is a sequence of TLV records, each
 * 4-byte aligned. payload_crc32 is the IEEE 802.3 CRC-32 of the payload
 * (the value zlib's crc32() and the kernel's ~crc32_le(~0, ...) compute).
 */
struct maia_fw_header {
	__u32 magic;
	__u16 abi_major;
	__u16 abi_minor;
	__u32 fw_version;	/* MAIA_FW_VERSION() */
	__u32 header_size;	/* sizeof(struct maia_fw_header) */
	__u32 payload_size;
	__u32 payload_crc32;
	__u32 flags;		/* must be 0 */
	__u32 reserved;		/* must be 0 */
	char build_id[32];	/* NUL-terminated */
};

struct maia_fw_tlv {
	__u16 type;		/* MAIA_FW_TLV_* */
	__u16 length;		/* bytes of value, excluding this header */
	/* value follows, padded to 4 bytes */
};

#define MAIA_FW_TLV_END			0x0u	/* optional terminator */
#define MAIA_FW_TLV_NAME		0x1u	/* string */
#define MAIA_FW_TLV_CLOCK_MHZ		0x2u	/* __u32 nominal tensor clock */
#define MAIA_FW_TLV_TDP_W		0x3u	/* __u32 default power cap */
#define MAIA_FW_TLV_OPCODES		0x4u	/* __u64 bitmap of MAIA_OP_* < 64 */
#define MAIA_FW_TLV_SCHED_QUANTUM_US	0x5u	/* __u32 */
/*
 * __u32: milliseconds of start-up self-test the firmware runs after the
 * image checks and before READY (0..MAIA_FW_SELFTEST_MAX_MS; none if
 * absent). A device reset during it abandons the boot. Lets a test image
 * be slower to boot than the driver waits.
 */
#define MAIA_FW_TLV_SELFTEST_MS		0x6u
#define MAIA_FW_SELFTEST_MAX_MS		60000u
/*
 * __u32, nonzero: scheduler aging bound in microseconds; a runnable queue
 * passed over this long is served next whatever its priority (default
 * 100000 if absent; Documentation/hw/queues.rst).
 */
#define MAIA_FW_TLV_SCHED_AGING_US	0x7u

#endif /* MAIA_HW_BOOT_H */
