// SPDX-License-Identifier: MIT
/*
 * maia_ioctl_fuzz: an in-guest, seeded, structured fuzzer of the maia uAPI
 * (Documentation/reliability.rst).
 *
 * Several worker processes each keep a model of what they own (open files,
 * buffer objects, device mappings, syncobjs, dma-buf fds, CPU mappings,
 * submitted jobs) and issue calls whose arguments come mostly from that
 * model, sometimes mutated (a page off, another file's handle, a freed one),
 * sometimes edge values, wrong ioctl sizes and directions, and bad user
 * pointers. Command buffers hold real device commands aimed at mapped and
 * unmapped addresses, now and then with random bytes flipped.
 *
 * Every call is checked against what the uAPI documents: a call that must
 * fail and succeeds, an errno outside the documented set, an output written
 * on failure, a size the growth rule forbids that is accepted. Each such
 * case is printed with the seed, the worker and the call number.
 *
 * Collectives: when the devices' fabric ports are cabled as a ring (run-guest
 * --fabric ring; the fuzzer reads the cabling with the FABRIC_PORT ioctl),
 * one more process runs MAIA_OP_COLLECTIVE jobs on every device of the ring
 * as the ranks of one communicator, a round at a time: any collective, dtype
 * and count (1 element to 4 MiB), with mutations: a rank late by tens to
 * hundreds of ms, never submitted, or in a process killed with its job in
 * flight; a receive or send buffer or report unmapped, read-only or running
 * past its mapping; another communicator, rank, nranks, ports or field; a
 * command the device must refuse. Every job must end within 40 s with a
 * status its mutation allows (a rank whose memory fails: its MMU error or
 * FABRIC_TIMEOUT, never OK; its peers OK or FABRIC_TIMEOUT; ABORTED and
 * FABRIC_LINK only after a reset or a link going down); a rank that says OK
 * must hold the CPU's result; nothing is written outside a receive buffer,
 * to a send buffer or to read-only memory; the report agrees with the job.
 * The other workers' jobs carry one-rank and refused collectives. Options:
 * --no-coll, --coll-rounds, --coll-userq (rounds through user queues),
 * --coll-abandoned (the check after the run behind an abandoned collective).
 *
 * After the workers: the kernel log has no BUG/WARNING/Oops, the device still
 * runs a checked FILL, hbm_used_bytes and host_pinned_bytes are back at their
 * starting values, every worker finished, and, with a ring, an all-reduce on
 * it gives exactly the CPU's sums (no reset in between). Output is TAP.
 *
 * Same seed, same call sequence (per worker); the kernel's timing can still
 * make results, and so later choices, differ.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <maia_accel.h>
#include <maia/hw/cmd.h>
#include <maia/hw/dtype.h>
#include <maia/hw/queue.h>

#define PAGE		4096ull
#define KIB		1024ull
#define MIB		(1024ull * KIB)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define MAX_NODES	8
#define MAX_CTX		3
#define MAX_BO		24
#define MAX_MAP		32
#define MAX_SYNC	16
#define MAX_SEQ		64
#define MAX_DMABUF	8
#define MAX_CPUMAP	16
#define MAX_FLINK	64
#define MAX_ERRNO	134
#define MAX_WORKERS	64

#define CMDBUF_SIZE	(64 * KIB)
#define CMDRING_SIZE	(32 * KIB)		/* commands; the rest is job data */
#define CMDBUF_VA	DRM_MAIA_VA_START
#define FUZZ_VA_BASE	(DRM_MAIA_VA_START + (1ull << 30))
#define FUZZ_VA_SLOTS	256			/* 4 MiB slots */
#define MAX_JOB_BYTES	(64 * KIB)		/* FILL / copy bound */
#define CALL_WATCHDOG_S	60

/* --- options and shared state ------------------------------------------- */

static unsigned long long opt_seed;
static unsigned long long opt_calls = 20000;
static unsigned int opt_procs = 4;
static unsigned int opt_seconds = 30;
static int opt_replay = -1;		/* run only this worker, in-process */
static bool opt_trace;
static bool opt_core_warn;		/* allow the known core WARN (huge syncobj counts) */
static int opt_job_timeout_ms = -1;	/* set job_timeout_ms for the run */
static bool opt_no_coll;		/* no collective worker even with a ring */
static unsigned long long opt_coll_rounds;	/* 0: until the other workers end */
static bool opt_coll_abandoned;		/* the check after the run on a new comm */
/*
 * Rounds whose jobs go through user queues, in percent. A third by default:
 * they found that the driver stopped every user queue whose job waited for
 * the fabric when any queue of the device reported an error (fixed,
 * Documentation/reliability.rst).
 */
static unsigned int opt_coll_userq = 33;
static unsigned int opt_coll_pause_ms;	/* between rounds */
#define REPLAY_COLL	(-2)		/* --replay coll */

