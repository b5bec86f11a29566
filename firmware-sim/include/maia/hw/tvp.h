/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: the Tile Vector Processor (TVP, revision 1.9; atomics 1.11) and the
 * KERNEL command that runs a TVP program over a grid of program instances.
 * See Documentation/hw/tvp.rst for the semantics of every instruction.
 *
 * One table, MAIA_TVP_OPS below, describes every instruction: the device's
 * decoder and validator, libmaia's assembler and disassembler and the tests
 * all expand it, so a mnemonic, an opcode and an operand format exist once.
 *
 * Machine model, per program instance:
 * - 32 vector registers v0..v31 of MAIA_TVP_VLEN 32-bit lanes. A lane holds
 *   an IEEE binary32 or a two's-complement int32; the instruction says which.
 *   Every lane is 0 when the instance starts.
 * - 32 scalar registers s0..s31 of 64 bits; s0 reads as 0, writes to it are
 *   dropped. At start s1..s<num_args> hold the command's args[], the others 0.
 * - A shape (rows, cols), rows * cols <= MAIA_TVP_VLEN, set by SHAPE. Vector
 *   instructions work on the first vl = rows * cols lanes, row-major; lanes
 *   at and above vl keep their values. Initial shape: (1, MAIA_TVP_VLEN).
 * - A float "scalar" of a kernel is lane 0 of a vector register (shape 1 x 1).
 * - pc, an instruction index. The program ends at HALT or when pc reaches
 *   num_insns.
 */
#ifndef MAIA_HW_TVP_H
#define MAIA_HW_TVP_H

#include <linux/types.h>

#include "maia/hw/cmd.h"

#define MAIA_OP_KERNEL			0x0au	/* 1.9 */

#define MAIA_TVP_VLEN			1024u	/* lanes per vector register */
#define MAIA_TVP_NUM_VREGS		32u
#define MAIA_TVP_NUM_SREGS		32u
#define MAIA_TVP_MAX_INSNS		65536u	/* per program */
#define MAIA_TVP_MAX_ARGS		16u	/* s1 .. s16 */
#define MAIA_TVP_MAX_GRID		(1u << 20)	/* per axis; the product too */
#define MAIA_TVP_DEFAULT_BUDGET		(1u << 24)	/* instructions per instance */

/*
 * Instruction word: 8 bytes, little-endian, 8-byte aligned in memory.
 * rd, ra, rb are register numbers (a scalar or vector register as the
 * operand format says); imm is a 32-bit field whose meaning the format
 * gives. Fields a format does not use must be zero.
 */
struct maia_tvp_insn {
	__u8 op;		/* MAIA_TVP_OP_* */
	__u8 rd;
	__u8 ra;
	__u8 rb;
	__u32 imm;
};

/*
 * Operand formats. S = scalar register, V = vector register, I = imm.
 * Assembler syntax in brackets, operands separated by commas.
 */
#define MAIA_TVP_FMT_NONE	0u	/* [op]                         */
#define MAIA_TVP_FMT_S_I	1u	/* [op sd, imm]                 signed imm */
#define MAIA_TVP_FMT_S_S_I	2u	/* [op sd, sa, imm]             signed imm */
#define MAIA_TVP_FMT_S_S_S	3u	/* [op sd, sa, sb]                         */
#define MAIA_TVP_FMT_S_S_S_C	4u	/* [op sd, sa, sb, cond]        imm = MAIA_TVP_CMP_* */
#define MAIA_TVP_FMT_V_V_V	5u	/* [op vd, va, vb]                         */
#define MAIA_TVP_FMT_V_V	6u	/* [op vd, va]                             */
#define MAIA_TVP_FMT_V_V_V_V	7u	/* [op vd, va, vb, vc]          imm = c */
#define MAIA_TVP_FMT_V_V_V_C	8u	/* [op vd, va, vb, cond]        imm = MAIA_TVP_CMP_* */
#define MAIA_TVP_FMT_V_V_I	9u	/* [op vd, va, imm]             unsigned imm */
#define MAIA_TVP_FMT_V_S	10u	/* [op vd, sa]                             */
#define MAIA_TVP_FMT_V_I	11u	/* [op vd, imm]                 imm = 32 bits */
#define MAIA_TVP_FMT_S_V_I	12u	/* [op sd, va, imm]             lane index */
#define MAIA_TVP_FMT_MEM_V	13u	/* [op vd, sa, vb, dtype, mask] see MAIA_TVP_MEM_* */
#define MAIA_TVP_FMT_MEM_S	14u	/* [op sd, sa, dtype]           imm = MAIA_DTYPE_* */
#define MAIA_TVP_FMT_BR_S	15u	/* [op sa, target]              imm = insn index */
#define MAIA_TVP_FMT_BR_S_S	16u	/* [op sa, sb, target]          imm = insn index */
#define MAIA_TVP_FMT_JUMP	17u	/* [op target]                  imm = insn index */
#define MAIA_TVP_FMT_SHAPE	18u	/* [op rows, cols]              imm = rows << 16 | cols */
#define MAIA_TVP_FMT_S_AXIS	19u	/* [op sd, axis]                imm = 0, 1 or 2 */
#define MAIA_TVP_FMT_SEM	20u	/* [op sa, index]               imm = semaphore index */
#define MAIA_TVP_FMT_V_V_V_K	21u	/* [op vd, va, vb, K]           imm = K, 1 .. VLEN */
#define MAIA_TVP_FMT_COUNT	22u

