// SPDX-License-Identifier: MIT
/*
 * Fabric ports on struct maia_sim (fw_fabric_port.c): two devices in real
 * time, their fabric_tx callbacks wired to each other's maia_sim_fabric_rx()
 * directly (called from the sender's worker thread, which the library
 * allows: it holds no lock while calling fabric_tx). Checks that a device
 * whose firmware does not run is dark (takes no frame, brings no link up),
 * discovery once both are booted with the right peer serial and port and
 * one UP per port, the identity message over DATA frames, a reset taking a
 * link DOWN (and keeping it down until the next boot) and back UP in a new
 * session, dead-peer
 * detection after one device is destroyed, and that a device without
 * fabric ports has none. Waits poll maia_sim_fabric_port_info() with
 * generous bounds; nothing asserts tight timings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fw_image.h"
#include "maia/hw/fabric.h"
#include "maia/sim.h"
#include "tap.h"

#define HBM_SIZE	(1u << 20)
#define NPORTS		2u
/* Bound on a wait for an event: a hang guard, never a performance limit. */
#define WAIT_MS		30000u

/* One direction of a cable; to is NULL once unplugged. */
struct wire {
	pthread_mutex_t lock;		/* protects every field */
	pthread_cond_t idle;		/* sending dropped to 0 */
	struct maia_sim *to;
	unsigned int to_port;
	unsigned long frames;
	unsigned int sending;		/* frames being handed over, lock dropped */
};

struct node {
	struct maia_sim *sim;
	void *hbm;
	struct wire out[NPORTS];
};


static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int no_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static void no_irq(void *opaque, unsigned int vector)
{
	(void)opaque, (void)vector;
}

/* On the thread in the sending device's fabric round. */
static int wire_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	struct wire *w = &n->out[port];
	struct maia_sim *to;
	unsigned int to_port;
	int ret = -1;

	/*
	 * The frame is handed over with the wire's lock dropped: a thread in a
	 * round runs the receiver's round right there (fw_fabric_port.c,
	 * "Rounds without a wake-up"), whose sends take other wires' locks.
	 * No test lock nests, so ThreadSanitizer's lock-order checking sees
	 * the library's own locks only. unplug_to() waits for handers.
	 */
	pthread_mutex_lock(&w->lock);
	to = w->to;
	to_port = w->to_port;
	if (to) {
		w->sending++;
		w->frames++;
		ret = 0;
	}
	pthread_mutex_unlock(&w->lock);
	if (!to)
		return ret;
	maia_sim_fabric_rx(to, to_port, frame, len);
	pthread_mutex_lock(&w->lock);
	if (!--w->sending)
		pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

static const struct maia_sim_ops ops = {
	.dma_read = fw_image_dma_read,
	.dma_write = no_dma_write,
	.raise_irq = no_irq,
	.fabric_tx = wire_tx,
};

static int node_create(struct node *n, unsigned int ports, uint64_t serial)
{
	struct maia_sim_config cfg;

	memset(n, 0, sizeof(*n));
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_init(&n->out[i].lock, NULL);
		pthread_cond_init(&n->out[i].idle, NULL);
	}
	n->hbm = calloc(1, HBM_SIZE);
	maia_sim_config_defaults(&cfg);
	cfg.hbm = n->hbm;
	cfg.hbm_size = HBM_SIZE;
	cfg.clusters = 1;
	cfg.tiles_per_cluster = 1;
	cfg.sram_kib = 1024;
	cfg.worker_threads = 1;
	cfg.fabric_ports = ports;
	cfg.serial = serial;
	n->sim = maia_sim_create(&cfg, &ops, n);
	return n->sim ? 0 : -errno;
}

static void plug(struct node *a, unsigned int pa, struct node *b, unsigned int pb)
{
	pthread_mutex_lock(&a->out[pa].lock);
	a->out[pa].to = b->sim;
	a->out[pa].to_port = pb;
	pthread_mutex_unlock(&a->out[pa].lock);
	pthread_mutex_lock(&b->out[pb].lock);
	b->out[pb].to = a->sim;
	b->out[pb].to_port = pa;
	pthread_mutex_unlock(&b->out[pb].lock);
}

