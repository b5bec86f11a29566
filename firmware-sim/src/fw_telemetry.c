// SPDX-License-Identifier: MIT
/*
 * Telemetry and power management (maia/hw/telemetry.h): a first-order model
 * of the chip's power, energy and temperature, the firmware's clock
 * throttling loop, and the counters the register block shows.
 *
 * What is modeled, and how (Documentation/telemetry.rst has the numbers):
 * - Time is the device's modeled time (fw_timeline.c): commands take what
 *   the time model gives them on the chip, whatever the host needs to run
 *   them, so power and throttling are the same on any host, run after run.
 *   The pure model (fw_pm_*) takes times as arguments.
 * - Activity: the engine is busy while a command runs, in one class
 *   (tensor, vector, DMA). Per control period (100 us) the busy fraction of
 *   each class sets the dynamic power:
 *     P = P_static + P_clock * r + sum(P_dyn[c] * r^3 * busy[c]) + HBM bytes * E_byte
 *   with r = clock / nominal (dynamic power ~ f * V^2, V ~ f).
 * - Energy integrates P; temperature follows T' = (ambient + R * P - T) / tau.
 * - Throttling: after sustain_periods periods over threshold_pct of the cap
 *   (or over the thermal limit) the clock steps down by step_pct of nominal,
 *   down to min_pct; it steps back up after as many periods in which the
 *   power predicted at the higher clock stays under the threshold (and the
 *   die is hysteresis_c under the thermal limit), so it does not oscillate.
 * - A throttled clock lengthens the compute part of the commands that run
 *   under it (fw_pm_run()).
 */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "fw_internal.h"
#include "maia/hw/tensor.h"

/* The model steps at most this many periods per call; the rest of a long
 * idle gap is settled in closed form. */
#define MAX_STEPS		20000u

void fw_pm_params_of_chip(struct fw_pm_params *p, const struct fw_chip *chip)
{
	memset(p, 0, sizeof(*p));
	p->period_ns = 100000ull;		/* 100 us */
	p->window_periods = 100;		/* 10 ms */
	p->sustain_periods = 3;
	p->nominal_mhz = chip->clock_mhz;
	p->min_pct = 30;
	p->step_pct = 10;
	p->cap_mw = chip->tdp_w * 1000u;
	p->cap_max_mw = chip->design_w * 1000u;
	p->threshold_pct = 90;
	p->idle_static_w = chip->idle_static_w;
	p->idle_clock_w = chip->idle_clock_w;
	for (int c = 0; c < FW_PM_CLASSES; c++)
		p->dyn_w[c] = chip->dyn_w[c];
	p->hbm_pj_per_byte = chip->hbm_pj_per_byte;
	p->hbm_bytes_per_ns = chip->hbm_mbps * 1e-3;
	p->ambient_c = 35.0;
	p->r_th_c_per_w = 0.1;
	p->tau_s = 1.5;
	p->throttle_c = 95.0;
	p->crit_c = 105.0;
	p->hysteresis_c = 5.0;
}

void fw_pm_params_defaults(struct fw_pm_params *p)
{
	fw_pm_params_of_chip(p, fw_chip_by_id(MAIA_MODEL_MAIA100));
}

bool fw_pm_cap_valid(const struct fw_pm *pm, uint32_t cap_mw)
{
	return cap_mw >= FW_PM_CAP_MIN_MW && cap_mw <= pm->p.cap_max_mw;
}

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

uint32_t fw_pm_min_mhz(const struct fw_pm *pm)
{
	uint32_t m = (uint32_t)((uint64_t)pm->p.nominal_mhz * pm->p.min_pct / 100u);

	return m ? m : 1;
}

static uint32_t step_mhz(const struct fw_pm *pm)
{
	uint32_t s = (uint32_t)((uint64_t)pm->p.nominal_mhz * pm->p.step_pct / 100u);

	return s ? s : 1;
}