/*
 * Instruction classes: what the telemetry counts (MAIA_TELEM_TVP_*) and the
 * device time model prices.
 */
#define MAIA_TVP_CLASS_SCALAR	0u	/* scalar ALU, PID, SHAPE, HALT, NOP */
#define MAIA_TVP_CLASS_BRANCH	1u
#define MAIA_TVP_CLASS_VALU	2u	/* vector arithmetic, compare, select, convert, moves */
#define MAIA_TVP_CLASS_VSFU	3u	/* vector transcendentals, divide, sqrt */
#define MAIA_TVP_CLASS_VMEM	4u	/* vector and scalar loads and stores */
#define MAIA_TVP_CLASS_VPERM	5u	/* reductions, broadcasts, transpose */
#define MAIA_TVP_CLASS_MATRIX	6u	/* DOT through the tile's tensor unit */
#define MAIA_TVP_CLASS_SYNC	7u	/* semaphores, atomics (1.11) */
#define MAIA_TVP_NUM_CLASSES	8u

/* Conditions of SCMP, VFCMP, VICMP (VFCMP: ordered, except NE) */
#define MAIA_TVP_CMP_EQ		0u
#define MAIA_TVP_CMP_NE		1u
#define MAIA_TVP_CMP_LT		2u
#define MAIA_TVP_CMP_LE		3u
#define MAIA_TVP_CMP_GT		4u
#define MAIA_TVP_CMP_GE		5u
#define MAIA_TVP_CMP_ULT	6u	/* integer compares only */
#define MAIA_TVP_CMP_ULE	7u
#define MAIA_TVP_CMP_UGT	8u
#define MAIA_TVP_CMP_UGE	9u
#define MAIA_TVP_CMP_COUNT	10u

/*
 * VLD / VST imm: bits 0-7 the memory dtype, bits 8-15 the mask register,
 * bit 16 MAIA_TVP_MEM_MASKED, bit 17 MAIA_TVP_MEM_UNIT. Lane i's address is
 * sa + off_i * size(dtype), off_i the signed int32 lane i of vb, or i with
 * MAIA_TVP_MEM_UNIT (vb must then be 0). With MAIA_TVP_MEM_MASKED, lanes
 * whose mask lane is 0 are not accessed; VLD sets them to 0. Dtypes:
 * FP32, FP16, BF16, FP8_E4M3, FP8_E5M2 (converted to and from binary32,
 * stores round to nearest even, FP8 saturates), INT32, INT8 (sign-extended
 * on load, saturated on store; no scale).
 */
#define MAIA_TVP_MEM_DTYPE(imm)		((imm) & 0xffu)
#define MAIA_TVP_MEM_MASK_REG(imm)	(((imm) >> 8) & 0xffu)
#define MAIA_TVP_MEM_MASKED		(1u << 16)
#define MAIA_TVP_MEM_UNIT		(1u << 17)
#define MAIA_TVP_MEM_ALL		0x3ffffu

