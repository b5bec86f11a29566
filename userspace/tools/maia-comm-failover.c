// SPDX-License-Identifier: MIT
/*
 * maia-comm-failover: one rank's side of "a peer dies mid-collective".
 *
 *   maia-comm-failover --rank R --nranks N --ids ID0,ID1,ID2 --victim V
 *                      [--timeout-ms T] [--bytes B] [--max-iters K] [--recover]
 *
 * Run on every rank of a cluster (qemu/cluster/maia-cluster); the launcher
 * of rank V kills its QEMU when V prints "failover: running". Steps 1 and 2
 * run without --recover, step 3 with it: in between, and after it, the
 * survivors wait for each other (maia-cluster-sync), so that none probes a
 * neighbour that has already finished and powered off.
 *
 *  1. Communicator 0 (ID0, a long timeout): one 8-byte all-reduce, so that
 *     every rank has booted and joined before the timed part begins.
 *  2. Communicator 1 (ID1, MAIA_COMM_TIMEOUT_MS = T, default 2000): FP32
 *     all-reduces of B bytes (default 1 MiB) until one fails; the first
 *     result is checked against the CPU. A survivor prints
 *     "failover: rank R failed: MESSAGE" and checks that the message names
 *     the step, the port and the rank it was waiting on, or the ranks out
 *     of reach (the victim's death cuts the ring twice), that the failure
 *     sticks (maia_comm_async_error) and that the device status is a
 *     fabric one (link down: the device's keepalive noticed; timeout: the
 *     device's watchdog), not a hang of the library.
 *  3. Recovery without a device reset. The ring of N - 1 cannot close
 *     without new cables, so: a new communicator from ID2 of this rank
 *     alone runs an all-reduce with the right result; each port whose
 *     neighbour lives is up, and a remote write to that neighbour with a
 *     key it never issued comes back refused by the neighbour's device
 *     (MAIA_STATUS_FABRIC_KEY: the request crossed the link, the target
 *     checked it and answered); each port towards the dead rank is down and
 *     a remote write on it fails with MAIA_STATUS_FABRIC_LINK; and the
 *     context saw no device reset.
 *
 * Exit status 0 when every check held ("failover: rank R ok").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libmaia.h"
#include "maia/hw/queue.h"	/* MAIA_STATUS_FABRIC_* */

#define WAIT_NS		(300ll * 1000000000ll)
#define MAX_IDS		3

static struct {
	int rank, nranks, victim;
	unsigned int timeout_ms;
	uint64_t bytes, max_iters;
	struct maia_comm_id ids[MAX_IDS];
	int nids;
	bool recover;
} opt = { .rank = -1, .victim = -1, .timeout_ms = 2000, .bytes = 1u << 20,
	  .max_iters = 100000 };

static int rank_fail(const char *what)
{
	printf("failover: rank %d FAILED: %s%s%s\n", opt.rank, what,
	       maia_last_error()[0] ? ": " : "", maia_last_error());
	return 1;
}

static int parse_ids(const char *s)
{
	int i;

	for (opt.nids = 0; opt.nids < MAX_IDS && *s; opt.nids++) {
		for (i = 0; i < MAIA_COMM_ID_BYTES; i++) {
			unsigned int byte;

			if (sscanf(s + 2 * i, "%2x", &byte) != 1)
				return -1;
			opt.ids[opt.nids].bytes[i] = (uint8_t)byte;
		}
		s += 2 * MAIA_COMM_ID_BYTES;
		if (*s == ',')
			s++;
	}
	return opt.nids == MAX_IDS ? 0 : -1;
}

static int comm_with_timeout(struct maia_comm **comm, struct maia_device *dev, int nranks,
			     int rank, int g, unsigned int timeout_ms)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", timeout_ms);
	setenv("MAIA_COMM_TIMEOUT_MS", v, 1);
	return maia_comm_init_rank(comm, dev, nranks, &opt.ids[g], rank);
}

/* One all-reduce of count FP32 elements; 0 when it ran. */
static int all_reduce(struct maia_comm *comm, struct maia_bo *send, struct maia_bo *recv,
		      uint64_t count)
{
	int err = maia_all_reduce(comm, maia_bo_va(send), maia_bo_va(recv), count,
				  MAIA_DTYPE_FP32, MAIA_REDOP_SUM);

	return err ? err : maia_comm_sync(comm, WAIT_NS);
}

