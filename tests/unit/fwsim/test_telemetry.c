// SPDX-License-Identifier: MIT
/*
 * firmware-sim telemetry: the power/thermal/throttle model on virtual time
 * (values checked against closed-form references computed here from the
 * parameters), then the register block on a booted device: counters that
 * move with the modeled work, the power cap through the mailbox, throttling
 * that stretches jobs in modeled time, and counters that survive a device
 * reset.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "../../../firmware-sim/src/fw_telemetry.h"
#include "harness.h"
#include "maia/hw/telemetry.h"
#include "maia/hw/tensor.h"
#include "tap.h"

#define MS	1000000ull
#define SEC	1000000000ull

static bool near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

/*
 * The model's parameters with a 10 ms control period and a 1 s window: the
 * virtual times below are written for them (the device's is 100 us).
 */
static void params(struct fw_pm_params *p)
{
	fw_pm_params_defaults(p);
	p->period_ns = 10 * MS;
	p->window_periods = 100;
}

/* Reference power: the formula in Documentation/telemetry.rst, by hand. */
static double ref_power(const struct fw_pm_params *p, double r, double tensor_busy)
{
	return p->idle_static_w + p->idle_clock_w * r +
	       p->dyn_w[FW_PM_TENSOR] * r * r * r * tensor_busy;
}

static void test_model_idle_and_energy(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;
	double idle;

	params(&p);
	fw_pm_init(&pm, &p, 1000);
	idle = ref_power(&p, 1.0, 0.0);
	fw_pm_advance(&pm, 1000 + 2 * SEC);
	tap_ok(near(fw_pm_power_avg_w(&pm), idle, 1e-9),
	       "idle power %.3f W = static + clock (%.3f W)", fw_pm_power_avg_w(&pm), idle);
	tap_ok(near(pm.energy_uj, idle * 2.0 * 1e6, 1e-9),
	       "2 s idle: energy %.0f uJ = P * t", pm.energy_uj);
	tap_ok(pm.clock_mhz == p.nominal_mhz && pm.events == 0 && pm.reasons == 0,
	       "idle: nominal clock, no throttling");
	/* Advancing backwards or not at all changes nothing. */
	fw_pm_advance(&pm, 1000);
	tap_ok(near(pm.energy_uj, idle * 2.0 * 1e6, 1e-9), "time going back is ignored");

	/* A long idle gap: fast, and the energy still adds up. */
	{
		double e0 = pm.energy_uj;
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		fw_pm_advance(&pm, 1000 + 2 * SEC + 3600 * SEC);
		clock_gettime(CLOCK_MONOTONIC, &b);
		tap_ok(near(pm.energy_uj - e0, idle * 3600.0 * 1e6, 1e-6) &&
		       (b.tv_sec - a.tv_sec) < 2,
		       "1 h idle gap: energy %.0f J, settled at ambient %.2f C",
		       (pm.energy_uj - e0) * 1e-6, pm.temp_c);
		tap_ok(near(pm.temp_c, p.ambient_c + p.r_th_c_per_w * idle, 1e-6),
		       "idle steady temperature = ambient + R * P_idle (%.3f C)", pm.temp_c);
	}
}

static void test_model_busy_accounting(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;

	params(&p);
	fw_pm_init(&pm, &p, 0);
	fw_pm_set_active(&pm, 100 * MS, FW_PM_TENSOR);
	fw_pm_set_active(&pm, 350 * MS, FW_PM_IDLE);
	fw_pm_set_active(&pm, 400 * MS, FW_PM_DMA);
	fw_pm_set_active(&pm, 405 * MS, FW_PM_IDLE);
	fw_pm_advance(&pm, 1000 * MS);
	tap_ok(pm.class_ns[FW_PM_TENSOR] == 250 * MS && pm.class_ns[FW_PM_DMA] == 5 * MS &&
	       pm.busy_ns == 255 * MS && pm.class_ns[FW_PM_VECTOR] == 0,
	       "busy time per class is exact (tensor %llu, dma %llu ns)",
	       (unsigned long long)pm.class_ns[FW_PM_TENSOR],
	       (unsigned long long)pm.class_ns[FW_PM_DMA]);
	tap_ok(near(fw_pm_util(&pm), 0.255, 1e-9) && near(fw_pm_tensor_util(&pm), 0.25, 1e-9),
	       "utilization over the 1 s window: %.3f (tensor %.3f)",
	       fw_pm_util(&pm), fw_pm_tensor_util(&pm));
}

