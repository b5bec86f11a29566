// SPDX-License-Identifier: MIT
/*
 * Fabric transport (maia/hw/fabric.h "Transport messages",
 * Documentation/hw/fabric.rst "Transport"): struct maia_fabric_msg over the
 * links, the target side of remote writes and reads (windows), and fabric
 * operations (fw_fabric_xport.h): their lifecycle and the messages offered
 * to them. The kinds are elsewhere: remote write and read in
 * fw_fabric_xfer.c, collectives in fw_fabric_coll_op.c.
 *
 * Everything here runs on the fabric thread, except fw_fop_init(),
 * fw_fop_spare(), fw_fop_submit(), fw_fop_done_locked(),
 * fw_fop_release_locked() and fw_fop_free(), which the worker calls. struct fw_xport's fields
 * are the fabric thread's, except `submitted` (under sim->lock) and `spare`
 * (atomic: whoever takes it by the exchange owns it).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric_ref.h"
#include "fw_fabric_xport.h"

#define FAILED_TAGS	16u	/* write tags refused per port whose rest is ignored */
#define FAILED_COLLS	8u	/* collectives failed per port whose chunks are dropped */
#define RING_COMMS	16u	/* communicators whose ring ports this device keeps */
/* Relayed messages waiting for room on their way out, per port; then refused. */
#define RELAY_BACKLOG_MAX	256u

/*
 * A message kept for later: an answer waiting for link room, or an early
 * COLL. data comes from fw_link_msg_alloc(), so it is handed to the link
 * without a copy.
 */
struct held_msg {
	struct held_msg *next;
	size_t len;
	uint8_t *data;
	uint64_t held_ns;		/* when an early COLL was held */
};

struct msg_list {
	struct held_msg *head, **tail;
	unsigned int n;
};

/* A collective that failed on this device: its chunks are not held. */
struct failed_coll {
	bool used;
	uint32_t comm_id, seq;
};

struct xport_port {
	struct msg_list backlog;	/* answers owed to the peer, in order */
	struct msg_list held;		/* COLL messages no operation claimed yet */
	uint64_t failed_tags[FAILED_TAGS];
	unsigned int failed_next;
	struct failed_coll failed_coll[FAILED_COLLS];
	unsigned int failed_coll_next;
	uint64_t drops, nak_tx, nak_rx;
	struct fw_xport_failover fo;	/* failover counters of this port */
	uint32_t degraded;		/* MAIA_FPORT_FO_LATENCY | _LOSS: avoid sending on it */
};

/*
 * A communicator's ring ports as cabled on this device (its last
 * collective here): where a relayed chunk goes on, and where a cut cable's
 * leftovers go.
 */
struct comm_ring {
	bool used;
	uint32_t comm_id;
	uint16_t nranks, rank;
	uint8_t send_port, recv_port;
	/* The last collective a MAIA_FABRIC_COLL_UNREACH notice was sent or passed on for. */
	bool noticed;
	uint32_t notice_seq;
};

struct fw_xport {
	const struct fw_xport_port_ops *ops;	/* the ports, set at create */
	unsigned int nports;
	uint64_t next_tag;
	bool sem_moved;			/* a remote write moved a semaphore */
	struct fw_fop *submitted;	/* under sim->lock: not started yet */
	struct fw_fop *starting;	/* taken from submitted, started next pump */
	struct fw_fop *active;		/* running (and finished, until sync) */
	struct comm_ring rings[RING_COMMS];
	unsigned int rings_next;
	/*
	 * A freed operation of a kind that keeps (fw_fop_ops.keep), for the
	 * next fw_fop_spare(): any thread, so exchanged atomically.
	 */
	struct fw_fop *_Atomic spare;
	struct xport_port port[];
};

/* ---- lists of held messages ---- */

static void list_init(struct msg_list *l)
{
	l->head = NULL;
	l->tail = &l->head;
	l->n = 0;
}

static void list_push(struct msg_list *l, struct held_msg *m)
{
	m->next = NULL;
	*l->tail = m;
	l->tail = &m->next;
	l->n++;
}

static void held_msg_free(struct held_msg *m)
{
	fw_link_msg_free(m->data);
	free(m);
}

/* Unlinks the first message and gives it to the caller (NULL: empty). */
static struct held_msg *list_take(struct msg_list *l)
{
	struct held_msg *m = l->head;

	if (!m)
		return NULL;
	l->head = m->next;
	if (!l->head)
		l->tail = &l->head;
	l->n--;
	m->next = NULL;
	return m;
}

static void list_pop(struct msg_list *l)
{
	held_msg_free(list_take(l));
}

/* Frees the message *hp points at, keeping the list whole. */
static void list_remove(struct msg_list *l, struct held_msg **hp)
{
	struct held_msg *m = *hp;

	*hp = m->next;
	if (l->tail == &m->next)
		l->tail = hp;
	l->n--;
	held_msg_free(m);
}

static void list_free(struct msg_list *l)
{
	while (l->head)
		list_pop(l);
}

/* Moves every message of *from to *to, leaving *from empty. */
static void list_move(struct msg_list *to, struct msg_list *from)
{
	*to = *from;
	if (!to->head)
		to->tail = &to->head;
	list_init(from);
}

/* ---- the ports, through their ops ---- */

static struct fw_link *xport_link(struct maia_sim *sim, unsigned int port)
{
	return sim->xport->ops->link(sim, port);
}

uint64_t fw_xport_now(struct maia_sim *sim)
{
	return sim->xport->ops->now(sim);
}

