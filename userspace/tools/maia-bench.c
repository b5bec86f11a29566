// SPDX-License-Identifier: MIT
/*
 * maia-bench: job submission and DMA figures of a Maia device through
 * libmaia, one JSON object per line (bench-util.h).
 *
 *   maia-bench [--device N] [--iters N] [--repeat R] [--depth D]
 *              [--dma-size MIB] [--chunk MIB] [--dma-jobs J] [--baseline FILE]
 *              [--only submit|dma] [--submit-path both|auto|kernel]
 *
 * Submission: a one-NOP job, submit -> wait returned, at depth 1 and with D
 * jobs kept in flight (wait for the oldest seqno, submit the next); latency
 * p50/p99 and jobs per second, medians over R repeats. The kernel queue's
 * ping (no scheduler) is reported beside it to split the cost. The jobs go
 * the way libmaia sends them (maia_nop_job_*: a user queue when the driver
 * has them), then through the SUBMIT ioctl (maia_ioctl_nop_job_*), in the
 * same run; --submit-path picks one.
 *
 * DMA: host->HBM, HBM->host and HBM->HBM copies of --dma-size bytes in
 * --chunk commands, one job each, J jobs per repeat; GB/s (1e9 B/s) median
 * over all jobs, beside memcpy() of the same size in this process. The data
 * is checked after the runs (host -> HBM -> HBM -> host equals the source).
 *
 * --baseline FILE takes nvme-bench's JSON lines and sets each submission
 * figure beside the matching block-read figure ("qemu-nvme").
 */
#include <errno.h>
#include <getopt.h>

#include "bench-util.h"
#include "drm/maia_accel.h"
#include "libmaia.h"

#define WAIT_NS		(10ll * 1000000000ll)	/* a job that takes longer is a failure */
#define MAX_DEPTH	1024u
#define MIB		(1024ull * 1024ull)

static struct {
	int device;
	unsigned int iters, repeat, depth, dma_jobs;
	uint64_t dma_size, chunk;
	const char *baseline_file;
	const char *only;
	const char *submit_path;
} opt = {
	.iters = 500, .repeat = 3, .depth = 64, .dma_jobs = 3,
	.dma_size = 64 * MIB, .chunk = 4 * MIB, .submit_path = "both",
};

/* ---- baselines from nvme-bench ----------------------------------------- */

#define MAX_BASELINES	64

static struct baseline {
	char name[64];
	double value;
} baselines[MAX_BASELINES];
static unsigned int num_baselines;

/* Reads the name and value of each JSON line; other lines are ignored. */
static int load_baselines(const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "maia-bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && num_baselines < MAX_BASELINES) {
		struct baseline *b = &baselines[num_baselines];
		const char *n = strstr(line, "\"name\":\""), *v = strstr(line, "\"value\":");
		size_t len;

		if (!n || !v)
			continue;
		n += strlen("\"name\":\"");
		len = strcspn(n, "\"");
		if (len >= sizeof(b->name))
			continue;
		memcpy(b->name, n, len);
		b->name[len] = '\0';
		b->value = strtod(v + strlen("\"value\":"), NULL);
		num_baselines++;
	}
	fclose(f);
	return 0;
}

static double baseline_value(const char *name)
{
	unsigned int i;

	for (i = 0; i < num_baselines; i++)
		if (!strcmp(baselines[i].name, name))
			return baselines[i].value;
	return 0;
}

/* ---- submission ---------------------------------------------------------- */

static int check_job(uint64_t seqno, const struct maia_job_status *st)
{
	if (st->status == DRM_MAIA_JOB_OK)
		return 0;
	fprintf(stderr, "maia-bench: job %llu: %s, device status %u\n",
		(unsigned long long)seqno, maia_job_status_name(st->status), st->device_status);
	return -EIO;
}

/* Submit and wait for one job; the time the submit ioctl took into submit_ns. */
static int submit_wait(struct maia_device *dev, struct maia_cmdbuf *cb, uint64_t *submit_ns)
{
	uint64_t seqno, t0 = bench_now_ns();
	struct maia_job_status st;
	int err;

	err = maia_submit(dev, cb, NULL, &seqno);
	if (submit_ns)
		*submit_ns = bench_now_ns() - t0;
	if (!err)
		err = maia_wait(dev, seqno, WAIT_NS, &st);
	if (!err)
		err = check_job(seqno, &st);
	if (err && err != -EIO)
		fprintf(stderr, "maia-bench: %s: %s\n", maia_strerror(err), maia_last_error());
	return err;
}

