/* SPDX-License-Identifier: MIT WITH Linux-syscall-note */
/*
 * Maia accelerator kernel uAPI (DRM accel, /dev/accel/accelN).
 *
 * Conventions (Documentation/process/botching-up-ioctls.rst): every struct is
 * a multiple of 8 bytes, user pointers are __u64, pads and unknown flags must
 * be zero or the ioctl fails with -EINVAL, and on failure no output field is
 * written. Numbers are only ever appended. This header stands alone: every
 * value the kernel returns is defined here (DRM_MAIA_*), not in the device's
 * hardware headers.
 *
 * Growth: a struct only ever gains fields at its end, whose zero value means
 * the behaviour before them, and each growth bumps MAIA_DRIVER_MINOR. A
 * struct from older userspace (shorter, but at least the first size of that
 * ioctl) is zero-extended by the DRM core and only its own bytes are written
 * back. A struct longer than this kernel's fails with -EINVAL: the kernel
 * could not check that the fields it does not know are zero. Userspace that
 * uses a new field checks the driver's minor version (DRM_IOCTL_VERSION)
 * first. See Documentation/uapi.rst.
 */
#ifndef _UAPI_MAIA_ACCEL_H_
#define _UAPI_MAIA_ACCEL_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define MAIA_DRIVER_NAME		"maia"
#define MAIA_DRIVER_MAJOR		1
/*
 * Minor versions: what each one added.
 *  0: the first uAPI.
 *  1: drm_maia_wait.device_time_ns; DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN.
 *  2: DRM_MAIA_DEVICE_HBM_ECC.
 *  3: the fabric: DRM_MAIA_CAP_FABRIC, DRM_MAIA_PARAM_FABRIC_*,
 *     DRM_MAIA_FABRIC_PORT, DRM_MAIA_FABRIC_WINDOW, DRM_MAIA_DEVICE_FABRIC_*.
 *  4: user queues: DRM_MAIA_USERQ_CREATE/DESTROY/WAIT, DRM_MAIA_PARAM_USER_QUEUES,
 *     DRM_MAIA_DEVICE_ASID_DENIED.
 *  5: DRM_MAIA_DEVICE_FABRIC_COMM_BUSY.
 *  6: drm_maia_fabric_port.link_nak_tx and .rx_held.
 *  7: the chip model: DRM_MAIA_PARAM_MODEL ... DRM_MAIA_PARAM_PEAK_GFLOPS,
 *     DRM_MAIA_MODEL_*; drm_maia_wait.host_time_ns (device_time_ns is
 *     modeled time on hardware 1.8).
 *  8: DRM_MAIA_DEVICE_KERNEL_INVALID, DRM_MAIA_DEVICE_KERNEL_WATCHDOG (hardware 1.9).
 */
#define MAIA_DRIVER_MINOR		8

#define DRM_MAIA_GET_PARAM		0x00
#define DRM_MAIA_PING			0x01
#define DRM_MAIA_BO_CREATE		0x02
#define DRM_MAIA_BO_INFO		0x03
#define DRM_MAIA_VM_BIND		0x04
#define DRM_MAIA_SUBMIT			0x05
#define DRM_MAIA_WAIT			0x06
#define DRM_MAIA_CONTEXT_STATUS		0x07
#define DRM_MAIA_FABRIC_PORT		0x08	/* minor 3 */
#define DRM_MAIA_FABRIC_WINDOW		0x09	/* minor 3 */
#define DRM_MAIA_USERQ_CREATE		0x0a	/* minor 4 */
#define DRM_MAIA_USERQ_DESTROY		0x0b	/* minor 4 */
#define DRM_MAIA_USERQ_WAIT		0x0c	/* minor 4 */