/* Full tensor load from t = 0 to t = end on a fresh model with the given cap. */
static void run_loaded(struct fw_pm *pm, const struct fw_pm_params *p, uint64_t end)
{
	fw_pm_init(pm, p, 0);
	fw_pm_set_active(pm, 0, FW_PM_TENSOR);
	fw_pm_advance(pm, end);
}

static void test_model_full_load(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;
	double full, t_ref;

	params(&p);
	full = ref_power(&p, 1.0, 1.0);
	/* The deployment guide: a full GEMM load is over 90 % of the 500 W TDP ... */
	run_loaded(&pm, &p, 1500 * MS);
	tap_ok(full > 450.0 && pm.clock_mhz == p.nominal_mhz * 9 / 10 && pm.events == 1 &&
	       near(pm.power_inst_w, ref_power(&p, 0.9, 1.0), 1e-9),
	       "full tensor load at the default %u W cap (%.1f W at nominal): one 10 %% step, %.1f W",
	       p.cap_mw / 1000, full, pm.power_inst_w);
	/* ... and under it at the 700 W design power. */
	p.cap_mw = p.cap_max_mw;
	run_loaded(&pm, &p, 1500 * MS);
	tap_ok(near(pm.power_inst_w, full, 1e-9) && pm.clock_mhz == p.nominal_mhz && !pm.events,
	       "full tensor load at a %u W cap: %.1f W, no throttling",
	       p.cap_mw / 1000, pm.power_inst_w);
	/* First-order response: T(t) = Ts + (T0 - Ts) e^(-t/tau), sampled per period. */
	t_ref = p.ambient_c + p.r_th_c_per_w * full * (1.0 - exp(-1.5 / p.tau_s));
	tap_ok(fabs(pm.temp_c - t_ref) < 0.01,
	       "temperature after one time constant %.3f C (reference %.3f C)", pm.temp_c, t_ref);
	fw_pm_advance(&pm, 30 * SEC);
	tap_ok(fabs(pm.temp_c - (p.ambient_c + p.r_th_c_per_w * full)) < 0.01,
	       "steady temperature %.2f C = ambient + R * P", pm.temp_c);
}

static void test_model_power_throttle(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;
	double limit, r = 1.0;
	uint32_t expect_mhz, steps = 0;

	params(&p);
	p.cap_mw = 300000;
	limit = 300.0 * p.threshold_pct / 100.0;
	/* Reference: step 10 % of nominal until the model power is under the limit. */
	while (ref_power(&p, r, 1.0) > limit && r > p.min_pct / 100.0 + 1e-9) {
		r -= p.step_pct / 100.0;
		steps++;
	}
	expect_mhz = (uint32_t)lround(p.nominal_mhz * r);

	run_loaded(&pm, &p, 25 * MS);
	tap_ok(pm.clock_mhz == p.nominal_mhz, "over the cap for 2 periods: not throttled yet");
	fw_pm_advance(&pm, 35 * MS);
	tap_ok(pm.clock_mhz == p.nominal_mhz - p.nominal_mhz * p.step_pct / 100 &&
	       pm.events == 1 && pm.reasons == MAIA_THROTTLE_POWER,
	       "after 3 periods over 90 %% of the cap: one 10 %% step (%u MHz), reason POWER",
	       pm.clock_mhz);
	fw_pm_advance(&pm, 3 * SEC);
	tap_ok(pm.clock_mhz == expect_mhz && pm.events == steps,
	       "settles at %u MHz after %u steps (reference %u MHz, %u steps)",
	       pm.clock_mhz, pm.events, expect_mhz, steps);
	tap_ok(fw_pm_power_avg_w(&pm) <= 300.0 && pm.power_inst_w <= limit,
	       "average power %.1f W under the 300 W cap, period power %.1f W under %.0f W",
	       fw_pm_power_avg_w(&pm), pm.power_inst_w, limit);
	tap_ok(pm.throttled_ns > 2900 * MS, "throttled time counted (%llu ms)",
	       (unsigned long long)(pm.throttled_ns / MS));

	/* Load gone: the clock climbs back, reason clears, events stay. */
	fw_pm_set_active(&pm, pm.now_ns, FW_PM_IDLE);
	fw_pm_advance(&pm, pm.now_ns + 1 * SEC);
	tap_ok(pm.clock_mhz == p.nominal_mhz && pm.reasons == 0 && pm.events == steps,
	       "idle again: back to %u MHz, reasons 0, events still %u", pm.clock_mhz, pm.events);
}

