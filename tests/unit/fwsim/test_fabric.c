// SPDX-License-Identifier: MIT
/*
 * Fabric link layer (fw_fabric_link.c): 2, 3 and 4 link endpoints wired
 * together by a simulated wire with a virtual clock, seeded loss,
 * reordering and duplication. Checks discovery, exactly-once in-order
 * delivery of messages of 0..MAIA_FABRIC_MAX_PAYLOAD bytes, that no DATA
 * frame exceeds the credit its receiver granted, retransmission under loss
 * (selective: scripted losses cost exactly the frames lost),
 * dead-peer detection within the keepalive timeout and recovery, and that
 * malformed frames are counted and dropped without effect on delivery.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../../firmware-sim/src/fw_fabric.h"
#include "../../../firmware-sim/src/fw_fabric_ref.h"
#include "tap.h"

#define MAX_NODES	4
#define MS		1000000ull
#define TICK_NS		(1 * MS)
#define LATENCY_NS	20000ull	/* 20 us on the wire */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / (double)(1ull << 53);
}

/* One direction of a link: what the sender sends, what the receiver got. */
struct dir {
	unsigned int sent, total, got, bad;
	/* Last credit grant the receiver put on the wire, and its session. */
	bool grant_valid;
	uint32_t grant_epoch, grant_peer_epoch, grant_credit;
	unsigned int credit_violations;
};

struct endpoint {
	bool wired;
	unsigned int peer_node, peer_port;
	struct fw_link link;
	struct dir out;		/* this endpoint -> peer */
	bool up;
	uint64_t up_ns, down_ns;
	uint64_t seen_serial;
	unsigned int seen_port;
};

struct node {
	uint64_t serial;
	bool dead;		/* not ticked; the wire drops its frames */
	bool frozen;		/* not ticked; frames to it wait (a starved process) */
	struct endpoint ep[MAIA_FABRIC_MAX_PORTS];
};

struct wframe {
	uint64_t at, id;
	unsigned int node, port;
	size_t len;
	uint8_t *data;
};

static struct net {
	unsigned int n;
	struct node nodes[MAX_NODES];
	uint64_t now, next_id, rng;
	double loss, dup, reorder;
	double refuse;			/* deliver() refuses this fraction (back-pressure) */
	struct wframe *heap;
	size_t heap_n, heap_cap;
	uint64_t wire_frames, wire_lost, wire_dups;
	/* Scripted loss: node 0 port 0's DATA seq drop_seq[i] is lost drop_times[i] times. */
	uint32_t drop_seq[8];
	unsigned int drop_times[8], ndrop;
	/* Scripted reordering: node 0 port 0's DATA delay_seq arrives delay_ns late, once. */
	uint32_t delay_seq;
	uint64_t delay_ns;
	/* Scripted refusal: node 0 port 0's message refuse_msg is refused once. */
	bool refuse_once;
	unsigned int refuse_msg;
	/* Every message this long (0: the lengths of msg_len()'s mix). */
	uint32_t len_override;
	/* A receive buffer of this many frames per port (0: none); more are lost, as UDP's. */
	unsigned int depth;
	uint64_t overflows;
} net;

static bool overflows(unsigned int node, unsigned int port)
{
	unsigned int queued = 0;

	if (!net.depth)
		return false;
	for (size_t i = 0; i < net.heap_n; i++)
		queued += net.heap[i].node == node && net.heap[i].port == port;
	if (queued < net.depth)
		return false;
	net.overflows++;
	return true;
}

static bool scripted_drop(unsigned int node, unsigned int port, const struct maia_fabric_hdr *h)
{
	if (node || port || h->type != MAIA_FABRIC_DATA)
		return false;
	for (unsigned int i = 0; i < net.ndrop; i++) {
		if (net.drop_seq[i] == h->seq && net.drop_times[i]) {
			net.drop_times[i]--;
			return true;
		}
	}
	return false;
}

static bool wf_before(const struct wframe *a, const struct wframe *b)
{
	return a->at < b->at || (a->at == b->at && a->id < b->id);
}

static void heap_push(struct wframe f)
{
	size_t i;

	if (net.heap_n == net.heap_cap) {
		net.heap_cap = net.heap_cap ? 2 * net.heap_cap : 1024;
		net.heap = realloc(net.heap, net.heap_cap * sizeof(*net.heap));
	}
	i = net.heap_n++;
	while (i && wf_before(&f, &net.heap[(i - 1) / 2])) {
		net.heap[i] = net.heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	net.heap[i] = f;
}

static struct wframe heap_pop(void)
{
	struct wframe top = net.heap[0], last = net.heap[--net.heap_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= net.heap_n)
			break;
		if (c + 1 < net.heap_n && wf_before(&net.heap[c + 1], &net.heap[c]))
			c++;
		if (!wf_before(&net.heap[c], &last))
			break;
		net.heap[i] = net.heap[c];
		i = c;
	}
	if (net.heap_n)
		net.heap[i] = last;
	return top;
}

/* Message k of a direction: its length and bytes follow from (id, k). */
static uint32_t msg_len(unsigned int id, unsigned int k)
{
	uint64_t s = (uint64_t)id << 32 | k;
	uint64_t r = rng_next(&s);

	if (net.len_override)
		return net.len_override;
	if (k % 97 == 5)
		return MAIA_FABRIC_MAX_PAYLOAD;
	if (k % 13 == 0)
		return 0;
	if (r % 100 == 0)
		return (uint32_t)(r >> 8) % (MAIA_FABRIC_MAX_PAYLOAD + 1);
	return (uint32_t)(r >> 8) % 1500;
}

static void msg_fill(uint8_t *buf, uint32_t len, unsigned int id, unsigned int k)
{
	uint64_t s = ((uint64_t)id << 32 | k) ^ 0xfab1c;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = rng_next(&s);

		memcpy(buf + i, &r, len - i < 8 ? len - i : 8);
	}
}

static unsigned int dir_id(unsigned int node, unsigned int port)
{
	return node * MAIA_FABRIC_MAX_PORTS + port;
}

static int wire_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *nd = opaque;
	unsigned int node = (unsigned int)(nd - net.nodes);
	struct endpoint *ep = &nd->ep[port], *peer;
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	int copies = 1;

	if (fw_fabric_parse(frame, len, &f, &why) < 0)
		abort();	/* the link built a frame its own parser rejects */
	peer = &net.nodes[ep->peer_node].ep[ep->peer_port];
	/* Credit instrumentation: grants from this side, checks of DATA against the peer's. */
	ep->out.grant_valid = f.hdr.type != MAIA_FABRIC_HELLO || f.hdr.peer_epoch;
	ep->out.grant_epoch = f.hdr.epoch;
	ep->out.grant_peer_epoch = f.hdr.peer_epoch;
	ep->out.grant_credit = f.hdr.credit;
	if (f.hdr.type == MAIA_FABRIC_DATA) {
		struct dir *g = &peer->out;

		if (!g->grant_valid || g->grant_epoch != f.hdr.peer_epoch ||
		    g->grant_peer_epoch != f.hdr.epoch ||
		    (int32_t)(f.hdr.seq - g->grant_credit) >= 0)
			ep->out.credit_violations++;
	}
	net.wire_frames++;
	if (nd->dead || net.nodes[ep->peer_node].dead || rng_unit(&net.rng) < net.loss ||
	    scripted_drop(node, port, &f.hdr) || overflows(ep->peer_node, ep->peer_port)) {
		net.wire_lost++;
		return 0;
	}
	if (rng_unit(&net.rng) < net.dup) {
		copies = 2;
		net.wire_dups++;
	}
	for (int c = 0; c < copies; c++) {
		struct wframe w = {
			.at = net.now + LATENCY_NS, .id = net.next_id++,
			.node = ep->peer_node, .port = ep->peer_port, .len = len,
		};

		if (rng_unit(&net.rng) < net.reorder)
			w.at += rng_next(&net.rng) % (2 * MS);
		if (net.delay_ns && !node && !port && f.hdr.type == MAIA_FABRIC_DATA &&
		    f.hdr.seq == net.delay_seq) {
			w.at += net.delay_ns;
			net.delay_ns = 0;
		}
		w.data = malloc(len);
		memcpy(w.data, frame, len);
		heap_push(w);
	}
	return 0;
}

