// SPDX-License-Identifier: MIT
/*
 * The device worker: runs boot and mailbox work, reads shadow tails, and
 * schedules jobs across queues. Higher priority queues go first; queues of
 * equal priority take turns (round robin) at job or quantum boundaries. A job
 * parked on a semaphore does not block its priority level.
 *
 * Aging: strict priority alone lets a busy HIGH queue starve the others
 * forever. A runnable queue that the scheduler passed over (picked another
 * queue while it could have run) and has not served since for the
 * firmware's aging bound (FW_DEFAULT_AGING_US, TLV SCHED_AGING_US) is served
 * next, oldest first, for one job or quantum. The clock starts at the first
 * pass-over, not at the doorbell: time the device spent inside a job it had
 * already chosen, or a queue spent empty or parked, is not starvation, and
 * a burst shorter than the bound keeps strict priority order.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "fw_fabric_xport.h"
#include "fw_internal.h"

/*
 * A doorbell writer's run that parked its job on a fabric operation moving
 * at most this much starts it on the fabric itself (fw_sched_inline_run()):
 * one message's data.
 */
#define FW_SCHED_DOORBELL_FABRIC_BYTES	MAIA_FABRIC_MSG_MAX_DATA

/*
 * Jobs rung while a job was parked on the fabric that the thread resuming
 * it runs on in place of the worker (inline_run()), the resumed job's turn
 * not counted: a bound on how long a fabric thread serves a queue.
 */
#define FW_SCHED_RESUME_TURNS		16u

/* Queue registers the worker needs, copied under sim->lock. */
struct queue_snap {
	uint64_t sq, cq, gen;
	uint32_t size, head;
	uint32_t asid_bind;		/* MAIA_Q_ASID */
	bool inject_hang, inject_fault;
};

bool fw_job_should_stop(struct maia_sim *sim, unsigned int qi, const struct fw_job *job)
{
	return __atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&sim->queues[qi].gen, __ATOMIC_ACQUIRE) != job->gen;
}

static unsigned int queue_prio(const struct fw_queue *q)
{
	return (q->ctrl & MAIA_Q_CTRL_PRIO_MASK) >> MAIA_Q_CTRL_PRIO_SHIFT;
}

/* The job leaves FW_JOB_FABRIC_WAIT (or is dropped): its operation goes back. */
static void drop_fop_locked(struct maia_sim *sim, struct fw_job *job)
{
	if (job->fop) {
		fw_fop_release_locked(sim, job->fop);
		job->fop = NULL;
	}
}

/* Destroy: both threads are gone. */
void fw_sched_release_fops(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
	for (unsigned int qi = 0; qi < MAIA_MAX_QUEUES; qi++)
		drop_fop_locked(sim, &sim->queues[qi].job);
	pthread_mutex_unlock(&sim->lock);
}

/* A job parked on a fabric operation: not runnable, but work in progress for drain. */
static bool fabric_parked_locked(struct maia_sim *sim)
{
	for (unsigned int qi = 0; qi < sim->cfg.num_queues; qi++) {
		const struct fw_queue *q = &sim->queues[qi];

		if (q->job.state == FW_JOB_FABRIC_WAIT && q->job.gen == q->gen)
			return true;
	}
	return false;
}

static bool queue_runnable_locked(struct maia_sim *sim, struct fw_queue *q, uint64_t now,
				  uint64_t *next_deadline)
{
	struct fw_job *job = &q->job;

	if (job->state != FW_JOB_IDLE && job->gen != q->gen) {
		drop_fop_locked(sim, job);
		job->state = FW_JOB_IDLE;	/* queue was disabled: drop it */
	}
	if (!q->enabled || (q->status & (MAIA_Q_STATUS_ERR_CONFIG | MAIA_Q_STATUS_ERR_DMA)))
		return false;
	switch (job->state) {
	case FW_JOB_IDLE:
		return q->head != q->tail;
	case FW_JOB_RUNNING:
		return true;
	case FW_JOB_SEM_WAIT:
		/* A remote write may move the semaphore from the fabric thread. */
		if (__atomic_load_n(&sim->sems[job->sqe.asid][job->sem_index], __ATOMIC_ACQUIRE) >=
		    job->sem_value || now >= job->deadline_ns)
			return true;
		if (job->deadline_ns < *next_deadline)
			*next_deadline = job->deadline_ns;
		return false;
	case FW_JOB_FABRIC_WAIT:
		return fw_fop_done_locked(job->fop);
	case FW_JOB_HUNG:
		return false;
	}
	return false;
}

