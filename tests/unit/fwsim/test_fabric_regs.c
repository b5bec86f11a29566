// SPDX-License-Identifier: MIT
/*
 * The BAR0 fabric register block (fw_fabric_regs.c) as a driver sees it:
 * two devices whose fabric_tx callbacks call each other's
 * maia_sim_fabric_rx(), read only through maia_sim_mmio_read(). Checks
 * MAIA_CAP_FABRIC and the device registers, each port UP with the peer's
 * serial and port, 64-bit counters read HI/LO/HI that move with traffic
 * and agree with maia_sim_fabric_port_info(), MAIA_INT_FABRIC_LINK and
 * LINK_EVENTS on every link change (masked: status without a vector), no
 * link before both firmwares run and so no DOWN after a clean boot (one UP
 * per port), a reset keeping the counters and raising nothing, a reset
 * device's links DOWN until its next boot, injected drops, and that
 * unmapped offsets read 0 with a guest error, and SPURIOUS_RTO counting a
 * retransmit timeout that the test made spurious by holding the peer's
 * acks until the sender resent (then delivering them late, in order).
 * The reference is the link
 * engine's own snapshot and the cabling the test chose. Waits are polls
 * for an event with a generous bound (20 s), never a timing assertion.
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
#include "maia/hw/regs.h"
#include "maia/sim.h"
#include "tap.h"

#define HBM_SIZE	(1u << 20)
#define NPORTS		2u
#define WAIT_MS		20000u

#define WIRE_HELD_MAX	64u

struct wire {
	pthread_mutex_t lock;		/* protects every field */
	pthread_cond_t cond;		/* sending went to 0 */
	struct maia_sim *to;		/* NULL: unplugged */
	unsigned int to_port;
	unsigned int sending;		/* frames being handed over, lock dropped */
	/* hold: frames other than HELLO are kept (late, not lost) until released. */
	bool hold;
	unsigned int nheld;
	uint8_t *held[WIRE_HELD_MAX];
	size_t held_len[WIRE_HELD_MAX];
};

struct node {
	struct maia_sim *sim;
	void *hbm;
	struct wire out[NPORTS];
	unsigned int event_irqs;	/* MAIA_VEC_EVENT raised (atomic) */
	unsigned int guest_errors;	/* atomic */
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

static void count_irq(void *opaque, unsigned int vector)
{
	struct node *n = opaque;

	if (vector == MAIA_VEC_EVENT)
		__atomic_add_fetch(&n->event_irqs, 1, __ATOMIC_RELAXED);
}

static void count_guest_error(void *opaque, const char *msg)
{
	struct node *n = opaque;

	(void)msg;
	__atomic_add_fetch(&n->guest_errors, 1, __ATOMIC_RELAXED);
}

/*
 * Hands frames to w's receiver with w->lock dropped (held on entry and
 * return): a thread in a round runs the receiver's round right there
 * (fw_fabric_port.c, "Rounds without a wake-up"), whose sends take the
 * other wire's lock. No wire lock nests, so ThreadSanitizer's lock-order
 * checking sees the library's own locks only. unplug() waits for it.
 */
static void hand_over_locked(struct wire *w, uint8_t *const *frames, const size_t *lens,
			     unsigned int n)
{
	struct maia_sim *sim = w->to;
	unsigned int port = w->to_port;

	w->sending++;
	pthread_mutex_unlock(&w->lock);
	for (unsigned int i = 0; i < n; i++)
		maia_sim_fabric_rx(sim, port, frames[i], lens[i]);
	pthread_mutex_lock(&w->lock);
	if (!--w->sending)
		pthread_cond_broadcast(&w->cond);
}

static int wire_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	struct wire *w = &n->out[port];
	uint8_t *f = (uint8_t *)frame;
	int ret = -1;

