/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim fabric transport (Documentation/hw/fabric.rst, "Transport"):
 * struct maia_fabric_msg over the links, and fabric operations, the unit of
 * work a job parks on (FW_JOB_FABRIC_WAIT).
 *
 * A fabric operation (struct fw_fop) is started by the worker for one
 * command (remote write, remote read; a collective the same way), handed to
 * the fabric thread with fw_fop_submit(), and run there: the thread calls
 * its pump() every round to send what the links take, offers it the
 * messages that answer it (rx()), fails it with MAIA_STATUS_FABRIC_LINK
 * when a port it uses goes down, and with MAIA_STATUS_FABRIC_TIMEOUT at its
 * deadline. fw_fop_finish() ends it; its job then sees it done, takes the
 * status and releases it: resumed by the fabric thread itself in the
 * worker's place when the inline path is on and the worker is not busy
 * (fw_sched_fabric_done_locked()), else by the worker. A job that is
 * aborted or dropped releases its operation at once; the fabric thread
 * frees it at its next round.
 *
 * The collective engine (fw_fabric_coll.c) plugs in as one more kind of
 * operation: its fw_fop_ops, MAIA_FMSG_COLL messages offered to rx(), and
 * fw_xport_send() to send them. A COLL message no running operation claims
 * (the peer started first) is held, in order, per port (up to
 * FW_XPORT_HELD_MAX, then refused: the link delivers it again later) and
 * offered to every operation as it starts; when the list is full, one
 * nobody claimed for FW_XPORT_HELD_EXPIRE_NS is dropped to make room. The
 * chunks of a collective that failed on this device are dropped.
 */
#ifndef FWSIM_FABRIC_XPORT_H
#define FWSIM_FABRIC_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_fabric.h"
#include "fw_internal.h"

#define FW_XPORT_READ_DEPTH	32u	/* READ_REQs in flight per remote read */
#define FW_XPORT_HELD_MAX	256u	/* unclaimed COLL messages held per port */
/*
 * How long an unclaimed COLL message is sure to be kept: past the longest a
 * job may wait for its peers (the driver's fabric_wait_max_ms, 120 s). Only
 * a full held list drops older ones, to make room.
 */
#define FW_XPORT_HELD_EXPIRE_NS	(130ull * 1000000000ull)
#define FW_XPORT_BACKLOG_MAX	4096u	/* answers waiting for link queue room, per port */

struct fw_fop;

/* What a kind of fabric operation does. Every hook runs on the fabric thread. */
struct fw_fop_ops {
	/* Send what the links take now (fw_xport_send() until -EAGAIN). */
	void (*pump)(struct maia_sim *sim, struct fw_fop *op);
	/*
	 * A message received on `port` (len >= MAIA_FABRIC_MSG_HDR_LEN, its
	 * type known and its length fields checked): 1 if it is op's (used or
	 * dropped), 0 if not, -EAGAIN if it is op's but op has no room for it
	 * now (the link then delivers it again later: back-pressure).
	 */
	int (*rx)(struct maia_sim *sim, struct fw_fop *op, unsigned int port, const void *msg,
		  size_t len);
	/* Optional: frees what the kind allocated besides the operation itself. */
	void (*destroy)(struct fw_fop *op);
	/*
	 * Optional: instead of destroy at fw_fop_free(), op lets go of what it
	 * held for its one operation and is kept, with what it may reuse
	 * (buffers), for the device's next operation of its kind
	 * (fw_fop_spare()); a kept op that no one takes is destroyed. Under
	 * ASan it poisons what it keeps, all but op->ops (fw_fop_spare() and
	 * destroy read that), and unpoisons it when taken or destroyed.
	 */
	void (*keep)(struct fw_fop *op);
	/*
	 * Optional: op was just finished (fw_fop_finish(), by the kind itself
	 * or by the transport: a port down, the deadline), on the fabric thread.
	 */
	void (*finished)(struct fw_fop *op);
	/*
	 * Optional: op starts, on the fabric thread, before its ports are
	 * checked: it may choose other ports (op->ports) from the links' state.
	 */
	void (*route)(struct maia_sim *sim, struct fw_fop *op);
	/*
	 * Optional: port, one of op's, just went DOWN while op runs. true: op
	 * goes on over other ports (op->ports changed; the transport offers it
	 * what they hold); false: op fails with MAIA_STATUS_FABRIC_LINK.
	 */
	bool (*reroute)(struct maia_sim *sim, struct fw_fop *op, unsigned int port);
	/*
	 * Optional: op is finished, but true: its job is not completed yet
	 * (frames of it still point at the job's memory, fw_fabric_ref.h);
	 * asked again at each round, by op->deadline_ns at the latest. An
	 * abandoned op, finished or not, is not freed while it says so
	 * either (asked with abandoned true, under the device lock: it must
	 * not wait); one still running then stops right there, before it is
	 * fed anything more (finished, MAIA_STATUS_ABORTED, without
	 * finished(): its job is gone).
	 */
	bool (*hold)(struct fw_fop *op, bool abandoned);
};

