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

#if defined(__x86_64__)
#include <immintrin.h>

/* 16 bytes of buf, also stored at dst if there is one. */
__attribute__((always_inline))
static inline __m128i ld16(const uint8_t *buf, uint8_t *dst)
{
	__m128i x = _mm_loadu_si128((const __m128i *)buf);

	if (dst)
		_mm_storeu_si128((__m128i *)dst, x);
	return x;
}

/* x folded 128 bits (k3k4) or a lane's distance (k1k2) forward, plus next. */
__attribute__((target("pclmul,sse4.1"), always_inline))
static inline __m128i fold16(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x11), next),
			     _mm_clmulepi64_si128(x, k, 0x00));
}

static const uint64_t k3k4[2] __attribute__((aligned(16))) = { 0x01751997d0, 0x00ccaa009e };

/*
 * The end of both carry-less paths below: x1 holds the folded CRC state of
 * everything before buf; fold in the len (a multiple of 16) bytes left, then
 * 128 to 64 bits, and 64 to 32 by Barrett reduction.
 */
__attribute__((target("pclmul,sse4.1"), always_inline))
static inline uint32_t crc_finish(__m128i x1, const uint8_t *buf, size_t len, uint8_t *dst)
{
	static const uint64_t k5k0[2] __attribute__((aligned(16))) = { 0x0163cd6124, 0 };
	static const uint64_t poly[2] __attribute__((aligned(16))) = { 0x01db710641, 0x01f7011641 };
	__m128i x0 = _mm_load_si128((const __m128i *)k3k4), x2, x3;

	while (len >= 16) {
		x1 = fold16(x1, x0, ld16(buf, dst));
		buf += 16;
		dst = dst ? dst + 16 : NULL;
		len -= 16;
	}
	x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
	x3 = _mm_setr_epi32(~0, 0, ~0, 0);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x0 = _mm_loadl_epi64((const __m128i *)k5k0);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_and_si128(x1, x3);
	x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	x0 = _mm_load_si128((const __m128i *)poly);
	x2 = _mm_and_si128(x1, x3);
	x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
	x2 = _mm_and_si128(x2, x3);
	x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}

/*
 * CRC-32 (IEEE, bit-reflected, zlib's) by carry-less multiplication:
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ" (Intel,
 * 2009), four 128-bit lanes folded 64 bytes at a time, then Barrett
 * reduction; the constants are the paper's for the reflected polynomial
 * (k = bit-reflected x^n mod P, shifted left by one). It runs at about ten
 * times zlib's table-driven speed, and every 64 KiB data frame is
 * checksummed by its sender. len >= 64, a multiple of 16; crc is the raw
 * (not inverted) register. With dst, the bytes read are also stored there:
 * a copy that checksums in the same pass.
 */
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_clmul(uint32_t crc, const uint8_t *buf, size_t len, uint8_t *dst)
{
	static const uint64_t k1k2[2] __attribute__((aligned(16))) = { 0x0154442bd4, 0x01c6e41596 };
	__m128i x0, x1, x2, x3, x4;

	x1 = ld16(buf + 0x00, dst);
	x2 = ld16(buf + 0x10, dst ? dst + 0x10 : NULL);
	x3 = ld16(buf + 0x20, dst ? dst + 0x20 : NULL);
	x4 = ld16(buf + 0x30, dst ? dst + 0x30 : NULL);
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	x0 = _mm_load_si128((const __m128i *)k1k2);
	buf += 64;
	dst = dst ? dst + 64 : NULL;
	len -= 64;
	while (len >= 64) {
		x1 = fold16(x1, x0, ld16(buf + 0x00, dst));
		x2 = fold16(x2, x0, ld16(buf + 0x10, dst ? dst + 0x10 : NULL));
		x3 = fold16(x3, x0, ld16(buf + 0x20, dst ? dst + 0x20 : NULL));
		x4 = fold16(x4, x0, ld16(buf + 0x30, dst ? dst + 0x30 : NULL));
		buf += 64;
		dst = dst ? dst + 64 : NULL;
		len -= 64;
	}
	/* Four lanes into one. */
	x0 = _mm_load_si128((const __m128i *)k3k4);
	x1 = fold16(x1, x0, x2);
	x1 = fold16(x1, x0, x3);
	x1 = fold16(x1, x0, x4);
	return crc_finish(x1, buf, len, dst);
}

