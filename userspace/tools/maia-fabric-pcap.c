// SPDX-License-Identifier: MIT
/*
 * maia-fabric-pcap: the fabric frames of a pcap file, decoded, one line
 * each: what QEMU's "-object filter-dump,netdev=FABRIC-NETDEV,file=F"
 * writes for a fabric port's cable (Documentation/hw/fabric.rst).
 *
 *   maia-fabric-pcap [--summary] [--check] FILE
 *
 * A line: the time from the first record, the sender (device serial and
 * port), the receiving port, the frame type, seq/ack/credit, and for DATA
 * the transport message in it (a collective's chunk: comm id, seq, step,
 * offset, bytes). The decoder is this file's own, from the wire format in
 * maia/hw/fabric.h alone: it checks every frame as a receiver would (type,
 * version, lengths, CRC-32 over the header with crc 0 and the payload) and
 * marks what fails. Records of other EtherTypes are counted, not shown.
 * Last, a summary: frames per type, messages per type, DATA frames sent
 * again (a seq a sender had sent before: go-back-N), and bad frames.
 *
 * A capture with a snap length (filter-dump's maxlen, e.g. 160: both
 * headers) keeps a long run small; a record cut short is decoded as far as
 * it goes, and its CRC is not checked.
 *
 * --summary: the summary only. --check: exit 1 if any fabric frame is bad.
 * Exit 2 for a file that is not a pcap or ends inside a record.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "maia/hw/fabric.h"

#define PCAP_MAGIC_US	0xa1b2c3d4u	/* microsecond timestamps */
#define PCAP_MAGIC_NS	0xa1b23c4du	/* nanosecond timestamps */
#define LINKTYPE_ETHERNET 1u
#define MAX_SENDERS	64

static const char *const frame_names[] = {
	[MAIA_FABRIC_HELLO] = "HELLO", [MAIA_FABRIC_DATA] = "DATA",
	[MAIA_FABRIC_ACK] = "ACK", [MAIA_FABRIC_KEEPALIVE] = "KEEPALIVE",
	[MAIA_FABRIC_NAK] = "NAK",
};
#define NTYPES (MAIA_FABRIC_NAK + 1)

static const char *const msg_names[] = {
	[MAIA_FMSG_IDENT] = "IDENT", [MAIA_FMSG_WRITE] = "WRITE",
	[MAIA_FMSG_WRITE_DONE] = "WRITE_DONE", [MAIA_FMSG_READ_REQ] = "READ_REQ",
	[MAIA_FMSG_READ_DATA] = "READ_DATA", [MAIA_FMSG_COLL] = "COLL",
};
#define NMSGS (MAIA_FMSG_COLL + 1)

/* The next DATA seq each sender's session (serial, port, epoch, peer epoch) was seen to send. */
struct sender {
	uint64_t serial;
	uint32_t port, epoch, peer_epoch, next_seq;
};

static struct {
	uint64_t records, other, bad, resent;
	uint64_t cut;		/* fabric frames cut by the snap length: CRC not checked */
	uint64_t uncheckable;	/* records cut before the fabric header */
	uint64_t frames[NTYPES], msgs[NMSGS];
	struct sender senders[MAX_SENDERS];
	unsigned int nsenders;
} st;

static bool summary_only;

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* A DATA seq this sender sent before (modulo 2^32, as the link compares). */
static bool resent(const struct maia_fabric_hdr *h)
{
	struct sender *s = NULL;

	for (unsigned int i = 0; i < st.nsenders; i++)
		if (st.senders[i].serial == h->src_serial && st.senders[i].port == h->src_port &&
		    st.senders[i].epoch == h->epoch && st.senders[i].peer_epoch == h->peer_epoch)
			s = &st.senders[i];
	if (!s) {
		if (st.nsenders == MAX_SENDERS)
			return false;
		s = &st.senders[st.nsenders++];
		*s = (struct sender){ h->src_serial, h->src_port, h->epoch, h->peer_epoch,
				      h->seq + 1 };
		return false;
	}
	if ((int32_t)(h->seq - s->next_seq) < 0)
		return true;
	s->next_seq = h->seq + 1;
	return false;
}

