// SPDX-License-Identifier: MIT
/*
 * Submission through a user queue (driver 1.4): the ring, the completion
 * array and the doorbell page are mapped into the process, so maia_submit()
 * writes a device entry and rings the doorbell with no system call, and
 * maia_wait() reads the completion array, sleeping in DRM_MAIA_USERQ_WAIT
 * only when the job is not done after a poll of up to MAIA_WAIT_SPIN_US
 * (a sleep costs the interrupt, the wake-up and, in a guest, the halted
 * vCPU's kick: 70-190 us under TCG against a 28 us job).
 *
 * Used by maia_submit() for a job without dependencies, fences or a
 * priority other than NORMAL, when the driver has user queues, unless
 * MAIA_USERQ=0 or maia_device_set_submit_path(MAIA_SUBMIT_KERNEL). The
 * kernel path and this one keep the NORMAL jobs of a device in submission
 * order: switching paths first waits for the other path's jobs.
 *
 * Job results are kept for the last LIBMAIA_USERQ_HISTORY jobs, as the
 * kernel keeps its own. When the kernel stops the queue (a job faulted or
 * hung, a device reset, a queue error, the device's removal: USERQ_WAIT
 * says so, and so does the state word in the completion array's page), the
 * jobs that have no completion end as the kernel path would end them
 * (TIMEOUT for the hung one, ABORTED for the others), the queue is
 * destroyed and the next submit makes a new one, which fails with -EBADFD,
 * as SUBMIT does, if the context faulted, and -ENODEV if the device is gone.
 *
 * uq->lock serializes every use of the queue's state below; it is dropped
 * while a thread sleeps in USERQ_WAIT, and uq->gen tells the sleeper
 * whether the queue it slept on is still the device's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "drm/maia_accel_hw.h"
#include "internal.h"
#include "maia/hw/queue.h"

/* User-queue seqnos carry this bit; the kernel's never reach it. */
#define USERQ_SEQ_TAG		(1ull << 62)

/*
 * Bumped in a forked child: the queue's pages are not inherited (the driver
 * maps them VM_DONTCOPY), so a child forgets its parent's queue.
 */
static volatile unsigned int fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	fork_gen++;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool maia_userq_seqno(uint64_t seqno)
{
	return seqno & USERQ_SEQ_TAG;
}

static void unmap_queue(struct maia_userq *uq)
{
	if (uq->sq)
		munmap(uq->sq, 4096);
	if (uq->cq)
		munmap((void *)uq->cq, 4096);
	if (uq->doorbell)
		munmap((void *)uq->doorbell, 4096);
	uq->sq = NULL;
	uq->cq = NULL;
	uq->doorbell = NULL;
	uq->state_word = NULL;
}

static void destroy_queue(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_destroy d = { .queue_id = uq->id };

	if (!uq->created)
		return;
	unmap_queue(uq);
	maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_DESTROY, &d);
	uq->created = false;
	uq->gen++;
}

static void *map_page(struct maia_device *dev, uint64_t offset)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd, (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

/* MAIA_WAIT_SPIN_US (0 to 1000000), else LIBMAIA_WAIT_SPIN_US. */
static int64_t env_spin_us(void)
{
	const char *env = getenv("MAIA_WAIT_SPIN_US");
	char *end;
	long us;

	if (!env || !*env)
		return LIBMAIA_WAIT_SPIN_US;
	us = strtol(env, &end, 10);
	return *end || us < 0 || us > 1000000 ? LIBMAIA_WAIT_SPIN_US : us;
}

/* Whether the driver offers user queues; decided once per device. */
static bool userq_available(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	const char *env;
	uint64_t n = 0;

	if (uq->mode == MAIA_USERQ_UNKNOWN) {
		env = getenv("MAIA_USERQ");
		uq->mode = MAIA_USERQ_OFF;
		if ((!env || strcmp(env, "0")) && dev->driver_minor >= 4 &&
		    !maia_query(dev, DRM_MAIA_PARAM_USER_QUEUES, &n) && n)
			uq->mode = MAIA_USERQ_ON;
		uq->spin_ns = env_spin_us() * 1000;
	}
	return uq->mode == MAIA_USERQ_ON && dev->submit_path == MAIA_SUBMIT_AUTO;
}

static int create_queue(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_create c = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct drm_maia_context_status cs = { 0 };
	int err;

	err = maia_ioctl(dev, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs);
	if (err)
		return err;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_CREATE, &c);
	if (err)
		return err;
	pthread_once(&atfork_once, register_atfork);
	uq->created = true;
	uq->gen++;
	uq->fork_gen = fork_gen;
	uq->id = c.queue_id;
	uq->entries = c.entries;
	uq->asid = (uint16_t)cs.asid;
	uq->written = 0;
	uq->reaped = 0;
	uq->sq = map_page(dev, c.sq_offset);
	uq->cq = map_page(dev, c.cq_offset);
	uq->doorbell = map_page(dev, c.doorbell_offset);
	if (!uq->sq || !uq->cq || !uq->doorbell) {
		err = -errno;
		destroy_queue(dev);
		return err;
	}
	uq->state_word = (volatile uint32_t *)((volatile char *)uq->cq +
					       DRM_MAIA_USERQ_STATE_OFFSET);
	return 0;
}

