/* SPDX-License-Identifier: MIT */
/*
 * The Tile Vector Processor (maia/hw/tvp.h, Documentation/hw/tvp.rst):
 * internals shared by the files in src/tvp/ and the command processor's
 * entry point, fw_tvp_kernel(). Not an ABI.
 *
 * A KERNEL command goes: fetch the program through the MMU (kernel.c),
 * validate every word (validate.c), pre-decode it once (decode.c), then run
 * each grid point as an instance (exec.c) on the tensor engine's worker
 * threads. Element-wise vector ops are in vops.h, compiled once per ISA
 * (vops_generic.c, vops_avx2.c, vops_avx512.c) and picked by speed
 * (vops_select.c); reductions, broadcasts, transpose and VDOT in vperm.c;
 * conversions in vcvt.c; loads and stores in mem.c.
 */
#ifndef FWSIM_TVP_H
#define FWSIM_TVP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/engine.h"
#include "maia/hw/cmd.h"
#include "maia/hw/queue.h"
#include "maia/hw/tvp.h"

/* ---- the command processor's entry point (kernel.c) ---- */

/* What the command processor lends a kernel. */
struct fw_tvp_env {
	const struct maia_job_mem *mem;	/* the job's address space */
	uint64_t *sems;			/* its MAIA_NUM_SEMAPHORES semaphores (atomics) */
	/* True once the job must stop (reset, queue disabled); may be NULL. */
	bool (*stop)(void *opaque);
	void *stop_opaque;
	struct fw_tensor_engine *te;	/* its worker threads; NULL: run on the caller */
};

/* What a kernel did, for telemetry and the time model. */
struct fw_tvp_stats {
	uint64_t insns[MAIA_TVP_NUM_CLASSES];	/* instructions executed per class */
	/* work units per class: lane groups (vector), MAC groups (matrix), 1 (others) */
	uint64_t units[MAIA_TVP_NUM_CLASSES];
	uint64_t instances;		/* instances that ran (to the end or to a failure) */
	uint64_t flops;			/* float lane operations, 2 per VDOT multiply-add */
	uint64_t bytes_read, bytes_written;
	uint64_t sems_signaled;		/* bit i: semaphore i got a SEMSIG */
	bool validated;			/* the program passed validation */
};

/* Internal result besides MAIA_STATUS_*: the job must stop (reset, disable). */
#define FW_TVP_STOPPED	(-2)

/* Lanes per work unit of the vector classes, MACs per unit of the matrix class. */
#define FW_TVP_LANE_GROUP	256u
#define FW_TVP_MAC_GROUP	1024u

/*
 * Runs one KERNEL command (cmd->hdr.size already checked against the
 * buffer): MAIA_STATUS_* or FW_TVP_STOPPED. *st is filled in either way.
 */
int fw_tvp_kernel(const struct fw_tvp_env *env, const struct maia_cmd_kernel *cmd,
		  struct fw_tvp_stats *st);

/* ---- validation and decoding (validate.c, decode.c) ---- */

/* MAIA_STATUS_OK or MAIA_STATUS_KERNEL_INVALID; *bad: index of the first bad word. */
int fw_tvp_validate(const struct maia_tvp_insn *insns, uint32_t n, uint32_t *bad);
/* True if one word is valid in a program of n words. */
bool fw_tvp_insn_valid(const struct maia_tvp_insn *in, uint32_t n);
/* The class of a valid opcode (MAIA_TVP_CLASS_*). */
unsigned int fw_tvp_class(uint8_t op);

/* A pre-decoded instruction: the word's fields plus what exec.c needs at hand. */
struct fw_tvp_dinsn {
	uint8_t op, rd, ra, rb;
	uint32_t imm;
	uint8_t cls;		/* MAIA_TVP_CLASS_* */
	uint8_t dtype;		/* VLD/VST/SLD/SST */
	uint8_t mreg;		/* VLD/VST mask register (masked) */
	uint8_t mflags;		/* 1: masked, 2: unit stride */
	bool wv;		/* writes vector register rd */
	uint16_t rows, cols;	/* SHAPE */
};

#define FW_TVP_MF_MASKED	1u
#define FW_TVP_MF_UNIT		2u

/* Decodes n validated words into d. */
void fw_tvp_decode(const struct maia_tvp_insn *insns, uint32_t n, struct fw_tvp_dinsn *d);

/* ---- one instance's machine state (exec.c) ---- */

typedef float fw_tvp_f32 __attribute__((may_alias));
typedef int32_t fw_tvp_i32 __attribute__((may_alias));
typedef uint32_t fw_tvp_u32 __attribute__((may_alias));

union fw_tvp_vreg {
	float f[MAIA_TVP_VLEN];
	int32_t i[MAIA_TVP_VLEN];
	uint32_t u[MAIA_TVP_VLEN];
} __attribute__((aligned(64)));

/* A translation of one 4 KiB page of the job's address space, in place. */
struct fw_tvp_page {
	uint64_t va;		/* page address; UINT64_MAX: empty */
	uint8_t *p;		/* host pointer to the page's first byte */
	size_t avail;		/* bytes usable from p (a mapping may end early) */
};

