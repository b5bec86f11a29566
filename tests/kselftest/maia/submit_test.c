// SPDX-License-Identifier: GPL-2.0-only
/*
 * Job submission: NOP, FILL and DMA jobs with their data checked by the
 * CPU against a reference computed here; many processes submitting at once;
 * fences and syncobjs (in/out syncobjs as dependencies, syncobj wait,
 * sync_file export and poll); WAIT deadlines; MMU faults as a context sees
 * them; and every kind of bad SUBMIT, WAIT and CONTEXT_STATUS input, which
 * must fail with its precise errno and leave the caller's struct untouched.
 */
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_HBM		(DRM_MAIA_VA_START + 0x10000000ull)
#define VA_HOST		(DRM_MAIA_VA_START + 0x20000000ull)
#define VA_HOST2	(DRM_MAIA_VA_START + 0x30000000ull)
#define VA_UNMAPPED	(DRM_MAIA_VA_START + 0x70000000ull)
#define SEC		NS_PER_SEC

/* Semaphores are device-wide: each test uses its own. */
#define SEM_DEPS	40
#define SEM_ETIME	41
#define SEM_SIGNALS	42
#define SEM_PRIO	43

FIXTURE(job) {
	struct maia_node node;
	int fd;
	struct kbo cmd;		/* 1 MiB host BO for command buffers */
	struct kbo hbm;		/* 4 MiB HBM BO */
	struct kbo host;	/* 4 MiB host BO */
	struct kcmd cb;
};

FIXTURE_SETUP(job)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &self->cmd));
	ASSERT_EQ(0, kbo_create(self->fd, 4 * KSFT_MIB, DRM_MAIA_BO_HBM, VA_HBM, &self->hbm));
	ASSERT_EQ(0, kbo_create(self->fd, 4 * KSFT_MIB, DRM_MAIA_BO_HOST, VA_HOST, &self->host));
	self->cb.bo = &self->cmd;
}

FIXTURE_TEARDOWN(job)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Submits what was added and waits up to 10 s; returns the job status or -errno. */
static int run(int fd, struct kcmd *cb, struct drm_maia_wait *w)
{
	__u64 seqno = 0;
	int ret;

	ret = kcmd_submit(fd, cb, NULL, &seqno);
	if (ret)
		return ret;
	ret = kwait(fd, seqno, 10 * SEC, w);
	return ret ? ret : (int)w->status;
}

TEST_F(job, nop)
{
	struct drm_maia_wait w;
	int i;

	for (i = 0; i < 4; i++)
		kcmd_nop(&self->cb);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_OK, w.device_status);
}

/*
 * The uAPI's growth rule (Documentation/uapi.rst), on the one struct that
 * has grown: WAIT gained device_time_ns in driver minor 1 and host_time_ns
 * in minor 7. A caller built against an earlier, shorter struct still
 * works and gets only its own bytes back; the current struct gets the new
 * fields; a struct shorter than the first or longer than the current one
 * is refused and left as it was.
 */