#define DRM_IOCTL_MAIA_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_GET_PARAM, struct drm_maia_get_param)
#define DRM_IOCTL_MAIA_PING \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_PING, struct drm_maia_ping)
#define DRM_IOCTL_MAIA_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_BO_CREATE, struct drm_maia_bo_create)
#define DRM_IOCTL_MAIA_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_BO_INFO, struct drm_maia_bo_info)
#define DRM_IOCTL_MAIA_VM_BIND \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_VM_BIND, struct drm_maia_vm_bind)
#define DRM_IOCTL_MAIA_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_SUBMIT, struct drm_maia_submit)
#define DRM_IOCTL_MAIA_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_WAIT, struct drm_maia_wait)
#define DRM_IOCTL_MAIA_CONTEXT_STATUS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_CONTEXT_STATUS, struct drm_maia_context_status)
#define DRM_IOCTL_MAIA_FABRIC_PORT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_FABRIC_PORT, struct drm_maia_fabric_port)
#define DRM_IOCTL_MAIA_FABRIC_WINDOW \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_FABRIC_WINDOW, struct drm_maia_fabric_window)
#define DRM_IOCTL_MAIA_USERQ_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_USERQ_CREATE, struct drm_maia_userq_create)
#define DRM_IOCTL_MAIA_USERQ_DESTROY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_USERQ_DESTROY, struct drm_maia_userq_destroy)
#define DRM_IOCTL_MAIA_USERQ_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_MAIA_USERQ_WAIT, struct drm_maia_userq_wait)

/* drm_maia_get_param.param */
#define DRM_MAIA_PARAM_DEVICE_ID	0	/* PCI vendor << 16 | device */
#define DRM_MAIA_PARAM_REVISION		1	/* MAIA_REG_REVISION */
#define DRM_MAIA_PARAM_FW_VERSION	2	/* major << 16 | minor << 8 | patch */
#define DRM_MAIA_PARAM_FW_ABI		3	/* major << 16 | minor */
#define DRM_MAIA_PARAM_HBM_SIZE		4	/* bytes */
#define DRM_MAIA_PARAM_NUM_CLUSTERS	5
#define DRM_MAIA_PARAM_TILES_PER_CLUSTER 6
#define DRM_MAIA_PARAM_DTYPES		7	/* bitmask of 1 << DRM_MAIA_DTYPE_* */
#define DRM_MAIA_PARAM_NUM_QUEUES	8	/* hardware queues */
#define DRM_MAIA_PARAM_CAPABILITIES	9	/* DRM_MAIA_CAP_* of the device */
#define DRM_MAIA_PARAM_SRAM_KIB		10	/* on-chip SRAM per cluster */
#define DRM_MAIA_PARAM_PCI_BDF		11	/* domain << 16 | bus << 8 | devfn */
#define DRM_MAIA_PARAM_FABRIC_PORTS	12	/* fabric ports, 0 without (minor 3) */
#define DRM_MAIA_PARAM_FABRIC_SERIAL	13	/* the device's fabric serial (minor 3) */
/* (minor 4) hardware queues kept for user queues, 0 if the device has none */
#define DRM_MAIA_PARAM_USER_QUEUES	14
/*
 * (minor 7) The chip model the device is built as and the parameters of its
 * time model (Documentation/hw/time-model.rst): what a job's modeled
 * duration (drm_maia_wait.device_time_ns) is computed from. Every one is 0
 * on a device older than hardware 1.8, which has no model. Bandwidths are
 * in MB/s (10^6 bytes per second), rates in GFLOP/s (10^9 operations per
 * second, a multiply-add counting two), times in ns.
 */
#define DRM_MAIA_PARAM_MODEL		15	/* DRM_MAIA_MODEL_* */
#define DRM_MAIA_PARAM_HBM_MBPS		16	/* HBM bandwidth */
#define DRM_MAIA_PARAM_HOST_MBPS	17	/* host link (PCIe), each direction */
#define DRM_MAIA_PARAM_LINK_MBPS	18	/* one fabric port, each direction */
#define DRM_MAIA_PARAM_LINK_LAT_NS	19	/* one fabric hop */
#define DRM_MAIA_PARAM_CMD_NS		20	/* fixed cost of a command */
#define DRM_MAIA_PARAM_JOB_NS		21	/* fixed cost of a job (fetch, completion) */
#define DRM_MAIA_PARAM_VECTOR_GFLOPS	22	/* vector (non-matrix) peak, FP32 */
#define DRM_MAIA_PARAM_CHIP_SRAM_KIB	23	/* on-chip SRAM of the whole chip */
#define DRM_MAIA_PARAM_DESIGN_POWER_MW	24	/* design power: the largest power cap */
/*
 * Dense tensor (matrix) peak of the data type in drm_maia_get_param.index
 * (a DRM_MAIA_DTYPE_*) at the nominal clock; 0 for a type without a matrix
 * rate; an index past DRM_MAIA_DTYPE_MX4 is -EINVAL.
 */
