// SPDX-License-Identifier: MIT
/*
 * Data movement with conversion: COPY, TRANSPOSE, QUANTIZE, DEQUANTIZE.
 * All four are out[i] = convert(x[perm(i)]); COPY and the (de)quantize ops
 * use the identity permutation.
 *
 * The output is always written along its innermost dimension. When that
 * dimension is not x's contiguous one (a real transpose), a task reads
 * GROUP output rows at once as short contiguous runs of x (one run per
 * output column) and writes them out as rows: every access is a run, not a
 * single element.
 */
#include <math.h>
#include <string.h>

#include "maia/hw/queue.h"
#include "te.h"

#define GROUP		32u	/* output rows per transposed task (a block multiple) */
#define COLS		256u	/* output columns staged at once */

struct layout_op {
	struct fw_tview x, out;
	uint64_t xs[4];		/* x's stride for each output dimension */
	int q;			/* output dim that is x's contiguous dim, or -1 */
	bool saturate;
	uint64_t iter[4];	/* task iteration shape over output dims 0..2 */
	uint64_t rows_per_task;
	uint64_t ntasks;
	/* dynamic quantization: amax per task */
	float *amax;
};

static uint64_t x_offset(const struct layout_op *o, const uint64_t idx[4])
{
	return idx[0] * o->xs[0] + idx[1] * o->xs[1] + idx[2] * o->xs[2] + idx[3] * o->xs[3];
}

static uint64_t out_offset(const struct layout_op *o, const uint64_t idx[4])
{
	return idx[0] * o->out.strides[0] + idx[1] * o->out.strides[1] +
	       idx[2] * o->out.strides[2] + idx[3] * o->out.strides[3];
}

static void row_index(const uint64_t shape[4], uint64_t r, uint64_t idx[4])
{
	idx[2] = r % shape[2];
	idx[1] = r / shape[2] % shape[1];
	idx[0] = r / shape[2] / shape[1];
	idx[3] = 0;
}

/* Plain case: each output row is one (possibly strided) run of x. */
static int copy_rows(struct layout_op *o, size_t task, struct fw_worker *w)
{
	uint64_t n = o->out.shape[3], r, r0 = task * o->rows_per_task, idx[4], c;
	uint64_t rows = fw_rows(o->out.shape);
	float *v = fw_worker_scratch(w, FW_CHUNK);
	int st;

	if (!v)
		return MAIA_STATUS_DMA_ERROR;
	for (r = r0; r < r0 + o->rows_per_task && r < rows; r++) {
		row_index(o->out.shape, r, idx);
		for (c = 0; c < n; c += FW_CHUNK) {
			uint64_t len = n - c < FW_CHUNK ? n - c : FW_CHUNK;

			idx[3] = c;
			st = fw_io_load(&w->io, &o->x, x_offset(o, idx), len, o->xs[3], v);
			if (st)
				return st;
			st = fw_io_store(&w->io, &o->out, out_offset(o, idx), len,
					   o->out.strides[3], v, o->saturate);
			if (st)
				return st;
		}
	}
	return MAIA_STATUS_OK;
}

/* Transposed case: GROUP output rows along dim q, read as runs of x. */
static int transpose_group(struct layout_op *o, size_t task, struct fw_worker *w)
{
	uint64_t idx[4], g0, ng, n = o->out.shape[3], c0, c, i;
	float *tile = fw_worker_scratch(w, 2 * GROUP * COLS), *row = tile + GROUP * COLS;
	int st;

	if (!tile)
		return MAIA_STATUS_DMA_ERROR;
	row_index(o->iter, task, idx);
	g0 = idx[o->q] * GROUP;
	ng = o->out.shape[o->q] - g0 < GROUP ? o->out.shape[o->q] - g0 : GROUP;
	idx[o->q] = g0;
	for (c0 = 0; c0 < n; c0 += COLS) {
		uint64_t nc = n - c0 < COLS ? n - c0 : COLS;

		for (c = 0; c < nc; c++) {	/* a run of x per output column */
			idx[3] = c0 + c;
			st = fw_io_load(&w->io, &o->x, x_offset(o, idx), ng, 1, tile + c * GROUP);
			if (st)
				return st;
		}
		for (i = 0; i < ng; i++) {
			for (c = 0; c < nc; c++)
				row[c] = tile[c * GROUP + i];
			idx[o->q] = g0 + i;
			idx[3] = c0;
			st = fw_io_store(&w->io, &o->out, out_offset(o, idx), nc,
					   o->out.strides[3], row, o->saturate);
			if (st)
				return st;
		}
		idx[o->q] = g0;
	}
	return MAIA_STATUS_OK;
}

