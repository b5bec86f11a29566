// SPDX-License-Identifier: MIT
/*
 * The random workers of maia_ioctl_fuzz (see maia_ioctl_fuzz.c): their model of
 * what they own (files, BOs, mappings, syncobjs, dma-bufs, CPU mappings), the
 * operations (op_*), the jobs they submit (build_job) and the loop of a worker
 * process (worker()).
 */
#include "fuzz.h"

#define MAX_CTX		3
#define MAX_DMABUF	8
#define MAX_CPUMAP	16

#define CMDBUF_SIZE	(64 * KIB)
#define CMDRING_SIZE	(32 * KIB)		/* commands; the rest is job data */
#define CMDBUF_VA	DRM_MAIA_VA_START
#define FUZZ_VA_BASE	(DRM_MAIA_VA_START + (1ull << 30))
#define FUZZ_VA_SLOTS	256			/* 4 MiB slots */
#define MAX_JOB_BYTES	(64 * KIB)		/* FILL / copy bound */

const char *const op_names[NUM_OPS] = {
	"GET_PARAM", "PING", "BO_CREATE", "BO_INFO", "VM_MAP", "VM_UNMAP", "SUBMIT",
	"WAIT", "CONTEXT_STATUS", "GEM_CLOSE", "PRIME_HANDLE_TO_FD", "PRIME_FD_TO_HANDLE",
	"SYNCOBJ_CREATE", "SYNCOBJ_DESTROY", "SYNCOBJ_WAIT", "SYNCOBJ_TIMELINE_WAIT",
	"SYNCOBJ_SIGNAL", "SYNCOBJ_RESET", "SYNCOBJ_HANDLE_TO_FD/FD_TO_HANDLE",
	"SYNCOBJ_TIMELINE_SIGNAL", "SYNCOBJ_QUERY", "VERSION", "GET_UNIQUE", "core-random",
	"GEM_FLINK", "GEM_OPEN", "mmap", "munmap", "dma-buf mmap", "close/reopen",
	"bad-size", "bad-pointer", "raw-random", "user-queue",
};

/* Relative weights of the operations. */
static const unsigned int op_weight[NUM_OPS] = {
	[OP_GET_PARAM] = 4, [OP_PING] = 1, [OP_BO_CREATE] = 8, [OP_BO_INFO] = 5,
	[OP_MAP] = 10, [OP_UNMAP] = 6, [OP_SUBMIT] = 14, [OP_WAIT] = 10,
	[OP_CTX_STATUS] = 4, [OP_GEM_CLOSE] = 6, [OP_PRIME_EXPORT] = 3,
	[OP_PRIME_IMPORT] = 3, [OP_SYNC_CREATE] = 4, [OP_SYNC_DESTROY] = 3,
	[OP_SYNC_WAIT] = 3, [OP_SYNC_TL_WAIT] = 2, [OP_SYNC_SIGNAL] = 2, [OP_SYNC_RESET] = 2,
	[OP_SYNC_FD] = 2, [OP_SYNC_TL_SIGNAL] = 1, [OP_SYNC_QUERY] = 1, [OP_VERSION] = 2,
	[OP_GET_UNIQUE] = 1, [OP_CORE_RANDOM] = 3, [OP_FLINK] = 1, [OP_GEM_OPEN] = 1,
	[OP_MMAP] = 3, [OP_MUNMAP] = 3, [OP_DMABUF_MMAP] = 2, [OP_REOPEN] = 1,
	[OP_BAD_SIZE] = 5, [OP_BAD_PTR] = 4, [OP_RAW] = 4, [OP_USERQ] = 1,
};

static const uint64_t edge_values[] = {
	0, 1, 2, 7, 8, 4095, 4096, 4097, 0x7fffffff, 0x80000000, 0xffffffff,
	0x100000000ull, 1ull << 52, 1ull << 62, 1ull << 63, ~0ull, ~0ull - 4095,
	~0ull - 7, DRM_MAIA_VA_START, DRM_MAIA_VA_END, DRM_MAIA_VA_END - PAGE,
	0xffff888000000000ull, 0x7fffffffffffull,
};

static uint64_t edge(void)
{
	switch (rn(4)) {
	case 0:
		return rnd();
	case 1:
		return rn(64);
	default:
		return edge_values[rn(ARRAY_SIZE(edge_values))];
	}
}

struct cpumap {
	void *p;
	size_t len;
};

struct dmabuf {
	int fd;
	uint64_t size;
	int node;
	bool rdwr;		/* exported with DRM_RDWR: writable mappings */
};

static struct ctx ctxs[MAX_CTX];
static struct cpumap cpumaps[MAX_CPUMAP];
static int ncpumaps;
static struct dmabuf dmabufs[MAX_DMABUF];
static int ndmabufs;

/* Pages for bad pointers: one read-only, one never mapped, and one writable
 * page followed by the unmapped one (for structs that straddle). */
static void *ro_page, *hole_page, *edge_page;

/*
 * Issues a maia or DRM ioctl on a copy of arg placed in a canary-filled
 * buffer, returns 0 or errno. With check_nowrite, a failure must leave all
 * bytes as they were ("on failure no output field is written"); on success
 * the result is copied back to arg. `size` bytes of arg are passed.
 */
static int xioctl(struct ctx *c, unsigned long cmd, void *arg, size_t size, bool check_nowrite)
{
	static unsigned char buf[1024] __attribute__((aligned(64)));
	static unsigned char ref[1024];
	int ret, err;

	memset(buf, 0xa5, sizeof(buf));
	memcpy(buf, arg, size);
	memcpy(ref, buf, sizeof(buf));
	ret = ioctl(c ? c->fd : -1, cmd, buf);
	err = ret ? errno : 0;
	count_result(err);
	if (err && check_nowrite && memcmp(buf, ref, sizeof(buf)) && !(c && c->unsure)) {
		size_t i;

		for (i = 0; i < sizeof(buf) && buf[i] == ref[i]; i++)
			;
		violation("ioctl %#lx failed with %s but wrote byte %zu", cmd, strerror(err), i);
	} else if (!err && memcmp(buf + size, ref + size, sizeof(buf) - size)) {
		violation("ioctl %#lx wrote past the %zu bytes it was given", cmd, size);
	}
	if (!err)
		memcpy(arg, buf, size);
	return err;
}

#define XIOCTL(c, cmd, arg)	xioctl(c, cmd, &(arg), sizeof(arg), true)
#define XIOCTL_CORE(c, cmd, arg) xioctl(c, cmd, &(arg), sizeof(arg), false)

/* --- model helpers ------------------------------------------------------ */

static struct ctx *pick_ctx(void)
{
	int i, live[MAX_CTX], n = 0;

	for (i = 0; i < MAX_CTX; i++)
		if (ctxs[i].fd >= 0)
			live[n++] = i;
	return n ? &ctxs[live[rn(n)]] : NULL;
}

static struct ctx *other_ctx(struct ctx *c)
{
	int i;

	for (i = 0; i < MAX_CTX; i++)
		if (&ctxs[i] != c && ctxs[i].fd >= 0)
			return &ctxs[i];
	return NULL;
}

static struct bo *find_bo(struct ctx *c, uint32_t h)
{
	int i;

	for (i = 0; i < c->nbo; i++)
		if (c->bo[i].handle == h)
			return &c->bo[i];
	return NULL;
}

static bool handle_live(struct ctx *c, uint32_t h)
{
	return h == c->cmd_handle || find_bo(c, h);
}

static struct syncobj *find_sync(struct ctx *c, uint32_t h)
{
	int i;

	for (i = 0; i < c->nsync; i++)
		if (c->sync[i].handle == h)
			return &c->sync[i];
	return NULL;
}

static void add_bo(struct ctx *c, uint32_t h, uint64_t size, uint32_t flags)
{
	int i;

	if (handle_live(c, h))
		return;
	for (i = 0; i < 8; i++)
		if (c->freed_handles[i] == h)
			c->freed_handles[i] = 0;
	if (c->nbo < MAX_BO) {
		c->bo[c->nbo++] = (struct bo){ .handle = h, .size = size, .flags = flags };
	} else {
		/* The model is full: close it again so it stays exact. */
		struct drm_gem_close gc = { .handle = h };

		ioctl(c->fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
}

static void remove_bo(struct ctx *c, uint32_t h)
{
	int i;

	for (i = 0; i < c->nbo; i++)
		if (c->bo[i].handle == h) {
			c->bo[i] = c->bo[--c->nbo];
			c->freed_handles[rn(8)] = h;
			return;
		}
}

/* An unused handle value: freed, another file's, or a random large one. */
static uint32_t dead_handle(struct ctx *c)
{
	struct ctx *o = other_ctx(c);
	uint32_t h;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		switch (rn(4)) {
		case 0:
			h = c->freed_handles[rn(8)];
			break;
		case 1:
			h = o && o->nbo ? o->bo[rn(o->nbo)].handle : 0;
			break;
		case 2:
			h = 0x100000 + (uint32_t)rn(1u << 30);
			break;
		default:
			h = (uint32_t)edge();
			break;
		}
		if (h && !handle_live(c, h) && !find_sync(c, h))
			return h;
	}
	return 0xdeadbeef;
}

static uint32_t dead_sync(struct ctx *c)
{
	uint32_t h;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		h = pct(50) ? c->freed_syncs[rn(8)] : (uint32_t)(0x100000 + rn(1u << 30));
		if (h && !find_sync(c, h))
			return h;
	}
	return 0xfeedface;
}

static bool va_overlaps(struct ctx *c, uint64_t va, uint64_t size)
{
	int i;

	for (i = 0; i < c->nmap; i++)
		if (va < c->map[i].va + c->map[i].size && c->map[i].va < va + size)
			return true;
	return false;
}

