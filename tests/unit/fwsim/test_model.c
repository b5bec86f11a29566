// SPDX-License-Identifier: MIT
/*
 * The device time model (Documentation/hw/time-model.rst) against
 * closed-form values: each expected duration below is written out from the
 * formulas and the preset tables of that page, by hand, for shapes whose
 * best tiling is plain (a compute-bound shape fills every tile in whole
 * waves; an HBM- or overhead-bound one is bound whatever the tiling). Then
 * the power controller running commands in modeled time: deterministic,
 * throttled at the default cap and not at the design power.
 */
#include <string.h>

#include "maia/hw/tensor.h"
#include "../../../firmware-sim/src/fw_model.h"
#include "../../../firmware-sim/src/fw_telemetry.h"
#include "tap.h"

#define GIB	(1024ull * 1024ull * 1024ull)

static uint64_t up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static struct fw_mm_shape mm(uint64_t m, uint64_t n, uint64_t k, unsigned int a, unsigned int b,
			     unsigned int c)
{
	return (struct fw_mm_shape){ .batch = 1, .m = m, .n = n, .k = k,
				     .dtype_a = a, .dtype_b = b, .dtype_c = c };
}

static void test_presets(void)
{
	const struct fw_chip *m100 = fw_chip_by_name("maia100");
	const struct fw_chip *m200 = fw_chip_by_name("maia200");
	struct fw_chip half;

	tap_ok(m100 && m100->id == MAIA_MODEL_MAIA100 && m100->clusters == 16 &&
	       m100->tiles_per_cluster == 4 && m100->hbm_bytes == 64 * GIB &&
	       m100->hbm_mbps == 1800000 && m100->host_mbps == 32000 && m100->link_mbps == 50000 &&
	       m100->peak_gflops[MAIA_DTYPE_MX6] == 3000000 &&
	       m100->peak_gflops[MAIA_DTYPE_MX9] == 1500000 &&
	       m100->peak_gflops[MAIA_DTYPE_BF16] == 800000 && m100->tdp_w == 500 &&
	       m100->design_w == 700,
	       "maia100: 16 x 4 tiles, 64 GiB at 1.8 TB/s, MX6 3 / MX9 1.5 / BF16 0.8 PFLOPS, 500/700 W");
	tap_ok(m200 && m200->id == MAIA_MODEL_MAIA200 && m200->hbm_bytes == 216 * GIB &&
	       (m200->hbm_bytes & (m200->hbm_bytes - 1)) && m200->hbm_mbps == 7000000 &&
	       m200->peak_gflops[MAIA_DTYPE_MXFP4_E2M1] == 10000000 &&
	       m200->peak_gflops[MAIA_DTYPE_FP8_E4M3] == 5000000 && m200->tdp_w == 750,
	       "maia200: 216 GiB (not a power of two) at 7 TB/s, FP4 10 / FP8 5 PFLOPS, 750 W");
	tap_ok(!fw_chip_by_name("maia300") && !fw_chip_by_name(NULL) && !fw_chip_by_id(0),
	       "unknown models are refused");
	fw_chip_scale(m100, 8, 4, &half);
	tap_ok(half.peak_gflops[MAIA_DTYPE_BF16] == 400000 && half.clusters == 8 &&
	       half.hbm_mbps == m100->hbm_mbps,
	       "half the tiles: half the peak, the same HBM");
}

