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

#include "maia/hw/model.h"	/* MAIA_MODEL_*: chip models */
#include "maia/hw/tensor.h"	/* device command and tensor descriptor formats */
#include "maia/hw/tvp.h"	/* the Tile Vector Processor's ISA and KERNEL command */

#ifdef __cplusplus
extern "C" {
#endif

#define LIBMAIA_VERSION_MAJOR 1
#define LIBMAIA_VERSION_MINOR 9

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
/*
 * Close the device. Buffer objects and command buffers still alive keep it
 * open: their CPU mappings, device VAs and dma-buf exports stay valid until
 * they are destroyed, and the last one closes the device. dev itself must
 * not be used after this call. The context (address space, queued jobs)
 * ends when the device file is closed, at once or with the last buffer
 * object; the kernel keeps buffers that running jobs or other importers
 * still use.
 */
void maia_device_close(struct maia_device *dev);

/* The DRM fd, for poll() and for interop (syncobjs, dma-bufs). */
int maia_device_fd(const struct maia_device *dev);

int maia_device_info(struct maia_device *dev, struct maia_device_info *info);

/* One DRM_MAIA_PARAM_* value. */
int maia_query(struct maia_device *dev, uint32_t param, uint64_t *value);

/* Round trip through a hardware queue: doorbell, device, interrupt. */
int maia_ping(struct maia_device *dev, uint64_t cookie, struct maia_ping_result *result);

/*
 * A Maia device as sysfs lists it (/sys/class/accel/accelN bound to the maia
 * driver), found without opening its node: what a monitoring user outside
 * the device group can still see.
 */
struct maia_device_entry {
	int index;			/* N in /dev/accel/accelN */
	char pci_address[16];		/* "0000:00:03.0" */
};

/*
 * Fill up to max entries, in /dev/accel order; returns how many it filled
 * (since 1.1).
 */
int maia_device_list(struct maia_device_entry *entries, int max);

/* ---- Telemetry (since 1.1) ------------------------------------------- */

/*
 * A snapshot of a device's telemetry, read from the driver's sysfs files on
 * the PCI device and its hwmon device (Documentation/telemetry.rst). Only
 * the values whose MAIA_TM_* bit is set in valid were provided (an older
 * driver or device lacks some); the others are 0. Counters count since the
 * device powered on and never go back; gauges are the driver's last value.
 * On hardware 1.8 (telemetry 1.2) the times, the power window and the
 * utilizations are modeled time (the device's window: 10 ms of it, not
 * 1 s); struct maia_telemetry_modeled has the rest.
 */
#define MAIA_TM_POWER			(1ull << 0)	/* power_uw */
#define MAIA_TM_POWER_INSTANT		(1ull << 1)	/* power_instant_uw */
#define MAIA_TM_POWER_CAP		(1ull << 2)	/* power_cap_uw */
#define MAIA_TM_ENERGY			(1ull << 3)	/* energy_uj */
#define MAIA_TM_TEMP			(1ull << 4)	/* temp_mc */
#define MAIA_TM_CLOCK			(1ull << 5)	/* clock_hz */
#define MAIA_TM_UTILIZATION		(1ull << 6)	/* utilization_pct */
#define MAIA_TM_TENSOR_UTILIZATION	(1ull << 7)	/* tensor_utilization_pct */
#define MAIA_TM_THROTTLE_REASONS	(1ull << 8)	/* throttle_reasons */
#define MAIA_TM_THROTTLE_COUNT		(1ull << 9)	/* throttle_count */
#define MAIA_TM_THROTTLED_TIME		(1ull << 10)	/* throttled_time_us */
#define MAIA_TM_BUSY_TIME		(1ull << 11)	/* busy_time_us */
#define MAIA_TM_TENSOR_BUSY_TIME	(1ull << 12)	/* tensor_busy_time_us */
#define MAIA_TM_VECTOR_BUSY_TIME	(1ull << 13)	/* vector_busy_time_us */
#define MAIA_TM_DMA_BUSY_TIME		(1ull << 14)	/* dma_busy_time_us */
#define MAIA_TM_HBM_READ		(1ull << 15)	/* hbm_bytes_read */
#define MAIA_TM_HBM_WRITTEN		(1ull << 16)	/* hbm_bytes_written */
#define MAIA_TM_DMA_BYTES		(1ull << 17)	/* dma_bytes */
#define MAIA_TM_FLOPS			(1ull << 18)	/* flops */
#define MAIA_TM_COMMANDS		(1ull << 19)	/* commands */
#define MAIA_TM_HBM_USED		(1ull << 20)	/* hbm_used_bytes */
#define MAIA_TM_HBM_FREE		(1ull << 21)	/* hbm_free_bytes */
#define MAIA_TM_HBM_TOTAL		(1ull << 22)	/* hbm_total_bytes */
#define MAIA_TM_RESET_COUNT		(1ull << 23)	/* reset_count */
#define MAIA_TM_TOPOLOGY		(1ull << 24)	/* clusters, tiles_per_cluster */
#define MAIA_TM_TILES			(1ull << 25)	/* num_tiles, tile_busy_us */
#define MAIA_TM_ECC_CE			(1ull << 26)	/* ecc_ce_count (hardware 1.2) */
#define MAIA_TM_ECC_UE			(1ull << 27)	/* ecc_ue_count (hardware 1.2) */
#define MAIA_TM_RETIRED_PAGES		(1ull << 28)	/* retired_pages */
#define MAIA_TM_RETIRED_PENDING		(1ull << 29)	/* retired_pages_pending */

#define MAIA_TELEMETRY_MAX_TILES	1024

struct maia_telemetry {
	uint64_t valid;			/* MAIA_TM_* bits */
	int index;			/* N in /dev/accel/accelN */
	char pci_address[16];
	uint64_t timestamp_ns;		/* CLOCK_MONOTONIC when the read began */
	/* hwmon */
	uint64_t power_uw;		/* power1_average: average over 1 s, uW */
	uint64_t power_instant_uw;	/* power1_input: last 10 ms period, uW */
	uint64_t power_cap_uw;		/* power1_cap, uW */
	uint64_t energy_uj;		/* energy1_input, counter, uJ */
	int64_t temp_mc;		/* temp1_input, die, m°C */
	uint64_t clock_hz;		/* freq1_input, tensor clock, Hz */
	/* sysfs attributes of the PCI device */
	uint64_t utilization_pct;	/* any command ran, % of the last second */
	uint64_t tensor_utilization_pct; /* a matrix operation ran, % of the last second */
	uint64_t throttle_reasons;	/* MAIA_THROTTLE_* bits, 0 at nominal clock */
	uint64_t throttle_count;	/* clock step-downs, counter */
	uint64_t throttled_time_us;	/* clock below nominal, counter */
	uint64_t busy_time_us;		/* counters: any command ran ... */
	uint64_t tensor_busy_time_us;	/* ... a matrix operation */
	uint64_t vector_busy_time_us;	/* ... another tensor-engine operation */
	uint64_t dma_busy_time_us;	/* ... a DMA copy or fill */
	uint64_t hbm_bytes_read;	/* counters */
	uint64_t hbm_bytes_written;
	uint64_t dma_bytes;
	uint64_t flops;
	uint64_t commands;
	uint64_t hbm_used_bytes;	/* gauges: HBM allocated, free, in all */
	uint64_t hbm_free_bytes;
	uint64_t hbm_total_bytes;
	uint64_t reset_count;		/* device resets since the driver loaded */
	uint32_t clusters;		/* topology */
	uint32_t tiles_per_cluster;
	/*
	 * Busy time of each tile, us, counters: tile t is tile
	 * t % tiles_per_cluster of cluster t / tiles_per_cluster. At most
	 * MAIA_TELEMETRY_MAX_TILES (what the device has at most).
	 */
	uint32_t num_tiles;
	uint64_t tile_busy_us[MAIA_TELEMETRY_MAX_TILES];
	/* HBM ECC (Documentation/reliability.rst) */
	uint64_t ecc_ce_count;		/* corrected errors since power-on, counter */
	uint64_t ecc_ue_count;		/* uncorrectable errors (bad pages) since power-on, counter */
	uint64_t retired_pages;		/* HBM pages out of use for good, gauge */
	uint64_t retired_pages_pending;	/* bad pages retired once their owner frees them, gauge */
};

/*
 * Read a snapshot of the Maia device at pci_address ("0000:00:03.0" or
 * "00:03.0") from sysfs, without opening its node (no device access or
 * context needed). -ENODEV if no device bound to the maia driver has that
 * address; a value the driver does not provide is not an error (its
 * MAIA_TM_* bit stays clear). MAIA_SYSFS_ROOT (default /sys) points the
 * reads at another tree.
 */
int maia_telemetry_read(const char *pci_address, struct maia_telemetry *t);
/* The same for an open device. */
int maia_device_telemetry(struct maia_device *dev, struct maia_telemetry *t);

/* ---- Chip model and modeled telemetry (since 1.8) --------------------- */

/*
 * The chip model a device is built as and the parameters of its time model
 * (Documentation/hw/time-model.rst; driver minor 7, hardware 1.8). Job
 * durations (maia_job_times), the TIMESTAMP command and the telemetry of
 * such a device are modeled time: how long the work takes on that chip,
 * the same on any host. Bandwidths in MB/s (10^6 bytes/s), rates in
 * GFLOP/s (a multiply-add counting two).
 */
struct maia_device_model {
	uint32_t model;			/* MAIA_MODEL_* (maia/hw/model.h) */
	char name[16];			/* "maia100", "maia200" */
	uint64_t hbm_bytes;		/* HBM capacity */
	uint32_t hbm_mbps;		/* HBM bandwidth */
	uint32_t host_mbps;		/* host link (PCIe), each direction */
	uint32_t link_mbps;		/* one fabric port, each direction */
	uint32_t link_lat_ns;		/* one fabric hop */
	uint32_t cmd_ns;		/* fixed cost of a command */
	uint32_t job_ns;		/* fixed cost of a job */
	uint32_t vector_gflops;		/* vector (non-matrix) peak, FP32 */
	uint32_t sram_kib;		/* on-chip SRAM, whole chip */
	uint32_t design_power_mw;	/* largest power cap */
	uint32_t peak_gflops[16];	/* dense tensor peak by MAIA_DTYPE_*, 0: none */
};

/*
 * The model of an open device (GET_PARAM). -EOPNOTSUPP when the driver
 * (before minor 7) or the device (before hardware 1.8) has none.
 */
int maia_device_model(struct maia_device *dev, struct maia_device_model *m);
/*
 * The same from sysfs (the model/ directory of the PCI device), without
 * opening the device: for monitoring. -ENODEV for no Maia device at that
 * address, -EOPNOTSUPP for one without a model.
 */
int maia_model_read(const char *pci_address, struct maia_device_model *m);

/*
 * Telemetry of the time model (telemetry 1.2, hardware 1.8), beside struct
 * maia_telemetry: the window gauges are over the device's window of
 * modeled time (10 ms), the counters count modeled time since power-on.
 * Only values whose MAIA_TMM_* bit is in valid were provided.
 */
#define MAIA_TMM_MODELED_TIME		(1ull << 0)	/* modeled_time_ns */
#define MAIA_TMM_PEAK_TIME		(1ull << 1)	/* peak_time_ns */
#define MAIA_TMM_HBM_UTILIZATION	(1ull << 2)	/* hbm_utilization_pct */
#define MAIA_TMM_MFU			(1ull << 3)	/* mfu_pct */
#define MAIA_TMM_FLOPS			(1ull << 4)	/* flops */
#define MAIA_TMM_HBM_BYTES		(1ull << 5)	/* hbm_bytes */
#define MAIA_TMM_BUSY_TIME		(1ull << 6)	/* busy_time_us */

struct maia_telemetry_modeled {
	uint64_t valid;			/* MAIA_TMM_* bits */
	uint64_t timestamp_ns;		/* CLOCK_MONOTONIC when the read began */
	uint64_t modeled_time_ns;	/* counter: modeled time since power-on, ns */
	uint64_t peak_time_ns;		/* counter: what the flops done take at peak, ns */
	uint64_t hbm_utilization_pct;	/* gauge: HBM bandwidth saturation over the window */
	uint64_t mfu_pct;		/* gauge: model flops utilization over the window */
	uint64_t flops;			/* counter, as maia_telemetry.flops */
	uint64_t hbm_bytes;		/* counter: HBM bytes read + written */
	uint64_t busy_time_us;		/* counter: modeled time any command ran */
};

/* From sysfs, as maia_telemetry_read(); the same errors. */
int maia_telemetry_read_modeled(const char *pci_address, struct maia_telemetry_modeled *t);

/* Rates between two snapshots of one device, over the modeled time between them. */
struct maia_modeled_rates {
	double modeled_s;		/* modeled time between the snapshots */
	double tflops;			/* achieved TFLOP/s */
	double mfu;			/* model flops utilization, 0..1 */
	double hbm_gbps;		/* HBM traffic, GB/s */
	double busy;			/* fraction of it any command ran, 0..1 */
};

/*
 * Rates from a to b (b taken later). -EAGAIN when no modeled time passed
 * (the device did nothing in between), -EINVAL when a value is missing or
 * a counter went back.
 */
int maia_modeled_rates(const struct maia_telemetry_modeled *a,
		       const struct maia_telemetry_modeled *b, struct maia_modeled_rates *r);

/* ---- Buffer objects -------------------------------------------------- */

struct maia_bo;

enum maia_placement {
	MAIA_BO_HBM = 1,	/* device memory; CPU access through the BAR, write-combined */
	MAIA_BO_HOST = 2,	/* host memory the device reaches by DMA */
};

/*
 * Create a buffer object and map it into the device address space at an
 * address libmaia picks (maia_bo_va). size is rounded up to 4 KiB.
 */
int maia_bo_create(struct maia_device *dev, uint64_t size, enum maia_placement placement,
		   struct maia_bo **out);
/* Unmap from the device and free (the kernel keeps it while jobs use it). */
void maia_bo_destroy(struct maia_bo *bo);
/* CPU pointer to the contents (mapped on first use). */
int maia_bo_map(struct maia_bo *bo, void **ptr);
uint64_t maia_bo_va(const struct maia_bo *bo);
uint64_t maia_bo_size(const struct maia_bo *bo);
uint32_t maia_bo_handle(const struct maia_bo *bo);
/*
 * dma-buf export and import (PRIME). The importer gets its own maia_bo,
 * mapped at its own VA, also when importing into the exporting device.
 */
int maia_bo_export(struct maia_bo *bo, int *dmabuf_fd);
int maia_bo_import(struct maia_device *dev, int dmabuf_fd, struct maia_bo **out);

/* ---- Command buffers ------------------------------------------------- */

/*
 * A command buffer in the device format (maia/hw/cmd.h, maia/hw/tensor.h),
 * built in a host buffer object. Append commands, then submit. Append
 * functions return 0 or -ENOSPC when the buffer is full (nothing appended).
 */
struct maia_cmdbuf;

int maia_cmdbuf_create(struct maia_device *dev, uint32_t capacity, struct maia_cmdbuf **out);
void maia_cmdbuf_destroy(struct maia_cmdbuf *cb);
void maia_cmdbuf_reset(struct maia_cmdbuf *cb);
uint32_t maia_cmdbuf_size(const struct maia_cmdbuf *cb);
/* Append any device command; cmd->size bytes are copied. */
int maia_cmd_raw(struct maia_cmdbuf *cb, const void *cmd);
int maia_cmd_nop(struct maia_cmdbuf *cb);
int maia_cmd_copy(struct maia_cmdbuf *cb, uint64_t dst, uint64_t src, uint64_t bytes);
int maia_cmd_copy_2d(struct maia_cmdbuf *cb, uint64_t dst, uint64_t dst_stride, uint64_t src,
		     uint64_t src_stride, uint64_t width, uint32_t height);
int maia_cmd_fill(struct maia_cmdbuf *cb, uint64_t dst, uint64_t bytes, uint32_t pattern);
int maia_cmd_fence_write(struct maia_cmdbuf *cb, uint64_t addr, uint64_t value);
int maia_cmd_timestamp(struct maia_cmdbuf *cb, uint64_t addr);
int maia_cmd_sem_signal(struct maia_cmdbuf *cb, uint32_t index, uint32_t value);
int maia_cmd_sem_wait(struct maia_cmdbuf *cb, uint32_t index, uint32_t value,
		      uint32_t timeout_us);

/* ---- TVP programs (since 1.9; Documentation/tvp-asm.rst) ------------- */

/*
 * Assemble source text (Documentation/tvp-asm.rst) into instruction words
 * (maia/hw/tvp.h), malloc'd: free() them. 0, or -EINVAL with "line N:
 * message" in maia_last_error(); what it emits passes the device's
 * validation.
 */
int maia_tvp_assemble(const char *source, struct maia_tvp_insn **insns, uint32_t *count);
/*
 * Disassemble into malloc'd text (free() it), one instruction per line,
 * that assembles back to the same words; branch targets as labels
 * "L<index>:". 0, or -EINVAL for a word the device would refuse (the
 * message names its index).
 */
int maia_tvp_disassemble(const struct maia_tvp_insn *insns, uint32_t count, char **text);

/* A TVP program in device memory, mapped in the device's context. */
struct maia_kernel;

/* Copy count instruction words (1 .. MAIA_TVP_MAX_INSNS) to the device. */
int maia_kernel_create(struct maia_device *dev, const struct maia_tvp_insn *insns,
		       uint32_t count, struct maia_kernel **out);
/* Free it (the kernel keeps the memory while queued jobs use it). */
void maia_kernel_destroy(struct maia_kernel *k);
uint64_t maia_kernel_va(const struct maia_kernel *k);
uint32_t maia_kernel_count(const struct maia_kernel *k);
/*
 * Append a MAIA_OP_KERNEL command: one program instance per point of
 * grid[0] x grid[1] x grid[2] (each >= 1), args (device VAs, integers, or
 * binary32 bits zero-extended) in s1 .. s<nargs> (nargs <=
 * MAIA_TVP_MAX_ARGS), budget instructions per instance (0 = default).
 */
int maia_cmd_kernel(struct maia_cmdbuf *cb, const struct maia_kernel *k,
		    const uint32_t grid[3], const uint64_t *args, uint32_t nargs,
		    uint32_t budget);

/* Tensor descriptor for a contiguous tensor (row-major, innermost last). */
int maia_tensor_init(struct maia_tensor_desc *desc, uint64_t va, unsigned int dtype,
		     unsigned int rank, const uint32_t *shape);
/* Set a block format's scale address (MX dtypes) or a per-tensor scale (INT8, FP8). */
int maia_tensor_set_scale_addr(struct maia_tensor_desc *desc, uint64_t scale_va);
int maia_tensor_set_scale(struct maia_tensor_desc *desc, float scale);
/* Elements in the tensor's shape. */
uint64_t maia_tensor_elems(const struct maia_tensor_desc *desc);
/*
 * Bytes a contiguous tensor of elems elements of dtype occupies: data bytes
 * (MX formats: packed elements, plus microexponent bits for MX9/6/4) and the
 * bytes of its block scales (0 for non-block formats). elems must be a
 * multiple of the block size for block formats.
 */
int maia_dtype_bytes(unsigned int dtype, uint64_t elems, uint64_t *data_bytes,
		     uint64_t *scale_bytes);

/*
 * Tensor operations (maia/hw/tensor.h and Documentation/tensor-engine.rst
 * for the semantics). Each builder checks its arguments as the device
 * would (ranks, shapes, dtypes, flags) and returns -EINVAL with a message in
 * maia_last_error() rather than emit a command the device would reject.
 * Floating-point arguments are binary32.
 */

/* GEMM: C = alpha * op(A) * op(B) + beta * C; flags MAIA_GEMM_F_* except BIAS. */
int maia_cmd_gemm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *a,
		  const struct maia_tensor_desc *b, const struct maia_tensor_desc *c,
		  float alpha, float beta, uint32_t flags);