static int deliver(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct node *nd = opaque;
	struct endpoint *ep = &nd->ep[port];
	/* The sender's direction holds its counters. */
	struct node *src = &net.nodes[ep->peer_node];
	struct dir *d = &src->ep[ep->peer_port].out;
	unsigned int id = dir_id(ep->peer_node, ep->peer_port);
	static uint8_t want[MAIA_FABRIC_MAX_PAYLOAD];
	uint32_t wl = msg_len(id, d->got);

	if (net.refuse > 0 && rng_unit(&net.rng) < net.refuse)
		return -EAGAIN;
	if (net.refuse_once && !ep->peer_node && !ep->peer_port && d->got == net.refuse_msg) {
		net.refuse_once = false;
		return -EAGAIN;
	}
	msg_fill(want, wl, id, d->got);
	if (len != wl || memcmp(msg, want, wl) || d->got >= d->sent)
		d->bad++;
	d->got++;
	return 0;
}

static void state_changed(void *opaque, unsigned int port, bool up, uint64_t serial,
			  unsigned int peer_port)
{
	struct node *nd = opaque;
	struct endpoint *ep = &nd->ep[port];

	ep->up = up;
	if (up) {
		ep->up_ns = net.now;
		ep->seen_serial = serial;
		ep->seen_port = peer_port;
	} else {
		ep->down_ns = net.now;
	}
}

static const struct fw_link_ops link_ops = {
	.tx = wire_tx, .deliver = deliver, .state_changed = state_changed,
};

/* cfg.ack_delay_ns of the links wire() makes (0: acks at the next tick). */
static uint64_t ack_delay_ns;
/* Prefix of the tests' names: "" or "delayed acks: ". */
static const char *variant = "";

static void link_init(unsigned int node, unsigned int port, uint32_t drop_ppm)
{
	struct node *nd = &net.nodes[node];
	struct fw_link_config cfg;

	fw_link_config_defaults(&cfg);
	cfg.serial = nd->serial;
	cfg.port = port;
	cfg.drop_ppm = drop_ppm;
	cfg.drop_seed = 1000 + dir_id(node, port);
	cfg.ack_delay_ns = ack_delay_ns;
	if (fw_link_init(&nd->ep[port].link, &cfg, &link_ops, nd, net.now))
		abort();
}

static void wire(unsigned int a, unsigned int pa, unsigned int b, unsigned int pb,
		 uint32_t drop_ppm)
{
	net.nodes[a].ep[pa] = (struct endpoint){ .wired = true, .peer_node = b, .peer_port = pb };
	net.nodes[b].ep[pb] = (struct endpoint){ .wired = true, .peer_node = a, .peer_port = pa };
	link_init(a, pa, drop_ppm);
	link_init(b, pb, drop_ppm);
}

/* For the next scenario; rx_refused of the last one. */
static double scenario_refuse;
static unsigned int scenario_depth;
static uint64_t last_refused;

static void net_setup(unsigned int n, double loss, double dup, double reorder, uint64_t seed)
{
	memset(&net, 0, sizeof(net));
	net.n = n;
	net.now = 1000 * MS;
	net.rng = seed;
	net.loss = loss;
	net.dup = dup;
	net.reorder = reorder;
	net.refuse = scenario_refuse;
	net.depth = scenario_depth;
	for (unsigned int i = 0; i < n; i++)
		net.nodes[i].serial = 0x4d410000ull + 17 * i + 1;
}

static void net_free(void)
{
	for (unsigned int i = 0; i < net.n; i++)
		for (unsigned int p = 0; p < MAIA_FABRIC_MAX_PORTS; p++)
			if (net.nodes[i].ep[p].wired)
				fw_link_destroy(&net.nodes[i].ep[p].link);
	while (net.heap_n)
		free(heap_pop().data);
	free(net.heap);
	net.heap = NULL;
}

#define for_each_ep(i, p, ep) \
	for (unsigned int i = 0; i < net.n; i++) \
		for (unsigned int p = 0; p < MAIA_FABRIC_MAX_PORTS; p++) \
			for (struct endpoint *ep = &net.nodes[i].ep[p]; ep && ep->wired; ep = NULL)

/* Queue as many of each direction's messages as its link takes. */
static void feed(void)
{
	static uint8_t buf[MAIA_FABRIC_MAX_PAYLOAD];

	for_each_ep(i, p, ep) {
		unsigned int id = dir_id(i, p);

		if (net.nodes[i].dead)
			continue;
		while (ep->out.sent < ep->out.total) {
			uint32_t len = msg_len(id, ep->out.sent);

			msg_fill(buf, len, id, ep->out.sent);
			if (fw_link_send(&ep->link, buf, len, net.now))
				break;
			ep->out.sent++;
		}
	}
}

/* Frames that reached a frozen node, in arrival order. */
static struct wframe parked[4096];
static unsigned int nparked;

/* Run the virtual clock until t: wire deliveries in order, a tick every TICK_NS. */
static void run_until(uint64_t t)
{
	uint64_t next_tick = net.now - net.now % TICK_NS + TICK_NS;

	while (net.now < t) {
		uint64_t next = next_tick < t ? next_tick : t;

		if (net.heap_n && net.heap[0].at <= next) {
			struct wframe w = heap_pop();
			struct node *nd = &net.nodes[w.node];

			if (nd->frozen) {
				parked[nparked++] = w;	/* thaw() delivers it */
				continue;
			}
			net.now = w.at > net.now ? w.at : net.now;
			if (!nd->dead)
				fw_link_rx(&nd->ep[w.port].link, w.data, w.len, net.now);
			free(w.data);
			continue;
		}
		net.now = next;
		if (net.now == next_tick) {
			for_each_ep(i, p, ep)
				if (!net.nodes[i].dead && !net.nodes[i].frozen)
					fw_link_tick(&ep->link, net.now);
			feed();
			next_tick += TICK_NS;
		}
	}
}

static bool all_done(void)
{
	for_each_ep(i, p, ep)
		if (ep->out.got < ep->out.total)
			return false;
	return true;
}

static bool all_up(void)
{
	for_each_ep(i, p, ep)
		if (!ep->up || !ep->link.confirmed)
			return false;
	return true;
}

/* Run until every message arrived or limit of virtual time passed. */
static void run_traffic(unsigned int per_dir, uint64_t limit_ns)
{
	uint64_t end = net.now + limit_ns;

	for_each_ep(i, p, ep)
		ep->out.total += per_dir;
	feed();
	while (!all_done() && net.now < end)
		run_until(net.now + 10 * MS);
	/* Let the last acks arrive. */
	run_until(net.now + 50 * MS);
}

struct totals {
	uint64_t sent, got, bad, viol, retx, tx, dup, ooo, stale, downs, pending, refused, injected;
};
/* The last scenario's. */
static struct totals last_totals;
static uint64_t last_overflows, last_virtual_ns, last_wire_lost;


static struct totals totals(void)
{
	struct totals t = { 0 };

	for_each_ep(i, p, ep) {
		const struct fw_link_stats *s = &ep->link.stats;

		t.sent += ep->out.sent;
		t.got += ep->out.got;
		t.bad += ep->out.bad;
		t.viol += ep->out.credit_violations;
		t.retx += s->retransmits;
		t.tx += s->tx_frames;
		t.dup += s->drops[MAIA_FABRIC_DROP_DUPLICATE];
		t.ooo += s->drops[MAIA_FABRIC_DROP_OUT_OF_ORDER];
		t.stale += s->drops[MAIA_FABRIC_DROP_STALE];
		t.downs += s->link_downs;
		t.pending += fw_link_pending(&ep->link);
		t.refused += s->rx_refused;
		t.injected += s->tx_injected_drops;
	}
	return t;
}

static bool check_discovery(void)
{
	for_each_ep(i, p, ep) {
		if (!ep->up || ep->seen_serial != net.nodes[ep->peer_node].serial ||
		    ep->seen_port != ep->peer_port)
			return false;
	}
	return true;
}

