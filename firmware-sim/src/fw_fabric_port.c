// SPDX-License-Identifier: MIT
/*
 * Fabric ports of a struct maia_sim: one fw_link per port, run by the device
 * worker (Documentation/hw/fabric.rst, "Attaching ports").
 *
 * Threads and locks:
 *   - maia_sim_fabric_rx() (any thread) copies a frame into the port's
 *     bounded receive ring under sim->lock, sets fab->kicked and signals
 *     work_cond. It never calls out.
 *   - The worker (fw_fabric_run_locked()) takes the frames out of the rings
 *     under sim->lock, then with sim->lock dropped and fab->busy set feeds
 *     them to the links and ticks every link; the links call fabric_tx (no
 *     lock held) and the upper layer callbacks below. It then publishes a
 *     snapshot of each port (maia_sim_fabric_port_info()) and the next link
 *     deadline under sim->lock.
 *   - Every link UP or DOWN a round saw is counted in fab->link_events
 *     when the round publishes, and asserts MAIA_INT_FABRIC_LINK; the
 *     worker raises the event vector before it clears fab->busy, with
 *     sim->lock dropped (fw_fabric_regs.c reads the registers).
 *   - The links themselves (struct fw_link and struct fw_fabric_port's
 *     worker-owned fields) are touched by the worker only, and by reset and
 *     destroy while the worker is parked or gone.
 * fab->busy is separate from sim->worker_busy: the doorbell fast path may
 * run a job in the host thread while the worker runs fabric work, and fabric
 * work does not hold up maia_sim_drain(). Reset waits for both.
 *
 * The layer above is a placeholder for now: on every link UP the port sends
 * one identity message (struct ident) and counts what it receives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw_fabric.h"
#include "fw_internal.h"

#define FW_FABRIC_MIN_SLEEP_NS	1000000ull	/* 1 ms: a due deadline that stays due */
#define FW_FABRIC_IDENT_MAGIC	0x544e4449u	/* "IDNT" */

/* The identity message (little-endian): who sent it, from which port. */
struct ident {
	uint32_t magic;
	uint32_t port;
	uint64_t serial;
	uint32_t epoch;
	uint32_t reserved;
};

struct rx_frame {
	size_t len;
	uint8_t *data;
};

struct fw_fabric_port {
	struct maia_sim *sim;
	unsigned int index;
	/* Under sim->lock. */
	struct rx_frame ring[MAIA_SIM_FABRIC_RXQ];
	unsigned int head, count;
	uint64_t rx_queue_drops;
	struct maia_sim_fabric_port_info info;	/* published snapshot */
	/* Worker-owned. */
	struct fw_link link;
	bool announce;			/* send the identity message */
	uint64_t ident_rx, ident_serial;
	unsigned int ident_port;
};

struct fw_fabric {
	unsigned int nports;
	uint64_t serial;
	/* Under sim->lock. */
	bool kicked;			/* frames queued since the last run */
	bool busy;			/* the worker is running links, lock dropped */
	uint64_t next_ns;		/* host clock: earliest link deadline */
	uint32_t link_events;		/* MAIA_REG_FABRIC_LINK_EVENTS */
	bool link_changed;		/* link events since the last round */
	struct fw_fabric_port port[];
};

/* Links run on the host clock: device time restarts at every reset. */
static uint64_t fab_now(struct maia_sim *sim)
{
	return fw_host_now_ns(&sim->host);
}

static int link_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct fw_fabric_port *p = opaque;
	struct maia_sim *sim = p->sim;

	if (!sim->ops.fabric_tx)
		return -1;
	return sim->ops.fabric_tx(sim->opaque, port, frame, len) < 0 ? -1 : 0;
}

static void link_deliver(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct fw_fabric_port *p = opaque;
	struct ident id;

	(void)port;
	if (len != sizeof(id))
		return;
	memcpy(&id, msg, sizeof(id));
	if (id.magic != FW_FABRIC_IDENT_MAGIC)
		return;
	p->ident_rx++;
	p->ident_serial = id.serial;
	p->ident_port = id.port;
}

static void link_state_changed(void *opaque, unsigned int port, bool up,
			       uint64_t peer_serial, unsigned int peer_port)
{
	struct fw_fabric_port *p = opaque;

	fw_trace(p->sim, "fabric port %u %s: peer %016llx port %u", port, up ? "up" : "down",
		 (unsigned long long)peer_serial, peer_port);
	/* Sent after the link call returns, not from inside it. */
	p->announce = up;
}

static const struct fw_link_ops link_ops = {
	.tx = link_tx,
	.deliver = link_deliver,
	.state_changed = link_state_changed,
};

static void announce(struct fw_fabric *fab, struct fw_fabric_port *p, uint64_t now)
{
	struct ident id = {
		.magic = FW_FABRIC_IDENT_MAGIC,
		.port = p->index,
		.serial = fab->serial,
		.epoch = p->link.epoch,
	};

	if (!p->announce)
		return;
	p->announce = false;
	if (p->link.state == FW_LINK_UP)
		fw_link_send(&p->link, &id, sizeof(id), now);
}

