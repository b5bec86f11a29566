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
 * link: hello with neighbour discovery, go-back-N with cumulative acks,
 * receiver-granted credits, keepalive. See Documentation/hw/fabric.rst.
 */
#ifndef MAIA_HW_FABRIC_H
#define MAIA_HW_FABRIC_H

#include <linux/types.h>

#define MAIA_FABRIC_ETHERTYPE		0x88b5u	/* IEEE local experimental 1 */
#define MAIA_FABRIC_VERSION		1u
#define MAIA_FABRIC_MAX_PORTS		12u	/* 12 x 400 GbE on Maia 100 */
#define MAIA_FABRIC_PORT_ANY		0xffu	/* dst_port of a HELLO */

/* Frame types */
#define MAIA_FABRIC_HELLO		1u	/* discovery and session handshake */
#define MAIA_FABRIC_DATA		2u	/* one message, seq numbered */
#define MAIA_FABRIC_ACK			3u	/* ack and credit only */
#define MAIA_FABRIC_KEEPALIVE		4u	/* liveness on an idle link */
#define MAIA_FABRIC_NAK			5u	/* reserved: selective retransmit */

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
	__u32 reserved2;	/* 0 */
};

#define MAIA_FABRIC_HDR_LEN		48u
/* What QEMU's net layer carries per frame (NET_BUFSIZE). */
#define MAIA_FABRIC_BACKEND_MAX_FRAME	69632u
#define MAIA_FABRIC_MAX_PAYLOAD		65536u
#define MAIA_FABRIC_MIN_FRAME		(MAIA_ETH_HLEN + MAIA_FABRIC_HDR_LEN)
#define MAIA_FABRIC_MAX_FRAME		(MAIA_FABRIC_MIN_FRAME + MAIA_FABRIC_MAX_PAYLOAD)

_Static_assert(sizeof(struct maia_eth_hdr) == MAIA_ETH_HLEN, "Ethernet header is 14 bytes");
_Static_assert(sizeof(struct maia_fabric_hdr) == MAIA_FABRIC_HDR_LEN, "fabric header is 48 bytes");
_Static_assert(MAIA_FABRIC_MAX_FRAME <= MAIA_FABRIC_BACKEND_MAX_FRAME,
	       "a fabric frame fits QEMU's net buffer");

/* Defaults of the link timers and windows (a port may be configured otherwise). */
#define MAIA_FABRIC_HELLO_INTERVAL_MS	20u	/* HELLO resent while DOWN */
#define MAIA_FABRIC_RTO_MS		10u	/* go-back-N retransmit timeout */
#define MAIA_FABRIC_KEEPALIVE_MS	50u	/* sent after this long without a tx */
#define MAIA_FABRIC_DEAD_MS		1000u	/* DOWN after this long without a valid rx */
#define MAIA_FABRIC_WINDOW		64u	/* DATA frames in flight / credit granted */

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
	MAIA_FABRIC_DROP_OUT_OF_ORDER,		/* DATA after a gap (go-back-N resends it) */
	MAIA_FABRIC_DROP_DUPLICATE,		/* DATA already delivered */
	MAIA_FABRIC_DROP_COUNT
};

#endif /* MAIA_HW_FABRIC_H */