/* A scenario: wire n nodes, bring links up, move per_dir messages each way on each link. */
static void scenario(const char *name, unsigned int n, double loss, double dup,
		     double reorder, uint32_t drop_ppm, unsigned int per_dir)
{
	struct totals t;
	uint64_t t0;

	net_setup(n, loss, dup, reorder, 0x5eed0000ull + n * 1000 + (uint64_t)(loss * 100));
	if (n == 2) {
		wire(0, 0, 1, 3, drop_ppm);
	} else if (n == 3) {
		for (unsigned int i = 0; i < 3; i++)
			wire(i, 1, (i + 1) % 3, 0, drop_ppm);
	} else {
		/* Full mesh: node i uses port j for node j (and i for itself is unused). */
		for (unsigned int i = 0; i < n; i++)
			for (unsigned int j = i + 1; j < n; j++)
				wire(i, j, j, i, drop_ppm);
	}
	t0 = net.now;
	while (!all_up() && net.now < t0 + 2000 * MS)
		run_until(net.now + MS);
	tap_ok(check_discovery(), "%s: every port UP, knows its peer's serial and port (%.0f ms)",
	       name, (double)(net.now - t0) / MS);
	run_traffic(per_dir, 60000 * MS);
	t = totals();
	printf("# %s: %llu/%llu messages delivered, %llu frames, %llu retransmits, "
	       "dup %llu, out-of-order %llu, stale %llu, wire lost %llu, wire dups %llu, "
	       "%.2f s virtual\n", name,
	       (unsigned long long)t.got, (unsigned long long)t.sent, (unsigned long long)t.tx,
	       (unsigned long long)t.retx, (unsigned long long)t.dup, (unsigned long long)t.ooo,
	       (unsigned long long)t.stale, (unsigned long long)net.wire_lost,
	       (unsigned long long)net.wire_dups, (double)(net.now - t0) / 1e9);
	tap_ok(t.got == t.sent && t.sent == (uint64_t)per_dir * 2 * (n == 2 ? 1 : n == 3 ? 3 : 6) &&
	       t.bad == 0 && t.pending == 0,
	       "%s: every message delivered exactly once, in order, intact", name);
	tap_ok(t.viol == 0, "%s: no DATA frame beyond the receiver's credit", name);
	tap_ok(t.downs == 0, "%s: no link went down", name);
	if (loss > 0 || drop_ppm || net.depth)
		tap_ok(t.retx > 0, "%s: retransmits counted (%llu)", name, (unsigned long long)t.retx);
	else
		tap_ok(t.retx == 0, "%s: no retransmit on a clean wire", name);
	/*
	 * Selective: a lost frame costs about one frame sent again (go-back-N
	 * sent 40 per loss here). Reordering makes gaps that fill themselves,
	 * and refusals wait for the timeout, so only plain loss is held to it.
	 */
	if ((loss > 0 || drop_ppm) && reorder == 0 && net.refuse == 0)
		tap_ok(t.retx <= 2 * (net.wire_lost + t.injected),
		       "%s: %llu frames sent again for %llu lost", name,
		       (unsigned long long)t.retx,
		       (unsigned long long)(net.wire_lost + t.injected));
	if (dup > 0)
		tap_ok(t.dup > 0, "%s: duplicates counted and dropped (%llu)", name,
		       (unsigned long long)t.dup);
	last_refused = t.refused;
	last_totals = t;
	last_overflows = net.overflows;
	last_wire_lost = net.wire_lost;
	last_virtual_ns = net.now - t0;
	net_free();
}

static void test_frame_format(void)
{
	static uint8_t buf[MAIA_FABRIC_MAX_FRAME + 16], pay[MAIA_FABRIC_MAX_PAYLOAD];
	uint8_t mac[6];
	struct maia_fabric_hdr h = { .version = MAIA_FABRIC_VERSION, .type = MAIA_FABRIC_DATA,
				     .src_port = 2, .dst_port = 5, .src_serial = 42, .epoch = 7 };
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	size_t n;
	bool all_short = true;

	fw_fabric_mac(mac, 42, 2);
	msg_fill(pay, sizeof(pay), 1, 1);
	n = fw_fabric_build(buf, mac, mac, &h, pay, MAIA_FABRIC_MAX_PAYLOAD);
	tap_ok(n == MAIA_FABRIC_MAX_FRAME && n <= 69632 && buf[12] == 0x88 && buf[13] == 0xb5,
	       "max frame is %zu bytes (<= 69632), EtherType 0x88B5 big-endian", n);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) == 0 && f.hdr.payload_len == MAIA_FABRIC_MAX_PAYLOAD &&
	       !memcmp(f.payload, pay, MAIA_FABRIC_MAX_PAYLOAD) && f.hdr.src_serial == 42,
	       "a built frame parses back");
	for (size_t l = 0; l < MAIA_FABRIC_MIN_FRAME; l++)
		if (fw_fabric_parse(buf, l, &f, &why) == 0 || why != MAIA_FABRIC_DROP_TOO_SHORT)
			all_short = false;
	tap_ok(all_short, "every length below %u bytes: too short", MAIA_FABRIC_MIN_FRAME);
	tap_ok(fw_fabric_parse(buf, n - 1, &f, &why) < 0 && why == MAIA_FABRIC_DROP_LENGTH &&
	       fw_fabric_parse(buf, n + 1, &f, &why) < 0 && why == MAIA_FABRIC_DROP_LENGTH,
	       "truncated or padded payload: length");
	buf[MAIA_FABRIC_MIN_FRAME + 100] ^= 1;
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_CRC,
	       "one flipped payload bit: CRC");
	buf[MAIA_FABRIC_MIN_FRAME + 100] ^= 1;
	buf[MAIA_ETH_HLEN + 17] ^= 0x80;	/* epoch */
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_CRC,
	       "one flipped header bit: CRC");
	/* Fields with a valid CRC: the field check itself must catch them. */
	h.version = 1;
	n = fw_fabric_build(buf, mac, mac, &h, NULL, 0);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_VERSION,
	       "version 1 (64 KiB messages, before UDP-sized frames): bad version");
	h.version = MAIA_FABRIC_VERSION;
	n = fw_fabric_build(buf, mac, mac, &h, NULL, 0);
	memcpy(buf + MAIA_ETH_HLEN + offsetof(struct maia_fabric_hdr, payload_len),
	       &(uint32_t){ 0xffffffffu }, 4);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_LENGTH,
	       "payload_len 0xffffffff: length");
	h.type = MAIA_FABRIC_NAK;
	h.gap = 3;
	n = fw_fabric_build(buf, mac, mac, &h, NULL, 0);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) == 0 && f.hdr.gap == 3,
	       "NAK: parsed, gap kept");
	n = fw_fabric_build(buf, mac, mac, &h, pay, 4);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_LENGTH,
	       "NAK with a payload: length");
	h.gap = 0;
	h.type = MAIA_FABRIC_NAK + 1;
	n = fw_fabric_build(buf, mac, mac, &h, NULL, 0);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_TYPE,
	       "type 6: unknown type");
	h.type = MAIA_FABRIC_KEEPALIVE;
	n = fw_fabric_build(buf, mac, mac, &h, pay, 4);
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_LENGTH,
	       "KEEPALIVE with a payload: length");
	buf[12] = 0x08;
	buf[13] = 0x00;
	tap_ok(fw_fabric_parse(buf, n, &f, &why) < 0 && why == MAIA_FABRIC_DROP_ETHERTYPE,
	       "IPv4 EtherType: dropped");
}

/*
 * The sender's one-pass copy and CRC (fw_fabric_crc_copy) against zlib's
 * table-driven crc32() and memcpy, at every tail length and misalignment,
 * chained like the transport chains header and data; and a frame built from
 * the payload's known CRC (crc32_combine) carries zlib's CRC of the header
 * and payload read as one stream.
 */
static const char *crc_path_name(int path)
{
	__builtin_cpu_init();
	if (path == 2)
		return __builtin_cpu_supports("vpclmulqdq") ? "VPCLMULQDQ" : "not on this CPU: below";
	if (path == 1)
		return __builtin_cpu_supports("pclmul") ? "PCLMULQDQ" : "not on this CPU: below";
	return "zlib";
}

