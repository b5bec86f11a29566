// SPDX-License-Identifier: MIT
/*
 * VLD, VST, SLD, SST: every element goes through the job's address space
 * (struct maia_job_mem), so an access outside the mappings fails the
 * command with MAIA_STATUS_MMU_FAULT and its address lands in the fault
 * record and queue like any command's. A small per-instance cache of page
 * translations (map()/map_write(): HBM in place) saves walking the tables
 * per element; where a page cannot be used in place (host memory, an ECC
 * page, no mapping) the element goes through read()/write(), which reports
 * the error. Runs of lanes with consecutive offsets (a unit-stride vector,
 * each row of a 2D tile) are copied a page piece at a time. Lanes a mask
 * turns off are never touched.
 */
#include <string.h>

#include "maia/hw/dtype.h"
#include "tvp.h"

void fw_tvp_mem_reset(struct fw_tvp_state *st)
{
	for (unsigned int i = 0; i < FW_TVP_PAGES; i++) {
		st->rpages[i].va = UINT64_MAX;
		st->wpages[i].va = UINT64_MAX;
	}
	st->rnext = st->wnext = 0;
}

/*
 * Host pointer to len bytes at va, all within one cached page, or NULL:
 * the caller then goes through read()/write().
 */
static uint8_t *page_ptr(struct fw_tvp_state *st, uint64_t va, size_t len, bool write)
{
	const struct maia_job_mem *mem = st->k->env->mem;
	struct fw_tvp_page *pages = write ? st->wpages : st->rpages;
	uint64_t base = va & ~(uint64_t)(FW_TVP_PAGE_SIZE - 1), off = va - base;
	struct fw_tvp_page *e = NULL;
	size_t avail = 0;
	void *p = NULL;
	int rc;

	for (unsigned int i = 0; i < FW_TVP_PAGES; i++) {
		if (pages[i].va == base) {
			e = &pages[i];
			break;
		}
	}
	if (!e) {
		if (write)
			rc = mem->map_write ? mem->map_write(mem->opaque, base, FW_TVP_PAGE_SIZE,
							     &p, &avail) : -1;
		else
			rc = mem->map ? mem->map(mem->opaque, base, FW_TVP_PAGE_SIZE,
						 (const void **)&p, &avail) : -1;
		if (rc != MAIA_STATUS_OK || !p)
			return NULL;
		unsigned int *next = write ? &st->wnext : &st->rnext;

		e = &pages[*next];
		*next = (*next + 1) % FW_TVP_PAGES;
		e->va = base;
		e->p = p;
		e->avail = avail;
	}
	if (off + len > e->avail)
		return NULL;
	return e->p + off;
}

static int load_one(struct fw_tvp_state *st, unsigned int dtype, uint64_t va, uint32_t *out)
{
	unsigned int es = maia_dtype_size(dtype);
	const uint8_t *p = page_ptr(st, va, es, false);
	uint8_t buf[4];

	if (!p) {
		const struct maia_job_mem *mem = st->k->env->mem;
		int rc = mem->read(mem->opaque, va, buf, es);

		if (rc != MAIA_STATUS_OK)
			return rc;
		p = buf;
	}
	*out = fw_tvp_load_elem(dtype, p);
	st->st.bytes_read += es;
	return MAIA_STATUS_OK;
}

static int store_one(struct fw_tvp_state *st, unsigned int dtype, uint64_t va, uint32_t v)
{
	unsigned int es = maia_dtype_size(dtype);
	uint8_t *p = page_ptr(st, va, es, true);
	uint8_t buf[4];

	if (!p) {
		const struct maia_job_mem *mem = st->k->env->mem;
		int rc;

		fw_tvp_store_elem(dtype, v, buf);
		rc = mem->write(mem->opaque, va, buf, es);
		if (rc != MAIA_STATUS_OK)
			return rc;
	} else {
		fw_tvp_store_elem(dtype, v, p);
	}
	st->st.bytes_written += es;
	return MAIA_STATUS_OK;
}

/* Lane i's address: sa + off_i * size, wrapping like the hardware's adder. */
static uint64_t lane_va(uint64_t sa, int32_t off, unsigned int es)
{
	return sa + (uint64_t)((int64_t)off * (int64_t)es);
}

