// SPDX-License-Identifier: MIT
/*
 * maia-linear-bench: the device work of one torch.nn.Linear forward
 * (y = x W^T + b, FP32) through libmaia from C, the baseline for the PyTorch
 * backend's framework overhead (tests/python/bench_linear.py, make bench).
 * Each iteration is one job with the command the backend's linear and
 * addmm emit: one GEMM, W transposed by its strides, the bias added by its
 * epilogue. Prints one JSON line (bench-util.h).
 *
 *   maia-linear-bench [M K N [ITERS]]     default 64 256 256 200
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench-util.h"
#include "libmaia.h"

static int die(const char *what, int err)
{
	fprintf(stderr, "maia-linear-bench: %s: %s\n", what,
		*maia_last_error() ? maia_last_error() : maia_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	uint32_t m = 64, k = 256, n = 256, iters = 200, i;
	struct maia_tensor_desc x, w, bb, y;
	struct maia_bo *bx, *bw, *bbias, *by;
	struct bench_samples s = { 0 };
	struct maia_gemm_args g = { 0 };
	struct maia_cmdbuf *cb;
	struct maia_device *dev;
	char name[96];
	int err;

	if (argc >= 4) {
		m = (uint32_t)atoi(argv[1]);
		k = (uint32_t)atoi(argv[2]);
		n = (uint32_t)atoi(argv[3]);
	}
	if (argc >= 5)
		iters = (uint32_t)atoi(argv[4]);
	if (!m || !k || !n || !iters) {
		fprintf(stderr, "usage: maia-linear-bench [M K N [ITERS]]\n");
		return 2;
	}
	err = maia_device_open(0, &dev);
	if (err < 0)
		return die("maia_device_open", err);
	if ((err = maia_bo_create(dev, (uint64_t)m * k * 4, MAIA_BO_HBM, &bx)) < 0 ||
	    (err = maia_bo_create(dev, (uint64_t)n * k * 4, MAIA_BO_HBM, &bw)) < 0 ||
	    (err = maia_bo_create(dev, (uint64_t)n * 4, MAIA_BO_HBM, &bbias)) < 0 ||
	    (err = maia_bo_create(dev, (uint64_t)m * n * 4, MAIA_BO_HBM, &by)) < 0)
		return die("maia_bo_create", err);
	if ((err = maia_cmdbuf_create(dev, 4096, &cb)) < 0)
		return die("maia_cmdbuf_create", err);
	maia_tensor_init(&x, maia_bo_va(bx), MAIA_DTYPE_FP32, 2, (uint32_t[]){ m, k });
	/* W is [N, K]; op(B) = W^T is K x N: strides (1, K). */
	maia_tensor_init(&w, maia_bo_va(bw), MAIA_DTYPE_FP32, 2, (uint32_t[]){ k, n });
	w.strides[0] = 1;
	w.strides[1] = k;
	maia_tensor_init(&bb, maia_bo_va(bbias), MAIA_DTYPE_FP32, 1, (uint32_t[]){ n });
	maia_tensor_init(&y, maia_bo_va(by), MAIA_DTYPE_FP32, 2, (uint32_t[]){ m, n });
	g.a = &x;
	g.b = &w;
	g.c = &y;
	g.bias = &bb;
	g.alpha = 1.0f;
	if ((err = maia_cmd_gemm_ex(cb, &g)) < 0)
		return die("building the job", err);
	for (i = 0; i < iters + iters / 10; i++) {
		uint64_t t0 = bench_now_ns();

		err = maia_run(dev, cb, 10000000000LL, NULL);
		if (err < 0)
			return die("maia_run", err);
		if (i >= iters / 10)	/* the first tenth warms up */
			bench_add(&s, (double)(bench_now_ns() - t0) / 1000.0);
	}
	snprintf(name, sizeof(name), "linear_fp32_%ux%ux%u_libmaia_c", m, k, n);
	bench_emit(name, bench_median(&s), "us", false, NULL, 0);
	bench_free(&s);
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(bx);
	maia_bo_destroy(bw);
	maia_bo_destroy(bbias);
	maia_bo_destroy(by);
	maia_device_close(dev);
	return 0;
}