/* A device address, mostly inside a mapping (for jobs). */
static uint64_t job_addr(struct ctx *c, uint64_t len, bool write, uint64_t *room)
{
	int i, tries;

	/* Mostly inside: a job with several commands should fault now and then only. */
	if (pct(97) && c->nmap > 1) {
		for (tries = 0; tries < 4; tries++) {
			struct mapping *m = &c->map[1 + rn(c->nmap - 1)];
			uint64_t off;

			if (write && m->ro && !pct(10))
				continue;
			if (len > m->size)
				len = m->size;
			off = rn(m->size - len + 1) & ~7ull;
			*room = m->size - off;
			return m->va + off;
		}
	}
	if (pct(90)) {	/* the data half of the command buffer mapping */
		uint64_t off;

		if (len > CMDBUF_SIZE - CMDRING_SIZE)
			len = CMDBUF_SIZE - CMDRING_SIZE;
		off = CMDRING_SIZE + (rn(CMDBUF_SIZE - CMDRING_SIZE - len + 1) & ~7ull);
		*room = CMDBUF_SIZE - off;
		return CMDBUF_VA + off;
	}
	*room = len;
	i = (int)rn(3);
	if (i == 0 && c->nmap)	/* just past a mapping */
		return c->map[rn(c->nmap)].va + c->map[rn(c->nmap)].size - (rn(2) ? 0 : 64);
	if (i == 1)
		return FUZZ_VA_BASE + rn(FUZZ_VA_SLOTS) * 4 * MIB + (rn(1024) << 3);
	return rn(2) ? 0 : edge() & ~7ull;
}

/* --- contexts ----------------------------------------------------------- */

static void ctx_close(struct ctx *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void ctx_open(struct ctx *c)
{
	struct drm_maia_bo_create bc = { .size = CMDBUF_SIZE, .flags = DRM_MAIA_BO_HOST };
	struct drm_maia_bo_info bi;
	struct drm_maia_vm_bind vb;
	void *p;
	int fd, err;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->node = (int)rn(nodes.n);
	fd = open(nodes.path[c->node], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno != EBUSY)	/* all address spaces in use */
			violation("open %s: %s", nodes.path[c->node], strerror(errno));
		return;
	}
	c->fd = fd;
	st->reopens++;
	err = XIOCTL(c, DRM_IOCTL_MAIA_BO_CREATE, bc);
	if (err) {
		expect(c, "BO_CREATE of the command buffer", err, ALLOW(0, ENOMEM));
		ctx_close(c);
		return;
	}
	c->cmd_handle = bc.handle;
	memset(&bi, 0, sizeof(bi));
	bi.handle = bc.handle;
	err = XIOCTL(c, DRM_IOCTL_MAIA_BO_INFO, bi);
	expect(c, "BO_INFO of the command buffer", err, ALLOW(0));
	p = err ? MAP_FAILED : mmap(NULL, CMDBUF_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				    bi.mmap_offset);
	if (p == MAP_FAILED) {
		violation("mmap of the command buffer: %s", strerror(errno));
		ctx_close(c);
		return;
	}
	c->cmd_cpu = p;
	memset(&vb, 0, sizeof(vb));
	vb.op = DRM_MAIA_VM_MAP;
	vb.handle = bc.handle;
	vb.va = CMDBUF_VA;
	vb.size = CMDBUF_SIZE;
	err = XIOCTL(c, DRM_IOCTL_MAIA_VM_BIND, vb);
	if (err) {
		expect(c, "VM_BIND of the command buffer", err, ALLOW(0, ENOMEM));
		munmap(p, CMDBUF_SIZE);
		ctx_close(c);
		return;
	}
	c->map[0] = (struct mapping){ .va = CMDBUF_VA, .size = CMDBUF_SIZE,
				      .handle = bc.handle };
	c->nmap = 1;
}

/* The command-buffer CPU mapping belongs to the context: drop it with it. */
static void ctx_reopen(struct ctx *c)
{
	if (c->fd >= 0 && c->cmd_cpu)
		munmap(c->cmd_cpu, CMDBUF_SIZE);
	ctx_close(c);
	ctx_open(c);
}

static void mark_faulted(struct ctx *c)
{
	if (!c->faulted)
		st->faults++;
	c->faulted = true;
}

/* --- operations --------------------------------------------------------- */

static void op_get_param(struct ctx *c)
{
	struct drm_maia_get_param gp = { 0 };
	int err;

	gp.param = (uint32_t)rn(DRM_MAIA_PARAM_PEAK_GFLOPS + 1);
	if (pct(15))
		gp.param = (uint32_t)(pct(50) ? DRM_MAIA_PARAM_PEAK_GFLOPS + 1 + rn(100) : edge());
	if (gp.param == DRM_MAIA_PARAM_PEAK_GFLOPS)	/* its index is a data type */
		gp.index = (uint32_t)rn(DRM_MAIA_DTYPE_MX4 + 1);
	if (pct(10))
		gp.index = (uint32_t)edge();
	if (pct(20))
		gp.value = edge();
	err = XIOCTL(c, DRM_IOCTL_MAIA_GET_PARAM, gp);
	if (gp.param == DRM_MAIA_PARAM_PEAK_GFLOPS)
		expect(c, "GET_PARAM of a data type's peak", err,
		       gp.index <= DRM_MAIA_DTYPE_MX4 ? ALLOW(0) : ALLOW(EINVAL));
	else if (gp.param <= DRM_MAIA_PARAM_PEAK_GFLOPS && !gp.index)
		expect(c, "GET_PARAM of a known parameter", err, ALLOW(0));
	else
		expect(c, "GET_PARAM with unknown param or index", err, ALLOW(EINVAL));
}

/*
 * A user queue (driver 1.4) with a hostile ring: random words in it, random
 * doorbells (out of range too), a short wait, then destroy. The queue is
 * bound to the context's ASID and every random entry fails (flags,
 * reserved, ASID), so the context's state does not change.
 */
static void op_userq(struct ctx *c)
{
	struct drm_maia_userq_create uc = { .priority = (uint32_t)rn(3) };
	struct drm_maia_userq_destroy d = { 0 };
	struct drm_maia_userq_wait w = { 0 };
	volatile uint32_t *db;
	uint32_t *ring;
	int err, i, n;

	if (pct(10))
		uc.flags = 1u << rn(32);
	if (pct(5))
		uc.priority = (uint32_t)edge() | 4;
	err = XIOCTL(c, DRM_IOCTL_MAIA_USERQ_CREATE, uc);
	if (uc.flags || uc.priority > DRM_MAIA_PRIO_HIGH) {
		expect(c, "USERQ_CREATE with bad flags or priority", err, ALLOW(EINVAL));
		return;
	}
	expect(c, "USERQ_CREATE", err, ALLOW(0, EBUSY, EBADFD, ENODEV));
	if (err)
		return;
	ring = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, uc.sq_offset);
	db = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, uc.doorbell_offset);
	if (ring == MAP_FAILED || db == MAP_FAILED) {
		violation("user queue %u: mmap of its pages failed: %s", uc.queue_id,
			  strerror(errno));
	} else {
		n = 1 + (int)rn(20);
		for (i = 0; i < n; i++) {
			if (pct(50))
				ring[rn(PAGE / 4)] = (uint32_t)rnd();
			db[0] = (uint32_t)(pct(90) ? rn(uc.entries) : rnd());
		}
		w.queue_id = uc.queue_id;
		w.count = (uint32_t)rn(100);
		w.timeout_ns = mono_ns() + (int64_t)rn(5000000);
		err = XIOCTL(c, DRM_IOCTL_MAIA_USERQ_WAIT, w);
		expect(c, "USERQ_WAIT", err, ALLOW(0, ETIME, EINTR));
	}
	if (ring != MAP_FAILED)
		munmap(ring, PAGE);
	if (db != MAP_FAILED)
		munmap((void *)db, PAGE);
	d.queue_id = pct(5) ? (uint32_t)rnd() : uc.queue_id;
	err = XIOCTL(c, DRM_IOCTL_MAIA_USERQ_DESTROY, d);
	if (d.queue_id != uc.queue_id) {
		d.queue_id = uc.queue_id;
		XIOCTL(c, DRM_IOCTL_MAIA_USERQ_DESTROY, d);
	} else {
		expect(c, "USERQ_DESTROY", err, ALLOW(0));
	}
}

static void op_ping(struct ctx *c)
{
	struct drm_maia_ping p = { .cookie = rnd() };
	int err;

	if (pct(10))
		p.flags = 1u << rn(32);
	if (pct(10))
		p.pad = (uint32_t)edge() | 1;
	if (pct(20))
		p.echo = rnd();
	err = XIOCTL(c, DRM_IOCTL_MAIA_PING, p);
	if (p.flags || p.pad)
		expect(c, "PING with flags or pad", err, ALLOW(EINVAL));
	else
		expect(c, "PING", err, ALLOW(0, ETIMEDOUT, EINTR));
}

static void op_bo_create(struct ctx *c)
{
	struct drm_maia_bo_create bc = { 0 };
	bool bad = false;
	int err;

	switch (rn(10)) {
	case 0:
		bc.size = 2 * MIB * (1 + rn(2));
		break;
	case 1:
		bc.size = 1 + rn(64 * KIB);	/* unaligned: rounded up */
		break;
	case 2:
		bc.size = edge();
		bad = true;
		break;
	default:
		bc.size = PAGE * (1 + rn(64));
		break;
	}
	bc.flags = pct(50) ? DRM_MAIA_BO_HBM : DRM_MAIA_BO_HOST;
	if (pct(6)) {
		bc.flags = (uint32_t)(pct(50) ? 0 : pct(50) ? 3 : edge());
		bad = bad || (bc.flags != DRM_MAIA_BO_HBM && bc.flags != DRM_MAIA_BO_HOST);
	}
	if (pct(5))
		bc.handle = (uint32_t)rnd();
	if (c->nbo >= MAX_BO - 1 && !bad)
		return;
	err = XIOCTL(c, DRM_IOCTL_MAIA_BO_CREATE, bc);
	if (!err) {
		if (bc.flags != DRM_MAIA_BO_HBM && bc.flags != DRM_MAIA_BO_HOST)
			violation("BO_CREATE with flags %#x succeeded", bc.flags);
		else if (!bc.size || bc.size > ~0ull - (PAGE - 1))
			violation("BO_CREATE of size %#llx succeeded", (unsigned long long)bc.size);
		add_bo(c, bc.handle, (bc.size + PAGE - 1) & ~(PAGE - 1), bc.flags);
		return;
	}
	if ((bc.flags != DRM_MAIA_BO_HBM && bc.flags != DRM_MAIA_BO_HOST) ||
	    !bc.size || bc.size > ~0ull - (PAGE - 1))
		expect(c, "BO_CREATE with bad size or flags", err, ALLOW(EINVAL));
	else
		expect(c, "BO_CREATE", err, ALLOW(EINVAL, ENOMEM, ETIMEDOUT, ENOSPC));
}