enum op {
	OP_GET_PARAM, OP_PING, OP_BO_CREATE, OP_BO_INFO, OP_MAP, OP_UNMAP, OP_SUBMIT,
	OP_WAIT, OP_CTX_STATUS, OP_GEM_CLOSE, OP_PRIME_EXPORT, OP_PRIME_IMPORT,
	OP_SYNC_CREATE, OP_SYNC_DESTROY, OP_SYNC_WAIT, OP_SYNC_TL_WAIT, OP_SYNC_SIGNAL,
	OP_SYNC_RESET, OP_SYNC_FD, OP_SYNC_TL_SIGNAL, OP_SYNC_QUERY, OP_VERSION,
	OP_GET_UNIQUE, OP_CORE_RANDOM, OP_FLINK, OP_GEM_OPEN, OP_MMAP, OP_MUNMAP,
	OP_DMABUF_MMAP, OP_REOPEN, OP_BAD_SIZE, OP_BAD_PTR, OP_RAW, OP_USERQ, NUM_OPS
};

static const char *const op_names[NUM_OPS] = {
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

struct worker_stats {
	unsigned long long calls;
	unsigned long long ok;
	unsigned long long errnos[MAX_ERRNO];
	unsigned long long per_op[NUM_OPS];
	unsigned long long submits_ok, jobs_waited;
	unsigned long long job_status[5];
	unsigned long long faults, reopens;
	unsigned long long max_resets_seen;
	unsigned long long violations;
	int done;		/* 1 when the worker finished its loop */
};

/* The collective worker's figures (the parent prints them). */
struct coll_stats {
	unsigned long long rounds, skipped, late, never, killed, faulty, bad, odd;
	unsigned long long late_faulty;	/* the crash's shape: a late rank, bad memory */
	unsigned long long jobs, st_ok, st_timeout, st_link, st_fault, st_badcmd, st_aborted;
	unsigned long long st_other, checked, checked_bytes, resets_seen, uq_jobs;
	long long slowest_ms;
	uint32_t comm, next_seq;	/* for the check after the run */
};

struct shared {
	struct worker_stats w[MAX_WORKERS];
	unsigned int flink_names[MAX_FLINK];	/* names any worker may GEM_OPEN */
	struct coll_stats coll;
	int coll_stop;			/* the other workers are done */
};

static struct shared *shm;
static struct worker_stats *st;

/* --- random numbers ----------------------------------------------------- */

static uint64_t rng_state;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(void)
{
	return splitmix64(&rng_state);
}

/* Uniform in [0, n); n > 0 */
static uint64_t rn(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* True with probability pct percent */
static bool pct(unsigned int p)
{
	return rn(100) < p;
}

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

/* --- the model ---------------------------------------------------------- */

struct bo {
	uint32_t handle;
	uint64_t size;
	uint32_t flags;		/* placement; 0 if unknown (imported) */
	uint64_t mmap_off;	/* 0 until BO_INFO */
};

struct mapping {
	uint64_t va, size, offset;
	uint32_t handle;	/* may be closed since */
	bool ro;
	bool writable_target;	/* a job may write there */
};

struct syncobj {
	uint32_t handle;
	bool fenced;		/* has a fence, as far as we know */
	bool shared;		/* also in another file: others may reset it */
};

struct ctx {
	int fd;			/* -1 if unused */
	int node;
	bool faulted;
	bool unsure;		/* an unmodelled call may have changed resources */
	uint32_t cmd_handle;
	void *cmd_cpu;
	uint64_t cmd_used;
	struct bo bo[MAX_BO];
	int nbo;
	struct mapping map[MAX_MAP];
	int nmap;
	struct syncobj sync[MAX_SYNC];
	int nsync;
	uint64_t seq[MAX_SEQ];
	int nseq;
	uint64_t last_seqno;
	uint32_t freed_handles[8];
	uint32_t freed_syncs[8];
	uint64_t resets_seen;
};

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

static struct maia_nodes {
	int n;
	char path[MAX_NODES][32];
	int minor[MAX_NODES];
} nodes;

static struct ctx ctxs[MAX_CTX];
static struct cpumap cpumaps[MAX_CPUMAP];
static int ncpumaps;
static struct dmabuf dmabufs[MAX_DMABUF];
static int ndmabufs;

static int worker_index;
static bool in_coll_worker;
static uint64_t worker_seed;
static unsigned long long call_no;
static const char *cur_op = "";

/* Pages for bad pointers: one read-only, one never mapped, and one writable
 * page followed by the unmapped one (for structs that straddle). */
static void *ro_page, *hole_page, *edge_page;

/* --- reporting ---------------------------------------------------------- */

static void trace(const char *fmt, ...)
{
	va_list ap;

	if (!opt_trace)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "# [w%d #%llu] ", worker_index, call_no);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void violation(const char *fmt, ...)
{
	va_list ap;

	st->violations++;
	va_start(ap, fmt);
	printf("# VIOLATION seed=%llu worker=%d worker_seed=%llu call=%llu op=%s: ",
	       opt_seed, worker_index, (unsigned long long)worker_seed, call_no, cur_op);
	vprintf(fmt, ap);
	if (in_coll_worker)
		printf("\n#   replay: maia_ioctl_fuzz --seed %llu --replay coll --calls %llu "
		       "--trace\n", opt_seed, call_no + 1);
	else
		printf("\n#   replay: maia_ioctl_fuzz --seed %llu --replay %d --calls %llu --trace\n",
		       opt_seed, worker_index, call_no + 1);
	fflush(stdout);
	va_end(ap);
}

static void on_alarm(int sig)
{
	char buf[256];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf),
		     "# WATCHDOG seed=%llu worker=%d call=%llu op=%s: no return in %d s\n",
		     opt_seed, worker_index, call_no, cur_op, CALL_WATCHDOG_S);
	if (n > 0 && write(1, buf, n) < 0)
		_exit(98);
	_exit(99);
}

