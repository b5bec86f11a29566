// SPDX-License-Identifier: MIT
/*
 * GEMM throughput of the tensor engine (the MAIA_OP_GEMM path, operands read
 * through struct maia_job_mem from a flat device memory) against OpenBLAS
 * sgemm on the same FP32 values, in the same process with the same number of
 * threads. One JSON object per line:
 *   {"name","value","unit","higher_is_better","baseline","baseline_value","ratio",
 *    "baseline_core","kernel"[,"default"]}
 * Per type and shape, one line per micro-kernel this machine runs that can
 * take the operands (gemm_<type>_<shape>_<kernel>, "default" true for the
 * one the engine picks by itself; the portable ones only up to 512^3), then
 * gemm_<type>_<shape>: the default kernel's figures again, under the name
 * earlier runs used. OpenBLAS runs on its fastest core here (blas_core.c:
 * the widest core the CPU runs unless another is clearly faster).
 *
 * Usage: gemm_bench [--threads N] [--quick] [--max SIZE] [--type NAME] [--no-blas]
 *                   [--cpu-time] [--shape MxNxK] [--rounds N]
 * --shape runs that one shape instead of the standard set (for profiling);
 * --rounds N times exactly N rounds. MAIA_TE_ISA=<kernel> measures only that
 * kernel.
 * With --cpu-time, values are GFLOP per CPU-second of all threads (names end
 * in _cpu, unit "GFLOP/cpu-s"). On stderr first: each kernel's rate on cached
 * panels and, on x86 with AVX2 and FMA, the 256-bit FMA ports' (fma256_peak()).
 */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "maia/engine.h"
#include "maia/hw/queue.h"
#include "maia/hw/tensor.h"
#include "../src/tensor/te.h"
#include "blas_core.h"

void openblas_set_num_threads(int num_threads);

static bool no_blas;
/* the kernels this CPU runs; MAIA_TE_ISA as given */
static const struct fw_gemm_kernel *all[16];
static size_t nall;
static const char *env_isa;

/* --rounds N: exactly N timed rounds (for profiling by cycle counts) */
static int fixed_rounds;

struct flat {
	uint8_t *buf;
	uint64_t size;
};

#define BASE 0x10000000ull

static int flat_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	struct flat *f = opaque;

	if (va < BASE || va - BASE + len > f->size)
		return MAIA_STATUS_MMU_FAULT;
	memcpy(buf, f->buf + (va - BASE), len);
	return MAIA_STATUS_OK;
}

static int flat_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct flat *f = opaque;

	if (va < BASE || va - BASE + len > f->size)
		return MAIA_STATUS_MMU_FAULT;
	memcpy(f->buf + (va - BASE), buf, len);
	return MAIA_STATUS_OK;
}

static int flat_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	struct flat *f = opaque;

	if (va < BASE || va - BASE >= f->size)
		return MAIA_STATUS_MMU_FAULT;
	*ptr = f->buf + (va - BASE);
	*avail = len < f->size - (va - BASE) ? len : f->size - (va - BASE);
	return MAIA_STATUS_OK;
}

static int flat_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return flat_map(opaque, va, len, (const void **)ptr, avail);
}

/* Whether to time by process CPU time (all threads) instead of wall time. */
static bool cpu_time;

/*
 * Wall time, or with --cpu-time the CPU time of all threads: on a shared,
 * oversubscribed machine that measures work per CPU-second, comparable
 * between the engine and OpenBLAS even when neither gets whole cores.
 */
