// SPDX-License-Identifier: MIT
/*
 * Collectives: an NCCL-shaped communicator over the devices' fabric
 * (Documentation/collectives.rst).
 *
 * A communicator is one rank of a ring of devices: rank r sends on fabric
 * port 0 to rank r + 1 and receives on port 1 from rank r - 1 (the cabling
 * qemu/run-guest --fabric ring and the cluster launcher make). Every
 * collective is one MAIA_OP_COLLECTIVE command that the devices of the ring
 * run together; the library numbers them (seq) so that every rank's n-th
 * call is the same collective, as in NCCL. Calls are asynchronous: each is
 * a job on the device, and maia_comm_sync() or the job's fence tells when
 * it is done. Between maia_group_start() and maia_group_end() a thread's
 * calls on one communicator go into one job.
 *
 * Jobs go through the device's user queue when it has one (no system call
 * to submit, and a wait that polls before it sleeps: the latency of a small
 * collective). A job there has no kernel fence, so the first
 * maia_comm_fence() of such a communicator waits for its last job and gives
 * a signalled fence; from then on its jobs take the kernel path with a
 * syncobj each.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>

#include "drm/maia_accel.h"
#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"
#include "maia/hw/queue.h"
#include "maia/hw/regs.h"

#include "internal.h"

#define COMM_ID_MAGIC		0x4c434d4du	/* "MMCL" */
#define COMM_INFLIGHT		32u		/* jobs in flight per communicator */
#define COMM_CMDBUF_BYTES	4096u		/* one job: up to 56 collectives */
#define COMM_SEND_PORT		0u
#define COMM_RECV_PORT		1u
#define COMM_DEFAULT_TIMEOUT_MS	10000u

struct comm_id {
	uint32_t magic;
	uint32_t comm_id;
	uint64_t nonce;
};

_Static_assert(sizeof(struct comm_id) <= MAIA_COMM_ID_BYTES, "the id fits");

struct comm_slot {
	struct maia_cmdbuf *cb;
	uint32_t syncobj;		/* receives the job's fence */
	uint64_t seqno;			/* its job, 0 when free */
	uint32_t first_seq, ncoll;	/* the collectives in it */
	const char *name;		/* of the first one, for errors */
};

struct maia_comm {
	struct maia_device *dev;
	int rank, nranks;
	uint32_t comm_id;
	uint32_t seq;			/* next collective's number */
	uint32_t timeout_ms;		/* device's wait for a peer */
	bool debug;			/* MAIA_COMM_DEBUG */
	uint8_t algo;			/* MAIA_COLL_ALGO_*: MAIA_COMM_ALGO, or as set */
	bool reach;			/* hardware 1.10: reports name unreachable ranks */
	bool aborted;
	int async_error;		/* first failure, 0 if none */
	char error[256];		/* what it was */
	struct maia_bo *reports;	/* COMM_INFLIGHT x 56 struct maia_coll_report */
	struct maia_coll_report *report_cpu;
	struct comm_slot slot[COMM_INFLIGHT];
	unsigned int next_slot;
	unsigned int busy;		/* slots whose job is not waited for yet */
	struct comm_slot *last;		/* the last job submitted, or NULL */
	bool fences;			/* jobs carry kernel fences (maia_comm_fence) */
	struct comm_slot *group;	/* the open group's job, or NULL */
};

#define REPORTS_PER_SLOT	(COMM_CMDBUF_BYTES / sizeof(struct maia_cmd_collective))

/* Group nesting of this thread (maia_group_start/end), and its communicators. */
static __thread int group_depth;
static __thread struct maia_comm *group_comms[64];
static __thread unsigned int group_ncomms;

MAIA_EXPORT int maia_comm_get_unique_id(struct maia_comm_id *id)
{
	struct comm_id c = { .magic = COMM_ID_MAGIC };

	maia_error_clear();
	if (!id)
		return maia_error(-EINVAL, "maia_comm_get_unique_id: NULL id");
	if (getrandom(&c.nonce, sizeof(c.nonce), 0) != sizeof(c.nonce))
		return maia_error(-errno, "maia_comm_get_unique_id: getrandom failed");
	/* comm_id 0 is never used, so a zeroed command is never taken for one. */
	c.comm_id = (uint32_t)c.nonce | 1u;
	memset(id, 0, sizeof(*id));
	memcpy(id->bytes, &c, sizeof(c));
	return 0;
}

