/* SPDX-License-Identifier: MIT */
/*
 * Tensor engine internals shared by the files in src/tensor/. Not part of
 * any ABI: the hardware ABI is maia/hw/tensor.h, the interface to the
 * command processor is maia/engine.h.
 */
#ifndef FWSIM_TE_H
#define FWSIM_TE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/engine.h"
#include "maia/hw/dtype.h"
#include "maia/hw/tensor.h"

#include "../fw_host.h"

/* ---- element formats (dtype.c, dtype_mx.c) ---- */

/* Scalar conversions. Encoders round to nearest even. */
float fw_bf16_to_f32(uint16_t h);
uint16_t fw_f32_to_bf16(float f);
float fw_fp16_to_f32(uint16_t h);
uint16_t fw_f32_to_fp16(float f);
/* Minifloats: MAIA_DTYPE_FP8_E4M3/E5M2, or the MX element types below. */
float fw_fp8_to_f32(uint8_t v, unsigned int dtype);
uint8_t fw_f32_to_fp8(float f, unsigned int dtype, bool saturate);
int8_t fw_f32_to_int8(float f);
/* Decode table of a format of 8 bits or fewer (indexed by code), or NULL. */
const float *fw_minifloat_table(unsigned int type);

/* Element types of the block formats, for fw_elem_* (not dtypes). */
#define FW_ELEM_FP6_E3M2	100u
#define FW_ELEM_FP6_E2M3	101u
#define FW_ELEM_FP4_E2M1	102u
float fw_elem_to_f32(uint8_t v, unsigned int elem);
uint8_t fw_f32_to_elem(float f, unsigned int elem, bool saturate);

/* Storage geometry (maia_dtype_size, _block, _block_bytes) is in maia/hw/dtype.h. */
/* Largest finite value of a dtype (of its elements before scaling). */
float fw_dtype_max(unsigned int dtype);

/*
 * Row conversions. scale multiplies on decode and divides on encode
 * (1.0 for types without a scale).
 */
void fw_decode(unsigned int dtype, const void *src, size_t n, float scale, float *dst);
void fw_encode(unsigned int dtype, const float *src, size_t n, float scale,
		 bool saturate, void *dst);
/*
 * fw_decode() of ngroups * g contiguous plain elements, group i going to
 * dst + i * gstride (a GEMM's B panels): one pass instead of two.
 */
void fw_decode_groups(unsigned int dtype, const void *src, size_t ngroups, unsigned int g,
			size_t gstride, float scale, float *dst);
/* Block formats: nblocks blocks of elements plus one scale byte each. */
void fw_mx_decode(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
		    size_t nblocks, float *dst);
void fw_mx_encode(unsigned int dtype, const float *src, size_t nblocks,
		    uint8_t *blocks, uint8_t *scales);
/* fw_mx_decode() in plain C only: the reference the SIMD decoders match. */
void fw_mx_decode_scalar(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			   size_t nblocks, float *dst);
/*
 * fw_mx_decode() with element e of the run going to dst + e / g * gstride +
 * e % g (g >= 1): a GEMM's B panels of g columns, or A's 16-k blocks,
 * decoded in place instead of through a row and a copy.
 */
void fw_mx_decode_groups(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			   size_t nblocks, unsigned int g, size_t gstride, float *dst);
/* The SIMD of the MX decoders: none, AVX2 (with F16C), AVX-512 (BW, VBMI). */
enum fw_mx_simd { FW_MX_SCALAR, FW_MX_AVX2, FW_MX_AVX512 };
/*
 * The widest the MX decoders (A and B, FP32 and BF16 pairs) use: the
 * CPU's, no wider than the FP32 kernel that MAIA_TE_ISA makes the engine
 * take (avx2: an AVX2-only CPU, as issue 28's; portable: scalar), as
 * MAIA_TE_ISA was at the first decode or the last fw_mx_simd_again().
 */
