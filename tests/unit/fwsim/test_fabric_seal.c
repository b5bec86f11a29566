// SPDX-License-Identifier: MIT
/*
 * DATA frames lent without their CRC (fw_link_config.lazy_crc,
 * Documentation/hw/fabric.rst "Performance"): two links on a virtual clock,
 * A lending its DATA frames (tx_lend), B sending through tx. A lent frame
 * of a lazy link carries no CRC and says so (fw_buf_unsealed()); the
 * receiver of a lent frame takes it unchecked; maia_sim_fabric_frame_seal()
 * fills in the CRC, checked here against zlib's crc32() of the header (crc
 * as 0) and payload; a frame sent through tx (a retransmission while the
 * lent one is still out) always carries it; a link without lazy_crc lends
 * frames whole.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../../firmware-sim/src/fw_fabric.h"
#include "maia/sim.h"
#include "tap.h"

#define NS_PER_MS	1000000ull
#define MAX_Q		64u
#define MAX_LENT	8u

/* Frames in flight from one link to the other, copied (tx) or lent (tx_lend). */
struct wire_frame {
	uint8_t *data;		/* a copy, or the lent buffer (a reference of ours) */
	size_t len;
	bool lent;
};

struct end {
	struct fw_link link;
	struct end *peer;
	struct wire_frame q[MAX_Q];	/* to the peer */
	unsigned int nq;
	const uint8_t *lent[MAX_LENT];	/* every frame lent, kept until the test drops it */
	size_t lent_len[MAX_LENT];
	unsigned int nlent;
	uint8_t got[2][MAIA_FABRIC_MAX_PAYLOAD];	/* messages delivered, last two */
	size_t got_len[2];
	unsigned int ngot;
};

static struct end a, b;
static uint64_t now = 1000;

static int tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct end *e = opaque;
	uint8_t *copy = malloc(len);

	(void)port;
	if (!copy || e->nq == MAX_Q) {
		free(copy);
		return -1;
	}
	memcpy(copy, frame, len);
	e->q[e->nq++] = (struct wire_frame){ copy, len, false };
	return 0;
}

static int tx_lend(void *opaque, unsigned int port, void *frame, size_t len)
{
	struct end *e = opaque;

	(void)port;
	if (e->nq == MAX_Q || e->nlent == MAX_LENT)
		return -1;
	/* The link keeps its own: one for the wire, one the test keeps to look at it. */
	fw_buf_get(frame);
	fw_buf_get(frame);
	e->lent_len[e->nlent] = len;
	e->lent[e->nlent++] = frame;
	e->q[e->nq++] = (struct wire_frame){ frame, len, true };
	return 0;
}

static int deliver(void *opaque, unsigned int port, const void *msg, size_t len)
{
	struct end *e = opaque;

	(void)port;
	memcpy(e->got[e->ngot % 2], msg, len);
	e->got_len[e->ngot % 2] = len;
	e->ngot++;
	return 0;
}

/* Delivers what e sent to its peer: lent frames as lent (unchecked), copies checked. */
static void carry(struct end *e, bool keep_lent)
{
	unsigned int n = e->nq, kept = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct wire_frame *f = &e->q[i];

		if (f->lent && keep_lent) {
			e->q[kept++] = *f;	/* held on the wire */
			continue;
		}
		if (f->lent) {
			fw_link_rx_lent(&e->peer->link, f->data, f->len, now);
			fw_buf_free(f->data);
		} else {
			fw_link_rx(&e->peer->link, f->data, f->len, now);
			free(f->data);
		}
	}
	e->nq = kept;
}

static void step(uint64_t ns, bool keep_lent)
{
	now += ns;
	fw_link_tick(&a.link, now);
	fw_link_tick(&b.link, now);
	carry(&a, keep_lent);
	carry(&b, keep_lent);
}

static bool setup(bool lazy)
{
	static const struct fw_link_ops ops_a = { .tx = tx, .tx_lend = tx_lend, .deliver = deliver };
	static const struct fw_link_ops ops_b = { .tx = tx, .deliver = deliver };
	struct fw_link_config ca, cb;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.peer = &b;
	b.peer = &a;
	fw_link_config_defaults(&ca);
	ca.serial = 0xa;
	ca.lazy_crc = lazy;
	fw_link_config_defaults(&cb);
	cb.serial = 0xb;
	cb.port = 1;
	cb.lazy_crc = true;	/* without tx_lend: no effect */
	if (fw_link_init(&a.link, &ca, &ops_a, &a, now) || fw_link_init(&b.link, &cb, &ops_b, &b, now))
		return false;
	for (int i = 0; i < 100 && !(a.link.state == FW_LINK_UP && a.link.confirmed &&
				     b.link.state == FW_LINK_UP && b.link.confirmed); i++)
		step(NS_PER_MS, false);
	return a.link.state == FW_LINK_UP && b.link.state == FW_LINK_UP;
}

