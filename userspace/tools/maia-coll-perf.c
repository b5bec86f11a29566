// SPDX-License-Identifier: MIT
/*
 * maia-coll-perf: collective correctness and bandwidth over the devices of
 * this machine, in the manner of nccl-tests.
 *
 *   maia-coll-perf [--ndev N] [--first-dev F] [--op OP|all] [--dtype fp32|bf16|all]
 *                  [--redop sum|max|min|all] [--min-bytes B] [--max-bytes B]
 *                  [--step-factor F] [--sizes B,B,...] [--iters N] [--warmup N]
 *                  [--json] [--rank R --nranks N --id HEX|--id-file PATH]
 *                  [--mem hbm|host]
 *
 * With --rank, this process is one rank of a communicator spread over
 * processes (one per machine or QEMU instance): it uses device F (--first-dev,
 * default 0), joins with
 * maia_comm_init_rank() and the id from --id (hex, from maia-comm-id) or the
 * first line of --id-file (a file or a virtio-serial port), and checks only
 * its own results.
 *
 * Devices F..F+N-1 (--first-dev F, default 0; --ndev N, default: every Maia
 * device from F on) become ranks 0..N-1 of one communicator
 * (maia_comm_init_all: they must be cabled as a ring in that order,
 * qemu/run-guest --fabric ring, or one ring of --fabric rings:S,S,...).
 * For each size from --min-bytes to
 * --max-bytes (multiplied by --step-factor), or each of --sizes (bytes per
 * rank, rounded down to whole elements: 0 and odd counts are fine), every
 * rank's buffers are filled
 * with small integers, so that every reduction order gives the same exact
 * result in FP32 and BF16, the collective runs --iters times (after
 * --warmup calls, waited for: the clock starts when they are done, which
 * lines up ranks of different processes), and the results are compared
 * with the CPU's. Each line gives
 * size, count, time per collective, algbw = bytes / time and busbw as
 * nccl-tests defines it (all-reduce x 2(n-1)/n; all-gather, reduce-scatter,
 * all-to-all x (n-1)/n; broadcast x 1), and #wrong, the elements that
 * differ. Exit status 1 if any element was wrong or a collective failed.
 * --json prints one JSON object per size instead (tests/run-bench).
 * --mem picks where the buffers are: hbm (default: device memory, as
 * nccl-tests uses GPU memory) or host (system memory the devices reach by
 * DMA).
 * --fence waits for each size's collectives through maia_comm_fence() and
 * maia_fence_wait() instead of maia_comm_sync(). --stagger-ms MS submits
 * rank 0's calls (all --warmup + --iters of them, as one group: one job)
 * first, and every other rank's calls one by one MS ms apart, so that its
 * job waits alone for its peers once per call, MS ms each: longer than
 * the driver's job_timeout_ms, that must not count as a hang, and all the
 * waits of the job together longer than its fabric_wait_max_ms must not
 * either (each wait is bounded, not the job).
 *
 * --fabric-bench (two or more devices, ring-cabled) measures the fabric's
 * mechanics instead, beside what the same guest does without it: a 64 MiB
 * remote write from device F (port 0) into a window of device F+1 beside
 * memcpy of 64 MiB on this CPU (best of --iters each), and the 8-byte FP32
 * all-reduce over the N devices (the device's choice, gather-reduce, and the
 * ring, alternately) beside the round trip of an empty (one-NOP)
 * job on device F and that of an 8-byte remote write from device F to
 * device F+1 (medians of 10 x --iters each, the empty jobs first). Data
 * written and reduced is checked. F is 0 unless --first-dev says otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drm/maia_accel.h"
#include "libmaia.h"

#define MAX_DEV		16
#define WAIT_NS		(120ll * 1000000000ll)

static struct {
	int ndev;
	int first_dev;			/* --first-dev: local device of rank 0 */
	const char *op, *dtype, *redop;
	uint64_t min_bytes, max_bytes;
	unsigned int step, iters, warmup;
	bool json;
	int rank, nranks;		/* --rank: one rank of many processes */
	uint64_t sizes[32];		/* --sizes */
	unsigned int nsizes;
	const char *id_hex, *id_file;
	bool fabric_bench;		/* --fabric-bench */
	bool fence;			/* --fence: wait through maia_comm_fence() */
	unsigned int stagger_ms;	/* --stagger-ms: rank 0 this long before the rest */
	unsigned int mem;		/* --mem: MAIA_BO_HBM or MAIA_BO_HOST */
} opt = {
	.mem = MAIA_BO_HBM,
	.rank = -1,
	.op = "all", .dtype = "all", .redop = "sum",
	.min_bytes = 8, .max_bytes = 4u << 20, .step = 4, .iters = 5, .warmup = 1,
};

struct rank_bufs {
	struct maia_bo *send, *recv;
	void *send_cpu, *recv_cpu;
};