static void on_fatal(int sig)
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "# CRASH signal %d seed=%llu worker=%d call=%llu op=%s\n",
		     sig, opt_seed, worker_index, call_no, cur_op);
	if (n > 0 && write(1, buf, n) < 0)
		_exit(96);
	_exit(97);
}

/* errno list terminated by -1; 0 means success is allowed */
#define ALLOW(...)	((const int[]){ __VA_ARGS__, -1 })

static bool allowed(int err, const int *list)
{
	for (; *list >= 0; list++)
		if (*list == err)
			return true;
	return false;
}

static void expect(struct ctx *c, const char *what, int err, const int *list)
{
	if (c && c->unsure)
		return;
	if (!allowed(err, list))
		violation("%s: %s (%d), expected one of the documented results", what,
			  err ? strerror(err) : "success", err);
}

static void count_result(int err)
{
	if (!err)
		st->ok++;
	else if (err < MAX_ERRNO)
		st->errnos[err]++;
	else
		st->errnos[0]++;
}

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

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* --- sysfs, kernel log ---------------------------------------------------- */

static long long read_ll(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtoll(buf, NULL, 0);
}

static long long dev_attr(int node, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/%s", nodes.minor[node], name);
	return read_ll(path);
}

static int find_nodes(void)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int i, j;

	nodes.n = 0;
	dir = opendir("/sys/class/accel");
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && nodes.n < MAX_NODES) {
		int minor;
		ssize_t len;

		if (sscanf(de->d_name, "accel%d", &minor) != 1)
			continue;
		snprintf(link, sizeof(link), "/sys/class/accel/%s/device/driver", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		if (strcmp(strrchr(target, '/') ? strrchr(target, '/') + 1 : target, "maia"))
			continue;
		nodes.minor[nodes.n] = minor;
		snprintf(nodes.path[nodes.n], sizeof(nodes.path[0]), "/dev/accel/accel%d", minor);
		nodes.n++;
	}
	closedir(dir);
	for (i = 1; i < nodes.n; i++)
		for (j = i; j > 0 && nodes.minor[j - 1] > nodes.minor[j]; j--) {
			int m = nodes.minor[j];
			char p[32];

			memcpy(p, nodes.path[j], sizeof(p));
			nodes.minor[j] = nodes.minor[j - 1];
			memcpy(nodes.path[j], nodes.path[j - 1], sizeof(p));
			nodes.minor[j - 1] = m;
			memcpy(nodes.path[j - 1], p, sizeof(p));
		}
	return nodes.n;
}

static const char *const kmsg_bad[] = {
	"BUG", "WARNING:", "Oops", "general protection", "KASAN", "refcount_t",
	"UBSAN", "list_add corruption", "list_del corruption", "stack-protector",
	"hung_task", "blocked for more than", "soft lockup", "rcu_sched detected",
};

/* Prints and counts bad records in the kernel log since kmsg_fd was opened. */
static int kmsg_scan(int kmsg_fd, int *records)
{
	char rec[8192];
	int bad = 0, info = 0;

	*records = 0;
	for (;;) {
		ssize_t len = read(kmsg_fd, rec, sizeof(rec) - 1);
		char *text;
		size_t i;

		if (len < 0) {
			if (errno == EPIPE)
				continue;
			break;
		}
		rec[len] = '\0';
		text = strchr(rec, ';');
		if (!text)
			continue;
		text++;
		*strchrnul(text, '\n') = '\0';
		(*records)++;
		/* Resets and timeouts: context for the figures, not failures. */
		if ((strstr(text, "reset") || strstr(text, "timed out") ||
		     strstr(text, "timeout")) && info++ < 20)
			printf("# kernel (info): %s\n", text);
		for (i = 0; i < ARRAY_SIZE(kmsg_bad); i++)
			if (strstr(text, kmsg_bad[i])) {
				if (bad < 40)
					printf("# kernel: %s\n", text);
				bad++;
				break;
			}
	}
	return bad;
}

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

	gp.param = (uint32_t)rn(DRM_MAIA_PARAM_USER_QUEUES + 1);
	if (pct(15))
		gp.param = (uint32_t)(pct(50) ? DRM_MAIA_PARAM_USER_QUEUES + 1 + rn(100) : edge());
	if (pct(10))
		gp.index = (uint32_t)edge();
	if (pct(20))
		gp.value = edge();
	err = XIOCTL(c, DRM_IOCTL_MAIA_GET_PARAM, gp);
	if (gp.param <= DRM_MAIA_PARAM_USER_QUEUES && !gp.index)
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