/* SplitMix64's finaliser: every input bit reaches every output bit. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

MAIA_EXPORT int maia_comm_id_derive(const struct maia_comm_id *base, uint32_t index,
				    struct maia_comm_id *out)
{
	struct comm_id c;

	maia_error_clear();
	if (!base || !out)
		return maia_error(-EINVAL, "maia_comm_id_derive: NULL id");
	memcpy(&c, base->bytes, sizeof(c));
	if (c.magic != COMM_ID_MAGIC || !c.comm_id)
		return maia_error(-EINVAL, "maia_comm_id_derive: the base is not an id from "
				  "maia_comm_get_unique_id()");
	/* A function of the whole base and the index, never the base again. */
	c.nonce = mix64(c.nonce ^ mix64(((uint64_t)c.comm_id << 32 | index) + 1));
	c.comm_id = (uint32_t)(c.nonce >> 32) | 1u;
	memset(out, 0, sizeof(*out));
	memcpy(out->bytes, &c, sizeof(c));
	return 0;
}

static const char *coll_name(unsigned int coll)
{
	switch (coll) {
	case MAIA_COLL_ALL_REDUCE:
		return "all-reduce";
	case MAIA_COLL_ALL_GATHER:
		return "all-gather";
	case MAIA_COLL_REDUCE_SCATTER:
		return "reduce-scatter";
	case MAIA_COLL_BROADCAST:
		return "broadcast";
	case MAIA_COLL_ALL_TO_ALL:
		return "all-to-all";
	default:
		return "collective";
	}
}

/*
 * A ring port up (for more than one rank); the peers' serials if asked (0:
 * not known, the port to that peer is down). With one of the two ports
 * down the device fails over (Documentation/hw/fabric.rst, "Failover"): a
 * ring of two runs over its other cable both ways, a longer ring sends
 * round the other way, relayed by the ranks between. Both down: no way.
 */
static int comm_check_ports(struct maia_device *dev, int nranks, uint64_t *next_serial,
			    uint64_t *prev_serial)
{
	struct maia_fabric_port p, q;
	unsigned int ports;
	int err;

	if (nranks == 1)
		return 0;
	err = maia_fabric_ports(dev, &ports, NULL);
	if (err)
		return err;
	if (ports <= COMM_RECV_PORT)
		return maia_error(-ENODEV, "maia_comm: the device has %u fabric ports; a ring needs "
				  "ports %u (to the next rank) and %u (from the previous)",
				  ports, COMM_SEND_PORT, COMM_RECV_PORT);
	err = maia_fabric_port(dev, COMM_SEND_PORT, &p);
	if (err)
		return err;
	if (!maia_fabric_port(dev, COMM_RECV_PORT, &q) && p.up != q.up) {
		if (next_serial)
			*next_serial = p.up ? p.peer_serial : nranks == 2 ? q.peer_serial : 0;
		if (prev_serial)
			*prev_serial = q.up ? q.peer_serial : nranks == 2 ? p.peer_serial : 0;
		return 0;
	}
	if (!p.up)
		return maia_error(-ENOLINK, "maia_comm: fabric port %u (to the next rank) is down",
				  COMM_SEND_PORT);
	if (next_serial)
		*next_serial = p.peer_serial;
	err = maia_fabric_port(dev, COMM_RECV_PORT, &p);
	if (err)
		return err;
	if (!p.up)
		return maia_error(-ENOLINK, "maia_comm: fabric port %u (from the previous rank) is "
				  "down", COMM_RECV_PORT);
	if (prev_serial)
		*prev_serial = p.peer_serial;
	return 0;
}

static uint32_t env_u32(const char *name, uint32_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return def;
	x = strtoul(v, &end, 0);
	return *end || x > UINT32_MAX ? def : (uint32_t)x;
}

