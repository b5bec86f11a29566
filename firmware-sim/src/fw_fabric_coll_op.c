// SPDX-License-Identifier: MIT
/*
 * MAIA_OP_COLLECTIVE as a fabric operation (fw_fabric_xport.h): the job
 * parks on it, and the fabric thread drives one collective engine
 * (fw_fabric_coll.c) through it: the engine starts at the operation's first
 * pump or message, sends with fw_xport_send(), reads and writes the job's
 * memory through its address space (MMU), and times itself out (naming the
 * step in the trace). Documentation/hw/fabric.rst, "Collectives".
 *
 * Everything here runs on the fabric thread except fw_coll_op_start() (the
 * worker), which only builds and submits the operation, and
 * fw_coll_run_local() (the worker), a one-rank collective: a local copy that
 * needs no fabric.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric_coll.h"
#include "fw_fabric_coll_op.h"
#include "fw_fabric_ref.h"
#include "fw_fabric_xport.h"

/* The engine's own hold: more than the transport holds, so a start never refuses. */
#define COLL_OP_HOLD_MSGS	(FW_XPORT_HELD_MAX + MAIA_FABRIC_WINDOW)

struct coll_op {
	struct fw_fop op;		/* first: fw_fop_free() frees the whole */
	struct maia_sim *sim;
	struct maia_cmd_collective cmd;	/* its ports: the way it runs now */
	uint8_t cable_send, cable_recv;	/* the command's ports: the ring as cabled */
	uint32_t relay_hops;		/* > 0: what it sends is relayed (failover) */
	uint32_t unreach_first, unreach_count;	/* ranks it cannot reach (count 0: none) */
	bool started;
	/* Its frames that point at the job's memory (fw_fabric_ref.h); none when it ends. */
	struct fw_ref_owner refs;
	uint64_t hold_since;		/* its engine ended while some still did */
	struct fw_coll eng;
};

/*
 * How long an operation whose engine ended waits for its frames that point
 * at the job's memory to be given back (the peer's ack, at the end of its
 * round) before it copies their data into them (fw_ref_owner_settle()), and
 * how often it looks meanwhile.
 */
#define COLL_REF_WAIT_NS	(5ull * 1000000ull)
#define COLL_REF_POLL_NS	(200ull * 1000ull)

static unsigned int op_tx_room(void *opaque, unsigned int port)
{
	struct coll_op *c = opaque;

	return fw_xport_room(c->sim, port);
}

static int op_tx(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct coll_op *c = opaque;
	const uint8_t *m = msg;
	struct maia_fabric_coll_msg h;

	memcpy(&h, m, sizeof(h));
	if (c->relay_hops) {
		/* The successor's cable is cut: round the ring the other way. */
		h.flags |= MAIA_FABRIC_COLL_RELAY;
		h.relay_hops = c->relay_hops;
	}
	return fw_xport_send(c->sim, port, &h, m + MAIA_FABRIC_MSG_HDR_LEN,
			     (uint32_t)(len - MAIA_FABRIC_MSG_HDR_LEN));
}

/* A message buffer of the link's (headroom for the frame in front): sent without a copy. */
static void *op_tx_buf(void *opaque, size_t len)
{
	(void)opaque;
	return fw_link_msg_alloc(len);
}

static void op_tx_buf_free(void *opaque, void *buf)
{
	(void)opaque;
	fw_link_msg_free(buf);
}

static int op_tx_owned(void *opaque, unsigned int port, void *msg, size_t len)
{
	struct coll_op *c = opaque;
	struct maia_fabric_coll_msg h;
	int rc = fw_xport_can_send(c->sim, port);

	if (rc) {
		fw_link_msg_free(msg);
		return rc;
	}
	if (c->relay_hops) {
		/* The successor's cable is cut: round the ring the other way. */
		memcpy(&h, msg, sizeof(h));
		h.flags |= MAIA_FABRIC_COLL_RELAY;
		h.relay_hops = c->relay_hops;
		memcpy(msg, &h, sizeof(h));
	}
	return fw_xport_send_owned(c->sim, port, msg, len);
}

