// SPDX-License-Identifier: MIT
/*
 * One fabric port's link engine: hello and discovery, go-back-N reliable
 * delivery with cumulative acks and receiver credits, keepalive and dead
 * peer detection (Documentation/hw/fabric.rst). No lock, no thread, no
 * clock of its own: see fw_fabric.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric.h"

#define NS_PER_MS	1000000ull

/* Sequence arithmetic modulo 2^32. */
static bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static bool pow2(unsigned int v)
{
	return v && !(v & (v - 1));
}

void fw_link_config_defaults(struct fw_link_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->window = MAIA_FABRIC_WINDOW;
	cfg->txq = 4 * MAIA_FABRIC_WINDOW;
	cfg->hello_ns = MAIA_FABRIC_HELLO_INTERVAL_MS * NS_PER_MS;
	cfg->rto_ns = MAIA_FABRIC_RTO_MS * NS_PER_MS;
	cfg->keepalive_ns = MAIA_FABRIC_KEEPALIVE_MS * NS_PER_MS;
	cfg->dead_ns = MAIA_FABRIC_DEAD_MS * NS_PER_MS;
}

/* splitmix64: the fault-injection stream, and a spread-out first epoch. */
static uint64_t mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_hdr(struct fw_link *l, struct maia_fabric_hdr *h, uint8_t type)
{
	memset(h, 0, sizeof(*h));
	h->version = MAIA_FABRIC_VERSION;
	h->type = type;
	h->src_port = (uint8_t)l->cfg.port;
	h->dst_port = l->state == FW_LINK_UP ? (uint8_t)l->peer_port : MAIA_FABRIC_PORT_ANY;
	h->src_serial = l->cfg.serial;
	h->epoch = l->epoch;
	h->peer_epoch = l->state == FW_LINK_UP ? l->peer_epoch : 0;
	h->seq = l->snd_nxt;
	h->ack = l->rcv_nxt;
	h->credit = l->rcv_nxt + l->cfg.window;
}

void *fw_link_msg_alloc(size_t len)
{
	uint8_t *buf = fw_buf_alloc(FW_LINK_HEADROOM + len);

	return buf ? buf + FW_LINK_HEADROOM : NULL;
}

void fw_link_msg_free(void *msg)
{
	if (msg)
		fw_buf_free((uint8_t *)msg - FW_LINK_HEADROOM);
}

/*
 * A queued message (payload != NULL) has the frame's headers' room in front
 * of it: the frame is built in place, without copying the payload.
 */
