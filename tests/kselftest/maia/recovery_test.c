// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hang recovery. A job that waits on a device semaphore nobody signals
 * (with a timeout of about 71 minutes) is a real hang from the device's
 * point of view: the driver's watchdog must reset the device, report the job
 * as DRM_MAIA_JOB_TIMEOUT, count the reset in sysfs and in CONTEXT_STATUS,
 * send a MAIA_RESET uevent, and run the next job normally. Jobs that take
 * long in total but keep their queue moving must not trigger it. A reset
 * forced through debugfs recovers the same way. Waiting behind other
 * queues' work is not a hang: with one context keeping the HIGH queue busy
 * for several job timeouts, LOW and NORMAL jobs still run and complete, no
 * reset happens, and PING and an HBM BO_CREATE (the kernel queue) succeed.
 *
 * The test shortens the maia.job_timeout_ms module parameter and restores
 * it afterwards.
 */
#include <linux/netlink.h>
#include <sys/socket.h>

#include "maia_job_ksft.h"
#include "kselftest_harness.h"

#define VA_CMD		(DRM_MAIA_VA_START)
#define VA_HOST		(DRM_MAIA_VA_START + 0x20000000ull)
#define VA_LOAD		(DRM_MAIA_VA_START + 0x40000000ull)
#define SEC		NS_PER_SEC
#define TIMEOUT_PARAM	"/sys/module/maia/parameters/job_timeout_ms"
#define TEST_TIMEOUT_MS	1000
#define SEM_NEVER	63	/* nobody signals it */

FIXTURE(recovery) {
	struct maia_node node;
	int fd;
	struct kbo cmd, host;
	struct kcmd cb;
	long long old_timeout;
	int uevents;
};

FIXTURE_SETUP(recovery)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	char val[32];

	self->fd = -1;
	self->uevents = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node");
	self->old_timeout = kread_ll(TIMEOUT_PARAM);
	ASSERT_LE(0, self->old_timeout) TH_LOG("no %s", TIMEOUT_PARAM);
	snprintf(val, sizeof(val), "%d", TEST_TIMEOUT_MS);
	ASSERT_EQ(0, maia_write_file(TIMEOUT_PARAM, val));

	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &self->cmd));
	ASSERT_EQ(0, kbo_create(self->fd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_HOST, &self->host));
	self->cb.bo = &self->cmd;

	/* Kernel uevents (no udev in the guest: the kernel's own multicast group). */
	self->uevents = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			       NETLINK_KOBJECT_UEVENT);
	if (self->uevents >= 0 && bind(self->uevents, (struct sockaddr *)&sa, sizeof(sa))) {
		close(self->uevents);
		self->uevents = -1;
	}
}

FIXTURE_TEARDOWN(recovery)
{
	char val[32];

	if (self->fd >= 0)
		close(self->fd);
	if (self->uevents >= 0)
		close(self->uevents);
	if (self->old_timeout >= 0) {
		snprintf(val, sizeof(val), "%lld", self->old_timeout);
		maia_write_file(TIMEOUT_PARAM, val);
	}
}

/* Looks for a uevent carrying @key within @ms milliseconds. */
static bool saw_uevent(int sock, const char *key, int ms)
{
	long long end = maia_now_ms() + ms;
	char buf[4096];
	ssize_t n, i;

	while (maia_now_ms() < end) {
		n = recv(sock, buf, sizeof(buf) - 1, 0);
		if (n <= 0) {
			maia_sleep_ms(20);
			continue;
		}
		buf[n] = '\0';
		/* NUL-separated "KEY=value" strings after the header. */
		for (i = 0; i < n; i += strlen(buf + i) + 1)
			if (!strcmp(buf + i, key))
				return true;
	}
	return false;
}

static int fill_and_check(struct __test_metadata *_metadata, int fd, struct kcmd *cb,
			  struct kbo *host, __u32 pattern)
{
	struct drm_maia_wait w;
	__u64 seq = 0;
	size_t i;

