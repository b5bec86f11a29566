// SPDX-License-Identifier: MIT
/*
 * Boot protocol (maia/hw/boot.h): fetch the firmware image by DMA, check it
 * field by field, apply its TLV records, then report READY or FAILED.
 * Runs on the worker thread.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "fw_internal.h"

#define FW_BUILTIN_OPCODES						\
	((1ull << MAIA_OP_NOP) | (1ull << MAIA_OP_DMA_COPY) |		\
	 (1ull << MAIA_OP_FILL) | (1ull << MAIA_OP_FENCE_WRITE) |	\
	 (1ull << MAIA_OP_TIMESTAMP) | (1ull << MAIA_OP_SEM_SIGNAL) |	\
	 (1ull << MAIA_OP_SEM_WAIT) | (1ull << MAIA_OP_FABRIC_WRITE) |	\
	 (1ull << MAIA_OP_FABRIC_READ) | (1ull << MAIA_OP_COLLECTIVE) |	\
	 (1ull << MAIA_OP_KERNEL))

/* Without an OPCODES record every command the device knows is enabled. */
void fw_image_params_defaults(struct fw_image_params *fw)
{
	uint64_t ops = FW_BUILTIN_OPCODES;

	for (unsigned int op = 0; op < 64; op++)
		if (fw_tensor_handles((uint16_t)op))
			ops |= 1ull << op;
	memset(fw, 0, sizeof(*fw));
	strcpy(fw->name, "unnamed");
	fw->clock_mhz = 1500;
	fw->tdp_w = 0;		/* no TDP record: the chip model's */
	fw->opcodes = ops;
	fw->quantum_us = FW_DEFAULT_QUANTUM_US;
	fw->aging_us = FW_DEFAULT_AGING_US;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Apply one TLV record to fw. Returns false if the record is malformed. */
static bool apply_tlv(struct maia_sim *sim, struct fw_image_params *fw,
		      uint16_t type, const uint8_t *val, uint16_t len)
{
	switch (type) {
	case MAIA_FW_TLV_NAME:
		if (len == 0 || len >= FW_IMAGE_NAME_MAX) {
			fw_guest_error(sim, "maia: firmware NAME record has length %u", len);
			return false;
		}
		memcpy(fw->name, val, len);
		fw->name[len] = '\0';
		return true;
	case MAIA_FW_TLV_CLOCK_MHZ:
	case MAIA_FW_TLV_TDP_W:
	case MAIA_FW_TLV_SCHED_QUANTUM_US:
	case MAIA_FW_TLV_SCHED_AGING_US: {
		uint32_t v;

		if (len != 4) {
			fw_guest_error(sim, "maia: firmware record %u has length %u, want 4",
					 type, len);
			return false;
		}
		v = get_u32(val);
		if (v == 0) {
			fw_guest_error(sim, "maia: firmware record %u has value 0", type);
			return false;
		}
		if (type == MAIA_FW_TLV_CLOCK_MHZ)
			fw->clock_mhz = v;
		else if (type == MAIA_FW_TLV_TDP_W)
			fw->tdp_w = v;
		else if (type == MAIA_FW_TLV_SCHED_QUANTUM_US)
			fw->quantum_us = v;
		else
			fw->aging_us = v;
		return true;
	}
	case MAIA_FW_TLV_SELFTEST_MS:
		if (len != 4 || get_u32(val) > MAIA_FW_SELFTEST_MAX_MS) {
			fw_guest_error(sim, "maia: firmware SELFTEST_MS record: length %u, want 4 with a value up to %u",
					 len, MAIA_FW_SELFTEST_MAX_MS);
			return false;
		}
		fw->selftest_ms = get_u32(val);
		return true;
	case MAIA_FW_TLV_OPCODES:
		if (len != 8) {
			fw_guest_error(sim, "maia: firmware OPCODES record has length %u, want 8", len);
			return false;
		}
		memcpy(&fw->opcodes, val, 8);
		return true;
	default:
		/* Newer firmware may carry records this device does not know. */
		fw_trace(sim, "boot: skipping unknown firmware record %u (%u bytes)", type, len);
		return true;
	}
}

static uint32_t parse_tlvs(struct maia_sim *sim, struct fw_image_params *fw,
			   const uint8_t *p, uint32_t size)
{
	uint32_t off = 0;

	while (off < size) {
		struct maia_fw_tlv tlv;
		uint32_t padded;

		if (size - off < sizeof(tlv)) {
			fw_guest_error(sim, "maia: firmware record header truncated at payload offset %u",
					 off);
			return MAIA_BOOT_ERR_PAYLOAD;
		}
		memcpy(&tlv, p + off, sizeof(tlv));
		off += sizeof(tlv);
		if (tlv.type == MAIA_FW_TLV_END)
			return MAIA_BOOT_OK;
		padded = ((uint32_t)tlv.length + 3u) & ~3u;
		if (padded > size - off) {
			fw_guest_error(sim, "maia: firmware record %u (%u bytes) overruns the payload",
					 tlv.type, tlv.length);
			return MAIA_BOOT_ERR_PAYLOAD;
		}
		if (!apply_tlv(sim, fw, tlv.type, p + off, tlv.length))
			return MAIA_BOOT_ERR_PAYLOAD;
		off += padded;
	}
	return MAIA_BOOT_OK;
}

/* Checks the image in buf; on success fills fw. Returns MAIA_BOOT_*. */
static uint32_t check_image(struct maia_sim *sim, const uint8_t *buf, uint32_t size,
			    struct maia_fw_header *hdr, struct fw_image_params *fw)
{
	uint32_t crc;

	memcpy(hdr, buf, sizeof(*hdr));
	if (hdr->magic != MAIA_FW_MAGIC) {
		fw_guest_error(sim, "maia: firmware magic 0x%08x, want 0x%08x",
				 hdr->magic, MAIA_FW_MAGIC);
		return MAIA_BOOT_ERR_MAGIC;
	}
	if (hdr->abi_major != MAIA_FW_ABI_MAJOR) {
		fw_guest_error(sim, "maia: firmware ABI %u.%u, device supports major %u",
				 hdr->abi_major, hdr->abi_minor, MAIA_FW_ABI_MAJOR);
		return MAIA_BOOT_ERR_ABI;
	}
	if (hdr->flags || hdr->reserved) {
		fw_guest_error(sim, "maia: firmware header flags 0x%x reserved 0x%x, want 0",
				 hdr->flags, hdr->reserved);
		return MAIA_BOOT_ERR_ABI;
	}
	/* A newer minor may grow the header; the payload follows it. */
	if (hdr->header_size < sizeof(*hdr) || hdr->header_size % 4u ||
	    hdr->header_size > size || hdr->payload_size != size - hdr->header_size) {
		fw_guest_error(sim, "maia: firmware sizes disagree: header %u + payload %u != image %u",
				 hdr->header_size, hdr->payload_size, size);
		return MAIA_BOOT_ERR_SIZE;
	}
	/* zlib computes the IEEE 802.3 CRC-32 the ABI names (maia/hw/boot.h). */
	crc = (uint32_t)crc32_z(0, buf + hdr->header_size, hdr->payload_size);
	if (crc != hdr->payload_crc32) {
		fw_guest_error(sim, "maia: firmware payload CRC 0x%08x, header says 0x%08x",
				 crc, hdr->payload_crc32);
		return MAIA_BOOT_ERR_CHECKSUM;
	}
	fw_image_params_defaults(fw);
	return parse_tlvs(sim, fw, buf + hdr->header_size, hdr->payload_size);
}

/* The firmware's start-up self-test: a wait that a device reset cuts short. */
static void selftest(struct maia_sim *sim, uint32_t ms)
{
	struct timespec slice = { 0, 1000000 };	/* 1 ms */

	fw_trace(sim, "boot: self-test for %u ms", ms);
	for (uint32_t i = 0; i < ms; i++) {
		if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE))
			return;
		nanosleep(&slice, NULL);
	}
}

