// SPDX-License-Identifier: MIT
/*
 * Fabric frames: build and parse (maia/hw/fabric.h). The parser trusts
 * nothing in the frame: every field is checked against the frame's real
 * size before use, and the header is copied out, so a caller never reads
 * the buffer through a misaligned or out-of-bounds pointer.
 */
#include <string.h>
#include <zlib.h>

#include "fw_fabric.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the fabric header is copied as a little-endian structure"
#endif

uint32_t fw_fabric_crc(const struct maia_fabric_hdr *hdr, const void *payload, uint32_t len)
{
	struct maia_fabric_hdr h = *hdr;
	uLong crc;

	h.crc = 0;
	crc = crc32_z(0, (const Bytef *)&h, sizeof(h));
	if (len)
		crc = crc32_z(crc, payload, len);
	return (uint32_t)crc;
}

void fw_fabric_mac(uint8_t mac[MAIA_ETH_ALEN], uint64_t serial, unsigned int port)
{
	mac[0] = 0x02;		/* locally administered, unicast */
	mac[1] = (uint8_t)(serial >> 24);
	mac[2] = (uint8_t)(serial >> 16);
	mac[3] = (uint8_t)(serial >> 8);
	mac[4] = (uint8_t)serial;
	mac[5] = (uint8_t)port;
}

size_t fw_fabric_build(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
		       const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
		       const void *payload, uint32_t len)
{
	struct maia_eth_hdr eth;
	uint8_t *p = buf;

	memcpy(eth.dst, dst_mac, MAIA_ETH_ALEN);
	memcpy(eth.src, src_mac, MAIA_ETH_ALEN);
	eth.ethertype[0] = (uint8_t)(MAIA_FABRIC_ETHERTYPE >> 8);
	eth.ethertype[1] = (uint8_t)MAIA_FABRIC_ETHERTYPE;
	hdr->payload_len = len;
	hdr->crc = fw_fabric_crc(hdr, payload, len);
	memcpy(p, &eth, sizeof(eth));
	memcpy(p + MAIA_ETH_HLEN, hdr, sizeof(*hdr));
	if (len)
		memcpy(p + MAIA_FABRIC_MIN_FRAME, payload, len);
	return MAIA_FABRIC_MIN_FRAME + (size_t)len;
}

static int drop(enum maia_fabric_drop *reason, enum maia_fabric_drop why)
{
	*reason = why;
	return -1;
}

int fw_fabric_parse(const void *frame, size_t len, struct fw_fabric_frame *out,
		    enum maia_fabric_drop *reason)
{
	const uint8_t *p = frame;
	struct maia_fabric_hdr *h = &out->hdr;

	if (!p || len < MAIA_FABRIC_MIN_FRAME)
		return drop(reason, MAIA_FABRIC_DROP_TOO_SHORT);
	if (((unsigned int)p[12] << 8 | p[13]) != MAIA_FABRIC_ETHERTYPE)
		return drop(reason, MAIA_FABRIC_DROP_ETHERTYPE);
	memcpy(h, p + MAIA_ETH_HLEN, sizeof(*h));
	if (h->version != MAIA_FABRIC_VERSION)
		return drop(reason, MAIA_FABRIC_DROP_VERSION);
	/* Exact size: QEMU may pad short frames, but ours are never below 60 bytes. */
	if (h->payload_len > MAIA_FABRIC_MAX_PAYLOAD ||
	    (size_t)h->payload_len != len - MAIA_FABRIC_MIN_FRAME)
		return drop(reason, MAIA_FABRIC_DROP_LENGTH);
	out->payload = p + MAIA_FABRIC_MIN_FRAME;
	if (fw_fabric_crc(h, out->payload, h->payload_len) != h->crc)
		return drop(reason, MAIA_FABRIC_DROP_CRC);
	switch (h->type) {
	case MAIA_FABRIC_HELLO:
	case MAIA_FABRIC_ACK:
	case MAIA_FABRIC_KEEPALIVE:
		if (h->payload_len)
			return drop(reason, MAIA_FABRIC_DROP_LENGTH);
		break;
	case MAIA_FABRIC_DATA:
		break;
	default:		/* NAK is reserved: not sent, not accepted */
		return drop(reason, MAIA_FABRIC_DROP_TYPE);
	}
	if (h->src_port >= MAIA_FABRIC_MAX_PORTS)
		return drop(reason, MAIA_FABRIC_DROP_PORT);
	if (!h->epoch)
		return drop(reason, MAIA_FABRIC_DROP_STALE);
	return 0;
}