/* Everything MAIA_OP_GEMM can do; bias (rank 1, N) may be NULL. */
struct maia_gemm_args {
	const struct maia_tensor_desc *a, *b, *c;
	const struct maia_tensor_desc *bias;	/* or NULL */
	float alpha;				/* 0 is taken as 1 */
	float beta;
	uint32_t activation;			/* MAIA_ACT_* */
	uint32_t flags;				/* MAIA_GEMM_F_TRANS_A/B, SAT */
};

/* C = act(alpha * op(A) * op(B) + beta * C + bias), rank 2 or 3 (strided batch). */
int maia_cmd_gemm_ex(struct maia_cmdbuf *cb, const struct maia_gemm_args *args);

/*
 * Pointer-array batched GEMM: matrix i of A, B, C at the device VAs stored
 * in the __u64 arrays at a_ptrs, b_ptrs, c_ptrs (device VAs, 8-byte
 * aligned). The descriptors are rank 2 with addr 0.
 */
int maia_cmd_gemm_batched(struct maia_cmdbuf *cb, const struct maia_gemm_args *args,
			  uint64_t a_ptrs, uint64_t b_ptrs, uint64_t c_ptrs,
			  uint32_t batch_count);

/* out = x + y / x * y elementwise; flags MAIA_ELTWISE_F_SAT. */
int maia_cmd_add(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		 const struct maia_tensor_desc *y, const struct maia_tensor_desc *out,
		 uint32_t flags);