	memset(host->cpu, 0, 8192);
	kcmd_fill(cb, VA_HOST, 8192, pattern);
	if (kcmd_submit(fd, cb, NULL, &seq))
		return -1;
	if (kwait(fd, seq, 20 * SEC, &w) || w.status != DRM_MAIA_JOB_OK)
		return -2;
	for (i = 0; i < 2048; i++)
		if (((__u32 *)host->cpu)[i] != pattern)
			return -3;
	return 0;
}

TEST_F_TIMEOUT(recovery, hang_is_reset, 120)
{
	struct drm_maia_context_status cs;
	struct drm_maia_ping ping;
	struct drm_maia_wait w;
	__u64 hung = 0, behind = 0;
	long long resets;
	__s64 t0;
	int fd2;

	ASSERT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x11111111));
	resets = kreset_count(&self->node);
	ASSERT_LE(0, resets);

	kcmd_sem_wait(&self->cb, SEM_NEVER, 1, UINT32_MAX);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &hung));
	/* Same priority, so the same queue: lost with the reset, not run twice. */
	kcmd_fill(&self->cb, VA_HOST, 4096, 0x22222222);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &behind));

	t0 = kmono_ns();
	ASSERT_EQ(0, kwait(self->fd, hung, 60 * SEC, &w));
	EXPECT_EQ(DRM_MAIA_JOB_TIMEOUT, w.status);
	EXPECT_LE((TEST_TIMEOUT_MS - 50) * 1000000ll, kmono_ns() - t0);
	TH_LOG("hang detected and recovered after %.2f s", (kmono_ns() - t0) / 1e9);

	ASSERT_EQ(0, kwait(self->fd, behind, 60 * SEC, &w));
	EXPECT_TRUE(w.status == DRM_MAIA_JOB_ABORTED || w.status == DRM_MAIA_JOB_OK)
		TH_LOG("status %u", w.status);

	EXPECT_EQ(resets + 1, kreset_count(&self->node));
	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_EQ(1, cs.device_resets);
	EXPECT_EQ(0, cs.flags);
	if (self->uevents >= 0)
		EXPECT_TRUE(saw_uevent(self->uevents, "MAIA_RESET=1", 2000));

	/* The device works again: new jobs with data, PING on the kernel queue. */
	EXPECT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x33333333));
	EXPECT_EQ(0, maia_ping(self->fd, 0xc0ffee, &ping));
	EXPECT_EQ(0xc0ffee, ping.echo);

	/* A file opened after the reset counts from there. */
	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, kcontext_status(fd2, &cs));
	EXPECT_EQ(0, cs.device_resets);
	close(fd2);
}

/*
 * Ten jobs of 300 ms each (semaphore waits that give up) take three times
 * the job timeout in total, but each completes within it: no reset.
 */
TEST_F_TIMEOUT(recovery, slow_queue_is_not_hung, 60)
{
	struct drm_maia_wait w;
	__u64 seq[10] = { 0 };
	long long resets = kreset_count(&self->node);
	int i;

	for (i = 0; i < 10; i++) {
		kcmd_sem_wait(&self->cb, SEM_NEVER, 1, 300 * 1000);
		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, NULL, &seq[i]));
	}
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, kwait(self->fd, seq[i], 30 * SEC, &w));
		EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
		EXPECT_EQ(DRM_MAIA_DEVICE_SEM_TIMEOUT, w.device_status);
	}
	EXPECT_EQ(resets, kreset_count(&self->node));
}

/* Submits @cb's pending commands on @fd at HIGH priority and returns the job's seqno. */
static __u64 submit_high(struct __test_metadata *_metadata, int fd, struct kcmd *cb)
{
	const struct ksubmit_opts high = { .priority = DRM_MAIA_PRIO_HIGH };
	__u64 seq = 0;

	EXPECT_EQ(0, kcmd_submit(fd, cb, &high, &seq));
	return seq;
}

