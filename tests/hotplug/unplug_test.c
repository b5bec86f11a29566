// SPDX-License-Identifier: MIT
/*
 * The guest half of the surprise hot-unplug test (tests/hotplug/run-in-guest.sh).
 *
 *   unplug_test VICTIM_PCI_ADDRESS [OTHER_PCI_ADDRESS]
 *
 * Puts work in flight on VICTIM (a job parked on a device semaphore, FILLs
 * queued behind it, a submitter blocked on the full 1024-job history),
 * blocks waiters on it (DRM_MAIA_WAIT in threads and in a child process, a
 * syncobj wait, poll() on a sync_file), keeps OTHER busy, prints the line
 * HOTPLUG-READY and waits for the host to unplug VICTIM (QMP device_del).
 * Then checks that every waiter woke with an error, that the CPU mappings
 * unmap and every fd closes, and that OTHER kept working. Prints TAP lines
 * without numbers ("ok - ..."); the host numbers them. Exit status 0 when
 * all passed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "libmaia.h"
#include "drm/maia_accel.h"

#define SEM		61		/* device-wide; nobody signals it */
#define PARK_US		(300u * 1000 * 1000)	/* the device gives up after 300 s */
#define WAKE_TIMEOUT_S	40		/* every waiter must wake within this */
#define NS		1000000000ll
#define BO_SIZE		(1u << 20)
#define NFILLS		4

static int failures;

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct maia_device *dev, *other;
static uint64_t seq_park, seq_fill[NFILLS];
static uint64_t seq_uq_park;	/* a parked job on libmaia's user queue */
static uint32_t syncobj_fill;
static int fence_park = -1;
static double t_ready;

/* One blocked waiter: what it waited for and how it woke. */
struct waiter {
	const char *what;
	pthread_t thread;
	int (*fn)(struct waiter *w);
	atomic_int done;
	int ret;		/* the call's return value */
	uint32_t status;	/* job status for WAIT */
	double woke;
	pid_t tid;
};

static int wait_job(struct waiter *w, uint64_t seqno)
{
	struct maia_job_status st = { 0 };
	int ret = maia_wait(dev, seqno, 120 * NS, &st);

	w->status = st.status;
	return ret;
}

static int w_park(struct waiter *w) { return wait_job(w, seq_park); }
static int w_uq_park(struct waiter *w) { return wait_job(w, seq_uq_park); }
static int w_fill(struct waiter *w) { return wait_job(w, seq_fill[NFILLS - 1]); }
static int w_syncobj(struct waiter *w)
{
	(void)w;
	return maia_syncobj_wait(dev, syncobj_fill, 120 * NS);
}

static int w_poll(struct waiter *w)
{
	(void)w;
	struct pollfd p = { .fd = fence_park, .events = POLLIN };
	int n;

	n = poll(&p, 1, 120 * 1000);

	return n == 1 && (p.revents & POLLIN) ? 0 : n < 0 ? -errno : -ETIME;
}

/* Fill the job history until SUBMIT blocks on the parked job's slot. */
static struct maia_cmdbuf *nop_cb;
static atomic_int submitted;

static int w_submit(struct waiter *w)
{
	/* HIGH: the SUBMIT ioctl, whose job history this fills (not a user queue). */
	struct maia_submit_opts high = { .priority = DRM_MAIA_PRIO_HIGH };
	uint64_t seqno;
	int i, ret = 0;

	for (i = 0; i < 1100; i++) {
		ret = maia_submit(dev, nop_cb, &high, &seqno);
		if (ret)
			break;
		atomic_fetch_add(&submitted, 1);
	}
	w->status = i;
	return ret;
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->tid = gettid();
	w->ret = w->fn(w);
	w->woke = now();
	atomic_store(&w->done, 1);
	return NULL;
}

/* The other device: jobs and pings until told to stop. */
static atomic_int other_stop;
static int other_ok, other_fail, other_after;
static struct maia_cmdbuf *other_cb;

static void *other_main(void *arg)
{
	struct maia_ping_result pr;
	uint64_t cookie = 1;

	(void)arg;
	while (!atomic_load(&other_stop)) {
		int ret = maia_run(other, other_cb, 10 * NS, NULL);

		if (!ret)
			ret = maia_ping(other, cookie++, &pr);
		if (ret) {
			other_fail++;
			fprintf(stderr, "# other device: %s\n", maia_last_error());
		} else {
			other_ok++;
			if (t_ready && now() > t_ready)
				other_after++;
		}
	}
	return NULL;
}