/* Loads vl consecutive elements from va into o, a page piece at a time. */
static int load_run(struct fw_tvp_state *st, unsigned int dtype, uint64_t va, uint32_t vl,
		    uint32_t *o)
{
	unsigned int es = maia_dtype_size(dtype);
	uint32_t i = 0;

	while (i < vl) {
		uint64_t a = va + (uint64_t)i * es;
		uint64_t room = FW_TVP_PAGE_SIZE - (a & (FW_TVP_PAGE_SIZE - 1));
		uint32_t n = (uint32_t)(room / es);
		const uint8_t *p;
		int rc;

		if (n > vl - i)
			n = vl - i;
		p = n ? page_ptr(st, a, (size_t)n * es, false) : NULL;
		if (!p) {	/* host memory, a fault, or an element across pages */
			rc = load_one(st, dtype, a, &o[i]);
			if (rc != MAIA_STATUS_OK)
				return rc;
			i++;
			continue;
		}
		if (es == 4) {
			memcpy(&o[i], p, (size_t)n * 4);
		} else {
			for (uint32_t j = 0; j < n; j++)
				o[i + j] = fw_tvp_load_elem(dtype, p + (size_t)j * es);
		}
		st->st.bytes_read += (uint64_t)n * es;
		i += n;
	}
	return MAIA_STATUS_OK;
}

static int store_run(struct fw_tvp_state *st, unsigned int dtype, uint64_t va, uint32_t vl,
		     const uint32_t *v)
{
	unsigned int es = maia_dtype_size(dtype);
	uint32_t i = 0;

	while (i < vl) {
		uint64_t a = va + (uint64_t)i * es;
		uint64_t room = FW_TVP_PAGE_SIZE - (a & (FW_TVP_PAGE_SIZE - 1));
		uint32_t n = (uint32_t)(room / es);
		uint8_t *p;
		int rc;

		if (n > vl - i)
			n = vl - i;
		p = n ? page_ptr(st, a, (size_t)n * es, true) : NULL;
		if (!p) {
			rc = store_one(st, dtype, a, v[i]);
			if (rc != MAIA_STATUS_OK)
				return rc;
			i++;
			continue;
		}
		if (es == 4) {
			memcpy(p, &v[i], (size_t)n * 4);
		} else {
			for (uint32_t j = 0; j < n; j++)
				fw_tvp_store_elem(dtype, v[i + j], p + (size_t)j * es);
		}
		st->st.bytes_written += (uint64_t)n * es;
		i += n;
	}
	return MAIA_STATUS_OK;
}

/* Lane i's element offset: i with UNIT, else lane i of vb. */
static int32_t lane_off(const struct fw_tvp_state *st, const struct fw_tvp_dinsn *d, uint32_t i)
{
	return d->mflags & FW_TVP_MF_UNIT ? (int32_t)i : st->v[d->rb].i[i];
}

static bool lane_on(const struct fw_tvp_state *st, const struct fw_tvp_dinsn *d, uint32_t i)
{
	return !(d->mflags & FW_TVP_MF_MASKED) || st->v[d->mreg].u[i];
}

/*
 * The run of active lanes from i whose offsets go up by one (a unit-stride
 * vector, a row of a 2D tile): its end (exclusive).
 */
static uint32_t run_end(const struct fw_tvp_state *st, const struct fw_tvp_dinsn *d, uint32_t i)
{
	uint32_t j = i + 1;

	while (j < st->vl && lane_on(st, d, j) && lane_off(st, d, j - 1) != INT32_MAX &&
	       lane_off(st, d, j) == lane_off(st, d, j - 1) + 1)
		j++;
	return j;
}

int fw_tvp_vld(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	unsigned int es = maia_dtype_size(d->dtype);
	uint32_t *o = st->tmp[0].u, vl = st->vl, i = 0;
	uint64_t sa = st->s[d->ra];
	int rc = MAIA_STATUS_OK;

	while (i < vl && rc == MAIA_STATUS_OK) {
		uint32_t j;

		if (!lane_on(st, d, i)) {
			o[i++] = 0;	/* not accessed */
			continue;
		}
		j = run_end(st, d, i);
		rc = load_run(st, d->dtype, lane_va(sa, lane_off(st, d, i), es), j - i, o + i);
		i = j;
	}
	if (rc != MAIA_STATUS_OK)
		return rc;
	memcpy(st->v[d->rd].u, o, (size_t)vl * 4);
	return MAIA_STATUS_OK;
}

/* In lane order: of two lanes with one address, the higher one's value stays. */
int fw_tvp_vst(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	unsigned int es = maia_dtype_size(d->dtype);
	const uint32_t *v = st->v[d->rd].u;
	uint64_t sa = st->s[d->ra];
	uint32_t vl = st->vl, i = 0;
	int rc = MAIA_STATUS_OK;

	while (i < vl && rc == MAIA_STATUS_OK) {
		uint32_t j;

		if (!lane_on(st, d, i)) {
			i++;
			continue;
		}
		j = run_end(st, d, i);
		rc = store_run(st, d->dtype, lane_va(sa, lane_off(st, d, i), es), j - i, v + i);
		i = j;
	}
	return rc;
}