/*
 * n jobs one at a time; latencies (us) into lat, the submit ioctl's share
 * into submit; returns jobs/s or < 0.
 */
static double run_qd1(struct maia_device *dev, struct maia_cmdbuf *cb, unsigned int n,
		      struct bench_samples *lat, struct bench_samples *submit)
{
	uint64_t start = bench_now_ns(), t0, submit_ns;
	unsigned int i;

	for (i = 0; i < n; i++) {
		t0 = bench_now_ns();
		if (submit_wait(dev, cb, &submit_ns))
			return -1;
		bench_add(lat, (double)(bench_now_ns() - t0) / 1e3);
		bench_add(submit, (double)submit_ns / 1e3);
	}
	return n / ((double)(bench_now_ns() - start) / 1e9);
}

/*
 * n jobs with depth in flight: the slots form a ring in submission order;
 * wait for the oldest, record its submit -> wait-returned time, reuse its
 * slot for the next job.
 */
static double run_qdn(struct maia_device *dev, struct maia_cmdbuf *cb, unsigned int depth,
		      unsigned int n, struct bench_samples *lat)
{
	uint64_t seqno[MAX_DEPTH], issued_at[MAX_DEPTH], start = bench_now_ns(), now;
	unsigned int issued = 0, done = 0, slot;
	struct maia_job_status st;
	int err;

	for (slot = 0; slot < depth && issued < n; slot++, issued++) {
		issued_at[slot] = bench_now_ns();
		err = maia_submit(dev, cb, NULL, &seqno[slot]);
		if (err)
			goto fail;
	}
	for (slot = 0; done < n; slot = (slot + 1) % depth) {
		err = maia_wait(dev, seqno[slot], WAIT_NS, &st);
		if (!err)
			err = check_job(seqno[slot], &st);
		if (err)
			goto fail;
		now = bench_now_ns();
		bench_add(lat, (double)(now - issued_at[slot]) / 1e3);
		done++;
		if (issued < n) {
			issued_at[slot] = now;
			err = maia_submit(dev, cb, NULL, &seqno[slot]);
			if (err)
				goto fail;
			issued++;
		}
	}
	return n / ((double)(bench_now_ns() - start) / 1e9);
fail:
	fprintf(stderr, "maia-bench: depth %u: %s: %s\n", depth, maia_strerror(err),
		maia_last_error());
	return -1;
}

static void emit_paired(const char *name, double value, const char *unit, bool higher,
			const char *nvme_name)
{
	bench_emit(name, value, unit, higher, "qemu-nvme", baseline_value(nvme_name));
}

static void emit_depth(const char *prefix, unsigned int depth, struct bench_samples *p50,
		       struct bench_samples *p99, struct bench_samples *rate)
{
	char name[80], nvme[64];

	snprintf(name, sizeof(name), "%s_qd%u_latency_p50", prefix, depth);
	snprintf(nvme, sizeof(nvme), "nvme_read4k_qd%u_latency_p50", depth);
	emit_paired(name, bench_median(p50), "us", false, nvme);
	snprintf(name, sizeof(name), "%s_qd%u_latency_p99", prefix, depth);
	snprintf(nvme, sizeof(nvme), "nvme_read4k_qd%u_latency_p99", depth);
	emit_paired(name, bench_median(p99), "us", false, nvme);
	snprintf(name, sizeof(name), "%s_qd%u_jobs_per_s", prefix, depth);
	snprintf(nvme, sizeof(nvme), "nvme_read4k_qd%u_iops", depth);
	emit_paired(name, bench_median(rate), "jobs/s", true, nvme);
}

