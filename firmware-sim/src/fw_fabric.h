/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim fabric link layer (maia/hw/fabric.h, Documentation/hw/fabric.rst).
 *
 * fw_fabric_frame.c: building and parsing frames (no state).
 * fw_fabric_link.c: struct fw_link, one port's link engine. It is driven
 * by received frames (fw_link_rx), by time (fw_link_tick) and by the layer
 * above (fw_link_send); it transmits and delivers through callbacks. It
 * takes time as an argument and has no lock and no thread: the caller
 * serialises calls on one link, so host tests wire N links together with
 * plain function calls and a virtual clock.
 */
#ifndef FWSIM_FABRIC_H
#define FWSIM_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/fabric.h"

/*
 * 1 when built with AddressSanitizer: frame buffers the fabric would keep
 * for reuse (fw_fabric_buf.c) are freed instead, so that a use after free
 * reaches ASan. A finished collective operation is kept as in any build
 * (fw_fop_free()), so that the fuzzers run that path too, but poisoned
 * while it is idle (FW_FABRIC_POISON()): a use of it after its end is
 * still reported, as a use after poison.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FW_FABRIC_ASAN	1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FW_FABRIC_ASAN)
#define FW_FABRIC_ASAN	1
#endif
#ifndef FW_FABRIC_ASAN
#define FW_FABRIC_ASAN	0
#endif

/* Memory kept for reuse, poisoned while idle (ASan), and unpoisoned when taken again. */
#if FW_FABRIC_ASAN
#include <sanitizer/asan_interface.h>
#define FW_FABRIC_POISON(p, n)		ASAN_POISON_MEMORY_REGION((p), (n))
#define FW_FABRIC_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FW_FABRIC_POISON(p, n)		((void)(p), (void)(n))
#define FW_FABRIC_UNPOISON(p, n)	((void)(p), (void)(n))
#endif

/* A parsed, checked frame; payload points into the caller's buffer. */
struct fw_fabric_frame {
	struct maia_fabric_hdr hdr;
	const uint8_t *payload;
};

/*
 * Checks everything a receiver can check without link state (size,
 * EtherType, version, length, CRC, type) and fills *out. Returns -1 and
 * the MAIA_FABRIC_DROP_* reason in *reason for a malformed frame.
 */
int fw_fabric_parse(const void *frame, size_t len, struct fw_fabric_frame *out,
		    enum maia_fabric_drop *reason);
/*
 * The same; without check_crc the CRC is not recomputed: only for a frame
 * whose bytes are those a device of this process built (lent, never copied
 * or carried: see maia_sim_fabric_rx_lent()).
 */
int fw_fabric_parse_ext(const void *frame, size_t len, struct fw_fabric_frame *out,
			enum maia_fabric_drop *reason, bool check_crc);

/*
 * Writes the Ethernet header, *hdr (crc and payload_len filled in here) and
 * payload into buf (at least MAIA_FABRIC_MIN_FRAME + len bytes; payload may
 * already be in place at buf + MAIA_FABRIC_MIN_FRAME). Returns the frame
 * length.
 */
size_t fw_fabric_build(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
		       const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
		       const void *payload, uint32_t len);
/* The same with the payload's CRC known (fw_fabric_crc_copy() from 0): the payload is not read. */
size_t fw_fabric_build_crc(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
			   const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
			   const void *payload, uint32_t len, uint32_t payload_crc);
/*
 * The same without the CRC (hdr->crc 0, nothing checksummed): a frame lent
 * to a device of this process, which does not check it, unless the host
 * seals it for another way (fw_fabric_seal()).
 */
size_t fw_fabric_build_unsealed(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
				const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
				const void *payload, uint32_t len);
/* Fills in the CRC of a frame of len bytes that fw_fabric_build_unsealed() built. */
void fw_fabric_seal(void *frame, size_t len);

/* The locally administered MAC of (serial, port): 02:xx:xx:xx:xx:port. */
void fw_fabric_mac(uint8_t mac[MAIA_ETH_ALEN], uint64_t serial, unsigned int port);

