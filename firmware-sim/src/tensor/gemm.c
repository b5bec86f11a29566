// SPDX-License-Identifier: MIT
/*
 * GEMM: C = act(alpha * op(A) * op(B) + beta * C + bias), strided-batched
 * (MAIA_OP_GEMM) and pointer-array batched (MAIA_OP_GEMM_BATCHED).
 *
 * Work split: C is cut into mrange x nb blocks; each block is one task, run
 * by one tile. A tile streams K in kc slices: it copies the kc x nb slice of
 * op(B) from the job's memory into its SRAM, converting to FP32 (row-major,
 * or in nr-column panels when many A sub-blocks will reuse it), then, for
 * each mb-row sub-block of its rows, decodes the mb x kc slice of op(A)
 * row-major into SRAM and runs the micro-kernel over it. The FP32 C block
 * stays in SRAM across the K slices until the epilogue (alpha, beta, bias,
 * activation, conversion) writes it out; a plain FP32 result that maps is
 * instead accumulated in place, so a task's rows are not bounded by the C
 * block's SRAM and B is packed fewer times. Block sizes are chosen so that
 * the buffers fit the tile's SRAM share; the B slice and A sub-block are
 * also the host's L2 cache blocks.
 *
 * A BF16 kernel (both operands exact in BF16: BF16 and the MX formats)
 * takes B, and A, as BF16 pairs converted from the FP32 panels once per
 * slice and sub-block; the AMX kernel takes A as BF16 rows, converted
 * straight from the decoded rows by its pack_a.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "maia/hw/queue.h"
#include "te.h"

#define MAX_BATCH_PTRS		65536u

struct gemm_op {
	const struct fw_gemm_kernel *kern;
	struct fw_tview a, b, c, bias;
	bool trans_a, trans_b, has_bias, saturate;
	float alpha, beta;
	unsigned int act;
	uint64_t batch, m, n, k;
	/* op(A)(i, k) is at a_off + i * a_rs + k * a_cs; same for B and C */
	uint64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
	uint64_t a_bs, b_bs, c_bs;	/* batch strides (strided mode) */
	uint64_t *ptrs;			/* batched mode: a, b, c pointers per batch */
	uint64_t mb;			/* rows of A packed at once */
	uint64_t mrange;		/* rows of C per task, a multiple of mr */
	uint64_t nb, kc, mblocks, nblocks;
	uint64_t nsub;			/* columns of a B slice, nb or less (a_whole) */
	bool a_whole;			/* A packed once per K slice for all of a task's rows */
	uint64_t crows;			/* rows of the SRAM C block, a multiple of mb */
	bool stage_a, stage_b;		/* column-major operand: read by columns */
	bool direct;			/* the kernel may write C in place (direct_c()) */
};

static uint64_t round_up(uint64_t x, uint64_t g)
{
	return (x + g - 1) / g * g;
}

static uint64_t div_up(uint64_t x, uint64_t g)
{
	return (x + g - 1) / g;
}

/*
 * Operand rows are short (a few hundred elements) and far apart, which the
 * host's prefetchers follow poorly: each load first starts fetching the row
 * ROWS_AHEAD further on (rows r of n elements at base + r * rs, contiguous).
 * Roughly doubles the decode rate of a B slice from memory.
 */
#define ROWS_AHEAD	4

static void prefetch_rows(struct fw_io *io, const struct fw_tview *t, uint64_t base,
			  uint64_t rs, uint64_t first, uint64_t end, uint64_t limit, uint64_t n)
{
	for (uint64_t r = first; r < end && r < limit; r++)
		fw_io_prefetch(io, t, base + r * rs, n);
}

/*
 * Load rows r0..r0+nr-1, columns c0..c0+nc-1 of the 2D view (row stride rs,
 * column stride cs) into dst (nr x nc, row-major, leading dim ld), reading
 * along whichever direction is contiguous in memory.
 */
static int load_2d(struct fw_io *io, const struct fw_tview *t, uint64_t base,
		   uint64_t rs, uint64_t cs, uint64_t r0, uint64_t nr, uint64_t c0,
		   uint64_t nc, float *dst, uint64_t ld, float *tmp)
{
	uint64_t i, j;
	int st;

	if (cs == 1 || rs != 1 || nr == 1) {
		if (cs == 1)
			prefetch_rows(io, t, base + c0, rs, r0 + 1, r0 + 1 + ROWS_AHEAD, r0 + nr, nc);
		for (i = 0; i < nr; i++) {
			if (cs == 1)
				prefetch_rows(io, t, base + c0, rs, r0 + i + 1 + ROWS_AHEAD,
					      r0 + i + 2 + ROWS_AHEAD, r0 + nr, nc);
			st = fw_io_load(io, t, base + (r0 + i) * rs + c0 * cs, nc, cs, dst + i * ld);
			if (st)
				return st;
		}
		return MAIA_STATUS_OK;
	}
	/* column-major in memory: read columns, transpose into dst */
	prefetch_rows(io, t, base + r0, cs, c0 + 1, c0 + 1 + ROWS_AHEAD, c0 + nc, nr);
	for (j = 0; j < nc; j++) {
		prefetch_rows(io, t, base + r0, cs, c0 + j + 1 + ROWS_AHEAD, c0 + j + 2 + ROWS_AHEAD,
			      c0 + nc, nr);
		st = fw_io_load(io, t, base + r0 + (c0 + j) * cs, nr, 1, tmp);
		if (st)
			return st;
		for (i = 0; i < nr; i++)
			dst[i * ld + j] = tmp[i];
	}
	return MAIA_STATUS_OK;
}

/* Element offset of op(X)(r, c) in a 2D view. */
#define AT(base, rs, cs, r, c)	((base) + (r) * (rs) + (c) * (cs))

/*
 * The elements (*pe) and scales (*ps) of n contiguous elements (whole
 * blocks) of a block-format view from element offset off, in place in
 * device memory; false when they do not map as two ranges.
 */
static bool mx_map(struct fw_io *io, const struct fw_tview *t, uint64_t off, uint64_t n,
		   const uint8_t **pe, const uint8_t **ps)
{
	unsigned int bb = maia_dtype_block_bytes(t->dtype);
	uint64_t first = off / t->block, nb = n / t->block;
	const void *e = NULL, *s = NULL;
	size_t ge = 0, gs = 0;

	if (t->block <= 1 || off % t->block || n % t->block || !nb || !io->mem->map ||
	    io->mem->map(io->mem->opaque, t->addr + first * bb, nb * bb, &e, &ge) || !e ||
	    ge < nb * bb ||
	    io->mem->map(io->mem->opaque, t->scale_addr + first, nb, &s, &gs) || !s || gs < nb)
		return false;
	*pe = e;
	*ps = s;
	return true;
}

/*
 * n contiguous elements (whole blocks) of a block-format view from element
 * offset off, decoded straight from device memory into groups of g floats,
 * gstride apart (fw_mx_decode_groups(): a kernel's panels), when elements
 * and scales map; false when not (then nothing is read or counted, and the
 * caller loads them through fw_io_load(), which also reports any fault).
 * Saves the row buffer and a copy per group: decoding MXFP8 B into panels
 * that way took 2.5 times as long as BF16 (256x4096x1024, one thread).
 */
static bool mx_load_groups(struct fw_io *io, const struct fw_tview *t, uint64_t off, uint64_t n,
			   unsigned int g, size_t gstride, float *dst)
{
	const uint8_t *pe, *ps;

	if (!mx_map(io, t, off, n, &pe, &ps))
		return false;
	fw_mx_decode_groups(t->dtype, pe, ps, n / t->block, g, gstride, dst);
	io->bytes_read += n / t->block * (maia_dtype_block_bytes(t->dtype) + 1u);
	return true;
}

/*
 * When at most L2_HINT_ROWS rows of C reuse a B slice (skinny shapes), the
 * copies of A and B from memory are a large part of the work, and the FP32
 * packers fetch device memory into L2 ahead of them (__builtin_prefetch
 * locality 2: prefetcht1): B's rows B_ROWS_AHEAD_L2 ahead, A's next panel,
 * and the next B slice during the kernels (next_b_slice()). On AMD Zen 4
 * (1 MiB L2, one thread, engine / sgemm, medians of three), 32x4096x4096:
 * B's rows copied with no hints 0.76, T0 hints 0.78, T1 hints 0.92;
 * 256x4096x1024 +0.02-0.04 with B's panels and A's next panel fetched the
 * same way. T0 hints, which fill L1, stalled on its fill buffers (below).
 * With more rows (2048^3, 4096x4096x256) the same hints were within the
 * noise, perhaps 1 % slower, so they are left out there.
 */
#define L2_HINT_ROWS	512
#define B_ROWS_AHEAD_L2	8
#define prefetch_l2(p)	__builtin_prefetch((p), 0, 2)

