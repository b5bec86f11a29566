/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the TVP tests (test_tvp*.c): a flat fake address space for
 * struct maia_job_mem that records the first fault, a program builder
 * written from the ISA table (not libmaia's assembler: the device is
 * tested on its own), a runner for fw_tvp_kernel(), and float references
 * (ULP distance, FP8 rounding) written here independently of the device.
 */
#ifndef FWSIM_TVP_UTIL_H
#define FWSIM_TVP_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "../../../firmware-sim/src/tvp/tvp.h"
#include "maia/hw/dtype.h"

/* VA [base, base + size) maps buf; everything else faults. */
struct tvp_mem {
	uint64_t base;
	uint8_t *buf;
	size_t size;
	bool no_map;		/* map()/map_write() absent: every access by read()/write() */
	unsigned int faults;
	uint64_t fault_va;	/* the first */
	struct maia_job_mem jm;
};

#define TVP_BASE	0x10000000ull
#define TVP_PROG	TVP_BASE		/* where tvp_run() puts the program */
#define TVP_DATA	(TVP_BASE + 0x100000ull)	/* first byte free for data */

void tvp_mem_init(struct tvp_mem *m, size_t size);
void tvp_mem_fini(struct tvp_mem *m);
void *tvp_ptr(struct tvp_mem *m, uint64_t va);

struct tvp_prog {
	struct maia_tvp_insn w[8192];
	uint32_t n;
};

/* Appends one word; returns its index. */
uint32_t tvp_emit(struct tvp_prog *p, unsigned int op, unsigned int rd, unsigned int ra,
		  unsigned int rb, uint32_t imm);
/* VLD/VST imm */
uint32_t tvp_memimm(unsigned int dtype, bool unit, int mreg);

struct tvp_run_opts {
	uint32_t grid[3];	/* 0: 1 */
	const uint64_t *args;
	uint32_t nargs;
	uint32_t budget;
	uint64_t *sems;		/* NULL: a zeroed private set */
	struct fw_tensor_engine *te;
	bool (*stop)(void *opaque);
	void *stop_opaque;
};

/* Copies p to TVP_PROG and runs it: MAIA_STATUS_* (st may be NULL). */
int tvp_run(struct tvp_mem *m, const struct tvp_prog *p, const struct tvp_run_opts *o,
	    struct fw_tvp_stats *st);

float tvp_f(uint32_t u);
uint32_t tvp_u(float f);
/* Distance of r from the exact value ref in units of r's binary32 spacing at ref. */
double tvp_ulps(float r, double ref);
/* x rounded to nearest even in FP8 (E4M3 or E5M2), saturating, decoded again. */
float tvp_ref_fp8(float x, unsigned int dtype);
float tvp_ref_bf16(float x);
/* xorshift */
uint32_t tvp_rand(uint64_t *state);

#endif /* FWSIM_TVP_UTIL_H */
