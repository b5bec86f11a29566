/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim collective engine (MAIA_OP_COLLECTIVE, struct
 * maia_cmd_collective; Documentation/hw/fabric.rst, "Collectives").
 *
 * struct fw_coll runs one collective at a time for one device: it cuts the
 * job's data into MAIA_FMSG_COLL messages for the send port, consumes the
 * messages from the receive port, reduces and forwards them around the ring
 * and reads and writes the job's memory. Like struct fw_link it has no lock,
 * no thread and no clock: the caller serialises every call on one engine,
 * passes the time in, and the engine acts only through its callbacks, so
 * host tests wire N engines together with plain function calls.
 */
#ifndef FWSIM_FABRIC_COLL_H
#define FWSIM_FABRIC_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_model.h"
#include "maia/hw/cmd.h"
#include "maia/hw/fabric.h"

struct fw_coll_ops {
	/*
	 * Messages the port's transmit queue takes now. The engine forwards a
	 * received chunk only with room >= 1 and injects its own data only with
	 * room >= 2, so a ring of full queues cannot form (no deadlock).
	 */
	unsigned int (*tx_room)(void *opaque, unsigned int port);
	/* Queue one message (header and data, copied). 0, or < 0: link gone. */
	int (*tx)(void *opaque, unsigned int port, const void *msg, size_t len);
	/*
	 * Optional, all three or none: messages without the copy. The engine
	 * builds each message in a buffer of tx_buf() (len bytes, NULL: out of
	 * memory) and hands it to tx_owned(), which takes it (frees it on
	 * failure; same returns as tx); tx_buf_free() gives back one it kept.
	 */
	void *(*tx_buf)(void *opaque, size_t len);
	int (*tx_owned)(void *opaque, unsigned int port, void *msg, size_t len);
	void (*tx_buf_free)(void *opaque, void *buf);
	/*
	 * The job's memory, through its MMU: 0, or a MAIA_STATUS_* (> 0) the
	 * collective ends with, or < 0 for MAIA_STATUS_MMU_FAULT.
	 */
	int (*mem_read)(void *opaque, uint64_t va, void *buf, size_t len);
	int (*mem_write)(void *opaque, uint64_t va, const void *buf, size_t len);
	/*
	 * Optional: the len bytes at va in place (device memory the engine may
	 * read directly), or NULL: then mem_read() copies them (and reports a
	 * fault).
	 */
	const void *(*mem_map)(void *opaque, uint64_t va, size_t len);
	/*
	 * Optional: the same for writing (the write permission checked), or
	 * NULL: then mem_write() copies (and reports a fault).
	 */
	void *(*mem_map_write)(void *opaque, uint64_t va, size_t len);
	/*
	 * Optional, all three or none (and tx_owned with them): messages whose
	 * data stay in this device's memory (fw_fabric_ref.h). tx_ref_ok():
	 * whether port takes one of len data bytes now. tx_ref() sends a buffer of tx_buf()
	 * with the message's header in its first hdr_len bytes and the len
	 * bytes at src (memory of mem_map() or mem_map_write(), which the
	 * collective does not write again) as its data (same returns as
	 * tx_owned()). rx_data(): where a received message's data are.
	 */
	bool (*tx_ref_ok)(void *opaque, unsigned int port, uint32_t len);
	int (*tx_ref)(void *opaque, unsigned int port, void *msg, size_t hdr_len, const void *src,
		      uint32_t len);
	const uint8_t *(*rx_data)(void *opaque, const void *msg);
};

struct fw_coll_config {
	unsigned int nports;		/* ports are 0..nports-1 */
	uint32_t chunk_bytes;		/* for chunk_bytes = 0 */
	uint32_t timeout_ms;		/* for timeout_ms = 0 */
	/* Messages held before they can be used (see fw_coll_rx). */
	unsigned int early_msgs;
	size_t early_bytes;
	/*
	 * The device time model's chip (NULL: messages carry no modeled time)
	 * and each port's cable latency beyond the chip's hop (fabric_lat_ns):
	 * a chunk's hop is priced by fw_model_coll_hop() as it is sent.
	 */
	const struct fw_chip *model_chip;
	uint32_t model_cable_ns[MAIA_FABRIC_MAX_PORTS];
};