bool fw_xport_port_up(struct maia_sim *sim, unsigned int port)
{
	return port < sim->xport->nports && xport_link(sim, port)->state == FW_LINK_UP;
}

static bool ref_frames_on = true;

void fw_fabric_ref_frames(bool on)
{
	__atomic_store_n(&ref_frames_on, on, __ATOMIC_RELAXED);
}

/*
 * Whether a message may leave port with its data in device memory: the
 * link lends its frames to the host and sends them unsealed (lazy_crc:
 * fabric_tx_lend and no fault injection).
 */
bool fw_xport_ref_ok(struct maia_sim *sim, unsigned int port)
{
	const struct fw_link *l;

	if (port >= sim->xport->nports || !__atomic_load_n(&ref_frames_on, __ATOMIC_RELAXED))
		return false;
	l = xport_link(sim, port);
	return l->cfg.lazy_crc && l->ops.tx_lend;
}

uint64_t fw_xport_peer_serial(struct maia_sim *sim, unsigned int port)
{
	return port < sim->xport->nports ? xport_link(sim, port)->peer_serial : 0;
}

/* ---- operations: worker side ---- */

void fw_fop_init(struct fw_fop *op, const struct fw_fop_ops *ops, struct maia_sim *sim,
		 unsigned int asid, uint32_t ports)
{
	memset(op, 0, sizeof(*op));
	op->ops = ops;
	op->ports = ports;
	op->deadline_ns = UINT64_MAX;
	fw_as_init(&op->as, sim, asid);
}

static void fop_destroy(struct fw_fop *op)
{
	if (op && op->ops->destroy)
		op->ops->destroy(op);
	free(op);
}

void fw_fop_free(struct fw_fop *op)
{
	struct fw_xport *x = op->as.sim->xport;

	if (op->ops->keep && x) {
		op->ops->keep(op);
		op = atomic_exchange(&x->spare, op);
	}
	fop_destroy(op);
}

struct fw_fop *fw_fop_spare(struct maia_sim *sim, const struct fw_fop_ops *ops)
{
	struct fw_xport *x = sim->xport;
	struct fw_fop *op = x ? atomic_exchange(&x->spare, NULL) : NULL;

	if (op && op->ops != ops) {
		fop_destroy(op);
		op = NULL;
	}
	return op;
}

void fw_fop_submit(struct maia_sim *sim, struct fw_fop *op)
{
	struct fw_xport *x = sim->xport;
	struct fw_fop **pp;

	pthread_mutex_lock(&sim->lock);
	op->in_fabric = true;
	for (pp = &x->submitted; *pp; pp = &(*pp)->next)
		;
	op->next = NULL;
	*pp = op;
	fw_fabric_kick_locked(sim);
	pthread_mutex_unlock(&sim->lock);
}

bool fw_fop_done_locked(const struct fw_fop *op)
{
	return op->done;
}

void fw_fop_release_locked(struct maia_sim *sim, struct fw_fop *op)
{
	if (op->in_fabric) {
		op->abandoned = true;
		fw_fabric_kick_locked(sim);
		return;
	}
	fw_fop_free(op);
}

/* ---- operations: fabric thread side ---- */

/* Whether frames of op still point at its job's memory, holding it back (fw_fop_ops.hold). */
static bool op_holds(struct fw_fop *op, bool abandoned)
{
	return op->ops->hold && op->ops->hold(op, abandoned);
}

void fw_fop_finish(struct fw_fop *op, uint32_t status)
{
	if (op->finished)
		return;
	op->finished = true;
	op->status = status;
	if (op->ops->finished)
		op->ops->finished(op);
	op->held = op_holds(op, false);
}

static void free_op_list(struct fw_fop **head)
{
	while (*head) {
		struct fw_fop *op = *head;

		*head = op->next;
		fw_fop_free(op);
	}
}

/* fw_xport_test_on_done(): a test's callback, or NULL. */
static void (*test_on_done)(struct maia_sim *sim);

void fw_xport_test_on_done(void (*fn)(struct maia_sim *sim))
{
	__atomic_store_n(&test_on_done, fn, __ATOMIC_RELEASE);
}

void fw_xport_sync_locked(struct maia_sim *sim)
{
	struct fw_xport *x = sim->xport;
	struct fw_fop **pp, **tail;
	void (*on_done)(struct maia_sim *sim);
	bool kick = x->sem_moved, done = false;

	for (tail = &x->starting; *tail; tail = &(*tail)->next)
		;
	*tail = x->submitted;
	x->submitted = NULL;
	for (pp = &x->starting; *pp;) {
		struct fw_fop *op = *pp;

		if (op->abandoned) {
			*pp = op->next;
			fw_fop_free(op);
		} else {
			pp = &op->next;
		}
	}
	for (pp = &x->active; *pp;) {
		struct fw_fop *op = *pp;

		if (op->abandoned && op_holds(op, true)) {
			/*
			 * Its frames still point at its memory: freed once they do
			 * not (no waiting here, under the lock). Its job is gone:
			 * it stops here, before this round feeds it anything that
			 * would land in the job's memory, and writes nothing for it
			 * (no finished()).
			 */
			if (!op->finished) {
				op->finished = true;
				op->status = MAIA_STATUS_ABORTED;
			}
			pp = &op->next;
		} else if (op->abandoned) {
			*pp = op->next;
			fw_fop_free(op);
		} else if (op->finished && !op->held) {
			*pp = op->next;
			op->next = NULL;
			op->in_fabric = false;
			op->done = true;
			kick = done = true;
		} else {
			pp = &op->next;
		}
	}
	x->sem_moved = false;
	on_done = __atomic_load_n(&test_on_done, __ATOMIC_ACQUIRE);
	if (done && on_done)
		on_done(sim);
	/* May run the job on here, with the lock dropped: the lists are whole. */
	if (kick)
		fw_sched_fabric_done_locked(sim);
}