static double now(void)
{
	struct timespec ts;

	clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * The 256-bit FMA ports' rate on this thread, GFLOP per thread-CPU-second:
 * 12 independent FMA chains (the avx2 kernel's 12 accumulators) with
 * operands in registers, best of 5 runs of 2^21 steps: the ceiling of the
 * avx2 kernel's k loop (12 FMAs per k), printed beside the kernels' rates
 * on cached panels.
 */
__attribute__((target("avx2,fma"), noinline))
static double fma256_peak(void)
{
	double best = 0;

	for (int r = 0; r < 5; r++) {
		__m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f), acc[12], sum;
		struct timespec t0, t1;
		volatile float sink;
		double s;

#pragma GCC unroll 12
		for (int j = 0; j < 12; j++)	/* distinct starts: equal chains would be merged */
			acc[j] = _mm256_set1_ps((float)j);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		for (long i = 0; i < 1L << 21; i++) {
#pragma GCC unroll 12
			for (int j = 0; j < 12; j++)
				acc[j] = _mm256_fmadd_ps(acc[j], x, y);
		}
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
		sum = acc[0];
#pragma GCC unroll 11
		for (int j = 1; j < 12; j++)
			sum = _mm256_add_ps(sum, acc[j]);
		sink = _mm256_cvtss_f32(sum);
		(void)sink;
		s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		if (s > 0 && (double)(1L << 21) * 12 * 16 / s > best)
			best = (double)(1L << 21) * 12 * 16 / s;
	}
	return best * 1e-9;
}
#endif

static struct maia_tensor_desc desc2(unsigned int dt, uint64_t va, uint64_t sva,
				     uint32_t r, uint32_t c)
{
	struct maia_tensor_desc d;

	memset(&d, 0, sizeof(d));
	d.dtype = (uint8_t)dt;
	d.rank = 2;
	d.addr = va;
	d.scale_addr = sva;
	d.shape[0] = r;
	d.shape[1] = c;
	d.strides[0] = c;
	d.strides[1] = 1;
	return d;
}

/*
 * Buffers on 2 MiB pages where the kernel gives them, for the engine's
 * device memory (QEMU backs HBM with such pages) and for OpenBLAS's
 * operands alike.
 */
static void *big_alloc(uint64_t bytes)
{
	uint64_t size = (bytes + (2u << 20) - 1) & ~((2ull << 20) - 1);
	void *p = aligned_alloc(2u << 20, size);

	if (!p) {
		perror("gemm_bench");
		exit(1);
	}
	madvise(p, size, MADV_HUGEPAGE);
	return p;
}

static uint64_t bytes_of(unsigned int dt, uint64_t n)
{
	unsigned int bs = maia_dtype_block(dt);

	return bs > 1 ? n / bs * maia_dtype_block_bytes(dt) : n * maia_dtype_size(dt);
}

/* Store vals as dtype at va (+ block scales at sva); vals become the stored values. */
static void put(struct flat *f, unsigned int dt, uint64_t va, uint64_t sva, float *vals, uint64_t n)
{
	if (maia_dtype_is_block(dt)) {
		fw_mx_encode(dt, vals, n / maia_dtype_block(dt), f->buf + (va - BASE),
			       f->buf + (sva - BASE));
		fw_mx_decode(dt, f->buf + (va - BASE), f->buf + (sva - BASE),
			       n / maia_dtype_block(dt), vals);
	} else {
		fw_encode(dt, vals, n, 1.0f, true, f->buf + (va - BASE));
		fw_decode(dt, f->buf + (va - BASE), n, 1.0f, vals);
	}
}

static const char *dt_name(unsigned int dt)
{
	switch (dt) {
	case MAIA_DTYPE_FP32: return "fp32";
	case MAIA_DTYPE_BF16: return "bf16";
	case MAIA_DTYPE_MXFP8_E4M3: return "mxfp8";
	case MAIA_DTYPE_MXFP4_E2M1: return "mxfp4";
	case MAIA_DTYPE_MXFP6_E3M2: return "mxfp6_e3m2";
	case MAIA_DTYPE_MXFP6_E2M3: return "mxfp6_e2m3";
	case MAIA_DTYPE_MXINT8: return "mxint8";
	case MAIA_DTYPE_MX9: return "mx9";
	case MAIA_DTYPE_MX6: return "mx6";
	case MAIA_DTYPE_MX4: return "mx4";
	default: return "other";
	}
}

/*
 * Best-of times of the engine and of OpenBLAS, measured alternately so that
 * both see the same machine load; at least 3 rounds, then until min_s.
 */
#define TIME_BOTH(t_a, t_b, min_s, run_b, body_a, body_b) do {		\
	double spent = 0;						\
	int rounds = 0;							\
	(t_a) = (t_b) = 1e30;						\
	while (rounds < 3 || (spent < (min_s) && rounds < 50) ||	\
	       rounds < fixed_rounds) {					\
		if (fixed_rounds && rounds == fixed_rounds)		\
			break;						\
		double t0 = now(), t1, t2;				\
		body_a;							\
		t1 = now();						\
		if (run_b) {						\
			body_b;						\
		}							\
		t2 = now();						\
		if (t1 - t0 < (t_a))					\
			(t_a) = t1 - t0;				\
		if (t2 - t1 < (t_b))					\
			(t_b) = t2 - t1;				\
		spent += t2 - t0;					\
		rounds++;						\
	}								\
} while (0)