static int op_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	struct coll_op *c = opaque;

	return fw_as_read(&c->op.as, va, buf, len);
}

static int op_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct coll_op *c = opaque;

	return fw_as_write(&c->op.as, va, buf, len);
}

/* HBM in place (the device's own memory); NULL for host memory or a fault. */
static const void *op_map(void *opaque, uint64_t va, size_t len)
{
	struct coll_op *c = opaque;
	struct maia_job_mem mem;
	const void *p = NULL;
	size_t avail = 0;

	fw_as_job_mem(&c->op.as, &mem);
	if (mem.map(mem.opaque, va, len, &p, &avail) != MAIA_STATUS_OK || avail < len)
		return NULL;
	return p;
}

/* The same for writing: HBM in place if writable there, else NULL (op_write() copies). */
static void *op_map_write(void *opaque, uint64_t va, size_t len)
{
	struct coll_op *c = opaque;
	struct maia_job_mem mem;
	void *p = NULL;
	size_t avail = 0;

	fw_as_job_mem(&c->op.as, &mem);
	if (mem.map_write(mem.opaque, va, len, &p, &avail) != MAIA_STATUS_OK || avail < len)
		return NULL;
	return p;
}

/*
 * Only messages the peer acks at once (longer than FW_LINK_ACK_DELAY_MAX,
 * MAIA_FABRIC_F_ACK_NOW): a shorter one's ack may wait up to a delayed
 * ack, and its job with it (op_hold()), where a copy costs little. Not
 * while relayed: a relay copies what it passes on anyway.
 */
static bool op_tx_ref_ok(void *opaque, unsigned int port, uint32_t len)
{
	struct coll_op *c = opaque;

	return len > FW_LINK_ACK_DELAY_MAX && !c->relay_hops && fw_xport_ref_ok(c->sim, port);
}

/* A message whose data stay in the job's memory; its job waits for its frames (op_hold()). */
static int op_tx_ref(void *opaque, unsigned int port, void *msg, size_t hdr_len,
		     const void *src, uint32_t len)
{
	struct coll_op *c = opaque;
	int rc = fw_xport_can_send(c->sim, port);

	if (rc) {
		fw_link_msg_free(msg);
		return rc;
	}
	if (fw_ref_attach((uint8_t *)msg - FW_LINK_HEADROOM, FW_LINK_HEADROOM + hdr_len, src, len,
			  &c->refs))
		memcpy((uint8_t *)msg + hdr_len, src, len);	/* no record: the data go in it */
	return fw_xport_send_owned(c->sim, port, msg, hdr_len + len);
}

static const uint8_t *op_rx_data(void *opaque, const void *msg)
{
	(void)opaque;
	return fw_ref_data(msg);
}

static const struct fw_coll_ops coll_ops = {
	.tx_room = op_tx_room,
	.tx = op_tx,
	.tx_buf = op_tx_buf,
	.tx_owned = op_tx_owned,
	.tx_buf_free = op_tx_buf_free,
	.mem_read = op_read,
	.mem_write = op_write,
	.mem_map = op_map,
	.mem_map_write = op_map_write,
	.tx_ref_ok = op_tx_ref_ok,
	.tx_ref = op_tx_ref,
	.rx_data = op_rx_data,
};

/* A failure is traced, and what its peers still send for it is not kept. */
static void note_failure(struct coll_op *c)
{
	const struct fw_coll_result *r = &c->eng.result;

	/* A refused second communicator took nothing: its id's messages are the first's. */
	if (r->status != MAIA_STATUS_OK && r->status != MAIA_STATUS_BAD_CMD &&
	    r->status != MAIA_STATUS_FABRIC_COMM_BUSY && c->cmd.nranks > 1)
		fw_xport_coll_failed(c->sim, c->cmd.recv_port, c->cmd.comm_id, c->cmd.seq);
	if (r->status != MAIA_STATUS_OK && r->status != MAIA_STATUS_BAD_CMD)
		fw_trace(c->sim,
			 "collective comm %#x seq %u rank %u/%u: status %u at step %u, %s port %u (rank %u)",
			 c->cmd.comm_id, c->cmd.seq, c->cmd.rank, c->cmd.nranks, r->status, r->step,
			 r->sending ? "sending on" : "waiting on", r->port, r->peer);
}

