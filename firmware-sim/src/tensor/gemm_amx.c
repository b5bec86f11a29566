// SPDX-License-Identifier: MIT
/*
 * The AMX BF16 GEMM micro-kernel (TDPBF16PS): C[32 x 32] (+)= A * B over
 * kc with FP32 accumulation in four 16 x 16 tiles, 32 k per step. Like the
 * AVX512_BF16 pair kernel (gemm_bf16.c) it takes only operands exact in
 * BF16 (BF16 and the MX formats), so converting them is a truncation:
 * - A as BF16 rows: row i at a + i * kq, kq = kc rounded up to 32, zero
 *   past kc (amx_pack_a(), straight from the decoded rows, no transpose);
 * - B as BF16 pairs like the pair kernel's, zero pairs up to kq
 *   (amx_to_pairs()).
 * Rounding (Intel SDM, TDPBF16PS): per k pair the even product and then
 * the odd one are added to the FP32 accumulator, each add rounded to
 * nearest even; BF16 inputs below 2^-126 read as zero, FP32 results below
 * 2^-126 are flushed to zero. The same error bound as every other kernel.
 *
 * Linux hands out the AMX tile state only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM), once per process; each thread loads the tile
 * configuration the first time it runs the kernel.
 */
#include <pthread.h>
#include <string.h>

#include "te.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM	0x1023
#define XFEATURE_XTILEDATA	18
#define KQ			32	/* k per tile step */

static bool amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

/* CPUID.(7,0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE; then the kernel's permission. */
static void amx_probe(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24)))
		return;
	amx_ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool fw_gemm_amx_usable(void)
{
	pthread_once(&amx_once, amx_probe);
	return amx_ok && __builtin_cpu_supports("avx512f");
}

/* Palette 1: tiles 0-3 the C quarters, 4-5 two A row blocks, 6-7 two B column blocks. */
struct tile_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} __attribute__((packed));

static __thread bool tiles_loaded;

__attribute__((target("amx-tile")))
static void load_tiles(void)
{
	struct tile_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = 16;
	}
	_tile_loadconfig(&cfg);
	tiles_loaded = true;
}

__attribute__((target("amx-tile,amx-bf16")))
void fw_gemm_amx(size_t kc, const void *ap, const void *bp, size_t ldb, float *c, size_t ldc,
		 int accumulate)
{
	const uint16_t *a = ap, *b = bp;
	size_t kq = (kc + KQ - 1) / KQ * KQ, cs = ldc * sizeof(float);

	if (!tiles_loaded)
		load_tiles();
	if (accumulate) {
		_tile_loadd(0, c, cs);
		_tile_loadd(1, c + 16, cs);
		_tile_loadd(2, c + 16 * ldc, cs);
		_tile_loadd(3, c + 16 * ldc + 16, cs);
	} else {
		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
	}
	for (size_t k = 0; k < kq; k += KQ) {
		_tile_loadd(4, a + k, kq * 2);
		_tile_loadd(5, a + 16 * kq + k, kq * 2);
		_tile_loadd(6, b + k / 2 * ldb, ldb * 2);
		_tile_loadd(7, b + k / 2 * ldb + 32, ldb * 2);
		_tile_dpbf16ps(0, 4, 6);
		_tile_dpbf16ps(1, 4, 7);
		_tile_dpbf16ps(2, 5, 6);
		_tile_dpbf16ps(3, 5, 7);
	}
	_tile_stored(0, c, cs);
	_tile_stored(1, c + 16, cs);
	_tile_stored(2, c + 16 * ldc, cs);
	_tile_stored(3, c + 16 * ldc + 16, cs);
}

/* mr FP32 rows of kc (ld apart) to BF16 rows of kq (truncation: the values are exact). */
__attribute__((target("avx512f")))
void fw_gemm_amx_pack_a(const float *rows, size_t ld, size_t kc, unsigned int mr, float *out)
{
	size_t kq = (kc + KQ - 1) / KQ * KQ;
	uint16_t *dst = (uint16_t *)out;

	for (unsigned int i = 0; i < mr; i++, rows += ld, dst += kq) {
		size_t k = 0;

		for (; k < kq; k += 16) {
			__mmask16 m = k >= kc ? 0 : kc - k >= 16 ? 0xffff
						: (__mmask16)((1u << (kc - k)) - 1);
			__m512i x = _mm512_maskz_loadu_epi32(m, rows + k);

			_mm256_storeu_si256((__m256i *)(dst + k),
					    _mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)));
		}
	}
}

/* B pairs as the pair kernel's, then zero pairs up to kq. */
void fw_gemm_amx_to_pairs(const float *src, size_t ld, size_t kc, unsigned int w,
			  uint16_t *dst)
{
	size_t k2 = (kc + 1) / 2 * 2, kq = (kc + KQ - 1) / KQ * KQ;

	fw_gemm_to_pairs_avx512(src, ld, kc, w, dst);
	memset(dst + k2 * w, 0, (kq - k2) * w * sizeof(uint16_t));
}
#else
bool fw_gemm_amx_usable(void)
{
	return false;
}
#endif
