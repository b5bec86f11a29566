// SPDX-License-Identifier: MIT
/*
 * TVP programs on the real device (in the guest): kernels written in the
 * assembly syntax, assembled by libmaia, run with maia_cmd_kernel and
 * checked against a CPU reference computed here in double precision (or
 * bit-exactly where the operation is exact): vector add, a masked tail, a
 * fused row softmax, a tiled VDOT matmul, reductions along both axes, BF16
 * loads and stores; and the KERNEL_INVALID, MMU_FAULT and WATCHDOG ends of
 * a job as libmaia reports them. kselftest harness, one process and device
 * file per test.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "libmaia.h"
#include "drm/maia_accel.h"
#include "maia/hw/queue.h"

#define SEC	1000000000ll
#define SCRATCH	(8u << 20)

FIXTURE(tvp) {
	struct maia_device *dev;
	struct maia_cmdbuf *cb;
	struct maia_bo *bo;	/* host scratch, CPU-mapped */
	uint8_t *cpu;
	uint64_t va;
	struct maia_kernel *k;
};

FIXTURE_SETUP(tvp)
{
	int err = maia_device_open(0, &self->dev);

	if (err == -ENODEV)
		SKIP(return, "no Maia device");
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 4096, &self->cb));
	ASSERT_EQ(0, maia_bo_create(self->dev, SCRATCH, MAIA_BO_HOST, &self->bo));
	ASSERT_EQ(0, maia_bo_map(self->bo, (void **)&self->cpu));
	memset(self->cpu, 0, SCRATCH);
	self->va = maia_bo_va(self->bo);
}

FIXTURE_TEARDOWN(tvp)
{
	maia_kernel_destroy(self->k);
	maia_cmdbuf_destroy(self->cb);
	maia_bo_destroy(self->bo);
	maia_device_close(self->dev);
}

/* Assemble src into self->k; 0 or the assembler's error (printed). */
static int load(struct _test_data_tvp *self, const char *src)
{
	struct maia_tvp_insn *insns;
	uint32_t count;
	int err = maia_tvp_assemble(src, &insns, &count);

	if (err) {
		fprintf(stderr, "# %s\n", maia_last_error());
		return err;
	}
	err = maia_kernel_create(self->dev, insns, count, &self->k);
	free(insns);
	return err;
}

/* Run self->k once over grid with args; maia_run's result. */
static int run(struct _test_data_tvp *self, uint32_t gx, uint32_t gy, const uint64_t *args,
	       uint32_t nargs, uint32_t budget, struct maia_job_status *st)
{
	const uint32_t grid[3] = { gx, gy, 1 };
	int err;

	maia_cmdbuf_reset(self->cb);
	err = maia_cmd_kernel(self->cb, self->k, grid, args, nargs, budget);
	if (err)
		return err;
	err = maia_run(self->dev, self->cb, 60 * SEC, st);
	if (err)
		fprintf(stderr, "# %s\n", maia_last_error());
	return err;
}

static void fill(float *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((int)((i * 7919u + seed * 104729u) % 200u) - 100) / 50.0f;
}

/* Largest |got - ref| / max(floor, |ref|): relative, absolute below floor. */
static double max_rel(const float *got, const double *ref, size_t n, double floor)
{
	double m = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs(got[i] - ref[i]) / fmax(floor, fabs(ref[i]));

		if (!(d <= m))
			m = isnan(d) ? INFINITY : d;
	}
	return m;
}

/*
 * out[i] = a[i] + b[i] for i < n: s1 = a, s2 = b, s3 = out, s4 = n; one
 * instance per 1024 elements, the last one masked to the n % 1024 left.
 */