/* MAIA_COMM_ALGO: the MAIA_COLL_ALGO_* it names (AUTO if unset), or -EINVAL. */
static int env_algo(void)
{
	const char *v = getenv("MAIA_COMM_ALGO");

	if (!v || !*v || !strcmp(v, "auto"))
		return MAIA_COLL_ALGO_AUTO;
	if (!strcmp(v, "ring"))
		return MAIA_COLL_ALGO_RING;
	if (!strcmp(v, "gather-reduce"))
		return MAIA_COLL_ALGO_GATHER_REDUCE;
	return maia_error(-EINVAL, "maia_comm: MAIA_COMM_ALGO=%s: not auto, ring or gather-reduce",
			  v);
}

/*
 * Ids are single-use, as NCCL's. A second communicator with the same id on
 * the same device would start its sequence numbers again, and the device
 * would take its messages for the first one's late ones (stale: dropped):
 * its first collective would time out. This process refuses that at once.
 * The ids it used, per device: the last USED_IDS of them.
 */
#define USED_IDS		256u
struct used_id {
	uint32_t comm_id;
	char pci_address[16];
};
static pthread_mutex_t used_lock = PTHREAD_MUTEX_INITIALIZER;
static struct used_id used_ids[USED_IDS];	/* under used_lock, a ring */
static unsigned int used_n;			/* under used_lock: ever claimed */

static struct used_id *used_find_locked(uint32_t comm_id, const struct maia_device *dev)
{
	unsigned int n = used_n < USED_IDS ? used_n : USED_IDS;

	for (unsigned int i = 0; i < n; i++)
		if (used_ids[i].comm_id == comm_id &&
		    !strcmp(used_ids[i].pci_address, dev->pci_address))
			return &used_ids[i];
	return NULL;
}

/* False if this process already used comm_id on dev; else it is now used. */
static bool id_claim(uint32_t comm_id, const struct maia_device *dev)
{
	struct used_id *u;
	bool ok;

	pthread_mutex_lock(&used_lock);
	ok = !used_find_locked(comm_id, dev);
	if (ok) {
		u = &used_ids[used_n++ % USED_IDS];
		u->comm_id = comm_id;
		snprintf(u->pci_address, sizeof(u->pci_address), "%s", dev->pci_address);
	}
	pthread_mutex_unlock(&used_lock);
	return ok;
}

/* A communicator that was never made: its id was not used after all. */
static void id_unclaim(uint32_t comm_id, const struct maia_device *dev)
{
	struct used_id *u;

	pthread_mutex_lock(&used_lock);
	u = used_find_locked(comm_id, dev);
	if (u)
		u->comm_id = 0;		/* ids are never 0 */
	pthread_mutex_unlock(&used_lock);
}

static int comm_create(struct maia_comm **out, struct maia_device *dev, int nranks, int rank,
		       uint32_t comm_id)
{
	struct maia_comm *c;
	const char *dbg = getenv("MAIA_COMM_DEBUG");
	struct maia_device_info info;
	int algo = env_algo();
	void *cpu;
	int err;

	if (algo < 0)
		return algo;
	c = calloc(1, sizeof(*c));
	if (!c)
		return maia_error(-ENOMEM, "maia_comm: out of memory");
	c->dev = dev;
	c->rank = rank;
	c->nranks = nranks;
	c->comm_id = comm_id;
	c->timeout_ms = env_u32("MAIA_COMM_TIMEOUT_MS", COMM_DEFAULT_TIMEOUT_MS);
	c->debug = dbg && *dbg && strcmp(dbg, "0");
	c->algo = (uint8_t)algo;
	c->reach = !maia_device_info(dev, &info) && info.revision >= MAIA_HW_REVISION_FAILOVER;
	err = maia_bo_create(dev, COMM_INFLIGHT * REPORTS_PER_SLOT * sizeof(struct maia_coll_report),
			     MAIA_BO_HOST, &c->reports);
	if (!err)
		err = maia_bo_map(c->reports, &cpu);
	if (err) {
		maia_bo_destroy(c->reports);
		free(c);
		return err;
	}
	c->report_cpu = cpu;
	*out = c;
	return 0;
}