/* CRC-32 over header (with crc taken as 0) and payload. */
uint32_t fw_fabric_crc(const struct maia_fabric_hdr *hdr, const void *payload, uint32_t len);
/*
 * zlib's crc32(crc, src, len), and with dst a copy of src there made in the
 * same pass (the frame CRC's carry-less multiply path): a sender copies its
 * payload and learns its CRC for the price of the copy.
 */
uint32_t fw_fabric_crc_copy(uint32_t crc, void *dst, const void *src, size_t len);
/*
 * Tests: the widest CRC path to take, never above what the CPU has (2:
 * 256-bit VPCLMULQDQ, 1: PCLMULQDQ, 0: zlib's tables). Default 2.
 */
void fw_fabric_crc_max_path(int path);
/*
 * Tests: a fabric round stops feeding received frames to the links after
 * ns (at least one frame a round); 0 restores the default (half the
 * keepalive period, fw_fabric_port.c).
 */
void fw_fabric_round_rx_limit(uint64_t ns);
/*
 * Tests and benchmarks: whether a thread in a fabric round that hands a
 * frame to a device of this process runs that device's round itself when
 * no thread is in one (fw_fabric_port.c, rx_enqueue()); default on.
 */
void fw_fabric_inline_rx(bool on);
/*
 * Whether collectives may send frames that point at device memory to
 * devices of this process (fw_fabric_ref.h; default on): tests compare.
 */
void fw_fabric_ref_frames(bool on);
struct maia_sim;
/* Rounds of sim's run by a sender's thread rather than its fabric thread. */
uint64_t fw_fabric_inline_rounds(struct maia_sim *sim);

enum fw_link_state {
	FW_LINK_DOWN,		/* sending HELLO, no peer */
	FW_LINK_UP,		/* peer known, data flows */
};

struct fw_link_ops {
	/* Transmit one frame; the buffer is only valid during the call. */
	int (*tx)(void *opaque, unsigned int port, const void *frame, size_t len);
	/*
	 * Optional: transmit a DATA frame without a copy. The frame is built
	 * in place in front of a queued message: it is a fw_buf_alloc()
	 * buffer, which the callee may keep past the call with fw_buf_get()
	 * (and drop with fw_buf_free()). The link never writes a buffer that
	 * someone else still holds: it sends that frame again from its own
	 * buffer through tx (stats.tx_lend_copies).
	 */
	int (*tx_lend)(void *opaque, unsigned int port, void *frame, size_t len);
	/*
	 * One message from the peer's layer above, in order, exactly once.
	 * Returns 0, or -EAGAIN when the layer above has no room for it now:
	 * the link then has not received it (no ack); it holds a copy and
	 * offers it again at the next frame or tick (back-pressure).
	 */
	int (*deliver)(void *opaque, unsigned int port, const void *msg, size_t len);
	/*
	 * Optional: whether the peer is known to be alive but behind (a
	 * device of this process whose rounds are late: a slow host). The
	 * dead-peer verdict is then put off, as for a gap of our own ticks.
	 */
	bool (*peer_behind)(void *opaque, unsigned int port);
	/* Optional: the link went UP (peer discovered) or DOWN. */
	void (*state_changed)(void *opaque, unsigned int port, bool up,
			      uint64_t peer_serial, unsigned int peer_port);
	/*
	 * Optional: the link is going DOWN from UP; called once for every
	 * message it still had to send or to see acknowledged, oldest first,
	 * before it drops them and before state_changed(). msg is valid only
	 * during the call (failover sends a copy another way).
	 */
	void (*unsent)(void *opaque, unsigned int port, const void *msg, size_t len);
};

