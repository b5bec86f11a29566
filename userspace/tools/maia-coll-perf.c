// SPDX-License-Identifier: MIT
/*
 * maia-coll-perf: collective correctness and bandwidth over the devices of
 * this machine, in the manner of nccl-tests.
 *
 *   maia-coll-perf [--ndev N] [--op OP|all] [--dtype fp32|bf16|all]
 *                  [--redop sum|max|min|all] [--min-bytes B] [--max-bytes B]
 *                  [--step-factor F] [--iters N] [--warmup N] [--json]
 *                  [--rank R --nranks N --id HEX|--id-file PATH]
 *
 * With --rank, this process is one rank of a communicator spread over
 * processes (one per machine or QEMU instance): it uses device 0, joins with
 * maia_comm_init_rank() and the id from --id (hex, from maia-comm-id) or the
 * first line of --id-file (a file or a virtio-serial port), and checks only
 * its own results.
 *
 * Devices 0..N-1 (default: every Maia device) become ranks 0..N-1 of one
 * communicator (maia_comm_init_all: they must be cabled as a ring in that
 * order, qemu/run-guest --fabric ring). For each size from --min-bytes to
 * --max-bytes (multiplied by --step-factor), every rank's buffers are filled
 * with small integers, so that every reduction order gives the same exact
 * result in FP32 and BF16, the collective runs --iters times (after
 * --warmup), and the results are compared with the CPU's. Each line gives
 * size, count, time per collective, algbw = bytes / time and busbw as
 * nccl-tests defines it (all-reduce x 2(n-1)/n; all-gather, reduce-scatter,
 * all-to-all x (n-1)/n; broadcast x 1), and #wrong, the elements that
 * differ. Exit status 1 if any element was wrong or a collective failed.
 * --json prints one JSON object per size instead (tests/run-bench).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libmaia.h"

#define MAX_DEV		16
#define WAIT_NS		(120ll * 1000000000ll)

static struct {
	int ndev;
	const char *op, *dtype, *redop;
	uint64_t min_bytes, max_bytes;
	unsigned int step, iters, warmup;
	bool json;
	int rank, nranks;		/* --rank: one rank of many processes */
	const char *id_hex, *id_file;
} opt = {
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

/* Rank r's input element i: 1..16, so n <= 16 ranks sum exactly even in BF16. */
static float input_value(int r, uint64_t i)
{
	return (float)(1 + (uint64_t)(r * 5 + (int)(i % 97) * 3) % 16);
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
static int run_one(struct maia_comm **comms, struct rank_bufs *b, int n, int nlocal,
		   unsigned int coll, const char *opname, unsigned int dtype, unsigned int redop,
		   uint64_t bytes, uint64_t *wrong_total)
{
	unsigned int esize = dtype == MAIA_DTYPE_FP32 ? 4 : 2;
	uint64_t count = bytes / esize, scount, rcount, wrong = 0, i;
	double t0, dt, algbw, busbw;
	unsigned int it;
	int r, err = 0;

	counts(coll, count, n, &scount, &rcount);
	for (r = 0; r < nlocal; r++) {
		for (i = 0; i < scount; i++)
			put(b[r].send_cpu, dtype, i, input_value(grank(r), i));
		memset(b[r].recv_cpu, 0xff, rcount * esize);
	}
	t0 = 0;
	for (it = 0; it < opt.warmup + opt.iters && !err; it++) {
		if (it == opt.warmup)
			t0 = now_s();
		maia_group_start();
		for (r = 0; r < nlocal && !err; r++) {
			uint64_t s = maia_bo_va(b[r].send), d = maia_bo_va(b[r].recv);

			switch (coll) {
			case MAIA_COLL_ALL_REDUCE:
				err = maia_all_reduce(comms[r], s, d, count, dtype, redop);
				break;
			case MAIA_COLL_ALL_GATHER:
				err = maia_all_gather(comms[r], s, d, count, dtype);
				break;
			case MAIA_COLL_REDUCE_SCATTER:
				err = maia_reduce_scatter(comms[r], s, d, count, dtype, redop);
				break;
			case MAIA_COLL_BROADCAST:
				err = maia_broadcast(comms[r], s, d, count, dtype, 0);
				break;
			default:
				err = maia_all_to_all(comms[r], s, d, count, dtype);
				break;
			}
		}
		if (maia_group_end() && !err)
			err = -EIO;
	}
	for (r = 0; r < nlocal; r++) {
		int e = maia_comm_sync(comms[r], WAIT_NS);

		if (e && !err)
			err = e;
	}
	dt = (now_s() - t0) / opt.iters;
	if (err) {
		fprintf(stderr, "maia-coll-perf: %s %s %" PRIu64 " bytes: %s\n", opname,
			dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16", bytes, maia_last_error());
		return err;
	}
	for (r = 0; r < nlocal; r++)
		for (i = 0; i < rcount; i++)
			if (get(b[r].recv_cpu, dtype, i) !=
			    expected(coll, redop, n, grank(r), count, i))
				wrong++;
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
	fprintf(stderr, "usage: maia-coll-perf [--ndev N] [--op all_reduce|all_gather|"
		"reduce_scatter|broadcast|all_to_all|all]\n"
		"       [--dtype fp32|bf16|all] [--redop sum|max|min|all] [--min-bytes B]\n"
		"       [--max-bytes B] [--step-factor F] [--iters N] [--warmup N] [--json]\n"
		"       [--rank R --nranks N --id HEX|--id-file PATH]\n");
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
		{ "op", required_argument, NULL, 'o' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "redop", required_argument, NULL, 'r' },
		{ "min-bytes", required_argument, NULL, 'b' },
		{ "max-bytes", required_argument, NULL, 'e' },
		{ "step-factor", required_argument, NULL, 'f' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "rank", required_argument, NULL, 'R' },
		{ "nranks", required_argument, NULL, 'N' },
		{ "id", required_argument, NULL, 'I' },
		{ "id-file", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct maia_device *devs[MAX_DEV] = { 0 };
	struct maia_comm *comms[MAX_DEV] = { 0 };
	struct rank_bufs bufs[MAX_DEV] = { 0 };
	uint64_t wrong = 0, bytes;
	int c, n, nlocal, r, failed = 0;
	unsigned int o, d, rd;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.ndev = atoi(optarg); break;
		case 'o': opt.op = optarg; break;
		case 'd': opt.dtype = optarg; break;
		case 'r': opt.redop = optarg; break;
		case 'b': opt.min_bytes = parse_size(optarg); break;
		case 'e': opt.max_bytes = parse_size(optarg); break;
		case 'f': opt.step = (unsigned int)atoi(optarg); break;
		case 'i': opt.iters = (unsigned int)atoi(optarg); break;
		case 'w': opt.warmup = (unsigned int)atoi(optarg); break;
		case 'j': opt.json = true; break;
		case 'R': opt.rank = atoi(optarg); break;
		case 'N': opt.nranks = atoi(optarg); break;
		case 'I': opt.id_hex = optarg; break;
		case 'F': opt.id_file = optarg; break;
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
		n = nlocal = opt.ndev ? opt.ndev : maia_device_count();
	}
	if (n < 1 || nlocal > MAX_DEV || opt.step < 2 || !opt.iters ||
	    opt.min_bytes > opt.max_bytes) {
		usage();
		return 2;
	}
	for (r = 0; r < nlocal; r++) {
		if (maia_device_open(r, &devs[r])) {
			fprintf(stderr, "maia-coll-perf: device %d: %s\n", r, maia_last_error());
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
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		bool reduces = ops[o].coll == MAIA_COLL_ALL_REDUCE ||
			       ops[o].coll == MAIA_COLL_REDUCE_SCATTER;

		if (strcmp(opt.op, "all") && strcmp(opt.op, ops[o].name))
			continue;
		for (d = 0; d < 2; d++) {
			unsigned int dtype = d ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32;
			/* Only the gathering and scattering ops need n blocks. */
			uint64_t max_elems = opt.max_bytes / (d ? 2 : 4) *
					     (strcmp(opt.op, "all_reduce") &&
					      strcmp(opt.op, "broadcast") ? (uint64_t)n : 1);

			if (strcmp(opt.dtype, "all") && strcmp(opt.dtype, d ? "bf16" : "fp32"))
				continue;
			for (r = 0; r < nlocal; r++) {
				maia_bo_destroy(bufs[r].send);
				maia_bo_destroy(bufs[r].recv);
				if (maia_bo_create(devs[r], max_elems * 4 + 4096, MAIA_BO_HOST,
						   &bufs[r].send) ||
				    maia_bo_create(devs[r], max_elems * 4 + 4096, MAIA_BO_HOST,
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
					printf("# %s %s%s%s, %d ranks\n#%11s %12s %6s %4s %10s %8s %8s "
					       "%8s\n", ops[o].name, d ? "bf16" : "fp32",
					       reduces ? " " : "", reduces ? rn[rd] : "", n, "size",
					       "count", "type", "op", "time(us)", "algbw", "busbw",
					       "#wrong");
				for (bytes = opt.min_bytes; bytes <= opt.max_bytes;
				     bytes = bytes ? bytes * opt.step : 1)
					if (run_one(comms, bufs, n, nlocal, ops[o].coll, ops[o].name,
						    dtype, rd, bytes, &wrong))
						failed = 1;
			}
		}
	}
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