#define FW_COLL_DEFAULT_CHUNK		MAIA_FABRIC_MSG_MAX_DATA
#define FW_COLL_DEFAULT_TIMEOUT_MS	2000u
#define FW_COLL_DEFAULT_EARLY_MSGS	64u
#define FW_COLL_DEFAULT_EARLY_BYTES	(1u << 20)
#define FW_COLL_INLINE_RANKS		8u

enum fw_coll_state {
	FW_COLL_IDLE,			/* never started */
	FW_COLL_RUNNING,
	FW_COLL_DONE,			/* result valid */
};

/* How the last collective ended. */
struct fw_coll_result {
	uint32_t status;		/* MAIA_STATUS_* */
	/*
	 * Failures other than BAD_CMD: the step the engine was at (for a
	 * timeout, the lowest step not fully received, or the step it could
	 * not send), the port and the peer rank behind it. Success: the last
	 * step received. Written to the command's report_addr, if any.
	 */
	uint16_t step;
	uint8_t port;
	bool sending;			/* stuck sending, not receiving */
	uint16_t peer;
};

struct fw_coll_stats {
	uint64_t collectives, failures;
	uint64_t tx_msgs, tx_bytes;		/* data bytes */
	uint64_t rx_msgs, rx_bytes;		/* messages consumed by a collective */
	uint64_t drop_malformed;		/* not a COLL message, length mismatch */
	uint64_t drop_stale;			/* an earlier or ended collective's */
	uint64_t drop_unexpected;		/* running one's, wrong rank/step/offset/len */
	uint64_t refused;			/* fw_coll_rx returned -EAGAIN */
	uint64_t early_peak;			/* most messages held at once */
};

struct fw_coll_early;

struct fw_coll {
	struct fw_coll_config cfg;
	struct fw_coll_ops ops;
	void *opaque;
	enum fw_coll_state state;
	struct fw_coll_result result;
	struct fw_coll_stats stats;

	/* The running (or last) collective and its geometry. */
	struct maia_cmd_collective cmd;
	unsigned int es;		/* bytes per element in memory */
	uint64_t chunk_bytes;
	uint64_t timeout_ns;
	unsigned int rx_first, rx_steps;	/* steps received: [first, first + steps) */
	uint64_t *rx_off;		/* bytes received of each of those steps */
	uint64_t inject_off, inject_len;	/* this rank's own step-0 stream, bytes */
	unsigned int room_max;		/* the most tx_room() said in this collective */
	bool gather;			/* ALL_REDUCE by gather-reduce (small counts) */
	bool quiet;			/* fw_coll_quiet() */
	uint64_t last_progress_ns;
	uint64_t sent_bytes, recv_bytes;	/* data bytes of this collective */
	/* Failover: ranks known unreachable (fw_coll_set_unreachable()); count 0: none. */
	uint32_t unreach_first, unreach_count;
	/*
	 * Modeled time (Documentation/hw/time-model.rst): this rank's start,
	 * set before fw_coll_start(); the latest a message of the collective
	 * left or arrived here; the arrival of the chunk being used, which the
	 * messages it makes cannot leave before.
	 */
	uint64_t model_start_ns, model_end_ns, model_fwd_ns;
	uint64_t *model_in;		/* gather-reduce: input k's arrival (gather_in()) */
	bool ended_valid;		/* ended_comm/seq: drop their late messages */
	uint32_t ended_comm, ended_seq;

	/* Messages held: arrived before their collective or before room to forward. */
	struct fw_coll_early *early_head, *early_tail;
	unsigned int early_n;
	size_t early_bytes;

