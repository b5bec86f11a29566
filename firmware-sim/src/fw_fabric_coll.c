// SPDX-License-Identifier: MIT
/*
 * The collective engine: pipelined ring all-reduce, all-gather,
 * reduce-scatter, broadcast and all-to-all over MAIA_FMSG_COLL messages
 * (Documentation/hw/fabric.rst, "Collectives", which gives the steps, the
 * chunking and the reduction order this file implements). No lock, no
 * thread, no clock of its own: see fw_fabric_coll.h.
 *
 * Vocabulary. Rank r receives from rank r - 1 ("pred") on recv_port and
 * sends to rank r + 1 on send_port. A step is one hop of the ring; the
 * messages of a step form a stream of bytes ("the step's block") that the
 * sender cuts into chunks and the receiver accepts strictly in order (per
 * step; steps interleave). A rank injects its own data as step 0 (a
 * broadcast's root only) and forwards what it receives as the next step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric.h"
#include "fw_fabric_coll.h"
#include "maia/hw/dtype.h"
#include "maia/hw/queue.h"
#include "tensor/te.h"

#define NS_PER_MS	1000000ull
#define HDR		MAIA_FABRIC_MSG_HDR_LEN

/* A message held until its collective starts or until there is room to forward it. */
struct fw_coll_early {
	struct fw_coll_early *next;
	unsigned int port;
	bool accepted;			/* the running collective's, checked, in rx_off */
	struct maia_fabric_coll_msg h;
	uint8_t data[];			/* h.len bytes */
};

void fw_coll_config_defaults(struct fw_coll_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->chunk_bytes = FW_COLL_DEFAULT_CHUNK;
	cfg->timeout_ms = FW_COLL_DEFAULT_TIMEOUT_MS;
	cfg->early_msgs = FW_COLL_DEFAULT_EARLY_MSGS;
	cfg->early_bytes = FW_COLL_DEFAULT_EARLY_BYTES;
}

static bool chunk_valid(uint64_t v)
{
	return v >= 4 && v <= MAIA_FABRIC_MSG_MAX_DATA && !(v % 4);
}

int fw_coll_init(struct fw_coll *c, const struct fw_coll_config *cfg,
		 const struct fw_coll_ops *ops, void *opaque)
{
	memset(c, 0, sizeof(*c));
	if (!cfg || !ops || !ops->tx_room || !ops->tx || !ops->mem_read || !ops->mem_write ||
	    !ops->tx_owned != !ops->tx_buf || !ops->tx_owned != !ops->tx_buf_free ||
	    cfg->nports > MAIA_FABRIC_MAX_PORTS || !chunk_valid(cfg->chunk_bytes) ||
	    !cfg->timeout_ms)
		return -EINVAL;
	c->cfg = *cfg;
	c->ops = *ops;
	c->opaque = opaque;
	/*
	 * The work buffers come with the first collective, sized to it
	 * (buffers()); so do rx_off and model_in beyond FW_COLL_INLINE_RANKS
	 * ranks (rank_arrays()).
	 */
	c->rx_off = c->rx_off_inline;
	c->model_in = c->model_in_inline;
	return 0;
}

/* The buffer messages are built in: the transport's own when it takes them without a copy. */
static uint8_t *txbuf_alloc(struct fw_coll *c, size_t len)
{
	return c->ops.tx_owned ? c->ops.tx_buf(c->opaque, len) : malloc(len);
}

static void txbuf_free(struct fw_coll *c, uint8_t *buf)
{
	if (c->ops.tx_owned && buf)
		c->ops.tx_buf_free(c->opaque, buf);
	else
		free(buf);
}

static void early_free_all(struct fw_coll *c)
{
	while (c->early_head) {
		struct fw_coll_early *e = c->early_head;

		c->early_head = e->next;
		free(e);
	}
	c->early_tail = NULL;
	c->early_n = 0;
	c->early_bytes = 0;
}

void fw_coll_destroy(struct fw_coll *c)
{
	early_free_all(c);
	txbuf_free(c, c->txbuf);
	free(c->own);
	free(c->acc);
	if (c->rx_off != c->rx_off_inline)
		free(c->rx_off);
	if (c->model_in != c->model_in_inline)
		free(c->model_in);
	free(c->gathered);
	c->txbuf = c->own = c->gathered = NULL;
	c->acc = NULL;
	c->rx_off = c->model_in = NULL;
	c->buf_bytes = c->gathered_bytes = 0;
}

int fw_coll_reinit(struct fw_coll *c, const struct fw_coll_config *cfg,
		   const struct fw_coll_ops *ops, void *opaque)
{
	uint8_t *txbuf = c->txbuf, *own = c->own, *gathered = c->gathered;
	size_t buf_bytes = c->buf_bytes, gathered_bytes = c->gathered_bytes;
	struct fw_coll_ops old_ops = c->ops;
	void *old_opaque = c->opaque;
	float *acc = c->acc;
	int rc;

	/* What the engine held for one collective goes; its work buffers stay. */
	c->txbuf = c->own = c->gathered = NULL;
	c->acc = NULL;
	fw_coll_destroy(c);
	rc = fw_coll_init(c, cfg, ops, opaque);
	c->txbuf = txbuf;
	c->own = own;
	c->acc = acc;
	c->gathered = gathered;
	c->buf_bytes = buf_bytes;
	c->gathered_bytes = gathered_bytes;
	if (rc) {
		/* The buffers go back to whom they came from. */
		c->ops = old_ops;
		c->opaque = old_opaque;
		fw_coll_destroy(c);
	}
	return rc;
}

static void poison_buf(void *p, size_t n, bool poison)
{
	if (!p)
		return;
	if (poison)
		FW_FABRIC_POISON(p, n);
	else
		FW_FABRIC_UNPOISON(p, n);
}

void fw_coll_poison(struct fw_coll *c, bool poison)
{
	poison_buf(c->txbuf, HDR + c->buf_bytes, poison);
	poison_buf(c->own, c->buf_bytes, poison);
	poison_buf(c->acc, c->buf_bytes, poison);
	poison_buf(c->gathered, c->gathered_bytes, poison);
}

void fw_coll_reset(struct fw_coll *c)
{
	early_free_all(c);
	c->state = FW_COLL_IDLE;
	c->ended_valid = false;
}

/* ---- geometry ---- */

static unsigned int nranks(const struct fw_coll *c)
{
	return c->cmd.nranks;
}

/* (rank + k) mod nranks for -2 * nranks < k < 2 * nranks. */
static unsigned int ring(const struct fw_coll *c, int k)
{
	int n = nranks(c);

	return (unsigned int)(((int)c->cmd.rank + k + 2 * n) % n);
}

/* Whether the ring carries partial results (not so in a gather-reduce). */
static bool is_reduction(const struct fw_coll *c)
{
	return (c->cmd.coll == MAIA_COLL_ALL_REDUCE && !c->gather) ||
	       c->cmd.coll == MAIA_COLL_REDUCE_SCATTER;
}

/*
 * Block b of the reduced vector, in elements: all-reduce splits count into
 * nranks blocks, the first count % nranks one element longer; reduce-scatter's
 * blocks are count each.
 */