static void test_gemm(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	const struct fw_chip *m200 = fw_chip_by_id(MAIA_MODEL_MAIA200);
	struct fw_mm_shape s;
	struct fw_cost c;
	uint64_t compute, hbm, want;

	/*
	 * BF16 4096^3 on maia100: 512 x 512 blocks fill the 64 tiles in one
	 * wave; the operands fit in half the SRAM, so HBM moves A + B + C once.
	 */
	s = mm(4096, 4096, 4096, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16);
	fw_model_mm(m100, &s, &c);
	compute = up(2ull * 512 * 512 * 4096 * 64, 800000);
	hbm = up(3ull * 4096 * 4096 * 2 * 1000, 1800000);
	want = 1000 + compute;
	tap_ok(c.compute_ns == compute && c.hbm_ns == hbm && fw_cost_ns(&c, 1.0) == want &&
	       c.tiles == 64 && c.peak_ns == compute,
	       "BF16 4096^3 on maia100: compute-bound, %llu ns (want %llu), %.4f of peak",
	       (unsigned long long)fw_cost_ns(&c, 1.0), (unsigned long long)want,
	       (double)c.peak_ns / (double)fw_cost_ns(&c, 1.0));
	tap_ok(fw_cost_ns(&c, 0.9) == 1000 + (uint64_t)((double)compute / 0.9 + 0.5),
	       "at 90 %% clock the compute part takes 1/0.9 as long: %llu ns",
	       (unsigned long long)fw_cost_ns(&c, 0.9));

	/* MX6 (16 elements in 11 bytes plus a scale byte) at 3 POPS, BF16 out. */
	s = mm(4096, 4096, 4096, MAIA_DTYPE_MX6, MAIA_DTYPE_MX6, MAIA_DTYPE_BF16);
	fw_model_mm(m100, &s, &c);
	compute = up(2ull * 4096 * 4096 * 4096, 3000000);
	hbm = up((2ull * 4096 * 4096 / 16 * 12 + 4096ull * 4096 * 2) * 1000, 1800000);
	tap_ok(c.compute_ns == compute && c.hbm_ns == hbm && fw_cost_ns(&c, 1.0) == 1000 + compute,
	       "MX6 4096^3 on maia100: %llu ns compute, %llu ns HBM (want %llu, %llu)",
	       (unsigned long long)c.compute_ns, (unsigned long long)c.hbm_ns,
	       (unsigned long long)compute, (unsigned long long)hbm);

	/* A small GEMM is bound by its HBM bytes and the command overhead. */
	s = mm(256, 256, 256, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16);
	fw_model_mm(m100, &s, &c);
	hbm = up(3ull * 256 * 256 * 2 * 1000, 1800000);
	tap_ok(c.hbm_ns == hbm && fw_cost_ns(&c, 1.0) == 1000 + hbm && c.peak_ns < hbm,
	       "BF16 256^3 on maia100: HBM and overhead bound, %llu ns (want %llu), %.3f of peak",
	       (unsigned long long)fw_cost_ns(&c, 1.0), (unsigned long long)(1000 + hbm),
	       (double)c.peak_ns / (double)fw_cost_ns(&c, 1.0));

	/*
	 * MXFP4 8192^3 on maia200 (128 tiles): 256 blocks of 512 x 512, two
	 * whole waves. The operands do not fit in half the 272 MB SRAM, so A
	 * is read once per 1024-column cluster block and B per 1024-row one.
	 */
	s = mm(8192, 8192, 8192, MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_BF16);
	fw_model_mm(m200, &s, &c);
	compute = up(2ull * 2 * 512 * 512 * 8192 * 128, 10000000);
	hbm = up((2ull * (8192ull * 8192 / 32 * 17) * 8 + 8192ull * 8192 * 2) * 1000, 7000000);
	tap_ok(c.compute_ns == compute && c.hbm_ns == hbm && fw_cost_ns(&c, 1.0) == 1000 + compute,
	       "MXFP4 8192^3 on maia200: %llu ns compute, %llu ns HBM (want %llu, %llu)",
	       (unsigned long long)c.compute_ns, (unsigned long long)c.hbm_ns,
	       (unsigned long long)compute, (unsigned long long)hbm);

	/* Skinny: 32 x 4096 x 4096 FP32 streams all of B: HBM-bound. */
	s = mm(32, 4096, 4096, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32);
	fw_model_mm(m100, &s, &c);
	hbm = up((32ull * 4096 * 4 * 2 + 4096ull * 4096 * 4) * 1000, 1800000);
	tap_ok(c.hbm_ns == hbm && fw_cost_ns(&c, 1.0) == 1000 + hbm,
	       "FP32 32x4096x4096: HBM-bound, %llu ns (want %llu)",
	       (unsigned long long)fw_cost_ns(&c, 1.0), (unsigned long long)(1000 + hbm));
}