static void op_bo_info(struct ctx *c)
{
	struct drm_maia_bo_info bi = { 0 };
	struct bo *b = NULL;
	int err;

	if (c->nbo && pct(85)) {
		b = &c->bo[rn(c->nbo)];
		bi.handle = b->handle;
	} else {
		bi.handle = dead_handle(c);
	}
	if (pct(20)) {
		bi.size = edge();
		bi.flags = (uint32_t)edge();
	}
	err = XIOCTL(c, DRM_IOCTL_MAIA_BO_INFO, bi);
	if (!b) {
		expect(c, "BO_INFO of an unknown handle", err, ALLOW(ENOENT));
		return;
	}
	expect(c, "BO_INFO of a live handle", err, ALLOW(0));
	if (err || c->unsure)
		return;
	if (bi.size != b->size)
		violation("BO_INFO size %llu, created with %llu", (unsigned long long)bi.size,
			  (unsigned long long)b->size);
	if (b->flags && bi.flags != b->flags)
		violation("BO_INFO flags %#x, created with %#x", bi.flags, b->flags);
	if (!bi.mmap_offset || bi.mmap_offset & (PAGE - 1))
		violation("BO_INFO mmap_offset %#llx", (unsigned long long)bi.mmap_offset);
	b->mmap_off = bi.mmap_offset;
}

static void op_map(struct ctx *c)
{
	struct drm_maia_vm_bind vb = { .op = DRM_MAIA_VM_MAP };
	struct bo *b = NULL;
	bool bad = false, exact, dead = false;
	int err;

	if (c->nbo && pct(90)) {
		b = &c->bo[rn(c->nbo)];
		vb.handle = b->handle;
		vb.offset = pct(70) ? 0 : PAGE * rn(b->size / PAGE);
		vb.size = b->size - vb.offset;
		if (pct(40))
			vb.size = PAGE * (1 + rn(vb.size / PAGE));
	} else {
		vb.handle = dead_handle(c);
		vb.size = PAGE * (1 + rn(16));
		dead = true;
	}
	vb.va = FUZZ_VA_BASE + rn(FUZZ_VA_SLOTS) * 4 * MIB;
	if (pct(30))
		vb.va += PAGE * rn(512);
	if (pct(20))
		vb.flags = DRM_MAIA_VM_READONLY;
	exact = true;
	switch (rn(14)) {
	case 0:
		vb.va += 1 + rn(PAGE - 1);	/* unaligned */
		bad = true;
		break;
	case 1:
		vb.size = pct(50) ? (b ? b->size - vb.offset : 0) + PAGE : vb.size + 1;
		/* past the BO, or unaligned */
		bad = true;
		break;
	case 2:
		vb.offset += pct(50) ? 8 : (b ? b->size : PAGE);
		bad = true;
		break;
	case 3:
		vb.va = pct(50) ? edge() & ~(PAGE - 1) : DRM_MAIA_VA_END - PAGE;
		exact = false;
		break;
	case 4:
		vb.flags |= 1u << (1 + rn(31));
		bad = true;
		break;
	case 5:
		vb.pad = (uint32_t)edge() | 1;
		bad = true;
		break;
	case 6:
		vb.op = 2 + (uint32_t)rn(8);
		bad = true;
		break;
	case 7:
		vb.size = 0;
		bad = true;
		break;
	default:
		break;
	}
	err = XIOCTL(c, DRM_IOCTL_MAIA_VM_BIND, vb);
	if (!err) {
		if (bad || dead)
			violation("VM_BIND MAP handle %u va %#llx off %#llx size %#llx flags %#x "
				  "pad %#x op %u succeeded", vb.handle,
				  (unsigned long long)vb.va, (unsigned long long)vb.offset,
				  (unsigned long long)vb.size, vb.flags, vb.pad, vb.op);
		else if (va_overlaps(c, vb.va, vb.size))
			violation("VM_BIND MAP over an existing mapping at %#llx succeeded",
				  (unsigned long long)vb.va);
		if (c->nmap < MAX_MAP) {
			c->map[c->nmap++] = (struct mapping){
				.va = vb.va, .size = vb.size, .offset = vb.offset,
				.handle = vb.handle, .ro = vb.flags & DRM_MAIA_VM_READONLY,
			};
		} else {
			c->unsure = true;
		}
		return;
	}
	if (bad) {
		/* The handle is looked up before the range is checked against the BO. */
		expect(c, "VM_BIND MAP with a malformed argument", err,
		       dead ? ALLOW(EINVAL, ENOENT) : ALLOW(EINVAL));
	} else if (!exact) {
		expect(c, "VM_BIND MAP at an edge address", err,
		       ALLOW(EINVAL, EEXIST, ENOENT, ENOMEM));
	} else if (dead) {
		expect(c, "VM_BIND MAP of an unknown handle", err, ALLOW(ENOENT));
	} else if (va_overlaps(c, vb.va, vb.size)) {
		expect(c, "VM_BIND MAP over an existing mapping", err, ALLOW(EEXIST));
	} else {
		expect(c, "VM_BIND MAP", err, ALLOW(ENOMEM, ENODEV));
	}
}

static void op_unmap(struct ctx *c)
{
	struct drm_maia_vm_bind vb = { .op = DRM_MAIA_VM_UNMAP };
	int idx = -1, err;
	bool bad = false, exact = false;

	if (c->nmap > 1 && pct(85)) {
		idx = 1 + (int)rn(c->nmap - 1);
		vb.va = c->map[idx].va;
		vb.size = c->map[idx].size;
		exact = true;
		switch (rn(10)) {
		case 0:
			vb.va += PAGE;
			exact = false;
			break;
		case 1:
			vb.size += pct(50) ? PAGE : -PAGE;
			exact = false;
			break;
		case 2:
			vb.handle = c->map[idx].handle | 1;
			bad = true;
			break;
		case 3:
			vb.offset = PAGE;
			bad = true;
			break;
		case 4:
			vb.flags = DRM_MAIA_VM_READONLY;
			bad = true;
			break;
		default:
			break;
		}
		if (!vb.size)
			bad = true;
	} else {
		vb.va = FUZZ_VA_BASE + rn(FUZZ_VA_SLOTS) * 4 * MIB;
		vb.size = PAGE * (1 + rn(16));
	}
	err = XIOCTL(c, DRM_IOCTL_MAIA_VM_BIND, vb);
	if (bad) {
		expect(c, "VM_BIND UNMAP with handle, offset or flags", err, ALLOW(EINVAL));
	} else if (exact) {
		expect(c, "VM_BIND UNMAP of an exact mapping", err, ALLOW(0, ENODEV));
	} else {
		int i;
		bool hit = false;

		for (i = 0; i < c->nmap; i++)
			hit |= c->map[i].va == vb.va && c->map[i].size == vb.size;
		if (!hit && vb.size && vb.size <= DRM_MAIA_VA_END - vb.va)
			expect(c, "VM_BIND UNMAP of no exact mapping", err, ALLOW(ENOENT));
		else if (!hit)
			expect(c, "VM_BIND UNMAP past the VA window", err, ALLOW(EINVAL));
	}
	if (!err) {
		int i;

		for (i = 0; i < c->nmap; i++)
			if (c->map[i].va == vb.va && c->map[i].size == vb.size) {
				if (i == 0)
					c->unsure = true;	/* the command buffer */
				c->map[i] = c->map[--c->nmap];
				break;
			}
	}
}

/*
 * A collective that involves no peer: one rank (a local copy through the
 * job's address space), or one the device must refuse before it sends
 * anything (BAD_CMD). Never a valid multi-rank one: its chunks would reach
 * the fabric peers under a random communicator and stay held there. Ports
 * are ones no device has, so a bit flip that makes nranks > 1 is refused too.
 */
static uint32_t build_local_collective(struct maia_cmd_collective *k, struct ctx *c)
{
	uint64_t n = 1 + rn(pct(80) ? 256 : 4096), r1, r2 = 0;

	memset(k, 0, sizeof(*k));
	k->hdr.opcode = MAIA_OP_COLLECTIVE;
	k->coll = (uint8_t)(MAIA_COLL_ALL_REDUCE + rn(5));
	k->redop = (uint8_t)rn(3);
	k->dtype = pct(80) ? MAIA_DTYPE_FP32 : MAIA_DTYPE_BF16;
	k->send_port = k->recv_port = (uint8_t)(200 + rn(56));
	k->nranks = 1;
	k->comm_id = (uint32_t)rnd();
	k->seq = (uint32_t)rnd();
	k->timeout_ms = (uint32_t)rn(100);
	k->send_addr = job_addr(c, n * 4, false, &r1);
	k->recv_addr = pct(10) ? k->send_addr : job_addr(c, n * 4, true, &r2);
	if (k->recv_addr == k->send_addr)
		r2 = r1;
	if (r2 < r1)
		r1 = r2;
	k->count = n * 4 <= r1 ? n : r1 / 4 ? r1 / 4 : 1;
	if (pct(20))
		k->report_addr = job_addr(c, sizeof(struct maia_coll_report), true, &r1) & ~7ull;
	if (pct(40)) {
		k->nranks = (uint16_t)(2 + rn(7));
		switch (rn(6)) {
		case 0:
			k->rank = (uint16_t)(k->nranks + rn(16));
			break;
		case 1:
			k->coll = (uint8_t)(pct(50) ? 0 : 6 + rn(250));
			break;
		case 2:
			k->hdr.flags = (uint16_t)(1u << rn(16));
			break;
		case 3:
			k->reserved1 = (uint32_t)rnd() | 1;
			break;
		case 4:
			k->dtype = (uint8_t)(pct(50) ? MAIA_DTYPE_FP16 : 3 + rn(253));
			break;
		default:	/* the ports alone (nothing above 12) */
			break;
		}
	}
	return sizeof(*k);
}

