/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: the scale-out fabric wire format (link layer).
 *
 * Each fabric port is a point-to-point Ethernet link. A frame is an
 * Ethernet II header with EtherType MAIA_FABRIC_ETHERTYPE, then struct
 * maia_fabric_hdr (little-endian, unlike the Ethernet header), then
 * payload_len bytes of payload. The EtherType is 0x88B5, the first of
 * IEEE 802's two "local experimental" EtherTypes: no registration, and
 * nothing else on a Maia link uses it.
 *
 * The link layer gives the layer above reliable, in-order, exactly-once
 * delivery of messages of up to MAIA_FABRIC_MAX_PAYLOAD bytes over a lossy
 * link: hello with neighbour discovery, selective retransmission (the
 * receiver holds DATA after a gap and names the gap in a NAK; cumulative
 * acks), receiver-granted credits, keepalive. See Documentation/hw/fabric.rst.
 */
#ifndef MAIA_HW_FABRIC_H
#define MAIA_HW_FABRIC_H

#include <linux/types.h>

#define MAIA_FABRIC_ETHERTYPE		0x88b5u	/* IEEE local experimental 1 */
/*
 * 6: delayed acks, MAIA_FABRIC_F_ACK_NOW;
 * 5: a gather-reduce message carries several ranks' inputs (model_delta_ns);
 * 4: NAK, selective retransmission; 3: gather-reduce; 2: 60 KiB messages
 * (1: 64 KiB)
 */
#define MAIA_FABRIC_VERSION		6u
#define MAIA_FABRIC_MAX_PORTS		12u	/* 12 x 400 GbE on Maia 100 */
#define MAIA_FABRIC_PORT_ANY		0xffu	/* dst_port of a HELLO */

/* Frame types */
#define MAIA_FABRIC_HELLO		1u	/* discovery and session handshake */
#define MAIA_FABRIC_DATA		2u	/* one message, seq numbered */
#define MAIA_FABRIC_ACK			3u	/* ack and credit only */
#define MAIA_FABRIC_KEEPALIVE		4u	/* liveness on an idle link */
#define MAIA_FABRIC_NAK			5u	/* ack, credit, and: DATA seq == ack is missing */

#define MAIA_ETH_ALEN			6u
#define MAIA_ETH_HLEN			14u

struct maia_eth_hdr {
	__u8 dst[MAIA_ETH_ALEN];
	__u8 src[MAIA_ETH_ALEN];
	__u8 ethertype[2];	/* big-endian, as on any Ethernet */
};

/*
 * Sequence, ack and credit numbers are 32-bit and compared modulo 2^32.
 * A session is the pair (epoch, peer_epoch): a frame of another session
 * (an old one, delayed on the wire) is dropped as stale.
 */
struct maia_fabric_hdr {
	__u8 version;		/* MAIA_FABRIC_VERSION */
	__u8 type;		/* MAIA_FABRIC_HELLO ... */
	__u8 src_port;		/* sender's port, 0..MAIA_FABRIC_MAX_PORTS-1 */
	__u8 dst_port;		/* receiver's port; MAIA_FABRIC_PORT_ANY until discovered */
	__u16 flags;		/* 0; receivers ignore unknown bits */
	__u16 reserved;		/* 0 */
	__u64 src_serial;	/* sender's device serial number */
	__u32 epoch;		/* sender's session epoch, never 0 */
	__u32 peer_epoch;	/* receiver's epoch as the sender knows it; 0 = none yet */
	__u32 seq;		/* DATA: sequence number; others: next DATA seq */
	__u32 ack;		/* cumulative: every DATA seq < ack was received */
	__u32 credit;		/* the sender may send DATA seq < credit */
	__u32 payload_len;	/* bytes after the header; 0 unless DATA */
	__u32 crc;		/* CRC-32 (IEEE) of header (crc = 0) and payload */
	__u32 gap;		/* NAK: DATA seqs [ack, ack + gap) are missing; else 0 */
};

/*
 * maia_fabric_hdr.flags: a DATA frame arrived twice since this side's last
 * frame, so the other side's last retransmit timeout sent one the receiver
 * had (it was late, not lost): that side undoes the timeout's window cut.
 */