MAIA_EXPORT int maia_comm_init_rank(struct maia_comm **comm, struct maia_device *dev, int nranks,
				    const struct maia_comm_id *id, int rank)
{
	struct comm_id cid;
	int err;

	maia_error_clear();
	if (!comm || !dev || !id)
		return maia_error(-EINVAL, "maia_comm_init_rank: NULL argument");
	memcpy(&cid, id->bytes, sizeof(cid));
	if (cid.magic != COMM_ID_MAGIC || !cid.comm_id)
		return maia_error(-EINVAL, "maia_comm_init_rank: not an id from "
				  "maia_comm_get_unique_id()");
	if (nranks < 1 || nranks > (int)MAIA_COLL_MAX_RANKS || rank < 0 || rank >= nranks)
		return maia_error(-EINVAL, "maia_comm_init_rank: rank %d of %d (1..%u ranks)",
				  rank, nranks, MAIA_COLL_MAX_RANKS);
	err = comm_check_ports(dev, nranks, NULL, NULL);
	if (err)
		return err;
	if (!id_claim(cid.comm_id, dev))
		return maia_error(-EINVAL, "maia_comm_init_rank: this id already made a communicator "
				  "on device %s: ids are single-use (a new one from "
				  "maia_comm_get_unique_id(), or maia_comm_id_derive())",
				  dev->pci_address);
	err = comm_create(comm, dev, nranks, rank, cid.comm_id);
	if (err)
		id_unclaim(cid.comm_id, dev);
	return err;
}

MAIA_EXPORT int maia_comm_init_all(struct maia_comm **comms, struct maia_device *const *devs,
				   int ndev)
{
	struct maia_comm_id id;
	uint64_t *serial;
	int i, err;

	maia_error_clear();
	if (!comms || !devs || ndev < 1 || ndev > (int)MAIA_COLL_MAX_RANKS)
		return maia_error(-EINVAL, "maia_comm_init_all: NULL argument or %d devices", ndev);
	serial = calloc((size_t)ndev, sizeof(*serial));
	if (!serial)
		return -ENOMEM;
	for (i = 0; i < ndev; i++) {
		unsigned int ports;

		err = maia_fabric_ports(devs[i], &ports, &serial[i]);
		if (err)
			goto out;
	}
	/* Device i's port 0 must lead to device i + 1: the ring is the order given. */
	for (i = 0; ndev > 1 && i < ndev; i++) {
		uint64_t next;

		err = comm_check_ports(devs[i], ndev, &next, NULL);
		if (err)
			goto out;
		/* 0: its port 0 is down (failover), the order cannot be checked there. */
		if (next && next != serial[(i + 1) % ndev]) {
			err = maia_error(-ENOLINK, "maia_comm_init_all: device %d's port %u leads to "
					 "serial %#" PRIx64 ", not to device %d (%#" PRIx64 "): "
					 "the devices are not cabled as a ring in this order",
					 i, COMM_SEND_PORT, next, (i + 1) % ndev,
					 serial[(i + 1) % ndev]);
			goto out;
		}
	}
	err = maia_comm_get_unique_id(&id);
	for (i = 0; !err && i < ndev; i++) {
		err = maia_comm_init_rank(&comms[i], devs[i], ndev, &id, i);
		if (err)
			while (i--)
				maia_comm_destroy(comms[i]);
	}
out:
	free(serial);
	return err;
}

MAIA_EXPORT int maia_comm_count(const struct maia_comm *comm)
{
	return comm ? comm->nranks : -EINVAL;
}

MAIA_EXPORT int maia_comm_rank(const struct maia_comm *comm)
{
	return comm ? comm->rank : -EINVAL;
}

/* Records the communicator's first failure (and the library's last error). */
static int comm_fail(struct maia_comm *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int comm_fail(struct maia_comm *c, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->async_error) {
		c->async_error = err;
		snprintf(c->error, sizeof(c->error), "%s", msg);
	}
	return maia_error(err, "%s", msg);
}