void fw_pm_init(struct fw_pm *pm, const struct fw_pm_params *p, uint64_t now_ns)
{
	memset(pm, 0, sizeof(*pm));
	pm->p = *p;
	if (!pm->p.period_ns)
		pm->p.period_ns = 1;
	pm->p.window_periods = clamp_u32(pm->p.window_periods, 1, FW_PM_WINDOW_MAX);
	if (!pm->p.sustain_periods)
		pm->p.sustain_periods = 1;
	pm->p.min_pct = clamp_u32(pm->p.min_pct, 1, 100);
	pm->p.step_pct = clamp_u32(pm->p.step_pct, 1, 100);
	pm->p.nominal_mhz = clamp_u32(pm->p.nominal_mhz, 1, 100000);
	if (pm->p.cap_max_mw < FW_PM_CAP_MIN_MW)
		pm->p.cap_max_mw = FW_PM_CAP_MIN_MW;
	pm->now_ns = now_ns;
	pm->period_start_ns = now_ns;
	pm->active = FW_PM_IDLE;
	pm->clock_mhz = pm->p.nominal_mhz;
	pm->temp_c = pm->p.ambient_c;
}

void fw_pm_restart(struct fw_pm *pm)
{
	pm->clock_mhz = pm->p.nominal_mhz;
	pm->reasons = 0;
	pm->over = 0;
	pm->under = 0;
}

void fw_pm_set_firmware(struct fw_pm *pm, uint32_t nominal_mhz, uint32_t cap_mw)
{
	nominal_mhz = clamp_u32(nominal_mhz, 1, 100000);
	pm->p.cap_mw = clamp_u32(cap_mw, FW_PM_CAP_MIN_MW, pm->p.cap_max_mw);
	if (nominal_mhz != pm->p.nominal_mhz) {
		pm->p.nominal_mhz = nominal_mhz;
		fw_pm_restart(pm);
	}
}

static double period_s(const struct fw_pm *pm)
{
	return (double)pm->p.period_ns * 1e-9;
}

/* Power at clock ratio r for the given busy fractions and HBM bytes. */
static double model_power(const struct fw_pm *pm, double r, const double *busy,
			  double hbm_bytes)
{
	double w = pm->p.idle_static_w + pm->p.idle_clock_w * r;

	for (int c = 0; c < FW_PM_CLASSES; c++)
		w += pm->p.dyn_w[c] * r * r * r * busy[c];
	return w + hbm_bytes * pm->p.hbm_pj_per_byte * 1e-12 / period_s(pm);
}

static void throttle_step(struct fw_pm *pm, double power, const double *busy,
			  double hbm_bytes)
{
	double limit = (double)pm->p.cap_mw * 1e-3 * pm->p.threshold_pct / 100.0;
	bool over_power = power > limit;
	bool over_temp = pm->temp_c > pm->p.throttle_c;
	uint32_t min = fw_pm_min_mhz(pm), step = step_mhz(pm);

	if (over_power || over_temp) {
		pm->under = 0;
		if (++pm->over < pm->p.sustain_periods)
			return;
		pm->over = 0;
		pm->reasons |= (over_power ? MAIA_THROTTLE_POWER : 0) |
			       (over_temp ? MAIA_THROTTLE_THERMAL : 0);
		if (pm->clock_mhz > min) {
			pm->clock_mhz = pm->clock_mhz - min > step ? pm->clock_mhz - step : min;
			pm->events++;
		}
		return;
	}
	pm->over = 0;
	if (pm->clock_mhz >= pm->p.nominal_mhz) {
		pm->under = 0;
		pm->reasons = 0;
		return;
	}
	/* Would one step up still be under both limits? */
	{
		uint32_t up = pm->clock_mhz + step;
		double r_up;

		if (up > pm->p.nominal_mhz)
			up = pm->p.nominal_mhz;
		r_up = (double)up / pm->p.nominal_mhz;
		if (model_power(pm, r_up, busy, hbm_bytes) > limit ||
		    pm->temp_c > pm->p.throttle_c - pm->p.hysteresis_c) {
			pm->under = 0;
			return;
		}
		if (++pm->under < pm->p.sustain_periods)
			return;
		pm->under = 0;
		pm->clock_mhz = up;
		if (up >= pm->p.nominal_mhz)
			pm->reasons = 0;
	}
}

