// SPDX-License-Identifier: MIT
/*
 * Command processor (maia/hw/cmd.h): walks a job's command buffer through
 * its address space, one command at a time, and runs each one. The first
 * failure ends the job with its status and byte offset. Jobs are resumable
 * at a command boundary: a semaphore wait or a fabric command parks the
 * job, and a job that used up its scheduler quantum yields so other queues
 * can run.
 */
#include <stdlib.h>
#include <string.h>

#include "fw_fabric_coll.h"
#include "fw_fabric_coll_op.h"
#include "fw_fabric_xport.h"
#include "fw_internal.h"

/* Internal results besides MAIA_STATUS_*. */
#define CMD_PARK	(-1)	/* semaphore not ready: park the job */
#define CMD_STOP	(-2)	/* reset or queue disabled: abandon the job */

/* base + (rows - 1) * stride + width, or false if that overflows. */
static bool span_end(uint64_t base, uint64_t stride, uint32_t rows, uint64_t width,
		     uint64_t *end)
{
	uint64_t off;

	if (__builtin_mul_overflow(stride, (uint64_t)(rows - 1), &off) ||
	    __builtin_add_overflow(off, width, &off) ||
	    __builtin_add_overflow(base, off, end))
		return false;
	return true;
}

/*
 * Copies one contiguous VA span, piece by piece as the mappings allow. HBM
 * is addressed directly; only host-to-host goes through the bounce buffer.
 */
static int copy_span(struct maia_sim *sim, unsigned int qi, const struct fw_job *job,
		     struct fw_as *as, uint64_t src, uint64_t dst, uint64_t len)
{
	while (len) {
		uint64_t n = len < FW_BOUNCE_SIZE ? len : FW_BOUNCE_SIZE;
		struct fw_seg s, d;
		int rc;

		if (fw_job_should_stop(sim, qi, job))
			return CMD_STOP;
		rc = fw_as_segment(as, src, MAIA_ACCESS_READ, n, &s);
		if (rc == MAIA_STATUS_OK)
			rc = fw_as_segment(as, dst, MAIA_ACCESS_WRITE, n, &d);
		if (rc != MAIA_STATUS_OK)
			return rc;
		n = n < s.avail ? n : s.avail;
		n = n < d.avail ? n : d.avail;
		if (!s.sysmem && !d.sysmem)
			memmove(d.hbm, s.hbm, n);
		else if (!d.sysmem)
			rc = sim->ops.dma_read(sim->opaque, s.pa, d.hbm, n);
		else if (!s.sysmem)
			rc = sim->ops.dma_write(sim->opaque, d.pa, s.hbm, n);
		else
			rc = sim->ops.dma_read(sim->opaque, s.pa, sim->bounce, n) ||
			     sim->ops.dma_write(sim->opaque, d.pa, sim->bounce, n);
		if (rc)
			return MAIA_STATUS_DMA_ERROR;
		fw_tl_dma_chunk(sim, n, !s.sysmem, !d.sysmem);
		src += n;
		dst += n;
		len -= n;
	}
	return MAIA_STATUS_OK;
}

static int cmd_dma_copy(struct maia_sim *sim, unsigned int qi, const struct fw_job *job,
			struct fw_as *as, const uint8_t *raw)
{
	struct maia_cmd_dma_copy c;
	uint64_t end;
	int rc;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || c.reserved)
		return MAIA_STATUS_BAD_CMD;
	if (!c.width || !c.height)
		return MAIA_STATUS_OK;
	if (c.height == 1)
		c.src_stride = c.dst_stride = 0;
	if (!span_end(c.src, c.src_stride, c.height, c.width, &end) ||
	    !span_end(c.dst, c.dst_stride, c.height, c.width, &end))
		return MAIA_STATUS_BAD_CMD;
	/* Rows packed back to back on both sides are one span. */
	if (c.height > 1 && c.src_stride == c.width && c.dst_stride == c.width) {
		c.width *= c.height;
		c.height = 1;
	}
	for (uint32_t row = 0; row < c.height; row++) {
		rc = copy_span(sim, qi, job, as, c.src + row * c.src_stride,
			       c.dst + row * c.dst_stride, c.width);
		if (rc != MAIA_STATUS_OK)
			return rc;
	}
	return MAIA_STATUS_OK;
}