int maia_cmd_mul(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		 const struct maia_tensor_desc *y, const struct maia_tensor_desc *out,
		 uint32_t flags);
/* out = alpha * x + beta */
int maia_cmd_scale(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		   const struct maia_tensor_desc *out, float alpha, float beta);
/* out = act(x); activation is a MAIA_ACT_* other than NONE. */
int maia_cmd_activation(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			const struct maia_tensor_desc *out, uint32_t activation);
/* out = softmax(scale * x) over the innermost dimension; flags MAIA_SOFTMAX_F_*. */
int maia_cmd_softmax(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		     const struct maia_tensor_desc *out, float scale, int32_t causal_offset,
		     uint32_t flags);
/* Layer norm over the innermost dimension; gamma and beta both NULL for no affine. */
int maia_cmd_layernorm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		       const struct maia_tensor_desc *gamma, const struct maia_tensor_desc *beta,
		       const struct maia_tensor_desc *out, float eps);
/* RMS norm over the innermost dimension; gamma NULL for no affine. */
int maia_cmd_rmsnorm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		     const struct maia_tensor_desc *gamma, const struct maia_tensor_desc *out,
		     float eps);
/* out = softmax(scale * Q K^T [+ causal mask]) V, rank 4; scale 0 = 1/sqrt(D). */
int maia_cmd_attention(struct maia_cmdbuf *cb, const struct maia_tensor_desc *q,
		       const struct maia_tensor_desc *k, const struct maia_tensor_desc *v,
		       const struct maia_tensor_desc *out, float scale, uint32_t flags);