#define LOAD_BO		(64 * KSFT_MIB)
#define LOAD_JOB_NS	(200 * 1000000ll)	/* each HIGH job, about */
#define LOAD_JOBS	30			/* about 6 s: twice the job timeout */
#define LOAD_TIMEOUT_MS	3000	/* job_timeout_ms here: 15 HIGH jobs' worth */

/*
 * A second context keeps the HIGH queue busy with finite jobs (HBM fills of
 * about 200 ms each, sized on this machine) for twice the job timeout. Jobs
 * of other priorities and the kernel queue's work wait behind it, but wait
 * is not hang: the device serves them (scheduler aging; the kernel queue
 * runs at HIGH), the watchdog times a job from when the device fetched it,
 * and nothing is reset or aborted. Timings are logged, not asserted.
 */
TEST_F_TIMEOUT(recovery, starved_queue_is_not_hung, 90)
{
	const struct ksubmit_opts low = { .priority = DRM_MAIA_PRIO_LOW };
	const struct ksubmit_opts normal = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct drm_maia_bo_create bc = { .size = 16 * KSFT_MIB, .flags = DRM_MAIA_BO_HBM };
	struct drm_gem_close gc = { 0 };
	struct kbo lcmd, load;
	struct kcmd lcb = { .bo = &lcmd };
	struct drm_maia_ping ping;
	struct drm_maia_wait w;
	__u64 high[LOAD_JOBS], lo = 0, no = 0, fills, i, job_start, job_end;
	long long resets = kreset_count(&self->node);
	__s64 t0, t_lo, t_no, t_ping, t_bo, one_ns;
	bool high_busy;
	char val[32];
	int lfd, ret;

	ASSERT_LE(0, resets);
	/* A HIGH job slowed down by a loaded machine must stay well within the timeout. */
	snprintf(val, sizeof(val), "%d", LOAD_TIMEOUT_MS);
	ASSERT_EQ(0, maia_write_file(TIMEOUT_PARAM, val));
	lfd = maia_open_node(&self->node);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, kbo_create(lfd, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &lcmd));
	ASSERT_EQ(0, kbo_create(lfd, LOAD_BO, DRM_MAIA_BO_HBM, VA_LOAD, &load));

	/*
	 * Size the load: after a fill that backs the BO, four fills alone, in
	 * host time (driver minor 7): the load must keep the host's device
	 * busy; the device time is modeled on hardware 1.8 and says nothing of
	 * that.
	 */
	kcmd_fill(&lcb, VA_LOAD, LOAD_BO, 0);
	high[0] = submit_high(_metadata, lfd, &lcb);
	ASSERT_EQ(0, kwait(lfd, high[0], 30 * SEC, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);
	for (i = 0; i < 4; i++)
		kcmd_fill(&lcb, VA_LOAD, LOAD_BO, (__u32)i);
	high[0] = submit_high(_metadata, lfd, &lcb);
	ASSERT_EQ(0, kwait(lfd, high[0], 30 * SEC, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);
	one_ns = w.host_time_ns >= 4 ? (__s64)w.host_time_ns / 4 : 1;
	fills = LOAD_JOB_NS / one_ns + 1;
	if (fills > 1000)
		fills = 1000;
	TH_LOG("one %llu MiB HBM fill takes %.2f ms: %llu fills per HIGH job",
	       LOAD_BO / KSFT_MIB, one_ns / 1e6, (unsigned long long)fills);

	/* Every HIGH job runs the same command buffer. */
	job_start = lcb.used;
	for (i = 0; i < fills; i++)
		kcmd_fill(&lcb, VA_LOAD, LOAD_BO, (__u32)i);
	job_end = lcb.used;
	for (i = 0; i < LOAD_JOBS; i++) {
		lcb.start = job_start;
		lcb.used = job_end;
		high[i] = submit_high(_metadata, lfd, &lcb);
		ASSERT_NE(0, high[i]);
	}

	/*
	 * Let the scheduler threads hand the HIGH jobs to the device first (in
	 * a one-CPU guest they run only when this thread sleeps). Then, behind
	 * them: a NOP at LOW, a fill with data at NORMAL, from this context.
	 */
	maia_sleep_ms(100);
	t0 = kmono_ns();
	kcmd_nop(&self->cb);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &low, &lo));
	memset(self->host.cpu, 0, 4096);
	kcmd_fill(&self->cb, VA_HOST, 4096, 0x5eed5eed);
	ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &normal, &no));

	/* The kernel queue: PING, then an HBM BO whose clear runs there. */
	ret = maia_ping(self->fd, 0x57a4, &ping);
	t_ping = kmono_ns() - t0;
	EXPECT_EQ(0, ret) TH_LOG("PING under HIGH load: %s", strerror(-ret));
	ret = ioctl(self->fd, DRM_IOCTL_MAIA_BO_CREATE, &bc) ? -errno : 0;
	t_bo = kmono_ns() - t0 - t_ping;
	EXPECT_EQ(0, ret) TH_LOG("HBM BO_CREATE under HIGH load: %s", strerror(-ret));
	if (!ret) {
		gc.handle = bc.handle;
		EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_GEM_CLOSE, &gc));
	}

	ASSERT_EQ(0, kwait(self->fd, lo, 60 * SEC, &w));
	t_lo = kmono_ns() - t0;
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("LOW NOP status %u", w.status);
	ASSERT_EQ(0, kwait(self->fd, no, 60 * SEC, &w));
	t_no = kmono_ns() - t0;
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("NORMAL fill status %u", w.status);
	EXPECT_EQ(0x5eed5eed, ((__u32 *)self->host.cpu)[1023]);
	/* Did they run while HIGH still had work? (Logged: it is a timing.) */
	high_busy = kwait(lfd, high[LOAD_JOBS - 1], 0, &w) != 0;

	for (i = 0; i < LOAD_JOBS; i++) {
		ASSERT_EQ(0, kwait(lfd, high[i], 60 * SEC, &w));
		EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("HIGH job %llu status %u",
							      (unsigned long long)i, w.status);
	}
	TH_LOG("under %d HIGH jobs (%.1f s): PING %.3f s, BO_CREATE %.3f s, LOW NOP done at %.3f s, NORMAL at %.3f s%s; HIGH load done at %.3f s",
	       LOAD_JOBS, LOAD_JOBS * fills * one_ns / 1e9, t_ping / 1e9, t_bo / 1e9,
	       t_lo / 1e9, t_no / 1e9, high_busy ? " (HIGH still busy)" : "",
	       (kmono_ns() - t0) / 1e9);
	EXPECT_EQ(resets, kreset_count(&self->node));
	kbo_destroy(lfd, &load);
	kbo_destroy(lfd, &lcmd);
	close(lfd);
}

