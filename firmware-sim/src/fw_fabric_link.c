// SPDX-License-Identifier: MIT
/*
 * One fabric port's link engine: hello and discovery, reliable delivery
 * with cumulative acks, selective retransmission (NAK) and receiver credits,
 * keepalive and dead peer detection (Documentation/hw/fabric.rst). No lock,
 * no thread, no clock of its own: see fw_fabric.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric.h"
#include "fw_fabric_ref.h"

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

/* Whether messages go without their CRC until a frame must carry it (cfg.lazy_crc). */
static bool lazy_crc(const struct fw_link *l)
{
	return l->cfg.lazy_crc && l->ops.tx_lend;
}

/*
 * A queued message (m != NULL) has the frame's headers' room in front of
 * it: the frame is built in place, without copying the payload. A lent
 * frame goes without its CRC if the message has none yet (lazy_crc()):
 * only a device of this process that takes it as it is (maia_sim_fabric_
 * rx_lent(), no check) sees it so, and the host seals it for any other
 * way (maia_sim_fabric_frame_seal()). A frame sent through tx carries it.
 */
static void xmit(struct fw_link *l, struct maia_fabric_hdr *h, struct fw_link_msg *m,
		 uint64_t now_ns)
{
	static const uint8_t bcast[MAIA_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const uint8_t *payload = m ? m->data : NULL;
	uint32_t len = m ? m->len : 0;
	uint8_t *frame = payload ? (uint8_t *)payload - FW_LINK_HEADROOM : l->frame;
	const uint8_t *dst = l->state == FW_LINK_UP ? l->peer_mac : bcast;
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
	/* The ack this frame carries tells the peer its timeout sent a duplicate. */
	if (l->dup_rx && h->type != MAIA_FABRIC_HELLO) {
		h->flags |= MAIA_FABRIC_F_DUP;
		l->dup_rx = false;
	}
	/*
	 * A message whose data are in device memory (fw_fabric_ref.h) goes as
	 * it is only lent, marked; a copy gets its data (and its CRC) here.
	 */
	if (m && fw_ref_msg_has(m->data)) {
		if (lend && fw_ref_live(frame)) {
			h->flags |= MAIA_FABRIC_F_REF;
			l->stats.tx_ref++;
		} else if (!lend) {
			if (!l->ref_scratch)
				l->ref_scratch = malloc(MAIA_FABRIC_MAX_PAYLOAD);
			if (!l->ref_scratch) {
				/* Not sent: the next frame carries the notice. */
				if (h->flags & MAIA_FABRIC_F_DUP)
					l->dup_rx = true;
				l->stats.tx_errors++;
				return;
			}
			fw_ref_msg_read(m->data, l->ref_scratch, len);
			payload = l->ref_scratch;
			m->crc = fw_fabric_crc_copy(0, NULL, payload, len);
			n = fw_fabric_build_crc(frame, l->mac, dst, h, payload, len, m->crc);
			goto built;
		}
	}
	if (m && !m->crc_known && !lend) {
		m->crc = fw_fabric_crc_copy(0, NULL, payload, len);
		m->crc_known = true;
	}
	/* Only the header is checksummed here: the payload's CRC came with it. */
	if (m && !m->crc_known)
		n = fw_fabric_build_unsealed(frame, l->mac, dst, h, payload, len);
	else
		n = fw_fabric_build_crc(frame, l->mac, dst, h, payload, len, m ? m->crc : 0);
built:
	if (lend)
		fw_buf_set_unsealed(frame, !m->crc_known);
	l->stats.tx_frames++;
	l->stats.tx_bytes += n;
	l->last_tx_ns = now_ns;
	l->ack_pending = false;		/* every frame carries the ack */
	l->ack_now = false;
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
	xmit(l, &h, NULL, now_ns);
}

/*
 * Whether DATA frame seq asks for its ack at once (MAIA_FABRIC_F_ACK_NOW):
 * when sent again or in a recovery (the ack says what else is lacking),
 * when the frames in flight with it reach half of what the window and the
 * peer's credit allow, so that the sender never waits for a delayed ack
 * with messages queued, and when its message is long (FW_LINK_ACK_DELAY_MAX:
 * a bulk transfer's big buffers go back at the end of the receiver's round).
 * A small lone message (a small collective's chunk) does not ask: its ack
 * rides on the next frame back, or comes up to the receiver's delay later.
 */
static bool ack_now_wanted(const struct fw_link *l, uint32_t seq, bool resend)
{
	uint32_t limit = seq_lt(l->snd_una, l->snd_credit) ? l->snd_credit - l->snd_una : 0;

	if (resend || l->recovering || l->q[seq & (l->cfg.txq - 1)].len > FW_LINK_ACK_DELAY_MAX)
		return true;
	if (l->cwnd < limit)
		limit = l->cwnd;
	return seq + 1u - l->snd_una >= (limit + 1u) / 2u;
}

static void send_data(struct fw_link *l, uint32_t seq, bool resend, uint64_t now_ns)
{
	struct fw_link_msg *m = &l->q[seq & (l->cfg.txq - 1)];
	struct maia_fabric_hdr h;

	fill_hdr(l, &h, MAIA_FABRIC_DATA);
	h.seq = seq;
	if (ack_now_wanted(l, seq, resend)) {
		h.flags |= MAIA_FABRIC_F_ACK_NOW;
		l->stats.tx_ack_now++;
	}
	m->resent |= resend;
	if (resend)
		l->stats.retransmits++;
	m->sent_ns = now_ns;
	l->stats.tx_data++;
	xmit(l, &h, m, now_ns);
}

/* Send queued messages as far as the window and the peer's credit allow. */
static void pump(struct fw_link *l, uint64_t now_ns)
{
	if (l->state != FW_LINK_UP || !l->confirmed)
		return;
	while (l->snd_nxt != l->snd_tail && seq_lt(l->snd_nxt, l->snd_una + l->cwnd) &&
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
	m->fast_resent = false;
}

static struct fw_link_held *held_slot(struct fw_link *l, uint32_t seq)
{
	return &l->held[seq & (l->cfg.window - 1)];
}

static void free_held(struct fw_link *l)
{
	for (unsigned int i = 0; l->held && i < l->cfg.window; i++) {
		fw_buf_free(l->held[i].msg);
		l->held[i].msg = NULL;
	}
	l->nheld = 0;
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
		struct fw_link_msg *m = &l->q[s & (l->cfg.txq - 1)];

		if (was_up && l->ops.unsent && m->data)
			l->ops.unsent(l->opaque, l->cfg.port, m->data, m->len);
		free_msg(l, s);
		l->stats.discarded++;
	}
	l->snd_una = l->snd_nxt = l->snd_tail = l->snd_credit = 0;
	l->recovering = false;
	l->undo_valid = l->dup_rx = false;
	l->cwnd = l->ssthresh = l->cfg.window;
	l->cwnd_acked = 0;
	free_held(l);
	l->rcv_nxt = 0;
	l->nak_ns = 0;
	l->ack_pending = l->ack_now = false;
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
	    cfg->ack_delay_ns > cfg->rto_ns / 4 ||
	    cfg->dead_ns <= cfg->keepalive_ns || cfg->drop_ppm > 1000000u)
		return -EINVAL;
	l->cfg = *cfg;
	l->ops = *ops;
	l->opaque = opaque;
	l->q = calloc(cfg->txq, sizeof(*l->q));
	l->held = calloc(cfg->window, sizeof(*l->held));
	l->frame = malloc(MAIA_FABRIC_MAX_FRAME);
	if (!l->q || !l->held || !l->frame) {
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
	l->cwnd = l->ssthresh = cfg->window;
	return 0;
}

void fw_link_destroy(struct fw_link *l)
{
	if (l->q)
		for (uint32_t s = l->snd_una; s != l->snd_tail; s++)
			free_msg(l, s);
	free_held(l);
	free(l->q);
	free(l->held);
	free(l->frame);
	free(l->ref_scratch);
	l->q = NULL;
	l->held = NULL;
	l->frame = NULL;
	l->ref_scratch = NULL;
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
	if (l->ack_pending) {
		if (!l->cfg.ack_delay_ns || l->ack_now)
			return l->last_tx_ns;	/* already due */
		d = min_u64(d, l->ack_since_ns + l->cfg.ack_delay_ns);
	}
	/*
	 * The next message is held, refused by the layer above: offer it again
	 * soon. Or a gap is: name it again if it is still there after rto_ns.
	 */
	if (l->nheld && l->held[l->rcv_nxt & (l->cfg.window - 1)].msg)
		d = min_u64(d, l->last_tick_ns + l->cfg.rto_ns / 8);
	else if (l->nheld)
		d = min_u64(d, l->nak_ns + l->cfg.rto_ns);
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

/* crc: msg's, or NULL: computed when a frame must carry it (lazy_crc()), else now. */
static void enqueue(struct fw_link *l, void *msg, size_t len, const uint32_t *crc,
		    uint64_t now_ns)
{
	struct fw_link_msg *m = &l->q[l->snd_tail & (l->cfg.txq - 1)];

	m->data = msg;
	m->len = (uint32_t)len;
	m->crc_known = crc || !lazy_crc(l);
	m->crc = crc ? *crc : m->crc_known ? fw_fabric_crc_copy(0, NULL, msg, len) : 0;
	l->snd_tail++;
	pump(l, now_ns);
}

int fw_link_send(struct fw_link *l, const void *msg, size_t len, uint64_t now_ns)
{
	return fw_link_send_parts(l, msg, len, NULL, 0, now_ns);
}

int fw_link_send_parts(struct fw_link *l, const void *hdr, size_t hdr_len, const void *data,
		       size_t len, uint64_t now_ns)
{
	int err = send_check(l, hdr_len + len);
	uint8_t *copy;
	uint32_t crc;

	if (err)
		return err;
	copy = fw_link_msg_alloc(hdr_len + len);
	if (!copy)
		return -ENOMEM;
	if (lazy_crc(l)) {
		memcpy(copy, hdr, hdr_len);
		if (len)
			memcpy(copy + hdr_len, data, len);
		enqueue(l, copy, hdr_len + len, NULL, now_ns);
		return 0;
	}
	/* Copied in and checksummed in one pass: a frame then reads only its header. */
	crc = fw_fabric_crc_copy(0, copy, hdr, hdr_len);
	if (len)
		crc = fw_fabric_crc_copy(crc, copy + hdr_len, data, len);
	enqueue(l, copy, hdr_len + len, &crc, now_ns);
	return 0;
}

/* Takes msg (freed on failure); its CRC computed in enqueue(), or when a frame needs it. */
int fw_link_send_owned(struct fw_link *l, void *msg, size_t len, uint64_t now_ns)
{
	int err = send_check(l, len);

	if (err) {
		fw_link_msg_free(msg);
		return err;
	}
	enqueue(l, msg, len, NULL, now_ns);
	return 0;
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
	/* A fixed timeout (no rto_max_ns) keeps only the estimate. */
	if (!l->cfg.rto_max_ns)
		return;
	l->rto_cur_ns = l->srtt_ns + 4 * l->rttvar_ns;
	if (l->rto_cur_ns < l->cfg.rto_ns)
		l->rto_cur_ns = l->cfg.rto_ns;
	if (l->rto_cur_ns > l->cfg.rto_max_ns)
		l->rto_cur_ns = l->cfg.rto_max_ns;
}

/*
 * Send seq again now: once per recovery, or again when it was last sent at
 * least rto_ns ago (a receiver names a gap again after that long). true if
 * sent.
 */
static bool fast_resend(struct fw_link *l, uint32_t seq, uint64_t now_ns)
{
	struct fw_link_msg *m = &l->q[seq & (l->cfg.txq - 1)];

	if (m->fast_resent && now_ns - m->sent_ns < l->cfg.rto_ns)
		return false;
	m->fast_resent = true;
	send_data(l, seq, true, now_ns);
	return true;
}

/* A loss: at most half of what was in flight may be in flight now. */
static void enter_recovery(struct fw_link *l, bool timeout)
{
	if (l->recovering)
		return;
	l->recovering = true;
	l->recovery_timeout = timeout;
	l->undo_valid = false;
	l->recover = l->snd_nxt;
	l->ssthresh = (l->snd_nxt - l->snd_una) / 2;
	if (l->ssthresh < FW_LINK_MIN_CWND)
		l->ssthresh = FW_LINK_MIN_CWND;
	if (l->ssthresh > l->cfg.window)
		l->ssthresh = l->cfg.window;
	l->cwnd = timeout ? FW_LINK_MIN_CWND : l->ssthresh;
	if (l->cwnd > l->cfg.window)
		l->cwnd = l->cfg.window;
	l->cwnd_acked = 0;
}

/* Acked frames open the window again: at once up to ssthresh, then slowly. */
static void cwnd_grow(struct fw_link *l, uint32_t acked)
{
	if (l->cwnd < l->ssthresh) {
		l->cwnd += acked;
	} else {
		l->cwnd_acked += acked;
		if (l->cwnd_acked >= l->cwnd) {
			l->cwnd_acked -= l->cwnd;
			l->cwnd++;
		}
	}
	if (l->cwnd > l->cfg.window)
		l->cwnd = l->cfg.window;
}

/*
 * The peer received a DATA frame twice: if a timeout began this recovery and
 * nothing since said a frame was lost (a NAK ends the undo), what it sent
 * again was late, not lost (a receiver or host that did not run for a
 * while, or a refused message held). Back to the window and timeout before
 * it, as TCP's DSACK undo does.
 */
static void undo_spurious(struct fw_link *l, uint64_t now_ns)
{
	if (!l->undo_valid || (l->undo_end_ns && now_ns > l->undo_end_ns))
		return;
	if (l->recovering && l->recovery_timeout)
		l->recovering = false;
	l->undo_valid = false;
	if (l->cwnd < l->undo_cwnd)
		l->cwnd = l->undo_cwnd;
	if (l->ssthresh < l->undo_ssthresh)
		l->ssthresh = l->undo_ssthresh;
	l->cwnd_acked = 0;
	l->rto_cur_ns = l->undo_rto_ns;
	l->stats.spurious_rto++;
}

static void rx_ack(struct fw_link *l, const struct maia_fabric_hdr *h, uint64_t now_ns)
{
	if (h->flags & MAIA_FABRIC_F_DUP)
		undo_spurious(l, now_ns);
	/* Cumulative; an ack beyond what we sent is ignored, not trusted. */
	if (seq_lt(l->snd_una, h->ack) && !seq_lt(l->snd_nxt, h->ack)) {
		const struct fw_link_msg *last = &l->q[(h->ack - 1) & (l->cfg.txq - 1)];
		uint64_t last_sent_ns = last->sent_ns;
		bool last_resent = last->resent, resent = false;

		if (!l->recovering)
			cwnd_grow(l, h->ack - l->snd_una);
		while (l->snd_una != h->ack) {
			resent |= l->q[l->snd_una & (l->cfg.txq - 1)].resent;
			free_msg(l, l->snd_una++);
			l->stats.tx_msgs_delivered_peer++;
		}
		/*
		 * Karn: an ack that covers a frame sent again says nothing of the
		 * round trip, even for the frames after it (the receiver held
		 * them back), nor does one during a recovery.
		 */
		if (!l->recovering && !resent && now_ns >= last_sent_ns)
			rtt_sample(l, now_ns - last_sent_ns);
		l->rto_start_ns = now_ns;
		/*
		 * In a recovery a timeout started, an ack that stops short of
		 * what was in flight names the next frame the receiver lacks
		 * (it holds what came after a gap, so it would have acked past
		 * one it had). After a NAK the receiver names the next gap
		 * itself, and a frame reordered on the wire, not lost, would
		 * make every later ack look partial. So would the acks of a
		 * receiver that did not run for a while and now works through
		 * what it got (the timeout was spurious): an ack whose last
		 * frame was sent once, or sent again less than half a round
		 * trip ago (it answers the first copy), shows that receiver
		 * and sends nothing again; else each of its acks would send
		 * one more duplicate.
		 */
		if (l->recovering && seq_lt(l->snd_una, l->recover)) {
			if (l->recovery_timeout && last_resent &&
			    now_ns - last_sent_ns >= l->srtt_ns / 2)
				fast_resend(l, l->snd_una, now_ns);
		} else {
			/*
			 * The late acks of a stalled receiver end a timeout's
			 * recovery before it got the frame sent again: its
			 * F_DUP comes just after them.
			 */
			if (l->recovering && l->undo_valid && !l->undo_end_ns)
				l->undo_end_ns = now_ns + l->rto_cur_ns;
			l->recovering = false;
		}
	}
	if (seq_lt(l->snd_credit, h->credit))
		l->snd_credit = h->credit;
}

/* The peer lacks [ack, ack + gap): send those frames again (after rx_ack()). */
static void rx_nak(struct fw_link *l, const struct maia_fabric_hdr *h, uint64_t now_ns)
{
	uint32_t n = l->snd_nxt - l->snd_una;
	bool resent = false;

	l->stats.rx_nak++;
	/* An old NAK (the ack has moved on since), or one that names nothing. */
	if (h->ack != l->snd_una || !n || !h->gap)
		return;
	if (h->gap < n)
		n = h->gap;
	enter_recovery(l, false);
	for (uint32_t s = l->snd_una; s != l->snd_una + n; s++)
		resent |= fast_resend(l, s, now_ns);
	/* The timeout restarts for what was sent again, not for a NAK alone. */
	if (resent)
		l->rto_start_ns = now_ns;
}

/*
 * Holds a copy of a message not delivered now: one after a gap, or the
 * next one refused by the layer above. false: no memory (not received).
 */
static bool hold(struct fw_link *l, uint32_t seq, const void *msg, uint32_t len)
{
	struct fw_link_held *slot = held_slot(l, seq);
	uint8_t *copy = fw_buf_alloc(len ? len : 1);

	if (!copy)
		return false;
	fw_ref_copy(copy, msg, len);	/* with its data, if they are elsewhere */
	slot->msg = copy;
	slot->len = len;
	l->nheld++;
	return true;
}

/* Delivers rcv_nxt's message; false when refused (not received after all). */
static bool deliver(struct fw_link *l, const void *msg, uint32_t len)
{
	uint32_t seq = l->rcv_nxt++;

	if (l->ops.deliver(l->opaque, l->cfg.port, msg, len) < 0) {
		/* deliver() may have reset the link: then there is nothing to undo. */
		if (l->state == FW_LINK_UP && l->rcv_nxt == seq + 1)
			l->rcv_nxt = seq;
		l->stats.rx_refused++;
		return false;
	}
	l->stats.rx_msgs++;
	l->ack_pending = true;
	return true;
}

/*
 * Names the gap before the first held message: [rcv_nxt, that seq). Once
 * per gap, and again after a retransmit timeout's worth of time if the gap
 * is still there (the NAK or the frames sent again may have been lost).
 */
static void send_nak(struct fw_link *l, uint64_t now_ns)
{
	struct maia_fabric_hdr h;
	uint32_t s;

	/* Held there: refused by the layer above, not missing. */
	if (held_slot(l, l->rcv_nxt)->msg)
		return;
	/* Within the gap the last NAK named: those frames are on their way. */
	if (l->nak_ns && l->rcv_nxt - l->nak_seq < l->nak_gap && now_ns - l->nak_ns < l->cfg.rto_ns)
		return;
	for (s = l->rcv_nxt + 1; s != l->rcv_nxt + l->cfg.window; s++)
		if (held_slot(l, s)->msg)
			break;
	fill_hdr(l, &h, MAIA_FABRIC_NAK);
	h.gap = s - l->rcv_nxt;
	l->nak_seq = l->rcv_nxt;
	l->nak_gap = h.gap;
	l->nak_ns = now_ns ? now_ns : 1;
	l->stats.tx_nak++;
	xmit(l, &h, NULL, now_ns);
}

/*
 * Delivers the held messages that follow rcv_nxt, in order, and names the
 * next gap if more are held beyond it.
 */
static void drain(struct fw_link *l, uint64_t now_ns)
{
	while (l->nheld && l->state == FW_LINK_UP) {
		struct fw_link_held *slot = held_slot(l, l->rcv_nxt);
		struct fw_link_held m = *slot;
		uint32_t seq = l->rcv_nxt;

		if (!m.msg)
			break;
		slot->msg = NULL;
		l->nheld--;
		if (!deliver(l, m.msg, m.len)) {
			if (l->state == FW_LINK_UP && l->rcv_nxt == seq) {
				*slot = m;	/* offered again later */
				l->nheld++;
			} else {
				fw_buf_free(m.msg);
			}
			return;
		}
		fw_buf_free(m.msg);
	}
	if (l->nheld && l->state == FW_LINK_UP)
		send_nak(l, now_ns);
}

static void rx_data(struct fw_link *l, const struct fw_fabric_frame *f, uint64_t now_ns)
{
	const struct maia_fabric_hdr *h = &f->hdr;

	if (!l->ack_pending)
		l->ack_since_ns = now_ns;
	l->ack_pending = true;
	if (h->flags & MAIA_FABRIC_F_ACK_NOW)
		l->ack_now = true;
	l->unacked_rx++;
	if (!seq_lt(h->seq, l->rcv_nxt + l->cfg.window)) {
		l->stats.drops[MAIA_FABRIC_DROP_OUT_OF_WINDOW]++;
		return;
	}
	if (seq_lt(h->seq, l->rcv_nxt) || held_slot(l, h->seq)->msg) {
		l->stats.drops[MAIA_FABRIC_DROP_DUPLICATE]++;
		l->dup_rx = true;
		l->ack_now = true;	/* the peer timed out: tell it soon */
		drain(l, now_ns);	/* the next one may be held, refused earlier */
		return;
	}
	if (h->seq != l->rcv_nxt) {
		/* After a gap: held, and the gap named at once. */
		if (!hold(l, h->seq, f->payload, h->payload_len)) {
			l->stats.drops[MAIA_FABRIC_DROP_OUT_OF_ORDER]++;
			return;
		}
		l->stats.rx_held++;
		drain(l, now_ns);	/* a refused next one first; else the gap named */
		return;
	}
	if (!deliver(l, f->payload, h->payload_len)) {
		/* Refused: held and offered again at the next frame or tick. */
		if (l->state == FW_LINK_UP && l->rcv_nxt == h->seq)
			hold(l, h->seq, f->payload, h->payload_len);
		return;
	}
	drain(l, now_ns);
}

bool fw_link_frame_marked(const void *frame, size_t len)
{
	uint16_t flags;

	if (len < MAIA_FABRIC_MIN_FRAME)
		return false;
	memcpy(&flags, (const uint8_t *)frame + MAIA_ETH_HLEN +
	       offsetof(struct maia_fabric_hdr, flags), sizeof(flags));
	return flags & MAIA_FABRIC_F_REF;
}

static void rx(struct fw_link *l, const void *frame, size_t len, bool check_crc, uint64_t now_ns)
{
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	const struct maia_fabric_hdr *h = &f.hdr;

	l->stats.rx_frames++;
	l->stats.rx_bytes += len;
	/*
	 * Data in device memory: only a frame the process lent and knows
	 * (rx_ref_ok). Checked before the CRC: a copy of such a frame is
	 * malformed whatever its CRC says.
	 */
	if (fw_link_frame_marked(frame, len) && (check_crc || !l->rx_ref_ok) &&
	    !fw_fabric_parse_ext(frame, len, &f, &why, false)) {
		l->stats.drops[MAIA_FABRIC_DROP_REF]++;
		return;
	}
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
	if (h->type == MAIA_FABRIC_NAK)
		rx_nak(l, h, now_ns);
	else if (h->type == MAIA_FABRIC_DATA)
		rx_data(l, &f, now_ns);
	/* deliver() may have reset the link. */
	if (l->state != FW_LINK_UP)
		return;
	pump(l, now_ns);
	/* ack_every 0 with an ack delay: no count, the delay and ACK_NOW alone. */
	if (l->ack_pending && (l->cfg.ack_every ? l->unacked_rx >= l->cfg.ack_every :
				 !l->cfg.ack_delay_ns))
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
	if (l->state == FW_LINK_UP && l->nheld) {
		uint32_t taken = l->rcv_nxt;

		drain(l, now_ns);
		/* Taken now, refused before: its sender has waited, ack it at once. */
		if (l->rcv_nxt != taken)
			l->ack_now = true;
	}
	/*
	 * A peer known to be alive but behind (a device of this process whose
	 * rounds are late) is not silent: the same half dead time again.
	 */
	if (l->state == FW_LINK_UP && now_ns - l->last_rx_ns >= l->cfg.dead_ns &&
	    l->ops.peer_behind && l->ops.peer_behind(l->opaque, l->cfg.port)) {
		l->last_rx_ns = now_ns - l->cfg.dead_ns / 2;
		l->stats.starved++;
	}
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
		/*
		 * The oldest unacked frame again, and a new recovery: the
		 * receiver holds what it got after it, and its acks and NAKs
		 * then name what else it lacks.
		 */
		/* A timeout again in the same recovery keeps the first's state. */
		bool keep = l->recovering && l->undo_valid;
		bool undo = !l->recovering || l->undo_valid;
		uint32_t cwnd = keep ? l->undo_cwnd : l->cwnd;
		uint32_t ssthresh = keep ? l->undo_ssthresh : l->ssthresh;
		uint64_t rto = keep ? l->undo_rto_ns : l->rto_cur_ns;

		for (uint32_t s = l->snd_una; s != l->snd_nxt; s++)
			l->q[s & (l->cfg.txq - 1)].fast_resent = false;
		l->recovering = false;
		enter_recovery(l, true);
		/* What to go back to if the peer turns out to have had it. */
		l->undo_valid = undo;
		l->undo_cwnd = cwnd;
		l->undo_ssthresh = ssthresh;
		l->undo_rto_ns = rto;
		l->undo_end_ns = 0;
		l->q[l->snd_una & (l->cfg.txq - 1)].fast_resent = true;
		send_data(l, l->snd_una, true, now_ns);
		l->rto_start_ns = now_ns;
		if (l->cfg.rto_max_ns)
			l->rto_cur_ns = min_u64(2 * l->rto_cur_ns, l->cfg.rto_max_ns);
	}
	pump(l, now_ns);
	/* With an ack delay, a DATA frame of ours may still carry it (wire version 6). */
	if (l->ack_pending && (!l->cfg.ack_delay_ns || l->ack_now ||
			       now_ns - l->ack_since_ns >= l->cfg.ack_delay_ns))
		send_ctrl(l, MAIA_FABRIC_ACK, now_ns);
	if (now_ns - l->last_tx_ns >= l->cfg.keepalive_ns)
		send_ctrl(l, MAIA_FABRIC_KEEPALIVE, now_ns);
}