static int pick_queue_locked(struct maia_sim *sim, uint64_t now, uint64_t *next_deadline)
{
	uint64_t bound = (uint64_t)sim->fw.aging_us * 1000u, oldest = UINT64_MAX;
	unsigned int nq = sim->cfg.num_queues;
	bool runnable[MAIA_MAX_QUEUES];
	int pick = -1, aged = -1;

	for (unsigned int qi = 0; qi < nq; qi++) {
		struct fw_queue *q = &sim->queues[qi];

		runnable[qi] = queue_runnable_locked(sim, q, now, next_deadline);
		if (!runnable[qi])
			q->waiting = false;	/* empty or parked: not starved */
		else if (q->waiting && now - q->waiting_since_ns >= bound &&
			 q->waiting_since_ns < oldest) {
			oldest = q->waiting_since_ns;
			aged = (int)qi;
		}
	}
	if (aged >= 0) {
		fw_trace(sim, "sched: queue %d (priority %u) waited %llu us: served out of priority order",
			 aged, queue_prio(&sim->queues[aged]),
			 (unsigned long long)((now - oldest) / 1000u));
		pick = aged;
	}
	for (int prio = MAIA_QUEUE_PRIO_HIGH; pick < 0 && prio >= 0; prio--) {
		for (unsigned int k = 0; k < nq; k++) {
			unsigned int qi = (sim->rr_next[prio] + k) % nq;

			if (queue_prio(&sim->queues[qi]) != (unsigned int)prio || !runnable[qi])
				continue;
			sim->rr_next[prio] = (qi + 1) % nq;
			pick = (int)qi;
			break;
		}
	}
	if (pick < 0)
		return -1;
	/* Every other runnable queue was passed over: its wait starts now. */
	for (unsigned int qi = 0; qi < nq; qi++) {
		struct fw_queue *q = &sim->queues[qi];

		if (runnable[qi] && (int)qi != pick && !q->waiting) {
			q->waiting = true;
			q->waiting_since_ns = now;
		}
	}
	sim->queues[pick].waiting = false;	/* served: its wait ends */
	return pick;
}