static const char vector_add[] =
	"	pid s5, 0\n"
	"	muli s6, s5, 1024	# first element of this instance\n"
	"	muli s7, s6, 4\n"
	"	add s1, s1, s7\n"
	"	add s2, s2, s7\n"
	"	add s3, s3, s7\n"
	"	sub s8, s4, s6		# elements left\n"
	"	vsplat v10, s8\n"
	"	viota v11, 0\n"
	"	vicmp v12, v11, v10, lt	# lane < left\n"
	"	vld v1, s1, unit, f32, v12\n"
	"	vld v2, s2, unit, f32, v12\n"
	"	vfadd v3, v1, v2\n"
	"	vst v3, s3, unit, f32, v12\n"
	"	halt\n";

TEST_F(tvp, vector_add)
{
	enum { N = 8192 };
	float *a = (float *)self->cpu, *b = a + N, *out = b + N;
	uint64_t args[] = { self->va, self->va + 4 * N, self->va + 8 * N, N };
	size_t bad = 0;

	fill(a, N, 1);
	fill(b, N, 2);
	ASSERT_EQ(0, load(self, vector_add));
	ASSERT_EQ(0, run(self, N / 1024, 1, args, 4, 0, NULL));
	for (size_t i = 0; i < N; i++)
		bad += out[i] != a[i] + b[i];	/* one rounding: exact in float */
	EXPECT_EQ(0, bad);
}

TEST_F(tvp, masked_tail)
{
	enum { N = 2500, CAP = 3072 };
	float *a = (float *)self->cpu, *b = a + CAP, *out = b + CAP;
	uint64_t args[] = { self->va, self->va + 4 * CAP, self->va + 8 * CAP, N };
	size_t bad = 0, touched = 0;

	fill(a, CAP, 3);
	fill(b, CAP, 4);
	for (size_t i = 0; i < CAP; i++)
		out[i] = -12345.0f;
	ASSERT_EQ(0, load(self, vector_add));
	ASSERT_EQ(0, run(self, 3, 1, args, 4, 0, NULL));
	for (size_t i = 0; i < N; i++)
		bad += out[i] != a[i] + b[i];
	for (size_t i = N; i < CAP; i++)
		touched += out[i] != -12345.0f;
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, touched);	/* masked lanes are not stored */
}

/*
 * Row softmax, one instance per row: s1 = x, s2 = out, s3 = cols (<= 1024),
 * s4 = row stride in bytes. Lanes past cols are -inf, so they neither win
 * the max nor add to the sum.
 */
static const char softmax[] =
	"	pid s5, 0\n"
	"	mul s6, s5, s4\n"
	"	add s1, s1, s6\n"
	"	add s2, s2, s6\n"
	"	vsplat v10, s3\n"
	"	viota v11, 0\n"
	"	vicmp v12, v11, v10, lt\n"
	"	vsplati v13, -inf\n"
	"	vld v1, s1, unit, f32, v12\n"
	"	vsel v1, v1, v13, v12\n"
	"	vredmax v2, v1, 1		# the row's max in lane 0\n"
	"	vbcast v2, v2\n"
	"	vfsub v3, v1, v2\n"
	"	vexp v3, v3\n"
	"	vredsum v4, v3, 1\n"
	"	vbcast v4, v4\n"
	"	vfdiv v5, v3, v4\n"
	"	vst v5, s2, unit, f32, v12\n"
	"	halt\n";

TEST_F(tvp, fused_row_softmax)
{
	enum { R = 24, C = 1000, LD = 1024 };
	float *x = (float *)self->cpu, *out = x + R * LD;
	static double ref[R * LD];
	uint64_t args[] = { self->va, self->va + 4 * R * LD, C, 4 * LD };
	static float got[R * LD];

	fill(x, R * LD, 5);
	for (int i = 0; i < R * LD; i++)
		x[i] *= 3.0f;	/* probabilities over a wide range of exponents */
	for (int r = 0; r < R; r++) {
		double mx = -INFINITY, sum = 0;

		for (int c = 0; c < C; c++)
			mx = fmax(mx, x[r * LD + c]);
		for (int c = 0; c < C; c++)
			sum += exp(x[r * LD + c] - mx);
		for (int c = 0; c < C; c++)
			ref[r * C + c] = exp(x[r * LD + c] - mx) / sum;
	}
	ASSERT_EQ(0, load(self, softmax));
	ASSERT_EQ(0, run(self, R, 1, args, 4, 0, NULL));
	for (int r = 0; r < R; r++)
		memcpy(&got[r * C], &out[r * LD], C * sizeof(float));
	/* exp within a few ULP, then a sum of 1000 terms in float: 1e-5 relative. */
	EXPECT_GT(1e-5, max_rel(got, ref, R * C, 0));
	EXPECT_EQ(0.0f, out[LD - 1]);	/* past cols: not stored */
}

