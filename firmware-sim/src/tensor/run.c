// SPDX-License-Identifier: MIT
/*
 * Tensor engine services for the ops (gemm.c, eltwise.c, ...): running a
 * command's tasks on the tile pool with the per-tile accounting, each
 * worker's scratch buffer, and the activation functions. A leaf: it calls
 * no op and not the dispatcher (engine.c).
 */
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "maia/hw/queue.h"
#include "te.h"

/*
 * A tile's working set is up to a few MiB walked with large strides (the
 * micro-kernel steps down B and C rows): 2 MiB pages keep it within the
 * TLB, so large scratch buffers are 2 MiB aligned and marked for them.
 */
#define HUGE_PAGE	(2u << 20)

float *fw_worker_scratch(struct fw_worker *w, size_t n)
{
	if (n > w->scratch_floats) {
		size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
		bool huge = bytes >= HUGE_PAGE / 2;
		float *p;

		if (huge)
			bytes = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
		p = aligned_alloc(huge ? HUGE_PAGE : 64, bytes);
		if (!p)
			return NULL;
		if (huge)
			madvise(p, bytes, MADV_HUGEPAGE);	/* a hint: no THP is fine */
		free(w->scratch);
		w->scratch = p;
		w->scratch_floats = bytes / sizeof(float);
	}
	return w->scratch;
}

static void job_task(void *arg, size_t task, unsigned int worker)
{
	struct fw_te_job *job = arg;
	struct fw_worker *w = &job->te->workers[worker];
	uint64_t t0, dt;
	int st;

	if (__atomic_load_n(&job->status, __ATOMIC_RELAXED))
		return;		/* an earlier task failed: the command is over */
	t0 = fw_host_now_ns(&job->te->host);
	st = job->run(job, task, w);
	dt = fw_host_now_ns(&job->te->host) - t0;
	w->busy_ns += dt;
	__atomic_fetch_add(&job->te->tile_busy_ns[task % job->te->tiles], dt, __ATOMIC_RELAXED);
	if (st) {
		int expected = 0;

		__atomic_compare_exchange_n(&job->status, &expected, st, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

int fw_te_job_run(struct fw_te_job *job, struct maia_op_stats *stats)
{
	struct fw_tensor_engine *te = job->te;
	unsigned int i;

	for (i = 0; i < te->nworkers; i++) {
		te->workers[i].io.mem = job->mem;
		te->workers[i].io.bytes_read = 0;
		te->workers[i].io.bytes_written = 0;
		te->workers[i].busy_ns = 0;
	}
	job->status = MAIA_STATUS_OK;
	fw_pool_run(te->pool, job->ntasks, job_task, job);
	for (i = 0; i < te->nworkers; i++) {
		stats->bytes_read += te->workers[i].io.bytes_read;
		stats->bytes_written += te->workers[i].io.bytes_written;
		stats->busy_ns += te->workers[i].busy_ns;
	}
	return job->status;
}

float fw_act(float x, unsigned int act)
{
	switch (act) {
	case MAIA_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case MAIA_ACT_GELU:
		/*
		 * 0.5 x (1 + tanh(u)) written as x / (1 + exp(-2u)): no
		 * cancellation for negative x, where 1 + tanh(u) -> 0.
		 */
		return x / (1.0f + expf(-1.5957691216f * (x + 0.044715f * x * x * x)));
	case MAIA_ACT_SILU:
		return x / (1.0f + expf(-x));
	case MAIA_ACT_GELU_ERF:
		return 0.5f * x * erfcf(-x * 0.70710678118f);	/* erfc keeps the tail */
	default:
		return x;
	}
}