#define DRM_MAIA_PARAM_PEAK_GFLOPS	25

/* DRM_MAIA_PARAM_MODEL (minor 7) */
#define DRM_MAIA_MODEL_NONE		0	/* hardware before 1.8: no chip model */
#define DRM_MAIA_MODEL_MAIA100		1	/* Maia 100 (Hot Chips 2024) */
#define DRM_MAIA_MODEL_MAIA200		2	/* Maia 200 (announced January 2026) */

/* DRM_MAIA_PARAM_CAPABILITIES: what the device has */
#define DRM_MAIA_CAP_MMU		(1ull << 0)	/* per-context address spaces */
#define DRM_MAIA_CAP_SEMAPHORES		(1ull << 1)	/* device semaphores between jobs */
#define DRM_MAIA_CAP_TENSOR		(1ull << 2)	/* tensor engine commands */
#define DRM_MAIA_CAP_TELEMETRY		(1ull << 3)	/* power, clock and counters */
#define DRM_MAIA_CAP_FLR		(1ull << 4)	/* PCIe function level reset */
#define DRM_MAIA_CAP_FABRIC		(1ull << 5)	/* scale-out fabric ports (minor 3) */

/* DRM_MAIA_PARAM_DTYPES: bit n set means the tensor engine takes data type n */
#define DRM_MAIA_DTYPE_FP32		0
#define DRM_MAIA_DTYPE_FP16		1
#define DRM_MAIA_DTYPE_BF16		2
#define DRM_MAIA_DTYPE_FP8_E4M3		3
#define DRM_MAIA_DTYPE_FP8_E5M2		4
#define DRM_MAIA_DTYPE_INT8		5	/* with a per-tensor scale */
#define DRM_MAIA_DTYPE_INT32		6
#define DRM_MAIA_DTYPE_MXFP8_E4M3	7	/* OCP MX v1.0, 32-element blocks */
#define DRM_MAIA_DTYPE_MXFP8_E5M2	8
#define DRM_MAIA_DTYPE_MXFP6_E3M2	9
#define DRM_MAIA_DTYPE_MXFP6_E2M3	10
#define DRM_MAIA_DTYPE_MXFP4_E2M1	11
#define DRM_MAIA_DTYPE_MXINT8		12
#define DRM_MAIA_DTYPE_MX9		13	/* Microsoft MX, 16-element blocks */
#define DRM_MAIA_DTYPE_MX6		14
#define DRM_MAIA_DTYPE_MX4		15

/**
 * struct drm_maia_get_param - query one device parameter
 * @param: DRM_MAIA_PARAM_*
 * @index: the instance of a per-instance parameter (the data type of
 *         DRM_MAIA_PARAM_PEAK_GFLOPS); must be 0 for every other one
 * @value: out
 */
struct drm_maia_get_param {
	__u32 param;
	__u32 index;
	__u64 value;
};

/**
 * struct drm_maia_ping - round trip through a hardware queue
 *
 * The driver submits a NOP entry carrying @cookie on its kernel queue, rings
 * the doorbell, and waits for the completion interrupt.
 * @cookie: in, echoed into @echo
 * @flags: must be 0
 * @pad: must be 0
 * @echo: out, the job id the device completed
 * @round_trip_ns: out, doorbell write to completion handled, host clock
 * @device_ns: out, device time at completion (the completion entry's end:
 *             modeled time on hardware 1.8, see drm_maia_wait)
 */
struct drm_maia_ping {
	__u64 cookie;
	__u32 flags;
	__u32 pad;
	__u64 echo;
	__u64 round_trip_ns;
	__u64 device_ns;
};

/* Buffer object placement (drm_maia_bo_create.flags): exactly one. */
#define DRM_MAIA_BO_HBM			(1u << 0)	/* device HBM; CPU mapping via BAR2, WC */
/* host memory, pinned while mapped on the device */
#define DRM_MAIA_BO_HOST		(1u << 1)

