// SPDX-License-Identifier: MIT
/*
 * Fabric ports of a struct maia_sim: one fw_link per port and the fabric
 * thread that runs them with the transport above (fw_fabric_xport.c;
 * Documentation/hw/fabric.rst, "Attaching ports").
 *
 * Threads and locks:
 *   - maia_sim_fabric_rx() (any thread) copies a frame into the port's
 *     bounded receive ring under sim->lock, sets fab->kicked and signals
 *     sim->fab_cond. It never calls out, unless it runs the round (below). maia_sim_fabric_rx_lent() queues
 *     the caller's buffer instead; its release callback runs once the
 *     frame is used or dropped (sim->lock held when a reset or a full
 *     queue drops it), and calls nothing of ours.
 *   - The fabric thread (fabric_main()) sleeps on fab_cond until frames
 *     are queued, an operation is submitted or released, or the earliest
 *     link or operation deadline passes. A round takes the queued frames
 *     and the submitted operations under sim->lock, then with the lock
 *     dropped and fab->busy set feeds the frames to the links (for at
 *     most FW_FABRIC_ROUND_RX_NS: the rest waits for the next), ticks every
 *     link and pumps the transport; the links call link_tx (no lock held)
 *     and the transport. It then publishes a snapshot of each port
 *     (maia_sim_fabric_port_info()), hands finished operations back and
 *     sets the next deadline under sim->lock.
 *   - Rounds without a wake-up: a thread already in a round of another
 *     device of this process (that device's fabric thread, or a thread in
 *     one of these nested rounds) that queues a frame here runs this
 *     device's round itself, at once, when no thread is in one (fab->busy
 *     clear) and the links run (rx_inline_locked()); so does a doorbell
 *     writer whose job parked on a small operation (fw_fabric_end_deferred()),
 *     when every port that is UP has a direct cable (a NIC's frames wait
 *     for the host's main loop: the writer wakes the fabric thread instead).
 *     A frame for a device with a thread in its round (a ring's frame that
 *     comes back to a device of the nest, or a device whose fabric thread
 *     runs) is queued, and that thread takes it when its round ends. No
 *     lock is held across devices: a round drops sim->lock as before.
 *   - The links, the transport and struct fw_fabric_port's thread-owned
 *     fields are touched by the thread in a round (fab->busy set) only, and
 *     by reset and destroy while none is (reset_req or stop set: no round
 *     starts, inline or not).
 * The device worker runs jobs only: a long job does not hold up keepalives
 * (the peer would declare this device dead), and fabric work is not work
 * for maia_sim_drain(). Reset waits for both threads to park (fab->busy
 * clear, as sim->worker_busy).
 *   - The links run only while the firmware does (fw_links_run_locked()):
 *     before the first boot and from a reset until the next boot the
 *     fabric thread stays parked and received frames are dropped uncounted,
 *     as by a port that is dark; fw_boot_run() kicks the thread when the
 *     firmware comes up. So a link is UP only while both ends run firmware,
 *     and a driver's probe (reset, boot) takes no link down.
 *   - Every link UP or DOWN a round saw is counted in fab->link_events
 *     when the round publishes, and asserts MAIA_INT_FABRIC_LINK; the
 *     fabric thread raises the event vector before it clears fab->busy,
 *     with sim->lock dropped (fw_fabric_regs.c reads the registers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw_fabric.h"
#include "fw_fabric_ref.h"
#include "fw_fabric_xport.h"
#include "fw_internal.h"

#define FW_FABRIC_MIN_SLEEP_NS	1000000ull	/* 1 ms: a due deadline that stays due */
/*
 * A round stops taking received frames after this long and ticks its links:
 * half the keepalive period, so that a slow receiver (a loaded host, a
 * sanitizer) still acks and sends keepalives, and its peer does not declare
 * it dead. The frames left wait for the next round, which comes at once.
 */
#define FW_FABRIC_ROUND_RX_NS	(MAIA_FABRIC_KEEPALIVE_MS * 1000000ull / 2)

/*
 * While senders' threads run this device's rounds (rx_inline_locked()), its
 * fabric thread sleeps at most this long (half the least retransmit
 * timeout), so those rounds need not wake it for a later deadline they set
 * (a frame sent, its ack to come); one due sooner (a held message offered
 * again) wakes it.
 */
#define FW_FABRIC_NAP_NS	(MAIA_FABRIC_RTO_MS * 1000000ull / 2)

/*
 * How long a fabric thread that finds such a round running sleeps before it
 * looks again (fabric_main()): under the delayed ack
 * (MAIA_FABRIC_ACK_DELAY_US), so that an ack the round defers does not
 * wake it.
 */
#define FW_FABRIC_BUSY_NAP_NS	(MAIA_FABRIC_ACK_DELAY_US * 1000ull / 2)

/* Adaptive retransmit timeout's ceiling: well below MAIA_FABRIC_DEAD_MS. */
#define FW_FABRIC_RTO_MAX_NS	(100 * 1000000ull)

/* The receive queue: MAIA_SIM_FABRIC_RXQ frames, and room kept for control frames. */
#define FW_FABRIC_RXQ_CTRL	64u
#define FW_FABRIC_RING		(MAIA_SIM_FABRIC_RXQ + FW_FABRIC_RXQ_CTRL)

/*
 * Rounds one thread runs nested: its device's own, and the rounds it runs
 * inline for devices it sends to (rx_enqueue()). A ring of 4 nests 4 deep
 * before the frame back to the first device finds it busy and is queued.
 */
#define FW_FABRIC_INLINE_DEPTH	4u
/*
 * Rounds one thread runs inline from one round of its own (or one doorbell
 * write): the round it is in ticks its links only when they return, so
 * that a slow host (a sanitizer, a large collective) never holds a
 * device's keepalives and acks for more than a few rounds' time. Past it,
 * frames are queued and the receivers' fabric threads woken, as before.
 * Counted, not timed: where a round runs does not depend on the load.
 */