TEST_F_TIMEOUT(recovery, forced_reset, 60)
{
	struct drm_maia_context_status cs;
	char path[96];
	long long resets = kreset_count(&self->node);

	/* The accel debugfs directory is named after the device (its PCI address). */
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/force_reset",
		 self->node.bdf);
	if (access(path, W_OK))
		SKIP(return, "no %s (debugfs not mounted?)", path);
	ASSERT_EQ(0, maia_write_file(path, "1"));
	EXPECT_EQ(resets + 1, kreset_count(&self->node));
	ASSERT_EQ(0, kcontext_status(self->fd, &cs));
	EXPECT_EQ(1, cs.device_resets);
	if (self->uevents >= 0)
		EXPECT_TRUE(saw_uevent(self->uevents, "MAIA_RESET_REASON=forced", 2000));
	EXPECT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x44444444));
}

/*
 * A kernel-queue HBM clear that times out resets the device, and the memory
 * it was clearing is back in use after the reset (it used to stay out of use
 * until the driver was unbound). The clear timeout is shortened so that
 * clearing 1 GiB cannot finish in time.
 */
#define CLEAR_TIMEOUT_PARAM	"/sys/module/maia/parameters/hbm_clear_timeout_ms"

TEST_F_TIMEOUT(recovery, hbm_clear_timeout_gives_memory_back, 90)
{
	struct drm_maia_bo_create c = { .size = 1ull << 30, .flags = DRM_MAIA_BO_HBM };
	struct drm_gem_close gc = { 0 };
	long long resets, used0, used = -1, old_clear;
	char path[PATH_MAX], val[32];
	int i, ret;

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/hbm_used_bytes",
		 self->node.minor);
	resets = kreset_count(&self->node);
	used0 = kread_ll(path);
	ASSERT_LE(0, used0);
	old_clear = kread_ll(CLEAR_TIMEOUT_PARAM);
	ASSERT_LE(0, old_clear) TH_LOG("no %s", CLEAR_TIMEOUT_PARAM);

	ASSERT_EQ(0, maia_write_file(CLEAR_TIMEOUT_PARAM, "1"));
	ret = ioctl(self->fd, DRM_IOCTL_MAIA_BO_CREATE, &c) ? errno : 0;
	snprintf(val, sizeof(val), "%lld", old_clear);
	ASSERT_EQ(0, maia_write_file(CLEAR_TIMEOUT_PARAM, val));
	ASSERT_EQ(ETIMEDOUT, ret) TH_LOG("clearing 1 GiB took under a millisecond?");

	/* Recovery runs on the reset workqueue: wait for it and the memory. */
	for (i = 0; i < 300; i++) {
		used = kread_ll(path);
		if (kreset_count(&self->node) == resets + 1 && used == used0)
			break;
		maia_sleep_ms(100);
	}
	EXPECT_EQ(resets + 1, kreset_count(&self->node));
	EXPECT_EQ(used0, used) TH_LOG("HBM in use did not come back after the reset");
	if (self->uevents >= 0)
		EXPECT_TRUE(saw_uevent(self->uevents, "MAIA_RESET_REASON=kernel queue timeout",
				       2000));

	/* The same gigabyte can be had again, and the device runs jobs. */
	c.handle = 0;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_BO_CREATE, &c)) TH_LOG("%s", strerror(errno));
	gc.handle = c.handle;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_GEM_CLOSE, &gc));
	EXPECT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x55555555));
}