static void test_model_thermal_throttle(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;

	params(&p);
	p.cap_mw = p.cap_max_mw;
	p.ambient_c = 75.0;	/* a hot aisle: 75 + 0.1 * 485 W would be 123.5 C */
	run_loaded(&pm, &p, 20 * SEC);
	tap_ok((pm.reasons & MAIA_THROTTLE_THERMAL) && !(pm.reasons & MAIA_THROTTLE_POWER) &&
	       pm.clock_mhz < p.nominal_mhz,
	       "hot ambient: thermal throttling to %u MHz (reasons 0x%x)", pm.clock_mhz, pm.reasons);
	tap_ok(pm.temp_c < p.throttle_c + 2.0,
	       "temperature held near the %.0f C limit (%.2f C)", p.throttle_c, pm.temp_c);
}

static void test_model_limits(void)
{
	struct fw_pm_params p;
	struct fw_pm pm;

	params(&p);
	fw_pm_init(&pm, &p, 0);
	tap_ok(p.cap_max_mw == 700000 && !fw_pm_cap_valid(&pm, 0) &&
	       !fw_pm_cap_valid(&pm, FW_PM_CAP_MIN_MW - 1) &&
	       fw_pm_cap_valid(&pm, FW_PM_CAP_MIN_MW) && fw_pm_cap_valid(&pm, 700000) &&
	       !fw_pm_cap_valid(&pm, 700001) && !fw_pm_cap_valid(&pm, UINT32_MAX),
	       "cap range %u..%u mW (Maia 100's design power)", FW_PM_CAP_MIN_MW, p.cap_max_mw);
	/* The lowest cap with a load that cannot get under it: stops at the minimum clock. */
	p.cap_mw = FW_PM_CAP_MIN_MW;
	p.idle_static_w = 95.0;
	run_loaded(&pm, &p, 5 * SEC);
	tap_ok(pm.clock_mhz == fw_pm_min_mhz(&pm) && pm.reasons == MAIA_THROTTLE_POWER,
	       "unreachable cap: clock floors at %u MHz and stays throttled", pm.clock_mhz);
	/* Firmware with a zero or absurd clock/TDP is clamped, not divided by. */
	fw_pm_set_firmware(&pm, 0, UINT32_MAX);
	fw_pm_advance(&pm, 6 * SEC);
	tap_ok(pm.p.nominal_mhz >= 1 && pm.p.cap_mw == pm.p.cap_max_mw && isfinite(pm.energy_uj),
	       "bad firmware values are clamped");
}

/* ---- the register block on a device ---- */

static struct env env;
static struct tq q0;
static uint64_t copy_src;	/* 4 MiB of host memory */

static uint64_t rd64(uint32_t lo)
{
	uint64_t v = rd(&env, lo);

	return v | (uint64_t)rd(&env, lo + 4) << 32;
}

/* One job copying len bytes host -> HBM n times; returns its device duration. */
static uint64_t copy_job(uint64_t len, unsigned int n)
{
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	uint64_t src = copy_src;

	cb_init(&cb);
	for (unsigned int i = 0; i < n; i++)
		cmd_copy(&cb, src, MAIA_PHYS_HBM + (1u << 20), len, 1, 0, 0);
	cqe = run_cb(&env, &q0, &cb);
	if (cqe.status != MAIA_STATUS_OK)
		return 0;
	return cqe.end_ns - cqe.start_ns;
}