static void prefetch_l2_range(const void *p, size_t len)
{
	for (size_t o = 0; o < len; o += 64)
		prefetch_l2((const char *)p + o);
}

/*
 * An FP32 B slice whose rows k0..k0+kc-1 (columns n0..n0+nn-1, unit column
 * stride) map as one range, copied straight from device memory into the
 * kernel's layout (rows ldb apart, or nr-column panels), each row fetched
 * into L2 B_ROWS_AHEAD_L2 rows before it is copied. False (nothing read)
 * when it does not map; pack_b_slice() then goes through fw_io_load().
 */
static bool pack_b_mapped(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *b,
			  uint64_t base, uint64_t k0, uint64_t kc, uint64_t n0, uint64_t nn,
			  float *bp, uint64_t ldb, bool panels)
{
	uint64_t nr = g->kern->nr, np = round_up(nn, nr), rs = g->b_rs;
	size_t span = ((kc - 1) * rs + nn) * sizeof(float), got = 0;
	const void *p = NULL;
	const float *src;

	if (b->dtype != MAIA_DTYPE_FP32 || g->b_cs != 1 || g->stage_b || !io->mem->map ||
	    io->mem->map(io->mem->opaque, b->addr + AT(base, rs, 1, k0, n0) * sizeof(float),
			 span, &p, &got) || !p || got < span)
		return false;
	src = p;
	for (uint64_t k = 0; k < B_ROWS_AHEAD_L2 && k < kc; k++)
		prefetch_l2_range(src + k * rs, nn * sizeof(float));
	for (uint64_t k = 0; k < kc; k++) {
		const float *row = src + k * rs;
		uint64_t q = 0;

		if (k + B_ROWS_AHEAD_L2 < kc)
			prefetch_l2_range(row + B_ROWS_AHEAD_L2 * rs, nn * sizeof(float));
		if (!panels) {
			memcpy(bp + k * ldb, row, nn * sizeof(float));
			if (np > nn)
				memset(bp + k * ldb + nn, 0, (np - nn) * sizeof(float));
			continue;
		}
		/* whole panels as inlined 64- or 128-byte copies, then the zero-padded last */
		if (nr == 32)
			for (; q + 32 <= nn; q += 32)
				memcpy(bp + q * kc + k * 32, row + q, 32 * sizeof(float));
		else if (nr == 16)
			for (; q + 16 <= nn; q += 16)
				memcpy(bp + q * kc + k * 16, row + q, 16 * sizeof(float));
		for (; q < np; q += nr)
			for (uint64_t c = 0; c < nr; c++)
				bp[q * kc + k * nr + c] = q + c < nn ? row[q + c] : 0.0f;
	}
	io->bytes_read += kc * nn * sizeof(float);
	return true;
}

/*
 * Rows ahead of the decode whose scales pack_b_mx_mapped() and
 * pack_b_pairs_mx() fetch into L2: a row's scales are a line of their own
 * (1/32 of its elements, rows a scale row apart), outside next_b_slice()'s
 * stream, and came from memory when the decode reached them (the decode's
 * loads waited on them).
 */
#define MX_SCALES_AHEAD	32

/*
 * An MX B slice (unit column stride) whose elements and scales each map as
 * one range, decoded row by row straight into the kernel's layout (rows ldb
 * apart, zero-padded to np, or whole nr-column panels), its elements fetched
 * ROWS_AHEAD rows ahead, its scales MX_SCALES_AHEAD rows ahead into L2, as
 * pack_b_pairs_mx() does. The slice is mapped once: per row, one decoder
 * call and no fw_io_load() / fw_io_prefetch() (each mapped the row again).
 * False, nothing read or written, when it does not map or (panels) nn is
 * not a multiple of nr; pack_b_slice() then takes the general path.
 */
static bool pack_b_mx_mapped(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *b,
			     uint64_t base, uint64_t k0, uint64_t kc, uint64_t n0, uint64_t nn,
			     float *bp, uint64_t ldb, bool panels)
{
	unsigned int nr = g->kern->nr, bb = maia_dtype_block_bytes(b->dtype), bs = b->block;
	uint64_t np = round_up(nn, nr), ers = g->b_rs / bs * bb, srs = g->b_rs / bs;
	uint64_t len = nn / bs * bb;	/* a row's element bytes */
	const uint8_t *e, *s;

	if (bs <= 1 || g->b_cs != 1 || g->stage_b || g->b_rs % bs || (panels && np != nn) ||
	    !mx_map(io, b, AT(base, g->b_rs, 1, k0, n0), (kc - 1) * g->b_rs + nn, &e, &s))
		return false;
	for (uint64_t k = 0; k < kc && k < MX_SCALES_AHEAD; k++)
		prefetch_l2(s + k * srs);
	for (uint64_t k = 0; k < kc && k < ROWS_AHEAD; k++)
		for (uint64_t o = 0; o < len; o += 64)
			__builtin_prefetch(e + k * ers + o);
	for (uint64_t k = 0; k < kc; k++) {
		if (k + ROWS_AHEAD < kc)
			for (uint64_t o = 0; o < len; o += 64)
				__builtin_prefetch(e + (k + ROWS_AHEAD) * ers + o);
		if (k + MX_SCALES_AHEAD < kc)
			prefetch_l2(s + (k + MX_SCALES_AHEAD) * srs);
		if (panels) {
			fw_mx_decode_groups(b->dtype, e + k * ers, s + k * srs, nn / bs, nr, kc * nr,
					    bp + k * nr);
			continue;
		}
		fw_mx_decode(b->dtype, e + k * ers, s + k * srs, nn / bs, bp + k * ldb);
		if (np > nn)
			memset(bp + k * ldb + nn, 0, (np - nn) * sizeof(float));
	}
	io->bytes_read += kc * (len + nn / bs);
	return true;
}

/*
 * Load op(B) rows k0..k0+kc-1, columns n0..n0+nn-1 into SRAM, zero-padded to
 * a multiple of nr columns, in one of two layouts the kernels take:
 * - rows (panels = false): row-major with row stride ldb; each row is decoded
 *   straight into place, and a column-major B is read by columns;
 * - panels: nr-column panels of kc x nr (ldb = nr), one more copy per
 *   element but a sequential walk for the kernel. Worth it when many A
 *   sub-blocks reuse the slice.
 */
static int pack_b_slice(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *b,
			uint64_t base, uint64_t k0, uint64_t kc, uint64_t n0, uint64_t nn,
			float *bp, uint64_t ldb, bool panels, bool l2, float *row)
{
	unsigned int nr = g->kern->nr;
	uint64_t np = round_up(nn, nr), k, p;
	/*
	 * FP32 rows that map go through pack_b_mapped() (L2 hints) when few
	 * rows of C reuse the slice (l2: L2_HINT_ROWS or fewer). Otherwise
	 * row hints, but not for FP32 rows copied as they are (few rows of C,
	 * B read once from memory): there the host's prefetchers follow the
	 * copy, and these hints (T0) stalled on fill buffers (Intel Xeon, one
	 * thread, 32x4096x4096 FP32, engine / sgemm, medians of six pairs:
	 * avx2 0.91 -> 0.92, avx512 1.205 -> 1.227).
	 */
	bool hints = g->b_cs == 1 && (panels || b->dtype != MAIA_DTYPE_FP32);
	int st;

	if (g->stage_b) {
		st = load_2d(io, b, base, g->b_rs, g->b_cs, k0, kc, n0, nn, bp, ldb, row);
		for (k = 0; k < kc && np > nn; k++)
			memset(bp + k * ldb + nn, 0, (np - nn) * sizeof(float));
		return st;
	}
	if (l2 && pack_b_mapped(io, g, b, base, k0, kc, n0, nn, bp, ldb, panels))
		return MAIA_STATUS_OK;
	if (pack_b_mx_mapped(io, g, b, base, k0, kc, n0, nn, bp, ldb, panels))
		return MAIA_STATUS_OK;
	if (hints)
		prefetch_rows(io, b, base + n0, g->b_rs, k0 + 1, k0 + 1 + ROWS_AHEAD, k0 + kc, nn);
	for (k = 0; k < kc; k++) {
		uint64_t off = AT(base, g->b_rs, g->b_cs, k0 + k, n0);
		const float *tail = row;	/* elements p.. of the row, for the last panel */

		if (hints)
			prefetch_rows(io, b, base + n0, g->b_rs, k0 + k + 1 + ROWS_AHEAD,
				      k0 + k + 2 + ROWS_AHEAD, k0 + kc, nn);
		p = nn / nr * nr;
		if (!panels) {
			st = fw_io_load(io, b, off, nn, g->b_cs, bp + k * ldb);
			if (np > nn)
				memset(bp + k * ldb + nn, 0, (np - nn) * sizeof(float));
			p = nn;
		} else if (g->b_cs == 1) {	/* whole panels decoded into place */
			if (p == nn && mx_load_groups(io, b, off, nn, nr, kc * nr, bp + k * nr))
				st = MAIA_STATUS_OK;
			else
				st = fw_io_load_groups(io, b, off, nn / nr, nr, kc * nr, bp + k * nr,
						       row);
			if (!st && p < nn)
				st = fw_io_load(io, b, off + p, nn - p, 1, row);
		} else {
			st = fw_io_load(io, b, off, nn, g->b_cs, row);
			for (uint64_t q = 0; !st && q < p; q += nr)
				memcpy(bp + q * kc + k * nr, row + q, nr * sizeof(float));
			tail = row + p;
		}
		if (st)
			return st;
		for (uint64_t c = 0; p < nn && c < nr; c++)	/* zero-padded last panel */
			bp[p * kc + k * nr + c] = p + c < nn ? tail[c] : 0.0f;
	}
	return MAIA_STATUS_OK;
}

