// SPDX-License-Identifier: MIT
/*
 * The TVP's scalar atomics (AMOADD, AMOXCHG, AMOCAS; hardware 1.11): each
 * against a reference written here (old value sign-extended into sd,
 * wrapping add, CAS comparing the low 32 bits of sd); many instances on
 * the tensor engine's workers contending: a counter every instance bumps
 * ends exact and the old values they saw are 0..n-1 once each; a CAS spin
 * lock released by AMOXCHG protects a non-atomic scalar and vector
 * read-modify-write, which end exact (the AMOs' acquire and release); a
 * lock never released ends in KERNEL_WATCHDOG; misaligned, unmapped and
 * not-in-place words fault. VAMOADD (f32, i32) against a lane-order
 * reference, contended by 2000 instances, and faulting part-way.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tvp_util.h"

static struct tvp_mem M;
static struct tvp_prog P;

#define E(op, rd, ra, rb, imm) tvp_emit(&P, MAIA_TVP_OP_##op, rd, ra, rb, imm)
#define OUT	TVP_DATA
/* Generous: the lock's waiters spin while the host runs its holder (load must not fail it). */
#define LOCK_BUDGET	0xffffffffu

/* One AMO on one word: sd (s10) starts as `sd`, ends in *old; the word ends in *word. */
static int one_amo(unsigned int op, uint32_t *word, uint64_t sd, uint64_t sb, uint64_t *old)
{
	const uint64_t args[2] = { OUT, OUT + 64 };
	struct tvp_run_opts o = { .args = args, .nargs = 2 };
	uint32_t *out = tvp_ptr(&M, OUT);
	uint64_t *res = tvp_ptr(&M, OUT + 64);
	int rc;

	P.n = 0;
	E(LI, 10, 0, 0, (uint32_t)sd);
	E(LIH, 10, 0, 0, (uint32_t)(sd >> 32));
	E(LI, 11, 0, 0, (uint32_t)sb);
	E(LIH, 11, 0, 0, (uint32_t)(sb >> 32));
	tvp_emit(&P, op, 10, 1, 11, 0);
	E(SST, 10, 2, 0, MAIA_DTYPE_INT32);	/* low half */
	E(LI, 4, 0, 0, 32);
	E(SRA, 10, 10, 4, 0);
	E(ADDI, 5, 2, 0, 4);
	E(SST, 10, 5, 0, MAIA_DTYPE_INT32);	/* high half */
	out[0] = *word;
	res[0] = 0x5555555555555555ull;
	rc = tvp_run(&M, &P, &o, NULL);
	*word = out[0];
	*old = res[0];
	return rc;
}

static void test_semantics(void)
{
	struct {
		const char *what;
		unsigned int op;
		uint32_t word;
		uint64_t sd, sb;
		uint32_t word_after;
	} c[] = {
		{ "amoadd 5 + 7", MAIA_TVP_OP_AMOADD, 5, 0, 7, 12 },
		{ "amoadd -3 + 1 (old sign-extended)", MAIA_TVP_OP_AMOADD, 0xfffffffdu, 0, 1,
		  0xfffffffeu },
		{ "amoadd wraps at 2^31", MAIA_TVP_OP_AMOADD, 0x7fffffffu, 0, 1, 0x80000000u },
		{ "amoadd uses sb's low 32 bits", MAIA_TVP_OP_AMOADD, 1, 0, 0x100000002ull, 3 },
		{ "amoxchg", MAIA_TVP_OP_AMOXCHG, 0x12345678u, 0, 0xffffffff9abcdef0ull,
		  0x9abcdef0u },
		{ "amocas hit", MAIA_TVP_OP_AMOCAS, 0, 0, 1, 1 },
		{ "amocas miss", MAIA_TVP_OP_AMOCAS, 1, 0, 1, 1 },
		{ "amocas negative hit", MAIA_TVP_OP_AMOCAS, 0xffffffffu, UINT64_MAX, 9, 9 },
		{ "amocas compares sd's low 32 bits", MAIA_TVP_OP_AMOCAS, 7, 0xabcd00000007ull, 8,
		  8 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t w = c[i].word;
		uint64_t old;
		int rc = one_amo(c[i].op, &w, c[i].sd, c[i].sb, &old);

		tap_ok(rc == MAIA_STATUS_OK && w == c[i].word_after &&
		       old == (uint64_t)(int64_t)(int32_t)c[i].word,
		       "%s: word 0x%x -> 0x%x, sd = 0x%llx", c[i].what, c[i].word, w,
		       (unsigned long long)old);
	}
}

/* n instances add 1 to one counter; each writes the old value it got to out[1 + pid]. */
static void test_counter(struct fw_tensor_engine *te, uint32_t n)
{
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .grid = { n }, .args = args, .nargs = 1, .te = te };
	uint32_t *out = tvp_ptr(&M, OUT);
	unsigned char *seen = calloc(n, 1);
	struct fw_tvp_stats st;
	bool perm = seen != NULL;
	int rc;

	P.n = 0;
	E(LI, 3, 0, 0, 1);
	E(AMOADD, 4, 1, 3, 0);		/* s4 = old counter */
	E(PID, 2, 0, 0, 0);
	E(LI, 5, 0, 0, 4);
	E(MUL, 6, 2, 5, 0);
	E(ADD, 6, 6, 1, 0);
	E(ADDI, 6, 6, 0, 4);
	E(SST, 4, 6, 0, MAIA_DTYPE_INT32);
	memset(out, 0, 4 * ((size_t)n + 1));
	rc = tvp_run(&M, &P, &o, &st);
	for (uint32_t i = 0; perm && i < n; i++) {
		if (out[1 + i] >= n || seen[out[1 + i]])
			perm = false;
		else
			seen[out[1 + i]] = 1;
	}
	free(seen);
	tap_ok(rc == MAIA_STATUS_OK && out[0] == n && perm && st.insns[MAIA_TVP_CLASS_SYNC] == n &&
	       st.bytes_read == 4ull * n + 8ull * P.n && st.bytes_written == 8ull * n,
	       "%u instances%s: the counter ends at %u, the old values are 0..%u once each, "
	       "%u SYNC-class instructions", n, te ? " on 2 workers" : "", out[0], n - 1,
	       (unsigned int)st.insns[MAIA_TVP_CLASS_SYNC]);
}