/*
 * One line: gemm_<type>_<shape>_<kernel> with "default", or with
 * per_kernel false the default's gemm_<type>_<shape>.
 */
static void report(unsigned int dt, uint32_t m, uint32_t n, uint32_t k, const char *kernel,
		   bool per_kernel, bool is_default, double t_dev, double t_blas)
{
	double flop = 2.0 * m * n * k;
	char name[96];

	snprintf(name, sizeof(name), "gemm_%s_%ux%ux%u%s%s%s", dt_name(dt), m, n, k,
		 per_kernel ? "_" : "", per_kernel ? kernel : "", cpu_time ? "_cpu" : "");
	printf("{\"name\": \"%s\", \"value\": %.2f, \"unit\": \"%s\", "
	       "\"higher_is_better\": true, \"baseline\": \"openblas_sgemm\", "
	       "\"baseline_value\": %.2f, \"ratio\": %.3f, \"baseline_core\": \"%s\", "
	       "\"kernel\": \"%s\"%s}\n",
	       name, flop / t_dev * 1e-9, cpu_time ? "GFLOP/cpu-s" : "GFLOP/s",
	       flop / t_blas * 1e-9, t_blas / t_dev, blas_core_name(),
	       kernel, !per_kernel ? "" : is_default ? ", \"default\": true" : ", \"default\": false");
	fflush(stdout);
}