static int cmd_fill(struct maia_sim *sim, unsigned int qi, const struct fw_job *job,
		    struct fw_as *as, const uint8_t *raw)
{
	struct maia_cmd_fill c;
	uint64_t end;
	size_t chunk;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || c.reserved || c.size % 4u ||
	    __builtin_add_overflow(c.dst, c.size, &end))
		return MAIA_STATUS_BAD_CMD;
	chunk = c.size < FW_BOUNCE_SIZE ? (size_t)c.size : FW_BOUNCE_SIZE;
	for (size_t i = 0; i < chunk; i += 4)
		memcpy(sim->bounce + i, &c.pattern, 4);
	while (c.size) {
		size_t n = c.size < chunk ? (size_t)c.size : chunk;
		int rc;

		if (fw_job_should_stop(sim, qi, job))
			return CMD_STOP;
		rc = fw_as_write(as, c.dst, sim->bounce, n);
		if (rc != MAIA_STATUS_OK)
			return rc;
		/* a fill is taken to be to HBM */
		sim->work.hbm_write += n;
		sim->work.dma_bytes += n;
		c.dst += n;
		c.size -= n;
	}
	return MAIA_STATUS_OK;
}

static int cmd_fence_write(struct fw_as *as, const uint8_t *raw)
{
	struct maia_cmd_fence_write c;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || (c.addr & 7u))
		return MAIA_STATUS_BAD_CMD;
	/* Everything earlier commands wrote is visible before the fence value. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return fw_as_write(as, c.addr, &c.value, sizeof(c.value));
}

/* The modeled time the command starts at (maia/hw/model.h). */
static int cmd_timestamp(struct maia_sim *sim, unsigned int qi, struct fw_as *as,
			 const uint8_t *raw)
{
	struct maia_cmd_timestamp c;
	uint64_t now;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || (c.addr & 7u))
		return MAIA_STATUS_BAD_CMD;
	now = fw_tl_queue_now(sim, qi);
	return fw_as_write(as, c.addr, &now, sizeof(now));
}

/* Semaphores belong to the job's address space: a context cannot touch another's. */
static uint64_t *job_sems(struct maia_sim *sim, const struct fw_job *job)
{
	return sim->sems[job->sqe.asid];
}

/*
 * Semaphores change under the worker's feet only by remote writes with
 * MAIA_FABRIC_WRITE_SEM (the fabric thread): both sides use atomics.
 */