/* Closes the open period: power, energy, temperature, the window, control. */
static void close_period(struct fw_pm *pm)
{
	double busy[FW_PM_CLASSES], any = 0.0, power, dt = period_s(pm);
	double r = (double)pm->clock_mhz / pm->p.nominal_mhz;
	double hbm = pm->period_bytes, period = (double)pm->p.period_ns;

	for (int c = 0; c < FW_PM_CLASSES; c++) {
		busy[c] = (double)pm->period_busy_ns[c] / (double)pm->p.period_ns;
		if (busy[c] > 1.0)
			busy[c] = 1.0;
		any += busy[c];
		pm->period_busy_ns[c] = 0;
	}
	power = model_power(pm, r, busy, hbm);
	pm->power_inst_w = power;
	pm->energy_uj += power * dt * 1e6;
	pm->temp_c += (pm->p.ambient_c + pm->p.r_th_c_per_w * power - pm->temp_c) *
		      (1.0 - exp(-dt / pm->p.tau_s));
	if (pm->clock_mhz < pm->p.nominal_mhz)
		pm->throttled_ns += pm->p.period_ns;
	pm->win_power[pm->win_next] = power;
	pm->win_busy[pm->win_next] = any > 1.0 ? 1.0 : any;
	pm->win_tensor[pm->win_next] = busy[FW_PM_TENSOR];
	pm->win_hbm[pm->win_next] = pm->p.hbm_bytes_per_ns > 0.0 ?
				    hbm / (pm->p.hbm_bytes_per_ns * period) : 0.0;
	pm->win_mfu[pm->win_next] = pm->period_peak_ns / period;
	pm->period_bytes = 0.0;
	pm->period_peak_ns = 0.0;
	pm->win_next = (pm->win_next + 1) % pm->p.window_periods;
	if (pm->win_fill < pm->p.window_periods)
		pm->win_fill++;
	throttle_step(pm, power, busy, hbm);
}

/* Engine busy from t0 to t1 (both inside the open period). */
static void add_busy(struct fw_pm *pm, uint64_t t0, uint64_t t1)
{
	if (pm->active == FW_PM_IDLE || t1 <= t0)
		return;
	pm->period_busy_ns[pm->active] += t1 - t0;
	pm->class_ns[pm->active] += t1 - t0;
	pm->busy_ns += t1 - t0;
}

/* An idle gap of n periods, in closed form: steady idle at nominal clock. */
static void settle_idle(struct fw_pm *pm, uint64_t n)
{
	double zero[FW_PM_CLASSES] = { 0 };
	double power, dt = period_s(pm) * (double)n, steady;

	fw_pm_restart(pm);
	power = model_power(pm, 1.0, zero, 0.0);
	pm->energy_uj += power * dt * 1e6;
	steady = pm->p.ambient_c + pm->p.r_th_c_per_w * power;
	pm->temp_c = steady + (pm->temp_c - steady) * exp(-dt / pm->p.tau_s);
	pm->power_inst_w = power;
	for (unsigned int i = 0; i < pm->p.window_periods; i++) {
		pm->win_power[i] = power;
		pm->win_busy[i] = 0.0;
		pm->win_tensor[i] = 0.0;
		pm->win_hbm[i] = 0.0;
		pm->win_mfu[i] = 0.0;
	}
	pm->win_fill = pm->p.window_periods;
	pm->win_next = 0;
	pm->period_start_ns += n * pm->p.period_ns;
	pm->now_ns = pm->period_start_ns;
}

void fw_pm_advance(struct fw_pm *pm, uint64_t now_ns)
{
	unsigned int steps = 0;

	if (now_ns <= pm->now_ns)
		return;
	while (now_ns - pm->period_start_ns >= pm->p.period_ns) {
		uint64_t end = pm->period_start_ns + pm->p.period_ns;

		if (++steps > MAX_STEPS) {
			uint64_t n = (now_ns - pm->period_start_ns) / pm->p.period_ns;

			/* A gap this long with a command running is a stuck clock read; idle it. */
			add_busy(pm, pm->now_ns, pm->period_start_ns);
			settle_idle(pm, n);
			break;
		}
		add_busy(pm, pm->now_ns, end);
		pm->now_ns = end;
		close_period(pm);
		pm->period_start_ns = end;
	}
	add_busy(pm, pm->now_ns, now_ns);
	pm->now_ns = now_ns;
}

