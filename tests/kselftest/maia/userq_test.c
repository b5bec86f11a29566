// SPDX-License-Identifier: GPL-2.0-only
/*
 * User queues (driver 1.4): a process writes device entries into its mapped
 * ring and rings its mapped doorbell page; the kernel keeps isolation, hang
 * detection, reset and teardown. Checked here against the device's own
 * completion entries and the kernel's state:
 * - a NOP and a FILL job run, their completions are right, USERQ_WAIT
 *   sleeps until them; the bad-argument errnos; a queue per slot, -EBUSY
 *   beyond, a closed file's slot comes back;
 * - isolation: an entry naming another context's ASID fails with
 *   ASID_DENIED and the other context's data is untouched; a job touching
 *   an unmapped address faults its own context (CONTEXT_STATUS, SUBMIT
 *   -EBADFD, CREATE -EBADFD) and stops its queue, while another context
 *   keeps running on its own user queue and through SUBMIT;
 * - a hostile ring: random entries, a storm of doorbells with random tails
 *   (backwards too), an out-of-range tail: the queue fails its jobs or
 *   stops (ERROR), nothing else is hurt, PING answers;
 * - hangs: a job that waits forever is seen by the watchdog and its queue
 *   stopped (HUNG) without a device reset; a forced device reset stops
 *   every user queue (LOST); new queues then work;
 * - teardown: DESTROY revokes the doorbell (a store rings nothing) and
 *   sets the state word; close with jobs queued frees the slot;
 * - fork(): the child does not inherit the queue's mappings (SIGSEGV), may
 *   make a queue of its own, and the parent's runs on;
 * - the kernel log names only the queue that failed.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <maia/hw/queue.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_DATA		(DRM_MAIA_VA_START + 0x10000000ull)
#define VA_HOLE		(DRM_MAIA_VA_START + 0x70000000ull)	/* never mapped */
#define TIMEOUT_PARAM	"/sys/module/maia/parameters/job_timeout_ms"
#define SEM_NEVER	62	/* nobody signals it */

/* A user queue as a process sees it. */
struct uq {
	int fd;
	__u32 id, entries, asid;
	struct maia_sq_entry *sq;
	volatile struct maia_cq_entry *cq;
	volatile __u32 *db;
	__u32 tail;		/* entries written */
};

static void *map1(int fd, __u64 off)
{
	void *p = mmap(NULL, KSFT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

static int uq_create(int fd, struct uq *q)
{
	struct drm_maia_userq_create c = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct drm_maia_context_status cs;

	memset(q, 0, sizeof(*q));
	if (ioctl(fd, DRM_IOCTL_MAIA_USERQ_CREATE, &c))
		return -errno;
	if (kcontext_status(fd, &cs))
		return -errno;
	q->fd = fd;
	q->id = c.queue_id;
	q->entries = c.entries;
	q->asid = cs.asid;
	q->sq = map1(fd, c.sq_offset);
	q->cq = map1(fd, c.cq_offset);
	q->db = map1(fd, c.doorbell_offset);
	return q->sq && q->cq && q->db ? 0 : -ENOMEM;
}

static void uq_unmap(struct uq *q)
{
	if (q->sq)
		munmap(q->sq, KSFT_PAGE);
	if (q->cq)
		munmap((void *)q->cq, KSFT_PAGE);
	if (q->db)
		munmap((void *)q->db, KSFT_PAGE);
	q->sq = NULL;
	q->cq = NULL;
	q->db = NULL;
}

static int uq_destroy(struct uq *q)
{
	struct drm_maia_userq_destroy d = { .queue_id = q->id };

	uq_unmap(q);
	return ioctl(q->fd, DRM_IOCTL_MAIA_USERQ_DESTROY, &d) ? -errno : 0;
}

/* Writes one entry and rings the doorbell; returns the entry's number (from 1). */
static __u32 uq_push(struct uq *q, __u64 cmdbuf, __u32 size, __u16 asid, __u16 flags)
{
	__u32 slot = q->tail % q->entries;
	struct maia_sq_entry e = {
		.cmdbuf_addr = cmdbuf, .cmdbuf_size = size, .asid = asid, .flags = flags,
		.job_id = 0x5100000000ull + q->tail,
	};

	q->cq[slot].flags = 0;
	q->sq[slot] = e;
	q->tail++;
	__sync_synchronize();
	*q->db = q->tail % q->entries;
	return q->tail;
}

/* USERQ_WAIT for @count completions, relative timeout; 0 or -errno. */
static int uq_wait(struct uq *q, __u32 count, __s64 rel_ns, struct drm_maia_userq_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->queue_id = q->id;
	w->count = count;
	w->timeout_ns = kmono_ns() + rel_ns;
	return ioctl(q->fd, DRM_IOCTL_MAIA_USERQ_WAIT, w) ? -errno : 0;
}

/* The completion of entry @n (from 1), once the queue completed it. */
static const volatile struct maia_cq_entry *uq_cqe(struct uq *q, __u32 n)
{
	return &q->cq[(n - 1) % q->entries];
}

static int uq_wait_state(struct uq *q, __u32 state, __s64 rel_ns)
{
	struct drm_maia_userq_wait w;
	int err = uq_wait(q, 0x7fffffff, rel_ns, &w);

	if (err)
		return err;
	return w.state == state ? 0 : -EPROTO;
}

FIXTURE(userq) {
	struct maia_node node;
	int fd;
	struct kbo cmd, data;
	struct kcmd cb;
	long long old_timeout;
};

FIXTURE_SETUP(userq)
{
	__u64 n = 0;

	self->fd = -1;
	self->old_timeout = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	if (maia_get_param(self->fd, DRM_MAIA_PARAM_USER_QUEUES, &n) || !n)
		SKIP(return, "the driver has no user queues");
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &self->cmd));
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_DATA, &self->data));
	self->cb.bo = &self->cmd;
	self->old_timeout = kread_ll(TIMEOUT_PARAM);
}