/*
 * C[M x N] = A[M x K] B[K x N], 32 x 32 tiles, one instance per tile of C
 * (pid 0: tile row, pid 1: tile column), K in steps of 32 through VDOT.
 * s1 = A, s2 = B, s3 = C, s4 = K (A's row length), s5 = N (B's and C's).
 */
static const char matmul[] =
	"	shape 32, 32\n"
	"	pid s7, 0\n"
	"	pid s8, 1\n"
	"	viota v0, 0\n"
	"	vsplati v20, 5\n"
	"	vshr v21, v0, v20	# lane / 32: row in the tile\n"
	"	vsplati v22, 31\n"
	"	vand v23, v0, v22	# lane % 32: column\n"
	"	vsplat v24, s4\n"
	"	vimul v25, v21, v24\n"
	"	viadd v26, v25, v23	# A tile offsets (elements)\n"
	"	vsplat v24, s5\n"
	"	vimul v25, v21, v24\n"
	"	viadd v27, v25, v23	# B and C tile offsets\n"
	"	muli s9, s7, 128\n"
	"	mul s9, s9, s4\n"
	"	add s1, s1, s9		# A + 32 * tile row * K * 4\n"
	"	muli s10, s8, 128\n"
	"	add s2, s2, s10		# B + 32 * tile column * 4\n"
	"	muli s11, s7, 128\n"
	"	mul s11, s11, s5\n"
	"	add s3, s3, s11\n"
	"	add s3, s3, s10\n"
	"	vsplati v30, 0\n"
	"	li s12, 0\n"
	"	muli s13, s5, 128	# 32 rows of B\n"
	"loop:\n"
	"	vld v1, s1, v26, f32\n"
	"	vld v2, s2, v27, f32\n"
	"	vdot v30, v1, v2, 32\n"
	"	addi s1, s1, 128\n"
	"	add s2, s2, s13\n"
	"	addi s12, s12, 32\n"
	"	blt s12, s4, loop\n"
	"	vst v30, s3, v27, f32\n"
	"	halt\n";

TEST_F(tvp, tiled_vdot_matmul)
{
	enum { M = 64, K = 96, N = 96 };
	float *a = (float *)self->cpu, *b = a + M * K, *c = b + K * N;
	uint64_t args[] = { self->va, self->va + 4 * M * K, self->va + 4 * (M * K + K * N), K, N };
	static double ref[M * N];

	fill(a, M * K, 6);
	fill(b, K * N, 7);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;

			for (int k = 0; k < K; k++)
				s += (double)a[i * K + k] * b[k * N + j];
			ref[i * N + j] = s;
		}
	ASSERT_EQ(0, load(self, matmul));
	ASSERT_EQ(0, run(self, M / 32, N / 32, args, 5, 0, NULL));
	/* 96 FP32 products and sums of values up to 4: 1e-5 of max(1, |ref|). */
	EXPECT_GT(1e-5, max_rel(c, ref, M * N, 1));
}

/*
 * A 16 x 64 matrix reduced along both axes: s1 = x, s2 = out: row sums
 * (16), column sums (64), row maxima (16), column minima (64).
 */
