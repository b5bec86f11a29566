// SPDX-License-Identifier: MIT
/* Helpers for the TVP tests: see tvp_util.h. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tvp_util.h"

static bool in_range(const struct tvp_mem *m, uint64_t va, size_t len)
{
	return va >= m->base && len <= m->size && va - m->base <= m->size - len;
}

static int fault(struct tvp_mem *m, uint64_t va)
{
	if (!m->faults++)
		m->fault_va = va;
	return MAIA_STATUS_MMU_FAULT;
}

static int mem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	struct tvp_mem *m = opaque;

	if (!in_range(m, va, len))
		return fault(m, va);
	memcpy(buf, m->buf + (va - m->base), len);
	return MAIA_STATUS_OK;
}

static int mem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct tvp_mem *m = opaque;

	if (!in_range(m, va, len))
		return fault(m, va);
	memcpy(m->buf + (va - m->base), buf, len);
	return MAIA_STATUS_OK;
}

static int mem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	struct tvp_mem *m = opaque;

	if (!in_range(m, va, 1))
		return MAIA_STATUS_MMU_FAULT;	/* not recorded: read() does that */
	*ptr = m->buf + (va - m->base);
	*avail = m->size - (va - m->base) < len ? m->size - (va - m->base) : len;
	return MAIA_STATUS_OK;
}

static int mem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return mem_map(opaque, va, len, (const void **)ptr, avail);
}

void tvp_mem_init(struct tvp_mem *m, size_t size)
{
	memset(m, 0, sizeof(*m));
	m->base = TVP_BASE;
	m->size = size;
	m->buf = calloc(1, size);
	m->jm.opaque = m;
	m->jm.read = mem_read;
	m->jm.write = mem_write;
	m->jm.map = mem_map;
	m->jm.map_write = mem_map_write;
}

void tvp_mem_fini(struct tvp_mem *m)
{
	free(m->buf);
	m->buf = NULL;
}

void *tvp_ptr(struct tvp_mem *m, uint64_t va)
{
	return m->buf + (va - m->base);
}

uint32_t tvp_emit(struct tvp_prog *p, unsigned int op, unsigned int rd, unsigned int ra,
		  unsigned int rb, uint32_t imm)
{
	p->w[p->n] = (struct maia_tvp_insn){ .op = (uint8_t)op, .rd = (uint8_t)rd,
					     .ra = (uint8_t)ra, .rb = (uint8_t)rb, .imm = imm };
	return p->n++;
}

uint32_t tvp_memimm(unsigned int dtype, bool unit, int mreg)
{
	return dtype | (unit ? MAIA_TVP_MEM_UNIT : 0) |
	       (mreg >= 0 ? MAIA_TVP_MEM_MASKED | (uint32_t)mreg << 8 : 0);
}

int tvp_run(struct tvp_mem *m, const struct tvp_prog *p, const struct tvp_run_opts *o,
	    struct fw_tvp_stats *st)
{
	static uint64_t sems[MAIA_NUM_SEMAPHORES];
	struct maia_cmd_kernel c = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) },
		.program = TVP_PROG, .num_insns = p->n, .num_args = o ? o->nargs : 0,
		.grid = { 1, 1, 1 }, .budget = o ? o->budget : 0,
	};
	struct fw_tvp_env env = { .mem = &m->jm, .sems = sems };
	struct fw_tvp_stats local;
	struct maia_job_mem nomap = m->jm;

	if (m->no_map) {
		nomap.map = NULL;
		nomap.map_write = NULL;
		env.mem = &nomap;
	}
	memcpy(tvp_ptr(m, TVP_PROG), p->w, p->n * sizeof(p->w[0]));
	if (o) {
		for (int i = 0; i < 3; i++)
			if (o->grid[i])
				c.grid[i] = o->grid[i];
		for (uint32_t i = 0; i < o->nargs && i < MAIA_TVP_MAX_ARGS; i++)
			c.args[i] = o->args[i];
		if (o->sems)
			env.sems = o->sems;
		else
			memset(sems, 0, sizeof(sems));
		env.te = o->te;
		env.stop = o->stop;
		env.stop_opaque = o->stop_opaque;
	} else {
		memset(sems, 0, sizeof(sems));
	}
	return fw_tvp_kernel(&env, &c, st ? st : &local);
}

float tvp_f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint32_t tvp_u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

double tvp_ulps(float r, double ref)
{
	int e;

	if (isnan(ref))
		return isnan(r) ? 0.0 : INFINITY;
	if (isinf(ref) || ref == 0.0 || fabs(ref) > FLT_MAX)
		return (double)r == ref || (fabs(ref) > FLT_MAX && isinf(r) &&
					    signbit(r) == signbit(ref)) ? 0.0 : INFINITY;
	if (isnan(r) || isinf(r))
		return INFINITY;
	e = ilogb(ref);
	if (e < -126)
		e = -126;
	return fabs((double)r - ref) / ldexp(1.0, e - 23);
}

/* Value of an FP8 code, from the format's definition (OCP FP8: E4M3 has no Inf). */
static double fp8_value(unsigned int code, unsigned int dtype)
{
	unsigned int eb = dtype == MAIA_DTYPE_FP8_E4M3 ? 4 : 3 + 2, mb = 7 - eb;
	int bias = dtype == MAIA_DTYPE_FP8_E4M3 ? 7 : 15;
	unsigned int e = (code >> mb) & ((1u << eb) - 1), f = code & ((1u << mb) - 1);
	double v;

	if (dtype == MAIA_DTYPE_FP8_E4M3 && e == 15 && f == 7)
		return NAN;
	if (dtype == MAIA_DTYPE_FP8_E5M2 && e == 31)
		return f ? NAN : INFINITY;
	v = e ? ldexp(1.0 + f / (double)(1u << mb), (int)e - bias) :
		ldexp(f / (double)(1u << mb), 1 - bias);
	return (code & 0x80) ? -v : v;
}

float tvp_ref_fp8(float x, unsigned int dtype)
{
	double best = NAN, bd = INFINITY, ax = fabs((double)x);
	unsigned int bcode = 0;

	if (isnan(x))
		return NAN;
	/* saturating: past the largest finite value is the largest */
	for (unsigned int c = 0x7f; c; c--) {
		double v = fp8_value(c, dtype);

		if (!isnan(v) && !isinf(v)) {
			if (ax > v)
				return (float)copysign(v, (double)x);
			break;
		}
	}
	/* nearest finite magnitude, ties to the even code; saturating */
	for (unsigned int c = 0; c < 0x80; c++) {
		double v = fp8_value(c, dtype), d;

		if (isnan(v) || isinf(v))
			continue;
		d = fabs(v - ax);
		if (d < bd || (d == bd && !(c & 1))) {
			bd = d;
			best = v;
			bcode = c;
		}
	}
	(void)bcode;
	return (float)copysign(best, (double)x);
}

float tvp_ref_bf16(float x)
{
	uint32_t u = tvp_u(x), lo = u & 0xffff, hi = u >> 16;

	if (isnan(x))
		return tvp_f((hi | 0x40) << 16);
	if (lo > 0x8000 || (lo == 0x8000 && (hi & 1)))
		hi++;
	return tvp_f(hi << 16);
}

uint32_t tvp_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return (uint32_t)(x >> 16);
}