/* Nothing is sent to n after this returns. */
static void unplug_to(struct node *from, struct node *n)
{
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_lock(&from->out[i].lock);
		if (from->out[i].to == n->sim)
			from->out[i].to = NULL;
		/* No frame reaches n once unplugged. */
		while (from->out[i].sending)
			pthread_cond_wait(&from->out[i].idle, &from->out[i].lock);
		pthread_mutex_unlock(&from->out[i].lock);
	}
}

static void node_destroy(struct node *n)
{
	maia_sim_destroy(n->sim);
	n->sim = NULL;
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_destroy(&n->out[i].lock);
		pthread_cond_destroy(&n->out[i].idle);
	}
	free(n->hbm);
}

static struct maia_sim_fabric_port_info info(struct node *n, unsigned int port)
{
	struct maia_sim_fabric_port_info i;

	memset(&i, 0, sizeof(i));
	if (maia_sim_fabric_port_info(n->sim, port, &i))
		tap_ok(0, "port_info(%u) failed", port);
	return i;
}

typedef bool (*pred_fn)(const struct maia_sim_fabric_port_info *i, uint64_t arg);

/* Polls until pred holds or timeout_ms passes; returns the elapsed ms or -1. */
static long wait_for(struct node *n, unsigned int port, pred_fn pred, uint64_t arg,
		     unsigned int timeout_ms)
{
	uint64_t start = now_ms();

	for (;;) {
		struct maia_sim_fabric_port_info i = info(n, port);

		if (pred(&i, arg))
			return (long)(now_ms() - start);
		if (now_ms() - start > timeout_ms)
			return -1;
		usleep(2000);
	}
}

static bool is_up_ident(const struct maia_sim_fabric_port_info *i, uint64_t min_ident)
{
	return i->up && i->ident_rx >= min_ident;
}

static bool is_down(const struct maia_sim_fabric_port_info *i, uint64_t unused)
{
	(void)unused;
	return !i->up && i->dead_peer >= 1;
}

static bool has_link_ups(const struct maia_sim_fabric_port_info *i, uint64_t n)
{
	return i->up && i->link_ups >= n;
}

static bool has_tx_frames(const struct maia_sim_fabric_port_info *i, uint64_t n)
{
	return i->tx_frames >= n;
}

/* The peer acked n messages: an ack may still be on its way when the link is UP. */
static bool has_acked(const struct maia_sim_fabric_port_info *i, uint64_t n)
{
	return i->tx_msgs_acked >= n;
}

static bool has_rx_dropped(const struct maia_sim_fabric_port_info *i, uint64_t n)
{
	return i->rx_dropped >= n;
}

/* Port pa of a is cabled to port pb of b: both sides agree, both got the ident. */
static void check_pair(struct node *a, unsigned int pa, struct node *b, unsigned int pb,
		       uint64_t min_ident, const char *what)
{
	struct maia_sim_fabric_port_info ia = info(a, pa), ib = info(b, pb);

	tap_ok(ia.up && ib.up, "%s: port %u and peer port %u UP", what, pa, pb);
	tap_ok(ia.peer_serial == ib.serial && ia.peer_port == pb,
	       "%s: port %u sees peer %016llx port %u (want %016llx port %u)", what, pa,
	       (unsigned long long)ia.peer_serial, ia.peer_port,
	       (unsigned long long)ib.serial, pb);
	tap_ok(ib.peer_serial == ia.serial && ib.peer_port == pa,
	       "%s: peer port %u sees %016llx port %u", what, pb,
	       (unsigned long long)ib.peer_serial, ib.peer_port);
	tap_ok(ia.ident_rx >= min_ident && ia.ident_serial == ib.serial && ia.ident_port == pb,
	       "%s: port %u got the peer's identity message over DATA (%llu)", what, pa,
	       (unsigned long long)ia.ident_rx);
}

struct drain_arg {
	struct maia_sim *sim;
};