struct fw_fop {
	const struct fw_fop_ops *ops;
	uint32_t ports;			/* bit p: uses port p (a DOWN fails it) */
	uint64_t tag;			/* unique per device, echoed in answers */
	uint64_t deadline_ns;		/* host clock; UINT64_MAX: none */
	struct fw_as as;		/* the job's address space */
	/* Fabric-thread-owned. */
	struct fw_fop *next;
	bool finished;
	bool held;			/* finished, its job held back (fw_fop_ops.hold) */
	uint32_t status;		/* MAIA_STATUS_*, once finished */
	uint64_t model_end_ns;		/* modeled time it ended, once finished; 0: none */
	/* Under sim->lock. */
	bool in_fabric;			/* the fabric thread holds it */
	bool done;			/* finished and handed back */
	bool abandoned;			/* its job is gone: free it */
};

/* Worker side. */
void fw_fop_init(struct fw_fop *op, const struct fw_fop_ops *ops, struct maia_sim *sim,
		 unsigned int asid, uint32_t ports);
void fw_fop_submit(struct maia_sim *sim, struct fw_fop *op);
bool fw_fop_done_locked(const struct fw_fop *op);
/* The job is done with op (finished or not); sim->lock held. */
void fw_fop_release_locked(struct maia_sim *sim, struct fw_fop *op);
void fw_fop_free(struct fw_fop *op);
/*
 * The device's kept operation (fw_fop_ops.keep) if it is of ops' kind, to
 * be initialized again (fw_fop_init()) and reused, or NULL. Any thread.
 */
struct fw_fop *fw_fop_spare(struct maia_sim *sim, const struct fw_fop_ops *ops);

/* Fabric thread side. */
void fw_fop_finish(struct fw_fop *op, uint32_t status);	/* the first status stays */
/*
 * Queue one message on port: a 48-byte header (struct maia_fabric_msg or
 * maia_fabric_coll_msg, len filled in) then len <= MAIA_FABRIC_MSG_MAX_DATA
 * bytes. Operations share a port's link queue with the answers this device
 * owes its peers, which go first. 0, -EAGAIN (try again next round),
 * -ENOTCONN (port down), -EINVAL (no such port), -ENOMEM.
 */
int fw_xport_send(struct maia_sim *sim, unsigned int port, void *hdr, const void *data,
		  uint32_t len);
/* Messages an operation may still queue on port now (0 when down or full). */
unsigned int fw_xport_room(struct maia_sim *sim, unsigned int port);
/* Whether port takes an operation's message now: 0, -EAGAIN, -ENOTCONN, -EINVAL. */
int fw_xport_can_send(struct maia_sim *sim, unsigned int port);
/* Whether port's link takes messages whose data are in device memory (fw_fabric_ref.h). */
bool fw_xport_ref_ok(struct maia_sim *sim, unsigned int port);
/*
 * Hands msg (from fw_link_msg_alloc(), len bytes, a header then its data)
 * to port's link once fw_xport_can_send() said 0: the zero-copy send.
 */
int fw_xport_send_owned(struct maia_sim *sim, unsigned int port, void *msg, size_t len);

/* The running operations (fabric thread): the first, then op->next. */
struct fw_fop *fw_xport_active(struct maia_sim *sim);

/*
 * Collectives and their leftovers on a receive port. A collective that
 * failed here: its chunks held or still arriving on port are dropped, not
 * held (its peers may go on sending until they time out). A collective
 * starting: a failure recorded for a later seq of its communicator is of an
 * earlier incarnation of that id, forgotten.
 */
void fw_xport_coll_failed(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			  uint32_t seq);
void fw_xport_coll_starting(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			    uint32_t seq);

/*
 * Failover (Documentation/hw/fabric.rst, "Failover"). A collective records
 * its communicator's ring ports as cabled here (nranks >= 2), so that this
 * device relays the communicator's MAIA_FABRIC_COLL_RELAY chunks from one
 * of those ports to the other, and so that, when the send port's link goes
 * DOWN, the chunks it had not seen acknowledged go to the successor the
 * other way round the ring (fw_xport_link_unsent(), from the link).
 */
void fw_xport_coll_ring(struct maia_sim *sim, uint32_t comm_id, unsigned int nranks,
			unsigned int rank, unsigned int send_port, unsigned int recv_port);