struct fw_xport *fw_xport_create(struct maia_sim *sim, unsigned int nports,
				 const struct fw_xport_port_ops *ops)
{
	struct fw_xport *x = calloc(1, sizeof(*x) + nports * sizeof(x->port[0]));

	(void)sim;
	if (!x)
		return NULL;
	x->ops = ops;
	x->nports = nports;
	x->next_tag = 1;
	for (unsigned int i = 0; i < nports; i++) {
		list_init(&x->port[i].backlog);
		list_init(&x->port[i].held);
	}
	return x;
}

static void port_forget(struct xport_port *p)
{
	list_free(&p->backlog);
	list_free(&p->held);
	memset(p->failed_tags, 0, sizeof(p->failed_tags));
	memset(p->failed_coll, 0, sizeof(p->failed_coll));
}

void fw_xport_reset(struct maia_sim *sim)
{
	struct fw_xport *x = sim->xport;

	free_op_list(&x->submitted);
	free_op_list(&x->starting);
	free_op_list(&x->active);
	for (unsigned int i = 0; i < x->nports; i++)
		port_forget(&x->port[i]);
	/* The rings are learnt again from the collectives after the reset. */
	memset(x->rings, 0, sizeof(x->rings));
	x->sem_moved = false;
}

void fw_xport_destroy(struct fw_xport *x)
{
	if (!x)
		return;
	free_op_list(&x->submitted);
	free_op_list(&x->starting);
	free_op_list(&x->active);
	fop_destroy(atomic_exchange(&x->spare, NULL));
	for (unsigned int i = 0; i < x->nports; i++)
		port_forget(&x->port[i]);
	free(x);
}

void fw_xport_counters(struct maia_sim *sim, unsigned int port, uint64_t *drops,
		       uint64_t *nak_tx, uint64_t *nak_rx)
{
	struct xport_port *p = &sim->xport->port[port];

	*drops = p->drops;
	*nak_tx = p->nak_tx;
	*nak_rx = p->nak_rx;
}

void fw_xport_failover_counters(struct maia_sim *sim, unsigned int port,
				struct fw_xport_failover *fo)
{
	*fo = sim->xport->port[port].fo;
}

void fw_xport_set_degraded(struct maia_sim *sim, unsigned int port, uint32_t why)
{
	if (sim->xport && port < sim->xport->nports)
		sim->xport->port[port].degraded = why;
}

uint32_t fw_xport_degraded(struct maia_sim *sim, unsigned int port)
{
	return port < sim->xport->nports ? sim->xport->port[port].degraded : 0;
}

void fw_xport_count_failover(struct maia_sim *sim, unsigned int port)
{
	if (port < sim->xport->nports)
		sim->xport->port[port].fo.failovers++;
}

/* ---- sending ---- */

/* Room for an operation's message on port: UP, no answers waiting, queue half free. */
unsigned int fw_xport_room(struct maia_sim *sim, unsigned int port)
{
	struct fw_xport *x = sim->xport;
	struct fw_link *l;

	if (port >= x->nports)
		return 0;
	l = xport_link(sim, port);
	if (l->state != FW_LINK_UP || x->port[port].backlog.n ||
	    fw_link_pending(l) >= l->cfg.txq / 2)
		return 0;
	return l->cfg.txq / 2 - fw_link_pending(l);
}

int fw_xport_can_send(struct maia_sim *sim, unsigned int port)
{
	struct fw_xport *x = sim->xport;
	struct fw_link *l;

	if (port >= x->nports)
		return -EINVAL;
	l = xport_link(sim, port);
	if (l->state != FW_LINK_UP)
		return -ENOTCONN;
	if (x->port[port].backlog.n || fw_link_pending(l) >= l->cfg.txq / 2)
		return -EAGAIN;
	return 0;
}

int fw_xport_send_owned(struct maia_sim *sim, unsigned int port, void *msg, size_t len)
{
	return fw_link_send_owned(xport_link(sim, port), msg, len, fw_xport_now(sim));
}

int fw_xport_send(struct maia_sim *sim, unsigned int port, void *hdr, const void *data,
		  uint32_t len)
{
	int rc = fw_xport_can_send(sim, port);

	if (rc)
		return rc;
	if (len > MAIA_FABRIC_MSG_MAX_DATA)
		return -EINVAL;
	/* One copy, with the CRC in the same pass unless the link defers it (lazy_crc). */
	return fw_link_send_parts(xport_link(sim, port), hdr, MAIA_FABRIC_MSG_HDR_LEN, data, len,
				  fw_xport_now(sim));
}

/* Sends the answers owed on port while the link queue takes them. */
static void flush_backlog(struct maia_sim *sim, unsigned int port)
{
	struct xport_port *p = &sim->xport->port[port];
	struct fw_link *l = xport_link(sim, port);

	while (p->backlog.head) {
		struct held_msg *m = p->backlog.head;

		if (l->state == FW_LINK_UP && fw_link_pending(l) >= l->cfg.txq)
			return;
		/* Sent, or the link is down and the peer's request died with it. */
		fw_link_send_owned(l, m->data, m->len, fw_xport_now(sim));
		m->data = NULL;
		list_pop(&p->backlog);
	}
}