static void bench_one(struct fw_tensor_engine *te, unsigned int dt, uint32_t m, uint32_t n,
		      uint32_t k, double min_s)
{
	uint64_t na = (uint64_t)m * k, nb = (uint64_t)k * n, nc = (uint64_t)m * n;
	uint64_t ba = bytes_of(dt, na), bb = bytes_of(dt, nb);
	struct flat f;
	struct maia_job_mem mem = { &f, flat_read, flat_write, flat_map, flat_map_write };
	struct maia_cmd_gemm cmd;
	struct maia_op_stats stats;
	float *fa = big_alloc(4 * na), *fb = big_alloc(4 * nb), *fc = big_alloc(4 * nc);
	uint64_t va, vb, vc, sa, sb;
	double flop = 2.0 * m * n * k, def_dev = 0, def_blas = 0;
	const struct fw_gemm_kernel *kern0 = te->gemm_kernel, *def, *kern[16];
	bool exact = maia_dtype_is_block(dt) || dt == MAIA_DTYPE_BF16;
	size_t nkern = 1;

	/* kern[0]: the engine left to itself (def: the kernel that then runs), then each other */
	def = fw_gemm_kernel_for(kern0, exact);
	kern[0] = def;
	for (size_t i = 0; i < nall && !env_isa; i++)
		if (all[i] != def)
			kern[nkern++] = all[i];

	f.size = ba + bb + 4 * nc + na / 16 + nb / 16 + 4096;
	f.buf = big_alloc(f.size);
	va = BASE;
	vb = va + ((ba + 63) & ~63ull);
	vc = vb + ((bb + 63) & ~63ull);
	sa = vc + 4 * nc;
	sb = sa + ((na / 16 + 63) & ~63ull);
	srand(7);
	for (uint64_t i = 0; i < na; i++)
		fa[i] = (float)rand() / RAND_MAX - 0.5f;
	for (uint64_t i = 0; i < nb; i++)
		fb[i] = (float)rand() / RAND_MAX - 0.5f;
	put(&f, dt, va, sa, fa, na);
	put(&f, dt, vb, sb, fb, nb);
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.a = desc2(dt, va, maia_dtype_is_block(dt) ? sa : 0, m, k);
	cmd.b = desc2(dt, vb, maia_dtype_is_block(dt) ? sb : 0, k, n);
	cmd.c = desc2(MAIA_DTYPE_FP32, vc, 0, m, n);

	/* the default first: its sgemm result is the reference for the others */
	for (size_t v = 0; v < nkern; v++) {
		double t_dev, t_blas, err = 0;
		int st = 0;

		if (kern[v]->kpair && !maia_dtype_is_block(dt) && dt != MAIA_DTYPE_BF16)
			continue;	/* a BF16 pair kernel takes BF16 and MX operands only */
		if (!strncmp(kern[v]->name, "portable", 8) && flop > 2.0 * 512 * 512 * 512)
			continue;	/* too slow to time on large shapes */
		/* MAIA_TE_ISA also keeps the engine from trading it for another */
		if (v)
			setenv("MAIA_TE_ISA", kern[v]->name, 1);
		te->gemm_kernel = v ? kern[v] : kern0;
		/* the others are for comparison: their 3 rounds or a quarter of the time */
		TIME_BOTH(t_dev, t_blas, v ? min_s / 4 : min_s, !no_blas, {
			memset(&stats, 0, sizeof(stats));
			st |= fw_tensor_exec(te, &cmd.hdr, &mem, &stats);
		}, {
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n,
				    (int)k, 1.0f, fa, (int)k, fb, (int)n, 0.0f, fc, (int)n);
		});
		if (v && !env_isa)
			unsetenv("MAIA_TE_ISA");
		te->gemm_kernel = kern0;
		if (no_blas)	/* profiling the engine alone */
			t_blas = t_dev;
		/* same values in, so the results must agree to FP32 rounding */
		for (uint64_t i = 0; i < nc && !no_blas; i += 97) {
			float dev;

			memcpy(&dev, f.buf + (vc - BASE) + 4 * i, 4);
			if (fabsf(dev - fc[i]) > err)
				err = fabsf(dev - fc[i]);
		}
		if (st || err > 1e-3 * sqrt(k)) {
			fprintf(stderr, "gemm_bench: %s %ux%ux%u, kernel %s: status %d, "
				"max diff to sgemm %g\n", dt_name(dt), m, n, k, kern[v]->name, st, err);
			exit(1);
		}
		if (!v) {
			def_dev = t_dev;
			def_blas = t_blas;
		}
		report(dt, m, n, k, kern[v]->name, true, !v, t_dev, t_blas);
	}
	report(dt, m, n, k, def->name, false, true, def_dev, def_blas);
	fflush(stdout);
	free(fa);
	free(fb);
	free(fc);
	free(f.buf);
}