static const char reductions[] =
	"	shape 16, 64\n"
	"	vld v1, s1, unit, f32\n"
	"	vredsum v2, v1, 1\n"
	"	vredsum v3, v1, 0\n"
	"	vredmax v4, v1, 1\n"
	"	vredmin v5, v1, 0\n"
	"	shape 1, 16\n"
	"	vst v2, s2, unit, f32\n"
	"	addi s3, s2, 64\n"
	"	shape 1, 64\n"
	"	vst v3, s3, unit, f32\n"
	"	addi s3, s2, 320\n"
	"	shape 1, 16\n"
	"	vst v4, s3, unit, f32\n"
	"	addi s3, s2, 384\n"
	"	shape 1, 64\n"
	"	vst v5, s3, unit, f32\n"
	"	halt\n";

TEST_F(tvp, reductions)
{
	enum { R = 16, C = 64 };
	float *x = (float *)self->cpu, *out = x + R * C;
	uint64_t args[] = { self->va, self->va + 4 * R * C };
	double ref[R + C + R + C];

	fill(x, R * C, 8);
	x[5 * C + 7] = 100.0f;		/* a row maximum */
	x[9 * C + 60] = -100.0f;	/* a column minimum */
	for (int r = 0; r < R; r++) {
		ref[r] = 0;
		ref[R + C + r] = -INFINITY;
		for (int c = 0; c < C; c++) {
			ref[r] += x[r * C + c];
			ref[R + C + r] = fmax(ref[R + C + r], x[r * C + c]);
		}
	}
	for (int c = 0; c < C; c++) {
		ref[R + c] = 0;
		ref[2 * R + C + c] = INFINITY;
		for (int r = 0; r < R; r++) {
			ref[R + c] += x[r * C + c];
			ref[2 * R + C + c] = fmin(ref[2 * R + C + c], x[r * C + c]);
		}
	}
	ASSERT_EQ(0, load(self, reductions));
	ASSERT_EQ(0, run(self, 1, 1, args, 2, 0, NULL));
	EXPECT_GT(1e-5, max_rel(out, ref, R + C, 1));		/* sums */
	EXPECT_EQ(0, max_rel(out + R + C, ref + R + C, R + C, 1));	/* max, min: exact */
	EXPECT_EQ(100.0f, out[R + C + 5]);
	EXPECT_EQ(-100.0f, out[2 * R + C + 60]);
}

/* BF16 in, y = 2x + 1 in binary32, BF16 out (rounded to nearest even). */
static const char bf16_axpb[] =
	"	vld v1, s1, unit, bf16\n"
	"	vsplati v2, 2.0\n"
	"	vsplati v3, 1.0\n"
	"	vfma v4, v1, v2, v3\n"
	"	vst v4, s2, unit, bf16\n"
	"	halt\n";

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Round to nearest even; finite values only here. */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

TEST_F(tvp, bf16_load_store)
{
	enum { N = 1024 };
	uint16_t *x = (uint16_t *)self->cpu, *y = x + N;
	uint64_t args[] = { self->va, self->va + 2 * N };
	size_t bad = 0;

	for (int i = 0; i < N; i++)
		x[i] = (uint16_t)(0x3c00 + i * 13);	/* 2^-7 .. about 3e4, both signs below */
	for (int i = 0; i < N; i += 3)
		x[i] |= 0x8000;
	ASSERT_EQ(0, load(self, bf16_axpb));
	ASSERT_EQ(0, run(self, 1, 1, args, 2, 0, NULL));
	for (int i = 0; i < N; i++) {
		/* 2x + 1 of a BF16 value is exact in binary32: one rounding, to BF16. */
		uint16_t want = f32_to_bf16((float)(2.0 * bf16_to_f32(x[i]) + 1.0));

		if (y[i] != want && bad++ < 4)
			fprintf(stderr, "# x 0x%04x: got 0x%04x, want 0x%04x\n", x[i], y[i], want);
	}
	EXPECT_EQ(0, bad);
}

/* ---- failing kernels: the job's status and libmaia's message ----------- */