/**
 * struct drm_maia_bo_create - create a buffer object
 * @size: in, bytes; rounded up to 4 KiB; 0 or more than the placement can
 *        hold is -EINVAL, HBM exhaustion is -ENOMEM
 * @flags: in, DRM_MAIA_BO_HBM or DRM_MAIA_BO_HOST
 * @handle: out, GEM handle (close with DRM_IOCTL_GEM_CLOSE)
 */
struct drm_maia_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
};

/**
 * struct drm_maia_bo_info - query a buffer object
 * @handle: in
 * @flags: out, placement
 * @size: out, bytes
 * @mmap_offset: out, offset for mmap() on the device fd
 */
struct drm_maia_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
};

/*
 * Device virtual addresses are chosen by userspace (VM_BIND style) inside
 * [DRM_MAIA_VA_START, DRM_MAIA_VA_END); the kernel owns the page tables.
 */
#define DRM_MAIA_VA_START		0x0000000100000000ull
#define DRM_MAIA_VA_END			0x0000800000000000ull

#define DRM_MAIA_VM_MAP			0
#define DRM_MAIA_VM_UNMAP		1
#define DRM_MAIA_VM_READONLY		(1u << 0)	/* map without device write */

/**
 * struct drm_maia_vm_bind - map or unmap a range of this file's address space
 * @op: DRM_MAIA_VM_MAP or DRM_MAIA_VM_UNMAP
 * @handle: MAP: the buffer object; UNMAP: must be 0
 * @va: 4 KiB aligned; a MAP must not overlap an existing mapping; an
 *      UNMAP must name exactly one existing mapping (va and size)
 * @offset: MAP: 4 KiB aligned offset into the BO; UNMAP: 0
 * @size: 4 KiB multiple, nonzero, offset + size within the BO
 * @flags: DRM_MAIA_VM_READONLY
 * @pad: must be 0
 *
 * UNMAP waits for this file's jobs that are in flight, so the device never
 * sees a page after it is unmapped.
 */
struct drm_maia_vm_bind {
	__u32 op;
	__u32 handle;
	__u64 va;
	__u64 offset;
	__u64 size;
	__u32 flags;
	__u32 pad;
};

#define DRM_MAIA_PRIO_LOW		0
#define DRM_MAIA_PRIO_NORMAL		1
#define DRM_MAIA_PRIO_HIGH		2

/* The most syncobjs one SUBMIT may wait for */
#define DRM_MAIA_MAX_IN_SYNCOBJS	256

/**
 * struct drm_maia_submit - run a command buffer on the device
 * @cmdbuf_handle: BO holding commands in the device format (maia/hw/cmd.h);
 *                 it must be mapped in this file's address space
 * @flags: must be 0
 * @cmdbuf_offset: 8-byte aligned offset of the first command in the BO
 * @cmdbuf_size: bytes, a nonzero multiple of 8 up to 1 MiB; offset + size
 *               within the BO
 * @in_syncobjs: user pointer to __u32 syncobj handles to wait for first
 * @num_in_syncobjs: entries in @in_syncobjs, at most DRM_MAIA_MAX_IN_SYNCOBJS
 * @out_syncobj: syncobj that receives the job's fence, or 0
 * @priority: DRM_MAIA_PRIO_*
 * @pad: must be 0
 * @seqno: out, the job's sequence number in this file (for DRM_MAIA_WAIT)
 *
 * After an MMU fault in this file's context, submit fails with -EBADFD.
 */
struct drm_maia_submit {
	__u32 cmdbuf_handle;
	__u32 flags;
	__u64 cmdbuf_offset;
	__u64 cmdbuf_size;
	__u64 in_syncobjs;
	__u32 num_in_syncobjs;
	__u32 out_syncobj;
	__u32 priority;
	__u32 pad;
	__u64 seqno;
};

/* Job status (drm_maia_wait.status) */
#define DRM_MAIA_JOB_OK			0	/* completed */
#define DRM_MAIA_JOB_ERROR		1	/* device rejected a command; see device_status */
#define DRM_MAIA_JOB_FAULT		2	/* MMU fault: the context is now faulted */
#define DRM_MAIA_JOB_TIMEOUT		3	/* hung; the device was reset (guilty) */
#define DRM_MAIA_JOB_ABORTED		4	/* lost to a reset caused by another job */

