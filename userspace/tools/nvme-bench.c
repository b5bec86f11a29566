// SPDX-License-Identifier: MIT
/*
 * nvme-bench: 4 KiB O_DIRECT random reads from a block device, the baseline
 * `make bench` sets beside Maia job submission (QEMU's emulated NVMe on a
 * null-co backend in the same guest boot: the same guest CPU, the same
 * QEMU, a device model everyone knows).
 *
 *   nvme-bench [--ops N] [--repeat R] [--depth D] [--threads] DEVICE
 *
 * Depth 1 is a pread() loop. Depth D > 1 keeps D reads in flight through
 * io_uring (raw syscalls, no liburing), or with --threads (or when the
 * kernel refuses io_uring) through D threads each running a pread() loop.
 * Prints JSON lines (bench-util.h): latency p50/p99 in us and IOPS, each
 * the median over R repeats of N reads; which depth-D method ran goes to
 * stderr.
 */
#define _GNU_SOURCE	/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench-util.h"

#define BLOCK		4096u
#define MAX_DEPTH	1024u

static uint64_t dev_blocks;	/* device size in BLOCKs */

/* xorshift64*: reproducible, cheap, and good enough to spread offsets. */
static uint64_t rand_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static off_t rand_offset(uint64_t *state)
{
	return (off_t)(rand_next(state) % dev_blocks) * BLOCK;
}

/* One measured run: latencies go into lat (us); returns IOPS or < 0. */
static double run_qd1(int fd, void *buf, unsigned int ops, struct bench_samples *lat)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull, t0, t, start;
	unsigned int i;

	start = bench_now_ns();
	for (i = 0; i < ops; i++) {
		off_t off = rand_offset(&seed);

		t0 = bench_now_ns();
		if (pread(fd, buf, BLOCK, off) != BLOCK) {
			perror("nvme-bench: pread");
			return -1;
		}
		t = bench_now_ns();
		if (bench_add(lat, (double)(t - t0) / 1e3))
			return -1;
	}
	return ops / ((double)(bench_now_ns() - start) / 1e9);
}

/* ---- io_uring through raw syscalls ------------------------------------- */

struct uring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_ring, *cq_ring;
	size_t sq_ring_size, cq_ring_size, sqes_size;
};

static int uring_setup(struct uring *r, unsigned int entries)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	memset(r, 0, sizeof(*r));
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_ring_size = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_ring_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_ring_size > r->sq_ring_size)
			r->sq_ring_size = r->cq_ring_size;
		r->cq_ring_size = r->sq_ring_size;
	}
	r->sq_ring = mmap(NULL, r->sq_ring_size, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq_ring == MAP_FAILED)
		goto fail;
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq_ring = r->sq_ring;
	} else {
		r->cq_ring = mmap(NULL, r->cq_ring_size, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
		if (r->cq_ring == MAP_FAILED)
			goto fail;
	}
	r->sqes_size = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto fail;
	r->sq_tail = (unsigned int *)((char *)r->sq_ring + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_ring + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_ring + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_ring + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_ring + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_ring + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_ring + p.cq_off.cqes);
	return 0;
fail:
	/* The fd owns the mappings' pages; closing it is enough for a one-shot tool. */
	close(r->fd);
	return -ENOMEM;
}

static void uring_destroy(struct uring *r)
{
	munmap(r->sqes, r->sqes_size);
	if (r->cq_ring != r->sq_ring)
		munmap(r->cq_ring, r->cq_ring_size);
	munmap(r->sq_ring, r->sq_ring_size);
	close(r->fd);
}

/* Queue a read of BLOCK bytes at off into buf; the kernel sees it at the next enter. */
static void uring_queue_read(struct uring *r, int fd, void *buf, off_t off, uint64_t tag)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = BLOCK;
	sqe->off = (uint64_t)off;
	sqe->user_data = tag;
	r->sq_array[idx] = idx;
	/* The kernel reads the entry after it sees the new tail. */
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

