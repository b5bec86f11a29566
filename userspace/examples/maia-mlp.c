// SPDX-License-Identifier: MIT
/*
 * A 2-layer MLP on the device, in one job:
 *
 *   h = GELU(x W1 + b1)        GEMM with bias and activation epilogue
 *   y = h W2 + b2              GEMM with bias
 *
 * x is T x D, W1 D x F, W2 F x D, all FP32, weights generated
 * deterministically (scaled like Xavier init). The CPU reference runs the
 * same network in double with the same tanh-form GELU. Error bound: FP32
 * accumulation in each GEMM, gamma_K = K * 2^-24 relative to sum|a||b|
 * (doubled for slack): the hidden layer within 1.13 (GELU's largest slope)
 * times 2 (D + 1) 2^-24 max sum|x||W1|, the output within
 * 2 (F + 1) 2^-24 max sum|h||W2| plus the hidden error times the largest
 * column sum of |W2|.
 * Usage: maia-mlp [T D F]
 */
#include "example-util.h"

static const char prog[] = "maia-mlp";

static double gelu_tanh(double v)
{
	return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

int main(int argc, char **argv)
{
	uint32_t t = 64, d = 128, f = 256;
	struct ex_buf x, w1, b1, h, w2, b2, y;
	struct maia_tensor_desc tx, tw1, tb1, th, tw2, tb2, ty;
	struct maia_gemm_args g1, g2;
	struct maia_cmdbuf *cb;
	struct maia_device *dev;
	struct maia_job_status st;
	double *href, *yref, t0, t1, t2, max_err, max_ref, h_err, h_ref, mag2 = 0, w2sum = 0;
	double tol, tol_h, mag1 = 0;
	uint64_t seed = 0x6d6c70ull;
	char name[96];
	uint32_t i, j, p;
	int pass;

	if (argc == 4) {
		t = (uint32_t)atoi(argv[1]);
		d = (uint32_t)atoi(argv[2]);
		f = (uint32_t)atoi(argv[3]);
	}
	if (!t || !d || !f || t > 1024 || d > 1024 || f > 4096) {
		fprintf(stderr, "usage: %s [T D F], T, D <= 1024, F <= 4096\n", prog);
		return 2;
	}
	ex_check(maia_device_open(0, &dev), prog, "open device 0");
	ex_device_name(dev, name, sizeof(name));
	ex_check(ex_buf_create(dev, (uint64_t)t * d * 4, &x) ||
		 ex_buf_create(dev, (uint64_t)d * f * 4, &w1) ||
		 ex_buf_create(dev, (uint64_t)f * 4, &b1) ||
		 ex_buf_create(dev, (uint64_t)t * f * 4, &h) ||
		 ex_buf_create(dev, (uint64_t)f * d * 4, &w2) ||
		 ex_buf_create(dev, (uint64_t)d * 4, &b2) ||
		 ex_buf_create(dev, (uint64_t)t * d * 4, &y), prog, "allocate buffers");
	ex_fill(x.cpu, (size_t)t * d, 1.0f, &seed);
	ex_fill(w1.cpu, (size_t)d * f, (float)sqrt(6.0 / (d + f)), &seed);
	ex_fill(b1.cpu, f, 0.1f, &seed);
	ex_fill(w2.cpu, (size_t)f * d, (float)sqrt(6.0 / (d + f)), &seed);
	ex_fill(b2.cpu, d, 0.1f, &seed);

	ex_check(maia_tensor_init(&tx, x.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ t, d }) ||
		 maia_tensor_init(&tw1, w1.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ d, f }) ||
		 maia_tensor_init(&tb1, b1.va, MAIA_DTYPE_FP32, 1, (uint32_t[]){ f }) ||
		 maia_tensor_init(&th, h.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ t, f }) ||
		 maia_tensor_init(&tw2, w2.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ f, d }) ||
		 maia_tensor_init(&tb2, b2.va, MAIA_DTYPE_FP32, 1, (uint32_t[]){ d }) ||
		 maia_tensor_init(&ty, y.va, MAIA_DTYPE_FP32, 2, (uint32_t[]){ t, d }),
		 prog, "tensor descriptors");
	g1 = (struct maia_gemm_args){ .a = &tx, .b = &tw1, .c = &th, .bias = &tb1,
				      .alpha = 1.0f, .activation = MAIA_ACT_GELU };
	g2 = (struct maia_gemm_args){ .a = &th, .b = &tw2, .c = &ty, .bias = &tb2,
				      .alpha = 1.0f };
	ex_check(maia_cmdbuf_create(dev, 4096, &cb), prog, "command buffer");
	ex_check(maia_cmd_gemm_ex(cb, &g1), prog, "layer 1");
	ex_check(maia_cmd_gemm_ex(cb, &g2), prog, "layer 2");
	t0 = ex_now_s();
	ex_check(maia_run(dev, cb, 60ll * 1000000000, &st), prog, "run");
	t1 = ex_now_s();

	href = malloc(sizeof(double) * t * f);
	yref = malloc(sizeof(double) * t * d);
	if (!href || !yref) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	for (i = 0; i < t; i++)
		for (j = 0; j < f; j++) {
			double s = ((float *)b1.cpu)[j], mag = fabs(s);

			for (p = 0; p < d; p++) {
				double prod = (double)((float *)x.cpu)[i * d + p] *
					      ((float *)w1.cpu)[p * f + j];

				s += prod;
				mag += fabs(prod);
			}
			href[i * f + j] = gelu_tanh(s);
			if (mag > mag1)
				mag1 = mag;
		}
	/* Layer 2 from the reference h, so errors of layer 1 propagate as bounded below. */
	for (i = 0; i < t; i++)
		for (j = 0; j < d; j++) {
			double s = ((float *)b2.cpu)[j], mag = fabs(s);

			for (p = 0; p < f; p++) {
				s += href[i * f + p] * ((float *)w2.cpu)[p * d + j];
				mag += fabs(href[i * f + p] * ((float *)w2.cpu)[p * d + j]);
			}
			yref[i * d + j] = s;
			if (mag > mag2)
				mag2 = mag;
		}
	for (j = 0; j < d; j++) {
		double s = 0;

		for (p = 0; p < f; p++)
			s += fabs(((float *)w2.cpu)[p * d + j]);
		if (s > w2sum)
			w2sum = s;
	}
	t2 = ex_now_s();
	ex_compare(h.cpu, href, (size_t)t * f, &h_err, &h_ref);
	ex_compare(y.cpu, yref, (size_t)t * d, &max_err, &max_ref);
	/* Layer 2's own FP32 error plus layer 1's error carried through W2. */
	tol = 2.0 * (f + 1) * ldexp(mag2, -24) + h_err * w2sum + ldexp(max_ref, -22);
	/* GELU's slope is below 1.13; its FP32 evaluation adds a few ulps. */
	tol_h = 1.13 * 2.0 * (d + 1) * ldexp(mag1, -24) + ldexp(h_ref, -20);
	pass = max_err <= tol && h_err <= tol_h;
	printf("%s: T=%u D=%u F=%u (GELU, bias) on %s: job %.2f ms, CPU reference %.2f ms\n"
	       "  hidden max |err| %.3g (bound %.3g), output max |err| %.3g (bound %.3g, max |y| %.3g)"
	       " -> %s\n", prog, t, d, f, name, (t1 - t0) * 1e3, (t2 - t1) * 1e3, h_err, tol_h,
	       max_err, tol,
	       max_ref, pass ? "PASS" : "FAIL");
	free(href);
	free(yref);
	maia_cmdbuf_destroy(cb);
	ex_buf_destroy(&x);
	ex_buf_destroy(&w1);
	ex_buf_destroy(&b1);
	ex_buf_destroy(&h);
	ex_buf_destroy(&w2);
	ex_buf_destroy(&b2);
	ex_buf_destroy(&y);
	maia_device_close(dev);
	return pass ? 0 : 1;
}
