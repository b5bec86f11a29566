/* SPDX-License-Identifier: MIT */
/*
 * libmaia: the userspace library for Maia accelerators.
 *
 * Every function returning int returns 0 (or a non-negative count) on
 * success and a negative errno on failure; maia_strerror() describes it.
 * Set MAIA_TRACE=1 in the environment to log every ioctl to stderr.
 * See Documentation/libmaia.rst.
 */
#ifndef LIBMAIA_H
#define LIBMAIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBMAIA_VERSION_MAJOR 1
#define LIBMAIA_VERSION_MINOR 0

struct maia_device;

/* What maia_device_info() reports; strings are NUL-terminated. */
struct maia_device_info {
	int index;			/* N in /dev/accel/accelN */
	char node[32];			/* "/dev/accel/accel0" */
	char pci_address[16];		/* "0000:00:03.0" */
	uint16_t vendor_id;
	uint16_t device_id;
	uint32_t revision;		/* hardware revision, major << 8 | minor */
	uint32_t link_speed_gts_x10;	/* PCIe link speed in GT/s times 10, 0 unknown */
	uint32_t link_width;		/* lanes, 0 unknown */
	uint32_t fw_version;		/* major << 16 | minor << 8 | patch */
	uint32_t fw_abi;		/* major << 16 | minor */
	uint64_t hbm_size;		/* bytes */
	uint32_t clusters;
	uint32_t tiles_per_cluster;
	uint32_t sram_kib;		/* per cluster */
	uint32_t num_queues;
	uint32_t dtypes;		/* bitmask of 1 << MAIA_DTYPE_* */
	uint32_t capabilities;		/* MAIA_CAP_* */
	char driver_version[32];	/* "maia 1.0.0" */
};

struct maia_ping_result {
	uint64_t echo;			/* cookie the device completed */
	uint64_t round_trip_ns;		/* kernel-measured doorbell to completion */
	uint64_t device_ns;		/* device clock at completion */
};

/* Number of Maia devices present, or a negative errno. */
int maia_device_count(void);

/* Open the index-th Maia device (in /dev/accel order). */
int maia_device_open(int index, struct maia_device **out);
/* Open by PCI address, "0000:00:03.0" or "00:03.0". */
int maia_device_open_pci(const char *pci_address, struct maia_device **out);
void maia_device_close(struct maia_device *dev);

/* The DRM fd, for poll() and for interop (syncobjs, dma-bufs). */
int maia_device_fd(const struct maia_device *dev);

int maia_device_info(struct maia_device *dev, struct maia_device_info *info);

/* One DRM_MAIA_PARAM_* value. */
int maia_query(struct maia_device *dev, uint32_t param, uint64_t *value);

/* Round trip through a hardware queue: doorbell, device, interrupt. */
int maia_ping(struct maia_device *dev, uint64_t cookie, struct maia_ping_result *result);

/* Name of a MAIA_DTYPE_* ("bf16", "mxfp8_e4m3", ...), or NULL. */
const char *maia_dtype_name(unsigned int dtype);

/* Text for a negative errno returned by this library. */
const char *maia_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* LIBMAIA_H */
