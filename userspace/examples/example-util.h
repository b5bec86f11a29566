/* SPDX-License-Identifier: MIT */
/*
 * Small helpers the examples share: timing, deterministic data, BF16, and
 * a host buffer object that is both CPU-mapped and mapped on the device.
 * Header-only so that each example stays one file to copy plus this one.
 */
#ifndef MAIA_EXAMPLE_UTIL_H
#define MAIA_EXAMPLE_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libmaia.h"

static inline double ex_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Deterministic uniform in [-1, 1): a 64-bit LCG, identical on every host. */
static inline float ex_rand(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(*state >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

/* A buffer in host memory, CPU-mapped and mapped at a device VA. */
struct ex_buf {
	struct maia_bo *bo;
	void *cpu;
	uint64_t va;
};

static inline int ex_buf_create(struct maia_device *dev, uint64_t bytes, struct ex_buf *b)
{
	int err = maia_bo_create(dev, bytes, MAIA_BO_HOST, &b->bo);

	if (!err)
		err = maia_bo_map(b->bo, &b->cpu);
	if (err) {
		fprintf(stderr, "buffer of %llu bytes: %s (%s)\n", (unsigned long long)bytes,
			maia_strerror(err), maia_last_error());
		return err;
	}
	memset(b->cpu, 0, bytes);
	b->va = maia_bo_va(b->bo);
	return 0;
}

static inline void ex_buf_destroy(struct ex_buf *b)
{
	maia_bo_destroy(b->bo);
	b->bo = NULL;
}

/* Fill n floats with deterministic values in [-amp, amp). */
static inline void ex_fill(float *p, size_t n, float amp, uint64_t *state)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = amp * ex_rand(state);
}

/* Largest |got - ref| and largest |ref| over n values. */
static inline void ex_compare(const float *got, const double *ref, size_t n, double *max_err,
			      double *max_ref)
{
	size_t i;

	*max_err = 0;
	*max_ref = 0;
	for (i = 0; i < n; i++) {
		double e = fabs((double)got[i] - ref[i]);

		if (!(e <= *max_err))	/* NaN counts as the worst error */
			*max_err = isnan(e) ? INFINITY : e;
		if (fabs(ref[i]) > *max_ref)
			*max_ref = fabs(ref[i]);
	}
}

/*
 * Exit with a message naming the failed step. err is a negative errno, or
 * 1 from a chain of calls joined with || (the message then tells which).
 */
static inline void ex_check(int err, const char *prog, const char *what)
{
	if (!err)
		return;
	fprintf(stderr, "%s: %s failed: %s%s%s\n", prog, what,
		err < 0 ? maia_strerror(err) : "", err < 0 && *maia_last_error() ? ": " : "",
		maia_last_error());
	exit(1);
}

/* "accel0 (0000:00:01.0)" for the report line. */
static inline void ex_device_name(struct maia_device *dev, char *buf, size_t len)
{
	struct maia_device_info info;

	if (maia_device_info(dev, &info))
		snprintf(buf, len, "a Maia device");
	else
		snprintf(buf, len, "accel%d (%s, firmware %u.%u.%u)", info.index,
			 info.pci_address, info.fw_version >> 16, (info.fw_version >> 8) & 0xff,
			 info.fw_version & 0xff);
}

#endif /* MAIA_EXAMPLE_UTIL_H */