/* start_ns and end_ns are modeled times (maia/hw/model.h). */
static void write_cqe(struct maia_sim *sim, unsigned int qi, const struct fw_job *job,
		      uint32_t status, uint32_t error_offset, bool *ok)
{
	struct maia_cq_entry cqe = {
		.job_id = job->sqe.job_id,
		.status = status,
		.start_ns = job->start_ns,
		.end_ns = fw_tl_job_done(sim, qi),
		.error_offset = error_offset,
	};
	uint64_t addr = job->cq + (uint64_t)job->index * sizeof(cqe);
	uint32_t valid = MAIA_CQE_VALID;

	/* The job's results are visible before its completion entry ... */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*ok = !sim->ops.dma_write(sim->opaque, addr, &cqe, sizeof(cqe));
	/* ... and the entry's fields before its VALID flag. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*ok = *ok && !sim->ops.dma_write(sim->opaque, addr + offsetof(struct maia_cq_entry, flags),
					 &valid, sizeof(valid));
}

static void complete_job(struct maia_sim *sim, unsigned int qi, struct fw_job *job,
			 uint32_t status, uint32_t error_offset, const struct fw_as *as)
{
	struct fw_queue *q = &sim->queues[qi];
	bool ok, raise_event = false, raise_queue = true;

	/*
	 * Reset writes the ABORTED entry itself; a disabled (or re-enabled)
	 * queue's ring may already be gone, so it gets no entry at all.
	 */
	if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE))
		return;
	if (fw_job_should_stop(sim, qi, job)) {
		job->state = FW_JOB_IDLE;
		return;
	}
	if (status == MAIA_STATUS_MMU_FAULT && as && as->faulted) {
		/* Queued before the completion entry: the host finds it there first. */
		pthread_mutex_lock(&sim->lock);
		fw_faultq_push_locked(sim, qi, job->sqe.job_id, as);
		pthread_mutex_unlock(&sim->lock);
	}
	write_cqe(sim, qi, job, status, error_offset, &ok);
	job->state = FW_JOB_IDLE;
	fw_trace(sim, "queue %u job 0x%llx slot %u done: status %u offset %u",
		   qi, (unsigned long long)job->sqe.job_id, job->index, status, error_offset);

	pthread_mutex_lock(&sim->lock);
	q->fabric_wait = false;		/* with the completion, not after it */
	if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE) || job->gen != q->gen) {
		pthread_mutex_unlock(&sim->lock);
		return;
	}
	if (!ok) {
		raise_queue = false;
		fw_guest_error(sim, "maia: queue %u completion write to 0x%llx failed; queue stopped",
				 qi, (unsigned long long)job->cq);
		q->status |= MAIA_Q_STATUS_ERR_DMA;
		raise_event = fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
	} else {
		q->head = (job->index + 1) & (q->size - 1);
		q->completed++;
		/* 1.3: with ON_ARM, only an armed queue interrupts, once. */
		if (q->irq & MAIA_Q_IRQ_ON_ARM) {
			raise_queue = q->irq & MAIA_Q_IRQ_ARMED;
			q->irq &= ~MAIA_Q_IRQ_ARMED;
		}
		if (q->shadow)
			q->kicked = true;	/* the host may have queued more */
	}
	if (status == MAIA_STATUS_MMU_FAULT && as && as->faulted) {
		/* The first fault stays latched until the host clears the cause. */
		if (!(sim->irq.status & MAIA_INT_MMU_FAULT)) {
			sim->fault.info = (as->asid & MAIA_FAULT_ASID_MASK) |
					  ((as->fault_access << MAIA_FAULT_ACCESS_SHIFT) &
					   MAIA_FAULT_ACCESS_MASK) |
					  ((qi << MAIA_FAULT_QUEUE_SHIFT) & MAIA_FAULT_QUEUE_MASK);
			sim->fault.addr = as->fault_va;
		}
		raise_event |= fw_int_assert_locked(sim, MAIA_INT_MMU_FAULT);
	}
	if (status == MAIA_STATUS_HBM_ECC && as && as->ecc_hit)
		raise_event |= fw_ecc_job_hit_locked(sim, as->asid, qi, as->ecc_page);
	pthread_mutex_unlock(&sim->lock);

	if (raise_queue)
		fw_raise(sim, MAIA_VEC_QUEUE(qi));
	if (raise_event)
		fw_raise(sim, MAIA_VEC_EVENT);
}

static uint32_t check_sqe(struct maia_sim *sim, unsigned int qi, const struct queue_snap *s,
			  const struct maia_sq_entry *e)
{
	if (e->reserved || (e->flags & ~MAIA_SQE_NOP)) {
		fw_guest_error(sim, "maia: queue %u entry flags 0x%x reserved 0x%llx", qi,
				 e->flags, (unsigned long long)e->reserved);
		return MAIA_STATUS_BAD_CMD;
	}
	/* A queue bound to an address space runs nothing in another (user queues). */
	if ((s->asid_bind & MAIA_Q_ASID_BOUND) && e->asid != (s->asid_bind & MAIA_Q_ASID_MASK)) {
		fw_guest_error(sim, "maia: queue %u is bound to asid %u; entry names asid %u", qi,
				 s->asid_bind & MAIA_Q_ASID_MASK, e->asid);
		return MAIA_STATUS_ASID_DENIED;
	}
	if (e->flags & MAIA_SQE_NOP)
		return MAIA_STATUS_OK;
	if (!fw_asid_usable(sim, e->asid)) {
		fw_guest_error(sim, "maia: queue %u job uses asid %u with no context", qi, e->asid);
		return MAIA_STATUS_BAD_CONTEXT;
	}
	if (!e->cmdbuf_size || e->cmdbuf_size > MAIA_CMDBUF_MAX_SIZE || e->cmdbuf_size % 8u ||
	    (e->cmdbuf_addr & 7u)) {
		fw_guest_error(sim, "maia: queue %u command buffer 0x%llx size %u malformed", qi,
				 (unsigned long long)e->cmdbuf_addr, e->cmdbuf_size);
		return MAIA_STATUS_BAD_CMD;
	}
	return MAIA_STATUS_OK;
}