/* Appends commands for one job to the command buffer; returns its size. */
static uint64_t build_job(struct ctx *c, uint64_t off)
{
	unsigned char *base = (unsigned char *)c->cmd_cpu + off;
	uint64_t used = 0, room;
	unsigned int i, ncmd = 1 + (unsigned int)rn(6);

	for (i = 0; i < ncmd && used + 256 <= 1024; i++) {
		struct maia_cmd_header *h = (void *)(base + used);
		unsigned int kind = (unsigned int)rn(100);
		uint32_t size;

		if (kind < 15) {
			size = sizeof(struct maia_cmd_nop);
			memset(h, 0, size);
			h->opcode = MAIA_OP_NOP;
		} else if (kind < 45) {
			struct maia_cmd_fill *f = (void *)h;
			uint64_t len = 4 * (1 + rn(MAX_JOB_BYTES / 4));

			size = sizeof(*f);
			memset(f, 0, size);
			h->opcode = MAIA_OP_FILL;
			f->dst = job_addr(c, len, true, &room);
			f->size = len < room ? len : room & ~3ull;
			if (!f->size)
				f->size = 4;
			f->pattern = (uint32_t)rnd();
		} else if (kind < 65) {
			struct maia_cmd_dma_copy *d = (void *)h;
			uint64_t w = 8 * (1 + rn(MAX_JOB_BYTES / 8 / 4)), r1, r2;

			size = sizeof(*d);
			memset(d, 0, size);
			h->opcode = MAIA_OP_DMA_COPY;
			d->height = pct(70) ? 1 : 2 + (uint32_t)rn(3);
			d->src = job_addr(c, w * d->height, false, &r1);
			d->dst = job_addr(c, w * d->height, true, &r2);
			if (w * d->height > r1 || w * d->height > r2)
				w = (r1 < r2 ? r1 : r2) / d->height;
			d->width = w ? w : 8;
			d->src_stride = d->width;
			d->dst_stride = d->width;
		} else if (kind < 75) {
			struct maia_cmd_fence_write *f = (void *)h;

			size = sizeof(*f);
			memset(f, 0, size);
			h->opcode = MAIA_OP_FENCE_WRITE;
			f->addr = job_addr(c, 8, true, &room);
			f->value = rnd();
		} else if (kind < 80) {
			struct maia_cmd_timestamp *t = (void *)h;

			size = sizeof(*t);
			memset(t, 0, size);
			h->opcode = MAIA_OP_TIMESTAMP;
			t->addr = job_addr(c, 8, true, &room);
		} else if (kind < 88) {
			struct maia_cmd_sem_signal *s = (void *)h;

			size = sizeof(*s);
			memset(s, 0, size);
			h->opcode = MAIA_OP_SEM_SIGNAL;
			s->index = (uint32_t)(pct(95) ? rn(8) : rn(128));
			s->value = (uint32_t)(1 + rn(3));
		} else if (kind < 93) {
			struct maia_cmd_sem_wait *s = (void *)h;

			size = sizeof(*s);
			memset(s, 0, size);
			h->opcode = MAIA_OP_SEM_WAIT;
			s->index = (uint32_t)(pct(95) ? rn(8) : rn(128));
			s->value = (uint32_t)(1 + rn(2));
			s->timeout_us = (uint32_t)rn(2000);
		} else if (kind < 96) {
			size = build_local_collective((void *)h, c);
		} else {
			/* A tensor opcode or an unknown one, random body. */
			unsigned int j;

			size = 8 * (1 + (uint32_t)rn(24));
			for (j = 0; j < size; j++)
				((unsigned char *)h)[j] = (unsigned char)rnd();
			h->opcode = (uint16_t)(pct(70) ? 0x10 + rn(0x20) : rn(0x10000));
			h->flags = 0;
			h->size = size;
		}
		h->size = size;
		used += size;
	}
	if (pct(6)) {	/* flip a few random bytes */
		unsigned int n = 1 + (unsigned int)rn(4);

		while (n--)
			base[rn(used)] ^= (unsigned char)(1 + rn(255));
	}
	return used;
}

static void op_submit(struct ctx *c)
{
	struct drm_maia_submit s = { 0 };
	uint32_t in[8];
	unsigned int i, nin = 0;
	bool bad = false, maybe_einval = false, maybe_enoent = false;
	uint64_t used;
	int err;

	if (c->cmd_used + 1024 > CMDRING_SIZE)
		c->cmd_used = 0;
	used = build_job(c, c->cmd_used);
	s.cmdbuf_handle = c->cmd_handle;
	s.cmdbuf_offset = c->cmd_used;
	s.cmdbuf_size = used;
	s.priority = (uint32_t)rn(3);
	c->cmd_used += (used + 63) & ~63ull;

	if (c->nsync && pct(30)) {
		nin = 1 + (unsigned int)rn(c->nsync < 8 ? c->nsync : 8);
		for (i = 0; i < nin; i++) {
			struct syncobj *so = &c->sync[rn(c->nsync)];

			in[i] = so->handle;
			if (!so->fenced || so->shared)
				maybe_einval = true;	/* no fence: -EINVAL */
		}
		s.in_syncobjs = (uintptr_t)in;
		s.num_in_syncobjs = nin;
	}
	if (c->nsync && pct(30))
		s.out_syncobj = c->sync[rn(c->nsync)].handle;

	switch (rn(24)) {
	case 0:
		s.cmdbuf_offset += 4;
		bad = true;
		break;
	case 1:
		s.cmdbuf_size = pct(50) ? 0 : MAIA_CMDBUF_MAX_SIZE + 8;
		bad = true;
		break;
	case 2:
		s.cmdbuf_offset = CMDBUF_SIZE - (pct(50) ? 0 : 8);
		s.cmdbuf_size = 16;
		bad = true;
		break;
	case 3:
		s.cmdbuf_size = used + 4;
		bad = true;
		break;
	case 4:
		s.flags = 1u << rn(32);
		bad = true;
		break;
	case 5:
		s.pad = (uint32_t)edge() | 1;
		bad = true;
		break;
	case 6:
		s.priority = 3 + (uint32_t)rn(100);
		bad = true;
		break;
	case 7:
		s.num_in_syncobjs = DRM_MAIA_MAX_IN_SYNCOBJS + 1 + (uint32_t)rn(1000);
		bad = true;
		break;
	case 8:
		s.cmdbuf_handle = dead_handle(c);
		maybe_enoent = true;
		break;
	case 9:
		s.out_syncobj = dead_sync(c);
		maybe_enoent = true;
		break;
	case 10:
		if (nin) {
			in[rn(nin)] = dead_sync(c);
			maybe_enoent = true;
		}
		break;
	case 11:	/* NULL or unmapped in_syncobjs */
		s.num_in_syncobjs = 1 + (uint32_t)rn(4);
		s.in_syncobjs = pct(50) ? 0 : (uintptr_t)hole_page;
		maybe_enoent = true;	/* EFAULT, checked below */
		break;
	case 12:
		if (c->nmap > 1) {	/* another mapped BO as a command buffer */
			struct mapping *m = &c->map[1 + rn(c->nmap - 1)];

			if (handle_live(c, m->handle)) {
				s.cmdbuf_handle = m->handle;
				s.cmdbuf_offset = m->offset;
				s.cmdbuf_size = 8 * (1 + rn(64));
				maybe_einval = maybe_enoent = true;
			}
		}
		break;
	case 13:
		if (c->nbo) {	/* a BO that may not be mapped */
			s.cmdbuf_handle = c->bo[rn(c->nbo)].handle;
			s.cmdbuf_offset = 0;
			s.cmdbuf_size = 8;
			maybe_einval = maybe_enoent = true;
		}
		break;
	default:
		break;
	}
	if (pct(10))
		s.seqno = rnd();
	trace("SUBMIT handle %u off %#llx size %#llx prio %u nin %u [%u %u] out %u flags %#x pad %#x",
	      s.cmdbuf_handle, (unsigned long long)s.cmdbuf_offset,
	      (unsigned long long)s.cmdbuf_size, s.priority, s.num_in_syncobjs,
	      nin > 0 ? in[0] : 0, nin > 1 ? in[1] : 0, s.out_syncobj, s.flags, s.pad);
	err = XIOCTL(c, DRM_IOCTL_MAIA_SUBMIT, s);
	if (!err) {
		if (bad)
			violation("SUBMIT with a malformed argument succeeded "
				  "(off %#llx size %#llx flags %#x pad %#x prio %u nin %u)",
				  (unsigned long long)s.cmdbuf_offset,
				  (unsigned long long)s.cmdbuf_size, s.flags, s.pad, s.priority,
				  s.num_in_syncobjs);
		if (c->faulted && !c->unsure)
			violation("SUBMIT on a faulted context succeeded");
		if (s.seqno <= c->last_seqno && !c->unsure)
			violation("SUBMIT seqno %llu after %llu", (unsigned long long)s.seqno,
				  (unsigned long long)c->last_seqno);
		c->last_seqno = s.seqno;
		c->seq[c->nseq < MAX_SEQ ? c->nseq++ : (int)rn(MAX_SEQ)] = s.seqno;
		st->submits_ok++;
		if (s.out_syncobj) {
			struct syncobj *so = find_sync(c, s.out_syncobj);

			if (so)
				so->fenced = true;
		}
		return;
	}
	if (err == EBADFD) {
		mark_faulted(c);
		return;
	}
	if (bad)
		expect(c, "SUBMIT with a malformed argument", err, ALLOW(EINVAL, EBADFD));
	else if (s.num_in_syncobjs && (!s.in_syncobjs || s.in_syncobjs == (uintptr_t)hole_page))
		expect(c, "SUBMIT with a bad in_syncobjs pointer", err, ALLOW(EFAULT));
	else
		expect(c, "SUBMIT", err,
		       maybe_einval && maybe_enoent ? ALLOW(EINVAL, ENOENT, ENODEV, EINTR) :
		       maybe_einval ? ALLOW(EINVAL, ENODEV, EINTR) :
		       maybe_enoent ? ALLOW(ENOENT, ENODEV, EINTR) : ALLOW(ENODEV, EINTR));
}