#define FW_TVP_PAGE_SIZE	4096u
#define FW_TVP_PAGES		8u	/* per direction */

struct fw_tvp_kernel;

/* A worker's state: the registers of the instance it runs, its page cache, counters. */
struct fw_tvp_state {
	union fw_tvp_vreg v[MAIA_TVP_NUM_VREGS];
	union fw_tvp_vreg tmp[3];	/* results before they land in vd */
	uint64_t s[MAIA_TVP_NUM_SREGS];
	uint32_t rows, cols, vl;
	uint32_t vdirty;	/* vector registers written since they were last zeroed */
	uint32_t pid[3];
	const struct fw_tvp_kernel *k;
	struct fw_tvp_page rpages[FW_TVP_PAGES], wpages[FW_TVP_PAGES];
	unsigned int rnext, wnext;
	struct fw_tvp_stats st;
	int status;
};

/* A running kernel: what every instance shares. */
struct fw_tvp_kernel {
	const struct fw_tvp_env *env;
	const struct fw_tvp_dinsn *prog;
	uint32_t n;
	uint32_t grid[3];
	uint64_t ninst;
	uint32_t nargs;
	uint64_t args[MAIA_TVP_MAX_ARGS];
	uint64_t budget;
	int status;		/* first failure; atomic */
};

/* Runs instance number idx (x fastest) in st: MAIA_STATUS_* or FW_TVP_STOPPED. */
int fw_tvp_run_instance(struct fw_tvp_state *st, uint64_t idx);

/* ---- vector operations ---- */

/*
 * One element-wise op (VALU or VSFU class, except VCVT) over n lanes:
 * o[i] = op(a[i], b[i], c[i]), out of place (o is none of a, b, c).
 */
typedef void (*fw_tvp_vop_fn)(unsigned int op, unsigned int imm, unsigned int n,
			      fw_tvp_u32 *o, const fw_tvp_u32 *a, const fw_tvp_u32 *b,
			      const fw_tvp_u32 *c);
void fw_tvp_vop_generic(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *o,
			const fw_tvp_u32 *a, const fw_tvp_u32 *b, const fw_tvp_u32 *c);
void fw_tvp_vop_avx2(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *o,
		     const fw_tvp_u32 *a, const fw_tvp_u32 *b, const fw_tvp_u32 *c);
void fw_tvp_vop_avx512(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *o,
		       const fw_tvp_u32 *a, const fw_tvp_u32 *b, const fw_tvp_u32 *c);
bool fw_tvp_vop_avx2_usable(void);
bool fw_tvp_vop_avx512_usable(void);

/* vops_select.c: the variant in use, and the list the tests and the bench walk. */
struct fw_tvp_vop_impl {
	const char *name;
	fw_tvp_vop_fn fn;
	bool (*usable)(void);
};
const struct fw_tvp_vop_impl *fw_tvp_vop_impls(size_t *n);
/* The fastest usable variant, measured once (MAIA_TVP_ISA=name forces one). */
fw_tvp_vop_fn fw_tvp_vop_best(void);
const char *fw_tvp_vop_best_name(void);

/* The erfc(x) exp(x^2) fit VERF uses on [1, 4] (vops.h), set up by fw_tvp_vop_best(). */
#define FW_TVP_ERFCX_TERMS	20u
extern double fw_tvp_erfcx_cheb[FW_TVP_ERFCX_TERMS];
void fw_tvp_math_init(void);

/* vcvt.c: VCVT over n lanes, out of place. */
void fw_tvp_cvt(unsigned int kind, unsigned int n, fw_tvp_u32 *o, const fw_tvp_u32 *a);
/* Rounds binary32 bits to a storage dtype and back (the values a store keeps). */
uint32_t fw_tvp_round_to(unsigned int dtype, uint32_t bits);

/*
 * vperm.c: reductions, broadcasts and transpose into the temporary o (the
 * result's lanes in *nout), and VDOT: o = d + a * b on the shape rows x cols.
 */
void fw_tvp_perm(unsigned int op, unsigned int imm, uint32_t rows, uint32_t cols,
		 fw_tvp_u32 *o, const fw_tvp_u32 *a, unsigned int *nout);
void fw_tvp_vdot(uint32_t rows, uint32_t cols, uint32_t k, fw_tvp_u32 *o, const fw_tvp_u32 *a,
		 const fw_tvp_u32 *b, const fw_tvp_u32 *d);

/* mem.c: loads and stores through the job's address space. */
void fw_tvp_mem_reset(struct fw_tvp_state *st);
int fw_tvp_vld(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);
int fw_tvp_vst(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);
int fw_tvp_sld(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);
int fw_tvp_sst(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);
/* AMOADD, AMOXCHG, AMOCAS on the int32 word at s[ra] (maia/hw/tvp.h). */
int fw_tvp_amo(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);
/* VAMOADD: one atomic add per active lane (maia/hw/tvp.h). */
int fw_tvp_vamoadd(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d);

/* Storage dtype <-> binary32 bits or int32 lane (mem.c). */
uint32_t fw_tvp_load_elem(unsigned int dtype, const uint8_t *p);
void fw_tvp_store_elem(unsigned int dtype, uint32_t lane, uint8_t *p);

#endif /* FWSIM_TVP_H */