/* Fetches the entry at HEAD. Returns false if the job already finished. */
static bool start_job(struct maia_sim *sim, unsigned int qi, const struct queue_snap *s)
{
	struct fw_job *job = &sim->queues[qi].job;
	struct maia_sq_entry sqe;
	uint32_t status;
	bool raise;

	if (sim->ops.dma_read(sim->opaque, s->sq + (uint64_t)s->head * sizeof(sqe),
			      &sqe, sizeof(sqe))) {
		pthread_mutex_lock(&sim->lock);
		fw_guest_error(sim, "maia: queue %u entry %u fetch from 0x%llx failed; queue stopped",
				 qi, s->head, (unsigned long long)s->sq);
		sim->queues[qi].status |= MAIA_Q_STATUS_ERR_DMA;
		raise = fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
		pthread_mutex_unlock(&sim->lock);
		if (raise)
			fw_raise(sim, MAIA_VEC_EVENT);
		return false;
	}
	pthread_mutex_lock(&sim->lock);
	if (sim->queues[qi].gen == s->gen)
		sim->queues[qi].fetched++;	/* MAIA_Q_FETCHED: the job has started */
	pthread_mutex_unlock(&sim->lock);
	memset(job, 0, sizeof(*job));
	job->state = FW_JOB_RUNNING;
	job->sqe = sqe;
	job->index = s->head;
	job->start_ns = fw_tl_job_start(sim, qi);
	job->gen = s->gen;
	job->cq = s->cq;
	fw_trace(sim, "queue %u job 0x%llx slot %u: asid %u cmdbuf 0x%llx size %u", qi,
		   (unsigned long long)sqe.job_id, s->head, sqe.asid,
		   (unsigned long long)sqe.cmdbuf_addr, sqe.cmdbuf_size);

	if (s->inject_hang) {
		fw_trace(sim, "queue %u job 0x%llx: injected hang", qi,
			   (unsigned long long)sqe.job_id);
		job->state = FW_JOB_HUNG;
		return false;
	}
	status = check_sqe(sim, qi, s, &sqe);
	if (status == MAIA_STATUS_OK && s->inject_fault) {
		struct fw_as as;

		fw_as_init(&as, sim, sqe.asid);
		as.faulted = true;
		as.fault_va = sqe.cmdbuf_addr;
		as.fault_access = MAIA_ACCESS_READ;
		complete_job(sim, qi, job, MAIA_STATUS_MMU_FAULT, 0, &as);
		return false;
	}
	if (status != MAIA_STATUS_OK || (sqe.flags & MAIA_SQE_NOP)) {
		complete_job(sim, qi, job, status, 0, NULL);
		return false;
	}
	return true;
}

static void run_queue(struct maia_sim *sim, unsigned int qi, const struct queue_snap *s)
{
	struct fw_job *job = &sim->queues[qi].job;
	uint32_t status = MAIA_STATUS_OK, error_offset = 0;
	struct fw_as as;

	if (job->state == FW_JOB_IDLE && !start_job(sim, qi, s))
		return;
	fw_as_init(&as, sim, job->sqe.asid);
	if (fw_cmd_run(sim, qi, job, &as, &status, &error_offset) == FW_RUN_DONE)
		complete_job(sim, qi, job, status, error_offset, &as);
}