static void publish_locked(struct fw_fabric *fab, struct fw_fabric_port *p)
{
	const struct fw_link *l = &p->link;
	struct maia_sim_fabric_port_info *i = &p->info;
	uint64_t events = l->stats.link_ups + l->stats.link_downs;

	if (events != i->link_ups + i->link_downs) {
		fab->link_events += (uint32_t)(events - (i->link_ups + i->link_downs));
		fab->link_changed = true;
	}
	i->up = l->state == FW_LINK_UP;
	i->serial = fab->serial;
	i->peer_serial = l->peer_serial;
	i->peer_port = l->peer_port;
	i->epoch = l->epoch;
	i->link_ups = l->stats.link_ups;
	i->link_downs = l->stats.link_downs;
	i->dead_peer = l->stats.dead_peer;
	i->tx_frames = l->stats.tx_frames;
	i->rx_frames = l->stats.rx_frames;
	i->tx_errors = l->stats.tx_errors;
	i->retransmits = l->stats.retransmits;
	i->tx_bytes = l->stats.tx_bytes;
	i->rx_bytes = l->stats.rx_bytes;
	i->injected_drops = l->stats.tx_injected_drops;
	/* Refusals come with the transport (windows); none are sent yet. */
	i->nak_tx = 0;
	i->nak_rx = 0;
	i->mtu = MAIA_FABRIC_MSG_MAX_DATA;
	i->rx_dropped = 0;
	for (unsigned int k = 0; k < MAIA_FABRIC_DROP_COUNT; k++)
		i->rx_dropped += l->stats.drops[k];
	i->rx_queue_drops = p->rx_queue_drops;
	i->tx_msgs_acked = l->stats.tx_msgs_delivered_peer;
	i->rx_msgs = l->stats.rx_msgs;
	i->ident_rx = p->ident_rx;
	i->ident_serial = p->ident_serial;
	i->ident_port = p->ident_port;
}

static uint64_t auto_serial(void)
{
	static unsigned int created;
	unsigned int n = __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);

	return MAIA_SIM_SERIAL_AUTO | ((uint64_t)(getpid() & 0xffffffff) << 16) | (n & 0xffffu);
}

int fw_fabric_create(struct maia_sim *sim)
{
	unsigned int n = sim->cfg.fabric_ports;
	uint64_t now = fab_now(sim);
	struct fw_fabric *fab;

	if (!n)
		return 0;
	fab = calloc(1, sizeof(*fab) + n * sizeof(fab->port[0]));
	if (!fab)
		return -ENOMEM;
	fab->nports = n;
	fab->serial = sim->cfg.serial ? sim->cfg.serial : auto_serial();
	for (unsigned int i = 0; i < n; i++) {
		struct fw_fabric_port *p = &fab->port[i];
		struct fw_link_config lc;
		int err;

		p->sim = sim;
		p->index = i;
		fw_link_config_defaults(&lc);
		lc.serial = fab->serial;
		lc.port = i;
		lc.drop_ppm = sim->cfg.fabric_drop_ppm[i];
		lc.drop_seed = sim->cfg.fabric_drop_seed[i];
		/*
		 * Epochs only grow (a peer takes a larger one for a restart): start
		 * from the host clock in us, so that a device created again with
		 * the same serial starts a newer session.
		 */
		lc.epoch = (uint32_t)(now / 1000u) + i;
		if (!lc.epoch)
			lc.epoch = 1;
		err = fw_link_init(&p->link, &lc, &link_ops, p, now);
		if (err) {
			while (i--)
				fw_link_destroy(&fab->port[i].link);
			free(fab);
			return err;
		}
		publish_locked(fab, p);
	}
	fab->next_ns = now;		/* first HELLOs at once */
	sim->fab = fab;
	return 0;
}

static void drain_ring_locked(struct fw_fabric_port *p)
{
	while (p->count) {
		free(p->ring[p->head].data);
		p->ring[p->head].data = NULL;
		p->head = (p->head + 1) % MAIA_SIM_FABRIC_RXQ;
		p->count--;
	}
}

void fw_fabric_destroy(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;

	if (!fab)
		return;
	for (unsigned int i = 0; i < fab->nports; i++) {
		drain_ring_locked(&fab->port[i]);
		fw_link_destroy(&fab->port[i].link);
	}
	free(fab);
	sim->fab = NULL;
}

/* Reset, with the worker parked (reset_req set, fab->busy clear). */
void fw_fabric_reset(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t now = fab_now(sim);

	if (!fab)
		return;
	for (unsigned int i = 0; i < fab->nports; i++) {
		struct fw_fabric_port *p = &fab->port[i];

		fw_link_reset(&p->link, now);
		p->announce = false;
		pthread_mutex_lock(&sim->lock);
		drain_ring_locked(p);
		publish_locked(fab, p);
		pthread_mutex_unlock(&sim->lock);
	}
	pthread_mutex_lock(&sim->lock);
	/* The reset's DOWNs count as link events, but a reset raises nothing. */
	fab->link_changed = false;
	fab->kicked = false;
	fab->next_ns = now;
	pthread_mutex_unlock(&sim->lock);
}