FIXTURE_TEARDOWN(userq)
{
	char val[32];

	if (self->old_timeout >= 0) {
		snprintf(val, sizeof(val), "%lld", self->old_timeout);
		maia_write_file(TIMEOUT_PARAM, val);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/* A FILL of @size bytes of VA_DATA with @pattern at the end of the command BO. */
static __u32 fill_cmd(struct kcmd *cb, __u64 dst, __u64 size, __u32 pattern, __u64 *addr)
{
	cb->start = cb->used;
	kcmd_fill(cb, dst, size, pattern);
	*addr = VA_CMD + cb->start;
	return (__u32)(cb->used - cb->start);
}

TEST_F(userq, nop_fill_and_wait)
{
	struct drm_maia_userq_wait w;
	const volatile struct maia_cq_entry *c;
	__u32 *data = self->data.cpu;
	__u64 addr;
	__u32 n, size, i;
	struct uq q;

	ASSERT_EQ(0, uq_create(self->fd, &q));
	EXPECT_EQ(64, q.entries);

	n = uq_push(&q, 0, 0, q.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&q, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_LE(n, w.completed);
	c = uq_cqe(&q, n);
	EXPECT_EQ(MAIA_CQE_VALID, c->flags);
	EXPECT_EQ(MAIA_STATUS_OK, c->status);
	EXPECT_EQ(0x5100000000ull, c->job_id);

	/* 200 FILL jobs, 50 at a time (the ring holds 63), through the wrap. */
	memset(data, 0, 64 * 1024);
	size = fill_cmd(&self->cb, VA_DATA, 64 * 1024, 0xfeedc0de, &addr);
	for (i = 0; i < 200; i++) {
		n = uq_push(&q, addr, size, q.asid, 0);
		if (i % 50 == 49) {
			__u32 j, bad = 0;

			ASSERT_EQ(0, uq_wait(&q, n, 10 * NS_PER_SEC, &w));
			for (j = n - 49; j <= n; j++)
				bad += uq_cqe(&q, j)->status != MAIA_STATUS_OK ||
				       uq_cqe(&q, j)->job_id != 0x5100000000ull + j - 1;
			EXPECT_EQ(0, bad);
		}
	}
	EXPECT_EQ(201, w.completed);
	for (i = 0; i < 64 * 1024 / 4; i++)
		if (data[i] != 0xfeedc0de)
			break;
	EXPECT_EQ(64 * 1024 / 4, i);
	EXPECT_EQ(0, uq_destroy(&q));
}

TEST_F(userq, bad_arguments)
{
	struct drm_maia_userq_create c = { .flags = 1 };
	struct drm_maia_userq_destroy d = { .queue_id = 0 };
	struct drm_maia_userq_create oc = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct drm_maia_userq_wait w;
	struct uq q;
	int other;
	void *p;

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_USERQ_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0;
	c.priority = DRM_MAIA_PRIO_HIGH + 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_USERQ_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_USERQ_DESTROY, &d));
	EXPECT_EQ(ENOENT, errno);	/* queue 0 is the kernel's */
	d.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_USERQ_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	q.fd = self->fd;
	q.id = 99;
	EXPECT_EQ(-ENOENT, uq_wait(&q, 1, NS_PER_SEC, &w));

	ASSERT_EQ(0, uq_create(self->fd, &q));
	/* Another file cannot map this file's queue. */
	other = maia_open_node(&self->node);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ioctl(other, DRM_IOCTL_MAIA_USERQ_CREATE, &oc));
	p = mmap(NULL, KSFT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 oc.doorbell_offset);
	EXPECT_EQ(MAP_FAILED, p);
	/* Two pages, or a private mapping, of one's own: refused too. */
	p = mmap(NULL, 2 * KSFT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, other, oc.sq_offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, KSFT_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, other, oc.sq_offset);
	EXPECT_EQ(MAP_FAILED, p);
	close(other);
	/* Waiting for entries never written times out. */
	EXPECT_EQ(-ETIME, uq_wait(&q, 5, 50 * 1000 * 1000, &w));
	EXPECT_EQ(0, uq_destroy(&q));
	EXPECT_EQ(-ENOENT, uq_wait(&q, 1, NS_PER_SEC, &w));
}