/* Once the engine ended: the operation ends with its status. */
static void sync_end(struct coll_op *c)
{
	if (fw_coll_running(&c->eng)) {
		/* Woken at the engine's timeout; xport checks it after pump. */
		c->op.deadline_ns = fw_coll_next_deadline(&c->eng);
		return;
	}
	if (c->op.finished)
		return;
	note_failure(c);
	c->op.model_end_ns = c->eng.model_end_ns;
	fw_fop_finish(&c->op, c->eng.result.status);
}

/* The first of the command's ports that is not UP; recv_port if both are. */
static unsigned int down_port(struct coll_op *c)
{
	if (!fw_xport_port_up(c->sim, c->cmd.recv_port))
		return c->cmd.recv_port;
	if (!fw_xport_port_up(c->sim, c->cmd.send_port))
		return c->cmd.send_port;
	return c->cmd.recv_port;
}

/*
 * The transport ended the operation (a port down, before or during the
 * collective): the engine ends too, so that the report names the port.
 */
static void op_finished(struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;

	if (fw_coll_running(&c->eng)) {
		fw_coll_set_unreachable(&c->eng, c->unreach_first, c->unreach_count);
		fw_coll_fail_port(&c->eng, NULL, op->status, down_port(c));
	} else if (!c->started) {
		c->started = true;
		fw_coll_set_unreachable(&c->eng, c->unreach_first, c->unreach_count);
		fw_coll_fail_port(&c->eng, &c->cmd, op->status, down_port(c));
	} else {
		return;		/* the engine ended first (sync_end()) */
	}
	note_failure(c);
}

static const struct fw_fop_ops coll_fop_ops;

/*
 * Another collective of the same comm_id runs on this device: every
 * collective of one communicator runs on one queue, one after the other, so
 * that is a second communicator made from the same id (another process's,
 * or one made again), whose chunks the wire could not tell apart.
 */
static bool comm_busy(const struct coll_op *c)
{
	for (struct fw_fop *op = fw_xport_active(c->sim); op; op = op->next) {
		const struct coll_op *o = (const struct coll_op *)op;

		if (op != &c->op && op->ops == &coll_fop_ops && !op->finished && o->started &&
		    fw_coll_running(&o->eng) && o->cmd.comm_id == c->cmd.comm_id)
			return true;
	}
	return false;
}

/*
 * quiet: started by a held message (offer_held() as the operation starts):
 * the engine sends nothing until op_pump(), which follows in the same
 * fw_xport_pump(), so that every held message is in before it sends (a
 * gather-reduce sends them in one message with its own input).
 */
static void start_once(struct coll_op *c, bool quiet)
{
	if (c->started)
		return;
	c->started = true;
	fw_coll_quiet(&c->eng, quiet && maia_coll_gather_reduce(&c->cmd), fw_xport_now(c->sim));
	if (c->cmd.nranks > 1 && fw_coll_check(&c->cmd, fw_fabric_ports(c->sim)) == MAIA_STATUS_OK &&
	    comm_busy(c)) {
		fw_coll_fail_port(&c->eng, &c->cmd, MAIA_STATUS_FABRIC_COMM_BUSY, c->cmd.recv_port);
		fw_trace(c->sim, "collective comm %#x seq %u rank %u/%u: refused, another "
			 "collective of this comm runs on this device", c->cmd.comm_id, c->cmd.seq,
			 c->cmd.rank, c->cmd.nranks);
		fw_fop_finish(&c->op, MAIA_STATUS_FABRIC_COMM_BUSY);
		return;
	}
	if (c->cmd.nranks > 1)
		fw_xport_coll_starting(c->sim, c->cmd.recv_port, c->cmd.comm_id, c->cmd.seq);
	fw_coll_start(&c->eng, &c->cmd, fw_xport_now(c->sim));
}