static uint64_t block_start(const struct fw_coll *c, unsigned int b)
{
	uint64_t n = nranks(c), base, rem;

	if (c->cmd.coll != MAIA_COLL_ALL_REDUCE)
		return b * c->cmd.count;
	base = c->cmd.count / n;
	rem = c->cmd.count % n;
	return b * base + (b < rem ? b : rem);
}

static uint64_t block_len(const struct fw_coll *c, unsigned int b)
{
	uint64_t n = nranks(c);

	if (c->cmd.coll != MAIA_COLL_ALL_REDUCE)
		return c->cmd.count;
	return c->cmd.count / n + (b < c->cmd.count % n ? 1 : 0);
}

/* All-reduce: steps 0 .. n-2 reduce, n-1 .. 2n-3 gather. */
static bool reduce_step(const struct fw_coll *c, unsigned int s)
{
	return c->cmd.coll == MAIA_COLL_REDUCE_SCATTER ||
	       (c->cmd.coll == MAIA_COLL_ALL_REDUCE && !c->gather && s < nranks(c) - 1u);
}

/* Bytes per element on the wire: reduction steps carry FP32 partial results. */
static unsigned int wire_es(const struct fw_coll *c, unsigned int s)
{
	return reduce_step(c, s) ? 4 : c->es;
}

/* Bytes of step s's block as this rank receives it (from rank - 1). */
static uint64_t rx_step_bytes(const struct fw_coll *c, unsigned int s)
{
	unsigned int n = nranks(c);

	if (c->gather)
		return (uint64_t)(n - 1) * c->cmd.count * c->es;	/* one step: n-1 inputs */
	switch (c->cmd.coll) {
	case MAIA_COLL_ALL_REDUCE:
		if (s < n - 1)
			return block_len(c, ring(c, -(int)s - 2)) * 4;
		return block_len(c, ring(c, -1 - (int)(s - (n - 1)))) * c->es;
	case MAIA_COLL_REDUCE_SCATTER:
		return c->cmd.count * 4;
	case MAIA_COLL_ALL_TO_ALL:
		return (uint64_t)(n - 1 - s) * c->cmd.count * c->es;
	default:	/* ALL_GATHER, BROADCAST */
		return c->cmd.count * c->es;
	}
}

/* ---- ending ---- */

/*
 * A message of an earlier collective of the running one's communicator:
 * every rank runs a communicator's collectives in seq order and a link
 * keeps order, so it belongs to one this rank never ran or that failed.
 * Other communicators' messages are never stale here: their collectives
 * may run at the same time, on other queues.
 */
static bool stale_for(const struct fw_coll *c, unsigned int port,
		      const struct maia_fabric_coll_msg *h)
{
	return port == c->cmd.recv_port && h->comm_id == c->cmd.comm_id &&
	       (int32_t)(h->seq - c->cmd.seq) < 0;
}

static bool held_is_current(const struct fw_coll *c, const struct fw_coll_early *e)
{
	return e->port == c->cmd.recv_port && e->h.comm_id == c->cmd.comm_id &&
	       e->h.seq == c->cmd.seq;
}

static void early_unlink(struct fw_coll *c, struct fw_coll_early *prev, struct fw_coll_early *e)
{
	if (prev)
		prev->next = e->next;
	else
		c->early_head = e->next;
	if (c->early_tail == e)
		c->early_tail = prev;
	c->early_n--;
	c->early_bytes -= e->h.len;
	free(e);
}

/*
 * The command's struct maia_coll_report at report_addr, if it has one. A
 * report that cannot be written fails a collective that had succeeded.
 */
static uint32_t write_report(struct fw_coll *c, uint32_t status)
{
	const struct fw_coll_result *r = &c->result;
	struct maia_coll_report rep = {
		.status = status,
		.step = r->step,
		.port = status == MAIA_STATUS_OK ? 0xffffffffu : r->port,
		.peer_rank = status == MAIA_STATUS_OK ? 0xffffffffu : r->peer,
		.bytes_sent = c->sent_bytes,
		.bytes_received = c->recv_bytes,
		.unreachable_first = status == MAIA_STATUS_OK ? 0 : c->unreach_first,
		.unreachable_count = status == MAIA_STATUS_OK ? 0 : c->unreach_count,
	};
	/* The 1.10 fields only where the command says there is room for them. */
	size_t size = c->cmd.hdr.flags & MAIA_COLL_F_REACH ? sizeof(rep) : MAIA_COLL_REPORT_SIZE_1_3;
	int rc;

	if (!c->cmd.report_addr)
		return status;
	rc = c->ops.mem_write(c->opaque, c->cmd.report_addr, &rep, size);
	if (rc && status == MAIA_STATUS_OK)
		return rc > 0 ? (uint32_t)rc : MAIA_STATUS_MMU_FAULT;
	return status;
}

static void finish(struct fw_coll *c, uint32_t status)
{
	struct fw_coll_early *prev = NULL, *e = c->early_head;

	if (status == MAIA_STATUS_OK && c->rx_first + c->rx_steps)
		c->result.step = (uint16_t)(c->rx_first + c->rx_steps - 1);
	status = write_report(c, status);
	c->state = FW_COLL_DONE;
	c->result.status = status;
	c->ended_valid = true;
	c->ended_comm = c->cmd.comm_id;
	c->ended_seq = c->cmd.seq;
	if (status != MAIA_STATUS_OK)
		c->stats.failures++;
	/* What is held of this collective is of no use any more. */
	while (e) {
		struct fw_coll_early *next = e->next;

		if (held_is_current(c, e)) {
			c->stats.drop_stale++;
			early_unlink(c, prev, e);
		} else {
			prev = e;
		}
		e = next;
	}
}

static void fail(struct fw_coll *c, uint32_t status, unsigned int step, bool sending)
{
	c->result.step = (uint16_t)step;
	c->result.sending = sending;
	c->result.port = sending ? c->cmd.send_port : c->cmd.recv_port;
	c->result.peer = (uint16_t)ring(c, sending ? 1 : -1);
	finish(c, status);
}

/* ---- memory and the wire ---- */

/* 0, or the status a failed access ends the collective with. */
static uint32_t mem_status(int rc)
{
	return rc > 0 ? (uint32_t)rc : MAIA_STATUS_MMU_FAULT;
}

static int mem_read(struct fw_coll *c, uint64_t va, void *buf, size_t len)
{
	int rc = len ? c->ops.mem_read(c->opaque, va, buf, len) : 0;

	return rc ? (int)mem_status(rc) : 0;
}

/* This rank's len bytes at va: in place if they can be, else copied into buf. */
static int mem_view(struct fw_coll *c, uint64_t va, uint8_t *buf, size_t len,
		    const uint8_t **view)
{
	const void *p = c->ops.mem_map && len ? c->ops.mem_map(c->opaque, va, len) : NULL;

	*view = p ? p : buf;
	return p ? 0 : mem_read(c, va, buf, len);
}

static int mem_write(struct fw_coll *c, uint64_t va, const void *buf, size_t len)
{
	int rc = len ? c->ops.mem_write(c->opaque, va, buf, len) : 0;

	return rc ? (int)mem_status(rc) : 0;
}

