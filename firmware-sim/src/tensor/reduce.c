// SPDX-License-Identifier: MIT
/*
 * Reductions (sum, mean, max, min, sum of squares) over any set of axes.
 * A task owns one output row segment: it walks the reduced outer indices,
 * loads the matching rows of x in chunks, and folds them into an
 * accumulator (a vector when the innermost axis is kept, a scalar when it is
 * reduced). Sums accumulate in double; max/min propagate NaN.
 */
#include <math.h>

#include "maia/hw/queue.h"
#include "te.h"

struct reduce_op {
	struct fw_tview x, out;
	unsigned int op;
	unsigned int axes;	/* normalized: bit d = dimension d of the 4D view */
	bool inner;		/* innermost axis reduced */
	uint64_t red_count;	/* elements folded into each output */
	uint64_t chunks;	/* chunks per output row when the inner axis is kept */
};

static double fold(unsigned int op, double acc, float v)
{
	switch (op) {
	case MAIA_REDUCE_MAX:
		return isnan(acc) || v <= acc ? acc : v;	/* NaN v wins via !(v <= acc) */
	case MAIA_REDUCE_MIN:
		return isnan(acc) || v >= acc ? acc : v;
	case MAIA_REDUCE_SUMSQ:
		return acc + (double)v * v;
	default:
		return acc + v;
	}
}

static double fold_init(unsigned int op)
{
	return op == MAIA_REDUCE_MAX ? -INFINITY : op == MAIA_REDUCE_MIN ? INFINITY : 0.0;
}

static int reduce_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct reduce_op *o = job->op;
	uint64_t orow = task / o->chunks, c0 = task % o->chunks * FW_CHUNK;
	uint64_t oidx[4], n, i, r, nred = 1;
	uint64_t rs[3];		/* reduced extents of dims 0..2 */
	double acc[FW_CHUNK];
	float *v = fw_worker_scratch(w, 2 * FW_CHUNK), *res = v + FW_CHUNK;
	int st;

	if (!v)
		return MAIA_STATUS_DMA_ERROR;
	oidx[2] = orow % o->out.shape[2];
	oidx[1] = orow / o->out.shape[2] % o->out.shape[1];
	oidx[0] = orow / o->out.shape[2] / o->out.shape[1];
	for (i = 0; i < 3; i++) {
		rs[i] = o->axes & (1u << i) ? o->x.shape[i] : 1;
		nred *= rs[i];
	}
	n = o->inner ? 1 : (o->x.shape[3] - c0 < FW_CHUNK ? o->x.shape[3] - c0 : FW_CHUNK);
	for (i = 0; i < n; i++)
		acc[i] = fold_init(o->op);
	for (r = 0; r < nred; r++) {
		uint64_t xi[3], off;

		xi[2] = rs[2] > 1 ? r % rs[2] : oidx[2];
		xi[1] = rs[1] > 1 ? r / rs[2] % rs[1] : oidx[1];
		xi[0] = rs[0] > 1 ? r / rs[2] / rs[1] : oidx[0];
		off = xi[0] * o->x.strides[0] + xi[1] * o->x.strides[1] + xi[2] * o->x.strides[2];
		if (o->inner) {
			for (uint64_t c = 0; c < o->x.shape[3]; c += FW_CHUNK) {
				uint64_t len = o->x.shape[3] - c < FW_CHUNK ? o->x.shape[3] - c : FW_CHUNK;

				st = fw_io_load(&w->io, &o->x, off + c * o->x.strides[3], len,
						  o->x.strides[3], v);
				if (st)
					return st;
				for (i = 0; i < len; i++)
					acc[0] = fold(o->op, acc[0], v[i]);
			}
		} else {
			st = fw_io_load(&w->io, &o->x, off + c0 * o->x.strides[3], n,
					  o->x.strides[3], v);
			if (st)
				return st;
			for (i = 0; i < n; i++)
				acc[i] = fold(o->op, acc[i], v[i]);
		}
	}
	for (i = 0; i < n; i++)
		res[i] = (float)(o->op == MAIA_REDUCE_MEAN ? acc[i] / (double)o->red_count : acc[i]);
	return fw_io_store(&w->io, &o->out,
			     oidx[0] * o->out.strides[0] + oidx[1] * o->out.strides[1] +
			     oidx[2] * o->out.strides[2] + c0 * o->out.strides[3],
			     n, o->out.strides[3], res, false);
}

int fw_op_reduce(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		   const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	const struct maia_cmd_reduce *c = (const void *)cmd;
	struct reduce_op o = { 0 };
	struct fw_te_job job = { .te = te, .mem = mem, .run = reduce_task, .op = &o };
	unsigned int pad, d;
	int st;

	if (cmd->size != sizeof(*c) || cmd->flags || c->op >= MAIA_REDUCE_COUNT)
		return MAIA_STATUS_BAD_CMD;
	o.op = c->op;
	st = fw_tview_parse(&c->x, FW_TV_INPUT, &o.x);
	if (!st)
		st = fw_tview_parse(&c->out, FW_TV_OUTPUT, &o.out);
	if (st)
		return st;
	if (!c->axes || c->axes >> o.x.rank || o.out.rank != o.x.rank)
		return MAIA_STATUS_BAD_CMD;
	pad = 4 - o.x.rank;
	o.axes = c->axes << pad;
	o.red_count = 1;
	for (d = 0; d < 4; d++) {
		bool red = o.axes & (1u << d);

		if (o.out.shape[d] != (red ? 1 : o.x.shape[d]))
			return MAIA_STATUS_BAD_DESC;
		if (red)
			o.red_count *= o.x.shape[d];
	}
	o.inner = o.axes & 8u;
	if (o.out.block > 1 && o.inner)	/* one element per row cannot fill a block */
		return MAIA_STATUS_BAD_DESC;
	o.chunks = o.inner ? 1 : (o.x.shape[3] + FW_CHUNK - 1) / FW_CHUNK;
	job.ntasks = fw_rows(o.out.shape) * o.chunks;
	stats->flops += o.x.nelems;
	return fw_te_job_run(&job, stats);
}