static void op_pump(struct maia_sim *sim, struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;

	start_once(c, false);
	if (c->eng.quiet)
		fw_coll_quiet(&c->eng, false, fw_xport_now(sim));
	fw_coll_poll(&c->eng, fw_xport_now(sim));
	sync_end(c);
}

static void follow(struct maia_sim *sim, struct coll_op *c, unsigned int port, const void *msg,
		   size_t len);

/*
 * A MAIA_FABRIC_COLL_UNREACH notice (fw_fabric_xport.c): the ring is cut
 * twice. For this collective: it ends with FABRIC_LINK, its report naming
 * the ranks out of reach. An earlier collective's: dropped. true: taken.
 */
static bool unreach_rx(struct maia_sim *sim, struct coll_op *c, const void *msg)
{
	struct maia_fabric_coll_msg n;

	memcpy(&n, msg, sizeof(n));
	if (n.type != MAIA_FMSG_COLL || !(n.flags & MAIA_FABRIC_COLL_UNREACH) ||
	    n.comm_id != c->cmd.comm_id || (int32_t)(n.seq - c->cmd.seq) > 0)
		return false;
	if (n.seq != c->cmd.seq || c->op.finished)
		return true;
	c->unreach_first = (uint32_t)n.offset;
	c->unreach_count = n.step;
	fw_trace(sim, "collective comm %#x seq %u rank %u/%u: ranks %u.. (%u) unreachable, "
		 "two cuts", c->cmd.comm_id, c->cmd.seq, c->cmd.rank, c->cmd.nranks,
		 c->unreach_first, c->unreach_count);
	fw_fop_finish(&c->op, MAIA_STATUS_FABRIC_LINK);
	return true;
}

static int op_rx(struct maia_sim *sim, struct fw_fop *op, unsigned int port, const void *msg,
		 size_t len)
{
	struct coll_op *c = (struct coll_op *)op;
	int rc;

	if (len >= MAIA_FABRIC_MSG_HDR_LEN && unreach_rx(sim, c, msg))
		return 1;
	start_once(c, true);
	if (!c->op.finished && fw_coll_running(&c->eng))
		follow(sim, c, port, msg, len);
	if (c->op.finished || !fw_coll_wants(&c->eng, port, msg, len))
		return 0;
	if (len >= MAIA_FABRIC_MSG_HDR_LEN) {
		struct maia_fabric_coll_msg h;

		/* Passing through to another device: the transport's, never taken here. */
		memcpy(&h, msg, sizeof(h));
		if ((h.flags & MAIA_FABRIC_COLL_RELAY) && h.relay_hops)
			return 0;
	}
	rc = fw_coll_rx(&c->eng, port, msg, len, fw_xport_now(sim));
	sync_end(c);
	return rc < 0 ? -EAGAIN : 1;
}

/*
 * Failover (Documentation/hw/fabric.rst, "Failover"). With both of the
 * command's ring ports UP it runs as cabled. With one DOWN, each rank at the
 * cut decides from its own links, and every rank keeps its place in the
 * ring, so the reduction order and the result's bits are the ring's:
 * - the rank whose send port is DOWN sends over its receive port, the ring
 *   the other way round: on a ring of two straight to its successor, on a
 *   ring of n >= 3 as MAIA_FABRIC_COLL_RELAY chunks that the n - 2 ranks
 *   between pass on (fw_xport_coll_ring());
 * - the rank whose receive port is DOWN takes its predecessor's chunks on
 *   its send port, where they arrive.
 * A send port that crossed a failover threshold (latency, loss) while the
 * receive port did not is avoided the same way; its successor sees chunks
 * arrive on its send port and follows (follow()). On a ring of two both
 * ports lead to the one peer; a DOWN port whose last peer is not the live
 * port's is no evidence of that, and fails the collective. Both ports
 * DOWN: no way (FABRIC_LINK).
 */