void fw_xport_link_unsent(struct maia_sim *sim, unsigned int port, const void *msg, size_t len);
/*
 * A relayed chunk with no data sent round the other way over port as a
 * collective takes that way: it finds a second cut (MAIA_FABRIC_COLL_UNREACH)
 * even if the collective has nothing left to send.
 */
void fw_xport_relay_probe(struct maia_sim *sim, unsigned int port, uint32_t comm_id,
			  uint32_t seq, unsigned int src_rank, uint32_t hops);

/* Per port, since the device booted. */
struct fw_xport_failover {
	uint64_t failovers;	/* collectives this device routed around this port, DOWN */
	uint64_t relayed;	/* relayed chunks this device sent on out of this port */
	uint64_t resent;	/* chunks re-sent the other way round as this port went DOWN */
	uint64_t relay_drops;	/* relayed chunks in on this port with no way on (a second cut) */
};
void fw_xport_failover_counters(struct maia_sim *sim, unsigned int port,
				struct fw_xport_failover *fo);
/* A collective routed around port: counted. */
void fw_xport_count_failover(struct maia_sim *sim, unsigned int port);
/*
 * Whether port crossed a failover threshold (MAIA_FPORT_FO_LATENCY |
 * MAIA_FPORT_FO_LOSS; 0: no): set by fw_fabric_port.c each round.
 */
void fw_xport_set_degraded(struct maia_sim *sim, unsigned int port, uint32_t why);
uint32_t fw_xport_degraded(struct maia_sim *sim, unsigned int port);

/*
 * Remote write and read commands (fw_fabric_xfer.c): the operation to park
 * on. Their messages carry modeled time from model_start_ns (a read's
 * requests, when its answers may leave; the answers, their arrival).
 */
struct fw_fop *fw_xport_write_start(struct maia_sim *sim, unsigned int asid,
				    const struct maia_cmd_fabric_write *c, uint64_t model_start_ns);
struct fw_fop *fw_xport_read_start(struct maia_sim *sim, unsigned int asid,
				   const struct maia_cmd_fabric_read *c, uint64_t model_start_ns);

/* Between fw_fabric_port.c and fw_fabric_xport.c, on the fabric thread. */
struct fw_xport;
/*
 * What the transport needs of the ports, given by fw_fabric_port.c at
 * create: the transport calls the ports only through these.
 */
struct fw_xport_port_ops {
	struct fw_link *(*link)(struct maia_sim *sim, unsigned int port);
	uint64_t (*now)(struct maia_sim *sim);		/* the links' clock */
	/* MAIA_FMSG_IDENT from port's peer: its serial and port. */
	void (*ident_rx)(struct maia_sim *sim, unsigned int port, uint64_t serial,
			 unsigned int peer_port);
};
/* The transport, found through sim->xport once fw_fabric_create() set it. */
struct fw_xport *fw_xport_create(struct maia_sim *sim, unsigned int nports,
				 const struct fw_xport_port_ops *ops);
void fw_xport_destroy(struct fw_xport *x);
/* 0, or -EAGAIN: no room for the message now (fw_link_ops.deliver). */
int fw_xport_deliver(struct maia_sim *sim, unsigned int port, const void *msg, size_t len);
void fw_xport_link_up(struct maia_sim *sim, unsigned int port);
void fw_xport_link_down(struct maia_sim *sim, unsigned int port);
/* Start submitted ops, run every op's pump, send held answers. */
void fw_xport_pump(struct maia_sim *sim, uint64_t now);
/* Earliest operation deadline (UINT64_MAX: none). */
uint64_t fw_xport_next_deadline(struct maia_sim *sim);
/* Under sim->lock: take submitted ops, free abandoned ones, publish finished ones. */
void fw_xport_sync_locked(struct maia_sim *sim);
/*
 * Tests: fn is called by fw_xport_sync_locked(), sim->lock held, each time
 * it has marked operations done, before their jobs may see it (and read
 * what the operations counted); NULL: none (the default).
 */
void fw_xport_test_on_done(void (*fn)(struct maia_sim *sim));
/* Reset / destroy, threads parked: every operation and held message freed. */
void fw_xport_reset(struct maia_sim *sim);
/* Malformed or unclaimed messages dropped on a port, refusals sent and received. */
void fw_xport_counters(struct maia_sim *sim, unsigned int port, uint64_t *drops,
		       uint64_t *nak_tx, uint64_t *nak_rx);

/* For the operation kinds: whether port is UP, and the links' clock. */
bool fw_xport_port_up(struct maia_sim *sim, unsigned int port);
/* The serial of the device behind port: the current peer, or the last one while DOWN; 0: none yet. */
uint64_t fw_xport_peer_serial(struct maia_sim *sim, unsigned int port);
uint64_t fw_xport_now(struct maia_sim *sim);

#endif /* FWSIM_FABRIC_XPORT_H */
