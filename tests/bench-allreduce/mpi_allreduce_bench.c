// SPDX-License-Identifier: MIT
/*
 * mpi_allreduce_bench: host Open MPI MPI_Allreduce (float, sum) busbw, the
 * baseline for the devices' all-reduce (tests/run-bench, benchmarks.rst).
 *
 *   mpirun -np N mpi_allreduce_bench [--min-bytes B] [--max-bytes B]
 *                                    [--step-factor F] [--iters K] [--warmup W]
 *
 * Per size: W warm-up calls (default 1), then K timed calls between barriers; the time is
 * the slowest rank's. Rank 0 prints one JSON object per size with
 * nccl-tests' busbw (algbw x 2(n-1)/n) and #wrong against the exact sum
 * (inputs are small integers).
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float input_value(int r, uint64_t i)
{
	return (float)(1 + (uint64_t)(r * 5 + (int)(i % 97) * 3) % 16);
}

int main(int argc, char **argv)
{
	uint64_t min_bytes = 4u << 20, max_bytes = 64u << 20, bytes, count, i, wrong;
	unsigned int step = 4, iters = 5, warmup = 1, it;
	int rank, n, a, r;
	float *send, *recv;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	for (a = 1; a + 1 < argc; a += 2) {
		uint64_t v = strtoull(argv[a + 1], NULL, 0);

		if (!strcmp(argv[a], "--min-bytes"))
			min_bytes = v;
		else if (!strcmp(argv[a], "--max-bytes"))
			max_bytes = v;
		else if (!strcmp(argv[a], "--step-factor"))
			step = (unsigned int)v;
		else if (!strcmp(argv[a], "--iters"))
			iters = (unsigned int)v;
		else if (!strcmp(argv[a], "--warmup"))
			warmup = (unsigned int)v;
	}
	if (step < 2 || !iters || min_bytes < 4 || min_bytes > max_bytes) {
		if (!rank)
			fprintf(stderr, "usage: mpi_allreduce_bench [--min-bytes B] [--max-bytes B] "
				"[--step-factor F] [--iters K] [--warmup W]\n");
		MPI_Finalize();
		return 2;
	}
	send = malloc(max_bytes);
	recv = malloc(max_bytes);
	if (!send || !recv)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (bytes = min_bytes; bytes <= max_bytes; bytes *= step) {
		double t0, dt, worst, algbw;
		uint64_t all_wrong;

		count = bytes / 4;
		for (i = 0; i < count; i++)
			send[i] = input_value(rank, i);
		for (it = 0; it < warmup; it++)
			MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (it = 0; it < iters; it++)
			MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		dt = (MPI_Wtime() - t0) / iters;
		MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		wrong = 0;
		for (i = 0; i < count; i++) {
			float want = 0;

			for (r = 0; r < n; r++)
				want += input_value(r, i);
			if (recv[i] != want)
				wrong++;
		}
		MPI_Reduce(&wrong, &all_wrong, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
		if (!rank) {
			algbw = (double)bytes / worst / 1e9;
			printf("{\"name\": \"mpi-allreduce-fp32-n%d\", \"bytes\": %" PRIu64
			       ", \"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, "
			       "\"wrong\": %" PRIu64 "}\n", n, bytes, worst * 1e6, algbw,
			       algbw * 2.0 * (n - 1) / n, all_wrong);
			fflush(stdout);
		}
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