/*
 * pack_b_pairs() of an MX slice whose elements and scales each map as one
 * range: two rows at a time decoded straight into the pairs
 * (fw_gemm_mx_pair_row()), their elements fetched ROWS_AHEAD rows ahead,
 * their scales MX_SCALES_AHEAD rows ahead into L2. False, nothing read or
 * written, when the slice does not map or there is no such decoder.
 */
static bool pack_b_pairs_mx(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *b,
			    uint64_t base, uint64_t k0, uint64_t kc, uint64_t n0, uint64_t nn,
			    uint16_t *bp2, uint64_t kqp)
{
	unsigned int nr = g->kern->nr, bb = maia_dtype_block_bytes(b->dtype), bs = b->block;
	uint64_t np = round_up(nn, nr), ers = g->b_rs / bs * bb, srs = g->b_rs / bs;
	uint64_t len = nn / bs * bb;	/* a row's element bytes */
	const uint8_t *e, *s;

	if (bs <= 1 || g->b_rs % bs ||
	    !mx_map(io, b, AT(base, g->b_rs, 1, k0, n0), (kc - 1) * g->b_rs + nn, &e, &s))
		return false;
	for (uint64_t k = 0; k < kc && k < MX_SCALES_AHEAD; k++)
		prefetch_l2(s + k * srs);
	for (uint64_t k = 0; k < kc; k += 2) {
		const uint8_t *e1 = k + 1 < kc ? e + (k + 1) * ers : NULL;

		for (uint64_t r = k + ROWS_AHEAD; r < k + 2 + ROWS_AHEAD && r < kc; r++)
			for (uint64_t o = 0; o < len; o += 64)
				__builtin_prefetch(e + r * ers + o);
		for (uint64_t r = k + MX_SCALES_AHEAD; r < k + 2 + MX_SCALES_AHEAD && r < kc; r++)
			prefetch_l2(s + r * srs);
		if (!fw_gemm_mx_pair_row(b->dtype, e + k * ers, s + k * srs, e1,
					 e1 ? s + (k + 1) * srs : NULL, nn, np, nr, kqp * nr,
					 bp2 + k * nr))
			return false;	/* the dtype, n or CPU: at k = 0 */
	}
	io->bytes_read += kc * (len + nn / bs);
	return true;
}

/*
 * A BF16 kernel's B slice (rows k0..k0+kc-1, columns n0..n0+nn-1 of a B
 * read by rows) straight into its pair panels (te.h: nr columns, kq k
 * each), two rows per k pair: BF16 rows interleaved from device memory
 * where both map, MX rows that map decoded straight into the pairs
 * (fw_gemm_mx_pair_row()), other rows decoded into two FP32 rows of tmp
 * (2 round_up(nn, nr) floats, in L1) and truncated. Saves the FP32 slice,
 * twice the pairs' size in L2, and a pass over it. Returns -1 for a
 * column-major B (the caller converts FP32 panels).
 */
static int pack_b_pairs(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *b,
			uint64_t base, uint64_t k0, uint64_t kc, uint64_t n0, uint64_t nn,
			uint16_t *bp2, uint64_t kq, uint64_t kqp, float *tmp)
{
	unsigned int nr = g->kern->nr;
	uint64_t np = round_up(nn, nr), k;
	size_t got;
	int st;

	if (g->stage_b || g->b_cs != 1)
		return -1;
	if (pack_b_pairs_mx(io, g, b, base, k0, kc, n0, nn, bp2, kqp))
		goto pad;
	prefetch_rows(io, b, base + n0, g->b_rs, k0 + 1, k0 + 1 + ROWS_AHEAD, k0 + kc, nn);
	for (k = 0; k < kc; k += 2) {
		const void *r[2] = { NULL, NULL };
		const uint8_t *e[2] = { NULL, NULL }, *s[2] = { NULL, NULL };
		bool f32 = b->dtype != MAIA_DTYPE_BF16, mx = b->block > 1;

		for (unsigned int h = 0; h < 2 && k + h < kc && mx; h++)
			mx = mx_map(io, b, AT(base, g->b_rs, 1, k0 + k + h, n0), nn, &e[h], &s[h]);
		if (mx && fw_gemm_mx_pair_row(b->dtype, e[0], s[0], e[1], s[1], nn, np, nr,
					      kqp * nr, bp2 + k * nr)) {
			for (unsigned int h = 0; h < 2 && k + h < kc; h++)
				prefetch_rows(io, b, base + n0, g->b_rs, k0 + k + h + 1 + ROWS_AHEAD,
					      k0 + k + h + 2 + ROWS_AHEAD, k0 + kc, nn);
			io->bytes_read += (k + 1 < kc ? 2 : 1) * nn / b->block *
					  (maia_dtype_block_bytes(b->dtype) + 1u);
			continue;
		}
		for (unsigned int h = 0; h < 2 && k + h < kc && !f32; h++) {
			got = 0;
			if (!io->mem->map ||
			    io->mem->map(io->mem->opaque,
					 b->addr + AT(base, g->b_rs, 1, k0 + k + h, n0) * 2, nn * 2,
					 &r[h], &got) || !r[h] || got < nn * 2)
				f32 = true;
		}
		for (unsigned int h = 0; h < 2 && k + h < kc; h++) {
			prefetch_rows(io, b, base + n0, g->b_rs, k0 + k + h + 1 + ROWS_AHEAD,
				      k0 + k + h + 2 + ROWS_AHEAD, k0 + kc, nn);
			if (!f32) {
				io->bytes_read += nn * 2;
				continue;
			}
			r[h] = tmp + h * np;
			st = fw_io_load(io, b, AT(base, g->b_rs, 1, k0 + k + h, n0), nn, 1,
					tmp + h * np);
			if (st)
				return st;
		}
		fw_gemm_pair_row(r[0], r[1], f32, nn, np, nr, kqp * nr, bp2 + k * nr);
	}
pad:
	for (uint64_t j = 0; j < np && kq > round_up(kc, 2); j += nr)	/* k past kc (AMX) */
		memset(bp2 + j * kqp + round_up(kc, 2) * nr, 0,
		       (kq - round_up(kc, 2)) * nr * sizeof(uint16_t));
	return MAIA_STATUS_OK;
}

/*
 * The mr FP32 rows of A from row m0 (rows left of the sub-block), columns
 * k0..k0+kc-1, as a pointer into device memory when they map as one range
 * (row stride a_rs), else NULL. Saves copying A into tmp before packing.
 */
static const float *map_a_rows(struct fw_io *io, const struct gemm_op *g,
			       const struct fw_tview *a, uint64_t base, uint64_t m0, uint64_t left,
			       uint64_t k0, uint64_t kc)
{
	unsigned int mr = g->kern->mr;
	size_t span = ((mr - 1) * g->a_rs + kc) * sizeof(float), got = 0;
	const void *p = NULL;

	if (a->dtype != MAIA_DTYPE_FP32 || g->a_cs != 1 || g->kern->a_rows || left < mr ||
	    !io->mem->map ||
	    io->mem->map(io->mem->opaque, a->addr + AT(base, g->a_rs, 1, m0, k0) * sizeof(float),
			 span, &p, &got) || !p || got < span)
		return NULL;
	return p;
}

/*
 * mr rows of a block-format A from row m0 (of the sub-block's rows up to
 * end), columns k0..k0+kc-1, decoded straight into a 16-k block kernel's
 * panel (a_kblock: row i's 16-float pieces at i * 16 of each block), each
 * row through mx_load_groups() or, where it does not map, tmp and a copy
 * per piece. Returns MAIA_STATUS_OK, a fault, or -1: not this kernel or
 * these rows (the caller packs them through tmp).
 */