#define MAIA_FABRIC_F_DUP		0x0001u
/*
 * (6) maia_fabric_hdr.flags of a DATA frame: ack it at once (at the end of
 * the receiver's round), not up to MAIA_FABRIC_ACK_DELAY_US later. A sender
 * sets it on a frame sent again, in a recovery, when the frames in flight
 * reach half of what its window and credit allow, and on a message longer
 * than it lets wait (firmware-sim: 4 KiB, a bulk transfer's).
 */
#define MAIA_FABRIC_F_ACK_NOW		0x0002u
/*
 * maia_fabric_hdr.flags of a DATA frame lent to a device of the same
 * process (firmware-sim, maia_sim_fabric_rx_lent()): its message's data
 * are not in the frame but in the sending device's memory, which the
 * receiver reads through the process's own record of the frame. Never on
 * a wire: a host seals such a frame (the data copied in, the flag cleared)
 * before it goes anywhere else, and a receiver drops a frame with the flag
 * that is a copy, or that its process did not lend.
 */
#define MAIA_FABRIC_F_REF		0x0004u
#define MAIA_FABRIC_HDR_LEN		48u
/* What QEMU's net layer carries per frame (NET_BUFSIZE). */
#define MAIA_FABRIC_BACKEND_MAX_FRAME	69632u
/* The largest UDP datagram (QEMU's dgram netdev over UDP sends a frame as one). */
#define MAIA_FABRIC_UDP_MAX_FRAME	65507u
/*
 * A transport message: its 48-byte header and up to 60 KiB of data, so
 * that the largest frame (61,550 bytes) fits a UDP datagram as well as
 * QEMU's net buffer, and a chunk is a whole number of 4 KiB pages.
 */
#define MAIA_FABRIC_MSG_HDR_LEN		48u
#define MAIA_FABRIC_MSG_MAX_DATA	61440u
#define MAIA_FABRIC_MAX_PAYLOAD		(MAIA_FABRIC_MSG_HDR_LEN + MAIA_FABRIC_MSG_MAX_DATA)
#define MAIA_FABRIC_MIN_FRAME		(MAIA_ETH_HLEN + MAIA_FABRIC_HDR_LEN)
#define MAIA_FABRIC_MAX_FRAME		(MAIA_FABRIC_MIN_FRAME + MAIA_FABRIC_MAX_PAYLOAD)

_Static_assert(sizeof(struct maia_eth_hdr) == MAIA_ETH_HLEN, "Ethernet header is 14 bytes");
_Static_assert(sizeof(struct maia_fabric_hdr) == MAIA_FABRIC_HDR_LEN, "fabric header is 48 bytes");
_Static_assert(MAIA_FABRIC_MAX_FRAME <= MAIA_FABRIC_BACKEND_MAX_FRAME,
	       "a fabric frame fits QEMU's net buffer");
_Static_assert(MAIA_FABRIC_MAX_FRAME <= MAIA_FABRIC_UDP_MAX_FRAME,
	       "a fabric frame fits a UDP datagram");

/* Defaults of the link timers and windows (a port may be configured otherwise). */
#define MAIA_FABRIC_HELLO_INTERVAL_MS	20u	/* HELLO resent while DOWN */
#define MAIA_FABRIC_RTO_MS		10u	/* retransmit timeout (the least, when adaptive) */
#define MAIA_FABRIC_KEEPALIVE_MS	50u	/* sent after this long without a tx */
#define MAIA_FABRIC_DEAD_MS		1000u	/* DOWN after this long without a valid rx */
#define MAIA_FABRIC_WINDOW		64u	/* DATA frames in flight / credit granted */
/*
 * (6) A receiver's bare ACK waits up to this long for a frame of its own to
 * the peer to carry the ack (a device's ports; at most a quarter of the
 * least retransmit timeout, so that no timeout fires for a delayed ack).
 */
#define MAIA_FABRIC_ACK_DELAY_US	1000u