static void test_device_registers(void)
{
	uint64_t e0, e1, t0, t1, dma0, hbmw0, busy0, cmds0;
	uint32_t resp[4], errs;

	tap_ok(rd(&env, MAIA_REG_CAPS) & MAIA_CAP_TELEMETRY, "CAPS advertises telemetry");
	tap_ok(rd(&env, MAIA_REG_TELEM_VERSION) == MAIA_TELEM_VERSION_1_3, "telemetry version 1.3");
	tap_ok(rd(&env, MAIA_REG_TELEM_CLOCK_NOMINAL_MHZ) == 1500 &&
	       rd(&env, MAIA_REG_TELEM_CLOCK_MHZ) == 1500 &&
	       rd(&env, MAIA_REG_TELEM_TDP_MW) == 500000 &&
	       rd(&env, MAIA_REG_TELEM_POWER_CAP_MW) == 500000,
	       "clock and TDP come from the firmware TLVs (1500 MHz, 500 W)");
	tap_ok(rd(&env, MAIA_REG_TELEM_TILES) == 64, "busy counters cover 64 tiles");
	{
		uint32_t t = rd(&env, MAIA_REG_TELEM_TEMP_MC);

		tap_ok(t >= 35000 && t < 95000, "temperature %u mC between ambient and the limit", t);
	}

	errs = guest_errors(&env);
	wr(&env, MAIA_REG_TELEM_POWER_CAP_MW, 1);
	rd(&env, 0x1fc);
	tap_ok(guest_errors(&env) == errs + 2 && rd(&env, MAIA_REG_TELEM_POWER_CAP_MW) == 500000,
	       "writes are read-only errors, holes are unmapped");

	tap_ok(mbox(&env, MAIA_MBOX_SET_POWER_CAP, FW_PM_CAP_MIN_MW - 1, 0, 0, NULL) ==
	       MAIA_MBOX_EINVAL &&
	       mbox(&env, MAIA_MBOX_SET_POWER_CAP, 700001, 0, 0, NULL) ==
	       MAIA_MBOX_EINVAL &&
	       rd(&env, MAIA_REG_TELEM_POWER_CAP_MW) == 500000,
	       "caps outside %u..%u mW are EINVAL and change nothing",
	       rd(&env, MAIA_REG_TELEM_POWER_CAP_MIN_MW), rd(&env, MAIA_REG_TELEM_POWER_CAP_MAX_MW));
	tap_ok(mbox(&env, MAIA_MBOX_SET_POWER_CAP, 350000, 0, 0, resp) == MAIA_MBOX_OK &&
	       rd(&env, MAIA_REG_TELEM_POWER_CAP_MW) == 350000, "cap set to 350 W");

	e0 = rd64(MAIA_REG_TELEM_ENERGY_UJ_LO);
	t0 = rd64(MAIA_REG_TELEM_TIME_NS_LO);
	dma0 = rd64(MAIA_REG_TELEM_DMA_BYTES_LO);
	hbmw0 = rd64(MAIA_REG_TELEM_HBM_WRITE_LO);
	busy0 = rd64(MAIA_REG_TELEM_DMA_NS_LO);
	cmds0 = rd64(MAIA_REG_TELEM_COMMANDS_LO);
	tap_ok(copy_job(4u << 20, 8) > 0, "8 x 4 MiB host -> HBM copy job");
	tap_ok(rd64(MAIA_REG_TELEM_DMA_BYTES_LO) - dma0 == 32ull << 20 &&
	       rd64(MAIA_REG_TELEM_HBM_WRITE_LO) - hbmw0 == 32ull << 20,
	       "DMA bytes and HBM bytes written grow by exactly 32 MiB");
	tap_ok(rd64(MAIA_REG_TELEM_COMMANDS_LO) - cmds0 == 8 &&
	       rd64(MAIA_REG_TELEM_DMA_NS_LO) > busy0, "8 commands, DMA busy time grew");
	e1 = rd64(MAIA_REG_TELEM_ENERGY_UJ_LO);
	t1 = rd64(MAIA_REG_TELEM_TIME_NS_LO);
	/*
	 * Modeled time: 32 MiB over the 32 GB/s host link is at least 1 ms;
	 * at least idle power (>= 60 W) for it, less one 100 us period.
	 */
	tap_ok(t1 - t0 >= 1000000 && e1 > e0 &&
	       (double)(e1 - e0) >= 60.0 * ((double)(t1 - t0) * 1e-9 - 0.0001) * 1e6,
	       "energy grows with time: %llu uJ in %llu us",
	       (unsigned long long)(e1 - e0), (unsigned long long)((t1 - t0) / 1000));
}