static void op_wait(struct ctx *c)
{
	struct drm_maia_wait w = { 0 };
	bool known = false, bad = false;
	int err;

	if (c->nseq && pct(85)) {
		w.seqno = c->seq[rn(c->nseq)];
		known = true;
	} else {
		switch (rn(3)) {
		case 0:
			w.seqno = 0;
			bad = true;
			break;
		case 1:
			w.seqno = c->last_seqno + 1 + rn(1000);
			bad = true;
			break;
		default:
			w.seqno = edge();
			bad = !w.seqno || w.seqno > c->last_seqno;
			break;
		}
	}
	switch (rn(6)) {
	case 0:
		w.timeout_ns = 0;
		break;
	case 1:
		w.timeout_ns = mono_ns() - (int64_t)rn(1000000000);
		break;
	case 2:
		w.timeout_ns = mono_ns() + (int64_t)rn(500000000);
		break;
	default:
		w.timeout_ns = mono_ns() + (int64_t)rn(50000000);
		break;
	}
	if (pct(5)) {
		w.pad = (uint32_t)edge() | 1;
		bad = true;
	}
	if (pct(10)) {
		w.status = (uint32_t)rnd();
		w.device_time_ns = rnd();
	}
	err = XIOCTL(c, DRM_IOCTL_MAIA_WAIT, w);
	if (bad) {
		expect(c, "WAIT with a bad seqno or pad", err, ALLOW(EINVAL));
		return;
	}
	if (!known) {
		expect(c, "WAIT of an old seqno", err, ALLOW(0, ENOENT, ETIME, EINTR));
		return;
	}
	expect(c, "WAIT", err, ALLOW(0, ETIME, EINTR, ENOENT));
	if (err)
		return;
	st->jobs_waited++;
	if (w.status > DRM_MAIA_JOB_ABORTED) {
		violation("WAIT status %u", w.status);
		return;
	}
	st->job_status[w.status]++;
	if (w.status == DRM_MAIA_JOB_FAULT)
		mark_faulted(c);
	if (w.device_status > DRM_MAIA_DEVICE_SEM_TIMEOUT &&
	    w.device_status != DRM_MAIA_DEVICE_UNKNOWN)
		violation("WAIT device_status %u", w.device_status);
	if (w.status == DRM_MAIA_JOB_OK && w.device_status != DRM_MAIA_DEVICE_OK)
		violation("WAIT status OK with device_status %u", w.device_status);
}

static void op_ctx_status(struct ctx *c)
{
	struct drm_maia_context_status cs = { 0 };
	int err;

	if (pct(10))
		cs.pad = (uint32_t)edge() | 1;
	if (pct(20)) {
		cs.flags = (uint32_t)rnd();
		cs.fault_addr = rnd();
	}
	err = XIOCTL(c, DRM_IOCTL_MAIA_CONTEXT_STATUS, cs);
	if (cs.pad) {
		expect(c, "CONTEXT_STATUS with pad", err, ALLOW(EINVAL));
		return;
	}
	expect(c, "CONTEXT_STATUS", err, ALLOW(0));
	if (err)
		return;
	if (cs.flags & ~(DRM_MAIA_CTX_FAULTED | DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN))
		violation("CONTEXT_STATUS flags %#x", cs.flags);
	if (cs.flags & DRM_MAIA_CTX_FAULTED) {
		mark_faulted(c);
		if (cs.flags & DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN ?
		    cs.fault_addr || cs.fault_access :
		    cs.fault_access != DRM_MAIA_ACCESS_READ &&
		    cs.fault_access != DRM_MAIA_ACCESS_WRITE)
			violation("CONTEXT_STATUS fault flags %#x addr %#llx access %u", cs.flags,
				  (unsigned long long)cs.fault_addr, cs.fault_access);
	} else if (cs.fault_addr || cs.fault_access) {
		violation("CONTEXT_STATUS not faulted but addr %#llx access %u",
			  (unsigned long long)cs.fault_addr, cs.fault_access);
	}
	if (!cs.asid || cs.asid > 255)
		violation("CONTEXT_STATUS asid %u", cs.asid);
	if (cs.device_resets < c->resets_seen)
		violation("CONTEXT_STATUS device_resets went back from %llu to %llu",
			  (unsigned long long)c->resets_seen,
			  (unsigned long long)cs.device_resets);
	c->resets_seen = cs.device_resets;
	if (cs.device_resets > st->max_resets_seen)
		st->max_resets_seen = cs.device_resets;
}

static void op_gem_close(struct ctx *c)
{
	struct drm_gem_close gc = { 0 };
	bool live = false;
	int err;

	if (c->nbo && pct(80)) {
		gc.handle = c->bo[rn(c->nbo)].handle;
		live = true;
	} else {
		gc.handle = dead_handle(c);
	}
	/* The 6.12 core ignores pad here (drm_gem_close_ioctl()): not a maia rule. */
	if (pct(5))
		gc.pad = (uint32_t)edge() | 1;
	trace("GEM_CLOSE handle %u pad %#x (%s)", gc.handle, gc.pad, live ? "live" : "dead");
	err = XIOCTL_CORE(c, DRM_IOCTL_GEM_CLOSE, gc);
	if (live)
		expect(c, "GEM_CLOSE of a live handle", err, ALLOW(0));
	else
		expect(c, "GEM_CLOSE of a dead handle", err, ALLOW(EINVAL, ENOENT));
	if (!err)
		remove_bo(c, gc.handle);
}

static void op_prime_export(struct ctx *c)
{
	struct drm_prime_handle ph = { 0 };
	bool live = false;
	int err;

	if (c->nbo && pct(85)) {
		struct bo *b = &c->bo[rn(c->nbo)];

		ph.handle = b->handle;
		live = true;
	} else {
		ph.handle = dead_handle(c);
	}
	ph.flags = DRM_CLOEXEC | (pct(70) ? DRM_RDWR : 0);
	if (pct(5)) {
		uint32_t bit;

		do
			bit = 1u << rn(32);
		while (bit & (DRM_CLOEXEC | DRM_RDWR));
		ph.flags |= bit;
		live = false;
	}
	ph.fd = -1;
	err = XIOCTL_CORE(c, DRM_IOCTL_PRIME_HANDLE_TO_FD, ph);
	if (live)
		expect(c, "PRIME_HANDLE_TO_FD of a live handle", err, ALLOW(0, EMFILE));
	else
		expect(c, "PRIME_HANDLE_TO_FD of a dead handle or bad flags", err,
		       ALLOW(ENOENT, EINVAL));
	if (err)
		return;
	if (ndmabufs >= MAX_DMABUF) {
		int i = (int)rn(MAX_DMABUF);

		close(dmabufs[i].fd);
		dmabufs[i] = dmabufs[--ndmabufs];
	}
	/*
	 * A BO has one dma-buf: a second export gets a new fd of the same file,
	 * opened with the first export's flags. Ask the fd, not our flags.
	 */
	dmabufs[ndmabufs++] = (struct dmabuf){
		.fd = ph.fd, .size = (uint64_t)lseek(ph.fd, 0, SEEK_END), .node = c->node,
		.rdwr = (fcntl(ph.fd, F_GETFL) & O_ACCMODE) == O_RDWR,
	};
}

static void op_prime_import(struct ctx *c)
{
	struct drm_prime_handle ph = { 0 };
	struct dmabuf *d = NULL;
	int err;

	if (ndmabufs && pct(85)) {
		d = &dmabufs[rn(ndmabufs)];
		ph.fd = d->fd;
	} else {
		ph.fd = pct(50) ? -1 : (int)(1000 + rn(1000));
	}
	if (pct(5))
		ph.flags = (uint32_t)edge();
	err = XIOCTL_CORE(c, DRM_IOCTL_PRIME_FD_TO_HANDLE, ph);
	if (!d) {
		expect(c, "PRIME_FD_TO_HANDLE of a bad fd", err, ALLOW(EBADF, EINVAL));
		return;
	}
	/* Another device's dma-buf: this driver imports only its own. */
	if (d->node != c->node)
		expect(c, "PRIME_FD_TO_HANDLE of another device's dma-buf", err,
		       ALLOW(EINVAL, EOPNOTSUPP));
	else
		expect(c, "PRIME_FD_TO_HANDLE", err, ALLOW(0, EINVAL));
	if (!err)
		add_bo(c, ph.handle, d->size, 0);
}

static void op_sync_create(struct ctx *c)
{
	struct drm_syncobj_create sc = { 0 };
	bool bad = false;
	int err;

	if (pct(40))
		sc.flags = DRM_SYNCOBJ_CREATE_SIGNALED;
	if (pct(5)) {
		sc.flags |= 1u << (1 + rn(31));
		bad = true;
	}
	if (c->nsync >= MAX_SYNC && !bad)
		return;
	err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_CREATE, sc);
	expect(c, bad ? "SYNCOBJ_CREATE with unknown flags" : "SYNCOBJ_CREATE", err,
	       bad ? ALLOW(EINVAL) : ALLOW(0, ENOMEM));
	if (err)
		return;
	if (c->nsync < MAX_SYNC && !find_sync(c, sc.handle)) {
		c->sync[c->nsync++] = (struct syncobj){
			.handle = sc.handle, .fenced = sc.flags & DRM_SYNCOBJ_CREATE_SIGNALED,
		};
	} else {
		struct drm_syncobj_destroy sd = { .handle = sc.handle };

		ioctl(c->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &sd);
	}
}

static void op_sync_destroy(struct ctx *c)
{
	struct drm_syncobj_destroy sd = { 0 };
	int idx = -1, err;

	if (c->nsync && pct(80)) {
		idx = (int)rn(c->nsync);
		sd.handle = c->sync[idx].handle;
	} else {
		sd.handle = dead_sync(c);
	}
	if (pct(5)) {
		sd.pad = 1;
		idx = -2;
	}
	err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_DESTROY, sd);
	expect(c, "SYNCOBJ_DESTROY", err, idx >= 0 ? ALLOW(0) : ALLOW(EINVAL, ENOENT));
	if (!err && idx >= 0) {
		c->freed_syncs[rn(8)] = sd.handle;
		c->sync[idx] = c->sync[--c->nsync];
	}
}

