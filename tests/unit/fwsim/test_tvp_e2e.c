// SPDX-License-Identifier: MIT
/*
 * KERNEL end to end on a booted device (harness.c): command buffers on a
 * queue, programs and data in HBM. A masked vector add over a length that
 * is no multiple of 1024, a row softmax, a 32 x 32 x 32 VDOT matmul, each
 * against a reference computed here; the statuses a job completes with
 * (KERNEL_INVALID, BAD_CMD, KERNEL_WATCHDOG, MMU_FAULT with FAULT_ADDR at
 * the lane's address), the firmware advertising the opcode, the TVP
 * telemetry counters (exact per class) and the modeled duration of a
 * kernel written out from Documentation/hw/time-model.rst by hand; a kernel
 * in a context with page tables (scattered HBM pages, host memory, a
 * read-only page, its fault in the fault queue); a queue
 * disable and a device reset stopping a kernel that would run for days.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "maia/hw/telemetry.h"
#include "tap.h"
#include "tvp_util.h"

static struct env env;
static struct tq q0;
static struct tvp_prog P;

#define E(op, rd, ra, rb, imm) tvp_emit(&P, MAIA_TVP_OP_##op, rd, ra, rb, imm)
#define UNIT32 tvp_memimm(MAIA_DTYPE_FP32, true, -1)
#define HBM(off) (MAIA_PHYS_HBM | (off))

static uint64_t prog_off;

/* Appends a KERNEL running P over grid with args; P goes to HBM at a fresh offset. */
static void add_kernel(struct cmdbuf *cb, uint32_t gx, uint32_t gy, const uint64_t *args,
		       uint32_t nargs, uint32_t budget)
{
	struct maia_cmd_kernel c = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) },
		.num_insns = P.n, .num_args = nargs, .grid = { gx, gy, 1 }, .budget = budget,
	};

	prog_off = hbm_alloc(&env, P.n * 8u, 4096);
	memcpy(env.hbm + prog_off, P.w, P.n * 8u);
	c.program = HBM(prog_off);
	if (nargs)
		memcpy(c.args, args, nargs * 8u);
	cb_add(cb, &c, sizeof(c));
}

static uint64_t rd64(uint32_t lo)
{
	uint64_t v = rd(&env, lo);

	return v | (uint64_t)rd(&env, lo + 4) << 32;
}