/* The transport message of a DATA frame (len bytes, cap captured), after its frame fields. */
static void print_msg(const uint8_t *payload, uint32_t len, uint32_t cap)
{
	struct maia_fabric_msg m;
	struct maia_fabric_coll_msg c;

	if (cap < MAIA_FABRIC_MSG_HDR_LEN) {
		if (!summary_only)
			printf("  (%u bytes%s: no message header)", cap, cap < len ? " captured" : "");
		return;
	}
	memcpy(&m, payload, sizeof(m));
	memcpy(&c, payload, sizeof(c));
	if (m.type < NMSGS && msg_names[m.type])
		st.msgs[m.type]++;
	if (summary_only)
		return;
	switch (m.type) {
	case MAIA_FMSG_COLL:
		if (c.flags & MAIA_FABRIC_COLL_UNREACH) {
			/* A failover notice (hardware 1.10): no data. */
			printf("  COLL(unreachable) comm %#x seq %u from rank %u: ranks %" PRIu64
			       ".. (%u)", c.comm_id, c.seq, c.src_rank, (uint64_t)c.offset, c.step);
			break;
		}
		printf("  COLL%s comm %#x seq %u step %u from rank %u offset %" PRIu64 " len %u",
		       c.flags & MAIA_FABRIC_COLL_GATHER_REDUCE ? "(gather-reduce)" : "",
		       c.comm_id, c.seq, c.step, c.src_rank, (uint64_t)c.offset, c.len);
		if (c.flags & MAIA_FABRIC_COLL_RELAY)
			printf(" relayed, %u hops to go", c.relay_hops);
		break;
	case MAIA_FMSG_IDENT:
		printf("  IDENT serial %#" PRIx64 " port %u epoch %" PRIu64, (uint64_t)m.tag, m.key,
		       (uint64_t)m.offset);
		break;
	default:
		printf("  %s key %#x tag %#" PRIx64 " offset %" PRIu64 " len %u%s%s status %u",
		       m.type < NMSGS && msg_names[m.type] ? msg_names[m.type] : "message?",
		       m.key, (uint64_t)m.tag, (uint64_t)m.offset, m.len,
		       m.flags & MAIA_FMSG_F_LAST ? " LAST" : "",
		       m.flags & MAIA_FMSG_F_SEM ? " SEM" : "", m.status);
	}
	/* A length that disagrees with the frame (a receiver drops the message). */
	if ((m.type == MAIA_FMSG_COLL ? c.len : m.type == MAIA_FMSG_READ_REQ ? 0 : m.len) !=
	    len - MAIA_FABRIC_MSG_HDR_LEN)
		printf(" (but %u data bytes in the frame)", len - MAIA_FABRIC_MSG_HDR_LEN);
}

/*
 * One Ethernet record of len bytes on the wire, cap of them captured:
 * decoded and checked, or counted as another protocol's. A record cut by
 * the capture's snap length (filter-dump's maxlen) is decoded as far as it
 * goes; its CRC cannot be checked.
 */
static void frame(const uint8_t *p, uint32_t cap, uint32_t len, double t)
{
	struct maia_fabric_hdr h;
	const char *bad = NULL;
	uLong crc;

	if (cap < MAIA_ETH_HLEN || ((unsigned int)p[12] << 8 | p[13]) != MAIA_FABRIC_ETHERTYPE) {
		st.other++;
		return;
	}
	if (cap < MAIA_FABRIC_MIN_FRAME) {
		if (cap == len)
			st.bad++;
		else
			st.uncheckable++;
		if (!summary_only)
			printf("%12.6f  %s: %u bytes, shorter than the two headers\n", t,
			       cap == len ? "BAD" : "CUT", cap);
		return;
	}
	memcpy(&h, p + MAIA_ETH_HLEN, sizeof(h));
	if (h.version != MAIA_FABRIC_VERSION)
		bad = "version";
	else if (h.payload_len != len - MAIA_FABRIC_MIN_FRAME ||
		 h.payload_len > MAIA_FABRIC_MAX_PAYLOAD)
		bad = "payload_len";
	else if (h.type >= NTYPES || !frame_names[h.type] ||
		 (h.type != MAIA_FABRIC_DATA && h.payload_len))
		bad = "type";
	if (!bad && cap == len) {
		struct maia_fabric_hdr z = h;

		z.crc = 0;
		crc = crc32(0, (const Bytef *)&z, sizeof(z));
		crc = crc32(crc, p + MAIA_FABRIC_MIN_FRAME, h.payload_len);
		if ((uint32_t)crc != h.crc)
			bad = "CRC";
	}
	if (bad) {
		st.bad++;
		if (!summary_only)
			printf("%12.6f  BAD %s: serial %#" PRIx64 " port %u type %u, %u bytes\n", t, bad,
			       (uint64_t)h.src_serial, h.src_port, h.type, len);
		return;
	}
	st.frames[h.type]++;
	st.cut += cap < len;
	if (!summary_only) {
		printf("%12.6f  %#" PRIx64 ":%u -> ", t, (uint64_t)h.src_serial, h.src_port);
		if (h.dst_port == MAIA_FABRIC_PORT_ANY)
			printf("any");
		else
			printf("%u", h.dst_port);
		printf("  %-9s seq %u ack %u credit %u", frame_names[h.type], h.seq, h.ack, h.credit);
		if (h.type == MAIA_FABRIC_NAK)
			printf(" missing %u-%u", h.ack, h.ack + h.gap - 1);
		if (h.flags & MAIA_FABRIC_F_DUP)
			printf(" DUP");
		if (h.flags & MAIA_FABRIC_F_ACK_NOW)
			printf(" ACK_NOW");
	}
	if (h.type == MAIA_FABRIC_DATA) {
		if (resent(&h)) {
			st.resent++;
			if (!summary_only)
				printf(" RESENT");
		}
		print_msg(p + MAIA_FABRIC_MIN_FRAME, h.payload_len, cap - MAIA_FABRIC_MIN_FRAME);
	}
	if (!summary_only)
		printf("\n");
}