/* Fills handles with live syncobjs and now and then a dead one. */
static unsigned int pick_syncs(struct ctx *c, uint32_t *h, unsigned int max, bool *dead)
{
	unsigned int i, n = 1 + (unsigned int)rn(max);

	*dead = false;
	for (i = 0; i < n; i++) {
		if (c->nsync && pct(95)) {
			h[i] = c->sync[rn(c->nsync)].handle;
		} else {
			h[i] = dead_sync(c);
			*dead = true;
		}
	}
	return n;
}

static void op_sync_wait(struct ctx *c, bool timeline)
{
	uint32_t h[8];
	uint64_t points[8] = { 0 };
	unsigned int n;
	bool dead;
	int err;

	n = pick_syncs(c, h, 8, &dead);
	if (!timeline) {
		struct drm_syncobj_wait w = { 0 };

		w.handles = (uintptr_t)h;
		w.count_handles = n;
		w.timeout_nsec = mono_ns() + (int64_t)rn(20000000);
		w.flags = (uint32_t)rn(4);	/* WAIT_ALL | WAIT_FOR_SUBMIT */
		if (pct(5))
			w.flags |= 1u << (4 + rn(28));
		if (pct(3))
			w.handles = (uintptr_t)(pct(50) ? NULL : hole_page);
		err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_WAIT, w);
		expect(c, "SYNCOBJ_WAIT", err, ALLOW(0, ETIME, EINVAL, ENOENT, EFAULT, EINTR));
	} else {
		struct drm_syncobj_timeline_wait w = { 0 };
		unsigned int i;

		for (i = 0; i < n; i++)
			points[i] = pct(80) ? rn(4) : edge();
		w.handles = (uintptr_t)h;
		w.points = (uintptr_t)points;
		w.count_handles = n;
		w.timeout_nsec = mono_ns() + (int64_t)rn(20000000);
		w.flags = (uint32_t)rn(8);
		if (pct(5))
			w.flags |= 1u << (4 + rn(28));
		err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, w);
		expect(c, "SYNCOBJ_TIMELINE_WAIT", err,
		       ALLOW(0, ETIME, EINVAL, ENOENT, EFAULT, EINTR));
	}
}

static void op_sync_signal_reset(struct ctx *c, bool signal)
{
	struct drm_syncobj_array a = { 0 };
	uint32_t h[8];
	unsigned int i, n;
	bool dead;
	int err;

	n = pick_syncs(c, h, 8, &dead);
	a.handles = (uintptr_t)h;
	a.count_handles = n;
	if (pct(5))
		a.pad = 1;
	err = XIOCTL_CORE(c, signal ? DRM_IOCTL_SYNCOBJ_SIGNAL : DRM_IOCTL_SYNCOBJ_RESET, a);
	if (a.pad || dead)
		expect(c, "SYNCOBJ_SIGNAL/RESET with pad or a dead handle", err,
		       ALLOW(EINVAL, ENOENT));
	else
		expect(c, "SYNCOBJ_SIGNAL/RESET", err, ALLOW(0));
	if (err)
		return;
	for (i = 0; i < n; i++) {
		struct syncobj *so = find_sync(c, h[i]);

		if (so)
			so->fenced = signal;
	}
}

static void op_sync_tl_signal(struct ctx *c)
{
	struct drm_syncobj_timeline_array a = { 0 };
	uint32_t h[8];
	uint64_t points[8];
	unsigned int i, n;
	bool dead;
	int err;

	n = pick_syncs(c, h, 8, &dead);
	for (i = 0; i < n; i++)
		points[i] = pct(80) ? rn(8) : edge();
	a.handles = (uintptr_t)h;
	a.points = (uintptr_t)points;
	a.count_handles = n;
	if (pct(5))
		a.flags = (uint32_t)edge();
	err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, a);
	expect(c, "SYNCOBJ_TIMELINE_SIGNAL", err, ALLOW(0, EINVAL, ENOENT, ENOMEM));
	if (!err)
		for (i = 0; i < n; i++) {
			struct syncobj *so = find_sync(c, h[i]);

			if (so && points[i] == 0)
				so->fenced = true;
		}
}

static void op_sync_query(struct ctx *c)
{
	struct drm_syncobj_timeline_array a = { 0 };
	uint32_t h[8];
	uint64_t points[8] = { 0 };
	unsigned int n;
	bool dead;
	int err;

	n = pick_syncs(c, h, 8, &dead);
	a.handles = (uintptr_t)h;
	a.points = (uintptr_t)(pct(5) ? (void *)ro_page : (void *)points);
	a.count_handles = n;
	if (pct(30))
		a.flags = DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED;
	err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_QUERY, a);
	expect(c, "SYNCOBJ_QUERY", err, ALLOW(0, EINVAL, ENOENT, EFAULT));
}

static void op_sync_fd(struct ctx *c)
{
	struct drm_syncobj_handle sh = { 0 };
	struct ctx *o = other_ctx(c);
	int err;

	if (!c->nsync)
		return;
	sh.handle = c->sync[rn(c->nsync)].handle;
	sh.fd = -1;
	sh.flags = pct(30) ? DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0;
	err = XIOCTL_CORE(c, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, sh);
	if (!err && !sh.flags) {
		struct syncobj *so = find_sync(c, sh.handle);

		if (so)
			so->shared = true;
	}
	/* EXPORT_SYNC_FILE of a syncobj without a fence is -EINVAL. */
	expect(c, "SYNCOBJ_HANDLE_TO_FD", err, ALLOW(0, EINVAL, EMFILE));
	if (err)
		return;
	if (o) {
		struct drm_syncobj_handle ih = { .fd = sh.fd };

		if (sh.flags) {
			/* A sync_file goes into an existing syncobj. */
			if (!o->nsync) {
				close(sh.fd);
				return;
			}
			ih.handle = o->sync[rn(o->nsync)].handle;
			ih.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
		}
		err = XIOCTL_CORE(o, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, ih);
		expect(o, "SYNCOBJ_FD_TO_HANDLE", err, ALLOW(0, EINVAL));
		if (!err && sh.flags) {
			struct syncobj *so = find_sync(o, ih.handle);

			if (so)
				so->fenced = true;
		} else if (!err) {
			if (o->nsync < MAX_SYNC && !find_sync(o, ih.handle)) {
				o->sync[o->nsync++] = (struct syncobj){
					.handle = ih.handle, .shared = true,
				};
			} else if (!find_sync(o, ih.handle)) {
				struct drm_syncobj_destroy sd = { .handle = ih.handle };

				ioctl(o->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &sd);
			}
		}
	}
	close(sh.fd);
}

static void op_version(struct ctx *c)
{
	struct drm_version v = { 0 };
	char name[64], date[64], desc[128];
	size_t want;
	int err;

	v.name_len = rn(sizeof(name));
	want = v.name_len;
	v.date_len = rn(sizeof(date));
	v.desc_len = rn(sizeof(desc));
	v.name = name;
	v.date = date;
	v.desc = desc;
	if (pct(10))
		v.name = pct(50) ? NULL : (char *)ro_page;
	err = XIOCTL_CORE(c, DRM_IOCTL_VERSION, v);
	if (v.name == name)
		expect(c, "VERSION", err, ALLOW(0));
	else
		expect(c, "VERSION with a bad name pointer", err, ALLOW(0, EFAULT));
	if (err || v.name != name)
		return;
	if (v.version_major != MAIA_DRIVER_MAJOR || v.version_minor < 1)
		violation("VERSION %d.%d", v.version_major, v.version_minor);
	if (want >= 4 && strncmp(name, "maia", 4))
		violation("VERSION name %.4s", name);
}

static void op_get_unique(struct ctx *c)
{
	struct drm_unique u = { 0 };
	char buf[64];
	int err;

	u.unique_len = rn(sizeof(buf) + 1);
	u.unique = pct(90) ? buf : pct(50) ? NULL : (char *)ro_page;
	err = XIOCTL_CORE(c, DRM_IOCTL_GET_UNIQUE, u);
	/* No master on an accel file: refused (driver/maia_drv.c). */
	expect(c, "GET_UNIQUE", err, ALLOW(EACCES));
}

static void op_flink(struct ctx *c)
{
	struct drm_gem_flink f = { 0 };
	int err;

	if (!c->nbo)
		return;
	f.handle = c->bo[rn(c->nbo)].handle;
	err = XIOCTL_CORE(c, DRM_IOCTL_GEM_FLINK, f);
	expect(c, "GEM_FLINK", err, ALLOW(0, EACCES, EOPNOTSUPP, EINVAL, ENODEV));
	if (!err)
		shm->flink_names[rn(MAX_FLINK)] = f.name;
}

static void op_gem_open(struct ctx *c)
{
	struct drm_gem_open o = { 0 };
	int err;

	o.name = pct(80) ? shm->flink_names[rn(MAX_FLINK)] : (uint32_t)edge();
	err = XIOCTL_CORE(c, DRM_IOCTL_GEM_OPEN, o);
	expect(c, "GEM_OPEN", err, ALLOW(0, ENOENT, EACCES, EOPNOTSUPP, EINVAL, ENODEV));
	if (!err)
		add_bo(c, o.handle, o.size, 0);
}