static int uring_enter(struct uring *r, unsigned int to_submit, unsigned int min_complete)
{
	long ret;

	do {
		ret = syscall(__NR_io_uring_enter, r->fd, to_submit, min_complete,
			      IORING_ENTER_GETEVENTS, NULL, 0);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : (int)ret;
}

static double run_uring(struct uring *r, int fd, char *bufs, unsigned int depth,
			unsigned int ops, struct bench_samples *lat)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull, issued_at[MAX_DEPTH], start, now;
	unsigned int issued = 0, done = 0, pending = 0, slot;
	int ret;

	start = bench_now_ns();
	for (slot = 0; slot < depth && issued < ops; slot++, issued++, pending++) {
		issued_at[slot] = bench_now_ns();
		uring_queue_read(r, fd, bufs + (size_t)slot * BLOCK, rand_offset(&seed), slot);
	}
	while (done < ops) {
		unsigned int head, tail;

		ret = uring_enter(r, pending, 1);
		if (ret < 0) {
			fprintf(stderr, "nvme-bench: io_uring_enter: %s\n", strerror(-ret));
			return -1;
		}
		pending -= (unsigned int)ret;
		head = *r->cq_head;
		tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
		now = bench_now_ns();
		for (; head != tail; head++) {
			struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];

			slot = (unsigned int)cqe->user_data;
			if (cqe->res != BLOCK) {
				fprintf(stderr, "nvme-bench: read returned %d\n", cqe->res);
				return -1;
			}
			if (bench_add(lat, (double)(now - issued_at[slot]) / 1e3))
				return -1;
			done++;
			if (issued < ops) {
				issued_at[slot] = now;
				uring_queue_read(r, fd, bufs + (size_t)slot * BLOCK,
						 rand_offset(&seed), slot);
				issued++;
				pending++;
			}
		}
		__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	}
	return ops / ((double)(bench_now_ns() - start) / 1e9);
}

/* ---- depth D as D threads, each a pread() loop ------------------------- */

struct reader {
	pthread_t thread;
	int fd;
	void *buf;
	unsigned int ops;
	uint64_t seed;
	struct bench_samples lat;
	int err;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	unsigned int i;

	for (i = 0; i < rd->ops; i++) {
		off_t off = rand_offset(&rd->seed);
		uint64_t t0 = bench_now_ns();

		if (pread(rd->fd, rd->buf, BLOCK, off) != BLOCK) {
			rd->err = errno ? errno : EIO;
			return NULL;
		}
		if (bench_add(&rd->lat, (double)(bench_now_ns() - t0) / 1e3)) {
			rd->err = ENOMEM;
			return NULL;
		}
	}
	return NULL;
}

static double run_threads(int fd, char *bufs, unsigned int depth, unsigned int ops,
			  struct bench_samples *lat)
{
	struct reader *rds = calloc(depth, sizeof(*rds));
	unsigned int i, started = 0, total = 0;
	double iops = -1;
	uint64_t start;
	size_t j;

	if (!rds)
		return -1;
	start = bench_now_ns();
	for (i = 0; i < depth; i++) {
		rds[i].fd = fd;
		rds[i].buf = bufs + (size_t)i * BLOCK;
		rds[i].ops = ops / depth + (i < ops % depth);
		rds[i].seed = 0x9e3779b97f4a7c15ull + i;
		if (pthread_create(&rds[i].thread, NULL, reader_main, &rds[i]))
			break;
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(rds[i].thread, NULL);
	if (started == depth)
		iops = ops / ((double)(bench_now_ns() - start) / 1e9);
	for (i = 0; i < started; i++) {
		if (rds[i].err) {
			fprintf(stderr, "nvme-bench: pread: %s\n", strerror(rds[i].err));
			iops = -1;
		}
		for (j = 0; j < rds[i].lat.n; j++)
			bench_add(lat, rds[i].lat.v[j]);
		total += (unsigned int)rds[i].lat.n;
		bench_free(&rds[i].lat);
	}
	free(rds);
	return total == ops ? iops : -1;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "Usage: nvme-bench [--ops N] [--repeat R] [--depth D] [--threads] DEVICE\n"
		   "4 KiB O_DIRECT random reads at depth 1 (pread) and depth D (io_uring,\n"
		   "or D threads); JSON lines on stdout. Defaults: --ops 2000 --repeat 3\n"
		   "--depth 64 (depth-D runs do 10x N reads).\n");
}