static void test_crc_copy_path(int path)
{
	static const size_t lens[] = { 0, 1, 15, 16, 17, 63, 64, 65, 79, 127, 128, 129, 143, 144,
				       200, 255, 256, 257, 383, 1000, 4097, MAIA_FABRIC_MAX_PAYLOAD };
	static uint8_t src[MAIA_FABRIC_MAX_PAYLOAD + 8], dst[MAIA_FABRIC_MAX_PAYLOAD + 16];
	static uint8_t b[MAIA_FABRIC_MAX_FRAME];
	unsigned int bad = 0, runs = 0, frames_differ = 0;
	struct maia_fabric_hdr h = { .version = MAIA_FABRIC_VERSION, .type = MAIA_FABRIC_DATA,
				     .src_port = 1, .dst_port = 0, .src_serial = 7, .epoch = 3 };
	uint8_t mac[6];

	fw_fabric_crc_max_path(path);
	msg_fill(src, sizeof(src), 9, 3);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (unsigned int so = 0; so < 4; so++) {
			for (unsigned int d0 = 0; d0 < 3; d0++) {
				size_t len = lens[i], head = len / 3;
				uint32_t want = (uint32_t)crc32(0x1234u, src + so, (uInt)len), got;

				memset(dst, 0xee, sizeof(dst));
				/* Two pieces, as header then data. */
				got = fw_fabric_crc_copy(0x1234u, dst + d0, src + so, head);
				got = fw_fabric_crc_copy(got, dst + d0 + head, src + so + head,
							 len - head);
				runs++;
				if (got != want || memcmp(dst + d0, src + so, len) ||
				    dst[d0 + len] != 0xee || (d0 && dst[d0 - 1] != 0xee) ||
				    fw_fabric_crc_copy(0x1234u, NULL, src + so, len) != want)
					bad++;
			}
		}
		if (lens[i] <= MAIA_FABRIC_MAX_PAYLOAD) {
			struct maia_fabric_hdr z;
			size_t nb;
			uLong want;

			fw_fabric_mac(mac, 7, 1);
			nb = fw_fabric_build_crc(b, mac, mac, &h, src, (uint32_t)lens[i],
						 fw_fabric_crc_copy(0, NULL, src, lens[i]));
			/* zlib over the header (crc 0) and then the payload, in one stream. */
			memcpy(&z, b + MAIA_ETH_HLEN, sizeof(z));
			z.crc = 0;
			want = crc32(0, (const Bytef *)&z, sizeof(z));
			want = crc32(want, src, (uInt)lens[i]);
			frames_differ += nb != MAIA_FABRIC_MIN_FRAME + lens[i] || h.crc != want ||
					 memcmp(b + MAIA_FABRIC_MIN_FRAME, src, lens[i]);
		}
	}
	tap_ok(!bad, "CRC path %d (%s): one-pass copy + CRC: %u of %u runs (22 lengths to 60 KiB, "
	       "misaligned, chained) match zlib's crc32 and memcpy, nothing written outside", path,
	       crc_path_name(path), runs - bad, runs);
	tap_ok(!frames_differ, "CRC path %d: a frame built from its payload's known CRC carries "
	       "zlib's CRC of header and payload (%u differ)", path, frames_differ);
	fw_fabric_crc_max_path(2);
}

/*
 * Random lengths 0..64 KiB (half of them up to 300 bytes: the slicing-by-8
 * tables' range and just past it), offsets and starting CRCs, from a fixed
 * seed: the copy + CRC against zlib's crc32(); frames built from their
 * payload's known CRC (the cached combine operators, lengths that share a
 * slot in turn) and sealed frames against zlib over header and payload.
 */
static void test_crc_random(void)
{
	static uint8_t src[65536 + 8], dst[65536 + 8];
	static uint8_t b[MAIA_FABRIC_MAX_FRAME];
	struct maia_fabric_hdr h = { .version = MAIA_FABRIC_VERSION, .type = MAIA_FABRIC_DATA,
				     .src_port = 0, .dst_port = 1, .src_serial = 9, .epoch = 5 };
	uint64_t rng = 0x5eed0c2c;
	unsigned int bad = 0, frames_bad = 0, sealed_bad = 0, n = 3000;
	uint8_t mac[6];

	msg_fill(src, sizeof(src), 4, 11);
	fw_fabric_mac(mac, 9, 0);
	for (unsigned int i = 0; i < n; i++) {
		size_t len, off;
		uint32_t crc0, want;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		len = (rng >> 33) % (i & 1 ? 65537u : 301u);
		off = (rng >> 20) % 8;
		crc0 = (uint32_t)(rng >> 7);
		want = (uint32_t)crc32(crc0, src + off, (uInt)len);
		bad += fw_fabric_crc_copy(crc0, NULL, src + off, len) != want ||
		       fw_fabric_crc_copy(crc0, dst, src + off, len) != want ||
		       memcmp(dst, src + off, len);
		if (len <= MAIA_FABRIC_MAX_PAYLOAD) {
			struct maia_fabric_hdr z;
			size_t nb;

			h.seq = i;
			nb = fw_fabric_build_crc(b, mac, mac, &h, src + off, (uint32_t)len,
						 fw_fabric_crc_copy(0, NULL, src + off, len));
			memcpy(&z, b + MAIA_ETH_HLEN, sizeof(z));
			z.crc = 0;
			want = (uint32_t)crc32(crc32(0, (const Bytef *)&z, sizeof(z)), src + off,
					       (uInt)len);
			frames_bad += h.crc != want;
			memset(b + MAIA_ETH_HLEN + offsetof(struct maia_fabric_hdr, crc), 0, 4);
			fw_fabric_seal(b, nb);
			memcpy(&z, b + MAIA_ETH_HLEN, sizeof(z));
			sealed_bad += z.crc != want;
		}
	}
	tap_ok(!bad && !frames_bad && !sealed_bad,
	       "CRC, %u random lengths 0..64 KiB against zlib: copy + CRC %u wrong, frames from "
	       "a known payload CRC %u wrong, sealed frames %u wrong", n, bad, frames_bad,
	       sealed_bad);
}

/* Every CRC path this CPU has (fw_fabric_crc_max_path()), each against zlib. */
static void test_crc_copy(void)
{
	for (int path = 2; path >= 0; path--)
		test_crc_copy_path(path);
	test_crc_random();
}

/* Kill node 1 (not ticked, its frames lost), see node 0 notice, then bring it back. */
static void test_dead_peer(bool reboot)
{
	const char *name = reboot ? "dead peer, rebooted" : "dead peer, wire restored";
	struct endpoint *a, *b;
	struct totals t;
	uint64_t kill, t0;

	net_setup(2, 0.01, 0, 0, reboot ? 77 : 78);
	wire(0, 4, 1, 7, 0);
	a = &net.nodes[0].ep[4];
	b = &net.nodes[1].ep[7];
	run_traffic(300, 10000 * MS);
	t = totals();
	tap_ok(all_up() && t.got == t.sent && t.bad == 0, "%s: link up, %llu messages before",
	       name, (unsigned long long)t.got);
	run_until(net.now + 200 * MS);		/* idle: keepalives only */
	tap_ok(a->up && b->up && a->link.stats.tx_keepalive > 0 && totals().downs == 0,
	       "%s: an idle link stays up on keepalives (%llu sent)", name,
	       (unsigned long long)a->link.stats.tx_keepalive);
	kill = net.now;
	net.nodes[1].dead = true;
	while (a->up && net.now < kill + 5000 * MS)
		run_until(net.now + MS);
	tap_ok(!a->up && a->link.stats.dead_peer == 1 &&
	       a->down_ns - kill <= (uint64_t)MAIA_FABRIC_DEAD_MS * MS + 2 * TICK_NS,
	       "%s: DOWN %.1f ms after the peer died (timeout %u ms)", name,
	       (double)(a->down_ns - kill) / MS, MAIA_FABRIC_DEAD_MS);
	run_until(net.now + 500 * MS);
	tap_ok(!a->up && a->link.stats.tx_hello > 2, "%s: stays DOWN sending HELLO", name);
	if (reboot) {
		fw_link_destroy(&b->link);
		*b = (struct endpoint){ .wired = true, .peer_node = 0, .peer_port = 4 };
		link_init(1, 7, 0);
	}
	net.nodes[1].dead = false;
	t0 = net.now;
	while (!all_up() && net.now < t0 + 5000 * MS)
		run_until(net.now + MS);
	tap_ok(all_up() && a->seen_serial == net.nodes[1].serial && a->seen_port == 7,
	       "%s: UP again %.0f ms after the peer came back", name, (double)(net.now - t0) / MS);
	/* Messages of the old session are gone: count from the new one. */
	a->out.sent = a->out.got = a->out.total = 0;
	b->out.sent = b->out.got = b->out.total = 0;
	run_traffic(200, 10000 * MS);
	t = totals();
	tap_ok(t.got == t.sent && t.sent == 400 && t.bad == 0 && t.viol == 0,
	       "%s: %llu messages delivered in the new session", name, (unsigned long long)t.got);
	net_free();
}

