// SPDX-License-Identifier: MIT
/*
 * GEMM micro-kernels: C[mr x nr] (+)= A_panel * B_panel over kc, FP32 with
 * FP32 accumulation. The A panel is mr rows of kc floats (a row-major block
 * of the slice the tile decoded into SRAM: A needs no packing pass) and the
 * B panel kc rows of nr floats, ldb floats apart (ldb = nr for packed
 * panels). B rows and C rows (ldc apart) are 64-byte aligned.
 *
 * The ISA is chosen at run time (__builtin_cpu_supports); each kernel carries
 * its own target attribute, so this file needs no special compiler flags.
 * MAIA_TE_ISA=portable|avx2|avx512 in the environment forces one (if the
 * CPU has it), for tests and benchmarks.
 */
#include <stdlib.h>
#include <string.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static void kern_portable(size_t kc, const float *a, const float *b, size_t ldb, float *c,
			  size_t ldc, int accumulate)
{
	float acc[6][16];
	size_t k;
	int i, j;

	for (i = 0; i < 6; i++)
		for (j = 0; j < 16; j++)
			acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f;
	for (k = 0; k < kc; k++, b += ldb)
		for (i = 0; i < 6; i++)
			for (j = 0; j < 16; j++)
				acc[i][j] += a[i * kc + k] * b[j];
	for (i = 0; i < 6; i++)
		for (j = 0; j < 16; j++)
			c[i * ldc + j] = acc[i][j];
}

#if HAVE_X86
__attribute__((target("avx2,fma")))
static void kern_avx2(size_t kc, const float *a, const float *b, size_t ldb, float *c,
		      size_t ldc, int accumulate)
{
	__m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
	const float *a0 = a, *a1 = a + kc, *a2 = a + 2 * kc, *a3 = a + 3 * kc;
	const float *a4 = a + 4 * kc, *a5 = a + 5 * kc;
	size_t k;

	if (accumulate) {
		c00 = _mm256_load_ps(c + 0 * ldc);
		c01 = _mm256_load_ps(c + 0 * ldc + 8);
		c10 = _mm256_load_ps(c + 1 * ldc);
		c11 = _mm256_load_ps(c + 1 * ldc + 8);
		c20 = _mm256_load_ps(c + 2 * ldc);
		c21 = _mm256_load_ps(c + 2 * ldc + 8);
		c30 = _mm256_load_ps(c + 3 * ldc);
		c31 = _mm256_load_ps(c + 3 * ldc + 8);
		c40 = _mm256_load_ps(c + 4 * ldc);
		c41 = _mm256_load_ps(c + 4 * ldc + 8);
		c50 = _mm256_load_ps(c + 5 * ldc);
		c51 = _mm256_load_ps(c + 5 * ldc + 8);
	} else {
		c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
		c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
	}
#pragma GCC unroll 4
	for (k = 0; k < kc; k++, b += ldb) {
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), ai;

		ai = _mm256_broadcast_ss(a0 + k);
		c00 = _mm256_fmadd_ps(ai, b0, c00);
		c01 = _mm256_fmadd_ps(ai, b1, c01);
		ai = _mm256_broadcast_ss(a1 + k);
		c10 = _mm256_fmadd_ps(ai, b0, c10);
		c11 = _mm256_fmadd_ps(ai, b1, c11);
		ai = _mm256_broadcast_ss(a2 + k);
		c20 = _mm256_fmadd_ps(ai, b0, c20);
		c21 = _mm256_fmadd_ps(ai, b1, c21);
		ai = _mm256_broadcast_ss(a3 + k);
		c30 = _mm256_fmadd_ps(ai, b0, c30);
		c31 = _mm256_fmadd_ps(ai, b1, c31);
		ai = _mm256_broadcast_ss(a4 + k);
		c40 = _mm256_fmadd_ps(ai, b0, c40);
		c41 = _mm256_fmadd_ps(ai, b1, c41);
		ai = _mm256_broadcast_ss(a5 + k);
		c50 = _mm256_fmadd_ps(ai, b0, c50);
		c51 = _mm256_fmadd_ps(ai, b1, c51);
	}
	_mm256_store_ps(c + 0 * ldc, c00);
	_mm256_store_ps(c + 0 * ldc + 8, c01);
	_mm256_store_ps(c + 1 * ldc, c10);
	_mm256_store_ps(c + 1 * ldc + 8, c11);
	_mm256_store_ps(c + 2 * ldc, c20);
	_mm256_store_ps(c + 2 * ldc + 8, c21);
	_mm256_store_ps(c + 3 * ldc, c30);
	_mm256_store_ps(c + 3 * ldc + 8, c31);
	_mm256_store_ps(c + 4 * ldc, c40);
	_mm256_store_ps(c + 4 * ldc + 8, c41);
	_mm256_store_ps(c + 5 * ldc, c50);
	_mm256_store_ps(c + 5 * ldc + 8, c51);
}