static struct maia_userq_result *result_of(struct maia_userq *uq, uint64_t seq)
{
	return &uq->results[seq % LIBMAIA_USERQ_HISTORY];
}

static void record(struct maia_userq *uq, uint64_t seq, uint32_t status, uint32_t device_status,
		   uint32_t error_offset, uint64_t device_ns)
{
	struct maia_userq_result *r = result_of(uq, seq);
	uint64_t now = now_ns();

	r->host_ns = r->seq == seq && now > r->submitted_ns ? now - r->submitted_ns : 0;
	r->device_ns = device_ns;
	r->seq = seq;
	r->done = true;
	r->st.status = status;
	r->st.device_status = device_status;
	r->st.error_offset = error_offset;
}

/*
 * Moves completions, in order, from the array to the results. Returns
 * whether one of them was an MMU fault.
 */
static bool reap(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	bool fault = false;

	while (uq->created && uq->reaped < uq->written) {
		uint32_t slot = (uint32_t)(uq->reaped % uq->entries);
		volatile struct maia_cq_entry *cqe = &uq->cq[slot];
		uint32_t status;

		if (!(atomic_load_explicit((_Atomic uint32_t *)&cqe->flags, memory_order_acquire) &
		      MAIA_CQE_VALID))
			break;
		status = cqe->status;
		fault |= status == MAIA_STATUS_MMU_FAULT;
		record(uq, uq->base + uq->reaped, maia_accel_job_status(status), status,
		       cqe->error_offset,
		       cqe->end_ns > cqe->start_ns ? cqe->end_ns - cqe->start_ns : 0);
		/* The protocol: the host clears VALID before the slot is reused. */
		cqe->flags = 0;
		uq->reaped++;
	}
	return fault;
}

/*
 * The kernel stopped the queue (DRM_MAIA_USERQ_*): jobs without a
 * completion end as the kernel path ends them, and the queue goes.
 */
static void retire_stopped(struct maia_device *dev, uint32_t state)
{
	struct maia_userq *uq = &dev->uq;
	bool first = true;

	reap(dev);
	for (; uq->reaped < uq->written; uq->reaped++) {
		uint32_t st = state == DRM_MAIA_USERQ_HUNG && first ? DRM_MAIA_JOB_TIMEOUT :
			      DRM_MAIA_JOB_ABORTED;

		record(uq, uq->base + uq->reaped, st, MAIA_STATUS_ABORTED, 0, 0);
		first = false;
	}
	uq->base += uq->written;
	uq->written = uq->reaped = 0;
	if (state == DRM_MAIA_USERQ_GONE)
		uq->gone = true;
	destroy_queue(dev);
}

/* In a forked child: the parent's queue is not ours; its jobs end ABORTED here. */
static bool forget_after_fork(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;

	if (!uq->created || uq->fork_gen == fork_gen)
		return false;
	for (; uq->reaped < uq->written; uq->reaped++)
		record(uq, uq->base + uq->reaped, DRM_MAIA_JOB_ABORTED, MAIA_STATUS_ABORTED, 0, 0);
	uq->base += uq->written;
	uq->written = uq->reaped = 0;
	uq->sq = NULL;
	uq->cq = NULL;
	uq->doorbell = NULL;
	uq->state_word = NULL;
	uq->created = false;
	uq->gen++;
	return true;
}

/* The kernel's word for a stopped queue, read without a system call. */
static bool check_stopped(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	uint32_t state;

	if (forget_after_fork(dev) || !uq->created)
		return false;
	state = atomic_load_explicit((_Atomic uint32_t *)uq->state_word, memory_order_acquire);
	if (state == DRM_MAIA_USERQ_ACTIVE)
		return false;
	retire_stopped(dev, state);
	return true;
}