/*
 * Node n runs again after a freeze: it ticks first (as a fabric round whose
 * receive queue the starved main loop has not filled yet), then gets what
 * arrived meanwhile.
 */
static void thaw(unsigned int n)
{
	struct node *nd = &net.nodes[n];

	nd->frozen = false;
	for (unsigned int p = 0; p < MAIA_FABRIC_MAX_PORTS; p++)
		if (nd->ep[p].wired)
			fw_link_tick(&nd->ep[p].link, net.now);
	for (unsigned int k = 0; k < nparked; k++) {
		fw_link_rx(&nd->ep[parked[k].port].link, parked[k].data, parked[k].len, net.now);
		free(parked[k].data);
	}
	nparked = 0;
}

/*
 * Both sides stop running for longer than the dead time (a host that
 * starved both processes): neither takes the link DOWN at its first tick,
 * when the other's frames are still on their way. A peer that really died
 * is still found within half the dead time after a starved side runs again.
 */
static void test_starved_side(void)
{
	struct endpoint *a, *b;
	uint64_t thawed;
	bool up_at_tick;

	net_setup(2, 0, 0, 0, 79);
	wire(0, 2, 1, 3, 0);
	a = &net.nodes[0].ep[2];
	b = &net.nodes[1].ep[3];
	run_until(net.now + 300 * MS);
	tap_ok(all_up(), "starved side: link up");
	net.nodes[0].frozen = net.nodes[1].frozen = true;
	run_until(net.now + 1500 * MS);
	thaw(0);
	thaw(1);
	up_at_tick = a->up && b->up;
	run_until(net.now + 500 * MS);
	tap_ok(up_at_tick && all_up() && totals().downs == 0 && a->link.stats.starved == 1 &&
	       b->link.stats.starved == 1,
	       "starved side: both ends 1.5 s without running: no DOWN (starved ticks %llu, %llu)",
	       (unsigned long long)a->link.stats.starved, (unsigned long long)b->link.stats.starved);
	net.nodes[1].dead = true;
	run_until(net.now + 5 * MS);		/* what it sent last arrives */
	net.nodes[0].frozen = true;
	run_until(net.now + 1500 * MS);
	thaw(0);
	thawed = net.now;
	up_at_tick = a->up;
	while (a->up && net.now < thawed + 5000 * MS)
		run_until(net.now + MS);
	tap_ok(up_at_tick && !a->up && a->link.stats.dead_peer == 1 &&
	       a->down_ns - thawed <= (uint64_t)MAIA_FABRIC_DEAD_MS * MS / 2 + 2 * TICK_NS,
	       "starved side, peer really dead: DOWN %.1f ms after running again (dead time %u ms)",
	       (double)(a->down_ns - thawed) / MS, MAIA_FABRIC_DEAD_MS);
	net_free();
}

/* Malformed frames thrown at a live link in the middle of traffic. */
static void test_malformed_live(void)
{
	static uint8_t buf[MAIA_FABRIC_MAX_FRAME];
	struct endpoint *b;
	struct fw_link_stats before;
	struct totals t;
	struct maia_fabric_hdr h;
	uint8_t mac[6];
	size_t n;
	uint64_t rng = 99;

	net_setup(2, 0.05, 0.02, 0.05, 1234);
	wire(0, 0, 1, 1, 0);
	b = &net.nodes[1].ep[1];
	while (!all_up())
		run_until(net.now + MS);
	before = b->link.stats;
	net.nodes[0].ep[0].out.total = 1000;
	net.nodes[1].ep[1].out.total = 1000;
	for (int round = 0; round < 200; round++) {
		feed();
		run_until(net.now + MS);
		/* A copy of a valid DATA header for this session, then broken. */
		memset(&h, 0, sizeof(h));
		h.version = MAIA_FABRIC_VERSION;
		h.type = MAIA_FABRIC_DATA;
		h.src_port = 0;
		h.dst_port = 1;
		h.src_serial = net.nodes[0].serial;
		h.epoch = b->link.peer_epoch;
		h.peer_epoch = b->link.epoch;
		h.seq = b->link.rcv_nxt;
		h.ack = 0;
		fw_fabric_mac(mac, h.src_serial, 0);
		n = fw_fabric_build(buf, mac, mac, &h, buf + 200, 100);
		switch (round % 4) {
		case 0:		/* truncated */
			fw_link_rx(&b->link, buf, rng_next(&rng) % MAIA_FABRIC_MIN_FRAME, net.now);
			break;
		case 1:		/* bad CRC */
			buf[n - 1 - rng_next(&rng) % 100] ^= 0x10;
			fw_link_rx(&b->link, buf, n, net.now);
			break;
		case 2:		/* bad version */
			buf[MAIA_ETH_HLEN] = 9;
			fw_link_rx(&b->link, buf, n, net.now);
			break;
		case 3:		/* huge length field */
			memcpy(buf + MAIA_ETH_HLEN + offsetof(struct maia_fabric_hdr, payload_len),
			       &(uint32_t){ 0x7fffffffu }, 4);
			fw_link_rx(&b->link, buf, n, net.now);
			break;
		}
	}
	run_traffic(0, 60000 * MS);
	t = totals();
	tap_ok(b->link.stats.drops[MAIA_FABRIC_DROP_TOO_SHORT] - before.drops[MAIA_FABRIC_DROP_TOO_SHORT] == 50 &&
	       b->link.stats.drops[MAIA_FABRIC_DROP_CRC] - before.drops[MAIA_FABRIC_DROP_CRC] == 50 &&
	       b->link.stats.drops[MAIA_FABRIC_DROP_VERSION] - before.drops[MAIA_FABRIC_DROP_VERSION] == 50 &&
	       b->link.stats.drops[MAIA_FABRIC_DROP_LENGTH] - before.drops[MAIA_FABRIC_DROP_LENGTH] == 50,
	       "malformed frames counted by reason: 50 too short, 50 CRC, 50 version, 50 length");
	tap_ok(t.got == 2000 && t.sent == 2000 && t.bad == 0 && t.downs == 0 && t.viol == 0,
	       "malformed frames: delivery unaffected (%llu/%llu, %llu retransmits)",
	       (unsigned long long)t.got, (unsigned long long)t.sent, (unsigned long long)t.retx);
	net_free();
}

static void test_api(void)
{
	struct fw_link l;
	struct fw_link_config cfg;
	uint8_t x = 0;

	fw_link_config_defaults(&cfg);
	cfg.port = MAIA_FABRIC_MAX_PORTS;
	tap_ok(fw_link_init(&l, &cfg, &link_ops, NULL, 0) == -EINVAL, "port 12: -EINVAL");
	cfg.port = 0;
	cfg.window = 48;
	tap_ok(fw_link_init(&l, &cfg, &link_ops, NULL, 0) == -EINVAL, "window 48: -EINVAL");
	cfg.window = MAIA_FABRIC_WINDOW;
	tap_ok(fw_link_init(&l, &cfg, &link_ops, NULL, 0) == 0 &&
	       fw_link_send(&l, &x, 1, 0) == -ENOTCONN &&
	       fw_link_send(&l, &x, MAIA_FABRIC_MAX_PAYLOAD + 1, 0) == -EMSGSIZE,
	       "send on a DOWN link: -ENOTCONN; oversize: -EMSGSIZE");
	fw_link_destroy(&l);
}

/* The layer above refuses 20% of deliveries: each comes again, once, in order. */
static void test_refused(void)
{
	uint64_t refused = 0;
	char name[96];

	snprintf(name, sizeof(name), "%s2 nodes, 1%% loss, 20%% of deliveries refused", variant);
	scenario_refuse = 0.20;
	scenario(name, 2, 0.01, 0, 0, 0, 1000);
	scenario_refuse = 0;
	refused = last_refused;
	tap_ok(refused > 0, "%srefused deliveries counted (%llu) and delivered later", variant,
	       (unsigned long long)refused);
	/*
	 * A refused message is held and offered again at the next tick, and
	 * acked once taken: no timeout, so about one frame sent again per loss.
	 */
	tap_ok(last_totals.retx <= 2 * last_wire_lost,
	       "%srefusals cost no retransmission: %llu frames sent again for %llu lost",
	       variant, (unsigned long long)last_totals.retx, (unsigned long long)last_wire_lost);
}