static int bench_ping(struct maia_device *dev)
{
	struct bench_samples user = { 0 }, kernel = { 0 };
	struct maia_ping_result r;
	unsigned int i;
	uint64_t t0;
	int err = 0;

	for (i = 0; i < opt.iters && !err; i++) {
		t0 = bench_now_ns();
		err = maia_ping(dev, i, &r);
		if (!err && r.echo != i)
			err = -EIO;
		if (err)
			break;
		bench_add(&user, (double)(bench_now_ns() - t0) / 1e3);
		bench_add(&kernel, (double)r.round_trip_ns / 1e3);
	}
	if (err)
		fprintf(stderr, "maia-bench: ping: %s\n", maia_strerror(err));
	else {
		bench_emit("maia_ping_ioctl_latency_p50", bench_median(&user), "us", false, NULL, 0);
		bench_emit("maia_ping_doorbell_to_irq_p50", bench_median(&kernel), "us", false,
			   NULL, 0);
	}
	bench_free(&user);
	bench_free(&kernel);
	return err;
}

static int bench_submit(struct maia_device *dev, const char *prefix)
{
	struct bench_samples p50[2] = { 0 }, p99[2] = { 0 }, rate[2] = { 0 }, lat = { 0 };
	struct bench_samples submit = { 0 };
	struct maia_cmdbuf *cb;
	unsigned int rep, i;
	double r;
	int err;

	err = maia_cmdbuf_create(dev, 4096, &cb);
	if (!err)
		err = maia_cmd_nop(cb);
	if (err) {
		fprintf(stderr, "maia-bench: command buffer: %s\n", maia_strerror(err));
		return err;
	}
	/* Warm-up: first jobs fault in the scheduler's and the driver's paths. */
	for (i = 0; i < 16 && !err; i++)
		err = submit_wait(dev, cb, NULL);
	for (rep = 0; rep < opt.repeat && !err; rep++) {
		r = run_qd1(dev, cb, opt.iters, &lat, &submit);
		if (r < 0) {
			err = -EIO;
			break;
		}
		bench_add(&rate[0], r);
		fprintf(stderr, "maia-bench: %s depth 1: latency p10 %.0f p50 %.0f p90 %.0f p99 %.0f us\n",
			prefix, bench_percentile(&lat, 10), bench_percentile(&lat, 50),
			bench_percentile(&lat, 90), bench_percentile(&lat, 99));
		bench_add(&p50[0], bench_percentile(&lat, 50));
		bench_add(&p99[0], bench_percentile(&lat, 99));
		lat.n = 0;

		r = run_qdn(dev, cb, opt.depth, opt.iters * 10, &lat);
		if (r < 0) {
			err = -EIO;
			break;
		}
		bench_add(&rate[1], r);
		bench_add(&p50[1], bench_percentile(&lat, 50));
		bench_add(&p99[1], bench_percentile(&lat, 99));
		lat.n = 0;
	}
	if (!err) {
		char name[80];

		emit_depth(prefix, 1, &p50[0], &p99[0], &rate[0]);
		/* How much of the depth-1 latency is the submit call alone. */
		snprintf(name, sizeof(name), "%s_qd1_submit_call_p50", prefix);
		bench_emit(name, bench_median(&submit), "us", false, NULL, 0);
		emit_depth(prefix, opt.depth, &p50[1], &p99[1], &rate[1]);
	}
	bench_free(&submit);
	for (i = 0; i < 2; i++) {
		bench_free(&p50[i]);
		bench_free(&p99[i]);
		bench_free(&rate[i]);
	}
	bench_free(&lat);
	maia_cmdbuf_destroy(cb);
	return err;
}

/* ---- DMA ------------------------------------------------------------------- */

/* A command buffer copying size bytes from src to dst in chunk-sized commands. */
static int build_copy(struct maia_cmdbuf *cb, uint64_t dst, uint64_t src)
{
	uint64_t off, len;
	int err = 0;

	maia_cmdbuf_reset(cb);
	for (off = 0; off < opt.dma_size && !err; off += len) {
		len = opt.dma_size - off < opt.chunk ? opt.dma_size - off : opt.chunk;
		err = maia_cmd_copy(cb, dst + off, src + off, len);
	}
	return err;
}