static void test_other_commands(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	struct fw_cost c;

	fw_model_vector(m100, 1000000, 18000000, &c);
	tap_ok(fw_cost_ns(&c, 1.0) == 1000 + 10000 && c.compute_ns == up(1000000, 24576),
	       "vector op over 18 MB: HBM-bound, %llu ns", (unsigned long long)fw_cost_ns(&c, 1.0));
	fw_model_dma(m100, 32000000, 32000000, &c);
	tap_ok(fw_cost_ns(&c, 1.0) == 1000 + 1000000 && fw_cost_ns(&c, 0.5) == 1000 + 1000000,
	       "32 MB host -> HBM copy: 1 ms at 32 GB/s, whatever the clock");
	fw_model_fabric(m100, 50000000, 2, 0, &c);
	tap_ok(fw_cost_ns(&c, 1.0) == 1000 + 1000000 + 2 * 1000,
	       "50 MB over a 50 GB/s port, two hops: %llu ns", (unsigned long long)fw_cost_ns(&c, 1.0));
	fw_model_light(m100, &c);
	tap_ok(fw_cost_ns(&c, 1.0) == 100 && c.cls == FW_PM_IDLE, "a control command: 100 ns");
}

/* n back-to-back commands of cost c from time 0; returns the end of the last. */
static uint64_t run_n(struct fw_pm *pm, const struct fw_cost *c, int n, uint64_t *last)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++) {
		uint64_t s = t;

		t = fw_pm_run(pm, t, c);
		*last = t - s;
	}
	return t;
}

static void test_power_in_modeled_time(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	struct fw_mm_shape s = mm(4096, 4096, 4096, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16,
				  MAIA_DTYPE_BF16);
	struct fw_pm_params p;
	struct fw_pm a, b;
	uint64_t ta, tb, la, lb;
	struct fw_cost c;

	fw_model_mm(m100, &s, &c);
	fw_pm_params_of_chip(&p, m100);
	fw_pm_init(&a, &p, 0);
	fw_pm_init(&b, &p, 0);
	ta = run_n(&a, &c, 20, &la);
	tb = run_n(&b, &c, 20, &lb);
	tap_ok(ta == tb && la == lb && a.energy_uj == b.energy_uj && a.events == b.events,
	       "the same 20 GEMMs: the same modeled end (%llu ns) and energy, twice",
	       (unsigned long long)ta);
	tap_ok(a.events == 1 && a.clock_mhz == 1350 && (a.reasons & MAIA_THROTTLE_POWER),
	       "at the default 500 W cap sustained BF16 GEMMs throttle once, to %u MHz", a.clock_mhz);
	tap_ok(la + 1 >= fw_cost_ns(&c, 0.9) && la <= fw_cost_ns(&c, 0.9) + 1,
	       "the last GEMM at 1350 MHz takes %llu ns (1/0.9 of the compute: %llu)",
	       (unsigned long long)la, (unsigned long long)fw_cost_ns(&c, 0.9));
	tap_ok(fw_pm_power_avg_w(&a) > 0.0 && fw_pm_tensor_util(&a) > 0.9 && fw_pm_mfu(&a) > 0.8,
	       "modeled power %.1f W, tensor utilization %.3f, MFU %.3f", fw_pm_power_avg_w(&a),
	       fw_pm_tensor_util(&a), fw_pm_mfu(&a));
	p.cap_mw = p.cap_max_mw;
	{
		/* Wherever a command falls between the control periods: the same ns. */
		static const uint64_t offsets[] = { 0, 1, 37, 99999, 100000, 123457 };
		bool exact = true;

		for (unsigned int i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
			fw_pm_init(&b, &p, 0);
			exact &= fw_pm_run(&b, offsets[i], &c) - offsets[i] == fw_cost_ns(&c, 1.0);
		}
		tap_ok(exact, "a command takes exactly %llu ns at any offset from the control periods",
		       (unsigned long long)fw_cost_ns(&c, 1.0));
	}
	fw_pm_init(&b, &p, 0);
	tb = run_n(&b, &c, 20, &lb);
	tap_ok(b.events == 0 && b.clock_mhz == 1500 && lb == fw_cost_ns(&c, 1.0) && tb < ta,
	       "at the 700 W design power none throttles: %llu ns each, %llu ns in all",
	       (unsigned long long)lb, (unsigned long long)tb);
}

/*
 * Engines side by side (fw_timeline.c): a GEMM on queue 0 and, on queue 1,
 * a 50 MB remote write, a DMA and a second write, all ready at time 0.
 */