TEST_F(job, wait_struct_growth)
{
	const size_t v0 = offsetof(struct drm_maia_wait, device_time_ns);
	const size_t v1 = offsetof(struct drm_maia_wait, host_time_ns);
	const size_t cur = sizeof(struct drm_maia_wait);
	const size_t versions[] = { v0, v1 };
	const size_t refused[] = { v0 - 8, cur + 8, 2 * cur };
	unsigned char buf[128], ref[128];
	struct drm_maia_wait w;
	drm_version_t ver;
	__u64 seqno = 0;
	__s64 t0, wall;
	size_t i;

	memset(&ver, 0, sizeof(ver));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VERSION, &ver));
	ASSERT_LE(7, ver.version_minor) TH_LOG("host_time_ns came with minor 7");
	EXPECT_EQ(MAIA_DRIVER_MINOR, ver.version_minor);

	/* Work that takes measurable device time: 4 MiB of HBM filled. */
	kcmd_fill(&self->cb, VA_HBM, 4 * KSFT_MIB, 0x5a5a5a5a);
	t0 = kmono_ns();
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &seqno));

	/* The earlier structs, as old userspace has them. */
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		size_t len = versions[i];

		memset(&w, 0, sizeof(w));
		w.seqno = seqno;
		w.timeout_ns = kmono_ns() + 10 * SEC;
		memset(buf, 0xa5, sizeof(buf));
		memcpy(buf, &w, len);
		memcpy(ref, buf, sizeof(buf));
		ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
						  DRM_COMMAND_BASE + DRM_MAIA_WAIT, len), buf));
		memcpy(&w, buf, len);
		EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
		EXPECT_EQ(DRM_MAIA_DEVICE_OK, w.device_status);
		EXPECT_EQ(0, memcmp(buf + len, ref + len, sizeof(buf) - len))
			TH_LOG("the kernel wrote past the caller's %zu-byte struct", len);
		if (len > v0)
			EXPECT_LT(0, w.device_time_ns);
	}
	wall = kmono_ns() - t0;

	/*
	 * The current struct: the same answer plus the device time (modeled
	 * on hardware 1.8) and the host time from SUBMIT to the completion,
	 * which lies inside the time this test saw pass.
	 */
	ASSERT_EQ(0, kwait(self->fd, seqno, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_LT(0, w.device_time_ns);
	EXPECT_GT(60 * SEC, w.device_time_ns);
	EXPECT_LT(0, w.host_time_ns);
	EXPECT_GE(wall, (__s64)w.host_time_ns);
	TH_LOG("4 MiB fill: device %llu ns, host %llu ns",
	       (unsigned long long)w.device_time_ns, (unsigned long long)w.host_time_ns);

	/* Too short to be any version, or longer than this kernel's. */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(buf, 0xa5, sizeof(buf));
		memcpy(buf, &w, sizeof(w) < refused[i] ? sizeof(w) : refused[i]);
		memcpy(ref, buf, sizeof(buf));
		EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
						   DRM_COMMAND_BASE + DRM_MAIA_WAIT, refused[i]),
				    buf)) TH_LOG("size %zu", refused[i]);
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(0, memcmp(buf, ref, sizeof(buf))) TH_LOG("size %zu", refused[i]);
	}
}

TEST_F(job, fill_host_and_hbm)
{
	const __u32 pat_host = 0xa5c3f00d, pat_hbm = 0x12345678;
	struct drm_maia_wait w;
	__u32 *h = self->host.cpu, *d = self->hbm.cpu;
	size_t i, n = 3 * KSFT_MIB / 4;

	memset(self->host.cpu, 0, self->host.size);
	memset(self->hbm.cpu, 0, self->hbm.size);
	/* 4 KiB in, 3 MiB long: the first page and the tail stay zero. */
	kcmd_fill(&self->cb, VA_HOST + 4096, 3 * KSFT_MIB, pat_host);
	kcmd_fill(&self->cb, VA_HBM + 4096, 3 * KSFT_MIB, pat_hbm);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &w));

	for (i = 0; i < 1024; i++) {
		ASSERT_EQ(0, h[i]);
		ASSERT_EQ(0, d[i]);
	}
	for (i = 1024; i < 1024 + n; i++) {
		ASSERT_EQ(pat_host, h[i]) TH_LOG("host word %zu", i);
		ASSERT_EQ(pat_hbm, d[i]) TH_LOG("hbm word %zu", i);
	}
	for (; i < self->host.size / 4; i++) {
		ASSERT_EQ(0, h[i]);
		ASSERT_EQ(0, d[i]);
	}
}

/* host -> HBM (2D, strided) -> host (1D), checked against a CPU reference. */
TEST_F(job, dma_round_trip)
{
	const __u64 width = 1000, height = 77, sstride = 1536, dstride = 1024;
	unsigned char *src = self->host.cpu, *back = (unsigned char *)self->host.cpu + 2 * KSFT_MIB;
	unsigned char *ref;
	struct drm_maia_wait w;
	size_t i, r;

	srand(42);
	for (i = 0; i < 2 * KSFT_MIB; i++)
		src[i] = rand();
	memset(back, 0xee, KSFT_MIB);
	memset(self->hbm.cpu, 0, 128 * 1024);

	kcmd_copy(&self->cb, VA_HOST, VA_HBM, width, height, sstride, dstride);
	kcmd_copy(&self->cb, VA_HBM, VA_HOST + 2 * KSFT_MIB, dstride * height, 1, 0, 0);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &w));

	ref = calloc(1, dstride * height);
	ASSERT_NE(NULL, ref);
	for (r = 0; r < height; r++)
		memcpy(ref + r * dstride, src + r * sstride, width);
	EXPECT_EQ(0, memcmp(ref, back, dstride * height));
	EXPECT_EQ(0, memcmp(ref, self->hbm.cpu, dstride * height));
	/* Nothing past the copy. */
	EXPECT_EQ(0xee, back[dstride * height]);
	free(ref);
}

