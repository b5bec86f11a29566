// SPDX-License-Identifier: MIT
/*
 * The OpenBLAS core the sgemm baseline runs on. OpenBLAS picks its kernels
 * from the CPU model, and a model newer than the library gets an old core:
 * Debian 12's OpenBLAS 0.3.21 runs its Prescott (SSE3) kernels on an Intel
 * Xeon of family 6 model 207 (Emerald Rapids), several times below what it
 * reaches there with its SkylakeX kernels, which would make any engine look
 * fast. So the baseline is OpenBLAS at its best on the machine: each core
 * the CPU can run (the one detected, Haswell with AVX2 + FMA, SkylakeX with
 * AVX-512) times sgemm 1024^3 on the benchmark's threads in a child process
 * (OpenBLAS reads OPENBLAS_CORETYPE when it loads), and the fastest is set
 * for the run. OPENBLAS_CORETYPE set by the caller is kept as it is.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blas_core.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

const char *blas_core_name(void)
{
	return openblas_get_corename();
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int blas_core_probe(int threads)
{
	enum { N = 1024 };
	float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N);
	float *c = malloc(sizeof(float) * N * N);
	double best = 1e30;

	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 17) * 0.1f;
		b[i] = (float)(i % 13) * 0.1f;
	}
	openblas_set_num_threads(threads);
	for (int r = 0; r < 5; r++) {
		double t0 = seconds();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
			    0.0f, c, N);
		if (seconds() - t0 < best)
			best = seconds() - t0;
	}
	printf("%s %.1f\n", blas_core_name(), 2.0 * N * N * N / best * 1e-9);
	free(a);
	free(b);
	free(c);
	return 0;
}

/* GFLOP/s of sgemm with OPENBLAS_CORETYPE = core (NULL: unset), and the core's name. */
static double probe(const char *core, int threads, char name[64])
{
	char arg[16], line[128];
	double gflops = 0;
	int fd[2], status;
	FILE *in;
	pid_t pid;

	if (pipe(fd))
		return 0;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		if (core)
			setenv("OPENBLAS_CORETYPE", core, 1);
		snprintf(arg, sizeof(arg), "%d", threads);
		execl("/proc/self/exe", "gemm_bench", "--probe-blas", arg, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	in = fdopen(fd[0], "r");
	if (in && fgets(line, sizeof(line), in) &&
	    sscanf(line, "%63s %lf", name, &gflops) != 2)
		gflops = 0;
	if (in)
		fclose(in);
	else
		close(fd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return gflops;
}

void blas_core_choose(int threads)
{
	const char *cores[3] = { NULL, NULL, NULL };
	char name[64], report[256] = "";
	double best = 0;
	const char *pick = NULL;
	size_t n = 1;

	if (getenv("OPENBLAS_CORETYPE"))
		return;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		cores[n++] = "Haswell";
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		cores[n++] = "SkylakeX";
	for (size_t i = 0; i < n; i++) {
		double g;

		name[0] = 0;
		g = probe(cores[i], threads, name);
		snprintf(report + strlen(report), sizeof(report) - strlen(report), "%s%s%s %.1f",
			 i ? ", " : "", name, cores[i] ? "" : " (detected)", g);
		if (g > best * 1.03) {	/* the detected core unless another is clearly faster */
			best = g;
			pick = cores[i];
		}
	}
	fprintf(stderr, "gemm_bench: OpenBLAS sgemm 1024^3 GFLOP/s by core: %s\n", report);
	if (pick)
		setenv("OPENBLAS_CORETYPE", pick, 1);
}