/* An answer for the peer, queued with room for len data bytes; NULL if dropped (counted). */
static struct held_msg *answer(struct maia_sim *sim, unsigned int port, uint8_t type,
			       const struct maia_fabric_msg *req, uint16_t status, uint32_t len)
{
	struct xport_port *p = &sim->xport->port[port];
	struct maia_fabric_msg a;
	struct held_msg *m = NULL;

	if (p->backlog.n >= FW_XPORT_BACKLOG_MAX || !(m = malloc(sizeof(*m))) ||
	    !(m->data = fw_link_msg_alloc(MAIA_FABRIC_MSG_HDR_LEN + (size_t)len))) {
		/* Only a peer that ignores the pacing of its requests gets here. */
		free(m);
		p->drops++;
		return NULL;
	}
	m->len = MAIA_FABRIC_MSG_HDR_LEN + (size_t)len;
	memset(&a, 0, sizeof(a));
	a.type = type;
	a.flags = req->flags & MAIA_FMSG_F_LAST;
	a.status = status;
	a.key = req->key;
	a.tag = req->tag;
	a.offset = req->offset;
	a.len = len;
	/* Behind the link's headroom the buffer is not aligned for the struct. */
	memcpy(m->data, &a, sizeof(a));
	list_push(&p->backlog, m);
	if (status == MAIA_FABRIC_RESP_BAD_KEY || status == MAIA_FABRIC_RESP_ACCESS)
		p->nak_tx++;
	return m;
}

/* ---- target side ---- */

static bool tag_failed(const struct xport_port *p, uint64_t tag)
{
	for (unsigned int i = 0; i < FAILED_TAGS; i++)
		if (p->failed_tags[i] == tag)
			return true;
	return false;
}

static void target_write(struct maia_sim *sim, unsigned int port, const struct maia_fabric_msg *m,
			 const uint8_t *data)
{
	struct fw_xport *x = sim->xport;
	struct xport_port *p = &x->port[port];
	bool last = m->flags & MAIA_FMSG_F_LAST, sem_done = false;
	unsigned int rc;

	if (!m->tag) {
		p->drops++;
		return;
	}
	/* The rest of a write already refused: the requester has its answer. */
	if (tag_failed(p, m->tag))
		return;
	rc = fw_win_write(sim, m->key, m->offset, data, m->len, last && (m->flags & MAIA_FMSG_F_SEM),
			  m->sem_index, m->sem_value, m->model_ns, &sem_done);
	if (sem_done)
		x->sem_moved = true;
	if (rc != MAIA_FABRIC_RESP_OK) {
		p->failed_tags[p->failed_next++ % FAILED_TAGS] = m->tag;
		answer(sim, port, MAIA_FMSG_WRITE_DONE, m, (uint16_t)rc, 0);
	} else if (last) {
		struct held_msg *h = answer(sim, port, MAIA_FMSG_WRITE_DONE, m,
					    MAIA_FABRIC_RESP_OK, 0);
		struct maia_fabric_msg a;

		if (!h || !m->model_ns)
			return;
		/* its arrival back, over the cable it takes (the requester's ack) */
		memcpy(&a, h->data, sizeof(a));
		a.model_ns = fw_model_write_ack(sim->cfg.fabric_lat_ns[port], m->model_ns);
		memcpy(h->data, &a, sizeof(a));
	}
}

static void target_read(struct maia_sim *sim, unsigned int port, const struct maia_fabric_msg *m)
{
	struct held_msg *h;
	unsigned int rc;

	if (m->len > MAIA_FABRIC_MSG_MAX_DATA) {
		answer(sim, port, MAIA_FMSG_READ_DATA, m, MAIA_FABRIC_RESP_ACCESS, 0);
		return;
	}
	/* Read straight into the answer; a refusal then shrinks it to its header. */
	h = answer(sim, port, MAIA_FMSG_READ_DATA, m, MAIA_FABRIC_RESP_OK, m->len);
	if (!h)
		return;
	if (m->model_ns) {
		/* its arrival: one hop after it may leave, over the cable it takes */
		struct maia_fabric_msg a;

		memcpy(&a, h->data, sizeof(a));
		a.model_ns = fw_model_coll_hop(&sim->chip, sim->cfg.fabric_lat_ns[port],
					       m->model_ns, 0);
		memcpy(h->data, &a, sizeof(a));
	}
	rc = fw_win_read(sim, m->key, m->offset, h->data + MAIA_FABRIC_MSG_HDR_LEN, m->len);
	if (rc != MAIA_FABRIC_RESP_OK) {
		struct maia_fabric_msg a;

		memcpy(&a, h->data, sizeof(a));
		a.status = (uint16_t)rc;
		a.len = 0;
		memcpy(h->data, &a, sizeof(a));
		h->len = MAIA_FABRIC_MSG_HDR_LEN;
		if (rc == MAIA_FABRIC_RESP_BAD_KEY || rc == MAIA_FABRIC_RESP_ACCESS)
			sim->xport->port[port].nak_tx++;
	}
}

/* ---- receiving ---- */

/*
 * Offers msg to the running operations that use port: 1 if one took it, 0
 * if none, -EAGAIN if its operation has no room for it now.
 */