static void teardown(void)
{
	for (int i = 0; i < 10; i++)
		step(NS_PER_MS, false);
	for (unsigned int i = 0; i < a.nlent; i++)
		fw_buf_free((void *)a.lent[i]);
	fw_link_destroy(&a.link);
	fw_link_destroy(&b.link);
}

/* zlib's CRC of the frame's header with crc 0, then its payload: the wire's CRC. */
static uint32_t ref_frame_crc(const uint8_t *frame, size_t len)
{
	struct maia_fabric_hdr h;
	uLong crc;

	memcpy(&h, frame + MAIA_ETH_HLEN, sizeof(h));
	h.crc = 0;
	crc = crc32(0, (const Bytef *)&h, sizeof(h));
	return (uint32_t)crc32(crc, frame + MAIA_FABRIC_MIN_FRAME,
			       (uInt)(len - MAIA_FABRIC_MIN_FRAME));
}

static uint32_t hdr_crc(const uint8_t *frame)
{
	struct maia_fabric_hdr h;

	memcpy(&h, frame + MAIA_ETH_HLEN, sizeof(h));
	return h.crc;
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31u + seed * 7u + (i >> 8));
}

static void test_lazy(void)
{
	static uint8_t hdr[48], data[20000], msg[sizeof(hdr) + sizeof(data)];
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	const uint8_t *fr;
	uint8_t before[256];
	size_t len;

	if (!tap_ok(setup(true), "lazy: both links UP"))
		return;
	fill(hdr, sizeof(hdr), 1);
	fill(data, sizeof(data), 2);
	memcpy(msg, hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), data, sizeof(data));
	tap_ok(fw_link_send_parts(&a.link, hdr, sizeof(hdr), data, sizeof(data), now) == 0 &&
	       a.nlent == 1, "lazy: a message of two parts goes out as one lent frame");
	if (a.nlent != 1) {
		teardown();
		return;
	}
	fr = a.lent[0];
	len = a.lent_len[0];
	tap_ok(fw_buf_unsealed(fr) && hdr_crc(fr) == 0 && hdr_crc(fr) != ref_frame_crc(fr, len),
	       "lazy: the lent frame says it is unsealed, its CRC field 0");
	tap_ok(fw_fabric_parse(fr, len, &f, &why) < 0 && why == MAIA_FABRIC_DROP_CRC,
	       "lazy: checked as a copied frame would be, it fails on its CRC");
	tap_ok(fw_fabric_parse_ext(fr, len, &f, &why, false) == 0 &&
	       f.hdr.payload_len == sizeof(msg) && !memcmp(f.payload, msg, sizeof(msg)),
	       "lazy: unchecked, it parses, the payload is header then data");
	step(NS_PER_MS, false);
	tap_ok(b.ngot == 1 && b.got_len[0] == sizeof(msg) && !memcmp(b.got[0], msg, sizeof(msg)),
	       "lazy: the receiver of the lent frame delivers the message");
	maia_sim_fabric_frame_seal(fr, len);
	tap_ok(!fw_buf_unsealed(fr) && hdr_crc(fr) == ref_frame_crc(fr, len) &&
	       fw_fabric_parse(fr, len, &f, &why) == 0,
	       "sealed: its CRC is zlib's of header and payload, it passes the check");
	memcpy(before, fr, sizeof(before));
	maia_sim_fabric_frame_seal(fr, len);
	tap_ok(!memcmp(before, fr, sizeof(before)), "sealed twice: nothing changes");

	/* A retransmission while the first transmission is still out. */
	fill(data, sizeof(data), 3);
	fw_link_send_parts(&a.link, hdr, sizeof(hdr), data, 1000, now);
	memcpy(msg + sizeof(hdr), data, 1000);
	step(NS_PER_MS / 10, true);
	tap_ok(a.nlent == 2 && b.ngot == 1, "lazy: a second message lent, held on the wire");
	for (int i = 0; i < 400 && b.ngot < 2; i++)
		step(NS_PER_MS, true);
	tap_ok(b.ngot == 2 && b.got_len[1] == sizeof(hdr) + 1000 &&
	       !memcmp(b.got[1], msg, sizeof(hdr) + 1000) && a.link.stats.tx_lend_copies >= 1 &&
	       b.link.stats.drops[MAIA_FABRIC_DROP_CRC] == 0,
	       "lazy: its retransmission, sent as a copy (%llu), carries its CRC: checked, "
	       "delivered", (unsigned long long)a.link.stats.tx_lend_copies);
	tap_ok(a.nlent == 2 && fw_buf_unsealed(a.lent[1]) && hdr_crc(a.lent[1]) == 0,
	       "lazy: the frame still lent was not written");
	teardown();
}

