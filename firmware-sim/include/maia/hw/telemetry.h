/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: the telemetry and power-management register block,
 * BAR0 0x0100 - 0x01ff (MAIA_REG_TELEMETRY_BASE in regs.h).
 *
 * The block belongs to the power controller, which is always on: its
 * counters (energy, busy time, bytes, throttle events, temperature) run from
 * power-on and are NOT cleared by MAIA_REG_RESET, FLR or a firmware reboot,
 * so a reader computes rates from differences and never sees them go back.
 * What the firmware sets (nominal clock, TDP, power cap) returns to the
 * firmware image's defaults when the firmware boots again: a driver that
 * set a cap re-applies it after a reset.
 *
 * Every register is read-only; the power cap is set with the mailbox
 * command MAIA_MBOX_SET_POWER_CAP (arg0 = cap in mW, within
 * [POWER_CAP_MIN_MW, POWER_CAP_MAX_MW], else MAIA_MBOX_EINVAL).
 *
 * 64-bit counters are LO/HI pairs: reading LO latches that counter's HI, so
 * read LO then HI (one reader at a time per counter).
 * Since version 1.2 every time in the block is modeled time (maia/hw/model.h):
 * how long the work would take on the chip; it passes only while the device
 * works, so rates over an idle stretch of host time are those of the last
 * modeled window.
 * See Documentation/telemetry.rst for the model behind the numbers.
 */
#ifndef MAIA_HW_TELEMETRY_H
#define MAIA_HW_TELEMETRY_H

#define MAIA_TELEM_VERSION_1		0x00010000u	/* major << 16 | minor */
#define MAIA_TELEM_VERSION_1_1		0x00010001u	/* adds the per-tile window */
/* 1.2: modeled time (maia/hw/model.h), HBM_UTIL, MFU, PEAK_NS */
#define MAIA_TELEM_VERSION_1_2		0x00010002u
/* 1.3 (hardware 1.9): the Tile Vector Processor's counters, MAIA_REG_TELEM_TVP_* */
#define MAIA_TELEM_VERSION_1_3		0x00010003u

/* 32-bit registers */
#define MAIA_REG_TELEM_VERSION		0x0100u	/* MAIA_TELEM_VERSION_1_3 */
#define MAIA_REG_TELEM_PERIOD_US	0x0104u	/* power-management control period */
#define MAIA_REG_TELEM_WINDOW_US	0x0108u	/* averaging window of POWER_MW and *_UTIL */
#define MAIA_REG_TELEM_CLOCK_MHZ	0x010cu	/* tensor/vector clock now */
#define MAIA_REG_TELEM_CLOCK_NOMINAL_MHZ 0x0110u	/* firmware TLV CLOCK_MHZ */
#define MAIA_REG_TELEM_CLOCK_MIN_MHZ	0x0114u	/* lowest throttled clock */
#define MAIA_REG_TELEM_POWER_MW		0x0118u	/* average power over the window */
#define MAIA_REG_TELEM_POWER_INST_MW	0x011cu	/* power over the last control period */
#define MAIA_REG_TELEM_POWER_CAP_MW	0x0120u	/* cap being enforced */
#define MAIA_REG_TELEM_POWER_CAP_MIN_MW	0x0124u	/* smallest cap the mailbox accepts */
#define MAIA_REG_TELEM_POWER_CAP_MAX_MW	0x0128u	/* largest cap (design power) */
#define MAIA_REG_TELEM_TDP_MW		0x012cu	/* default cap, firmware TLV TDP_W */
#define MAIA_REG_TELEM_TEMP_MC		0x0130u	/* die temperature, milli-degrees C */
#define MAIA_REG_TELEM_TEMP_THROTTLE_MC	0x0134u	/* thermal throttling starts above */
#define MAIA_REG_TELEM_TEMP_CRIT_MC	0x0138u	/* critical temperature */
#define MAIA_REG_TELEM_THROTTLE_REASONS	0x013cu	/* MAIA_THROTTLE_*: why the clock is below nominal now */
#define MAIA_REG_TELEM_THROTTLE_EVENTS	0x0140u	/* clock step-downs since power-on */
#define MAIA_REG_TELEM_UTIL		0x0144u	/* engine busy over the window, 0..10000 (0.01 %) */
#define MAIA_REG_TELEM_TENSOR_UTIL	0x0148u	/* tensor (matrix) busy over the window, 0..10000 */
#define MAIA_REG_TELEM_TILES		0x014cu	/* tiles the busy counters cover */
#define MAIA_REG_TELEM_HBM_UTIL		0x0150u	/* HBM bytes over the window / bandwidth, 0..10000 (1.2) */
#define MAIA_REG_TELEM_MFU		0x0154u	/* work at peak over the window, 0..10000 (1.2) */

