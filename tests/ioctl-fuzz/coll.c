// SPDX-License-Identifier: MIT
/*
 * The collective worker of maia_ioctl_fuzz (see maia_ioctl_fuzz.c): fabric
 * discovery, the rounds of MAIA_OP_COLLECTIVE jobs across ring-cabled devices
 * and their checks, and the all-reduces after the run (coll_abandon(),
 * coll_final()).
 */
#include "fuzz.h"

/* --- collectives -------------------------------------------------------- */

/*
 * The collective worker: when devices of the guest have their fabric ports
 * cabled as a ring (qemu/run-guest --fabric ring), one more process runs
 * MAIA_OP_COLLECTIVE jobs on every device of the ring as the ranks of one
 * communicator, a round at a time, while the other workers run. It holds one
 * file per device, so it submits every rank itself and can make one late.
 */
#define COLL_BO_SIZE	(8 * MIB)		/* a rank's send and receive BOs */
#define COLL_MAX_BYTES	(4 * MIB)		/* the largest buffer of a round */
#define COLL_CMD_SIZE	(64 * KIB)
#define COLL_REPORT_OFF	(32 * KIB)		/* reports, in the command BO */
/* BO i mapped read-write at COLL_VA(2 i), read-only at COLL_VA(2 i + 1). */
#define COLL_VA(i)	(DRM_MAIA_VA_START + (uint64_t)(i) * 16 * MIB)
#define COLL_HOLE_VA	COLL_VA(6)		/* never mapped */
#define COLL_JOB_BOUND_S 40			/* every collective job ends within */
#define COLL_GUARD	64			/* bytes checked around a buffer */
/*
 * Chunks no collective will claim (a bogus communicator's, or sent on a port
 * nobody receives on) stay held on the peer's port for 130 s (fabric.rst,
 * "Leftovers"); a full list (256) refuses what follows and stalls the link.
 * Rounds that leave such chunks keep below this many per port and 130 s, so
 * the fuzzer does not block the link it tests.
 */
#define COLL_JUNK_MAX	96
#define COLL_JUNK_S	130

enum { CB_CMD, CB_SEND, CB_RECV, CB_N };

struct fabric fab;

/* A file of the collective worker on one device, with a rank's buffers. */
struct crank {
	int fd, node;
	bool hbm;
	uint32_t h[CB_N];
	unsigned char *cpu[CB_N];
	uint64_t size[CB_N];
	/* its user queue, if it has one: jobs with no system call, as libmaia's */
	bool has_uq;
	uint32_t uq_id, uq_entries, uq_written;
	uint16_t asid;
	struct maia_sq_entry *sq;
	volatile struct maia_cq_entry *cq;
	volatile uint32_t *db;
};

enum { RC_CLEAN, RC_ODD, RC_FAULTY, RC_BAD };	/* what a rank may end with */
enum { RW_NOW, RW_LATE, RW_NEVER };
enum { RM_NONE, RM_RW, RM_RO, RM_TAIL };	/* where its receive buffer is */

/* One rank of a round: its command, how it is wrong, what became of it. */
struct cplan {
	struct maia_cmd_collective k;
	int node, cls, when, recv_mode;
	bool killed, sync, nop, report_ok, uq;
	unsigned int delay_ms, kill_ms, prio, extra;
	int send_bo;				/* its BO (-1: not ours to fill) */
	uint64_t send_off, recv_off, report_off;
	uint64_t recv_len;			/* bytes, as placed */
	uint64_t send_len;			/* bytes of it in the send BO */
	uint64_t bad_lo, bad_hi;		/* RC_FAULTY: the memory that fails */
	uint64_t send_sum, recv_sum;		/* of the bytes as filled */
	const char *what;			/* its mutation */
	bool submitted, waited;
	uint64_t seqno;
	uint32_t uq_n;				/* the user queue's count with its job */
	uint32_t sync_h;
	int64_t t_sub;
	struct drm_maia_wait w;
	pid_t pid;
	int pipe_rd;
};

static struct crank cranks[MAX_NODES];		/* by node */
static uint32_t coll_comm, coll_seq, coll_salt;
static char round_desc[640];
static struct junk_ev {
	int64_t t;
	int node, port;
	unsigned int msgs;
} junk[1024];
static unsigned int njunk;

static int cio(int fd, unsigned long cmd, void *arg)
{
	int err = ioctl(fd, cmd, arg) ? errno : 0;

	count_result(err);
	return err;
}

/* Reads every port of every node and finds the longest ring of them. */
static void fabric_read(void)
{
	static uint64_t peer_serial[MAX_NODES][MAX_PORTS];
	int i, j, p, r[MAX_NODES];

	memset(&fab, 0, sizeof(fab));
	memset(peer_serial, 0, sizeof(peer_serial));
	for (i = 0; i < nodes.n; i++) {
		struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_FABRIC_PORTS };
		int fd = open(nodes.path[i], O_RDWR | O_CLOEXEC);

		for (p = 0; p < MAX_PORTS; p++)
			fab.peer_node[i][p] = -1;
		if (fd < 0)
			continue;
		if (!ioctl(fd, DRM_IOCTL_MAIA_GET_PARAM, &gp))
			fab.nports[i] = gp.value < MAX_PORTS ? (int)gp.value : MAX_PORTS;
		gp = (struct drm_maia_get_param){ .param = DRM_MAIA_PARAM_FABRIC_SERIAL };
		if (!ioctl(fd, DRM_IOCTL_MAIA_GET_PARAM, &gp))
			fab.serial[i] = gp.value;
		for (p = 0; p < fab.nports[i]; p++) {
			struct drm_maia_fabric_port fp = { .port = (uint32_t)p };

			if (!ioctl(fd, DRM_IOCTL_MAIA_FABRIC_PORT, &fp) &&
			    (fp.flags & DRM_MAIA_FABRIC_PORT_UP) && fp.peer_port < MAX_PORTS) {
				peer_serial[i][p] = fp.peer_serial;
				fab.peer_port[i][p] = (int)fp.peer_port;
			}
		}
		close(fd);
	}
	for (i = 0; i < nodes.n; i++)
		for (p = 0; p < fab.nports[i]; p++)
			for (j = 0; j < nodes.n && peer_serial[i][p]; j++)
				if (fab.serial[j] == peer_serial[i][p])
					fab.peer_node[i][p] = j;
	/* The cabling convention: node i's port 0 to the next node's port 1. */
	for (i = 0; i < nodes.n; i++) {
		int cur = i, len = 0;

		do {
			r[len++] = cur;
			if (fab.nports[cur] < 2 || fab.peer_node[cur][0] < 0 ||
			    fab.peer_port[cur][0] != 1) {
				len = 0;
				break;
			}
			cur = fab.peer_node[cur][0];
		} while (cur != i && len < nodes.n);
		if (cur == i && len >= 2 && len > fab.n) {
			fab.n = len;
			memcpy(fab.ring, r, sizeof(r));
		}
	}
}

/* Waits up to 10 s for a ring to come up if two nodes have ports. */
void fabric_discover(void)
{
	int64_t end = mono_ns() + 10000000000ll;
	int i, with_ports;

	for (;;) {
		fabric_read();
		for (i = 0, with_ports = 0; i < nodes.n; i++)
			with_ports += fab.nports[i] >= 2;
		if (fab.n >= 2 || with_ports < 2 || mono_ns() > end)
			break;
		usleep(200000);
	}
}

static void uq_close(struct crank *k)
{
	struct drm_maia_userq_destroy d = { .queue_id = k->uq_id };

	if (k->sq)
		munmap(k->sq, PAGE);
	if (k->cq)
		munmap((void *)k->cq, PAGE);
	if (k->db)
		munmap((void *)k->db, PAGE);
	if (k->has_uq)
		cio(k->fd, DRM_IOCTL_MAIA_USERQ_DESTROY, &d);
	k->sq = NULL;
	k->cq = NULL;
	k->db = NULL;
	k->has_uq = false;
}

