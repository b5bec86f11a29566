// SPDX-License-Identifier: MIT
/*
 * Trace messages and maia_sim_ops.trace_enabled: while the host says
 * nobody traces, the library formats and sends none (fw_trace()); once it
 * says someone does, they come again; without trace_enabled every one
 * comes, as before. A device reset traces "device reset" (fw_sim.c).
 */
#include <stdbool.h>
#include <string.h>

#include "maia/sim.h"
#include "tap.h"

struct host {
	bool on;			/* trace_enabled's answer; atomic */
	unsigned int asked;		/* trace_enabled calls; atomic */
	unsigned int msgs;		/* trace messages; atomic */
	unsigned int resets;		/* of which "device reset"; atomic */
};

static int host_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static int host_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static void host_irq(void *opaque, unsigned int vector)
{
	(void)opaque, (void)vector;
}

static void host_trace(void *opaque, const char *msg)
{
	struct host *h = opaque;

	__atomic_fetch_add(&h->msgs, 1, __ATOMIC_RELAXED);
	if (!strcmp(msg, "device reset"))
		__atomic_fetch_add(&h->resets, 1, __ATOMIC_RELAXED);
}

static bool host_trace_enabled(void *opaque)
{
	struct host *h = opaque;

	__atomic_fetch_add(&h->asked, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&h->on, __ATOMIC_RELAXED);
}

static unsigned int get(unsigned int *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void test_trace(bool with_check)
{
	static uint8_t hbm[1u << 20];
	struct maia_sim_ops ops = {
		.dma_read = host_dma_read, .dma_write = host_dma_write, .raise_irq = host_irq,
		.trace = host_trace,
		.trace_enabled = with_check ? host_trace_enabled : NULL,
	};
	struct host h = { .on = false };
	struct maia_sim_config cfg;
	struct maia_sim *sim;
	unsigned int msgs;

	maia_sim_config_defaults(&cfg);
	cfg.hbm = hbm;
	cfg.hbm_size = sizeof(hbm);
	cfg.worker_threads = 1;
	sim = maia_sim_create(&cfg, &ops, &h);
	if (!tap_ok(sim != NULL, "create (trace_enabled %s)", with_check ? "set" : "NULL"))
		return;
	maia_sim_reset(sim);
	msgs = get(&h.msgs);
	if (with_check)
		tap_ok(msgs == 0 && get(&h.asked) > 0,
		       "tracing off: a reset sends no message (%u), trace_enabled asked %u times",
		       msgs, get(&h.asked));
	else
		tap_ok(get(&h.resets) == 1,
		       "no trace_enabled: the reset's message comes (%u of %u messages)",
		       get(&h.resets), msgs);
	__atomic_store_n(&h.on, true, __ATOMIC_RELAXED);
	maia_sim_reset(sim);
	tap_ok(get(&h.resets) == (with_check ? 1u : 2u),
	       "tracing on: the next reset's message comes (%u \"device reset\")", get(&h.resets));
	maia_sim_destroy(sim);
}

int main(void)
{
	test_trace(true);
	test_trace(false);
	return tap_done();
}
