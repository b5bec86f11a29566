// SPDX-License-Identifier: MIT
/*
 * Fabric link bandwidth: a 64 MiB remote write (MAIA_OP_FABRIC_WRITE)
 * between two firmware-sim devices in one process, port 0 of one cabled to
 * port 0 of the other by function calls, beside memcpy of 64 MiB on the
 * same host. Prints one JSON object per line: the write's bandwidth with
 * memcpy's as the baseline and their ratio. The time of a write is from
 * the doorbell to its completion entry (the target has answered that the
 * last byte landed); the best of the repetitions counts, for both.
 *
 * The cable passes DATA frames as QEMU's hubports do: the sender lends its
 * frame (maia_sim_ops.fabric_tx_lend) and the receiver gets that very
 * buffer (maia_sim_fabric_rx_lent). --copy copies each frame instead, as a
 * socket backend does (maia_sim_fabric_rx).
 *
 * --allreduce MiB: instead, an FP32 SUM all-reduce of that size (buffers in
 * HBM) over --devices N (2..4) devices cabled in a ring (port 0 of device i
 * to port 1 of device i + 1, DATA frames lent as over QEMU's direct cables,
 * doorbells inline), --iters K timed rounds after 3 warm-up ones; each round
 * submits --batch B all-reduces to every rank (queued, as maia-coll-perf's
 * calls are) and waits for them. Prints the medians per all-reduce: wall
 * time, CPU time of the whole process (every thread) and busbw
 * (nccl-tests': S/t x 2(n-1)/n); every rank's result is checked bit for bit
 * against the reference fold (tests/unit/fwsim/coll_ref.c) after the first
 * and the last round. Where its time goes: Documentation/benchmarks.rst.
 *
 *   fabric_bench [--quick] [--size MiB] [--copy]
 *   fabric_bench --allreduce MiB [--devices N] [--iters K] [--batch B] [--copy]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "coll_ref.h"
#include "harness.h"
#include "maia/hw/dtype.h"

#define MIB		(1024ull * 1024ull)
#define HUGE_PAGE	(2ull * MIB)
#define VA_WIN		0x40000000ull

struct node {
	struct env e;
	pthread_mutex_t lock;		/* protects peer */
	struct node *peer;		/* NULL: unplugged */
	struct tq q;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* On the sending device's fabric thread. */
static int cable_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	int ret = -1;

	pthread_mutex_lock(&n->lock);
	if (n->peer) {
		maia_sim_fabric_rx(n->peer->e.sim, port, frame, len);
		ret = 0;
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static void put_frame(void *frame)
{
	maia_sim_fabric_frame_put(frame);
}

/* A lent DATA frame goes on lent: the receiver gives it back. */
static int cable_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	struct node *n = opaque;
	int ret = -1;

	pthread_mutex_lock(&n->lock);
	if (n->peer) {
		maia_sim_fabric_rx_lent(n->peer->e.sim, port, frame, len, put_frame, (void *)frame);
		ret = 0;
	}
	pthread_mutex_unlock(&n->lock);
	if (ret)
		maia_sim_fabric_frame_put(frame);
	return ret;
}

static void unplug(struct node *n)
{
	pthread_mutex_lock(&n->lock);
	n->peer = NULL;
	pthread_mutex_unlock(&n->lock);
}

/* CPU time of the whole process (every thread), s. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void plug(struct node *n, struct node *peer)
{
	pthread_mutex_lock(&n->lock);
	n->peer = peer;
	pthread_mutex_unlock(&n->lock);
}

static void node_init(struct node *n, uint64_t serial, uint64_t hbm)
{
	pthread_mutex_init(&n->lock, NULL);
	n->peer = NULL;
	if (env_init_fabric(&n->e, 2, hbm, 4 * MIB, 1, serial, cable_tx, n)) {
		fprintf(stderr, "fabric_bench: device creation failed\n");
		exit(1);
	}
	boot_or_die(&n->e);
	queue_setup(&n->e, &n->q, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
}

static void wait_up(struct node *n)
{
	struct maia_sim_fabric_port_info i;

	for (int k = 0; k < 60000; k++) {
		if (!maia_sim_fabric_port_info(n->e.sim, 0, &i) && i.up && i.ident_rx)
			return;
		usleep(1000);
	}
	fprintf(stderr, "fabric_bench: link not UP\n");
	exit(1);
}

/* ---- --allreduce: a ring of devices ---- */