static int worker(int index, unsigned long long calls, int64_t deadline_ns)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	uint64_t s;
	int i;

	worker_index = index;
	s = opt_seed ^ (0x5851f42d4c957f2dull * (uint64_t)(index + 1));
	worker_seed = splitmix64(&s);
	rng_state = worker_seed;
	st = &shm->w[index];
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_fatal;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
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

/* --- collectives -------------------------------------------------------- */

/*
 * The collective worker: when devices of the guest have their fabric ports
 * cabled as a ring (qemu/run-guest --fabric ring), one more process runs
 * MAIA_OP_COLLECTIVE jobs on every device of the ring as the ranks of one
 * communicator, a round at a time, while the other workers run. It holds one
 * file per device, so it submits every rank itself and can make one late.
 */
#define MAX_PORTS	16
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

static struct fabric {
	int nports[MAX_NODES];
	uint64_t serial[MAX_NODES];
	int peer_node[MAX_NODES][MAX_PORTS];	/* -1: down, or not one of ours */
	int peer_port[MAX_NODES][MAX_PORTS];
	int ring[MAX_NODES];			/* ring[r]: the node of rank r */
	int n;					/* ranks; below 2, no collectives */
} fab;

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
static void fabric_discover(void)
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
		k->hdr.flags = (uint16_t)(1u << rn(16));
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
		resets1 = dev_attr((int)i, "reset_count");
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
static int coll_worker(int index, unsigned long long rounds, int64_t deadline_ns)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	uint64_t s = opt_seed ^ 0xc011ec7e5eed0001ull;
	int i;

	worker_index = index;
	in_coll_worker = true;
	worker_seed = splitmix64(&s);
	rng_state = worker_seed;
	st = &shm->w[index];
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_fatal;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
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
static int coll_abandon(uint32_t comm, char *why, size_t len)
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
static int coll_final(uint64_t count, uint32_t comm, uint32_t seq, char *why, size_t len)
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

/* --- checks after the run ----------------------------------------------- */

/* A FILL on a fresh context, read back through the CPU: 0 if it worked. */
static int device_runs_a_job(int node, char *why, size_t len)
{
	struct drm_maia_bo_create bc = { .size = 64 * KIB, .flags = DRM_MAIA_BO_HOST };
	struct drm_maia_bo_create hc = { .size = 64 * KIB, .flags = DRM_MAIA_BO_HBM };
	struct drm_maia_bo_info bi = { 0 }, hi = { 0 };
	struct drm_maia_vm_bind vb = { .op = DRM_MAIA_VM_MAP };
	struct drm_maia_submit s = { 0 };
	struct drm_maia_wait w = { 0 };
	struct maia_cmd_fill *f;
	struct maia_cmd_dma_copy *d;
	uint32_t *p, *h;
	int fd, ret = -1;
	uint64_t i;

	fd = open(nodes.path[node], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "open: %s", strerror(errno));
		return -1;
	}
	if (ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &bc) || ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &hc)) {
		snprintf(why, len, "BO_CREATE: %s", strerror(errno));
		goto out;
	}
	bi.handle = bc.handle;
	hi.handle = hc.handle;
	if (ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &bi) || ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &hi)) {
		snprintf(why, len, "BO_INFO: %s", strerror(errno));
		goto out;
	}
	p = mmap(NULL, bc.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bi.mmap_offset);
	h = mmap(NULL, hc.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, hi.mmap_offset);
	if (p == MAP_FAILED || h == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		goto out;
	}
	vb.handle = bc.handle;
	vb.va = DRM_MAIA_VA_START;
	vb.size = bc.size;
	if (ioctl(fd, DRM_IOCTL_MAIA_VM_BIND, &vb)) {
		snprintf(why, len, "VM_BIND: %s", strerror(errno));
		goto out_unmap;
	}
	vb.handle = hc.handle;
	vb.va = DRM_MAIA_VA_START + 2 * MIB;
	if (ioctl(fd, DRM_IOCTL_MAIA_VM_BIND, &vb)) {
		snprintf(why, len, "VM_BIND: %s", strerror(errno));
		goto out_unmap;
	}
	/* Commands in the first 4 KiB: FILL the HBM BO, copy it to host page 1..15. */
	memset(p, 0, bc.size);
	f = (void *)p;
	f->hdr.opcode = MAIA_OP_FILL;
	f->hdr.size = sizeof(*f);
	f->dst = DRM_MAIA_VA_START + 2 * MIB;
	f->size = 60 * KIB;
	f->pattern = 0x5eed1234;
	d = (void *)(f + 1);
	d->hdr.opcode = MAIA_OP_DMA_COPY;
	d->hdr.size = sizeof(*d);
	d->src = DRM_MAIA_VA_START + 2 * MIB;
	d->dst = DRM_MAIA_VA_START + 4 * KIB;
	d->width = 60 * KIB;
	d->height = 1;
	s.cmdbuf_handle = bc.handle;
	s.cmdbuf_size = sizeof(*f) + sizeof(*d);
	s.priority = DRM_MAIA_PRIO_NORMAL;
	if (ioctl(fd, DRM_IOCTL_MAIA_SUBMIT, &s)) {
		snprintf(why, len, "SUBMIT: %s", strerror(errno));
		goto out_unmap;
	}
	w.seqno = s.seqno;
	w.timeout_ns = mono_ns() + 10000000000ll;
	if (ioctl(fd, DRM_IOCTL_MAIA_WAIT, &w)) {
		snprintf(why, len, "WAIT: %s", strerror(errno));
		goto out_unmap;
	}
	if (w.status != DRM_MAIA_JOB_OK) {
		snprintf(why, len, "job status %u device status %u", w.status, w.device_status);
		goto out_unmap;
	}
	for (i = 0; i < 60 * KIB / 4; i++)
		if (p[1024 + i] != 0x5eed1234 || h[i] != 0x5eed1234) {
			snprintf(why, len, "word %llu: host %#x hbm %#x", (unsigned long long)i,
				 p[1024 + i], h[i]);
			goto out_unmap;
		}
	ret = 0;