/*
 * Quantize x into out's format; the device computes the MX block scales, or
 * with MAIA_QUANT_F_DYNAMIC a per-tensor INT8/FP8 scale that it also writes
 * as binary32 at scale_out (else scale_out must be 0).
 */
int maia_cmd_quantize(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		      const struct maia_tensor_desc *out, uint64_t scale_out, uint32_t flags);
/* Convert a quantized x to out's (unquantized) format. */
int maia_cmd_dequantize(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			const struct maia_tensor_desc *out);
/* Strided copy with conversion, out's scale as given (MAIA_OP_COPY). */
int maia_cmd_tensor_copy(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			 const struct maia_tensor_desc *out);
/* Reduce (MAIA_REDUCE_*) over the dimensions set in axes; out keeps them as 1. */
int maia_cmd_reduce(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		    const struct maia_tensor_desc *out, uint32_t op, uint32_t axes);
/* out dimension d = x dimension perm[d]; perm has x->rank entries. */
int maia_cmd_transpose(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		       const struct maia_tensor_desc *out, const uint8_t *perm);

/* ---- Submission ------------------------------------------------------ */

struct maia_submit_opts {
	uint32_t priority;		/* DRM_MAIA_PRIO_*, default NORMAL */
	const uint32_t *in_syncobjs;	/* wait for these first */
	uint32_t num_in_syncobjs;
	uint32_t out_syncobj;		/* receives the job's fence, or 0 */
	/*
	 * If non-NULL, receives a sync_file fd for the job's fence: poll() it
	 * (POLLIN when the job is done), pass it to maia_fence_wait(), or to
	 * another driver; close() it when done.
	 */
	int *out_fence_fd;
};