int main(int argc, char **argv)
{
	static const unsigned int types[] = {
		MAIA_DTYPE_FP32, MAIA_DTYPE_BF16, MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP4_E2M1,
		MAIA_DTYPE_MXFP6_E3M2, MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXINT8,
		MAIA_DTYPE_MX9, MAIA_DTYPE_MX6, MAIA_DTYPE_MX4,
	};
	static const uint32_t square[] = { 256, 512, 1024, 2048, 4096 };
	static const uint32_t skinny[][3] = {	/* M, N, K: decode-like and thin-K shapes */
		{ 32, 4096, 4096 }, { 256, 4096, 1024 }, { 4096, 4096, 256 },
	};
	struct fw_tensor_config cfg = { .clusters = 16, .tiles_per_cluster = 4, .sram_kib = 8192 };
	struct fw_tensor_engine *te;
	uint32_t max = 4096;
	const char *only = NULL;
	double min_s = 1.0;
	uint32_t shape[3] = { 0, 0, 0 };
	int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	const struct fw_gemm_kernel *list;
	size_t nlist;

	if (argc == 4 && !strcmp(argv[1], "--probe-blas"))
		return blas_core_probe(atoi(argv[2]), !strcmp(argv[3], "cpu"));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--type") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--cpu-time"))
			cpu_time = true;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			fixed_rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-blas"))
			no_blas = true;
		else if (!strcmp(argv[i], "--quick"))
			min_s = 0.2;
		else if (!strcmp(argv[i], "--shape") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%ux%ux%u", &shape[0], &shape[1], &shape[2]) == 3 &&
			 shape[0] && shape[1] && shape[2])
			i++;
		else {
			fprintf(stderr, "usage: %s [--threads N] [--max SIZE] [--quick] [--type T] "
			"[--no-blas] [--cpu-time] [--shape MxNxK]\n", argv[0]);
			return 2;
		}
	}
	/*
	 * OpenBLAS's threads busy-wait 2^28 cycles (about 0.1 s) after each
	 * call, taking a core from the engine when it is timed right after
	 * sgemm. Both sides get the same short spin instead (2^17 cycles, about
	 * 50 us, the engine pool's): the variable is read when libopenblas
	 * loads, so set it and start again.
	 */
	if (!getenv("OPENBLAS_THREAD_TIMEOUT")) {
		setenv("OPENBLAS_THREAD_TIMEOUT", "17", 1);
		blas_core_choose(threads, cpu_time);
		execv("/proc/self/exe", argv);
		perror("gemm_bench: re-exec with OPENBLAS_THREAD_TIMEOUT");
	}
	cfg.threads = (unsigned int)threads;
	openblas_set_num_threads(threads);
	te = fw_tensor_create(&cfg);
	if (!te) {
		perror("fw_tensor_create");
		return 1;
	}
	env_isa = getenv("MAIA_TE_ISA");
	list = fw_gemm_kernel_list(&nlist);
	for (size_t i = 0; i < nlist && nall < sizeof(all) / sizeof(all[0]); i++)
		if (fw_gemm_kernel_find(list[i].name) == &list[i])	/* runs here, self-tested */
			all[nall++] = &list[i];
	fprintf(stderr, "gemm_bench: %d threads, OpenBLAS core %s, default micro-kernel %s, "
		"BF16/MX operands: %s\n", threads, blas_core_name(), te->gemm_kernel->name,
		fw_gemm_kernel_for(te->gemm_kernel, true)->name);
	for (size_t i = 0; i < nall; i++)
		fprintf(stderr, "gemm_bench: kernel %-13s %6.1f GFLOP/s per thread (cached panels)\n",
			all[i]->name, fw_gemm_kernel_speed(all[i]) * 1e-9);
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		fprintf(stderr, "gemm_bench: 256-bit FMA peak  %6.1f GFLOP/s per thread "
			"(12 chains, thread CPU time)\n", fma256_peak());
#endif
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		if (only && strcmp(only, dt_name(types[t])))
			continue;
		if (shape[0]) {
			bench_one(te, types[t], shape[0], shape[1], shape[2], min_s);
			continue;
		}
		for (size_t i = 0; i < sizeof(square) / sizeof(square[0]); i++)
			if (square[i] <= max)
				bench_one(te, types[t], square[i], square[i], square[i], min_s);
		for (size_t i = 0; i < sizeof(skinny) / sizeof(skinny[0]); i++)
			if (skinny[i][1] <= max && skinny[i][0] <= max)
				bench_one(te, types[t], skinny[i][0], skinny[i][1], skinny[i][2], min_s);
	}
	fw_tensor_destroy(te);
	return 0;
}