TEST_F(tvp, kernel_invalid)
{
	/* A word the device refuses (opcode 0xff), put there by hand: libmaia would not. */
	const struct maia_tvp_insn bad[2] = { { .op = MAIA_TVP_OP_NOP }, { .op = 0xff } };
	struct maia_cmd_kernel c = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) },
		.num_insns = 2, .grid = { 1, 1, 1 },
	};
	struct maia_job_status st;
	struct maia_kernel *k;

	EXPECT_EQ(-EINVAL, maia_kernel_create(self->dev, bad, 2, &k));
	EXPECT_NE(NULL, strstr(maia_last_error(), "word 1: unknown opcode 0xff"));
	memcpy(self->cpu, bad, sizeof(bad));
	c.program = self->va;
	ASSERT_EQ(0, maia_cmd_raw(self->cb, &c));
	EXPECT_EQ(-EIO, maia_run(self->dev, self->cb, 30 * SEC, &st));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, st.status);
	EXPECT_EQ(MAIA_STATUS_KERNEL_INVALID, st.device_status);
	EXPECT_NE(NULL, strstr(maia_last_error(), "device status 16 (kernel-invalid: the TVP "
				"program failed the device's validation)"));
}

TEST_F(tvp, mmu_fault)
{
	uint64_t bad = DRM_MAIA_VA_END - (1ull << 30);
	uint64_t args[] = { bad, bad, bad, 1024 };
	struct maia_job_status st;

	ASSERT_EQ(0, load(self, vector_add));
	EXPECT_EQ(-EFAULT, run(self, 1, 1, args, 4, 0, &st));
	EXPECT_EQ(DRM_MAIA_JOB_FAULT, st.status);
	EXPECT_EQ(MAIA_STATUS_MMU_FAULT, st.device_status);
	EXPECT_NE(NULL, strstr(maia_last_error(), "mmu-fault: an access outside the "
				"context's mappings"));
}

TEST_F(tvp, watchdog)
{
	struct maia_job_status st;
	uint64_t args[] = { self->va, 77 };

	ASSERT_EQ(0, load(self, "loop:\n\taddi s1, s1, 1\n\tjmp loop\n"));
	EXPECT_EQ(-EIO, run(self, 4, 1, NULL, 0, 1000, &st));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, st.status);
	EXPECT_EQ(MAIA_STATUS_KERNEL_WATCHDOG, st.device_status);
	EXPECT_NE(NULL, strstr(maia_last_error(), "kernel-watchdog: a TVP program instance ran "
				"past its instruction budget"));
	/* The device goes on: a good kernel runs after it on the same context. */
	maia_kernel_destroy(self->k);
	self->k = NULL;
	ASSERT_EQ(0, load(self, "sst s2, s1, i32\n"));
	ASSERT_EQ(0, run(self, 1, 1, args, 2, 0, NULL));
	EXPECT_EQ(77, *(int32_t *)self->cpu);
}

TEST_F(tvp, cmd_kernel_bad_arguments)
{
	const uint32_t zero[3] = { 0, 1, 1 }, big[3] = { 1024, 1024, 2 }, ok[3] = { 1, 1, 1 };
	uint64_t args[MAIA_TVP_MAX_ARGS + 1] = { 0 };

	ASSERT_EQ(0, load(self, "halt\n"));
	EXPECT_EQ(1, maia_kernel_count(self->k));
	EXPECT_NE(0, maia_kernel_va(self->k));
	EXPECT_EQ(-EINVAL, maia_cmd_kernel(self->cb, self->k, zero, NULL, 0, 0));
	EXPECT_NE(NULL, strstr(maia_last_error(), "grid[0] is 0"));
	EXPECT_EQ(-EINVAL, maia_cmd_kernel(self->cb, self->k, big, NULL, 0, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_kernel(self->cb, self->k, ok, args, MAIA_TVP_MAX_ARGS + 1, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_kernel(self->cb, NULL, ok, NULL, 0, 0));
	EXPECT_EQ(0, maia_cmdbuf_size(self->cb));
	EXPECT_EQ(-EINVAL, maia_kernel_create(self->dev, NULL, 1, &self->k));
}

TEST_HARNESS_MAIN