enum fw_mx_simd fw_mx_simd(void);
/* fw_mx_simd() decided again from MAIA_TE_ISA as it is now (each GEMM: gemm_run()). */
void fw_mx_simd_again(void);
/*
 * fw_mx_decode_groups() with SIMD no wider than simd, where this CPU and
 * dtype have it and g is a multiple of 16; false: not done.
 */
bool fw_mx_decode_simd_as(enum fw_mx_simd simd, unsigned int dtype, const uint8_t *blocks,
			  const uint8_t *scales, size_t nblocks, unsigned int g, size_t gstride,
			  float *dst);
/* fw_mx_decode_simd_as(fw_mx_simd(), ...) */
bool fw_mx_decode_simd(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			 size_t nblocks, unsigned int g, size_t gstride, float *dst);

/* ---- validated tensors and row I/O (tensor_io.c) ---- */

/* A descriptor after validation, normalized to 4 dimensions (outer dims 1). */
struct fw_tview {
	uint64_t addr;
	uint64_t scale_addr;
	uint64_t shape[4];
	uint64_t strides[4];
	uint64_t nelems;
	unsigned int dtype;
	unsigned int rank;	/* as described */
	unsigned int block;	/* elements per block, 1 for plain types */
	float scale;		/* INT8/FP8 multiplier, else 1 */
};

#define FW_TV_INPUT	0
#define FW_TV_OUTPUT	1

/* Returns MAIA_STATUS_OK or MAIA_STATUS_BAD_DESC. */
int fw_tview_parse(const struct maia_tensor_desc *d, int dir, struct fw_tview *t);
/* True if the descriptor is all zero (an unused optional operand). */
bool fw_desc_is_zero(const struct maia_tensor_desc *d);
/* True if a and b describe exactly the same elements (in-place ops). */
bool fw_tview_same(const struct fw_tview *a, const struct fw_tview *b);

/* Per-worker I/O state. */
struct fw_io {
	const struct maia_job_mem *mem;
	uint8_t *stage;		/* raw bytes staging buffer */
	size_t stage_size;
	uint64_t bytes_read;
	uint64_t bytes_written;
};

#define FW_IO_STAGE_SIZE	(64u * 1024u)

/*
 * Load n elements starting at element offset off, step stride elements,
 * into dst as FP32. Block formats need stride 1 and block-aligned off and n.
 * Returns MAIA_STATUS_*.
 */
int fw_io_load(struct fw_io *io, const struct fw_tview *t, uint64_t off,
		 uint64_t n, uint64_t stride, float *dst);
/*
 * Hint that fw_io_load() will soon read these n contiguous elements: starts
 * fetching them where the memory can be read in place (the tile's DMA
 * running ahead of the decode). No effect on results, byte counters or
 * fault records (an unmapped address is simply not prefetched).
 */
void fw_io_prefetch(struct fw_io *io, const struct fw_tview *t, uint64_t off, uint64_t n);
/*
 * fw_io_load() of ngroups * g contiguous elements, group i written to
 * dst + i * gstride; tmp (ngroups * g floats) stages them when they cannot
 * be decoded in place.
 */
int fw_io_load_groups(struct fw_io *io, const struct fw_tview *t, uint64_t off,
			uint64_t ngroups, unsigned int g, uint64_t gstride, float *dst, float *tmp);
int fw_io_store(struct fw_io *io, const struct fw_tview *t, uint64_t off,
		  uint64_t n, uint64_t stride, const float *src, bool saturate);

/* ---- execution (engine.c, run.c, pool.c) ---- */

struct fw_gemm_kernel;

struct fw_pool;
typedef void (*fw_task_fn)(void *arg, size_t task, unsigned int worker);
struct fw_pool *fw_pool_create(unsigned int threads, const struct fw_host *host);
void fw_pool_destroy(struct fw_pool *p);
unsigned int fw_pool_size(const struct fw_pool *p);
/* Run fn(arg, 0..ntasks-1, worker) on the pool and the caller; returns when all are done. */
void fw_pool_run(struct fw_pool *p, size_t ntasks, fw_task_fn fn, void *arg);


