/* SPDX-License-Identifier: MIT */
/* The OpenBLAS core of gemm_bench's baseline (blas_core.c). */
#ifndef GEMM_BENCH_BLAS_CORE_H
#define GEMM_BENCH_BLAS_CORE_H

/*
 * Unless OPENBLAS_CORETYPE is set: time sgemm on every OpenBLAS core this
 * CPU can run (child processes) and set OPENBLAS_CORETYPE to the fastest.
 * Call before OpenBLAS is first used, then re-exec.
 */
void blas_core_choose(int threads);
/* gemm_bench --probe-blas THREADS: print "<core> <GFLOP/s>" of sgemm 1024^3. */
int blas_core_probe(int threads);
/* The core OpenBLAS runs on in this process. */
const char *blas_core_name(void);

#endif