bool fw_sem_add(uint64_t *sem, uint64_t value)
{
	uint64_t old = __atomic_load_n(sem, __ATOMIC_RELAXED), new;

	do {
		if (__builtin_add_overflow(old, value, &new))
			return false;
	} while (!__atomic_compare_exchange_n(sem, &old, new, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}

bool fw_sem_take(uint64_t *sem, uint64_t value)
{
	uint64_t old = __atomic_load_n(sem, __ATOMIC_ACQUIRE);

	do {
		if (old < value)
			return false;
	} while (!__atomic_compare_exchange_n(sem, &old, old - value, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return true;
}

static int cmd_sem_signal(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			  const uint8_t *raw)
{
	struct maia_cmd_sem_signal c;
	uint64_t *sems = job_sems(sim, job);

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || c.index >= MAIA_NUM_SEMAPHORES)
		return MAIA_STATUS_BAD_CMD;
	/* the signal's modeled time first: a waiter may take it at once */
	fw_tl_sem_signal(sim, qi, job->sqe.asid, c.index);
	if (!fw_sem_add(&sems[c.index], c.value))
		return MAIA_STATUS_BAD_CMD;
	return MAIA_STATUS_OK;
}

static int cmd_sem_wait(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			const uint8_t *raw)
{
	struct maia_cmd_sem_wait c;
	uint64_t *sems = job_sems(sim, job);

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags || c.reserved ||
	    c.index >= MAIA_NUM_SEMAPHORES)
		return MAIA_STATUS_BAD_CMD;
	if (fw_sem_take(&sems[c.index], c.value)) {
		fw_tl_sem_taken(sim, qi, job->sqe.asid, c.index);
		return MAIA_STATUS_OK;
	}
	if (!c.timeout_us)
		return MAIA_STATUS_SEM_TIMEOUT;
	job->state = FW_JOB_SEM_WAIT;
	job->sem_index = c.index;
	job->sem_value = c.value;
	job->deadline_ns = fw_now_ns(sim) + (uint64_t)c.timeout_us * 1000u;
	job->sem_model_end = fw_tl_queue_now(sim, qi) + (uint64_t)c.timeout_us * 1000u;
	return CMD_PARK;
}

/*
 * Parks the job on a fabric operation; fw_cmd_run() resumes it when it ends
 * and lays the command out in modeled time then, with the work kept here.
 */
static int park_on_fabric(struct maia_sim *sim, struct fw_job *job, struct fw_fop *op,
			  uint16_t opcode, uint32_t cmd_size)
{
	if (!op)
		return MAIA_STATUS_FABRIC_LINK;	/* out of memory: the port cannot take it */
	job->fop = op;
	job->fop_cmd_size = cmd_size;
	job->fop_opcode = opcode;
	job->fop_bytes = sim->work.fabric_bytes;
	job->fop_hops = sim->work.fabric_hops;
	job->fop_cable_ns = sim->work.fabric_cable_ns;
	job->state = FW_JOB_FABRIC_WAIT;
	return CMD_PARK;
}

/* Both ranges [base, base + size) must not wrap. */
static bool fabric_ranges_ok(uint64_t local, uint64_t remote, uint64_t size)
{
	uint64_t end;

	return !__builtin_add_overflow(local, size, &end) &&
	       !__builtin_add_overflow(remote, size, &end);
}

static int cmd_fabric_write(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			    const uint8_t *raw)
{
	struct maia_cmd_fabric_write c;
	bool sem;

	memcpy(&c, raw, sizeof(c));
	sem = c.hdr.flags & MAIA_FABRIC_WRITE_SEM;
	if (c.hdr.size != sizeof(c) || (c.hdr.flags & ~MAIA_FABRIC_WRITE_SEM) ||
	    (sem && c.sem_index >= MAIA_NUM_SEMAPHORES) || (!sem && (c.sem_index || c.sem_value)) ||
	    !fabric_ranges_ok(c.local_addr, c.remote_offset, c.size))
		return MAIA_STATUS_BAD_CMD;
	if (c.port >= fw_fabric_ports(sim))
		return MAIA_STATUS_FABRIC_LINK;
	sim->work.fabric_bytes = c.size;
	sim->work.fabric_hops = 1;
	sim->work.fabric_cable_ns = sim->cfg.fabric_lat_ns[c.port];
	return park_on_fabric(sim, job,
			      fw_xport_write_start(sim, job->sqe.asid, &c,
						   fw_tl_cmd_start(sim, qi, MAIA_OP_FABRIC_WRITE) +
						   sim->chip.cmd_ns),
			      MAIA_OP_FABRIC_WRITE, sizeof(c));
}

static int cmd_fabric_read(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			   const uint8_t *raw)
{
	struct maia_cmd_fabric_read c;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || c.hdr.flags ||
	    !fabric_ranges_ok(c.local_addr, c.remote_offset, c.size))
		return MAIA_STATUS_BAD_CMD;
	if (c.port >= fw_fabric_ports(sim))
		return MAIA_STATUS_FABRIC_LINK;
	sim->work.fabric_bytes = c.size;
	sim->work.fabric_hops = 2;	/* the request out, the data back */
	/* the request's cable; the data's comes back with its answers */
	sim->work.fabric_cable_ns = sim->cfg.fabric_lat_ns[c.port];
	return park_on_fabric(sim, job,
			      fw_xport_read_start(sim, job->sqe.asid, &c,
						  fw_tl_cmd_start(sim, qi, MAIA_OP_FABRIC_READ) +
						  sim->chip.cmd_ns),
			      MAIA_OP_FABRIC_READ, sizeof(c));
}

static int cmd_collective(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			  struct fw_as *as, const uint8_t *raw)
{
	struct maia_cmd_collective c;

	memcpy(&c, raw, sizeof(c));
	if (c.hdr.size != sizeof(c) || fw_coll_check(&c, fw_fabric_ports(sim)) != MAIA_STATUS_OK)
		return MAIA_STATUS_BAD_CMD;
	fw_tl_collective_work(sim, &c);
	if (c.nranks == 1)
		return (int)fw_coll_run_local(as, &c);
	return park_on_fabric(sim, job,
			      fw_coll_op_start(sim, job->sqe.asid, &c,
					       fw_tl_cmd_start(sim, qi, MAIA_OP_COLLECTIVE) +
					       sim->chip.cmd_ns),
			      MAIA_OP_COLLECTIVE, sizeof(c));
}

static int cmd_tensor(struct maia_sim *sim, struct fw_as *as, const uint8_t *raw)
{
	struct maia_op_stats st = { 0 };
	struct maia_job_mem mem;
	int rc;

	fw_as_job_mem(as, &mem);
	rc = fw_tensor_exec(sim->te, (const struct maia_cmd_header *)raw, &mem, &st);
	sim->work.flops = st.flops;
	sim->work.tensor_read = st.bytes_read;
	sim->work.tensor_written = st.bytes_written;
	sim->work.mm = st.mm;
	return rc;
}

/* A KERNEL asks this between instructions: reset, firmware crash or queue disable. */
struct kernel_job {
	struct maia_sim *sim;
	unsigned int qi;
	const struct fw_job *job;
};

static bool kernel_should_stop(void *opaque)
{
	const struct kernel_job *kj = opaque;

	return fw_job_should_stop(kj->sim, kj->qi, kj->job);
}

/* KERNEL (maia/hw/tvp.h): a TVP program over a grid, on the tiles (src/tvp/). */
static int cmd_kernel(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
		      struct fw_as *as, const uint8_t *raw)
{
	const struct maia_cmd_header *h = (const struct maia_cmd_header *)raw;
	struct kernel_job kj = { .sim = sim, .qi = qi, .job = job };
	struct maia_cmd_kernel c;
	struct maia_job_mem mem;
	struct fw_tvp_env env = {
		.mem = &mem, .sems = job_sems(sim, job), .stop = kernel_should_stop,
		.stop_opaque = &kj, .te = sim->te,
	};
	int rc;

	if (h->size != sizeof(c))
		return MAIA_STATUS_BAD_CMD;
	memcpy(&c, raw, sizeof(c));
	fw_as_job_mem(as, &mem);
	rc = fw_tvp_kernel(&env, &c, &sim->work.tvp);
	/* its signals in modeled time: at the command's start (a waiter follows it) */
	for (unsigned int i = 0; i < MAIA_NUM_SEMAPHORES; i++)
		if (sim->work.tvp.sems_signaled >> i & 1)
			fw_tl_sem_signal(sim, qi, job->sqe.asid, i);
	return rc == FW_TVP_STOPPED ? CMD_STOP : rc;
}

static int exec_one(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
		    struct fw_as *as, const uint8_t *raw, uint16_t opcode)
{
	if (opcode < 64 && !((sim->fw.opcodes >> opcode) & 1))
		return MAIA_STATUS_BAD_OPCODE;
	switch (opcode) {
	case MAIA_OP_NOP:
		/* Any size: NOPs double as padding. */
		return ((const struct maia_cmd_header *)raw)->flags ? MAIA_STATUS_BAD_CMD
								    : MAIA_STATUS_OK;
	case MAIA_OP_DMA_COPY:
		return cmd_dma_copy(sim, qi, job, as, raw);
	case MAIA_OP_FILL:
		return cmd_fill(sim, qi, job, as, raw);
	case MAIA_OP_FENCE_WRITE:
		return cmd_fence_write(as, raw);
	case MAIA_OP_TIMESTAMP:
		return cmd_timestamp(sim, qi, as, raw);
	case MAIA_OP_SEM_SIGNAL:
		return cmd_sem_signal(sim, qi, job, raw);
	case MAIA_OP_SEM_WAIT:
		return cmd_sem_wait(sim, qi, job, raw);
	case MAIA_OP_FABRIC_WRITE:
		return cmd_fabric_write(sim, qi, job, raw);
	case MAIA_OP_FABRIC_READ:
		return cmd_fabric_read(sim, qi, job, raw);
	case MAIA_OP_COLLECTIVE:
		return cmd_collective(sim, qi, job, as, raw);
	case MAIA_OP_KERNEL:
		return cmd_kernel(sim, qi, job, as, raw);
	default:
		if (fw_tensor_handles(opcode))
			return cmd_tensor(sim, as, raw);
		return MAIA_STATUS_BAD_OPCODE;
	}
}

/* Fetches the command at job->offset into sim->cmd_buf. */
static int fetch_cmd(struct maia_sim *sim, struct fw_job *job, struct fw_as *as,
		     struct maia_cmd_header *hdr)
{
	uint32_t left = job->sqe.cmdbuf_size - job->offset;
	uint64_t va = job->sqe.cmdbuf_addr + job->offset;
	int rc;

	if (left < sizeof(*hdr))
		return MAIA_STATUS_BAD_CMD;
	rc = fw_as_read(as, va, hdr, sizeof(*hdr));
	if (rc != MAIA_STATUS_OK)
		return rc;
	if (hdr->size < sizeof(*hdr) || hdr->size % 8u || hdr->size > left)
		return MAIA_STATUS_BAD_CMD;
	if (hdr->size > sim->cmd_buf_size) {
		uint8_t *nb = realloc(sim->cmd_buf, hdr->size);

		if (!nb)
			return MAIA_STATUS_BAD_CMD;
		sim->cmd_buf = nb;
		sim->cmd_buf_size = hdr->size;
	}
	memcpy(sim->cmd_buf, hdr, sizeof(*hdr));
	return fw_as_read(as, va + sizeof(*hdr), sim->cmd_buf + sizeof(*hdr),
			    hdr->size - sizeof(*hdr));
}

/*
 * A parked semaphore wait: finish it if it can, else keep waiting. It ends
 * in modeled time after the signal it took (or, timed out, where it was).
 */
static int resume_sem_wait(struct maia_sim *sim, unsigned int qi, struct fw_job *job)
{
	uint64_t *sem = &job_sems(sim, job)[job->sem_index];

	if (fw_sem_take(sem, job->sem_value)) {
		fw_tl_sem_taken(sim, qi, job->sqe.asid, job->sem_index);
		fw_tl_cmd_begin(sim, qi, MAIA_OP_SEM_WAIT);
		fw_tl_cmd_end(sim, qi, MAIA_OP_SEM_WAIT, MAIA_STATUS_OK);
		job->state = FW_JOB_RUNNING;
		job->offset += sizeof(struct maia_cmd_sem_wait);
		return MAIA_STATUS_OK;
	}
	if (fw_now_ns(sim) >= job->deadline_ns) {
		/* the wait lasted its timeout in modeled time too */
		fw_tl_after(sim, qi, job->sem_model_end);
		fw_tl_cmd_begin(sim, qi, MAIA_OP_SEM_WAIT);
		fw_tl_cmd_end(sim, qi, MAIA_OP_SEM_WAIT, MAIA_STATUS_SEM_TIMEOUT);
		return MAIA_STATUS_SEM_TIMEOUT;
	}
	return CMD_PARK;
}

/*
 * A job parked on a fabric operation: once the operation ended, its status
 * is the command's, and an MMU fault it took on this side is the job's.
 */
static int resume_fabric_wait(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			      struct fw_as *as)
{
	struct fw_fop *op = job->fop;
	uint64_t model_end;
	uint32_t status;

	pthread_mutex_lock(&sim->lock);
	if (!fw_fop_done_locked(op)) {
		pthread_mutex_unlock(&sim->lock);
		return CMD_PARK;
	}
	job->fop = NULL;
	pthread_mutex_unlock(&sim->lock);
	status = op->status;
	model_end = op->model_end_ns;
	if (op->as.faulted && !as->faulted) {
		as->faulted = true;
		as->fault_va = op->as.fault_va;
		as->fault_access = op->as.fault_access;
	}
	if (op->as.ecc_hit && !as->ecc_hit) {
		as->ecc_hit = true;
		as->ecc_page = op->as.ecc_page;
	}
	fw_fop_free(op);
	fw_tl_cmd_begin(sim, qi, job->fop_opcode);
	sim->work.fabric_bytes = job->fop_bytes;
	sim->work.fabric_hops = job->fop_hops;
	sim->work.fabric_cable_ns = job->fop_cable_ns;
	sim->work.fabric_end_ns = model_end;
	fw_tl_cmd_end(sim, qi, job->fop_opcode, (int)status);
	job->state = FW_JOB_RUNNING;
	if (status == MAIA_STATUS_OK)
		job->offset += job->fop_cmd_size;
	return (int)status;
}

/*
 * Commands the inline path runs in place of the worker, in the doorbell
 * writer's thread or the fabric thread (fw_sched_inline_run()): a few host
 * microseconds each, no semaphores, no tensor engine, no bulk DMA. A
 * collective of several ranks only builds its operation and parks the job
 * on the fabric (a one-rank one is a local copy of any size). The slice in
 * place is a number of commands, not host time: where a job runs then
 * depends on what it holds, not on how loaded the host is.
 */
#define FW_INLINE_MAX_CMDS	64u

static bool fw_cmd_cheap(const uint8_t *raw, uint16_t opcode)
{
	const struct maia_cmd_header *h = (const struct maia_cmd_header *)raw;
	struct maia_cmd_collective c;

	if (opcode == MAIA_OP_COLLECTIVE && h->size == sizeof(c)) {
		memcpy(&c, raw, sizeof(c));
		return c.nranks != 1;
	}
	return opcode == MAIA_OP_NOP || opcode == MAIA_OP_FENCE_WRITE ||
	       opcode == MAIA_OP_TIMESTAMP || opcode == MAIA_OP_COLLECTIVE;
}

enum fw_run_result fw_cmd_run(struct maia_sim *sim, unsigned int qi,
				  struct fw_job *job, struct fw_as *as,
				  uint32_t *status, uint32_t *error_offset)
{
	bool in_place = __atomic_load_n(&sim->inline_busy, __ATOMIC_RELAXED);
	uint64_t slice_end = fw_now_ns(sim) + (uint64_t)sim->fw.quantum_us * 1000u;
	unsigned int cmds = 0;
	int rc;

	*error_offset = job->offset;
	if (job->state == FW_JOB_FABRIC_WAIT) {
		rc = resume_fabric_wait(sim, qi, job, as);
		if (rc == CMD_PARK)
			return FW_RUN_PARKED;
		if (rc != MAIA_STATUS_OK) {
			*status = (uint32_t)rc;
			return FW_RUN_DONE;
		}
	}
	if (job->state == FW_JOB_SEM_WAIT) {
		rc = resume_sem_wait(sim, qi, job);
		if (rc == CMD_PARK)
			return FW_RUN_PARKED;
		if (rc != MAIA_STATUS_OK) {
			*status = (uint32_t)rc;
			return FW_RUN_DONE;
		}
	}
	while (job->offset < job->sqe.cmdbuf_size) {
		struct maia_cmd_header hdr = { 0 };	/* traced even if the fetch fails */

		if (fw_job_should_stop(sim, qi, job))
			return FW_RUN_STOPPED;
		/* In place of the worker: a short slice (see fw_cmd_cheap()). */
		if (in_place ? cmds++ == FW_INLINE_MAX_CMDS : fw_now_ns(sim) >= slice_end)
			return FW_RUN_YIELD;
		*error_offset = job->offset;
		rc = fetch_cmd(sim, job, as, &hdr);
		if (rc == MAIA_STATUS_OK && in_place && !fw_cmd_cheap(sim->cmd_buf, hdr.opcode))
			return FW_RUN_YIELD;	/* the worker fetches it again */
		if (rc == MAIA_STATUS_OK) {
			fw_tl_cmd_begin(sim, qi, hdr.opcode);
			rc = exec_one(sim, qi, job, as, sim->cmd_buf, hdr.opcode);
			/* a parked command is laid out when it resumes */
			if (rc != CMD_PARK && rc != CMD_STOP)
				fw_tl_cmd_end(sim, qi, hdr.opcode, rc);
		}
		if (rc == CMD_STOP)
			return FW_RUN_STOPPED;
		if (rc == CMD_PARK)
			return FW_RUN_PARKED;
		if (rc != MAIA_STATUS_OK) {
			fw_trace(sim, "queue %u job 0x%llx: opcode 0x%x at offset %u failed with status %d",
				   qi, (unsigned long long)job->sqe.job_id, hdr.opcode,
				   job->offset, rc);
			*status = (uint32_t)rc;
			return FW_RUN_DONE;
		}
		job->offset += hdr.size;
	}
	*status = MAIA_STATUS_OK;
	return FW_RUN_DONE;
}