	pthread_mutex_lock(&w->lock);
	if (w->to && w->hold && len > MAIA_ETH_HLEN + 1 &&
	    ((const uint8_t *)frame)[MAIA_ETH_HLEN + 1] != MAIA_FABRIC_HELLO) {
		if (w->nheld < WIRE_HELD_MAX) {
			w->held[w->nheld] = malloc(len);
			memcpy(w->held[w->nheld], frame, len);
			w->held_len[w->nheld++] = len;
		}
		ret = 0;
	} else if (w->to) {
		hand_over_locked(w, &f, &len, 1);
		ret = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

static const struct maia_sim_ops ops = {
	.dma_read = fw_image_dma_read,
	.dma_write = no_dma_write,
	.raise_irq = count_irq,
	.guest_error = count_guest_error,
	.fabric_tx = wire_tx,
};

static int node_create(struct node *n, unsigned int ports, uint64_t serial,
		       uint32_t drop_ppm)
{
	struct maia_sim_config cfg;

	memset(n, 0, sizeof(*n));
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_init(&n->out[i].lock, NULL);
		pthread_cond_init(&n->out[i].cond, NULL);
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
	for (unsigned int i = 0; i < ports; i++) {
		cfg.fabric_drop_ppm[i] = drop_ppm;
		cfg.fabric_drop_seed[i] = 42 + i;
	}
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

/*
 * Stop holding: what was held arrives now, in the order it was sent. The
 * wire holds on while they are handed over (lock dropped), so a frame sent
 * meanwhile is held too and arrives after them.
 */
static unsigned int release(struct wire *w)
{
	uint8_t *frames[WIRE_HELD_MAX];
	size_t lens[WIRE_HELD_MAX];
	unsigned int n = 0;

	pthread_mutex_lock(&w->lock);
	while (w->nheld) {
		unsigned int k = w->nheld;

		memcpy(frames, w->held, k * sizeof(frames[0]));
		memcpy(lens, w->held_len, k * sizeof(lens[0]));
		w->nheld = 0;
		if (w->to)
			hand_over_locked(w, frames, lens, k);
		for (unsigned int i = 0; i < k; i++)
			free(frames[i]);
		n += k;
	}
	w->hold = false;
	pthread_mutex_unlock(&w->lock);
	return n;
}

static unsigned int held(struct wire *w)
{
	unsigned int n;

	pthread_mutex_lock(&w->lock);
	n = w->nheld;
	pthread_mutex_unlock(&w->lock);
	return n;
}

static void unplug(struct node *n)
{
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_lock(&n->out[i].lock);
		n->out[i].to = NULL;
		/* No frame reaches the receiver once this returns. */
		while (n->out[i].sending)
			pthread_cond_wait(&n->out[i].cond, &n->out[i].lock);
		pthread_mutex_unlock(&n->out[i].lock);
	}
}

static void node_destroy(struct node *n)
{
	maia_sim_destroy(n->sim);
	n->sim = NULL;
	for (unsigned int i = 0; i < NPORTS; i++) {
		pthread_mutex_destroy(&n->out[i].lock);
		pthread_cond_destroy(&n->out[i].cond);
	}
	free(n->hbm);
}

static uint32_t rd(struct node *n, uint32_t off)
{
	return maia_sim_mmio_read(n->sim, off);
}

/* A 64-bit register the way a driver must read it: HI, LO, HI again. */
static uint64_t rd64(struct node *n, uint32_t off)
{
	uint32_t hi, lo;

	do {
		hi = rd(n, off + 4);
		lo = rd(n, off);
	} while (rd(n, off + 4) != hi);
	return (uint64_t)hi << 32 | lo;
}

static uint64_t port_reg64(struct node *n, unsigned int p, uint32_t reg)
{
	return rd64(n, MAIA_REG_FPORT(p, reg));
}

static bool port_up(struct node *n, unsigned int p)
{
	return rd(n, MAIA_REG_FPORT(p, MAIA_FPORT_STATE)) & MAIA_FPORT_STATE_UP;
}

static bool wait_up(struct node *n, unsigned int p)
{
	uint64_t start = now_ms();

	while (!port_up(n, p)) {
		if (now_ms() - start > WAIT_MS)
			return false;
		usleep(2000);
	}
	return true;
}

/* Waits until LINK_EVENTS reaches min; returns it. */
static uint32_t wait_events(struct node *n, uint32_t min)
{
	uint64_t start = now_ms();
	uint32_t ev;

	while ((ev = rd(n, MAIA_REG_FABRIC_LINK_EVENTS)) < min && now_ms() - start <= WAIT_MS)
		usleep(2000);
	return ev;
}

/*
 * Waits until more than min event vectors were raised: the worker raises
 * the vector just after it publishes the registers, not with them.
 */
static unsigned int wait_irqs(struct node *n, unsigned int min)
{
	uint64_t start = now_ms();
	unsigned int irqs;

	while ((irqs = __atomic_load_n(&n->event_irqs, __ATOMIC_RELAXED)) <= min &&
	       now_ms() - start <= WAIT_MS)
		usleep(2000);
	return irqs;
}

static uint64_t serial_of(struct node *n)
{
	return (uint64_t)rd(n, MAIA_REG_FABRIC_SERIAL_HI) << 32 | rd(n, MAIA_REG_FABRIC_SERIAL_LO);
}

/*
 * LINK_EVENTS and the per-port ups + downs from one quiet moment: read the
 * device register before and after the ports and retry if it moved.
 */
static void link_events_consistent(struct node *n, uint32_t *events, uint64_t *sum)
{
	uint32_t before;

	do {
		before = rd(n, MAIA_REG_FABRIC_LINK_EVENTS);
		*sum = 0;
		for (unsigned int p = 0; p < NPORTS; p++)
			*sum += rd(n, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS)) +
				rd(n, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_DOWNS));
		*events = rd(n, MAIA_REG_FABRIC_LINK_EVENTS);
	} while (*events != before);
}