static void xmit(struct fw_link *l, struct maia_fabric_hdr *h, const void *payload,
		 uint32_t len, uint32_t payload_crc, uint64_t now_ns)
{
	static const uint8_t bcast[MAIA_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *frame = payload ? (uint8_t *)payload - FW_LINK_HEADROOM : l->frame;
	bool lend = payload && l->ops.tx_lend;
	size_t n;
	int rc;

	/*
	 * A frame lent earlier may still be out (in the host's queue, at the
	 * receiver): its bytes must not change under it. This transmission is
	 * then built in our own buffer and copied, as without tx_lend.
	 */
	if (lend && fw_buf_shared(frame)) {
		frame = l->frame;
		lend = false;
		l->stats.tx_lend_copies++;
	}
	/* Only the header is checksummed here: the payload's CRC came with it. */
	n = fw_fabric_build_crc(frame, l->mac, l->state == FW_LINK_UP ? l->peer_mac : bcast,
				h, payload, len, payload_crc);
	l->stats.tx_frames++;
	l->stats.tx_bytes += n;
	l->last_tx_ns = now_ns;
	l->ack_pending = false;		/* every frame carries the ack */
	l->unacked_rx = 0;
	if (l->cfg.drop_ppm && mix64(&l->rng) % 1000000u < l->cfg.drop_ppm) {
		l->stats.tx_injected_drops++;
		return;
	}
	rc = lend ? l->ops.tx_lend(l->opaque, l->cfg.port, frame, n) :
		    l->ops.tx(l->opaque, l->cfg.port, frame, n);
	if (rc < 0)
		l->stats.tx_errors++;
}

static void send_ctrl(struct fw_link *l, uint8_t type, uint64_t now_ns)
{
	struct maia_fabric_hdr h;

	fill_hdr(l, &h, type);
	if (type == MAIA_FABRIC_HELLO) {
		l->stats.tx_hello++;
		l->last_hello_ns = now_ns;
	} else if (type == MAIA_FABRIC_ACK) {
		l->stats.tx_ack++;
	} else {
		l->stats.tx_keepalive++;
	}
	xmit(l, &h, NULL, 0, 0, now_ns);
}

static void send_data(struct fw_link *l, uint32_t seq, bool resend, uint64_t now_ns)
{
	struct fw_link_msg *m = &l->q[seq & (l->cfg.txq - 1)];
	struct maia_fabric_hdr h;

	fill_hdr(l, &h, MAIA_FABRIC_DATA);
	h.seq = seq;
	m->resent |= resend;
	m->sent_ns = now_ns;
	l->stats.tx_data++;
	xmit(l, &h, m->data, m->len, m->crc, now_ns);
}

/* Send queued messages as far as the window and the peer's credit allow. */
static void pump(struct fw_link *l, uint64_t now_ns)
{
	if (l->state != FW_LINK_UP || !l->confirmed)
		return;
	while (l->snd_nxt != l->snd_tail && seq_lt(l->snd_nxt, l->snd_una + l->cfg.window) &&
	       seq_lt(l->snd_nxt, l->snd_credit)) {
		if (l->snd_una == l->snd_nxt)
			l->rto_start_ns = now_ns;
		send_data(l, l->snd_nxt++, false, now_ns);
	}
}

static void free_msg(struct fw_link *l, uint32_t seq)
{
	struct fw_link_msg *m = &l->q[seq & (l->cfg.txq - 1)];

	fw_link_msg_free(m->data);
	m->data = NULL;
	m->len = 0;
	m->sent_ns = 0;
	m->resent = false;
}

/*
 * End the session: queued messages are lost (the peer may or may not have
 * them; the layer above learns of it from state_changed). new_epoch: our
 * own state is gone too (dead peer, reset); not when only the peer restarted.
 */
static void go_down(struct fw_link *l, bool new_epoch, uint64_t now_ns)
{
	bool was_up = l->state == FW_LINK_UP;

	for (uint32_t s = l->snd_una; s != l->snd_tail; s++) {
		free_msg(l, s);
		l->stats.discarded++;
	}
	l->snd_una = l->snd_nxt = l->snd_tail = l->snd_credit = 0;
	l->rcv_nxt = 0;
	l->ack_pending = false;
	l->confirmed = false;
	l->state = FW_LINK_DOWN;
	l->peer_epoch = 0;
	if (new_epoch && !++l->epoch)
		l->epoch = 1;
	/* HELLO at the next tick. */
	l->last_hello_ns = now_ns - l->cfg.hello_ns;
	if (was_up) {
		l->stats.link_downs++;
		if (l->ops.state_changed)
			l->ops.state_changed(l->opaque, l->cfg.port, false, l->peer_serial,
					     l->peer_port);
	}
}

int fw_link_init(struct fw_link *l, const struct fw_link_config *cfg,
		 const struct fw_link_ops *ops, void *opaque, uint64_t now_ns)
{
	uint64_t s;

	memset(l, 0, sizeof(*l));
	if (!cfg || !ops || !ops->tx || !ops->deliver || cfg->port >= MAIA_FABRIC_MAX_PORTS ||
	    !pow2(cfg->window) || cfg->window > (1u << 16) || !pow2(cfg->txq) ||
	    cfg->txq < cfg->window || !cfg->hello_ns || !cfg->rto_ns || !cfg->keepalive_ns ||
	    (cfg->rto_max_ns && cfg->rto_max_ns < cfg->rto_ns) ||
	    cfg->dead_ns <= cfg->keepalive_ns || cfg->drop_ppm > 1000000u)
		return -EINVAL;
	l->cfg = *cfg;
	l->ops = *ops;
	l->opaque = opaque;
	l->q = calloc(cfg->txq, sizeof(*l->q));
	l->frame = malloc(MAIA_FABRIC_MAX_FRAME);
	if (!l->q || !l->frame) {
		fw_link_destroy(l);
		return -ENOMEM;
	}
	fw_fabric_mac(l->mac, cfg->serial, cfg->port);
	s = cfg->serial * 131u + cfg->port;
	l->epoch = cfg->epoch ? cfg->epoch : (uint32_t)mix64(&s);
	if (!l->epoch)
		l->epoch = 1;
	l->rng = cfg->drop_seed;
	l->state = FW_LINK_DOWN;
	l->last_tx_ns = l->last_rx_ns = now_ns;
	l->last_hello_ns = now_ns - cfg->hello_ns;
	l->rto_cur_ns = cfg->rto_ns;
	return 0;
}

void fw_link_destroy(struct fw_link *l)
{
	if (l->q)
		for (uint32_t s = l->snd_una; s != l->snd_tail; s++)
			free_msg(l, s);
	free(l->q);
	free(l->frame);
	l->q = NULL;
	l->frame = NULL;
}

void fw_link_reset(struct fw_link *l, uint64_t now_ns)
{
	go_down(l, true, now_ns);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Mirrors fw_link_tick(): every timer it checks, as an absolute time. */
uint64_t fw_link_next_deadline(const struct fw_link *l)
{
	uint64_t d = UINT64_MAX;

	if (l->state == FW_LINK_UP)
		d = l->last_rx_ns + l->cfg.dead_ns;
	if (l->state == FW_LINK_DOWN || !l->confirmed)
		return min_u64(d, l->last_hello_ns + l->cfg.hello_ns);
	if (l->ack_pending)
		return l->last_tx_ns;		/* already due */
	if (l->snd_una != l->snd_nxt)
		d = min_u64(d, l->rto_start_ns + l->rto_cur_ns);
	return min_u64(d, l->last_tx_ns + l->cfg.keepalive_ns);
}

unsigned int fw_link_pending(const struct fw_link *l)
{
	return l->snd_tail - l->snd_una;
}

static int send_check(const struct fw_link *l, size_t len)
{
	if (len > MAIA_FABRIC_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (l->state != FW_LINK_UP)
		return -ENOTCONN;
	if (l->snd_tail - l->snd_una >= l->cfg.txq)
		return -EAGAIN;
	return 0;
}

static void enqueue(struct fw_link *l, void *msg, size_t len, uint32_t crc, uint64_t now_ns)
{
	struct fw_link_msg *m = &l->q[l->snd_tail & (l->cfg.txq - 1)];

	m->data = msg;
	m->len = (uint32_t)len;
	m->crc = crc;
	l->snd_tail++;
	pump(l, now_ns);
}

int fw_link_send(struct fw_link *l, const void *msg, size_t len, uint64_t now_ns)
{
	int err = send_check(l, len);
	void *copy;

	if (err)
		return err;
	copy = fw_link_msg_alloc(len);
	if (!copy)
		return -ENOMEM;
	enqueue(l, copy, len, fw_fabric_crc_copy(0, copy, msg, len), now_ns);
	return 0;
}

/* Takes msg (freed on failure); its CRC computed here unless known. */
static int send_owned(struct fw_link *l, void *msg, size_t len, const uint32_t *crc,
		      uint64_t now_ns)
{
	int err = send_check(l, len);

	if (err) {
		fw_link_msg_free(msg);
		return err;
	}
	enqueue(l, msg, len, crc ? *crc : fw_fabric_crc_copy(0, NULL, msg, len), now_ns);
	return 0;
}

int fw_link_send_owned(struct fw_link *l, void *msg, size_t len, uint64_t now_ns)
{
	return send_owned(l, msg, len, NULL, now_ns);
}

int fw_link_send_owned_crc(struct fw_link *l, void *msg, size_t len, uint32_t crc,
			   uint64_t now_ns)
{
	return send_owned(l, msg, len, &crc, now_ns);
}

static void peer_up(struct fw_link *l, const struct maia_fabric_hdr *h, uint64_t now_ns)
{
	l->state = FW_LINK_UP;
	l->peer_serial = h->src_serial;
	l->peer_port = h->src_port;
	l->peer_epoch = h->epoch;
	fw_fabric_mac(l->peer_mac, h->src_serial, h->src_port);
	l->last_rx_ns = now_ns;
	l->stats.link_ups++;
	/* A HELLO of an older session of ours grants nothing in this one. */
	l->confirmed = h->peer_epoch == l->epoch;
	l->snd_credit = l->confirmed && seq_lt(0, h->credit) ? h->credit : 0;
	if (l->ops.state_changed)
		l->ops.state_changed(l->opaque, l->cfg.port, true, l->peer_serial, l->peer_port);
}

static void rx_hello(struct fw_link *l, const struct maia_fabric_hdr *h, uint64_t now_ns)
{
	if (l->state == FW_LINK_UP) {
		if (h->epoch == l->peer_epoch) {
			l->last_rx_ns = now_ns;
			if (h->peer_epoch == l->epoch && !l->confirmed) {
				l->confirmed = true;
				if (seq_lt(l->snd_credit, h->credit))
					l->snd_credit = h->credit;
				pump(l, now_ns);
			} else if (h->peer_epoch != l->epoch) {
				send_ctrl(l, MAIA_FABRIC_HELLO, now_ns);
			}
			return;
		}
		/* Epochs only grow: an older one is a delayed HELLO, a newer one a restart. */
		if (!seq_lt(l->peer_epoch, h->epoch)) {
			l->stats.drops[MAIA_FABRIC_DROP_STALE]++;
			return;
		}
		go_down(l, false, now_ns);
	}
	peer_up(l, h, now_ns);
	if (h->peer_epoch != l->epoch)
		send_ctrl(l, MAIA_FABRIC_HELLO, now_ns);
	pump(l, now_ns);
}

/* RFC 6298's estimator on the delay of an ack, and the timeout from it. */
static void rtt_sample(struct fw_link *l, uint64_t rtt_ns)
{
	uint64_t dev;

	if (!l->srtt_ns) {
		l->srtt_ns = rtt_ns ? rtt_ns : 1;
		l->rttvar_ns = rtt_ns / 2;
	} else {
		dev = l->srtt_ns > rtt_ns ? l->srtt_ns - rtt_ns : rtt_ns - l->srtt_ns;
		l->rttvar_ns = (3 * l->rttvar_ns + dev) / 4;
		l->srtt_ns = (7 * l->srtt_ns + rtt_ns) / 8;
	}
	l->rto_cur_ns = l->srtt_ns + 4 * l->rttvar_ns;
	if (l->rto_cur_ns < l->cfg.rto_ns)
		l->rto_cur_ns = l->cfg.rto_ns;
	if (l->rto_cur_ns > l->cfg.rto_max_ns)
		l->rto_cur_ns = l->cfg.rto_max_ns;
}

static void rx_ack(struct fw_link *l, const struct maia_fabric_hdr *h, uint64_t now_ns)
{
	/* Cumulative; an ack beyond what we sent is ignored, not trusted. */
	if (seq_lt(l->snd_una, h->ack) && !seq_lt(l->snd_nxt, h->ack)) {
		const struct fw_link_msg *last = &l->q[(h->ack - 1) & (l->cfg.txq - 1)];

		if (l->cfg.rto_max_ns && !last->resent && now_ns >= last->sent_ns)
			rtt_sample(l, now_ns - last->sent_ns);
		while (l->snd_una != h->ack) {
			free_msg(l, l->snd_una++);
			l->stats.tx_msgs_delivered_peer++;
		}
		l->rto_start_ns = now_ns;
		}
	if (seq_lt(l->snd_credit, h->credit))
		l->snd_credit = h->credit;
}

static void rx_data(struct fw_link *l, const struct fw_fabric_frame *f)
{
	const struct maia_fabric_hdr *h = &f->hdr;

	l->ack_pending = true;
	l->unacked_rx++;
	if (!seq_lt(h->seq, l->rcv_nxt + l->cfg.window)) {
		l->stats.drops[MAIA_FABRIC_DROP_OUT_OF_WINDOW]++;
		return;
	}
	if (seq_lt(h->seq, l->rcv_nxt)) {
		l->stats.drops[MAIA_FABRIC_DROP_DUPLICATE]++;
		return;
	}
	if (h->seq != l->rcv_nxt) {
		l->stats.drops[MAIA_FABRIC_DROP_OUT_OF_ORDER]++;
		return;
	}
	l->rcv_nxt++;
	if (l->ops.deliver(l->opaque, l->cfg.port, f->payload, h->payload_len) < 0) {
		/* Refused: not received after all (unless deliver() reset the link). */
		if (l->state == FW_LINK_UP && l->rcv_nxt == h->seq + 1)
			l->rcv_nxt = h->seq;
		l->stats.rx_refused++;
		return;
	}
	l->stats.rx_msgs++;
}

static void rx(struct fw_link *l, const void *frame, size_t len, bool check_crc, uint64_t now_ns)
{
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	const struct maia_fabric_hdr *h = &f.hdr;

	l->stats.rx_frames++;
	l->stats.rx_bytes += len;
	if (fw_fabric_parse_ext(frame, len, &f, &why, check_crc) < 0) {
		l->stats.drops[why]++;
		return;
	}
	if (h->dst_port != l->cfg.port &&
	    !(h->type == MAIA_FABRIC_HELLO && h->dst_port == MAIA_FABRIC_PORT_ANY)) {
		l->stats.drops[MAIA_FABRIC_DROP_PORT]++;
		return;
	}
	if (h->type == MAIA_FABRIC_HELLO) {
		rx_hello(l, h, now_ns);
		return;
	}
	if (l->state != FW_LINK_UP) {
		l->stats.drops[MAIA_FABRIC_DROP_NOT_UP]++;
		return;
	}
	if (h->epoch != l->peer_epoch || h->peer_epoch != l->epoch) {
		l->stats.drops[MAIA_FABRIC_DROP_STALE]++;
		return;
	}
	l->last_rx_ns = now_ns;
	l->confirmed = true;
	rx_ack(l, h, now_ns);
	if (h->type == MAIA_FABRIC_DATA)
		rx_data(l, &f);
	/* deliver() may have reset the link. */
	if (l->state != FW_LINK_UP)
		return;
	pump(l, now_ns);
	if (l->ack_pending && l->unacked_rx >= l->cfg.ack_every)
		send_ctrl(l, MAIA_FABRIC_ACK, now_ns);
}

void fw_link_rx(struct fw_link *l, const void *frame, size_t len, uint64_t now_ns)
{
	rx(l, frame, len, true, now_ns);
}

void fw_link_rx_lent(struct fw_link *l, const void *frame, size_t len, uint64_t now_ns)
{
	rx(l, frame, len, false, now_ns);
}

void fw_link_tick(struct fw_link *l, uint64_t now_ns)
{
	/*
	 * Silence counts only while this side was there to hear it. A gap in
	 * our own ticks longer than a quarter of the dead time (they come at
	 * least every keepalive) means this thread or process was not running:
	 * the peer's frames may still be on their way to us (a starved host).
	 * The peer then gets half the dead time from now, not a verdict.
	 */
	if (l->state == FW_LINK_UP && l->last_tick_ns &&
	    now_ns - l->last_tick_ns > l->cfg.dead_ns / 4 &&
	    now_ns - l->last_rx_ns > l->cfg.dead_ns / 2) {
		l->last_rx_ns = now_ns - l->cfg.dead_ns / 2;
		l->stats.starved++;
	}
	l->last_tick_ns = now_ns;
	if (l->state == FW_LINK_UP && now_ns - l->last_rx_ns >= l->cfg.dead_ns) {
		l->stats.dead_peer++;
		go_down(l, true, now_ns);
	}
	if (l->state == FW_LINK_DOWN || !l->confirmed) {
		/* Until the peer has our epoch, HELLO is the only thing worth sending. */
		if (now_ns - l->last_hello_ns >= l->cfg.hello_ns)
			send_ctrl(l, MAIA_FABRIC_HELLO, now_ns);
		return;
	}
	if (l->snd_una != l->snd_nxt && now_ns - l->rto_start_ns >= l->rto_cur_ns) {
		/* Go-back-N: everything from the oldest unacked frame again. */
		for (uint32_t s = l->snd_una; s != l->snd_nxt; s++) {
			send_data(l, s, true, now_ns);
			l->stats.retransmits++;
		}
		l->rto_start_ns = now_ns;
		if (l->cfg.rto_max_ns)
			l->rto_cur_ns = min_u64(2 * l->rto_cur_ns, l->cfg.rto_max_ns);
	}
	pump(l, now_ns);
	if (l->ack_pending)
		send_ctrl(l, MAIA_FABRIC_ACK, now_ns);
	if (now_ns - l->last_tx_ns >= l->cfg.keepalive_ns)
		send_ctrl(l, MAIA_FABRIC_KEEPALIVE, now_ns);
}