/* Reads a shadow tail from host memory and applies it like a doorbell. */
static void read_shadow(struct maia_sim *sim, unsigned int qi, uint64_t addr, uint64_t gen)
{
	struct fw_queue *q = &sim->queues[qi];
	uint32_t tail = 0;
	bool ok, raise = false;

	ok = !sim->ops.dma_read(sim->opaque, addr, &tail, sizeof(tail));
	pthread_mutex_lock(&sim->lock);
	if (q->gen == gen && q->enabled && q->shadow == addr) {
		if (!ok) {
			fw_guest_error(sim, "maia: queue %u shadow tail read at 0x%llx failed; queue stopped",
					 qi, (unsigned long long)addr);
			q->status |= MAIA_Q_STATUS_ERR_DMA;
			raise = fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
		} else if (tail >= q->size) {
			fw_guest_error(sim, "maia: queue %u shadow tail %u out of range (size %u)",
					 qi, tail, q->size);
			q->status |= MAIA_Q_STATUS_ERR_DOORBELL;
			raise = fw_int_assert_locked(sim, MAIA_INT_QUEUE_ERROR);
		} else {
			q->tail = tail;
		}
	}
	pthread_mutex_unlock(&sim->lock);
	if (raise)
		fw_raise(sim, MAIA_VEC_EVENT);
}

static int find_kicked_locked(struct maia_sim *sim)
{
	for (unsigned int qi = 0; qi < sim->cfg.num_queues; qi++) {
		struct fw_queue *q = &sim->queues[qi];

		if (q->kicked) {
			q->kicked = false;
			if (q->shadow && q->enabled)
				return (int)qi;
		}
	}
	return -1;
}

/* Sleeps for at most wait_ns (UINT64_MAX: until woken). */
static void sleep_locked(struct maia_sim *sim, uint64_t wait_ns)
{
	struct timespec ts;

	if (wait_ns == UINT64_MAX) {
		pthread_cond_wait(&sim->work_cond, &sim->lock);
		return;
	}
	ts = fw_monotonic_deadline(wait_ns);
	pthread_cond_timedwait(&sim->work_cond, &sim->lock, &ts);
}

/*
 * Sleeps until new work or the device-time deadline. A job parked on a
 * fabric operation keeps the device busy for maia_sim_drain(); the fabric
 * thread wakes the worker when the operation ends.
 */
static void wait_for_work_locked(struct maia_sim *sim, uint64_t deadline)
{
	uint64_t now, wait_ns = UINT64_MAX;

	if (deadline == UINT64_MAX) {
		if (!fabric_parked_locked(sim)) {
			sim->worker_idle = true;
			pthread_cond_broadcast(&sim->idle_cond);
		}
	} else {
		/* Device time is the host's clock; the wait is on CLOCK_MONOTONIC. */
		now = fw_now_ns(sim);
		wait_ns = deadline > now ? deadline - now : 0;
	}
	sleep_locked(sim, wait_ns);
}

/* Copies what run_queue() needs of queue qi; injections go to the next job. */
static void snap_queue_locked(struct maia_sim *sim, unsigned int qi, struct queue_snap *snap)
{
	struct fw_queue *q = &sim->queues[qi];

	snap->sq = q->sq;
	snap->cq = q->cq;
	snap->gen = q->gen;
	snap->size = q->size;
	snap->head = q->head;
	snap->asid_bind = q->asid_bind;
	snap->inject_hang = snap->inject_fault = false;
	if (q->job.state == FW_JOB_IDLE) {
		/* Injections apply to the next job fetched. */
		snap->inject_hang = q->inject_hang;
		snap->inject_fault = q->inject_fault;
		q->inject_hang = q->inject_fault = false;
	}
}

/*
 * Whether the firmware may start a job now: no stop, boot, reset or crash
 * (the worker's loop checks each before every turn). A thread in the
 * worker's place asks again before every turn after its first.
 */
static bool jobs_may_run_locked(struct maia_sim *sim)
{
	return !sim->stop && !sim->boot.pending &&
	       !__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE);
}