static int offer(struct maia_sim *sim, unsigned int port, const void *msg, size_t len)
{
	struct fw_xport *x = sim->xport;

	for (struct fw_fop *op = x->active; op; op = op->next) {
		int rc;

		if (op->finished || !(op->ports & (1u << port)) || !op->ops->rx)
			continue;
		rc = op->ops->rx(sim, op, port, msg, len);
		if (rc)
			return rc;
	}
	return 0;
}

static bool coll_failed_here(const struct xport_port *p, uint32_t comm_id, uint32_t seq)
{
	for (unsigned int i = 0; i < FAILED_COLLS; i++)
		if (p->failed_coll[i].used && p->failed_coll[i].comm_id == comm_id &&
		    p->failed_coll[i].seq == seq)
			return true;
	return false;
}

/* Whether held COLL message m is of a collective that failed here. */
static bool held_coll_failed_here(const struct xport_port *p, const struct held_msg *m)
{
	struct maia_fabric_coll_msg c;

	memcpy(&c, m->data, sizeof(c));
	return coll_failed_here(p, c.comm_id, c.seq);
}

void fw_xport_coll_failed(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			  uint32_t seq)
{
	struct fw_xport *x = sim->xport;
	struct xport_port *p;
	struct held_msg **hp;
	unsigned int i;

	if (port >= x->nports)
		return;
	p = &x->port[port];
	if (!coll_failed_here(p, comm_id, seq)) {
		i = p->failed_coll_next++ % FAILED_COLLS;
		p->failed_coll[i].used = true;
		p->failed_coll[i].comm_id = comm_id;
		p->failed_coll[i].seq = seq;
	}
	/* What it left held goes now (offer_held() drops the ones it has out). */
	for (hp = &p->held.head; *hp;) {
		if (!held_coll_failed_here(p, *hp)) {
			hp = &(*hp)->next;
			continue;
		}
		list_remove(&p->held, hp);
		p->drops++;
	}
}

struct fw_fop *fw_xport_active(struct maia_sim *sim)
{
	return sim->xport->active;
}

void fw_xport_coll_starting(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			    uint32_t seq)
{
	struct fw_xport *x = sim->xport;

	if (port >= x->nports)
		return;
	for (unsigned int i = 0; i < FAILED_COLLS; i++) {
		struct failed_coll *f = &x->port[port].failed_coll[i];

		if (f->used && f->comm_id == comm_id && (int32_t)(f->seq - seq) > 0)
			f->used = false;
	}
}

/* false: the held list is full (the link delivers the message again later). */
static bool hold_coll(struct maia_sim *sim, unsigned int port, const void *msg, size_t len)
{
	struct xport_port *p = &sim->xport->port[port];
	uint64_t now = fw_xport_now(sim);
	struct held_msg *m = NULL;

	/* Full: what no collective claimed in a long time (oldest first) makes room. */
	while (p->held.n >= FW_XPORT_HELD_MAX &&
	       now - p->held.head->held_ns > FW_XPORT_HELD_EXPIRE_NS) {
		list_pop(&p->held);
		p->drops++;
	}
	if (p->held.n >= FW_XPORT_HELD_MAX || !(m = malloc(sizeof(*m))) ||
	    !(m->data = fw_link_msg_alloc(len))) {
		free(m);
		return false;
	}
	m->len = len;
	m->held_ns = now;
	fw_ref_copy(m->data, msg, len);		/* with its data, if they are elsewhere */
	list_push(&p->held, m);
	return true;
}

/* ---- failover: rings, relays, a cut cable's leftovers ---- */

static const struct comm_ring *ring_of(const struct fw_xport *x, uint32_t comm_id)
{
	for (unsigned int i = 0; i < RING_COMMS; i++)
		if (x->rings[i].used && x->rings[i].comm_id == comm_id)
			return &x->rings[i];
	return NULL;
}

/* A copy of msg (len bytes, a COLL header first) with flags and relay_hops set. */
static struct held_msg *coll_copy(const void *msg, size_t len, uint8_t flags, uint32_t hops)
{
	struct held_msg *m = malloc(sizeof(*m));
	struct maia_fabric_coll_msg c;

	if (!m || !(m->data = fw_link_msg_alloc(len))) {
		free(m);
		return NULL;
	}
	m->len = len;
	m->held_ns = 0;
	fw_ref_copy(m->data, msg, len);
	memcpy(&c, m->data, sizeof(c));
	c.flags = flags;
	c.relay_hops = hops;
	memcpy(m->data, &c, sizeof(c));
	return m;
}

/*
 * Notice n (MAIA_FABRIC_COLL_UNREACH, from port's side) for this device's
 * collective: its operation takes it (and fails), or it is held for the
 * operation that starts later.
 */
static void notice_here(struct maia_sim *sim, unsigned int port,
			const struct maia_fabric_coll_msg *n)
{
	if (!offer(sim, port, n, sizeof(*n)))
		hold_coll(sim, port, n, sizeof(*n));
}

/*
 * Passes notice n on forward, to the next rank of this piece of the ring
 * (none past a DOWN send port: the piece's end), once per collective.
 */
static void notice_on(struct maia_sim *sim, struct comm_ring *r,
		      const struct maia_fabric_coll_msg *n)
{
	struct fw_xport *x = sim->xport;
	struct held_msg *m;

	if (!n->relay_hops || !fw_xport_port_up(sim, r->send_port) ||
	    x->port[r->send_port].backlog.n >= FW_XPORT_BACKLOG_MAX)
		return;
	m = coll_copy(n, sizeof(*n), n->flags, n->relay_hops - 1);
	if (!m)
		return;
	list_push(&x->port[r->send_port].backlog, m);
	flush_backlog(sim, r->send_port);
}