/* recv[i] must be the sum over @n ranks of rank r's input r + 1 + i % 7. */
static uint64_t wrong_elements(const float *recv, uint64_t count, int n, int first_rank)
{
	uint64_t i, wrong = 0;
	int r;

	for (i = 0; i < count; i++) {
		float want = 0;

		for (r = 0; r < n; r++)
			want += (float)(first_rank + r + 1 + (int)(i % 7));
		if (recv[i] != want)
			wrong++;
	}
	return wrong;
}

static void fill(float *send, uint64_t count, int rank)
{
	uint64_t i;

	for (i = 0; i < count; i++)
		send[i] = (float)(rank + 1 + (int)(i % 7));
}

/* Step 2: run until the dead peer stops the ring. 0 when the failure was right. */
static int until_failure(struct maia_device *dev, struct maia_bo *send, struct maia_bo *recv,
			 float *send_cpu, float *recv_cpu)
{
	uint64_t count = opt.bytes / 4, it;
	struct maia_comm *comm;
	const char *msg = NULL;
	int err = 0;

	if (comm_with_timeout(&comm, dev, opt.nranks, opt.rank, 1, opt.timeout_ms))
		return rank_fail("communicator 1");
	fill(send_cpu, count, opt.rank);
	for (it = 0; it < opt.max_iters; it++) {
		err = all_reduce(comm, send, recv, count);
		if (err)
			break;
		if (it == 0) {
			uint64_t wrong = wrong_elements(recv_cpu, count, opt.nranks, 0);

			printf("failover: running, first all-reduce %" PRIu64 " wrong\n", wrong);
			fflush(stdout);
			if (wrong)
				return rank_fail("wrong result");
		}
	}
	if (!err) {
		maia_comm_destroy(comm);
		return rank_fail("no failure: the victim still answers");
	}
	printf("failover: rank %d failed: %s\n", opt.rank, maia_last_error());
	fflush(stdout);
	if (err != -ENOLINK && err != -ETIMEDOUT)
		return rank_fail("not a fabric failure");
	/*
	 * The victim's two cables dead cut the ring twice: the devices name the
	 * ranks out of reach (Documentation/hw/fabric.rst, "Failover") when a
	 * relayed chunk meets the second cut, else the wait times out naming
	 * the port and the rank.
	 */
	if ((!strstr(maia_last_error(), "waiting on port") || !strstr(maia_last_error(), "for rank")) &&
	    !strstr(maia_last_error(), "are out of reach"))
		return rank_fail("the message names neither the port and the rank nor the ranks "
				 "out of reach");
	if (maia_comm_async_error(comm, &msg) == 0 || !msg || !msg[0])
		return rank_fail("the failure did not stick to the communicator");
	if (maia_all_reduce(comm, maia_bo_va(send), maia_bo_va(recv), count, MAIA_DTYPE_FP32,
			    MAIA_REDOP_SUM) == 0)
		return rank_fail("a call on the failed communicator was accepted");
	maia_comm_abort(comm);
	maia_comm_destroy(comm);
	return 0;
}

/* A remote write on @port with a key the peer never issued; the device status. */
static int probe_port(struct maia_device *dev, struct maia_bo *send, unsigned int port,
		      struct maia_job_status *st)
{
	struct maia_cmdbuf *cb;
	int err;

	if (maia_cmdbuf_create(dev, 4096, &cb))
		return -1;
	err = maia_cmd_fabric_write(cb, port, 0xdead0000u, 0, maia_bo_va(send), 4096);
	if (!err) {
		memset(st, 0, sizeof(*st));
		maia_run(dev, cb, WAIT_NS, st);
	}
	maia_cmdbuf_destroy(cb);
	return err;
}

