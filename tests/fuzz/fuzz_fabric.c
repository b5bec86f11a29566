// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the fabric frame parser and the link engine behind
 * it (firmware-sim/src/fw_fabric_*.c): any bytes received on a port must
 * be counted and dropped or handled, never crash, hang or read outside the
 * frame (build with ASan/UBSan; see Makefile).
 *
 * Two links, A (acks delayed, as a device's port) and B (acks at once), are
 * brought UP first. The input is a list of records
 * [op u8][len u16 LE][len bytes]; op & 3:
 *   0  the bytes are a frame received by A, as they are;
 *   1  the bytes are a fabric header and payload: the target adds the
 *      Ethernet header, the right payload_len and CRC (op & 4: keep the
 *      version byte; else MAIA_FABRIC_VERSION) and (op & 8) A's session epochs and
 *      port, so that the input reaches the link state machine past the CRC;
 *   2  advance time by (first byte) ms, or (op & 8) to A's next deadline
 *      (fw_link_next_deadline()), and tick both links; op & 4 first turns
 *      A's deliver() refusing (-EAGAIN: held, offered again) on or off;
 *   3  A sends a message of len bytes (the bytes).
 * Frames A and B send each other are queued and delivered after each record.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../firmware-sim/src/fw_fabric.h"

#define MS		1000000ull
#define QMAX		64u

struct qframe {
	size_t len;
	uint8_t *data;
};

static struct fw_link la, lb;
static struct qframe qa[QMAX], qb[QMAX];	/* to A, to B */
static unsigned int na, nb;
static bool a_refuses;	/* A's deliver() says -EAGAIN */
static uint64_t now;
static uint8_t frame[MAIA_FABRIC_MAX_FRAME];

static int tx(void *opaque, unsigned int port, const void *f, size_t len)
{
	struct qframe *q = opaque == &la ? qb : qa;
	unsigned int *n = opaque == &la ? &nb : &na;

	(void)port;
	if (*n == QMAX)
		return 0;	/* a full queue drops, as QEMU's does */
	q[*n].data = malloc(len);
	memcpy(q[*n].data, f, len);
	q[*n].len = len;
	(*n)++;
	return 0;
}

static int deliver(void *opaque, unsigned int port, const void *msg, size_t len)
{
	volatile uint8_t sink = 0;

	(void)opaque;
	(void)port;
	/* Touch every byte: ASan checks the payload pointer and length. */
	for (size_t i = 0; i < len; i++)
		sink ^= ((const uint8_t *)msg)[i];
	(void)sink;
	return opaque == &la && a_refuses ? -EAGAIN : 0;
}

static const struct fw_link_ops ops = { .tx = tx, .deliver = deliver };

/* Deliver queued frames both ways, a bounded number of rounds. */
static void drain(void)
{
	for (int round = 0; round < 8 && (na || nb); round++) {
		struct qframe a[QMAX], b[QMAX];
		unsigned int ca = na, cb = nb;

		memcpy(a, qa, sizeof(a));
		memcpy(b, qb, sizeof(b));
		na = nb = 0;
		for (unsigned int i = 0; i < ca; i++) {
			fw_link_rx(&la, a[i].data, a[i].len, now);
			free(a[i].data);
		}
		for (unsigned int i = 0; i < cb; i++) {
			fw_link_rx(&lb, b[i].data, b[i].len, now);
			free(b[i].data);
		}
	}
}

static void tick(uint64_t ns)
{
	now += ns;
	fw_link_tick(&la, now);
	fw_link_tick(&lb, now);
	drain();
}

static void fixed_frame(uint8_t op, const uint8_t *p, size_t len)
{
	struct maia_fabric_hdr h = { 0 };
	uint8_t mac[MAIA_ETH_ALEN];
	size_t plen = len > sizeof(h) ? len - sizeof(h) : 0;

	memcpy(&h, p, len < sizeof(h) ? len : sizeof(h));
	if (plen > MAIA_FABRIC_MAX_PAYLOAD)
		plen = MAIA_FABRIC_MAX_PAYLOAD;
	if (!(op & 4))
		h.version = MAIA_FABRIC_VERSION;
	if (op & 8) {
		h.epoch = la.peer_epoch;
		h.peer_epoch = la.epoch;
		h.dst_port = (uint8_t)la.cfg.port;
		h.src_port = (uint8_t)la.peer_port;
	}
	fw_fabric_mac(mac, h.src_serial, h.src_port);
	fw_link_rx(&la, frame, fw_fabric_build(frame, mac, mac, &h, p + sizeof(h), (uint32_t)plen),
		   now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_link_config ca, cb;
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;

	fw_link_config_defaults(&ca);
	ca.serial = 0x1111;
	ca.port = 3;
	ca.window = 8;
	ca.txq = 16;
	cb = ca;
	cb.serial = 0x2222;
	cb.port = 5;
	/*
	 * A with the delayed acks of a device's port (fw_fabric_port.c): every
	 * window / 4 DATA frames or after MAIA_FABRIC_ACK_DELAY_US, sooner
	 * for MAIA_FABRIC_F_ACK_NOW or a duplicate; B acks each frame at once.
	 */
	ca.ack_every = ca.window / 4;
	ca.ack_delay_ns = MAIA_FABRIC_ACK_DELAY_US * 1000ull;
	now = 1000 * MS;
	na = nb = 0;
	a_refuses = false;
	if (fw_link_init(&la, &ca, &ops, &la, now) || fw_link_init(&lb, &cb, &ops, &lb, now))
		abort();
	tick(MS);
	tick(MS);
	if (la.state != FW_LINK_UP || lb.state != FW_LINK_UP)
		abort();	/* a lossless handshake must succeed */

	while (size >= 3) {
		uint8_t op = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		switch (op & 3) {
		case 0:
			/* The parser alone, then the link. */
			if (fw_fabric_parse(data, len, &f, &why) == 0 &&
			    f.hdr.payload_len != len - MAIA_FABRIC_MIN_FRAME)
				abort();
			fw_link_rx(&la, data, len, now);
			break;
		case 1:
			fixed_frame(op, data, len);
			break;
		case 2: {
			uint64_t due = fw_link_next_deadline(&la);

			if (op & 4)
				a_refuses = !a_refuses;
			if (op & 8)
				tick(due > now ? due - now : 0);
			else
				tick((len ? data[0] : 1) * MS);
			break;
		}
		case 3:
			fw_link_send(&la, data, len, now);
			break;
		}
		drain();
		data += len;
		size -= len;
	}
	tick(MS);
	fw_link_destroy(&la);
	fw_link_destroy(&lb);
	for (unsigned int i = 0; i < na; i++)
		free(qa[i].data);
	for (unsigned int i = 0; i < nb; i++)
		free(qb[i].data);
	return 0;
}