static int pack_a_mx(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *a,
		     uint64_t base, uint64_t m0, uint64_t end, uint64_t k0, uint64_t kc,
		     float *panel, float *tmp)
{
	const struct fw_gemm_kernel *kn = g->kern;
	unsigned int mr = kn->mr, kb = kn->a_kblock;
	int st;

	if (a->block <= 1 || g->a_cs != 1 || !kb || kn->a_rows || end - m0 < mr || kc % kb)
		return -1;
	for (unsigned int i = 0; i < mr; i++) {
		uint64_t off = AT(base, g->a_rs, 1, m0 + i, k0);

		prefetch_rows(io, a, base + k0, g->a_rs, m0 + i + 1 + ROWS_AHEAD,
			      m0 + i + 2 + ROWS_AHEAD, end, kc);
		if (mx_load_groups(io, a, off, kc, kb, (size_t)kb * mr, panel + i * kb))
			continue;
		st = fw_io_load(io, a, off, kc, 1, tmp);
		if (st)
			return st;
		for (uint64_t k = 0; k < kc; k += kb)
			memcpy(panel + k * mr + i * kb, tmp + k, kb * sizeof(float));
	}
	return MAIA_STATUS_OK;
}

/*
 * Load op(A) rows m0..m0+mm-1, columns k0..k0+kc-1 as the kernels' A panels:
 * for each group of mr rows, the kernel's panel of kc columns (te.h: mr
 * values per column, or blocks of a_kblock columns), so the kernel reads
 * one sequential stream; rows past mm are zero. A column-major A is read
 * by columns, each split over the panels; otherwise mr rows at a time are
 * decoded into tmp (mr x kc) and packed by the kernel's pack_a.
 */
static int pack_a_slice(struct fw_io *io, const struct gemm_op *g, const struct fw_tview *a,
			uint64_t base, uint64_t m0, uint64_t mm, uint64_t k0, uint64_t kc,
			float *ap, bool l2, float *tmp)
{
	unsigned int mr = g->kern->mr;
	uint64_t mp = round_up(mm, mr), r, k, i;
	int st;

	if (g->stage_a) {
		prefetch_rows(io, a, base + m0, g->a_cs, k0 + 1, k0 + 1 + ROWS_AHEAD, k0 + kc, mm);
		for (k = 0; k < kc; k++) {
			prefetch_rows(io, a, base + m0, g->a_cs, k0 + k + 1 + ROWS_AHEAD,
				      k0 + k + 2 + ROWS_AHEAD, k0 + kc, mm);
			st = fw_io_load(io, a, base + m0 + (k0 + k) * g->a_cs, mm, 1, tmp);
			if (st)
				return st;
			memset(tmp + mm, 0, (mp - mm) * sizeof(float));
			for (r = 0; r < mp && !g->kern->a_kblock; r += mr)
				memcpy(ap + r * kc + k * mr, tmp + r, mr * sizeof(float));
			for (r = 0; r < mp && g->kern->a_kblock; r += mr)
				for (i = 0; i < mr; i++)
					ap[r * kc + fw_gemm_a_at(g->kern, kc, k, i)] = tmp[r + i];
		}
		return MAIA_STATUS_OK;
	}
	if (g->a_cs == 1)
		prefetch_rows(io, a, base + k0, g->a_rs, m0 + 1, m0 + 1 + ROWS_AHEAD, m0 + mm, kc);
	for (r = 0; r < mp; r += mr) {
		/* the AMX kernel's A is BF16 rows of kc padded to its kpair */
		float *panel = g->kern->a_rows ?
			(float *)((uint16_t *)ap + r * round_up(kc, g->kern->kpair)) : ap + r * kc;
		const float *rows = map_a_rows(io, g, a, base, m0 + r, mm - r, k0, kc);

		/*
		 * Packed straight from device memory, without L1 hints: the
		 * packer's mr row streams are what the host's prefetchers
		 * follow, and a T0 hint per row stalled on fill buffers instead
		 * (Intel Xeon, one thread, FP32: 512^3 0.947 -> 0.971 of sgemm,
		 * 4096^3 0.932 -> 0.959, medians of five). With l2, the next
		 * panel's rows are fetched into L2 meanwhile (L2_HINT_ROWS).
		 */
		if (rows) {
			const float *next = l2 && r + mr < mp ?
				map_a_rows(io, g, a, base, m0 + r + mr, mm - r - mr, k0, kc) : NULL;

			for (i = 0; next && i < mr; i++)
				prefetch_l2_range(next + i * g->a_rs, kc * sizeof(float));
			g->kern->pack_a(rows, g->a_rs, kc, mr, panel);
			io->bytes_read += (uint64_t)mr * kc * sizeof(float);
			continue;
		}
		st = pack_a_mx(io, g, a, base, m0 + r, m0 + mm, k0, kc, panel, tmp);
		if (st > 0)
			return st;
		if (!st)
			continue;
		for (i = 0; i < mr; i++) {
			if (r + i >= mm) {
				memset(tmp + i * kc, 0, kc * sizeof(float));
				continue;
			}
			if (g->a_cs == 1)
				prefetch_rows(io, a, base + k0, g->a_rs, m0 + r + i + 1 + ROWS_AHEAD,
					      m0 + r + i + 2 + ROWS_AHEAD, m0 + mm, kc);
			st = fw_io_load(io, a, AT(base, g->a_rs, g->a_cs, m0 + r + i, k0), kc,
					  g->a_cs, tmp + i * kc);
			if (st)
				return st;
		}
		g->kern->pack_a(tmp, kc, kc, mr, panel);
	}
	return MAIA_STATUS_OK;
}

/*
 * A C tile cut by the block's edge (rows x cols of mr x nr valid), copied
 * between C (ld apart) and the kernel's tile t (nr apart): into t before the
 * kernel (when it accumulates; the rest of t is scratch), back after it.
 */
static void edge_tile(float *c, uint64_t ld, float *t, const struct fw_gemm_kernel *kn,
		      uint64_t rows, uint64_t cols, bool copy, bool back)
{
	if (rows > kn->mr)
		rows = kn->mr;
	if (cols > kn->nr)
		cols = kn->nr;
	for (uint64_t r = 0; copy && r < rows; r++)
		memcpy(back ? c + r * ld : t + r * kn->nr, back ? t + r * kn->nr : c + r * ld,
		       cols * sizeof(float));
}

/*
 * The C block (mbb x nbb at element offset off) as a pointer the kernel can
 * write FP32 tiles to, or NULL: then the block is accumulated in SRAM and
 * written out by the epilogue. In place saves that copy (64 MiB of C for
 * 4096x4096x256) and keeps the C block out of the host's L2, which the
 * packed slices need; it takes a plain result (g->direct) and a block that
 * maps as one 64-byte aligned range.
 */
static float *direct_c(const struct gemm_op *g, struct fw_io *io, const struct fw_tview *c,
		       uint64_t off, uint64_t mbb, uint64_t nbb)
{
	size_t span = ((mbb - 1) * g->c_rs + nbb) * sizeof(float), got = 0;
	void *p = NULL;

	if (!g->direct || !io->mem->map_write ||
	    io->mem->map_write(io->mem->opaque, c->addr + off * sizeof(float), span, &p, &got) ||
	    !p || got < span || (uintptr_t)p % 64)
		return NULL;
	return p;
}

/* One K slice's packed B, as the kernels take it (gemm_block()). */
struct b_slice {
	const float *bp;		/* FP32: panels of kcb x nr, or rows ldb apart */
	const uint16_t *bp2;		/* BF16 kernels: the pairs, kqp per nr columns */
	uint64_t ldb, kcb, kqb;
	uint64_t kqp;			/* kqb + 2: B's pair panels 128 bytes off a 4 KiB multiple */
	bool panels;
	bool acc;			/* add to C (not the first K slice) */
	bool in_place;			/* C is the job's memory: cut tiles go through tmp */
	float *tmp;			/* a scratch tile */
	struct next_b *pf;		/* the next B slice's rows to fetch meanwhile, or NULL */
};

/*
 * The next B slice's source rows, fetched into L2 a few lines per kernel
 * call while the kernels run on this slice, when at most L2_HINT_ROWS rows
 * of C reuse it: then its copy from memory is a large part of the work
 * (about 8 % of 256x4096x1024 on one thread). AMD Zen 4, one thread, FP32,
 * engine / sgemm: 32x4096x4096 avx512 0.914 -> 0.943, avx2 0.856 -> 0.900;
 * 256x4096x1024 avx512 0.956 -> 0.965, avx2 0.953 -> 0.979 (medians of
 * two or three). The FP32 kernels fetch their share inside their k loop,
 * one line per k (fn_pf, fn_rows2): a burst of up to 171 lines after each
 * call (avx512, 32x4096x4096) waited for fill slots, 11 % of the time.
 * Spread that way (medians of five, alternated): 32x4096x4096 avx512
 * 0.984 -> 1.098, avx2 0.925 -> 0.996; 256x4096x1024 avx512 0.974 ->
 * 0.982, avx2 0.985 -> 0.973 (noise: pair ratio 1.000).
 */