/* 8 x 32: 16 zmm accumulators, two B vectors, A broadcast from memory. */
__attribute__((target("avx512f")))
static void kern_avx512(size_t kc, const float *a, const float *b, size_t ldb, float *c,
			size_t ldc, int accumulate)
{
	__m512 acc[8][2];
	size_t k;
	int i;

	for (i = 0; i < 8; i++) {
		acc[i][0] = accumulate ? _mm512_load_ps(c + i * ldc) : _mm512_setzero_ps();
		acc[i][1] = accumulate ? _mm512_load_ps(c + i * ldc + 16) : _mm512_setzero_ps();
	}
	for (k = 0; k < kc; k++, b += ldb) {
		__m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);

		for (i = 0; i < 8; i++) {
			__m512 ai = _mm512_set1_ps(a[i * kc + k]);

			acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	for (i = 0; i < 8; i++) {
		_mm512_store_ps(c + i * ldc, acc[i][0]);
		_mm512_store_ps(c + i * ldc + 16, acc[i][1]);
	}
}
#endif

static const struct maia_gemm_kernel kernels[] = {
#if HAVE_X86
	{ "avx512", 8, 32, kern_avx512 },
	{ "avx2", 6, 16, kern_avx2 },
#endif
	{ "portable", 6, 16, kern_portable },
};

bool maia_gemm_kernel_usable(const struct maia_gemm_kernel *k)
{
#if HAVE_X86
	__builtin_cpu_init();
	if (!strcmp(k->name, "avx512"))
		return __builtin_cpu_supports("avx512f");
	if (!strcmp(k->name, "avx2"))
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
	return !strcmp(k->name, "portable");
}

const struct maia_gemm_kernel *maia_gemm_kernel_list(size_t *n)
{
	*n = sizeof(kernels) / sizeof(kernels[0]);
	return kernels;
}

/*
 * Run a kernel once on small integers (exact in FP32) and compare with a
 * plain loop, both without and with accumulation. A kernel that disagrees
 * is never used: a wrong GEMM is worse than a slow one.
 */
static bool kernel_selftest(const struct maia_gemm_kernel *k)
{
	enum { KC = 37, MAXR = 8, MAXC = 32, LDC = 2 * MAXC, LDB = MAXC + 16 };
	float a[MAXR * KC] __attribute__((aligned(64)));
	float b[LDB * KC] __attribute__((aligned(64)));
	float c[MAXR * LDC] __attribute__((aligned(64)));
	unsigned int i, j, kk;

	if (k->mr > MAXR || k->nr > MAXC)
		return false;
	for (i = 0; i < k->mr * KC; i++)
		a[i] = (float)((int)(i * 7 % 13) - 6);
	for (i = 0; i < LDB * KC; i++)
		b[i] = (float)((int)(i * 5 % 11) - 5);
	for (i = 0; i < MAXR * LDC; i++)
		c[i] = (float)(i % 9);
	for (int acc = 1; acc >= 0; acc--) {
		k->fn(KC, a, b, LDB, c, LDC, acc);
		for (i = 0; i < k->mr; i++)
			for (j = 0; j < k->nr; j++) {
				float want = acc ? (float)((i * LDC + j) % 9) : 0.0f;

				for (kk = 0; kk < KC; kk++)
					want += a[i * KC + kk] * b[kk * LDB + j];
				if (c[i * LDC + j] != want)
					return false;
			}
		for (i = 0; i < MAXR * LDC; i++)	/* back to the start for acc = 0 */
			c[i] = (float)(i % 9);
	}
	return true;
}

static bool kernel_ok(const struct maia_gemm_kernel *k)
{
	return maia_gemm_kernel_usable(k) && kernel_selftest(k);
}

const struct maia_gemm_kernel *maia_gemm_kernel_find(const char *name)
{
	const char *force = name ? name : getenv("MAIA_TE_ISA");
	size_t i;

	for (i = 0; force && i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, force) && kernel_ok(&kernels[i]))
			return &kernels[i];
	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (kernel_ok(&kernels[i]))
			return &kernels[i];
	return &kernels[sizeof(kernels) / sizeof(kernels[0]) - 1];
}