/* Emit p50, p99 and IOPS for one depth: medians of the repeats. */
static void emit_depth(unsigned int depth, struct bench_samples *p50, struct bench_samples *p99,
		       struct bench_samples *iops)
{
	char name[64];

	snprintf(name, sizeof(name), "nvme_read4k_qd%u_latency_p50", depth);
	bench_emit(name, bench_median(p50), "us", false, NULL, 0);
	snprintf(name, sizeof(name), "nvme_read4k_qd%u_latency_p99", depth);
	bench_emit(name, bench_median(p99), "us", false, NULL, 0);
	snprintf(name, sizeof(name), "nvme_read4k_qd%u_iops", depth);
	bench_emit(name, bench_median(iops), "IOPS", true, NULL, 0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "depth", required_argument, NULL, 'd' },
		{ "threads", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_samples p50[2] = { 0 }, p99[2] = { 0 }, iops[2] = { 0 };
	unsigned int ops = 2000, repeat = 3, depth = 64, rep;
	bool threads = false;
	struct uring ring;
	uint64_t bytes;
	char *bufs;
	int fd, c, err;

	while ((c = getopt_long(argc, argv, "n:r:d:th", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			ops = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			repeat = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			depth = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			threads = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || !ops || !repeat || depth < 2 || depth > MAX_DEPTH) {
		usage(stderr);
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "nvme-bench: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	if (ioctl(fd, BLKGETSIZE64, &bytes) || bytes < BLOCK) {
		fprintf(stderr, "nvme-bench: %s: not a block device of at least 4 KiB\n",
			argv[optind]);
		return 1;
	}
	dev_blocks = bytes / BLOCK;
	bufs = aligned_alloc(BLOCK, (size_t)depth * BLOCK);
	if (!bufs)
		return 1;
	memset(bufs, 0, (size_t)depth * BLOCK);

	if (!threads) {
		err = uring_setup(&ring, depth);
		if (err) {
			fprintf(stderr, "nvme-bench: io_uring unavailable (%s); using threads\n",
				strerror(-err));
			threads = true;
		}
	}
	fprintf(stderr, "nvme-bench: %s, %llu MiB; depth 1: pread loop; depth %u: %s\n",
		argv[optind], (unsigned long long)(bytes >> 20), depth,
		threads ? "threads, one pread loop each" : "io_uring (raw syscalls)");

	/* Warm up the path (first-touch, the driver's first commands). */
	{
		struct bench_samples warm = { 0 };

		if (run_qd1(fd, bufs, 64, &warm) < 0)
			return 1;
		bench_free(&warm);
	}
	for (rep = 0; rep < repeat; rep++) {
		struct bench_samples lat = { 0 };
		double rate;

		rate = run_qd1(fd, bufs, ops, &lat);
		if (rate < 0)
			return 1;
		bench_add(&iops[0], rate);
		bench_add(&p50[0], bench_percentile(&lat, 50));
		bench_add(&p99[0], bench_percentile(&lat, 99));
		bench_free(&lat);

		rate = threads ? run_threads(fd, bufs, depth, ops * 10, &lat)
			       : run_uring(&ring, fd, bufs, depth, ops * 10, &lat);
		if (rate < 0)
			return 1;
		bench_add(&iops[1], rate);
		bench_add(&p50[1], bench_percentile(&lat, 50));
		bench_add(&p99[1], bench_percentile(&lat, 99));
		bench_free(&lat);
	}
	emit_depth(1, &p50[0], &p99[0], &iops[0]);
	emit_depth(depth, &p50[1], &p99[1], &iops[1]);
	if (!threads)
		uring_destroy(&ring);
	free(bufs);
	close(fd);
	return 0;
}