static void test_no_ports(void)
{
	struct node n;
	unsigned int errs;

	tap_ok(node_create(&n, 0, 0, 0) == 0, "device without fabric ports");
	tap_ok(!(rd(&n, MAIA_REG_CAPS) & MAIA_CAP_FABRIC), "no ports: MAIA_CAP_FABRIC clear");
	errs = n.guest_errors;
	tap_ok(rd(&n, MAIA_REG_FABRIC_PORTS) == 0 && serial_of(&n) == 0 &&
	       rd(&n, MAIA_REG_FABRIC_LINK_EVENTS) == 0 && rd(&n, MAIA_REG_FABRIC_WINDOWS) == 0,
	       "no ports: PORTS, SERIAL, LINK_EVENTS, WINDOWS read 0");
	tap_ok(n.guest_errors == errs, "no ports: the device registers are mapped (no guest error)");
	tap_ok(rd(&n, MAIA_REG_FPORT(0, MAIA_FPORT_MTU)) == 0 && n.guest_errors == errs + 1,
	       "no ports: port 0's block is unmapped (0, guest error)");
	node_destroy(&n);
}

static void test_registers(void)
{
	const uint64_t sa = 0xa11ce00000000001ull, sb = 0xb0b0000000000002ull;
	struct maia_sim_fabric_port_info ia;
	struct node a, b;
	unsigned int errs, irqs;
	uint64_t tx, rx, txb, rxb, sum;
	uint32_t ev, ev0;
	bool ok;

	tap_ok(node_create(&a, NPORTS, sa, 0) == 0 && node_create(&b, NPORTS, sb, 0) == 0,
	       "two devices with 2 ports");
	tap_ok(rd(&a, MAIA_REG_CAPS) & MAIA_CAP_FABRIC, "MAIA_CAP_FABRIC set");
	tap_ok(rd(&a, MAIA_REG_REVISION) >= MAIA_HW_REVISION_FABRIC, "revision >= 1.3");
	tap_ok(rd(&a, MAIA_REG_FABRIC_PORTS) == NPORTS, "PORTS = %u", NPORTS);
	tap_ok(rd(&a, MAIA_REG_FABRIC_WINDOWS) == MAIA_FABRIC_MAX_WINDOWS, "WINDOWS = %u",
	       MAIA_FABRIC_MAX_WINDOWS);
	tap_ok(serial_of(&a) == sa && serial_of(&b) == sb, "SERIAL_LO/HI: the configured serials");
	tap_ok(!port_up(&a, 0) && !port_up(&a, 1), "unplugged: ports DOWN");
	tap_ok(rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_PEER_SERIAL_LO)) == 0 &&
	       rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_PEER_PORT)) == 0,
	       "DOWN: peer registers read 0");
	tap_ok(rd(&a, MAIA_REG_FPORT(1, MAIA_FPORT_MTU)) == MAIA_FABRIC_MSG_MAX_DATA,
	       "MTU = %u", MAIA_FABRIC_MSG_MAX_DATA);

	/* Ring cabling of two devices: A.0 -> B.1 and B.0 -> A.1. */
	plug(&a, 0, &b, 1);
	plug(&b, 0, &a, 1);
	/* Cabled, no firmware on either end: nothing runs the links yet. */
	tap_ok(port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) == 0 &&
	       port_reg64(&b, 0, MAIA_FPORT_TX_FRAMES) == 0,
	       "no firmware: the ports send nothing");
	tap_ok(fw_image_boot(a.sim) && fw_image_boot(b.sim), "both devices booted");
	ok = wait_up(&a, 0) && wait_up(&a, 1) && wait_up(&b, 0) && wait_up(&b, 1);
	tap_ok(ok, "all four ports UP");
	ok = true;
	for (unsigned int p = 0; p < NPORTS; p++)
		ok = ok && rd(&a, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS)) == 1 &&
		     rd(&a, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_DOWNS)) == 0 &&
		     rd(&b, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS)) == 1 &&
		     rd(&b, MAIA_REG_FPORT(p, MAIA_FPORT_LINK_DOWNS)) == 0;
	tap_ok(ok, "clean boot: every port LINK_UPS 1, LINK_DOWNS 0");
	tap_ok(rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_PEER_SERIAL_LO)) == (uint32_t)sb &&
	       rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_PEER_SERIAL_HI)) == (uint32_t)(sb >> 32) &&
	       rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_PEER_PORT)) == 1,
	       "A port 0 sees B's serial, port 1");
	tap_ok(rd(&a, MAIA_REG_FPORT(1, MAIA_FPORT_PEER_SERIAL_LO)) == (uint32_t)sb &&
	       rd(&b, MAIA_REG_FPORT(1, MAIA_FPORT_PEER_SERIAL_LO)) == (uint32_t)sa &&
	       rd(&b, MAIA_REG_FPORT(1, MAIA_FPORT_PEER_SERIAL_HI)) == (uint32_t)(sa >> 32) &&
	       rd(&a, MAIA_REG_FPORT(1, MAIA_FPORT_PEER_PORT)) == 0 &&
	       rd(&b, MAIA_REG_FPORT(1, MAIA_FPORT_PEER_PORT)) == 0,
	       "A port 1 and B port 1 see port 0 of the other device");
	tap_ok(rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_LINK_UPS)) >= 1, "LINK_UPS counts");

	/* Each port's first UP is a link event; every event asserted the cause. */
	ev = wait_events(&a, NPORTS);
	tap_ok(ev >= NPORTS, "LINK_EVENTS %u >= %u after both ports came UP", ev, NPORTS);
	link_events_consistent(&a, &ev, &sum);
	tap_ok(ev == sum, "LINK_EVENTS (%u) = sum of LINK_UPS + LINK_DOWNS (%llu)", ev,
	       (unsigned long long)sum);
	tap_ok(rd(&a, MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK, "INT_STATUS has FABRIC_LINK");
	tap_ok(wait_irqs(&a, 0) >= 1, "the event vector was raised (%u)", a.event_irqs);

	/* Counters: they move with traffic and match the engine's snapshot. */
	tx = port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES);
	txb = port_reg64(&a, 0, MAIA_FPORT_TX_BYTES);
	rx = port_reg64(&a, 1, MAIA_FPORT_RX_FRAMES);
	rxb = port_reg64(&a, 1, MAIA_FPORT_RX_BYTES);
	tap_ok(tx >= 1 && txb >= tx * MAIA_FABRIC_MIN_FRAME && rx >= 1 &&
	       rxb >= rx * MAIA_FABRIC_MIN_FRAME,
	       "TX/RX frames and bytes: %llu/%llu, %llu/%llu (>= one minimal frame each)",
	       (unsigned long long)tx, (unsigned long long)txb, (unsigned long long)rx,
	       (unsigned long long)rxb);
	{
		uint64_t start = now_ms();

		while (port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) == tx && now_ms() - start <= WAIT_MS)
			usleep(5000);
	}
	tap_ok(port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) > tx,
	       "TX_FRAMES moves (keepalives on an idle link)");
	maia_sim_fabric_port_info(a.sim, 0, &ia);
	tap_ok(port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) >= ia.tx_frames &&
	       port_reg64(&a, 0, MAIA_FPORT_RETRANSMITS) >= ia.retransmits &&
	       port_reg64(&a, 0, MAIA_FPORT_INJECTED_DROPS) == 0 &&
	       port_reg64(&a, 0, MAIA_FPORT_NAK_TX) == 0 && port_reg64(&a, 0, MAIA_FPORT_NAK_RX) == 0 &&
	       port_reg64(&a, 1, MAIA_FPORT_LINK_NAK_TX) == 0 &&
	       port_reg64(&a, 1, MAIA_FPORT_RX_HELD) == 0,
	       "counters agree with port_info (no injection, no NAK, no gap yet)");

	/* Garbage on the wire: RX_DROPS. */
	{
		uint8_t junk[80];
		uint64_t drops = port_reg64(&a, 1, MAIA_FPORT_RX_DROPS), start = now_ms();

		memset(junk, 0xee, sizeof(junk));
		maia_sim_fabric_rx(a.sim, 1, junk, sizeof(junk));
		while (port_reg64(&a, 1, MAIA_FPORT_RX_DROPS) == drops && now_ms() - start <= WAIT_MS)
			usleep(2000);
		/* >=: a retransmission after a slow round may be dropped as a duplicate. */
		tap_ok(port_reg64(&a, 1, MAIA_FPORT_RX_DROPS) >= drops + 1,
		       "a garbage frame counts in RX_DROPS");
	}

	/* Unmapped offsets: 0 and a guest error; writes are ignored. */
	errs = a.guest_errors;
	tap_ok(rd(&a, MAIA_REG_FPORT(NPORTS, MAIA_FPORT_STATE)) == 0, "port %u's block reads 0",
	       NPORTS);
	tap_ok(rd(&a, MAIA_REG_FPORT(NPORTS, MAIA_FPORT_RX_HELD)) == 0 &&
	       rd(&a, MAIA_REG_FPORT(11, 0x7cu)) == 0 && rd(&a, 0x081cu) == 0 &&
	       rd(&a, 0x0ffcu) == 0, "holes in the block read 0");
	tap_ok(a.guest_errors == errs + 5, "each unmapped read is a guest error (%u)",
	       a.guest_errors - errs);
	maia_sim_mmio_write(a.sim, MAIA_REG_FABRIC_PORTS, 7);
	maia_sim_mmio_write(a.sim, MAIA_REG_FPORT(0, MAIA_FPORT_STATE), 0);
	tap_ok(rd(&a, MAIA_REG_FABRIC_PORTS) == NPORTS && port_up(&a, 0) &&
	       a.guest_errors == errs + 7, "writes to the read-only block ignored, with a guest error");

	/* 1.10: the failover thresholds, the block's only writable registers. */
	errs = a.guest_errors;
	ok = rd(&a, MAIA_REG_FABRIC_FO_LAT_NS) == MAIA_FABRIC_FO_LAT_NS_DEFAULT &&
	     rd(&a, MAIA_REG_FABRIC_FO_LOSS_PPM) == MAIA_FABRIC_FO_LOSS_PPM_DEFAULT;
	maia_sim_mmio_write(a.sim, MAIA_REG_FABRIC_FO_LAT_NS, 7000);
	maia_sim_mmio_write(a.sim, MAIA_REG_FABRIC_FO_LOSS_PPM, 0);
	ok &= rd(&a, MAIA_REG_FABRIC_FO_LAT_NS) == 7000 && rd(&a, MAIA_REG_FABRIC_FO_LOSS_PPM) == 0;
	maia_sim_mmio_write(a.sim, MAIA_REG_FABRIC_FO_LAT_NS, MAIA_FABRIC_FO_LAT_NS_DEFAULT);
	maia_sim_mmio_write(a.sim, MAIA_REG_FABRIC_FO_LOSS_PPM, MAIA_FABRIC_FO_LOSS_PPM_DEFAULT);
	ok &= rd(&a, MAIA_REG_FPORT_FO(0, MAIA_FPORT_FO_STATE)) == 0 &&
	      rd(&a, MAIA_REG_FPORT_FO(0, MAIA_FPORT_FO_FAILOVERS)) == 0 &&
	      rd(&a, MAIA_REG_FPORT_Q(0, MAIA_FPORT_Q_LAT_NS)) != 0;
	tap_ok(ok && a.guest_errors == errs,
	       "failover thresholds 5000 ns / 100 ppm by default, written and read back; port 0 not avoided, latency %u ns",
	       rd(&a, MAIA_REG_FPORT_Q(0, MAIA_FPORT_Q_LAT_NS)));
	rd(&a, MAIA_REG_FPORT_FO(NPORTS, MAIA_FPORT_FO_STATE));
	tap_ok(a.guest_errors == errs + 1, "port %u's failover block is unmapped (a guest error)",
	       NPORTS);

	/* 1.12: spurious retransmit timeouts, a 32-bit register per port (the snapshot's). */
	errs = a.guest_errors;
	maia_sim_fabric_port_info(a.sim, 0, &ia);
	ok = rd(&a, MAIA_REG_REVISION) >= MAIA_HW_REVISION_SPURIOUS_RTO &&
	     rd(&a, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)) >= (uint32_t)ia.spurious_rto;
	maia_sim_fabric_port_info(a.sim, 1, &ia);
	ok &= rd(&a, MAIA_REG_FPORT_R(1, MAIA_FPORT_R_SPURIOUS_RTO)) >= (uint32_t)ia.spurious_rto;
	tap_ok(ok && a.guest_errors == errs, "SPURIOUS_RTO mapped on both ports, as port_info");
	rd(&a, MAIA_REG_FPORT_R(NPORTS, MAIA_FPORT_R_SPURIOUS_RTO));
	tap_ok(a.guest_errors == errs + 1, "port %u's SPURIOUS_RTO is unmapped (a guest error)",
	       NPORTS);

	/* B resets: A's links see a new session, counted and interrupted. */
	maia_sim_mmio_write(a.sim, MAIA_REG_INT_STATUS, MAIA_INT_FABRIC_LINK);
	tap_ok(!(rd(&a, MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK), "FABRIC_LINK cleared (W1C)");
	link_events_consistent(&a, &ev0, &sum);
	irqs = __atomic_load_n(&a.event_irqs, __ATOMIC_RELAXED);
	maia_sim_reset(b.sim);
	tap_ok(!port_up(&b, 0) && !port_up(&b, 1), "B's reset: its ports DOWN until it boots");
	tap_ok(fw_image_boot(b.sim), "B booted again");
	ev = wait_events(&a, ev0 + 1);
	tap_ok(ev > ev0, "B's reset: A's LINK_EVENTS %u -> %u", ev0, ev);
	tap_ok(rd(&a, MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK,
	       "B's reset: A's FABRIC_LINK asserted again");
	tap_ok(wait_irqs(&a, irqs) > irqs, "and the vector raised");
	tap_ok(wait_up(&a, 0) && wait_up(&a, 1) && wait_up(&b, 0) && wait_up(&b, 1),
	       "all ports UP again");

	/* A's own reset: counters since power-on, no cause after it. */
	tx = port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES);
	link_events_consistent(&a, &ev0, &sum);
	maia_sim_reset(a.sim);
	tap_ok(port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) >= tx &&
	       rd(&a, MAIA_REG_FABRIC_LINK_EVENTS) > ev0,
	       "A's reset keeps the counters; its DOWNs count as link events");
	tap_ok(fw_image_boot(a.sim), "A booted again");
	tap_ok(wait_up(&a, 0) && wait_up(&a, 1), "A's ports UP after its reset and boot");

	/*
	 * Masked: the cause is latched; unmasking it raises the vector at once
	 * (in the writer's thread). Whether a vector came while masked is not
	 * checked: one from the last UP may still be on its way.
	 */
	maia_sim_mmio_write(a.sim, MAIA_REG_INT_MASK, MAIA_INT_FABRIC_LINK);
	maia_sim_mmio_write(a.sim, MAIA_REG_INT_STATUS, MAIA_INT_FABRIC_LINK);
	link_events_consistent(&a, &ev0, &sum);
	irqs = __atomic_load_n(&a.event_irqs, __ATOMIC_RELAXED);
	unplug(&b);
	unplug(&a);
	ev = wait_events(&a, ev0 + NPORTS);
	tap_ok(ev >= ev0 + NPORTS && !port_up(&a, 0) && !port_up(&a, 1),
	       "unplugged: both ports DOWN by dead peer, LINK_EVENTS %u -> %u", ev0, ev);
	tap_ok(rd(&a, MAIA_REG_FPORT(0, MAIA_FPORT_DEAD_PEER)) >= 1, "DEAD_PEER counts");
	tap_ok(rd(&a, MAIA_REG_INT_STATUS) & MAIA_INT_FABRIC_LINK, "masked: FABRIC_LINK latched");
	irqs = __atomic_load_n(&a.event_irqs, __ATOMIC_RELAXED);
	maia_sim_mmio_write(a.sim, MAIA_REG_INT_MASK, 0);
	tap_ok(__atomic_load_n(&a.event_irqs, __ATOMIC_RELAXED) > irqs,
	       "unmasking the latched cause raises the event vector");
	node_destroy(&a);
	node_destroy(&b);
}