/* Modeled nanoseconds len bytes take on the link. */
static uint64_t link_ns(const struct fw_coll *c, uint64_t len)
{
	return c->cfg.model_chip ? fw_model_coll_link_ns(c->cfg.model_chip, len) : 0;
}

/*
 * The modeled time a message leaves: after everything this rank sent before
 * it has gone over the link, and after the chunk it comes from arrived.
 */
static uint64_t model_send_ns(struct fw_coll *c, uint32_t len)
{
	uint64_t t = c->model_start_ns + link_ns(c, c->sent_bytes);

	if (t < c->model_fwd_ns)
		t = c->model_fwd_ns;
	if (c->model_end_ns < t + link_ns(c, len))
		c->model_end_ns = t + link_ns(c, len);
	return t;
}

/*
 * Gather-reduce's message holds up to GATHER_PIECES inputs' bytes (pieces):
 * each is priced as if it were a message of its own (its hop after this
 * rank's earlier bytes went over the link and after it arrived here:
 * model_in[]), so that the modeled times do not depend on which inputs
 * happened to be here together. model_ns is the first piece's arrival,
 * model_delta_ns[] the others' past it.
 */
#define GATHER_PIECES	3u

static void gather_price(struct fw_coll *c, struct maia_fabric_coll_msg *h)
{
	uint64_t blk = c->cmd.count * c->es, before = 0;

	for (unsigned int i = 0; before < h->len && i < GATHER_PIECES; i++) {
		uint64_t o = h->offset + before, j = o / blk;
		uint64_t l = blk - o % blk < h->len - before ? blk - o % blk : h->len - before;
		uint64_t t = c->model_start_ns + link_ns(c, c->sent_bytes + before), arr;

		if (j && t < c->model_in[j - 1])
			t = c->model_in[j - 1];
		if (c->model_end_ns < t + link_ns(c, l))
			c->model_end_ns = t + link_ns(c, l);
		arr = fw_model_coll_hop(c->cfg.model_chip, c->cfg.model_cable_ns[c->cmd.send_port],
					t, l);
		if (!i)
			h->model_ns = arr;
		else
			h->model_delta_ns[i - 1] = arr <= h->model_ns ? 0 :
						   arr - h->model_ns > UINT32_MAX ? UINT32_MAX :
						   (uint32_t)(arr - h->model_ns);
		before += l;
	}
}

/*
 * Whether a message to the send port may leave its data where they are in
 * this device's memory (fw_fabric_ref.h): the FP32 reductions' and every
 * dtype's gather steps, as a ring runs them.
 */
static bool by_ref(struct fw_coll *c, uint64_t len)
{
	return c->ops.tx_ref && !c->gather &&
	       c->ops.tx_ref_ok(c->opaque, c->cmd.send_port, (uint32_t)len);
}

/*
 * Send the len data bytes already in txbuf + HDR as step s at offset, or
 * (ref: by_ref() said so) with the len bytes at ref as its data.
 */
static int send_msg_ref(struct fw_coll *c, unsigned int s, uint64_t offset, uint32_t len,
			const void *ref)
{
	struct maia_fabric_coll_msg h = {
		.type = MAIA_FMSG_COLL,
		.flags = c->gather ? MAIA_FABRIC_COLL_GATHER_REDUCE : 0,
		.step = (uint16_t)s,
		.comm_id = c->cmd.comm_id,
		.seq = c->cmd.seq,
		.len = len,
		.offset = offset,
		.src_rank = c->cmd.rank,
	};
	int rc;

	/* modeled: when it arrives, its hop priced here, over this port's cable */
	if (c->cfg.model_chip && c->gather)
		gather_price(c, &h);
	else if (c->cfg.model_chip)
		h.model_ns = fw_model_coll_hop(c->cfg.model_chip,
					       c->cfg.model_cable_ns[c->cmd.send_port],
					       model_send_ns(c, len), len);
	memcpy(c->txbuf, &h, sizeof(h));
	if (c->ops.tx_owned) {
		/* txbuf goes as the message; the next one is built in a new buffer. */
		uint8_t *next = c->ops.tx_buf(c->opaque, HDR + c->buf_bytes);

		if (!next)
			rc = -1;
		else if (ref)
			rc = c->ops.tx_ref(c->opaque, c->cmd.send_port, c->txbuf, HDR, ref, len);
		else
			rc = c->ops.tx_owned(c->opaque, c->cmd.send_port, c->txbuf, HDR + len);
		if (next)
			c->txbuf = next;
	} else {
		rc = c->ops.tx(c->opaque, c->cmd.send_port, c->txbuf, HDR + len);
	}
	if (rc < 0) {
		fail(c, MAIA_STATUS_FABRIC_LINK, s, true);
		return -1;
	}
	c->stats.tx_msgs++;
	c->stats.tx_bytes += len;
	c->sent_bytes += len;
	return 0;
}

/* Send the len data bytes already in txbuf + HDR as step s at offset. */
static int send_msg(struct fw_coll *c, unsigned int s, uint64_t offset, uint32_t len)
{
	return send_msg_ref(c, s, offset, len, NULL);
}

static float ld_f32(const uint8_t *p)
{
	float f;

	memcpy(&f, p, 4);
	return f;
}

static float ld_elem(const struct fw_coll *c, const uint8_t *p, size_t i)
{
	uint16_t h;

	if (c->es == 4)
		return ld_f32(p + 4 * i);
	memcpy(&h, p + 2 * i, 2);
	return fw_bf16_to_f32(h);
}