/* What the device said about a job (drm_maia_wait.device_status) */
#define DRM_MAIA_DEVICE_OK		0	/* completed */
#define DRM_MAIA_DEVICE_BAD_OPCODE	1	/* unknown command */
#define DRM_MAIA_DEVICE_BAD_CMD		2	/* malformed command (size, flags, fields) */
#define DRM_MAIA_DEVICE_MMU_FAULT	3	/* access outside the context's mappings */
#define DRM_MAIA_DEVICE_DMA_ERROR	4	/* host memory access failed */
#define DRM_MAIA_DEVICE_BAD_DESC	5	/* malformed tensor descriptor */
#define DRM_MAIA_DEVICE_BAD_CONTEXT	6	/* address space not set up */
#define DRM_MAIA_DEVICE_ABORTED		7	/* stopped by a reset, or never ran */
#define DRM_MAIA_DEVICE_SEM_TIMEOUT	8	/* a semaphore wait gave up */
#define DRM_MAIA_DEVICE_HBM_ECC		9	/* read HBM with an uncorrectable error (minor 2) */
/* Fabric commands (minor 3) */
#define DRM_MAIA_DEVICE_FABRIC_LINK	10	/* no such port, port down, or it went down */
#define DRM_MAIA_DEVICE_FABRIC_KEY	11	/* the peer refused the window key or range */
#define DRM_MAIA_DEVICE_FABRIC_REMOTE	12	/* the peer's memory access failed */
#define DRM_MAIA_DEVICE_FABRIC_TIMEOUT	13	/* a collective's peer did not answer in time */
/* (minor 4) a user queue's entry named another context than the queue's own */
#define DRM_MAIA_DEVICE_ASID_DENIED	14
/* (minor 5) a collective of the same communicator id runs on another queue of the device */
#define DRM_MAIA_DEVICE_FABRIC_COMM_BUSY	15
/* (minor 8) a KERNEL command's TVP program failed validation; an instance ran past its budget */
#define DRM_MAIA_DEVICE_KERNEL_INVALID	16
#define DRM_MAIA_DEVICE_KERNEL_WATCHDOG	17
#define DRM_MAIA_DEVICE_UNKNOWN		255	/* a status this driver does not know */

/**
 * struct drm_maia_wait - wait for a job
 * @seqno: in, from DRM_MAIA_SUBMIT
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline; -ETIME when it passes
 * @status: out, DRM_MAIA_JOB_*
 * @device_status: out, DRM_MAIA_DEVICE_*
 * @error_offset: out, byte offset of the failing command in the buffer
 * @pad: must be 0
 * @device_time_ns: out (minor 1), time the device spent on the job, from its
 *                  start to its completion on the device clock; 0 if it
 *                  never ran. On hardware 1.8 and later this is modeled
 *                  time: how long the job takes on the chip model
 *                  (DRM_MAIA_PARAM_MODEL), the same on any host, run after
 *                  run; before 1.8 it is the device's host-paced clock
 * @host_time_ns: out (minor 7), host time (CLOCK_MONOTONIC) from the
 *                SUBMIT of the job to the driver handling its completion or
 *                its failure: queueing, dependencies and the host's speed
 *                included
 */
struct drm_maia_wait {
	__u64 seqno;
	__s64 timeout_ns;
	__u32 status;
	__u32 device_status;
	__u32 error_offset;
	__u32 pad;
	__u64 device_time_ns;
	__u64 host_time_ns;
};

#define DRM_MAIA_CTX_FAULTED		(1u << 0)
/*
 * With DRM_MAIA_CTX_FAULTED: the device's fault record described another
 * context's fault (it keeps one record at a time, the first), so this
 * context's address and access are unknown and reported as 0.
 */
#define DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN	(1u << 1)

/* drm_maia_context_status.fault_access */
#define DRM_MAIA_ACCESS_READ		1
#define DRM_MAIA_ACCESS_WRITE		2