static void test_vector_add(void)
{
	const uint32_t n = 10000, ni = (n + 1023) / 1024;
	uint64_t a = hbm_alloc(&env, n * 4, 4096), b = hbm_alloc(&env, n * 4, 4096);
	uint64_t o = hbm_alloc(&env, n * 4 + 4096, 4096), ts = host_alloc(&env, 16, 8);
	float *fa = (float *)(env.hbm + a), *fb = (float *)(env.hbm + b);
	float *fo = (float *)(env.hbm + o);
	const uint64_t args[4] = { HBM(a), HBM(b), HBM(o), n };
	uint64_t insns0[MAIA_TVP_NUM_CLASSES], kernels0, *t;
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	bool ok = true, counts_ok = true;
	uint64_t want_ns;

	for (uint32_t i = 0; i < n; i++) {
		fa[i] = (float)i * 0.25f - 7.0f;
		fb[i] = 1.0f / (float)(i + 1);
	}
	for (uint32_t i = n; i < n + 1024; i++)
		fo[i] = -1.0f;		/* past the end: must stay */
	P.n = 0;
	E(PID, 5, 0, 0, 0);
	E(LI, 6, 0, 0, 1024);
	E(MUL, 7, 5, 6, 0);
	E(VIOTA, 1, 0, 0, 0);
	E(VSPLAT, 2, 7, 0, 0);
	E(VIADD, 1, 1, 2, 0);		/* element index */
	E(VSPLAT, 3, 4, 0, 0);
	E(VICMP, 4, 1, 3, MAIA_TVP_CMP_LT);	/* in range */
	E(VLD, 5, 1, 1, tvp_memimm(MAIA_DTYPE_FP32, false, 4));
	E(VLD, 6, 2, 1, tvp_memimm(MAIA_DTYPE_FP32, false, 4));
	E(VFADD, 7, 5, 6, 0);
	E(VST, 7, 3, 1, tvp_memimm(MAIA_DTYPE_FP32, false, 4));
	for (unsigned int c = 0; c < MAIA_TVP_NUM_CLASSES; c++)
		insns0[c] = rd64(MAIA_REG_TELEM_TVP_INSNS_LO(c));
	kernels0 = rd64(MAIA_REG_TELEM_TVP_KERNELS_LO);
	cb_init(&cb);
	cmd_timestamp(&cb, ts);
	add_kernel(&cb, ni, 1, args, 4, 0);
	cmd_timestamp(&cb, ts + 8);
	cqe = run_cb(&env, &q0, &cb);
	for (uint32_t i = 0; i < n; i++)
		ok &= fo[i] == fa[i] + fb[i];
	for (uint32_t i = n; i < n + 1024; i++)
		ok &= fo[i] == -1.0f;
	tap_ok(cqe.status == MAIA_STATUS_OK && ok, "vector add of 10000 floats over 10 instances, "
	       "the last one masked: exact, nothing written past the end");
	/* per instance: 3 scalar, 6 VALU, 3 VMEM instructions */
	counts_ok &= rd64(MAIA_REG_TELEM_TVP_INSNS_LO(MAIA_TVP_CLASS_SCALAR)) - insns0[0] == 3 * ni;
	counts_ok &= rd64(MAIA_REG_TELEM_TVP_INSNS_LO(MAIA_TVP_CLASS_VALU)) -
		     insns0[MAIA_TVP_CLASS_VALU] == 6 * ni;
	counts_ok &= rd64(MAIA_REG_TELEM_TVP_INSNS_LO(MAIA_TVP_CLASS_VMEM)) -
		     insns0[MAIA_TVP_CLASS_VMEM] == 3 * ni;
	counts_ok &= rd64(MAIA_REG_TELEM_TVP_INSNS_LO(MAIA_TVP_CLASS_VSFU)) ==
		     insns0[MAIA_TVP_CLASS_VSFU];
	counts_ok &= rd64(MAIA_REG_TELEM_TVP_KERNELS_LO) == kernels0 + 1;
	tap_ok(counts_ok, "telemetry: 30 scalar, 60 VALU, 30 VMEM instructions, one kernel more");
	/*
	 * Modeled time (Documentation/hw/time-model.rst, maia100): per instance
	 * 3 scalar x 1 + 6 VALU x 4 lane groups x 1 + 3 VMEM x 4 x 2 = 51
	 * cycles; 10 instances on 64 tiles: 1 wave, 51 cycles at 1500 MHz = 34
	 * ns. HBM: the program (12 x 8 bytes), 2 x 10000 x 4 read, 10000 x 4
	 * written = 120096 bytes at 1.8 TB/s = 67 ns. So 1000 + max(34, 67).
	 */
	t = host_ptr(&env, ts);
	want_ns = 100 /* the first TIMESTAMP */ + 1000 + 67;
	tap_ok(t[1] - t[0] == want_ns, "modeled duration: %llu ns (want %llu)",
	       (unsigned long long)(t[1] - t[0]), (unsigned long long)want_ns);
}

static void test_softmax(void)
{
	const uint32_t rows = 64, cols = 100;
	uint64_t x = hbm_alloc(&env, rows * cols * 4, 4096), y = hbm_alloc(&env, rows * cols * 4, 4096);
	float *fx = (float *)(env.hbm + x), *fy = (float *)(env.hbm + y);
	const uint64_t args[3] = { HBM(x), HBM(y), cols * 4 };
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	double worst = 0.0;

	srand(3);
	for (uint32_t i = 0; i < rows * cols; i++)
		fx[i] = (float)(rand() % 2000 - 1000) / 50.0f;
	P.n = 0;
	E(PID, 5, 0, 0, 0);
	E(MUL, 6, 5, 3, 0);
	E(ADD, 1, 1, 6, 0);
	E(ADD, 2, 2, 6, 0);
	E(SHAPE, 0, 0, 0, 1u << 16 | cols);
	E(VLD, 1, 1, 0, UNIT32);
	E(VREDMAX, 2, 1, 0, 1);
	E(VBCAST, 2, 2, 0, 0);
	E(VFSUB, 3, 1, 2, 0);
	E(VEXP, 3, 3, 0, 0);
	E(VREDSUM, 4, 3, 0, 1);
	E(VBCAST, 4, 4, 0, 0);
	E(VFDIV, 5, 3, 4, 0);
	E(VST, 5, 2, 0, UNIT32);
	cb_init(&cb);
	add_kernel(&cb, rows, 1, args, 3, 0);
	cqe = run_cb(&env, &q0, &cb);
	for (uint32_t r = 0; r < rows; r++) {
		double m = -INFINITY, s = 0.0;

		for (uint32_t c = 0; c < cols; c++)
			m = fmax(m, fx[r * cols + c]);
		for (uint32_t c = 0; c < cols; c++)
			s += exp(fx[r * cols + c] - m);
		for (uint32_t c = 0; c < cols; c++) {
			double ref = exp(fx[r * cols + c] - m) / s;
			double err = fabs(fy[r * cols + c] - ref) / ref;

			if (err > worst)
				worst = err;
		}
	}
	tap_ok(cqe.status == MAIA_STATUS_OK && worst < 1e-5, "row softmax of 64 x 100: relative "
	       "error %.2g against double", worst);
}