struct way {
	unsigned int port;		/* the live port: sends and receives */
	unsigned int dead;
	uint32_t relay_hops;
};

static bool way_now(struct maia_sim *sim, const struct coll_op *c, struct way *w)
{
	unsigned int s = c->cable_send, r = c->cable_recv;
	bool su = fw_xport_port_up(sim, s), ru = fw_xport_port_up(sim, r);
	uint64_t peer;

	/* Degraded: avoided for sending, if the other way is not. */
	if (su && ru && s != r && fw_xport_degraded(sim, s) && !fw_xport_degraded(sim, r))
		su = false;

	if (su == ru || s == r)
		return false;
	w->port = su ? s : r;
	w->dead = su ? r : s;
	w->relay_hops = !su && c->cmd.nranks > 2 ? c->cmd.nranks - 2u : 0;
	if (c->cmd.nranks > 2)
		return true;
	peer = fw_xport_peer_serial(sim, w->port);
	return peer && fw_xport_peer_serial(sim, w->dead) == peer;
}

static void take_way(struct maia_sim *sim, struct coll_op *c, const struct way *w,
		     const char *when)
{
	struct maia_cmd_collective *k = &c->cmd;

	fw_trace(sim, "collective comm %#x seq %u rank %u/%u: port %u down %s, over port %u "
		 "both ways (%u relays)", k->comm_id, k->seq, k->rank, k->nranks, w->dead, when,
		 w->port, w->relay_hops);
	k->send_port = (uint8_t)w->port;
	k->recv_port = (uint8_t)w->port;
	c->relay_hops = w->relay_hops;
	c->op.ports = 1u << w->port;
	fw_xport_count_failover(sim, w->dead);
	fw_xport_relay_probe(sim, w->port, k->comm_id, k->seq, k->rank, w->relay_hops);
}

static void op_route(struct maia_sim *sim, struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;
	struct way w;

	if (c->cmd.nranks < 2 || fw_coll_check(&c->cmd, fw_fabric_ports(sim)) != MAIA_STATUS_OK)
		return;
	fw_xport_coll_ring(sim, c->cmd.comm_id, c->cmd.nranks, c->cmd.rank, c->cable_send,
			   c->cable_recv);
	if (way_now(sim, c, &w)) {
		take_way(sim, c, &w, "at the start");
	} else if (!fw_xport_port_up(sim, c->cable_send) && !fw_xport_port_up(sim, c->cable_recv)) {
		/* Cut off on both sides: every other rank is out of reach. */
		c->unreach_first = (c->cmd.rank + 1u) % c->cmd.nranks;
		c->unreach_count = c->cmd.nranks - 1u;
	}
}

/*
 * A port went DOWN while the collective runs: it goes on over the live one
 * from where it was. What the dead link had not seen acknowledged comes
 * the other way round (fw_xport_link_unsent()); duplicates are dropped by
 * their offsets. Nothing is sent twice from the job's memory, so the input
 * may be the output (in place): the collective is never restarted.
 */
/*
 * The predecessor avoids its send port (DOWN at its end only, or over a
 * threshold): its chunks for this collective arrive on this rank's send
 * port, relayed (hops 0 by now) on a ring of n >= 3, straight on a ring of
 * two. From the first of them on, this rank takes its predecessor's chunks
 * there. The predecessor switched before sending any of them, or at its
 * link's DOWN, which hands what this rank may lack to that way too.
 */