/* Per-worker scratch memory, reused across operations. */
struct fw_worker {
	struct fw_io io;
	float *scratch;
	size_t scratch_floats;
	uint64_t busy_ns;
	int status;		/* first error this worker saw in the current op */
	char pad[64];
};

struct fw_tensor_engine {
	pthread_mutex_t lock;		/* one command at a time on the pool and workers */
	struct fw_tensor_config cfg;
	struct fw_host host;		/* clock and threads, from cfg */
	const struct fw_gemm_kernel *gemm_kernel;
	unsigned int tiles;		/* clusters * tiles_per_cluster */
	size_t tile_sram;		/* bytes of SRAM a tile may stage into */
	size_t host_l2;			/* a host core's L2 in bytes, 0 if unknown (GEMM blocking) */
	struct fw_pool *pool;
	unsigned int nworkers;
	struct fw_worker *workers;
	uint64_t *tile_busy_ns;		/* per logical tile, cumulative */
	uint64_t ops;			/* commands executed */
};

/* Scratch of at least n floats for worker w; NULL if out of memory. */
float *fw_worker_scratch(struct fw_worker *w, size_t n);

/*
 * An operation split into tasks. run() is called once per task with the
 * worker's state; the first error stops the remaining tasks.
 */
struct fw_te_job {
	struct fw_tensor_engine *te;
	const struct maia_job_mem *mem;
	int (*run)(struct fw_te_job *job, size_t task, struct fw_worker *w);
	void *op;
	size_t ntasks;
	int status;		/* accessed atomically */
};
int fw_te_job_run(struct fw_te_job *job, struct maia_op_stats *stats);

/* ---- GEMM micro-kernels (gemm_kernels.c, gemm_bf16.c) ---- */
/*
 * n 64-byte lines of device memory for a kernel to fetch into L2 during
 * its k loop (fn_pf, fn_rows2), one per k while n is not 0: from line
 * `line` of the row at p on, lines lines a row, rows rs bytes apart. The
 * kernel leaves p, line and n where it stopped (n not 0 if it was more
 * than kc: the caller fetches the rest).
 */
struct fw_gemm_pf {
	const char *p;
	size_t rs, n;
	unsigned int lines, line;
};

struct fw_gemm_kernel {
	const char *name;
	unsigned int mr, nr;	/* C tile rows and columns */
	/*
	 * kpair 0: a is kc columns of mr floats (a[k * mr + i]) or, with
	 * a_kblock, kc in blocks of a_kblock columns, each block mr rows of
	 * its width (fw_gemm_a_at()); b kc rows of nr floats, ldb floats
	 * apart. Else (BF16 dot products) k is padded
	 * with zeros to kq = kc rounded up to a multiple of kpair, and b holds
	 * BF16 pairs, k even in the low half: b[k/2][j][k%2], ldb BF16s per k
	 * pair; a holds BF16 pairs a[k/2][i][k%2] (mr pairs per k pair) or,
	 * with a_rows, BF16 rows a[i][k] of kq each. Operands must be exact in
	 * BF16 (fw_gemm_kernel_for()).
	 */
	void (*fn)(size_t kc, const void *a, const void *b, size_t ldb, float *c, size_t ldc,
		   int accumulate);
	/*
	 * A from mr rows of kc floats, ld apart: the FP32 panel (above) of
	 * rows[i * ld + k], or with a_rows the kernel's BF16 rows.
	 */
	void (*pack_a)(const float *rows, size_t ld, size_t kc, unsigned int mr, float *a);
	unsigned int kpair;
	/* kpair: w columns of kc FP32 rows (src[k * ld + i]) to BF16 pairs up to kq (above) */
	void (*to_pairs)(const float *src, size_t ld, size_t kc, unsigned int w, uint16_t *dst);
	bool a_rows;
	unsigned int a_kblock;	/* FP32 kernels: 0, or A's k block (above) */
	/*
	 * NULL, or fn for the first rows (1..mr-1) rows of the tile only: the
	 * same panels, A's other rows not read, C's other rows not touched.
	 * For the tile at a block's last rows when they are fewer than mr.
	 */
	void (*fn_rows)(size_t kc, const void *a, const void *b, size_t ldb, float *c, size_t ldc,
			int accumulate, unsigned int rows);
	/*
	 * NULL, or fn_rows for two neighbouring column tiles at once: the
	 * second's B bnext floats after the first's (nr for rows of B, kc * nr
	 * for panels), its C nr columns after the first's. A few rows alone
	 * are too few independent FMA chains to hide the FMA's latency; two
	 * tiles of them are twice as many.
	 */
	void (*fn_rows2)(size_t kc, const void *a, const void *b, size_t ldb, size_t bnext,
			 float *c, size_t ldc, int accumulate, unsigned int rows,
			 struct fw_gemm_pf *pf);
	/*
	 * NULL, or fn_rows for rows 1..mr (mr: the whole tile) that also
	 * fetches pf's lines (NULL: none) into L2 while it computes.
	 */
	void (*fn_pf)(size_t kc, const void *a, const void *b, size_t ldb, float *c, size_t ldc,
		      int accumulate, unsigned int rows, struct fw_gemm_pf *pf);
};