TEST_F(userq, slots_taken_and_given_back)
{
	struct drm_maia_userq_wait w;
	struct uq q[16], extra;
	int fds[16];
	unsigned int i;
	__u32 last;
	__u64 n = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_USER_QUEUES, &n));
	ASSERT_GE(16, n);
	for (i = 0; i < n; i++) {
		fds[i] = maia_open_node(&self->node);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, uq_create(fds[i], &q[i]));
		uq_push(&q[i], 0, 0, q[i].asid, MAIA_SQE_NOP);
	}
	EXPECT_EQ(-EBUSY, uq_create(self->fd, &extra));
	/* Close with a mapping still there and a job queued: slot 0 comes back. */
	uq_unmap(&q[0]);
	close(fds[0]);
	ASSERT_EQ(0, uq_create(self->fd, &extra));
	last = uq_push(&extra, 0, 0, extra.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&extra, last, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&extra, last)->status);
	for (i = 1; i < n; i++) {
		uq_unmap(&q[i]);
		close(fds[i]);
	}
	EXPECT_EQ(0, uq_destroy(&extra));
}

/* Two contexts: A's entries name B's ASID and touch an unmapped page. */
TEST_F(userq, isolation)
{
	struct drm_maia_context_status cs;
	struct drm_maia_userq_wait w;
	struct drm_maia_wait kw;
	struct kbo bdata, bcmd;
	struct kcmd bcb = { .bo = &bcmd };
	__u64 addr, baddr, seqno = 0;
	__u32 n, size, bsize, i;
	struct uq a, b, again;
	int bfd;

	bfd = maia_open_node(&self->node);
	ASSERT_LE(0, bfd);
	ASSERT_EQ(0, kbo_create(bfd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &bcmd));
	ASSERT_EQ(0, kbo_create(bfd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_DATA, &bdata));
	memset(bdata.cpu, 0x5a, 4096);
	ASSERT_EQ(0, uq_create(self->fd, &a));
	ASSERT_EQ(0, uq_create(bfd, &b));
	ASSERT_NE(a.asid, b.asid);

	/* A names B's ASID with a FILL of B's data: denied, B's data intact. */
	size = fill_cmd(&self->cb, VA_DATA, 4096, 0x11111111, &addr);
	n = uq_push(&a, addr, size, b.asid, 0);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(MAIA_STATUS_ASID_DENIED, uq_cqe(&a, n)->status);
	for (i = 0; i < 4096; i++)
		if (((__u8 *)bdata.cpu)[i] != 0x5a)
			break;
	EXPECT_EQ(4096, i);
	n = uq_push(&a, 0, 0, MAIA_ASID_PHYS, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(MAIA_STATUS_ASID_DENIED, uq_cqe(&a, n)->status);
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);

	/* A faults: its context is faulted, its queue stopped. */
	size = fill_cmd(&self->cb, VA_HOLE, 4096, 0x22222222, &addr);
	n = uq_push(&a, addr, size, a.asid, 0);
	ASSERT_EQ(0, uq_wait_state(&a, DRM_MAIA_USERQ_FAULTED, 5 * NS_PER_SEC));
	EXPECT_EQ(DRM_MAIA_USERQ_FAULTED,
		  *(volatile __u32 *)((volatile char *)a.cq + DRM_MAIA_USERQ_STATE_OFFSET));
	EXPECT_EQ(MAIA_STATUS_MMU_FAULT, uq_cqe(&a, n)->status);
	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_TRUE(cs.flags & DRM_MAIA_CTX_FAULTED);
	EXPECT_EQ(VA_HOLE, cs.fault_addr);
	self->cb.start = self->cb.used;
	kcmd_nop(&self->cb);
	EXPECT_EQ(-EBADFD, kcmd_submit(self->fd, &self->cb, NULL, &seqno));
	EXPECT_EQ(-EBADFD, uq_create(self->fd, &again));
	/* A doorbell on the stopped queue runs nothing. */
	n = uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	usleep(100 * 1000);
	EXPECT_EQ(0, uq_cqe(&a, n)->flags);

	/* B is untouched: its user queue and SUBMIT both run. */
	bsize = fill_cmd(&bcb, VA_DATA, 4096, 0x33333333, &baddr);
	n = uq_push(&b, baddr, bsize, b.asid, 0);
	ASSERT_EQ(0, uq_wait(&b, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&b, n)->status);
	EXPECT_EQ(0x33333333, ((__u32 *)bdata.cpu)[1023]);
	ASSERT_EQ(0, kcontext_status(bfd, &cs));
	EXPECT_FALSE(cs.flags & DRM_MAIA_CTX_FAULTED);
	bcb.start = bcb.used;
	kcmd_nop(&bcb);
	ASSERT_EQ(0, kcmd_submit(bfd, &bcb, NULL, &seqno));
	ASSERT_EQ(0, kwait(bfd, seqno, 5 * NS_PER_SEC, &kw));
	EXPECT_EQ(DRM_MAIA_JOB_OK, kw.status);
	EXPECT_EQ(0, uq_destroy(&a));
	EXPECT_EQ(0, uq_destroy(&b));
	kbo_destroy(bfd, &bdata);
	kbo_destroy(bfd, &bcmd);
	close(bfd);
}

