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
#include <stdlib.h>

#include "fw_fabric_coll.h"
#include "fw_fabric_coll_op.h"
#include "fw_fabric_xport.h"

/* The engine's own hold: more than the transport holds, so a start never refuses. */
#define COLL_OP_HOLD_MSGS	(FW_XPORT_HELD_MAX + MAIA_FABRIC_WINDOW)

struct coll_op {
	struct fw_fop op;		/* first: fw_fop_free() frees the whole */
	struct maia_sim *sim;
	struct maia_cmd_collective cmd;
	bool started;
	struct fw_coll eng;
};

static unsigned int op_tx_room(void *opaque, unsigned int port)
{
	struct coll_op *c = opaque;

	return fw_xport_room(c->sim, port);
}

static int op_tx(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct coll_op *c = opaque;
	const uint8_t *m = msg;

	return fw_xport_send(c->sim, port, (void *)m, m + MAIA_FABRIC_MSG_HDR_LEN,
			     (uint32_t)(len - MAIA_FABRIC_MSG_HDR_LEN));
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

static const struct fw_coll_ops coll_ops = {
	.tx_room = op_tx_room,
	.tx = op_tx,
	.mem_read = op_read,
	.mem_write = op_write,
	.mem_map = op_map,
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
		fw_coll_fail_port(&c->eng, NULL, op->status, down_port(c));
	} else if (!c->started) {
		c->started = true;
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

static void start_once(struct coll_op *c)
{
	if (c->started)
		return;
	c->started = true;
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

	start_once(c);
	fw_coll_poll(&c->eng, fw_xport_now(sim));
	sync_end(c);
}

static int op_rx(struct maia_sim *sim, struct fw_fop *op, unsigned int port, const void *msg,
		 size_t len)
{
	struct coll_op *c = (struct coll_op *)op;
	int rc;

	start_once(c);
	if (c->op.finished || !fw_coll_wants(&c->eng, port, msg, len))
		return 0;
	rc = fw_coll_rx(&c->eng, port, msg, len, fw_xport_now(sim));
	sync_end(c);
	return rc < 0 ? -EAGAIN : 1;
}

/*
 * Failover of a ring of two: both of a rank's ports lead to its one peer,
 * so when one of the two cables is DOWN and the other is UP to the same
 * device, the collective runs over the live cable both ways: the ring the
 * other way round. Each rank decides from its own links; a dead cable is
 * DOWN at both ends (a dead peer), so both take the other one. A port that
 * never came up, or whose last peer is not the live port's, is no evidence
 * of a second cable to the same device: then the DOWN port fails the
 * collective (FABRIC_LINK), as on a ring of three or more, where no second
 * path to a neighbour exists. A cable that goes DOWN during the collective
 * still fails it.
 */
static void op_route(struct maia_sim *sim, struct fw_fop *op)
{
	struct coll_op *c = (struct coll_op *)op;
	struct maia_cmd_collective *k = &c->cmd;
	unsigned int live, dead;
	uint64_t peer;

	if (k->nranks != 2 || k->send_port == k->recv_port ||
	    fw_coll_check(k, fw_fabric_ports(sim)) != MAIA_STATUS_OK ||
	    fw_xport_port_up(sim, k->send_port) == fw_xport_port_up(sim, k->recv_port))
		return;
	live = fw_xport_port_up(sim, k->send_port) ? k->send_port : k->recv_port;
	dead = live == k->send_port ? k->recv_port : k->send_port;
	peer = fw_xport_peer_serial(sim, live);
	if (!peer || fw_xport_peer_serial(sim, dead) != peer)
		return;
	fw_trace(sim, "collective comm %#x seq %u rank %u/%u: port %u down, routed over port %u "
		 "both ways", k->comm_id, k->seq, k->rank, k->nranks, dead, live);
	k->send_port = (uint8_t)live;
	k->recv_port = (uint8_t)live;
	op->ports = 1u << live;
}

static void op_destroy(struct fw_fop *op)
{
	fw_coll_destroy(&((struct coll_op *)op)->eng);
}

static const struct fw_fop_ops coll_fop_ops = {
	.pump = op_pump,
	.rx = op_rx,
	.destroy = op_destroy,
	.finished = op_finished,
	.route = op_route,
};

struct fw_fop *fw_coll_op_start(struct maia_sim *sim, unsigned int asid,
				const struct maia_cmd_collective *cmd, uint64_t model_start_ns)
{
	struct coll_op *c = calloc(1, sizeof(*c));
	struct fw_coll_config cfg;
	uint32_t ports = 0;

	if (!c)
		return NULL;
	if (cmd->nranks > 1)
		ports = (1u << cmd->send_port) | (1u << cmd->recv_port);
	fw_fop_init(&c->op, &coll_fop_ops, sim, asid, ports);
	c->sim = sim;
	c->cmd = *cmd;
	fw_coll_config_defaults(&cfg);
	cfg.nports = fw_fabric_ports(sim);
	cfg.early_msgs = COLL_OP_HOLD_MSGS;
	cfg.early_bytes = (size_t)COLL_OP_HOLD_MSGS * MAIA_FABRIC_MSG_MAX_DATA;
	cfg.model_link_mbps = sim->chip.link_mbps;
	cfg.model_link_lat_ns = sim->chip.link_lat_ns;
	if (fw_coll_init(&c->eng, &cfg, &coll_ops, c)) {
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