bool fw_fabric_busy_locked(struct maia_sim *sim)
{
	return sim->fab && sim->fab->busy;
}

/* Crashed firmware runs no links: its peers see it die. */
bool fw_fabric_due_locked(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;

	if (!fab || __atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE))
		return false;
	return fab->kicked || fab_now(sim) >= fab->next_ns;
}

uint64_t fw_fabric_wait_ns_locked(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t now;

	if (!fab || __atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE))
		return UINT64_MAX;
	if (fab->kicked)
		return 0;
	now = fab_now(sim);
	return fab->next_ns > now ? fab->next_ns - now : 0;
}

/*
 * One round of fabric work on the worker: received frames to the links,
 * then every link's tick. Called and returns with sim->lock held.
 */
void fw_fabric_run_locked(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t now, next = UINT64_MAX;
	unsigned int i;

	fab->busy = true;
	fab->kicked = false;
	for (i = 0; i < fab->nports; i++) {
		struct fw_fabric_port *p = &fab->port[i];
		/* Only what is queued now: a busy wire must not starve the queues. */
		unsigned int n = p->count;

		while (n--) {
			struct rx_frame f = p->ring[p->head];

			p->ring[p->head].data = NULL;
			p->head = (p->head + 1) % MAIA_SIM_FABRIC_RXQ;
			p->count--;
			pthread_mutex_unlock(&sim->lock);
			fw_link_rx(&p->link, f.data, f.len, fab_now(sim));
			free(f.data);
			announce(fab, p, fab_now(sim));
			pthread_mutex_lock(&sim->lock);
		}
	}
	pthread_mutex_unlock(&sim->lock);

	now = fab_now(sim);
	for (i = 0; i < fab->nports; i++) {
		struct fw_fabric_port *p = &fab->port[i];
		uint64_t d;

		fw_link_tick(&p->link, now);
		announce(fab, p, now);
		d = fw_link_next_deadline(&p->link);
		if (d < next)
			next = d;
	}
	now = fab_now(sim);
	if (next < now + FW_FABRIC_MIN_SLEEP_NS)
		next = now + FW_FABRIC_MIN_SLEEP_NS;

	pthread_mutex_lock(&sim->lock);
	for (i = 0; i < fab->nports; i++)
		publish_locked(fab, &fab->port[i]);
	fab->next_ns = next;
	if (fab->link_changed) {
		fab->link_changed = false;
		if (fw_int_assert_locked(sim, MAIA_INT_FABRIC_LINK)) {
			/* Still busy: a reset waits until the vector is raised. */
			pthread_mutex_unlock(&sim->lock);
			fw_raise(sim, MAIA_VEC_EVENT);
			pthread_mutex_lock(&sim->lock);
		}
	}
	fab->busy = false;
	pthread_cond_broadcast(&sim->idle_cond);
}

void maia_sim_fabric_rx(struct maia_sim *sim, unsigned int port, const void *frame, size_t len)
{
	struct fw_fabric *fab = sim->fab;
	struct fw_fabric_port *p;
	uint8_t *copy = NULL;

	if (!fab || port >= fab->nports)
		return;
	p = &fab->port[port];
	if (len <= MAIA_FABRIC_BACKEND_MAX_FRAME)
		copy = malloc(len ? len : 1);
	if (copy)
		memcpy(copy, frame, len);
	pthread_mutex_lock(&sim->lock);
	if (!copy || p->count == MAIA_SIM_FABRIC_RXQ) {
		p->rx_queue_drops++;
		p->info.rx_queue_drops = p->rx_queue_drops;
		pthread_mutex_unlock(&sim->lock);
		free(copy);
		return;
	}
	p->ring[(p->head + p->count) % MAIA_SIM_FABRIC_RXQ] = (struct rx_frame){ len, copy };
	p->count++;
	if (!fab->kicked) {
		fab->kicked = true;
		/* Only the worker waits on work_cond. */
		pthread_cond_signal(&sim->work_cond);
	}
	pthread_mutex_unlock(&sim->lock);
}

unsigned int fw_fabric_ports(const struct maia_sim *sim)
{
	return sim->fab ? sim->fab->nports : 0;
}

uint64_t fw_fabric_serial(const struct maia_sim *sim)
{
	return sim->fab ? sim->fab->serial : 0;
}

uint32_t fw_fabric_link_events_locked(const struct maia_sim *sim)
{
	return sim->fab ? sim->fab->link_events : 0;
}

const struct maia_sim_fabric_port_info *fw_fabric_info_locked(const struct maia_sim *sim,
							      unsigned int port)
{
	if (!sim->fab || port >= sim->fab->nports)
		return NULL;
	return &sim->fab->port[port].info;
}

int maia_sim_fabric_port_info(struct maia_sim *sim, unsigned int port,
			      struct maia_sim_fabric_port_info *info)
{
	struct fw_fabric *fab = sim->fab;

	if (!fab || port >= fab->nports)
		return -EINVAL;
	pthread_mutex_lock(&sim->lock);
	*info = fab->port[port].info;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}
