/* SPDX-License-Identifier: MIT */
/*
 * CPU reference for collectives (MAIA_OP_COLLECTIVE), written from
 * Documentation/hw/fabric.rst ("Collectives") and independent of
 * firmware-sim: its own BF16 conversions, the documented reduction order.
 * Shared by test_fabric_coll.c (engines) and test_fabric_coll_sim.c (devices).
 */
#ifndef FWSIM_COLL_REF_H
#define FWSIM_COLL_REF_H

#include <stddef.h>
#include <stdint.h>

#include "maia/hw/cmd.h"

float ref_bf16_to_f32(uint16_t h);
/* Round to nearest, ties to even; a NaN stays a quiet NaN (its top bits). */
uint16_t ref_f32_to_bf16(float f);
/* One step of the fold: acc op x (MAIA_REDOP_*), acc the left operand. */
float ref_op(unsigned int op, float acc, float x);
/* Element i of a buffer of dtype, as FP32. */
float ref_ld(const uint8_t *p, uint64_t i, unsigned int dtype);
/* Element i of every rank's input folded starting at rank first; stored in out. */
void ref_reduce(uint8_t **in, uint64_t i, unsigned int first, const struct maia_cmd_collective *k,
		uint8_t *out);
/* Expected recv buffer of rank r, from every rank's input (in[rank], its send buffer). */
void ref_expected(uint8_t **in, unsigned int r, const struct maia_cmd_collective *k, uint8_t *exp);
/* Bytes of the send and recv buffers of a command. */
void ref_buf_sizes(const struct maia_cmd_collective *k, size_t *send, size_t *recv);
/* elems random elements of dtype of mixed magnitudes (so the order of a sum shows). */
void ref_fill(uint8_t *p, uint64_t elems, unsigned int dtype, uint64_t *rng);
/* The same, about half of them replaced by NaNs, +-0, infinities, denormals, ties. */
void ref_fill_special(uint8_t *p, uint64_t elems, unsigned int dtype, uint64_t *rng);

#endif /* FWSIM_COLL_REF_H */
