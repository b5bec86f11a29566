// SPDX-License-Identifier: MIT
/*
 * Remote write and read (MAIA_OP_FABRIC_WRITE, MAIA_OP_FABRIC_READ) as
 * fabric operations (fw_fabric_xport.h), the requester's side: the
 * operation's pump sends WRITE or READ_REQ messages while the link takes
 * them, its rx takes the WRITE_DONE or READ_DATA answers that name its tag.
 * The target's side (windows) is in fw_fabric_xport.c and fw_fabric_win.c;
 * Documentation/hw/fabric.rst, "Transport".
 *
 * Everything here runs on the fabric thread, but for the two *_start()
 * constructors, which the worker calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fabric_xport.h"

static uint32_t resp_status(unsigned int resp)
{
	switch (resp) {
	case MAIA_FABRIC_RESP_OK:
		return MAIA_STATUS_OK;
	case MAIA_FABRIC_RESP_BAD_KEY:
	case MAIA_FABRIC_RESP_ACCESS:
		return MAIA_STATUS_FABRIC_KEY;
	default:
		return MAIA_STATUS_FABRIC_REMOTE;
	}
}

struct xfer {
	struct fw_fop op;
	unsigned int port;
	uint32_t key;
	uint64_t remote, local, size;
	uint64_t sent;			/* write: bytes sent; read: bytes asked */
	uint64_t landed;		/* read: bytes landed */
	unsigned int in_flight;		/* read: READ_REQs unanswered */
	bool all_sent;
	bool sem;
	uint32_t sem_index, sem_value;
	uint64_t model_start_ns;	/* modeled time the command started sending */
};

static uint32_t chunk(uint64_t left)
{
	return left < MAIA_FABRIC_MSG_MAX_DATA ? (uint32_t)left : MAIA_FABRIC_MSG_MAX_DATA;
}

/* -ENOTCONN ends the operation; -EAGAIN waits for the next round. */
static bool send_failed(struct fw_fop *op, int rc)
{
	if (!rc)
		return false;
	if (rc != -EAGAIN)
		fw_fop_finish(op, MAIA_STATUS_FABRIC_LINK);
	return true;
}

static void write_pump(struct maia_sim *sim, struct fw_fop *op)
{
	struct xfer *w = (struct xfer *)op;

	while (!w->all_sent && !op->finished) {
		uint32_t n = chunk(w->size - w->sent);
		struct maia_fabric_msg m = {
			.type = MAIA_FMSG_WRITE,
			.key = w->key,
			.tag = op->tag,
			.offset = w->remote + w->sent,
			.len = n,
			/* its arrival, over this port's cable (0: not modeled) */
			.model_ns = w->model_start_ns ?
				    fw_model_write_arrival(&sim->chip,
							   sim->cfg.fabric_lat_ns[w->port],
							   w->model_start_ns, w->sent + n) : 0,
		};
		int rc = fw_xport_can_send(sim, w->port);
		uint8_t *msg;

		if (send_failed(op, rc))
			return;
		if (w->sent + n == w->size) {
			m.flags = MAIA_FMSG_F_LAST;
			if (w->sem) {
				m.flags |= MAIA_FMSG_F_SEM;
				m.sem_index = w->sem_index;
				m.sem_value = w->sem_value;
			}
		}
		/* Straight from the source into the message the link sends. */
		msg = fw_link_msg_alloc(sizeof(m) + n);
		if (!msg)
			return;		/* try again next round */
		rc = n ? fw_as_read(&op->as, w->local + w->sent, msg + sizeof(m), n)
		       : (int)MAIA_STATUS_OK;
		if (rc != MAIA_STATUS_OK) {
			fw_link_msg_free(msg);
			fw_fop_finish(op, (uint32_t)rc);
			return;
		}
		memcpy(msg, &m, sizeof(m));
		if (send_failed(op, fw_xport_send_owned(sim, w->port, msg, sizeof(m) + n)))
			return;
		w->sent += n;
		w->all_sent = w->sent == w->size;
	}
}

static int write_rx(struct maia_sim *sim, struct fw_fop *op, unsigned int port, const void *msg,
		     size_t len)
{
	struct xfer *w = (struct xfer *)op;
	struct maia_fabric_msg m;

	(void)sim;
	(void)len;
	memcpy(&m, msg, sizeof(m));
	if (m.type != MAIA_FMSG_WRITE_DONE || m.tag != op->tag || port != w->port)
		return 0;
	/* acknowledged at its arrival, over the target's end of the cable (0: not modeled) */
	op->model_end_ns = m.model_ns;
	if (m.status == MAIA_FABRIC_RESP_OK && !w->all_sent)
		fw_fop_finish(op, MAIA_STATUS_FABRIC_REMOTE);	/* done before the last byte? */
	else
		fw_fop_finish(op, resp_status(m.status));
	return 1;
}