/* VCVT imm */
#define MAIA_TVP_CVT_F2I	0u	/* binary32 -> int32, toward zero, saturating, NaN -> 0 */
#define MAIA_TVP_CVT_I2F	1u	/* int32 -> binary32, nearest even */
#define MAIA_TVP_CVT_BF16	2u	/* round binary32 to BF16 precision (stays binary32) */
#define MAIA_TVP_CVT_FP16	3u	/* likewise FP16 */
#define MAIA_TVP_CVT_FP8_E4M3	4u	/* likewise, saturating */
#define MAIA_TVP_CVT_FP8_E5M2	5u	/* likewise, saturating (Inf too) */
#define MAIA_TVP_CVT_U2F	6u	/* uint32 -> binary32 */
#define MAIA_TVP_CVT_COUNT	7u

/*
 * X(NAME, opcode, "mnemonic", MAIA_TVP_FMT_*, MAIA_TVP_CLASS_*)
 *
 * Scalar integer ops are 64-bit two's complement; division by zero gives
 * -1 (DIV) or the dividend (REM), INT64_MIN / -1 gives INT64_MIN. Shifts
 * use the low 6 bits of the count. Vector integer ops are int32 with the
 * same rules and a 5-bit shift count. Vector float ops are binary32 with
 * round-to-nearest-even and IEEE results for NaN, Inf, -0 and subnormals
 * (no flush to zero). Transcendentals are within the ULP bounds of
 * Documentation/hw/tvp.rst.
 */