/* A user queue for k's file; false if there is none to have (then SUBMIT). */
static bool uq_open(struct crank *k)
{
	struct drm_maia_context_status cs = { 0 };
	struct drm_maia_userq_create c = { .priority = (uint32_t)rn(3) };
	void *p[3];
	int err, i;

	if (cio(k->fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs))
		return false;
	err = cio(k->fd, DRM_IOCTL_MAIA_USERQ_CREATE, &c);
	if (err) {	/* all taken (the other workers make some), none, or faulted */
		expect(NULL, "collective USERQ_CREATE", err, ALLOW(EBUSY, ENODEV, EBADFD));
		return false;
	}
	k->has_uq = true;
	k->uq_id = c.queue_id;
	k->uq_entries = c.entries;
	k->uq_written = 0;
	k->asid = (uint16_t)cs.asid;
	p[0] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, c.sq_offset);
	p[1] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, c.cq_offset);
	p[2] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, c.doorbell_offset);
	k->sq = p[0] == MAP_FAILED ? NULL : p[0];
	k->cq = p[1] == MAP_FAILED ? NULL : p[1];
	k->db = p[2] == MAP_FAILED ? NULL : p[2];
	for (i = 0; i < 3; i++)
		if (p[i] == MAP_FAILED) {
			violation("collective worker: mmap of user queue %u's pages: %s", c.queue_id,
				  strerror(errno));
			uq_close(k);
			return false;
		}
	return true;
}

/* The state the kernel wrote when the queue stopped (ACTIVE until then). */
static uint32_t uq_state(const struct crank *k)
{
	return __atomic_load_n((const volatile uint32_t *)((const volatile char *)k->cq +
							     DRM_MAIA_USERQ_STATE_OFFSET),
			       __ATOMIC_ACQUIRE);
}

static void crank_close(struct crank *k)
{
	int i;

	if (k->fd >= 0)
		uq_close(k);
	for (i = 0; i < CB_N; i++)
		if (k->cpu[i])
			munmap(k->cpu[i], k->size[i]);
	if (k->fd >= 0)
		close(k->fd);
	memset(k, 0, sizeof(*k));
	k->fd = -1;
}

/* Opens node with a rank's three BOs, each mapped twice; false if it could not. */
static bool crank_open(struct crank *k, int node, bool hbm)
{
	int i, j, err;

	memset(k, 0, sizeof(*k));
	k->node = node;
	k->hbm = hbm;
	k->fd = open(nodes.path[node], O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		if (errno != EBUSY)
			violation("collective worker: open %s: %s", nodes.path[node],
				  strerror(errno));
		k->fd = -1;
		return false;
	}
	for (i = 0; i < CB_N; i++) {
		struct drm_maia_bo_create bc = {
			.size = i == CB_CMD ? COLL_CMD_SIZE : COLL_BO_SIZE,
			.flags = i != CB_CMD && hbm ? DRM_MAIA_BO_HBM : DRM_MAIA_BO_HOST,
		};
		struct drm_maia_bo_info bi = { 0 };
		void *p;

		err = cio(k->fd, DRM_IOCTL_MAIA_BO_CREATE, &bc);
		if (err) {
			expect(NULL, "collective BO_CREATE", err, ALLOW(ENOMEM, ETIMEDOUT));
			goto fail;
		}
		k->h[i] = bc.handle;
		bi.handle = bc.handle;
		err = cio(k->fd, DRM_IOCTL_MAIA_BO_INFO, &bi);
		if (err) {
			expect(NULL, "collective BO_INFO", err, ALLOW(0));
			goto fail;
		}
		p = mmap(NULL, bc.size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, bi.mmap_offset);
		if (p == MAP_FAILED) {
			expect(NULL, "collective mmap", errno, ALLOW(ENOMEM));
			goto fail;
		}
		k->cpu[i] = p;
		k->size[i] = bc.size;
		for (j = 0; j < 2; j++) {
			struct drm_maia_vm_bind vb = {
				.op = DRM_MAIA_VM_MAP, .handle = bc.handle,
				.va = COLL_VA(2 * i + j), .size = bc.size,
				.flags = j ? DRM_MAIA_VM_READONLY : 0,
			};

			err = cio(k->fd, DRM_IOCTL_MAIA_VM_BIND, &vb);
			if (err) {
				expect(NULL, "collective VM_BIND", err, ALLOW(ENOMEM));
				goto fail;
			}
		}
	}
	return true;
fail:
	crank_close(k);
	return false;
}

static unsigned int coll_esize(const struct maia_cmd_collective *k)
{
	return k->dtype == MAIA_DTYPE_BF16 ? 2 : 4;
}

/* Elements of the send and receive buffers of a command (nranks its own). */
static uint64_t coll_send_elems(const struct maia_cmd_collective *k)
{
	return k->count * (k->coll == MAIA_COLL_REDUCE_SCATTER ||
			   k->coll == MAIA_COLL_ALL_TO_ALL ? k->nranks : 1);
}

static uint64_t coll_recv_elems(const struct maia_cmd_collective *k)
{
	return k->count * (k->coll == MAIA_COLL_ALL_GATHER ||
			   k->coll == MAIA_COLL_ALL_TO_ALL ? k->nranks : 1);
}

/* Rank r's input element i: small integers, so every sum is exact in any order. */
static int coll_val(unsigned int r, uint64_t i)
{
	return (int)(((uint32_t)i * 2654435761u + r * 2246822519u + coll_salt) >> 27) - 16;
}

/* An element as the dtype stores it (BF16 by truncation: exact for these). */
static uint32_t coll_bits(float v, unsigned int esz)
{
	uint32_t b;

	memcpy(&b, &v, 4);
	return esz == 2 ? b >> 16 : b;
}

static uint32_t coll_get(const unsigned char *p, unsigned int esz, uint64_t i)
{
	uint32_t b = 0;

	memcpy(&b, p + i * esz, esz);
	return b;
}

/* What element j of rank k->rank's receive buffer must hold. */
static int coll_expect(const struct maia_cmd_collective *k, uint64_t j)
{
	unsigned int q;
	uint64_t idx = j;
	int acc, v;

	switch (k->coll) {
	case MAIA_COLL_ALL_GATHER:
		return coll_val((unsigned int)(j / k->count), j % k->count);
	case MAIA_COLL_BROADCAST:
		return coll_val(k->root, j);
	case MAIA_COLL_ALL_TO_ALL:
		return coll_val((unsigned int)(j / k->count), k->rank * k->count + j % k->count);
	case MAIA_COLL_REDUCE_SCATTER:
		idx = k->rank * k->count + j;
		/* fall through */
	default:
		acc = coll_val(0, idx);
		for (q = 1; q < k->nranks; q++) {
			v = coll_val(q, idx);
			if (k->redop == MAIA_REDOP_SUM)
				acc += v;
			else if (k->redop == MAIA_REDOP_MAX ? v > acc : v < acc)
				acc = v;
		}
		return acc;
	}
}

/* The first element of a receive buffer that is not the CPU's result. */
static uint64_t coll_first_wrong(const unsigned char *b, const struct maia_cmd_collective *k)
{
	unsigned int esz = coll_esize(k);
	uint64_t i, ne = coll_recv_elems(k);

	for (i = 0; i < ne; i++)
		if (coll_get(b, esz, i) != coll_bits((float)coll_expect(k, i), esz))
			break;
	return i;
}