/*
 * A relayed chunk c came in on r's send port with hops still to go and
 * cannot go on: the ring is cut on both sides of this piece. Its ranks are
 * this one, forward to c->src_rank (whose send port is cut); the hops ranks
 * past that, up to this one's predecessor, are unreachable from it. Every
 * rank of the piece learns so, this one first.
 */
static void unreach_notice(struct maia_sim *sim, struct comm_ring *r,
			   const struct maia_fabric_coll_msg *c, uint32_t hops)
{
	struct maia_fabric_coll_msg n = {
		.type = MAIA_FMSG_COLL,
		.flags = MAIA_FABRIC_COLL_UNREACH,
		.step = (uint16_t)hops,
		.comm_id = c->comm_id,
		.seq = c->seq,
		.offset = (c->src_rank + 1u) % r->nranks,
		.src_rank = r->rank,
		.relay_hops = r->nranks,
	};

	if (r->noticed && r->notice_seq == c->seq)
		return;
	r->noticed = true;
	r->notice_seq = c->seq;
	fw_trace(sim, "collective comm %#x seq %u: a relayed chunk from rank %u has no way on: "
		 "ranks %u.. (%u) unreachable", c->comm_id, c->seq, c->src_rank,
		 (unsigned int)n.offset, hops);
	notice_on(sim, r, &n);
	notice_here(sim, r->send_port, &n);
}

void fw_xport_relay_probe(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			  uint32_t seq, unsigned int src_rank, uint32_t hops)
{
	struct fw_xport *x = sim->xport;
	struct maia_fabric_coll_msg p = {
		.type = MAIA_FMSG_COLL,
		.flags = MAIA_FABRIC_COLL_RELAY,
		.comm_id = comm_id,
		.seq = seq,
		.src_rank = src_rank,
	};
	struct held_msg *m;

	if (port >= x->nports || !hops || x->port[port].backlog.n >= FW_XPORT_BACKLOG_MAX)
		return;
	m = coll_copy(&p, sizeof(p), p.flags, hops);
	if (!m)
		return;
	list_push(&x->port[port].backlog, m);
	flush_backlog(sim, port);
}

/*
 * A relayed chunk passing through (relay_hops > 0): on over the
 * communicator's other ring port, in arrival order (the port's backlog).
 * 0: sent on, or dropped (no way on: counted); 1: the communicator is not
 * known here yet (the caller holds it); -EAGAIN: no room on the way out.
 */
static int relay(struct maia_sim *sim, unsigned int port, const struct maia_fabric_coll_msg *c,
		 const void *msg, size_t len)
{
	struct fw_xport *x = sim->xport;
	const struct comm_ring *r = ring_of(x, c->comm_id);
	struct held_msg *m;
	unsigned int out;

	if (!r)
		return 1;
	if (port == r->send_port)
		out = r->recv_port;
	else if (port == r->recv_port)
		out = r->send_port;
	else
		out = x->nports;
	if (out >= x->nports || !fw_xport_port_up(sim, out)) {
		/* A second cut: the chunk cannot reach its destination. */
		x->port[port].fo.relay_drops++;
		if (port == r->send_port)
			unreach_notice(sim, (struct comm_ring *)r, c, c->relay_hops);
		return 0;
	}
	if (x->port[out].backlog.n >= RELAY_BACKLOG_MAX)
		return -EAGAIN;
	m = coll_copy(msg, len, c->flags, c->relay_hops - 1);
	if (!m)
		return -EAGAIN;
	if (c->model_ns) {
		/* modeled: one hop more, over out's cable, from its arrival here */
		struct maia_fabric_coll_msg h;

		memcpy(&h, m->data, sizeof(h));
		h.model_ns = fw_model_coll_hop(&sim->chip, sim->cfg.fabric_lat_ns[out], c->model_ns,
					       c->len);
		memcpy(m->data, &h, sizeof(h));
	}
	list_push(&x->port[out].backlog, m);
	x->port[out].fo.relayed++;
	flush_backlog(sim, out);
	return 0;
}

/* Relays what port holds of comm_id, now that its ring is known. */
static void relay_held(struct maia_sim *sim, unsigned int port, uint32_t comm_id)
{
	struct xport_port *p = &sim->xport->port[port];

	for (struct held_msg **hp = &p->held.head; *hp;) {
		struct maia_fabric_coll_msg c;

		memcpy(&c, (*hp)->data, sizeof(c));
		if (c.comm_id != comm_id || !(c.flags & MAIA_FABRIC_COLL_RELAY) || !c.relay_hops) {
			hp = &(*hp)->next;
			continue;
		}
		if (relay(sim, port, &c, (*hp)->data, (*hp)->len) < 0)
			return;		/* no room: the rest waits for the next start */
		list_remove(&p->held, hp);
	}
}

void fw_xport_coll_ring(struct maia_sim *sim, uint32_t comm_id, unsigned int nranks,
			unsigned int rank, unsigned int send_port, unsigned int recv_port)
{
	struct fw_xport *x = sim->xport;
	struct comm_ring *r = (struct comm_ring *)ring_of(x, comm_id);

	if (nranks < 2 || send_port >= x->nports || recv_port >= x->nports)
		return;
	if (!r)
		r = &x->rings[x->rings_next++ % RING_COMMS];
	r->used = true;
	r->comm_id = comm_id;
	r->nranks = (uint16_t)nranks;
	r->rank = (uint16_t)rank;
	r->send_port = (uint8_t)send_port;
	r->recv_port = (uint8_t)recv_port;
	relay_held(sim, send_port, comm_id);
	relay_held(sim, recv_port, comm_id);
}