/* Waits for the job in @s and turns a failure into the communicator's error. */
static int comm_slot_wait(struct maia_comm *c, struct comm_slot *s, int64_t timeout_ns)
{
	struct maia_job_status st;
	unsigned int idx = (unsigned int)(s - c->slot);
	int err;

	if (!s->seqno)
		return 0;
	/* maia_wait() without its checks (a collective's latency, under TCG). */
	if (timeout_ns < 0)
		return maia_error(-EINVAL, "maia_comm_sync: negative timeout");
	err = maia_wait_checked(c->dev, s->seqno, timeout_ns, &st, NULL);
	if (err == -ETIME && !timeout_ns)
		return -EAGAIN;		/* only looking */
	if (err == -ETIME)
		return comm_fail(c, -ETIMEDOUT, "maia_comm: rank %d of %d: %s #%u still running "
				 "after the wait's timeout", c->rank, c->nranks, s->name,
				 s->first_seq);
	if (err)
		return err;
	s->seqno = 0;
	c->busy--;
	if (st.status == DRM_MAIA_JOB_OK)
		return 0;
	/* The command that failed, and what the device wrote about it. */
	{
		unsigned int k = st.error_offset / sizeof(struct maia_cmd_collective);
		struct maia_coll_report r;

		if (k >= s->ncoll)
			k = 0;
		r = c->report_cpu[idx * REPORTS_PER_SLOT + k];
		if (st.device_status == MAIA_STATUS_FABRIC_COMM_BUSY)
			return comm_fail(c, -EBUSY,
					 "maia_comm: rank %d of %d: %s #%u refused: communicator id "
					 "%#x is in use on this device by another communicator (an id "
					 "makes one communicator: was it given to two processes?)",
					 c->rank, c->nranks, s->name, s->first_seq + k, c->comm_id);
		if (st.device_status == MAIA_STATUS_FABRIC_LINK && c->reach &&
		    r.unreachable_count) {
			unsigned int last = (r.unreachable_first + r.unreachable_count - 1u) %
					    (unsigned int)c->nranks;

			return comm_fail(c, -ENOLINK,
					 "maia_comm: rank %d of %d: %s #%u failed: the ring is cut "
					 "in two places, ranks %u..%u (%u, in ring order) are out of "
					 "reach", c->rank, c->nranks, s->name, s->first_seq + k,
					 r.unreachable_first, last, r.unreachable_count);
		}
		if (st.device_status == MAIA_STATUS_FABRIC_TIMEOUT ||
		    st.device_status == MAIA_STATUS_FABRIC_LINK)
			return comm_fail(c, st.device_status == MAIA_STATUS_FABRIC_LINK ?
					 -ENOLINK : -ETIMEDOUT,
					 "maia_comm: rank %d of %d: %s #%u failed at step %u waiting on "
					 "port %d for rank %u: %s", c->rank, c->nranks, s->name,
					 s->first_seq + k, r.step, (int)r.port, r.peer_rank,
					 st.device_status == MAIA_STATUS_FABRIC_LINK ?
					 "the link went down" : "the peer did not answer in time");
		return comm_fail(c, -EIO, "maia_comm: rank %d of %d: %s #%u failed: job %s, "
				 "device status %u (step %u)", c->rank, c->nranks, s->name,
				 s->first_seq + k, maia_job_status_name(st.status),
				 st.device_status, r.step);
	}
}

/* A free job slot with an empty command buffer. */
static int comm_slot_get(struct maia_comm *c, struct comm_slot **out)
{
	struct comm_slot *s;
	int err;

	/*
	 * Nothing in flight: start again at the first slot, whose command
	 * buffer exists, rather than make a new one (a buffer object, a few
	 * hundred microseconds in a guest) for each of the first
	 * COMM_INFLIGHT collectives of a program that waits for each.
	 */
	if (!c->busy)
		c->next_slot = 0;
	s = &c->slot[c->next_slot];
	/* The oldest job: collectives complete in order on a ring. */
	err = comm_slot_wait(c, s, INT64_MAX);
	if (err)
		return err;
	if (!s->cb) {
		err = maia_cmdbuf_create(c->dev, COMM_CMDBUF_BYTES, &s->cb);
		if (err)
			return err;
	}
	s->cb->used = 0;		/* maia_cmdbuf_reset() */
	s->ncoll = 0;
	s->first_seq = c->seq;
	s->name = NULL;
	c->next_slot = (c->next_slot + 1) % COMM_INFLIGHT;
	*out = s;
	return 0;
}

