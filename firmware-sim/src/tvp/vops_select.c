// SPDX-License-Identifier: MIT
/*
 * Which compiled variant of the element-wise ops (vops.h) runs: the
 * fastest usable one on this host, measured once on a mix of cheap and
 * transcendental ops over a full register (all variants give the same
 * bits, so only speed decides); MAIA_TVP_ISA=generic|avx2|avx512 forces
 * one. Also sets up the Chebyshev fit VERF uses.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../fw_host.h"
#include "tvp.h"

double fw_tvp_erfcx_cheb[FW_TVP_ERFCX_TERMS];

static bool always(void)
{
	return true;
}

static const struct fw_tvp_vop_impl impls[] = {
	{ "generic", fw_tvp_vop_generic, always },
	{ "avx2", fw_tvp_vop_avx2, fw_tvp_vop_avx2_usable },
	{ "avx512", fw_tvp_vop_avx512, fw_tvp_vop_avx512_usable },
};

const struct fw_tvp_vop_impl *fw_tvp_vop_impls(size_t *n)
{
	*n = sizeof(impls) / sizeof(impls[0]);
	return impls;
}

/*
 * Chebyshev coefficients of erfcx(x) = erfc(x) e^(x^2) on [1, 4], from libm
 * at the Chebyshev nodes (c_0 is to be halved, as Clenshaw's sum uses it).
 */
void fw_tvp_math_init(void)
{
	const unsigned int n = FW_TVP_ERFCX_TERMS;
	double f[FW_TVP_ERFCX_TERMS];

	for (unsigned int j = 0; j < n; j++) {
		double t = cos(M_PI * (j + 0.5) / n), x = 2.5 + 1.5 * t;

		f[j] = erfc(x) * exp(x * x);
	}
	for (unsigned int k = 0; k < n; k++) {
		double s = 0.0;

		for (unsigned int j = 0; j < n; j++)
			s += f[j] * cos(M_PI * k * (j + 0.5) / n);
		fw_tvp_erfcx_cheb[k] = 2.0 * s / n;
	}
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct fw_tvp_vop_impl *best;

/* Host ns of a few passes of a fixed op mix over a full register. */
static uint64_t time_impl(const struct fw_tvp_vop_impl *im, fw_tvp_u32 *buf)
{
	static const unsigned int mix[] = { MAIA_TVP_OP_VFADD, MAIA_TVP_OP_VFMUL,
					    MAIA_TVP_OP_VFMA, MAIA_TVP_OP_VEXP,
					    MAIA_TVP_OP_VFMAX, MAIA_TVP_OP_VTANH };
	uint64_t best_ns = UINT64_MAX;

	for (unsigned int rep = 0; rep < 5; rep++) {
		uint64_t t0 = fw_monotonic_ns(), dt;

		for (unsigned int m = 0; m < sizeof(mix) / sizeof(mix[0]); m++)
			im->fn(mix[m], 0, MAIA_TVP_VLEN, buf, buf + MAIA_TVP_VLEN,
			       buf + 2 * MAIA_TVP_VLEN, buf + 3 * MAIA_TVP_VLEN);
		dt = fw_monotonic_ns() - t0;
		if (dt < best_ns)
			best_ns = dt;
	}
	return best_ns;
}

static void pick(void)
{
	const char *want = getenv("MAIA_TVP_ISA");
	size_t n = sizeof(impls) / sizeof(impls[0]);
	fw_tvp_u32 *buf = malloc(4 * MAIA_TVP_VLEN * sizeof(*buf));
	uint64_t best_ns = UINT64_MAX;

	fw_tvp_math_init();
	best = &impls[0];
	for (size_t i = 0; want && i < n; i++) {
		if (!strcmp(want, impls[i].name) && impls[i].usable()) {
			best = &impls[i];
			free(buf);
			return;
		}
	}
	if (!buf)
		return;
	for (unsigned int i = 0; i < 4 * MAIA_TVP_VLEN; i++) {
		float f = (float)(i % 97) * 0.03125f - 1.5f;

		memcpy(&buf[i], &f, 4);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t ns;

		if (!impls[i].usable())
			continue;
		ns = time_impl(&impls[i], buf);
		if (ns < best_ns) {
			best_ns = ns;
			best = &impls[i];
		}
	}
	free(buf);
}

fw_tvp_vop_fn fw_tvp_vop_best(void)
{
	pthread_once(&once, pick);
	return best->fn;
}

const char *fw_tvp_vop_best_name(void)
{
	pthread_once(&once, pick);
	return best->name;
}