/* 32 bytes of buf, also stored at dst if there is one. */
__attribute__((target("avx2"), always_inline))
static inline __m256i ld32(const uint8_t *buf, uint8_t *dst)
{
	__m256i y = _mm256_loadu_si256((const __m256i *)buf);

	if (dst)
		_mm256_storeu_si256((__m256i *)dst, y);
	return y;
}

/* fold16() on both 128-bit halves at once (VPCLMULQDQ). */
__attribute__((target("vpclmulqdq,avx2"), always_inline))
static inline __m256i fold32(__m256i y, __m256i k, __m256i next)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(y, k, 0x11), next),
				_mm256_clmulepi64_epi128(y, k, 0x00));
}

/*
 * The same with 256-bit carry-less multiplies where the CPU has them
 * (VPCLMULQDQ): four 256-bit lanes folded 128 bytes at a time (so each
 * 128-bit half moves 1024 bits: k = x^(1024+32) and x^(1024-32), computed
 * as the paper's), then the eight 128-bit halves in memory order into one,
 * and crc_finish(). len >= 128, a multiple of 16.
 */
__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))
static uint32_t crc32_vclmul(uint32_t crc, const uint8_t *buf, size_t len, uint8_t *dst)
{
	const __m256i k = _mm256_setr_epi64x(0x01e88ef372, 0x014a7fe880, 0x01e88ef372,
					     0x014a7fe880);
	__m128i x0 = _mm_load_si128((const __m128i *)k3k4), x1;
	__m256i y1, y2, y3, y4;

	y1 = ld32(buf + 0x00, dst);
	y2 = ld32(buf + 0x20, dst ? dst + 0x20 : NULL);
	y3 = ld32(buf + 0x40, dst ? dst + 0x40 : NULL);
	y4 = ld32(buf + 0x60, dst ? dst + 0x60 : NULL);
	y1 = _mm256_xor_si256(y1, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)crc)));
	buf += 128;
	dst = dst ? dst + 128 : NULL;
	len -= 128;
	while (len >= 128) {
		y1 = fold32(y1, k, ld32(buf + 0x00, dst));
		y2 = fold32(y2, k, ld32(buf + 0x20, dst ? dst + 0x20 : NULL));
		y3 = fold32(y3, k, ld32(buf + 0x40, dst ? dst + 0x40 : NULL));
		y4 = fold32(y4, k, ld32(buf + 0x60, dst ? dst + 0x60 : NULL));
		buf += 128;
		dst = dst ? dst + 128 : NULL;
		len -= 128;
	}
	x1 = fold16(_mm256_castsi256_si128(y1), x0, _mm256_extracti128_si256(y1, 1));
	x1 = fold16(x1, x0, _mm256_castsi256_si128(y2));
	x1 = fold16(x1, x0, _mm256_extracti128_si256(y2, 1));
	x1 = fold16(x1, x0, _mm256_castsi256_si128(y3));
	x1 = fold16(x1, x0, _mm256_extracti128_si256(y3, 1));
	x1 = fold16(x1, x0, _mm256_castsi256_si128(y4));
	x1 = fold16(x1, x0, _mm256_extracti128_si256(y4, 1));
	return crc_finish(x1, buf, len, dst);
}

/* The widest path the CPU has: 2 VPCLMULQDQ, 1 PCLMULQDQ, 0 neither. */
static int cpu_crc_path(void)
{
	static int path = -1;
	int p = __atomic_load_n(&path, __ATOMIC_RELAXED);

	if (p < 0) {
		__builtin_cpu_init();
		p = !__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1") ? 0 :
		    __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2") ? 2 : 1;
		__atomic_store_n(&path, p, __ATOMIC_RELAXED);
	}
	return p;
}
#endif

/* Tests: at most this path (fw_fabric_crc_max_path()). */
static int crc_path_cap = 2;

void fw_fabric_crc_max_path(int path)
{
	__atomic_store_n(&crc_path_cap, path, __ATOMIC_RELAXED);
}