static void test_matmul(void)
{
	uint64_t a = hbm_alloc(&env, 4096, 4096), b = hbm_alloc(&env, 4096, 4096);
	uint64_t c = hbm_alloc(&env, 4096, 4096);
	float *fa = (float *)(env.hbm + a), *fb = (float *)(env.hbm + b);
	float *fc = (float *)(env.hbm + c);
	const uint64_t args[3] = { HBM(a), HBM(b), HBM(c) };
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	bool ok = true;

	for (uint32_t i = 0; i < 1024; i++) {
		fa[i] = (float)((int)(i * 37 % 101) - 50) / 16.0f;
		fb[i] = (float)((int)(i * 53 % 97) - 48) / 8.0f;
	}
	P.n = 0;
	E(VLD, 1, 1, 0, UNIT32);
	E(VLD, 2, 2, 0, UNIT32);
	E(SHAPE, 0, 0, 0, 32u << 16 | 32);
	E(VDOT, 3, 1, 2, 32);
	E(VST, 3, 3, 0, UNIT32);
	cb_init(&cb);
	add_kernel(&cb, 1, 1, args, 3, 0);
	cqe = run_cb(&env, &q0, &cb);
	for (uint32_t i = 0; i < 32; i++)
		for (uint32_t j = 0; j < 32; j++) {
			float acc = 0.0f;

			for (uint32_t k = 0; k < 32; k++) {
				float p = fa[i * 32 + k] * fb[k * 32 + j];

				acc = acc + p;
			}
			ok &= fc[i * 32 + j] == acc;
		}
	tap_ok(cqe.status == MAIA_STATUS_OK && ok, "32 x 32 x 32 matmul with one VDOT: bit-exact "
	       "against FP32 products summed in k order");
}

static void test_statuses(void)
{
	const uint64_t args[1] = { HBM(env.hbm_size - 8) };
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	struct maia_cmd_kernel k;
	uint64_t fa;

	tap_ok(rd(&env, MAIA_REG_REVISION) >= MAIA_HW_REVISION_TVP, "hardware revision 1.9 or later");
	P.n = 0;
	E(NOP, 1, 0, 0, 0);
	cb_init(&cb);
	add_kernel(&cb, 1, 1, NULL, 0, 0);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_KERNEL_INVALID, "a word that fails validation: job "
	       "completes with KERNEL_INVALID (%u)", cqe.status);
	P.n = 0;
	E(NOP, 0, 0, 0, 0);
	cb_init(&cb);
	add_kernel(&cb, 1, 1, NULL, 0, 0);
	memcpy(&k, cb.buf, sizeof(k));
	k.grid[0] = 0;
	memcpy(cb.buf, &k, sizeof(k));
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_BAD_CMD, "grid 0: BAD_CMD");
	P.n = 0;
	E(JMP, 0, 0, 0, 0);
	cb_init(&cb);
	add_kernel(&cb, 4, 1, NULL, 0, 100000);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_KERNEL_WATCHDOG, "an endless loop: KERNEL_WATCHDOG");
	/* lane 2 of an 8-byte window at the end of HBM is past it */
	P.n = 0;
	E(SHAPE, 0, 0, 0, 1u << 16 | 3);
	E(VLD, 1, 1, 0, UNIT32);
	cb_init(&cb);
	add_kernel(&cb, 1, 1, args, 1, 0);
	wr(&env, MAIA_REG_INT_STATUS, 0xffffffffu);
	cqe = run_cb(&env, &q0, &cb);
	fa = rd(&env, MAIA_REG_FAULT_ADDR_LO) | (uint64_t)rd(&env, MAIA_REG_FAULT_ADDR_HI) << 32;
	tap_ok(cqe.status == MAIA_STATUS_MMU_FAULT && fa == HBM(env.hbm_size),
	       "a lane past HBM: MMU_FAULT, FAULT_ADDR 0x%llx is that lane's", (unsigned long long)fa);
}