TEST_F(job, priorities)
{
	struct drm_maia_wait w;
	__u64 seq[3] = { 0 };
	__u32 p;

	for (p = DRM_MAIA_PRIO_LOW; p <= DRM_MAIA_PRIO_HIGH; p++) {
		struct ksubmit_opts o = { .priority = p };

		kcmd_fill(&self->cb, VA_HOST + p * 4096, 4096, 0x100 + p);
		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &seq[p]));
	}
	for (p = DRM_MAIA_PRIO_LOW; p <= DRM_MAIA_PRIO_HIGH; p++) {
		ASSERT_EQ(0, kwait(self->fd, seq[p], 10 * SEC, &w));
		EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
		EXPECT_EQ(0x100 + p, ((__u32 *)self->host.cpu)[p * 1024 + 1023]);
	}
	EXPECT_EQ(1, seq[0]);
	EXPECT_EQ(3, seq[2]);
}

/*
 * The device runs HIGH before NORMAL. Both a NORMAL and a HIGH queue start
 * with a job parked on the same semaphore, followed by jobs that only write
 * their device completion time (TIMESTAMP). One LOW job releases both
 * waiters at once; then every HIGH job must finish before any NORMAL one
 * (equal priorities would take turns).
 */
TEST_F(job, high_priority_runs_first)
{
	const int k = 8;
	struct ksubmit_opts normal = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct ksubmit_opts high = { .priority = DRM_MAIA_PRIO_HIGH };
	struct ksubmit_opts low = { .priority = DRM_MAIA_PRIO_LOW };
	volatile __u64 *ts = self->host.cpu;	/* [0, k) NORMAL, [k, 2k) HIGH */
	struct drm_maia_wait w;
	__u64 seq[40] = { 0 };
	__u64 last_high = 0, first_normal = ~0ull;
	int i, n = 0;

	memset(self->host.cpu, 0, 4096);
	kcmd_sem_wait(&self->cb, SEM_PRIO, 1, 20 * 1000 * 1000);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &normal, &seq[n++]));
	kcmd_sem_wait(&self->cb, SEM_PRIO, 1, 20 * 1000 * 1000);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &high, &seq[n++]));
	for (i = 0; i < 2 * k; i++) {
		struct maia_cmd_timestamp *t = kcmd_add(&self->cb, MAIA_OP_TIMESTAMP,
							sizeof(*t));

		t->addr = VA_HOST + 8 * i;
		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, i < k ? &normal : &high,
					 &seq[n++]));
	}
	/* Let both waiters park before releasing them together. */
	usleep(200 * 1000);
	kcmd_sem_signal(&self->cb, SEM_PRIO, 2);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &low, &seq[n++]));

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, kwait(self->fd, seq[i], 30 * SEC, &w));
		ASSERT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("job %d", i);
	}
	for (i = 0; i < k; i++) {
		ASSERT_NE(0, ts[i]);
		ASSERT_NE(0, ts[k + i]);
		if (ts[i] < first_normal)
			first_normal = ts[i];
		if (ts[k + i] > last_high)
			last_high = ts[k + i];
	}
	EXPECT_LT(last_high, first_normal)
		TH_LOG("last HIGH job at %llu ns, first NORMAL at %llu ns",
		       (unsigned long long)last_high, (unsigned long long)first_normal);
}