struct next_b {
	struct fw_gemm_pf at;		/* the next line to fetch (p: its row) */
	uint64_t left;			/* lines not yet handed out */
	uint64_t quota;			/* lines per kernel call */
};

/* The lines of the next calls kernel calls, for the kernel to fetch (or NULL). */
static struct fw_gemm_pf *next_b_give(struct next_b *pf, unsigned int calls)
{
	if (!pf)
		return NULL;
	pf->at.n = pf->left < calls * pf->quota ? pf->left : calls * pf->quota;
	pf->left -= pf->at.n;
	return &pf->at;
}

/* After the call: the lines the kernel left (BF16 kernels: all of them). */
static void next_b_rest(struct next_b *pf)
{
	for (; pf && pf->at.n; pf->at.n--) {
		prefetch_l2(pf->at.p + pf->at.line * 64);
		if (++pf->at.line == pf->at.lines) {
			pf->at.line = 0;
			pf->at.p += pf->at.rs;
		}
	}
}

/*
 * Bytes from a view's start to element offset off (block formats: whole
 * blocks, their elements only: the scales are 1/32 of them and left to
 * the decode).
 */
static uint64_t view_bytes(const struct fw_tview *t, uint64_t off)
{
	return t->block > 1 ? off / t->block * maia_dtype_block_bytes(t->dtype) :
			      off * maia_dtype_size(t->dtype);
}

/*
 * Sets up *pf for the B slice after the one at (k0, cb) of a block of nbb
 * columns in slices of nsw, spread over calls kernel calls; NULL when
 * there is none or its rows do not map. Any dtype: the rows' bytes are
 * fetched, whether they are then copied, decoded or (BF16 kernels) put
 * into pairs. AMD Zen 4, one thread, 32x4096x4096 BF16, engine / sgemm,
 * two pairs: avx512bf16 1.254, 1.360 -> 1.672, 1.703; avx2 0.941, 0.976
 * -> 1.012, 1.000. MXFP8 and MXFP4 did not move: their decode is the cost.
 */
static struct next_b *next_b_slice(struct fw_io *io, const struct gemm_op *g,
				   const struct fw_tview *b, uint64_t base, uint64_t k0,
				   uint64_t cb, uint64_t nsw, uint64_t n0, uint64_t nbb,
				   uint64_t calls, struct next_b *pf)
{
	uint64_t k1 = k0, c1 = cb + nsw, kc, nn;
	size_t span, got = 0;
	const void *p = NULL;

	if (c1 >= nbb) {
		c1 = 0;
		k1 += g->kc;
	}
	if (k1 >= g->k || g->b_cs != 1 || g->stage_b || !io->mem->map || !calls)
		return NULL;
	kc = g->k - k1 < g->kc ? g->k - k1 : g->kc;
	nn = nbb - c1 < nsw ? nbb - c1 : nsw;
	span = view_bytes(b, (kc - 1) * g->b_rs + nn);
	if (io->mem->map(io->mem->opaque,
			 b->addr + view_bytes(b, AT(base, g->b_rs, 1, k1, n0 + c1)), span, &p,
			 &got) || !p || got < span)
		return NULL;
	*pf = (struct next_b){ .at = { .p = p, .rs = view_bytes(b, g->b_rs),
				       .lines = div_up(view_bytes(b, nn), 64) } };
	pf->left = pf->at.lines * kc;
	pf->quota = div_up(pf->left, calls);
	return pf;
}

/*
 * The C tiles of one A sub-block (mmp rows packed at as, or ap2; rows
 * valid of them from c on: left) against the slice's nn columns. One A
 * panel (mr x kc, in L1) against every B panel of the slice (from L2):
 * consecutive C tiles are then neighbours along C's rows, which the kernels
 * fetch at their start (gemm_kernels.c) and the host's prefetchers follow;
 * down a column they were a C row apart, each a miss (2048^3 FP32 3 %
 * faster this way).
 */
static void sub_block_tiles(const struct fw_gemm_kernel *kn, const struct b_slice *s,
			    const float *as, const uint16_t *ap2, float *c, uint64_t ldc,
			    uint64_t left, uint64_t mmp, uint64_t nn)
{
	uint64_t npp = round_up(nn, kn->nr), kcb = s->kcb;

	for (uint64_t i = 0; i < mmp; i += kn->mr) {
		/* the block's last rows, if fewer than mr: fn_rows if there is one */
		unsigned int rows = left - i < kn->mr ? (unsigned int)(left - i) : kn->mr;
		bool short_rows = rows < kn->mr && kn->fn_rows;

		for (uint64_t j = 0; j < npp; j += kn->nr) {
			float *ct = c + i * ldc + j;
			const float *bj = s->panels ? s->bp + j * kcb : s->bp + j;
			struct fw_gemm_pf *pf;
			size_t ldt = ldc;
			/* in place, a tile past the block's edge goes through tmp */
			bool edge = s->in_place &&
				    ((rows < kn->mr && !short_rows) || j + kn->nr > nn);

			/* few rows: two whole column tiles at once (fn_rows2) */
			if (short_rows && kn->fn_rows2 &&
			    j + 2 * kn->nr <= (s->in_place ? nn : npp)) {
				kn->fn_rows2(kcb, as + i * kcb, bj, s->ldb,
					     s->panels ? kcb * kn->nr : kn->nr, ct, ldc, s->acc,
					     rows, next_b_give(s->pf, 2));
				next_b_rest(s->pf);
				j += kn->nr;
				continue;
			}
			if (edge) {
				edge_tile(ct, ldc, s->tmp, kn, left - i, nn - j, s->acc, false);
				ct = s->tmp;
				ldt = kn->nr;
			}
			pf = next_b_give(s->pf, 1);
			if (kn->fn_pf)
				kn->fn_pf(kcb, as + i * kcb, bj, s->ldb, ct, ldt, s->acc, rows, pf);
			else if (kn->kpair && short_rows)
				kn->fn_rows(kcb, ap2 + i * s->kqb, s->bp2 + j * s->kqp, 2 * kn->nr,
					    ct, ldt, s->acc, rows);
			else if (kn->kpair)
				kn->fn(kcb, ap2 + i * s->kqb, s->bp2 + j * s->kqp, 2 * kn->nr, ct,
				       ldt, s->acc);
			else if (short_rows)
				kn->fn_rows(kcb, as + i * kcb, bj, s->ldb, ct, ldt, s->acc, rows);
			else
				kn->fn(kcb, as + i * kcb, bj, s->ldb, ct, ldt, s->acc);
			if (edge)
				edge_tile(c + i * ldc + j, ldc, s->tmp, kn, left - i, nn - j, true,
					  true);
			next_b_rest(s->pf);	/* what the kernel did not fetch */
		}
	}
}

/*
 * Rows m0..m0+mbb-1, columns n0..n0+nbb-1 of C: K in kc slices, each B
 * slice packed once for all the rows. C goes to cdst (in place, ldc floats
 * apart) or, when NULL, to the SRAM C block and out through the epilogue.
 */