/*
 * Selective retransmission on a clean wire with scripted losses of node 0's
 * DATA: the receiver holds what follows a gap and names the gap in one NAK;
 * exactly the lost frames are sent again.
 */
static void selective(const char *name, const uint32_t *seqs, const unsigned int *times,
		      unsigned int n, uint64_t want_retx, uint64_t want_naks)
{
	const struct fw_link_stats *tx, *rx;
	struct totals t;
	uint64_t delay = net.delay_ns;

	net_setup(2, 0, 0, 0, 0x5e1ec7);
	wire(0, 0, 1, 0, 0);
	while (!all_up() && net.now < 3000 * MS)
		run_until(net.now + MS);
	net.delay_seq = 10;
	net.delay_ns = delay;
	for (unsigned int i = 0; i < n; i++) {
		net.drop_seq[i] = seqs[i];
		net.drop_times[i] = times[i];
	}
	net.ndrop = n;
	run_traffic(100, 10000 * MS);
	t = totals();
	tx = &net.nodes[0].ep[0].link.stats;
	rx = &net.nodes[1].ep[0].link.stats;
	printf("# %s: %llu retransmits, %llu NAKs, %llu held, out-of-order drops %llu, "
	       "duplicates %llu\n", name, (unsigned long long)tx->retransmits,
	       (unsigned long long)rx->tx_nak, (unsigned long long)rx->rx_held,
	       (unsigned long long)rx->drops[MAIA_FABRIC_DROP_OUT_OF_ORDER],
	       (unsigned long long)rx->drops[MAIA_FABRIC_DROP_DUPLICATE]);
	tap_ok(t.got == 200 && t.bad == 0 && t.pending == 0,
	       "%s%s: every message delivered once, in order, intact", variant, name);
	tap_ok(tx->retransmits == want_retx && rx->tx_nak == want_naks &&
	       tx->spurious_rto == 0 && rx->drops[MAIA_FABRIC_DROP_OUT_OF_ORDER] == 0 &&
	       rx->drops[MAIA_FABRIC_DROP_DUPLICATE] == (delay ? want_retx : 0),
	       "%s%s: %llu frames sent again, %llu NAKs, nothing after a gap dropped or sent twice",
	       variant, name, (unsigned long long)want_retx, (unsigned long long)want_naks);
	net_free();
}

/*
 * The last message refused once: the receiver holds it, takes it at its
 * next tick and acks it then, so the sender never times out.
 */
static void test_refused_last(void)
{
	const struct fw_link_stats *tx;
	struct totals t;

	net_setup(2, 0, 0, 0, 0x5e1ec8);
	wire(0, 0, 1, 0, 0);
	while (!all_up() && net.now < 3000 * MS)
		run_until(net.now + MS);
	net.refuse_once = true;
	net.refuse_msg = 99;
	run_traffic(100, 10000 * MS);
	t = totals();
	tx = &net.nodes[0].ep[0].link.stats;
	tap_ok(t.got == 200 && t.bad == 0 && t.pending == 0 && !net.refuse_once &&
	       t.refused == 1 && tx->retransmits == 0,
	       "%sthe last message refused once: held, taken at the next tick and acked, "
	       "nothing sent again (%llu)", variant, (unsigned long long)tx->retransmits);
	net_free();
}

static void test_selective(void)
{
	selective("one frame lost", (uint32_t[]){ 10 }, (unsigned int[]){ 1 }, 1, 1, 1);
	selective("a burst of 5 lost", (uint32_t[]){ 20, 21, 22, 23, 24 },
		  (unsigned int[]){ 1, 1, 1, 1, 1 }, 5, 5, 1);
	selective("two gaps", (uint32_t[]){ 30, 40 }, (unsigned int[]){ 1, 1 }, 2, 2, 2);
	/* Nothing follows it to show the gap: the retransmit timeout sends it again. */
	selective("the last frame lost", (uint32_t[]){ 99 }, (unsigned int[]){ 1 }, 1, 1, 0);
	/*
	 * The frame sent again at the NAK is lost too: the timeout sends it once
	 * more. The receiver names the gap again after the same time (in case
	 * its NAK was lost); that second NAK sends nothing again.
	 */
	selective("a frame and its resend lost", (uint32_t[]){ 50 }, (unsigned int[]){ 2 }, 1,
		  2, 2);
	/*
	 * Frame 10 overtaken by 11, not lost: the NAK it causes costs one frame
	 * sent in vain (a duplicate at the receiver), not one per later ack.
	 */
	net.delay_ns = LATENCY_NS;
	selective("frame 10 reordered, not lost", NULL, NULL, 0, 1, 1);
	net.delay_ns = 0;
}

/*
 * The receiver stops running for 40 ms (a starved host) with a full window
 * on its way: the sender times out and sends the oldest frame again (each
 * timeout doubles the next), and the receiver then gets those twice. Its ack says so
 * (MAIA_FABRIC_F_DUP) and the sender goes back to the window it had, instead
 * of growing it again from 2 frames as after a loss. A lost frame found by a
 * timeout undoes nothing (selective(), "the last frame lost").
 */
static void test_spurious_timeout(void)
{
	struct endpoint *a;
	uint32_t cwnd;
	uint64_t retx;
	struct totals t;

	net_setup(2, 0, 0, 0, 0x5e1ec9);
	wire(0, 0, 1, 0, 0);
	a = &net.nodes[0].ep[0];
	while (!all_up() && net.now < 3000 * MS)
		run_until(net.now + MS);
	a->out.total = 1000;
	feed();
	run_until(net.now + 2 * TICK_NS);
	cwnd = a->link.cwnd;
	net.nodes[1].frozen = true;
	run_until(net.now + 40 * MS);
	retx = a->link.stats.retransmits;
	tap_ok(retx >= 1 && a->link.cwnd < cwnd && a->link.recovering,
	       "%sspurious timeout: %llu frames sent again while the peer did not run, window "
	       "%u -> %u", variant, (unsigned long long)retx, cwnd, a->link.cwnd);
	thaw(1);
	/* Delayed acks: the duplicate's ack goes at the receiver's next tick. */
	run_until(net.now + 2 * LATENCY_NS + (ack_delay_ns ? TICK_NS : 0));
	tap_ok(a->link.stats.spurious_rto == 1 && !a->link.recovering && a->link.cwnd >= cwnd &&
	       a->link.rto_cur_ns == MAIA_FABRIC_RTO_MS * MS &&
	       net.nodes[1].ep[0].link.stats.drops[MAIA_FABRIC_DROP_DUPLICATE] >= retx &&
	       net.nodes[1].ep[0].link.stats.drops[MAIA_FABRIC_DROP_DUPLICATE] <=
	       a->link.stats.retransmits,
	       "%sspurious timeout: the peer had the frame (%llu duplicates): window back to %u, "
	       "timeout back to %u ms", variant, (unsigned long long)retx, a->link.cwnd,
	       (unsigned int)(a->link.rto_cur_ns / MS));
	run_traffic(0, 10000 * MS);
	t = totals();
	/*
	 * The receiver's late acks: the first, for the frame the timeout sent
	 * again, looks like a lost frame's and sends the next one again; the
	 * rest answer frames sent once (before this: one more per ack, 67).
	 */
	tap_ok(t.got == 1000 && t.bad == 0 && t.pending == 0 &&
	       a->link.stats.retransmits <= retx + 1,
	       "%sspurious timeout: every message delivered once (%llu), %llu sent again after "
	       "the freeze", variant, (unsigned long long)t.got,
	       (unsigned long long)(a->link.stats.retransmits - retx));
	net_free();
}

/*
 * The same spurious timeout, and the receiver's next frame a message whose
 * data are in device memory (fw_fabric_ref.h) sent as a copy (this host
 * has no tx_lend; also a retransmission, or a frame still out): that very
 * frame carries the duplicate notice (MAIA_FABRIC_F_DUP) and the sender
 * undoes its timeout as it arrives, not at a later frame of the receiver.
 * Acks delayed, so that the duplicate's ack waits for the receiver's tick.
 */