/* Runs cb repeat * dma_jobs times; emits the median GB/s beside memcpy's. */
static int time_copies(struct maia_device *dev, struct maia_cmdbuf *cb, const char *name,
		       double memcpy_gbs)
{
	struct bench_samples gbs = { 0 };
	unsigned int i;
	uint64_t t0;
	int err = submit_wait(dev, cb, NULL);	/* warm-up: first touch of the pages on both sides */

	for (i = 0; i < opt.repeat * opt.dma_jobs && !err; i++) {
		t0 = bench_now_ns();
		err = submit_wait(dev, cb, NULL);
		bench_add(&gbs, (double)opt.dma_size / (double)(bench_now_ns() - t0));
	}
	if (!err)
		bench_emit(name, bench_median(&gbs), "GB/s", true, "guest-memcpy", memcpy_gbs);
	bench_free(&gbs);
	return err;
}

static double bench_memcpy(void)
{
	struct bench_samples gbs = { 0 };
	char *src = malloc(opt.dma_size), *dst = malloc(opt.dma_size);
	double median = -1;
	unsigned int i;
	uint64_t t0;

	if (src && dst) {
		memset(src, 0x5a, opt.dma_size);
		memset(dst, 0, opt.dma_size);
		for (i = 0; i < opt.repeat * opt.dma_jobs; i++) {
			t0 = bench_now_ns();
			memcpy(dst, src, opt.dma_size);
			/* Keep the copy observable so it cannot be elided. */
			__asm__ volatile("" : : "r"(dst) : "memory");
			bench_add(&gbs, (double)opt.dma_size / (double)(bench_now_ns() - t0));
		}
		median = bench_median(&gbs);
		bench_emit("guest_memcpy", median, "GB/s", true, NULL, 0);
	}
	bench_free(&gbs);
	free(src);
	free(dst);
	return median;
}

static int bench_dma(struct maia_device *dev)
{
	struct maia_bo *host = NULL, *back = NULL, *hbm = NULL, *hbm2 = NULL;
	uint32_t *src_cpu, *back_cpu;
	void *p, *q;
	struct maia_cmdbuf *cb = NULL;
	double memcpy_gbs;
	uint64_t i, words = opt.dma_size / 4;
	int err;

	memcpy_gbs = bench_memcpy();
	if (memcpy_gbs <= 0)
		return -ENOMEM;
	err = maia_bo_create(dev, opt.dma_size, MAIA_BO_HOST, &host);
	if (!err)
		err = maia_bo_create(dev, opt.dma_size, MAIA_BO_HOST, &back);
	if (!err)
		err = maia_bo_create(dev, opt.dma_size, MAIA_BO_HBM, &hbm);
	if (!err)
		err = maia_bo_create(dev, opt.dma_size, MAIA_BO_HBM, &hbm2);
	if (!err)
		err = maia_bo_map(host, &p);
	if (!err)
		err = maia_bo_map(back, &q);
	if (!err)
		err = maia_cmdbuf_create(dev, 64 * 1024, &cb);
	if (err) {
		fprintf(stderr, "maia-bench: DMA buffers of %llu MiB: %s: %s\n",
			(unsigned long long)(opt.dma_size / MIB), maia_strerror(err),
			maia_last_error());
		goto out;
	}
	/* A pattern that differs in every word, so a misplaced chunk shows. */
	src_cpu = p;
	back_cpu = q;
	for (i = 0; i < words; i++)
		src_cpu[i] = (uint32_t)(i * 2654435761u) ^ 0xa5a5a5a5u;
	memset(back_cpu, 0, opt.dma_size);

	err = build_copy(cb, maia_bo_va(hbm), maia_bo_va(host));
	if (!err)
		err = time_copies(dev, cb, "maia_dma_host_to_hbm", memcpy_gbs);
	if (!err)
		err = build_copy(cb, maia_bo_va(hbm2), maia_bo_va(hbm));
	if (!err)
		err = time_copies(dev, cb, "maia_dma_hbm_to_hbm", memcpy_gbs);
	if (!err)
		err = build_copy(cb, maia_bo_va(back), maia_bo_va(hbm2));
	if (!err)
		err = time_copies(dev, cb, "maia_dma_hbm_to_host", memcpy_gbs);
	if (err) {
		if (err == -ENOSPC)
			fprintf(stderr, "maia-bench: --chunk too small for the command buffer\n");
		goto out;
	}
	if (memcmp(src_cpu, back_cpu, opt.dma_size)) {
		for (i = 0; i < words && src_cpu[i] == back_cpu[i]; i++)
			;
		fprintf(stderr, "maia-bench: DMA data mismatch at byte %llu: 0x%08x, expected "
			"0x%08x\n", (unsigned long long)(i * 4), back_cpu[i], src_cpu[i]);
		err = -EIO;
	}
out:
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(hbm2);
	maia_bo_destroy(hbm);
	maia_bo_destroy(back);
	maia_bo_destroy(host);
	return err;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: maia-bench [--device N] [--iters N] [--repeat R] [--depth D]\n"
		"                  [--dma-size MIB] [--chunk MIB] [--dma-jobs J]\n"
		"                  [--baseline NVME_BENCH_OUTPUT] [--only submit|dma]\n"
		"                  [--submit-path both|auto|kernel]\n"
		"Job submission latency and rate, and DMA bandwidth; JSON lines on stdout.\n"
		"Defaults: --iters 500 (depth-D runs do 10x) --repeat 3 --depth 64\n"
		"--dma-size 64 --chunk 4 --dma-jobs 3 --submit-path both (libmaia's choice,\n"
		"a user queue when there is one, as maia_nop_job_*; then the SUBMIT ioctl as\n"
		"maia_ioctl_nop_job_*).\n");
}

