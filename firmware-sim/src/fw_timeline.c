// SPDX-License-Identifier: MIT
/*
 * The device's modeled clock (Documentation/hw/time-model.rst).
 *
 * Every command gets a modeled duration from the chip's cost model
 * (fw_model.c), whatever the host needed to run it. The chip's engines
 * (tensor, DMA, fabric) run side by side: a command starts when its queue's
 * previous command has ended, the semaphore signals it waited for have
 * come, and its engine is free; commands of one engine follow one another
 * in the order the device ran them. A job starts when the command
 * processor fetches it: not before the queue's previous job ended, the
 * last fetch on any queue was done, or any job completed by then ended. When the host submitted a job
 * does not enter: a workload has the same modeled timeline on a slow host
 * and a fast one. The power controller runs on this clock
 * (fw_telem_run_locked()), so a throttled clock lengthens the commands run
 * under it.
 *
 * All of it is the worker's (or the inline doorbell path's, which runs
 * instead of the worker); the telemetry counters it feeds are under
 * sim->lock.
 */
#include <string.h>

#include "fw_internal.h"
#include "maia/hw/tensor.h"

uint64_t fw_tl_queue_now(struct maia_sim *sim, unsigned int qi)
{
	return sim->tl.queue_ns[qi];
}

uint64_t fw_tl_job_start(struct maia_sim *sim, unsigned int qi)
{
	struct fw_timeline *tl = &sim->tl;
	uint64_t t = fw_posted_ready(tl->queue_ns[qi], tl->acked_ns[qi], MAIA_OP_NOP);

	if (t < tl->fetch_ns)
		t = tl->fetch_ns;

	/*
	 * Nor before the jobs completed by now: a host that waited for one
	 * submits the next after it (a job submitted beside a running one
	 * may run beside it).
	 */
	if (t < tl->done_ns)
		t = tl->done_ns;

	/*
	 * Fetching the entry and, at the end, writing the completion: the
	 * one command processor fetches jobs one after another.
	 */
	tl->queue_ns[qi] = t + sim->chip.job_ns;
	tl->fetch_ns = tl->queue_ns[qi];
	return t;
}

uint64_t fw_tl_job_done(struct maia_sim *sim, unsigned int qi)
{
	struct fw_timeline *tl = &sim->tl;

	/* the completion is written once the job's remote writes are acknowledged */
	tl->queue_ns[qi] = fw_posted_ready(tl->queue_ns[qi], tl->acked_ns[qi], MAIA_OP_NOP);
	if (tl->done_ns < tl->queue_ns[qi])
		tl->done_ns = tl->queue_ns[qi];
	return tl->queue_ns[qi];
}

unsigned int fw_engine_of(uint16_t opcode)
{
	switch (opcode) {
	case MAIA_OP_NOP:
	case MAIA_OP_FENCE_WRITE:
	case MAIA_OP_TIMESTAMP:
	case MAIA_OP_SEM_SIGNAL:
	case MAIA_OP_SEM_WAIT:
		return FW_ENG_NONE;
	case MAIA_OP_DMA_COPY:
	case MAIA_OP_FILL:
		return FW_ENG_DMA;
	case MAIA_OP_FABRIC_WRITE:
	case MAIA_OP_FABRIC_READ:
	case MAIA_OP_COLLECTIVE:
		return FW_ENG_FABRIC;
	default:
		return FW_ENG_TENSOR;
	}
}

bool fw_passes_posted(uint16_t opcode)
{
	return opcode == MAIA_OP_FABRIC_WRITE || opcode == MAIA_OP_SEM_WAIT;
}

uint64_t fw_posted_ready(uint64_t queue_ns, uint64_t acked_ns, uint16_t opcode)
{
	return fw_passes_posted(opcode) || acked_ns <= queue_ns ? queue_ns : acked_ns;
}