/*
 * The link of port going DOWN hands back what it had not seen acknowledged:
 * a chunk this device sent its ring successor over port goes to it the
 * other way round the ring (relayed by every rank between, none for a ring
 * of two), behind nothing of the collective that the successor may lack.
 * The successor drops what it already had (its offset is behind).
 */
void fw_xport_link_unsent(struct maia_sim *sim, unsigned int port, const void *msg, size_t len)
{
	struct fw_xport *x = sim->xport;
	const struct comm_ring *r;
	struct maia_fabric_coll_msg c;
	struct held_msg *m;

	if (len < MAIA_FABRIC_MSG_HDR_LEN)
		return;
	memcpy(&c, msg, sizeof(c));
	if (c.type != MAIA_FMSG_COLL)
		return;
	r = ring_of(x, c.comm_id);
	if (r && (c.flags & MAIA_FABRIC_COLL_RELAY) && port == r->recv_port && port != r->send_port) {
		/* Relayed on, and now no way on: the second cut (it had one hop more here). */
		x->port[r->send_port].fo.relay_drops++;
		unreach_notice(sim, (struct comm_ring *)r, &c, c.relay_hops + 1u);
		return;
	}
	if (!r || (c.flags & MAIA_FABRIC_COLL_RELAY) || r->send_port != port || r->recv_port == port ||
	    !fw_xport_port_up(sim, r->recv_port))
		return;
	m = r->nranks > 2 ? coll_copy(msg, len, c.flags | MAIA_FABRIC_COLL_RELAY,
				      r->nranks - 2u) :
			    coll_copy(msg, len, c.flags, 0);
	if (!m)
		return;
	list_push(&x->port[r->recv_port].backlog, m);
	x->port[port].fo.resent++;
}

/*
 * port went DOWN: the COLL messages it held for collectives not started
 * yet were acknowledged to the peer, which will not send them again; they
 * go in front of what the communicator's other ring port holds, where its
 * collectives now take their predecessor's chunks.
 */
static void keep_held(struct maia_sim *sim, unsigned int port)
{
	struct fw_xport *x = sim->xport;
	struct xport_port *p = &x->port[port];
	struct msg_list keep[MAIA_FABRIC_MAX_PORTS];
	struct held_msg *m;

	for (unsigned int i = 0; i < x->nports; i++)
		list_init(&keep[i]);
	while ((m = list_take(&p->held))) {
		struct maia_fabric_coll_msg c;
		const struct comm_ring *r;

		memcpy(&c, m->data, sizeof(c));
		r = ring_of(x, c.comm_id);
		if (r && r->recv_port == port && r->send_port != port &&
		    fw_xport_port_up(sim, r->send_port) && !coll_failed_here(p, c.comm_id, c.seq)) {
			list_push(&keep[r->send_port], m);
			continue;
		}
		held_msg_free(m);
	}
	for (unsigned int i = 0; i < x->nports; i++) {
		struct msg_list *to = &x->port[i].held;

		if (!keep[i].head)
			continue;
		*keep[i].tail = to->head;
		if (to->head)
			keep[i].tail = to->tail;
		keep[i].n += to->n;
		list_move(to, &keep[i]);
	}
}

/*
 * One message from port's peer, in order, exactly once. Malformed ones
 * (short, unknown type, a length field that disagrees with the message)
 * are counted and dropped.
 */
int fw_xport_deliver(struct maia_sim *sim, unsigned int port, const void *msg, size_t len)
{
	struct xport_port *p = &sim->xport->port[port];
	const uint8_t *data = (const uint8_t *)msg + MAIA_FABRIC_MSG_HDR_LEN;
	struct maia_fabric_coll_msg c;
	struct maia_fabric_msg m;
	size_t dlen;
	int rc;

	if (len < MAIA_FABRIC_MSG_HDR_LEN) {
		p->drops++;
		return 0;
	}
	memcpy(&m, msg, sizeof(m));
	dlen = len - MAIA_FABRIC_MSG_HDR_LEN;
	switch (m.type) {
	case MAIA_FMSG_IDENT:
		if (dlen)
			break;
		sim->xport->ops->ident_rx(sim, port, m.tag, m.key);
		return 0;
	case MAIA_FMSG_WRITE:
		if (dlen != m.len)
			break;
		target_write(sim, port, &m, data);
		return 0;
	case MAIA_FMSG_READ_REQ:
		if (dlen)
			break;
		target_read(sim, port, &m);
		return 0;
	case MAIA_FMSG_WRITE_DONE:
	case MAIA_FMSG_READ_DATA:
		if (dlen != m.len || (m.type == MAIA_FMSG_WRITE_DONE && dlen))
			break;
		if (m.status == MAIA_FABRIC_RESP_BAD_KEY || m.status == MAIA_FABRIC_RESP_ACCESS)
			p->nak_rx++;
		/* An answer nobody waits for any more (its operation failed) is ignored. */
		offer(sim, port, msg, len);
		return 0;
	case MAIA_FMSG_COLL:
		memcpy(&c, msg, sizeof(c));
		if (dlen != c.len)
			break;
		if (c.flags & MAIA_FABRIC_COLL_UNREACH) {
			struct comm_ring *r = (struct comm_ring *)ring_of(sim->xport, c.comm_id);

			if (dlen || !r || (r->noticed && r->notice_seq == c.seq))
				return 0;
			r->noticed = true;
			r->notice_seq = c.seq;
			notice_on(sim, r, &c);
			notice_here(sim, port, &c);
			return 0;
		}
		/* A probe (no data) at its destination: the way round is whole. */
		if ((c.flags & MAIA_FABRIC_COLL_RELAY) && !c.relay_hops && !c.len)
			return 0;
		if ((c.flags & MAIA_FABRIC_COLL_RELAY) && c.relay_hops) {
			rc = relay(sim, port, &c, msg, len);
			if (rc <= 0)
				return rc;
			/* Its communicator unknown here yet: held, relayed once it is. */
			return hold_coll(sim, port, msg, len) ? 0 : -EAGAIN;
		}
		if (coll_failed_here(p, c.comm_id, c.seq)) {
			p->drops++;	/* a leftover of a collective that failed here */
			return 0;
		}
		/* Back-pressure: refused, the link delivers it again later. */
		rc = offer(sim, port, msg, len);
		if (rc < 0 || (!rc && !hold_coll(sim, port, msg, len)))
			return -EAGAIN;
		return 0;
	default:
		break;
	}
	p->drops++;
	return 0;
}