void fw_pm_set_active(struct fw_pm *pm, uint64_t now_ns, int cls)
{
	fw_pm_advance(pm, now_ns);
	pm->active = cls >= 0 && cls < FW_PM_CLASSES ? cls : FW_PM_IDLE;
}

/* The command's work at clock ratio r, ns: the longest of compute, HBM and link. */
static uint64_t work_ns(const struct fw_cost *c, double r)
{
	return fw_cost_ns(c, r) - c->fixed_ns;
}

uint64_t fw_pm_run(struct fw_pm *pm, uint64_t start, const struct fw_cost *c)
{
	double r = (double)pm->clock_mhz / pm->p.nominal_mhz;
	uint64_t t, total = work_ns(c, r), left = total;
	double done = 0.0;	/* fraction of the work done, for bytes and flops */

	if (start < pm->now_ns) {
		/*
		 * It runs beside a command of another engine the controller
		 * has walked past its start: at the present clock, its bytes
		 * and flops counted in the present period.
		 */
		t = start + fw_cost_ns(c, r);
		pm->period_bytes += (double)c->hbm_bytes;
		pm->period_peak_ns += (double)c->peak_ns;
		if (t > pm->now_ns) {
			fw_pm_set_active(pm, pm->now_ns, c->cls);
			fw_pm_set_active(pm, t, FW_PM_IDLE);
		}
		return t;
	}
	fw_pm_set_active(pm, start, c->cls);
	t = start + c->fixed_ns;
	fw_pm_advance(pm, t);
	/*
	 * Period by period: the clock may change at a period's end. While it
	 * does not, the time left is counted in whole ns, so a command takes
	 * exactly fw_cost_ns() wherever it falls between the periods.
	 */
	while (left) {
		uint64_t period_end = pm->period_start_ns + pm->p.period_ns;
		uint64_t step = left < period_end - t ? left : period_end - t;
		double seg = (double)step / (double)total;

		if (step == left)
			seg = 1.0 - done;
		pm->period_bytes += seg * (double)c->hbm_bytes;
		pm->period_peak_ns += seg * (double)c->peak_ns;
		done += seg;
		left -= step;
		t += step;
		fw_pm_advance(pm, t);
		if (left && (double)pm->clock_mhz / pm->p.nominal_mhz != r) {
			/* the rest of the work at the new clock */
			r = (double)pm->clock_mhz / pm->p.nominal_mhz;
			total = work_ns(c, r);
			left = (uint64_t)ceil((1.0 - done) * (double)total);
			done = 1.0 - (double)left / (double)total;
		}
	}
	fw_pm_set_active(pm, t, FW_PM_IDLE);
	return t;
}

static double window_avg(const struct fw_pm *pm, const double *v)
{
	double sum = 0.0;

	if (!pm->win_fill)
		return 0.0;
	for (unsigned int i = 0; i < pm->win_fill; i++)
		sum += v[i];
	return sum / pm->win_fill;
}

double fw_pm_power_avg_w(const struct fw_pm *pm)
{
	if (!pm->win_fill)
		return model_power(pm, (double)pm->clock_mhz / pm->p.nominal_mhz,
				   (const double[FW_PM_CLASSES]){ 0 }, 0.0);
	return window_avg(pm, pm->win_power);
}

double fw_pm_util(const struct fw_pm *pm)
{
	return window_avg(pm, pm->win_busy);
}

double fw_pm_tensor_util(const struct fw_pm *pm)
{
	return window_avg(pm, pm->win_tensor);
}

double fw_pm_hbm_util(const struct fw_pm *pm)
{
	return window_avg(pm, pm->win_hbm);
}

double fw_pm_mfu(const struct fw_pm *pm)
{
	return window_avg(pm, pm->win_mfu);
}

/* ---- the device side ---- */

/*
 * After the model ran: the power controller interrupts when it starts
 * throttling for a reason, and clock changes are traced so that a
 * throttling device shows up in QEMU's trace.
 */