/* The index of A(i, k) in a kernel's FP32 panel of kc columns (kpair 0). */
static inline size_t fw_gemm_a_at(const struct fw_gemm_kernel *kn, size_t kc, size_t k,
				  unsigned int i)
{
	size_t k0, w;

	if (!kn->a_kblock)
		return k * kn->mr + i;
	k0 = k / kn->a_kblock * kn->a_kblock;
	w = kc - k0 < kn->a_kblock ? kc - k0 : kn->a_kblock;
	return k0 * kn->mr + i * w + (k - k0);
}
const struct fw_gemm_kernel *fw_gemm_kernel_list(size_t *n);
bool fw_gemm_kernel_usable(const struct fw_gemm_kernel *k);
/* By name, else MAIA_TE_ISA from the environment, else the fastest usable FP32 kernel. */
const struct fw_gemm_kernel *fw_gemm_kernel_find(const char *name);
/* The kernel MAIA_TE_ISA names, where it runs here, or NULL. */
const struct fw_gemm_kernel *fw_gemm_kernel_forced(void);
/*
 * The kernel for one GEMM on an engine set to k: k itself, except that a
 * BF16 kernel falls back to the fastest FP32 one when an operand is not
 * exact in BF16, and the default kernel gives way to the fastest BF16 one
 * (when that measured faster) when both are.
 */
const struct fw_gemm_kernel *fw_gemm_kernel_for(const struct fw_gemm_kernel *k,
						bool bf16_exact);
/* The kernel's measured speed in FLOP/s on one thread (cached panels). */
double fw_gemm_kernel_speed(const struct fw_gemm_kernel *k);
/* The BF16 pair kernels and packers (gemm_bf16.c), listed in gemm_kernels.c. */
void fw_gemm_bf16_portable(size_t kc, const void *a, const void *b, size_t ldb, float *c,
			   size_t ldc, int accumulate);
void fw_gemm_bf16_avx512(size_t kc, const void *a, const void *b, size_t ldb, float *c,
			 size_t ldc, int accumulate);
void fw_gemm_bf16_avx512_rows(size_t kc, const void *a, const void *b, size_t ldb, float *c,
			      size_t ldc, int accumulate, unsigned int rows);
void fw_gemm_to_pairs_portable(const float *src, size_t ld, size_t kc, unsigned int w,
			       uint16_t *dst);
/*
 * One k pair of a B slice into a BF16 kernel's pair panels: columns j < n
 * of row r0 (k even) and r1 (k + 1, NULL past the slice: zero), BF16 or
 * (f32) FP32 values exact in BF16, column j's pair at dst[j / nr * pstride
 * + j % nr * 2]; columns n..np-1 (np a multiple of nr) zero.
 */