static uint64_t sum_bytes(const unsigned char *p, uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* The receive buffer as placed, with its guards, clipped to its BO. */
static void recv_span(const struct cplan *p, uint64_t *lo, uint64_t *hi)
{
	*lo = p->recv_off > COLL_GUARD ? p->recv_off - COLL_GUARD : 0;
	*hi = p->recv_off + p->recv_len + COLL_GUARD;
	if (p->recv_mode == RM_TAIL)
		*hi = p->recv_off;
	else if (*hi > COLL_BO_SIZE)
		*hi = COLL_BO_SIZE;
}

/* An offset for a buffer of len bytes in a BO, with room for the guards. */
static uint64_t pick_off(uint64_t len, unsigned int esz)
{
	uint64_t room = COLL_BO_SIZE - 2 * COLL_GUARD - len;

	if (pct(50))
		return COLL_GUARD;
	return COLL_GUARD + (pct(50) ? rn(room / 64 + 1) * 64 : rn(room / esz + 1) * esz);
}

/* Places a rank's buffers for its command as it stands (in place kept). */
static void place_rank(struct cplan *p, bool in_place)
{
	struct maia_cmd_collective *k = &p->k;
	unsigned int esz = coll_esize(k);

	p->recv_mode = RM_RW;
	p->recv_len = coll_recv_elems(k) * esz;
	p->recv_off = pick_off(p->recv_len, esz);
	k->recv_addr = COLL_VA(2 * CB_RECV) + p->recv_off;
	p->send_len = coll_send_elems(k) * esz;
	if (in_place) {
		p->send_bo = CB_RECV;
		p->send_off = p->recv_off;
		k->send_addr = k->recv_addr;
	} else {
		p->send_bo = CB_SEND;
		p->send_off = pick_off(p->send_len, esz);
		/* Its read-only mapping now and then: a collective only reads it. */
		k->send_addr = COLL_VA(2 * CB_SEND + pct(15)) + p->send_off;
	}
}

/* Makes a rank's memory fail in one of the ways a guest can arrange. */
static void coll_fault(struct cplan *p)
{
	struct maia_cmd_collective *k = &p->k;
	unsigned int esz = coll_esize(k);
	uint64_t sb = coll_send_elems(k) * esz, rb = coll_recv_elems(k) * esz;
	bool in_place = k->send_addr == k->recv_addr;
	bool reads = k->coll != MAIA_COLL_BROADCAST || k->rank == k->root;
	bool writes = !(k->coll == MAIA_COLL_BROADCAST && in_place && k->rank == k->root);
	unsigned int c = (unsigned int)rn(7);

	if (c < 2 && (in_place || !reads))
		c += 2;		/* its send buffer is its receive buffer, or unread */
	if (c == 3 && !writes)
		c = 5;
	p->cls = RC_FAULTY;
	switch (c) {
	case 0:
		k->send_addr = COLL_HOLE_VA + rn(1024) * esz;
		p->send_bo = -1;
		p->what = "send buffer unmapped";
		break;
	case 1:	/* the second half past the end of its mapping; the first is sound */
		p->send_len = (sb / 2) & ~(uint64_t)(esz - 1);
		p->send_off = COLL_BO_SIZE - p->send_len;
		k->send_addr = COLL_VA(2 * CB_SEND) + p->send_off;
		p->what = "send buffer running past its mapping";
		break;
	case 2:
		k->recv_addr = COLL_HOLE_VA + rn(1024) * esz;
		p->recv_mode = RM_NONE;
		p->what = "receive buffer unmapped";
		break;
	case 3:
		k->recv_addr += 16 * MIB;
		p->recv_mode = RM_RO;
		p->what = "receive buffer read-only";
		break;
	case 4:
		p->recv_off = COLL_BO_SIZE - ((rb / 2) & ~(uint64_t)(esz - 1));
		k->recv_addr = COLL_VA(2 * CB_RECV) + p->recv_off;
		p->recv_mode = RM_TAIL;
		p->what = "receive buffer running past its mapping";
		break;
	case 5:
		k->report_addr = COLL_HOLE_VA + rn(512) * 8;
		p->report_ok = false;
		p->what = "report unmapped";
		break;
	default:
		k->report_addr = COLL_VA(2 * CB_CMD + 1) + p->report_off;
		p->report_ok = false;
		p->what = "report read-only";
		break;
	}
	if (in_place && c >= 2 && c <= 4) {
		k->send_addr = k->recv_addr;
		p->send_bo = p->recv_mode == RM_NONE ? -1 : CB_RECV;
		p->send_off = p->recv_off;
		if (p->recv_mode == RM_TAIL)
			p->send_len = COLL_BO_SIZE - p->recv_off;
	}
	if (c >= 5) {
		p->bad_lo = k->report_addr;
		p->bad_hi = k->report_addr + sizeof(struct maia_coll_report);
	} else if (c < 2) {
		p->bad_lo = k->send_addr;
		p->bad_hi = k->send_addr + sb;
	} else {
		p->bad_lo = k->recv_addr;
		p->bad_hi = k->recv_addr + rb;
	}
}

/* Whether every rank's send port reaches the next rank's receive port. */
static bool coll_wired(const struct cplan *pl, unsigned int n)
{
	unsigned int r;

	for (r = 0; r < n; r++) {
		const struct cplan *a = &pl[r], *b = &pl[(r + 1) % n];
		unsigned int sp = a->k.send_port;

		if (sp >= MAX_PORTS || fab.peer_node[a->node][sp] != b->node ||
		    fab.peer_port[a->node][sp] != (int)b->k.recv_port)
			return false;
	}
	return true;
}

/* Unclaimed messages we may have left on node's port in the last 130 s. */
static unsigned int junk_held(int node, int port)
{
	int64_t since = mono_ns() - COLL_JUNK_S * 1000000000ll;
	unsigned int i, sum = 0;

	for (i = 0; i < ARRAY_SIZE(junk); i++)
		if (junk[i].msgs && junk[i].t > since && junk[i].node == node &&
		    junk[i].port == port)
			sum += junk[i].msgs;
	return sum;
}

/*
 * Accounts for what rank p sends that no collective will claim (its step 0
 * at most: it receives nothing that would make it forward); false, and
 * nothing recorded, if that would pass the budget of the port it reaches.
 */
static bool junk_take(const struct cplan *p)
{
	const struct maia_cmd_collective *k = &p->k;
	uint64_t chunk = k->chunk_bytes ? k->chunk_bytes : 61440;
	uint64_t bytes = k->count * 4 * (k->nranks > 2 ? k->nranks - 1u : 1u);
	unsigned int sp = k->send_port, msgs;
	int node, port;

	if (sp >= MAX_PORTS || fab.peer_node[p->node][sp] < 0)
		return true;
	node = fab.peer_node[p->node][sp];
	port = fab.peer_port[p->node][sp];
	msgs = (unsigned int)((bytes + chunk - 1) / chunk) + 1;
	if (junk_held(node, port) + msgs > COLL_JUNK_MAX)
		return false;
	junk[njunk++ % ARRAY_SIZE(junk)] = (struct junk_ev){
		.t = mono_ns(), .node = node, .port = port, .msgs = msgs,
	};
	return true;
}

/* A command the device must refuse (BAD_CMD), one field at a time. */
static const char *coll_invalid(struct cplan *p, unsigned int n)
{
	struct maia_cmd_collective *k = &p->k;

	switch (rn(11)) {
	case 0:
		k->rank = (uint16_t)(n + rn(8));
		return "rank >= nranks";
	case 1:
		k->nranks = 0;
		return "nranks 0";
	case 2:
		if (pct(50))
			k->send_port = (uint8_t)(fab.nports[p->node] + rn(200));
		else
			k->recv_port = (uint8_t)(fab.nports[p->node] + rn(200));
		return "a port the device does not have";
	case 3:
		/* Bit 0 is MAIA_COLL_F_REACH, valid since hardware 1.10. */
		k->hdr.flags = (uint16_t)(1u << (1 + rn(15)));
		return "header flags";
	case 4:
		k->reserved1 = (uint32_t)rnd() | 1;
		return "reserved1";
	case 5:
		if (pct(50)) {
			k->hdr.size = sizeof(*k) + 8;
			p->extra = 8;
		} else {
			k->hdr.size = sizeof(*k) - 8;
		}
		return "header size";
	case 6:
		switch (rn(4)) {
		case 0:
			k->coll = (uint8_t)(pct(50) ? 0 : 6 + rn(250));
			return "unknown collective";
		case 1:
			k->dtype = (uint8_t)(pct(50) ? MAIA_DTYPE_FP16 : 3 + rn(253));
			return "unsupported dtype";
		case 2:
			if (k->coll == MAIA_COLL_ALL_REDUCE ||
			    k->coll == MAIA_COLL_REDUCE_SCATTER) {
				k->redop = (uint8_t)(3 + rn(253));
				return "unknown reduction";
			}
			/* fall through */
		default:
			k->coll = MAIA_COLL_BROADCAST;
			k->root = (uint16_t)(n + rn(100));
			return "root >= nranks";
		}
	case 7:
		k->chunk_bytes = pct(50) ? 61440 + 4 * (1 + (uint32_t)rn(1000)) :
					   4 * (uint32_t)rn(15360) + 1 + (uint32_t)rn(3);
		return "chunk_bytes";
	case 8:	/* overlap that is not in place, or in place where not allowed */
		if (k->coll == MAIA_COLL_ALL_REDUCE || k->coll == MAIA_COLL_BROADCAST)
			k->recv_addr = k->send_addr + (p->send_len > coll_esize(k) ?
						       coll_esize(k) : 1);
		else
			k->recv_addr = k->send_addr;
		return "overlapping buffers";
	case 9:
		switch (rn(3)) {
		case 0:
			k->report_addr = COLL_VA(2 * CB_CMD) + p->report_off + 4;
			return "unaligned report";
		case 1:	/* its end past 2^64 */
			k->send_addr = ~0ull - rn(p->send_len > 1 ? p->send_len - 1 : 1);
			return "send buffer wrapping";
		default:
			k->count = 1ull << (61 + rn(3));
			return "count * nranks * 4 overflowing";
		}
	default:
		if (k->coll == MAIA_COLL_ALL_REDUCE && pct(50)) {
			k->algo = MAIA_COLL_ALGO_GATHER_REDUCE;
			k->count = MAIA_COLL_GATHER_REDUCE_BYTES / 4 / n + 1 + rn(1000);
			return "gather-reduce over its size";
		}
		k->algo = (uint8_t)(3 + rn(253));
		return "unknown algorithm";
	}
}

/* One rank's command or wiring made to disagree with the others'. */
static void coll_bogus(struct cplan *pl, unsigned int n, bool *odd)
{
	unsigned int x = (unsigned int)rn(n), r;
	struct cplan *p = &pl[x];
	struct maia_cmd_collective *k = &p->k;
	bool in_place = k->send_addr == k->recv_addr;

	switch (rn(10)) {	/* 6..9: a command the device must refuse */
	case 0:		/* its own communicator: the others time out */
		k->comm_id ^= 1 + (uint32_t)rn(0xffff);
		k->count = 1 + rn(k->count < 4096 ? k->count : 4096);
		place_rank(p, in_place);
		if (!junk_take(p))
			break;
		p->cls = RC_ODD;
		p->what = "another communicator";
		return;
	case 1:
		k->rank = (uint16_t)((x + 1 + rn(n - 1)) % n);
		p->what = "another rank's number";
		*odd = true;
		return;
	case 2:
		k->nranks = pct(30) ? 1 : (uint16_t)(n + 1 + rn(3));
		if (k->nranks == 1)
			k->rank = 0;
		place_rank(p, in_place);
		p->what = "another nranks";
		*odd = true;
		break;
	case 3:		/* its ports the other way round: the ring breaks */
		k->send_port = 1;
		k->recv_port = 0;
		k->count = 1 + rn(k->count < 4096 ? k->count : 4096);
		place_rank(p, in_place);
		if (coll_wired(pl, n) || !junk_take(p)) {
			k->send_port = 0;
			k->recv_port = 1;
			break;
		}
		p->what = "ports swapped";
		*odd = true;
		return;
	case 4:		/* every rank's: the ring runs the other way, which works */
		for (r = 0; r < n; r++) {
			pl[r].node = fab.ring[(n - r) % n];
			pl[r].k.send_port = 1;
			pl[r].k.recv_port = 0;
		}
		if (coll_wired(pl, n)) {
			p->what = "ring reversed (every rank)";
			return;
		}
		for (r = 0; r < n; r++) {
			pl[r].node = fab.ring[r];
			pl[r].k.send_port = 0;
			pl[r].k.recv_port = 1;
		}
		break;
	case 5:		/* a field every rank must share */
		switch (rn(6)) {
		case 0:
			k->count += 1 + rn(100);
			break;
		case 1:
			k->dtype = k->dtype == MAIA_DTYPE_FP32 ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32;
			break;
		case 2:
			k->coll = (uint8_t)(MAIA_COLL_ALL_REDUCE + (k->coll + rn(4)) % 5);
			if (k->coll != MAIA_COLL_ALL_REDUCE && k->coll != MAIA_COLL_BROADCAST)
				in_place = false;
			k->algo = MAIA_COLL_ALGO_AUTO;
			break;
		case 3:
			k->redop = (uint8_t)((k->redop + 1) % 3);
			break;
		case 4:
			k->chunk_bytes = 4 * (1 + (uint32_t)rn(15360));
			break;
		default:	/* an earlier seq: its chunks are stale to the others */
			k->seq -= k->seq >= 3 ? 1 + (uint32_t)rn(3) : 0;
			break;
		}
		place_rank(p, in_place);
		p->what = "a field that differs from the others'";
		*odd = true;
		break;
	default:
		p->what = coll_invalid(p, n);
		p->cls = RC_BAD;
		return;
	}
	if (!*odd) {		/* a mutation above that could not be made */
		p->what = coll_invalid(p, n);
		p->cls = RC_BAD;
	} else if (k->coll == MAIA_COLL_ALL_REDUCE && k->algo == MAIA_COLL_ALGO_GATHER_REDUCE &&
		   !maia_coll_gather_reduce_fits(k->count, k->nranks)) {
		p->what = "gather-reduce over its size (another count or nranks)";
		p->cls = RC_BAD;
	}
}

static const char *const coll_names[] = {
	"?", "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all",
};

/* Draws a round: the command every rank shares, then what goes wrong. */
static void coll_plan(struct cplan *pl, unsigned int n)
{
	struct maia_cmd_collective b;
	unsigned int r, mult, prio = (unsigned int)rn(3);
	int late = -1, never = -1, kill_r = -1, faulty = -1;
	bool odd = false, uq = pct(opt_coll_userq);
	uint64_t maxc, c;
	size_t len;

	memset(&b, 0, sizeof(b));
	b.hdr.opcode = MAIA_OP_COLLECTIVE;
	b.hdr.size = sizeof(b);
	b.coll = (uint8_t)(pct(40) ? MAIA_COLL_ALL_REDUCE : MAIA_COLL_ALL_REDUCE + rn(5));
	b.redop = (uint8_t)rn(3);
	b.dtype = pct(70) ? MAIA_DTYPE_FP32 : MAIA_DTYPE_BF16;
	b.nranks = (uint16_t)n;
	b.root = (uint16_t)rn(n);
	b.comm_id = coll_comm;
	b.seq = coll_seq++;
	b.send_port = 0;
	b.recv_port = 1;
	/* Room for a rank that claims a few more ranks than there are. */
	mult = b.coll == MAIA_COLL_ALL_GATHER || b.coll == MAIA_COLL_REDUCE_SCATTER ||
	       b.coll == MAIA_COLL_ALL_TO_ALL ? n + 3 : 1;
	maxc = COLL_MAX_BYTES / 4 / mult;
	switch (rn(10)) {
	case 0: case 1: case 2: case 3:
		c = 1 + rn(64);
		break;
	case 4: case 5: case 6: case 7:
		c = 65 + rn(16320);
		break;
	default:	/* log-uniform up to a few MiB */
		c = 1 + rn(1ull << (6 + rn(15)));
		break;
	}
	b.count = c < maxc ? c : maxc;
	if (b.coll == MAIA_COLL_ALL_REDUCE && pct(30))
		b.algo = pct(50) || !maia_coll_gather_reduce_fits(b.count, n) ?
			 MAIA_COLL_ALGO_RING : MAIA_COLL_ALGO_GATHER_REDUCE;
	if (pct(30)) {	/* small chunks, but not more than ~512 per step */
		uint64_t minc = ((b.count * 4 * mult / 512) + 3) & ~3ull;

		b.chunk_bytes = 4 * (1 + (uint32_t)rn(15360));
		if (b.chunk_bytes < minc)
			b.chunk_bytes = minc < 61440 ? (uint32_t)minc : 61440;
	}
	/*
	 * Short: a parked job holds its hardware queue, and the other workers'
	 * jobs of that priority wait behind it. 0 is the device's 2 s.
	 */
	b.timeout_ms = pct(5) ? 0 : 100 + (uint32_t)rn(pct(75) ? 250 : 1400);
	for (r = 0; r < n; r++) {
		struct cplan *p = &pl[r];

		memset(p, 0, sizeof(*p));
		p->pipe_rd = -1;
		p->pid = -1;
		p->k = b;
		p->k.rank = (uint16_t)r;
		p->node = fab.ring[r];
		p->prio = pct(90) ? prio : (unsigned int)rn(3);
		p->uq = opt_coll_userq && (pct(90) ? uq : !uq);
		p->sync = pct(30);
		p->nop = pct(15);
		p->report_off = COLL_REPORT_OFF + r * 64;
		p->report_ok = pct(85);
		p->k.report_addr = p->report_ok ? COLL_VA(2 * CB_CMD) + p->report_off : 0;
		place_rank(p, (b.coll == MAIA_COLL_ALL_REDUCE || b.coll == MAIA_COLL_BROADCAST) &&
			      pct(15));
	}

	if (pct(35)) {
		late = (int)rn(n);
		pl[late].when = RW_LATE;
		/* tens to hundreds of ms; the crash this came from had ~300 */
		pl[late].delay_ms = 20 + (unsigned int)rn(pct(85) ? 380 : 900);
	} else if (pct(15)) {
		never = (int)rn(n);
		pl[never].when = RW_NEVER;
	}
	if (pct(18))
		coll_bogus(pl, n, &odd);
	if (pct(8)) {
		kill_r = (int)rn(n);
		if (kill_r != never && pl[kill_r].cls == RC_CLEAN) {
			pl[kill_r].killed = true;
			pl[kill_r].kill_ms = (unsigned int)rn(300);
		} else {
			kill_r = -1;
		}
	}
	if (pct(35)) {
		faulty = late >= 0 && pct(50) ? late : (int)rn(n);
		if (faulty != kill_r && faulty != never && pl[faulty].cls == RC_CLEAN)
			coll_fault(&pl[faulty]);
		else
			faulty = -1;
	}
	for (r = 0; r < n; r++)
		if (odd && pl[r].cls == RC_CLEAN)
			pl[r].cls = RC_ODD;

	len = (size_t)snprintf(round_desc, sizeof(round_desc),
			       "round %llu: %s %s redop %u count %llu chunk %u algo %u timeout %u "
			       "ms comm %#x seq %u", call_no, coll_names[b.coll],
			       b.dtype == MAIA_DTYPE_FP32 ? "fp32" : "bf16", b.redop,
			       (unsigned long long)b.count, b.chunk_bytes, b.algo, b.timeout_ms,
			       b.comm_id, b.seq);
	for (r = 0; r < n && len < sizeof(round_desc); r++) {
		const struct cplan *p = &pl[r];

		if (p->when == RW_NOW && !p->what && !p->killed)
			continue;
		len += (size_t)snprintf(round_desc + len, sizeof(round_desc) - len,
					"; rank %u on accel%d:%s%s%s%s%s", r, nodes.minor[p->node],
					p->when == RW_LATE ? " late" : "",
					p->when == RW_NEVER ? " never submitted" : "",
					p->killed ? " killed" : "", p->what ? " " : "",
					p->what ? p->what : "");
		if (p->when == RW_LATE && len < sizeof(round_desc))
			len += (size_t)snprintf(round_desc + len, sizeof(round_desc) - len,
						" (%u ms)", p->delay_ms);
	}
}

/* Writes a rank's inputs, the receive buffer's sentinel and the report's. */
static void coll_fill(struct crank *cr, struct cplan *p)
{
	struct maia_cmd_collective *k = &p->k;
	unsigned int esz = coll_esize(k);
	uint64_t i, lo = 0, hi = 0;

	if (p->cls == RC_BAD) {
		p->send_bo = -1;
		if (p->recv_mode != RM_NONE) {
			recv_span(p, &lo, &hi);
			p->recv_sum = sum_bytes(cr->cpu[CB_RECV] + lo, hi - lo);
		}
	} else if (p->recv_mode != RM_NONE) {
		recv_span(p, &lo, &hi);
		memset(cr->cpu[CB_RECV] + lo, 0xa5, hi - lo);
	}
	if (p->send_bo >= 0) {
		unsigned char *s = cr->cpu[p->send_bo] + p->send_off;
		uint64_t ne = p->send_len / esz;

		for (i = 0; i < ne; i++) {
			uint32_t v = coll_bits((float)coll_val(k->rank, i), esz);

			memcpy(s + i * esz, &v, esz);
		}
		p->send_sum = sum_bytes(s, p->send_len);
	}
	if (p->cls != RC_BAD && p->recv_mode != RM_NONE)
		p->recv_sum = sum_bytes(cr->cpu[CB_RECV] + lo, hi - lo);
	memset(cr->cpu[CB_CMD] + p->report_off, 0xff, sizeof(struct maia_coll_report));
}

/* Submits a rank's job; false if it was not submitted. */
static bool coll_submit(struct crank *cr, struct cplan *p)
{
	struct drm_maia_submit s = { 0 };
	unsigned char *cb = cr->cpu[CB_CMD];
	uint64_t off = 0;
	int err;

	if (p->nop) {
		struct maia_cmd_nop nop = { .hdr = { .opcode = MAIA_OP_NOP, .size = sizeof(nop) } };

		memcpy(cb, &nop, sizeof(nop));
		off = sizeof(nop);
	}
	memcpy(cb + off, &p->k, sizeof(p->k));
	memset(cb + off + sizeof(p->k), 0, 8);
	s.cmdbuf_handle = cr->h[CB_CMD];
	s.cmdbuf_size = off + sizeof(p->k) + p->extra;
	s.priority = p->prio;
	if (p->uq && cr->has_uq) {
		uint32_t slot = cr->uq_written % cr->uq_entries;
		struct maia_sq_entry e = {
			.cmdbuf_addr = COLL_VA(2 * CB_CMD), .cmdbuf_size = (uint32_t)s.cmdbuf_size,
			.asid = cr->asid, .job_id = cr->uq_written + 1ull,
		};

		trace("collective rank %u on accel%d's user queue %u", p->k.rank,
		      nodes.minor[cr->node], cr->uq_id);
		cr->cq[slot].flags = 0;
		memcpy(&cr->sq[slot], &e, sizeof(e));
		p->uq_n = ++cr->uq_written;
		/* The entry before the doorbell. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		*cr->db = cr->uq_written % cr->uq_entries;
		p->t_sub = mono_ns();
		p->submitted = true;
		return true;
	}
	p->uq = false;
	if (p->sync) {
		struct drm_syncobj_create sc = { 0 };

		if (!cio(cr->fd, DRM_IOCTL_SYNCOBJ_CREATE, &sc))
			p->sync_h = s.out_syncobj = sc.handle;
	}
	trace("collective SUBMIT rank %u on accel%d prio %u", p->k.rank, nodes.minor[cr->node],
	      p->prio);
	err = cio(cr->fd, DRM_IOCTL_MAIA_SUBMIT, &s);
	if (err) {
		expect(NULL, "collective SUBMIT", err, ALLOW(ENOMEM, EINTR));
		return false;
	}
	p->t_sub = mono_ns();
	p->seqno = s.seqno;
	p->submitted = true;
	return true;
}

/*
 * A job on the user queue: its completion entry, sleeping in USERQ_WAIT
 * until it is there; the status as the kernel path would give it.
 */
static void coll_wait_uq(struct crank *cr, struct cplan *p, int64_t deadline)
{
	volatile struct maia_cq_entry *e = &cr->cq[(p->uq_n - 1) % cr->uq_entries];

	for (;;) {
		struct drm_maia_userq_wait uw = {
			.queue_id = cr->uq_id, .count = p->uq_n, .timeout_ns = deadline,
		};
		uint32_t ds;
		int err;

		if (__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & MAIA_CQE_VALID) {
			/* The device's statuses are the uAPI's numbers. */
			ds = e->status;
			p->w.device_status = ds;
			p->w.status = ds == MAIA_STATUS_OK ? DRM_MAIA_JOB_OK :
				      ds == MAIA_STATUS_MMU_FAULT ? DRM_MAIA_JOB_FAULT :
				      ds == MAIA_STATUS_ABORTED ? DRM_MAIA_JOB_ABORTED :
				      DRM_MAIA_JOB_ERROR;
			p->w.error_offset = e->error_offset;
			e->flags = 0;
			p->waited = true;
			shm->coll.uq_jobs++;
			return;
		}
		err = cio(cr->fd, DRM_IOCTL_MAIA_USERQ_WAIT, &uw);
		if (err == EINTR)
			continue;
		if (err) {
			violation("%s: rank %u's job on user queue %u did not end within %d s: %s",
				  round_desc, p->k.rank, cr->uq_id, COLL_JOB_BOUND_S, strerror(err));
			return;
		}
		if (uw.state != DRM_MAIA_USERQ_ACTIVE &&
		    !(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & MAIA_CQE_VALID)) {
			/* Stopped with the job not done: only a reset for another cause may. */
			if (uw.state == DRM_MAIA_USERQ_LOST) {
				p->w.status = DRM_MAIA_JOB_ABORTED;
				p->w.device_status = DRM_MAIA_DEVICE_ABORTED;
				p->waited = true;
			} else {
				violation("%s: rank %u's user queue %u stopped (state %u) without "
					  "completing its job", round_desc, p->k.rank, cr->uq_id,
					  uw.state);
			}
			return;
		}
	}
}

/* Waits for a rank's job, through its fence first when it has one. */
static void coll_wait(struct crank *cr, struct cplan *p)
{
	int64_t deadline = p->t_sub + COLL_JOB_BOUND_S * 1000000000ll;
	int err;

	alarm(COLL_JOB_BOUND_S + CALL_WATCHDOG_S);
	if (p->uq) {
		coll_wait_uq(cr, p, deadline);
		goto out;
	}
	if (p->sync_h) {
		struct drm_syncobj_wait sw = {
			.handles = (uintptr_t)&p->sync_h, .count_handles = 1,
			.timeout_nsec = deadline,
		};
		struct drm_syncobj_destroy sd = { .handle = p->sync_h };

		err = cio(cr->fd, DRM_IOCTL_SYNCOBJ_WAIT, &sw);
		if (err)
			violation("%s: rank %u's fence not signalled within %d s: %s", round_desc,
				  p->k.rank, COLL_JOB_BOUND_S, strerror(err));
		cio(cr->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &sd);
		p->sync_h = 0;
	}
	p->w.seqno = p->seqno;
	p->w.timeout_ns = deadline;
	err = cio(cr->fd, DRM_IOCTL_MAIA_WAIT, &p->w);
	if (err) {
		violation("%s: rank %u's job did not end within %d s: %s", round_desc, p->k.rank,
			  COLL_JOB_BOUND_S, strerror(err));
		return;
	}
	p->waited = true;
out:
	if (p->waited && (mono_ns() - p->t_sub) / 1000000 > shm->coll.slowest_ms)
		shm->coll.slowest_ms = (mono_ns() - p->t_sub) / 1000000;
}

/* A rank in a process of its own, killed with its job in flight. */
static void coll_spawn(struct cplan *p)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds)) {
		printf("# collective worker: pipe: %s\n", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct crank k;
		char c = 'E';

		signal(SIGALRM, SIG_DFL);
		alarm(4 * COLL_JOB_BOUND_S);
		close(fds[0]);
		if (crank_open(&k, p->node, pct(50))) {
			coll_fill(&k, p);
			if (coll_submit(&k, p))
				c = 'S';
		}
		if (write(fds[1], &c, 1) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0) {
		printf("# collective worker: fork: %s\n", strerror(errno));
		close(fds[0]);
		return;
	}
	p->pid = pid;
	p->pipe_rd = fds[0];
}

static void coll_kill(struct cplan *p)
{
	struct pollfd pf = { .fd = p->pipe_rd, .events = POLLIN };
	char c = 0;

	if (poll(&pf, 1, COLL_JOB_BOUND_S * 1000) == 1 && read(p->pipe_rd, &c, 1) == 1 &&
	    c == 'S') {
		p->submitted = true;
		usleep(p->kill_ms * 1000);
	}
	kill(p->pid, SIGKILL);
	close(p->pipe_rd);
	p->pipe_rd = -1;
}

/* The killed process goes once its file's close has waited for the job. */
static void coll_reap(struct cplan *p)
{
	int64_t end = mono_ns() + COLL_JOB_BOUND_S * 1000000000ll;
	int ws;

	for (;;) {
		pid_t got = waitpid(p->pid, &ws, WNOHANG);

		if (got == p->pid || (got < 0 && errno != EINTR))
			break;
		if (mono_ns() > end) {
			violation("%s: rank %u's process, killed with its job in flight, did not "
				  "exit within %d s", round_desc, p->k.rank, COLL_JOB_BOUND_S);
			return;
		}
		usleep(10000);
	}
	shm->coll.killed++;
}

static bool coll_bad_writes(struct crank *cr, struct cplan *p, const char *what, uint64_t lo,
			    uint64_t hi, uint64_t sum)
{
	if (sum_bytes(cr->cpu[CB_RECV] + lo, hi - lo) == sum)
		return false;
	violation("%s: rank %u (%s): %s", round_desc, p->k.rank,
		  p->what ? p->what : "clean", what);
	return true;
}

/* Checks a rank's status, its memory and its report against its plan. */
static void coll_check(struct crank *cr, struct cplan *p, bool reset_here, bool disturbed)
{
	const struct maia_cmd_collective *k = &p->k;
	unsigned int js = p->w.status, ds = p->w.device_status, esz = coll_esize(k);
	struct maia_coll_report rep;
	bool ok;
	uint64_t lo = 0, hi = 0, i;

	shm->coll.jobs++;
	if (js == DRM_MAIA_JOB_OK)
		shm->coll.st_ok++;
	else if (js == DRM_MAIA_JOB_FAULT)
		shm->coll.st_fault++;
	else if (js == DRM_MAIA_JOB_ABORTED)
		shm->coll.st_aborted++;
	else if (js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_FABRIC_TIMEOUT)
		shm->coll.st_timeout++;
	else if (js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_FABRIC_LINK)
		shm->coll.st_link++;
	else if (js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_BAD_CMD)
		shm->coll.st_badcmd++;
	else
		shm->coll.st_other++;

	if (js == DRM_MAIA_JOB_ABORTED)
		ok = reset_here;
	else if (js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_FABRIC_LINK)
		ok = disturbed;
	else if (p->cls == RC_BAD)
		ok = js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_BAD_CMD;
	else if (p->cls == RC_FAULTY)
		ok = (js == DRM_MAIA_JOB_FAULT && ds == DRM_MAIA_DEVICE_MMU_FAULT) ||
		     (js == DRM_MAIA_JOB_ERROR && (ds == DRM_MAIA_DEVICE_DMA_ERROR ||
						   ds == DRM_MAIA_DEVICE_FABRIC_TIMEOUT));
	else
		ok = (js == DRM_MAIA_JOB_OK && ds == DRM_MAIA_DEVICE_OK) ||
		     (js == DRM_MAIA_JOB_ERROR && ds == DRM_MAIA_DEVICE_FABRIC_TIMEOUT);
	if (!ok)
		violation("%s: rank %u on accel%d (%s%s%s) ended with status %u device status %u "
			  "(error offset %u; device reset during the round: %s, link down: %s)",
			  round_desc, k->rank, nodes.minor[cr->node],
			  p->cls == RC_BAD ? "an invalid command" :
			  p->cls == RC_FAULTY ? "its memory fails" :
			  p->cls == RC_ODD ? "ranks that disagree" : "clean",
			  p->what ? ": " : "", p->what ? p->what : "", js, ds, p->w.error_offset,
			  reset_here ? "yes" : "no", disturbed ? "yes" : "no");

	/* A collective reads its send buffer and never writes it. */
	if (p->send_bo >= 0 && p->send_bo != CB_RECV &&
	    sum_bytes(cr->cpu[p->send_bo] + p->send_off, p->send_len) != p->send_sum)
		violation("%s: rank %u's send buffer was written", round_desc, k->rank);
	if (p->recv_mode != RM_NONE)
		recv_span(p, &lo, &hi);
	if (p->cls == RC_BAD && p->recv_mode != RM_NONE) {
		coll_bad_writes(cr, p, "a refused command wrote its receive buffer", lo, hi,
				p->recv_sum);
	} else if (p->recv_mode == RM_RO) {
		coll_bad_writes(cr, p, "memory mapped read-only was written", lo, hi, p->recv_sum);
	} else if (p->recv_mode == RM_TAIL) {
		unsigned char *g = cr->cpu[CB_RECV] + lo;

		for (i = 0; i < hi - lo && g[i] == 0xa5; i++)
			;
		if (i < hi - lo)
			violation("%s: rank %u wrote %llu bytes before its receive buffer",
				  round_desc, k->rank, (unsigned long long)(hi - lo - i));
	} else if (p->recv_mode == RM_RW) {
		unsigned char *b = cr->cpu[CB_RECV];
		uint64_t rb = p->recv_len;

		for (i = lo; i < p->recv_off && b[i] == 0xa5; i++)
			;
		if (i < p->recv_off)
			violation("%s: rank %u wrote byte %llu before its receive buffer",
				  round_desc, k->rank, (unsigned long long)(p->recv_off - i));
		for (i = p->recv_off + rb; i < hi && b[i] == 0xa5; i++)
			;
		if (i < hi)
			violation("%s: rank %u wrote byte %llu after its receive buffer",
				  round_desc, k->rank, (unsigned long long)(i - p->recv_off - rb));
		if (js == DRM_MAIA_JOB_OK && p->cls == RC_CLEAN) {
			uint64_t ne = coll_recv_elems(k);

			i = coll_first_wrong(b + p->recv_off, k);
			if (i < ne)
				violation("%s: rank %u completed OK but element %llu of %llu is "
					  "%#x, not %#x (%d)", round_desc, k->rank,
					  (unsigned long long)i, (unsigned long long)ne,
					  coll_get(b + p->recv_off, esz, i),
					  coll_bits((float)coll_expect(k, i), esz),
					  coll_expect(k, i));
			shm->coll.checked++;
			shm->coll.checked_bytes += ne * esz;
		}
	}

	/* The report: none for a refused command; else the job's status. */
	if (!p->report_ok || k->report_addr != COLL_VA(2 * CB_CMD) + p->report_off)
		return;
	memcpy(&rep, cr->cpu[CB_CMD] + p->report_off, sizeof(rep));
	if (ds == DRM_MAIA_DEVICE_BAD_CMD) {
		if (rep.status != 0xffffffffu)
			violation("%s: rank %u: a refused command wrote a report (status %u)",
				  round_desc, k->rank, rep.status);
	} else if (js != DRM_MAIA_JOB_ABORTED && !reset_here) {
		if (rep.status != ds)
			violation("%s: rank %u: report status %u, the job's device status %u",
				  round_desc, k->rank, rep.status, ds);
		else if (ds == DRM_MAIA_DEVICE_OK && (rep.port != ~0u || rep.peer_rank != ~0u))
			violation("%s: rank %u: report of a success names port %u rank %u",
				  round_desc, k->rank, rep.port, rep.peer_rank);
		else if (ds == DRM_MAIA_DEVICE_FABRIC_TIMEOUT &&
			 ((rep.port != k->send_port && rep.port != k->recv_port) ||
			  rep.peer_rank >= k->nranks))
			violation("%s: rank %u: timeout report names port %u rank %u", round_desc,
				  k->rank, rep.port, rep.peer_rank);
	}
}

static uint64_t ring_link_downs(void)
{
	uint64_t sum = 0;
	int r, p;

	for (r = 0; r < fab.n; r++) {
		struct crank *cr = &cranks[fab.ring[r]];

		for (p = 0; p < fab.nports[cr->node] && cr->fd >= 0; p++) {
			struct drm_maia_fabric_port fp = { .port = (uint32_t)p };

			if (!cio(cr->fd, DRM_IOCTL_MAIA_FABRIC_PORT, &fp))
				sum += fp.link_downs;
		}
	}
	return sum;
}

/*
 * After a round: a faulted file says where, and is opened again, as is one
 * whose memory failed (a fault that did not end its job, such as a report
 * written after a timeout, may mark the context too: the fault queue).
 */
static void coll_ctx_after(struct crank *cr, const struct cplan *p)
{
	struct drm_maia_context_status cs = { 0 };
	bool job_faulted = p && p->waited && p->w.status == DRM_MAIA_JOB_FAULT;
	bool faulty = p && p->cls == RC_FAULTY;
	int err;

	if (cr->fd < 0)
		return;
	err = cio(cr->fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs);
	if (err) {
		expect(NULL, "collective CONTEXT_STATUS", err, ALLOW(0));
		return;
	}
	/* A user queue's fault may miss it (before hardware 1.7, or a full fault queue). */
	if (job_faulted && !p->uq && !(cs.flags & DRM_MAIA_CTX_FAULTED))
		violation("%s: rank %u's job FAULT, but its context is not faulted", round_desc,
			  p->k.rank);
	if ((cs.flags & DRM_MAIA_CTX_FAULTED) && !faulty)
		violation("%s: accel%d: the collective worker's context is faulted, but no rank "
			  "of it had failing memory (address %#llx)", round_desc,
			  nodes.minor[cr->node], (unsigned long long)cs.fault_addr);
	else if ((cs.flags & DRM_MAIA_CTX_FAULTED) && faulty &&
		 !(cs.flags & DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN) &&
		 (cs.fault_addr < (p->bad_lo & ~(PAGE - 1)) || cs.fault_addr >= p->bad_hi))
		violation("%s: rank %u faulted at %#llx, outside its bad range [%#llx, %#llx)",
			  round_desc, p->k.rank, (unsigned long long)cs.fault_addr,
			  (unsigned long long)p->bad_lo, (unsigned long long)p->bad_hi);
	/* A queue that stopped runs nothing more: a new one when it is wanted. */
	if (cr->has_uq && uq_state(cr) != DRM_MAIA_USERQ_ACTIVE)
		uq_close(cr);
	if ((cs.flags & DRM_MAIA_CTX_FAULTED) || faulty || pct(3)) {
		int node = cr->node;

		crank_close(cr);
		crank_open(cr, node, pct(50));
	}
}

static void coll_round(void)
{
	struct cplan pl[MAX_NODES];
	unsigned int n = (unsigned int)fab.n, r, i, order[MAX_NODES];
	long long resets0[MAX_NODES], resets1;
	struct crank *by_rank[MAX_NODES];
	uint64_t downs0, downs1;
	bool reset_any = false, reset_at[MAX_NODES];
	int64_t t0;

	cur_op = "collective setup";
	for (r = 0; r < n; r++) {
		struct crank *cr = &cranks[fab.ring[r]];

		if (cr->fd < 0 && !crank_open(cr, fab.ring[r], pct(50))) {
			shm->coll.skipped++;
			usleep(100000);
			return;
		}
	}
	coll_salt = (uint32_t)rnd();
	coll_plan(pl, n);
	trace("%s", round_desc);
	shm->coll.rounds++;
	for (r = 0; r < n; r++) {
		struct crank *cr = &cranks[pl[r].node];

		if (pl[r].uq && !pl[r].killed && !cr->has_uq && !uq_open(cr))
			pl[r].uq = false;
	}
	for (r = 0; r < n; r++) {
		by_rank[r] = &cranks[pl[r].node];
		order[r] = r;
		shm->coll.late += pl[r].when == RW_LATE;
		shm->coll.never += pl[r].when == RW_NEVER;
		shm->coll.faulty += pl[r].cls == RC_FAULTY;
		shm->coll.late_faulty += pl[r].cls == RC_FAULTY && pl[r].when == RW_LATE;
		shm->coll.bad += pl[r].cls == RC_BAD;
	}
	for (r = 0; r < n && pl[r].cls != RC_ODD; r++)
		;
	shm->coll.odd += r < n;
	for (r = n; r > 1; r--) {
		unsigned int j = (unsigned int)rn(r), t = order[r - 1];

		order[r - 1] = order[j];
		order[j] = t;
	}
	for (r = 0; r < n; r++)
		if (!pl[r].killed)
			coll_fill(by_rank[r], &pl[r]);
	for (i = 0; i < (unsigned int)nodes.n; i++)
		resets0[i] = dev_attr((int)i, "reset_count");
	downs0 = ring_link_downs();

	/* The ranks on time in a random order, then the late one. */
	cur_op = "collective submit";
	t0 = mono_ns();
	for (i = 0; i < 2; i++)
		for (r = 0; r < n; r++) {
			struct cplan *p = &pl[order[r]];

			if (p->when != (i ? RW_LATE : RW_NOW))
				continue;
			if (i) {
				int64_t wait = t0 + p->delay_ms * 1000000ll - mono_ns();

				if (wait > 0)
					usleep((useconds_t)(wait / 1000));
			}
			if (p->killed)
				coll_spawn(p);
			else
				coll_submit(by_rank[order[r]], p);
		}
	cur_op = "collective kill";
	for (r = 0; r < n; r++)
		if (pl[r].killed && pl[r].pid > 0)
			coll_kill(&pl[r]);
	cur_op = "collective wait";
	for (r = 0; r < n; r++)
		if (pl[r].submitted && !pl[r].killed)
			coll_wait(by_rank[r], &pl[r]);
	for (r = 0; r < n; r++)
		if (pl[r].killed && pl[r].pid > 0)
			coll_reap(&pl[r]);
	alarm(CALL_WATCHDOG_S);

	cur_op = "collective check";
	for (i = 0; i < (unsigned int)nodes.n; i++) {
		bool aborted = false;
		int64_t end = mono_ns() + 10 * 1000000000ll;

		for (r = 0; r < n; r++)
			aborted |= pl[r].waited && pl[r].node == (int)i &&
				   pl[r].w.status == DRM_MAIA_JOB_ABORTED;
		/*
		 * The driver retires a reset's jobs (ABORTED) before it counts
		 * the reset, once the device is back: after an ABORTED job,
		 * give the count 10 s (under the call watchdog) to move.
		 */
		while ((resets1 = dev_attr((int)i, "reset_count")) == resets0[i] && aborted &&
		       mono_ns() < end)
			usleep(10000);
		reset_at[i] = resets1 != resets0[i];
		reset_any |= reset_at[i];
	}
	downs1 = ring_link_downs();
	shm->coll.resets_seen += reset_any;
	for (r = 0; r < n; r++)
		if (pl[r].waited)
			coll_check(by_rank[r], &pl[r], reset_at[pl[r].node],
				   reset_any || downs1 != downs0);
	for (r = 0; r < n; r++)
		coll_ctx_after(by_rank[r], pl[r].killed || !pl[r].submitted ? NULL : &pl[r]);
}

static void coll_cleanup(void)
{
	int i;

	for (i = 0; i < MAX_NODES; i++)
		if (cranks[i].fd >= 0)
			crank_close(&cranks[i]);
}

/* The collective worker's loop: rounds until told to stop (or the deadline). */
int coll_worker(int index, unsigned long long rounds, int64_t deadline_ns)
{
	int i;

	in_coll_worker = true;
	worker_start(index, opt_seed ^ 0xc011ec7e5eed0001ull);
	for (i = 0; i < MAX_NODES; i++)
		cranks[i].fd = -1;
	/* comm_id 0 is never used (libmaia's rule): keep ours non-zero. */
	coll_comm = (uint32_t)rnd() | 1;
	coll_seq = 0;
	shm->coll.comm = coll_comm;
	for (call_no = 0; !rounds || call_no < rounds; call_no++) {
		if (shm->coll_stop || (deadline_ns && mono_ns() > deadline_ns))
			break;
		alarm(CALL_WATCHDOG_S);
		coll_round();
		shm->coll.next_seq = coll_seq;
		if (opt_coll_pause_ms)
			usleep(opt_coll_pause_ms * 1000);
	}
	cur_op = "collective cleanup";
	alarm(CALL_WATCHDOG_S);
	coll_cleanup();
	alarm(0);
	st->done = 1;
	return st->violations ? 1 : 0;
}

/* Final check's inputs: varied floats, so that the order of the sum shows. */
static float final_val(unsigned int r, uint64_t i)
{
	uint64_t x = (i << 8 | r) ^ 0x5eedf00dull;
	uint64_t h = splitmix64(&x);

	return (float)(int32_t)h * (1.0f / (float)(1ull << (20 + (h >> 60))));
}

/*
 * The ring's fold order (fabric.rst, "Reduction order"): element i of block b
 * starts at rank b+1 and ends at rank b, every step in FP32.
 */
static float final_sum(uint64_t count, unsigned int n, uint64_t i)
{
	uint64_t q = count / n, rem = count % n, b;
	unsigned int j;
	float acc;

	b = i < rem * (q + 1) ? i / (q + 1) : rem + (i - rem * (q + 1)) / q;
	acc = final_val((unsigned int)((b + 1) % n), i);
	for (j = 2; j <= n; j++)
		acc = acc + final_val((unsigned int)((b + j) % n), i);
	return acc;
}

/*
 * --coll-abandoned: rank 0 of a communicator alone, its peers never coming:
 * an all-gather of 2 MiB in 4 KiB chunks that times out after 200 ms. Its
 * 512 chunks wait, held or refused, on the next device's receive port. The
 * check after the run then takes another new communicator, which the
 * abandoned one's leftovers must not hold up (fabric.rst, "Leftovers").
 */
int coll_abandon(uint32_t comm, char *why, size_t len)
{
	struct crank cr;
	struct cplan p;
	int ret = -1;

	memset(&p, 0, sizeof(p));
	if (!crank_open(&cr, fab.ring[0], false)) {
		snprintf(why, len, "could not open accel%d", nodes.minor[fab.ring[0]]);
		return -1;
	}
	p.k.hdr.opcode = MAIA_OP_COLLECTIVE;
	p.k.hdr.size = sizeof(p.k);
	p.k.coll = MAIA_COLL_ALL_GATHER;
	p.k.dtype = MAIA_DTYPE_FP32;
	p.k.send_port = 0;
	p.k.recv_port = 1;
	p.k.nranks = (uint16_t)fab.n;
	p.k.comm_id = comm;
	p.k.chunk_bytes = 4096;
	p.k.timeout_ms = 200;
	p.k.count = 512 * KIB;
	p.k.send_addr = COLL_VA(2 * CB_SEND);
	p.k.recv_addr = COLL_VA(2 * CB_RECV);
	p.prio = DRM_MAIA_PRIO_NORMAL;
	if (!coll_submit(&cr, &p)) {
		snprintf(why, len, "SUBMIT failed");
		goto out;
	}
	p.w.seqno = p.seqno;
	p.w.timeout_ns = mono_ns() + 60000000000ll;
	if (ioctl(cr.fd, DRM_IOCTL_MAIA_WAIT, &p.w)) {
		snprintf(why, len, "WAIT: %s", strerror(errno));
		goto out;
	}
	printf("# collectives: rank 0 of comm %#x alone ended with status %u device status %u\n",
	       comm, p.w.status, p.w.device_status);
	ret = 0;
out:
	crank_close(&cr);
	return ret;
}

/*
 * After the run: on the same devices, no reset, an all-reduce of the
 * collective worker's communicator (its next seq) gives exact results.
 */
int coll_final(uint64_t count, uint32_t comm, uint32_t seq, char *why, size_t len)
{
	struct crank cr[MAX_NODES];
	struct cplan pl[MAX_NODES];
	unsigned int n = (unsigned int)fab.n, r;
	int64_t end = mono_ns() + 20000000000ll;
	int ret = -1, want = fab.n;
	uint64_t i;
	float *sum = NULL;

	/* Links a reset took down come back within a HELLO interval or two. */
	for (;;) {
		fabric_read();
		if (fab.n >= want || mono_ns() > end)
			break;
		usleep(200000);
	}
	if (fab.n < want) {
		snprintf(why, len, "the ring of %d devices did not come back up", want);
		return -1;
	}
	for (r = 0; r < n; r++)
		cr[r].fd = -1;
	for (r = 0; r < n; r++)
		if (!crank_open(&cr[r], fab.ring[r], r & 1)) {
			snprintf(why, len, "could not open accel%d with its buffers",
				 nodes.minor[fab.ring[r]]);
			goto out;
		}
	sum = malloc(count * sizeof(*sum));
	if (!sum) {
		snprintf(why, len, "malloc");
		goto out;
	}
	for (i = 0; i < count; i++)
		sum[i] = final_sum(count, n, i);
	for (r = 0; r < n; r++) {
		struct cplan *p = &pl[r];
		float *s = (float *)(cr[r].cpu[CB_SEND]);

		memset(p, 0, sizeof(*p));
		p->k.hdr.opcode = MAIA_OP_COLLECTIVE;
		p->k.hdr.size = sizeof(p->k);
		p->k.coll = MAIA_COLL_ALL_REDUCE;
		p->k.dtype = MAIA_DTYPE_FP32;
		p->k.redop = MAIA_REDOP_SUM;
		p->k.send_port = 0;
		p->k.recv_port = 1;
		p->k.rank = (uint16_t)r;
		p->k.nranks = (uint16_t)n;
		p->k.comm_id = comm;
		p->k.seq = seq;
		p->k.timeout_ms = 10000;
		p->k.count = count;
		p->k.send_addr = COLL_VA(2 * CB_SEND);
		p->k.recv_addr = COLL_VA(2 * CB_RECV);
		p->k.report_addr = COLL_VA(2 * CB_CMD) + COLL_REPORT_OFF;
		p->report_off = COLL_REPORT_OFF;
		p->prio = DRM_MAIA_PRIO_NORMAL;
		for (i = 0; i < count; i++)
			s[i] = final_val(r, i);
		memset(cr[r].cpu[CB_RECV], 0xa5, count * 4);
		memset(cr[r].cpu[CB_CMD] + COLL_REPORT_OFF, 0xff, sizeof(struct maia_coll_report));
	}
	for (r = 0; r < n; r++)
		if (!coll_submit(&cr[r], &pl[r])) {
			snprintf(why, len, "SUBMIT of rank %u failed", r);
			goto out;
		}
	for (r = 0; r < n; r++) {
		struct maia_coll_report rep;
		const float *got = (const float *)cr[r].cpu[CB_RECV];

		pl[r].w.seqno = pl[r].seqno;
		pl[r].w.timeout_ns = mono_ns() + 60000000000ll;
		if (ioctl(cr[r].fd, DRM_IOCTL_MAIA_WAIT, &pl[r].w)) {
			snprintf(why, len, "WAIT of rank %u: %s", r, strerror(errno));
			goto out;
		}
		memcpy(&rep, cr[r].cpu[CB_CMD] + COLL_REPORT_OFF, sizeof(rep));
		if (pl[r].w.status != DRM_MAIA_JOB_OK || rep.status) {
			snprintf(why, len, "rank %u ended with status %u device status %u (report: "
				 "status %u step %u port %u rank %u)", r, pl[r].w.status,
				 pl[r].w.device_status, rep.status, rep.step, rep.port,
				 rep.peer_rank);
			goto out;
		}
		for (i = 0; i < count && !memcmp(&got[i], &sum[i], 4); i++)
			;
		if (i < count) {
			snprintf(why, len, "rank %u: element %llu is %a, the CPU's sum %a", r,
				 (unsigned long long)i, got[i], sum[i]);
			goto out;
		}
	}
	ret = 0;
out:
	free(sum);
	for (r = 0; r < n; r++)
		crank_close(&cr[r]);
	return ret;
}
