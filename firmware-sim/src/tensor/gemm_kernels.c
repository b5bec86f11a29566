// SPDX-License-Identifier: MIT
/*
 * GEMM micro-kernels: C[mr x nr] (+)= A_panel * B_panel over kc, FP32 with
 * FP32 accumulation. The A panel is kc columns of mr floats (a[k * mr + i]:
 * one sequential stream, measured 4-8 % faster than mr separate rows) and
 * the B panel kc rows of nr floats, ldb floats apart (ldb = nr for packed
 * panels). B rows and C rows (ldc apart) are 64-byte aligned.
 *
 * Each kernel carries its own target attribute, so this file needs no
 * special compiler flags. The kernel is chosen at run time by measured
 * speed among those the CPU has (__builtin_cpu_supports) and that pass
 * their self-test, not by the widest ISA: Zen 4 runs 512-bit FMAs as two
 * halves, and on the Intel and AMD hosts measured here the AVX2 kernel beat
 * the AVX-512 one (Documentation/tensor-engine.rst). MAIA_TE_ISA=
 * portable|avx2|avx512 in the environment forces one (if the CPU has it),
 * for tests and benchmarks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	for (k = 0; k < kc; k++, b += ldb, a += 6)
		for (i = 0; i < 6; i++)
			for (j = 0; j < 16; j++)
				acc[i][j] += a[i] * b[j];
	for (i = 0; i < 6; i++)
		for (j = 0; j < 16; j++)
			c[i * ldc + j] = acc[i][j];
}

/* A panel from mr rows of kc floats (ld apart): panel[k * mr + i] = rows[i * ld + k]. */
static void pack_a_portable(const float *rows, size_t ld, size_t kc, unsigned int mr,
			    float *panel)
{
	for (size_t k = 0; k < kc; k++)
		for (unsigned int i = 0; i < mr; i++)
			panel[k * mr + i] = rows[i * ld + k];
}

#if HAVE_X86
/*
 * The same for mr = 6 or 8, eight columns at a time: an 8 x 8 transpose in
 * registers (rows past mr are zero) and one store per column, written out
 * in full so that nothing spills. A scalar loop spent 12-15 % of a 512^3
 * GEMM here.
 */
__attribute__((target("avx2"), always_inline))
static inline void pack8_avx2(const float *rows, size_t ld, size_t kc, const unsigned int mr,
			      float *panel)
{
	const __m256i keep6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
	const __m256 zero = _mm256_setzero_ps();
	size_t k = 0;

	for (; k + 8 <= kc; k += 8) {
		const float *r = rows + k;
		float *out = panel + k * mr;
		__m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + ld);
		__m256 r2 = _mm256_loadu_ps(r + 2 * ld), r3 = _mm256_loadu_ps(r + 3 * ld);
		__m256 r4 = _mm256_loadu_ps(r + 4 * ld), r5 = _mm256_loadu_ps(r + 5 * ld);
		__m256 r6 = mr == 8 ? _mm256_loadu_ps(r + 6 * ld) : zero;
		__m256 r7 = mr == 8 ? _mm256_loadu_ps(r + 7 * ld) : zero;
		__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
		__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
		__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
		__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
		__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
		__m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
		__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
		__m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);

		/* column j = rows 0..7 of k + j; with mr = 6 each store's tail is rewritten next */
		_mm256_storeu_ps(out + 0 * mr, _mm256_permute2f128_ps(s0, s4, 0x20));
		_mm256_storeu_ps(out + 1 * mr, _mm256_permute2f128_ps(s1, s5, 0x20));
		_mm256_storeu_ps(out + 2 * mr, _mm256_permute2f128_ps(s2, s6, 0x20));
		_mm256_storeu_ps(out + 3 * mr, _mm256_permute2f128_ps(s3, s7, 0x20));
		_mm256_storeu_ps(out + 4 * mr, _mm256_permute2f128_ps(s0, s4, 0x31));
		_mm256_storeu_ps(out + 5 * mr, _mm256_permute2f128_ps(s1, s5, 0x31));
		_mm256_storeu_ps(out + 6 * mr, _mm256_permute2f128_ps(s2, s6, 0x31));
		if (mr == 8)
			_mm256_storeu_ps(out + 7 * mr, _mm256_permute2f128_ps(s3, s7, 0x31));
		else
			_mm256_maskstore_ps(out + 7 * mr, keep6, _mm256_permute2f128_ps(s3, s7, 0x31));
	}
	if (k < kc)
		pack_a_portable(rows + k, ld, kc - k, mr, panel + k * mr);
}