static const struct {
	const char *name;
	unsigned int coll;
} ops[] = {
	{ "all_reduce", MAIA_COLL_ALL_REDUCE },
	{ "all_gather", MAIA_COLL_ALL_GATHER },
	{ "reduce_scatter", MAIA_COLL_REDUCE_SCATTER },
	{ "broadcast", MAIA_COLL_BROADCAST },
	{ "all_to_all", MAIA_COLL_ALL_TO_ALL },
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/*
 * Rank r's input element i: 1..16, so n <= 16 ranks sum exactly even in
 * BF16. Periodic in i (INPUT_PERIOD): fill_input() and count_wrong() rely
 * on it to touch 64 MiB buffers in bulk rather than element by element,
 * which under TCG took seconds per rank.
 */
#define INPUT_PERIOD	97u

static float input_value(int r, uint64_t i)
{
	return (float)(1 + (uint64_t)(r * 5 + (int)(i % INPUT_PERIOD) * 3) % 16);
}

static void put(void *buf, unsigned int dtype, uint64_t i, float v)
{
	if (dtype == MAIA_DTYPE_FP32)
		((float *)buf)[i] = v;
	else
		((uint16_t *)buf)[i] = f32_to_bf16(v);
}

static float get(const void *buf, unsigned int dtype, uint64_t i)
{
	return dtype == MAIA_DTYPE_FP32 ? ((const float *)buf)[i] :
	       bf16_to_f32(((const uint16_t *)buf)[i]);
}

static float reduce(unsigned int redop, float a, float b)
{
	switch (redop) {
	case MAIA_REDOP_MAX:
		return a > b ? a : b;
	case MAIA_REDOP_MIN:
		return a < b ? a : b;
	default:
		return a + b;
	}
}

/* Element counts of one rank's send and receive buffers. */
static void counts(unsigned int coll, uint64_t count, int n, uint64_t *send, uint64_t *recv)
{
	*send = *recv = count;
	if (coll == MAIA_COLL_ALL_GATHER)
		*recv = count * (uint64_t)n;
	else if (coll == MAIA_COLL_REDUCE_SCATTER)
		*send = count * (uint64_t)n;
	else if (coll == MAIA_COLL_ALL_TO_ALL)
		*send = *recv = count * (uint64_t)n;
}

/* What rank r's receive element i must be. */
static float expected(unsigned int coll, unsigned int redop, int n, int r, uint64_t count,
		      uint64_t i)
{
	float v;
	int k;

	switch (coll) {
	case MAIA_COLL_ALL_REDUCE:
		v = input_value(0, i);
		for (k = 1; k < n; k++)
			v = reduce(redop, v, input_value(k, i));
		return v;
	case MAIA_COLL_REDUCE_SCATTER:
		v = input_value(0, (uint64_t)r * count + i);
		for (k = 1; k < n; k++)
			v = reduce(redop, v, input_value(k, (uint64_t)r * count + i));
		return v;
	case MAIA_COLL_ALL_GATHER:
		return input_value((int)(i / count), i % count);
	case MAIA_COLL_BROADCAST:
		return input_value(0, i);	/* root 0 */
	default:				/* all-to-all: block j from rank j */
		return input_value((int)(i / count), (uint64_t)r * count + i % count);
	}
}

static double bus_factor(unsigned int coll, int n)
{
	switch (coll) {
	case MAIA_COLL_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case MAIA_COLL_BROADCAST:
		return 1.0;
	default:
		return (double)(n - 1) / n;
	}
}

/* Global rank of local communicator @k. */
static int grank(int k)
{
	return opt.rank >= 0 ? opt.rank : k;
}

/*
 * @n ranks in all, @nlocal of them in this process (comms[0..nlocal-1],
 * global ranks grank(k)).
 */
/*
 * --fence: the last collective's fence, waited for as a program hands it to
 * another device or process would; then the communicator must have no error.
 */
static int wait_fence(struct maia_comm *comm)
{
	int fd = -1, err;

	err = maia_comm_fence(comm, &fd);
	if (err == -ENOENT)
		return maia_comm_sync(comm, WAIT_NS);	/* nothing submitted: size 0 */
	if (!err)
		err = maia_fence_wait(fd, WAIT_NS);
	if (fd >= 0)
		close(fd);
	if (!err)
		err = maia_comm_async_error(comm, NULL);
	return err;
}

/* One period of rank r's input, then copies of what is written, doubling. */
static void fill_input(void *buf, unsigned int dtype, int r, uint64_t count)
{
	unsigned int esize = dtype == MAIA_DTYPE_FP32 ? 4 : 2;
	uint64_t done = count < INPUT_PERIOD ? count : INPUT_PERIOD, i;

	for (i = 0; i < done; i++)
		put(buf, dtype, i, input_value(r, i));
	while (done < count) {
		uint64_t n = done < count - done ? done : count - done;

		memcpy((uint8_t *)buf + done * esize, buf, n * esize);
		done += n;
	}
}

/* Elements of rank r's receive buffer that differ from expected(). */
static uint64_t count_wrong(const void *recv, unsigned int coll, unsigned int redop,
			    unsigned int dtype, int n, int r, uint64_t count, uint64_t rcount)
{
	unsigned int esize = dtype == MAIA_DTYPE_FP32 ? 4 : 2;
	/* expected() is periodic from the start of each rank's block, or of the whole. */
	uint64_t seg = coll == MAIA_COLL_ALL_GATHER || coll == MAIA_COLL_ALL_TO_ALL ? count : rcount;
	const uint8_t *b = recv;
	uint64_t wrong = 0;

	for (uint64_t s0 = 0; seg && s0 < rcount; s0 += seg) {
		uint64_t plen = seg < INPUT_PERIOD ? seg : INPUT_PERIOD;
		uint8_t enc[INPUT_PERIOD * 4];
		float want[INPUT_PERIOD];
		bool exact = true;

		for (uint64_t t = 0; t < plen; t++) {
			want[t] = expected(coll, redop, n, r, count, s0 + t);
			put(enc, dtype, t, want[t]);
			/* Bits compare like values only for an exactly encoded non-zero number. */
			exact &= want[t] != 0 && want[t] == get(enc, dtype, t);
		}
		for (uint64_t t = 0; t < seg; t += plen) {
			uint64_t m = seg - t < plen ? seg - t : plen;

			if (exact && !memcmp(b + (s0 + t) * esize, enc, m * esize))
				continue;
			for (uint64_t k = 0; k < m; k++)
				wrong += get(recv, dtype, s0 + t + k) != want[k];
		}
	}
	return wrong;
}

/* One collective call of @coll on @comm. */
static int coll_call(struct maia_comm *comm, unsigned int coll, uint64_t s, uint64_t d,
		     uint64_t count, unsigned int dtype, unsigned int redop)
{
	switch (coll) {
	case MAIA_COLL_ALL_REDUCE:
		return maia_all_reduce(comm, s, d, count, dtype, redop);
	case MAIA_COLL_ALL_GATHER:
		return maia_all_gather(comm, s, d, count, dtype);
	case MAIA_COLL_REDUCE_SCATTER:
		return maia_reduce_scatter(comm, s, d, count, dtype, redop);
	case MAIA_COLL_BROADCAST:
		return maia_broadcast(comm, s, d, count, dtype, 0);
	default:
		return maia_all_to_all(comm, s, d, count, dtype);
	}
}

/*
 * --stagger-ms: rank 0's @calls calls go into one group (one job), which
 * then waits alone for its peers; every other rank makes each call
 * stagger_ms after the last, so that the job waits for the fabric once per
 * collective, each wait stagger_ms long.
 */
static int run_staggered(struct maia_comm **comms, struct rank_bufs *b, int nlocal,
			 unsigned int coll, uint64_t count, unsigned int dtype,
			 unsigned int redop, unsigned int calls)
{
	struct timespec ts = { opt.stagger_ms / 1000, (long)(opt.stagger_ms % 1000) * 1000000 };
	unsigned int it;
	int r, err = 0;

	maia_group_start();
	for (it = 0; it < calls && !err; it++)
		err = coll_call(comms[0], coll, maia_bo_va(b[0].send), maia_bo_va(b[0].recv),
				count, dtype, redop);
	if (maia_group_end() && !err)
		err = -EIO;
	for (it = 0; it < calls && !err; it++) {
		nanosleep(&ts, NULL);
		for (r = 1; r < nlocal && !err; r++)
			err = coll_call(comms[r], coll, maia_bo_va(b[r].send),
					maia_bo_va(b[r].recv), count, dtype, redop);
	}
	return err;
}

/*
 * --warmup + --iters calls of every local rank, one group per call; *t0
 * becomes the time the timed calls start.
 */
static int run_calls(struct maia_comm **comms, struct rank_bufs *b, int nlocal,
		     unsigned int coll, uint64_t count, unsigned int dtype, unsigned int redop,
		     double *t0)
{
	unsigned int it;
	int r, err = 0;

	for (it = 0; it < opt.warmup + opt.iters && !err; it++) {
		/*
		 * The warm-up is also the barrier: the clock starts once it is
		 * done here, so that a rank of another process that comes later
		 * to this size does not count in the time (as nccl-tests).
		 */
		for (r = 0; it == opt.warmup && it && r < nlocal && !err; r++)
			err = maia_comm_sync(comms[r], WAIT_NS);
		if (it == opt.warmup)
			*t0 = now_s();
		maia_group_start();
		for (r = 0; r < nlocal && !err; r++)
			err = coll_call(comms[r], coll, maia_bo_va(b[r].send),
					maia_bo_va(b[r].recv), count, dtype, redop);
		if (maia_group_end() && !err)
			err = -EIO;
	}
	return err;
}

static int run_one(struct maia_comm **comms, struct rank_bufs *b, int n, int nlocal,
		   unsigned int coll, const char *opname, unsigned int dtype, unsigned int redop,
		   uint64_t bytes, uint64_t *wrong_total)
{
	unsigned int esize = dtype == MAIA_DTYPE_FP32 ? 4 : 2;
	uint64_t count = bytes / esize, scount, rcount, wrong = 0;
	double t0, dt, algbw, busbw;
	char why[512] = "";
	int r, err = 0;

	counts(coll, count, n, &scount, &rcount);
	for (r = 0; r < nlocal; r++) {
		fill_input(b[r].send_cpu, dtype, grank(r), scount);
		memset(b[r].recv_cpu, 0xff, rcount * esize);
	}
	t0 = now_s();
	if (opt.stagger_ms)
		err = run_staggered(comms, b, nlocal, coll, count, dtype, redop,
				    opt.warmup + opt.iters);
	else
		err = run_calls(comms, b, nlocal, coll, count, dtype, redop, &t0);
	/* The first failure's message: a later rank's wait clears the last error. */
	if (err)
		snprintf(why, sizeof(why), "%s", maia_last_error());
	for (r = 0; r < nlocal; r++) {
		int e = opt.fence ? wait_fence(comms[r]) : maia_comm_sync(comms[r], WAIT_NS);

		if (e && !err) {
			err = e;
			snprintf(why, sizeof(why), "%s", maia_last_error());
		}
	}
	dt = (now_s() - t0) / opt.iters;
	if (err) {
		fprintf(stderr, "maia-coll-perf: %s %s %" PRIu64 " bytes: %s\n", opname,
			dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16", bytes,
			why[0] ? why : strerror(-err));
		return err;
	}
	for (r = 0; r < nlocal; r++)
		wrong += count_wrong(b[r].recv_cpu, coll, redop, dtype, n, grank(r), count, rcount);
	*wrong_total += wrong;
	algbw = dt > 0 ? (double)bytes / dt / 1e9 : 0;
	busbw = algbw * bus_factor(coll, n);
	if (opt.json)
		printf("{\"name\": \"coll-%s-%s-n%d\", \"bytes\": %" PRIu64 ", \"time_us\": %.1f, "
		       "\"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %" PRIu64 "}\n",
		       opname, dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16", n, bytes, dt * 1e6,
		       algbw, busbw, wrong);
	else
		printf("%12" PRIu64 " %12" PRIu64 " %6s %4s %10.1f %8.3f %8.3f %8" PRIu64 "\n",
		       bytes, count, dtype == MAIA_DTYPE_FP32 ? "float" : "bf16",
		       redop == MAIA_REDOP_MAX ? "max" : redop == MAIA_REDOP_MIN ? "min" : "sum",
		       dt * 1e6, algbw, busbw, wrong);
	fflush(stdout);
	return 0;
}

/* ---- --fabric-bench ------------------------------------------------------ */

#define FB_WRITE_BYTES	(64ull << 20)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Submit one job and wait for it; -EIO if it did not end OK. */
static int submit_wait(struct maia_device *dev, struct maia_cmdbuf *cb)
{
	struct maia_job_status st;
	uint64_t seqno;
	int err = maia_submit(dev, cb, NULL, &seqno);

	if (!err)
		err = maia_wait(dev, seqno, WAIT_NS, &st);
	if (!err && st.status != DRM_MAIA_JOB_OK) {
		fprintf(stderr, "maia-coll-perf: job %s, device status %u\n",
			maia_job_status_name(st.status), st.device_status);
		err = -EIO;
	}
	return err;
}

static void print_ratio(const char *name, const char *unit, bool higher, double v,
			const char *base, double bv, double ratio)
{
	if (opt.json)
		printf("{\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\", "
		       "\"higher_is_better\": %s, \"baseline\": \"%s\", \"baseline_value\": %.4f, "
		       "\"ratio\": %.3f}\n", name, v, unit, higher ? "true" : "false", base, bv,
		       ratio);
	else
		printf("# %s %.4f %s beside %s %.4f %s: ratio %.3f\n", name, v, unit, base, bv,
		       unit, ratio);
	fflush(stdout);
}

/* The 64 MiB remote write beside memcpy (best of --iters each). */
static int bench_write(struct maia_device *src_dev, struct maia_device *dst_dev)
{
	struct maia_bo *src = NULL, *dst = NULL;
	struct maia_cmdbuf *cb = NULL;
	uint8_t *s = NULL, *d = NULL, *a = NULL, *b = NULL;
	double best_w = 1e30, best_m = 1e30, t0;
	uint32_t key = 0;
	uint64_t wrong = 0, i;
	unsigned int it;
	int err;

	err = maia_bo_create(src_dev, FB_WRITE_BYTES, MAIA_BO_HOST, &src);
	if (!err)
		err = maia_bo_create(dst_dev, FB_WRITE_BYTES, MAIA_BO_HOST, &dst);
	if (!err)
		err = maia_bo_map(src, (void **)&s);
	if (!err)
		err = maia_bo_map(dst, (void **)&d);
	if (!err)
		err = maia_fabric_window_open(dst, 0, FB_WRITE_BYTES, MAIA_FABRIC_REMOTE_WRITE,
					      &key);
	if (!err)
		err = maia_cmdbuf_create(src_dev, 4096, &cb);
	if (!err)
		err = maia_cmd_fabric_write(cb, 0, key, 0, maia_bo_va(src), FB_WRITE_BYTES);
	a = malloc(FB_WRITE_BYTES);
	b = malloc(FB_WRITE_BYTES);
	if (err || !a || !b) {
		fprintf(stderr, "maia-coll-perf: remote write setup: %s\n",
			err ? maia_last_error() : "out of memory");
		err = err ? err : -ENOMEM;
		goto out;
	}
	for (i = 0; i < FB_WRITE_BYTES; i++)
		s[i] = a[i] = (uint8_t)(i * 7 + (i >> 13));
	memset(b, 0, FB_WRITE_BYTES);
	for (it = 0; it < opt.warmup + opt.iters && !err; it++) {
		memset(d, 0, 4096);
		t0 = now_s();
		err = submit_wait(src_dev, cb);
		if (it >= opt.warmup && now_s() - t0 < best_w)
			best_w = now_s() - t0;
		t0 = now_s();
		memcpy(b, a, FB_WRITE_BYTES);
		/* The copy happens here, not after the clock read. */
		__asm__ volatile("" : : "r"(b) : "memory");
		if (it >= opt.warmup && now_s() - t0 < best_m)
			best_m = now_s() - t0;
	}
	if (err) {
		fprintf(stderr, "maia-coll-perf: remote write: %s\n", maia_last_error());
		goto out;
	}
	for (i = 0; i < FB_WRITE_BYTES && memcmp(d, s, FB_WRITE_BYTES); i++)
		wrong += d[i] != s[i];
	if (!opt.json)
		printf("# remote write 64 MiB device %d port 0 -> device %d: %.1f ms, memcpy %.1f ms, "
		       "#wrong bytes %" PRIu64 "\n", opt.first_dev, opt.first_dev + 1, best_w * 1e3,
		       best_m * 1e3, wrong);
	print_ratio("fabric_write_64MiB_guest", "GB/s", true, FB_WRITE_BYTES / best_w / 1e9,
		    "memcpy_64MiB_guest", FB_WRITE_BYTES / best_m / 1e9, best_m / best_w);
	err = wrong ? -EIO : 0;
out:
	free(a);
	free(b);
	maia_cmdbuf_destroy(cb);
	if (key)
		maia_fabric_window_close(dst_dev, key);
	maia_bo_destroy(src);
	maia_bo_destroy(dst);
	return err;
}

/* The 8-byte all-reduce beside the empty job's round trip (medians). */
static int bench_latency(struct maia_device **devs, struct maia_comm **comms,
			 struct rank_bufs *b, int n)
{
	unsigned int reps = 10 * opt.iters, k;
	double *lat_ar = calloc(reps, sizeof(double)), *lat_nop = calloc(reps, sizeof(double));
	double *lat_wr = calloc(reps, sizeof(double)), *lat_ring = calloc(reps, sizeof(double));
	struct maia_cmdbuf *cb = NULL;
	uint64_t wrong = 0;
	uint32_t key = 0;
	int err = lat_ar && lat_nop && lat_wr && lat_ring ? 0 : -ENOMEM, r;

	if (!err)
		err = maia_cmdbuf_create(devs[0], 4096, &cb);
	if (!err)
		err = maia_cmd_nop(cb);
	for (r = 0; r < n && !err; r++) {
		err = maia_bo_create(devs[r], 4096, MAIA_BO_HOST, &b[r].send);
		if (!err)
			err = maia_bo_create(devs[r], 4096, MAIA_BO_HOST, &b[r].recv);
		if (!err)
			err = maia_bo_map(b[r].send, &b[r].send_cpu);
		if (!err)
			err = maia_bo_map(b[r].recv, &b[r].recv_cpu);
		if (!err)
			for (k = 0; k < 2; k++)
				((float *)b[r].send_cpu)[k] = input_value(r, k);
	}
	/*
	 * The empty jobs first, then the all-reduces: a job through the kernel
	 * path waits for the user queue to drain (maia_submit()), so mixing
	 * them would charge that to the collective.
	 */
	for (k = 0; k < opt.warmup + reps && !err; k++) {
		double t0 = now_s();

		err = submit_wait(devs[0], cb);
		if (k >= opt.warmup)
			lat_nop[k - opt.warmup] = now_s() - t0;
	}
	/* The device's choice (gather-reduce) and the ring, alternately: the same minutes. */
	for (k = 0; k < 2 * (opt.warmup + reps) && !err; k++) {
		bool ring = k & 1;
		double t0;

		/* The results cleared and the algorithm chosen before the clock starts. */
		for (r = 0; r < n && !err; r++) {
			memset(b[r].recv_cpu, 0, 8);
			err = maia_comm_set_algorithm(comms[r], ring ? MAIA_COLL_ALGO_RING :
						      MAIA_COLL_ALGO_AUTO);
		}
		t0 = now_s();
		maia_group_start();
		for (r = 0; r < n && !err; r++)
			err = maia_all_reduce(comms[r], maia_bo_va(b[r].send), maia_bo_va(b[r].recv),
					      2, MAIA_DTYPE_FP32, MAIA_REDOP_SUM);
		if (maia_group_end() && !err)
			err = -EIO;
		for (r = 0; r < n && !err; r++)
			err = maia_comm_sync(comms[r], WAIT_NS);
		if (k / 2 >= opt.warmup)
			(ring ? lat_ring : lat_ar)[k / 2 - opt.warmup] = now_s() - t0;
		for (r = 0; r < n && !err; r++)
			for (unsigned int i = 0; i < 2; i++)
				wrong += ((float *)b[r].recv_cpu)[i] !=
					 expected(MAIA_COLL_ALL_REDUCE, MAIA_REDOP_SUM, n, r, 2, i);
	}
	for (r = 0; r < n && !err; r++)
		err = maia_comm_set_algorithm(comms[r], MAIA_COLL_ALGO_AUTO);
	/*
	 * The wire's own round trip in the same run: an 8-byte remote write
	 * from device 0 into device 1 (one frame there, its answer back).
	 */
	if (!err)
		err = maia_fabric_window_open(b[1].recv, 0, 4096, MAIA_FABRIC_REMOTE_WRITE, &key);
	if (!err) {
		maia_cmdbuf_reset(cb);
		err = maia_cmd_fabric_write(cb, 0, key, 8, maia_bo_va(b[0].send), 8);
	}
	for (k = 0; k < opt.warmup + reps && !err; k++) {
		double t0 = now_s();

		err = submit_wait(devs[0], cb);
		if (k >= opt.warmup)
			lat_wr[k - opt.warmup] = now_s() - t0;
	}
	if (!err)
		wrong += memcmp((uint8_t *)b[1].recv_cpu + 8, b[0].send_cpu, 8) != 0;
	if (key)
		maia_fabric_window_close(devs[1], key);
	if (err) {
		fprintf(stderr, "maia-coll-perf: latency: %s (%s)\n", maia_last_error(),
			maia_strerror(err));
	} else {
		char name[64];

		qsort(lat_ar, reps, sizeof(double), cmp_double);
		qsort(lat_nop, reps, sizeof(double), cmp_double);
		qsort(lat_wr, reps, sizeof(double), cmp_double);
		qsort(lat_ring, reps, sizeof(double), cmp_double);
		if (!opt.json)
			printf("# 8-byte all-reduce over %d devices: median %.0f us (gather-reduce), "
			       "%.0f us (ring); empty job on device %d: median %.0f us; 8-byte remote "
			       "write %d -> %d: median %.0f us; #wrong %" PRIu64 "\n", n,
			       lat_ar[reps / 2] * 1e6, lat_ring[reps / 2] * 1e6, opt.first_dev,
			       lat_nop[reps / 2] * 1e6, opt.first_dev, opt.first_dev + 1,
			       lat_wr[reps / 2] * 1e6, wrong);
		snprintf(name, sizeof(name), "coll_all_reduce_8B_latency_n%d", n);
		print_ratio(name, "us", false, lat_ar[reps / 2] * 1e6, "empty_job_latency",
			    lat_nop[reps / 2] * 1e6, lat_ar[reps / 2] / lat_nop[reps / 2]);
		/* What gather-reduce saves: the ring's 2(n-1) hops instead of n-1. */
		snprintf(name, sizeof(name), "coll_all_reduce_8B_latency_ring_n%d", n);
		print_ratio(name, "us", false, lat_ring[reps / 2] * 1e6, "gather_reduce_latency",
			    lat_ar[reps / 2] * 1e6, lat_ring[reps / 2] / lat_ar[reps / 2]);
		/* What one hop and its answer cost: the floor under the line above. */
		print_ratio("fabric_write_8B_latency_guest", "us", false, lat_wr[reps / 2] * 1e6,
			    "empty_job_latency", lat_nop[reps / 2] * 1e6,
			    lat_wr[reps / 2] / lat_nop[reps / 2]);
		err = wrong ? -EIO : 0;
	}
	maia_cmdbuf_destroy(cb);
	free(lat_ar);
	free(lat_nop);
	free(lat_wr);
	free(lat_ring);
	return err;
}

static int fabric_bench(struct maia_device **devs, struct maia_comm **comms,
			struct rank_bufs *b, int n)
{
	if (n < 2 || opt.rank >= 0) {
		fprintf(stderr, "maia-coll-perf: --fabric-bench needs 2 or more local devices\n");
		return -EINVAL;
	}
	return bench_latency(devs, comms, b, n) || bench_write(devs[0], devs[1]) ? -EIO : 0;
}

/* The communicator id from --id (hex) or the first line of --id-file. */
static int read_id(struct maia_comm_id *id)
{
	char line[2 * MAIA_COMM_ID_BYTES + 16] = "";
	const char *hex = opt.id_hex;
	size_t i;

	if (!hex) {
		FILE *f = fopen(opt.id_file, "re");

		if (!f || !fgets(line, sizeof(line), f)) {
			fprintf(stderr, "maia-coll-perf: cannot read an id from %s\n", opt.id_file);
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
		hex = line;
	}
	memset(id, 0, sizeof(*id));
	for (i = 0; i < MAIA_COMM_ID_BYTES; i++) {
		unsigned int byte;

		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -1;
		id->bytes[i] = (uint8_t)byte;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: maia-coll-perf [--ndev N] [--first-dev F] [--op all_reduce|"
		"all_gather|reduce_scatter|broadcast|all_to_all|all]\n"
		"       [--dtype fp32|bf16|all] [--redop sum|max|min|all] [--min-bytes B]\n"
		"       [--max-bytes B] [--step-factor F] [--sizes B,B,...] [--iters N]\n"
		"       [--warmup N] [--json]\n"
		"       [--rank R --nranks N --id HEX|--id-file PATH] [--fabric-bench] [--fence]\n"
		"       [--stagger-ms MS] [--mem hbm|host]\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	else if (*end == 'G' || *end == 'g')
		v <<= 30;
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ndev", required_argument, NULL, 'n' },
		{ "first-dev", required_argument, NULL, 'D' },
		{ "op", required_argument, NULL, 'o' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "redop", required_argument, NULL, 'r' },
		{ "min-bytes", required_argument, NULL, 'b' },
		{ "max-bytes", required_argument, NULL, 'e' },
		{ "step-factor", required_argument, NULL, 'f' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "rank", required_argument, NULL, 'R' },
		{ "nranks", required_argument, NULL, 'N' },
		{ "id", required_argument, NULL, 'I' },
		{ "id-file", required_argument, NULL, 'F' },
		{ "fabric-bench", no_argument, NULL, 'B' },
		{ "fence", no_argument, NULL, 'E' },
		{ "stagger-ms", required_argument, NULL, 'G' },
		{ "mem", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct maia_device *devs[MAX_DEV] = { 0 };
	struct maia_comm *comms[MAX_DEV] = { 0 };
	struct rank_bufs bufs[MAX_DEV] = { 0 };
	uint64_t wrong = 0, bytes;
	char devices[48] = "";
	int c, n, nlocal, r, failed = 0;
	unsigned int o, d, rd;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.ndev = atoi(optarg); break;
		case 'D': opt.first_dev = atoi(optarg); break;
		case 'o': opt.op = optarg; break;
		case 'd': opt.dtype = optarg; break;
		case 'r': opt.redop = optarg; break;
		case 'b': opt.min_bytes = parse_size(optarg); break;
		case 'e': opt.max_bytes = parse_size(optarg); break;
		case 'f': opt.step = (unsigned int)atoi(optarg); break;
		case 'i': opt.iters = (unsigned int)atoi(optarg); break;
		case 'w': opt.warmup = (unsigned int)atoi(optarg); break;
		case 'j': opt.json = true; break;
		case 'S':
			for (char *t = strtok(optarg, ","); t && opt.nsizes < 32; t = strtok(NULL, ","))
				opt.sizes[opt.nsizes++] = parse_size(t);
			break;
		case 'R': opt.rank = atoi(optarg); break;
		case 'N': opt.nranks = atoi(optarg); break;
		case 'I': opt.id_hex = optarg; break;
		case 'F': opt.id_file = optarg; break;
		case 'B': opt.fabric_bench = true; break;
		case 'E': opt.fence = true; break;
		case 'G': opt.stagger_ms = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'M':
			if (strcmp(optarg, "hbm") && strcmp(optarg, "host")) {
				usage();
				return 2;
			}
			opt.mem = strcmp(optarg, "hbm") ? MAIA_BO_HOST : MAIA_BO_HBM;
			break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (opt.rank >= 0) {
		n = opt.nranks;
		nlocal = 1;
		if (n < 1 || opt.rank >= n || (!opt.id_hex == !opt.id_file)) {
			usage();
			return 2;
		}
	} else {
		int count = maia_device_count();

		n = nlocal = opt.ndev ? opt.ndev : count - opt.first_dev;
		if (!opt.ndev && opt.first_dev > 0 && n < 1) {
			fprintf(stderr, "maia-coll-perf: --first-dev %d: there are %d Maia devices\n",
				opt.first_dev, count);
			return 1;
		}
	}
	if (opt.first_dev < 0) {
		usage();
		return 2;
	}
	if (opt.nsizes) {
		opt.max_bytes = 0;
		for (unsigned int k = 0; k < opt.nsizes; k++)
			if (opt.sizes[k] > opt.max_bytes)
				opt.max_bytes = opt.sizes[k];
		opt.min_bytes = 0;
	}
	if (n < 1 || nlocal > MAX_DEV || opt.step < 2 || !opt.iters ||
	    opt.min_bytes > opt.max_bytes) {
		usage();
		return 2;
	}
	for (r = 0; r < nlocal; r++) {
		if (maia_device_open(opt.first_dev + r, &devs[r])) {
			fprintf(stderr, "maia-coll-perf: device %d: %s\n", opt.first_dev + r,
				maia_last_error());
			return 1;
		}
	}
	if (opt.rank >= 0) {
		struct maia_comm_id id;

		if (read_id(&id) || maia_comm_init_rank(&comms[0], devs[0], n, &id, opt.rank)) {
			fprintf(stderr, "maia-coll-perf: rank %d: %s\n", opt.rank,
				maia_last_error()[0] ? maia_last_error() : "bad id");
			return 1;
		}
	} else if (maia_comm_init_all(comms, devs, n)) {
		fprintf(stderr, "maia-coll-perf: %s\n", maia_last_error());
		return 1;
	}
	/* Say which devices only when --first-dev moved them: the default output stays. */
	if (opt.first_dev && nlocal > 1)
		snprintf(devices, sizeof(devices), " (devices %d..%d)", opt.first_dev,
			 opt.first_dev + nlocal - 1);
	else if (opt.first_dev)
		snprintf(devices, sizeof(devices), " (device %d)", opt.first_dev);
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]) && !opt.fabric_bench; o++) {
		bool reduces = ops[o].coll == MAIA_COLL_ALL_REDUCE ||
			       ops[o].coll == MAIA_COLL_REDUCE_SCATTER;

		if (strcmp(opt.op, "all") && strcmp(opt.op, ops[o].name))
			continue;
		for (d = 0; d < 2; d++) {
			unsigned int dtype = d ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32;
			uint64_t max_elems = opt.max_bytes / (d ? 2 : 4), sc, rc;

			/* The larger of one rank's send and receive buffers. */
			counts(ops[o].coll, max_elems, n, &sc, &rc);
			max_elems = sc > rc ? sc : rc;

			if (strcmp(opt.dtype, "all") && strcmp(opt.dtype, d ? "bf16" : "fp32"))
				continue;
			for (r = 0; r < nlocal; r++) {
				maia_bo_destroy(bufs[r].send);
				maia_bo_destroy(bufs[r].recv);
				if (maia_bo_create(devs[r], max_elems * 4 + 4096, opt.mem,
						   &bufs[r].send) ||
				    maia_bo_create(devs[r], max_elems * 4 + 4096, opt.mem,
						   &bufs[r].recv) ||
				    maia_bo_map(bufs[r].send, &bufs[r].send_cpu) ||
				    maia_bo_map(bufs[r].recv, &bufs[r].recv_cpu)) {
					fprintf(stderr, "maia-coll-perf: %s\n", maia_last_error());
					return 1;
				}
			}
			for (rd = 0; rd < 3; rd++) {
				static const char *const rn[] = { "sum", "max", "min" };

				if (!reduces && rd)
					break;
				if (reduces && strcmp(opt.redop, "all") && strcmp(opt.redop, rn[rd]))
					continue;
				if (!opt.json)
					printf("# %s %s%s%s, %d ranks%s, buffers in %s\n#%11s %12s %6s "
					       "%4s %10s %8s %8s %8s\n", ops[o].name, d ? "bf16" : "fp32",
					       reduces ? " " : "", reduces ? rn[rd] : "", n, devices,
					       opt.mem == MAIA_BO_HBM ? "hbm" : "host", "size",
					       "count", "type", "op", "time(us)", "algbw", "busbw",
					       "#wrong");
				for (unsigned int k = 0; opt.nsizes && k < opt.nsizes; k++)
					if (run_one(comms, bufs, n, nlocal, ops[o].coll, ops[o].name,
						    dtype, rd, opt.sizes[k], &wrong))
						failed = 1;
				for (bytes = opt.min_bytes; !opt.nsizes && bytes <= opt.max_bytes;
				     bytes = bytes ? bytes * opt.step : 1)
					if (run_one(comms, bufs, n, nlocal, ops[o].coll, ops[o].name,
						    dtype, rd, bytes, &wrong))
						failed = 1;
			}
		}
	}
	if (opt.fabric_bench && fabric_bench(devs, comms, bufs, n))
		failed = 1;
	for (r = 0; r < nlocal; r++) {
		maia_comm_destroy(comms[r]);
		maia_bo_destroy(bufs[r].send);
		maia_bo_destroy(bufs[r].recv);
		maia_device_close(devs[r]);
	}
	if (!opt.json)
		printf("# %s: %" PRIu64 " wrong elements\n", failed ? "FAILED" : "done", wrong);
	return failed || wrong ? 1 : 0;
}