#define FW_FABRIC_INLINE_ROUNDS	16u
/*
 * And only while the thread has moved (fed to links, sent) less than this
 * since its outermost round began: small collectives go inline; a large
 * one's chunks go to the fabric threads, which move them in parallel and
 * tick their own links meanwhile, as before.
 */
#define FW_FABRIC_INLINE_BYTES	(64u * 1024u)

/*
 * Passes of a round: a round kicked while it ran (a frame sent back by a
 * round it nested, such as the ACK of the DATA frame it sent) takes it in
 * a second pass, before it publishes and sets its deadline, instead of in
 * a round of its own.
 */
#define FW_FABRIC_ROUND_PASSES	2u

/*
 * Rounds this thread is in (fabric_main()'s, inline ones). Only a thread in
 * a round runs another device's round inline: it holds no device lock and
 * is what the receiving device's fabric thread would be; a host thread (a
 * NIC's main loop under the BQL, a shared-memory port's reader, a vCPU)
 * only queues, as before.
 */
static __thread unsigned int round_depth;
/* Rounds this thread ran inline, bytes it moved, since its outermost round began. */
static __thread unsigned int inline_spent;
static __thread size_t moved_bytes;

/*
 * The device whose doorbell this thread writes (fw_fabric_defer_kicks()):
 * its fabric thread is not woken for the operation the doorbell's job
 * submits until fw_fabric_end_deferred(), which may run the round here.
 */
static __thread struct maia_sim *kicks_deferred;
static __thread bool kick_pending;

/* Whether rx_enqueue() may run rounds inline (fw_fabric_inline_rx()). */
static bool inline_rx_on = true;

void fw_fabric_inline_rx(bool on)
{
	__atomic_store_n(&inline_rx_on, on, __ATOMIC_RELAXED);
}

/* FW_FABRIC_ROUND_RX_NS, or what a test set (fw_fabric_round_rx_limit()). */
static uint64_t round_rx_ns = FW_FABRIC_ROUND_RX_NS;

void fw_fabric_round_rx_limit(uint64_t ns)
{
	__atomic_store_n(&round_rx_ns, ns ? ns : FW_FABRIC_ROUND_RX_NS, __ATOMIC_RELAXED);
}

struct rx_frame {
	size_t len;
	const uint8_t *data;		/* ours (fw_buf_alloc) unless release is set */
	void (*release)(void *opaque);	/* a lent frame (maia_sim_fabric_rx_lent) */
	void *opaque;
};

static void rx_frame_free(struct rx_frame *f)
{
	if (f->release)
		f->release(f->opaque);
	else
		fw_buf_free((void *)f->data);
	f->data = NULL;
	f->release = NULL;
}

struct fw_fabric_port {
	struct maia_sim *sim;
	unsigned int index;
	/* Under sim->lock. */
	struct rx_frame ring[FW_FABRIC_RING];
	unsigned int head, count;
	uint64_t rx_queue_drops;
	struct maia_sim_fabric_port_info info;	/* published snapshot */
	/* Fabric-thread-owned. */
	struct fw_link link;
	bool announce;			/* send the identity message */
	uint64_t ident_rx, ident_serial;
	unsigned int ident_port;
	struct rx_frame batch[FW_FABRIC_RING];	/* frames taken, oldest first */
	unsigned int nbatch;		/* batch[0..nbatch) */
	unsigned int bnext;		/* batch[bnext..nbatch) not fed to the link yet */
	uint64_t rx_cut;		/* rounds cut at this port's frames (feed_rx()) */
	/* Atomic: the device of this process whose rounds send to this port; 0: none known. */
	uint64_t peer_uid;
	/* Under sim->lock: the loss window's start, and its last measure. */
	uint64_t loss_tx0, loss_nak0;
	uint32_t loss_ppm;
};

struct fw_fabric {
	unsigned int nports;
	uint64_t serial;
	struct fw_xport *xport;		/* fabric-thread-owned (fw_fabric_xport.c) */
	bool thread_started;
	unsigned int rx_first;		/* fabric-thread-owned: the port a round feeds first */
	/* Owned by the thread in a round (busy): the host clock it last read. */
	uint64_t round_now;
	/* Under sim->lock. */
	bool kicked;			/* frames or operations queued since the last round */
	bool busy;			/* a thread is in a round, lock dropped */
	uint64_t next_ns;		/* host clock: earliest link or operation deadline */
	uint64_t sleep_ns;		/* the fabric thread sleeps until then (0: awake) */
	uint64_t inline_rounds;		/* rounds run by a sender's thread (rx_enqueue()) */
	uint32_t link_events;		/* MAIA_REG_FABRIC_LINK_EVENTS */
	uint32_t fo_lat_ns, fo_loss_ppm;	/* MAIA_REG_FABRIC_FO_*: thresholds */
	bool link_changed;		/* link events since the last round */
	/* This process's devices (peer_behind()): uid set before the thread starts. */
	uint64_t uid;
	struct fw_fabric *reg_next;	/* under fabrics_lock */
	/*
	 * Atomic: the host clock (host's) when a round of this device last
	 * began, or last read it (its frames, its passes: a round that ends
	 * reads no clock for this); 0 while its links do not run (parked, no
	 * firmware, stopped).
	 */
	uint64_t alive_ns;
	const struct fw_host *host;	/* the device's host clock (fab_now()) */
	struct fw_fabric_port port[];
};

/*
 * The devices of this process with a fabric, so that a port whose peer is
 * one of them can tell a peer whose rounds are late (a slow host: a
 * sanitizer, a loaded machine) from a silent one (peer_behind()).
 */
static pthread_mutex_t fabrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fw_fabric *fabrics;
static uint64_t fabrics_uid;

/*
 * A device that runs its links begins a round at least every keepalive
 * interval (its links' deadlines); one whose last round began (or read the
 * clock) longer ago than twice that is behind, not silent.
 */
