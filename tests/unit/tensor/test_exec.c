// SPDX-License-Identifier: MIT
/*
 * The execution model: per-tile busy accounting and per-command stats, a
 * fault in one task failing the command without hurting the next one,
 * commands from several host threads at once, and engine configurations
 * (one thread, more threads than tiles, invalid topologies).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

#define N 96

struct gemm_setup {
	struct tmem mem;
	struct maia_cmd_gemm cmd;
	double a[N * N], b[N * N];
};

static void setup(struct gemm_setup *s, uint64_t seed)
{
	uint32_t sh[2] = { N, N };
	float f[N * N];
	uint64_t va, vb, vc;

	tmem_init(&s->mem, 1 << 20);
	trand_seed(seed);
	va = tmem_alloc(&s->mem, 4 * N * N);
	vb = tmem_alloc(&s->mem, 4 * N * N);
	vc = tmem_alloc(&s->mem, 4 * N * N);
	for (int i = 0; i < N * N; i++)
		f[i] = trand_uniform(-1, 1);
	tput(&s->mem, MAIA_DTYPE_FP32, va, 0, f, N * N, 1, s->a);
	for (int i = 0; i < N * N; i++)
		f[i] = trand_uniform(-1, 1);
	tput(&s->mem, MAIA_DTYPE_FP32, vb, 0, f, N * N, 1, s->b);
	memset(&s->cmd, 0, sizeof(s->cmd));
	s->cmd.hdr.opcode = MAIA_OP_GEMM;
	s->cmd.hdr.size = sizeof(s->cmd);
	s->cmd.a = tdesc(MAIA_DTYPE_FP32, va, 2, sh);
	s->cmd.b = tdesc(MAIA_DTYPE_FP32, vb, 2, sh);
	s->cmd.c = tdesc(MAIA_DTYPE_FP32, vc, 2, sh);
}

static bool verify(struct gemm_setup *s)
{
	double out[N * N];

	tget(&s->mem, MAIA_DTYPE_FP32, s->cmd.c.addr, 0, N * N, 1, out);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double r = 0, m = 0;

			for (int k = 0; k < N; k++) {
				r += s->a[i * N + k] * s->b[k * N + j];
				m += fabs(s->a[i * N + k] * s->b[k * N + j]);
			}
			if (fabs(out[i * N + j] - r) > (N + 4) * ldexp(1, -24) * m)
				return false;
		}
	return true;
}

/* A memory that starts failing with ABORTED (as on a device reset) after a budget. */
struct abort_mem {
	struct tmem *m;
	long budget;		/* accesses left; atomic */
	long calls;
};

static int abort_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	struct abort_mem *a = opaque;

	__atomic_fetch_add(&a->calls, 1, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&a->budget, 1, __ATOMIC_RELAXED) < 0)
		return MAIA_STATUS_ABORTED;
	return a->m->mem.read(a->m, va, buf, len);
}

static int abort_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct abort_mem *a = opaque;

	__atomic_fetch_add(&a->calls, 1, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&a->budget, 1, __ATOMIC_RELAXED) < 0)
		return MAIA_STATUS_ABORTED;
	return a->m->mem.write(a->m, va, buf, len);
}

struct thread_arg {
	struct fw_tensor_engine *te;
	struct gemm_setup *s;
	int ok;
};

static void *worker(void *p)
{
	struct thread_arg *t = p;

	t->ok = 1;
	for (int r = 0; r < 20; r++) {
		memset(tmem_ptr(&t->s->mem, t->s->cmd.c.addr), 0xff, 4 * N * N);	/* NaNs */
		if (trun(t->te, &t->s->mem, &t->s->cmd, NULL) != MAIA_STATUS_OK || !verify(t->s))
			t->ok = 0;
	}
	return NULL;
}