struct fw_link_config {
	uint64_t serial;		/* this device's serial */
	unsigned int port;		/* 0..MAIA_FABRIC_MAX_PORTS-1 */
	uint32_t epoch;			/* first session epoch; 0 = from serial/port */
	unsigned int window;		/* frames in flight and granted; power of two */
	unsigned int txq;		/* messages queued (in flight included); power of two */
	uint64_t hello_ns, rto_ns, keepalive_ns, dead_ns;
	/*
	 * 0 or 1: answer every DATA frame with an ACK at once. k > 1: only
	 * every k-th unacked DATA frame; fw_link_tick() sends the rest, so a
	 * host that ticks after each batch of received frames acks a batch
	 * once (fewer frames and wake-ups on the reverse path). 0 with
	 * ack_delay_ns: no count, only the delay and the flags below.
	 */
	unsigned int ack_every;
	/*
	 * 0: fw_link_tick() acks what came since the last frame at once. Else
	 * (wire version 6) a bare ACK waits up to this long for a DATA frame
	 * of ours to carry the ack, unless the peer asked for it now
	 * (MAIA_FABRIC_F_ACK_NOW), or a duplicate came (the peer timed out).
	 * At most rto_ns / 4. A sender asks for acks itself when they are
	 * what it waits for (fw_fabric_link.c, send_data()).
	 */
	uint64_t ack_delay_ns;
	/*
	 * 0: the retransmit timeout is rto_ns, fixed. Otherwise it adapts
	 * between rto_ns and rto_max_ns: srtt + 4 rttvar of the acks' delays
	 * (RFC 6298, Karn: no sample from a resent frame), doubled at each
	 * timeout without progress. On a host whose cores are shared, an ack
	 * can be late by a scheduling delay: a fixed timeout then resends a
	 * whole window the receiver already holds.
	 */
	uint64_t rto_max_ns;
	/* Fault injection: drop this many of every 1,000,000 transmitted frames. */
	uint32_t drop_ppm;
	uint64_t drop_seed;
	/*
	 * With ops.tx_lend: a message sent without its CRC known
	 * (fw_link_send_owned(), fw_link_send_parts()) is checksummed only when
	 * a frame of it is sent through ops.tx; lent frames go unsealed
	 * (fw_buf_unsealed()) and the host seals those it does not lend on to
	 * a device of this process (maia_sim_fabric_frame_seal()).
	 */
	bool lazy_crc;
};

struct fw_link_stats {
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
	uint64_t tx_data, tx_msgs_delivered_peer;	/* DATA sent; messages acked */
	uint64_t rx_msgs;				/* messages delivered up */
	uint64_t rx_refused;				/* deliver() said -EAGAIN */
	uint64_t retransmits;				/* DATA frames sent again */
	uint64_t tx_hello, tx_ack, tx_keepalive;
	uint64_t tx_ack_now;				/* DATA sent with MAIA_FABRIC_F_ACK_NOW */
	uint64_t tx_nak, rx_nak;			/* NAKs sent and received */
	uint64_t rx_held;				/* DATA after a gap, held */
	uint64_t tx_injected_drops;			/* dropped by drop_ppm */
	uint64_t tx_errors;				/* ops.tx returned < 0 */
	uint64_t tx_lend_copies;			/* a lent frame still out: copied */
	uint64_t tx_ref;				/* lent with its data elsewhere (F_REF) */
	uint64_t link_ups, link_downs, dead_peer;	/* dead_peer: keepalive timeouts */
	uint64_t starved;				/* a gap of ours or the peer behind: time given */
	uint64_t spurious_rto;				/* timeouts undone: the peer had the frame */
	uint64_t discarded;				/* queued messages lost to a DOWN */
	uint64_t drops[MAIA_FABRIC_DROP_COUNT];
};

struct fw_link_msg {
	uint8_t *data;
	uint32_t len;
	uint32_t crc;			/* of data (fw_fabric_crc_copy() from 0), if crc_known */
	bool crc_known;			/* else computed when a frame must carry it */
	uint64_t sent_ns;		/* last (re)transmission */
	bool resent;			/* sent more than once: no RTT sample */
	bool fast_resent;		/* sent again in this recovery */
};