struct maia_job_status {
	uint32_t status;		/* DRM_MAIA_JOB_* */
	uint32_t device_status;		/* MAIA_STATUS_* */
	uint32_t error_offset;		/* failing command's offset */
};

/*
 * How maia_submit() reaches the device (since 1.3). AUTO: a job without
 * dependencies, fences or a non-NORMAL priority goes through a user queue
 * (driver 1.4: ring and doorbell mapped into the process, no system call)
 * when the driver offers one and MAIA_USERQ is not "0"; everything else
 * through the SUBMIT ioctl. KERNEL: always the ioctl. NORMAL jobs run in
 * submission order whichever path they take.
 */
enum maia_submit_path {
	MAIA_SUBMIT_AUTO = 0,
	MAIA_SUBMIT_KERNEL = 1,
};

int maia_device_set_submit_path(struct maia_device *dev, enum maia_submit_path path);

/* Submit; *seqno identifies the job for maia_wait. opts may be NULL. */
int maia_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
		const struct maia_submit_opts *opts, uint64_t *seqno);
/* Wait up to timeout_ns (relative); -ETIME when it passes. */
int maia_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
	      struct maia_job_status *status);
/*
 * How long a job took (since 1.8): device_ns as maia_wait's job would
 * report it (modeled time on the chip on hardware 1.8, else the device
 * clock), host_ns host time from its submission to its completion handled.
 * valid: MAIA_JOB_TIMES_DEVICE and/or MAIA_JOB_TIMES_HOST (driver minor 7)
 * for what was reported.
 */