/* An FP32 n x n x n GEMM command on HBM operands (allocated once, n <= 1024). */
static void gemm_cmd(struct maia_cmd_gemm *g, uint32_t n)
{
	static uint64_t addr[3];
	struct maia_tensor_desc *d[3] = { &g->a, &g->b, &g->c };

	memset(g, 0, sizeof(*g));
	g->hdr.opcode = MAIA_OP_GEMM;
	g->hdr.size = sizeof(*g);
	for (int i = 0; i < 3; i++) {
		if (!addr[i])
			addr[i] = hbm_alloc(&env, 4u << 20, 4096);
		d[i]->addr = MAIA_PHYS_HBM | addr[i];
		d[i]->dtype = MAIA_DTYPE_FP32;
		d[i]->rank = 2;
		d[i]->shape[0] = d[i]->shape[1] = n;
		d[i]->strides[0] = n;
		d[i]->strides[1] = 1;
	}
}

/* One 1024^3 FP32 GEMM, compute-bound on Maia 100; its modeled duration. */
static uint64_t gemm_job(void)
{
	struct maia_cmd_gemm g;
	struct maia_cq_entry cqe;
	struct cmdbuf cb;

	gemm_cmd(&g, 1024);
	cb_init(&cb);
	cb_add(&cb, &g, sizeof(g));
	cqe = run_cb(&env, &q0, &cb);
	return cqe.status == MAIA_STATUS_OK ? cqe.end_ns - cqe.start_ns : 0;
}

static void test_device_throttle_and_reset(void)
{
	uint64_t d0, d1, e0, ev0;
	uint32_t clock = 0, reasons = 0, irq0;

	/* Unthrottled: the same job takes the same modeled time, every time. */
	d0 = gemm_job();
	d1 = gemm_job();
	tap_ok(d0 && d0 == d1, "a 1024^3 FP32 GEMM takes %llu ns of modeled time, twice the same",
	       (unsigned long long)d0);
	ev0 = rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS);
	tap_ok(!(rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_THERMAL),
	       "no THERMAL interrupt while unthrottled");
	tap_ok(mbox(&env, MAIA_MBOX_SET_POWER_CAP, FW_PM_CAP_MIN_MW, 0, 0, NULL) == MAIA_MBOX_OK,
	       "cap lowered to the minimum, 100 W");
	irq0 = irq_count(&env, MAIA_VEC_EVENT);
	/* DMA load: idle 85 W + DMA 120 W is over 90 W; each job is 2 ms of modeled time. */
	for (int i = 0; i < 20 && (!i || clock > 900); i++) {
		copy_job(4u << 20, 16);
		clock = rd(&env, MAIA_REG_TELEM_CLOCK_MHZ);
		reasons = rd(&env, MAIA_REG_TELEM_THROTTLE_REASONS);
	}
	tap_ok(clock <= 900 && (reasons & MAIA_THROTTLE_POWER) &&
	       rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS) >= ev0 + 4,
	       "sustained load over the cap throttles: %u MHz, reasons 0x%x, %u events",
	       clock, reasons, rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS));
	/*
	 * An interrupt when throttling starts (again if it stops and starts),
	 * not one per step-down.
	 */
	tap_ok((rd(&env, MAIA_REG_INT_STATUS) & MAIA_INT_THERMAL) &&
	       irq_count(&env, MAIA_VEC_EVENT) > irq0 &&
	       irq_count(&env, MAIA_VEC_EVENT) - irq0 < rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS) - ev0,
	       "throttling for the power cap raised THERMAL (%u event vectors for %u step-downs)",
	       irq_count(&env, MAIA_VEC_EVENT) - irq0,
	       (unsigned int)(rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS) - ev0));
	wr(&env, MAIA_REG_INT_STATUS, MAIA_INT_THERMAL);
	d1 = gemm_job();
	clock = rd(&env, MAIA_REG_TELEM_CLOCK_MHZ);
	tap_ok(d1 > d0 * 1.3,
	       "throttled at %u MHz the same job takes %llu us (was %llu us)", clock,
	       (unsigned long long)(d1 / 1000), (unsigned long long)(d0 / 1000));
	tap_ok(rd64(MAIA_REG_TELEM_THROTTLED_NS_LO) > 0, "throttled time is counted");

	/* Reset: counters keep going, firmware defaults come back after reboot. */
	e0 = rd64(MAIA_REG_TELEM_ENERGY_UJ_LO);
	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok(rd64(MAIA_REG_TELEM_ENERGY_UJ_LO) >= e0 &&
	       rd(&env, MAIA_REG_TELEM_THROTTLE_EVENTS) >= ev0 + 4,
	       "reset does not clear energy or throttle events");
	tap_ok(rd(&env, MAIA_REG_TELEM_CLOCK_MHZ) == 1500 &&
	       rd(&env, MAIA_REG_TELEM_THROTTLE_REASONS) == 0,
	       "reset: the restarted firmware runs at the nominal clock");
	boot_or_die(&env);
	tap_ok(rd(&env, MAIA_REG_TELEM_POWER_CAP_MW) == 500000,
	       "after reboot the cap is the firmware's TDP again");
}