/* Core ioctls a user can reach on an accel fd, with random payloads. */
static void op_core_random(struct ctx *c)
{
	static const unsigned long cmds[] = {
		DRM_IOCTL_GET_MAGIC, DRM_IOCTL_GET_CLIENT, DRM_IOCTL_GET_STATS,
		DRM_IOCTL_GET_CAP, DRM_IOCTL_SET_CLIENT_CAP, DRM_IOCTL_SET_VERSION,
		DRM_IOCTL_AUTH_MAGIC, DRM_IOCTL_SET_MASTER, DRM_IOCTL_DROP_MASTER,
		DRM_IOCTL_MODE_GETRESOURCES, DRM_IOCTL_MODE_CREATE_DUMB, DRM_IOCTL_WAIT_VBLANK,
		DRM_IOCTL_IRQ_BUSID, DRM_IOCTL_GET_MAP, DRM_IOCTL_SET_UNIQUE, DRM_IOCTL_BLOCK,
		DRM_IOCTL_MODESET_CTL, DRM_IOCTL_PRIME_HANDLE_TO_FD,
		DRM_IOCTL_SYNCOBJ_QUERY, DRM_IOCTL_SYNCOBJ_TRANSFER,
		DRM_IOCTL_MODE_GETPLANERESOURCES,
	};
	unsigned char buf[256];
	unsigned long cmd = cmds[rn(ARRAY_SIZE(cmds))];
	unsigned int i, size = _IOC_SIZE(cmd);
	int err;

	for (i = 0; i < sizeof(buf); i += 8) {
		uint64_t v = pct(50) ? 0 : edge();

		memcpy(buf + i, &v, 8);
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	/*
	 * drm_syncobj_array_find() in the 6.12 core kmallocs count_handles
	 * entries without __GFP_NOWARN: a count above ~1M WARNs in the page
	 * allocator on any DRM device (Documentation/reliability.rst). Keep
	 * counts below that unless --core-warn asks for the known WARN.
	 */
	if (!opt_core_warn && (cmd == DRM_IOCTL_SYNCOBJ_QUERY || cmd == DRM_IOCTL_SYNCOBJ_TRANSFER)) {
		struct drm_syncobj_timeline_array *a = (void *)buf;

		if (cmd == DRM_IOCTL_SYNCOBJ_QUERY)
			a->count_handles &= 0xffff;
	}
	/* A random SET_CLIENT_CAP value is fine; do not turn on caps that
	 * change how this file behaves for the rest of the run. */
	err = xioctl(c, cmd, buf, size ? size : 8, false);
	if (!err && cmd == DRM_IOCTL_PRIME_HANDLE_TO_FD) {
		struct drm_prime_handle *ph = (void *)buf;

		close(ph->fd);
	}
	if (!err && cmd == DRM_IOCTL_SYNCOBJ_TRANSFER)
		c->unsure = true;	/* it may have added a fence */
}

static void op_mmap(struct ctx *c)
{
	struct bo *b;
	uint64_t off, len;
	void *p;
	bool bad = false;

	if (!c->nbo)
		return;
	b = &c->bo[rn(c->nbo)];
	if (!b->mmap_off) {
		struct drm_maia_bo_info bi = { .handle = b->handle };

		if (ioctl(c->fd, DRM_IOCTL_MAIA_BO_INFO, &bi))
			return;
		b->mmap_off = bi.mmap_offset;
	}
	off = b->mmap_off;
	len = b->size;
	switch (rn(8)) {
	case 0:
		len += PAGE;	/* past the object */
		bad = true;
		break;
	case 1:
		off += PAGE;	/* device-fd mappings start at the first page */
		bad = true;
		break;
	case 2:
		len = PAGE;
		break;
	default:
		break;
	}
	if (ncpumaps >= MAX_CPUMAP) {
		int i = (int)rn(MAX_CPUMAP);

		munmap(cpumaps[i].p, cpumaps[i].len);
		cpumaps[i] = cpumaps[--ncpumaps];
	}
	p = mmap(NULL, len, PROT_READ | (pct(80) ? PROT_WRITE : 0), MAP_SHARED, c->fd, off);
	count_result(p == MAP_FAILED ? errno : 0);
	if (p == MAP_FAILED) {
		if (!bad)
			expect(c, "mmap of a BO", errno, ALLOW(ENOMEM));
		return;
	}
	/* Offsets of different objects never overlap: inside this one is no other. */
	if (bad && off != b->mmap_off && b->size > PAGE && !c->unsure)
		violation("mmap at a page offset inside a BO through the device fd succeeded");
	cpumaps[ncpumaps++] = (struct cpumap){ .p = p, .len = len };
	/* Touch it (only within the object: past it is SIGBUS by design). */
	if (len <= b->size)
		(void)*(volatile unsigned char *)((char *)p + rn(len));
}

static void op_munmap(void)
{
	int i;

	if (!ncpumaps)
		return;
	i = (int)rn(ncpumaps);
	if (munmap(cpumaps[i].p, cpumaps[i].len))
		violation("munmap: %s", strerror(errno));
	cpumaps[i] = cpumaps[--ncpumaps];
}

static void op_dmabuf_mmap(void)
{
	struct dmabuf *d;
	uint64_t off, len;
	bool wr;
	void *p;

	if (!ndmabufs)
		return;
	d = &dmabufs[rn(ndmabufs)];
	off = PAGE * rn(d->size / PAGE);
	len = PAGE * (1 + rn((d->size - off) / PAGE));
	if (pct(10))
		len += PAGE;
	if (ncpumaps >= MAX_CPUMAP) {
		int i = (int)rn(MAX_CPUMAP);

		munmap(cpumaps[i].p, cpumaps[i].len);
		cpumaps[i] = cpumaps[--ncpumaps];
	}
	wr = pct(70);
	p = mmap(NULL, len, PROT_READ | (wr ? PROT_WRITE : 0), MAP_SHARED, d->fd, off);
	count_result(p == MAP_FAILED ? errno : 0);
	if (p == MAP_FAILED) {
		if (off + len <= d->size && (d->rdwr || !wr))
			expect(NULL, "mmap of a dma-buf inside it", errno, ALLOW(ENOMEM));
		else if (off + len <= d->size)
			expect(NULL, "writable mmap of a read-only dma-buf", errno, ALLOW(EACCES));
		return;
	}
	if (wr && !d->rdwr)
		violation("writable mmap of a dma-buf exported without DRM_RDWR succeeded");
	if (off + len > d->size)
		violation("dma-buf mmap past its end (off %llu len %llu size %llu) succeeded",
			  (unsigned long long)off, (unsigned long long)len,
			  (unsigned long long)d->size);
	cpumaps[ncpumaps++] = (struct cpumap){ .p = p, .len = len };
	if (off + len <= d->size)
		(void)((volatile unsigned char *)p)[rn(len)];
}

/* The maia ioctls: number, current size, first size. */
static const struct {
	unsigned int nr, size, first;
} maia_ioctls[] = {
	{ DRM_MAIA_GET_PARAM, sizeof(struct drm_maia_get_param), 16 },
	{ DRM_MAIA_PING, sizeof(struct drm_maia_ping), 40 },
	{ DRM_MAIA_BO_CREATE, sizeof(struct drm_maia_bo_create), 16 },
	{ DRM_MAIA_BO_INFO, sizeof(struct drm_maia_bo_info), 24 },
	{ DRM_MAIA_VM_BIND, sizeof(struct drm_maia_vm_bind), 40 },
	{ DRM_MAIA_SUBMIT, sizeof(struct drm_maia_submit), 56 },
	{ DRM_MAIA_WAIT, sizeof(struct drm_maia_wait), 32 },
	{ DRM_MAIA_CONTEXT_STATUS, sizeof(struct drm_maia_context_status), 32 },
	{ DRM_MAIA_FABRIC_PORT, sizeof(struct drm_maia_fabric_port), 120 },
	{ DRM_MAIA_FABRIC_WINDOW, sizeof(struct drm_maia_fabric_window), 32 },
	{ DRM_MAIA_USERQ_CREATE, sizeof(struct drm_maia_userq_create), 40 },
	{ DRM_MAIA_USERQ_DESTROY, sizeof(struct drm_maia_userq_destroy), 8 },
	{ DRM_MAIA_USERQ_WAIT, sizeof(struct drm_maia_userq_wait), 24 },
};

/* A harmless valid argument for ioctl i (so a size error is the only one). */
static void harmless_arg(struct ctx *c, unsigned int i, unsigned char *arg)
{
	memset(arg, 0, 64);
	switch (maia_ioctls[i].nr) {
	case DRM_MAIA_PING:
		*(uint64_t *)arg = rnd();
		break;
	case DRM_MAIA_BO_INFO:
		*(uint32_t *)arg = c->cmd_handle;
		break;
	case DRM_MAIA_WAIT:
		((struct drm_maia_wait *)arg)->seqno = c->nseq ? c->seq[0] : 0;
		break;
	case DRM_MAIA_FABRIC_WINDOW:	/* CLOSE of key 0: nothing to close */
		((struct drm_maia_fabric_window *)arg)->op = DRM_MAIA_FABRIC_WINDOW_CLOSE;
		break;
	case DRM_MAIA_USERQ_CREATE:	/* flags: fails, creates nothing */
		((struct drm_maia_userq_create *)arg)->flags = 1;
		break;
	case DRM_MAIA_USERQ_DESTROY:	/* queue 0 is the kernel's: -ENOENT */
	case DRM_MAIA_USERQ_WAIT:
	case DRM_MAIA_FABRIC_PORT:	/* port 0: read-only */
	case DRM_MAIA_BO_CREATE:	/* size 0: would fail anyway, never leaks */
	case DRM_MAIA_GET_PARAM:
	case DRM_MAIA_CONTEXT_STATUS:
	default:
		break;
	}
}

static void op_bad_size(struct ctx *c)
{
	static unsigned char buf[1024], ref[1024];
	unsigned int i = (unsigned int)rn(ARRAY_SIZE(maia_ioctls));
	unsigned int size, dir = _IOC_READ | _IOC_WRITE, nr = maia_ioctls[i].nr;
	unsigned long cmd;
	bool legal;
	int ret, err;

	switch (rn(6)) {
	case 0:
		size = maia_ioctls[i].first - 8 * (1 + (unsigned int)rn(maia_ioctls[i].first / 8));
		break;
	case 1:
		size = maia_ioctls[i].size + 4 * (1 + (unsigned int)rn(16));
		break;
	case 2:
		size = (unsigned int)rn(_IOC_SIZEMASK + 1);
		break;
	case 3:
		size = maia_ioctls[i].size;
		dir = (unsigned int)rn(3);	/* NONE, WRITE, READ */
		break;
	case 4:
		size = maia_ioctls[i].size;
		nr = DRM_MAIA_USERQ_WAIT + 1 +
		     (unsigned int)rn(DRM_COMMAND_END - DRM_COMMAND_BASE - DRM_MAIA_USERQ_WAIT - 1);
		break;
	default:	/* a legal smaller one: only WAIT has one */
		size = maia_ioctls[i].first + 4 * (unsigned int)rn(3);
		break;
	}
	cmd = _IOC(dir, DRM_IOCTL_BASE, DRM_COMMAND_BASE + nr, size);
	legal = nr <= DRM_MAIA_USERQ_WAIT && dir == (_IOC_READ | _IOC_WRITE) && size >= maia_ioctls[i].first &&
		size <= maia_ioctls[i].size;
	if (legal && maia_ioctls[i].nr == DRM_MAIA_BO_CREATE)
		return;
	memset(buf, 0xa5, sizeof(buf));
	harmless_arg(c, i, buf);
	memcpy(ref, buf, sizeof(buf));
	ret = ioctl(c->fd, cmd, size <= sizeof(buf) ? buf : hole_page);
	err = ret ? errno : 0;
	count_result(err);
	if (size > sizeof(buf))
		return;
	if (!legal) {
		if (err != EINVAL)
			violation("ioctl nr %#x dir %u size %u (first %u, current %u): %s, "
				  "expected EINVAL", DRM_COMMAND_BASE + nr, dir, size,
				  maia_ioctls[i].first, maia_ioctls[i].size,
				  err ? strerror(err) : "success");
		if (memcmp(buf, ref, sizeof(buf)))
			violation("refused ioctl nr %#x size %u wrote the buffer",
				  DRM_COMMAND_BASE + nr, size);
	} else if (memcmp(buf + size, ref + size, sizeof(buf) - size)) {
		violation("ioctl nr %#x with size %u wrote past it", DRM_COMMAND_BASE + nr, size);
	}
}

static void op_bad_ptr(struct ctx *c)
{
	unsigned int i = (unsigned int)rn(ARRAY_SIZE(maia_ioctls));
	unsigned int size = maia_ioctls[i].size;
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
				 DRM_COMMAND_BASE + maia_ioctls[i].nr, size);
	unsigned char arg[64];
	void *p;
	int ret, err;
	bool creates = maia_ioctls[i].nr == DRM_MAIA_BO_CREATE;

	harmless_arg(c, i, arg);
	switch (rn(creates ? 4 : 5)) {
	case 0:
		p = NULL;
		break;
	case 1:
		p = hole_page;
		break;
	case 2:
		p = (void *)0xffff888000000000ull;
		break;
	case 3:	/* straddles into the hole: the tail is unreadable (8-byte structs too) */
		p = (char *)edge_page + PAGE - (size > 8 ? 8 : size / 2);
		memcpy(p, arg, size > 8 ? 8 : size / 2);
		break;
	default:	/* readable, not writable: the output copy fails */
		p = ro_page;
		break;
	}
	ret = ioctl(c->fd, cmd, p);
	err = ret ? errno : 0;
	count_result(err);
	expect(c, "maia ioctl with a bad pointer", err, ALLOW(EFAULT));
}

