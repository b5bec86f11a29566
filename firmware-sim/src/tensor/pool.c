// SPDX-License-Identifier: MIT
/*
 * A fixed pool of host threads that run the tasks of one tensor operation.
 * Threads are created once with the engine; the caller of fw_pool_run()
 * works as worker 0, pool threads are workers 1..n-1. Tasks are claimed
 * with an atomic counter, so uneven tasks balance themselves.
 *
 * Between operations a thread spins for a short while before it sleeps on
 * the condition variable: a command stream of small operations then starts
 * each one on all threads at once instead of waiting out a futex wake-up
 * (tens of microseconds, as long as a 256^3 GEMM, under a loaded VM). The
 * spin yields the CPU now and then: on a host with more runnable threads
 * than CPUs, the thread it waits for may be the one it keeps from running
 * (2 threads, 256^3 FP32 GEMM on a loaded 2-vCPU host: 130 GFLOP/s spinning
 * with pause alone, 170 yielding, 183 on one thread).
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "te.h"

struct fw_pool {
	/*
	 * Protects fn, arg, ntasks; generation, active and stop are written
	 * under it too, and read atomically by spinning threads.
	 */
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a new generation was posted, or stop */
	pthread_cond_t idle;		/* active dropped to 0 */
	unsigned int nthreads;		/* pool threads, excluding the caller */
	pthread_t *threads;
	unsigned long generation;
	fw_task_fn fn;
	void *arg;
	size_t ntasks;
	size_t next;			/* next task to claim; atomic */
	unsigned long active;		/* pool threads still inside the generation */
	bool stop;
};

/* How long an idle thread or the waiting caller spins before sleeping. */
#define SPIN_NS		50000u

/*
 * Spins until (*word == value) == equal, or stop; false if it gave up.
 * Only a hint: callers check again under the lock.
 */
static bool spin_until(struct fw_pool *p, const unsigned long *word, unsigned long value,
		       bool equal)
{
	uint64_t start = fw_monotonic_ns();

	for (unsigned int i = 1;; i++) {
		if ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == equal ||
		    __atomic_load_n(&p->stop, __ATOMIC_RELAXED))
			return true;
		if (!(i % 64)) {
			if (fw_monotonic_ns() - start > SPIN_NS)
				return false;
			sched_yield();
		}
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
}

struct pool_thread_arg {
	struct fw_pool *p;
	unsigned int worker;
};

static void run_tasks(struct fw_pool *p, fw_task_fn fn, void *arg, size_t ntasks,
		      unsigned int worker)
{
	for (;;) {
		size_t t = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);

		if (t >= ntasks)
			break;
		fn(arg, t, worker);
	}
}

static void *pool_thread(void *opaque)
{
	struct pool_thread_arg *ta = opaque;
	struct fw_pool *p = ta->p;
	unsigned int worker = ta->worker;
	unsigned long seen = 0;

	free(ta);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->generation == seen && !p->stop) {
			pthread_mutex_unlock(&p->lock);
			spin_until(p, &p->generation, seen, false);
			pthread_mutex_lock(&p->lock);
		}
		fw_task_fn fn;
		void *arg;
		size_t ntasks;

		while (!p->stop && p->generation == seen)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		seen = p->generation;
		fn = p->fn;
		arg = p->arg;
		ntasks = p->ntasks;
		pthread_mutex_unlock(&p->lock);
		run_tasks(p, fn, arg, ntasks, worker);
		pthread_mutex_lock(&p->lock);
		if (__atomic_sub_fetch(&p->active, 1, __ATOMIC_RELEASE) == 0)
			pthread_cond_signal(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct fw_pool *fw_pool_create(unsigned int threads, const struct fw_host *host)
{
	struct fw_pool *p = calloc(1, sizeof(*p));
	unsigned int i;

	if (!p)
		return NULL;
	if (!threads)
		threads = 1;
	p->nthreads = threads - 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->threads = calloc(p->nthreads ? p->nthreads : 1, sizeof(*p->threads));
	if (!p->threads)
		goto fail;
	for (i = 0; i < p->nthreads; i++) {
		struct pool_thread_arg *ta = malloc(sizeof(*ta));

		if (!ta)
			break;
		ta->p = p;
		ta->worker = i + 1;
		if (fw_host_thread_create(host, &p->threads[i], "maia-te", pool_thread, ta)) {
			free(ta);
			break;
		}
	}
	p->nthreads = i;	/* run with the threads we got */
	return p;
fail:
	free(p);
	return NULL;
}

void fw_pool_destroy(struct fw_pool *p)
{
	unsigned int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

unsigned int fw_pool_size(const struct fw_pool *p)
{
	return p->nthreads + 1;
}

void fw_pool_run(struct fw_pool *p, size_t ntasks, fw_task_fn fn, void *arg)
{
	if (ntasks <= 1 || !p->nthreads) {
		for (size_t t = 0; t < ntasks; t++)
			fn(arg, t, 0);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->arg = arg;
	p->ntasks = ntasks;
	__atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->active, p->nthreads, __ATOMIC_RELAXED);
	__atomic_store_n(&p->generation, p->generation + 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);

	run_tasks(p, fn, arg, ntasks, 0);

	spin_until(p, &p->active, 0, true);
	pthread_mutex_lock(&p->lock);
	while (p->active)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
