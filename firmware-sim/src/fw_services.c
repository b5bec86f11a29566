// SPDX-License-Identifier: MIT
/*
 * The small services every block of the device calls: guest-error and
 * trace messages through the glue, device time, interrupt causes and
 * vectors, waking the worker. A leaf: it calls into no block, so blocks
 * and the lifecycle (fw_sim.c) can all use it without forming a loop.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "fw_internal.h"

#define FW_MSG_MAX	256

void fw_guest_error(struct maia_sim *sim, const char *fmt, ...)
{
	char msg[FW_MSG_MAX];
	va_list ap;

	if (!sim->ops.guest_error)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim->ops.guest_error(sim->opaque, msg);
}

void fw_trace(struct maia_sim *sim, const char *fmt, ...)
{
	char msg[FW_MSG_MAX];
	va_list ap;

	/* Formatting is most of a small job's cost: none when nobody traces. */
	if (!sim->ops.trace || (sim->ops.trace_enabled && !sim->ops.trace_enabled(sim->opaque)))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim->ops.trace(sim->opaque, msg);
}

uint64_t fw_now_ns(struct maia_sim *sim)
{
	return fw_host_now_ns(&sim->host) -
	       __atomic_load_n(&sim->time_base_ns, __ATOMIC_RELAXED);
}

bool fw_int_assert_locked(struct maia_sim *sim, uint32_t causes)
{
	sim->irq.status |= causes;
	return (causes & ~sim->irq.mask) != 0;
}

void fw_raise(struct maia_sim *sim, unsigned int vector)
{
	fw_trace(sim, "irq vector %u", vector);
	sim->ops.raise_irq(sim->opaque, vector);
}

void fw_kick_worker_locked(struct maia_sim *sim)
{
	sim->worker_idle = false;
	/* A doorbell fast path is running: it wakes the worker if work is left. */
	if (sim->inline_busy)
		return;
	sim->worker_kicks++;
	pthread_cond_signal(&sim->work_cond);
}