/*
 * Sleeps until the queue completed its first @count entries or stopped;
 * a stopped queue is retired. -ETIME at @deadline (absolute, monotonic ns).
 * Called with uq->lock held, which it drops while it sleeps.
 */
static int sleep_until(struct maia_device *dev, uint64_t count, int64_t deadline)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_wait w = {
		.queue_id = uq->id,
		.count = (uint32_t)count,
		.timeout_ns = deadline,
	};
	uint64_t gen = uq->gen;
	int err;

	pthread_mutex_unlock(&uq->lock);
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_WAIT, &w);
	pthread_mutex_lock(&uq->lock);
	if (gen != uq->gen)
		return 0;	/* another thread retired that queue meanwhile */
	if (err == -ENODEV) {
		retire_stopped(dev, DRM_MAIA_USERQ_GONE);
		return 0;
	}
	if (err)
		return err;
	if (w.state != DRM_MAIA_USERQ_ACTIVE)
		retire_stopped(dev, w.state);
	return 0;
}

static int64_t deadline_after(int64_t timeout_ns)
{
	uint64_t now = now_ns();

	return timeout_ns > INT64_MAX - (int64_t)now ? INT64_MAX : (int64_t)now + timeout_ns;
}

/*
 * Unlocks uq->lock between two looks. glibc's mutex is not fair: a thread
 * that blocked on it usually gets it only once this poll ends (at most
 * MAIA_WAIT_SPIN_US), not between the looks.
 */
static void spin_pause(struct maia_userq *uq)
{
	pthread_mutex_unlock(&uq->lock);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	pthread_mutex_lock(&uq->lock);
}

/*
 * A job of this queue hit an MMU fault: the kernel stops the queue and
 * marks the context once its interrupt thread has seen the fault. Wait for
 * that (a second), so that what follows sees the faulted context as it
 * would after a kernel-path job; then the queue goes either way.
 */
static void settle_fault(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	uint64_t gen = uq->gen;

	if (!uq->created)
		return;
	if (sleep_until(dev, uq->written + (1ull << 31), deadline_after(1000000000ll)) ||
	    (uq->created && uq->gen == gen))
		retire_stopped(dev, DRM_MAIA_USERQ_LOST);
}

/* Waits for every job on the user queue; uq->lock held. */
static int drain_locked(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	int err = 0;

	while (!forget_after_fork(dev) && uq->created && uq->reaped < uq->written && !err) {
		if (check_stopped(dev))
			break;
		if (reap(dev)) {
			settle_fault(dev);
			break;
		}
		if (uq->reaped < uq->written)
			err = sleep_until(dev, uq->written, INT64_MAX);
	}
	return err;
}

/* Waits for every job on the user queue (a path switch, an unmap). */
int maia_userq_drain(struct maia_device *dev)
{
	int err;

	pthread_mutex_lock(&dev->uq.lock);
	err = drain_locked(dev);
	pthread_mutex_unlock(&dev->uq.lock);
	return err;
}

/* A NORMAL job went through SUBMIT: the next user-queue job waits for it. */
void maia_userq_note_kernel_job(struct maia_device *dev, uint64_t seqno)
{
	pthread_mutex_lock(&dev->uq.lock);
	if (dev->uq.mode == MAIA_USERQ_ON)
		dev->last_kernel_seqno = seqno;
	pthread_mutex_unlock(&dev->uq.lock);
}

static bool eligible(struct maia_device *dev, struct maia_cmdbuf *cb,
		     const struct maia_submit_opts *opts)
{
	return userq_available(dev) && cb->bo->va &&
	       (!opts || (opts->priority == DRM_MAIA_PRIO_NORMAL && !opts->num_in_syncobjs &&
			  !opts->out_syncobj && !opts->out_fence_fd));
}

/* Writes the entry and rings the doorbell; uq->lock held, a free slot. */
static void push(struct maia_device *dev, struct maia_cmdbuf *cb, uint64_t *seqno)
{
	struct maia_userq *uq = &dev->uq;
	uint32_t slot = (uint32_t)(uq->written % uq->entries);
	uint64_t seq = uq->base + uq->written;
	struct maia_sq_entry e;

	memset(&e, 0, sizeof(e));
	e.cmdbuf_addr = cb->bo->va;
	e.cmdbuf_size = cb->used;
	e.asid = uq->asid;
	e.job_id = USERQ_SEQ_TAG | (seq + 1);
	result_of(uq, seq)->seq = seq;
	result_of(uq, seq)->done = false;
	result_of(uq, seq)->submitted_ns = now_ns();
	uq->cq[slot].flags = 0;
	memcpy(&uq->sq[slot], &e, sizeof(e));
	uq->written++;
	/* Entry before doorbell; the doorbell page is uncached MMIO. */
	atomic_thread_fence(memory_order_release);
	*uq->doorbell = (uint32_t)(uq->written % uq->entries);
	*seqno = USERQ_SEQ_TAG | (seq + 1);
}