static void test_spurious_timeout_ref(void)
{
	static uint8_t dev[MAIA_FABRIC_MAX_PAYLOAD];	/* the "device memory" */
	const uint32_t hdr = MAIA_FABRIC_MSG_HDR_LEN;
	struct fw_ref_owner owner = { 0 };
	unsigned int records = fw_ref_records(), id = dir_id(1, 0), ndata = 0;
	struct endpoint *a, *b;
	uint64_t retx, spurious = 0;
	uint16_t flags = 0;
	struct totals t;
	uint8_t *msg;
	uint32_t len;
	int st;

	net_setup(2, 0, 0, 0, 0xd0f);
	net.len_override = 16384;	/* as a collective's message by reference (> 4096) */
	wire(0, 0, 1, 0, 0);
	a = &net.nodes[0].ep[0];
	b = &net.nodes[1].ep[0];
	while (!all_up() && net.now < 3000 * MS)
		run_until(net.now + MS);
	net.nodes[1].frozen = true;
	a->out.total = 1;
	feed();
	/* The sender's timeout sends message 0 again; the receiver then gets it twice. */
	run_until(net.now + (MAIA_FABRIC_RTO_MS + 1) * MS);
	retx = a->link.stats.retransmits;
	thaw(1);
	tap_ok(retx >= 1 && a->link.undo_valid && b->link.dup_rx && b->link.ack_pending &&
	       b->link.stats.drops[MAIA_FABRIC_DROP_DUPLICATE] == retx,
	       "%sspurious timeout, message by reference: %llu duplicates received, their "
	       "notice pending", variant, (unsigned long long)retx);

	/* The receiver's message: header in the buffer, data left in "device memory". */
	len = msg_len(id, 0);
	msg_fill(dev, len, id, 0);
	msg = fw_link_msg_alloc(len);
	memcpy(msg, dev, hdr);
	memset(msg + hdr, 0, len - hdr);	/* never sent: the copy reads dev */
	if (fw_ref_attach(msg - FW_LINK_HEADROOM, FW_LINK_HEADROOM + hdr, dev + hdr, len - hdr,
			  &owner))
		abort();
	b->out.total = b->out.sent = 1;
	if (fw_link_send_owned(&b->link, msg, len, net.now))
		abort();
	st = fw_ref_state(msg - FW_LINK_HEADROOM);

	/* The wire in order, up to the sender's undo at that DATA frame. */
	while (net.heap_n && !ndata) {
		struct wframe w = heap_pop();
		struct fw_fabric_frame f;
		enum maia_fabric_drop why;

		if (fw_fabric_parse(w.data, w.len, &f, &why) < 0)
			abort();
		net.now = w.at > net.now ? w.at : net.now;
		fw_link_rx(&net.nodes[w.node].ep[w.port].link, w.data, w.len, net.now);
		if (w.node == 0 && f.hdr.type == MAIA_FABRIC_DATA) {
			ndata++;
			flags = f.hdr.flags;
			spurious = a->link.stats.spurious_rto;
		}
		free(w.data);
	}
	tap_ok(ndata == 1 && (flags & MAIA_FABRIC_F_DUP) && !(flags & MAIA_FABRIC_F_REF) &&
	       b->link.stats.tx_ref == 0 && st == 1 && !b->link.dup_rx,
	       "%sspurious timeout, message by reference: its copied frame carries the "
	       "duplicate notice (flags 0x%x, record %d)", variant, flags, st);
	tap_ok(spurious == 1 && !a->link.recovering,
	       "%sspurious timeout, message by reference: the sender undid its timeout at that "
	       "frame (%llu)", variant, (unsigned long long)spurious);
	run_traffic(0, 1000 * MS);
	t = totals();
	tap_ok(t.got == 2 && t.bad == 0 && t.pending == 0 && a->link.stats.spurious_rto == 1 &&
	       fw_ref_owner_out(&owner) == 0 && fw_ref_records() == records,
	       "%sspurious timeout, message by reference: both messages delivered (%llu), the "
	       "copy's data those of device memory, the record gone once acked",
	       variant, (unsigned long long)t.got);
	net_free();
}

/*
 * A receive buffer of 3 frames per port, as a UDP socket's (212,992 bytes:
 * three full frames): a full window sent at once mostly overflows it. The
 * congestion window brings what is in flight down to what gets through.
 * (Plain loss, as in the scenarios above, halves it too: at 10 % loss that
 * costs about twice the time.)
 */
static void test_shallow(void)
{
	struct totals t;

	scenario_depth = 3;
	scenario("2 nodes, 3-frame receive buffers", 2, 0, 0, 0, 0, 2000);
	scenario_depth = 0;
	t = last_totals;
	printf("# 3-frame receive buffers: %llu frames overflowed, %llu sent again, %.2f s virtual\n",
	       (unsigned long long)last_overflows, (unsigned long long)t.retx,
	       (double)last_virtual_ns / 1e9);
	/* Without the congestion window: 17,715 for 4,000 messages, in 3.38 s. */
	tap_ok(t.retx <= t.sent, "3-frame receive buffers: %llu frames sent again for %llu "
	       "messages (at most one per message)", (unsigned long long)t.retx,
	       (unsigned long long)t.sent);
}

/* The ACK frames node's port sent. */
static uint64_t acks_sent(unsigned int node, unsigned int port)
{
	return net.nodes[node].ep[port].link.stats.tx_ack;
}

/*
 * Two nodes cabled 0:0 - 1:0 with the given ack delay, UP, the clock just
 * past one of run_until()'s ticks (none falls in what follows at once).
 */
static void pair_up(uint64_t delay, uint64_t seed, struct endpoint **a, struct endpoint **b)
{
	ack_delay_ns = delay;
	net_setup(2, 0, 0, 0, seed);
	wire(0, 0, 1, 0, 0);
	ack_delay_ns = 0;
	*a = &net.nodes[0].ep[0];
	*b = &net.nodes[1].ep[0];
	while (!all_up() && net.now < 3000 * MS)
		run_until(net.now + MS);
	run_until(net.now - net.now % TICK_NS + TICK_NS + 1000);
	/* Small messages, a small collective's chunks: their acks may wait. */
	net.len_override = 100;
}

/*
 * Lone messages, one every 50 us, the receiver ticked 10 us after each
 * arrives (a device's round ends with its ticks): without an ack delay every
 * message costs an ACK frame; with it, the acks of 1 ms go in one, or in
 * the receiver's own DATA when it answers each message. Virtual time: the
 * counts are exact.
 */
static uint64_t lone_messages(uint64_t delay, bool answer, uint64_t *acks_back,
			      uint64_t *ack_now)
{
	struct endpoint *a, *b;
	uint64_t before, before_back;

	pair_up(delay, 0xac4, &a, &b);
	before = acks_sent(1, 0);
	before_back = acks_sent(0, 0);
	for (unsigned int i = 0; i < 40; i++) {
		a->out.total++;
		if (answer)
			b->out.total++;
		feed();
		run_until(net.now + LATENCY_NS + 10000);
		fw_link_tick(&b->link, net.now);
		fw_link_tick(&a->link, net.now);
		run_until(net.now + 20000);
	}
	*acks_back = acks_sent(0, 0) - before_back;
	*ack_now = a->link.stats.tx_ack_now;
	before = acks_sent(1, 0) - before;
	run_traffic(0, 100 * MS);
	tap_ok(totals().got == (answer ? 80u : 40u) && totals().bad == 0 &&
	       totals().pending == 0 && totals().retx == 0,
	       "%s: %s messages delivered and acked, nothing sent again",
	       delay ? "delayed acks" : "acks at the tick", answer ? "80" : "40");
	net_free();
	return before;
}

static void test_delayed_acks(void)
{
	uint64_t delay = MAIA_FABRIC_ACK_DELAY_US * 1000ull, back, ack_now;
	uint64_t n;

	n = lone_messages(0, false, &back, &ack_now);
	tap_ok(n == 40, "acks at the tick: 40 lone messages, %llu ACK frames",
	       (unsigned long long)n);
	n = lone_messages(delay, false, &back, &ack_now);
	/*
	 * 40 x 50 us = 2 ms: one ACK 1 ms after the first message arrived; the
	 * next is due 1 ms after the one after it, past the last (run_traffic()).
	 */
	tap_ok(n == 1 && ack_now == 0,
	       "delayed acks: 40 lone messages in 2 ms, %llu ACK frames (delay %llu us), "
	       "%llu asked for at once", (unsigned long long)n,
	       (unsigned long long)MAIA_FABRIC_ACK_DELAY_US, (unsigned long long)ack_now);
	n = lone_messages(delay, true, &back, &ack_now);
	tap_ok(n == 0 && back <= 1,
	       "delayed acks: each message answered: the answers carry the acks (%llu ACK "
	       "frames one way, %llu the other)", (unsigned long long)n,
	       (unsigned long long)back);
}