/* Step 3: the survivors' devices still work, no reset. */
static int recovery(struct maia_device *dev, struct maia_bo *send, struct maia_bo *recv,
		    float *send_cpu, float *recv_cpu)
{
	int dead_next = (opt.rank + 1) % opt.nranks == opt.victim;
	int dead_prev = (opt.rank + opt.nranks - 1) % opt.nranks == opt.victim;
	uint64_t count = opt.bytes / 4, wrong;
	struct maia_context_status cs;
	struct maia_comm *comm;
	unsigned int port;

	if (comm_with_timeout(&comm, dev, 1, 0, 2, 10000))
		return rank_fail("new communicator");
	fill(send_cpu, count, opt.rank);
	memset(recv_cpu, 0xff, opt.bytes);
	if (all_reduce(comm, send, recv, count))
		return rank_fail("all-reduce on the new communicator");
	wrong = wrong_elements(recv_cpu, count, 1, opt.rank);
	maia_comm_destroy(comm);
	printf("failover: rank %d: new communicator (id 2, 1 rank): all-reduce %" PRIu64
	       " wrong\n", opt.rank, wrong);
	if (wrong)
		return rank_fail("wrong result on the new communicator");

	for (port = 0; port < 2; port++) {
		int dead = port == 0 ? dead_next : dead_prev;
		unsigned int want = dead ? MAIA_STATUS_FABRIC_LINK : MAIA_STATUS_FABRIC_KEY;
		struct maia_fabric_port info;
		struct maia_job_status st;

		if (maia_fabric_port(dev, port, &info) || probe_port(dev, send, port, &st))
			return rank_fail("fabric port");
		printf("failover: rank %d: port %u (%s rank %d) %s; remote write with a foreign "
		       "key: job %s, device status %u\n", opt.rank, port,
		       port == 0 ? "to" : "from",
		       (opt.rank + (port == 0 ? 1 : opt.nranks - 1)) % opt.nranks,
		       info.up ? "up" : "down", maia_job_status_name(st.status),
		       st.device_status);
		if (info.up == dead)
			return rank_fail(dead ? "the port to the dead rank is up" :
					 "the port to a live rank is down");
		if (st.device_status != want)
			return rank_fail(dead ? "expected a link error" :
					 "expected the live neighbour to refuse the key");
	}
	if (maia_context_status(dev, &cs))
		return rank_fail("context status");
	if (cs.device_resets)
		return rank_fail("the device was reset");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "nranks", required_argument, NULL, 'n' },
		{ "ids", required_argument, NULL, 'i' },
		{ "victim", required_argument, NULL, 'v' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "max-iters", required_argument, NULL, 'm' },
		{ "recover", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct maia_bo *send = NULL, *recv = NULL;
	void *send_cpu, *recv_cpu;
	struct maia_device *dev;
	struct maia_comm *comm;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': opt.rank = atoi(optarg); break;
		case 'n': opt.nranks = atoi(optarg); break;
		case 'i':
			if (parse_ids(optarg))
				return 2;
			break;
		case 'v': opt.victim = atoi(optarg); break;
		case 't': opt.timeout_ms = (unsigned int)atoi(optarg); break;
		case 'b': opt.bytes = strtoull(optarg, NULL, 0) & ~4095ull; break;
		case 'm': opt.max_iters = strtoull(optarg, NULL, 0); break;
		case 'R': opt.recover = true; break;
		default: return 2;
		}
	}
	if (opt.nranks < 2 || opt.rank < 0 || opt.rank >= opt.nranks || opt.victim < 0 ||
	    opt.victim >= opt.nranks || !opt.nids || !opt.bytes) {
		fprintf(stderr, "usage: maia-comm-failover --rank R --nranks N --ids ID0,ID1,ID2 "
			"--victim V [--timeout-ms T] [--bytes B] [--max-iters K] [--recover]\n");
		return 2;
	}
	if (maia_device_open(0, &dev) ||
	    maia_bo_create(dev, opt.bytes, MAIA_BO_HOST, &send) ||
	    maia_bo_create(dev, opt.bytes, MAIA_BO_HOST, &recv) ||
	    maia_bo_map(send, &send_cpu) || maia_bo_map(recv, &recv_cpu))
		return rank_fail("device");

	if (opt.recover) {
		ret = recovery(dev, send, recv, send_cpu, recv_cpu);
		if (!ret)
			printf("failover: rank %d ok\n", opt.rank);
		goto out;
	}
	/* Step 1: everyone is up before the timed part. */
	if (comm_with_timeout(&comm, dev, opt.nranks, opt.rank, 0, 240000))
		return rank_fail("communicator 0");
	fill(send_cpu, 2, opt.rank);
	ret = all_reduce(comm, send, recv, 2);
	maia_comm_destroy(comm);
	if (ret)
		return rank_fail("first all-reduce");
	ret = until_failure(dev, send, recv, send_cpu, recv_cpu);
out:
	maia_bo_destroy(send);
	maia_bo_destroy(recv);
	maia_device_close(dev);
	return ret;
}