#define MAIA_JOB_TIMES_DEVICE	(1u << 0)
#define MAIA_JOB_TIMES_HOST	(1u << 1)
struct maia_job_times {
	uint32_t valid;
	uint64_t device_ns;
	uint64_t host_ns;
};

/*
 * maia_wait(), and the job's times. A user-queue job reports its device
 * time from its completion entry, its host time from maia_submit to
 * maia_wait's seeing it complete.
 */
int maia_wait_times(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		    struct maia_job_status *status, struct maia_job_times *times);

/* Submit, wait, and turn a failed job into a negative errno (-EIO, -EFAULT, -ETIMEDOUT). */
int maia_run(struct maia_device *dev, struct maia_cmdbuf *cb, int64_t timeout_ns,
	     struct maia_job_status *status);

/*
 * Wait for a sync_file fd (from maia_submit_opts.out_fence_fd or
 * maia_syncobj_export) to signal: 0 when it has, -ETIME when timeout_ns
 * (relative; negative waits forever) passes first.
 */
int maia_fence_wait(int fence_fd, int64_t timeout_ns);

/* DRM syncobjs, for dependencies between jobs (maia_submit_opts). */
int maia_syncobj_create(struct maia_device *dev, uint32_t *handle);
void maia_syncobj_destroy(struct maia_device *dev, uint32_t handle);
/* The syncobj's current fence as a sync_file fd. */
int maia_syncobj_export(struct maia_device *dev, uint32_t handle, int *fence_fd);
/* Wait on the syncobj's fence (relative timeout); -ETIME when it passes. */
int maia_syncobj_wait(struct maia_device *dev, uint32_t handle, int64_t timeout_ns);

struct maia_context_status {
	bool faulted;
	uint32_t asid;
	uint64_t fault_addr;
	uint32_t fault_access;		/* MAIA_ACCESS_READ / WRITE */
	uint64_t device_resets;		/* since the device was opened */
	/*
	 * false when faulted but the device's fault record described another
	 * context's fault (two faults close together): fault_addr and
	 * fault_access are then 0. Since 1.1.
	 */
	bool fault_addr_known;
};

int maia_context_status(struct maia_device *dev, struct maia_context_status *st);

/* ---- Fabric (since 1.2, driver 1.3; Documentation/libmaia.rst) ------ */

/* One fabric port: its link and its counters (since the device powered on). */
struct maia_fabric_port {
	bool up;			/* peer discovered, data flows */
	uint64_t peer_serial;		/* valid while up */
	uint32_t peer_port;
	uint32_t mtu;			/* data bytes per transport message */
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
	uint64_t retransmits, rx_drops, nak_tx, nak_rx, tx_errors, injected_drops;
	uint32_t link_ups, link_downs, dead_peer;
};

/* Fabric ports of the device (0 without a fabric) and its fabric serial. */
int maia_fabric_ports(struct maia_device *dev, unsigned int *ports, uint64_t *serial);
int maia_fabric_port(struct maia_device *dev, unsigned int port, struct maia_fabric_port *info);
/*
 * The same from sysfs (fabric/portN/ on the PCI device), without opening
 * the device: for monitoring. -ENOENT when the device has no such port.
 */
