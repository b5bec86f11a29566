/* SPDX-License-Identifier: MIT */
/*
 * What libmaia's TVP assembler and disassembler share: the names of the
 * assembly syntax (Documentation/tvp-asm.rst) and the device's validation
 * of instruction words (maia/hw/tvp_rules.h, the device's own rule) with a
 * message, so that nothing the assembler emits is refused by the device and
 * the disassembler prints only what assembles back.
 */
#ifndef LIBMAIA_TVP_SYNTAX_H
#define LIBMAIA_TVP_SYNTAX_H

#include <stddef.h>
#include <stdint.h>

#include "maia/hw/tvp.h"

/* Mnemonic and operand format (MAIA_TVP_FMT_*) of an opcode; mnem NULL: none. */
struct tvp_op {
	const char *mnem;
	unsigned int fmt;
};

/* The opcode's entry of MAIA_TVP_OPS, or NULL. */
const struct tvp_op *tvp_op_of(unsigned int opcode);
/* The opcode of a mnemonic (len bytes of name), or -1. */
int tvp_op_by_name(const char *name, size_t len);

/* Names of MAIA_TVP_CMP_* and MAIA_TVP_CVT_*, indexed by value. */
extern const char *const tvp_cond_names[MAIA_TVP_CMP_COUNT];
extern const char *const tvp_cvt_names[MAIA_TVP_CVT_COUNT];
/* The syntax's name of a memory dtype ("f32") or NULL if VLD cannot use it. */
const char *tvp_dtype_name(unsigned int dtype);
/* The MAIA_DTYPE_* of a name, or -1. */
int tvp_dtype_by_name(const char *name, size_t len);

/*
 * Whether the device accepts word in of a program of count words
 * (maia_tvp_insn_fault()): 0, or -1 with why (at most size bytes) saying
 * what it refuses.
 */
int tvp_check(const struct maia_tvp_insn *in, uint32_t count, char *why, size_t size);

#endif /* LIBMAIA_TVP_SYNTAX_H */