static int comm_slot_submit(struct maia_comm *c, struct comm_slot *s)
{
	struct maia_submit_opts opts = { .priority = DRM_MAIA_PRIO_NORMAL };
	int err;

	if (!s->ncoll)
		return 0;
	/* No fence: the user queue takes it, if the device has one. */
	if (c->fences) {
		if (!s->syncobj) {
			err = maia_syncobj_create(c->dev, &s->syncobj);
			if (err)
				return comm_fail(c, err, "maia_comm: rank %d: no syncobj for %s #%u",
						 c->rank, s->name, s->first_seq);
		}
		opts.out_syncobj = s->syncobj;
	}
	/* maia_submit() without its checks (our buffer, our device, not empty). */
	err = maia_submit_checked(c->dev, s->cb, &opts, &s->seqno);
	if (err) {
		s->seqno = 0;
		return comm_fail(c, err, "maia_comm: rank %d: submitting %s #%u failed: %s",
				 c->rank, s->name, s->first_seq, maia_strerror(err));
	}
	c->last = s;
	c->busy++;
	return 0;
}

static int comm_enqueue(struct maia_comm *c, unsigned int coll, uint64_t send_va,
			uint64_t recv_va, uint64_t count, unsigned int dtype, unsigned int redop,
			unsigned int root)
{
	struct maia_cmd_collective cmd = {
		.coll = (uint8_t)coll, .redop = (uint8_t)redop, .dtype = (uint8_t)dtype,
		.send_port = COMM_SEND_PORT, .recv_port = COMM_RECV_PORT,
		.root = (uint16_t)root, .rank = (uint16_t)c->rank, .nranks = (uint16_t)c->nranks,
		.comm_id = c->comm_id, .timeout_ms = c->timeout_ms,
		.algo = coll == MAIA_COLL_ALL_REDUCE ? c->algo : MAIA_COLL_ALGO_AUTO,
		.send_addr = send_va, .recv_addr = recv_va, .count = count,
	};
	struct comm_slot *s = c->group;

	if (c->reach)
		cmd.hdr.flags = MAIA_COLL_F_REACH;
	int err;

	maia_error_clear();
	if (c->aborted)
		return maia_error(-ECANCELED, "maia_comm: rank %d: the communicator was aborted",
				  c->rank);
	if (c->async_error)
		return maia_error(c->async_error, "maia_comm: rank %d: an earlier collective "
				  "failed: %s", c->rank, c->error);
	if (dtype != MAIA_DTYPE_FP32 && dtype != MAIA_DTYPE_BF16)
		return maia_error(-EINVAL, "maia_comm: %s of %s: only fp32 and bf16", coll_name(coll),
				  maia_dtype_name(dtype) ? maia_dtype_name(dtype) : "?");
	if (redop > MAIA_REDOP_MIN)
		return maia_error(-EINVAL, "maia_comm: unknown reduction %u", redop);
	if (root >= (unsigned int)c->nranks)
		return maia_error(-EINVAL, "maia_comm: root %u of %d ranks", root, c->nranks);
	if (cmd.algo == MAIA_COLL_ALGO_GATHER_REDUCE &&
	    !maia_coll_gather_reduce_fits(count, (unsigned int)c->nranks))
		return maia_error(-EINVAL, "maia_comm: gather-reduce of %" PRIu64 " elements on %d "
				  "ranks: more than %u bytes of inputs", count, c->nranks,
				  MAIA_COLL_GATHER_REDUCE_BYTES);
	if (s && s->ncoll == REPORTS_PER_SLOT) {
		err = comm_slot_submit(c, s);
		c->group = NULL;
		if (err)
			return err;
		s = NULL;
	}
	if (!s) {
		err = comm_slot_get(c, &s);
		if (err)
			return err;
	}
	cmd.seq = c->seq;
	cmd.report_addr = c->reports->va +
		((uint64_t)(s - c->slot) * REPORTS_PER_SLOT + s->ncoll) *
		sizeof(struct maia_coll_report);
	/* Ranks and collective valid (comm_create(), the callers): no maia_cmd_collective(). */
	err = maia_cmd_collective_put(s->cb, &cmd);
	if (err)
		return err;
	if (!s->ncoll)
		s->name = coll_name(coll);
	s->ncoll++;
	c->seq++;
	if (c->debug)
		fprintf(stderr, "maia_comm: rank %d/%d comm %#x #%u %s count %" PRIu64 " %s "
			"algorithm %s send-port %u recv-port %u chunk device-default\n",
			c->rank, c->nranks, c->comm_id, cmd.seq, coll_name(coll), count,
			dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16",
			maia_coll_gather_reduce(&cmd) ? "gather-reduce" : "ring",
			COMM_SEND_PORT, COMM_RECV_PORT);
	if (group_depth) {
		if (!c->group) {
			if (group_ncomms == sizeof(group_comms) / sizeof(group_comms[0]))
				return maia_error(-ENOSPC, "maia_comm: more than %zu communicators "
						  "in one group", sizeof(group_comms) /
						  sizeof(group_comms[0]));
			group_comms[group_ncomms++] = c;
			c->group = s;
		}
		return 0;
	}
	return comm_slot_submit(c, s);
}