/*
 * A firmware crash (injected through debugfs into the device's
 * DEBUG_INJECT register): the firmware stops answering its mailbox and its
 * queues and its heartbeat stops. Nothing is in flight, so no job timeout
 * can notice; the heartbeat monitor does, within two checks, and the device
 * is reset and works again.
 */
TEST_F_TIMEOUT(recovery, firmware_crash_is_recovered, 90)
{
	long long resets = kreset_count(&self->node);
	struct drm_maia_ping ping = { .cookie = 0xf1 };
	char path[96];
	int i;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/inject", self->node.bdf);
	if (access(path, W_OK))
		SKIP(return, "no %s (debugfs not mounted?)", path);
	ASSERT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x66666666));
	EXPECT_NE(0, maia_write_file(path, "hang 99")) TH_LOG("a queue that does not exist");
	EXPECT_NE(0, maia_write_file(path, "melt")) TH_LOG("an unknown injection");
	EXPECT_EQ(resets, kreset_count(&self->node));

	ASSERT_EQ(0, maia_write_file(path, "fw_crash"));
	for (i = 0; i < 300 && kreset_count(&self->node) == resets; i++)
		maia_sleep_ms(100);
	EXPECT_EQ(resets + 1, kreset_count(&self->node)) TH_LOG("no reset after the crash");
	if (self->uevents >= 0)
		EXPECT_TRUE(saw_uevent(self->uevents, "MAIA_RESET_REASON=firmware not responding",
				       5000));
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_PING, &ping)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0xf1, ping.echo);
	EXPECT_EQ(0, fill_and_check(_metadata, self->fd, &self->cb, &self->host, 0x77777777));
	/* One reset, not one per heartbeat check. */
	maia_sleep_ms(2500);
	EXPECT_EQ(resets + 1, kreset_count(&self->node));
}