#define RING_MAX	4u

static struct node ring_nodes[RING_MAX];
static unsigned int ring_n;
/* Read-held across a frame's hand-over, so that no device is destroyed under it. */
static pthread_rwlock_t ring_lock = PTHREAD_RWLOCK_INITIALIZER;
static bool ring_open;

/* Port 0 of device i goes to port 1 of device i + 1 (and back). */
static struct env *ring_peer(const struct node *n, unsigned int port)
{
	unsigned int i = (unsigned int)(n - ring_nodes);

	return &ring_nodes[port == 0 ? (i + 1) % ring_n : (i + ring_n - 1) % ring_n].e;
}

static int ring_tx(void *opaque, unsigned int port, const void *frame, size_t len)
{
	int ret = -1;

	pthread_rwlock_rdlock(&ring_lock);
	if (__atomic_load_n(&ring_open, __ATOMIC_ACQUIRE)) {
		maia_sim_fabric_rx(ring_peer(opaque, port)->sim, port ^ 1u, frame, len);
		ret = 0;
	}
	pthread_rwlock_unlock(&ring_lock);
	return ret;
}

static int ring_tx_lend(void *opaque, unsigned int port, const void *frame, size_t len)
{
	int ret = -1;

	pthread_rwlock_rdlock(&ring_lock);
	if (__atomic_load_n(&ring_open, __ATOMIC_ACQUIRE)) {
		maia_sim_fabric_rx_lent(ring_peer(opaque, port)->sim, port ^ 1u, frame, len,
					put_frame, (void *)frame);
		ret = 0;
	}
	pthread_rwlock_unlock(&ring_lock);
	if (ret)
		maia_sim_fabric_frame_put(frame);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Every rank's recv buffer against the reference; false on a mismatch. */
static bool ring_check(const uint64_t *send, const uint64_t *recv,
		       const struct maia_cmd_collective *k, uint8_t *exp)
{
	uint8_t *in[RING_MAX];

	for (unsigned int r = 0; r < ring_n; r++)
		in[r] = ring_nodes[r].e.hbm + send[r];
	for (unsigned int r = 0; r < ring_n; r++) {
		ref_expected(in, r, k, exp);
		if (memcmp(exp, ring_nodes[r].e.hbm + recv[r], k->count * 4)) {
			fprintf(stderr, "fabric_bench: rank %u's all-reduce differs from the reference\n",
				r);
			return false;
		}
	}
	return true;
}

static int allreduce_main(uint64_t size, unsigned int iters, unsigned int batch, bool copy)
{
	uint64_t send[RING_MAX], recv[RING_MAX], cbs[RING_MAX][32], rng = 0x5eed;
	double *wall = calloc(iters, sizeof(double)), *cpu = calloc(iters, sizeof(double));
	uint8_t *exp = malloc(size);
	struct maia_cmd_collective k = {
		.hdr = { .opcode = MAIA_OP_COLLECTIVE, .size = sizeof(k) },
		.coll = MAIA_COLL_ALL_REDUCE, .redop = MAIA_REDOP_SUM, .dtype = MAIA_DTYPE_FP32,
		.send_port = 0, .recv_port = 1, .nranks = (uint16_t)ring_n, .comm_id = 0xab,
		.count = size / 4,
	};
	uint32_t seq = 1;
	double w, c;

	if (!wall || !cpu || !exp)
		return 1;
	env_fabric_tx_lend = copy ? NULL : ring_tx_lend;
	for (unsigned int r = 0; r < ring_n; r++) {
		struct node *n = &ring_nodes[r];

		if (env_init_fabric(&n->e, 1, 2 * size + 8 * MIB, 4 * MIB, 2,
				    0xab00000000000001ull + r, ring_tx, n)) {
			fprintf(stderr, "fabric_bench: device creation failed\n");
			return 1;
		}
		boot_or_die(&n->e);
		maia_sim_set_inline_doorbell(n->e.sim, true);
		queue_setup(&n->e, &n->q, 0, 64, MAIA_QUEUE_PRIO_NORMAL);
		send[r] = hbm_alloc(&n->e, size, HUGE_PAGE);
		recv[r] = hbm_alloc(&n->e, size, HUGE_PAGE);
		ref_fill(n->e.hbm + send[r], size / 4, MAIA_DTYPE_FP32, &rng);
	}
	__atomic_store_n(&ring_open, true, __ATOMIC_RELEASE);
	for (unsigned int r = 0; r < ring_n; r++)
		for (unsigned int p = 0; p < 2; p++) {
			struct maia_sim_fabric_port_info i;
			int t;

			for (t = 0; t < 60000; t++) {
				if (!maia_sim_fabric_port_info(ring_nodes[r].e.sim, p, &i) && i.up &&
				    i.ident_rx)
					break;
				usleep(1000);
			}
			if (t == 60000) {
				fprintf(stderr, "fabric_bench: ring not UP\n");
				return 1;
			}
		}
	for (unsigned int r = 0; r < ring_n; r++) {
		struct cmdbuf cb;

		k.rank = (uint16_t)r;
		k.send_addr = MAIA_PHYS_HBM | send[r];
		k.recv_addr = MAIA_PHYS_HBM | recv[r];
		cb_init(&cb);
		cb_add(&cb, &k, sizeof(k));
		for (unsigned int j = 0; j < batch; j++)
			cbs[r][j] = cb_to_host(&ring_nodes[r].e, &cb);
	}
	for (unsigned int it = 0; it < iters + 3; it++) {
		uint32_t slot[RING_MAX][64];
		double t0, c0;
		bool ok = true;

		for (unsigned int r = 0; r < ring_n; r++)
			memset(ring_nodes[r].e.hbm + recv[r], 0, it == 0 || it == iters + 2 ? size : 0);
		t0 = now_s();
		c0 = cpu_s();
		for (unsigned int j = 0; j < batch; j++, seq++)
			for (unsigned int r = 0; r < ring_n; r++) {
				struct maia_cmd_collective *kc = host_ptr(&ring_nodes[r].e,
									  cbs[r][j]);

				kc->seq = seq;	/* the call's, the same on every rank */
				slot[r][j] = queue_push(&ring_nodes[r].e, &ring_nodes[r].q, cbs[r][j],
							sizeof(k), 0, 0, seq, true);
			}
		for (unsigned int r = 0; r < ring_n; r++)
			for (unsigned int j = 0; j < batch; j++) {
				struct maia_cq_entry *e = cqe_at(&ring_nodes[r].e, &ring_nodes[r].q,
								 slot[r][j]);

				/* polled every 20 us: a spinning waiter would count as the devices' CPU */
				while (!(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & MAIA_CQE_VALID))
					usleep(20);
				ok &= e->status == MAIA_STATUS_OK;
			}
		w = now_s() - t0;
		c = cpu_s() - c0;
		if (!ok) {
			fprintf(stderr, "fabric_bench: all-reduce round %u failed\n", it);
			return 1;
		}
		if ((it == 0 || it == iters + 2) && !ring_check(send, recv, &k, exp))
			return 1;
		if (it >= 3) {
			wall[it - 3] = w / batch;
			cpu[it - 3] = c / batch;
		}
	}
	w = median(wall, iters);
	c = median(cpu, iters);
	/* sorted by median(): [0] is the quickest round, the one the load disturbed least */
	fprintf(stderr, "fabric_bench: %u devices, %llu KiB FP32 all-reduce, %s, batch %u: median %.3f ms wall (%.3f GB/s busbw), %.3f ms of CPU per all-reduce (quickest rounds %.3f and %.3f ms); results exact\n",
		ring_n, (unsigned long long)(size >> 10), copy ? "frames copied" : "frames lent",
		batch, w * 1e3, (double)size / w * 2 * (ring_n - 1) / ring_n * 1e-9, c * 1e3,
		wall[0] * 1e3, cpu[0] * 1e3);
	printf("{\"name\": \"host_allreduce_busbw_n%u_%lluKiB\", \"value\": %.3f, \"unit\": \"GB/s\", "
	       "\"higher_is_better\": true, \"cpu_ms\": %.3f, \"wall_ms\": %.3f, "
	       "\"min_cpu_ms\": %.3f, \"min_wall_ms\": %.3f}\n",
	       ring_n, (unsigned long long)(size >> 10),
	       (double)size / w * 2 * (ring_n - 1) / ring_n * 1e-9, c * 1e3, w * 1e3,
	       cpu[0] * 1e3, wall[0] * 1e3);
	fflush(stdout);
	pthread_rwlock_wrlock(&ring_lock);
	__atomic_store_n(&ring_open, false, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&ring_lock);
	for (unsigned int r = 0; r < ring_n; r++)
		env_fini(&ring_nodes[r].e);
	free(wall);
	free(cpu);
	free(exp);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t size = 64 * MIB, src, win_pa, root;
	struct node a, b;
	struct cmdbuf cb;
	uint32_t resp[MAIA_MBOX_NARGS], key;
	int reps = 5;
	bool copy = false;
	uint64_t ar_size = 0;
	unsigned int ar_iters = 30, ar_batch = 1;
	double best_w = 1e9, best_m = 1e9, best_cpu = 1e9;
	uint8_t *m1, *m2;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			reps = 2;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = strtoull(argv[++i], NULL, 0) * MIB;
		else if (!strcmp(argv[i], "--copy"))
			copy = true;
		else if (!strcmp(argv[i], "--allreduce") && i + 1 < argc)
			ar_size = (uint64_t)(strtod(argv[++i], NULL) * (double)MIB) & ~1023ull;
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			ring_n = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			ar_iters = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			ar_batch = (unsigned int)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: fabric_bench [--quick] [--size MiB] [--copy]\n"
				"       fabric_bench --allreduce MiB [--devices 2..4] [--iters K] [--batch 1..32] [--copy]\n");
			return 2;
		}
	}
	if (ar_size) {
		if (!ring_n)
			ring_n = 2;
		if (ring_n < 2 || ring_n > RING_MAX || !ar_iters || !ar_batch || ar_batch > 32) {
			fprintf(stderr, "fabric_bench: --devices 2..4, --iters >= 1, --batch 1..32\n");
			return 2;
		}
		return allreduce_main(ar_size, ar_iters, ar_batch, copy);
	}
	size = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	env_fabric_tx_lend = copy ? NULL : cable_tx_lend;
	node_init(&a, 0xbe00000000000001ull, size + 8 * MIB);
	node_init(&b, 0xbe00000000000002ull, size + 8 * MIB);
	plug(&a, &b);
	plug(&b, &a);
	src = hbm_alloc(&a.e, size, HUGE_PAGE);
	fill_random(a.e.hbm + src, size, 1);
	root = pt_new_root(&b.e);
	win_pa = hbm_alloc(&b.e, size, HUGE_PAGE);
	for (uint64_t off = 0; off < size; off += HUGE_PAGE)
		pt_map(&b.e, root, VA_WIN + off, win_pa + off, MAIA_PTE_READ | MAIA_PTE_WRITE, true);
	mbox(&b.e, MAIA_MBOX_SET_CONTEXT, 1, (uint32_t)root, (uint32_t)(root >> 32), NULL);
	if (mbox4(&b.e, MAIA_MBOX_FABRIC_WINDOW_OPEN, 1 | MAIA_ACCESS_WRITE << 16,
		  (uint32_t)VA_WIN, (uint32_t)(VA_WIN >> 32), (uint32_t)(size / MAIA_PAGE_SIZE),
		  resp) != MAIA_MBOX_OK) {
		fprintf(stderr, "fabric_bench: window open failed\n");
		return 1;
	}
	key = resp[0];
	wait_up(&a);
	wait_up(&b);

	cb_init(&cb);
	{
		struct maia_cmd_fabric_write c = {
			.hdr = { .opcode = MAIA_OP_FABRIC_WRITE, .size = sizeof(c) },
			.port = 0, .key = key, .local_addr = MAIA_PHYS_HBM | src, .size = size,
		};

		cb_add(&cb, &c, sizeof(c));
	}
	for (int r = 0; r <= reps; r++) {	/* the first run warms up */
		double t0 = now_s(), c0 = cpu_s(), t;
		struct maia_cq_entry c = run_cb(&a.e, &a.q, &cb);

		t = now_s() - t0;
		if (r && cpu_s() - c0 < best_cpu)
			best_cpu = cpu_s() - c0;
		if (c.status != MAIA_STATUS_OK || memcmp(b.e.hbm + win_pa, a.e.hbm + src, size)) {
			fprintf(stderr, "fabric_bench: remote write failed (status %u)\n", c.status);
			return 1;
		}
		if (r && t < best_w)
			best_w = t;
		memset(b.e.hbm + win_pa, 0, MIB);
	}
	m1 = malloc(size);
	m2 = malloc(size);
	memset(m1, 1, size);
	memset(m2, 2, size);
	for (int r = 0; r <= reps; r++) {
		double t0 = now_s(), t;

		memcpy(r & 1 ? m1 : m2, r & 1 ? m2 : m1, size);
		t = now_s() - t0;
		if (r && t < best_m)
			best_m = t;
	}
	{
		struct maia_sim_fabric_port_info ia, ib;

		maia_sim_fabric_port_info(a.e.sim, 0, &ia);
		maia_sim_fabric_port_info(b.e.sim, 0, &ib);
		fprintf(stderr, "fabric_bench: A tx %llu frames, %llu retransmits; B rx %llu frames, %llu queue drops, %llu rejected\n",
			(unsigned long long)ia.tx_frames, (unsigned long long)ia.retransmits,
			(unsigned long long)ib.rx_frames, (unsigned long long)ib.rx_queue_drops,
			(unsigned long long)ib.rx_dropped);
	}
	fprintf(stderr, "fabric_bench: %s, %llu MiB remote write %.1f ms (%.2f GB/s, %.1f ms of CPU in all threads), memcpy %.1f ms (%.2f GB/s), ratio %.3f\n",
		copy ? "frames copied" : "frames lent", (unsigned long long)(size / MIB), best_w * 1e3, (double)size / best_w * 1e-9,
		best_cpu * 1e3, best_m * 1e3, (double)size / best_m * 1e-9, best_m / best_w);
	printf("{\"name\": \"fabric_write_%lluMiB\", \"value\": %.3f, \"unit\": \"GB/s\", "
	       "\"higher_is_better\": true, \"baseline\": \"memcpy_%lluMiB\", "
	       "\"baseline_value\": %.3f, \"ratio\": %.3f}\n",
	       (unsigned long long)(size / MIB), (double)size / best_w * 1e-9,
	       (unsigned long long)(size / MIB), (double)size / best_m * 1e-9, best_m / best_w);
	fflush(stdout);
	free(m1);
	free(m2);
	unplug(&a);
	unplug(&b);
	env_fini(&a.e);
	env_fini(&b.e);
	return 0;
}