#define FW_FABRIC_BEHIND_NS	(2 * MAIA_FABRIC_KEEPALIVE_MS * 1000000ull)

static void fabric_register(struct fw_fabric *fab)
{
	pthread_mutex_lock(&fabrics_lock);
	fab->uid = ++fabrics_uid;
	fab->reg_next = fabrics;
	fabrics = fab;
	pthread_mutex_unlock(&fabrics_lock);
}

static void fabric_unregister(struct fw_fabric *fab)
{
	pthread_mutex_lock(&fabrics_lock);
	for (struct fw_fabric **pp = &fabrics; *pp; pp = &(*pp)->reg_next) {
		if (*pp == fab) {
			*pp = fab->reg_next;
			break;
		}
	}
	pthread_mutex_unlock(&fabrics_lock);
}

/*
 * now (the host clock the round read last), or 0 (links not running):
 * what peers of this process see of us.
 */
static void fabric_alive(struct fw_fabric *fab, uint64_t now)
{
	__atomic_store_n(&fab->alive_ns, now, __ATOMIC_RELAXED);
}

/*
 * fw_link_ops.peer_behind: the peer of this port is a device of this
 * process that still runs its links but has not begun a round (or read
 * the clock in one) for FW_FABRIC_BEHIND_NS: its silence is the host's
 * slowness, not a pulled cable or a dead device (those keep their rounds,
 * or stop their links).
 */
static bool peer_behind(void *opaque, unsigned int port)
{
	struct fw_fabric_port *p = opaque;
	uint64_t uid = __atomic_load_n(&p->peer_uid, __ATOMIC_RELAXED), now = 0, alive = 0;

	(void)port;
	if (!uid)
		return false;
	pthread_mutex_lock(&fabrics_lock);
	for (struct fw_fabric *f = fabrics; f; f = f->reg_next) {
		if (f->uid == uid) {
			alive = __atomic_load_n(&f->alive_ns, __ATOMIC_RELAXED);
			/* On the peer's own clock, as it stamped alive_ns. */
			if (alive)
				now = fw_host_now_ns(f->host);
			break;
		}
	}
	pthread_mutex_unlock(&fabrics_lock);
	return alive && now > alive && now - alive > FW_FABRIC_BEHIND_NS;
}

/*
 * Whether the ports run: the firmware booted and did not crash. Under
 * sim->lock (boot.status changes under it).
 */
static bool fw_links_run_locked(const struct maia_sim *sim)
{
	return sim->boot.status == MAIA_BOOT_STATUS_READY &&
	       !__atomic_load_n(&sim->fw_crashed, __ATOMIC_ACQUIRE);
}

/* Links run on the host clock: device time restarts at every reset. */
static uint64_t fab_now(struct maia_sim *sim)
{
	return fw_host_now_ns(&sim->host);
}

/*
 * The device whose round this thread is in (the innermost, for nested
 * inline rounds), or NULL.
 */
static __thread struct maia_sim *round_sim;

/*
 * The transport's clock (fw_xport_now()): in a round of sim, the time the
 * round last read (fab->round_now: before the frame being fed, or at the
 * ticks) instead of a clock read per message. What the transport times
 * with it (retransmit and collective timeouts, round-trip samples) is in
 * milliseconds; a round's frames take microseconds. Elsewhere the clock.
 */
static uint64_t xport_now(struct maia_sim *sim)
{
	return round_sim == sim ? sim->fab->round_now : fab_now(sim);
}

static struct fw_link *port_link(struct maia_sim *sim, unsigned int port)
{
	return &sim->fab->port[port].link;
}

static int link_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct fw_fabric_port *p = opaque;
	struct maia_sim *sim = p->sim;

	if (!sim->ops.fabric_tx)
		return -1;
	moved_bytes += len;
	return sim->ops.fabric_tx(sim->opaque, port, frame, len) < 0 ? -1 : 0;
}

/* A DATA frame lent to the host: its reference is the host's until maia_sim_fabric_frame_put(). */
static int link_tx_lend(void *opaque, unsigned int port, void *frame, size_t len)
{
	struct fw_fabric_port *p = opaque;
	struct maia_sim *sim = p->sim;

	fw_buf_get(frame);
	moved_bytes += len;
	return sim->ops.fabric_tx_lend(sim->opaque, port, frame, len) < 0 ? -1 : 0;
}

void maia_sim_fabric_frame_put(const void *frame)
{
	fw_buf_free((void *)frame);
}

void maia_sim_fabric_frame_seal(const void *frame, size_t len)
{
	/* The host holds the frame: the link does not write it meanwhile. */
	if (fw_ref_msg_has((const uint8_t *)frame + FW_LINK_HEADROOM)) {
		/* Its data copied in, the mark cleared: a frame like any other. */
		fw_ref_seal((void *)frame, len);
		fw_buf_set_unsealed((void *)frame, true);
	}
	if (!fw_buf_unsealed(frame))
		return;
	fw_fabric_seal((void *)frame, len);
	fw_buf_set_unsealed((void *)frame, false);
}

static int link_deliver(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct fw_fabric_port *p = opaque;

	return fw_xport_deliver(p->sim, port, msg, len);
}

static void ident_rx(struct maia_sim *sim, unsigned int port, uint64_t serial,
		     unsigned int peer_port);

/* What the transport may ask of the ports. */
static const struct fw_xport_port_ops xport_port_ops = {
	.link = port_link,
	.now = xport_now,
	.ident_rx = ident_rx,
};

/* MAIA_FMSG_IDENT from the peer: tag = its serial, key = its port. */
static void ident_rx(struct maia_sim *sim, unsigned int port, uint64_t serial,
		     unsigned int peer_port)
{
	struct fw_fabric_port *p = &sim->fab->port[port];

	p->ident_rx++;
	p->ident_serial = serial;
	p->ident_port = peer_port;
}