static void read_pump(struct maia_sim *sim, struct fw_fop *op)
{
	struct xfer *r = (struct xfer *)op;

	while (!r->all_sent && !op->finished && r->in_flight < FW_XPORT_READ_DEPTH) {
		uint32_t n = chunk(r->size - r->sent);
		struct maia_fabric_msg m = {
			.type = MAIA_FMSG_READ_REQ,
			.flags = r->sent + n == r->size ? MAIA_FMSG_F_LAST : 0,
			.key = r->key,
			.tag = op->tag,
			.offset = r->remote + r->sent,
			.len = n,
			/* when its answer may leave the target (0: not modeled) */
			.model_ns = r->model_start_ns ?
				    fw_model_read_answer_left(&sim->chip,
							      sim->cfg.fabric_lat_ns[r->port],
							      r->model_start_ns, r->sent + n) : 0,
		};

		if (send_failed(op, fw_xport_send(sim, r->port, &m, NULL, 0)))
			return;
		r->sent += n;
		r->in_flight++;
		r->all_sent = r->sent == r->size;
	}
}

static int read_rx(struct maia_sim *sim, struct fw_fop *op, unsigned int port, const void *msg,
		    size_t len)
{
	struct xfer *r = (struct xfer *)op;
	struct maia_fabric_msg m;
	uint32_t n;
	int rc;

	(void)sim;
	(void)len;
	memcpy(&m, msg, sizeof(m));
	if (m.type != MAIA_FMSG_READ_DATA || m.tag != op->tag || port != r->port)
		return 0;
	if (m.status != MAIA_FABRIC_RESP_OK) {
		fw_fop_finish(op, resp_status(m.status));
		return 1;
	}
	/* Answers come in request order, each the size asked. */
	n = chunk(r->size - r->landed);
	if (!r->in_flight || m.offset != r->remote + r->landed || m.len != n) {
		fw_fop_finish(op, MAIA_STATUS_FABRIC_REMOTE);
		return 1;
	}
	rc = n ? fw_as_write(&op->as, r->local + r->landed,
			     (const uint8_t *)msg + MAIA_FABRIC_MSG_HDR_LEN, n) : (int)MAIA_STATUS_OK;
	if (rc != MAIA_STATUS_OK) {
		fw_fop_finish(op, (uint32_t)rc);
		return 1;
	}
	r->landed += n;
	r->in_flight--;
	/* the read ends at its last answer's arrival, over the target's cable */
	if (op->model_end_ns < m.model_ns)
		op->model_end_ns = m.model_ns;
	if (r->landed == r->size)
		fw_fop_finish(op, MAIA_STATUS_OK);
	return 1;
}

static const struct fw_fop_ops write_ops = {
	.pump = write_pump,
	.rx = write_rx,
};

static const struct fw_fop_ops read_ops = {
	.pump = read_pump,
	.rx = read_rx,
};

static struct xfer *xfer_new(struct maia_sim *sim, const struct fw_fop_ops *ops,
			     unsigned int asid, unsigned int port)
{
	struct xfer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	fw_fop_init(&t->op, ops, sim, asid, 1u << port);
	t->port = port;
	return t;
}

struct fw_fop *fw_xport_write_start(struct maia_sim *sim, unsigned int asid,
				    const struct maia_cmd_fabric_write *c, uint64_t model_start_ns)
{
	struct xfer *w = xfer_new(sim, &write_ops, asid, c->port);

	if (!w)
		return NULL;
	w->model_start_ns = model_start_ns;
	w->key = c->key;
	w->remote = c->remote_offset;
	w->local = c->local_addr;
	w->size = c->size;
	w->sem = c->hdr.flags & MAIA_FABRIC_WRITE_SEM;
	w->sem_index = c->sem_index;
	w->sem_value = c->sem_value;
	fw_fop_submit(sim, &w->op);
	return &w->op;
}

struct fw_fop *fw_xport_read_start(struct maia_sim *sim, unsigned int asid,
				   const struct maia_cmd_fabric_read *c, uint64_t model_start_ns)
{
	struct xfer *r = xfer_new(sim, &read_ops, asid, c->port);

	if (!r)
		return NULL;
	r->model_start_ns = model_start_ns;
	r->key = c->key;
	r->remote = c->remote_offset;
	r->local = c->local_addr;
	r->size = c->size;
	fw_fop_submit(sim, &r->op);
	return &r->op;
}