static int crc_path(void)
{
#if defined(__x86_64__)
	int cap = __atomic_load_n(&crc_path_cap, __ATOMIC_RELAXED), p = cpu_crc_path();

	return p < cap ? p : cap;
#else
	return 0;
#endif
}

/*
 * Short inputs (a frame header, a small payload, the tail the carry-less
 * paths leave): zlib's CRC-32, bit for bit, by slicing-by-8 tables. zlib's
 * crc32_z() cost about 70-200 ns per 48-byte header on a loaded host; its
 * braids pay off on long inputs only. Tables built before main() runs.
 */
#define CRC_SHORT_MAX	256u

static uint32_t crc_tab[8][256];

__attribute__((constructor))
static void crc_tab_init(void)
{
	for (unsigned int i = 0; i < 256; i++) {
		uint32_t c = i;

		for (unsigned int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[0][i] = c;
	}
	for (unsigned int i = 0; i < 256; i++)
		for (unsigned int t = 1; t < 8; t++)
			crc_tab[t][i] = crc_tab[0][crc_tab[t - 1][i] & 0xff] ^ (crc_tab[t - 1][i] >> 8);
}

/* zlib's crc32(crc, p, len) for any len; meant for len <= CRC_SHORT_MAX. */
static uint32_t crc_short(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t c = ~crc;

	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

/*
 * zlib's crc32_z(), with the carry-less multiply path for the bulk when the
 * CPU has it, slicing-by-8 for short inputs; with dst, also a copy of p there.
 */
static uLong crc_update(uLong crc, const uint8_t *p, size_t len, uint8_t *dst)
{
#if defined(__x86_64__)
	int path = len >= 64 ? crc_path() : 0;

	if (path) {
		size_t bulk = len & ~(size_t)15;

		if (path == 2 && bulk >= 128)
			crc = ~crc32_vclmul(~(uint32_t)crc, p, bulk, dst) & 0xffffffffu;
		else
			crc = ~crc32_clmul(~(uint32_t)crc, p, bulk, dst) & 0xffffffffu;
		p += bulk;
		dst = dst ? dst + bulk : NULL;
		len -= bulk;
	}
#endif
	if (dst && len) {
		memcpy(dst, p, len);
		p = dst;	/* the CRC of what was written, whatever src does meanwhile */
	}
	if (!len)
		return crc;
	return len <= CRC_SHORT_MAX ? crc_short((uint32_t)crc, p, len) : crc32_z(crc, p, len);
}

uint32_t fw_fabric_crc_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	return (uint32_t)crc_update(crc, src, len, dst);
}

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the fabric header is copied as a little-endian structure"
#endif

uint32_t fw_fabric_crc(const struct maia_fabric_hdr *hdr, const void *payload, uint32_t len)
{
	struct maia_fabric_hdr h = *hdr;
	uLong crc;

	h.crc = 0;
	crc = crc_short(0, (const uint8_t *)&h, sizeof(h));
	if (len)
		crc = crc_update(crc, payload, len, NULL);
	return (uint32_t)crc;
}

/*
 * zlib's crc32_combine_gen(len) of the last lengths asked, one slot per
 * len % 16 (a link's frames come in few lengths): crc32_combine() itself
 * costs about 0.5 us. Length in the high half of a slot, the operator in
 * the low one: one atomic word, so that threads share it without a lock.
 */
static uint64_t combine_cache[16];

static uint32_t combine_op(uint32_t len)
{
	uint64_t *slot = &combine_cache[len % 16];
	uint64_t c = __atomic_load_n(slot, __ATOMIC_RELAXED);
	uint32_t op;

	if ((uint32_t)(c >> 32) == len)
		return (uint32_t)c;
	op = (uint32_t)crc32_combine_gen((z_off_t)len);
	__atomic_store_n(slot, (uint64_t)len << 32 | op, __ATOMIC_RELAXED);
	return op;
}

/* The same from the payload's own CRC (fw_fabric_crc_copy() from 0): only the header is read. */
static uint32_t crc_known_payload(const struct maia_fabric_hdr *hdr, uint32_t payload_crc,
				  uint32_t len)
{
	struct maia_fabric_hdr h = *hdr;
	uint32_t crc;

	h.crc = 0;
	crc = crc_short(0, (const uint8_t *)&h, sizeof(h));
	return len ? (uint32_t)crc32_combine_op(crc, payload_crc, combine_op(len)) : crc;
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
	return fw_fabric_build_crc(buf, src_mac, dst_mac, hdr, payload, len,
				   fw_fabric_crc_copy(0, NULL, payload, len));
}

/* The headers (hdr->crc as given), and the payload unless it is in place. */
static size_t build(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
		    const uint8_t dst_mac[MAIA_ETH_ALEN], const struct maia_fabric_hdr *hdr,
		    const void *payload, uint32_t len)
{
	struct maia_eth_hdr eth;
	uint8_t *p = buf;

	memcpy(eth.dst, dst_mac, MAIA_ETH_ALEN);
	memcpy(eth.src, src_mac, MAIA_ETH_ALEN);
	eth.ethertype[0] = (uint8_t)(MAIA_FABRIC_ETHERTYPE >> 8);
	eth.ethertype[1] = (uint8_t)MAIA_FABRIC_ETHERTYPE;
	memcpy(p, &eth, sizeof(eth));
	memcpy(p + MAIA_ETH_HLEN, hdr, sizeof(*hdr));
	/* The payload may already be in place (fw_link_send_owned()). */
	if (len && payload != p + MAIA_FABRIC_MIN_FRAME)
		memcpy(p + MAIA_FABRIC_MIN_FRAME, payload, len);
	return MAIA_FABRIC_MIN_FRAME + (size_t)len;
}

size_t fw_fabric_build_crc(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
			   const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
			   const void *payload, uint32_t len, uint32_t payload_crc)
{
	hdr->payload_len = len;
	hdr->crc = crc_known_payload(hdr, payload_crc, len);
	return build(buf, src_mac, dst_mac, hdr, payload, len);
}

size_t fw_fabric_build_unsealed(void *buf, const uint8_t src_mac[MAIA_ETH_ALEN],
				const uint8_t dst_mac[MAIA_ETH_ALEN], struct maia_fabric_hdr *hdr,
				const void *payload, uint32_t len)
{
	hdr->payload_len = len;
	hdr->crc = 0;
	return build(buf, src_mac, dst_mac, hdr, payload, len);
}

void fw_fabric_seal(void *frame, size_t len)
{
	uint8_t *p = frame;
	struct maia_fabric_hdr h;

	if (len < MAIA_FABRIC_MIN_FRAME)
		return;
	memcpy(&h, p + MAIA_ETH_HLEN, sizeof(h));
	h.crc = fw_fabric_crc(&h, p + MAIA_FABRIC_MIN_FRAME,
			      (uint32_t)(len - MAIA_FABRIC_MIN_FRAME));
	memcpy(p + MAIA_ETH_HLEN + offsetof(struct maia_fabric_hdr, crc), &h.crc, sizeof(h.crc));
}

static int drop(enum maia_fabric_drop *reason, enum maia_fabric_drop why)
{
	*reason = why;
	return -1;
}

int fw_fabric_parse(const void *frame, size_t len, struct fw_fabric_frame *out,
		    enum maia_fabric_drop *reason)
{
	return fw_fabric_parse_ext(frame, len, out, reason, true);
}

int fw_fabric_parse_ext(const void *frame, size_t len, struct fw_fabric_frame *out,
			enum maia_fabric_drop *reason, bool check_crc)
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
	if (check_crc && fw_fabric_crc(h, out->payload, h->payload_len) != h->crc)
		return drop(reason, MAIA_FABRIC_DROP_CRC);
	switch (h->type) {
	case MAIA_FABRIC_HELLO:
	case MAIA_FABRIC_ACK:
	case MAIA_FABRIC_KEEPALIVE:
	case MAIA_FABRIC_NAK:
		if (h->payload_len)
			return drop(reason, MAIA_FABRIC_DROP_LENGTH);
		break;
	case MAIA_FABRIC_DATA:
		break;
	default:
		return drop(reason, MAIA_FABRIC_DROP_TYPE);
	}
	if (h->src_port >= MAIA_FABRIC_MAX_PORTS)
		return drop(reason, MAIA_FABRIC_DROP_PORT);
	if (!h->epoch)
		return drop(reason, MAIA_FABRIC_DROP_STALE);
	return 0;
}