/* Sum of the per-tile window over n tiles; *busy: how many are nonzero. */
static uint64_t tile_sum(unsigned int n, unsigned int *busy)
{
	uint64_t sum = 0;

	*busy = 0;
	for (unsigned int t = 0; t < n; t++) {
		uint64_t v = rd64(MAIA_REG_TELEM_TILE_NS_LO(t));

		sum += v;
		*busy += v != 0;
	}
	return sum;
}

/*
 * The per-tile window: a GEMM's tasks land on several tiles, the tiles add
 * up to TILE_BUSY_NS exactly, tiles past the topology read 0, the window
 * is read-only, and a reset keeps the counts.
 */
static void test_tile_window(void)
{
	unsigned int tiles = rd(&env, MAIA_REG_TELEM_TILES), busy0, busy1, errs;
	uint64_t sum0, sum1, total;
	struct maia_cmd_gemm g;
	struct maia_cq_entry cqe;
	struct cmdbuf cb;

	gemm_cmd(&g, 512);
	sum0 = tile_sum(tiles, &busy0);
	tap_ok(sum0 == rd64(MAIA_REG_TELEM_TILE_BUSY_NS_LO),
	       "per-tile counters add up to TILE_BUSY_NS before the GEMM (%llu ns)",
	       (unsigned long long)sum0);
	cb_init(&cb);
	cb_add(&cb, &g, sizeof(g));
	cqe = run_cb(&env, &q0, &cb);
	sum1 = tile_sum(tiles, &busy1);
	total = rd64(MAIA_REG_TELEM_TILE_BUSY_NS_LO);
	tap_ok(cqe.status == MAIA_STATUS_OK && sum1 > sum0 && sum1 == total,
	       "after a 512^3 GEMM the tiles add up to TILE_BUSY_NS (%llu ns, +%llu)",
	       (unsigned long long)total, (unsigned long long)(sum1 - sum0));
	tap_ok(busy1 >= 2, "the GEMM's tasks ran on %u tiles", busy1);
	tap_ok(rd64(MAIA_REG_TELEM_TILE_NS_LO(tiles)) == 0 &&
	       rd64(MAIA_REG_TELEM_TILE_NS_LO(MAIA_TELEM_MAX_TILES - 1)) == 0,
	       "tiles past the topology read 0");
	errs = guest_errors(&env);
	wr(&env, MAIA_REG_TELEM_TILE_NS_LO(0), 0);
	tap_ok(guest_errors(&env) == errs + 1 && tile_sum(tiles, &busy0) == sum1,
	       "the window is read-only: a write is a guest error and changes nothing");
	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 16, MAIA_QUEUE_PRIO_NORMAL);
	tap_ok(tile_sum(tiles, &busy0) == sum1, "a device reset keeps the per-tile counts");
}

int main(void)
{
	test_model_idle_and_energy();
	test_model_busy_accounting();
	test_model_full_load();
	test_model_power_throttle();
	test_model_thermal_throttle();
	test_model_limits();

	if (!tap_ok(env_init(&env, 2, 64u << 20, 64u << 20) == 0, "env_init"))
		return tap_done();
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 16, MAIA_QUEUE_PRIO_NORMAL);
	copy_src = host_alloc(&env, 4u << 20, 4096);
	test_device_registers();
	test_tile_window();
	test_device_throttle_and_reset();
	env_fini(&env);
	return tap_done();
}