/*
 * Whether a thread other than the worker may take its place now: the fast
 * path on, the worker not running, no other thread in its place, jobs may
 * run (jobs_may_run_locked()). One list for the doorbell writer and the
 * fabric thread.
 */
static bool worker_place_free_locked(struct maia_sim *sim)
{
	return sim->inline_doorbell && !sim->inline_busy && !sim->worker_busy &&
	       jobs_may_run_locked(sim);
}

/*
 * Whether queue qi's head job is parked on a fabric operation that has not
 * ended, with no thread running it: a doorbell then only records the new
 * tail (doorbell_locked()). The job cannot run on before the operation
 * ends, nor the jobs behind it (a queue runs its jobs in order), and the
 * thread that ends the operation runs the job on under this lock
 * (fw_sched_fabric_done_locked()), then the next job of the queue, or wakes
 * the worker for it (work_left_locked() sees the tail). An operation that
 * has ended, or a job some thread runs (running_queue), gets the doorbell's
 * kick as before. q->fabric_wait (the job in FW_JOB_FABRIC_WAIT) is
 * published by the job's owner under the lock after its run and cleared
 * with the completion; job->fop changes only under the lock or in the
 * owner's run, which running_queue rules out.
 */
bool fw_sched_queue_parked_locked(struct maia_sim *sim, unsigned int qi)
{
	const struct fw_queue *q = &sim->queues[qi];

	return q->fabric_wait && q->fabric_wait_gen == q->gen && sim->running_queue != (int)qi &&
	       q->job.fop && !fw_fop_done_locked(q->job.fop);
}

uint64_t fw_sched_worker_kicks(struct maia_sim *sim)
{
	uint64_t n;

	pthread_mutex_lock(&sim->lock);
	n = sim->worker_kicks;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

/*
 * Doorbell fast path, part 1, in the doorbell writer's thread with
 * sim->lock held, before the doorbell is applied: if the worker sleeps with
 * nothing to do (no job, no timed wait, no boot, reset or crash) and no
 * other thread has its place (inline_busy: another doorbell writer, or the
 * fabric thread, which drops the lock before its run and does not clear
 * worker_idle), this thread takes it until fw_sched_inline_run() returns.
 * The worker's kicks meanwhile are deferred (fw_kick_worker_locked()).
 */
bool fw_sched_inline_begin_locked(struct maia_sim *sim)
{
	if (!worker_place_free_locked(sim) || !sim->worker_idle)
		return false;
	sim->inline_busy = true;
	return true;
}

/*
 * Whether the worker has anything to do: runnable, timed or kicked. A job
 * parked on the fabric is not: the fabric thread runs it on when its
 * operation ends (fw_sched_fabric_done_locked()).
 */
static bool work_left_locked(struct maia_sim *sim)
{
	uint64_t deadline = UINT64_MAX, now = fw_now_ns(sim);

	if (sim->stop || sim->boot.pending || __atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE))
		return true;
	for (unsigned int qi = 0; qi < sim->cfg.num_queues; qi++) {
		struct fw_queue *q = &sim->queues[qi];

		if (q->kicked || queue_runnable_locked(sim, q, now, &deadline))
			return true;
	}
	return deadline != UINT64_MAX;
}

/*
 * Picks the next runnable queue and runs a turn of it (one job or quantum)
 * with the lock dropped, flagged busy so reset and drain wait. Returns the
 * queue, or -1 when nothing could run; *deadline then holds the next timed
 * wake-up.
 */