__attribute__((target("avx2")))
static void pack_a_avx2(const float *rows, size_t ld, size_t kc, unsigned int mr, float *panel)
{
	if (mr == 6)
		pack8_avx2(rows, ld, kc, 6, panel);
	else if (mr == 8)
		pack8_avx2(rows, ld, kc, 8, panel);
	else
		pack_a_portable(rows, ld, kc, mr, panel);
}
#endif

#if HAVE_X86
__attribute__((target("avx2,fma")))
static void kern_avx2(size_t kc, const float *a, const float *b, size_t ldb, float *c,
		      size_t ldc, int accumulate)
{
	__m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
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
	for (k = 0; k < kc; k++, b += ldb, a += 6) {
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), ai;

		ai = _mm256_broadcast_ss(a);
		c00 = _mm256_fmadd_ps(ai, b0, c00);
		c01 = _mm256_fmadd_ps(ai, b1, c01);
		ai = _mm256_broadcast_ss(a + 1);
		c10 = _mm256_fmadd_ps(ai, b0, c10);
		c11 = _mm256_fmadd_ps(ai, b1, c11);
		ai = _mm256_broadcast_ss(a + 2);
		c20 = _mm256_fmadd_ps(ai, b0, c20);
		c21 = _mm256_fmadd_ps(ai, b1, c21);
		ai = _mm256_broadcast_ss(a + 3);
		c30 = _mm256_fmadd_ps(ai, b0, c30);
		c31 = _mm256_fmadd_ps(ai, b1, c31);
		ai = _mm256_broadcast_ss(a + 4);
		c40 = _mm256_fmadd_ps(ai, b0, c40);
		c41 = _mm256_fmadd_ps(ai, b1, c41);
		ai = _mm256_broadcast_ss(a + 5);
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
	for (k = 0; k < kc; k++, b += ldb, a += 8) {
		__m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);

		for (i = 0; i < 8; i++) {
			__m512 ai = _mm512_set1_ps(a[i]);

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

static const struct fw_gemm_kernel kernels[] = {
#if HAVE_X86
	{ "avx512", 8, 32, kern_avx512, pack_a_avx2 },
	{ "avx2", 6, 16, kern_avx2, pack_a_avx2 },
#endif
	{ "portable", 6, 16, kern_portable, pack_a_portable },
};

bool fw_gemm_kernel_usable(const struct fw_gemm_kernel *k)
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

const struct fw_gemm_kernel *fw_gemm_kernel_list(size_t *n)
{
	*n = sizeof(kernels) / sizeof(kernels[0]);
	return kernels;
}

/*
 * Run a kernel once on small integers (exact in FP32) and compare with a
 * plain loop, both without and with accumulation, its A packer included
 * (KC is odd: whole and partial column groups). A kernel that disagrees is
 * never used: a wrong GEMM is worse than a slow one.
 */
static bool kernel_selftest(const struct fw_gemm_kernel *k)
{
	enum { KC = 37, MAXR = 8, MAXC = 32, LDC = 2 * MAXC, LDB = MAXC + 16 };
	float rows[MAXR * KC];
	float a[MAXR * KC + 8] __attribute__((aligned(64)));
	float b[LDB * KC] __attribute__((aligned(64)));
	float c[MAXR * LDC] __attribute__((aligned(64)));
	unsigned int i, j, kk;

	if (k->mr > MAXR || k->nr > MAXC)
		return false;
	for (i = 0; i < k->mr * KC; i++)
		rows[i] = (float)((int)(i * 7 % 13) - 6);
	a[k->mr * KC] = 12345.0f;	/* the packer must not write past the panel */
	k->pack_a(rows, KC, KC, k->mr, a);
	if (a[k->mr * KC] != 12345.0f)
		return false;
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
					want += rows[i * KC + kk] * b[kk * LDB + j];
				if (c[i * LDC + j] != want)
					return false;
			}
		for (i = 0; i < MAXR * LDC; i++)	/* back to the start for acc = 0 */
			c[i] = (float)(i % 9);
	}
	return true;
}