/*
 * A spin lock at out[0] (AMOCAS 0 -> 1, released by AMOXCHG 0) around a
 * plain read-modify-write: out[1] += pid + 1 by SLD/SST and 64 lanes at
 * out[16..] += 1 by VLD/VST. Without the AMOs' ordering, or with a lost
 * lock, an update would be lost.
 */
static void test_lock(struct fw_tensor_engine *te, uint32_t n)
{
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .grid = { n }, .args = args, .nargs = 1, .te = te,
				  .budget = LOCK_BUDGET };
	uint32_t *out = tvp_ptr(&M, OUT);
	uint64_t want = (uint64_t)n * (n + 1) / 2;
	bool lanes = true;
	uint32_t spin;
	int rc;

	P.n = 0;
	E(LI, 3, 0, 0, 1);
	spin = E(LI, 2, 0, 0, 0);		/* expected: free */
	E(AMOCAS, 2, 1, 3, 0);
	E(BNEZ, 0, 2, 0, spin);			/* it was held: again */
	E(ADDI, 4, 1, 0, 4);
	E(SLD, 5, 4, 0, MAIA_DTYPE_INT32);
	E(PID, 6, 0, 0, 0);
	E(ADD, 5, 5, 6, 0);
	E(ADDI, 5, 5, 0, 1);
	E(SST, 5, 4, 0, MAIA_DTYPE_INT32);
	E(SHAPE, 0, 0, 0, 1u << 16 | 64);
	E(ADDI, 7, 1, 0, 64);
	E(VLD, 1, 7, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));
	E(VSPLATI, 2, 0, 0, 1);
	E(VIADD, 1, 1, 2, 0);
	E(VST, 1, 7, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));
	E(AMOXCHG, 0, 1, 0, 0);			/* release: word = s0 = 0 */
	memset(out, 0, 4 * 80);
	rc = tvp_run(&M, &P, &o, NULL);
	for (uint32_t i = 0; i < 64; i++)
		lanes &= out[16 + i] == n;
	tap_ok(rc == MAIA_STATUS_OK && out[0] == 0 && out[1] == (uint32_t)want && lanes,
	       "%u instances%s under a CAS lock: the plain sum ends at %u (want %llu), 64 lanes "
	       "at %u, the lock free", n, te ? " on 2 workers" : "", out[1],
	       (unsigned long long)want, out[16]);
}