/* A maia ioctl with every field drawn from edge values. */
static void op_raw(struct ctx *c)
{
	unsigned int i = (unsigned int)rn(ARRAY_SIZE(maia_ioctls));
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
				 DRM_COMMAND_BASE + maia_ioctls[i].nr, maia_ioctls[i].size);
	unsigned char arg[64];
	unsigned int j;
	int err;

	for (j = 0; j < sizeof(arg); j += 4) {
		uint32_t v = pct(40) ? 0 : (uint32_t)edge();

		memcpy(arg + j, &v, 4);
	}
	/*
	 * Never block without a deadline (a raw USERQ_CREATE may have made the
	 * queue a raw USERQ_WAIT names: it waits for its count or the deadline),
	 * never leak what the model can't see.
	 */
	if (maia_ioctls[i].nr == DRM_MAIA_WAIT)
		((struct drm_maia_wait *)arg)->timeout_ns = mono_ns() + 10000000;
	if (maia_ioctls[i].nr == DRM_MAIA_USERQ_WAIT)
		((struct drm_maia_userq_wait *)arg)->timeout_ns = mono_ns() + 10000000;
	err = xioctl(c, cmd, arg, maia_ioctls[i].size, true);
	if (err)
		return;
	switch (maia_ioctls[i].nr) {
	case DRM_MAIA_BO_CREATE: {
		struct drm_maia_bo_create *bc = (void *)arg;

		add_bo(c, bc->handle, (bc->size + PAGE - 1) & ~(PAGE - 1), bc->flags);
		break;
	}
	case DRM_MAIA_VM_BIND:
	case DRM_MAIA_SUBMIT:
		c->unsure = true;
		break;
	default:
		break;
	}
}

/* --- worker ------------------------------------------------------------- */

static void setup_pages(void)
{
	char *p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(p, 0, 3 * PAGE);
	ro_page = p;
	edge_page = p + PAGE;
	hole_page = p + 2 * PAGE;
	mprotect(ro_page, PAGE, PROT_READ);
	/* PROT_NONE rather than unmapped, so that no later mmap() lands there. */
	mprotect(hole_page, PAGE, PROT_NONE);
}

static enum op pick_op(void)
{
	static unsigned int total;
	unsigned int i, r;

	if (!total)
		for (i = 0; i < NUM_OPS; i++)
			total += op_weight[i];
	r = (unsigned int)rn(total);
	for (i = 0; i < NUM_OPS; i++) {
		if (r < op_weight[i])
			return (enum op)i;
		r -= op_weight[i];
	}
	return OP_GET_PARAM;
}

static void run_one(void)
{
	struct ctx *c;
	enum op op;

	/* Keep one to MAX_CTX contexts open; reopen faulted ones soon. */
	c = pick_ctx();
	if (!c || (pct(2) && other_ctx(c) == NULL)) {
		int i;

		for (i = 0; i < MAX_CTX; i++)
			if (ctxs[i].fd < 0) {
				cur_op = "open";
				ctx_open(&ctxs[i]);
				return;
			}
	}
	if (!c)
		return;
	op = pick_op();
	if (c->faulted && pct(20))
		op = OP_REOPEN;
	cur_op = op_names[op];
	st->per_op[op]++;
	trace("%s on fd %d (ctx %d, node %d)", cur_op, c->fd, (int)(c - ctxs), c->node);
	switch (op) {
	case OP_GET_PARAM: op_get_param(c); break;
	case OP_PING: op_ping(c); break;
	case OP_BO_CREATE: op_bo_create(c); break;
	case OP_BO_INFO: op_bo_info(c); break;
	case OP_MAP: op_map(c); break;
	case OP_UNMAP: op_unmap(c); break;
	case OP_SUBMIT: op_submit(c); break;
	case OP_WAIT: op_wait(c); break;
	case OP_CTX_STATUS: op_ctx_status(c); break;
	case OP_GEM_CLOSE: op_gem_close(c); break;
	case OP_PRIME_EXPORT: op_prime_export(c); break;
	case OP_PRIME_IMPORT: op_prime_import(c); break;
	case OP_SYNC_CREATE: op_sync_create(c); break;
	case OP_SYNC_DESTROY: op_sync_destroy(c); break;
	case OP_SYNC_WAIT: op_sync_wait(c, false); break;
	case OP_SYNC_TL_WAIT: op_sync_wait(c, true); break;
	case OP_SYNC_SIGNAL: op_sync_signal_reset(c, true); break;
	case OP_SYNC_RESET: op_sync_signal_reset(c, false); break;
	case OP_SYNC_FD: op_sync_fd(c); break;
	case OP_SYNC_TL_SIGNAL: op_sync_tl_signal(c); break;
	case OP_SYNC_QUERY: op_sync_query(c); break;
	case OP_VERSION: op_version(c); break;
	case OP_GET_UNIQUE: op_get_unique(c); break;
	case OP_CORE_RANDOM: op_core_random(c); break;
	case OP_FLINK: op_flink(c); break;
	case OP_GEM_OPEN: op_gem_open(c); break;
	case OP_MMAP: op_mmap(c); break;
	case OP_MUNMAP: op_munmap(); break;
	case OP_DMABUF_MMAP: op_dmabuf_mmap(); break;
	case OP_REOPEN:
		if (pct(50) || c->faulted) {
			ctx_reopen(c);
		} else {
			/* close without reopening, but keep at least one */
			if (other_ctx(c)) {
				if (c->cmd_cpu)
					munmap(c->cmd_cpu, CMDBUF_SIZE);
				ctx_close(c);
			}
		}
		break;
	case OP_BAD_SIZE: op_bad_size(c); break;
	case OP_USERQ: op_userq(c); break;
	case OP_BAD_PTR: op_bad_ptr(c); break;
	case OP_RAW: op_raw(c); break;
	default: break;
	}
}

static void worker_cleanup(void)
{
	int i;

	for (i = 0; i < ncpumaps; i++)
		munmap(cpumaps[i].p, cpumaps[i].len);
	ncpumaps = 0;
	for (i = 0; i < ndmabufs; i++)
		close(dmabufs[i].fd);
	ndmabufs = 0;
	for (i = 0; i < MAX_CTX; i++) {
		if (ctxs[i].fd >= 0 && ctxs[i].cmd_cpu)
			munmap(ctxs[i].cmd_cpu, CMDBUF_SIZE);
		ctx_close(&ctxs[i]);
	}
}

int worker(int index, unsigned long long calls, int64_t deadline_ns)
{
	int i;

	worker_start(index, opt_seed ^ (0x5851f42d4c957f2dull * (uint64_t)(index + 1)));
	setup_pages();
	for (i = 0; i < MAX_CTX; i++)
		ctxs[i].fd = -1;
	ctx_open(&ctxs[0]);
	for (call_no = 0; call_no < calls; call_no++) {
		if (!(call_no & 63) && deadline_ns && mono_ns() > deadline_ns)
			break;
		alarm(CALL_WATCHDOG_S);
		run_one();
		st->calls++;
	}
	cur_op = "cleanup";
	alarm(CALL_WATCHDOG_S);
	worker_cleanup();
	alarm(0);
	st->done = 1;
	return st->violations ? 1 : 0;
}

