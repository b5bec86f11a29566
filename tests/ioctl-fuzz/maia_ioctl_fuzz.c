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
#include "fuzz.h"

/* --- options and shared state ------------------------------------------- */

unsigned long long opt_seed;
static unsigned long long opt_calls = 20000;
static unsigned int opt_procs = 4;
static unsigned int opt_seconds = 30;
static int opt_replay = -1;		/* run only this worker, in-process */
static bool opt_trace;
bool opt_core_warn;		/* allow the known core WARN (huge syncobj counts) */
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
unsigned int opt_coll_userq = 33;
unsigned int opt_coll_pause_ms;	/* between rounds */
#define REPLAY_COLL	(-2)		/* --replay coll */

struct shared *shm;
struct worker_stats *st;

/* --- random numbers ----------------------------------------------------- */

uint64_t rng_state;

uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rnd(void)
{
	return splitmix64(&rng_state);
}

/* Uniform in [0, n); n > 0 */
uint64_t rn(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* True with probability pct percent */
bool pct(unsigned int p)
{
	return rn(100) < p;
}

/* --- shared state ------------------------------------------------------- */

struct maia_nodes nodes;

int worker_index;
bool in_coll_worker;
uint64_t worker_seed;
unsigned long long call_no;
const char *cur_op = "";

/* --- reporting ---------------------------------------------------------- */

void trace(const char *fmt, ...)
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

void violation(const char *fmt, ...)
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

/* A worker process's start: its index, seed and statistics slot, the signals that end it. */
void worker_start(int index, uint64_t s)
{
	struct sigaction sa = { .sa_handler = on_alarm };

	worker_index = index;
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
}

bool allowed(int err, const int *list)
{
	for (; *list >= 0; list++)
		if (*list == err)
			return true;
	return false;
}

void expect(struct ctx *c, const char *what, int err, const int *list)
{
	if (c && c->unsure)
		return;
	if (!allowed(err, list))
		violation("%s: %s (%d), expected one of the documented results", what,
			  err ? strerror(err) : "success", err);
}

void count_result(int err)
{
	if (!err)
		st->ok++;
	else if (err < MAX_ERRNO)
		st->errnos[err]++;
	else
		st->errnos[0]++;
}

int64_t mono_ns(void)
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

long long dev_attr(int node, const char *name)
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