/*
 * A hostile ring: random entries and a storm of random doorbells, many of
 * them behind HEAD; then a tail out of range. Another context runs beside.
 */
TEST_F_TIMEOUT(userq, hostile_ring, 120)
{
	struct drm_maia_userq_wait w;
	struct drm_maia_ping ping;
	struct kbo bcmd;
	struct kcmd bcb = { .bo = &bcmd };
	__u32 n, i, ok = 0, done;
	__u64 baddr;
	struct uq a, b;
	int bfd;

	bfd = maia_open_node(&self->node);
	ASSERT_LE(0, bfd);
	ASSERT_EQ(0, kbo_create(bfd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &bcmd));
	bcb.start = 0;
	kcmd_nop(&bcb);
	baddr = VA_CMD;
	ASSERT_EQ(0, uq_create(self->fd, &a));
	ASSERT_EQ(0, uq_create(bfd, &b));

	srand(12);
	for (i = 0; i < a.entries * sizeof(struct maia_sq_entry) / 4; i++)
		((__u32 *)a.sq)[i] = (__u32)rand();
	for (i = 0; i < 2000; i++) {
		*a.db = (__u32)rand() % a.entries;
		if (i % 100 == 0) {
			n = uq_push(&b, baddr, 8, b.asid, 0);
			if (!uq_wait(&b, n, 5 * NS_PER_SEC, &w) &&
			    uq_cqe(&b, n)->status == MAIA_STATUS_OK)
				ok++;
		}
	}
	EXPECT_EQ(20, ok);
	ASSERT_EQ(0, maia_ping(self->fd, 77, &ping));
	EXPECT_EQ(77, ping.echo);
	/* None of A's random entries ran as OK, unless by luck it named its ASID. */
	ASSERT_EQ(0, uq_wait(&a, 0, 0, &w));
	done = 0;
	for (i = 0; i < a.entries; i++)
		if ((a.cq[i].flags & MAIA_CQE_VALID) && a.cq[i].status == MAIA_STATUS_OK &&
		    a.sq[i].asid != a.asid)
			done++;
	EXPECT_EQ(0, done);

	/* A tail out of range stops the queue with ERROR. */
	*a.db = a.entries + 3;
	ASSERT_EQ(0, uq_wait_state(&a, DRM_MAIA_USERQ_ERROR, 5 * NS_PER_SEC));
	n = uq_push(&b, baddr, 8, b.asid, 0);
	ASSERT_EQ(0, uq_wait(&b, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&b, n)->status);
	EXPECT_EQ(0, uq_destroy(&a));
	EXPECT_EQ(0, uq_destroy(&b));
	kbo_destroy(bfd, &bcmd);
	close(bfd);
}