int maia_fabric_read(const char *pci_address, unsigned int port, struct maia_fabric_port *info);

/*
 * How one port's link recovered from lost frames (since 1.7; driver minor
 * 6, hardware 1.6), beside struct maia_fabric_port's retransmits.
 */
struct maia_fabric_port_gaps {
	uint64_t link_nak_tx;		/* NAK frames sent: gaps named to the peer */
	uint64_t rx_held;		/* frames that came after a gap, held until it filled */
};

/* -EOPNOTSUPP when the driver or the device is older. */
int maia_fabric_port_gaps(struct maia_device *dev, unsigned int port,
			  struct maia_fabric_port_gaps *gaps);
/* The same from sysfs, as maia_fabric_read(). */
int maia_fabric_read_gaps(const char *pci_address, unsigned int port,
			  struct maia_fabric_port_gaps *gaps);

/*
 * Failover of one port (hardware 1.10; Documentation/hw/fabric.rst,
 * "Failover"): what collectives routed around it and why, from sysfs as
 * maia_fabric_read(). -EOPNOTSUPP when the driver or the device is older.
 */
#define MAIA_FABRIC_FO_DOWN		(1u << 0)	/* link down */
#define MAIA_FABRIC_FO_LATENCY		(1u << 1)	/* modeled latency over the threshold */
#define MAIA_FABRIC_FO_LOSS		(1u << 2)	/* loss at or over the threshold */

struct maia_fabric_failover {
	uint32_t failovers;		/* collectives routed around this port (wraps) */
	uint32_t state;			/* MAIA_FABRIC_FO_*: why it is avoided now; 0: not */
	uint64_t relayed;		/* relayed chunks sent on out of it */
	uint32_t resent;		/* chunks re-sent the other way as it went down */
	uint32_t relay_drops;		/* relayed chunks in on it with no way on (a 2nd cut) */
	uint32_t latency_ns;		/* modeled latency of its cable */
	uint32_t loss_ppm;		/* gaps the peer named per 10^6 frames sent, last window */
	uint32_t threshold_latency_ns;	/* the device's thresholds (0: that trigger off) */
	uint32_t threshold_loss_ppm;
};

int maia_fabric_read_failover(const char *pci_address, unsigned int port,
			      struct maia_fabric_failover *fo);

/*
 * Retransmit timeouts of one port that were spurious (the peer had the
 * frame: it was late, not lost) and undone, a count that wraps, from sysfs
 * (spurious_rto) as maia_fabric_read(). -EOPNOTSUPP when the driver or the
 * device (hardware 1.12) is older.
 */
int maia_fabric_read_spurious_rto(const char *pci_address, unsigned int port,
				  uint32_t *count);

/* What peers may do in a window (combine with |). */
#define MAIA_FABRIC_REMOTE_READ		(1u << 0)
#define MAIA_FABRIC_REMOTE_WRITE	(1u << 1)

/*
 * Let fabric peers reach bytes [offset, offset + size) of bo (page-aligned)
 * with remote writes and reads; *key is what they name. The window closes
 * with maia_fabric_window_close(), with the BO and with the device.
 */
int maia_fabric_window_open(struct maia_bo *bo, uint64_t offset, uint64_t size,
			    uint32_t access, uint32_t *key);
int maia_fabric_window_close(struct maia_device *dev, uint32_t key);

/*
 * Remote write over `port` into the peer's window `key` at remote_offset:
 * size bytes from src_va of this device. The command ends once the data
 * has landed on the peer.
 */
int maia_cmd_fabric_write(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
			  uint64_t remote_offset, uint64_t src_va, uint64_t size);
/* The same, then sem[sem_index] += sem_value in the window's address space. */
int maia_cmd_fabric_write_sem(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
			      uint64_t remote_offset, uint64_t src_va, uint64_t size,
			      uint32_t sem_index, uint32_t sem_value);
/* Remote read: size bytes of the peer's window key at remote_offset to dst_va. */
int maia_cmd_fabric_read(struct maia_cmdbuf *cb, uint32_t port, uint32_t key,
			 uint64_t remote_offset, uint64_t dst_va, uint64_t size);
/*
 * A collective run by the devices of a ring together (maia/hw/cmd.h,
 * struct maia_cmd_collective: fill everything but hdr, of which only the
 * flag MAIA_COLL_F_REACH is kept: set it only for hardware 1.10 or later).
 */
int maia_cmd_collective(struct maia_cmdbuf *cb, const struct maia_cmd_collective *c);