static void note_changes_locked(struct maia_sim *sim, uint32_t clock, uint32_t reasons)
{
	struct fw_pm *pm = &sim->telem.pm;

	if (pm->reasons & ~reasons)
		sim->telem.raise_pending |= fw_int_assert_locked(sim, MAIA_INT_THERMAL);
	if (pm->clock_mhz != clock)
		fw_trace(sim, "power: clock %u -> %u MHz, %.1f W (cap %u W), %.1f C, reasons 0x%x",
			       clock, pm->clock_mhz, pm->power_inst_w, pm->p.cap_mw / 1000u,
			       pm->temp_c, pm->reasons);
}

/* The default cap: the firmware's TDP record, or the chip's TDP, at most its design power. */
static uint32_t tdp_mw(const struct maia_sim *sim)
{
	uint64_t tdp = sim->fw.tdp_w ? (uint64_t)sim->fw.tdp_w * 1000u
				     : (uint64_t)sim->chip.tdp_w * 1000u;

	return tdp > sim->telem.pm.p.cap_max_mw ? sim->telem.pm.p.cap_max_mw : (uint32_t)tdp;
}

/* Firmware parameters as the running firmware (or its defaults) set them. */
static void sync_fw_locked(struct maia_sim *sim)
{
	uint32_t cap = sim->power_cap_mw ? sim->power_cap_mw : tdp_mw(sim);

	fw_pm_set_firmware(&sim->telem.pm, sim->fw.clock_mhz, cap);
}

int fw_telem_create(struct maia_sim *sim)
{
	struct fw_telem *t = &sim->telem;

	t->tiles = sim->cfg.clusters * sim->cfg.tiles_per_cluster;
	t->tile_ns = calloc(t->tiles, sizeof(*t->tile_ns));
	return t->tile_ns ? 0 : -1;
}

void fw_telem_destroy(struct maia_sim *sim)
{
	free(sim->telem.tile_ns);
	sim->telem.tile_ns = NULL;
}

void fw_telem_reset_locked(struct maia_sim *sim)
{
	struct fw_telem *t = &sim->telem;

	if (!t->initialized) {
		struct fw_pm_params p;

		fw_pm_params_of_chip(&p, &sim->chip);
		fw_pm_init(&t->pm, &p, 0);	/* modeled time starts at power-on */
		t->initialized = true;
		return;
	}
	/* Counters are always on; the firmware's clock control starts over. */
	fw_pm_restart(&t->pm);
	sim->irq.status &= ~MAIA_INT_THERMAL;
	t->raise_pending = false;
}

void fw_telem_unlock_and_raise(struct maia_sim *sim)
{
	bool raise = sim->telem.raise_pending;

	sim->telem.raise_pending = false;
	pthread_mutex_unlock(&sim->lock);
	if (raise)
		fw_raise(sim, MAIA_VEC_EVENT);
}

bool fw_telem_cap_valid_locked(struct maia_sim *sim, uint32_t cap_mw)
{
	return fw_pm_cap_valid(&sim->telem.pm, cap_mw);
}

bool fw_telem_is_reg(uint32_t offset)
{
	return (offset >= MAIA_REG_TELEMETRY_BASE && offset < MAIA_REG_TELEM_END) ||
	       (offset >= MAIA_REG_TELEM_TVP_BASE && offset < MAIA_REG_TELEM_TVP_END) ||
	       (offset >= MAIA_REG_TELEM_TILE_NS_BASE && offset < MAIA_REG_TELEM_TILE_NS_END);
}

/* The per-tile window: tiles past the device's read 0. */
static uint32_t tile_read_locked(struct maia_sim *sim, uint32_t offset)
{
	struct fw_telem *t = &sim->telem;
	uint32_t tile = (offset - MAIA_REG_TELEM_TILE_NS_BASE) / 8u;
	uint64_t v = tile < t->tiles ? t->tile_ns[tile] : 0;

	if (offset % 8u == 0) {
		t->tile_latch = tile;
		t->tile_latch_hi = (uint32_t)(v >> 32);
		return (uint32_t)v;
	}
	return t->tile_latch == tile ? t->tile_latch_hi : (uint32_t)(v >> 32);
}