static int layout_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct layout_op *o = job->op;

	return o->q >= 0 ? transpose_group(o, task, w) : copy_rows(o, task, w);
}

/* Dynamic quantization, pass 1: amax of x, one partial per task. */
static int amax_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct layout_op *o = job->op;
	uint64_t n = o->x.shape[3], r, c, i;
	uint64_t rows = fw_rows(o->x.shape), r0 = task * o->rows_per_task;
	float *v = fw_worker_scratch(w, FW_CHUNK), mx = 0.0f;
	int st;

	if (!v)
		return MAIA_STATUS_DMA_ERROR;
	for (r = r0; r < r0 + o->rows_per_task && r < rows; r++) {
		for (c = 0; c < n; c += FW_CHUNK) {
			uint64_t len = n - c < FW_CHUNK ? n - c : FW_CHUNK;

			st = fw_io_load(&w->io, &o->x,
					  fw_row_offset(o->x.shape, o->x.strides, r) +
					  c * o->x.strides[3], len, o->x.strides[3], v);
			if (st)
				return st;
			for (i = 0; i < len; i++)	/* NaN and Inf do not set the scale */
				if (isfinite(v[i]) && fabsf(v[i]) > mx)
					mx = fabsf(v[i]);
		}
	}
	o->amax[task] = mx;
	return MAIA_STATUS_OK;
}

static bool is_quantized(unsigned int dt)
{
	return dt == MAIA_DTYPE_INT8 || dt == MAIA_DTYPE_FP8_E4M3 || dt == MAIA_DTYPE_FP8_E5M2 ||
	       maia_dtype_is_block(dt);
}

static int dynamic_scale(struct fw_tensor_engine *te, struct layout_op *o,
			 const struct maia_job_mem *mem, struct maia_op_stats *stats,
			 uint64_t scale_out)
{
	struct fw_te_job job = { .te = te, .mem = mem, .run = amax_task, .op = o };
	float partial[256], amax = 0.0f, scale;
	uint64_t rows = fw_rows(o->x.shape);
	uint32_t bits;
	int st;

	/* at most 256 partials: big enough to keep every worker busy */
	o->rows_per_task = (rows + 255) / 256;
	job.ntasks = (rows + o->rows_per_task - 1) / o->rows_per_task;
	o->amax = partial;
	st = fw_te_job_run(&job, stats);
	o->amax = NULL;
	if (st)
		return st;
	for (size_t i = 0; i < job.ntasks; i++)
		if (partial[i] > amax)
			amax = partial[i];
	scale = amax > 0.0f ? amax / fw_dtype_max(o->out.dtype) : 1.0f;
	if (!isnormal(scale))
		scale = 1.0f;
	o->out.scale = scale;
	bits = fw_f32_bits(scale);
	st = mem->write(mem->opaque, scale_out, &bits, sizeof(bits));
	if (!st)
		stats->bytes_written += sizeof(bits);
	return st;
}