/*
 * ---- Collectives (since 1.2; Documentation/collectives.rst) ------------
 *
 * NCCL-shaped. A communicator is one rank of a ring of devices cabled port 0
 * -> next rank's port 1. Rank 0 makes an id, every process passes it to
 * maia_comm_init_rank() (or one process opens all ranks with
 * maia_comm_init_all()); every rank then calls the same collectives in the
 * same order. Buffers are device VAs of the rank's device. Calls are
 * asynchronous: maia_comm_sync() waits, maia_comm_fence() gives the last
 * call's fence as a sync_file. Types MAIA_DTYPE_FP32 and MAIA_DTYPE_BF16
 * (reduced in FP32), reductions MAIA_REDOP_SUM/MAX/MIN (maia/hw/cmd.h).
 * Environment: MAIA_COMM_DEBUG=1 logs one line per collective;
 * MAIA_COMM_TIMEOUT_MS (default 10000) is how long a device waits for a
 * peer before the collective fails with an error naming the rank, the step
 * and the port; MAIA_COMM_ALGO (auto, ring or gather-reduce; since 1.4)
 * sets every new communicator's all-reduce algorithm, like NCCL_ALGO.
 */
#define MAIA_COMM_ID_BYTES 64
struct maia_comm_id {
	uint8_t bytes[MAIA_COMM_ID_BYTES];
};
struct maia_comm;

int maia_comm_get_unique_id(struct maia_comm_id *id);
/*
 * The index-th id derived from @base: every process holding the same base
 * gets the same id for the same index, with no message between them, and
 * different indexes (and the base itself) give different communicators.
 * One id handed out at start (a cluster launcher's, say) thus yields as many
 * communicators as a program needs, e.g. a new one after a failure.
 * -EINVAL if @base is not from maia_comm_get_unique_id() or derived.
 */
int maia_comm_id_derive(const struct maia_comm_id *base, uint32_t index,
			struct maia_comm_id *out);
/*
 * An id makes one communicator, as NCCL's (since 1.5: a second init with the
 * same id on the same device in this process is refused with -EINVAL; since
 * 1.6 a collective of another process's communicator with the same id fails
 * with -EBUSY on a device where one of the first's runs).
 */
int maia_comm_init_rank(struct maia_comm **comm, struct maia_device *dev, int nranks,
			const struct maia_comm_id *id, int rank);
/* devs[i] becomes rank i; checks that they are cabled as a ring in that order. */
int maia_comm_init_all(struct maia_comm **comms, struct maia_device *const *devs, int ndev);
void maia_comm_destroy(struct maia_comm *comm);
int maia_comm_count(const struct maia_comm *comm);
int maia_comm_rank(const struct maia_comm *comm);

int maia_all_reduce(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
		    uint64_t count, unsigned int dtype, unsigned int redop);
int maia_all_gather(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
		    uint64_t send_count, unsigned int dtype);
int maia_reduce_scatter(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
			uint64_t recv_count, unsigned int dtype, unsigned int redop);
int maia_broadcast(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
		   uint64_t count, unsigned int dtype, int root);
/* count elements to and from each rank. */
int maia_all_to_all(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
		    uint64_t count, unsigned int dtype);
/* Between these, a thread's calls on each communicator go into one job. */
int maia_group_start(void);
int maia_group_end(void);

/* Wait (relative timeout) for every call so far; the first failure, if any. */
int maia_comm_sync(struct maia_comm *comm, int64_t timeout_ns);
/* The last call's fence as a sync_file fd (close it). */
int maia_comm_fence(struct maia_comm *comm, int *fence_fd);
/* The first failure so far without waiting (0 if none) and its message. */
int maia_comm_async_error(struct maia_comm *comm, const char **message);
/* Refuse further calls; maia_comm_destroy() then does not wait. */
int maia_comm_abort(struct maia_comm *comm);
/*
 * The all-reduce algorithm of later calls (since 1.4): MAIA_COLL_ALGO_AUTO
 * (the device picks gather-reduce for small counts, the ring otherwise),
 * _RING or _GATHER_REDUCE (a call it cannot take, over 64 KiB of inputs of
 * all ranks together, then fails with -EINVAL). Every rank must make the
 * same choice, as with NCCL_ALGO; results have the same bits either way.
 */
int maia_comm_set_algorithm(struct maia_comm *comm, unsigned int algo);

/* Name of a DRM_MAIA_JOB_* status. */
const char *maia_job_status_name(uint32_t status);

/*
 * What a MAIA_STATUS_* (maia_job_status.device_status) means, e.g.
 * "kernel-invalid: the TVP program failed the device's validation"
 * (since 1.9); "unknown status" for a value it does not know.
 */
const char *maia_device_status_name(uint32_t device_status);

/* Name of a MAIA_DTYPE_* ("bf16", "mxfp8_e4m3", ...), or NULL. */
const char *maia_dtype_name(unsigned int dtype);

/* Text for a negative errno returned by this library. */
const char *maia_strerror(int err);

/*
 * What the last failing libmaia call in this thread said about why it
 * failed ("maia_cmd_gemm: A is 64x32 but B is 16x64"), or "" if none.
 * The messages also go to stderr when MAIA_TRACE or MAIA_DEBUG is set.
 */
const char *maia_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBMAIA_H */
