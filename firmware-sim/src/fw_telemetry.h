/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim telemetry: the power controller's model (power, energy,
 * temperature, clock throttling) and the counters behind the register block
 * in maia/hw/telemetry.h.
 *
 * struct fw_pm is the pure model: it is advanced with explicit times and
 * activity, never reads a clock itself, so unit tests drive it with virtual
 * time. struct fw_telem wraps it for the device: real time
 * (CLOCK_MONOTONIC), commands marking the engine busy, and the counters.
 */
#ifndef FWSIM_TELEMETRY_H
#define FWSIM_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "maia/engine.h"
#include "fw_model.h"
#include "maia/hw/regs.h"
#include "maia/hw/telemetry.h"
#include "maia/hw/tvp.h"

/* The smallest cap the mailbox accepts; the largest is the chip's design power. */
#define FW_PM_CAP_MIN_MW	100000u		/* 100 W */

#define FW_PM_WINDOW_MAX	128u		/* periods in the averaging window */

struct fw_pm_params {
	uint64_t period_ns;		/* control period */
	unsigned int window_periods;	/* power/utilization average, <= FW_PM_WINDOW_MAX */
	unsigned int sustain_periods;	/* over (under) threshold this long to step down (up) */
	uint32_t nominal_mhz;
	uint32_t min_pct;		/* lowest clock, % of nominal */
	uint32_t step_pct;		/* one throttle step, % of nominal */
	uint32_t cap_mw;
	uint32_t cap_max_mw;		/* design power: the largest cap */
	uint32_t threshold_pct;		/* throttle above this % of the cap */
	double idle_static_w;		/* leakage, independent of clock */
	double idle_clock_w;		/* clock tree at nominal, scales with f */
	double dyn_w[FW_PM_CLASSES];	/* fully busy at nominal, scales with f^3 */
	double hbm_pj_per_byte;		/* HBM access energy */
	double hbm_bytes_per_ns;	/* HBM bandwidth, for its utilization */
	double ambient_c;
	double r_th_c_per_w;		/* steady state: T = ambient + R * P */
	double tau_s;			/* thermal time constant */
	double throttle_c;		/* thermal throttling above */
	double crit_c;
	double hysteresis_c;		/* step back up only below throttle_c - this */
};

struct fw_pm {
	struct fw_pm_params p;
	uint64_t now_ns;		/* time the model has been advanced to */
	uint64_t period_start_ns;
	int active;			/* enum fw_pm_class, or FW_PM_IDLE */
	uint64_t period_busy_ns[FW_PM_CLASSES];	/* in the open period */
	double period_bytes;		/* HBM bytes in the open period */
	double period_peak_ns;		/* flops at peak in the open period, as time */
	uint32_t clock_mhz;
	double temp_c;
	double energy_uj;
	double power_inst_w;		/* last closed period */
	/* Ring of closed periods: power and busy fractions. */
	double win_power[FW_PM_WINDOW_MAX];
	double win_busy[FW_PM_WINDOW_MAX];
	double win_tensor[FW_PM_WINDOW_MAX];
	double win_hbm[FW_PM_WINDOW_MAX];	/* fraction of the HBM bandwidth */
	double win_mfu[FW_PM_WINDOW_MAX];	/* fraction of the peak done */
	unsigned int win_next, win_fill;
	unsigned int over, under;	/* consecutive periods over/under the limits */
	uint32_t reasons;		/* MAIA_THROTTLE_* holding the clock down */
	uint32_t events;		/* step-downs */
	uint64_t busy_ns;		/* any class */
	uint64_t class_ns[FW_PM_CLASSES];
	uint64_t throttled_ns;
};