/*
 * Innocent work is run again, not lost. Context A hangs the HIGH queue (a
 * job parked on a semaphore nobody signals); context B queues four FILLs on
 * the same queue behind it. The watchdog resets the device: A's job is
 * TIMEOUT, B's jobs never started, so they run again after the reset and
 * complete with the right data, and B is not faulted. MAIA_HANG_ROUNDS sets
 * the number of rounds (2 here, 100 in make fuzz); it prints the time from
 * the hang's submission to its TIMEOUT and how many innocent jobs were lost.
 */
TEST_F_TIMEOUT(recovery, innocent_jobs_run_again, 1200)
{
	int rounds = (int)maia_env_ull("MAIA_HANG_ROUNDS", 2), r, j, lost = 0, recovered = 0;
	const struct ksubmit_opts high = { .priority = DRM_MAIA_PRIO_HIGH };
	long long resets = kreset_count(&self->node), ms_sum = 0, ms_max = 0;
	struct drm_maia_context_status cs;
	struct kbo cmd_b, host_b;
	struct kcmd cb_b = { 0 };
	struct drm_maia_wait w;
	__u64 hung, seq[4];
	__s64 t0;
	int fd_b;

	fd_b = maia_open_node(&self->node);
	ASSERT_LE(0, fd_b);
	ASSERT_EQ(0, kbo_create(fd_b, KSFT_MIB, DRM_MAIA_BO_HOST, VA_CMD, &cmd_b));
	ASSERT_EQ(0, kbo_create(fd_b, KSFT_MIB, DRM_MAIA_BO_HOST, VA_HOST, &host_b));
	cb_b.bo = &cmd_b;

	for (r = 0; r < rounds; r++) {
		self->cb.start = self->cb.used = 0;
		cb_b.start = cb_b.used = 0;
		memset(host_b.cpu, 0, 4 * 4096);
		kcmd_sem_wait(&self->cb, SEM_NEVER, 1, UINT32_MAX);
		ASSERT_EQ(0, kcmd_submit(self->fd, &self->cb, &high, &hung));
		t0 = kmono_ns();
		for (j = 0; j < 4; j++) {
			kcmd_fill(&cb_b, VA_HOST + j * 4096, 4096, 0xb0000000u | r << 8 | j);
			ASSERT_EQ(0, kcmd_submit(fd_b, &cb_b, &high, &seq[j]));
		}
		ASSERT_EQ(0, kwait(self->fd, hung, 60 * SEC, &w));
		EXPECT_EQ(DRM_MAIA_JOB_TIMEOUT, w.status);
		if (w.status == DRM_MAIA_JOB_TIMEOUT) {
			long long ms = (kmono_ns() - t0) / 1000000;

			recovered++;
			ms_sum += ms;
			ms_max = ms > ms_max ? ms : ms_max;
		}
		for (j = 0; j < 4; j++) {
			__u32 want = 0xb0000000u | r << 8 | j;

			ASSERT_EQ(0, kwait(fd_b, seq[j], 60 * SEC, &w));
			if (w.status != DRM_MAIA_JOB_OK ||
			    ((__u32 *)host_b.cpu)[j * 1024 + 1023] != want)
				lost++;
			EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("round %d job %d", r, j);
			EXPECT_EQ(want, ((__u32 *)host_b.cpu)[j * 1024 + 1023]);
		}
	}
	ASSERT_EQ(0, kcontext_status(fd_b, &cs));
	EXPECT_EQ(0, cs.flags);
	EXPECT_EQ(resets + rounds, kreset_count(&self->node));
	TH_LOG("%d injected hangs, %d recoveries, %d innocent jobs lost; hang to TIMEOUT %lld ms mean, %lld ms max",
	       rounds, recovered, lost, recovered ? ms_sum / recovered : 0, ms_max);
	EXPECT_EQ(0, lost);
	kbo_destroy(fd_b, &cmd_b);
	kbo_destroy(fd_b, &host_b);
	close(fd_b);
}

TEST_HARNESS_MAIN