/* Why a received frame was dropped (per-port drop counters, in this order). */
enum maia_fabric_drop {
	MAIA_FABRIC_DROP_TOO_SHORT = 0,		/* shorter than both headers */
	MAIA_FABRIC_DROP_ETHERTYPE,		/* not MAIA_FABRIC_ETHERTYPE */
	MAIA_FABRIC_DROP_VERSION,		/* unknown version */
	MAIA_FABRIC_DROP_LENGTH,		/* payload_len disagrees with the frame size or max */
	MAIA_FABRIC_DROP_CRC,			/* CRC mismatch */
	MAIA_FABRIC_DROP_TYPE,			/* unknown or reserved type */
	MAIA_FABRIC_DROP_PORT,			/* dst_port is not this port */
	MAIA_FABRIC_DROP_NOT_UP,		/* non-HELLO frame while the link is DOWN */
	MAIA_FABRIC_DROP_STALE,			/* another session, or an older peer epoch */
	MAIA_FABRIC_DROP_OUT_OF_WINDOW,		/* DATA at or beyond the granted credit */
	MAIA_FABRIC_DROP_OUT_OF_ORDER,		/* DATA after a gap not held (no memory) */
	MAIA_FABRIC_DROP_DUPLICATE,		/* DATA already delivered or held */
	MAIA_FABRIC_DROP_REF,			/* MAIA_FABRIC_F_REF on a copy, or not lent here */
	MAIA_FABRIC_DROP_COUNT
};

/*
 * BAR0 fabric block (revision 1.3; 0 ports: MAIA_CAP_FABRIC clear). Port
 * registers are a snapshot the device refreshes every few ms. 64-bit
 * counters are LO at the offset, HI at +4: read HI, LO, HI and retry if HI
 * changed. Counters count since power-on (reset keeps them).
 */
#define MAIA_REG_FABRIC_PORTS		0x0800u	/* ports, 0..MAIA_FABRIC_MAX_PORTS */
#define MAIA_REG_FABRIC_SERIAL_LO	0x0804u	/* this device's fabric serial */
#define MAIA_REG_FABRIC_SERIAL_HI	0x0808u
#define MAIA_REG_FABRIC_LINK_EVENTS	0x080cu	/* link ups + downs, every port */
#define MAIA_REG_FABRIC_WINDOWS		0x0810u	/* window slots */
#define MAIA_REG_FPORT_BASE		0x0900u
#define MAIA_REG_FPORT_STRIDE		0x80u
#define MAIA_REG_FPORT(p, reg)		(MAIA_REG_FPORT_BASE + MAIA_REG_FPORT_STRIDE * (p) + (reg))
#define   MAIA_FPORT_STATE		0x00u
#define     MAIA_FPORT_STATE_UP		(1u << 0)	/* peer discovered, data flows */
#define   MAIA_FPORT_PEER_PORT		0x04u	/* valid while UP */
#define   MAIA_FPORT_PEER_SERIAL_LO	0x08u	/* valid while UP */
#define   MAIA_FPORT_PEER_SERIAL_HI	0x0cu
#define   MAIA_FPORT_MTU		0x10u	/* data bytes per transport message */
#define   MAIA_FPORT_LINK_UPS		0x14u
#define   MAIA_FPORT_LINK_DOWNS		0x18u
#define   MAIA_FPORT_DEAD_PEER		0x1cu	/* downs by keepalive timeout */
#define   MAIA_FPORT_TX_FRAMES		0x20u	/* 64-bit counters from here */
#define   MAIA_FPORT_TX_BYTES		0x28u
#define   MAIA_FPORT_RX_FRAMES		0x30u
#define   MAIA_FPORT_RX_BYTES		0x38u
#define   MAIA_FPORT_RETRANSMITS	0x40u
#define   MAIA_FPORT_RX_DROPS		0x48u	/* malformed, unexpected, queue full */
#define   MAIA_FPORT_NAK_TX		0x50u	/* remote requests this device refused */
#define   MAIA_FPORT_NAK_RX		0x58u	/* refusals this device received */
#define   MAIA_FPORT_TX_ERRORS		0x60u
#define   MAIA_FPORT_INJECTED_DROPS	0x68u	/* fault injection (drop_ppm) */
/* Revision 1.6 (MAIA_HW_REVISION_LINK_NAKS): selective retransmission. */
#define   MAIA_FPORT_LINK_NAK_TX	0x70u	/* NAK frames sent: gaps named to the peer */
#define   MAIA_FPORT_RX_HELD		0x78u	/* DATA frames held after a gap */

/*
 * Failover (revision 1.10, MAIA_HW_REVISION_FAILOVER; Documentation/hw/
 * fabric.rst, "Failover"). A collective avoids its send port while the port
 * is DOWN, or its modeled latency exceeds FO_LAT_NS, or its measured loss
 * reaches FO_LOSS_PPM, if its receive port is UP and neither. The two
 * thresholds are read-write (0: that trigger off); the rest is read-only.
 */
