/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: the chip model block (revision 1.8), BAR0 0x0200 -
 * 0x02ff, read-only.
 *
 * A device is built as one chip model (a QEMU property, firmware-sim's
 * config): Maia 100 or Maia 200. The model fixes the parameters of the
 * device time model (Documentation/hw/time-model.rst): tensor peaks per
 * data type, HBM and host-link bandwidth, fabric link rate and latency,
 * fixed command overheads. Every job is given a modeled duration from
 * them, and the completion entry's start_ns/end_ns, the TIMESTAMP command
 * and the telemetry block report that modeled time: how long the work
 * would take on the chip, the same on any host. MAIA_REG_TIME_LO/HI stay
 * the host-paced device clock that timeouts and the heartbeat use.
 *
 * Rates are in units that fit 32 bits for both chips: bandwidths in MB/s
 * (10^6 bytes), peaks in GFLOP/s (10^9 operations, a multiply-add counting
 * two), times in ns.
 */
#ifndef MAIA_HW_MODEL_H
#define MAIA_HW_MODEL_H

/* MAIA_REG_MODEL_ID */
#define MAIA_MODEL_MAIA100		1u
#define MAIA_MODEL_MAIA200		2u

#define MAIA_REG_MODEL_BASE		0x0200u
#define MAIA_REG_MODEL_ID		0x0200u	/* MAIA_MODEL_* */
#define MAIA_REG_MODEL_HBM_MBPS		0x0204u	/* HBM bandwidth, MB/s */
#define MAIA_REG_MODEL_HOST_MBPS	0x0208u	/* host link (PCIe), each direction */
#define MAIA_REG_MODEL_LINK_MBPS	0x020cu	/* one fabric port, each direction */
#define MAIA_REG_MODEL_LINK_LAT_NS	0x0210u	/* one fabric hop */
#define MAIA_REG_MODEL_CMD_NS		0x0214u	/* fixed cost of a command */
#define MAIA_REG_MODEL_JOB_NS		0x0218u	/* fixed cost of a job (fetch, completion) */
#define MAIA_REG_MODEL_VECTOR_GFLOPS	0x021cu	/* vector (non-matrix) peak, FP32 */
#define MAIA_REG_MODEL_SRAM_KIB		0x0220u	/* on-chip SRAM the chip has, KiB */
#define MAIA_REG_MODEL_DESIGN_POWER_MW	0x0224u	/* largest power cap */
/* Dense tensor peak of data type d (MAIA_DTYPE_*) at the nominal clock; 0: none */
#define MAIA_REG_MODEL_PEAK_GFLOPS(d)	(0x0240u + 4u * (d))
#define MAIA_REG_MODEL_END		0x0300u	/* block end (exclusive) */

#endif /* MAIA_HW_MODEL_H */