int fw_op_layout(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		   const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	struct layout_op o = { .q = -1 };
	struct fw_te_job job = { .te = te, .mem = mem, .run = layout_task, .op = &o };
	uint8_t perm[4] = { 0, 1, 2, 3 };
	const struct maia_tensor_desc *xd, *od;
	unsigned int r, d, pad, seen = 0;
	uint64_t scale_out = 0;
	int st;

	if (cmd->opcode == MAIA_OP_TRANSPOSE) {
		const struct maia_cmd_transpose *c = (const void *)cmd;

		if (cmd->size != sizeof(*c) || cmd->flags || c->reserved)
			return MAIA_STATUS_BAD_CMD;
		xd = &c->x;
		od = &c->out;
		memcpy(perm, c->perm, sizeof(perm));
	} else {
		const struct maia_cmd_convert *c = (const void *)cmd;
		unsigned int allowed = cmd->opcode == MAIA_OP_QUANTIZE ?
			MAIA_QUANT_F_DYNAMIC | MAIA_QUANT_F_SAT : MAIA_QUANT_F_SAT;

		if (cmd->size != sizeof(*c) || cmd->flags & ~allowed)
			return MAIA_STATUS_BAD_CMD;
		if ((cmd->flags & MAIA_QUANT_F_DYNAMIC) ? c->scale_out & 3 : c->scale_out != 0)
			return MAIA_STATUS_BAD_CMD;
		xd = &c->x;
		od = &c->out;
		scale_out = c->scale_out;
	}
	o.saturate = cmd->flags & MAIA_QUANT_F_SAT;
	st = fw_tview_parse(xd, FW_TV_INPUT, &o.x);
	if (!st)
		st = fw_tview_parse(od, FW_TV_OUTPUT, &o.out);
	if (st)
		return st;
	r = o.x.rank;
	if (o.out.rank != r)
		return MAIA_STATUS_BAD_DESC;
	/*
	 * INT32 to INT32 moves bits: staged as FP32, whose load and store copy
	 * them. As floats, values past 2^24 would lose their low bits.
	 */
	if ((cmd->opcode == MAIA_OP_COPY || cmd->opcode == MAIA_OP_TRANSPOSE) &&
	    o.x.dtype == MAIA_DTYPE_INT32 && o.out.dtype == MAIA_DTYPE_INT32) {
		o.x.dtype = MAIA_DTYPE_FP32;
		o.out.dtype = MAIA_DTYPE_FP32;
	}
	for (d = 0; d < 4; d++) {
		if (d < r) {
			if (perm[d] >= r || seen & (1u << perm[d]))
				return MAIA_STATUS_BAD_CMD;
			seen |= 1u << perm[d];
		} else if (perm[d] != (cmd->opcode == MAIA_OP_TRANSPOSE ? 0 : d)) {
			return MAIA_STATUS_BAD_CMD;
		}
	}
	pad = 4 - r;
	for (d = 0; d < 4; d++) {
		unsigned int xd_n = d < pad ? d : pad + perm[d - pad];

		if (o.out.shape[d] != o.x.shape[xd_n])
			return MAIA_STATUS_BAD_DESC;
		o.xs[d] = o.x.strides[xd_n];
	}
	switch (cmd->opcode) {
	case MAIA_OP_QUANTIZE:
		if (!is_quantized(o.out.dtype) || maia_dtype_is_block(o.x.dtype))
			return MAIA_STATUS_BAD_DESC;
		if ((cmd->flags & MAIA_QUANT_F_DYNAMIC) && maia_dtype_is_block(o.out.dtype))
			return MAIA_STATUS_BAD_CMD;
		break;
	case MAIA_OP_DEQUANTIZE:
		if (!is_quantized(o.x.dtype) || !fw_dtype_is_float(o.out.dtype))
			return MAIA_STATUS_BAD_DESC;
		break;
	default:
		break;
	}
	/* x's contiguous dimension, if it is not the output's innermost */
	if (o.xs[3] != 1 && o.out.shape[3] > 1)
		for (d = 0; d < 3; d++)
			if (o.xs[d] == 1 && o.out.shape[d] > 1)
				o.q = (int)d;
	if (o.x.block > 1 && o.xs[3] != 1 && o.q < 0)
		return MAIA_STATUS_BAD_DESC;
	if (cmd->flags & MAIA_QUANT_F_DYNAMIC) {
		st = dynamic_scale(te, &o, mem, stats, scale_out);
		if (st)
			return st;
	}
	if (o.q >= 0) {
		memcpy(o.iter, o.out.shape, sizeof(o.iter));
		o.iter[o.q] = (o.out.shape[o.q] + GROUP - 1) / GROUP;
		o.iter[3] = 1;
		job.ntasks = fw_rows(o.iter);
	} else {
		uint64_t rows = fw_rows(o.out.shape);

		o.rows_per_task = o.out.shape[3] >= FW_CHUNK ? 1 : FW_CHUNK / o.out.shape[3];
		job.ntasks = (rows + o.rows_per_task - 1) / o.rows_per_task;
	}
	stats->flops += o.out.nelems;
	return fw_te_job_run(&job, stats);
}
