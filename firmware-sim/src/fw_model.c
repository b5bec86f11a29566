// SPDX-License-Identifier: MIT
/*
 * The device time model: the chip presets and the cost of a command on
 * them. Documentation/hw/time-model.rst gives each parameter's source (or
 * says it is an assumption) and the formulas below, which the unit test
 * test_model checks against closed-form values.
 */
#include <stddef.h>
#include <string.h>

#include "fw_model.h"
#include "maia/hw/cmd.h"

#define GIB		(1024ull * 1024ull * 1024ull)
#define KC		256u	/* K slice a tile stages per step */
#define GRAIN		32u	/* the tensor unit's row/column granularity */

static const struct fw_chip chips[] = {
	{
		.id = MAIA_MODEL_MAIA100,
		.name = "maia100",
		.clusters = 16,
		.tiles_per_cluster = 4,
		.hbm_bytes = 64 * GIB,
		.sram_kib = 500000000u / 1024u,
		.hbm_mbps = 1800000,
		.host_mbps = 32000,
		.link_mbps = 50000,
		.link_lat_ns = 1000,
		.cmd_ns = 1000,
		.light_cmd_ns = 100,
		.job_ns = 2000,
		.vector_gflops = 24576,
		.peak_gflops = {
			[MAIA_DTYPE_FP32] = 200000,
			[MAIA_DTYPE_FP16] = 800000,
			[MAIA_DTYPE_BF16] = 800000,
			[MAIA_DTYPE_FP8_E4M3] = 1500000,
			[MAIA_DTYPE_FP8_E5M2] = 1500000,
			[MAIA_DTYPE_INT8] = 1500000,
			[MAIA_DTYPE_MXFP8_E4M3] = 1500000,
			[MAIA_DTYPE_MXFP8_E5M2] = 1500000,
			[MAIA_DTYPE_MXFP6_E3M2] = 3000000,
			[MAIA_DTYPE_MXFP6_E2M3] = 3000000,
			[MAIA_DTYPE_MXFP4_E2M1] = 3000000,
			[MAIA_DTYPE_MXINT8] = 1500000,
			[MAIA_DTYPE_MX9] = 1500000,
			[MAIA_DTYPE_MX6] = 3000000,
			[MAIA_DTYPE_MX4] = 3000000,
		},
		.clock_mhz = 1500,
		.tdp_w = 500,
		.design_w = 700,
		.idle_static_w = 60.0,
		.idle_clock_w = 25.0,
		.dyn_w = { [FW_PM_TENSOR] = 400.0, [FW_PM_VECTOR] = 200.0, [FW_PM_DMA] = 120.0 },
		.hbm_pj_per_byte = 32.0,
	},
	{
		.id = MAIA_MODEL_MAIA200,
		.name = "maia200",
		.clusters = 32,
		.tiles_per_cluster = 4,
		.hbm_bytes = 216 * GIB,
		.sram_kib = 272000000u / 1024u,
		.hbm_mbps = 7000000,
		.host_mbps = 64000,
		.link_mbps = 116666,
		.link_lat_ns = 1000,
		.cmd_ns = 1000,
		.light_cmd_ns = 100,
		.job_ns = 2000,
		.vector_gflops = 49152,
		.peak_gflops = {
			[MAIA_DTYPE_FP32] = 625000,
			[MAIA_DTYPE_FP16] = 2500000,
			[MAIA_DTYPE_BF16] = 2500000,
			[MAIA_DTYPE_FP8_E4M3] = 5000000,
			[MAIA_DTYPE_FP8_E5M2] = 5000000,
			[MAIA_DTYPE_INT8] = 5000000,
			[MAIA_DTYPE_MXFP8_E4M3] = 5000000,
			[MAIA_DTYPE_MXFP8_E5M2] = 5000000,
			[MAIA_DTYPE_MXFP6_E3M2] = 5000000,
			[MAIA_DTYPE_MXFP6_E2M3] = 5000000,
			[MAIA_DTYPE_MXFP4_E2M1] = 10000000,
			[MAIA_DTYPE_MXINT8] = 5000000,
			[MAIA_DTYPE_MX9] = 5000000,
			[MAIA_DTYPE_MX6] = 5000000,
			[MAIA_DTYPE_MX4] = 10000000,
		},
		.clock_mhz = 1500,
		.tdp_w = 750,
		.design_w = 900,
		.idle_static_w = 90.0,
		.idle_clock_w = 35.0,
		.dyn_w = { [FW_PM_TENSOR] = 600.0, [FW_PM_VECTOR] = 300.0, [FW_PM_DMA] = 150.0 },
		.hbm_pj_per_byte = 20.0,
	},
};