/* DATA received after a gap, held until the gap is filled. */
struct fw_link_held {
	uint8_t *msg;			/* fw_buf_alloc(); NULL: slot free */
	uint32_t len;
};

struct fw_link {
	struct fw_link_config cfg;
	struct fw_link_ops ops;
	void *opaque;
	uint8_t mac[MAIA_ETH_ALEN], peer_mac[MAIA_ETH_ALEN];
	enum fw_link_state state;
	bool confirmed;			/* the peer has our epoch: DATA may flow */
	uint32_t epoch, peer_epoch;
	uint64_t peer_serial;
	unsigned int peer_port;
	/* Sender: [una, nxt) in flight, [nxt, tail) queued; credit from the peer. */
	uint32_t snd_una, snd_nxt, snd_tail, snd_credit;
	struct fw_link_msg *q;		/* cfg.txq slots, by seq & (txq - 1) */
	/*
	 * Sender: after a loss (a NAK, a timeout), [snd_una, recover) was in
	 * flight. After a timeout, an ack that moves but stays below recover
	 * names the next frame the receiver lacks, which is sent again at once
	 * (after a NAK the receiver names the next gap itself).
	 */
	bool recovering, recovery_timeout;	/* recovery_timeout: a timeout began it */
	uint32_t recover;
	/*
	 * Congestion window (frames; at most cfg.window): halved at a loss a
	 * NAK names, 2 after a timeout; grows by one per acked frame below
	 * ssthresh, by one per window of acked frames above.
	 */
	uint32_t cwnd, ssthresh, cwnd_acked;
	/*
	 * Sender: the window before the timeout that began this recovery,
	 * restored if the peer says it had the frame (MAIA_FABRIC_F_DUP).
	 * It is valid until undo_end_ns once that recovery ended (0: not yet);
	 * a NAK (a real loss) or the next timeout ends it.
	 * Receiver: dup_rx, a DATA frame received twice since our last frame.
	 */
	bool undo_valid, dup_rx;
	uint32_t undo_cwnd, undo_ssthresh;
	uint64_t undo_rto_ns, undo_end_ns;
	/* Receiver. */
	uint32_t rcv_nxt;
	struct fw_link_held *held;	/* cfg.window slots, by seq & (window - 1) */
	unsigned int nheld;
	uint32_t nak_seq, nak_gap;	/* the gap the last NAK named, and when (0: none) */
	uint64_t nak_ns;
	bool ack_pending;
	bool ack_now;			/* cfg.ack_delay_ns: ack at the next tick */
	uint64_t ack_since_ns;		/* cfg.ack_delay_ns: the oldest unacked DATA's arrival */
	unsigned int unacked_rx;	/* DATA frames received since the last frame sent */
	uint64_t last_tx_ns, last_rx_ns, last_hello_ns, rto_start_ns;
	uint64_t last_tick_ns;		/* fw_link_tick()'s last call: gaps mean we were starved */
	uint64_t rto_cur_ns;		/* the retransmit timeout now */
	uint64_t srtt_ns, rttvar_ns;	/* cfg.rto_max_ns: ack delay estimate; 0 = none */
	uint64_t rng;			/* drop_ppm */
	uint8_t *frame;			/* MAIA_FABRIC_MAX_FRAME bytes: tx buffer */
	uint8_t *ref_scratch;		/* a message by reference, copied (xmit()) */
	bool rx_ref_ok;			/* the frame being fed is a pinned one (fw_fabric_ref.h) */
	struct fw_link_stats stats;
};

void fw_link_config_defaults(struct fw_link_config *cfg);
/* 0, or -EINVAL / -ENOMEM. The link starts DOWN and sends HELLO on its first tick. */
int fw_link_init(struct fw_link *l, const struct fw_link_config *cfg,
		 const struct fw_link_ops *ops, void *opaque, uint64_t now_ns);
void fw_link_destroy(struct fw_link *l);