void fw_gemm_pair_row(const void *r0, const void *r1, bool f32, size_t n, size_t np,
		      unsigned int nr, size_t pstride, uint16_t *dst);
void fw_gemm_pair_row_portable(const void *r0, const void *r1, bool f32, size_t n, size_t np,
			       unsigned int nr, size_t pstride, uint16_t *dst);
void fw_gemm_to_pairs_avx512(const float *src, size_t ld, size_t kc, unsigned int w,
			     uint16_t *dst);
/*
 * fw_gemm_pair_row() of block-format (OCP MX) rows, decoded on the way:
 * row k's elements e0 and scales s0 from its column 0, row k + 1's e1, s1
 * (NULL: zero), n a multiple of the block. The same BF16 values as
 * fw_mx_decode_scalar() truncated (the _portable version, the reference);
 * false: no SIMD version for this dtype, n or CPU, nothing written.
 */
bool fw_gemm_mx_pair_row(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
			 const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
			 unsigned int nr, size_t pstride, uint16_t *dst);
void fw_gemm_mx_pair_row_portable(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
				  const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
				  unsigned int nr, size_t pstride, uint16_t *dst);
/* BF16 pair kernels' tile */
#define FW_GEMM_BF16_MR		14
#define FW_GEMM_BF16_NR		32
/* The AMX kernel and its packers (gemm_amx.c); usable: the CPU has AMX-BF16 and Linux grants it. */
bool fw_gemm_amx_usable(void);
void fw_gemm_amx(size_t kc, const void *a, const void *b, size_t ldb, float *c, size_t ldc,
		 int accumulate);
void fw_gemm_amx_pack_a(const float *rows, size_t ld, size_t kc, unsigned int mr, float *a);
void fw_gemm_amx_to_pairs(const float *src, size_t ld, size_t kc, unsigned int w,
			  uint16_t *dst);

/* ---- operations ---- */

/* Elements per row chunk that ops stage at once (a multiple of every block). */
#define FW_CHUNK	4096u

/* Number of rows (dims 0..2) of a normalized shape. */
static inline uint64_t fw_rows(const uint64_t shape[4])
{
	return shape[0] * shape[1] * shape[2];
}

/* Element offset of row r (index over dims 0..2 of shape) in a tensor with strides st. */
static inline uint64_t fw_row_offset(const uint64_t shape[4], const uint64_t st[4], uint64_t r)
{
	uint64_t i2 = r % shape[2], i1 = r / shape[2] % shape[1], i0 = r / shape[2] / shape[1];

	return i0 * st[0] + i1 * st[1] + i2 * st[2];
}

/* x broadcasts to shape: each dim equal or 1. */
static inline bool fw_broadcasts(const struct fw_tview *x, const uint64_t shape[4])
{
	for (int d = 0; d < 4; d++)
		if (x->shape[d] != shape[d] && x->shape[d] != 1)
			return false;
	return true;
}

static inline bool fw_dtype_is_float(unsigned int dt)
{
	return dt == MAIA_DTYPE_FP32 || dt == MAIA_DTYPE_FP16 || dt == MAIA_DTYPE_BF16;
}

float fw_act(float x, unsigned int act);

int fw_op_gemm(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		 const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_gemm_batched(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
			 const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_eltwise(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		    const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_rownorm(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		    const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_attention(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		      const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_layout(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		   const struct maia_job_mem *mem, struct maia_op_stats *stats);
int fw_op_reduce(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		   const struct maia_job_mem *mem, struct maia_op_stats *stats);

static inline float fw_f32_from_bits(uint32_t u)
{
	union { uint32_t u; float f; } v = { .u = u };

	return v.f;
}

static inline uint32_t fw_f32_bits(float f)
{
	union { float f; uint32_t u; } v = { .f = f };

	return v.u;
}

#endif /* FWSIM_TE_H */
