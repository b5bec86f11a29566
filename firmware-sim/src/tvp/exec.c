// SPDX-License-Identifier: MIT
/*
 * The interpreter: runs one instance of a pre-decoded, validated program.
 * Scalar, branch and semaphore instructions are here; vector instructions
 * call the element-wise ops (vops.h, the variant vops_select.c picked),
 * the shape-aware ops (vperm.c), conversions (vcvt.c) and memory (mem.c).
 *
 * The watchdog is a count: an instance may execute budget instructions
 * (a SEMWAIT that finds the semaphore short counts one per try), the next
 * one fails it with MAIA_STATUS_KERNEL_WATCHDOG. Every STOP_CHECK
 * instructions the instance asks the command processor whether the job
 * must stop (reset, queue disabled), so a long kernel ends promptly.
 */
#include <limits.h>
#include <string.h>

#include "tvp.h"

#define STOP_CHECK	4096u

static bool scmp(unsigned int cond, uint64_t a, uint64_t b)
{
	int64_t x = (int64_t)a, y = (int64_t)b;

	switch (cond) {
	case MAIA_TVP_CMP_EQ:	return a == b;
	case MAIA_TVP_CMP_NE:	return a != b;
	case MAIA_TVP_CMP_LT:	return x < y;
	case MAIA_TVP_CMP_LE:	return x <= y;
	case MAIA_TVP_CMP_GT:	return x > y;
	case MAIA_TVP_CMP_GE:	return x >= y;
	case MAIA_TVP_CMP_ULT:	return a < b;
	case MAIA_TVP_CMP_ULE:	return a <= b;
	case MAIA_TVP_CMP_UGT:	return a > b;
	default:		return a >= b;
	}
}

/* sd = sa op sb for the scalar ALU: 64-bit two's complement, no traps. */
static uint64_t salu(unsigned int op, uint64_t a, uint64_t b)
{
	int64_t x = (int64_t)a, y = (int64_t)b;

	switch (op) {
	case MAIA_TVP_OP_ADD:
	case MAIA_TVP_OP_ADDI:	return a + b;
	case MAIA_TVP_OP_SUB:	return a - b;
	case MAIA_TVP_OP_MUL:
	case MAIA_TVP_OP_MULI:	return a * b;
	case MAIA_TVP_OP_DIV:
		if (!y)
			return UINT64_MAX;		/* -1 */
		if (x == INT64_MIN && y == -1)
			return a;
		return (uint64_t)(x / y);
	case MAIA_TVP_OP_REM:
		if (!y)
			return a;
		if (x == INT64_MIN && y == -1)
			return 0;
		return (uint64_t)(x % y);
	case MAIA_TVP_OP_MIN:	return x < y ? a : b;
	case MAIA_TVP_OP_MAX:	return x > y ? a : b;
	case MAIA_TVP_OP_AND:	return a & b;
	case MAIA_TVP_OP_OR:	return a | b;
	case MAIA_TVP_OP_XOR:	return a ^ b;
	case MAIA_TVP_OP_SHL:	return a << (b & 63u);
	case MAIA_TVP_OP_SHR:	return a >> (b & 63u);
	default:		/* SRA: arithmetic, as GCC and Clang define >> */
		return (uint64_t)(x >> (b & 63u));
	}
}

/* Work units of one vector instruction: lane groups of the shape. */
static uint64_t lane_units(uint32_t lanes)
{
	return (lanes + FW_TVP_LANE_GROUP - 1) / FW_TVP_LANE_GROUP;
}

/*
 * The job's semaphores are shared with its other commands' engines and the
 * fabric thread (remote signals): atomics only. A signal saturates at
 * 2^64 - 1 instead of failing as an overflowing SEM_SIGNAL command does.
 */
