/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the tensor engine tests: a flat device memory behind
 * struct maia_job_mem, descriptor builders, and an independent
 * double-precision reference for the element formats (written from the
 * format definitions, not from the engine's code).
 */
#ifndef TENSOR_TEST_HELPERS_H
#define TENSOR_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/engine.h"
#include "maia/hw/dtype.h"
#include "maia/hw/queue.h"
#include "maia/hw/tensor.h"

/* Device memory: [base, base + size) is mapped, everything else faults. */
struct tmem {
	uint8_t *buf;
	uint64_t base;
	uint64_t size;
	uint64_t used;
	struct maia_job_mem mem;
};

#define TMEM_BASE	0x100000000ull
/* mem.map/map_write stop at every TMEM_MAP_PAGE bytes; set them NULL to test without */
#define TMEM_MAP_PAGE	4096u

void tmem_init(struct tmem *m, uint64_t size);
void tmem_free(struct tmem *m);
void tmem_reset(struct tmem *m);
uint64_t tmem_alloc(struct tmem *m, uint64_t bytes);
void *tmem_ptr(struct tmem *m, uint64_t va);

/* Contiguous row-major descriptor; strides derived from the shape. */
struct maia_tensor_desc tdesc(unsigned int dtype, uint64_t va, unsigned int rank,
			      const uint32_t *shape);
/* Bytes a contiguous tensor of n elements takes (elements only). */
uint64_t tbytes(unsigned int dtype, uint64_t n);

/*
 * Put n values into device memory as dtype (contiguous, the block formats'
 * scales at scale_va), through the engine's encoder; then read back the
 * exact stored values with the independent reference decoder into out.
 */
void tput(struct tmem *m, unsigned int dtype, uint64_t va, uint64_t scale_va,
	  const float *vals, uint64_t n, float scale, double *out);
/* Decode n contiguous elements of dtype at va with the reference decoder. */
void tget(struct tmem *m, unsigned int dtype, uint64_t va, uint64_t scale_va, uint64_t n,
	  float scale, double *out);

/* Reference decoders. */
double ref_minifloat(uint32_t code, int ebits, int mbits, int bias, int kind);
#define REF_IEEE	0	/* top exponent = Inf/NaN */
#define REF_FN		1	/* only all-ones = NaN (E4M3) */
#define REF_FINITE	2	/* no Inf/NaN (FP6/FP4) */
double ref_decode(unsigned int dtype, uint32_t code);		/* plain dtypes */
double ref_elem(unsigned int mx_dtype, uint32_t code);		/* MX element */
/* Unit roundoff of an output dtype (half an ulp at 1.0). */
double ref_unit_roundoff(unsigned int dtype);

/* Pseudo-random numbers, reproducible. */
void trand_seed(uint64_t s);
float trand_uniform(float lo, float hi);

/* One command through the engine with a fresh stats block. */
int trun(struct fw_tensor_engine *te, struct tmem *m, const void *cmd,
	 struct maia_op_stats *stats);
struct fw_tensor_engine *tengine(unsigned int threads);

static inline uint32_t f2u(float f)
{
	union { float f; uint32_t u; } v = { .f = f };

	return v.u;
}

#endif
