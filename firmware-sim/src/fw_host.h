/* SPDX-License-Identifier: MIT */
/*
 * What firmware-sim takes from its host: device time and threads.
 *
 * The host (the QEMU glue, a test) may supply a clock and a thread factory
 * (struct maia_sim_ops now_ns / thread_create, passed on to the tensor
 * engine in struct fw_tensor_config); left NULL they default to
 * CLOCK_MONOTONIC and pthread_create. This header is the only place in
 * firmware-sim that reads a clock.
 *
 * Two clocks, on purpose:
 * - fw_host_now_ns(): device time (TIME registers, job timeouts, scheduler
 *   quanta, telemetry periods, tile busy time), from the host's clock.
 * - fw_monotonic_ns(): CLOCK_MONOTONIC, for what the host CPU does: timed
 *   condition-variable waits (their condattr clock) and spin limits. A
 *   wait until a device-time deadline converts the remaining device time
 *   to a CLOCK_MONOTONIC deadline, so the host clock may be any monotonic
 *   nanosecond count that advances at about real-time rate.
 */
#ifndef FWSIM_HOST_H
#define FWSIM_HOST_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

struct fw_host {
	uint64_t (*now_ns)(void *opaque);
	int (*thread_create)(void *opaque, pthread_t *thread, const char *name,
			     void *(*fn)(void *), void *arg);
	void *opaque;
};

static inline uint64_t fw_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The host's clock in ns; h may be NULL. */
static inline uint64_t fw_host_now_ns(const struct fw_host *h)
{
	if (h && h->now_ns)
		return h->now_ns(h->opaque);
	return fw_monotonic_ns();
}

/* A joinable thread running fn(arg); 0 or an errno value. h may be NULL. */
static inline int fw_host_thread_create(const struct fw_host *h, pthread_t *thread,
					const char *name, void *(*fn)(void *), void *arg)
{
	if (h && h->thread_create)
		return h->thread_create(h->opaque, thread, name, fn, arg);
	return pthread_create(thread, NULL, fn, arg);
}

/* CLOCK_MONOTONIC timespec ns from now, for pthread_cond_timedwait. */
static inline struct timespec fw_monotonic_deadline(uint64_t ns)
{
	uint64_t abs_ns = fw_monotonic_ns() + ns;
	struct timespec ts = {
		.tv_sec = (time_t)(abs_ns / 1000000000ull),
		.tv_nsec = (long)(abs_ns % 1000000000ull),
	};

	return ts;
}

#endif /* FWSIM_HOST_H */