#define MAIA_REG_FABRIC_FO_LAT_NS	0x0814u	/* ns; default 5000 (5 us) */
#define MAIA_REG_FABRIC_FO_LOSS_PPM	0x0818u	/* per 10^6 frames; default 100 (0.01 %) */
#define MAIA_FABRIC_FO_LAT_NS_DEFAULT	5000u
#define MAIA_FABRIC_FO_LOSS_PPM_DEFAULT	100u
/* Frames a port sends per loss measurement (MAIA_FPORT_Q_LOSS_PPM). */
#define MAIA_FABRIC_FO_LOSS_WINDOW	8192u
#define MAIA_REG_FPORT_FO_BASE		0x0840u
#define MAIA_REG_FPORT_FO_STRIDE	0x10u
#define MAIA_REG_FPORT_FO(p, reg)	(MAIA_REG_FPORT_FO_BASE + MAIA_REG_FPORT_FO_STRIDE * (p) + (reg))
#define   MAIA_FPORT_FO_FAILOVERS	0x00u	/* collectives routed around this port */
#define   MAIA_FPORT_FO_STATE		0x04u	/* MAIA_FPORT_FO_*: its state now */
#define     MAIA_FPORT_FO_DOWN		(1u << 0)	/* link DOWN */
#define     MAIA_FPORT_FO_LATENCY	(1u << 1)	/* modeled latency > FO_LAT_NS */
#define     MAIA_FPORT_FO_LOSS		(1u << 2)	/* loss >= FO_LOSS_PPM */
#define   MAIA_FPORT_FO_RELAYED		0x08u	/* 64-bit: relayed chunks sent on out of it */
#define MAIA_REG_FPORT_Q_BASE		0x0f00u
#define MAIA_REG_FPORT_Q_STRIDE		0x10u
#define MAIA_REG_FPORT_Q(p, reg)	(MAIA_REG_FPORT_Q_BASE + MAIA_REG_FPORT_Q_STRIDE * (p) + (reg))
#define   MAIA_FPORT_Q_LAT_NS		0x00u	/* modeled latency of its cable */
#define   MAIA_FPORT_Q_LOSS_PPM		0x04u	/* gaps the peer named per frame sent, last window */
#define   MAIA_FPORT_Q_RESENT		0x08u	/* chunks re-sent the other way as it went DOWN */
#define   MAIA_FPORT_Q_RELAY_DROPS	0x0cu	/* relayed chunks in on it with no way on */
/*
 * Revision 1.12 (MAIA_HW_REVISION_SPURIOUS_RTO): one register per port
 * after the Q blocks. A retransmit timeout is spurious when the peer
 * already had the frame (its next frame carries MAIA_FABRIC_F_DUP): the
 * sender undoes the timeout's window cut (Documentation/hw/fabric.rst).
 */
#define MAIA_REG_FPORT_R_BASE		0x0fc0u
#define MAIA_REG_FPORT_R_STRIDE		0x4u
#define MAIA_REG_FPORT_R(p, reg)	(MAIA_REG_FPORT_R_BASE + MAIA_REG_FPORT_R_STRIDE * (p) + (reg))
#define   MAIA_FPORT_R_SPURIOUS_RTO	0x00u	/* retransmit timeouts undone (wraps) */

/*
 * Windows. A context makes part of its address space reachable from the
 * fabric with MAIA_MBOX_FABRIC_WINDOW_OPEN: (asid, VA, pages, access). The
 * key names slot and generation; a closed slot's next window gets a new
 * generation, so an old key never reaches a new window. A remote access is
 * checked against the window (open, access, range) and then goes through
 * the window ASID's page tables like any job's access. SET_CONTEXT that
 * disables an ASID closes its windows; a reset closes every window.
 */
#define MAIA_FABRIC_MAX_WINDOWS		256u
#define MAIA_FABRIC_KEY_SLOT(key)	((key) & 0xffu)
#define MAIA_FABRIC_KEY_GEN(key)	((key) >> 8)	/* never 0: key 0 is never valid */

/*
 * Transport messages: the payload of one DATA frame is one message, a
 * struct maia_fabric_msg then len bytes of data (at most
 * MAIA_FABRIC_MSG_MAX_DATA). The link delivers them reliably and in order.
 */
#define MAIA_FMSG_IDENT			1u	/* on link up: tag = serial, key = port (no data) */
#define MAIA_FMSG_WRITE			2u	/* data for window key at offset */
#define MAIA_FMSG_WRITE_DONE		3u	/* answer to the LAST write of tag */
#define MAIA_FMSG_READ_REQ		4u	/* len bytes of window key at offset */
#define MAIA_FMSG_READ_DATA		5u	/* answer data; LAST on the last one */
#define MAIA_FMSG_COLL			6u	/* a collective's chunk (struct maia_fabric_coll_msg) */

