// SPDX-License-Identifier: MIT
/*
 * BF16 GEMM on the device, checked against a double-precision CPU reference.
 *
 * One job: DMA A and B from host buffers into HBM, C = A * B on the tensor
 * engine, DMA C back. Usage: maia-gemm [M N K]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libmaia.h"

/* FP32 -> BF16, round to nearest even (NaN stays a quiet NaN). */
static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint32_t m = 128, n = 128, k = 256;
	struct maia_bo *ha, *hb, *hc, *da, *db, *dc;
	struct maia_tensor_desc ta, tb, tc;
	struct maia_device_info info;
	struct maia_job_times times = { 0 };
	struct maia_job_status st;
	uint64_t seqno;
	struct maia_cmdbuf *cb;
	struct maia_device *dev;
	double max_err = 0, max_ref = 0, t0, t1;
	uint16_t *a, *b;
	float *c;
	uint32_t i, j, p;
	int err;

	if (argc == 4) {
		m = (uint32_t)atoi(argv[1]);
		n = (uint32_t)atoi(argv[2]);
		k = (uint32_t)atoi(argv[3]);
	}
	if (!m || !n || !k || m > 4096 || n > 4096 || k > 4096) {
		fprintf(stderr, "usage: maia-gemm [M N K], each 1..4096\n");
		return 2;
	}
	err = maia_device_open(0, &dev);
	if (err) {
		fprintf(stderr, "maia-gemm: open: %s\n", maia_strerror(err));
		return 1;
	}
	maia_device_info(dev, &info);

	err = maia_bo_create(dev, (uint64_t)m * k * 2, MAIA_BO_HOST, &ha) ||
	      maia_bo_create(dev, (uint64_t)k * n * 2, MAIA_BO_HOST, &hb) ||
	      maia_bo_create(dev, (uint64_t)m * n * 4, MAIA_BO_HOST, &hc) ||
	      maia_bo_create(dev, (uint64_t)m * k * 2, MAIA_BO_HBM, &da) ||
	      maia_bo_create(dev, (uint64_t)k * n * 2, MAIA_BO_HBM, &db) ||
	      maia_bo_create(dev, (uint64_t)m * n * 4, MAIA_BO_HBM, &dc) ||
	      maia_bo_map(ha, (void **)&a) || maia_bo_map(hb, (void **)&b) ||
	      maia_bo_map(hc, (void **)&c) || maia_cmdbuf_create(dev, 4096, &cb);
	if (err) {
		fprintf(stderr, "maia-gemm: buffer set-up failed\n");
		return 1;
	}
	/* Deterministic inputs in [-1, 1). */
	srand(42);
	for (i = 0; i < m * k; i++)
		a[i] = to_bf16((float)rand() / RAND_MAX * 2 - 1);
	for (i = 0; i < k * n; i++)
		b[i] = to_bf16((float)rand() / RAND_MAX * 2 - 1);

	maia_tensor_init(&ta, maia_bo_va(da), MAIA_DTYPE_BF16, 2, (uint32_t[]){ m, k });
	maia_tensor_init(&tb, maia_bo_va(db), MAIA_DTYPE_BF16, 2, (uint32_t[]){ k, n });
	maia_tensor_init(&tc, maia_bo_va(dc), MAIA_DTYPE_FP32, 2, (uint32_t[]){ m, n });
	err = maia_cmd_copy(cb, maia_bo_va(da), maia_bo_va(ha), (uint64_t)m * k * 2) ||
	      maia_cmd_copy(cb, maia_bo_va(db), maia_bo_va(hb), (uint64_t)k * n * 2) ||
	      maia_cmd_gemm(cb, &ta, &tb, &tc, 1.0f, 0.0f, 0) ||
	      maia_cmd_copy(cb, maia_bo_va(hc), maia_bo_va(dc), (uint64_t)m * n * 4);
	if (err) {
		fprintf(stderr, "maia-gemm: building the command buffer failed\n");
		return 1;
	}
	t0 = now_s();
	err = maia_submit(dev, cb, NULL, &seqno);
	if (!err)
		err = maia_wait_times(dev, seqno, 60ll * 1000000000, &st, &times);
	t1 = now_s();
	if (err) {
		fprintf(stderr, "maia-gemm: job failed: %s (job %s, device status %u at offset %u)\n",
			maia_strerror(err), maia_job_status_name(st.status), st.device_status,
			st.error_offset);
		return 1;
	}
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			double ref = 0;

			for (p = 0; p < k; p++)
				ref += from_bf16(a[i * k + p]) * from_bf16(b[p * n + j]);
			if (fabs(ref - c[i * n + j]) > max_err)
				max_err = fabs(ref - c[i * n + j]);
			if (fabs(ref) > max_ref)
				max_ref = fabs(ref);
		}
	}
	/* FP32 accumulation of K products: error bound ~ K * eps32 * sum|a||b|. */
	/* host: what this run took here; modeled: what the job takes on the chip */
	printf("maia-gemm: %ux%ux%u BF16 GEMM on %s (%s): job %.2f ms host, %.1f us modeled, "
	       "max |err| %.3g (max |C| %.3g) -> %s\n",
	       m, n, k, info.pci_address, info.node, (t1 - t0) * 1e3,
	       times.valid & MAIA_JOB_TIMES_DEVICE ? times.device_ns / 1e3 : 0.0, max_err, max_ref,
	       max_err <= 1e-5 * k ? "PASS" : "FAIL");
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(ha);
	maia_bo_destroy(hb);
	maia_bo_destroy(hc);
	maia_bo_destroy(da);
	maia_bo_destroy(db);
	maia_bo_destroy(dc);
	maia_device_close(dev);
	return max_err <= 1e-5 * k ? 0 : 1;
}