const struct fw_chip *fw_chip_by_id(unsigned int id)
{
	for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++)
		if (chips[i].id == id)
			return &chips[i];
	return NULL;
}

const struct fw_chip *fw_chip_by_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(chips) / sizeof(chips[0]); i++)
		if (!strcmp(chips[i].name, name))
			return &chips[i];
	return NULL;
}

void fw_chip_scale(const struct fw_chip *preset, unsigned int clusters,
		   unsigned int tiles_per_cluster, struct fw_chip *chip)
{
	double f = (double)(clusters * tiles_per_cluster) /
		   (preset->clusters * preset->tiles_per_cluster);

	*chip = *preset;
	if (clusters == preset->clusters && tiles_per_cluster == preset->tiles_per_cluster)
		return;
	chip->clusters = clusters;
	chip->tiles_per_cluster = tiles_per_cluster;
	chip->sram_kib = (uint32_t)(preset->sram_kib * f);
	chip->vector_gflops = (uint32_t)(preset->vector_gflops * f);
	for (unsigned int d = 0; d < MAIA_DTYPE_COUNT; d++)
		chip->peak_gflops[d] = (uint32_t)(preset->peak_gflops[d] * f);
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return b ? (a + b - 1) / b : 0;
}

static uint64_t round_up(uint64_t a, uint64_t m)
{
	return div_up(a, m) * m;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* Nanoseconds to move bytes at mbps MB/s, or to do flops at gflops GFLOP/s. */
static uint64_t bytes_ns(uint64_t bytes, uint32_t mbps)
{
	return mbps ? div_up(bytes * 1000u, mbps) : 0;
}

static uint64_t flops_ns(uint64_t flops, uint32_t gflops)
{
	return gflops ? div_up(flops, gflops) : 0;
}

uint64_t fw_cost_ns(const struct fw_cost *c, double r)
{
	double compute = r > 0.0 && r < 1.0 ? (double)c->compute_ns / r : (double)c->compute_ns;

	return c->fixed_ns + max3((uint64_t)(compute + 0.5), c->hbm_ns, c->link_ns);
}

uint64_t fw_model_bytes(unsigned int dtype, uint64_t n)
{
	unsigned int block = maia_dtype_block(dtype);

	if (block > 1)		/* packed blocks plus one 8-bit shared scale each */
		return div_up(n, block) * (maia_dtype_block_bytes(dtype) + 1u);
	return n * maia_dtype_size(dtype);
}

uint32_t fw_model_mm_peak(const struct fw_chip *chip, unsigned int a, unsigned int b)
{
	uint32_t pa = a < MAIA_DTYPE_COUNT ? chip->peak_gflops[a] : 0;
	uint32_t pb = b < MAIA_DTYPE_COUNT ? chip->peak_gflops[b] : 0;

	if (!pa || !pb)		/* INT32 operands: the vector unit's rate */
		return chip->vector_gflops;
	return pa < pb ? pa : pb;
}

static unsigned int chip_tiles(const struct fw_chip *chip)
{
	return chip->clusters * chip->tiles_per_cluster;
}

/* SRAM a tile stages into: its double-buffered K slices and its FP32 C block. */
static bool block_fits(const struct fw_chip *chip, const struct fw_mm_shape *s, uint64_t bm,
		       uint64_t bn)
{
	uint64_t tile_sram = (uint64_t)chip->sram_kib * 1024u / chip_tiles(chip);

	return 2 * (fw_model_bytes(s->dtype_a, bm * KC) + fw_model_bytes(s->dtype_b, KC * bn)) +
	       4 * bm * bn <= tile_sram;
}

/*
 * HBM bytes of one batch entry. Operands that fit in half the chip's SRAM
 * together are read once; otherwise the tiles of a cluster (a gm x gn grid)
 * share the panels of their cluster's block, so A is read once per cluster
 * column block and B once per cluster row block.
 */
static uint64_t mm_hbm_bytes(const struct fw_chip *chip, const struct fw_mm_shape *s,
			     uint64_t bm, uint64_t bn)
{
	uint64_t a = fw_model_bytes(s->dtype_a, s->m * s->k);
	uint64_t b = fw_model_bytes(s->dtype_b, s->k * s->n);
	uint64_t c = fw_model_bytes(s->dtype_c, s->m * s->n) * (s->reads_c ? 2 : 1);
	uint64_t bias = s->bias ? 4 * s->n : 0, gn = 1, gm;

	if (a + b + 4 * s->m * s->n <= (uint64_t)chip->sram_kib * 1024u / 2)
		return a + b + c + bias;
	while (gn * gn < chip->tiles_per_cluster)
		gn *= 2;
	gm = chip->tiles_per_cluster / gn ? chip->tiles_per_cluster / gn : 1;
	return a * div_up(s->n, bn * gn) + b * div_up(s->m, bm * gm) + c +
	       bias * div_up(s->m, bm * gm);
}

/* The block sides, from 512 down to the grain, that give the shortest time. */
void fw_model_mm_tiling(const struct fw_chip *chip, const struct fw_mm_shape *s,
			struct fw_mm_tiling *t)
{
	uint64_t tiles = chip_tiles(chip), best = UINT64_MAX;
	uint32_t peak = fw_model_mm_peak(chip, s->dtype_a, s->dtype_b);

	memset(t, 0, sizeof(*t));
	t->bm = t->bn = GRAIN;
	for (uint64_t bm = 512; bm >= GRAIN; bm /= 2) {
		if (bm > round_up(s->m, GRAIN) && bm > GRAIN)
			continue;
		for (uint64_t bn = 512; bn >= GRAIN; bn /= 2) {
			uint64_t blocks, waves, compute, hbm, d;

			if ((bn > round_up(s->n, GRAIN) && bn > GRAIN) || !block_fits(chip, s, bm, bn))
				continue;
			blocks = s->batch * div_up(s->m, bm) * div_up(s->n, bn);
			waves = div_up(blocks, tiles);
			/* every wave takes one whole block's time, K padded to the grain */
			compute = flops_ns(waves * 2 * bm * bn * round_up(s->k, GRAIN) * tiles, peak);
			hbm = bytes_ns(mm_hbm_bytes(chip, s, bm, bn) * s->batch, chip->hbm_mbps);
			d = compute > hbm ? compute : hbm;
			if (d < best) {
				best = d;
				t->bm = bm;
				t->bn = bn;
				t->blocks = blocks;
				t->waves = waves;
				t->compute_ns = compute;
				t->hbm_bytes = mm_hbm_bytes(chip, s, bm, bn) * s->batch;
			}
		}
	}
}

void fw_model_mm(const struct fw_chip *chip, const struct fw_mm_shape *s, struct fw_cost *c)
{
	uint64_t tiles = chip_tiles(chip);
	struct fw_mm_tiling t;

	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_TENSOR;
	c->fixed_ns = chip->cmd_ns;
	if (!s->batch || !s->m || !s->n)
		return;
	fw_model_mm_tiling(chip, s, &t);
	c->compute_ns = t.compute_ns;
	c->hbm_bytes = t.hbm_bytes;
	c->hbm_ns = bytes_ns(c->hbm_bytes, chip->hbm_mbps);
	c->flops = 2 * s->batch * s->m * s->n * s->k;
	c->peak_ns = flops_ns(c->flops, fw_model_mm_peak(chip, s->dtype_a, s->dtype_b));
	c->tiles = (unsigned int)(t.blocks < tiles ? t.blocks : tiles);
}

void fw_model_vector(const struct fw_chip *chip, uint64_t flops, uint64_t bytes,
		     struct fw_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_VECTOR;
	c->fixed_ns = chip->cmd_ns;
	c->compute_ns = flops_ns(flops, chip->vector_gflops);
	c->hbm_bytes = bytes;
	c->hbm_ns = bytes_ns(bytes, chip->hbm_mbps);
	c->flops = flops;
	c->peak_ns = c->compute_ns;
	c->tiles = chip_tiles(chip);
}

/*
 * Cycles a tile spends per work unit of each TVP class (an assumption,
 * Documentation/hw/time-model.rst): a 256-lane group per cycle through the
 * vector ALU (the vector peak spread over the tiles: 24.6 TFLOP/s / 64 tiles
 * / 1.5 GHz = 256), four for the special-function unit, two for the load
 * and store path and the permute network, 1024 multiply-adds per cycle in
 * the tensor unit (about the FP32 peak), one per scalar or branch
 * instruction, four per semaphore operation or atomic (VAMOADD: per
 * 256-lane group).
 */
const uint32_t fw_tvp_unit_cycles[MAIA_TVP_NUM_CLASSES] = {
	[MAIA_TVP_CLASS_SCALAR] = 1,
	[MAIA_TVP_CLASS_BRANCH] = 1,
	[MAIA_TVP_CLASS_VALU] = 1,
	[MAIA_TVP_CLASS_VSFU] = 4,
	[MAIA_TVP_CLASS_VMEM] = 2,
	[MAIA_TVP_CLASS_VPERM] = 2,
	[MAIA_TVP_CLASS_MATRIX] = 1,
	[MAIA_TVP_CLASS_SYNC] = 4,
};

void fw_model_kernel(const struct fw_chip *chip, const struct fw_kernel_work *w,
		     struct fw_cost *c)
{
	uint64_t tiles = chip_tiles(chip), cycles = 0, per_instance, waves;

	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_VECTOR;
	c->fixed_ns = chip->cmd_ns;
	if (!w->instances)
		return;
	for (unsigned int k = 0; k < MAIA_TVP_NUM_CLASSES; k++)
		cycles += w->units[k] * fw_tvp_unit_cycles[k];
	per_instance = div_up(cycles, w->instances);
	waves = div_up(w->instances, tiles);
	c->compute_ns = chip->clock_mhz ? div_up(waves * per_instance * 1000u, chip->clock_mhz) : 0;
	c->hbm_bytes = w->bytes;
	c->hbm_ns = bytes_ns(w->bytes, chip->hbm_mbps);
	c->flops = w->flops;
	c->peak_ns = flops_ns(w->flops, chip->vector_gflops);
	c->tiles = (unsigned int)(w->instances < tiles ? w->instances : tiles);
}

void fw_model_dma(const struct fw_chip *chip, uint64_t host_bytes, uint64_t hbm_bytes,
		  struct fw_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_DMA;
	c->fixed_ns = chip->cmd_ns;
	c->link_ns = bytes_ns(host_bytes, chip->host_mbps);
	c->hbm_bytes = hbm_bytes;
	c->hbm_ns = bytes_ns(hbm_bytes, chip->hbm_mbps);
}

void fw_model_fabric(const struct fw_chip *chip, uint64_t bytes, unsigned int hops,
		     uint32_t cable_ns, struct fw_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_DMA;
	c->fixed_ns = chip->cmd_ns;
	c->link_ns = bytes_ns(bytes, chip->link_mbps) + (uint64_t)hops * chip->link_lat_ns +
		     cable_ns;
	c->hbm_bytes = bytes;
	c->hbm_ns = bytes_ns(bytes, chip->hbm_mbps);
}

void fw_model_coll_work(const struct maia_cmd_collective *c, uint64_t *bytes,
			unsigned int *hops)
{
	uint64_t n = c->nranks ? c->nranks : 1, size = c->count * (c->dtype == MAIA_DTYPE_BF16 ? 2 : 4);

	if (maia_coll_gather_reduce(c)) {
		/* every rank's input passes n - 1 hops, one after another */
		*bytes = (n - 1) * size;
		*hops = (unsigned int)(n - 1);
		return;
	}
	switch (c->coll) {
	case MAIA_COLL_ALL_REDUCE:
		*bytes = 2 * (n - 1) * size / n;
		*hops = (unsigned int)(2 * (n - 1));
		break;
	case MAIA_COLL_BROADCAST:
		*bytes = size;
		*hops = (unsigned int)(n - 1);
		break;
	default:	/* all-gather, reduce-scatter, all-to-all: count per rank */
		*bytes = (n - 1) * size;
		*hops = (unsigned int)(n - 1);
		break;
	}
}

/* A chunk's bytes at the link rate, truncated (as the figures in time-model.rst). */
uint64_t fw_model_coll_link_ns(const struct fw_chip *chip, uint64_t len)
{
	return chip->link_mbps ? len * 1000u / chip->link_mbps : 0;
}

uint64_t fw_model_coll_hop(const struct fw_chip *chip, uint32_t cable_ns, uint64_t left_ns,
			   uint64_t len)
{
	return left_ns + chip->link_lat_ns + cable_ns + fw_model_coll_link_ns(chip, len);
}

uint64_t fw_model_read_answer_left(const struct fw_chip *chip, uint32_t cable_ns,
				   uint64_t start_ns, uint64_t bytes)
{
	/* rounded up as fw_model_fabric()'s bytes, so the two forms agree */
	return start_ns + chip->link_lat_ns + cable_ns + bytes_ns(bytes, chip->link_mbps);
}

uint64_t fw_model_fabric_write(const struct fw_chip *chip, uint32_t cable_ns, uint64_t bytes,
			       struct fw_cost *c)
{
	fw_model_fabric(chip, bytes, 0, 0, c);
	return (uint64_t)chip->link_lat_ns + cable_ns;
}

uint64_t fw_model_write_arrival(const struct fw_chip *chip, uint32_t cable_ns,
				uint64_t start_ns, uint64_t bytes)
{
	return start_ns + chip->link_lat_ns + cable_ns + bytes_ns(bytes, chip->link_mbps);
}

uint64_t fw_model_write_ack(uint32_t cable_ns, uint64_t arrival_ns)
{
	return arrival_ns + cable_ns;
}

void fw_model_light(const struct fw_chip *chip, struct fw_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->cls = FW_PM_IDLE;
	c->fixed_ns = chip->light_cmd_ns;
}

bool fw_model_is_reg(uint32_t offset)
{
	return offset >= MAIA_REG_MODEL_BASE && offset < MAIA_REG_MODEL_END;
}

bool fw_model_reg_read(const struct fw_chip *chip, uint32_t offset, uint32_t *val)
{
	*val = 0;
	if (offset >= MAIA_REG_MODEL_PEAK_GFLOPS(0) &&
	    offset < MAIA_REG_MODEL_PEAK_GFLOPS(MAIA_DTYPE_COUNT) && offset % 4u == 0) {
		*val = chip->peak_gflops[(offset - MAIA_REG_MODEL_PEAK_GFLOPS(0)) / 4u];
		return true;
	}
	switch (offset) {
	case MAIA_REG_MODEL_ID:			*val = chip->id; break;
	case MAIA_REG_MODEL_HBM_MBPS:		*val = chip->hbm_mbps; break;
	case MAIA_REG_MODEL_HOST_MBPS:		*val = chip->host_mbps; break;
	case MAIA_REG_MODEL_LINK_MBPS:		*val = chip->link_mbps; break;
	case MAIA_REG_MODEL_LINK_LAT_NS:	*val = chip->link_lat_ns; break;
	case MAIA_REG_MODEL_CMD_NS:		*val = chip->cmd_ns; break;
	case MAIA_REG_MODEL_JOB_NS:		*val = chip->job_ns; break;
	case MAIA_REG_MODEL_VECTOR_GFLOPS:	*val = chip->vector_gflops; break;
	case MAIA_REG_MODEL_SRAM_KIB:		*val = chip->sram_kib; break;
	case MAIA_REG_MODEL_DESIGN_POWER_MW:	*val = chip->design_w * 1000u; break;
	default:
		return false;
	}
	return true;
}