/* 64-bit counters, LO at the offset, HI at offset + 4 */
#define MAIA_REG_TELEM_TIME_NS_LO	0x0160u	/* modeled time since power-on (1.2) */
#define MAIA_REG_TELEM_ENERGY_UJ_LO	0x0168u	/* energy since power-on, microjoules */
#define MAIA_REG_TELEM_BUSY_NS_LO	0x0170u	/* time any command ran (engine busy) */
#define MAIA_REG_TELEM_TENSOR_NS_LO	0x0178u	/* ... a matrix op (GEMM, attention) */
#define MAIA_REG_TELEM_VECTOR_NS_LO	0x0180u	/* ... a vector op (eltwise, norms, ...) */
#define MAIA_REG_TELEM_DMA_NS_LO	0x0188u	/* ... a DMA op (copy, fill) */
#define MAIA_REG_TELEM_HBM_READ_LO	0x0190u	/* HBM bytes read by commands */
#define MAIA_REG_TELEM_HBM_WRITE_LO	0x0198u	/* HBM bytes written by commands */
#define MAIA_REG_TELEM_DMA_BYTES_LO	0x01a0u	/* bytes the DMA engine moved */
#define MAIA_REG_TELEM_FLOPS_LO		0x01a8u	/* floating-point/integer ops done */
#define MAIA_REG_TELEM_TILE_BUSY_NS_LO	0x01b0u	/* tile-ns, summed over tiles */
#define MAIA_REG_TELEM_THROTTLED_NS_LO	0x01b8u	/* time the clock was below nominal */
#define MAIA_REG_TELEM_COMMANDS_LO	0x01c0u	/* commands executed */
/* (1.2) time the flops done would take at the data type's peak: MFU = PEAK_NS / TIME_NS */
#define MAIA_REG_TELEM_PEAK_NS_LO	0x01c8u

#define MAIA_REG_TELEM_LAST		0x01ccu	/* highest defined register */
#define MAIA_REG_TELEM_END		0x0200u	/* block end (exclusive) */

/*
 * Per-tile busy time (version 1.1): BAR0 0x2000 - 0x3fff, one 64-bit
 * counter per tile (LO/HI as above, one latch shared by the window: read a
 * tile's LO, then its HI). Tile t is tile t % tiles-per-cluster of cluster
 * t / tiles-per-cluster (MAIA_REG_TOPOLOGY); counters exist for the first
 * min(MAIA_REG_TELEM_TILES, MAIA_TELEM_MAX_TILES) tiles, the rest of the
 * window reads 0. Modeled nanoseconds the tile spent on commands since
 * power-on; over all tiles they add up to TILE_BUSY_NS.
 */
#define MAIA_REG_TELEM_TILE_NS_BASE	0x2000u
#define MAIA_TELEM_MAX_TILES		1024u
#define MAIA_REG_TELEM_TILE_NS_LO(t)	(MAIA_REG_TELEM_TILE_NS_BASE + 8u * (t))
#define MAIA_REG_TELEM_TILE_NS_END	MAIA_REG_TELEM_TILE_NS_LO(MAIA_TELEM_MAX_TILES)

/*
 * Tile Vector Processor counters (version 1.3): BAR0 0x0300 - 0x0347, 64-bit
 * LO/HI pairs as above, from power-on. INSNS(c): instructions the KERNEL
 * commands' instances executed in class c (MAIA_TVP_CLASS_*, maia/hw/tvp.h),
 * failed instances included; KERNELS: KERNEL commands whose program passed
 * validation.
 */
#define MAIA_REG_TELEM_TVP_BASE		0x0300u
#define MAIA_REG_TELEM_TVP_INSNS_LO(c)	(MAIA_REG_TELEM_TVP_BASE + 8u * (c))	/* c < 8 */
#define MAIA_REG_TELEM_TVP_KERNELS_LO	0x0340u
#define MAIA_REG_TELEM_TVP_END		0x0348u

/* MAIA_REG_TELEM_THROTTLE_REASONS */
#define MAIA_THROTTLE_POWER		(1u << 0)	/* power over 90 % of the cap */
#define MAIA_THROTTLE_THERMAL		(1u << 1)	/* temperature over TEMP_THROTTLE */
#define MAIA_THROTTLE_ALL		0x3u

#endif /* MAIA_HW_TELEMETRY_H */
