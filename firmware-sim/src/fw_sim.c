// SPDX-License-Identifier: MIT
/*
 * firmware-sim lifecycle: create/destroy, reset, drain, fault injection.
 * The small services every block calls (logging, device time, interrupt
 * causes, waking the worker) are in fw_services.c, a leaf.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maia/hw/fabric.h"

#include "fw_internal.h"

void maia_sim_set_inline_doorbell(struct maia_sim *sim, bool on)
{
	pthread_mutex_lock(&sim->lock);
	sim->inline_doorbell = on;
	pthread_mutex_unlock(&sim->lock);
}

void maia_sim_config_defaults(struct maia_sim_config *cfg)
{
	cfg->clusters = 16;
	cfg->tiles_per_cluster = 4;
	cfg->num_queues = MAIA_DEFAULT_QUEUES;
	cfg->sram_kib = 8192;
	cfg->worker_threads = 0;
	cfg->fabric_ports = 0;
	cfg->serial = 0;
	memset(cfg->fabric_drop_ppm, 0, sizeof(cfg->fabric_drop_ppm));
	memset(cfg->fabric_drop_seed, 0, sizeof(cfg->fabric_drop_seed));
	memset(cfg->fabric_lat_ns, 0, sizeof(cfg->fabric_lat_ns));
	cfg->fabric_window = 0;
	cfg->model = MAIA_MODEL_MAIA100;
}

int maia_sim_config_model(struct maia_sim_config *cfg, const char *name)
{
	const struct fw_chip *chip = fw_chip_by_name(name);

	if (!chip)
		return -EINVAL;
	cfg->model = chip->id;
	cfg->clusters = chip->clusters;
	cfg->tiles_per_cluster = chip->tiles_per_cluster;
	return 0;
}

uint64_t maia_sim_model_hbm_bytes(unsigned int model)
{
	const struct fw_chip *chip = fw_chip_by_id(model);

	return chip ? chip->hbm_bytes : 0;
}

static bool config_valid(const struct maia_sim_config *cfg, const struct maia_sim_ops *ops)
{
	return cfg->hbm && cfg->hbm_size >= MAIA_PAGE_SIZE &&
	       (!cfg->model || fw_chip_by_id(cfg->model)) &&
	       cfg->clusters >= 1 && cfg->clusters <= MAIA_MAX_CLUSTERS &&
	       cfg->tiles_per_cluster >= 1 &&
	       cfg->tiles_per_cluster <= MAIA_MAX_TILES_PER_CLUSTER &&
	       cfg->num_queues >= 1 && cfg->num_queues <= MAIA_MAX_QUEUES &&
	       cfg->sram_kib >= 1 && cfg->fabric_ports <= MAIA_FABRIC_MAX_PORTS &&
	       cfg->fabric_window <= MAIA_FABRIC_WINDOW &&
	       !(cfg->fabric_window & (cfg->fabric_window - 1)) &&
	       ops && ops->dma_read && ops->dma_write && ops->raise_irq;
}

/* Back to power-on state. The worker must be parked (or not started). */
void fw_reset_state_locked(struct maia_sim *sim)
{
	unsigned int i;

	__atomic_store_n(&sim->time_base_ns, fw_host_now_ns(&sim->host), __ATOMIC_RELAXED);
	sim->time_hi_latch = 0;
	sim->scratch = 0;
	sim->boot.status = MAIA_BOOT_STATUS_WAIT_FW;
	sim->boot.error = MAIA_BOOT_OK;
	sim->boot.size = 0;
	sim->boot.addr = 0;
	sim->boot.pending = false;
	sim->boot.fw_version = 0;
	sim->boot.fw_abi = 0;
	sim->irq.status = 0;
	sim->irq.mask = 0;
	sim->fault.info = 0;
	sim->fault.addr = 0;
	fw_faultq_reset_locked(sim);
	sim->mbox.cmd = 0;
	sim->mbox.status = 0;
	memset(sim->mbox.arg, 0, sizeof(sim->mbox.arg));
	memset(sim->mbox.resp, 0, sizeof(sim->mbox.resp));
	__atomic_store_n(&sim->fw_crashed, false, __ATOMIC_RELEASE);
	sim->boot.ready_ns = 0;
	sim->heartbeat_at_crash = 0;
	sim->power_cap_mw = 0;
	for (i = 0; i < MAIA_MAX_QUEUES; i++) {
		struct fw_queue *q = &sim->queues[i];
		uint64_t gen = q->gen + 1;

		memset(q, 0, sizeof(*q));
		q->gen = gen;
	}
	memset(sim->rr_next, 0, sizeof(sim->rr_next));
	fw_image_params_defaults(&sim->fw);
	memset(sim->sems, 0, sizeof(sim->sems));
	fw_mmu_reset(sim);
	fw_telem_reset_locked(sim);
	fw_ecc_reset_locked(sim);
	fw_win_close_all(sim);
}