/* Every transmitted frame dropped: the link never comes up, all counted. */
static void test_injected_drops(void)
{
	struct node a, b;
	uint64_t start, tx, inj;

	tap_ok(node_create(&a, NPORTS, 0xa, 1000000) == 0 && node_create(&b, NPORTS, 0xb, 0) == 0,
	       "A drops every frame it sends (drop_ppm 1000000)");
	plug(&a, 0, &b, 1);
	tap_ok(fw_image_boot(a.sim) && fw_image_boot(b.sim), "both booted");
	start = now_ms();
	while (port_reg64(&a, 0, MAIA_FPORT_INJECTED_DROPS) < 3 && now_ms() - start <= WAIT_MS)
		usleep(2000);
	do {
		tx = port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES);
		inj = port_reg64(&a, 0, MAIA_FPORT_INJECTED_DROPS);
	} while (port_reg64(&a, 0, MAIA_FPORT_TX_FRAMES) != tx);
	tap_ok(inj >= 3 && inj == tx, "INJECTED_DROPS (%llu) = TX_FRAMES (%llu)",
	       (unsigned long long)inj, (unsigned long long)tx);
	tap_ok(port_reg64(&b, 1, MAIA_FPORT_RX_FRAMES) == 0 && !port_up(&b, 1),
	       "B received nothing and stays DOWN");
	unplug(&a);
	unplug(&b);
	node_destroy(&a);
	node_destroy(&b);
	tap_ok(node_create(&a, 1, 0, 1000001) == -EINVAL, "drop_ppm > 1000000 rejected");
	free(a.hbm);
}