static void test_eager(void)
{
	static uint8_t hdr[48], data[3000];
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;

	if (!tap_ok(setup(false), "eager: both links UP"))
		return;
	fill(hdr, sizeof(hdr), 4);
	fill(data, sizeof(data), 5);
	fw_link_send_parts(&a.link, hdr, sizeof(hdr), data, sizeof(data), now);
	tap_ok(a.nlent == 1 && !fw_buf_unsealed(a.lent[0]) &&
	       hdr_crc(a.lent[0]) == ref_frame_crc(a.lent[0], a.lent_len[0]) &&
	       fw_fabric_parse(a.lent[0], a.lent_len[0], &f, &why) == 0,
	       "without lazy_crc: the lent frame carries its CRC");
	teardown();
}

/*
 * The link lets go of a frame it lent unsealed (a reset: its queue is
 * freed, then new messages after the link is UP again) while the host
 * still holds it: the lent bytes stay as lent, no new message is built in
 * that buffer, and sealing it then gives the wire's CRC.
 */
static void test_reset_while_lent(void)
{
	static uint8_t hdr[48], data[2000], snap[MAIA_FABRIC_MIN_FRAME + 2048];
	const uint8_t *fr;
	struct fw_fabric_frame f;
	enum maia_fabric_drop why;
	size_t len;
	bool reused = false;

	if (!tap_ok(setup(true), "reset while lent: both links UP"))
		return;
	fill(hdr, sizeof(hdr), 6);
	fill(data, sizeof(data), 7);
	fw_link_send_parts(&a.link, hdr, sizeof(hdr), data, sizeof(data), now);
	if (!tap_ok(a.nlent == 1 && a.lent_len[0] <= sizeof(snap) && fw_buf_unsealed(a.lent[0]),
		    "reset while lent: the message lent unsealed"))
		return;
	fr = a.lent[0];
	len = a.lent_len[0];
	memcpy(snap, fr, len);
	/* The wire loses what it holds (our reference stays), and A resets. */
	for (unsigned int i = 0; i < a.nq; i++)
		if (a.q[i].lent)
			fw_buf_free(a.q[i].data);
		else
			free(a.q[i].data);
	a.nq = 0;
	fw_link_reset(&a.link, now);
	for (int i = 0; i < 100 && !(a.link.state == FW_LINK_UP && a.link.confirmed); i++)
		step(NS_PER_MS, false);
	for (unsigned int k = 0; k < 3 && a.link.state == FW_LINK_UP; k++) {
		fill(data, sizeof(data), 8 + k);
		fw_link_send_parts(&a.link, hdr, sizeof(hdr), data, sizeof(data), now);
		step(NS_PER_MS, false);
	}
	for (unsigned int i = 1; i < a.nlent; i++)
		reused |= a.lent[i] == fr;
	tap_ok(a.link.state == FW_LINK_UP && a.nlent == 4 && !reused && !memcmp(snap, fr, len) &&
	       fw_buf_unsealed(fr),
	       "reset while lent: up again, 3 messages more (lent %u), none in the held buffer; "
	       "its bytes unchanged", a.nlent);
	maia_sim_fabric_frame_seal(fr, len);
	tap_ok(!fw_buf_unsealed(fr) && hdr_crc(fr) == ref_frame_crc(fr, len) &&
	       fw_fabric_parse(fr, len, &f, &why) == 0 &&
	       f.hdr.payload_len == sizeof(hdr) + sizeof(data),
	       "reset while lent: sealed afterwards, it carries the wire's CRC and parses");
	teardown();
}

int main(void)
{
	test_lazy();
	test_eager();
	test_reset_while_lent();
	return tap_done();
}