static int gemm_block(const struct gemm_op *g, struct fw_worker *w, const struct fw_tview *a,
		      const struct fw_tview *b, const struct fw_tview *c, uint64_t a_off,
		      uint64_t b_off, uint64_t c_off, uint64_t m0, uint64_t mbb, uint64_t n0,
		      uint64_t nbb, float *cdst)
{
	const struct fw_gemm_kernel *kn = g->kern;
	bool whole = g->a_whole && cdst;	/* A packed once for column slices of nsub */
	uint64_t nsw = whole && g->nsub < nbb ? g->nsub : nbb;	/* columns of one B slice */
	uint64_t mp = round_up(mbb, kn->mr), np = round_up(nsw, kn->nr);
	uint64_t sub = round_up(g->mb, kn->mr), asz = whole ? mp : sub, cb, nn;
	uint64_t kq = kn->kpair ? round_up(g->kc, kn->kpair) : g->kc;	/* k padded */
	uint64_t k0, i, j, ms, ldc = cdst ? g->c_rs : np, ldb, big, cblock = cdst ? 0 : mp * np;
	float *ap, *bp, *cacc, *tmp, *bias;
	uint16_t *ap2 = NULL, *bp2 = NULL;	/* BF16 kernels: A and B in their format */
	struct next_b npf;
	bool l2 = mbb <= L2_HINT_ROWS;	/* few rows reuse a B slice: hints into L2 */
	bool panels;
	size_t need;
	int st;

	/*
	 * SRAM: the A sub-block (a_whole: all the rows' A slice), the B slice
	 * (rows padded by 16 floats so that the kernel's walk down a column
	 * does not hit a handful of cache sets), the C block (unless in place),
	 * and a column buffer.
	 */
	panels = !g->stage_b && mbb > 2 * g->mb;
	ldb = panels ? kn->nr : np + 16;
	big = np > sub ? np : sub;
	if (big < kn->mr * g->kc)
		big = kn->mr * g->kc;
	if (big < 2 * np)	/* pack_b_pairs()'s two rows */
		big = 2 * np;
	need = asz * g->kc + g->kc * (np + 16) + cblock + big + np + 4 * 16;
	if (kn->kpair)
		need += (sub * kq + np * (kq + 2)) / 2 + 2 * 16;
	ap = fw_worker_scratch(w, need);
	if (!ap)
		return MAIA_STATUS_DMA_ERROR;
	bp = ap + round_up(asz * g->kc, 16);
	cacc = bp + round_up(g->kc * (np + 16), 16);
	tmp = cacc + round_up(cblock, 16);
	bias = tmp + round_up(big, 16);
	if (kn->kpair) {
		ap2 = (uint16_t *)(bias + round_up(np, 16));
		bp2 = ap2 + round_up(sub * kq, 32);
	}
	if (cdst)
		cacc = cdst;

	for (k0 = 0; k0 < g->k; k0 += g->kc) {
		uint64_t kcb = g->k - k0 < g->kc ? g->k - k0 : g->kc;
		struct b_slice sl = { .bp = bp, .bp2 = bp2, .ldb = ldb, .kcb = kcb,
				      .kqb = kn->kpair ? round_up(kcb, kn->kpair) : kcb,
				      .kqp = kn->kpair ? round_up(kcb, kn->kpair) + 2 : kcb,
				      .panels = panels, .acc = k0 > 0, .in_place = cdst != NULL,
				      .tmp = tmp, .pf = NULL };

		/* A packed once for all the column slices (a_whole) */
		st = whole ? pack_a_slice(&w->io, g, a, a_off, m0, mbb, k0, kcb, ap, l2, tmp) : 0;
		for (cb = 0; cb < nbb && !st; cb += nsw) {
			nn = nbb - cb < nsw ? nbb - cb : nsw;
			/* the B slice is packed once and reused by every A sub-block */
			st = kn->kpair ? pack_b_pairs(&w->io, g, b, b_off, k0, kcb, n0 + cb, nn,
						      bp2, sl.kqb, sl.kqp, tmp) : -1;
			if (st < 0) {
				st = pack_b_slice(&w->io, g, b, b_off, k0, kcb, n0 + cb, nn, bp,
						  ldb, panels, l2, tmp);
				for (j = 0; kn->kpair && j < np; j += kn->nr)
					kn->to_pairs(panels ? bp + j * kcb : bp + j, ldb, kcb,
						     kn->nr, bp2 + j * sl.kqp);
			}
			/* few rows to reuse the slice: the next one into L2 meanwhile */
			sl.pf = !l2 ? NULL :
				next_b_slice(&w->io, g, b, b_off, k0, cb, nsw, n0, nbb,
					     div_up(mbb, kn->mr) * div_up(nn, kn->nr), &npf);
			for (ms = 0; ms < mbb && !st; ms += g->mb) {
				uint64_t mm = mbb - ms < g->mb ? mbb - ms : g->mb;
				uint64_t mmp = round_up(mm, kn->mr);

				if (!whole)
					st = pack_a_slice(&w->io, g, a, a_off, m0 + ms, mm, k0, kcb,
							  kn->a_rows ? (float *)ap2 : ap, l2, tmp);
				for (i = 0; kn->kpair && !kn->a_rows && i < mmp; i += kn->mr)
					kn->to_pairs(ap + i * kcb, kn->mr, kcb, kn->mr,
						     ap2 + i * sl.kqb);
				if (!st)
					sub_block_tiles(kn, &sl, whole ? ap + ms * kcb : ap, ap2,
							cacc + ms * ldc + cb, ldc, mbb - ms, mmp, nn);
			}
		}
		if (st)
			return st;
	}
	if (cdst) {	/* written in place: nothing to do but count */
		w->io.bytes_written += mbb * nbb * sizeof(float);
		return MAIA_STATUS_OK;
	}

	/* epilogue, one C row at a time */
	if (g->has_bias) {
		st = fw_io_load(&w->io, &g->bias, n0 * g->bias.strides[3], nbb,
				  g->bias.strides[3], bias);
		if (st)
			return st;
	}
	for (i = 0; i < mbb; i++) {
		float *row = cacc + i * ldc;
		uint64_t off = c_off + (m0 + i) * g->c_rs + n0 * g->c_cs;

		if (g->beta != 0.0f) {
			st = fw_io_load(&w->io, c, off, nbb, g->c_cs, tmp);
			if (st)
				return st;
			for (j = 0; j < nbb; j++)
				row[j] = g->alpha * row[j] + g->beta * tmp[j];
		} else if (g->alpha != 1.0f) {
			for (j = 0; j < nbb; j++)
				row[j] *= g->alpha;
		}
		if (g->has_bias)
			for (j = 0; j < nbb; j++)
				row[j] += bias[j];
		if (g->act != MAIA_ACT_NONE)
			for (j = 0; j < nbb; j++)
				row[j] = fw_act(row[j], g->act);
		st = fw_io_store(&w->io, c, off, nbb, g->c_cs, row, g->saturate);
		if (st)
			return st;
	}
	return MAIA_STATUS_OK;
}

/*
 * One task: a block of mrange rows and nb columns of one batch, in place if
 * C maps, else in pieces of at most g->crows rows (as many as the SRAM C
 * block holds).
 */
static int gemm_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct gemm_op *g = job->op;
	uint64_t bi = task / (g->mblocks * g->nblocks);
	uint64_t rem = task % (g->mblocks * g->nblocks);
	uint64_t m0 = rem / g->nblocks * g->mrange, n0 = rem % g->nblocks * g->nb;
	uint64_t mbb = g->m - m0 < g->mrange ? g->m - m0 : g->mrange;
	uint64_t nbb = g->n - n0 < g->nb ? g->n - n0 : g->nb;
	uint64_t a_off, b_off, c_off, r, rows;
	struct fw_tview a = g->a, b = g->b, c = g->c;
	float *cdst;
	int st = MAIA_STATUS_OK;

	if (g->ptrs) {
		a.addr = g->ptrs[3 * bi];
		b.addr = g->ptrs[3 * bi + 1];
		c.addr = g->ptrs[3 * bi + 2];
		a_off = b_off = c_off = 0;
	} else {
		a_off = bi * g->a_bs;
		b_off = bi * g->b_bs;
		c_off = bi * g->c_bs;
	}
	cdst = direct_c(g, &w->io, &c, c_off + m0 * g->c_rs + n0, mbb, nbb);
	if (cdst)
		return gemm_block(g, w, &a, &b, &c, a_off, b_off, c_off, m0, mbb, n0, nbb, cdst);
	/* through the SRAM C block: columns in B slices of nsub (a_whole's task is wider) */
	for (uint64_t cb = 0; cb < nbb && !st; cb += g->nsub) {
		uint64_t nn = nbb - cb < g->nsub ? nbb - cb : g->nsub;

		for (r = 0; r < mbb && !st; r += rows) {
			rows = mbb - r < g->crows ? mbb - r : g->crows;
			st = gemm_block(g, w, &a, &b, &c, a_off, b_off, c_off, m0 + r, rows,
					n0 + cb, nn, NULL);
		}
	}
	return st;
}

/*
 * Whether every value of a dtype is exact in BF16 (at most 8 significant
 * bits, FP32's exponent range): BF16, and the MX formats, whose elements
 * have at most 7 magnitude bits and whose scales are powers of two.
 */
static bool bf16_exact(unsigned int dt)
{
	return dt == MAIA_DTYPE_BF16 || maia_dtype_is_block(dt);
}

static bool c_dtype_ok(unsigned int dt)
{
	return dt == MAIA_DTYPE_FP32 || dt == MAIA_DTYPE_BF16 || dt == MAIA_DTYPE_FP16 ||
	       dt == MAIA_DTYPE_FP8_E4M3 || dt == MAIA_DTYPE_FP8_E5M2;
}