/**
 * struct drm_maia_context_status - this file's context state
 * @flags: out, DRM_MAIA_CTX_*
 * @asid: out, the device address space id
 * @fault_addr: out, faulting address if DRM_MAIA_CTX_FAULTED (0 with
 *              DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN)
 * @fault_access: out, DRM_MAIA_ACCESS_READ or DRM_MAIA_ACCESS_WRITE
 * @pad: must be 0
 * @device_resets: out, device resets since this file was opened
 */
struct drm_maia_context_status {
	__u32 flags;
	__u32 asid;
	__u64 fault_addr;
	__u32 fault_access;
	__u32 pad;
	__u64 device_resets;
};

/* drm_maia_fabric_port.flags */
#define DRM_MAIA_FABRIC_PORT_UP		(1u << 0)	/* peer discovered, data flows */

/**
 * struct drm_maia_fabric_port - state and counters of one fabric port (minor 3)
 * @port: in, < DRM_MAIA_PARAM_FABRIC_PORTS; -EINVAL beyond, -ENODEV without
 *        a fabric
 * @flags: out, DRM_MAIA_FABRIC_PORT_*
 * @peer_serial: out, the fabric serial of the device cabled to it (while UP)
 * @peer_port: out, that device's port (while UP)
 * @mtu: out, data bytes per transport message
 * @tx_frames: out, frames sent; the counters count since the device was
 *             powered on (a reset keeps them)
 * @tx_bytes: out, bytes sent
 * @rx_frames: out, frames received, malformed ones included
 * @rx_bytes: out, bytes received
 * @retransmits: out, frames sent again after a lost frame or ack
 * @rx_drops: out, received frames dropped (malformed, unexpected, queue full)
 * @nak_tx: out, remote requests this device refused (bad key, range, access)
 * @nak_rx: out, refusals this device's requests received
 * @tx_errors: out, frames the wire would not take
 * @injected_drops: out, frames dropped by the device's fault injection
 * @link_ups: out, times the link came up
 * @link_downs: out, times it went down (link flaps)
 * @dead_peer: out, downs because the peer stopped answering
 * @pad: must be 0
 * @link_nak_tx: out (minor 6), NAK frames sent: gaps in the frames received
 *               named to the peer, which sends them again (its @retransmits)
 * @rx_held: out (minor 6), frames that came after a gap and were held until
 *           it filled; both 0 on a device older than hardware 1.6
 */
struct drm_maia_fabric_port {
	__u32 port;
	__u32 flags;
	__u64 peer_serial;
	__u32 peer_port;
	__u32 mtu;
	__u64 tx_frames;
	__u64 tx_bytes;
	__u64 rx_frames;
	__u64 rx_bytes;
	__u64 retransmits;
	__u64 rx_drops;
	__u64 nak_tx;
	__u64 nak_rx;
	__u64 tx_errors;
	__u64 injected_drops;
	__u32 link_ups;
	__u32 link_downs;
	__u32 dead_peer;
	__u32 pad;
	__u64 link_nak_tx;
	__u64 rx_held;
};

#define DRM_MAIA_FABRIC_WINDOW_OPEN	0
#define DRM_MAIA_FABRIC_WINDOW_CLOSE	1

/* drm_maia_fabric_window.access: what the peers may do */
#define DRM_MAIA_FABRIC_REMOTE_READ	(1u << 0)
#define DRM_MAIA_FABRIC_REMOTE_WRITE	(1u << 1)

/**
 * struct drm_maia_fabric_window - let fabric peers reach part of this
 * file's address space (minor 3)
 * @op: DRM_MAIA_FABRIC_WINDOW_OPEN or _CLOSE
 * @access: OPEN: DRM_MAIA_FABRIC_REMOTE_* (REMOTE_WRITE needs a writable
 *          mapping, else -EACCES); CLOSE: 0
 * @va: OPEN: page-aligned start, inside one mapping of this file
 * @size: OPEN: bytes, a nonzero multiple of the page size
 * @key: OPEN: out, the key peers name in remote writes and reads;
 *       CLOSE: in
 * @pad: must be 0
 *
 * A window closes with CLOSE, with the unmap of its mapping, with the
 * file, and with a device reset (its key is then refused by the device and
 * CLOSE of it returns 0). Once closed, nothing from the fabric lands in it.
 * At most DRM_MAIA_MAX_FABRIC_WINDOWS per file (-ENOSPC), and the device
 * has a limited number for every file together (-ENOSPC too).
 */