static int run_next_queue_locked(struct maia_sim *sim, uint64_t *deadline)
{
	struct queue_snap snap;
	int qi;

	qi = pick_queue_locked(sim, fw_now_ns(sim), deadline);
	if (qi < 0)
		return -1;
	snap_queue_locked(sim, (unsigned int)qi, &snap);
	sim->worker_busy = true;
	sim->running_queue = qi;
	pthread_mutex_unlock(&sim->lock);
	run_queue(sim, (unsigned int)qi, &snap);
	pthread_mutex_lock(&sim->lock);
	/* Published for MAIA_Q_STATUS by the job's owner, under the lock. */
	sim->queues[qi].fabric_wait = sim->queues[qi].job.state == FW_JOB_FABRIC_WAIT;
	sim->queues[qi].fabric_wait_gen = sim->queues[qi].job.gen;
	/* A run ends in FABRIC_WAIT only after parking anew (a done wait resumes). */
	if (sim->queues[qi].fabric_wait)
		sim->queues[qi].fabric_waits++;
	sim->worker_busy = false;
	sim->running_queue = -1;
	pthread_cond_broadcast(&sim->idle_cond);
	return qi;
}

/*
 * After a turn of queue qi that resumed a parked job: whether the job ended
 * in it and the queue holds the next one (rung while the job was parked,
 * fw_sched_queue_parked_locked()), to be run on by the same thread.
 */
static bool next_job_queued_locked(struct maia_sim *sim, int qi)
{
	const struct fw_queue *q;

	if (qi < 0)
		return false;
	q = &sim->queues[qi];
	return q->job.state == FW_JOB_IDLE && q->enabled && q->head != q->tail;
}

/*
 * Doorbell fast path, part 2, after the doorbell was applied and sim->lock
 * dropped: one scheduling decision and one run_queue() as the worker would
 * make them, with only cheap commands run here (fw_cmd_run() yields at the
 * first other one). Then the worker is woken if anything is left for it.
 * A job parked on the fabric (a collective this run started) is not: the
 * fabric thread runs it on when its operation ends, and until then the
 * device is not idle (maia_sim_drain() waits). Otherwise the worker sleeps
 * on, idle, as it was. resumed: the caller is the thread that ended a
 * parked job's operation (fw_sched_fabric_done_locked()).
 */
static void inline_run(struct maia_sim *sim, bool resumed)
{
	uint64_t deadline = UINT64_MAX;
	const struct fw_job *job;
	unsigned int turns = 0;
	bool small_op;
	int qi;

	fw_fabric_defer_kicks(sim);
	pthread_mutex_lock(&sim->lock);
	qi = run_next_queue_locked(sim, &deadline);
	/*
	 * The job parked on the fabric, and the fabric thread ended its
	 * operation before this run did (it left the job to this thread, busy):
	 * one more turn takes it on here rather than waking the worker.
	 */
	job = qi >= 0 ? &sim->queues[qi].job : NULL;
	if (job && job->state == FW_JOB_FABRIC_WAIT && job->fop && fw_fop_done_locked(job->fop) &&
	    jobs_may_run_locked(sim)) {
		qi = run_next_queue_locked(sim, &deadline);
		resumed = true;
	}
	/*
	 * A resumed job ended: the jobs rung behind it while it was parked
	 * run on here, as the worker would run them, until one parks or
	 * yields (a costly command) or the bound; the rest wakes the worker.
	 * A crash, reset or stop meanwhile (a turn's completion interrupt
	 * may be followed by anything) ends it as it ends the worker's turns.
	 */
	while (resumed && turns++ < FW_SCHED_RESUME_TURNS && next_job_queued_locked(sim, qi) &&
	       jobs_may_run_locked(sim))
		qi = run_next_queue_locked(sim, &deadline);
	job = qi >= 0 ? &sim->queues[qi].job : NULL;
	/*
	 * A small operation parked (an 8-byte all-reduce): this thread starts
	 * it on the fabric itself, its frames delivered by this thread into the
	 * devices of this process (fw_fabric_end_deferred()). A large one is
	 * left to the fabric threads, which run it on as many cores as there
	 * are devices, not on the writer's (a vCPU's) alone.
	 */
	small_op = job && job->state == FW_JOB_FABRIC_WAIT &&
		   job->fop_bytes <= FW_SCHED_DOORBELL_FABRIC_BYTES;
	sim->inline_busy = false;
	if (work_left_locked(sim)) {
		fw_kick_worker_locked(sim);
	} else if (fabric_parked_locked(sim)) {
		sim->worker_idle = false;
	} else {
		sim->worker_idle = true;
		pthread_cond_broadcast(&sim->idle_cond);
	}
	pthread_mutex_unlock(&sim->lock);
	fw_fabric_end_deferred(sim, small_op);
}