void fw_xport_link_up(struct maia_sim *sim, unsigned int port)
{
	(void)sim;
	(void)port;
}

static void offer_held(struct maia_sim *sim, struct fw_fop *op, unsigned int port);

/*
 * A DOWN ends every operation on the port that cannot go another way
 * (fw_fop_ops.reroute), and what the peer was owed. One that goes on is
 * offered what its new ports hold.
 */
void fw_xport_link_down(struct maia_sim *sim, unsigned int port)
{
	struct fw_xport *x = sim->xport;

	keep_held(sim, port);
	for (struct fw_fop *op = x->active; op; op = op->next) {
		if (op->finished || !(op->ports & (1u << port)))
			continue;
		if (op->ops->reroute && op->ops->reroute(sim, op, port)) {
			for (unsigned int i = 0; i < x->nports && op->ops->rx; i++)
				if (op->ports & (1u << i))
					offer_held(sim, op, i);
			continue;
		}
		fw_fop_finish(op, MAIA_STATUS_FABRIC_LINK);
	}
	port_forget(&x->port[port]);
}

/*
 * Offers port's held COLL messages to op as it starts, in order. The list is
 * taken whole first, and each message is the offer's own while rx() looks
 * at it: rx() may fail op's collective, and the failure drops that
 * collective's held messages (fw_xport_coll_failed()), which must not free
 * the one in op's hands. What op does not take goes back, in order, unless
 * its collective failed here meanwhile. Nothing else holds a message while
 * this runs: only fw_xport_deliver() does, and never from inside rx().
 */
static void offer_held(struct maia_sim *sim, struct fw_fop *op, unsigned int port)
{
	struct xport_port *p = &sim->xport->port[port];
	struct msg_list offering;
	struct held_msg *m;
	bool no_room = false;

	list_move(&offering, &p->held);
	while ((m = list_take(&offering))) {
		int rc = 0;

		if (held_coll_failed_here(p, m)) {
			held_msg_free(m);
			p->drops++;
			continue;
		}
		if (!no_room && !op->finished)
			rc = op->ops->rx(sim, op, port, m->data, m->len);
		if (rc > 0) {
			held_msg_free(m);
			continue;
		}
		/* Not op's, or no room for it now: the rest stays held, in order. */
		no_room |= rc < 0;
		list_push(&p->held, m);
	}
}

/* Starts an operation: every port it uses must be UP; held COLL messages offered. */
static void start_op(struct maia_sim *sim, struct fw_fop *op)
{
	struct fw_xport *x = sim->xport;
	struct fw_fop **pp;

	op->tag = x->next_tag++;
	for (pp = &x->active; *pp; pp = &(*pp)->next)
		;
	op->next = NULL;
	*pp = op;
	if (op->ops->route)
		op->ops->route(sim, op);
	for (unsigned int i = 0; i < x->nports; i++) {
		if (!(op->ports & (1u << i)))
			continue;
		if (xport_link(sim, i)->state != FW_LINK_UP) {
			fw_fop_finish(op, MAIA_STATUS_FABRIC_LINK);
			return;
		}
		if (op->ops->rx)
			offer_held(sim, op, i);
	}
}

void fw_xport_pump(struct maia_sim *sim, uint64_t now)
{
	struct fw_xport *x = sim->xport;

	while (x->starting) {
		struct fw_fop *op = x->starting;

		x->starting = op->next;
		start_op(sim, op);
	}
	for (unsigned int i = 0; i < x->nports; i++)
		flush_backlog(sim, i);
	for (struct fw_fop *op = x->active; op; op = op->next) {
		if (op->finished) {
			op->held = op_holds(op, false);
			continue;
		}
		/* pump first: an operation may time itself out with more detail. */
		op->ops->pump(sim, op);
		if (!op->finished && now >= op->deadline_ns)
			fw_fop_finish(op, MAIA_STATUS_FABRIC_TIMEOUT);
	}
}

uint64_t fw_xport_next_deadline(struct maia_sim *sim)
{
	struct fw_xport *x = sim->xport;
	uint64_t d = UINT64_MAX;

	for (struct fw_fop *op = x->active; op; op = op->next)
		if ((!op->finished || op->held) && op->deadline_ns < d)
			d = op->deadline_ns;
	return d;
}