static void link_state_changed(void *opaque, unsigned int port, bool up,
			       uint64_t peer_serial, unsigned int peer_port)
{
	struct fw_fabric_port *p = opaque;

	fw_trace(p->sim, "fabric port %u %s: peer %016llx port %u", port, up ? "up" : "down",
		 (unsigned long long)peer_serial, peer_port);
	/* Sent after the link call returns, not from inside it. */
	p->announce = up;
	if (up)
		fw_xport_link_up(p->sim, port);
	else
		fw_xport_link_down(p->sim, port);
}

static void link_unsent(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct fw_fabric_port *p = opaque;
	uint8_t *copy;

	if (!fw_ref_msg_has(msg)) {
		fw_xport_link_unsent(p->sim, port, msg, len);
		return;
	}
	/* Its data are in device memory: the other way gets them in the message. */
	copy = malloc(len);
	if (!copy)
		return;
	fw_ref_msg_read(msg, copy, len);
	fw_xport_link_unsent(p->sim, port, copy, len);
	free(copy);
}

static const struct fw_link_ops link_ops = {
	.tx = link_tx,
	.deliver = link_deliver,
	.state_changed = link_state_changed,
	.unsent = link_unsent,
	.peer_behind = peer_behind,
};

static void announce(struct fw_fabric *fab, struct fw_fabric_port *p, uint64_t now)
{
	struct maia_fabric_msg id = {
		.type = MAIA_FMSG_IDENT,
		.key = p->index,
		.tag = fab->serial,
		.offset = p->link.epoch,
	};

	if (!p->announce)
		return;
	p->announce = false;
	if (p->link.state == FW_LINK_UP)
		fw_link_send(&p->link, &id, sizeof(id), now);
}

/*
 * Whether collectives should avoid the port (Documentation/hw/fabric.rst,
 * "Failover"): DOWN, its modeled latency over the threshold, or its loss at
 * or over it. Loss is measured per MAIA_FABRIC_FO_LOSS_WINDOW frames sent:
 * the gaps the peer named (NAKs) per frame; it stays until the next window.
 */
static void failover_state_locked(struct fw_fabric *fab, struct fw_fabric_port *p)
{
	const struct fw_link *l = &p->link;
	struct maia_sim_fabric_port_info *i = &p->info;
	uint64_t sent = l->stats.tx_frames - p->loss_tx0;
	uint32_t state = i->up ? 0 : MAIA_FPORT_FO_DOWN;

	if (sent >= MAIA_FABRIC_FO_LOSS_WINDOW) {
		p->loss_ppm = (uint32_t)((l->stats.rx_nak - p->loss_nak0) * 1000000u / sent);
		p->loss_tx0 = l->stats.tx_frames;
		p->loss_nak0 = l->stats.rx_nak;
	}
	i->lat_ns = p->sim->chip.link_lat_ns + p->sim->cfg.fabric_lat_ns[p->index];
	i->loss_ppm = p->loss_ppm;
	if (fab->fo_lat_ns && i->lat_ns > fab->fo_lat_ns)
		state |= MAIA_FPORT_FO_LATENCY;
	if (fab->fo_loss_ppm && p->loss_ppm >= fab->fo_loss_ppm)
		state |= MAIA_FPORT_FO_LOSS;
	i->fo_state = state;
	fw_xport_set_degraded(p->sim, p->index, state & (MAIA_FPORT_FO_LATENCY | MAIA_FPORT_FO_LOSS));
}

static void publish_locked(struct fw_fabric *fab, struct fw_fabric_port *p)
{
	const struct fw_link *l = &p->link;
	struct maia_sim_fabric_port_info *i = &p->info;
	struct fw_xport_failover fo;
	uint64_t msg_drops = 0;
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
	fw_xport_counters(p->sim, p->index, &msg_drops, &i->nak_tx, &i->nak_rx);
	i->rx_dropped = msg_drops;
	i->tx_bytes = l->stats.tx_bytes;
	i->rx_bytes = l->stats.rx_bytes;
	i->injected_drops = l->stats.tx_injected_drops;
	i->tx_lend_copies = l->stats.tx_lend_copies;
	i->tx_ref = l->stats.tx_ref;
	i->rx_ref_drops = l->stats.drops[MAIA_FABRIC_DROP_REF];
	i->rx_cut = p->rx_cut;
	i->link_nak_tx = l->stats.tx_nak;
	i->link_nak_rx = l->stats.rx_nak;
	i->rx_held = l->stats.rx_held;
	i->spurious_rto = l->stats.spurious_rto;
	i->tx_acks = l->stats.tx_ack;
	i->tx_ack_now = l->stats.tx_ack_now;
	i->mtu = MAIA_FABRIC_MSG_MAX_DATA;
	for (unsigned int k = 0; k < MAIA_FABRIC_DROP_COUNT; k++)
		i->rx_dropped += l->stats.drops[k];
	i->rx_queue_drops = p->rx_queue_drops;
	i->tx_msgs_acked = l->stats.tx_msgs_delivered_peer;
	i->rx_msgs = l->stats.rx_msgs;
	i->ident_rx = p->ident_rx;
	i->ident_serial = p->ident_serial;
	i->ident_port = p->ident_port;
	fw_xport_failover_counters(p->sim, p->index, &fo);
	i->failovers = fo.failovers;
	i->relayed = fo.relayed;
	i->resent = fo.resent;
	i->relay_drops = fo.relay_drops;
	failover_state_locked(fab, p);
}

static uint64_t auto_serial(void)
{
	static unsigned int created;
	unsigned int n = __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);

	return MAIA_SIM_SERIAL_AUTO | ((uint64_t)(getpid() & 0xffffffff) << 16) | (n & 0xffffu);
}

static void drain_ring_locked(struct fw_fabric_port *p)
{
	/* Frames a cut round left (the fabric thread is parked or gone). */
	while (p->bnext < p->nbatch)
		rx_frame_free(&p->batch[p->bnext++]);
	p->nbatch = p->bnext = 0;
	while (p->count) {
		rx_frame_free(&p->ring[p->head]);
		p->head = (p->head + 1) % FW_FABRIC_RING;
		p->count--;
	}
}