static uint32_t to_u32(double v)
{
	if (!(v > 0.0))
		return 0;
	if (v >= 4294967295.0)
		return UINT32_MAX;
	return (uint32_t)(v + 0.5);
}

/* A fraction as 0..10000 (0.01 %), capped at 100 %. */
static uint32_t to_bp(double v)
{
	return to_u32((v > 1.0 ? 1.0 : v) * 1e4);
}

static bool counter64(const struct maia_sim *sim, uint32_t lo, uint64_t *v)
{
	const struct fw_telem *t = &sim->telem;
	const struct fw_pm *pm = &t->pm;

	switch (lo) {
	case MAIA_REG_TELEM_TIME_NS_LO:		*v = pm->now_ns; break;
	case MAIA_REG_TELEM_ENERGY_UJ_LO:	*v = (uint64_t)pm->energy_uj; break;
	case MAIA_REG_TELEM_BUSY_NS_LO:		*v = pm->busy_ns; break;
	case MAIA_REG_TELEM_TENSOR_NS_LO:	*v = pm->class_ns[FW_PM_TENSOR]; break;
	case MAIA_REG_TELEM_VECTOR_NS_LO:	*v = pm->class_ns[FW_PM_VECTOR]; break;
	case MAIA_REG_TELEM_DMA_NS_LO:		*v = pm->class_ns[FW_PM_DMA]; break;
	case MAIA_REG_TELEM_HBM_READ_LO:	*v = t->hbm_read; break;
	case MAIA_REG_TELEM_HBM_WRITE_LO:	*v = t->hbm_write; break;
	case MAIA_REG_TELEM_DMA_BYTES_LO:	*v = t->dma_bytes; break;
	case MAIA_REG_TELEM_FLOPS_LO:		*v = t->flops; break;
	case MAIA_REG_TELEM_TILE_BUSY_NS_LO:	*v = t->tile_busy_ns; break;
	case MAIA_REG_TELEM_THROTTLED_NS_LO:	*v = pm->throttled_ns; break;
	case MAIA_REG_TELEM_COMMANDS_LO:	*v = t->commands; break;
	case MAIA_REG_TELEM_PEAK_NS_LO:		*v = t->peak_ns; break;
	default:
		return false;
	}
	return true;
}

static bool reg32(struct maia_sim *sim, uint32_t offset, uint32_t *val)
{
	const struct fw_pm *pm = &sim->telem.pm;

	switch (offset) {
	case MAIA_REG_TELEM_VERSION:		*val = MAIA_TELEM_VERSION_1_3; break;
	case MAIA_REG_TELEM_PERIOD_US:		*val = (uint32_t)(pm->p.period_ns / 1000u); break;
	case MAIA_REG_TELEM_WINDOW_US:
		*val = (uint32_t)(pm->p.period_ns * pm->p.window_periods / 1000u);
		break;
	case MAIA_REG_TELEM_CLOCK_MHZ:		*val = pm->clock_mhz; break;
	case MAIA_REG_TELEM_CLOCK_NOMINAL_MHZ:	*val = pm->p.nominal_mhz; break;
	case MAIA_REG_TELEM_CLOCK_MIN_MHZ:	*val = fw_pm_min_mhz(pm); break;
	case MAIA_REG_TELEM_POWER_MW:		*val = to_u32(fw_pm_power_avg_w(pm) * 1e3); break;
	case MAIA_REG_TELEM_POWER_INST_MW:	*val = to_u32(pm->power_inst_w * 1e3); break;
	case MAIA_REG_TELEM_POWER_CAP_MW:	*val = pm->p.cap_mw; break;
	case MAIA_REG_TELEM_POWER_CAP_MIN_MW:	*val = FW_PM_CAP_MIN_MW; break;
	case MAIA_REG_TELEM_POWER_CAP_MAX_MW:	*val = pm->p.cap_max_mw; break;
	case MAIA_REG_TELEM_TDP_MW:		*val = tdp_mw(sim); break;
	case MAIA_REG_TELEM_TEMP_MC:		*val = to_u32(pm->temp_c * 1e3); break;
	case MAIA_REG_TELEM_TEMP_THROTTLE_MC:	*val = to_u32(pm->p.throttle_c * 1e3); break;
	case MAIA_REG_TELEM_TEMP_CRIT_MC:	*val = to_u32(pm->p.crit_c * 1e3); break;
	case MAIA_REG_TELEM_THROTTLE_REASONS:	*val = pm->reasons; break;
	case MAIA_REG_TELEM_THROTTLE_EVENTS:	*val = pm->events; break;
	case MAIA_REG_TELEM_UTIL:		*val = to_bp(fw_pm_util(pm)); break;
	case MAIA_REG_TELEM_TENSOR_UTIL:	*val = to_bp(fw_pm_tensor_util(pm)); break;
	case MAIA_REG_TELEM_TILES:		*val = sim->telem.tiles; break;
	case MAIA_REG_TELEM_HBM_UTIL:		*val = to_bp(fw_pm_hbm_util(pm)); break;
	case MAIA_REG_TELEM_MFU:		*val = to_bp(fw_pm_mfu(pm)); break;
	default:
		return false;
	}
	return true;
}

