/* SPDX-License-Identifier: MIT */
/* The OpenBLAS core of gemm_bench's baseline (blas_core.c). */
#ifndef GEMM_BENCH_BLAS_CORE_H
#define GEMM_BENCH_BLAS_CORE_H

#include <stdbool.h>

/*
 * Unless OPENBLAS_CORETYPE is set: time sgemm on every OpenBLAS core this
 * CPU can run (child processes, interleaved rounds, by CPU time or wall
 * time as the benchmark times) and set OPENBLAS_CORETYPE to the widest
 * unless another is clearly faster. Call before OpenBLAS is first used,
 * then re-exec.
 */
void blas_core_choose(int threads, bool cpu_time);
/*
 * gemm_bench --probe-blas THREADS cpu|wall: per line on stdin, print
 * "<core> <GFLOP/s>" of one sgemm 1024^3.
 */
int blas_core_probe(int threads, bool cpu_time);
/* The core OpenBLAS runs on in this process. */
const char *blas_core_name(void);

#endif