uint64_t fw_engines_start(const struct fw_engines *e, unsigned int eng, uint64_t ready_ns)
{
	if (eng == FW_ENG_NONE || eng >= FW_ENGINES)
		return ready_ns;
	return e->busy_ns[eng] > ready_ns ? e->busy_ns[eng] : ready_ns;
}

void fw_engines_share_hbm(const struct fw_engines *e, unsigned int eng, uint64_t start,
			  struct fw_cost *c)
{
	uint64_t n = 1;

	for (unsigned int i = FW_ENG_NONE + 1; i < FW_ENGINES; i++)
		if (i != eng && e->busy_ns[i] > start)
			n++;
	c->hbm_ns *= n;
}

void fw_engines_done(struct fw_engines *e, unsigned int eng, uint64_t end)
{
	if (eng != FW_ENG_NONE && eng < FW_ENGINES && e->busy_ns[eng] < end)
		e->busy_ns[eng] = end;
}

uint64_t fw_tl_cmd_start(struct maia_sim *sim, unsigned int qi, uint16_t opcode)
{
	return fw_engines_start(&sim->tl.eng, fw_engine_of(opcode), sim->tl.queue_ns[qi]);
}

void fw_tl_after(struct maia_sim *sim, unsigned int qi, uint64_t t)
{
	if (sim->tl.queue_ns[qi] < t)
		sim->tl.queue_ns[qi] = t;
}

void fw_tl_sem_signal_at(struct maia_sim *sim, unsigned int asid, unsigned int index,
			 uint64_t t)
{
	uint64_t *p = &sim->tl.sem_ns[asid][index], old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (old < t && !__atomic_compare_exchange_n(p, &old, t, true, __ATOMIC_RELEASE,
						       __ATOMIC_RELAXED))
		;
}

void fw_tl_sem_signal(struct maia_sim *sim, unsigned int qi, unsigned int asid,
		      unsigned int index)
{
	fw_tl_sem_signal_at(sim, asid, index, fw_tl_queue_now(sim, qi));
}

void fw_tl_sem_taken(struct maia_sim *sim, unsigned int qi, unsigned int asid,
		     unsigned int index)
{
	fw_tl_after(sim, qi, __atomic_load_n(&sim->tl.sem_ns[asid][index], __ATOMIC_ACQUIRE));
}

void fw_tl_cmd_begin(struct maia_sim *sim, unsigned int qi, uint16_t opcode)
{
	struct fw_timeline *tl = &sim->tl;

	memset(&sim->work, 0, sizeof(sim->work));
	tl->queue_ns[qi] = fw_posted_ready(tl->queue_ns[qi], tl->acked_ns[qi], opcode);
}

void fw_tl_dma_chunk(struct maia_sim *sim, uint64_t n, bool src_hbm, bool dst_hbm)
{
	struct fw_cmd_work *w = &sim->work;

	w->dma_bytes += n;
	w->host_bytes += (src_hbm ? 0 : n) + (dst_hbm ? 0 : n);
	if (src_hbm)
		w->hbm_read += n;
	if (dst_hbm)
		w->hbm_write += n;
}

/* The bytes a rank sends and the hops it waits through: fw_model_coll_work(). */
void fw_tl_collective_work(struct maia_sim *sim, const struct maia_cmd_collective *c)
{
	fw_model_coll_work(c, &sim->work.fabric_bytes, &sim->work.fabric_hops);
}

static bool light_opcode(uint16_t opcode)
{
	return opcode == MAIA_OP_NOP || opcode == MAIA_OP_FENCE_WRITE ||
	       opcode == MAIA_OP_TIMESTAMP || opcode == MAIA_OP_SEM_SIGNAL ||
	       opcode == MAIA_OP_SEM_WAIT;
}

static bool fabric_opcode(uint16_t opcode)
{
	return opcode == MAIA_OP_FABRIC_WRITE || opcode == MAIA_OP_FABRIC_READ ||
	       opcode == MAIA_OP_COLLECTIVE;
}

/*
 * The cost of the command that just ran, from what it did; *ack_ns is the
 * hop a posted remote write is acknowledged after (0: not posted).
 */