static void free_fabric(struct fw_fabric *fab, unsigned int links)
{
	fabric_unregister(fab);
	for (unsigned int i = 0; i < fab->nports; i++)
		drain_ring_locked(&fab->port[i]);
	for (unsigned int i = 0; i < links; i++)
		fw_link_destroy(&fab->port[i].link);
	fw_xport_destroy(fab->xport);
	free(fab);
}

static void *fabric_main(void *arg);

int fw_fabric_create(struct maia_sim *sim)
{
	unsigned int n = sim->cfg.fabric_ports;
	uint64_t now = fab_now(sim);
	struct fw_link_ops ops = link_ops;	/* fw_link_init() keeps a copy */
	struct fw_fabric *fab;
	int err;

	if (!n)
		return 0;
	/* DATA frames lent to a host that takes them (maia_sim_ops.fabric_tx_lend). */
	if (sim->ops.fabric_tx_lend)
		ops.tx_lend = link_tx_lend;
	fab = calloc(1, sizeof(*fab) + n * sizeof(fab->port[0]));
	if (!fab)
		return -ENOMEM;
	fab->nports = n;
	fab->fo_lat_ns = MAIA_FABRIC_FO_LAT_NS_DEFAULT;
	fab->fo_loss_ppm = MAIA_FABRIC_FO_LOSS_PPM_DEFAULT;
	fab->serial = sim->cfg.serial ? sim->cfg.serial : auto_serial();
	fab->xport = fw_xport_create(sim, n, &xport_port_ops);
	if (!fab->xport) {
		free(fab);
		return -ENOMEM;
	}
	sim->fab = fab;
	sim->xport = fab->xport;
	for (unsigned int i = 0; i < n; i++) {
		struct fw_fabric_port *p = &fab->port[i];
		struct fw_link_config lc;

		p->sim = sim;
		p->index = i;
		fw_link_config_defaults(&lc);
		lc.serial = fab->serial;
		lc.port = i;
		lc.drop_ppm = sim->cfg.fabric_drop_ppm[i];
		lc.drop_seed = sim->cfg.fabric_drop_seed[i];
		/*
		 * Lent DATA frames go without their CRC (the host seals those it
		 * does not lend on to a device of this process: maia_sim_fabric_
		 * frame_seal()); with fault injection on, every frame is whole.
		 */
		lc.lazy_crc = sim->ops.fabric_tx_lend && !lc.drop_ppm;
		if (sim->cfg.fabric_window)
			lc.window = sim->cfg.fabric_window;
		/*
		 * A round ticks every link after its received frames: one ACK
		 * per round, and at least one per quarter window, so that the
		 * sender never stalls a whole round for acks.
		 */
		lc.ack_every = lc.window >= 4 ? lc.window / 4 : 1;
		/*
		 * A lone message's ack waits for a frame back to carry it, or
		 * MAIA_FABRIC_ACK_DELAY_US: a small collective's chunks then
		 * cost no ACK frame of their own, nor the round that takes it.
		 */
		lc.ack_delay_ns = MAIA_FABRIC_ACK_DELAY_US * 1000ull;
		/* Our cores are shared: an ack late by a scheduling delay is not a loss. */
		lc.rto_max_ns = FW_FABRIC_RTO_MAX_NS;
		/*
		 * Epochs only grow (a peer takes a larger one for a restart): start
		 * from the host clock in us, so that a device created again with
		 * the same serial starts a newer session.
		 */
		lc.epoch = (uint32_t)(now / 1000u) + i;
		if (!lc.epoch)
			lc.epoch = 1;
		err = fw_link_init(&p->link, &lc, &ops, p, now);
		if (err) {
			sim->fab = NULL;
			sim->xport = NULL;
			free_fabric(fab, i);
			return err;
		}
		publish_locked(fab, p);
	}
	fab->next_ns = now;		/* first HELLOs at once */
	fab->host = &sim->host;
	fabric_register(fab);
	err = -fw_host_thread_create(&sim->host, &sim->fabric_thread, "maia-fabric",
				     fabric_main, sim);
	if (err) {
		sim->fab = NULL;
		sim->xport = NULL;
		free_fabric(fab, n);
		return err;
	}
	fab->thread_started = true;
	return 0;
}

/*
 * Destroy: stop is set and fab_cond signalled by the caller. A round a
 * sender's thread runs inline for this device (none starts after stop) is
 * waited for too.
 */
void fw_fabric_stop(struct maia_sim *sim)
{
	if (sim->fab && sim->fab->thread_started) {
		pthread_join(sim->fabric_thread, NULL);
		fabric_unregister(sim->fab);
		pthread_mutex_lock(&sim->lock);
		while (sim->fab->busy)
			pthread_cond_wait(&sim->idle_cond, &sim->lock);
		sim->fab->thread_started = false;
		pthread_mutex_unlock(&sim->lock);
	}
}