static void *drain_thread(void *p)
{
	struct drain_arg *d = p;

	maia_sim_drain(d->sim);
	return NULL;
}

static void test_no_ports(void)
{
	struct maia_sim_fabric_port_info i;
	struct node n;
	char frame[64] = { 0 };
	int err;

	tap_ok(node_create(&n, 0, 0) == 0, "device without fabric ports created");
	tap_ok(maia_sim_fabric_port_info(n.sim, 0, &i) == -EINVAL,
	       "no fabric ports: port_info(0) is -EINVAL");
	maia_sim_fabric_rx(n.sim, 0, frame, sizeof(frame));	/* ignored */
	maia_sim_drain(n.sim);
	tap_ok(1, "no fabric ports: fabric_rx ignored, drain returns");
	node_destroy(&n);

	err = node_create(&n, MAIA_FABRIC_MAX_PORTS + 1, 0);
	tap_ok(err == -EINVAL, "fabric_ports > MAIA_FABRIC_MAX_PORTS rejected (%d)", err);
	if (!err)
		maia_sim_destroy(n.sim);
	free(n.hbm);
}

static void test_two_devices(void)
{
	struct node a, b;
	struct maia_sim_fabric_port_info ia, ib;
	struct drain_arg darg;
	pthread_t th;
	struct timespec ts;
	uint32_t old_epoch;
	uint64_t b_ups, old_downs;
	long t;
	uint8_t big[64];

	tap_ok(node_create(&a, NPORTS, 0xa11ce00000000001ull) == 0, "device A (2 ports) created");
	tap_ok(node_create(&b, NPORTS, 0) == 0, "device B (2 ports, automatic serial) created");
	ib = info(&b, 0);
	tap_ok((ib.serial & 0xffff000000000000ull) == MAIA_SIM_SERIAL_AUTO,
	       "B's automatic serial %016llx", (unsigned long long)ib.serial);
	tap_ok(info(&a, 0).serial == 0xa11ce00000000001ull, "A's configured serial");

	/* Crossed cables: A.0 - B.1, A.1 - B.0. */
	plug(&a, 0, &b, 1);
	plug(&a, 1, &b, 0);
	/* A runs, B has no firmware yet: A's HELLOs reach B, which takes none. */
	tap_ok(fw_image_boot(a.sim), "A booted");
	tap_ok(wait_for(&a, 0, has_tx_frames, 2, WAIT_MS) >= 0, "A port 0 sends HELLOs");
	ib = info(&b, 1);
	ia = info(&a, 0);
	tap_ok(!ia.up && !ib.up && ib.rx_frames == 0 && ib.rx_queue_drops == 0 &&
	       ib.rx_dropped == 0 && ib.link_ups == 0,
	       "B without firmware is dark: port 1 took none of A's %llu frames, no link UP",
	       (unsigned long long)ia.tx_frames);
	tap_ok(fw_image_boot(b.sim), "B booted");
	t = wait_for(&a, 0, is_up_ident, 1, WAIT_MS);
	tap_ok(t >= 0, "A port 0 UP with the peer's identity after %ld ms", t);
	tap_ok(wait_for(&a, 1, is_up_ident, 1, WAIT_MS) >= 0, "A port 1 UP");
	tap_ok(wait_for(&b, 0, is_up_ident, 1, WAIT_MS) >= 0, "B port 0 UP");
	tap_ok(wait_for(&b, 1, is_up_ident, 1, WAIT_MS) >= 0, "B port 1 UP");
	check_pair(&a, 0, &b, 1, 1, "A.0-B.1");
	check_pair(&a, 1, &b, 0, 1, "A.1-B.0");
	check_pair(&b, 1, &a, 0, 1, "B.1-A.0");
	tap_ok(wait_for(&a, 0, has_acked, 1, WAIT_MS) >= 0, "A port 0: its identity message was acked");
	for (unsigned int p = 0; p < NPORTS; p++) {
		ia = info(&a, p);
		ib = info(&b, p);
		tap_ok(ia.link_ups == 1 && ia.link_downs == 0 && ib.link_ups == 1 &&
		       ib.link_downs == 0,
		       "port %u of A and of B: one UP and no DOWN after both booted (A %llu/%llu, B %llu/%llu)",
		       p, (unsigned long long)ia.link_ups, (unsigned long long)ia.link_downs,
		       (unsigned long long)ib.link_ups, (unsigned long long)ib.link_downs);
	}
	ia = info(&a, 0);

	/* Fabric timers are not work for drain(). */
	darg.sim = a.sim;
	pthread_create(&th, NULL, drain_thread, &darg);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	tap_ok(pthread_timedjoin_np(th, NULL, &ts) == 0, "drain returns with links up");

	/* Garbage and oversize frames are counted, not fatal. */
	memset(big, 0xee, sizeof(big));
	maia_sim_fabric_rx(a.sim, 0, big, sizeof(big));
	{
		uint8_t *huge = calloc(1, MAIA_FABRIC_BACKEND_MAX_FRAME + 1);

		maia_sim_fabric_rx(a.sim, 0, huge, MAIA_FABRIC_BACKEND_MAX_FRAME + 1);
		free(huge);
	}
	tap_ok(info(&a, 0).rx_queue_drops >= 1, "oversize frame dropped at the queue");
	tap_ok(wait_for(&a, 0, has_rx_dropped, ia.rx_dropped + 1, WAIT_MS) >= 0,
	       "garbage frame dropped by the link engine");
	tap_ok(info(&a, 0).up, "link still UP");

	/* Reset of A: DOWN at once with a new epoch, and UP again after its boot. */
	ia = info(&a, 0);
	old_epoch = ia.epoch;
	old_downs = ia.link_downs;
	b_ups = info(&b, 1).link_ups;
	maia_sim_reset(a.sim);
	ia = info(&a, 0);
	tap_ok(!ia.up && ia.epoch != old_epoch && ia.link_downs == old_downs + 1,
	       "reset: A port 0 went DOWN once (link_downs %llu -> %llu), epoch %u -> %u",
	       (unsigned long long)old_downs, (unsigned long long)ia.link_downs, old_epoch,
	       ia.epoch);
	tap_ok(fw_image_boot(a.sim), "reset: A booted again");
	t = wait_for(&a, 0, is_up_ident, 2, WAIT_MS);
	tap_ok(t >= 0, "reset: A port 0 UP again after %ld ms, identity re-sent", t);
	tap_ok(wait_for(&b, 1, has_link_ups, b_ups + 1, WAIT_MS) >= 0,
	       "reset: B port 1 saw the new session (link_ups %llu -> %llu)",
	       (unsigned long long)b_ups, (unsigned long long)info(&b, 1).link_ups);
	tap_ok(wait_for(&b, 0, is_up_ident, 1, WAIT_MS) >= 0 && wait_for(&b, 1, is_up_ident, 1, WAIT_MS) >= 0 &&
	       wait_for(&a, 1, is_up_ident, 1, WAIT_MS) >= 0, "reset: all ports UP");
	check_pair(&a, 0, &b, 1, 2, "after reset A.0-B.1");
	check_pair(&b, 0, &a, 1, 1, "after reset B.0-A.1");

	/* Destroy B: A declares it dead within the dead-peer timeout (bound 3x). */
	unplug_to(&a, &b);
	unplug_to(&b, &a);
	node_destroy(&b);
	t = wait_for(&a, 0, is_down, 0, WAIT_MS);
	tap_ok(t >= 0,
	       "B destroyed: A port 0 DOWN (dead peer) after %ld ms (timeout %u ms)",
	       t, MAIA_FABRIC_DEAD_MS);
	tap_ok(wait_for(&a, 1, is_down, 0, WAIT_MS) >= 0,
	       "B destroyed: A port 1 DOWN (dead peer)");
	ia = info(&a, 0);
	tap_ok(ia.tx_errors >= 1, "A's frames into the unplugged cable count as tx errors (%llu)",
	       (unsigned long long)ia.tx_errors);
	node_destroy(&a);
}

int main(void)
{
	test_no_ports();
	test_two_devices();
	return tap_done();
}
