// SPDX-License-Identifier: MIT
/*
 * Pre-decoding: a validated program becomes an array of struct
 * fw_tvp_dinsn once per command, so the instances do not pick imm fields
 * apart at every step.
 */
#include "tvp.h"

void fw_tvp_decode(const struct maia_tvp_insn *insns, uint32_t n, struct fw_tvp_dinsn *d)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct maia_tvp_insn *in = &insns[i];
		struct fw_tvp_dinsn *o = &d[i];

		*o = (struct fw_tvp_dinsn){
			.op = in->op, .rd = in->rd, .ra = in->ra, .rb = in->rb, .imm = in->imm,
			.cls = (uint8_t)fw_tvp_class(in->op),
		};
		/* every vector-class op but VST writes vd; VEXT writes a scalar */
		o->wv = (o->cls == MAIA_TVP_CLASS_VALU || o->cls == MAIA_TVP_CLASS_VSFU ||
			 o->cls == MAIA_TVP_CLASS_VPERM || o->cls == MAIA_TVP_CLASS_MATRIX ||
			 in->op == MAIA_TVP_OP_VLD || in->op == MAIA_TVP_OP_VAMOADD) &&
			in->op != MAIA_TVP_OP_VEXT;
		switch (in->op) {
		case MAIA_TVP_OP_VAMOADD:
		case MAIA_TVP_OP_VLD:
		case MAIA_TVP_OP_VST:
			o->dtype = (uint8_t)MAIA_TVP_MEM_DTYPE(in->imm);
			o->mreg = (uint8_t)MAIA_TVP_MEM_MASK_REG(in->imm);
			o->mflags = (in->imm & MAIA_TVP_MEM_MASKED ? FW_TVP_MF_MASKED : 0) |
				    (in->imm & MAIA_TVP_MEM_UNIT ? FW_TVP_MF_UNIT : 0);
			break;
		case MAIA_TVP_OP_SLD:
		case MAIA_TVP_OP_SST:
			o->dtype = (uint8_t)in->imm;
			break;
		case MAIA_TVP_OP_SHAPE:
			o->rows = (uint16_t)(in->imm >> 16);
			o->cols = (uint16_t)(in->imm & 0xffffu);
			break;
		default:
			break;
		}
	}
}