/*
 * What was queued goes out, arrives, and the receiver b ticks 10 us later
 * (the end of its round): returns when it was sent.
 */
static uint64_t send_and_tick(struct endpoint *b)
{
	uint64_t t0 = net.now;

	feed();
	run_until(net.now + LATENCY_NS + 10000);
	fw_link_tick(&b->link, net.now);
	return t0;
}

/*
 * MAIA_FABRIC_F_ACK_NOW: 40 small messages queued at once on a 64-frame
 * window; from the one that fills half of it (seq 31) each asks for its ack
 * now, and the receiver acks at its next tick, well before its delay. A
 * frame sent again asks too, and so does a lone message longer than
 * FW_LINK_ACK_DELAY_MAX (a bulk transfer's).
 */
static void test_ack_now(void)
{
	struct endpoint *a, *b;
	uint64_t acks, t0;

	pair_up(MAIA_FABRIC_ACK_DELAY_US * 1000ull, 0xac5, &a, &b);
	acks = acks_sent(1, 0);
	a->out.total = 40;
	t0 = send_and_tick(b);
	tap_ok(a->link.stats.tx_ack_now == 9 && acks_sent(1, 0) == acks + 1,
	       "ack now: %llu of 40 frames asked (seq 31..39 of a 64-frame window), acked "
	       "at the receiver's tick %llu us after they were sent",
	       (unsigned long long)a->link.stats.tx_ack_now,
	       (unsigned long long)((net.now - t0) / 1000));
	run_until(net.now + LATENCY_NS + 1000);
	tap_ok(fw_link_pending(&a->link) == 0 && a->out.got == 40,
	       "ack now: the sender has every ack %llu us after sending, its ack delay %llu us",
	       (unsigned long long)((net.now - t0) / 1000),
	       (unsigned long long)MAIA_FABRIC_ACK_DELAY_US);
	/* A lone frame lost: the timeout's copy asks, and the receiver acks at its tick. */
	net.drop_seq[0] = 40;
	net.drop_times[0] = 1;
	net.ndrop = 1;
	a->out.total = 41;
	feed();
	t0 = net.now;
	while (a->link.stats.retransmits == 0 && net.now < t0 + 200 * MS)
		run_until(net.now + 100000);
	t0 = net.now;
	acks = acks_sent(1, 0);
	run_until(net.now + LATENCY_NS + 10000);
	fw_link_tick(&b->link, net.now);
	run_until(net.now + LATENCY_NS + 1000);
	tap_ok(a->link.stats.retransmits == 1 && a->link.stats.tx_ack_now == 10 &&
	       acks_sent(1, 0) == acks + 1 && fw_link_pending(&a->link) == 0,
	       "ack now: a frame sent again asks, acked %llu us after its resend",
	       (unsigned long long)((net.now - t0) / 1000));
	/* One message of FW_LINK_ACK_DELAY_MAX + 1 bytes, then a full one: each asks. */
	for (unsigned int i = 0; i < 2; i++) {
		net.len_override = i ? MAIA_FABRIC_MAX_PAYLOAD : FW_LINK_ACK_DELAY_MAX + 1;
		acks = acks_sent(1, 0);
		a->out.total++;
		t0 = send_and_tick(b);
		run_until(net.now + LATENCY_NS + 1000);
		tap_ok(a->link.stats.tx_ack_now == 11 + i && acks_sent(1, 0) == acks + 1 &&
		       fw_link_pending(&a->link) == 0,
		       "ack now: a lone message of %u bytes asks, acked %llu us after it was sent",
		       net.len_override, (unsigned long long)((net.now - t0) / 1000));
	}
	net_free();
}

/*
 * A lone message refused by the layer above is held and taken at the
 * receiver's next tick: its sender has waited, so that tick acks it
 * (before: the ack waited the whole delay, ack_pending being set already).
 */
static void test_ack_refused(void)
{
	struct endpoint *a, *b;
	uint64_t acks, t0;

	pair_up(MAIA_FABRIC_ACK_DELAY_US * 1000ull, 0xac7, &a, &b);
	net.refuse_once = true;
	net.refuse_msg = 0;
	acks = acks_sent(1, 0);
	a->out.total = 1;
	t0 = send_and_tick(b);
	run_until(net.now + LATENCY_NS + 1000);
	tap_ok(!net.refuse_once && b->link.stats.rx_refused == 1 && a->out.got == 1 &&
	       acks_sent(1, 0) == acks + 1 && fw_link_pending(&a->link) == 0,
	       "ack now: a message refused, then taken at the receiver's tick, acked %llu us "
	       "after it was sent (ack delay %llu us)", (unsigned long long)((net.now - t0) / 1000),
	       (unsigned long long)MAIA_FABRIC_ACK_DELAY_US);
	net_free();
}

/* A peer of another wire version (5, before delayed acks) is refused at its HELLO. */
static void test_old_version(void)
{
	static uint8_t buf[MAIA_FABRIC_MIN_FRAME];
	struct maia_fabric_hdr h = { .version = MAIA_FABRIC_VERSION - 1, .type = MAIA_FABRIC_HELLO,
				     .src_port = 0, .dst_port = MAIA_FABRIC_PORT_ANY,
				     .src_serial = 77, .epoch = 5 };
	struct endpoint *b;
	uint8_t mac[6];
	size_t n;

	net_setup(2, 0, 0, 0, 0xac6);
	wire(0, 0, 1, 0, 0);
	net.nodes[0].dead = true;
	b = &net.nodes[1].ep[0];
	fw_fabric_mac(mac, 77, 0);
	n = fw_fabric_build(buf, mac, mac, &h, NULL, 0);
	for (unsigned int i = 0; i < 10; i++) {
		fw_link_rx(&b->link, buf, n, net.now);
		run_until(net.now + MS);
	}
	tap_ok(!b->up && b->link.state == FW_LINK_DOWN && b->link.stats.link_ups == 0 &&
	       b->link.stats.drops[MAIA_FABRIC_DROP_VERSION] == 10,
	       "a version %u HELLO is dropped (VERSION, %llu): the link stays DOWN",
	       (unsigned int)(MAIA_FABRIC_VERSION - 1),
	       (unsigned long long)b->link.stats.drops[MAIA_FABRIC_DROP_VERSION]);
	net_free();
}

int main(void)
{
	test_frame_format();
	test_crc_copy();
	test_api();
	scenario("2 nodes, 0% loss", 2, 0, 0, 0, 0, 3000);
	scenario("2 nodes, 1% loss + reorder + dup", 2, 0.01, 0.01, 0.05, 0, 3000);
	scenario("2 nodes, 10% loss + reorder + dup", 2, 0.10, 0.02, 0.10, 0, 2000);
	scenario("2 nodes, 30% loss + reorder + dup", 2, 0.30, 0.05, 0.10, 0, 1000);
	scenario("2 nodes, 10% injected tx drop (drop_ppm)", 2, 0, 0, 0, 100000, 2000);
	test_refused();
	test_selective();
	test_refused_last();
	test_spurious_timeout();
	test_shallow();
	scenario("3 nodes ring, 10% loss + reorder + dup", 3, 0.10, 0.02, 0.10, 0, 1000);
	scenario("4 nodes mesh, 10% loss + reorder + dup", 4, 0.10, 0.02, 0.10, 0, 500);
	test_dead_peer(false);
	test_dead_peer(true);
	test_starved_side();
	test_malformed_live();
	test_delayed_acks();
	test_ack_now();
	test_ack_refused();
	test_old_version();
	/* Loss, refusals and timeouts again with acks delayed as a device's ports delay them. */
	ack_delay_ns = MAIA_FABRIC_ACK_DELAY_US * 1000ull;
	variant = "delayed acks: ";
	scenario("delayed acks: 2 nodes, 10% loss + reorder + dup", 2, 0.10, 0.02, 0.10, 0, 2000);
	scenario("delayed acks: 2 nodes, 10% injected tx drop (drop_ppm)", 2, 0, 0, 0, 100000,
		 2000);
	test_refused();
	test_selective();
	test_refused_last();
	test_spurious_timeout();
	test_spurious_timeout_ref();
	ack_delay_ns = 0;
	return tap_done();
}
