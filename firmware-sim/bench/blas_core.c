// SPDX-License-Identifier: MIT
/*
 * The OpenBLAS core the sgemm baseline runs on. OpenBLAS picks its kernels
 * from the CPU model, and a model newer than the library gets an old core:
 * Debian 12's OpenBLAS 0.3.21 runs its Prescott (SSE3) kernels on an Intel
 * Xeon of family 6 model 207 (Emerald Rapids), several times below what it
 * reaches there with its SkylakeX kernels, which would make any engine look
 * fast. So the baseline is OpenBLAS at its best on the machine.
 *
 * A baseline picked too slow makes a false pass, so the pick must not
 * follow the load: one child process per core the CPU can run (the one
 * detected, Haswell with AVX2 + FMA, SkylakeX with AVX-512; OpenBLAS reads
 * OPENBLAS_CORETYPE when it loads) times sgemm 1024^3 on the benchmark's
 * threads and clock, one call per round, the cores in turn (a different
 * one first each round), and each core's best round counts. The widest
 * core is preferred (what OpenBLAS picks by itself for models it knows);
 * another is taken only if its best is more than PICK_MARGIN faster. A load
 * burst then has to slow every round of the widest core, and none of
 * another's, to change the pick. OPENBLAS_CORETYPE set by the caller is kept.
 */
#define _GNU_SOURCE	/* pipe2() */
#include <cblas.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blas_core.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

enum {
	PROBE_N = 1024,
	PROBE_ROUNDS = 7,	/* timed calls per core, interleaved */
	MAX_CORES = 3,
};
#define PICK_MARGIN 1.05	/* another core must beat the widest by 5 % */

const char *blas_core_name(void)
{
	return openblas_get_corename();
}

static double seconds(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * The child: after one untimed call, one timed sgemm per line read on
 * stdin, answered with "<core> <GFLOP/s>"; ends at end of input.
 */
int blas_core_probe(int threads, bool cpu_time)
{
	clockid_t clk = cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
	enum { N = PROBE_N };
	float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N);
	float *c = malloc(sizeof(float) * N * N);
	char line[16];

	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 17) * 0.1f;
		b[i] = (float)(i % 13) * 0.1f;
	}
	openblas_set_num_threads(threads);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
		    0.0f, c, N);
	while (fgets(line, sizeof(line), stdin)) {
		double t0 = seconds(clk), t;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
			    0.0f, c, N);
		t = seconds(clk) - t0;
		printf("%s %.1f\n", blas_core_name(), 2.0 * N * N * N / (t > 0 ? t : 1e-9) * 1e-9);
		fflush(stdout);
	}
	free(a);
	free(b);
	free(c);
	return 0;
}

struct prober {
	const char *core;	/* OPENBLAS_CORETYPE, NULL: the detected one */
	pid_t pid;
	FILE *to, *from;
	char name[64];
	double best;		/* GFLOP/s of its best round */
	char rounds[96];	/* every round's figure, for the report */
};

static void prober_start(struct prober *p, int threads, bool cpu_time)
{
	int in[2], out[2];

	p->pid = -1;
	if (pipe2(in, O_CLOEXEC))
		return;
	if (pipe2(out, O_CLOEXEC)) {	/* no other child may hold them */
		close(in[0]);
		close(in[1]);
		return;
	}
	p->pid = fork();
	if (p->pid == 0) {
		char arg[16];

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		if (p->core)
			setenv("OPENBLAS_CORETYPE", p->core, 1);
		snprintf(arg, sizeof(arg), "%d", threads);
		execl("/proc/self/exe", "gemm_bench", "--probe-blas", arg,
		      cpu_time ? "cpu" : "wall", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->to = p->pid > 0 ? fdopen(in[1], "w") : NULL;
	p->from = p->pid > 0 ? fdopen(out[0], "r") : NULL;
	if (!p->to)
		close(in[1]);
	if (!p->from)
		close(out[0]);
}

/* One timed call in the child; 0 if it failed. */
static double prober_round(struct prober *p)
{
	char line[128];
	double g;

	if (!p->to || !p->from || fputs("\n", p->to) == EOF || fflush(p->to) ||
	    !fgets(line, sizeof(line), p->from) ||
	    sscanf(line, "%63s %lf", p->name, &g) != 2)
		return 0;
	return g;
}

static void prober_stop(struct prober *p)
{
	int status;

	if (p->to)
		fclose(p->to);	/* end of input ends the child */
	if (p->from)
		fclose(p->from);
	if (p->pid > 0)
		waitpid(p->pid, &status, 0);
}

void blas_core_choose(int threads, bool cpu_time)
{
	struct prober p[MAX_CORES];
	char report[512] = "";
	size_t n = 0, widest, pick;

	if (getenv("OPENBLAS_CORETYPE"))
		return;
	memset(p, 0, sizeof(p));
	p[n++].core = NULL;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		p[n++].core = "Haswell";
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		p[n++].core = "SkylakeX";
	widest = n - 1;
	/* a child that died must not end us through a write to its pipe */
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < n; i++)
		prober_start(&p[i], threads, cpu_time);
	for (int r = 0; r < PROBE_ROUNDS; r++)
		for (size_t j = 0; j < n; j++) {
			struct prober *q = &p[(j + (size_t)r) % n];
			double g = prober_round(q);

			snprintf(q->rounds + strlen(q->rounds), sizeof(q->rounds) - strlen(q->rounds),
				 "%s%.0f", r ? " " : "", g);
			if (g > q->best)
				q->best = g;
		}
	for (size_t i = 0; i < n; i++)
		prober_stop(&p[i]);
	signal(SIGPIPE, SIG_DFL);	/* SIG_IGN would outlive the re-exec */
	pick = widest;
	for (size_t i = 0; i < n; i++)
		if (p[i].best > p[pick].best * (pick == widest ? PICK_MARGIN : 1.0))
			pick = i;
	for (size_t i = 0; i < n; i++)
		snprintf(report + strlen(report), sizeof(report) - strlen(report),
			 "%s%s%s %.1f (%s)", i ? ", " : "", p[i].name[0] ? p[i].name : "?",
			 p[i].core ? "" : " detected", p[i].best, p[i].rounds);
	fprintf(stderr, "gemm_bench: OpenBLAS sgemm %d^3 %s, best of %d interleaved rounds "
		"(each round): %s; picked %s (the widest, %s, unless another is > %.0f %% faster)\n",
		PROBE_N, cpu_time ? "GFLOP/cpu-s" : "GFLOP/s", PROBE_ROUNDS, report,
		p[pick].core ? p[pick].core : "the detected core",
		p[widest].core ? p[widest].core : "the detected core", (PICK_MARGIN - 1) * 100);
	if (p[pick].core)
		setenv("OPENBLAS_CORETYPE", p[pick].core, 1);
}
