// SPDX-License-Identifier: MIT
/*
 * MXFP8 GEMM: quantize FP32 matrices to MXFP8 (E4M3 elements, one E8M0 scale
 * per 32 elements, OCP MX v1.0) on the device, multiply them there, and
 * check the result twice:
 *
 *  1. against a double-precision product of the quantized values, decoded on
 *     the CPU by an independent decoder below: only FP32 accumulation error
 *     remains, bound K * 2^-23 * sum|a||b| per element;
 *  2. against the double-precision product of the original FP32 values: the
 *     quantization error. Each element's error is bounded by
 *     e = max(2^-4 |x|, |x| - 448 s) + 2^-10 s for its block scale s (E4M3
 *     keeps 4 significant bits; values above 448 s saturate, because OCP
 *     takes s from the block maximum's exponent; subnormals are 2^-9 s
 *     apart), so a product's by |a| e_b + |b| e_a + e_a e_b, summed over K.
 *
 * B is stored N x K (MAIA_GEMM_F_TRANS_B) so that both operands are blocked
 * along K, as MX GEMMs are. Usage: maia-gemm-mxfp8 [M N K], K a multiple of 32.
 */
#include "example-util.h"

static const char prog[] = "maia-gemm-mxfp8";

/* OCP E4M3: bias 7, no infinities, S.1111.111 is NaN. */
static double e4m3_decode(uint8_t v)
{
	int e = (v >> 3) & 15, m = v & 7;
	double mag;

	if (e == 15 && m == 7)
		return NAN;
	mag = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
	return v & 0x80 ? -mag : mag;
}

/* E8M0 block scale: 2^(s - 127), 0xff is NaN. */
static double e8m0_decode(uint8_t s)
{
	return s == 0xff ? NAN : ldexp(1.0, (int)s - 127);
}

/* Decode n MXFP8 values (32-element blocks) into doubles. */
static void mxfp8_decode(const uint8_t *elems, const uint8_t *scales, size_t n, double *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = e4m3_decode(elems[i]) * e8m0_decode(scales[i / 32]);
}

/* Quantization error bound of each of n values, from its block's scale. */
static void mxfp8_error_bound(const float *x, const uint8_t *scales, size_t n, double *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double s = e8m0_decode(scales[i / 32]), a = fabs((double)x[i]);

		out[i] = fmax(ldexp(a, -4), a - 448 * s) + ldexp(s, -10);
	}
}

