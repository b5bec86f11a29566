// SPDX-License-Identifier: MIT
/*
 * mkfw: build a Maia firmware image (maia/hw/boot.h): header + TLV records
 * (name, clock, TDP, opcode bitmap, scheduler quantum, optional aging bound
 * and self-test delay). --break produces the deliberately damaged images the tests feed
 * to the boot protocol.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "maia/engine.h"
#include "maia/hw/boot.h"
#include "maia/hw/cmd.h"
#include "maia/hw/tvp.h"

#define PAYLOAD_MAX	4096u

struct payload {
	uint8_t buf[PAYLOAD_MAX];
	uint32_t len;
};

static void add_tlv(struct payload *p, uint16_t type, const void *val, uint16_t len)
{
	struct maia_fw_tlv tlv = { .type = type, .length = len };
	uint32_t padded = (len + 3u) & ~3u;

	if (p->len + sizeof(tlv) + padded > PAYLOAD_MAX) {
		fprintf(stderr, "mkfw: payload too large\n");
		exit(1);
	}
	memcpy(p->buf + p->len, &tlv, sizeof(tlv));
	p->len += sizeof(tlv);
	if (len)
		memcpy(p->buf + p->len, val, len);
	memset(p->buf + p->len + len, 0, padded - len);
	p->len += padded;
}

static void add_u32(struct payload *p, uint16_t type, uint32_t v)
{
	add_tlv(p, type, &v, sizeof(v));
}

static uint64_t opcode_bitmap(void)
{
	uint64_t ops = 0;

	/* Through the fabric commands (1.3); a device without ports fails them with LINK. */
	for (unsigned int op = MAIA_OP_NOP; op <= MAIA_OP_COLLECTIVE; op++)
		ops |= 1ull << op;
	ops |= 1ull << MAIA_OP_KERNEL;		/* the Tile Vector Processor (1.9) */
	for (unsigned int op = 0; op < 64; op++)
		if (fw_tensor_handles((uint16_t)op))
			ops |= 1ull << op;
	return ops;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkfw -o FILE [options]\n"
		"  -o, --output FILE      image to write\n"
		"  -v, --version X.Y.Z    firmware version (default 1.0.0)\n"
		"  -n, --name NAME        firmware name (default maia-fw)\n"
		"  -c, --clock MHZ        nominal tensor clock (default 1500)\n"
		"  -t, --tdp W            default power cap (default: none, the chip model's TDP)\n"
		"  -q, --quantum US       scheduler quantum (default 2000)\n"
		"  -a, --aging US         scheduler aging bound (default: the device's, 100000)\n"
		"  -s, --selftest-ms MS   start-up self-test before READY (default none)\n"
		"  -b, --break KIND       damage the image: magic, crc, abi, truncate, tlv\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "version", required_argument, NULL, 'v' },
		{ "name", required_argument, NULL, 'n' },
		{ "clock", required_argument, NULL, 'c' },
		{ "tdp", required_argument, NULL, 't' },
		{ "quantum", required_argument, NULL, 'q' },
		{ "aging", required_argument, NULL, 'a' },
		{ "selftest-ms", required_argument, NULL, 's' },
		{ "break", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *name = "maia-fw", *breakage = NULL;
	unsigned int maj = 1, min = 0, pat = 0;
	uint32_t clock = 1500, tdp = 0, quantum = 2000, aging = 0, selftest_ms = 0;
	struct maia_fw_header hdr;
	struct payload p = { .len = 0 };
	uint64_t ops;
	size_t total;
	FILE *f;
	int c;

	while ((c = getopt_long(argc, argv, "o:v:n:c:t:q:a:s:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'n': name = optarg; break;
		case 'c': clock = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': tdp = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'q': quantum = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'a': aging = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': selftest_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': breakage = optarg; break;
		case 'v':
			if (sscanf(optarg, "%u.%u.%u", &maj, &min, &pat) != 3 ||
			    maj > 0xffff || min > 0xff || pat > 0xff) {
				fprintf(stderr, "mkfw: bad version '%s' (want X.Y.Z)\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!out || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (breakage && strcmp(breakage, "magic") && strcmp(breakage, "crc") &&
	    strcmp(breakage, "abi") && strcmp(breakage, "truncate") && strcmp(breakage, "tlv")) {
		fprintf(stderr, "mkfw: unknown --break kind '%s'\n", breakage);
		return 2;
	}

	add_tlv(&p, MAIA_FW_TLV_NAME, name, (uint16_t)strlen(name));
	add_u32(&p, MAIA_FW_TLV_CLOCK_MHZ, clock);
	if (tdp)
		add_u32(&p, MAIA_FW_TLV_TDP_W, tdp);
	ops = opcode_bitmap();
	add_tlv(&p, MAIA_FW_TLV_OPCODES, &ops, sizeof(ops));
	add_u32(&p, MAIA_FW_TLV_SCHED_QUANTUM_US, quantum);
	if (aging)
		add_u32(&p, MAIA_FW_TLV_SCHED_AGING_US, aging);
	if (selftest_ms)
		add_u32(&p, MAIA_FW_TLV_SELFTEST_MS, selftest_ms);
	if (breakage && !strcmp(breakage, "tlv")) {
		/* A record whose length runs past the payload (CRC still valid). */
		struct maia_fw_tlv bad = { .type = MAIA_FW_TLV_NAME, .length = 200 };

		memcpy(p.buf + p.len, &bad, sizeof(bad));
		p.len += sizeof(bad);
	}
	add_tlv(&p, MAIA_FW_TLV_END, NULL, 0);

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = MAIA_FW_MAGIC;
	hdr.abi_major = MAIA_FW_ABI_MAJOR;
	hdr.abi_minor = MAIA_FW_ABI_MINOR;
	hdr.fw_version = MAIA_FW_VERSION(maj, min, pat);
	hdr.header_size = sizeof(hdr);
	hdr.payload_size = p.len;
	hdr.payload_crc32 = (uint32_t)crc32_z(0, p.buf, p.len);
	snprintf(hdr.build_id, sizeof(hdr.build_id), "%s-%u.%u.%u", name, maj, min, pat);
	total = sizeof(hdr) + p.len;

	if (breakage && !strcmp(breakage, "magic"))
		hdr.magic ^= 0xffu;
	if (breakage && !strcmp(breakage, "crc"))
		hdr.payload_crc32 ^= 1u;
	if (breakage && !strcmp(breakage, "abi"))
		hdr.abi_major = MAIA_FW_ABI_MAJOR + 1;
	if (breakage && !strcmp(breakage, "truncate"))
		total -= p.len / 2;	/* header still claims the full payload */

	f = fopen(out, "wb");
	if (!f) {
		fprintf(stderr, "mkfw: %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (fwrite(&hdr, sizeof(hdr), 1, f) != 1 ||
	    fwrite(p.buf, total - sizeof(hdr), 1, f) != 1 || fclose(f)) {
		fprintf(stderr, "mkfw: writing %s failed\n", out);
		return 1;
	}
	return 0;
}