static void summary(void)
{
	printf("# %" PRIu64 " records: %" PRIu64 " other protocols, %" PRIu64 " bad fabric frames, %"
	       PRIu64 " cut by the snap length (CRC not checked);", st.records, st.other, st.bad,
	       st.cut + st.uncheckable);
	for (unsigned int i = 0; i < NTYPES; i++)
		if (frame_names[i])
			printf(" %s %" PRIu64, frame_names[i], st.frames[i]);
	printf("; DATA sent again %" PRIu64 "; messages:", st.resent);
	for (unsigned int i = 0; i < NMSGS; i++)
		if (msg_names[i])
			printf(" %s %" PRIu64, msg_names[i], st.msgs[i]);
	printf("; sessions %u\n", st.nsenders);
}

static int usage(void)
{
	fprintf(stderr, "usage: maia-fabric-pcap [--summary] [--check] FILE\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "summary", no_argument, NULL, 's' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint8_t gh[24], rh[16], *buf = NULL;
	double t0 = -1, unit;
	bool check = false, swap;
	uint32_t magic, snaplen;
	FILE *f;
	int o;

	while ((o = getopt_long(argc, argv, "sch", opts, NULL)) != -1) {
		if (o == 's')
			summary_only = true;
		else if (o == 'c')
			check = true;
		else
			return usage();
	}
	if (optind != argc - 1)
		return usage();
	f = fopen(argv[optind], "rb");
	if (!f) {
		fprintf(stderr, "maia-fabric-pcap: %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	if (fread(gh, sizeof(gh), 1, f) != 1)
		goto not_pcap;
	memcpy(&magic, gh, 4);
	swap = magic == __builtin_bswap32(PCAP_MAGIC_US) || magic == __builtin_bswap32(PCAP_MAGIC_NS);
	magic = rd32(gh, swap);
	if (magic != PCAP_MAGIC_US && magic != PCAP_MAGIC_NS)
		goto not_pcap;
	unit = magic == PCAP_MAGIC_NS ? 1e-9 : 1e-6;
	snaplen = rd32(gh + 16, swap);
	if (rd32(gh + 20, swap) != LINKTYPE_ETHERNET) {
		fprintf(stderr, "maia-fabric-pcap: %s: link type %u, not Ethernet\n", argv[optind],
			rd32(gh + 20, swap));
		fclose(f);
		return 2;
	}
	buf = malloc(snaplen ? snaplen : 1);
	if (!buf) {
		fclose(f);
		return 2;
	}
	while (fread(rh, sizeof(rh), 1, f) == 1) {
		uint32_t caplen = rd32(rh + 8, swap), origlen = rd32(rh + 12, swap);
		double t = rd32(rh, swap) + rd32(rh + 4, swap) * unit;

		if (caplen > snaplen || fread(buf, 1, caplen, f) != caplen) {
			fprintf(stderr, "maia-fabric-pcap: %s: record %" PRIu64 " is cut short\n",
				argv[optind], st.records + 1);
			free(buf);
			fclose(f);
			return 2;
		}
		if (t0 < 0)
			t0 = t;
		st.records++;
		if (caplen > origlen) {
			st.bad++;
			continue;
		}
		frame(buf, caplen, origlen, t - t0);
	}
	free(buf);
	fclose(f);
	summary();
	return check && st.bad ? 1 : 0;

not_pcap:
	fprintf(stderr, "maia-fabric-pcap: %s: not a pcap file\n", argv[optind]);
	fclose(f);
	return 2;
}