/* A command the device rejects: the job reports ERROR and the offset. */
TEST_F(job, device_error)
{
	struct drm_maia_wait w;
	struct maia_cmd_header *bad;

	kcmd_nop(&self->cb);
	bad = kcmd_add(&self->cb, 0x3f, 8);	/* no such opcode */
	(void)bad;
	ASSERT_EQ(DRM_MAIA_JOB_ERROR, run(self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_BAD_OPCODE, w.device_status);
	EXPECT_EQ(8, w.error_offset);
}

/*
 * Job A waits on a device semaphore and has out-syncobj S1; job B, on
 * another queue, depends on S1 and writes a fence value. B must not run
 * while A is blocked; signalling the semaphore (job C, HIGH priority)
 * releases both. S2 (B's out-syncobj) is then exported as a sync_file that
 * polls ready, and a syncobj wait sees it signalled.
 */
TEST_F(job, syncobj_dependencies)
{
	struct drm_syncobj_create c1 = { 0 }, c2 = { 0 };
	struct drm_syncobj_handle h = { 0 };
	struct drm_syncobj_wait sw = { 0 };
	struct drm_maia_wait w;
	volatile __u64 *flag = (__u64 *)self->host.cpu;
	__u64 sa = 0, sb = 0, sc = 0;
	struct pollfd pfd;
	__u32 s1, s2;

	*flag = 0;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_CREATE, &c1));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_CREATE, &c2));
	s1 = c1.handle;
	s2 = c2.handle;

	kcmd_sem_wait(&self->cb, SEM_DEPS, 1, 20 * 1000 * 1000);
	{
		struct ksubmit_opts o = { .priority = DRM_MAIA_PRIO_NORMAL, .out = s1 };

		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &sa));
	}
	kcmd_fence_write(&self->cb, VA_HOST, 0xfeedfacecafebeefull);
	{
		struct ksubmit_opts o = {
			.priority = DRM_MAIA_PRIO_LOW, .in = &s1, .num_in = 1, .out = s2,
		};

		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &sb));
	}

	/* B's fence, as a sync_file: not ready while A waits. */
	h.handle = s2;
	h.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
	h.fd = -1;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h));
	pfd.fd = h.fd;
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 300));
	EXPECT_EQ(-ETIME, kwait(self->fd, sb, 0, &w));
	EXPECT_EQ(0, *flag);

	kcmd_sem_signal(&self->cb, SEM_DEPS, 1);
	{
		struct ksubmit_opts o = { .priority = DRM_MAIA_PRIO_HIGH };

		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &sc));
	}

	EXPECT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	close(h.fd);

	sw.handles = (__u64)(uintptr_t)&s2;
	sw.count_handles = 1;
	sw.timeout_nsec = kmono_ns() + 10 * SEC;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_WAIT, &sw));

	ASSERT_EQ(0, kwait(self->fd, sa, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	ASSERT_EQ(0, kwait(self->fd, sb, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	ASSERT_EQ(0, kwait(self->fd, sc, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_EQ(0xfeedfacecafebeefull, *flag);
}

/* A deadline already passed: -ETIME at once, the struct's inputs kept for a retry. */
TEST_F(job, wait_deadline)
{
	struct drm_maia_wait w, before;
	__u64 seq = 0, sig = 0;
	__s64 t0;

	kcmd_sem_wait(&self->cb, SEM_ETIME, 1, 20 * 1000 * 1000);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &seq));

	memset(&w, 0, sizeof(w));
	w.seqno = seq;
	w.timeout_ns = kmono_ns() - SEC;
	before = w;
	t0 = kmono_ns();
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_WAIT, &w));
	EXPECT_EQ(ETIME, errno);
	EXPECT_EQ(0, memcmp(&before, &w, sizeof(w)));
	EXPECT_GT(100 * 1000 * 1000ll, kmono_ns() - t0);

	/* A near deadline expires too, after about its length. */
	t0 = kmono_ns();
	EXPECT_EQ(-ETIME, kwait(self->fd, seq, 200 * 1000 * 1000, &w));
	EXPECT_LE(190 * 1000 * 1000ll, kmono_ns() - t0);

	kcmd_sem_signal(&self->cb, SEM_ETIME, 1);
	{
		struct ksubmit_opts o = { .priority = DRM_MAIA_PRIO_HIGH };

		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &sig));
	}
	ASSERT_EQ(0, kwait(self->fd, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/*
 * Signals interrupt WAIT, which the kernel restarts with the same absolute
 * deadline: it still ends at the deadline, not later, and the signals
 * really arrived while it waited.
 */
TEST_F(job, wait_restarts_after_signals)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 50000 }, { 0, 50000 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct drm_maia_wait w;
	__u64 seq = 0, sig = 0;
	__s64 t0, took;

	kcmd_sem_wait(&self->cb, SEM_SIGNALS, 1, 20 * 1000 * 1000);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &seq));

	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarms = 0;
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	t0 = kmono_ns();
	EXPECT_EQ(-ETIME, kwait(self->fd, seq, 600 * 1000 * 1000, &w));
	took = kmono_ns() - t0;
	setitimer(ITIMER_REAL, &off, NULL);
	/*
	 * Twelve timer periods passed; a vCPU starved by a loaded host gets
	 * fewer signals (a pending SIGALRM does not queue a second one, seen:
	 * 2), but one is enough to show the wait was interrupted and restarted.
	 */
	EXPECT_LE(1, alarms);
	EXPECT_LE(590 * 1000 * 1000ll, took);
	EXPECT_GT(1500 * 1000 * 1000ll, took);

	kcmd_sem_signal(&self->cb, SEM_SIGNALS, 1);
	{
		struct ksubmit_opts o = { .priority = DRM_MAIA_PRIO_HIGH };

		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &o, &sig));
	}
	ASSERT_EQ(0, kwait(self->fd, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
}

/* Each bad input: the errno, and the struct as the caller left it. */
static void expect_submit_fails(struct __test_metadata *_metadata, int fd,
				const struct drm_maia_submit *s, int err, const char *what)
{
	struct drm_maia_submit copy = *s;

	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_MAIA_SUBMIT, &copy)) TH_LOG("%s", what);
	EXPECT_EQ(err, errno) TH_LOG("%s: %s", what, strerror(errno));
	EXPECT_EQ(0, memcmp(&copy, s, sizeof(copy))) TH_LOG("%s: output written", what);
}