uint64_t fw_fabric_inline_rounds(struct maia_sim *sim)
{
	uint64_t n;

	if (!sim->fab)
		return 0;
	pthread_mutex_lock(&sim->lock);
	n = sim->fab->inline_rounds;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

/* After fw_fabric_stop() (and the worker's end): nothing runs any more. */
void fw_fabric_destroy(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;

	if (!fab)
		return;
	sim->fab = NULL;
	sim->xport = NULL;
	free_fabric(fab, fab->nports);
}

/* Reset, with the worker and the fabric thread parked (reset_req set, busy clear). */
void fw_fabric_reset(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t now = fab_now(sim);

	if (!fab)
		return;
	/* Operations first: their jobs were aborted; the links' DOWN then fails nothing. */
	fw_xport_reset(sim);
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

void fw_fabric_kick_locked(struct maia_sim *sim)
{
	if (!sim->fab)
		return;
	if (kicks_deferred == sim) {
		/* fw_fabric_end_deferred() runs the round or wakes the thread. */
		sim->fab->kicked = true;
		kick_pending = true;
		return;
	}
	/*
	 * A thread in a round of ours (busy) looks at kicked when it ends it:
	 * waking our fabric thread meanwhile would only cost a switch.
	 */
	if (!sim->fab->kicked) {
		sim->fab->kicked = true;
		if (!sim->fab->busy)
			pthread_cond_signal(&sim->fab_cond);
	}
}

/*
 * A frame marked MAIA_FABRIC_F_REF: only a frame lent by a device of this
 * process, as it is, and recorded as such (fw_fabric_ref.h) is taken, its
 * record pinned while the link reads the data where they are; a copy, or a
 * lent frame the process does not know, is dropped and counted.
 */
static void rx_ref(struct fw_fabric_port *p, const struct rx_frame *f, uint64_t now)
{
	struct fw_ref *r = f->release ? fw_ref_pin(f->data) : NULL;
	struct fw_ref_rx saved;

	if (!r) {
		/* The link drops it (MAIA_FABRIC_DROP_REF) once it parses. */
		if (f->release)
			fw_link_rx_lent(&p->link, f->data, f->len, now);
		else
			fw_link_rx(&p->link, f->data, f->len, now);
		return;
	}
	saved = fw_ref_rx_enter(r, f->data);
	p->link.rx_ref_ok = true;
	fw_link_rx_lent(&p->link, f->data, f->len, now);
	p->link.rx_ref_ok = false;
	fw_ref_rx_leave(saved);
	fw_ref_unpin(r);
}

/*
 * Feeds the taken frames to the links, the ports in turn from fab->rx_first,
 * until FW_FABRIC_ROUND_RX_NS have passed. Returns whether frames are left;
 * the next round then starts with the port after the one cut. The clock is
 * read before each frame after the first (the limit, the frame's time; the
 * round read it as it began); fab->round_now keeps the last reading.
 */
static bool feed_rx(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t start = fab->round_now, now = start;
	uint64_t limit = __atomic_load_n(&round_rx_ns, __ATOMIC_RELAXED);
	bool fed = false;

	for (unsigned int n = 0; n < fab->nports; n++) {
		unsigned int i = (fab->rx_first + n) % fab->nports;
		struct fw_fabric_port *p = &fab->port[i];

		while (p->bnext < p->nbatch) {
			struct rx_frame *f = &p->batch[p->bnext++];

			if (fed) {
				now = fab_now(sim);
				fab->round_now = now;
			}
			/* At least one frame a round: progress, whatever the limit. */
			if (fed && now - start >= limit) {
				p->bnext--;
				p->rx_cut++;
				fab->rx_first = (i + 1) % fab->nports;
				return true;
			}
			fed = true;
			moved_bytes += f->len;
			/* A lent frame is the sending device's own buffer: no CRC to check. */
			if (f->data && fw_link_frame_marked(f->data, f->len))
				rx_ref(p, f, now);
			else if (f->release)
				fw_link_rx_lent(&p->link, f->data, f->len, now);
			else
				fw_link_rx(&p->link, f->data, f->len, now);
			rx_frame_free(f);
			announce(fab, p, now);
		}
		p->nbatch = p->bnext = 0;
	}
	return false;
}

/*
 * Takes the queued frames into each port's batch, after what a cut round
 * left (that comes first: a busy wire must not starve the timers).
 * sim->lock held.
 */
static void take_frames_locked(struct fw_fabric *fab)
{
	for (unsigned int i = 0; i < fab->nports; i++) {
		struct fw_fabric_port *p = &fab->port[i];
		unsigned int left = p->nbatch - p->bnext;

		memmove(p->batch, p->batch + p->bnext, left * sizeof(p->batch[0]));
		p->nbatch = left;
		p->bnext = 0;
		while (p->count && p->nbatch < FW_FABRIC_RING) {
			p->batch[p->nbatch++] = p->ring[p->head];
			p->ring[p->head].data = NULL;
			p->ring[p->head].release = NULL;
			p->head = (p->head + 1) % FW_FABRIC_RING;
			p->count--;
		}
	}
}

/*
 * One round: received frames to the links, every link's tick, the
 * transport's operations and answers; once more (a pass) when kicked
 * meanwhile, up to FW_FABRIC_ROUND_PASSES. Called and returns with sim->lock
 * held.
 */
static void fabric_round_locked(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	struct maia_sim *outer = round_sim;
	uint64_t now, next = UINT64_MAX;
	unsigned int i, pass;
	bool cut;

	fab->busy = true;
	round_sim = sim;
	fab->round_now = fab_now(sim);
	fabric_alive(fab, fab->round_now);
	fab->kicked = false;
	fw_xport_sync_locked(sim);
	take_frames_locked(fab);
	pthread_mutex_unlock(&sim->lock);

	for (pass = 1;; pass++) {
		cut = feed_rx(sim);
		/*
		 * The ticks, the transport and the next deadline take the time
		 * feed_rx() read last (before its last frame): deadlines are
		 * milliseconds apart. A deadline it then finds due is met by the
		 * next round, at once.
		 */
		now = fab->round_now;
		for (i = 0; i < fab->nports; i++) {
			struct fw_fabric_port *p = &fab->port[i];

			fw_link_tick(&p->link, now);
			announce(fab, p, now);
		}
		fw_xport_pump(sim, now);
		/*
		 * Kicked meanwhile: the rounds this one nested answered what it
		 * sent (a receiver's ACK), or an operation came. What a new
		 * round would do first is done here, once more, in this round.
		 */
		if (cut || pass == FW_FABRIC_ROUND_PASSES)
			break;
		pthread_mutex_lock(&sim->lock);
		if (!fab->kicked) {
			pthread_mutex_unlock(&sim->lock);
			break;
		}
		fab->kicked = false;
		/*
		 * The jobs this sync completes read what the pass counted
		 * (a collective's failover, its relays) once they see their
		 * completion: published first, as at the round's end.
		 */
		for (i = 0; i < fab->nports; i++)
			publish_locked(fab, &fab->port[i]);
		fw_xport_sync_locked(sim);
		take_frames_locked(fab);
		pthread_mutex_unlock(&sim->lock);
		fab->round_now = fab_now(sim);
	}
	for (i = 0; i < fab->nports; i++) {
		uint64_t d = fw_link_next_deadline(&fab->port[i].link);

		if (d < next)
			next = d;
	}
	if (fw_xport_next_deadline(sim) < next)
		next = fw_xport_next_deadline(sim);
	if (next < now + FW_FABRIC_MIN_SLEEP_NS)
		next = now + FW_FABRIC_MIN_SLEEP_NS;

	pthread_mutex_lock(&sim->lock);
	for (i = 0; i < fab->nports; i++)
		publish_locked(fab, &fab->port[i]);
	fw_xport_sync_locked(sim);
	fab->next_ns = next;
	/* Frames left: the next round comes at once, after the ticks above. */
	if (cut)
		fab->kicked = true;
	if (fab->link_changed) {
		fab->link_changed = false;
		if (fw_int_assert_locked(sim, MAIA_INT_FABRIC_LINK)) {
			/* Still busy: a reset waits until the vector is raised. */
			pthread_mutex_unlock(&sim->lock);
			fw_raise(sim, MAIA_VEC_EVENT);
			pthread_mutex_lock(&sim->lock);
		}
	}
	round_sim = outer;
	fab->busy = false;
	fabric_alive(fab, fab->round_now);
	pthread_cond_broadcast(&sim->idle_cond);
}

static void *fabric_main(void *arg)
{
	struct maia_sim *sim = arg;
	struct fw_fabric *fab = sim->fab;
	uint64_t seen_inline = 0;

	pthread_mutex_lock(&sim->lock);
	while (!sim->stop) {
		uint64_t now;

		/*
		 * Parked for a reset; no firmware (not booted yet, or crashed)
		 * runs no links: its peers never see it, or see it die.
		 */
		if (__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE) ||
		    !fw_links_run_locked(sim)) {
			fabric_alive(fab, 0);
			pthread_cond_broadcast(&sim->idle_cond);
			fab->sleep_ns = UINT64_MAX;
			pthread_cond_wait(&sim->fab_cond, &sim->lock);
			continue;
		}
		now = fab_now(sim);
		/*
		 * A sender's thread runs a round of ours inline. It wakes us
		 * after it for frames left or a deadline due before we wake
		 * (rx_inline_locked()); else we look again in a while: waiting
		 * for its end cost a wake-up of ours at most of them, and
		 * those rounds follow one another while a collective runs.
		 */
		if (fab->busy) {
			struct timespec ts = fw_monotonic_deadline(FW_FABRIC_BUSY_NAP_NS);

			fab->sleep_ns = now + FW_FABRIC_BUSY_NAP_NS;
			pthread_cond_timedwait(&sim->fab_cond, &sim->lock, &ts);
			continue;
		}
		if (!fab->kicked && now < fab->next_ns) {
			uint64_t until = fab->next_ns;
			struct timespec ts;

			if (fab->inline_rounds != seen_inline && until > now + FW_FABRIC_NAP_NS)
				until = now + FW_FABRIC_NAP_NS;
			seen_inline = fab->inline_rounds;
			ts = fw_monotonic_deadline(until - now);
			fab->sleep_ns = until;
			pthread_cond_timedwait(&sim->fab_cond, &sim->lock, &ts);
			continue;
		}
		fab->sleep_ns = 0;
		inline_spent = moved_bytes = 0;
		round_depth++;
		fabric_round_locked(sim);
		round_depth--;
	}
	fabric_alive(fab, 0);
	pthread_mutex_unlock(&sim->lock);
	return NULL;
}

/*
 * Whether the thread queueing a frame for sim runs sim's round itself
 * (rx_inline_locked()): it is in a round of another device (so it holds no
 * device lock and may block as a fabric thread does), not nested too deep,
 * and sim's links run with no thread in a round of sim (busy: its fabric
 * thread, or another sender's thread; a frame of a ring that comes back
 * to a device in this thread's nest finds it so) and no reset or destroy
 * under way (reset_req: they wait for busy to clear, and none starts after).
 */
static bool inline_ok_locked(struct maia_sim *sim)
{
	return round_depth < FW_FABRIC_INLINE_DEPTH && inline_spent < FW_FABRIC_INLINE_ROUNDS &&
	       moved_bytes < FW_FABRIC_INLINE_BYTES &&
	       __atomic_load_n(&inline_rx_on, __ATOMIC_RELAXED) && !sim->fab->busy &&
	       sim->fab->thread_started && !sim->stop &&
	       !__atomic_load_n(&sim->reset_req, __ATOMIC_ACQUIRE) && fw_links_run_locked(sim);
}

static bool rx_inline_ok_locked(struct maia_sim *sim)
{
	return round_depth && inline_ok_locked(sim);
}

/*
 * A frame just queued for sim, taken at once by this thread: a round of
 * sim's (links, transport, completions: what its fabric thread would have
 * done after a wake-up), sim->lock held on entry and return and dropped in
 * between as in any round; more rounds while frames came meanwhile (the
 * answers of the rounds this one nested found sim busy). The fabric thread,
 * asleep, is woken only if frames are left, or if the rounds left a
 * deadline before the one it sleeps to that is due within FW_FABRIC_NAP_NS
 * (a held message offered again) or more than that before it: a later one
 * (a retransmit timeout for the frame just sent) is met by its nap.
 */
static void rx_inline_locked(struct maia_sim *sim)
{
	struct fw_fabric *fab = sim->fab;
	uint64_t now;

	if (!round_depth)
		inline_spent = moved_bytes = 0;	/* a doorbell writer's, outermost */
	do {
		fab->inline_rounds++;
		inline_spent++;
		round_depth++;
		fabric_round_locked(sim);
		round_depth--;
	} while (fab->kicked && inline_ok_locked(sim));
	/* The last round's time: the fabric thread's nap is milliseconds. */
	now = fab->round_now;
	if (fab->kicked || (fab->next_ns < fab->sleep_ns && fab->next_ns < now + FW_FABRIC_NAP_NS) ||
	    fab->next_ns + FW_FABRIC_NAP_NS < fab->sleep_ns)
		pthread_cond_signal(&sim->fab_cond);
}

/*
 * Queues f (ours now) for the fabric thread, or drops and frees it; a
 * sender's round then runs sim's round itself when it may.
 */
static void rx_enqueue(struct maia_sim *sim, unsigned int port, struct rx_frame f)
{
	struct fw_fabric_port *p = &sim->fab->port[port];

	pthread_mutex_lock(&sim->lock);
	/* A port without firmware behind it is dark: it takes nothing, counts nothing. */
	if (f.data && sim->boot.status != MAIA_BOOT_STATUS_READY) {
		pthread_mutex_unlock(&sim->lock);
		rx_frame_free(&f);
		return;
	}
	/*
	 * DATA frames fill the queue up to MAIA_SIM_FABRIC_RXQ; the rest is for
	 * frames without payload (ACK, KEEPALIVE, HELLO), so that a flood of
	 * DATA the fabric thread has not caught up with never hides the acks
	 * and keepalives that say the peer is alive.
	 */
	if (!f.data || p->count == FW_FABRIC_RING ||
	    (f.len > MAIA_FABRIC_MIN_FRAME && p->count >= MAIA_SIM_FABRIC_RXQ)) {
		p->rx_queue_drops++;
		p->info.rx_queue_drops = p->rx_queue_drops;
		pthread_mutex_unlock(&sim->lock);
		if (f.data)
			rx_frame_free(&f);
		return;
	}
	p->ring[(p->head + p->count) % FW_FABRIC_RING] = f;
	p->count++;
	/* Sent by a round of a device of this process: that device is the peer. */
	if (round_sim && round_sim != sim && round_sim->fab &&
	    __atomic_load_n(&p->peer_uid, __ATOMIC_RELAXED) != round_sim->fab->uid)
		__atomic_store_n(&p->peer_uid, round_sim->fab->uid, __ATOMIC_RELAXED);
	if (rx_inline_ok_locked(sim))
		rx_inline_locked(sim);
	else
		fw_fabric_kick_locked(sim);
	pthread_mutex_unlock(&sim->lock);
}

void maia_sim_fabric_rx(struct maia_sim *sim, unsigned int port, const void *frame, size_t len)
{
	struct rx_frame f = { .len = len };
	uint8_t *copy = NULL;

	if (!sim->fab || port >= sim->fab->nports)
		return;
	if (len <= MAIA_FABRIC_BACKEND_MAX_FRAME)
		copy = fw_buf_alloc(len);
	if (copy)
		memcpy(copy, frame, len);
	f.data = copy;
	rx_enqueue(sim, port, f);
}

void maia_sim_fabric_rx_lent(struct maia_sim *sim, unsigned int port, const void *frame,
			     size_t len, void (*release)(void *opaque), void *opaque)
{
	struct rx_frame f = { .len = len, .data = frame, .release = release, .opaque = opaque };

	if (!sim->fab || port >= sim->fab->nports) {
		release(opaque);	/* ignored, as by maia_sim_fabric_rx() */
		return;
	}
	if (len > MAIA_FABRIC_BACKEND_MAX_FRAME) {
		release(opaque);
		f.data = NULL;		/* dropped and counted */
		f.release = NULL;
	}
	rx_enqueue(sim, port, f);
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

uint32_t *fw_fabric_fo_threshold_locked(struct maia_sim *sim, uint32_t offset)
{
	if (!sim->fab)
		return NULL;
	if (offset == MAIA_REG_FABRIC_FO_LAT_NS)
		return &sim->fab->fo_lat_ns;
	if (offset == MAIA_REG_FABRIC_FO_LOSS_PPM)
		return &sim->fab->fo_loss_ppm;
	return NULL;
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

void fw_fabric_defer_kicks(struct maia_sim *sim)
{
	if (sim->fab && !round_depth) {
		kicks_deferred = sim;
		kick_pending = false;
	}
}

/*
 * Whether every port whose link is UP is in `direct` (maia_sim_ops.
 * fabric_direct_ports): a doorbell writer's round then delivers its frames
 * into their receivers itself. A frame through a NIC would wait for QEMU's
 * main loop, which needs the lock the writer (a vCPU) holds: the round
 * would only delay the writer's next doorbell (Documentation/benchmarks.rst,
 * the net layer's 8-byte all-reduce pairs).
 */
static bool up_ports_direct_locked(const struct fw_fabric *fab, uint32_t direct)
{
	for (unsigned int i = 0; i < fab->nports; i++)
		if (fab->port[i].info.up && !(direct & (1u << i)))
			return false;
	return true;
}

void fw_fabric_end_deferred(struct maia_sim *sim, bool run_here)
{
	uint32_t direct = UINT32_MAX;

	if (kicks_deferred != sim)
		return;
	kicks_deferred = NULL;
	if (!kick_pending)
		return;
	kick_pending = false;
	/* Asked before sim->lock: the host's answer takes locks of its own. */
	if (run_here && sim->ops.fabric_direct_ports)
		direct = sim->ops.fabric_direct_ports(sim->opaque);
	pthread_mutex_lock(&sim->lock);
	if (sim->fab->kicked) {
		if (run_here && up_ports_direct_locked(sim->fab, direct) && inline_ok_locked(sim))
			rx_inline_locked(sim);
		else if (!sim->fab->busy)
			pthread_cond_signal(&sim->fab_cond);
	}
	pthread_mutex_unlock(&sim->lock);
}