MAIA_EXPORT int maia_all_reduce(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
				uint64_t count, unsigned int dtype, unsigned int redop)
{
	if (!comm)
		return maia_error(-EINVAL, "maia_all_reduce: NULL communicator");
	return comm_enqueue(comm, MAIA_COLL_ALL_REDUCE, send_va, recv_va, count, dtype, redop, 0);
}

MAIA_EXPORT int maia_all_gather(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
				uint64_t send_count, unsigned int dtype)
{
	if (!comm)
		return maia_error(-EINVAL, "maia_all_gather: NULL communicator");
	return comm_enqueue(comm, MAIA_COLL_ALL_GATHER, send_va, recv_va, send_count, dtype, 0, 0);
}

MAIA_EXPORT int maia_reduce_scatter(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
				    uint64_t recv_count, unsigned int dtype, unsigned int redop)
{
	if (!comm)
		return maia_error(-EINVAL, "maia_reduce_scatter: NULL communicator");
	return comm_enqueue(comm, MAIA_COLL_REDUCE_SCATTER, send_va, recv_va, recv_count, dtype,
			    redop, 0);
}

MAIA_EXPORT int maia_broadcast(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
			       uint64_t count, unsigned int dtype, int root)
{
	if (!comm || root < 0)
		return maia_error(-EINVAL, "maia_broadcast: NULL communicator or root %d", root);
	return comm_enqueue(comm, MAIA_COLL_BROADCAST, send_va, recv_va, count, dtype, 0,
			    (unsigned int)root);
}

MAIA_EXPORT int maia_all_to_all(struct maia_comm *comm, uint64_t send_va, uint64_t recv_va,
				uint64_t count, unsigned int dtype)
{
	if (!comm)
		return maia_error(-EINVAL, "maia_all_to_all: NULL communicator");
	return comm_enqueue(comm, MAIA_COLL_ALL_TO_ALL, send_va, recv_va, count, dtype, 0, 0);
}

MAIA_EXPORT int maia_group_start(void)
{
	group_depth++;
	return 0;
}

MAIA_EXPORT int maia_group_end(void)
{
	int err = 0, e;
	unsigned int i;

	maia_error_clear();
	if (!group_depth)
		return maia_error(-EINVAL, "maia_group_end: no maia_group_start");
	if (--group_depth)
		return 0;
	for (i = 0; i < group_ncomms; i++) {
		struct maia_comm *c = group_comms[i];

		e = comm_slot_submit(c, c->group);
		c->group = NULL;
		if (e && !err)
			err = e;
	}
	group_ncomms = 0;
	return err;
}