/* Shapes and 2D strides; dims 0..1 of the normalized view are the batch. */
static int gemm_shapes(struct gemm_op *g, unsigned int rank)
{
	const struct fw_tview *a = &g->a, *b = &g->b, *c = &g->c;
	uint64_t ka, kb;

	if (a->rank != rank || b->rank != rank || c->rank != rank ||
	    a->shape[0] != 1 || b->shape[0] != 1 || c->shape[0] != 1)
		return MAIA_STATUS_BAD_DESC;
	g->batch = c->shape[1];
	if ((a->shape[1] != g->batch && a->shape[1] != 1) ||
	    (b->shape[1] != g->batch && b->shape[1] != 1))
		return MAIA_STATUS_BAD_DESC;
	g->a_bs = a->shape[1] == 1 ? 0 : a->strides[1];
	g->b_bs = b->shape[1] == 1 ? 0 : b->strides[1];
	g->c_bs = c->strides[1];
	g->m = c->shape[2];
	g->n = c->shape[3];
	g->c_rs = c->strides[2];
	g->c_cs = c->strides[3];
	if (g->trans_a) {	/* A stored K x M */
		ka = a->shape[2];
		if (a->shape[3] != g->m)
			return MAIA_STATUS_BAD_DESC;
		g->a_rs = a->strides[3];
		g->a_cs = a->strides[2];
	} else {
		ka = a->shape[3];
		if (a->shape[2] != g->m)
			return MAIA_STATUS_BAD_DESC;
		g->a_rs = a->strides[2];
		g->a_cs = a->strides[3];
	}
	if (g->trans_b) {	/* B stored N x K */
		kb = b->shape[3];
		if (b->shape[2] != g->n)
			return MAIA_STATUS_BAD_DESC;
		g->b_rs = b->strides[3];
		g->b_cs = b->strides[2];
	} else {
		kb = b->shape[2];
		if (b->shape[3] != g->n)
			return MAIA_STATUS_BAD_DESC;
		g->b_rs = b->strides[2];
		g->b_cs = b->strides[3];
	}
	if (ka != kb)
		return MAIA_STATUS_BAD_DESC;
	g->k = ka;
	return MAIA_STATUS_OK;
}

/* SRAM floats for the A sub-block, B slice and buffers (gemm_block()), C block aside. */
static uint64_t fixed_floats(const struct gemm_op *g, uint64_t mb, uint64_t nb, uint64_t kc)
{
	uint64_t fixed = mb * kc + kc * (nb + 16) + g->kern->mr * kc + mb + 2 * nb + 64;

	if (g->kern->kpair)	/* the BF16 copies of A and B */
		fixed += (mb + nb) * round_up(kc, g->kern->kpair) / 2 + 32;
	return fixed;
}

/*
 * Block sizes: the packed A and B slices and the C block must fit the tile's
 * SRAM share; then blocks shrink until every worker has a few tasks.
 */
static void gemm_blocking(struct gemm_op *g, const struct fw_tensor_engine *te)
{
	unsigned int mr = g->kern->mr, nr = g->kern->nr;
	/* block formats need block-aligned slices along their inner dimension */
	uint64_t mg = g->trans_a && g->a.block > 1 ? mr * 32 : mr;
	uint64_t ng = nr > 32 ? nr : 32;
	uint64_t mb = round_up(96, mg), nb = 256, kc = 256, mrange, nblocks, want, fixed;
	uint64_t budget = te->tile_sram / sizeof(float);

	/*
	 * A is re-read once per column block, B once per row block. 256 columns
	 * keep the B slice and the A sub-block in a 512 KiB L2. Operands of 16
	 * bits or fewer are costly to fetch (many short strided DMA rows) and
	 * decode, so they take 512 columns: half the A re-reads for somewhat
	 * more B re-reads (the C block budget gives fewer rows), which cuts the
	 * bytes copied in by about a quarter on square shapes. The kernel walks
	 * nr-column panels of B, so the larger slice costs little in cache. So
	 * do the 32-column (AVX-512) kernels: the hosts that have them have an
	 * L2 of 1 MiB or more, and at twice the FMA rate the A re-reads weigh
	 * twice as much (4096x4096x256 FP32: A packed 16 times with 256).
	 */
	if (maia_dtype_size(g->a.dtype) <= 2 || maia_dtype_size(g->b.dtype) <= 2 || nr >= 32)
		nb = 512;
	/*
	 * ... unless the columns must be split anyway to give every worker
	 * work. Tasks wanted: two per worker, so that a worker the host delays
	 * is made up for, except up to 512^3, where a second B slice packed
	 * per worker costs more than that buys (2 threads, 256^3 FP32: 4
	 * tasks 5 % slower than 2 on a loaded host), and with one worker,
	 * which nothing can make up for: each task packs A once more (one
	 * thread, FP32, one task instead of two: 512^3 1.01 -> 1.04 of sgemm,
	 * 1024^3 1.00 -> 1.04, medians of five pairs).
	 */
	want = (g->m * g->n * g->k <= 512u * 512 * 512 || te->nworkers == 1 ? 1 : 2) *
	       (uint64_t)te->nworkers;
	while (nb > 256 && g->batch * div_up(g->n, nb) < want)
		nb /= 2;
	if (kc > g->k)
		kc = round_up(g->k, 32);
	g->stage_a = g->a_cs != 1 && g->a_rs == 1;
	g->stage_b = g->b_cs != 1 && g->b_rs == 1;
	/* balance: equal column blocks rather than a short tail */
	nb = round_up(div_up(g->n, div_up(g->n, nb)), ng);
	for (;;) {
		fixed = fixed_floats(g, mb, nb, kc);
		if (fixed + mb * nb <= budget)
			break;
		if (nb > ng)
			nb = round_up(nb / 2, ng);
		else if (mb > mg)
			mb = round_up(mb / 2, mg);
		else if (kc > 32)
			kc /= 2;
		else
			break;
	}
	nblocks = div_up(g->n, nb);
	/*
	 * Rows per task: as many as the C block budget allows (every row of a
	 * task reuses its packed B slice), all of them when C is written in
	 * place, but enough tasks for every worker (want, above).
	 */
	g->crows = fixed < budget ? (budget - fixed) / nb / mb * mb : mb;
	if (g->crows < mb)
		g->crows = mb;
	/*
	 * In place, an FP32 kernel takes up to 1024 columns, as many as keep
	 * the B slice within half of a host core's L2 (a 32-column kernel: 1024
	 * when the L2 size is unknown): A is packed half or a quarter as often,
	 * and the kernel still streams B's panels from L2 against one A panel
	 * in L1. One thread, FP32, 2 MiB L2: avx512 2048^3 1-2 % faster with
	 * 1024 than 512, slower with 2048 (the slice filling L2); avx2 4096^3
	 * 0.93 -> 0.98 of sgemm with 1024 rather than 256. Not with the C
	 * block in SRAM, whose rows the wider block would halve.
	 */
	if (g->direct && !g->kern->kpair && nb < 1024 && (te->host_l2 || nr >= 32)) {
		uint64_t wide = 1024;

		while (te->host_l2 && wide > nb && kc * wide * sizeof(float) > te->host_l2 / 2)
			wide /= 2;
		while (wide > nb && g->batch * div_up(g->n, wide) < want)
			wide /= 2;
		wide = round_up(div_up(g->n, div_up(g->n, wide)), ng);
		if (wide > nb && fixed_floats(g, mb, wide, kc) + mb * wide <= budget) {
			nb = wide;
			fixed = fixed_floats(g, mb, nb, kc);
			nblocks = div_up(g->n, nb);
			g->crows = (budget - fixed) / nb / mb * mb;
			if (g->crows < mb)
				g->crows = mb;
		}
	}
	mrange = g->direct ? round_up(g->m, mg) : g->crows;
	if (g->batch * nblocks < want) {
		uint64_t per = div_up(want, g->batch * nblocks);

		if (div_up(g->m, per) < mrange)
			mrange = round_up(div_up(g->m, per), mg);
	}
	if (mrange > round_up(g->m, mg))
		mrange = round_up(g->m, mg);
	if (mrange < mb)
		mb = mrange;
	mrange = round_up(div_up(g->m, div_up(g->m, mrange)), mg);
	g->mb = mb;
	g->mrange = mrange;
	g->nb = nb;
	g->kc = kc;
	g->mblocks = div_up(g->m, mrange);
	g->nblocks = nblocks;
	g->nsub = nb;
	/*
	 * One worker, C in place, several column blocks: their tasks would run
	 * one after the other on the tiles of a cluster, each packing the same
	 * A again. Instead one task takes all the columns and packs each K
	 * slice of A once, mrange x kc, kept in the cluster's SRAM (where it
	 * fits beside a tile's own buffers) for every column block's B slice.
	 * The same FMAs in the same k order for every C element.
	 */
	if (te->nworkers == 1 && g->direct && !g->kern->kpair && !g->kern->a_rows &&
	    !g->stage_a && g->batch == 1 && g->mblocks == 1 && nblocks > 1 &&
	    fixed + round_up(g->m, mr) * kc <= (uint64_t)te->cfg.sram_kib * 1024 / sizeof(float)) {
		g->a_whole = true;
		g->nb = g->n;
		g->nblocks = 1;
	}
}