void fw_sched_inline_run(struct maia_sim *sim)
{
	inline_run(sim, false);
}

/*
 * The fabric thread, with sim->lock held (dropped and taken again here):
 * a fabric operation ended, or a remote write moved a semaphore. With the
 * inline path on and the worker asleep, this thread takes the worker's
 * place as the doorbell writer's does (fw_sched_inline_run()): it resumes
 * the parked job, runs what cheap commands follow and writes its
 * completion, so that a collective costs no hand-over to the worker at
 * either end. Otherwise (the worker busy, a doorbell's inline run under
 * way, boot, reset) the worker is woken as before.
 */
void fw_sched_fabric_done_locked(struct maia_sim *sim)
{
	if (!worker_place_free_locked(sim)) {
		fw_kick_worker_locked(sim);
		return;
	}
	sim->inline_busy = true;
	pthread_mutex_unlock(&sim->lock);
	inline_run(sim, true);
	pthread_mutex_lock(&sim->lock);
}

/* Runs fn with the lock dropped, flagged busy so reset and drain wait. */
static void run_unlocked(struct maia_sim *sim, void (*fn)(struct maia_sim *sim))
{
	sim->worker_busy = true;
	pthread_mutex_unlock(&sim->lock);
	fn(sim);
	pthread_mutex_lock(&sim->lock);
	sim->worker_busy = false;
	pthread_cond_broadcast(&sim->idle_cond);
}

void *fw_worker_main(void *arg)
{
	struct maia_sim *sim = arg;

	pthread_mutex_lock(&sim->lock);
	while (!sim->stop) {
		uint64_t deadline = UINT64_MAX;
		int qi;

		if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE)) {
			pthread_cond_broadcast(&sim->idle_cond);
			pthread_cond_wait(&sim->work_cond, &sim->lock);
			continue;
		}
		if (sim->inline_busy) {
			/* The doorbell fast path has the device; it wakes us after. */
			sleep_locked(sim, UINT64_MAX);
			continue;
		}
		if (sim->boot.pending) {
			run_unlocked(sim, fw_boot_run);
			continue;
		}
		if (__atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE)) {
			/* Crashed firmware answers nothing until a reset. */
			wait_for_work_locked(sim, UINT64_MAX);
			continue;
		}
		qi = find_kicked_locked(sim);
		if (qi >= 0) {
			struct fw_queue *q = &sim->queues[qi];
			uint64_t addr = q->shadow, gen = q->gen;

			sim->worker_busy = true;
			pthread_mutex_unlock(&sim->lock);
			read_shadow(sim, (unsigned int)qi, addr, gen);
			pthread_mutex_lock(&sim->lock);
			sim->worker_busy = false;
			pthread_cond_broadcast(&sim->idle_cond);
			continue;
		}
		if (run_next_queue_locked(sim, &deadline) >= 0)
			continue;
		wait_for_work_locked(sim, deadline);
	}
	pthread_mutex_unlock(&sim->lock);
	return NULL;
}

/*
 * Reset: give every fetched job an ABORTED completion and its fabric
 * operation back. Worker and fabric thread are parked.
 */
void fw_sched_abort_inflight(struct maia_sim *sim)
{
	fw_sched_release_fops(sim);
	for (unsigned int qi = 0; qi < sim->cfg.num_queues; qi++) {
		struct fw_queue *q = &sim->queues[qi];
		struct fw_job *job = &q->job;
		bool ok;

		if (job->state == FW_JOB_IDLE || job->gen != q->gen || !q->enabled)
			continue;
		write_cqe(sim, qi, job, MAIA_STATUS_ABORTED, job->offset, &ok);
		fw_trace(sim, "queue %u job 0x%llx aborted by reset", qi,
			   (unsigned long long)job->sqe.job_id);
		job->state = FW_JOB_IDLE;
	}
}