static bool kernel_ok(const struct fw_gemm_kernel *k)
{
	return fw_gemm_kernel_usable(k) && kernel_selftest(k);
}

static double seconds_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * A kernel's speed in FLOP/s on one thread: the best of three runs over
 * packed panels that stay in cache (KC deep, a few C tiles wide), about a
 * millisecond each. Only the ranking matters; best-of-three keeps a busy
 * host's interruptions out of it.
 */
static double kernel_speed(const struct fw_gemm_kernel *k)
{
	enum { KC = 256, LDB = 64, PANELS = 16, ITERS = 8, RUNS = 3 };
	size_t a_len = (size_t)k->mr * KC * PANELS, cols = LDB / k->nr * k->nr;
	float *a = aligned_alloc(64, a_len * sizeof(float));
	float *b = aligned_alloc(64, (size_t)LDB * KC * sizeof(float));
	float *c = aligned_alloc(64, (size_t)8 * LDB * PANELS * sizeof(float));
	double best = 0.0;

	if (a && b && c) {
		for (size_t i = 0; i < a_len; i++)
			a[i] = (float)(i % 7);
		for (size_t i = 0; i < (size_t)LDB * KC; i++)
			b[i] = (float)(i % 5);
		memset(c, 0, (size_t)8 * LDB * PANELS * sizeof(float));
		for (int r = 0; r < RUNS; r++) {
			double t0 = seconds_now(), dt;

			for (int it = 0; it < ITERS; it++)
				for (size_t p = 0; p < PANELS; p++)
					for (size_t col = 0; col + k->nr <= LDB; col += k->nr)
						k->fn(KC, a + p * k->mr * KC, b + col, LDB,
						      c + p * 8 * LDB + col, LDB, 1);
			dt = seconds_now() - t0;
			if (dt > 0.0 && 2.0 * k->mr * KC * cols * PANELS * ITERS / dt > best)
				best = 2.0 * k->mr * KC * cols * PANELS * ITERS / dt;
		}
	}
	free(a);
	free(b);
	free(c);
	return best;
}

static const struct fw_gemm_kernel *fastest;
static pthread_once_t fastest_once = PTHREAD_ONCE_INIT;

/* Once per process: the fastest kernel of those that run here correctly. */
static void pick_fastest(void)
{
	double best = -1.0;

	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
		double speed;

		if (!kernel_ok(&kernels[i]))
			continue;
		speed = kernel_speed(&kernels[i]);
		if (speed > best) {
			best = speed;
			fastest = &kernels[i];
		}
	}
	if (!fastest)
		fastest = &kernels[sizeof(kernels) / sizeof(kernels[0]) - 1];
}

const struct fw_gemm_kernel *fw_gemm_kernel_find(const char *name)
{
	const char *force = name ? name : getenv("MAIA_TE_ISA");
	size_t i;

	for (i = 0; force && i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, force) && kernel_ok(&kernels[i]))
			return &kernels[i];
	pthread_once(&fastest_once, pick_fastest);
	return fastest;
}