/*
 * In a context with page tables: the program in HBM, A in HBM pages mapped
 * in reverse order (VA-contiguous, PA-scattered), B in host memory (lanes
 * through DMA), the output across a page boundary; then a store to a
 * read-only page faults with the context's FAULT_INFO and that address.
 */
#define VA_CMD	0x0000100000000000ull
#define VA_PROG	0x0000000020000000ull
#define VA_A	0x0000000030000000ull
#define VA_B	0x0000000040000000ull
#define VA_O	0x0000000050000000ull
#define VA_RO	0x0000000060000000ull

static void test_asid(void)
{
	const uint64_t rw = MAIA_PTE_READ | MAIA_PTE_WRITE;
	uint64_t root = pt_new_root(&env), cmd = host_alloc(&env, 4 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	uint64_t prog = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE), a_pa[2], o_pa[2];
	uint64_t b_bus = host_alloc(&env, 2 * MAIA_PAGE_SIZE, MAIA_PAGE_SIZE), fa;
	const uint64_t args[4] = { VA_A + 2048, VA_B + 1024, VA_O + 2052, VA_RO + 8 };
	struct maia_cmd_kernel k = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(k) }, .program = VA_PROG,
		.num_args = 4, .grid = { 1, 1, 1 },
	};
	float *b = host_ptr(&env, b_bus);
	struct maia_fault_entry fe;
	struct maia_cq_entry *c;
	struct cmdbuf cb;
	uint32_t slot;
	uint64_t fq;
	bool ok = true;

	for (int i = 0; i < 2; i++) {
		a_pa[i] = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
		o_pa[i] = hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE);
	}
	for (unsigned int i = 0; i < 4; i++)
		pt_map(&env, root, VA_CMD + i * MAIA_PAGE_SIZE, cmd + i * MAIA_PAGE_SIZE,
		       MAIA_PTE_READ | MAIA_PTE_SYSMEM, false);
	pt_map(&env, root, VA_PROG, prog, MAIA_PTE_READ, false);
	for (int i = 0; i < 2; i++) {
		pt_map(&env, root, VA_A + i * MAIA_PAGE_SIZE, a_pa[1 - i], rw, false);
		pt_map(&env, root, VA_B + i * MAIA_PAGE_SIZE, b_bus + i * MAIA_PAGE_SIZE,
		       rw | MAIA_PTE_SYSMEM, false);
		pt_map(&env, root, VA_O + i * MAIA_PAGE_SIZE, o_pa[i], rw, false);
	}
	pt_map(&env, root, VA_RO, hbm_alloc(&env, MAIA_PAGE_SIZE, MAIA_PAGE_SIZE), MAIA_PTE_READ,
	       false);
	tap_ok(mbox(&env, MAIA_MBOX_SET_CONTEXT, 3, (uint32_t)root, (uint32_t)(root >> 32), NULL) ==
	       MAIA_MBOX_OK, "SET_CONTEXT asid 3");
	/* A[i] at VA_A + 2048 + 4i: page 0 of VA is a_pa[1] */
	for (uint32_t i = 0; i < 1024; i++) {
		uint64_t off = 2048 + 4ull * i;
		float v = (float)i * 0.5f;

		memcpy(env.hbm + a_pa[1 - off / 4096] + off % 4096, &v, 4);
		b[256 + i] = 1000.0f - (float)i;
	}
	P.n = 0;
	E(VLD, 1, 1, 0, UNIT32);
	E(VLD, 2, 2, 0, UNIT32);
	E(VFADD, 3, 1, 2, 0);
	E(VST, 3, 3, 0, UNIT32);
	E(SST, 0, 4, 0, MAIA_DTYPE_INT32);	/* read-only: faults */
	memcpy(env.hbm + prog, P.w, P.n * 8u);
	k.num_insns = P.n;
	memcpy(k.args, args, sizeof(args));
	cb_init(&cb);
	cb_add(&cb, &k, sizeof(k));
	memcpy(host_ptr(&env, cmd), cb.buf, cb.len);
	wr(&env, MAIA_REG_INT_STATUS, 0xffffffffu);	/* a fresh fault record */
	fq = host_alloc(&env, 4 * sizeof(struct maia_fault_entry), MAIA_FAULTQ_ALIGN);
	wr(&env, MAIA_REG_FAULTQ_BASE_LO, (uint32_t)fq);
	wr(&env, MAIA_REG_FAULTQ_BASE_HI, (uint32_t)(fq >> 32));
	wr(&env, MAIA_REG_FAULTQ_SIZE, 4);
	slot = queue_push(&env, &q0, VA_CMD, cb.len, 3, 0, 0x3a5, true);
	maia_sim_drain(env.sim);
	c = cqe_at(&env, &q0, slot);
	for (uint32_t i = 0; i < 1024; i++) {
		uint64_t off = 2052 + 4ull * i;
		float v;

		memcpy(&v, env.hbm + o_pa[off / 4096] + off % 4096, 4);
		ok &= v == (float)i * 0.5f + (1000.0f - (float)i);
	}
	fa = rd(&env, MAIA_REG_FAULT_ADDR_LO) | (uint64_t)rd(&env, MAIA_REG_FAULT_ADDR_HI) << 32;
	tap_ok(ok, "asid 3: A across PA-scattered HBM pages plus B in host memory, stored across "
	       "a page boundary: exact");
	memcpy(&fe, host_ptr(&env, fq), sizeof(fe));
	tap_ok(c->status == MAIA_STATUS_MMU_FAULT && fa == VA_RO + 8 &&
	       (rd(&env, MAIA_REG_FAULT_INFO) & 0xffffu) == 3,
	       "a store to a read-only page: MMU_FAULT at 0x%llx in asid 3", (unsigned long long)fa);
	tap_ok(rd(&env, MAIA_REG_FAULTQ_PROD) == 1 && fe.addr == VA_RO + 8 && fe.job_id == 0x3a5 &&
	       fe.info == rd(&env, MAIA_REG_FAULT_INFO),
	       "... and the fault queue has it: address, job, info");
	wr(&env, MAIA_REG_FAULTQ_SIZE, 0);
}