#define MAIA_FMSG_F_LAST		(1u << 0)	/* the request's last message */
#define MAIA_FMSG_F_SEM			(1u << 1)	/* WRITE + LAST: then sem += value */

/* status of WRITE_DONE and READ_DATA */
#define MAIA_FABRIC_RESP_OK		0u
#define MAIA_FABRIC_RESP_BAD_KEY	1u	/* no open window has the key (NAK) */
#define MAIA_FABRIC_RESP_ACCESS		2u	/* window forbids it, or out of its range (NAK) */
#define MAIA_FABRIC_RESP_FAULT		3u	/* the target's MMU or memory failed */

struct maia_fabric_msg {
	__u8 type;		/* MAIA_FMSG_* */
	__u8 flags;		/* MAIA_FMSG_F_* */
	__u16 status;		/* answers: MAIA_FABRIC_RESP_* */
	__u32 key;		/* window key */
	__u64 tag;		/* the requester's id, echoed in answers */
	__u64 offset;		/* bytes from the window's start */
	__u32 len;		/* data bytes after the header; READ_REQ: bytes asked */
	__u32 sem_index;	/* WRITE with F_SEM */
	__u32 sem_value;
	__u32 reserved;
	/*
	 * (1.8) WRITE, READ_DATA: modeled arrival (the sender prices the hop);
	 * READ_REQ: when its answer's last byte may leave the target (the
	 * request's hop and the bytes asked up to its end at the link rate),
	 * which the target's READ_DATA adds its own hop to; WRITE_DONE of
	 * the last WRITE: the acknowledgement's arrival back at the
	 * requester (its cable at the target's end, fw_model_write_ack());
	 * 0: none
	 */
	__u64 model_ns;
};

/*
 * A collective's chunk: the header of a MAIA_FMSG_COLL message. flags says
 * which algorithm sent it, so that ranks that disagree (a wrong algo on one
 * of them) time out instead of reading each other's chunks.
 */
#define MAIA_FABRIC_COLL_GATHER_REDUCE	(1u << 0)	/* a gather-reduce's chunk */
/*
 * (1.10) Relayed the other way round the ring past a cut cable: every device
 * it reaches with relay_hops > 0 sends it on over the communicator's other
 * ring port with relay_hops - 1; with 0 it is the destination's (the rank
 * after src_rank), taken as if it had come from src_rank directly.
 * Documentation/hw/fabric.rst, "Failover".
 */
#define MAIA_FABRIC_COLL_RELAY		(1u << 1)
/*
 * (1.10) A notice, no data (len 0): a relayed chunk of collective comm_id/
 * seq found no way on at rank src_rank (a second cut). Ranks offset ..
 * offset + step - 1 (mod nranks) cannot be reached from src_rank's piece of
 * the ring. Sent on forward (send port) through the piece, relay_hops
 * bounding it; each rank of the piece ends that collective with
 * FABRIC_LINK and names them (struct maia_coll_report).
 */
#define MAIA_FABRIC_COLL_UNREACH	(1u << 2)

struct maia_fabric_coll_msg {
	__u8 type;		/* MAIA_FMSG_COLL */
	__u8 flags;		/* MAIA_FABRIC_COLL_* */
	__u16 step;		/* ring step of the collective */
	__u32 comm_id;		/* struct maia_cmd_collective's */
	__u32 seq;
	__u32 len;		/* data bytes after the header */
	__u64 offset;		/* the data's byte offset in the step's block */
	__u32 src_rank;
	__u32 relay_hops;	/* (1.10) RELAY: devices still to pass; else 0 */
	__u64 model_ns;		/* (1.8) modeled arrival (the sender prices the hop); 0: none */
	/* gather-reduce: its 2nd and 3rd input's modeled arrival past model_ns; else 0 */
	__u32 model_delta_ns[2];
};

_Static_assert(sizeof(struct maia_fabric_msg) == MAIA_FABRIC_MSG_HDR_LEN, "message header");
_Static_assert(sizeof(struct maia_fabric_coll_msg) == MAIA_FABRIC_MSG_HDR_LEN, "coll header");

#endif /* MAIA_HW_FABRIC_H */