static void follow(struct maia_sim *sim, struct coll_op *c, unsigned int port, const void *msg,
		   size_t len)
{
	const struct maia_cmd_collective *k = &c->cmd;
	struct maia_fabric_coll_msg h;

	if (port != c->cable_send || port == c->cable_recv || k->recv_port != c->cable_recv ||
	    k->nranks < 2 || len < MAIA_FABRIC_MSG_HDR_LEN)
		return;
	memcpy(&h, msg, sizeof(h));
	if (h.type != MAIA_FMSG_COLL || h.comm_id != k->comm_id || h.seq != k->seq ||
	    h.src_rank != (k->rank + k->nranks - 1u) % k->nranks ||
	    (k->nranks > 2 && (!(h.flags & MAIA_FABRIC_COLL_RELAY) || h.relay_hops)))
		return;
	fw_trace(sim, "collective comm %#x seq %u rank %u/%u: the predecessor's chunks arrive on "
		 "port %u, taken there", k->comm_id, k->seq, k->rank, k->nranks, port);
	c->cmd.recv_port = (uint8_t)port;
	fw_coll_set_ports(&c->eng, k->send_port, port);
	fw_xport_count_failover(sim, c->cable_recv);
}

static bool op_reroute(struct maia_sim *sim, struct fw_fop *op, unsigned int port)
{
	struct coll_op *c = (struct coll_op *)op;
	struct way w;

	if (c->cmd.nranks < 2)
		return false;
	/* No longer used (it followed its predecessor off it): nothing to do. */
	if (port != c->cmd.send_port && port != c->cmd.recv_port) {
		c->op.ports &= ~(1u << port);
		return true;
	}
	if (c->cmd.send_port == c->cmd.recv_port || !way_now(sim, c, &w))
		return false;
	take_way(sim, c, &w, "mid-collective");
	if (c->started)
		fw_coll_set_ports(&c->eng, w.port, w.port);
	return true;
}

/*
 * What a kept operation poisons while idle (ASan): its fields from op.ports
 * up to the engine, and the engine's work buffers (fw_coll_poison()). Not
 * op.ops, which fw_fop_spare() reads, and not the engine itself: it holds the
 * pointers to those buffers, and LeakSanitizer does not look for pointers in
 * poisoned memory, so it would report the kept buffers as leaked at exit.
 */
#define COLL_OP_KEPT_FROM	offsetof(struct coll_op, op.ports)
#define COLL_OP_KEPT_LEN	(offsetof(struct coll_op, eng) - COLL_OP_KEPT_FROM)

static void op_unpoison(struct coll_op *c)
{
	FW_FABRIC_UNPOISON((uint8_t *)c + COLL_OP_KEPT_FROM, COLL_OP_KEPT_LEN);
	fw_coll_poison(&c->eng, false);
}

/*
 * Finished: its job completes only when no frame of it points at the job's
 * memory any more. Given back by the peer (acked) and the host in the
 * round's time, as a rule; after COLL_REF_WAIT_NS, on a failure or for an
 * abandoned job, the data of those no receiver is reading are copied into
 * them instead (fw_ref_owner_settle()), without waiting for those that one
 * is (it may be this thread, further up).
 */
static bool op_hold(struct fw_fop *op, bool abandoned)
{
	struct coll_op *c = (struct coll_op *)op;
	uint64_t now;

	if (!fw_ref_owner_out(&c->refs))
		return false;
	now = fw_xport_now(c->sim);
	if (!c->hold_since)
		c->hold_since = now;
	if ((op->status != MAIA_STATUS_OK || abandoned ||
	     now - c->hold_since >= COLL_REF_WAIT_NS) && !fw_ref_owner_settle(&c->refs, false))
		return false;
	op->deadline_ns = now + COLL_REF_POLL_NS;
	return true;
}

/*
 * Freed or kept while frames of it may still point at the job's memory (a
 * reset, the device destroyed): their data are copied in first, once no
 * receiver reads them. Never in a fabric round (op_hold() keeps it until
 * then).
 */
static void op_refs_settle(struct coll_op *c)
{
	fw_ref_owner_settle(&c->refs, true);
}

/* Also for a kept one (fw_fop_spare(), fw_xport_destroy()): it may be poisoned. */
static void op_destroy(struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;

	op_unpoison(c);
	op_refs_settle(c);
	fw_coll_destroy(&c->eng);
}