static bool parse_uint(const char *s, unsigned long long min, unsigned long long max,
		       unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && end != s && !*end && *out >= min && *out <= max;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "iters", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "depth", required_argument, NULL, 'd' },
		{ "dma-size", required_argument, NULL, 's' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "dma-jobs", required_argument, NULL, 'j' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "only", required_argument, NULL, 'o' },
		{ "submit-path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct maia_device *dev;
	unsigned long long v;
	bool ok = true;
	int c, err;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			ok = parse_uint(optarg, 0, 255, &v);
			opt.device = (int)v;
			break;
		case 'n':
			ok = parse_uint(optarg, 1, 10000000, &v);
			opt.iters = (unsigned int)v;
			break;
		case 'r':
			ok = parse_uint(optarg, 1, 1000, &v);
			opt.repeat = (unsigned int)v;
			break;
		case 'd':
			ok = parse_uint(optarg, 2, MAX_DEPTH, &v);
			opt.depth = (unsigned int)v;
			break;
		case 's':
			ok = parse_uint(optarg, 1, 4096, &v);
			opt.dma_size = v * MIB;
			break;
		case 'c':
			ok = parse_uint(optarg, 1, 4096, &v);
			opt.chunk = v * MIB;
			break;
		case 'j':
			ok = parse_uint(optarg, 1, 1000, &v);
			opt.dma_jobs = (unsigned int)v;
			break;
		case 'b':
			opt.baseline_file = optarg;
			break;
		case 'o':
			opt.only = optarg;
			ok = !strcmp(optarg, "submit") || !strcmp(optarg, "dma");
			break;
		case 'p':
			opt.submit_path = optarg;
			ok = !strcmp(optarg, "both") || !strcmp(optarg, "auto") ||
			     !strcmp(optarg, "kernel");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			ok = false;
			break;
		}
		if (!ok) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (opt.baseline_file && load_baselines(opt.baseline_file))
		return 1;
	err = maia_device_open(opt.device, &dev);
	if (err) {
		fprintf(stderr, "maia-bench: cannot open Maia device %d: %s\n", opt.device,
			maia_strerror(err));
		return 1;
	}
	if (!opt.only || !strcmp(opt.only, "submit")) {
		err = bench_ping(dev);
		if (!err && strcmp(opt.submit_path, "kernel"))
			err = bench_submit(dev, "maia_nop_job");
		if (!err && strcmp(opt.submit_path, "auto")) {
			err = maia_device_set_submit_path(dev, MAIA_SUBMIT_KERNEL);
			if (!err)
				err = bench_submit(dev, "maia_ioctl_nop_job");
		}
	}
	if (!err && (!opt.only || !strcmp(opt.only, "dma")))
		err = bench_dma(dev);
	maia_device_close(dev);
	return err ? 1 : 0;
}