/*
 * Buffers for frames and messages (fw_fabric_buf.c): frame-sized ones are
 * recycled rather than returned to the system. Reference counted:
 * fw_buf_alloc() gives one reference, fw_buf_get() takes another and
 * fw_buf_free() drops one (the last frees the buffer; any thread). They
 * take only what fw_buf_alloc() gave (fw_buf_free() also NULL).
 * fw_buf_shared(): someone else holds a reference too, so the buffer must
 * not be written.
 */
void *fw_buf_alloc(size_t len);
void fw_buf_get(const void *p);
void fw_buf_free(void *p);
bool fw_buf_shared(const void *p);
/*
 * A frame in a buffer of fw_buf_alloc() whose CRC is not filled in (the
 * link lends it so over a direct cable, fw_link_config.lazy_crc):
 * maia_sim_fabric_frame_seal() fills it in if the host sends the frame
 * another way. Set or cleared only by the buffer's one writer (the link
 * while it alone holds the buffer, then the host that holds the lent one).
 */
void fw_buf_set_unsealed(void *p, bool unsealed);
bool fw_buf_unsealed(const void *p);

/* A received frame; malformed or unexpected frames are counted and dropped. */
void fw_link_rx(struct fw_link *l, const void *frame, size_t len, uint64_t now_ns);
/* Whether a frame's header says MAIA_FABRIC_F_REF (fw_fabric_ref.h; nothing else checked). */
bool fw_link_frame_marked(const void *frame, size_t len);
/* A frame a device of this process built, lent as it is: its CRC is not recomputed. */
void fw_link_rx_lent(struct fw_link *l, const void *frame, size_t len, uint64_t now_ns);
/* Timers: HELLO, retransmission, keepalive, dead peer. Call every few ms. */
void fw_link_tick(struct fw_link *l, uint64_t now_ns);
/*
 * Queue one message (0..MAIA_FABRIC_MAX_PAYLOAD bytes, copied). 0, or
 * -ENOTCONN (DOWN), -EAGAIN (queue full), -EMSGSIZE, -ENOMEM.
 */
int fw_link_send(struct fw_link *l, const void *msg, size_t len, uint64_t now_ns);
/*
 * Zero-copy send: msg from fw_link_msg_alloc(len) (room for the frame's
 * headers in front of it, so frames are built in place), filled by the
 * caller and handed over: the link frees it, also on error. Same returns.
 */
#define FW_LINK_HEADROOM	MAIA_FABRIC_MIN_FRAME
#define FW_LINK_MIN_CWND	2u	/* frames in flight after a loss, at least */
/*
 * A DATA frame whose message is longer asks for its ack at once
 * (MAIA_FABRIC_F_ACK_NOW): a bulk transfer's acks come at the end of the
 * receiver's round, as before delayed acks, and its buffers go back at once.
 */
#define FW_LINK_ACK_DELAY_MAX	4096u
void *fw_link_msg_alloc(size_t len);
void fw_link_msg_free(void *msg);
int fw_link_send_owned(struct fw_link *l, void *msg, size_t len, uint64_t now_ns);
/*
 * One message of hdr_len + len bytes from two parts, copied into a buffer
 * of its own: in the same pass as its CRC, or (cfg.lazy_crc) without it.
 * Same returns as fw_link_send().
 */
int fw_link_send_parts(struct fw_link *l, const void *hdr, size_t hdr_len, const void *data,
		       size_t len, uint64_t now_ns);
/*
 * The earliest time at which fw_link_tick() has something to do (a HELLO,
 * retransmission, ack, keepalive or dead-peer check), for a caller that
 * sleeps between ticks instead of ticking every few ms. May be <= now.
 */
uint64_t fw_link_next_deadline(const struct fw_link *l);
/* Messages queued or in flight (not yet acked). */
unsigned int fw_link_pending(const struct fw_link *l);
/* Back to DOWN with a new epoch, as after a dead peer (also for a reset). */
void fw_link_reset(struct fw_link *l, uint64_t now_ns);

#endif /* FWSIM_FABRIC_H */