/*
 * Submits an endless kernel (2^20 instances, the largest budget) whose
 * instances first load a word from host memory, held at the harness's gate
 * until the kernel surely runs, then loop.
 */
static uint32_t start_endless(void)
{
	uint64_t word = host_alloc(&env, 8, 8);
	const uint64_t args[1] = { word };
	struct cmdbuf cb;
	uint32_t slot;

	P.n = 0;
	E(SLD, 2, 1, 0, MAIA_DTYPE_INT32);
	E(JMP, 0, 0, 0, 1);
	cb_init(&cb);
	add_kernel(&cb, 1024, 1024, args, 1, UINT32_MAX);
	gate_close(&env, word);
	slot = queue_push(&env, &q0, cb_to_host(&env, &cb), cb.len, 0, 0, 0x7e5, true);
	gate_wait_hit(&env);
	gate_open(&env);
	return slot;
}

/*
 * A kernel that would run for days stops when its queue is disabled (the
 * CTRL write returns once the job is off the device) and at a reset (an
 * ABORTED completion): the test would hang otherwise. No timing involved.
 */
static void test_stop(void)
{
	struct maia_cq_entry cqe;
	struct cmdbuf cb;
	uint32_t slot;

	slot = start_endless();
	wr(&env, MAIA_REG_Q(0, MAIA_Q_CTRL), 0);
	tap_ok(!(cqe_at(&env, &q0, slot)->flags & MAIA_CQE_VALID),
	       "disabling the queue stops a running endless kernel, no completion");
	queue_setup(&env, &q0, 0, 64, 0);
	P.n = 0;
	E(HALT, 0, 0, 0, 0);
	cb_init(&cb);
	add_kernel(&cb, 3, 1, NULL, 0, 0);
	cqe = run_cb(&env, &q0, &cb);
	tap_ok(cqe.status == MAIA_STATUS_OK, "... and the next kernel on the queue runs");
	slot = start_endless();
	wr(&env, MAIA_REG_RESET, MAIA_RESET_MAGIC);
	tap_ok((cqe_at(&env, &q0, slot)->flags & MAIA_CQE_VALID) &&
	       cqe_at(&env, &q0, slot)->status == MAIA_STATUS_ABORTED,
	       "a device reset stops a running endless kernel: ABORTED");
}

int main(void)
{
	if (env_init(&env, 2, 64u << 20, 16u << 20))
		return 1;
	boot_or_die(&env);
	queue_setup(&env, &q0, 0, 64, 0);
	test_statuses();
	test_vector_add();
	test_softmax();
	test_matmul();
	test_asid();
	test_stop();
	env_fini(&env);
	return tap_done();
}