static int sync_file_status(int fd)
{
	struct sync_file_info info = { 0 };

	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info))
		return -errno;
	return info.status;
}

static int count_fd_links(const char *needle)
{
	char path[300], target[PATH_MAX];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;
	ssize_t len;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = 0;
		if (strstr(target, needle))
			n++;
	}
	closedir(dir);
	return n;
}

static int count_maps(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static void show_stack(pid_t tid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stack", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	fclose(f);
}

static const char *err_or_status(int ret, uint32_t status)
{
	static char buf[64];

	if (ret)
		snprintf(buf, sizeof(buf), "%s", strerror(-ret));
	else
		snprintf(buf, sizeof(buf), "status %s", maia_job_status_name(status));
	return buf;
}

int main(int argc, char **argv)
{
	struct waiter waiters[] = {
		{ .what = "DRM_MAIA_WAIT on the parked job", .fn = w_park },
		{ .what = "DRM_MAIA_WAIT on the last FILL", .fn = w_fill },
		{ .what = "syncobj wait on the last FILL", .fn = w_syncobj },
		{ .what = "poll() on the parked job's sync_file", .fn = w_poll },
		{ .what = "SUBMIT blocked on the full job history", .fn = w_submit },
		{ .what = "maia_wait on a parked user-queue job", .fn = w_uq_park },
	};
	const int nw = sizeof(waiters) / sizeof(waiters[0]);
	struct maia_submit_opts opts = { 0 };
	struct maia_cmdbuf *park_cb, *fill_cb;
	struct maia_bo *hbm, *host, *obo = NULL;
	struct maia_device_info info;
	struct maia_job_status st;
	void *hbm_ptr, *host_ptr, *dmabuf_ptr, *optr;
	char node[32];
	int dmabuf_fd, fence_fill_export, i, ret, all, prev, status;
	pthread_t other_thread;
	uint32_t syncobj_park;
	uint64_t v;
	pid_t child;
	double t0;

	if (argc < 2) {
		fprintf(stderr, "usage: unplug_test VICTIM_PCI_ADDRESS [OTHER_PCI_ADDRESS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = maia_device_open_pci(argv[1], &dev);
	tap(!ret, "open %s", argv[1]);
	if (ret)
		return 1;
	if (maia_device_info(dev, &info))
		return 1;
	snprintf(node, sizeof(node), "%s", info.node);
	if (argc > 2) {
		ret = maia_device_open_pci(argv[2], &other);
		tap(!ret, "open the other device %s", argv[2]);
		if (ret)
			return 1;
	}

	/* Buffer objects, mapped by the CPU: HBM (BAR), host, and a dma-buf. */
	ret = maia_bo_create(dev, BO_SIZE, MAIA_BO_HBM, &hbm) ?:
	      maia_bo_create(dev, BO_SIZE, MAIA_BO_HOST, &host) ?:
	      maia_bo_map(hbm, &hbm_ptr) ?: maia_bo_map(host, &host_ptr) ?:
	      maia_bo_export(host, &dmabuf_fd);
	tap(!ret, "HBM and host BOs created and mapped, host BO exported");
	if (ret)
		return 1;
	dmabuf_ptr = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf_fd, 0);
	tap(dmabuf_ptr != MAP_FAILED, "dma-buf mapped");
	if (dmabuf_ptr == MAP_FAILED)
		return 1;
	memset(hbm_ptr, 0x5a, 4096);
	memset(host_ptr, 0xa5, 4096);

	/* A job parked on a semaphore nobody signals, FILLs queued behind it. */
	ret = maia_cmdbuf_create(dev, 4096, &park_cb) ?:
	      maia_cmdbuf_create(dev, 4096, &fill_cb) ?:
	      maia_cmdbuf_create(dev, 4096, &nop_cb) ?:
	      maia_cmd_sem_wait(park_cb, SEM, 1, PARK_US) ?:
	      maia_cmd_fill(fill_cb, maia_bo_va(hbm), BO_SIZE, 0x11223344) ?:
	      maia_cmd_fill(fill_cb, maia_bo_va(host), BO_SIZE, 0x55667788) ?:
	      maia_cmd_nop(nop_cb) ?:
	      maia_syncobj_create(dev, &syncobj_park) ?:
	      maia_syncobj_create(dev, &syncobj_fill);
	if (ret)
		return 1;
	opts.out_syncobj = syncobj_park;
	opts.out_fence_fd = &fence_park;
	ret = maia_submit(dev, park_cb, &opts, &seq_park);
	opts.out_fence_fd = NULL;
	for (i = 0; !ret && i < NFILLS; i++) {
		opts.out_syncobj = i == NFILLS - 1 ? syncobj_fill : 0;
		ret = maia_submit(dev, fill_cb, &opts, &seq_fill[i]);
	}
	/* No options: libmaia's user queue when the driver has them. */
	if (!ret)
		ret = maia_submit(dev, park_cb, NULL, &seq_uq_park);
	tap(!ret, "parked jobs and %d FILLs submitted", NFILLS);
	if (ret)
		return 1;
	ret = maia_syncobj_export(dev, syncobj_fill, &fence_fill_export);
	if (ret)
		return 1;
	usleep(200000);
	tap(maia_wait(dev, seq_park, 0, &st) == -ETIME &&
	    maia_wait(dev, seq_fill[NFILLS - 1], 0, &st) == -ETIME,
	    "the jobs are in flight");

	if (other) {
		ret = maia_cmdbuf_create(other, 4096, &other_cb) ?:
		      maia_bo_create(other, BO_SIZE, MAIA_BO_HBM, &obo) ?:
		      maia_cmd_fill(other_cb, maia_bo_va(obo), BO_SIZE, 0xcafe0001);
		if (ret || pthread_create(&other_thread, NULL, other_main, NULL))
			return 1;
	}

	/* The waiters: threads, and a process that shares the fd. */
	for (i = 0; i < nw; i++)
		if (pthread_create(&waiters[i].thread, NULL, waiter_main, &waiters[i]))
			return 1;
	child = fork();
	if (child == 0) {
		struct maia_job_status cst = { 0 };

		ret = maia_wait(dev, seq_fill[0], 120 * NS, &cst);
		_exit(ret == -ENODEV ? 10 : !ret && cst.status == DRM_MAIA_JOB_ABORTED ? 11 :
		      ret ? 1 : 20 + cst.status);
	}
	/* Wait until the submitter stops making progress (it blocked). */
	prev = -1;
	for (i = 0; i < 100 && atomic_load(&submitted) != prev; i++) {
		prev = atomic_load(&submitted);
		usleep(300000);
	}
	all = 1;
	for (i = 0; i < nw; i++)
		all &= !atomic_load(&waiters[i].done);
	tap(all && waitpid(child, &status, WNOHANG) == 0,
	    "%d waiters blocked (submitter blocked after %d jobs)", nw + 1,
	    atomic_load(&submitted));

	t_ready = now();
	/*
	 * run-guest passes a line's newline on only with the next line (it
	 * drops the one before its exit marker): say something after it.
	 */
	printf("HOTPLUG-READY\n# waiting for the unplug\n");
	fflush(stdout);

	/* Every waiter wakes, with an error. */
	t0 = now();
	for (;;) {
		all = 1;
		for (i = 0; i < nw; i++)
			all &= atomic_load(&waiters[i].done);
		if (all || now() - t0 > WAKE_TIMEOUT_S)
			break;
		usleep(50000);
	}
	for (i = 0; i < nw; i++) {
		struct waiter *w = &waiters[i];

		if (!atomic_load(&w->done)) {
			tap(0, "%s: still blocked after %d s; its kernel stack:", w->what,
			    WAKE_TIMEOUT_S);
			show_stack(w->tid);
		}
	}
	if (!all)
		return 1;	/* threads stuck in the kernel: no clean-up possible */
	for (i = 0; i < 2; i++) {
		struct waiter *w = &waiters[i];

		tap(w->ret == -ENODEV || (!w->ret && w->status == DRM_MAIA_JOB_ABORTED),
		    "%s woke after %.2f s: %s", w->what, w->woke - t_ready,
		    err_or_status(w->ret, w->status));
	}
	tap(waiters[2].ret == 0 || waiters[2].ret == -ENODEV, "%s woke after %.2f s: %s",
	    waiters[2].what, waiters[2].woke - t_ready,
	    waiters[2].ret ? strerror(-waiters[2].ret) : "signalled");
	ret = sync_file_status(fence_fill_export);
	tap(ret < 0, "its fence carries an error: %s", ret < 0 ? strerror(-ret) : "none");
	tap(waiters[3].ret == 0, "%s woke after %.2f s: %s", waiters[3].what,
	    waiters[3].woke - t_ready, waiters[3].ret ? strerror(-waiters[3].ret) : "POLLIN");
	ret = sync_file_status(fence_park);
	tap(ret == -ECANCELED, "the sync_file's status is %s",
	    ret < 0 ? strerror(-ret) : ret ? "signalled, no error" : "active");
	tap(waiters[4].ret == -ENODEV, "%s woke after %.2f s: %s (%u submitted)",
	    waiters[4].what, waiters[4].woke - t_ready,
	    waiters[4].ret ? strerror(-waiters[4].ret) : "it succeeded", waiters[4].status);
	tap(waiters[5].ret == -ENODEV || (!waiters[5].ret && waiters[5].status == DRM_MAIA_JOB_ABORTED),
	    "%s woke after %.2f s: %s", waiters[5].what, waiters[5].woke - t_ready,
	    err_or_status(waiters[5].ret, waiters[5].status));
	for (t0 = now(); waitpid(child, &status, WNOHANG) == 0 && now() - t0 < 10;)
		usleep(50000);
	tap(WIFEXITED(status) && (WEXITSTATUS(status) == 10 || WEXITSTATUS(status) == 11),
	    "DRM_MAIA_WAIT in a child process woke: %s",
	    !WIFEXITED(status) ? "killed" : WEXITSTATUS(status) == 10 ? "ENODEV" :
	    WEXITSTATUS(status) == 11 ? "status ABORTED" : "something else");
	for (i = 0; i < nw; i++)
		pthread_join(waiters[i].thread, NULL);

	/* The device is gone: new calls fail, and the PCI function went away. */
	tap(maia_query(dev, DRM_MAIA_PARAM_DEVICE_ID, &v) == -ENODEV, "GET_PARAM: ENODEV");
	tap(maia_submit(dev, fill_cb, NULL, &v) == -ENODEV, "SUBMIT: ENODEV");
	tap(maia_wait(dev, seq_park, 0, &st) == -ENODEV, "WAIT: ENODEV");
	{
		char path[80];

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", argv[1]);
		for (t0 = now(); access(path, F_OK) == 0 && now() - t0 < 10;)
			usleep(50000);
		tap(access(path, F_OK) != 0, "%s left /sys/bus/pci/devices", argv[1]);
	}

	/* Unmap and close everything. */
	tap(munmap(dmabuf_ptr, BO_SIZE) == 0, "dma-buf mapping unmapped");
	maia_bo_destroy(hbm);
	maia_bo_destroy(host);
	maia_cmdbuf_destroy(park_cb);
	maia_cmdbuf_destroy(fill_cb);
	maia_cmdbuf_destroy(nop_cb);
	maia_syncobj_destroy(dev, syncobj_park);
	maia_syncobj_destroy(dev, syncobj_fill);
	tap(count_maps(node) == 0, "no mapping of %s left", node);
	tap(close(dmabuf_fd) == 0 && close(fence_park) == 0 && close(fence_fill_export) == 0,
	    "dma-buf and sync_file fds closed");
	maia_device_close(dev);
	tap(count_fd_links(node) == 0 && count_fd_links("dmabuf") == 0 &&
	    count_fd_links("sync_file") == 0, "no fd of %s, dma-buf or sync_file left", node);

	/* The other device kept working, and still does. */
	if (other) {
		usleep(300000);
		atomic_store(&other_stop, 1);
		pthread_join(other_thread, NULL);
		tap(!other_fail && other_after > 0,
		    "other device: %d jobs+pings, %d after the unplug started, %d failed",
		    other_ok, other_after, other_fail);
		ret = maia_run(other, other_cb, 10 * NS, NULL) ?: maia_bo_map(obo, &optr);
		tap(!ret && ((uint32_t *)optr)[BO_SIZE / 4 - 1] == 0xcafe0001,
		    "other device: a FILL after the unplug landed");
		maia_bo_destroy(obo);
		maia_cmdbuf_destroy(other_cb);
		maia_device_close(other);
	}
	return failures ? 1 : 0;
}