MAIA_EXPORT int maia_comm_sync(struct maia_comm *comm, int64_t timeout_ns)
{
	unsigned int i;
	int err;

	maia_error_clear();
	if (!comm)
		return maia_error(-EINVAL, "maia_comm_sync: NULL communicator");
	/*
	 * Oldest first: next_slot is the oldest slot that may be in use. Only
	 * while some are (busy): a program that waits for each collective has
	 * one job in flight, and the other slots would each cost a call (a
	 * small collective's latency, in a guest under TCG; benchmarks.rst).
	 */
	for (i = 0; i < COMM_INFLIGHT && comm->busy; i++) {
		err = comm_slot_wait(comm, &comm->slot[(comm->next_slot + i) % COMM_INFLIGHT],
				     timeout_ns);
		if (err)
			return err;
	}
	return comm->async_error ? maia_error(comm->async_error, "%s", comm->error) : 0;
}

MAIA_EXPORT int maia_comm_async_error(struct maia_comm *comm, const char **message)
{
	unsigned int i;

	if (!comm)
		return -EINVAL;
	/* Collect what finished without blocking. */
	for (i = 0; i < COMM_INFLIGHT && !comm->async_error && comm->busy; i++)
		comm_slot_wait(comm, &comm->slot[(comm->next_slot + i) % COMM_INFLIGHT], 0);
	if (message)
		*message = comm->error;
	return comm->async_error;
}

MAIA_EXPORT int maia_comm_fence(struct maia_comm *comm, int *fence_fd)
{
	maia_error_clear();
	if (!comm || !fence_fd)
		return maia_error(-EINVAL, "maia_comm_fence: NULL argument");
	if (!comm->last)
		return maia_error(-ENOENT, "maia_comm_fence: no collective submitted yet");
	if (!comm->fences) {
		struct comm_slot *last = comm->last;
		uint32_t done;
		int err;

		/*
		 * Its jobs had no fence (user queue): wait for the last one
		 * and say so with a signalled fence; later jobs carry fences.
		 */
		comm->fences = true;
		err = comm_slot_wait(comm, last, INT64_MAX);
		if (err)
			return err;
		if (drmSyncobjCreate(comm->dev->fd, DRM_SYNCOBJ_CREATE_SIGNALED, &done))
			return maia_error(-errno, "maia_comm_fence: creating a signalled syncobj "
					  "failed");
		err = maia_syncobj_export(comm->dev, done, fence_fd);
		maia_syncobj_destroy(comm->dev, done);
		return err;
	}
	return maia_syncobj_export(comm->dev, comm->last->syncobj, fence_fd);
}

MAIA_EXPORT int maia_comm_abort(struct maia_comm *comm)
{
	if (!comm)
		return -EINVAL;
	comm->aborted = true;
	return 0;
}

MAIA_EXPORT int maia_comm_set_algorithm(struct maia_comm *comm, unsigned int algo)
{
	maia_error_clear();
	if (!comm)
		return maia_error(-EINVAL, "maia_comm_set_algorithm: NULL communicator");
	if (algo > MAIA_COLL_ALGO_GATHER_REDUCE)
		return maia_error(-EINVAL, "maia_comm_set_algorithm: unknown algorithm %u", algo);
	comm->algo = (uint8_t)algo;
	return 0;
}

MAIA_EXPORT void maia_comm_destroy(struct maia_comm *comm)
{
	unsigned int i;

	if (!comm)
		return;
	/*
	 * Jobs still running end by themselves: a collective whose peers are
	 * gone fails after the device's timeout. Their buffers stay alive in
	 * the kernel until then.
	 */
	for (i = 0; i < COMM_INFLIGHT; i++) {
		if (!comm->aborted)
			comm_slot_wait(comm, &comm->slot[i], INT64_MAX);
		maia_cmdbuf_destroy(comm->slot[i].cb);
		if (comm->slot[i].syncobj)
			maia_syncobj_destroy(comm->dev, comm->slot[i].syncobj);
	}
	maia_bo_destroy(comm->reports);
	free(comm);
}