/*
 * Kept for the device's next collective with its engine's work buffers: no
 * allocation then. Poisoned until fw_coll_op_start() takes it (ASan).
 */
static void op_keep(struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;

	op_refs_settle(c);
	fw_coll_reset(&c->eng);
	fw_coll_poison(&c->eng, true);
	FW_FABRIC_POISON((uint8_t *)c + COLL_OP_KEPT_FROM, COLL_OP_KEPT_LEN);
}

static const struct fw_fop_ops coll_fop_ops = {
	.pump = op_pump,
	.rx = op_rx,
	.destroy = op_destroy,
	.keep = op_keep,
	.finished = op_finished,
	.route = op_route,
	.reroute = op_reroute,
	.hold = op_hold,
};

struct fw_fop *fw_coll_op_start(struct maia_sim *sim, unsigned int asid,
				const struct maia_cmd_collective *cmd, uint64_t model_start_ns)
{
	struct coll_op *c = (struct coll_op *)fw_fop_spare(sim, &coll_fop_ops);
	struct fw_coll_config cfg;
	bool reused = c != NULL;
	uint32_t ports = 0;
	int rc;

	if (reused) {
		/* The engine's buffers stay (fw_coll_reinit()); the rest starts from zero. */
		op_unpoison(c);
		memset(c, 0, offsetof(struct coll_op, eng));
	} else {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
	}
	if (cmd->nranks > 1)
		ports = (1u << cmd->send_port) | (1u << cmd->recv_port);
	fw_fop_init(&c->op, &coll_fop_ops, sim, asid, ports);
	c->sim = sim;
	c->cmd = *cmd;
	c->cable_send = cmd->send_port;
	c->cable_recv = cmd->recv_port;
	fw_coll_config_defaults(&cfg);
	cfg.nports = fw_fabric_ports(sim);
	cfg.early_msgs = COLL_OP_HOLD_MSGS;
	cfg.early_bytes = (size_t)COLL_OP_HOLD_MSGS * MAIA_FABRIC_MSG_MAX_DATA;
	cfg.model_chip = &sim->chip;
	memcpy(cfg.model_cable_ns, sim->cfg.fabric_lat_ns, sizeof(cfg.model_cable_ns));
	rc = reused ? fw_coll_reinit(&c->eng, &cfg, &coll_ops, c) :
		      fw_coll_init(&c->eng, &cfg, &coll_ops, c);
	if (rc) {
		free(c);
		return NULL;
	}
	c->eng.model_start_ns = model_start_ns;
	fw_fop_submit(sim, &c->op);
	return &c->op;
}

/* ---- one rank: a local copy, on the worker ---- */

static unsigned int local_tx_room(void *opaque, unsigned int port)
{
	(void)opaque;
	(void)port;
	return 0;
}

static int local_tx(void *opaque, unsigned int port, const void *msg, size_t len)
{
	(void)opaque;
	(void)port;
	(void)msg;
	(void)len;
	return -ENOTCONN;
}

static int local_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	return fw_as_read(opaque, va, buf, len);
}

static int local_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	return fw_as_write(opaque, va, buf, len);
}

static const struct fw_coll_ops local_ops = {
	.tx_room = local_tx_room,
	.tx = local_tx,
	.mem_read = local_read,
	.mem_write = local_write,
};

uint32_t fw_coll_run_local(struct fw_as *as, const struct maia_cmd_collective *cmd)
{
	struct fw_coll_config cfg;
	struct fw_coll eng;
	uint32_t status;

	fw_coll_config_defaults(&cfg);
	if (fw_coll_init(&eng, &cfg, &local_ops, as))
		return MAIA_STATUS_DMA_ERROR;	/* out of memory */
	fw_coll_start(&eng, cmd, 0);
	status = fw_coll_running(&eng) ? MAIA_STATUS_FABRIC_LINK : eng.result.status;
	fw_coll_destroy(&eng);
	return status;
}