#define MAIA_TVP_OPS(X) \
	/* control */ \
	X(NOP,     0x00, "nop",     MAIA_TVP_FMT_NONE,    MAIA_TVP_CLASS_SCALAR) \
	X(HALT,    0x01, "halt",    MAIA_TVP_FMT_NONE,    MAIA_TVP_CLASS_SCALAR) \
	X(JMP,     0x02, "jmp",     MAIA_TVP_FMT_JUMP,    MAIA_TVP_CLASS_BRANCH) \
	X(BEQZ,    0x03, "beqz",    MAIA_TVP_FMT_BR_S,    MAIA_TVP_CLASS_BRANCH) \
	X(BNEZ,    0x04, "bnez",    MAIA_TVP_FMT_BR_S,    MAIA_TVP_CLASS_BRANCH) \
	X(BLT,     0x05, "blt",     MAIA_TVP_FMT_BR_S_S,  MAIA_TVP_CLASS_BRANCH) \
	X(BGE,     0x06, "bge",     MAIA_TVP_FMT_BR_S_S,  MAIA_TVP_CLASS_BRANCH) \
	X(PID,     0x07, "pid",     MAIA_TVP_FMT_S_AXIS,  MAIA_TVP_CLASS_SCALAR) \
	X(NPROG,   0x08, "nprog",   MAIA_TVP_FMT_S_AXIS,  MAIA_TVP_CLASS_SCALAR) \
	X(SHAPE,   0x09, "shape",   MAIA_TVP_FMT_SHAPE,   MAIA_TVP_CLASS_SCALAR) \
	X(SEMSIG,  0x0a, "semsig",  MAIA_TVP_FMT_SEM,     MAIA_TVP_CLASS_SYNC) \
	X(SEMWAIT, 0x0b, "semwait", MAIA_TVP_FMT_SEM,     MAIA_TVP_CLASS_SYNC) \
	/* scalar integer: sd = sa op sb, or sa op imm */ \
	X(LI,      0x10, "li",      MAIA_TVP_FMT_S_I,     MAIA_TVP_CLASS_SCALAR) \
	X(LIH,     0x11, "lih",     MAIA_TVP_FMT_S_I,     MAIA_TVP_CLASS_SCALAR) \
	X(ADDI,    0x12, "addi",    MAIA_TVP_FMT_S_S_I,   MAIA_TVP_CLASS_SCALAR) \
	X(MULI,    0x13, "muli",    MAIA_TVP_FMT_S_S_I,   MAIA_TVP_CLASS_SCALAR) \
	X(ADD,     0x14, "add",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(SUB,     0x15, "sub",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(MUL,     0x16, "mul",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(DIV,     0x17, "div",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(REM,     0x18, "rem",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(MIN,     0x19, "min",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(MAX,     0x1a, "max",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(AND,     0x1b, "and",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(OR,      0x1c, "or",      MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(XOR,     0x1d, "xor",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(SHL,     0x1e, "shl",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(SHR,     0x1f, "shr",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(SRA,     0x20, "sra",     MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SCALAR) \
	X(SCMP,    0x21, "scmp",    MAIA_TVP_FMT_S_S_S_C, MAIA_TVP_CLASS_SCALAR) \
	/* memory */ \
	X(VLD,     0x28, "vld",     MAIA_TVP_FMT_MEM_V,   MAIA_TVP_CLASS_VMEM) \
	X(VST,     0x29, "vst",     MAIA_TVP_FMT_MEM_V,   MAIA_TVP_CLASS_VMEM) \
	X(SLD,     0x2a, "sld",     MAIA_TVP_FMT_MEM_S,   MAIA_TVP_CLASS_VMEM) \
	X(SST,     0x2b, "sst",     MAIA_TVP_FMT_MEM_S,   MAIA_TVP_CLASS_VMEM) \
	/* scalar atomics on an int32 word of device memory (1.11) */ \
	X(AMOADD,  0x2c, "amoadd",  MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SYNC) \
	X(AMOXCHG, 0x2d, "amoxchg", MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SYNC) \
	X(AMOCAS,  0x2e, "amocas",  MAIA_TVP_FMT_S_S_S,   MAIA_TVP_CLASS_SYNC) \
	X(VAMOADD, 0x2f, "vamoadd", MAIA_TVP_FMT_MEM_V,   MAIA_TVP_CLASS_SYNC) \
	/* vector moves and lane set-up */ \
	X(VMOV,    0x30, "vmov",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VALU) \
	X(VSPLAT,  0x31, "vsplat",  MAIA_TVP_FMT_V_S,     MAIA_TVP_CLASS_VALU) \
	X(VSPLATI, 0x32, "vsplati", MAIA_TVP_FMT_V_I,     MAIA_TVP_CLASS_VALU) \
	X(VIOTA,   0x33, "viota",   MAIA_TVP_FMT_V_I,     MAIA_TVP_CLASS_VALU) \
	X(VEXT,    0x34, "vext",    MAIA_TVP_FMT_S_V_I,   MAIA_TVP_CLASS_VALU) \
	X(VSEL,    0x35, "vsel",    MAIA_TVP_FMT_V_V_V_V, MAIA_TVP_CLASS_VALU) \
	X(VCVT,    0x36, "vcvt",    MAIA_TVP_FMT_V_V_I,   MAIA_TVP_CLASS_VALU) \
	/* vector float */ \
	X(VFADD,   0x40, "vfadd",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VFSUB,   0x41, "vfsub",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VFMUL,   0x42, "vfmul",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VFDIV,   0x43, "vfdiv",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VSFU) \
	X(VFMIN,   0x44, "vfmin",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VFMAX,   0x45, "vfmax",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VFMA,    0x46, "vfma",    MAIA_TVP_FMT_V_V_V_V, MAIA_TVP_CLASS_VALU) \
	X(VFCMP,   0x47, "vfcmp",   MAIA_TVP_FMT_V_V_V_C, MAIA_TVP_CLASS_VALU) \
	X(VFABS,   0x48, "vfabs",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VALU) \
	X(VFNEG,   0x49, "vfneg",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VALU) \
	X(VFLOOR,  0x4a, "vfloor",  MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VALU) \
	X(VFCEIL,  0x4b, "vfceil",  MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VALU) \
	X(VEXP,    0x50, "vexp",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VEXP2,   0x51, "vexp2",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VLOG,    0x52, "vlog",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VLOG2,   0x53, "vlog2",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VSQRT,   0x54, "vsqrt",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VRSQRT,  0x55, "vrsqrt",  MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VRCP,    0x56, "vrcp",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VSIN,    0x57, "vsin",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VCOS,    0x58, "vcos",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VTANH,   0x59, "vtanh",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	X(VERF,    0x5a, "verf",    MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VSFU) \
	/* vector int32 */ \
	X(VIADD,   0x60, "viadd",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VISUB,   0x61, "visub",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VIMUL,   0x62, "vimul",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VIDIV,   0x63, "vidiv",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VSFU) \
	X(VIREM,   0x64, "virem",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VSFU) \
	X(VIMIN,   0x65, "vimin",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VIMAX,   0x66, "vimax",   MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VAND,    0x67, "vand",    MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VOR,     0x68, "vor",     MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VXOR,    0x69, "vxor",    MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VSHL,    0x6a, "vshl",    MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VSHR,    0x6b, "vshr",    MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VSRA,    0x6c, "vsra",    MAIA_TVP_FMT_V_V_V,   MAIA_TVP_CLASS_VALU) \
	X(VICMP,   0x6d, "vicmp",   MAIA_TVP_FMT_V_V_V_C, MAIA_TVP_CLASS_VALU) \
	/* shape-aware: reductions, broadcasts, transpose, matrix multiply */ \
	X(VREDSUM, 0x70, "vredsum", MAIA_TVP_FMT_V_V_I,   MAIA_TVP_CLASS_VPERM) \
	X(VREDMAX, 0x71, "vredmax", MAIA_TVP_FMT_V_V_I,   MAIA_TVP_CLASS_VPERM) \
	X(VREDMIN, 0x72, "vredmin", MAIA_TVP_FMT_V_V_I,   MAIA_TVP_CLASS_VPERM) \
	X(VBCAST,  0x73, "vbcast",  MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VPERM) \
	X(VBROW,   0x74, "vbrow",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VPERM) \
	X(VBCOL,   0x75, "vbcol",   MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VPERM) \
	X(VTRANS,  0x76, "vtrans",  MAIA_TVP_FMT_V_V,     MAIA_TVP_CLASS_VPERM) \
	X(VDOT,    0x78, "vdot",    MAIA_TVP_FMT_V_V_V_K,   MAIA_TVP_CLASS_MATRIX)

/*
 * Semantics the table cannot say (rows, cols: the current shape; vl = rows * cols):
 *
 * LI sd, imm          sd = sign-extended imm
 * LIH sd, imm         sd = (sd & 0xffffffff) | (u64)imm << 32
 * ADDI, MULI          sd = sa op sign-extended imm
 * SCMP sd, sa, sb, c  sd = (sa c sb) ? 1 : 0, signed unless c is unsigned
 * PID / NPROG sd, ax  program id / grid size along axis ax
 * SHAPE rows, cols    1 <= rows, cols and rows * cols <= MAIA_TVP_VLEN
 * SEMSIG sa, idx      semaphore idx of the job's address space += sa
 * SEMWAIT sa, idx     wait until semaphore idx >= sa, then subtract sa;
 *                     bounded by the command's budget like any loop
 * BEQZ/BNEZ sa, t     branch to t if sa == 0 / != 0
 * BLT/BGE sa, sb, t   signed compare
 * VLD vd, sa, vb, ..  see MAIA_TVP_MEM_*; SLD sd, sa, dtype loads one element
 *                     at address sa (floats as binary32 bits zero-extended,
 *                     INT32/INT8 sign-extended); SST stores the low bits of sd
 * AMOADD sd, sa, sb   atomically: old = int32 word at sa; word = old + low 32
 *                     bits of sb (wrapping); sd = old sign-extended
 * AMOXCHG sd, sa, sb  atomically: old = word; word = low 32 bits of sb; sd = old
 * AMOCAS sd, sa, sb   atomically: old = word; if old == low 32 bits of sd (the
 *                     expected value) word = low 32 bits of sb; sd = old
 *                     sign-extended (so sd == expected iff the swap happened)
 *                     The AMOs are sequentially consistent and order the
 *                     instance's own accesses both ways (acquire and release):
 *                     its loads and stores before an AMO are visible to an
 *                     instance whose AMO reads that AMO's write, and its loads
 *                     and stores after an AMO see what instances wrote before
 *                     the AMOs it read from. So a lock taken with AMOCAS (0 ->
 *                     1) and released with AMOXCHG (-> 0) protects plain VLD,
 *                     VST, SLD, SST between them. The word must be 4-byte
 *                     aligned HBM mapped writable: anything else (misaligned,
 *                     unmapped, read-only, host memory) is MAIA_STATUS_MMU_FAULT
 *                     (the fault record names the address when it is unmapped).
 * VAMOADD vd, sa, vb, dtype[, vm]  per active lane, in lane order, one AMO each:
 *                     old = the word at lane i's address (as VLD's); word = old +
 *                     vd[i]; vd[i] = old. dtype FP32 (binary32 add, nearest even)
 *                     or INT32 (wrapping) only. Masked-off lanes are not accessed
 *                     and read 0 in vd, as for VLD. Each lane's AMO is ordered
 *                     as the scalar AMOs are; a fault stops at that lane (the
 *                     lanes before it are done).
 * VSPLATI vd, imm     every lane = imm
 * VIOTA vd, imm       lane i = i + imm (int32)
 * VEXT sd, va, lane   sd = sign-extended lane `lane` of va (lane < VLEN)
 * VSEL vd, va, vb, vc lane i = vc[i] != 0 ? va[i] : vb[i]
 * VFMA vd, va, vb, vc vd = va * vb + vc, one rounding
 * VFCMP/VICMP         lane i = 1 if true, else 0 (int32)
 * VFMIN/VFMAX         IEEE minimumNumber/maximumNumber: a NaN loses to a number
 * VREDSUM vd, va, ax  ax = 1: vd[r] = sum over c of va[r][c] (rows lanes);
 *                     ax = 0: vd[c] = sum over r (cols lanes); in index order
 * VBCAST vd, va       lane i = va[0]
 * VBROW vd, va        vd[r][c] = va[c]
 * VBCOL vd, va        vd[r][c] = va[r]
 * VTRANS vd, va       vd (cols x rows) = transpose of va (rows x cols)
 * VDOT vd, va, vb, K  vd[M x N] += va[M x K] * vb[K x N], with M = rows, N = cols;
 *                     FP32 products, FP32 accumulation in k order
 * vd may equal any source register; the result is as if sources were read first.
 */

enum maia_tvp_opcode {
#define MAIA_TVP_ENUM(name, code, mnem, fmt, cls) MAIA_TVP_OP_##name = code,
	MAIA_TVP_OPS(MAIA_TVP_ENUM)
#undef MAIA_TVP_ENUM
	MAIA_TVP_OP_LIMIT = 0x100
};

/*
 * KERNEL: run the program of num_insns instruction words at `program` once
 * per point of the grid (grid[0] x grid[1] x grid[2] instances). The device
 * validates the whole program before any instance starts (unknown opcode,
 * register >= 32, non-zero unused field, bad imm, branch target >=
 * num_insns: MAIA_STATUS_KERNEL_INVALID, nothing runs). Instances are
 * spread over the tiles and run in an unspecified order; each has its own
 * registers. An instance that executes more than `budget` instructions
 * (0: MAIA_TVP_DEFAULT_BUDGET) ends the command with
 * MAIA_STATUS_KERNEL_WATCHDOG; an access outside the context's mappings
 * with MAIA_STATUS_MMU_FAULT. Stores of instances that ran before a failure
 * stay. Writes of one instance are visible to the instances after it only
 * through semaphores or atomics (AMO*, 1.11). An instance runs to its end
 * once started (it never waits behind an instance queued after it), so a
 * spin lock whose holder is another instance is always released, and a
 * lock never released ends in MAIA_STATUS_KERNEL_WATCHDOG.
 */
struct maia_cmd_kernel {
	struct maia_cmd_header hdr;
	__u64 program;		/* device VA, 8-byte aligned */
	__u32 num_insns;	/* 1 .. MAIA_TVP_MAX_INSNS */
	__u32 num_args;		/* 0 .. MAIA_TVP_MAX_ARGS */
	__u32 grid[3];		/* each 1 .. MAIA_TVP_MAX_GRID, product too */
	__u32 budget;		/* instructions per instance, 0 = default */
	__u64 args[MAIA_TVP_MAX_ARGS];
};

#define MAIA_STATUS_KERNEL_INVALID	16u	/* program failed validation (1.9) */
#define MAIA_STATUS_KERNEL_WATCHDOG	17u	/* an instance ran past its budget (1.9) */

#endif /* MAIA_HW_TVP_H */