TEST_F(job, bad_submit)
{
	struct drm_syncobj_create sc = { 0 };
	struct drm_maia_submit good, s;
	struct drm_maia_wait w;
	struct kbo unmapped;
	__u32 bad_handle = 0xdead;
	struct kbo foreign;
	int other;

	kcmd_nop(&self->cb);
	memset(&good, 0, sizeof(good));
	good.cmdbuf_handle = self->cmd.handle;
	good.cmdbuf_size = 8;
	good.priority = DRM_MAIA_PRIO_NORMAL;
	good.seqno = 0x5eed;	/* canary: only success writes it */

	s = good; s.cmdbuf_handle = 0xdead;
	expect_submit_fails(_metadata, self->fd, &s, ENOENT, "unknown handle");

	other = maia_open_node(&self->node);
	ASSERT_LE(0, other);
	/* Handles are per file: one past this file's last exists only in the other. */
	for (foreign.handle = 0; foreign.handle <= self->host.handle;)
		if (kbo_create(other, KSFT_PAGE, DRM_MAIA_BO_HOST, 0, &foreign))
			break;
	ASSERT_LT(self->host.handle, foreign.handle);
	s = good;
	s.cmdbuf_handle = foreign.handle;
	EXPECT_LT(self->host.handle, foreign.handle);
	expect_submit_fails(_metadata, self->fd, &s, ENOENT, "another file's handle");

	s = good; s.cmdbuf_offset = self->cmd.size;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "offset at the end of the BO");
	s = good; s.cmdbuf_offset = self->cmd.size - 8; s.cmdbuf_size = 16;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "offset + size past the BO");
	s = good; s.cmdbuf_offset = ~0ull & ~7ull;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "offset near 2^64");
	s = good; s.cmdbuf_offset = 4;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "unaligned offset");
	s = good; s.cmdbuf_size = 0;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "size 0");
	s = good; s.cmdbuf_size = 12;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "size not a multiple of 8");
	s = good; s.cmdbuf_size = 7;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "size under one command");
	s = good; s.cmdbuf_size = MAIA_CMDBUF_MAX_SIZE + 8ull;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "size over the maximum");
	s = good; s.flags = 1;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "flags");
	s = good; s.pad = 1;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "pad");
	s = good; s.priority = DRM_MAIA_PRIO_HIGH + 1;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "priority");
	s = good; s.num_in_syncobjs = 1; s.in_syncobjs = 0;
	expect_submit_fails(_metadata, self->fd, &s, EFAULT, "NULL in_syncobjs with a count");
	s = good; s.num_in_syncobjs = 1; s.in_syncobjs = (__u64)(uintptr_t)&bad_handle;
	expect_submit_fails(_metadata, self->fd, &s, ENOENT, "unknown in-syncobj");
	s = good; s.num_in_syncobjs = 1u << 20; s.in_syncobjs = (__u64)(uintptr_t)&bad_handle;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "too many in-syncobjs");
	s = good; s.num_in_syncobjs = DRM_MAIA_MAX_IN_SYNCOBJS + 1;
	s.in_syncobjs = (__u64)(uintptr_t)&bad_handle;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "one in-syncobj over the limit");
	s = good; s.out_syncobj = 0xdead;
	expect_submit_fails(_metadata, self->fd, &s, ENOENT, "unknown out-syncobj");

	/* An existing syncobj without a fence cannot be waited for. */
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_CREATE, &sc));
	s = good; s.num_in_syncobjs = 1; s.in_syncobjs = (__u64)(uintptr_t)&sc.handle;
	expect_submit_fails(_metadata, self->fd, &s, EINVAL, "in-syncobj without a fence");

	/* A BO that exists but is not mapped in this address space. */
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_PAGE, DRM_MAIA_BO_HOST, 0, &unmapped));
	s = good; s.cmdbuf_handle = unmapped.handle;
	expect_submit_fails(_metadata, self->fd, &s, ENOENT, "BO not mapped");
	kbo_destroy(self->fd, &unmapped);

	/* WAIT: pad, seqno 0, a seqno never handed out. */
	memset(&w, 0, sizeof(w));
	w.seqno = 1; w.pad = 1; w.timeout_ns = kmono_ns() + SEC;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w.pad = 0; w.seqno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w.seqno = 1000;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);

	/* After all that, the good one works and the other file is unaffected. */
	s = good;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_SUBMIT, &s));
	EXPECT_EQ(1, s.seqno);
	ASSERT_EQ(0, kwait(self->fd, s.seqno, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	close(other);
}

TEST_F(job, context_status_and_fault)
{
	struct drm_maia_context_status cs;
	struct drm_maia_submit s;
	struct drm_maia_wait w;
	struct kbo ocmd;
	struct kcmd ocb = { .bo = &ocmd };
	int other;
	__u64 seq = 0;

	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_EQ(0, cs.flags);
	EXPECT_NE(0, cs.asid);
	EXPECT_EQ(0, cs.device_resets);
	cs.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs));
	EXPECT_EQ(EINVAL, errno);

	other = maia_open_node(&self->node);
	ASSERT_LE(0, other);

	/* Write to an address this file never mapped. */
	kcmd_fill(&self->cb, VA_UNMAPPED + 0x40, 4096, 1);
	ASSERT_EQ(DRM_MAIA_JOB_FAULT, run(self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_DEVICE_MMU_FAULT, w.device_status);

	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_EQ(DRM_MAIA_CTX_FAULTED, cs.flags);
	/* The first address the fill touched, or its page. */
	EXPECT_LE(VA_UNMAPPED, cs.fault_addr);
	EXPECT_GE(VA_UNMAPPED + 0x40, cs.fault_addr);
	EXPECT_EQ(DRM_MAIA_ACCESS_WRITE, cs.fault_access);

	memset(&s, 0, sizeof(s));
	kcmd_nop(&self->cb);
	s.cmdbuf_handle = self->cmd.handle;
	s.cmdbuf_offset = self->cb.start;
	s.cmdbuf_size = 8;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_SUBMIT, &s));
	EXPECT_EQ(EBADFD, errno);

	/* Another file's context carries on. */
	ASSERT_EQ(0, kbo_create(other, KSFT_PAGE, DRM_MAIA_BO_HOST, VA_CMD, &ocmd));
	kcmd_nop(&ocb);
	ASSERT_EQ(0, kcmd_submit(other, &ocb, NULL, &seq));
	ASSERT_EQ(0, kwait(other, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	ASSERT_EQ(0, kcontext_status(other, &cs));
	EXPECT_EQ(0, cs.flags);
	kbo_destroy(other, &ocmd);
	close(other);
}

TEST_F(job, fdinfo_busy_time)
{
	char path[64], buf[4096];
	struct drm_maia_wait w;
	unsigned long long ns, total = 0;
	int n, fd;
	char *p;

	kcmd_fill(&self->cb, VA_HBM, 4 * KSFT_MIB, 7);
	ASSERT_EQ(DRM_MAIA_JOB_OK, run(self->fd, &self->cb, &w));

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", self->fd);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	for (p = buf; (p = strstr(p, "drm-engine-queue")); p++) {
		char *colon = strchr(p, ':');

		ASSERT_NE(NULL, colon);
		ns = strtoull(colon + 1, NULL, 10);
		total += ns;
	}
	EXPECT_LT(0, total) TH_LOG("fdinfo:\n%s", buf);
}