static void sem_signal(struct fw_tvp_state *st, unsigned int idx, uint64_t v)
{
	uint64_t *sem = &st->k->env->sems[idx], old = __atomic_load_n(sem, __ATOMIC_RELAXED), nv;

	do {
		if (__builtin_add_overflow(old, v, &nv))
			nv = UINT64_MAX;
	} while (!__atomic_compare_exchange_n(sem, &old, nv, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	st->st.sems_signaled |= 1ull << idx;
}

/* Takes v from the semaphore if it holds at least v. */
static bool sem_take(uint64_t *sem, uint64_t v)
{
	uint64_t old = __atomic_load_n(sem, __ATOMIC_ACQUIRE);

	do {
		if (old < v)
			return false;
	} while (!__atomic_compare_exchange_n(sem, &old, old - v, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return true;
}

/* Copies n lanes of a temporary into vd (the rest of vd keeps its values). */
static void put(struct fw_tvp_state *st, unsigned int rd, const union fw_tvp_vreg *t,
		unsigned int n)
{
	memcpy(st->v[rd].u, t->u, (size_t)n * 4);
}

/*
 * One vector instruction (VALU, VSFU, VPERM, MATRIX). Returns the float
 * lane operations it did, for the flop counter.
 */
static uint64_t vexec(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d, fw_tvp_vop_fn vop)
{
	union fw_tvp_vreg *t = &st->tmp[0];
	uint32_t vl = st->vl, i;
	unsigned int n;

	switch (d->op) {
	case MAIA_TVP_OP_VSPLAT:
		for (i = 0; i < vl; i++)
			st->v[d->rd].u[i] = (uint32_t)st->s[d->ra];
		return 0;
	case MAIA_TVP_OP_VSPLATI:
		for (i = 0; i < vl; i++)
			st->v[d->rd].u[i] = d->imm;
		return 0;
	case MAIA_TVP_OP_VIOTA:
		for (i = 0; i < vl; i++)
			st->v[d->rd].u[i] = i + d->imm;
		return 0;
	case MAIA_TVP_OP_VEXT:
		st->s[d->rd] = (uint64_t)(int64_t)st->v[d->ra].i[d->imm];
		return 0;
	case MAIA_TVP_OP_VCVT:
		fw_tvp_cvt(d->imm, vl, t->u, st->v[d->ra].u);
		put(st, d->rd, t, vl);
		return vl;
	case MAIA_TVP_OP_VREDSUM:
	case MAIA_TVP_OP_VREDMAX:
	case MAIA_TVP_OP_VREDMIN:
	case MAIA_TVP_OP_VBCAST:
	case MAIA_TVP_OP_VBROW:
	case MAIA_TVP_OP_VBCOL:
	case MAIA_TVP_OP_VTRANS:
		fw_tvp_perm(d->op, d->imm, st->rows, st->cols, t->u, st->v[d->ra].u, &n);
		put(st, d->rd, t, n);
		return d->op <= MAIA_TVP_OP_VREDMIN ? vl : 0;
	case MAIA_TVP_OP_VDOT:
		fw_tvp_vdot(st->rows, st->cols, d->imm, t->u, st->v[d->ra].u, st->v[d->rb].u,
			    st->v[d->rd].u);
		put(st, d->rd, t, vl);
		return 2ull * vl * d->imm;
	default: {
		unsigned int rc = d->op == MAIA_TVP_OP_VFMA || d->op == MAIA_TVP_OP_VSEL ? d->imm : 0;
		/* straight into vd unless vd is a source (the ops are out of place) */
		bool direct = d->rd != d->ra && d->rd != d->rb && d->rd != rc;

		vop(d->op, d->imm, vl, direct ? st->v[d->rd].u : t->u, st->v[d->ra].u,
		    st->v[d->rb].u, st->v[rc].u);
		if (!direct)
			put(st, d->rd, t, vl);
		return d->op >= MAIA_TVP_OP_VFADD && d->op <= MAIA_TVP_OP_VERF ? vl : 0;
	}
	}
}

/* The job must stop, or another instance already failed the command. */
static bool must_stop(const struct fw_tvp_state *st)
{
	const struct fw_tvp_env *env = st->k->env;

	return (env->stop && env->stop(env->stop_opaque)) ||
	       __atomic_load_n(&st->k->status, __ATOMIC_RELAXED) != MAIA_STATUS_OK;
}

int fw_tvp_run_instance(struct fw_tvp_state *st, uint64_t idx)
{
	const struct fw_tvp_kernel *k = st->k;
	const struct fw_tvp_dinsn *prog = k->prog;
	fw_tvp_vop_fn vop = fw_tvp_vop_best();
	uint64_t executed = 0, *s = st->s;
	uint32_t pc = 0;
	int rc = MAIA_STATUS_OK;

	/* registers start at 0: clear what the last instance wrote (not 128 KiB each time) */
	for (uint32_t m = st->vdirty; m; m &= m - 1)
		memset(&st->v[__builtin_ctz(m)], 0, sizeof(st->v[0]));
	st->vdirty = 0;
	memset(s, 0, sizeof(st->s));
	for (uint32_t i = 0; i < k->nargs; i++)
		s[1 + i] = k->args[i];
	st->rows = 1;
	st->cols = MAIA_TVP_VLEN;
	st->vl = MAIA_TVP_VLEN;
	st->pid[0] = (uint32_t)(idx % k->grid[0]);
	st->pid[1] = (uint32_t)(idx / k->grid[0] % k->grid[1]);
	st->pid[2] = (uint32_t)(idx / k->grid[0] / k->grid[1]);
	fw_tvp_mem_reset(st);
	st->st.instances++;

	while (pc < k->n) {
		const struct fw_tvp_dinsn *d = &prog[pc];
		uint32_t next = pc + 1;

		if (executed++ == k->budget)
			return MAIA_STATUS_KERNEL_WATCHDOG;
		if (!(executed % STOP_CHECK) && must_stop(st))
			return FW_TVP_STOPPED;
		st->st.insns[d->cls]++;
		st->st.units[d->cls]++;
		st->vdirty |= (uint32_t)d->wv << d->rd;
		switch (d->op) {
		case MAIA_TVP_OP_NOP:
			break;
		case MAIA_TVP_OP_HALT:
			return MAIA_STATUS_OK;
		case MAIA_TVP_OP_JMP:
			next = d->imm;
			break;
		case MAIA_TVP_OP_BEQZ:
			if (!s[d->ra])
				next = d->imm;
			break;
		case MAIA_TVP_OP_BNEZ:
			if (s[d->ra])
				next = d->imm;
			break;
		case MAIA_TVP_OP_BLT:
			if ((int64_t)s[d->ra] < (int64_t)s[d->rb])
				next = d->imm;
			break;
		case MAIA_TVP_OP_BGE:
			if ((int64_t)s[d->ra] >= (int64_t)s[d->rb])
				next = d->imm;
			break;
		case MAIA_TVP_OP_PID:
			s[d->rd] = st->pid[d->imm];
			break;
		case MAIA_TVP_OP_NPROG:
			s[d->rd] = k->grid[d->imm];
			break;
		case MAIA_TVP_OP_SHAPE:
			st->rows = d->rows;
			st->cols = d->cols;
			st->vl = (uint32_t)d->rows * d->cols;
			break;
		case MAIA_TVP_OP_SEMSIG:
			sem_signal(st, d->imm, s[d->ra]);
			break;
		case MAIA_TVP_OP_SEMWAIT:
			/* not there yet: try again, one more instruction of the budget */
			if (!sem_take(&k->env->sems[d->imm], s[d->ra])) {
				next = pc;
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_pause();
#endif
			}
			break;
		case MAIA_TVP_OP_LI:
			s[d->rd] = (uint64_t)(int64_t)(int32_t)d->imm;
			break;
		case MAIA_TVP_OP_LIH:
			s[d->rd] = (s[d->rd] & 0xffffffffu) | (uint64_t)d->imm << 32;
			break;
		case MAIA_TVP_OP_ADDI:
		case MAIA_TVP_OP_MULI:
			s[d->rd] = salu(d->op, s[d->ra], (uint64_t)(int64_t)(int32_t)d->imm);
			break;
		case MAIA_TVP_OP_SCMP:
			s[d->rd] = scmp(d->imm, s[d->ra], s[d->rb]);
			break;
		case MAIA_TVP_OP_VLD:
			st->st.units[d->cls] += lane_units(st->vl) - 1;
			rc = fw_tvp_vld(st, d);
			break;
		case MAIA_TVP_OP_VST:
			st->st.units[d->cls] += lane_units(st->vl) - 1;
			rc = fw_tvp_vst(st, d);
			break;
		case MAIA_TVP_OP_SLD:
			rc = fw_tvp_sld(st, d);
			break;
		case MAIA_TVP_OP_SST:
			rc = fw_tvp_sst(st, d);
			break;
		case MAIA_TVP_OP_AMOADD:
		case MAIA_TVP_OP_AMOXCHG:
		case MAIA_TVP_OP_AMOCAS:
			rc = fw_tvp_amo(st, d);
			break;
		case MAIA_TVP_OP_VAMOADD:
			st->st.units[d->cls] += lane_units(st->vl) - 1;
			rc = fw_tvp_vamoadd(st, d);
			break;
		default:
			if (d->op >= MAIA_TVP_OP_ADD && d->op <= MAIA_TVP_OP_SRA) {
				s[d->rd] = salu(d->op, s[d->ra], s[d->rb]);
				break;
			}
			/* vector ops */
			if (d->op == MAIA_TVP_OP_VDOT)
				st->st.units[d->cls] += ((uint64_t)st->vl * d->imm +
							 FW_TVP_MAC_GROUP - 1) / FW_TVP_MAC_GROUP - 1;
			else
				st->st.units[d->cls] += lane_units(st->vl) - 1;
			st->st.flops += vexec(st, d, vop);
			break;
		}
		s[0] = 0;	/* writes to s0 are dropped */
		if (rc != MAIA_STATUS_OK)
			return rc;
		pc = next;
	}
	return MAIA_STATUS_OK;
}