void fw_boot_run(struct maia_sim *sim)
{
	struct maia_fw_header hdr;
	struct fw_image_params fw;
	uint32_t err = MAIA_BOOT_OK, size;
	uint64_t addr;
	uint8_t *buf = NULL;
	bool raise;

	pthread_mutex_lock(&sim->lock);
	addr = sim->boot.addr;
	size = sim->boot.size;
	pthread_mutex_unlock(&sim->lock);

	fw_trace(sim, "boot: fetching %u-byte image at 0x%llx", size, (unsigned long long)addr);
	if (size < sizeof(hdr) || size > MAIA_FW_MAX_SIZE) {
		fw_guest_error(sim, "maia: firmware image size %u outside %zu..%u",
				 size, sizeof(hdr), MAIA_FW_MAX_SIZE);
		err = MAIA_BOOT_ERR_SIZE;
	} else if (!(buf = malloc(size))) {
		err = MAIA_BOOT_ERR_DMA;
	} else if (sim->ops.dma_read(sim->opaque, addr, buf, size)) {
		fw_guest_error(sim, "maia: firmware fetch from 0x%llx (%u bytes) failed",
				 (unsigned long long)addr, size);
		err = MAIA_BOOT_ERR_DMA;
	} else {
		err = check_image(sim, buf, size, &hdr, &fw);
	}
	free(buf);
	if (err == MAIA_BOOT_OK && fw.selftest_ms)
		selftest(sim, fw.selftest_ms);

	pthread_mutex_lock(&sim->lock);
	sim->boot.pending = false;
	if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE)) {
		/* Reset won the race: it puts the device back to WAIT_FW. */
		pthread_mutex_unlock(&sim->lock);
		return;
	}
	if (err == MAIA_BOOT_OK) {
		sim->fw = fw;
		sim->power_cap_mw = fw.tdp_w * 1000u;
		sim->boot.fw_version = hdr.fw_version;
		sim->boot.fw_abi = ((uint32_t)hdr.abi_major << 16) | hdr.abi_minor;
		sim->boot.status = MAIA_BOOT_STATUS_READY;
		sim->boot.ready_ns = fw_now_ns(sim);
		/*
		 * The fabric ports come up with the firmware (fw_fabric_port.c).
		 * The fabric thread may have seen a kick while parked: wake it
		 * whatever fab->kicked says.
		 */
		fw_fabric_kick_locked(sim);
		pthread_cond_broadcast(&sim->fab_cond);
	} else {
		sim->boot.status = MAIA_BOOT_STATUS_FAILED;
	}
	sim->boot.error = err;
	raise = fw_int_assert_locked(sim, MAIA_INT_BOOT_DONE);
	pthread_mutex_unlock(&sim->lock);

	if (err == MAIA_BOOT_OK)
		fw_trace(sim, "boot: firmware '%s' %u.%u.%u ready (%u MHz, %u W)", fw.name,
			   MAIA_FW_VERSION_MAJOR(hdr.fw_version),
			   MAIA_FW_VERSION_MINOR(hdr.fw_version),
			   MAIA_FW_VERSION_PATCH(hdr.fw_version), fw.clock_mhz, fw.tdp_w);
	else
		fw_trace(sim, "boot: failed with error %u", err);
	if (raise)
		fw_raise(sim, MAIA_VEC_EVENT);
}