int fw_tvp_sld(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	uint32_t v;
	int rc = load_one(st, d->dtype, st->s[d->ra], &v);

	if (rc != MAIA_STATUS_OK)
		return rc;
	if (d->dtype == MAIA_DTYPE_INT32 || d->dtype == MAIA_DTYPE_INT8)
		st->s[d->rd] = (uint64_t)(int64_t)(int32_t)v;	/* sign-extended */
	else
		st->s[d->rd] = v;				/* binary32 bits */
	return MAIA_STATUS_OK;
}

int fw_tvp_sst(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	return store_one(st, d->dtype, st->s[d->ra], (uint32_t)st->s[d->rd]);
}

/*
 * AMOADD, AMOXCHG, AMOCAS: a host atomic on the HBM word in place, since
 * instances run at the same time on the tensor engine's workers. The word
 * must be aligned (so it never crosses a page) and mapped writable in place;
 * an unmapped one goes through read() so the fault record names it, and
 * anything else (host memory, read-only, misaligned) is a fault too: an
 * atomic cannot be split into read() and write(). Sequentially consistent
 * host atomics make each AMO a full barrier for this instance's plain
 * loads and stores, the acquire and release maia/hw/tvp.h promises.
 */
/*
 * The HBM word an AMO works on, in place: NULL with *rc set when it cannot
 * be (an unmapped word through read() so the fault record names it; a
 * misaligned one, host memory or a read-only mapping: an atomic cannot be
 * split into read() and write()).
 */
static uint32_t *amo_word(struct fw_tvp_state *st, uint64_t va, int *rc)
{
	const struct maia_job_mem *mem = st->k->env->mem;
	uint8_t buf[4];
	uint32_t *w;
	int r;

	*rc = MAIA_STATUS_MMU_FAULT;
	if (va & 3u)
		return NULL;
	w = (uint32_t *)page_ptr(st, va, 4, true);
	if (w)
		return w;
	r = mem->read(mem->opaque, va, buf, sizeof(buf));
	if (r != MAIA_STATUS_OK)
		*rc = r;
	return NULL;
}

/* A pause in a likely spin, so the lock's holder gets the core's time. */
static void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * AMOADD, AMOXCHG, AMOCAS: a host atomic on the HBM word in place, since
 * instances run at the same time on the tensor engine's workers.
 * Sequentially consistent host atomics make each AMO a full barrier for
 * this instance's plain loads and stores, the acquire and release
 * maia/hw/tvp.h promises.
 */
int fw_tvp_amo(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	uint32_t v = (uint32_t)st->s[d->rb], old;
	int rc;
	uint32_t *w = amo_word(st, st->s[d->ra], &rc);

	if (!w)
		return rc;
	switch (d->op) {
	case MAIA_TVP_OP_AMOADD:
		old = __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
		break;
	case MAIA_TVP_OP_AMOXCHG:
		old = __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);
		break;
	default:	/* AMOCAS: sd holds the expected value; old lands there either way */
		old = (uint32_t)st->s[d->rd];
		if (!__atomic_compare_exchange_n(w, &old, v, false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			spin_pause();
		break;
	}
	st->s[d->rd] = (uint64_t)(int64_t)(int32_t)old;
	st->st.bytes_read += 4;
	st->st.bytes_written += 4;
	return MAIA_STATUS_OK;
}

/* word += v atomically, as binary32 (a CAS loop) or int32; the old bits. */
static uint32_t add_word(uint32_t *w, uint32_t v, bool fp32)
{
	uint32_t old, nv;
	float a, b;

	if (!fp32)
		return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
	old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
	do {
		memcpy(&a, &old, 4);
		memcpy(&b, &v, 4);
		a += b;
		memcpy(&nv, &a, 4);
	} while (!__atomic_compare_exchange_n(w, &old, nv, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return old;
}

int fw_tvp_vamoadd(struct fw_tvp_state *st, const struct fw_tvp_dinsn *d)
{
	bool fp32 = d->dtype == MAIA_DTYPE_FP32;
	uint32_t *o = st->tmp[0].u, vl = st->vl;
	uint64_t sa = st->s[d->ra];

	for (uint32_t i = 0; i < vl; i++) {
		uint32_t *w;
		int rc;

		if (!lane_on(st, d, i)) {
			o[i] = 0;	/* not accessed */
			continue;
		}
		w = amo_word(st, lane_va(sa, lane_off(st, d, i), 4), &rc);
		if (!w)
			return rc;
		o[i] = add_word(w, st->v[d->rd].u[i], fp32);
		st->st.bytes_read += 4;
		st->st.bytes_written += 4;
	}
	memcpy(st->v[d->rd].u, o, (size_t)vl * 4);
	return MAIA_STATUS_OK;
}