/* Instance 0 takes the lock and ends holding it: instance 1 spins to the budget. */
static void test_lock_never_released(void)
{
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .grid = { 2 }, .args = args, .nargs = 1, .budget = 10000 };
	uint32_t *out = tvp_ptr(&M, OUT);
	struct fw_tvp_stats st;
	uint32_t spin;
	int rc;

	P.n = 0;
	E(LI, 3, 0, 0, 1);
	spin = E(LI, 2, 0, 0, 0);
	E(AMOCAS, 2, 1, 3, 0);
	E(BNEZ, 0, 2, 0, spin);
	E(HALT, 0, 0, 0, 0);
	out[0] = 0;
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == MAIA_STATUS_KERNEL_WATCHDOG && out[0] == 1 && st.instances == 2,
	       "a lock its holder never releases: the waiter ends in KERNEL_WATCHDOG");
}

static void test_faults(void)
{
	static const struct {
		const char *what;
		uint64_t va;
		bool no_map, recorded;
	} c[] = {
		{ "misaligned word", OUT + 2, false, false },
		{ "unmapped word", TVP_BASE - 4096, false, true },
		{ "word not addressable in place (host memory)", OUT, true, false },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const uint64_t args[1] = { c[i].va };
		struct tvp_run_opts o = { .args = args, .nargs = 1 };
		uint32_t *out = tvp_ptr(&M, OUT);
		int rc;

		P.n = 0;
		E(LI, 3, 0, 0, 5);
		E(AMOADD, 2, 1, 3, 0);
		memset(out, 0, 8);
		M.faults = 0;
		M.no_map = c[i].no_map;
		rc = tvp_run(&M, &P, &o, NULL);
		M.no_map = false;
		tap_ok(rc == MAIA_STATUS_MMU_FAULT && !out[0] && !out[1] &&
		       (!c[i].recorded || (M.faults == 1 && M.fault_va == c[i].va)),
		       "%s: MMU_FAULT, memory untouched%s", c[i].what,
		       c[i].recorded ? ", the address recorded" : "");
	}
}

/*
 * VAMOADD against a lane-order reference: 16 lanes, offsets with repeats
 * (both adds land, each lane sees the sum so far), lane 5 masked off (not
 * accessed, reads 0), int32 wrapping; then f32.
 */
static void test_vamoadd_lanes(void)
{
	static const int32_t offs[16] = { 0, 1, 0, 2, 3, 9, 1, 0, 4, 5, 6, 7, 8, 0, 2, 3 };
	const uint64_t args[2] = { OUT, OUT + 256 };
	struct tvp_run_opts o = { .args = args, .nargs = 2 };
	int32_t *word = tvp_ptr(&M, OUT), *old = tvp_ptr(&M, OUT + 256), *src = tvp_ptr(&M, OUT + 512);
	float *fw = tvp_ptr(&M, OUT), *fold = tvp_ptr(&M, OUT + 256), *fsrc = tvp_ptr(&M, OUT + 512);
	int32_t ref[10], refold[16];
	float fref[10], frefold[16];
	bool ok = true;
	int rc;

	for (unsigned int dt = 0; dt < 2; dt++) {
		unsigned int dtype = dt ? MAIA_DTYPE_FP32 : MAIA_DTYPE_INT32;

		for (int i = 0; i < 10; i++) {
			ref[i] = word[i] = i == 2 ? INT32_MAX : 100 * i;
			fref[i] = 0.25f * (float)i;
		}
		if (dt)
			for (int i = 0; i < 10; i++)
				fw[i] = fref[i];
		for (int i = 0; i < 16; i++) {
			src[i] = i + 1;
			if (dt)
				fsrc[i] = 1.0f / (float)(i + 1);
			src[16 + i] = offs[i];
			src[32 + i] = i != 5;
		}
		for (int i = 0; i < 16; i++) {
			if (i == 5) {
				refold[i] = 0;
				frefold[i] = 0;
				continue;
			}
			if (dt) {
				frefold[i] = fref[offs[i]];
				fref[offs[i]] += fsrc[i];
			} else {
				refold[i] = ref[offs[i]];
				ref[offs[i]] = (int32_t)((uint32_t)ref[offs[i]] + (uint32_t)src[i]);
			}
		}
		P.n = 0;
		E(SHAPE, 0, 0, 0, 1u << 16 | 16);
		E(ADDI, 3, 2, 0, 256);
		E(VLD, 1, 3, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));	/* values */
		E(ADDI, 3, 2, 0, 256 + 64);
		E(VLD, 2, 3, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));	/* offsets */
		E(ADDI, 3, 2, 0, 256 + 128);
		E(VLD, 3, 3, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));	/* mask */
		E(VAMOADD, 1, 1, 2, dtype | MAIA_TVP_MEM_MASKED | 3u << 8);
		E(VST, 1, 2, 0, tvp_memimm(MAIA_DTYPE_INT32, true, -1));
		rc = tvp_run(&M, &P, &o, NULL);
		for (int i = 0; i < 10; i++)
			ok &= dt ? fw[i] == fref[i] : word[i] == ref[i];
		for (int i = 0; i < 16; i++)
			ok &= dt ? fold[i] == frefold[i] : old[i] == refold[i];
		tap_ok(rc == MAIA_STATUS_OK && ok, "vamoadd %s: 16 lanes with repeated offsets and a "
		       "masked lane match the lane-order reference (words and old values)",
		       dt ? "f32" : "i32");
	}
}