static void test_engines_overlap(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	struct fw_mm_shape s = mm(4096, 4096, 4096, MAIA_DTYPE_BF16, MAIA_DTYPE_BF16,
				  MAIA_DTYPE_BF16);
	uint64_t gemm = 1000 + up(2ull * 512 * 512 * 4096 * 64, 800000);
	/* 50 MB at 50 GB/s hold the fabric engine; the hop (1 us) is the ack's */
	uint64_t write = 1000 + 1000000, hop = 1000;
	uint64_t t_gemm, t_w1, t_dma, t_w2, s_w1, s_dma, s_w2, ready_sem, ack1 = 0, ack2 = 0;
	struct fw_engines e;
	struct fw_pm_params p;
	struct fw_pm pm;
	struct fw_cost g, w, d;

	tap_ok(fw_engine_of(MAIA_OP_GEMM) == FW_ENG_TENSOR &&
	       fw_engine_of(MAIA_OP_KERNEL) == FW_ENG_TENSOR &&
	       fw_engine_of(MAIA_OP_ADD) == FW_ENG_TENSOR &&
	       fw_engine_of(MAIA_OP_DMA_COPY) == FW_ENG_DMA &&
	       fw_engine_of(MAIA_OP_FILL) == FW_ENG_DMA &&
	       fw_engine_of(MAIA_OP_FABRIC_WRITE) == FW_ENG_FABRIC &&
	       fw_engine_of(MAIA_OP_COLLECTIVE) == FW_ENG_FABRIC &&
	       fw_engine_of(MAIA_OP_SEM_WAIT) == FW_ENG_NONE &&
	       fw_engine_of(MAIA_OP_TIMESTAMP) == FW_ENG_NONE,
	       "engines: tensor, DMA and fabric commands; control commands on none");

	fw_pm_params_of_chip(&p, m100);
	p.cap_mw = p.cap_max_mw;	/* no throttling: the clock stays nominal */
	for (int run = 0; run < 2; run++) {
		memset(&e, 0, sizeof(e));
		fw_pm_init(&pm, &p, 0);
		fw_model_mm(m100, &s, &g);
		fw_engines_share_hbm(&e, FW_ENG_TENSOR, 0, &g);
		t_gemm = fw_pm_run(&pm, fw_engines_start(&e, FW_ENG_TENSOR, 0), &g);
		fw_engines_done(&e, FW_ENG_TENSOR, t_gemm);

		/* queue 1: the write runs beside the GEMM, not after it */
		ack1 = fw_model_fabric_write(m100, 0, 50000000, &w);
		s_w1 = fw_engines_start(&e, FW_ENG_FABRIC, 0);
		fw_engines_share_hbm(&e, FW_ENG_FABRIC, s_w1, &w);
		t_w1 = fw_pm_run(&pm, s_w1, &w);
		fw_engines_done(&e, FW_ENG_FABRIC, t_w1);
		ack1 += t_w1;

		/* then an 18 MB HBM -> HBM copy (36 MB of HBM traffic) beside both */
		fw_model_dma(m100, 0, 36000000, &d);
		s_dma = fw_engines_start(&e, FW_ENG_DMA, 0);
		fw_engines_share_hbm(&e, FW_ENG_DMA, s_dma, &d);
		t_dma = fw_pm_run(&pm, s_dma, &d);
		fw_engines_done(&e, FW_ENG_DMA, t_dma);

		/* a second write, ready at 0 too: after the first's bytes on its engine */
		ack2 = fw_model_fabric_write(m100, 0, 50000000, &w);
		s_w2 = fw_engines_start(&e, FW_ENG_FABRIC, 0);
		fw_engines_share_hbm(&e, FW_ENG_FABRIC, s_w2, &w);
		t_w2 = fw_pm_run(&pm, s_w2, &w);
		fw_engines_done(&e, FW_ENG_FABRIC, t_w2);
		ack2 += t_w2;
	}
	tap_ok(t_gemm == gemm && s_w1 == 0 && t_w1 == write && ack1 == write + hop,
	       "a 50 MB remote write beside a %llu ns GEMM: starts at 0, leaves the engine at "
	       "%llu ns, acknowledged at %llu (want %llu, %llu)", (unsigned long long)gemm,
	       (unsigned long long)t_w1, (unsigned long long)ack1, (unsigned long long)write,
	       (unsigned long long)(write + hop));
	/* the GEMM and the write are busy at 0: the copy's 20 us of HBM take 3 x */
	tap_ok(s_dma == 0 && t_dma == 1000 + 3 * 20000,
	       "a 36 MB HBM copy beside both: HBM shared three ways, %llu ns (want %llu)",
	       (unsigned long long)t_dma, (unsigned long long)(1000 + 3 * 20000));
	tap_ok(s_w2 == write && t_w2 == 2 * write && ack2 == 2 * write + hop,
	       "a second write on the fabric engine follows the first's bytes, not its ack: "
	       "%llu..%llu ns, acknowledged at %llu", (unsigned long long)s_w2,
	       (unsigned long long)t_w2, (unsigned long long)ack2);
	tap_ok(pm.now_ns == 2 * write, "the power controller stands at the last end, %llu ns",
	       (unsigned long long)pm.now_ns);
	/* a queue that waited for the GEMM's semaphore is ready at its end */
	ready_sem = t_gemm;
	tap_ok(fw_engines_start(&e, FW_ENG_NONE, ready_sem) == gemm &&
	       fw_engines_start(&e, FW_ENG_FABRIC, ready_sem) == 2 * write &&
	       fw_engines_start(&e, FW_ENG_TENSOR, 5000000) == 5000000,
	       "a semaphore's signal orders across queues; an engine's last end orders its commands");
}