static int gemm_common(const struct maia_tensor_desc *ad,
		       const struct maia_tensor_desc *bd, const struct maia_tensor_desc *cd,
		       const struct maia_tensor_desc *biasd, unsigned int flags, uint32_t alpha,
		       uint32_t beta, uint32_t act, struct gemm_op *g)
{
	int st;

	if (flags & ~MAIA_GEMM_F_ALL || act >= MAIA_ACT_COUNT)
		return MAIA_STATUS_BAD_CMD;
	g->trans_a = flags & MAIA_GEMM_F_TRANS_A;
	g->trans_b = flags & MAIA_GEMM_F_TRANS_B;
	g->has_bias = flags & MAIA_GEMM_F_BIAS;
	g->saturate = flags & MAIA_GEMM_F_SAT;
	g->alpha = alpha ? fw_f32_from_bits(alpha) : 1.0f;
	g->beta = fw_f32_from_bits(beta);
	g->act = act;
	if (!isfinite(g->alpha) || !isfinite(g->beta))
		return MAIA_STATUS_BAD_CMD;
	st = fw_tview_parse(ad, FW_TV_INPUT, &g->a);
	if (!st)
		st = fw_tview_parse(bd, FW_TV_INPUT, &g->b);
	if (!st)
		st = fw_tview_parse(cd, FW_TV_OUTPUT, &g->c);
	if (st)
		return st;
	if (!c_dtype_ok(g->c.dtype))
		return MAIA_STATUS_BAD_DESC;
	if (g->has_bias) {
		st = fw_tview_parse(biasd, FW_TV_INPUT, &g->bias);
		if (st)
			return st;
		if (g->bias.rank != 1 || g->bias.shape[3] != g->c.shape[3] || g->bias.block > 1)
			return MAIA_STATUS_BAD_DESC;
	} else if (!fw_desc_is_zero(biasd)) {
		return MAIA_STATUS_BAD_CMD;
	}
	return MAIA_STATUS_OK;
}

/*
 * The bytes a view can touch as ranges [lo, hi): its elements and, for a
 * block format, its scales apart (an operand whose scales lie beyond C
 * does not overlap C for that). Returns how many ranges (1 or 2).
 */
static unsigned int view_spans(const struct fw_tview *t, uint64_t lo[2], uint64_t hi[2])
{
	uint64_t last = 0;

	for (int d = 0; d < 4; d++)
		last += (t->shape[d] - 1) * t->strides[d];
	lo[0] = t->addr;
	if (t->block <= 1) {
		hi[0] = t->addr + (last + 1) * maia_dtype_size(t->dtype);
		return 1;
	}
	hi[0] = t->addr + (last / t->block + 1) * maia_dtype_block_bytes(t->dtype);
	lo[1] = t->scale_addr;
	hi[1] = t->scale_addr + last / t->block + 1;
	return 2;
}

static bool views_overlap(const struct fw_tview *x, const struct fw_tview *y)
{
	uint64_t xl[2], xh[2], yl[2], yh[2];
	unsigned int nx = view_spans(x, xl, xh), ny = view_spans(y, yl, yh);

	for (unsigned int i = 0; i < nx; i++)
		for (unsigned int j = 0; j < ny; j++)
			if (xl[i] < yh[j] && yl[j] < xh[i])
				return true;
	return false;
}

/*
 * Whether the FP32 kernels may write C in place (direct_c()): a plain FP32
 * result (no alpha, beta, bias or activation to apply), rows 64-byte
 * aligned, not overlapping A or B (a block written early must not change
 * what another task still reads). Taken on every such shape: no copy out,
 * and B packed once for all the rows. It used to be kept for one K slice
 * or more rows than the C block holds, as tiles read back at every slice
 * missed in place; since the kernels fetch their C tile while they
 * compute it pays everywhere (one thread: 512^3 0.89 -> 0.94 of sgemm,
 * 256x4096x1024 0.87 -> 0.89).
 */
static bool direct_ok(const struct gemm_op *g)
{
	return !g->kern->a_rows && !g->ptrs && g->c.dtype == MAIA_DTYPE_FP32 && g->c_cs == 1 &&
	       g->c_rs * sizeof(float) % 64 == 0 && g->c_bs * sizeof(float) % 64 == 0 &&
	       g->alpha == 1.0f && g->beta == 0.0f && !g->has_bias && g->act == MAIA_ACT_NONE &&
	       !views_overlap(&g->c, &g->a) && !views_overlap(&g->c, &g->b);
}

static int gemm_run(struct fw_tensor_engine *te, struct gemm_op *g,
		    const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	struct fw_te_job job = { .te = te, .mem = mem, .run = gemm_task, .op = g };

	fw_mx_simd_again();	/* the MX decoders as MAIA_TE_ISA is now (the AVX2 stand-in) */
	g->kern = fw_gemm_kernel_for(te->gemm_kernel, bf16_exact(g->a.dtype) &&
						      bf16_exact(g->b.dtype));
	/* a kernel taking A as rows (AMX) leaves a column-major A to the FP32 ones */
	if (g->kern->a_rows && g->a_cs != 1 && g->a_rs == 1)
		g->kern = fw_gemm_kernel_for(te->gemm_kernel, false);
	g->direct = direct_ok(g);
	gemm_blocking(g, te);
	job.ntasks = g->batch * g->mblocks * g->nblocks;
	stats->flops += 2 * g->batch * g->m * g->n * g->k;
	stats->mm = (struct maia_op_mm){ .batch = g->batch, .m = g->m, .n = g->n, .k = g->k,
					 .dtype_a = g->a.dtype, .dtype_b = g->b.dtype,
					 .dtype_c = g->c.dtype, .reads_c = g->beta != 0.0f,
					 .bias = g->has_bias };
	return fw_te_job_run(&job, stats);
}

int fw_op_gemm(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		 const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	const struct maia_cmd_gemm *c = (const void *)cmd;
	struct gemm_op g = { 0 };
	int st;

	if (cmd->size != sizeof(*c) || c->reserved)
		return MAIA_STATUS_BAD_CMD;
	st = gemm_common(&c->a, &c->b, &c->c, &c->bias, cmd->flags, c->alpha, c->beta,
			 c->activation, &g);
	if (st)
		return st;
	if (g.c.rank != 2 && g.c.rank != 3)
		return MAIA_STATUS_BAD_DESC;
	st = gemm_shapes(&g, g.c.rank);
	if (st)
		return st;
	return gemm_run(te, &g, mem, stats);
}

int fw_op_gemm_batched(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
			 const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	const struct maia_cmd_gemm_batched *c = (const void *)cmd;
	uint64_t *ptrs, bytes[3], i;
	struct gemm_op g = { 0 };
	int st;

	if (cmd->size != sizeof(*c))
		return MAIA_STATUS_BAD_CMD;
	if (!c->batch_count || c->batch_count > MAX_BATCH_PTRS ||
	    (c->a_ptrs | c->b_ptrs | c->c_ptrs) & 7)
		return MAIA_STATUS_BAD_CMD;
	if (c->a.addr || c->b.addr || c->c.addr)
		return MAIA_STATUS_BAD_DESC;
	st = gemm_common(&c->a, &c->b, &c->c, &c->bias, cmd->flags, c->alpha, c->beta,
			 c->activation, &g);
	if (st)
		return st;
	if (g.a.rank != 2 || g.a.block > 1 || g.b.block > 1)
		return MAIA_STATUS_BAD_DESC;
	st = gemm_shapes(&g, 2);
	if (st)
		return st;
	g.batch = c->batch_count;
	/* the descriptors were parsed at address 0: their extent bounds each pointer */
	bytes[0] = (g.a.strides[2] * (g.a.shape[2] - 1) + g.a.strides[3] * (g.a.shape[3] - 1) + 1) *
		   maia_dtype_size(g.a.dtype);
	bytes[1] = (g.b.strides[2] * (g.b.shape[2] - 1) + g.b.strides[3] * (g.b.shape[3] - 1) + 1) *
		   maia_dtype_size(g.b.dtype);
	bytes[2] = (g.c.strides[2] * (g.c.shape[2] - 1) + g.c.strides[3] * (g.c.shape[3] - 1) + 1) *
		   maia_dtype_size(g.c.dtype);
	ptrs = malloc(3 * sizeof(*ptrs) * g.batch);
	if (!ptrs)
		return MAIA_STATUS_DMA_ERROR;
	for (i = 0; i < g.batch && !st; i++) {
		st = mem->read(mem->opaque, c->a_ptrs + 8 * i, &ptrs[3 * i], 8);
		if (!st)
			st = mem->read(mem->opaque, c->b_ptrs + 8 * i, &ptrs[3 * i + 1], 8);
		if (!st)
			st = mem->read(mem->opaque, c->c_ptrs + 8 * i, &ptrs[3 * i + 2], 8);
		for (int j = 0; j < 3 && !st; j++)
			if (bytes[j] - 1 > UINT64_MAX - ptrs[3 * i + j])
				st = MAIA_STATUS_BAD_DESC;
	}
	stats->bytes_read += 24 * i;
	if (!st) {
		g.ptrs = ptrs;
		st = gemm_run(te, &g, mem, stats);
	}
	free(ptrs);
	return st;
}