/* Stops the fabric thread (before the worker exists, or after it ended). */
static void stop_fabric(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
	sim->stop = true;
	__atomic_store_n(&sim->reset_req, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&sim->fab_cond);
	pthread_mutex_unlock(&sim->lock);
	fw_fabric_stop(sim);
}

struct maia_sim *maia_sim_create(const struct maia_sim_config *cfg,
				 const struct maia_sim_ops *ops, void *opaque)
{
	struct fw_tensor_config tcfg;
	pthread_condattr_t cattr;
	struct maia_sim *sim;
	int err;

	if (!cfg || !config_valid(cfg, ops)) {
		errno = EINVAL;
		return NULL;
	}
	sim = calloc(1, sizeof(*sim));
	if (!sim) {
		errno = ENOMEM;
		return NULL;
	}
	sim->cfg = *cfg;
	sim->ops = *ops;
	sim->opaque = opaque;
	sim->host.now_ns = ops->now_ns;
	sim->host.thread_create = ops->thread_create;
	sim->host.opaque = opaque;
	sim->bounce = malloc(FW_BOUNCE_SIZE);
	sim->cmd_buf_size = 4096;
	sim->cmd_buf = malloc(sim->cmd_buf_size);
	fw_chip_scale(fw_chip_by_id(cfg->model ? cfg->model : MAIA_MODEL_MAIA100), cfg->clusters,
		      cfg->tiles_per_cluster, &sim->chip);
	tcfg.clusters = cfg->clusters;
	tcfg.tiles_per_cluster = cfg->tiles_per_cluster;
	tcfg.sram_kib = cfg->sram_kib;
	tcfg.threads = cfg->worker_threads;
	tcfg.now_ns = ops->now_ns;
	tcfg.thread_create = ops->thread_create;
	tcfg.host_opaque = opaque;
	sim->te = fw_tensor_create(&tcfg);
	if (!sim->bounce || !sim->cmd_buf || !sim->te || fw_telem_create(sim)) {
		err = ENOMEM;
		goto err_free;
	}
	pthread_mutex_init(&sim->lock, NULL);
	pthread_mutex_init(&sim->mmu_lock, NULL);
	pthread_mutex_init(&sim->ecc_lock, NULL);
	/* The worker sleeps until device-time deadlines on CLOCK_MONOTONIC (fw_host.h). */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&sim->work_cond, &cattr);
	pthread_cond_init(&sim->fab_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_cond_init(&sim->idle_cond, NULL);
	fw_win_init(sim);
	fw_reset_state_locked(sim);
	sim->worker_idle = true;
	sim->running_queue = -1;
	err = -fw_fabric_create(sim);
	if (err)
		goto err_sync;
	err = fw_host_thread_create(&sim->host, &sim->worker, "maia-worker", fw_worker_main, sim);
	if (err) {
		stop_fabric(sim);
		goto err_sync;
	}
	return sim;

err_sync:
	fw_fabric_destroy(sim);
	pthread_mutex_destroy(&sim->win_lock);
	pthread_cond_destroy(&sim->fab_cond);
	pthread_cond_destroy(&sim->idle_cond);
	pthread_cond_destroy(&sim->work_cond);
	pthread_mutex_destroy(&sim->ecc_lock);
	pthread_mutex_destroy(&sim->mmu_lock);
	pthread_mutex_destroy(&sim->lock);
err_free:
	if (sim->te)
		fw_tensor_destroy(sim->te);
	fw_telem_destroy(sim);
	free(sim->cmd_buf);
	free(sim->bounce);
	free(sim);
	errno = err;
	return NULL;
}

void maia_sim_destroy(struct maia_sim *sim)
{
	if (!sim)
		return;
	pthread_mutex_lock(&sim->lock);
	sim->stop = true;
	__atomic_store_n(&sim->reset_req, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&sim->work_cond);
	pthread_mutex_unlock(&sim->lock);
	pthread_join(sim->worker, NULL);
	stop_fabric(sim);

	/* Jobs parked on fabric operations give them back; then they are freed. */
	fw_sched_release_fops(sim);
	fw_fabric_destroy(sim);
	pthread_mutex_destroy(&sim->win_lock);
	pthread_cond_destroy(&sim->fab_cond);
	pthread_cond_destroy(&sim->idle_cond);
	pthread_cond_destroy(&sim->work_cond);
	pthread_mutex_destroy(&sim->ecc_lock);
	pthread_mutex_destroy(&sim->mmu_lock);
	pthread_mutex_destroy(&sim->lock);
	fw_tensor_destroy(sim->te);
	fw_telem_destroy(sim);
	free(sim->cmd_buf);
	free(sim->bounce);
	free(sim);
}