/*
 * One queue runs a command list the way fw_timeline.c lays it out: each
 * command is ready at its queue's last end, or at the last acknowledgement
 * of its posted writes unless it may pass them (fw_posted_ready()), and
 * starts when its engine is free too. Returns the queue's end (the job's
 * completion waits for the acknowledgements).
 */
struct step {
	uint16_t op;
	uint64_t bytes;			/* FABRIC_WRITE */
};

static uint64_t run_queue(const struct fw_chip *chip, const struct step *st, int n,
			  uint64_t *stamp)
{
	struct fw_engines e;
	struct fw_pm_params p;
	struct fw_pm pm;
	uint64_t q = 0, acked = 0;

	memset(&e, 0, sizeof(e));
	fw_pm_params_of_chip(&p, chip);
	p.cap_mw = p.cap_max_mw;
	fw_pm_init(&pm, &p, 0);
	for (int i = 0; i < n; i++) {
		unsigned int eng = fw_engine_of(st[i].op);
		uint64_t ready = fw_posted_ready(q, acked, st[i].op), start, ack = 0;
		struct fw_cost c;

		if (st[i].op == MAIA_OP_FABRIC_WRITE)
			ack = fw_model_fabric_write(chip, 0, st[i].bytes, &c);
		else
			fw_model_light(chip, &c);
		start = fw_engines_start(&e, eng, ready);
		if (st[i].op == MAIA_OP_TIMESTAMP)
			*stamp = start;
		fw_engines_share_hbm(&e, eng, start, &c);
		q = fw_pm_run(&pm, start, &c);
		fw_engines_done(&e, eng, q);
		if (ack && acked < q + ack)
			acked = q + ack;
	}
	return fw_posted_ready(q, acked, MAIA_OP_NOP);
}

/*
 * Posted remote writes: the disaggregated K/V push of a 64-token prompt
 * (4 layers, 16 KiB each, a semaphore wait before each, a timestamp after)
 * against one write of the same 64 KiB, on a Maia 100 (50 GB/s, 1 us hop,
 * 1 us a command, 0.1 us a control command). HBM time (16 KiB at 1.8 TB/s:
 * 10 ns) stays under the link time throughout.
 */
