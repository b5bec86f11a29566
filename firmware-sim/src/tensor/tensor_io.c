// SPDX-License-Identifier: MIT
/*
 * Tensor descriptors: validation, and moving rows of elements between the
 * job's address space and FP32 working buffers (the tile's SRAM), converting
 * on the way. Every byte goes through struct maia_job_mem, so MMU faults
 * and DMA errors surface as the status of the command. Reads decode, and
 * writes encode, in place where the memory can be mapped (HBM), else
 * through a staging copy.
 */
#include <math.h>
#include <string.h>

#include "maia/hw/queue.h"
#include "te.h"

bool fw_desc_is_zero(const struct maia_tensor_desc *d)
{
	static const struct maia_tensor_desc zero;

	return !memcmp(d, &zero, sizeof(zero));
}

bool fw_tview_same(const struct fw_tview *a, const struct fw_tview *b)
{
	return a->addr == b->addr && a->scale_addr == b->scale_addr && a->dtype == b->dtype &&
	       !memcmp(a->shape, b->shape, sizeof(a->shape)) &&
	       !memcmp(a->strides, b->strides, sizeof(a->strides));
}

/*
 * The rules themselves are the ABI header's (maia_tensor_desc_check(), shared
 * with libmaia); a descriptor that passes them fits the view's arithmetic:
 * fewer than 2^32 elements, offsets below 2^56, no address wrap.
 */
int fw_tview_parse(const struct maia_tensor_desc *d, int dir, struct fw_tview *t)
{
	unsigned int r = d->rank, pad, i;

	memset(t, 0, sizeof(*t));
	if (maia_tensor_desc_check(d, dir == FW_TV_OUTPUT, NULL) != MAIA_DESC_OK)
		return MAIA_STATUS_BAD_DESC;
	pad = MAIA_TENSOR_MAX_RANK - r;
	for (i = 0; i < 4; i++) {
		t->shape[i] = 1;
		t->strides[i] = 0;
	}
	t->nelems = 1;
	for (i = 0; i < r; i++) {
		t->shape[pad + i] = d->shape[i];
		t->strides[pad + i] = d->shape[i] > 1 ? d->strides[i] : 0;
		t->nelems *= d->shape[i];
	}
	t->dtype = d->dtype;
	t->rank = r;
	t->addr = d->addr;
	t->scale_addr = d->scale_addr;
	t->block = maia_dtype_block(d->dtype);
	/* 0 means 1.0 for the scaled types; other types must have 0. */
	t->scale = d->scale ? fw_f32_from_bits(d->scale) : 1.0f;
	return MAIA_STATUS_OK;
}

static int io_read(struct fw_io *io, uint64_t va, void *buf, size_t len)
{
	int st = io->mem->read(io->mem->opaque, va, buf, len);

	if (st == MAIA_STATUS_OK)
		io->bytes_read += len;
	return st;
}

static int io_write(struct fw_io *io, uint64_t va, const void *buf, size_t len)
{
	int st = io->mem->write(io->mem->opaque, va, buf, len);

	if (st == MAIA_STATUS_OK)
		io->bytes_written += len;
	return st;
}

/*
 * Results are converted straight into device memory where it maps (HBM),
 * saving the staging pass for formats other than FP32. (Streaming stores
 * for long FP32 rows were tried: no difference outside the noise on a
 * 4096x4096x256 GEMM, which writes 64 MiB of C.)
 */
/* Like io_map, for writing: *p is NULL when the bytes must go through write(). */
static void io_map_write(struct fw_io *io, uint64_t va, size_t len, void **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (io->mem->map_write &&
	    io->mem->map_write(io->mem->opaque, va, len, p, n) != MAIA_STATUS_OK)
		*p = NULL;
}

/*
 * n contiguous elements from src stored at element offset off, in place
 * where the memory maps, else converted into the staging buffer and
 * written. Faults are reported by write().
 */
static int store_contig(struct fw_io *io, const struct fw_tview *t, uint64_t off,
			uint64_t n, const float *src, bool saturate)
{
	unsigned int es = maia_dtype_size(t->dtype);
	uint64_t cap = io->stage_size / es, i = 0;
	int st;

	while (i < n) {
		uint64_t va = t->addr + (off + i) * es, g;
		size_t got;
		void *p;

		io_map_write(io, va, (n - i) * es, &p, &got);
		if (p && got >= es) {
			g = got / es;
			if (t->dtype == MAIA_DTYPE_FP32)
				memcpy(p, src + i, g * 4);
			else
				fw_encode(t->dtype, src + i, g, t->scale, saturate, p);
			io->bytes_written += g * es;
			i += g;
			continue;
		}
		g = n - i < cap ? n - i : cap;
		if (t->dtype == MAIA_DTYPE_FP32) {
			st = io_write(io, va, src + i, g * 4);
		} else {
			fw_encode(t->dtype, src + i, g, t->scale, saturate, io->stage);
			st = io_write(io, va, io->stage, g * es);
		}
		if (st)
			return st;
		i += g;
	}
	return MAIA_STATUS_OK;
}