static void cmd_cost(struct maia_sim *sim, uint16_t opcode, int status, uint64_t start,
		     struct fw_cost *c, uint64_t *hbm_write, uint64_t *ack_ns)
{
	const struct fw_chip *chip = &sim->chip;
	const struct fw_cmd_work *w = &sim->work;

	*hbm_write = 0;
	*ack_ns = 0;
	if (status != MAIA_STATUS_OK || light_opcode(opcode)) {
		/* a failed command costs what noticing the failure costs */
		fw_model_light(chip, c);
	} else if (opcode == MAIA_OP_FABRIC_WRITE) {
		*ack_ns = fw_model_fabric_write(chip, w->fabric_cable_ns, w->fabric_bytes, c);
	} else if (opcode == MAIA_OP_DMA_COPY || opcode == MAIA_OP_FILL) {
		fw_model_dma(chip, w->host_bytes, w->hbm_read + w->hbm_write, c);
		*hbm_write = w->hbm_write;
	} else if (fabric_opcode(opcode)) {
		fw_model_fabric(chip, w->fabric_bytes, w->fabric_hops, w->fabric_cable_ns, c);
		/* a collective ends when its ranks' messages say, if that is later */
		if (w->fabric_end_ns > start + c->fixed_ns + c->link_ns)
			c->link_ns = w->fabric_end_ns - start - c->fixed_ns;
	} else if (opcode == MAIA_OP_KERNEL) {
		struct fw_kernel_work kw = {
			.instances = w->tvp.instances, .flops = w->tvp.flops,
			.bytes = w->tvp.bytes_read + w->tvp.bytes_written,
		};

		memcpy(kw.units, w->tvp.units, sizeof(kw.units));
		fw_model_kernel(chip, &kw, c);
		*hbm_write = w->tvp.bytes_written;
	} else if (w->mm.batch) {
		struct fw_mm_shape s = {
			.batch = w->mm.batch, .m = w->mm.m, .n = w->mm.n, .k = w->mm.k,
			.dtype_a = w->mm.dtype_a, .dtype_b = w->mm.dtype_b,
			.dtype_c = w->mm.dtype_c, .reads_c = w->mm.reads_c, .bias = w->mm.bias,
		};

		fw_model_mm(chip, &s, c);
		*hbm_write = fw_model_bytes(s.dtype_c, s.m * s.n) * s.batch;
		if (*hbm_write > c->hbm_bytes)
			*hbm_write = c->hbm_bytes;
	} else {
		fw_model_vector(chip, w->flops, w->tensor_read + w->tensor_written, c);
		*hbm_write = w->tensor_written;
	}
}

uint64_t fw_tl_cmd_end(struct maia_sim *sim, unsigned int qi, uint16_t opcode, int status)
{
	unsigned int eng = fw_engine_of(opcode);
	uint64_t start = fw_tl_cmd_start(sim, qi, opcode), end, hbm_write, ack;
	struct fw_cost c;

	cmd_cost(sim, opcode, status, start, &c, &hbm_write, &ack);
	fw_engines_share_hbm(&sim->tl.eng, eng, start, &c);
	pthread_mutex_lock(&sim->lock);
	end = fw_telem_run_locked(sim, start, &c, hbm_write, sim->work.dma_bytes);
	if (opcode == MAIA_OP_KERNEL)
		fw_telem_tvp_locked(sim, sim->work.tvp.insns, sim->work.tvp.validated);
	fw_telem_unlock_and_raise(sim);
	sim->tl.queue_ns[qi] = end;
	/* the acknowledgement's arrival (the target's end of the cable), if later */
	if (ack && sim->work.fabric_end_ns > end + ack)
		ack = sim->work.fabric_end_ns - end;
	if (ack && sim->tl.acked_ns[qi] < end + ack)
		sim->tl.acked_ns[qi] = end + ack;
	fw_engines_done(&sim->tl.eng, eng, end);
	return end;
}