/* Copy len bytes between two places of the job's memory, a chunk at a time. */
static int local_copy(struct fw_coll *c, uint64_t src, uint64_t dst, uint64_t len)
{
	if (src == dst)
		return 0;
	for (uint64_t off = 0; off < len; off += c->buf_bytes) {
		size_t n = len - off < c->buf_bytes ? len - off : c->buf_bytes;

		int rc = mem_read(c, src + off, c->own, n);

		if (!rc)
			rc = mem_write(c, dst + off, c->own, n);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- this rank's own data: step 0 ---- */

static uint64_t inject_len(const struct fw_coll *c)
{
	unsigned int n = nranks(c);

	if (n == 1)
		return 0;
	if (c->gather)		/* its own input and n-2 it forwards */
		return (uint64_t)(n - 1) * c->cmd.count * c->es;
	switch (c->cmd.coll) {
	case MAIA_COLL_ALL_REDUCE:
		return block_len(c, ring(c, -1)) * 4;
	case MAIA_COLL_REDUCE_SCATTER:
		return c->cmd.count * 4;
	case MAIA_COLL_ALL_TO_ALL:
		return (uint64_t)(n - 1) * c->cmd.count * c->es;
	case MAIA_COLL_BROADCAST:
		return c->cmd.rank == c->cmd.root ? c->cmd.count * c->es : 0;
	default:	/* ALL_GATHER */
		return c->cmd.count * c->es;
	}
}

/*
 * Gather-reduce's stream to rank r+1 (one step, MAIA_FABRIC_COLL_GATHER_REDUCE):
 * input j (j = 0 .. n-2) is rank r-j's, this rank's own first, then the
 * first n-2 inputs it receives, as they arrive. Received chunks are always
 * taken (kept in c->gathered), never held for room, and what goes on is read
 * back from there: each message carries all of the stream that is there to
 * send, up to a chunk and GATHER_PIECES inputs, so a rank that starts after
 * its predecessor sends its own input and what it holds in one message
 * (Documentation/hw/fabric.rst, "Gather-reduce").
 */
static uint64_t gather_ready(const struct fw_coll *c)
{
	uint64_t blk = c->cmd.count * c->es, fwd = (uint64_t)(nranks(c) - 2) * blk;

	return blk + (c->rx_off[0] < fwd ? c->rx_off[0] : fwd);
}

/* len bytes of the stream to rank r+1 at off, from the gathered inputs, to out. */
static void gather_out(struct fw_coll *c, uint64_t off, uint8_t *out, uint64_t len)
{
	uint64_t blk = c->cmd.count * c->es;

	for (uint64_t done = 0; done < len;) {
		uint64_t o = off + done, j = o / blk, in = o % blk;
		uint64_t n = blk - in < len - done ? blk - in : len - done;

		memcpy(out + done, c->gathered + ring(c, -(int)j) * blk + in, n);
		done += n;
	}
}

/*
 * Step 0's chunk at off (len bytes at va of this rank's memory) by
 * reference, if it can go so: true when it was sent (or its sending failed
 * the collective), false: the caller copies it.
 */
static bool inject_ref(struct fw_coll *c, uint64_t va, uint64_t off, uint64_t len)
{
	const void *p = by_ref(c, len) && c->ops.mem_map ? c->ops.mem_map(c->opaque, va, len) : NULL;

	if (!p)
		return false;
	if (!send_msg_ref(c, 0, off, (uint32_t)len, p)) {
		c->model_fwd_ns = 0;
		c->inject_off += len;
	}
	return true;
}

/* Send one chunk of this rank's step-0 stream. 0, or -1: the collective failed. */
static int inject_one(struct fw_coll *c)
{
	uint64_t off = c->inject_off, len = c->inject_len - off, src;
	uint8_t *out = c->txbuf + HDR;
	int rc;

	/* chunk_bytes is a multiple of 4, so of every wire element size. */
	if (len > c->chunk_bytes)
		len = c->chunk_bytes;
	if (c->gather) {
		/* Only what is there, at most GATHER_PIECES inputs (gather_price()). */
		uint64_t blk = c->cmd.count * c->es, end = (off / blk + GATHER_PIECES) * blk;

		len = gather_ready(c) - off < len ? gather_ready(c) - off : len;
		len = end - off < len ? end - off : len;
		gather_out(c, off, out, len);
	} else if (is_reduction(c)) {
		/* Own values of block rank - 1, as FP32. */
		uint64_t e0 = off / 4, n = len / 4;
		unsigned int b = ring(c, -1);

		src = c->cmd.send_addr + (block_start(c, b) + e0) * c->es;
		if (c->es == 4 && inject_ref(c, src, off, len))
			return c->state == FW_COLL_RUNNING ? 0 : -1;
		/* FP32 values go on as they are: straight into the message. */
		rc = mem_read(c, src, c->es == 4 ? out : c->own, n * c->es);
		if (rc)
			goto fault;
		for (uint64_t i = 0; c->es != 4 && i < n; i++) {
			float f = ld_elem(c, c->own, i);

			memcpy(out + 4 * i, &f, 4);
		}
	} else if (c->cmd.coll == MAIA_COLL_ALL_TO_ALL) {
		/* Blocks for ranks r + 1, r + 2, ...; a chunk stays in one block. */
		uint64_t blk = c->cmd.count * c->es, k = off / blk, within = off % blk;

		if (len > blk - within)
			len = blk - within;
		src = c->cmd.send_addr + ring(c, (int)k + 1) * blk + within;
		rc = mem_read(c, src, out, len);
		if (rc)
			goto fault;
	} else {
		if (inject_ref(c, c->cmd.send_addr + off, off, len))
			return c->state == FW_COLL_RUNNING ? 0 : -1;
		rc = mem_read(c, c->cmd.send_addr + off, out, len);
		if (rc)
			goto fault;
	}
	if (send_msg(c, 0, off, (uint32_t)len))
		return -1;
	c->model_fwd_ns = 0;
	c->inject_off += len;
	return 0;
fault:
	fail(c, (uint32_t)rc, 0, true);
	return -1;
}

/* ---- received chunks ---- */

/* Whether using a chunk of step s at [off, off + len) sends a message. */
static bool forwards(const struct fw_coll *c, unsigned int s, uint64_t off, uint32_t len)
{
	unsigned int n = nranks(c);

	if (c->gather)		/* what goes on is sent from c->gathered (gather_out()) */
		return false;
	switch (c->cmd.coll) {
	case MAIA_COLL_ALL_REDUCE:
		return s < 2 * n - 3;
	case MAIA_COLL_REDUCE_SCATTER:
	case MAIA_COLL_ALL_GATHER:
		return s < n - 2;
	case MAIA_COLL_BROADCAST:
		return ring(c, 1) != c->cmd.root;
	default:	/* ALL_TO_ALL: the part past the first block goes on */
		return off + len > c->cmd.count * c->es;
	}
}

/* The byte address in recv_addr where element e0 of step s's block lands. */
static uint64_t rx_dest(const struct fw_coll *c, unsigned int s, uint64_t e0)
{
	unsigned int n = nranks(c);
	uint64_t b;

	switch (c->cmd.coll) {
	case MAIA_COLL_ALL_REDUCE:
		/* Reduce steps land only at the last one, in block rank. */
		b = s < n - 1 ? c->cmd.rank : ring(c, -1 - (int)(s - (n - 1)));
		return c->cmd.recv_addr + (block_start(c, (unsigned int)b) + e0) * c->es;
	case MAIA_COLL_REDUCE_SCATTER:
	case MAIA_COLL_BROADCAST:
		return c->cmd.recv_addr + e0 * c->es;
	case MAIA_COLL_ALL_GATHER:
		b = ring(c, -1 - (int)s);
		return c->cmd.recv_addr + (b * c->cmd.count + e0) * c->es;
	default:	/* ALL_TO_ALL: the first block is from rank - 1 - s */
		b = ring(c, -1 - (int)s);
		return c->cmd.recv_addr + (b * c->cmd.count + e0) * c->es;
	}
}

/* Gather-reduce: a chunk at offset off of the stream from rank r-1 (gather_ready()), kept. */
static void gather_in(struct fw_coll *c, const struct maia_fabric_coll_msg *h, const uint8_t *data)
{
	uint64_t blk = c->cmd.count * c->es;

	for (uint64_t done = 0, i = 0; done < h->len; i++) {
		uint64_t o = h->offset + done, k = o / blk, in = o % blk;
		uint64_t n = blk - in < h->len - done ? blk - in : h->len - done;
		/* modeled: this piece's arrival (gather_price()) */
		uint64_t arr = !h->model_ns ? 0 :
			       h->model_ns + (i && i < GATHER_PIECES ? h->model_delta_ns[i - 1] : 0);

		/* input k of the stream from rank r-1 is rank r-1-k's */
		memcpy(c->gathered + ring(c, -1 - (int)k) * blk + in, data + done, n);
		if (c->model_in[k] < arr)
			c->model_in[k] = arr;
		if (c->model_end_ns < arr)
			c->model_end_ns = arr;
		done += n;
	}
}

/* A reduction step's chunk: add this rank's values, pass on or land. */
static int use_reduce(struct fw_coll *c, unsigned int s, uint64_t off, const uint8_t *data,
		      uint32_t len)
{
	unsigned int n = nranks(c), b = ring(c, -(int)s - 2);
	uint64_t e0 = off / 4, cnt = len / 4;
	uint8_t *out = c->txbuf + HDR, *dst = NULL;
	bool sends = c->cmd.coll == MAIA_COLL_ALL_REDUCE;
	const uint8_t *own;
	int rc;

	rc = mem_view(c, c->cmd.send_addr + (block_start(c, b) + e0) * c->es, c->own,
		      cnt * c->es, &own);
	if (rc)
		goto fault;
	/*
	 * FP32's last step: the result lands in the job's memory in the same
	 * pass (reduce-scatter's alone: it sends nothing on).
	 */
	if (s == n - 2 && c->es == 4 && cnt && c->ops.mem_map_write)
		dst = c->ops.mem_map_write(c->opaque, rx_dest(c, s, e0), cnt * 4);
	if (dst && !sends)
		out = dst;
	if (dst && sends && by_ref(c, cnt * 4)) {
		/* Stored once, where it lands; the message goes on pointing at it. */
		fw_coll_reduce2(c->cmd.redop, c->es, dst, NULL, data, own, cnt, true);
		return send_msg_ref(c, n - 1, e0 * 4, (uint32_t)(cnt * 4), dst);
	}
	/* One pass, into the message that goes on (BF16's last step: acc, to round). */
	fw_coll_reduce2(c->cmd.redop, c->es, c->es == 4 || s < n - 2 ? out : (uint8_t *)c->acc,
			sends ? dst : NULL, data, own, cnt, true);
	if (s < n - 2)
		return send_msg(c, s + 1, off, len);
	/* Last reduce step: block rank is final (FP32: out holds it already). */
	if (c->es != 4)
		fw_coll_round_bf16(out, c->acc, cnt);
	rc = dst ? 0 : mem_write(c, rx_dest(c, s, e0), out, cnt * c->es);
	if (rc)
		goto fault;
	if (sends)
		return send_msg(c, n - 1, e0 * c->es, (uint32_t)(cnt * c->es));
	return 0;
fault:
	fail(c, (uint32_t)rc, s, false);
	return -1;
}

static int use_chunk_data(struct fw_coll *c, const struct maia_fabric_coll_msg *h,
			  const uint8_t *data);

/* Use one accepted chunk of the running collective. 0, or -1: it failed. */
static int use_chunk(struct fw_coll *c, const struct maia_fabric_coll_msg *h, const uint8_t *data)
{
	int rc;

	/* modeled: the sender priced its hop (send_msg()): model_ns is its arrival */
	c->model_fwd_ns = 0;
	if (c->cfg.model_chip && h->model_ns) {
		c->model_fwd_ns = h->model_ns;
		if (c->model_end_ns < c->model_fwd_ns)
			c->model_end_ns = c->model_fwd_ns;
	}
	rc = use_chunk_data(c, h, data);
	c->model_fwd_ns = 0;
	return rc;
}

static int use_chunk_data(struct fw_coll *c, const struct maia_fabric_coll_msg *h,
			  const uint8_t *data)
{
	unsigned int s = h->step;
	uint64_t off = h->offset, here = h->len;

	c->stats.rx_msgs++;
	c->stats.rx_bytes += h->len;
	c->recv_bytes += h->len;
	if (reduce_step(c, s))
		return use_reduce(c, s, off, data, h->len);
	if (c->cmd.coll == MAIA_COLL_ALL_TO_ALL) {
		uint64_t blk = c->cmd.count * c->es;

		here = off >= blk ? 0 : (off + here > blk ? blk - off : here);
		if (here < h->len) {
			/* The rest is for ranks further on: step s + 1, one block less. */
			uint64_t skip = here, foff = off + here - blk;

			memcpy(c->txbuf + HDR, data + skip, h->len - skip);
			if (send_msg(c, s + 1, foff, (uint32_t)(h->len - skip)))
				return -1;
		}
	} else if (c->gather) {
		gather_in(c, h, data);
		return 0;
	} else if (forwards(c, s, off, h->len)) {
		/* Where it lands, in place if it can be: both copies in one pass. */
		uint8_t *dst = here && c->ops.mem_map_write ?
			       c->ops.mem_map_write(c->opaque, rx_dest(c, s, off / c->es), here) : NULL;

		if (dst && here == h->len && by_ref(c, here)) {
			/* Landed once; the message goes on pointing at it. */
			fw_coll_land(dst, data, here);
			return send_msg_ref(c, s + 1, off, h->len, dst);
		}
		fw_coll_copy2(c->txbuf + HDR, dst, data, h->len);
		here = dst ? 0 : here;
		if (send_msg(c, s + 1, off, h->len))
			return -1;
	}
	if (here) {
		uint8_t *dst = c->ops.mem_map_write ?
			       c->ops.mem_map_write(c->opaque, rx_dest(c, s, off / c->es), here) : NULL;
		int rc = 0;

		if (dst)
			fw_coll_land(dst, data, here);
		else
			rc = mem_write(c, rx_dest(c, s, off / c->es), data, here);
		if (rc) {
			fail(c, (uint32_t)rc, s, false);
			return -1;
		}
	}
	return 0;
}

/* ---- bookkeeping of what arrived ---- */

static bool rx_step_expected(const struct fw_coll *c, unsigned int s)
{
	return s >= c->rx_first && s < c->rx_first + c->rx_steps;
}

/* Whether every byte this rank receives has arrived (used or held). */
static bool rx_arrived(const struct fw_coll *c)
{
	for (unsigned int i = 0; i < c->rx_steps; i++)
		if (c->rx_off[i] < rx_step_bytes(c, c->rx_first + i))
			return false;
	return true;
}

/* Checks a running collective's chunk against what this rank expects next. */
static bool chunk_expected(const struct fw_coll *c, const struct maia_fabric_coll_msg *h)
{
	unsigned int s = h->step;

	/* A relayed chunk (hops 0 once here) is the predecessor's all the same. */
	if (h->src_rank != ring(c, -1) || !rx_step_expected(c, s) || !h->len ||
	    h->len % wire_es(c, s) ||
	    (h->flags & ~MAIA_FABRIC_COLL_RELAY) != (c->gather ? MAIA_FABRIC_COLL_GATHER_REDUCE : 0) ||
	    ((h->flags & MAIA_FABRIC_COLL_RELAY) && h->relay_hops))
		return false;
	return h->offset == c->rx_off[s - c->rx_first] &&
	       h->len <= rx_step_bytes(c, s) - h->offset;
}

static bool early_has_room(const struct fw_coll *c, uint32_t len)
{
	return c->early_n < c->cfg.early_msgs && c->early_bytes + len <= c->cfg.early_bytes;
}

static void hold(struct fw_coll *c, unsigned int port, const struct maia_fabric_coll_msg *h,
		 const uint8_t *data, bool accepted)
{
	struct fw_coll_early *e = malloc(sizeof(*e) + h->len);

	if (!e) {
		/* Out of memory: as good as lost on the wire; a timeout follows. */
		c->stats.drop_unexpected++;
		return;
	}
	e->next = NULL;
	e->port = port;
	e->accepted = accepted;
	e->h = *h;
	memcpy(e->data, data, h->len);
	if (c->early_tail)
		c->early_tail->next = e;
	else
		c->early_head = e;
	c->early_tail = e;
	c->early_n++;
	c->early_bytes += h->len;
	if (c->early_n > c->stats.early_peak)
		c->stats.early_peak = c->early_n;
}

static bool held_current(const struct fw_coll *c)
{
	for (const struct fw_coll_early *e = c->early_head; e; e = e->next)
		if (e->accepted)
			return true;
	return false;
}

/* ---- progress ---- */

static unsigned int tx_room(struct fw_coll *c)
{
	unsigned int room = c->ops.tx_room(c->opaque, c->cmd.send_port);

	if (room > c->room_max)
		c->room_max = room;
	return room;
}

/* Use held chunks of the running collective, in arrival order, while there is room. */
static void run_held(struct fw_coll *c, uint64_t now_ns)
{
	struct fw_coll_early *prev = NULL, *e = c->early_head;

	while (e && c->state == FW_COLL_RUNNING) {
		struct fw_coll_early *next = e->next;

		if (!e->accepted) {
			prev = e;
			e = next;
			continue;
		}
		if (forwards(c, e->h.step, e->h.offset, e->h.len) && tx_room(c) < 1)
			return;
		if (use_chunk(c, &e->h, e->data))
			return;		/* failed; finish() freed the held chunks */
		c->last_progress_ns = now_ns;
		early_unlink(c, prev, e);
		e = next;
	}
}

/*
 * Gather-reduce's end, every rank's input gathered: each block folded in the
 * ring's order (block b from rank b+1 round to rank b, as the ring reduction
 * would) into its place in acc, then the whole result written in one access
 * (a block's own write was an access per rank, most of them a few bytes:
 * the 8-byte all-reduce on 4 ranks wrote twice). acc and own hold count
 * elements (buffers(): count * 4 <= MAIA_COLL_GATHER_REDUCE_BYTES / 2).
 * 0, or the failed access's status.
 */
static int fold_gathered(struct fw_coll *c)
{
	unsigned int n = nranks(c);
	uint64_t in_bytes = c->cmd.count * c->es;
	uint8_t *out = (uint8_t *)c->acc;

	for (unsigned int b = 0; b < n; b++) {
		uint64_t e0 = block_start(c, b), cnt = block_len(c, b);
		const uint8_t *blk = c->gathered + e0 * c->es;	/* rank 0's block b */
		const uint8_t *first = blk + (b + 1) % n * in_bytes;
		float *acc = c->acc + e0;

		if (!cnt)
			continue;	/* fewer elements than ranks */
		for (uint64_t i = 0; i < cnt; i++)
			acc[i] = ld_elem(c, first, i);
		for (unsigned int j = 2; j <= n; j++)
			fw_coll_reduce(c->cmd.redop, c->es, (uint8_t *)acc, (uint8_t *)acc,
				     blk + (b + j) % n * in_bytes, cnt);
	}
	if (c->es != 4) {
		out = c->own;
		fw_coll_round_bf16(out, c->acc, c->cmd.count);
	}
	return mem_write(c, c->cmd.recv_addr, out, in_bytes);
}

/*
 * Whether this rank may inject another chunk of its own step-0 data: only
 * while more than half of the room is free (and at least 2, so that one is
 * left for a forward). A rank that filled the queue with its own chunks
 * made every chunk it had to forward wait behind them: the next rank
 * starved while the chunk was copied aside (hold()) for want of room, and
 * only then sent. Measured in Documentation/hw/fabric.rst, "Performance".
 */
static bool inject_room(struct fw_coll *c)
{
	unsigned int room = tx_room(c);

	return room >= 2 && room * 2 > c->room_max;
}

static void advance(struct fw_coll *c, uint64_t now_ns)
{
	if (c->state != FW_COLL_RUNNING || c->quiet)
		return;
	run_held(c, now_ns);
	while (c->state == FW_COLL_RUNNING && c->inject_off < c->inject_len &&
	       (c->gather ? c->inject_off < gather_ready(c) && tx_room(c) >= 1 : inject_room(c))) {
		if (inject_one(c))
			return;
		c->last_progress_ns = now_ns;
	}
	if (c->state == FW_COLL_RUNNING && c->inject_off == c->inject_len && rx_arrived(c) &&
	    !held_current(c)) {
		int rc = c->gather ? fold_gathered(c) : 0;

		if (rc) {
			fail(c, (uint32_t)rc, 0, false);
			return;
		}
		c->stats.collectives++;
		finish(c, MAIA_STATUS_OK);
	}
}

/* ---- starting ---- */

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Checks every field; fills the byte sizes of both buffers. */
static bool cmd_valid(const struct maia_cmd_collective *k, unsigned int nports,
		      uint64_t *sbytes, uint64_t *rbytes)
{
	unsigned int es;
	uint64_t n = k->nranks, elems;
	bool reduces = k->coll == MAIA_COLL_ALL_REDUCE || k->coll == MAIA_COLL_REDUCE_SCATTER;
	bool in_place_ok = k->coll == MAIA_COLL_ALL_REDUCE || k->coll == MAIA_COLL_BROADCAST;

	if ((k->hdr.flags & ~MAIA_COLL_F_REACH) || k->reserved1 ||
	    k->algo > MAIA_COLL_ALGO_GATHER_REDUCE)
		return false;
	/* The report: 8-byte aligned, not wrapping around. */
	if (k->report_addr % 8 || k->report_addr > UINT64_MAX - sizeof(struct maia_coll_report))
		return false;
	if (k->coll < MAIA_COLL_ALL_REDUCE || k->coll > MAIA_COLL_ALL_TO_ALL)
		return false;
	if (reduces && k->redop > MAIA_REDOP_MIN)
		return false;
	if (k->dtype != MAIA_DTYPE_FP32 && k->dtype != MAIA_DTYPE_BF16)
		return false;
	if (!n || n > MAIA_COLL_MAX_RANKS || k->rank >= n)
		return false;
	if (k->coll == MAIA_COLL_BROADCAST && k->root >= n)
		return false;
	if (n > 1 && (k->send_port >= nports || k->recv_port >= nports))
		return false;
	if (k->chunk_bytes && !chunk_valid(k->chunk_bytes))
		return false;
	es = maia_dtype_size(k->dtype);
	/* Elements of the larger buffer: count, or count * nranks. */
	if (__builtin_mul_overflow(k->count, n, &elems) ||
	    __builtin_mul_overflow(elems, (uint64_t)4, &elems))
		return false;
	/* Gather-reduce holds every rank's input: asked for, it must fit. */
	if (k->algo == MAIA_COLL_ALGO_GATHER_REDUCE &&
	    (k->coll != MAIA_COLL_ALL_REDUCE || !maia_coll_gather_reduce_fits(k->count, (unsigned int)n)))
		return false;
	*sbytes = *rbytes = k->count * es;
	if (k->coll == MAIA_COLL_REDUCE_SCATTER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*sbytes *= n;
	if (k->coll == MAIA_COLL_ALL_GATHER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*rbytes *= n;
	if (k->send_addr + *sbytes < k->send_addr || k->recv_addr + *rbytes < k->recv_addr)
		return false;
	if (in_place_ok && k->send_addr == k->recv_addr)
		return true;
	return !overlap(k->send_addr, *sbytes, k->recv_addr, *rbytes);
}

/*
 * Held messages of earlier collectives of this communicator are stale:
 * dropped. This collective's are checked like newly arrived chunks; other
 * communicators' stay held.
 */
static void adopt_held(struct fw_coll *c)
{
	struct fw_coll_early *prev = NULL, *e = c->early_head;

	while (e) {
		struct fw_coll_early *next = e->next;

		if (held_is_current(c, e)) {
			if (chunk_expected(c, &e->h)) {
				e->accepted = true;
				c->rx_off[e->h.step - c->rx_first] += e->h.len;
				prev = e;
			} else {
				c->stats.drop_unexpected++;
				early_unlink(c, prev, e);
			}
		} else if (stale_for(c, e->port, &e->h)) {
			c->stats.drop_stale++;
			early_unlink(c, prev, e);
		} else {
			prev = e;
		}
		e = next;
	}
}

static void set_rx_steps(struct fw_coll *c)
{
	unsigned int n = nranks(c);

	c->rx_first = 0;
	if (n == 1)
		c->rx_steps = 0;
	else if (c->gather)
		c->rx_steps = 1;	/* one stream of n-1 inputs (gather_ready()) */
	else if (c->cmd.coll == MAIA_COLL_ALL_REDUCE)
		c->rx_steps = 2 * (n - 1);
	else if (c->cmd.coll != MAIA_COLL_BROADCAST)
		c->rx_steps = n - 1;
	else if (c->cmd.rank == c->cmd.root)
		c->rx_steps = 0;
	else {
		/* One hop: the step of the message rank - 1 sends is its distance from root. */
		c->rx_first = ring(c, -1 - (int)c->cmd.root);
		c->rx_steps = 1;
	}
	memset(c->rx_off, 0, c->rx_steps * sizeof(*c->rx_off));
}

/* Local copies: data that stays on this rank. 0, or the failed access's status. */
static int local_part(struct fw_coll *c)
{
	const struct maia_cmd_collective *k = &c->cmd;
	uint64_t blk = k->count * c->es;

	if (c->gather)
		return mem_read(c, k->send_addr, c->gathered + k->rank * blk, blk);
	switch (k->coll) {
	case MAIA_COLL_ALL_REDUCE:
	case MAIA_COLL_REDUCE_SCATTER:
		return nranks(c) == 1 ? local_copy(c, k->send_addr, k->recv_addr, blk) : 0;
	case MAIA_COLL_BROADCAST:
		return k->rank == k->root ? local_copy(c, k->send_addr, k->recv_addr, blk) : 0;
	case MAIA_COLL_ALL_GATHER:
		return local_copy(c, k->send_addr, k->recv_addr + k->rank * blk, blk);
	default:	/* ALL_TO_ALL */
		return local_copy(c, k->send_addr + k->rank * blk, k->recv_addr + k->rank * blk,
				  blk);
	}
}

uint32_t fw_coll_check(const struct maia_cmd_collective *cmd, unsigned int nports)
{
	uint64_t sbytes, rbytes;

	return cmd_valid(cmd, nports, &sbytes, &rbytes) ? MAIA_STATUS_OK : MAIA_STATUS_BAD_CMD;
}

/*
 * The work buffers, for the collective in c->cmd (geometry set): as large
 * as its longest stream, its count in FP32 and its gathered inputs need, at
 * most a message's data. A small collective's buffers are small: allocating
 * a message's worth (three of 60 KiB) for each operation cost the 8-byte
 * all-reduce page faults on every rank (Documentation/hw/fabric.rst,
 * "Gather-reduce"). false: out of memory.
 */
static bool buffers(struct fw_coll *c)
{
	uint64_t need = c->cmd.count * 4, gbytes;

	if (need < c->inject_len)
		need = c->inject_len;
	for (unsigned int i = 0; i < c->rx_steps; i++)
		if (need < rx_step_bytes(c, c->rx_first + i))
			need = rx_step_bytes(c, c->rx_first + i);
	if (need > MAIA_FABRIC_MSG_MAX_DATA)
		need = MAIA_FABRIC_MSG_MAX_DATA;
	need = need ? (need + 63) & ~63ull : 64;
	if (need > c->buf_bytes) {
		txbuf_free(c, c->txbuf);
		free(c->own);
		free(c->acc);
		c->txbuf = txbuf_alloc(c, HDR + need);
		c->own = malloc(need);
		c->acc = malloc(need);
		c->buf_bytes = c->txbuf && c->own && c->acc ? need : 0;
		if (!c->buf_bytes)
			return false;
	}
	/* Never none for a gather-reduce: a count of 0 still points into it. */
	gbytes = c->gather ? c->cmd.count * c->es * nranks(c) : 0;
	if (c->gather && gbytes < 64)
		gbytes = 64;
	if (gbytes > c->gathered_bytes) {
		free(c->gathered);
		c->gathered = malloc(gbytes);
		c->gathered_bytes = c->gathered ? gbytes : 0;
		if (!c->gathered)
			return false;
	}
	return true;
}

/*
 * rx_off (2 entries a rank at most) and model_in (one a rank) for the
 * collective in c->cmd: the engine's own arrays up to FW_COLL_INLINE_RANKS
 * ranks, else MAIA_COLL_MAX_RANKS on the heap, kept for the engine's later
 * collectives. false: out of memory.
 */
static bool rank_arrays(struct fw_coll *c)
{
	uint64_t *rx_off, *model_in;

	if (nranks(c) <= FW_COLL_INLINE_RANKS || c->rx_off != c->rx_off_inline)
		return true;
	rx_off = calloc(2 * MAIA_COLL_MAX_RANKS, sizeof(*rx_off));
	model_in = calloc(MAIA_COLL_MAX_RANKS, sizeof(*model_in));
	if (!rx_off || !model_in) {
		free(rx_off);
		free(model_in);
		return false;
	}
	c->rx_off = rx_off;
	c->model_in = model_in;
	return true;
}

int fw_coll_start(struct fw_coll *c, const struct maia_cmd_collective *cmd, uint64_t now_ns)
{
	uint64_t sbytes, rbytes;
	int rc;

	if (c->state == FW_COLL_RUNNING)
		return -EBUSY;
	memset(&c->result, 0, sizeof(c->result));
	c->cmd = *cmd;
	if (!cmd_valid(cmd, c->cfg.nports, &sbytes, &rbytes)) {
		/* Not a collective of the ring: its comm/seq mean nothing. */
		c->state = FW_COLL_DONE;
		c->result.status = MAIA_STATUS_BAD_CMD;
		c->stats.failures++;
		return MAIA_STATUS_BAD_CMD;
	}
	c->gather = maia_coll_gather_reduce(cmd);
	c->es = maia_dtype_size(cmd->dtype);
	c->chunk_bytes = cmd->chunk_bytes ? cmd->chunk_bytes : c->cfg.chunk_bytes;
	c->timeout_ns = (uint64_t)(cmd->timeout_ms ? cmd->timeout_ms : c->cfg.timeout_ms) *
			NS_PER_MS;
	c->last_progress_ns = now_ns;
	c->sent_bytes = c->recv_bytes = 0;
	c->unreach_first = c->unreach_count = 0;
	c->model_end_ns = c->model_start_ns;
	c->model_fwd_ns = 0;
	if (!rank_arrays(c)) {
		c->state = FW_COLL_DONE;
		c->result.status = MAIA_STATUS_DMA_ERROR;	/* out of memory */
		c->stats.failures++;
		return MAIA_STATUS_DMA_ERROR;
	}
	set_rx_steps(c);
	memset(c->model_in, 0, nranks(c) * sizeof(*c->model_in));
	c->inject_off = 0;
	c->inject_len = inject_len(c);
	c->room_max = 0;
	if (!buffers(c)) {
		c->state = FW_COLL_DONE;
		c->result.status = MAIA_STATUS_DMA_ERROR;	/* out of memory */
		c->stats.failures++;
		return MAIA_STATUS_DMA_ERROR;
	}
	c->state = FW_COLL_RUNNING;
	rc = local_part(c);
	if (rc) {
		fail(c, (uint32_t)rc, 0, false);
		return (int)c->result.status;
	}
	adopt_held(c);
	advance(c, now_ns);
	return c->state == FW_COLL_RUNNING ? 0 : (int)c->result.status;
}

/* ---- the wire ---- */

int fw_coll_rx(struct fw_coll *c, unsigned int port, const void *msg, size_t len,
	       uint64_t now_ns)
{
	struct maia_fabric_coll_msg h;
	const uint8_t *data;

	if (len < HDR) {
		c->stats.drop_malformed++;
		return 0;
	}
	data = c->ops.rx_data ? c->ops.rx_data(c->opaque, msg) : (const uint8_t *)msg + HDR;
	memcpy(&h, msg, sizeof(h));
	if (h.type != MAIA_FMSG_COLL || h.len > MAIA_FABRIC_MSG_MAX_DATA || h.len != len - HDR ||
	    port >= c->cfg.nports) {
		c->stats.drop_malformed++;
		return 0;
	}
	if (c->state == FW_COLL_RUNNING && port == c->cmd.recv_port &&
	    h.comm_id == c->cmd.comm_id && h.seq == c->cmd.seq) {
		if (!chunk_expected(c, &h)) {
			c->stats.drop_unexpected++;
			return 0;
		}
		if (held_current(c) ||
		    (forwards(c, h.step, h.offset, h.len) && tx_room(c) < 1)) {
			if (!early_has_room(c, h.len)) {
				c->stats.refused++;
				return -EAGAIN;
			}
			hold(c, port, &h, data, true);
		} else if (!use_chunk(c, &h, data)) {
			c->last_progress_ns = now_ns;
		}
		c->rx_off[h.step - c->rx_first] += h.len;
		advance(c, now_ns);
		return 0;
	}
	if ((c->state == FW_COLL_RUNNING && stale_for(c, port, &h)) ||
	    (c->ended_valid && h.comm_id == c->ended_comm &&
	     (int32_t)(h.seq - c->ended_seq) <= 0)) {
		/* An earlier collective's of the communicator, or the last one's, late. */
		c->stats.drop_stale++;
		return 0;
	}
	if (!early_has_room(c, h.len)) {
		c->stats.refused++;
		return -EAGAIN;
	}
	hold(c, port, &h, data, false);
	return 0;
}

bool fw_coll_wants(const struct fw_coll *c, unsigned int port, const void *msg, size_t len)
{
	struct maia_fabric_coll_msg h;

	if (c->state != FW_COLL_RUNNING || port != c->cmd.recv_port || len < HDR)
		return false;
	memcpy(&h, msg, sizeof(h));
	if (h.type != MAIA_FMSG_COLL)
		return false;
	/* Its own, or stale (see fw_coll_rx): an early one, or another communicator's, is not its. */
	return (h.comm_id == c->cmd.comm_id && h.seq == c->cmd.seq) || stale_for(c, port, &h);
}

uint64_t fw_coll_next_deadline(const struct fw_coll *c)
{
	if (c->state != FW_COLL_RUNNING)
		return UINT64_MAX;
	return c->last_progress_ns + c->timeout_ns;
}

/*
 * End a collective that waits with status, naming the step it waits for:
 * the lowest one not fully arrived, else the one it cannot send.
 */
static void fail_waiting(struct fw_coll *c, uint32_t status)
{
	for (unsigned int i = 0; i < c->rx_steps; i++) {
		unsigned int s = c->rx_first + i;

		if (c->rx_off[i] < rx_step_bytes(c, s)) {
			fail(c, status, s, false);
			return;
		}
	}
	for (const struct fw_coll_early *e = c->early_head; e; e = e->next) {
		if (e->accepted) {
			fail(c, status, e->h.step + 1u, true);
			return;
		}
	}
	fail(c, status, 0, true);
}

void fw_coll_poll(struct fw_coll *c, uint64_t now_ns)
{
	advance(c, now_ns);
	if (c->state == FW_COLL_RUNNING && now_ns - c->last_progress_ns >= c->timeout_ns)
		fail_waiting(c, MAIA_STATUS_FABRIC_TIMEOUT);
}

void fw_coll_fail_port(struct fw_coll *c, const struct maia_cmd_collective *cmd,
		       uint32_t status, unsigned int port)
{
	unsigned int step = 0;

	if (c->state != FW_COLL_RUNNING) {
		if (!cmd)
			return;
		/* Never started: nothing exchanged, step 0. */
		memset(&c->result, 0, sizeof(c->result));
		c->cmd = *cmd;
		c->rx_first = c->rx_steps = 0;
		c->sent_bytes = c->recv_bytes = 0;
	} else {
		for (unsigned int i = 0; i < c->rx_steps; i++) {
			if (c->rx_off[i] < rx_step_bytes(c, c->rx_first + i)) {
				step = c->rx_first + i;
				break;
			}
		}
	}
	fail(c, status, step, port != c->cmd.recv_port);
}

void fw_coll_set_ports(struct fw_coll *c, unsigned int send_port, unsigned int recv_port)
{
	unsigned int old = c->cmd.recv_port;

	for (struct fw_coll_early *e = c->early_head; e; e = e->next)
		if (e->port == old)
			e->port = recv_port;
	c->cmd.send_port = (uint8_t)send_port;
	c->cmd.recv_port = (uint8_t)recv_port;
	/* The new way's queue is another: its room is measured afresh. */
	c->room_max = 0;
}

void fw_coll_quiet(struct fw_coll *c, bool quiet, uint64_t now_ns)
{
	c->quiet = quiet;
	advance(c, now_ns);
}

void fw_coll_set_unreachable(struct fw_coll *c, uint32_t first, uint32_t count)
{
	c->unreach_first = first;
	c->unreach_count = count;
}

void fw_coll_abort(struct fw_coll *c, uint32_t status, uint64_t now_ns)
{
	(void)now_ns;
	if (c->state == FW_COLL_RUNNING)
		fail_waiting(c, status);
}
