/* SPDX-License-Identifier: MIT */
/*
 * What maia-bench and nvme-bench share: a monotonic clock, sample sets with
 * percentiles, and the JSON-lines output format of `make bench`:
 *
 *   {"name":..., "value":..., "unit":..., "higher_is_better":...
 *    [, "baseline":..., "baseline_value":..., "ratio":...]}
 *
 * ratio is always ours / baseline, whatever the direction of the figure.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A growable set of samples (nanoseconds, or any other double). */
struct bench_samples {
	double *v;
	size_t n, cap;
};

static inline int bench_add(struct bench_samples *s, double x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

static inline void bench_free(struct bench_samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100), nearest rank; sorts the samples. 0 if empty. */
static inline double bench_percentile(struct bench_samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), bench_cmp_double);
	rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1];
}

static inline double bench_median(struct bench_samples *s)
{
	return bench_percentile(s, 50);
}

/* One figure; baseline NULL when none was measured in this run. */
static inline void bench_emit(const char *name, double value, const char *unit,
			      bool higher_is_better, const char *baseline, double baseline_value)
{
	printf("{\"name\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",\"higher_is_better\":%s",
	       name, value, unit, higher_is_better ? "true" : "false");
	if (baseline && baseline_value > 0)
		printf(",\"baseline\":\"%s\",\"baseline_value\":%.6g,\"ratio\":%.4g", baseline,
		       baseline_value, value / baseline_value);
	printf("}\n");
	fflush(stdout);
}

#endif /* BENCH_UTIL_H */