/*
 * A file remembers its last 1024 jobs for WAIT: submitting more than that
 * in one go works (submission waits for the oldest), WAIT on a job that
 * far back is -ENOENT, and on the newest ones reports their status.
 */
TEST_F(job, history_window)
{
	const int n = 2500;
	struct drm_maia_wait w;
	__u64 seq = 0;
	int i;

	kcmd_nop(&self->cb);
	for (i = 0; i < n; i++) {
		struct drm_maia_submit s = {
			.cmdbuf_handle = self->cmd.handle,
			.cmdbuf_size = 8,
			.priority = DRM_MAIA_PRIO_NORMAL,
		};

		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_SUBMIT, &s));
		ASSERT_EQ(seq + 1, s.seqno);
		seq = s.seqno;
	}
	ASSERT_EQ(0, kwait(self->fd, seq, 30 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	ASSERT_EQ(0, kwait(self->fd, seq - 1023, 30 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_EQ(-ENOENT, kwait(self->fd, seq - 1024, 30 * SEC, &w));
	EXPECT_EQ(-ENOENT, kwait(self->fd, 1, 30 * SEC, &w));
}

/*
 * NPROC processes, each with its own file, submit NJOBS jobs at once, every
 * job filling its own 64-byte record with a pattern naming process and job;
 * then every record and every job status is checked.
 */
#define NPROC	8
#define NJOBS	1000

static int stress_child(const struct maia_node *node, int id)
{
	struct kbo cmd, out;
	struct kcmd cb = { .bo = &cmd };
	struct drm_maia_wait w;
	__u64 seq[NJOBS];
	int fd, i, bad = 0;

	fd = maia_open_node(node);
	if (fd < 0)
		return 10;
	if (kbo_create(fd, 64 * 1024, DRM_MAIA_BO_HOST, VA_CMD, &cmd) ||
	    kbo_create(fd, 64 * 1024, DRM_MAIA_BO_HOST, VA_HOST, &out))
		return 11;
	memset(out.cpu, 0, out.size);
	for (i = 0; i < NJOBS; i++) {
		struct ksubmit_opts o = { .priority = i % 3 == 0 ? DRM_MAIA_PRIO_LOW :
							DRM_MAIA_PRIO_NORMAL };

		kcmd_fill(&cb, VA_HOST + 64ull * i, 64, (__u32)id << 16 | i);
		if (kcmd_submit(fd, &cb, &o, &seq[i]))
			return 12;
	}
	for (i = 0; i < NJOBS; i++) {
		if (kwait(fd, seq[i], 60 * SEC, &w) || w.status != DRM_MAIA_JOB_OK)
			return 13;
	}
	for (i = 0; i < NJOBS * 16; i++)
		if (((__u32 *)out.cpu)[i] != ((__u32)id << 16 | i / 16))
			bad++;
	close(fd);
	return bad ? 14 : 0;
}

TEST_F(job, many_processes)
{
	pid_t pids[NPROC];
	__s64 t0 = kmono_ns();
	int i, status;

	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			_exit(stress_child(&self->node, i + 1));
	}
	for (i = 0; i < NPROC; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("process %d", i + 1);
	}
	TH_LOG("%d processes x %d jobs: %.2f s", NPROC, NJOBS,
	       (kmono_ns() - t0) / 1e9);
}

TEST_HARNESS_MAIN