/*
 * Borrow len bytes at va in place (see struct maia_job_mem): *p is NULL when
 * the memory has no map, must be read by DMA, or does not map at all; the
 * caller then uses read(), which reports (and records) any fault. So a
 * fault is reported only by an access the command really makes, never by
 * a prefetch hint.
 */
static int io_map(struct fw_io *io, uint64_t va, size_t len, const void **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (io->mem->map && io->mem->map(io->mem->opaque, va, len, p, n) != MAIA_STATUS_OK)
		*p = NULL;
	return MAIA_STATUS_OK;
}

/*
 * Decode c whole blocks straight from device memory if both the elements
 * and their scales can be read in place; returns how many it decoded (0:
 * use the staging buffer) or a negative status.
 */
static int64_t load_blocks_mapped(struct fw_io *io, const struct fw_tview *t,
				  uint64_t block, uint64_t c, float *dst)
{
	unsigned int bb = maia_dtype_block_bytes(t->dtype);
	const void *pe, *ps;
	size_t ne, ns;
	int st;

	st = io_map(io, t->addr + block * bb, c * bb, &pe, &ne);
	if (st)
		return -st;
	if (!pe || ne < bb)
		return 0;
	c = ne / bb;
	st = io_map(io, t->scale_addr + block, c, &ps, &ns);
	if (st)
		return -st;
	if (!ps)
		return 0;
	c = ns < c ? ns : c;
	fw_mx_decode(t->dtype, pe, ps, c, dst);
	io->bytes_read += c * (bb + 1u);
	return (int64_t)c;
}

static int load_blocks(struct fw_io *io, const struct fw_tview *t, uint64_t off,
		       uint64_t n, float *dst)
{
	unsigned int bs = t->block, bb = maia_dtype_block_bytes(t->dtype);
	uint64_t first = off / bs, nb = n / bs, per = io->stage_size / (bb + 1u), done = 0;
	int st;

	if (off % bs || n % bs)
		return MAIA_STATUS_BAD_DESC;
	while (done < nb) {
		uint64_t c = nb - done < per ? nb - done : per;
		int64_t mapped = load_blocks_mapped(io, t, first + done, nb - done,
						    dst + done * bs);

		if (mapped < 0)
			return (int)-mapped;
		if (mapped > 0) {
			done += (uint64_t)mapped;
			continue;
		}
		st = io_read(io, t->addr + (first + done) * bb, io->stage, c * bb);
		if (st)
			return st;
		st = io_read(io, t->scale_addr + first + done, io->stage + c * bb, c);
		if (st)
			return st;
		fw_mx_decode(t->dtype, io->stage, io->stage + c * bb, c, dst + done * bs);
		done += c;
	}
	return MAIA_STATUS_OK;
}

/*
 * Up to g elements stride apart (span elements from first to last) decoded
 * in place if the memory allows. Returns how many (0: use the staging
 * buffer), or a negative status. A contiguous window may stop early at the
 * end of a mapping; a strided one is all or nothing.
 */
static int64_t load_window_mapped(struct fw_io *io, const struct fw_tview *t, uint64_t va,
				  uint64_t g, uint64_t stride, uint64_t span, float *dst)
{
	unsigned int es = maia_dtype_size(t->dtype);
	const uint8_t *src;
	const void *p;
	size_t got;
	int st;

	st = io_map(io, va, span * es, &p, &got);
	if (st)
		return -st;
	if (!p || got < es || (stride != 1 && got < span * es))
		return 0;
	src = p;
	if (stride == 1) {
		g = got / es;
		span = g;
		fw_decode(t->dtype, src, g, t->scale, dst);
	} else {
		for (uint64_t j = 0; j < g; j++)
			memcpy(io->stage + j * es, src + j * stride * es, es);
		fw_decode(t->dtype, io->stage, g, t->scale, dst);
	}
	io->bytes_read += span * es;	/* the window, as the staging copy counts it */
	return (int64_t)g;
}

void fw_io_prefetch(struct fw_io *io, const struct fw_tview *t, uint64_t off, uint64_t n)
{
	uint64_t va, len, sva = 0, slen = 0;
	const void *p;
	size_t got;

	if (t->block > 1) {
		va = t->addr + off / t->block * maia_dtype_block_bytes(t->dtype);
		len = n / t->block * maia_dtype_block_bytes(t->dtype);
		sva = t->scale_addr + off / t->block;
		slen = n / t->block;
	} else {
		va = t->addr + off * maia_dtype_size(t->dtype);
		len = n * maia_dtype_size(t->dtype);
	}
	for (int part = 0; part < 2; part++, va = sva, len = slen) {
		if (!len || io_map(io, va, len, &p, &got) || !p)
			continue;
		for (size_t b = 0; b < got; b += 64)
			__builtin_prefetch((const uint8_t *)p + b);
		__builtin_prefetch((const uint8_t *)p + got - 1);
	}
}