int main(void)
{
	static struct gemm_setup s[4];
	struct fw_tensor_engine *te = tengine(0);
	struct maia_op_stats st1 = { 0 };
	uint64_t before = 0, after = 0;
	int st;

	for (int i = 0; i < 4; i++)
		setup(&s[i], (uint64_t)i + 10);
	for (unsigned int t = 0; t < te->tiles; t++)
		before += te->tile_busy_ns[t];
	st = trun(te, &s[0].mem, &s[0].cmd, &st1);
	for (unsigned int t = 0; t < te->tiles; t++)
		after += te->tile_busy_ns[t];
	tap_ok(!st && verify(&s[0]), "GEMM %dx%dx%d correct", N, N, N);
	tap_ok(after - before == st1.busy_ns && st1.busy_ns > 0,
	       "tile busy time grew by the command's busy_ns (%llu ns)", (unsigned long long)st1.busy_ns);
	tap_ok(st1.flops == 2ull * N * N * N && st1.bytes_written == 4ull * N * N &&
	       st1.bytes_read >= 8ull * N * N, "stats: flops %llu, read %llu, written %llu",
	       (unsigned long long)st1.flops, (unsigned long long)st1.bytes_read,
	       (unsigned long long)st1.bytes_written);

	/* C's last rows outside the mapping: the task writing them faults */
	{
		struct maia_cmd_gemm bad = s[1].cmd;

		bad.c.addr = TMEM_BASE + s[1].mem.size - 4ull * N * (N / 2);
		tap_ok(trun(te, &s[1].mem, &bad, NULL) == MAIA_STATUS_MMU_FAULT,
		       "C half outside the mapping: MMU fault");
		st = trun(te, &s[1].mem, &s[1].cmd, NULL);
		tap_ok(!st && verify(&s[1]), "the next command runs normally");
	}

	/* the memory failing mid-command (reset): the command stops early with that status */
	{
		struct abort_mem am = { &s[1].mem, 1L << 40, 0 };
		struct maia_job_mem jm = { &am, abort_read, abort_write, NULL, NULL };
		struct maia_op_stats os = { 0 };
		long full;

		st = fw_tensor_exec(te, &s[1].cmd.hdr, &jm, &os);
		full = am.calls;
		am.budget = 10;
		am.calls = 0;
		st = fw_tensor_exec(te, &s[1].cmd.hdr, &jm, &os);
		tap_ok(st == MAIA_STATUS_ABORTED && am.calls < full / 2,
		       "memory aborting after 10 accesses: ABORTED after %ld of %ld accesses", am.calls, full);
	}

	/* four host threads submitting at once: commands serialize, all correct */
	{
		pthread_t th[4];
		struct thread_arg ta[4];
		int all = 1;

		for (int i = 0; i < 4; i++) {
			ta[i] = (struct thread_arg){ te, &s[i], 0 };
			pthread_create(&th[i], NULL, worker, &ta[i]);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			all &= ta[i].ok;
		}
		tap_ok(all, "4 threads x 20 GEMMs concurrently: all correct");
	}
	fw_tensor_destroy(te);

	{
		struct fw_tensor_config one = { .clusters = 1, .tiles_per_cluster = 1, .sram_kib = 1024, .threads = 8 },
					  bad = { .clusters = 0, .tiles_per_cluster = 4, .sram_kib = 8192 };
		struct fw_tensor_engine *t1 = fw_tensor_create(&one);

		tap_ok(t1 && t1->nworkers == 1, "1 tile: 8 threads requested, 1 used");
		if (t1) {
			memset(tmem_ptr(&s[2].mem, s[2].cmd.c.addr), 0, 4 * N * N);
			tap_ok(trun(t1, &s[2].mem, &s[2].cmd, NULL) == MAIA_STATUS_OK && verify(&s[2]),
			       "GEMM on a single-tile engine");
			fw_tensor_destroy(t1);
		}
		tap_ok(fw_tensor_create(&bad) == NULL, "0 clusters refused");
		bad.clusters = 4;
		bad.tiles_per_cluster = 0;
		tap_ok(fw_tensor_create(&bad) == NULL, "0 tiles per cluster refused");
		tap_ok(fw_tensor_create(NULL) == NULL, "NULL config refused");
	}
	for (int i = 0; i < 4; i++)
		tmem_free(&s[i].mem);
	return tap_done();
}