/* A job waiting on a semaphore nobody signals: the watchdog stops its queue. */
TEST_F_TIMEOUT(userq, hang_stops_queue_without_reset, 60)
{
	long long resets = kreset_count(&self->node);
	struct drm_maia_userq_wait w;
	struct drm_maia_context_status cs;
	__u64 addr;
	__u32 n, size;
	struct uq a, b;
	int bfd;

	ASSERT_EQ(0, maia_write_file(TIMEOUT_PARAM, "1000"));
	bfd = maia_open_node(&self->node);
	ASSERT_LE(0, bfd);
	ASSERT_EQ(0, uq_create(self->fd, &a));
	ASSERT_EQ(0, uq_create(bfd, &b));

	self->cb.start = self->cb.used;
	kcmd_sem_wait(&self->cb, SEM_NEVER, 1, 0xffffffffu);
	addr = VA_CMD + self->cb.start;
	size = (__u32)(self->cb.used - self->cb.start);
	n = uq_push(&a, addr, size, a.asid, 0);
	uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait_state(&a, DRM_MAIA_USERQ_HUNG, 20 * NS_PER_SEC));
	EXPECT_EQ(0, uq_cqe(&a, n)->flags);
	EXPECT_EQ(resets, kreset_count(&self->node));
	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_FALSE(cs.flags & DRM_MAIA_CTX_FAULTED);

	/* B never noticed; A makes a new queue and goes on. */
	n = uq_push(&b, 0, 0, b.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&b, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_EQ(0, uq_destroy(&a));
	ASSERT_EQ(0, uq_create(self->fd, &a));
	n = uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&a, n)->status);
	EXPECT_EQ(0, uq_destroy(&a));
	EXPECT_EQ(0, uq_destroy(&b));
	close(bfd);
}

TEST_F_TIMEOUT(userq, reset_loses_queues, 60)
{
	struct drm_maia_userq_wait w;
	char path[96];
	__u32 n;
	struct uq a;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/force_reset", self->node.bdf);
	if (access(path, W_OK))
		SKIP(return, "no %s (debugfs not mounted?)", path);
	ASSERT_EQ(0, uq_create(self->fd, &a));
	n = uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	ASSERT_EQ(0, maia_write_file(path, "1"));
	ASSERT_EQ(0, uq_wait_state(&a, DRM_MAIA_USERQ_LOST, 5 * NS_PER_SEC));
	EXPECT_EQ(0, uq_destroy(&a));
	ASSERT_EQ(0, uq_create(self->fd, &a));
	n = uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&a, n)->status);
	EXPECT_EQ(0, uq_destroy(&a));
}

/*
 * DESTROY revokes the doorbell: a store to the old mapping rings nothing
 * (it reaches a dummy page, no SIGBUS), the state word says LOST, and the
 * slot is not given to another queue while a mapping of it lives.
 */