out_unmap:
	munmap(p, bc.size);
	munmap(h, hc.size);
out:
	close(fd);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: maia_ioctl_fuzz [--seed N] [--calls N] [--procs N] [--seconds N]\n"
		"                       [--replay WORKER|coll] [--trace] [--job-timeout-ms MS]\n"
		"                       [--no-coll] [--coll-rounds N] [--coll-abandoned]\n"
		"                       [--coll-userq PCT] [--coll-pause-ms MS]\n"
		"  --seed N        base seed (default: from the clock; always printed)\n"
		"  --calls N       calls in total, shared by the workers (default 20000)\n"
		"  --procs N       worker processes (default 4; 0: the collective worker alone)\n"
		"  --seconds N     stop after N seconds even if calls remain (default 30, 0 = none)\n"
		"  --replay W      run only worker W of --seed, in this process, with --calls as\n"
		"                  that worker's own call count (to replay a reported call);\n"
		"                  W = coll: the collective worker, --calls rounds\n"
		"  --trace         print every call on stderr\n"
		"  --core-warn     let random core ioctls pass huge syncobj counts (a known\n"
		"                  WARN of the 6.12 DRM core, not of maia)\n"
		"  --job-timeout-ms MS  set maia's job_timeout_ms for the run, restore it after\n"
		"  --no-coll       no collective worker, even on ring-cabled devices\n"
		"  --coll-rounds N the collective worker stops after N rounds (default: when the\n"
		"                  other workers are done, or at --seconds)\n"
		"  --coll-abandoned  before the check after the run, one rank of a collective\n"
		"                  whose peers never come; the check then takes a new comm id\n"
		"  --coll-userq PCT  this share of the rounds submits through user queues\n"
		"                  (default 0)\n"
		"  --coll-pause-ms MS  the collective worker rests this long between rounds\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "calls", required_argument, NULL, 'c' },
		{ "procs", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 't' },
		{ "replay", required_argument, NULL, 'r' },
		{ "trace", no_argument, NULL, 'v' },
		{ "core-warn", no_argument, NULL, 'w' },
		{ "job-timeout-ms", required_argument, NULL, 'j' },
		{ "no-coll", no_argument, NULL, 'n' },
		{ "coll-rounds", required_argument, NULL, 'R' },
		{ "coll-abandoned", no_argument, NULL, 'A' },
		{ "coll-userq", required_argument, NULL, 'U' },
		{ "coll-pause-ms", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long hbm0[MAX_NODES], pin0[MAX_NODES], reset0[MAX_NODES];
	long long hbm1[MAX_NODES], pin1[MAX_NODES], reset1[MAX_NODES];
	unsigned long long calls = 0, ok = 0, viol = 0, faults = 0, reopens = 0;
	unsigned long long errs[MAX_ERRNO] = { 0 }, status[5] = { 0 }, per_op[NUM_OPS] = { 0 };
	unsigned long long submits = 0, waited = 0, max_resets = 0;
	const char *jt_path = "/sys/module/maia/parameters/job_timeout_ms";
	int kmsg_fd, i, o, started = 0, clean = 0, done = 0, tap = 0, failed = 0;
	int64_t t0, t1, deadline = 0, kill_at, give_up = 0;
	long long old_jt = -1;
	pid_t pids[MAX_WORKERS], coll_pid = -1;
	static struct worker_stats parent_stats;
	int wanted, random_started = 0, random_done = 0, j;
	bool seeded = false, coll = false;
	char why[256];

	st = &parent_stats;	/* the parent's own calls and violations */

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 's': opt_seed = strtoull(optarg, NULL, 0); seeded = true; break;
		case 'c': opt_calls = strtoull(optarg, NULL, 0); break;
		case 'p': opt_procs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': opt_seconds = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': opt_replay = strcmp(optarg, "coll") ? atoi(optarg) : REPLAY_COLL; break;
		case 'v': opt_trace = true; break;
		case 'w': opt_core_warn = true; break;
		case 'j': opt_job_timeout_ms = atoi(optarg); break;
		case 'n': opt_no_coll = true; break;
		case 'R': opt_coll_rounds = strtoull(optarg, NULL, 0); break;
		case 'A': opt_coll_abandoned = true; break;
		case 'U': opt_coll_userq = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'P': opt_coll_pause_ms = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt_procs >= MAX_WORKERS) {
		usage(stderr);
		return 2;
	}
	if (!seeded)
		opt_seed = (unsigned long long)mono_ns() ^ ((unsigned long long)getpid() << 32);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# maia_ioctl_fuzz --seed %llu --calls %llu --procs %u --seconds %u\n",
	       opt_seed, opt_calls, opt_procs, opt_seconds);
	if (find_nodes() < 1) {
		printf("1..0 # SKIP no maia accel node\n");
		return 4;
	}
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (!opt_no_coll) {
		int64_t t = mono_ns();

		fabric_discover();
		coll = fab.n >= 2;
		if (coll) {
			printf("# fabric: a ring of %d devices,", fab.n);
			for (i = 0; i < fab.n; i++)
				printf(" accel%d", nodes.minor[fab.ring[i]]);
			printf(" (port 0 to the next one's port 1, up after %.1f s): collective "
			       "worker on\n", (mono_ns() - t) / 1e9);
		} else {
			printf("# fabric: no ring-cabled devices: no collective worker\n");
		}
	}
	if ((!opt_procs && !coll) ||
	    (!opt_procs && !opt_seconds && !opt_coll_rounds && opt_replay != REPLAY_COLL)) {
		printf("# --procs 0 wants the collective worker and --seconds or --coll-rounds\n");
		return 2;
	}
	if (opt_replay == REPLAY_COLL) {
		int rc;

		if (!coll) {
			printf("1..0 # SKIP no ring-cabled devices\n");
			return 4;
		}
		rc = coll_worker((int)opt_procs, opt_calls, 0);
		printf("# replay of the collective worker: %llu rounds, %llu violations\n",
		       shm->coll.rounds, shm->w[opt_procs].violations);
		return rc;
	}
	if (opt_replay >= 0) {
		int rc;

		rc = worker(opt_replay, opt_calls, 0);
		printf("# replay of worker %d: %llu calls, %llu violations\n", opt_replay,
		       shm->w[opt_replay].calls, shm->w[opt_replay].violations);
		return rc;
	}

	for (i = 0; i < nodes.n; i++) {
		hbm0[i] = dev_attr(i, "hbm_used_bytes");
		pin0[i] = dev_attr(i, "host_pinned_bytes");
		reset0[i] = dev_attr(i, "reset_count");
		printf("# %s: hbm_used_bytes %lld host_pinned_bytes %lld reset_count %lld\n",
		       nodes.path[i], hbm0[i], pin0[i], reset0[i]);
	}
	if (opt_job_timeout_ms >= 0) {
		char v[32];
		int fd;

		old_jt = read_ll(jt_path);
		snprintf(v, sizeof(v), "%d", opt_job_timeout_ms);
		fd = open(jt_path, O_WRONLY);
		if (fd < 0 || write(fd, v, strlen(v)) < 0)
			printf("# could not set job_timeout_ms: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);

	t0 = mono_ns();
	if (opt_seconds)
		deadline = t0 + opt_seconds * 1000000000ll;
	for (i = 0; i < (int)opt_procs; i++) {
		unsigned long long n = opt_calls / opt_procs + (i < (int)(opt_calls % opt_procs));
		pid_t pid = fork();

		if (pid < 0) {
			printf("# fork: %s\n", strerror(errno));
			break;
		}
		if (pid == 0)
			_exit(worker(i, n, deadline));
		pids[started++] = pid;
		random_started++;
	}
	if (coll) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(coll_worker((int)opt_procs, opt_coll_rounds, deadline));
		if (pid < 0) {
			printf("# fork: %s\n", strerror(errno));
		} else {
			pids[started++] = pid;
			coll_pid = pid;
		}
	}
	wanted = (int)opt_procs + coll;
	/* Wait for all, with a bound: the deadline plus the per-call watchdog. */
	kill_at = (deadline ? deadline : mono_ns() + 3600000000000ll) +
		  (CALL_WATCHDOG_S + 30) * 1000000000ll;
	for (;;) {
		int wst;
		pid_t pid = waitpid(-1, &wst, WNOHANG);

		if (pid > 0) {
			done++;
			/* The collective worker stops with the others. */
			if (pid != coll_pid && ++random_done == random_started)
				shm->coll_stop = 1;
			if (WIFEXITED(wst) && WEXITSTATUS(wst) <= 1)
				clean++;
			else if (WIFEXITED(wst))
				printf("# worker pid %d exited with %d\n", pid, WEXITSTATUS(wst));
			else
				printf("# worker pid %d killed by signal %d\n", pid,
				       WTERMSIG(wst));
			if (done == started)
				break;
			continue;
		}
		if (pid < 0)
			break;
		if (give_up && mono_ns() > give_up) {
			printf("# %d workers do not die (stuck in the kernel?): giving up on them\n",
			       started - done);
			break;
		}
		if (!give_up && mono_ns() > kill_at) {
			printf("# workers still running long after the deadline: killing\n");
			for (i = 0; i < started; i++)
				kill(pids[i], SIGKILL);
			give_up = mono_ns() + 10000000000ll;
		}
		usleep(20000);
	}
	t1 = mono_ns();
	if (old_jt >= 0) {
		char v[32];
		int fd = open(jt_path, O_WRONLY);

		snprintf(v, sizeof(v), "%lld", old_jt);
		if (fd >= 0) {
			if (write(fd, v, strlen(v)) < 0)
				printf("# could not restore job_timeout_ms\n");
			close(fd);
		}
	}

	for (i = 0; i < wanted; i++) {
		struct worker_stats *w = &shm->w[i];
		int e;

		calls += w->calls;
		ok += w->ok;
		viol += w->violations;
		faults += w->faults;
		reopens += w->reopens;
		submits += w->submits_ok;
		waited += w->jobs_waited;
		if (w->max_resets_seen > max_resets)
			max_resets = w->max_resets_seen;
		for (e = 0; e < MAX_ERRNO; e++)
			errs[e] += w->errnos[e];
		for (e = 0; e < 5; e++)
			status[e] += w->job_status[e];
		for (e = 0; e < NUM_OPS; e++)
			per_op[e] += w->per_op[e];
	}

	printf("# calls: %llu in %.1f s = %.0f calls/s (%d workers)\n", calls,
	       (t1 - t0) / 1e9, calls / ((t1 - t0) / 1e9), started);
	printf("# results: success %llu", ok);
	for (i = 1; i < MAX_ERRNO; i++)
		if (errs[i])
			printf(", %s %llu", strerrorname_np(i) ? strerrorname_np(i) : "?", errs[i]);
	if (errs[0])
		printf(", other %llu", errs[0]);
	printf("\n# jobs: %llu submitted, %llu waited: OK %llu ERROR %llu FAULT %llu "
	       "TIMEOUT %llu ABORTED %llu\n", submits, waited, status[0], status[1], status[2],
	       status[3], status[4]);
	printf("# faults provoked (contexts faulted): %llu, files opened: %llu\n", faults,
	       reopens);
	printf("# operations:");
	for (i = 0; i < NUM_OPS; i++)
		printf(" %s=%llu", op_names[i], per_op[i]);
	printf("\n");
	if (coll) {
		const struct coll_stats *cs = &shm->coll;

		printf("# collectives: %llu rounds (%llu skipped); ranks: %llu late, %llu never "
		       "submitted, %llu killed with the job in flight, %llu with failing memory "
		       "(%llu of them late), %llu refused commands; %llu rounds of ranks that "
		       "disagree\n", cs->rounds, cs->skipped, cs->late, cs->never, cs->killed,
		       cs->faulty, cs->late_faulty, cs->bad, cs->odd);
		printf("# collective jobs: %llu waited (%llu through user queues): OK %llu "
		       "FABRIC_TIMEOUT %llu FAULT %llu BAD_CMD %llu FABRIC_LINK %llu ABORTED %llu "
		       "other %llu; %llu results exact (%.1f MiB); slowest %lld ms; %llu rounds saw "
		       "a device reset\n", cs->jobs, cs->uq_jobs, cs->st_ok, cs->st_timeout,
		       cs->st_fault, cs->st_badcmd, cs->st_link, cs->st_aborted, cs->st_other,
		       cs->checked, cs->checked_bytes / (double)MIB, cs->slowest_ms,
		       cs->resets_seen);
	}

	tap++;
	if (clean == started && done == started && started == wanted) {
		printf("ok %d - workers: %d started, %d finished%s\n", tap, started, clean,
		       coll ? " (the collective worker one of them)" : "");
	} else {
		printf("not ok %d - workers: %d wanted, %d started, %d finished cleanly of %d\n",
		       tap, wanted, started, clean, done);
		failed++;
	}
	tap++;
	if (!viol) {
		printf("ok %d - no invariant violations in %llu calls\n", tap, calls);
	} else {
		printf("not ok %d - %llu invariant violations (seed %llu)\n", tap, viol, opt_seed);
		failed++;
	}

	/* The device still runs a job, on every node. */
	for (i = 0; i < nodes.n; i++) {
		tap++;
		if (!device_runs_a_job(i, why, sizeof(why))) {
			printf("ok %d - %s still runs a job (FILL + copy checked)\n", tap,
			       nodes.path[i]);
		} else {
			printf("not ok %d - %s does not run a job: %s\n", tap, nodes.path[i], why);
			failed++;
		}
	}

	/*
	 * The ring still runs a collective exactly, with no reset in between: the
	 * worker's communicator, whose next collective drops what its earlier
	 * ones left held, or with --coll-abandoned a new one.
	 */
	if (coll && opt_coll_abandoned) {
		shm->coll.comm = (shm->coll.comm ^ 0x40000000u) | 1;
		shm->coll.next_seq = 0;
		tap++;
		if (!coll_abandon(shm->coll.comm ^ 0x20000000u, why, sizeof(why))) {
			printf("ok %d - collectives: rank 0 of comm %#x submitted alone\n", tap,
			       shm->coll.comm ^ 0x20000000u);
		} else {
			printf("not ok %d - collectives: rank 0 of a comm alone: %s\n", tap, why);
			failed++;
		}
	}
	for (j = 0; coll && j < 2; j++) {
		static const uint64_t count[2] = { 1000, 1000003 };
		unsigned long long v0 = st->violations;
		uint32_t comm = shm->coll.comm ? shm->coll.comm : 0x5eed0001u;
		uint32_t seq = shm->coll.next_seq + (uint32_t)j;
		int ring_n = fab.n;

		int64_t t = mono_ns();

		snprintf(why, sizeof(why), "a VIOLATION above");
		tap++;
		if (!coll_final(count[j], comm, seq, why, sizeof(why)) && st->violations == v0) {
			printf("ok %d - collectives: after the run, an all-reduce of %llu FP32 on "
			       "the ring of %d devices equals the CPU's sums (comm %#x seq %u, "
			       "%.1f s)\n", tap, (unsigned long long)count[j], ring_n, comm, seq,
			       (mono_ns() - t) / 1e9);
		} else {
			printf("not ok %d - collectives: an all-reduce of %llu FP32 after the run: "
			       "%s\n", tap, (unsigned long long)count[j], why);
			failed++;
		}
	}

	/* Memory back at its starting values, freeing may be deferred. */
	for (i = 0; i < nodes.n; i++) {
		int64_t end = mono_ns() + 15000000000ll;

		for (;;) {
			hbm1[i] = dev_attr(i, "hbm_used_bytes");
			pin1[i] = dev_attr(i, "host_pinned_bytes");
			if ((hbm1[i] == hbm0[i] && pin1[i] == pin0[i]) || mono_ns() > end)
				break;
			usleep(50000);
		}
		reset1[i] = dev_attr(i, "reset_count");
		tap++;
		if (hbm1[i] == hbm0[i]) {
			printf("ok %d - %s hbm_used_bytes back to %lld\n", tap, nodes.path[i],
			       hbm0[i]);
		} else {
			printf("not ok %d - %s hbm_used_bytes %lld, was %lld\n", tap,
			       nodes.path[i], hbm1[i], hbm0[i]);
			failed++;
		}
		tap++;
		if (pin1[i] == pin0[i]) {
			printf("ok %d - %s host_pinned_bytes back to %lld\n", tap, nodes.path[i],
			       pin0[i]);
		} else {
			printf("not ok %d - %s host_pinned_bytes %lld, was %lld\n", tap,
			       nodes.path[i], pin1[i], pin0[i]);
			failed++;
		}
		printf("# %s: device resets during the run: %lld (largest a file saw: %llu)\n",
		       nodes.path[i], reset1[i] - reset0[i], max_resets);
	}

	tap++;
	if (kmsg_fd < 0) {
		printf("not ok %d - kernel log: /dev/kmsg: %s\n", tap, strerror(errno));
		failed++;
	} else {
		int records, bad = kmsg_scan(kmsg_fd, &records);

		if (!bad) {
			printf("ok %d - kernel log clean (%d records since the start)\n", tap,
			       records);
		} else {
			printf("not ok %d - kernel log: %d BUG/WARNING/Oops records\n", tap, bad);
			failed++;
		}
	}
	printf("1..%d\n", tap);
	viol += st->violations;
	if (failed)
		printf("# FAILED: seed %llu (rerun: maia_ioctl_fuzz --seed %llu --calls %llu "
		       "--procs %u --seconds %u)\n", opt_seed, opt_seed, opt_calls, opt_procs,
		       opt_seconds);
	return failed ? 1 : 0;
}