/* Park the worker and the fabric thread: long operations poll reset_req and give up. */
void fw_park_threads(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
	__atomic_store_n(&sim->reset_req, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&sim->work_cond);
	pthread_cond_broadcast(&sim->fab_cond);
	while (sim->worker_busy || fw_fabric_busy_locked(sim))
		pthread_cond_wait(&sim->idle_cond, &sim->lock);
	pthread_mutex_unlock(&sim->lock);
}

void maia_sim_reset(struct maia_sim *sim)
{
	bool had_shadow[MAIA_MAX_QUEUES];
	unsigned int i;

	fw_park_threads(sim);

	/* Both threads are parked and the host is in here: nobody else runs. */
	fw_sched_abort_inflight(sim);
	/* Operations freed, links DOWN with a new epoch, receive queues emptied. */
	fw_fabric_reset(sim);

	pthread_mutex_lock(&sim->lock);
	for (i = 0; i < sim->cfg.num_queues; i++)
		had_shadow[i] = sim->queues[i].shadow != 0;
	fw_reset_state_locked(sim);
	__atomic_store_n(&sim->reset_req, false, __ATOMIC_RELEASE);
	fw_kick_worker_locked(sim);
	fw_fabric_kick_locked(sim);
	pthread_mutex_unlock(&sim->lock);

	fw_trace(sim, "device reset");
	if (sim->ops.shadow_changed) {
		for (i = 0; i < sim->cfg.num_queues; i++)
			if (had_shadow[i])
				sim->ops.shadow_changed(sim->opaque, i, false);
	}
}

void maia_sim_drain(struct maia_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
	while (!sim->worker_idle || sim->worker_busy)
		pthread_cond_wait(&sim->idle_cond, &sim->lock);
	pthread_mutex_unlock(&sim->lock);
}

/*
 * Injects an error (MAIA_SIM_INJECT_*, the same codes as MAIA_INJECT_* of
 * MAIA_REG_DEBUG_INJECT). A crash stops the firmware where it is: the
 * worker takes no more mailbox commands or jobs, a running job stops at its
 * next chunk, the heartbeat stops. Only a reset brings it back.
 */
int fw_inject_locked(struct maia_sim *sim, unsigned int what, unsigned int queue)
{
	switch (what) {
	case MAIA_SIM_INJECT_HANG:
	case MAIA_SIM_INJECT_MMU_FAULT:
		if (queue >= sim->cfg.num_queues)
			return -EINVAL;
		if (what == MAIA_SIM_INJECT_HANG)
			sim->queues[queue].inject_hang = true;
		else
			sim->queues[queue].inject_fault = true;
		return 0;
	case MAIA_SIM_INJECT_FW_CRASH:
		if (sim->boot.status != MAIA_BOOT_STATUS_READY)
			return -EINVAL;
		sim->heartbeat_at_crash = fw_heartbeat_locked(sim);
		__atomic_store_n(&sim->fw_crashed, true, __ATOMIC_RELEASE);
		fw_trace(sim, "firmware crash injected");
	/* The fabric thread parks at its next wake-up. */
	pthread_cond_broadcast(&sim->fab_cond);
		return 0;
	default:
		return -EINVAL;
	}
}

int maia_sim_inject(struct maia_sim *sim, enum maia_sim_inject what,
		    unsigned int queue)
{
	int ret;

	pthread_mutex_lock(&sim->lock);
	ret = fw_inject_locked(sim, what, queue);
	pthread_mutex_unlock(&sim->lock);
	return ret;
}

/* MAIA_REG_FW_HEARTBEAT: periods since the firmware became ready, frozen by a crash. */
uint32_t fw_heartbeat_locked(struct maia_sim *sim)
{
	if (sim->boot.status != MAIA_BOOT_STATUS_READY)
		return 0;
	if (__atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE))
		return sim->heartbeat_at_crash;
	return (uint32_t)((fw_now_ns(sim) - sim->boot.ready_ns) /
			  (MAIA_FW_HEARTBEAT_PERIOD_MS * 1000000ull));
}