TEST_F(userq, destroy_revokes_doorbell)
{
	struct drm_maia_userq_destroy d = { 0 };
	struct drm_maia_userq_wait w;
	volatile __u32 *state;
	struct uq a, b, c;
	__u32 n;

	ASSERT_EQ(0, uq_create(self->fd, &a));
	n = uq_push(&a, 0, 0, a.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&a, n, 5 * NS_PER_SEC, &w));
	state = (volatile __u32 *)((volatile char *)a.cq + DRM_MAIA_USERQ_STATE_OFFSET);
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, *state);
	d.queue_id = a.id;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_USERQ_DESTROY, &d));
	EXPECT_EQ(DRM_MAIA_USERQ_LOST, *state);
	*a.db = 5;		/* no SIGBUS, and nothing to ring */
	EXPECT_EQ(0, a.cq[1].flags);

	ASSERT_EQ(0, uq_create(self->fd, &b));
	EXPECT_NE(a.id, b.id);	/* a's slot waits for a's mappings */
	*a.db = 1;
	usleep(50 * 1000);
	EXPECT_EQ(0, b.cq[0].flags);
	uq_unmap(&a);
	ASSERT_EQ(0, uq_create(self->fd, &c));
	EXPECT_EQ(a.id, c.id);	/* given back with the last mapping */
	n = uq_push(&c, 0, 0, c.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&c, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&c, n)->status);
	EXPECT_EQ(0, uq_destroy(&b));
	EXPECT_EQ(0, uq_destroy(&c));
}

/*
 * fork(): the queue's pages are not mapped in the child (VM_DONTCOPY, see
 * Documentation/uapi.rst), so its touch is a SIGSEGV; a child may create
 * a queue of its own on the inherited file; the parent's queue runs on.
 */
TEST_F(userq, fork_does_not_inherit_mappings)
{
	struct drm_maia_userq_wait w;
	struct uq q;
	int status;
	pid_t pid;
	__u32 n;

	ASSERT_EQ(0, uq_create(self->fd, &q));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		signal(SIGSEGV, SIG_DFL);
		(void)*(volatile __u32 *)q.sq;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("child status %#x", status);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct uq own;

		if (uq_create(self->fd, &own))
			_exit(2);
		n = uq_push(&own, 0, 0, own.asid, MAIA_SQE_NOP);
		if (uq_wait(&own, n, 5 * NS_PER_SEC, &w) ||
		    uq_cqe(&own, n)->status != MAIA_STATUS_OK)
			_exit(3);
		_exit(uq_destroy(&own) ? 4 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child with its own queue: status %#x", status);

	n = uq_push(&q, 0, 0, q.asid, MAIA_SQE_NOP);
	ASSERT_EQ(0, uq_wait(&q, n, 5 * NS_PER_SEC, &w));
	EXPECT_EQ(DRM_MAIA_USERQ_ACTIVE, w.state);
	EXPECT_EQ(MAIA_STATUS_OK, uq_cqe(&q, n)->status);
	EXPECT_EQ(0, uq_destroy(&q));
}

struct queue_lines {
	int user, kernel;	/* "user queue N ... error" lines, other "queue N error" lines */
};

static void count_queue_line(int level, const char *text, void *arg)
{
	struct queue_lines *l = arg;

	if (!strstr(text, " error: status"))
		return;
	if (strstr(text, "user queue "))
		l->user++;
	else if (strstr(text, "queue "))
		l->kernel++;
}

/*
 * A user queue's error is logged for that queue alone: the kernel's own
 * queues, whose status is 0, are not named (they were, as "queue 0 error:
 * status 0x0"). The messages are rate-limited (5 s, 10 lines per call
 * site): the wait lets the tests before this one leave the limit.
 */
TEST_F_TIMEOUT(userq, error_log_names_only_the_failed_queue, 60)
{
	struct queue_lines lines = { 0 };
	struct uq q;
	int kmsg;

	maia_sleep_ms(5500);
	kmsg = maia_kmsg_open();
	ASSERT_LE(0, kmsg);
	ASSERT_EQ(0, uq_create(self->fd, &q));
	*q.db = q.entries + 3;
	ASSERT_EQ(0, uq_wait_state(&q, DRM_MAIA_USERQ_ERROR, 5 * NS_PER_SEC));
	maia_kmsg_each(kmsg, count_queue_line, &lines);
	close(kmsg);
	EXPECT_EQ(1, lines.user);
	EXPECT_EQ(0, lines.kernel);
	EXPECT_EQ(0, uq_destroy(&q));
}

TEST_HARNESS_MAIN