/* n instances add 0.5 to 64 floats and pid to 64 ints with VAMOADD: exact sums. */
static void test_vamoadd_contended(struct fw_tensor_engine *te, uint32_t n)
{
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .grid = { n }, .args = args, .nargs = 1, .te = te };
	float *f = tvp_ptr(&M, OUT);
	int32_t *iw = tvp_ptr(&M, OUT + 256);
	bool ok = true;
	int rc;

	P.n = 0;
	E(SHAPE, 0, 0, 0, 1u << 16 | 64);
	E(VSPLATI, 1, 0, 0, tvp_u(0.5f));
	E(VAMOADD, 1, 1, 0, MAIA_DTYPE_FP32 | MAIA_TVP_MEM_UNIT);
	E(PID, 2, 0, 0, 0);
	E(VSPLAT, 2, 2, 0, 0);
	E(ADDI, 3, 1, 0, 256);
	E(VAMOADD, 2, 3, 0, MAIA_DTYPE_INT32 | MAIA_TVP_MEM_UNIT);
	memset(f, 0, 512);
	rc = tvp_run(&M, &P, &o, NULL);
	for (int i = 0; i < 64; i++)
		ok &= f[i] == 0.5f * (float)n && iw[i] == (int32_t)((uint64_t)n * (n - 1) / 2);
	tap_ok(rc == MAIA_STATUS_OK && ok, "%u instances%s: vamoadd of 0.5 into 64 floats ends at "
	       "%g each, of pid into 64 ints at %d", n, te ? " on 2 workers" : "", f[0], iw[0]);
}

/* A lane on an unmapped word: MMU_FAULT with its address; the lanes before it are done. */
static void test_vamoadd_fault(void)
{
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .args = args, .nargs = 1 };
	int32_t *w = tvp_ptr(&M, OUT);
	int rc;

	P.n = 0;
	E(SHAPE, 0, 0, 0, 1u << 16 | 8);
	E(VIOTA, 2, 0, 0, 0);
	E(LI, 3, 0, 0, 4);
	E(VSPLAT, 3, 3, 0, 0);
	E(VICMP, 4, 2, 3, MAIA_TVP_CMP_LT);	/* lanes 0..3 */
	E(LI, 3, 0, 0, -(int32_t)(OUT - TVP_BASE) / 4 - 1024);
	E(VSPLAT, 3, 3, 0, 0);
	E(VSEL, 2, 2, 3, 4);			/* lanes 4..7: below the mapping */
	E(VSPLATI, 1, 0, 0, 1);
	E(VAMOADD, 1, 1, 2, MAIA_DTYPE_INT32);
	memset(w, 0, 32);
	M.faults = 0;
	rc = tvp_run(&M, &P, &o, NULL);
	tap_ok(rc == MAIA_STATUS_MMU_FAULT && M.faults == 1 && M.fault_va == TVP_BASE - 4096 &&
	       w[0] == 1 && w[3] == 1 && w[4] == 0,
	       "vamoadd: lane 4 unmapped: MMU_FAULT at its address, lanes 0..3 added");
}

int main(void)
{
	struct fw_tensor_config cfg = { .clusters = 2, .tiles_per_cluster = 4, .sram_kib = 8192,
					.threads = 2 };
	struct fw_tensor_engine *te;

	tvp_mem_init(&M, 4u << 20);
	te = fw_tensor_create(&cfg);
	tap_ok(te != NULL, "a tensor engine with 2 worker threads");
	test_semantics();
	test_counter(NULL, 100);
	test_counter(te, 4000);
	test_lock(NULL, 100);
	test_lock(te, 2000);
	test_lock_never_released();
	test_faults();
	test_vamoadd_lanes();
	test_vamoadd_contended(NULL, 100);
	test_vamoadd_contended(te, 2000);
	test_vamoadd_fault();
	fw_tensor_destroy(te);
	tvp_mem_fini(&M);
	return tap_done();
}