	/* Work buffers: buf_bytes each (see buffers() in fw_fabric_coll.c). */
	size_t buf_bytes, gathered_bytes;
	uint8_t *txbuf;			/* header + data of a message being sent */
	uint8_t *own;			/* this rank's data of a chunk */
	float *acc;			/* a chunk in FP32 */
	uint8_t *gathered;		/* gather-reduce: every rank's input, rank by rank */
	/*
	 * rx_off and model_in of a ring of up to FW_COLL_INLINE_RANKS ranks:
	 * no allocation per collective (an engine lives for one operation on
	 * a device; heap arrays of MAIA_COLL_MAX_RANKS entries sent a small
	 * collective's other allocations down glibc's slow path), and an
	 * operation with its engine stays within glibc's per-thread cache.
	 * Larger rings get heap arrays of MAIA_COLL_MAX_RANKS at their first
	 * start (rank_arrays()).
	 */
	uint64_t rx_off_inline[2 * FW_COLL_INLINE_RANKS];
	uint64_t model_in_inline[FW_COLL_INLINE_RANKS];
};

void fw_coll_config_defaults(struct fw_coll_config *cfg);
/* 0, or -EINVAL / -ENOMEM. */
int fw_coll_init(struct fw_coll *c, const struct fw_coll_config *cfg,
		 const struct fw_coll_ops *ops, void *opaque);
void fw_coll_destroy(struct fw_coll *c);
/*
 * fw_coll_init() on an engine that ran before, with the same kind of ops:
 * its work buffers are kept for the next collective (buffers()). On an
 * error the engine is destroyed.
 */
int fw_coll_reinit(struct fw_coll *c, const struct fw_coll_config *cfg,
		   const struct fw_coll_ops *ops, void *opaque);
/*
 * The work buffers of an engine kept for later (fw_coll_reset()) poisoned
 * (ASan: any use of them reported until unpoisoned), or unpoisoned before
 * the engine is used or destroyed again. Nothing without ASan.
 */
void fw_coll_poison(struct fw_coll *c, bool poison);

/* MAIA_STATUS_OK, or BAD_CMD: what fw_coll_start() checks before it starts. */
uint32_t fw_coll_check(const struct maia_cmd_collective *cmd, unsigned int nports);

/*
 * Start a collective (the previous one must have ended). Returns 0 when it
 * runs, or its status when it ended at once (MAIA_STATUS_BAD_CMD for an
 * invalid field, OK for nothing to exchange, a failed access's status in a
 * local copy), also in c->result. -EBUSY if one is running.
 */
int fw_coll_start(struct fw_coll *c, const struct maia_cmd_collective *cmd, uint64_t now_ns);

/*
 * A MAIA_FMSG_COLL message from port. 0: taken (used, held or counted and
 * dropped); -EAGAIN: refused for now, the link must deliver it again later
 * (it holds it and offers it again). Messages of one port must be offered in order.
 */
int fw_coll_rx(struct fw_coll *c, unsigned int port, const void *msg, size_t len,
	       uint64_t now_ns);

/*
 * Whether fw_coll_rx() would take msg as the running collective's (its
 * chunk, or a stale one it drops) rather than hold it for a later one: a
 * host that keeps early messages itself offers only these.
 */
bool fw_coll_wants(const struct fw_coll *c, unsigned int port, const void *msg, size_t len);

/*
 * Do what waits for transmit room or time: held messages, this rank's own
 * data, the timeout. Call after transmit room frees and every few ms.
 */
void fw_coll_poll(struct fw_coll *c, uint64_t now_ns);

/* When fw_coll_poll() times the running collective out; UINT64_MAX if none. */
uint64_t fw_coll_next_deadline(const struct fw_coll *c);

/* End the running collective with status (a link went down, a reset). */
void fw_coll_abort(struct fw_coll *c, uint32_t status, uint64_t now_ns);
/*
 * End the collective because port failed (went down), naming that port, its
 * peer and the lowest step not fully arrived. cmd: a command that never
 * started (NULL: the running one; nothing happens if none runs).
 */