/* The power controller of a chip (Documentation/telemetry.rst). */
void fw_pm_params_of_chip(struct fw_pm_params *p, const struct fw_chip *chip);
/* Maia 100's. */
void fw_pm_params_defaults(struct fw_pm_params *p);
void fw_pm_init(struct fw_pm *pm, const struct fw_pm_params *p, uint64_t now_ns);
/* Runs the model up to now_ns (earlier times are ignored). */
void fw_pm_advance(struct fw_pm *pm, uint64_t now_ns);
/* From now_ns on the engine runs class cls (FW_PM_IDLE: nothing). */
void fw_pm_set_active(struct fw_pm *pm, uint64_t now_ns, int cls);
/*
 * Runs one command of cost c from start: its fixed part, then its work,
 * which takes compute_ns / r at the clock ratio r the controller sets
 * period by period, or its HBM or link time if longer. HBM bytes and flops
 * are spread evenly over the work. A command that starts before the
 * model's time (another engine's command ran past it) takes its cost at
 * the present clock, its bytes and flops counted in the present period.
 * Returns the end.
 */
uint64_t fw_pm_run(struct fw_pm *pm, uint64_t start, const struct fw_cost *c);
/* New firmware parameters: clamps them; a new nominal clock ends throttling. */
void fw_pm_set_firmware(struct fw_pm *pm, uint32_t nominal_mhz, uint32_t cap_mw);
/* Firmware restarted: clock back to nominal, throttle state cleared. */
void fw_pm_restart(struct fw_pm *pm);
uint32_t fw_pm_min_mhz(const struct fw_pm *pm);
double fw_pm_power_avg_w(const struct fw_pm *pm);
/* Fraction 0..1 of the window the engine (tensor class) was busy. */
double fw_pm_util(const struct fw_pm *pm);
double fw_pm_tensor_util(const struct fw_pm *pm);
double fw_pm_hbm_util(const struct fw_pm *pm);
double fw_pm_mfu(const struct fw_pm *pm);
bool fw_pm_cap_valid(const struct fw_pm *pm, uint32_t cap_mw);

/* Device-side counters, in struct maia_sim, under sim->lock. */
struct fw_telem {
	bool initialized;
	struct fw_pm pm;
	uint64_t hbm_read, hbm_write, dma_bytes, flops, tile_busy_ns, commands, peak_ns;
	uint32_t latch_hi[(MAIA_REG_TELEM_END - MAIA_REG_TELEMETRY_BASE) / 4u];
	/* THERMAL was asserted and unmasked: the event vector is still to fire */
	bool raise_pending;
	/* the per-tile window's one latch: HI of the tile whose LO was read last */
	uint32_t tile_latch, tile_latch_hi;
	uint64_t *tile_ns;		/* modeled busy time per tile */
	unsigned int tiles;
	/* TVP counters (MAIA_REG_TELEM_TVP_*) and their HI latches */
	uint64_t tvp_insns[MAIA_TVP_NUM_CLASSES], tvp_kernels;
	uint32_t tvp_latch_hi[MAIA_TVP_NUM_CLASSES + 1];
};

/*
 * Device glue (fw_telemetry.c). _locked: called with sim->lock held.
 */
struct maia_sim;
int fw_telem_create(struct maia_sim *sim);
void fw_telem_destroy(struct maia_sim *sim);
void fw_telem_reset_locked(struct maia_sim *sim);
bool fw_telem_is_reg(uint32_t offset);
/* False if offset is inside the block but not a register. */
bool fw_telem_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val);
/*
 * Drops sim->lock, then fires the event vector if a telemetry call under
 * it asserted THERMAL (throttling started, or for a new reason).
 */
void fw_telem_unlock_and_raise(struct maia_sim *sim);
/* The power cap the mailbox may set. */
bool fw_telem_cap_valid_locked(struct maia_sim *sim, uint32_t cap_mw);
/*
 * One command in modeled time (fw_timeline.c): runs the power controller
 * over it from start, counts its work; returns its end. hbm_write is the
 * part of c->hbm_bytes written.
 */
uint64_t fw_telem_run_locked(struct maia_sim *sim, uint64_t start, const struct fw_cost *c,
			     uint64_t hbm_write, uint64_t dma_bytes);
/* A KERNEL command's instructions per class; validated: its program passed. */
void fw_telem_tvp_locked(struct maia_sim *sim, const uint64_t insns[MAIA_TVP_NUM_CLASSES],
			 bool validated);

#endif /* FWSIM_TELEMETRY_H */