/*
 * A timeout that was not a loss: B's acks of A's first DATA (the identity
 * message every link UP sends) are held until A has sent it again and B
 * has dropped that copy as a duplicate, then delivered late. A undoes the
 * timeout: SPURIOUS_RTO counts it, as its port_info says. B's own identity
 * message was held too: if B timed out meanwhile, that was spurious as well,
 * so B counts at most the timeouts it had (its RETRANSMITS).
 */
static void test_spurious_rto(void)
{
	struct maia_sim_fabric_port_info ia;
	struct node a, b;
	uint64_t start;
	unsigned int n = 0;
	bool ok;

	tap_ok(node_create(&a, 1, 0xa, 0) == 0 && node_create(&b, 1, 0xb, 0) == 0,
	       "two devices, one port each");
	plug(&a, 0, &b, 0);
	b.out[0].hold = true;
	tap_ok(fw_image_boot(a.sim) && fw_image_boot(b.sim), "both booted, B's acks held");
	start = now_ms();
	do {
		ok = port_reg64(&a, 0, MAIA_FPORT_RETRANSMITS) >= 1 &&
		     port_reg64(&b, 0, MAIA_FPORT_RX_DROPS) >= 1 && held(&b.out[0]) >= 2;
		if (!ok)
			usleep(1000);
	} while (!ok && now_ms() - start <= WAIT_MS);
	tap_ok(ok && rd(&a, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)) == 0,
	       "A resent (%llu), B dropped the copy (%llu drops): SPURIOUS_RTO still 0",
	       (unsigned long long)port_reg64(&a, 0, MAIA_FPORT_RETRANSMITS),
	       (unsigned long long)port_reg64(&b, 0, MAIA_FPORT_RX_DROPS));
	n = release(&b.out[0]);
	start = now_ms();
	while (rd(&a, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)) == 0 &&
	       now_ms() - start <= WAIT_MS)
		usleep(1000);
	maia_sim_fabric_port_info(a.sim, 0, &ia);
	tap_ok(rd(&a, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)) >= 1 && ia.spurious_rto >= 1 &&
	       rd(&b, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)) <=
	       port_reg64(&b, 0, MAIA_FPORT_RETRANSMITS),
	       "%u held frames delivered late: A's SPURIOUS_RTO %u (port_info %llu); B's %u, "
	       "retransmits %llu", n, rd(&a, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)),
	       (unsigned long long)ia.spurious_rto,
	       rd(&b, MAIA_REG_FPORT_R(0, MAIA_FPORT_R_SPURIOUS_RTO)),
	       (unsigned long long)port_reg64(&b, 0, MAIA_FPORT_RETRANSMITS));
	unplug(&a);
	unplug(&b);
	node_destroy(&a);
	node_destroy(&b);
}

int main(void)
{
	test_no_ports();
	test_registers();
	test_injected_drops();
	test_spurious_rto();
	return tap_done();
}