int fw_io_load(struct fw_io *io, const struct fw_tview *t, uint64_t off,
		 uint64_t n, uint64_t stride, float *dst)
{
	unsigned int es = maia_dtype_size(t->dtype);
	uint64_t cap, i = 0;
	int st;

	if (!n)
		return MAIA_STATUS_OK;
	if (t->block > 1) {
		if (stride != 1)
			return MAIA_STATUS_BAD_DESC;
		return load_blocks(io, t, off, n, dst);
	}
	if (n == 1)
		stride = 1;
	if (stride == 0) {
		st = io_read(io, t->addr + off * es, io->stage, es);
		if (st)
			return st;
		fw_decode(t->dtype, io->stage, 1, t->scale, dst);
		for (i = 1; i < n; i++)
			dst[i] = dst[0];
		return MAIA_STATUS_OK;
	}
	if (stride == 1 && t->dtype == MAIA_DTYPE_FP32)
		return io_read(io, t->addr + off * 4, dst, n * 4);
	cap = io->stage_size / es;
	while (i < n) {
		/* a window of g elements whose span fits the staging buffer */
		uint64_t g = stride <= cap - 1 ? (cap - 1) / stride + 1 : 1;
		uint64_t span;
		int64_t mapped;

		if (g > n - i)
			g = n - i;
		span = (g - 1) * stride + 1;
		mapped = load_window_mapped(io, t, t->addr + (off + i * stride) * es, g, stride,
					    span, dst + i);
		if (mapped < 0)
			return (int)-mapped;
		if (mapped > 0) {
			i += (uint64_t)mapped;
			continue;
		}
		st = io_read(io, t->addr + (off + i * stride) * es, io->stage, span * es);
		if (st)
			return st;
		if (stride != 1)
			for (uint64_t j = 1; j < g; j++)
				memmove(io->stage + j * es, io->stage + j * stride * es, es);
		fw_decode(t->dtype, io->stage, g, t->scale, dst + i);
		i += g;
	}
	return MAIA_STATUS_OK;
}

int fw_io_load_groups(struct fw_io *io, const struct fw_tview *t, uint64_t off,
			uint64_t ngroups, unsigned int g, uint64_t gstride, float *dst, float *tmp)
{
	uint64_t n = ngroups * g, bytes = n * maia_dtype_size(t->dtype);
	const void *p;
	size_t got;
	int st;

	if (t->block == 1 && n) {
		st = io_map(io, t->addr + off * maia_dtype_size(t->dtype), bytes, &p, &got);
		if (st)
			return st;
		if (p && got == bytes) {
			fw_decode_groups(t->dtype, p, ngroups, g, gstride, t->scale, dst);
			io->bytes_read += bytes;
			return MAIA_STATUS_OK;
		}
	}
	st = fw_io_load(io, t, off, n, 1, tmp);
	for (uint64_t i = 0; i < ngroups && !st; i++)
		memcpy(dst + i * gstride, tmp + i * g, g * sizeof(float));
	return st;
}

static int store_blocks(struct fw_io *io, const struct fw_tview *t, uint64_t off,
			uint64_t n, const float *src)
{
	unsigned int bs = t->block, bb = maia_dtype_block_bytes(t->dtype);
	uint64_t first = off / bs, nb = n / bs, per = io->stage_size / (bb + 1u), done = 0;
	int st;

	if (off % bs || n % bs)
		return MAIA_STATUS_BAD_DESC;
	while (done < nb) {
		uint64_t c = nb - done < per ? nb - done : per;

		fw_mx_encode(t->dtype, src + done * bs, c, io->stage, io->stage + c * bb);
		st = io_write(io, t->addr + (first + done) * bb, io->stage, c * bb);
		if (st)
			return st;
		st = io_write(io, t->scale_addr + first + done, io->stage + c * bb, c);
		if (st)
			return st;
		done += c;
	}
	return MAIA_STATUS_OK;
}

int fw_io_store(struct fw_io *io, const struct fw_tview *t, uint64_t off,
		  uint64_t n, uint64_t stride, const float *src, bool saturate)
{
	unsigned int es = maia_dtype_size(t->dtype);
	uint64_t i;
	int st;

	if (!n)
		return MAIA_STATUS_OK;
	if (t->block > 1) {
		if (stride != 1)
			return MAIA_STATUS_BAD_DESC;
		return store_blocks(io, t, off, n, src);
	}
	if (n == 1)
		stride = 1;
	if (stride == 1)
		return store_contig(io, t, off, n, src, saturate);
	/*
	 * Strided rows are written element by element: a read-modify-write of
	 * the span would race with other tiles writing the elements between.
	 */
	for (i = 0; i < n; i++) {
		fw_encode(t->dtype, src + i, 1, t->scale, saturate, io->stage);
		st = io_write(io, t->addr + (off + i * stride) * es, io->stage, es);
		if (st)
			return st;
	}
	return MAIA_STATUS_OK;
}