bool fw_telem_read_locked(struct maia_sim *sim, uint32_t offset, uint32_t *val)
{
	struct fw_telem *t = &sim->telem;
	unsigned int slot = (offset - MAIA_REG_TELEMETRY_BASE) / 4u;
	uint64_t v;

	*val = 0;
	if (offset >= MAIA_REG_TELEM_TILE_NS_BASE) {
		*val = tile_read_locked(sim, offset);
		return true;
	}
	if (offset >= MAIA_REG_TELEM_TVP_BASE && offset < MAIA_REG_TELEM_TVP_END) {
		unsigned int i = (offset - MAIA_REG_TELEM_TVP_BASE) / 8u;

		v = i < MAIA_TVP_NUM_CLASSES ? t->tvp_insns[i] : t->tvp_kernels;
		if (offset % 8u == 0) {		/* LO latches HI */
			t->tvp_latch_hi[i] = (uint32_t)(v >> 32);
			*val = (uint32_t)v;
		} else {
			*val = t->tvp_latch_hi[i];
		}
		return true;
	}
	sync_fw_locked(sim);
	if (reg32(sim, offset, val))
		return true;
	if (offset >= MAIA_REG_TELEM_TIME_NS_LO && offset <= MAIA_REG_TELEM_LAST) {
		uint32_t lo = offset & ~7u;

		if (offset == lo) {
			if (!counter64(sim, lo, &v))
				return false;
			t->latch_hi[slot + 1] = (uint32_t)(v >> 32);
			*val = (uint32_t)v;
			return true;
		}
		if (!counter64(sim, lo, &v))
			return false;
		*val = t->latch_hi[slot];
		return true;
	}
	return false;
}

uint64_t fw_telem_run_locked(struct maia_sim *sim, uint64_t start, const struct fw_cost *c,
			     uint64_t hbm_write, uint64_t dma_bytes)
{
	struct fw_telem *t = &sim->telem;
	struct fw_pm *pm = &t->pm;
	uint32_t clock = pm->clock_mhz, reasons = pm->reasons;
	uint64_t end;
	unsigned int n = c->tiles < t->tiles ? c->tiles : t->tiles;

	sync_fw_locked(sim);
	end = fw_pm_run(pm, start, c);
	note_changes_locked(sim, clock, reasons);
	t->hbm_read += c->hbm_bytes - hbm_write;
	t->hbm_write += hbm_write;
	t->dma_bytes += dma_bytes;
	t->flops += c->flops;
	t->peak_ns += c->peak_ns;
	t->commands++;
	for (unsigned int i = 0; i < n; i++)
		t->tile_ns[i] += end - start;
	t->tile_busy_ns += (end - start) * n;
	return end;
}

void fw_telem_tvp_locked(struct maia_sim *sim, const uint64_t insns[MAIA_TVP_NUM_CLASSES],
			 bool validated)
{
	struct fw_telem *t = &sim->telem;

	for (unsigned int c = 0; c < MAIA_TVP_NUM_CLASSES; c++)
		t->tvp_insns[c] += insns[c];
	if (validated)
		t->tvp_kernels++;
}