/*
 * Submits @cb through the user queue if it can: 0 and *seqno, 1 when the
 * job must take the kernel path, or a negative errno.
 */
int maia_userq_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
		      const struct maia_submit_opts *opts, uint64_t *seqno)
{
	struct maia_userq *uq = &dev->uq;
	int err = 0, tries;

	pthread_mutex_lock(&uq->lock);
	if (!eligible(dev, cb, opts)) {
		pthread_mutex_unlock(&uq->lock);
		return 1;
	}
	/* NORMAL jobs stay in order across the two paths. */
	if (dev->last_kernel_seqno) {
		struct drm_maia_wait w = { .seqno = dev->last_kernel_seqno, .timeout_ns = INT64_MAX };

		dev->last_kernel_seqno = 0;
		pthread_mutex_unlock(&uq->lock);
		maia_wait_ioctl(dev, &w);
		pthread_mutex_lock(&uq->lock);
	}
	for (tries = 0; tries < 1000; tries++) {
		if (uq->gone) {
			err = -ENODEV;
			break;
		}
		if (check_stopped(dev))
			continue;
		if (!uq->created) {
			err = create_queue(dev);
			if (err == -EBUSY || (err == -ENODEV && !uq->gone)) {
				err = 1;	/* every user queue taken: the kernel path serves */
				break;
			}
			if (err)
				break;
		}
		if (reap(dev)) {
			settle_fault(dev);
			continue;
		}
		if (uq->written - uq->reaped < uq->entries - 1) {
			push(dev, cb, seqno);
			break;
		}
		/* The ring is full: sleep until its oldest job is done. */
		err = sleep_until(dev, uq->reaped + 1, INT64_MAX);
		if (err)
			break;
	}
	pthread_mutex_unlock(&uq->lock);
	return err;
}

int maia_userq_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		    struct maia_job_status *status, struct maia_job_times *times)
{
	struct maia_userq *uq = &dev->uq;
	uint64_t seq = (seqno & ~USERQ_SEQ_TAG) - 1;	/* from 0 */
	int64_t deadline = deadline_after(timeout_ns);
	struct maia_userq_result *r;
	int64_t spin_end;
	int err = 0;

	pthread_mutex_lock(&uq->lock);
	spin_end = deadline_after(timeout_ns < uq->spin_ns ? timeout_ns : uq->spin_ns);
	if (spin_end > deadline)	/* the lock took a while: not past the timeout */
		spin_end = deadline;
	if (!(seqno & ~USERQ_SEQ_TAG) || seq >= uq->base + uq->written) {
		err = -EINVAL;
		goto out;
	}
	for (;;) {
		r = result_of(uq, seq);
		if (r->seq != seq) {
			err = -ENOENT;		/* too old to be remembered */
			goto out;
		}
		if (r->done)
			break;
		if (check_stopped(dev))
			continue;
		if (reap(dev)) {
			settle_fault(dev);
			continue;
		}
		if (r->done)
			continue;
		/*
		 * Not done: poll a while (a short job ends without the
		 * interrupt and the wake-up), then sleep until it is.
		 */
		if ((int64_t)now_ns() < spin_end) {
			spin_pause(uq);
			continue;
		}
		err = sleep_until(dev, seq - uq->base + 1, deadline);
		if (err)
			goto out;
	}
	if (status)
		*status = r->st;
	if (times) {
		times->valid = MAIA_JOB_TIMES_DEVICE | MAIA_JOB_TIMES_HOST;
		times->device_ns = r->device_ns;
		times->host_ns = r->host_ns;
	}
out:
	pthread_mutex_unlock(&uq->lock);
	return err;
}

/* Before the device's fd closes: the mappings would keep it open. */
void maia_userq_close(struct maia_device *dev)
{
	pthread_mutex_lock(&dev->uq.lock);
	forget_after_fork(dev);
	destroy_queue(dev);
	pthread_mutex_unlock(&dev->uq.lock);
}