struct drm_maia_fabric_window {
	__u32 op;
	__u32 access;
	__u64 va;
	__u64 size;
	__u32 key;
	__u32 pad;
};

#define DRM_MAIA_MAX_FABRIC_WINDOWS	64

/*
 * User queues (minor 4): a hardware queue of this file's own, whose
 * submission ring, completion array and doorbell are mapped into the
 * process (mmap on the device fd at the offsets CREATE returns), so that a
 * job is written and started without a system call. The ring and the array
 * hold the device's own entries (struct maia_sq_entry and maia_cq_entry,
 * maia/hw/queue.h); the doorbell takes the new tail index. The device binds
 * the queue to this file's address space: an entry naming another ASID
 * completes with DRM_MAIA_DEVICE_ASID_DENIED (device status 14) and runs
 * nothing. The kernel keeps the page tables, hang detection and reset; see
 * Documentation/uapi.rst for the rules.
 */

/* drm_maia_userq_wait.state: what became of the queue */
#define DRM_MAIA_USERQ_ACTIVE		0	/* runs jobs */
#define DRM_MAIA_USERQ_FAULTED		1	/* a job hit an MMU fault: the context is faulted */
#define DRM_MAIA_USERQ_HUNG		2	/* a job hung; the device was reset */
#define DRM_MAIA_USERQ_LOST		3	/* the device was reset for another cause */
#define DRM_MAIA_USERQ_ERROR		4	/* tail out of range or the rings were unreadable */
#define DRM_MAIA_USERQ_GONE		5	/* the device was removed */

/*
 * Byte offset in the completion array's page of a __u32 the kernel sets to
 * the queue's DRM_MAIA_USERQ_* state when the queue stops, so that a
 * process sees it without a system call (0, ACTIVE, until then).
 */
#define DRM_MAIA_USERQ_STATE_OFFSET	4088

/**
 * struct drm_maia_userq_create - create a user queue
 * @flags: in, must be 0
 * @priority: in, DRM_MAIA_PRIO_*
 * @queue_id: out, names the queue in DESTROY and WAIT
 * @entries: out, slots in the ring and the array (a power of two); one
 *           stays empty, so entries - 1 jobs can be in flight
 * @sq_offset: out, mmap offset of the submission ring (one page, read/write)
 * @cq_offset: out, mmap offset of the completion array (one page, read/write;
 *             the queue's state at DRM_MAIA_USERQ_STATE_OFFSET)
 * @doorbell_offset: out, mmap offset of the doorbell page (one page; write
 *                   the new tail, as a 32-bit store, at offset 0)
 *
 * The mappings must be MAP_SHARED and exactly one page. -EBUSY when every
 * hardware queue kept for user queues is taken, -ENODEV when the device has
 * none, -EBADFD when the context faulted.
 */
struct drm_maia_userq_create {
	__u32 flags;
	__u32 priority;
	__u32 queue_id;
	__u32 entries;
	__u64 sq_offset;
	__u64 cq_offset;
	__u64 doorbell_offset;
};

/**
 * struct drm_maia_userq_destroy - stop a user queue and free it
 * @queue_id: in
 * @pad: must be 0
 *
 * Disables the queue (entries not yet run are dropped, a running job stops
 * at its next command chunk) and frees it. The doorbell mapping then
 * reaches a page that rings nothing; the ring and the array stay mapped as
 * plain memory until the process unmaps them.
 */
struct drm_maia_userq_destroy {
	__u32 queue_id;
	__u32 pad;
};

/**
 * struct drm_maia_userq_wait - sleep until a user queue completed enough jobs
 * @queue_id: in
 * @count: in, wait until the queue has completed @count entries since it
 *         was created (compared modulo 2^32), or it stopped
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline; -ETIME when it passes
 * @completed: out, entries the queue has completed
 * @state: out, DRM_MAIA_USERQ_*; anything but ACTIVE means the queue
 *         stopped and will run nothing more: destroy it and create another
 */
struct drm_maia_userq_wait {
	__u32 queue_id;
	__u32 count;
	__s64 timeout_ns;
	__u32 completed;
	__u32 state;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_MAIA_ACCEL_H_ */