int main(int argc, char **argv)
{
	uint32_t m = 128, n = 128, k = 256;
	struct ex_buf a32, bt32, aq, aqs, btq, btqs, c;
	struct maia_tensor_desc ta32, tbt32, taq, tbtq, tc;
	struct maia_cmdbuf *cb;
	struct maia_device *dev;
	struct maia_job_status st;
	double *ad, *bd, *ea, *eb, *ref_q, *ref_f, t0, t1, err_q, err_f, max_ref;
	double tol_q = 0, tol_f = 0;
	uint64_t seed = 0x6d786670ull;
	char name[96];
	uint32_t i, j, p;
	int err, pass;

	if (argc == 4) {
		m = (uint32_t)atoi(argv[1]);
		n = (uint32_t)atoi(argv[2]);
		k = (uint32_t)atoi(argv[3]);
	}
	if (!m || !n || !k || m > 2048 || n > 2048 || k > 2048 || k % 32) {
		fprintf(stderr, "usage: %s [M N K], each 1..2048, K a multiple of 32\n", prog);
		return 2;
	}
	ex_check(maia_device_open(0, &dev), prog, "open device 0");
	ex_device_name(dev, name, sizeof(name));

	ex_check(ex_buf_create(dev, (uint64_t)m * k * 4, &a32) ||
		 ex_buf_create(dev, (uint64_t)n * k * 4, &bt32) ||
		 ex_buf_create(dev, (uint64_t)m * k, &aq) ||
		 ex_buf_create(dev, (uint64_t)m * k / 32, &aqs) ||
		 ex_buf_create(dev, (uint64_t)n * k, &btq) ||
		 ex_buf_create(dev, (uint64_t)n * k / 32, &btqs) ||
		 ex_buf_create(dev, (uint64_t)m * n * 4, &c), prog, "allocate buffers");
	ex_fill(a32.cpu, (size_t)m * k, 1.0f, &seed);
	ex_fill(bt32.cpu, (size_t)n * k, 1.0f, &seed);
	/* A few large outliers, which is what per-block scales are for. */
	((float *)a32.cpu)[7] = 50.0f;
	((float *)bt32.cpu)[k + 3] = -30.0f;

	ex_check(maia_tensor_init(&ta32, a32.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ m, k }) ||
		 maia_tensor_init(&tbt32, bt32.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ n, k }) ||
		 maia_tensor_init(&taq, aq.va, MAIA_DTYPE_MXFP8_E4M3, 2, (uint32_t[]){ m, k }) ||
		 maia_tensor_set_scale_addr(&taq, aqs.va) ||
		 maia_tensor_init(&tbtq, btq.va, MAIA_DTYPE_MXFP8_E4M3, 2, (uint32_t[]){ n, k }) ||
		 maia_tensor_set_scale_addr(&tbtq, btqs.va) ||
		 maia_tensor_init(&tc, c.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ m, n }),
		 prog, "tensor descriptors");

	ex_check(maia_cmdbuf_create(dev, 4096, &cb), prog, "command buffer");
	ex_check(maia_cmd_quantize(cb, &ta32, &taq, 0, 0), prog, "quantize A");
	ex_check(maia_cmd_quantize(cb, &tbt32, &tbtq, 0, 0), prog, "quantize B");
	ex_check(maia_cmd_gemm(cb, &taq, &tbtq, &tc, 1.0f, 0.0f, MAIA_GEMM_F_TRANS_B), prog,
		 "GEMM");
	t0 = ex_now_s();
	err = maia_run(dev, cb, 60ll * 1000000000, &st);
	t1 = ex_now_s();
	ex_check(err, prog, "run");

	ad = malloc(sizeof(double) * m * k);
	bd = malloc(sizeof(double) * n * k);
	ea = malloc(sizeof(double) * m * k);
	eb = malloc(sizeof(double) * n * k);
	ref_q = malloc(sizeof(double) * m * n);
	ref_f = malloc(sizeof(double) * m * n);
	if (!ad || !bd || !ea || !eb || !ref_q || !ref_f) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	mxfp8_decode(aq.cpu, aqs.cpu, (size_t)m * k, ad);
	mxfp8_decode(btq.cpu, btqs.cpu, (size_t)n * k, bd);
	mxfp8_error_bound(a32.cpu, aqs.cpu, (size_t)m * k, ea);
	mxfp8_error_bound(bt32.cpu, btqs.cpu, (size_t)n * k, eb);
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			const float *ar = (const float *)a32.cpu + (size_t)i * k;
			const float *br = (const float *)bt32.cpu + (size_t)j * k;
			const double *eap = ea + (size_t)i * k, *ebp = eb + (size_t)j * k;
			double sq = 0, sf = 0, mag = 0, qerr = 0;

			for (p = 0; p < k; p++) {
				sq += ad[(size_t)i * k + p] * bd[(size_t)j * k + p];
				sf += (double)ar[p] * br[p];
				mag += fabs(ad[(size_t)i * k + p] * bd[(size_t)j * k + p]);
				qerr += fabs(ar[p]) * ebp[p] + fabs(br[p]) * eap[p] + eap[p] * ebp[p];
			}
			ref_q[(size_t)i * n + j] = sq;
			ref_f[(size_t)i * n + j] = sf;
			/* FP32 accumulation; the quantization bound per product. */
			if (k * ldexp(mag, -23) > tol_q)
				tol_q = k * ldexp(mag, -23);
			if (qerr + k * ldexp(mag, -23) > tol_f)
				tol_f = qerr + k * ldexp(mag, -23);
		}
	}
	ex_compare(c.cpu, ref_q, (size_t)m * n, &err_q, &max_ref);
	ex_compare(c.cpu, ref_f, (size_t)m * n, &err_f, &max_ref);
	pass = err_q <= tol_q && err_f <= tol_f;
	printf("%s: %ux%ux%u FP32 -> MXFP8 (E4M3) quantize + GEMM on %s: job %.2f ms\n"
	       "  vs decoded-MXFP8 reference: max |err| %.3g (bound %.3g)\n"
	       "  vs FP32-input reference:    max |err| %.3g (bound %.3g, max |C| %.3g) -> %s\n",
	       prog, m, n, k, name, (t1 - t0) * 1e3, err_q, tol_q, err_f, tol_f, max_ref,
	       pass ? "PASS" : "FAIL");
	free(ad);
	free(bd);
	free(ea);
	free(eb);
	free(ref_q);
	free(ref_f);
	maia_cmdbuf_destroy(cb);
	ex_buf_destroy(&a32);
	ex_buf_destroy(&bt32);
	ex_buf_destroy(&aq);
	ex_buf_destroy(&aqs);
	ex_buf_destroy(&btq);
	ex_buf_destroy(&btqs);
	ex_buf_destroy(&c);
	maia_device_close(dev);
	return pass ? 0 : 1;
}