static void test_posted_writes(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	const uint64_t kib16 = 16384, ser16 = up(kib16 * 1000, 50000);	/* 328 ns */
	struct step push[9], one[2] = {
		{ MAIA_OP_FABRIC_WRITE, 4 * kib16 }, { MAIA_OP_TIMESTAMP, 0 },
	};
	struct step fenced[4] = {
		{ MAIA_OP_FABRIC_WRITE, kib16 }, { MAIA_OP_TIMESTAMP, 0 },
		{ MAIA_OP_FABRIC_WRITE, kib16 }, { MAIA_OP_TIMESTAMP, 0 },
	};
	uint64_t ts = 0, end, want;
	int i;

	tap_ok(ser16 == 328 && fw_passes_posted(MAIA_OP_FABRIC_WRITE) &&
	       fw_passes_posted(MAIA_OP_SEM_WAIT) && !fw_passes_posted(MAIA_OP_TIMESTAMP) &&
	       !fw_passes_posted(MAIA_OP_SEM_SIGNAL) && !fw_passes_posted(MAIA_OP_FABRIC_READ) &&
	       !fw_passes_posted(MAIA_OP_COLLECTIVE) && !fw_passes_posted(MAIA_OP_GEMM) &&
	       fw_posted_ready(5, 9, MAIA_OP_SEM_WAIT) == 5 &&
	       fw_posted_ready(5, 9, MAIA_OP_TIMESTAMP) == 9 &&
	       fw_posted_ready(9, 5, MAIA_OP_TIMESTAMP) == 9,
	       "writes and semaphore waits pass a queue's writes in flight; nothing else does");
	for (i = 0; i < 4; i++) {
		push[2 * i] = (struct step){ MAIA_OP_SEM_WAIT, 0 };
		push[2 * i + 1] = (struct step){ MAIA_OP_FABRIC_WRITE, kib16 };
	}
	push[8] = (struct step){ MAIA_OP_TIMESTAMP, 0 };
	/* 4 x (0.1 us wait + 1 us + 328 ns), then the last write's hop, then the stamp */
	end = run_queue(m100, push, 9, &ts);
	want = 4 * (100 + 1000 + ser16) + 1000;
	tap_ok(ts == want && end == want + 100,
	       "4 posted 16 KiB writes: the hop once, the timestamp at %llu ns (want %llu; "
	       "unposted it was %llu)", (unsigned long long)ts, (unsigned long long)want,
	       (unsigned long long)(4 * (100 + 1000 + ser16 + 1000)));
	/* one 64 KiB write: 1 us + 1311 ns + the hop */
	end = run_queue(m100, one, 2, &ts);
	tap_ok(ts == 1000 + up(4 * kib16 * 1000, 50000) + 1000 && end == ts + 100,
	       "one 64 KiB write: timestamp at %llu ns (want %llu)", (unsigned long long)ts,
	       (unsigned long long)(1000 + up(4 * kib16 * 1000, 50000) + 1000));
	/* a timestamp between two writes waits for the first's ack: no overlap */
	end = run_queue(m100, fenced, 4, &ts);
	want = 2 * (1000 + ser16 + 1000 + 100);
	tap_ok(ts == want - 100 && end == want,
	       "a timestamp between writes waits for the ack: the second stamp at %llu ns "
	       "(want %llu)", (unsigned long long)ts, (unsigned long long)(want - 100));
}

/*
 * A remote write over a cable whose ends differ: `out` ns longer at the
 * requester's end, `back` at the target's. Its messages (60 KiB at most,
 * sizes that do not divide the link rate evenly) arrive one hop and `out`
 * after the bytes up to their end, rounded up, so the last arrives where
 * the closed form's hop ends; the acknowledgement comes back `back` later.
 */
static void test_write_cable_ends(void)
{
	const struct fw_chip *m100 = fw_chip_by_id(MAIA_MODEL_MAIA100);
	const uint64_t sizes[3] = { 100000, 61441, 12345 }, start = 3000, chunk = 61440;
	const uint32_t out = 2500, back = 3000;

	for (unsigned int i = 0; i < 3; i++) {
		uint64_t done = 0, arr = 0, hop, end;
		struct fw_cost c;
		bool ok = true;

		while (done < sizes[i]) {
			uint64_t n = sizes[i] - done < chunk ? sizes[i] - done : chunk;
			uint64_t a = fw_model_write_arrival(m100, out, start, done + n);

			done += n;
			/* 50 bytes per ns, rounded up; the chip's hop 1000 ns */
			ok &= a == start + 1000 + out + up(done, 50) && a >= arr;
			arr = a;
		}
		hop = fw_model_fabric_write(m100, out, sizes[i], &c);
		end = start - 1000 + fw_cost_ns(&c, 1.0);	/* the command began 1 us earlier */
		ok &= hop == 1000 + out && arr == end + hop &&
		      fw_model_write_ack(back, arr) == end + 1000 + out + back;
		tap_ok(ok, "a %llu-byte remote write, ends of the cable %u and %u ns longer: last "
		       "message at %llu ns (the closed form's %llu), acknowledged at %llu ns "
		       "(want %llu)", (unsigned long long)sizes[i], out, back,
		       (unsigned long long)arr, (unsigned long long)(end + hop),
		       (unsigned long long)fw_model_write_ack(back, arr),
		       (unsigned long long)(start + 1000 + out + up(sizes[i], 50) + back));
	}
}

int main(void)
{
	test_presets();
	test_gemm();
	test_other_commands();
	test_power_in_modeled_time();
	test_engines_overlap();
	test_posted_writes();
	test_write_cable_ends();
	return tap_done();
}