void fw_coll_fail_port(struct fw_coll *c, const struct maia_cmd_collective *cmd,
		       uint32_t status, unsigned int port);
/*
 * The running collective goes on over other ports (failover): what it
 * sends leaves by send_port, what it takes from its predecessor arrives on
 * recv_port, held messages of the old receive port included. Streams go on
 * where they were: the caller brings what the old port had not delivered.
 */
void fw_coll_set_ports(struct fw_coll *c, unsigned int send_port, unsigned int recv_port);
/*
 * Quiet: the engine takes messages (and may start) but sends nothing of
 * its own (a ring's chunk still goes on as it is used; a gather-reduce
 * sends nothing) and does not end; fw_coll_quiet(false) goes on at once.
 * For messages held before the collective started: offered one by one, a
 * gather-reduce then sends them and its own input in one message.
 */
void fw_coll_quiet(struct fw_coll *c, bool quiet, uint64_t now_ns);
/*
 * Before a failure (fw_coll_fail_port(), fw_coll_abort()): the report names
 * count ranks from first on (ring order) as unreachable. Cleared by
 * fw_coll_start().
 */
void fw_coll_set_unreachable(struct fw_coll *c, uint32_t first, uint32_t count);
/* Forget held messages and the last collective (device reset). */
void fw_coll_reset(struct fw_coll *c);

static inline bool fw_coll_running(const struct fw_coll *c)
{
	return c->state == FW_COLL_RUNNING;
}

/*
 * The kernel that reduces a received chunk: out[i] = a[i] op b[i]
 * (MAIA_REDOP_*) over n elements, a FP32 (the left operand), b FP32 or BF16
 * (b_es 4 or 2), out FP32, none aligned. The engine uses the SIMD one when
 * it returns true (false: this CPU has none) and the plain C one otherwise;
 * exposed so that tests check the two agree bit for bit.
 */
void fw_coll_reduce_scalar(unsigned int redop, unsigned int b_es, uint8_t *out,
			   const uint8_t *a, const uint8_t *b, size_t n);
bool fw_coll_reduce_simd(unsigned int redop, unsigned int b_es, uint8_t *out,
			 const uint8_t *a, const uint8_t *b, size_t n);
/* The one the engine uses: SIMD where the CPU has it, else plain C. */
void fw_coll_reduce(unsigned int redop, unsigned int b_es, uint8_t *out, const uint8_t *a,
		    const uint8_t *b, size_t n);
/*
 * The same into two places at once, out and out2 (NULL: out alone): the
 * last reduction step's result lands in the job's memory in the pass that
 * builds the message carrying it on. simd false: the plain C loop (tests).
 * With AVX2, out2 (4-byte aligned) is written with non-temporal stores from
 * its first 32-byte line on (what the collective does not read again goes
 * past the caches: no read of the line first, the chunks in flight stay
 * cached); the bits are the same.
 */
void fw_coll_reduce2(unsigned int redop, unsigned int b_es, uint8_t *out, uint8_t *out2,
		     const uint8_t *a, const uint8_t *b, size_t n, bool simd);
/*
 * len bytes of src to out and to out2 (NULL: out alone), read once: a
 * received chunk that goes on and lands here. None of them may overlap.
 * out2 as fw_coll_reduce2()'s (non-temporal stores with AVX2).
 */
void fw_coll_copy2(uint8_t *out, uint8_t *out2, const uint8_t *src, size_t len);
/*
 * len bytes of src to dst (the job's memory), as fw_coll_copy2()'s second
 * place: a received chunk that lands here and goes no further.
 */
void fw_coll_land(uint8_t *dst, const uint8_t *src, size_t len);
/* BF16's one rounding: n final FP32 values into BF16, to nearest even. */
void fw_coll_round_bf16(uint8_t *out, const float *acc, size_t n);

#endif /* FWSIM_FABRIC_COLL_H */
