// SPDX-License-Identifier: MIT
/*
 * maia-cluster: one rank of a Maia fabric cluster, started by mpirun.
 *
 *   mpirun -np N maia-cluster [--link KIND[,KIND...]|mixed] [--host-addr ADDR]
 *          [--ids K] [--timeout SEC] [--memory SIZE] [--device-opts OPTS]
 *          [--kill-rank R --kill-on TEXT] [--fail-on TEXT] [--qemu-arg ARG]...
 *          [--module-args ARGS]
 *          -- GUEST-COMMAND [ARGS...]
 *
 * Each rank boots ONE QEMU with one maia device through qemu/run-guest and
 * cables it into a ring with its neighbours' QEMUs: fabric0 listens at this
 * rank's own address and carries the cable to rank r+1's fabric1; fabric1
 * connects to rank r-1's address (the ring convention of libmaia's
 * communicators: port 0 to the next rank, port 1 from the previous).
 *
 *  - Rank 0 makes one communicator id (maia_comm_get_unique_id) and
 *    MPI_Bcasts it; id g is maia_comm_id_derive(that id, g), the same on
 *    every rank. They reach the guest on its command line: {idG} (any G)
 *    and {ids} (ids 0..K-1, comma-separated) in GUEST-COMMAND's arguments
 *    are replaced, as are {rank} and {nranks}. Id g is for the g-th
 *    communicator the ranks form; after a failure the survivors take the
 *    next one, which needs no message between them; a guest program can
 *    derive more from {id0} itself (Documentation/cluster.rst).
 *  - Cable k runs from rank k's port 0 to rank k+1's port 1 (rank k
 *    "listens for" it); --link is a comma-separated list of KINDs, and
 *    cable k is of kind entry k mod the list's length (default unix).
 *    Every rank picks the addresses of its cable ends and they
 *    MPI_Allgather them:
 *    unix: a socket in a per-job directory under /tmp (one machine);
 *    tcp: a free TCP port on --host-addr (default 127.0.0.1; "auto" is the
 *    address this host's name resolves to, for --host/hostfile runs);
 *    dgram: a unix datagram socket per cable end in that directory, a link
 *    that keeps no order or delivery promise, so the device's own
 *    retransmission must do the work; udp: the same over a free UDP port
 *    per cable end on --host-addr. A rank with a udp cable end gets the
 *    device property fabric-window=2 (a UDP socket drops what does not fit
 *    its buffer: see Documentation/cluster.rst).
 *    mixed is unix,tcp: the cable an even rank listens for is unix, an odd
 *    rank's TCP, so that one ring runs both stream transports (one machine).
 *    shm: a shared-memory cable (the device's fabricN-shm on a
 *    memory-backend-file in /dev/shm named after the job directory; one
 *    machine), no socket and no net layer.
 *  - Barriers: each QEMU gets a virtio-serial port "maia.cluster" on a
 *    unix socket in the job directory. A guest writes "ready" on it
 *    (maia-cluster-sync) and gets "go" once every rank's guest has asked
 *    too or has ended: one MPI_Allreduce round per barrier, which a rank
 *    whose guest ended joins at once. The first one is the start: without
 *    it a rank could start a collective while a slower peer's driver still
 *    resets its device, which takes the links down.
 *  - The guest's output comes back on stdout, each line prefixed with
 *    "[rank R]". With --kill-rank R --kill-on TEXT, rank R kills its QEMU
 *    (SIGKILL, from its -pidfile) when its guest prints a line holding TEXT;
 *    with --fail-on TEXT, every other rank notes when its guest first prints
 *    such a line, and rank 0 reports how long after the kill that was.
 *
 * Everything is bounded: each QEMU runs under run-guest's --timeout, and
 * the launcher only waits for its child. Exit status: the largest of the
 * ranks' guest statuses (a rank that killed its QEMU as asked counts 0).
 *
 * Stopping: mpirun stops its ranks with SIGTERM (SIGINT, SIGHUP), and one
 * second later SIGKILL. Its QEMU is no child of the launcher (run-guest runs
 * it under timeout(1), in a process group of its own), so neither reaches
 * it. On SIGTERM, SIGINT or SIGHUP the launcher sends the signal on to its
 * QEMU and run-guest, reaps them, removes its files and dies of the signal,
 * with no MPI call. For SIGKILL, a guard process forked beside run-guest
 * waits on a pipe only the launcher holds open: when that pipe ends without
 * the launcher's word that everything is over, the guard stops the QEMU
 * (SIGTERM, SIGKILL if it lingers) and removes the rank's files.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libmaia.h"

#define MAX_IDS		64		/* in {ids}; {idG} takes any G */
#define ADDR_LEN	160
#define ARG_LEN		512

enum link_kind { LINK_UNIX, LINK_TCP, LINK_DGRAM, LINK_UDP, LINK_SHM };

static const char *const link_names[] = { "unix", "tcp", "dgram", "udp", "shm" };

#define MAX_LINKS	16		/* entries of a --link list */

static struct {
	enum link_kind links[MAX_LINKS];	/* --link: cable k is links[k % nlinks] */
	int nlinks;
	const char *link_arg;		/* --link as given */
	const char *host_addr;
	int ids;
	int timeout;
	const char *memory;
	const char *device_opts;
	int kill_rank;
	const char *kill_on;
	const char *fail_on;
	const char *run_guest;
	const char *module_args;	/* maia.ko parameters (run-guest --module-args) */
	const char *qemu_args[16];	/* --qemu-arg, {rank} replaced */
	int nqemu_args;
} opt = {
	.links = { LINK_UNIX }, .nlinks = 1, .link_arg = "unix",
	.host_addr = "127.0.0.1", .ids = 4, .timeout = 240,
	.memory = "1G", .kill_rank = -1,
};

/*
 * What every rank publishes: where its cable ends listen. port[0] and
 * path belong to the cable this rank listens for (its port 0's), port[1]
 * to its port 1's end of the cable from the previous rank (udp only).
 */
struct rank_addr {
	char node[64];		/* this host's name, for the cabling lines */
	char host[64];
	char path[ADDR_LEN];	/* unix: fabric0's socket; dgram: the prefix of two */
	int port[2];		/* tcp: port[0]; udp: one UDP port per fabric port */
};

/* What rank 0 gathers at the end. */
struct rank_result {
	int status;
	int killed;		/* this rank killed its QEMU */
	double kill_time;	/* CLOCK_REALTIME, s */
	double fail_time;	/* first --fail-on line, s; 0: none */
};

static int rank, nranks;

/* This rank's files (unlinked at the end, by the guard, or on a signal); "": none. */
static struct {
	char dir[64];			/* the job directory (removed once empty) */
	char pidfile[ADDR_LEN];		/* QEMU's -pidfile */
	char ctl[ADDR_LEN];		/* the barrier port's socket */
	char sock[ADDR_LEN];		/* fabric0's unix socket */
	char shm[ADDR_LEN];		/* the shared-memory cable this rank listens for */
	char dgram[2][ADDR_LEN + 4];	/* the unix datagram sockets of its cable ends */
} files;

/*
 * Stopping on a signal (the file's head comment). Written by on_stop() and
 * by the main flow; pids are ints, so sig_atomic_t holds them.
 */
static volatile sig_atomic_t stop_sig;	/* the signal that said stop; 0: none */
static volatile sig_atomic_t qemu_pid;	/* from its pidfile; 0: not known, or gone */
static volatile sig_atomic_t guest_pid;	/* run-guest, our child; 0: not running */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "maia-cluster: rank %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A port nobody listens on now: bind port 0 and ask which one we got. */
static int free_port(const char *host, int type)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, port;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("--host-addr %s is not an IPv4 address", host);
	fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len))
		die("cannot bind %s: %s", host, strerror(errno));
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* --host-addr auto: the IPv4 address this host's name resolves to. */
static void resolve_host(char *out, size_t size)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char name[HOST_NAME_MAX + 1];

	if (strcmp(opt.host_addr, "auto")) {
		snprintf(out, size, "%s", opt.host_addr);
		return;
	}
	if (gethostname(name, sizeof(name)) || getaddrinfo(name, NULL, &hints, &ai))
		die("cannot resolve this host's name for --host-addr auto");
	inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, out, (socklen_t)size);
	freeaddrinfo(ai);
}

/* The kind of cable k, the one from rank k's port 0 to rank k+1's port 1. */
static enum link_kind cable_kind(int k)
{
	return opt.links[k % opt.nlinks];
}

/* -netdev stream options of one cable end: the rank at `at` listens for it. */
static void stream_end(char *nd, const char *id, const struct rank_addr *at, int at_rank,
		       bool server)
{
	if (cable_kind(at_rank) == LINK_TCP)
		snprintf(nd, ARG_LEN, "stream,id=%s,server=%s,addr.type=inet,addr.host=%s,"
			 "addr.port=%d%s", id, server ? "on" : "off", at->host, at->port[0],
			 server ? "" : ",reconnect-ms=100");
	else
		snprintf(nd, ARG_LEN, "stream,id=%s,server=%s,addr.type=unix,addr.path=%s%s", id,
			 server ? "on" : "off", at->path, server ? "" : ",reconnect-ms=100");
}

/*
 * -netdev dgram options of this rank's port `port` (0 or 1): its own end
 * (DIR/rankR.sock.pP, or UDP port[P] on its host) to the peer's other port's.
 */
static void dgram_end(char *nd, unsigned int port, enum link_kind kind,
		      const struct rank_addr *me, const struct rank_addr *peer)
{
	unsigned int other = 1 - port;

	if (kind == LINK_UDP)
		snprintf(nd, ARG_LEN, "dgram,id=fab%u,local.type=inet,local.host=%s,"
			 "local.port=%d,remote.type=inet,remote.host=%s,remote.port=%d",
			 port, me->host, me->port[port], peer->host, peer->port[other]);
	else
		snprintf(nd, ARG_LEN, "dgram,id=fab%u,local.type=unix,local.path=%s.p%u,"
			 "remote.type=unix,remote.path=%s.p%u", port, me->path, port, peer->path,
			 other);
}

/* The shared file of cable k (shm): in /dev/shm, named after the job directory. */
static void shm_path(char *path, size_t len, const char *dir, int k)
{
	const char *base = strrchr(dir, '/');

	snprintf(path, len, "/dev/shm/%s-cable%d", base ? base + 1 : dir, k);
}

/* -object options of this rank's port `port` on shared-memory cable k. */
static void shm_end(char *nd, unsigned int port, const char *dir, int k)
{
	char path[ADDR_LEN];

	shm_path(path, sizeof(path), dir, k);
	snprintf(nd, ARG_LEN, "memory-backend-file,id=fab%u,mem-path=%s,size=16M,share=on",
		 port, path);
}

/*
 * The -netdev options of this rank's two cable ends: cable rank, then cable
 * rank-1 (-object options of a memory backend for an shm cable).
 */
static void netdevs(const struct rank_addr *all, const char *dir, char nd[2][ARG_LEN])
{
	int prank = (rank + nranks - 1) % nranks;
	const struct rank_addr *me = &all[rank];

	if (cable_kind(rank) == LINK_SHM)
		shm_end(nd[0], 0, dir, rank);
	else if (cable_kind(rank) == LINK_UNIX || cable_kind(rank) == LINK_TCP)
		stream_end(nd[0], "fab0", me, rank, true);
	else
		dgram_end(nd[0], 0, cable_kind(rank), me, &all[(rank + 1) % nranks]);
	if (cable_kind(prank) == LINK_SHM)
		shm_end(nd[1], 1, dir, prank);
	else if (cable_kind(prank) == LINK_UNIX || cable_kind(prank) == LINK_TCP)
		stream_end(nd[1], "fab1", &all[prank], prank, false);
	else
		dgram_end(nd[1], 1, cable_kind(prank), me, &all[prank]);
}

/* --link: "mixed", or KIND[,KIND...]. */
static void parse_links(const char *arg)
{
	char *list, *save = NULL, *t;
	size_t k;

	opt.link_arg = arg;
	if (!strcmp(arg, "mixed"))
		arg = "unix,tcp";
	list = strdup(arg);
	if (!list)
		die("out of memory");
	opt.nlinks = 0;
	for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < sizeof(link_names) / sizeof(link_names[0]); k++)
			if (!strcmp(t, link_names[k]))
				break;
		if (k == sizeof(link_names) / sizeof(link_names[0]))
			die("--link %s: '%s' is not unix, tcp, dgram, udp or shm (or the whole of "
			    "mixed)", opt.link_arg, t);
		if (opt.nlinks == MAX_LINKS)
			die("--link %s: at most %d entries", opt.link_arg, MAX_LINKS);
		opt.links[opt.nlinks++] = (enum link_kind)k;
	}
	free(list);
	if (!opt.nlinks)
		die("--link %s: no link kind", opt.link_arg);
}

/* Id g of the job (maia_comm_id_derive of the base), in hex. */
static void id_hex(const struct maia_comm_id *base, long g, char *hex)
{
	struct maia_comm_id id;
	int i;

	if (maia_comm_id_derive(base, (uint32_t)g, &id))
		die("%s", maia_last_error());
	for (i = 0; i < MAIA_COMM_ID_BYTES; i++)
		sprintf(&hex[2 * i], "%02x", id.bytes[i]);
}

/* @in with {rank}, {nranks}, {idG} and {ids} replaced. */
static char *substitute(const char *in, const struct maia_comm_id *base)
{
	size_t braces = 0, cap;
	const char *p;
	char *out, *o;
	int g;

	for (p = in; *p; p++)
		braces += *p == '{';
	/* Each {...} grows to at most all the ids. */
	cap = strlen(in) + 1 + braces * ((size_t)opt.ids * (2 * MAIA_COMM_ID_BYTES + 1) + 16);
	out = o = malloc(cap);
	if (!out)
		die("out of memory");
	while (*in) {
		if (!strncmp(in, "{rank}", 6)) {
			o += sprintf(o, "%d", rank);
			in += 6;
		} else if (!strncmp(in, "{nranks}", 8)) {
			o += sprintf(o, "%d", nranks);
			in += 8;
		} else if (!strncmp(in, "{ids}", 5)) {
			for (g = 0; g < opt.ids; g++) {
				if (g)
					*o++ = ',';
				id_hex(base, g, o);
				o += 2 * MAIA_COMM_ID_BYTES;
			}
			in += 5;
		} else if (!strncmp(in, "{id", 3) && in[3] >= '0' && in[3] <= '9') {
			char *end;
			long gi = strtol(in + 3, &end, 10);

			if (*end != '}' || gi > UINT32_MAX)
				die("%s: not {idG} with G a number", in);
			id_hex(base, gi, o);
			o += 2 * MAIA_COMM_ID_BYTES;
			in = end + 1;
		} else {
			*o++ = *in++;
		}
	}
	*o = '\0';
	return out;
}

static pid_t read_pidfile(const char *path)
{
	FILE *f = fopen(path, "re");
	long pid = 0;

	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return (pid_t)pid;
}

/*
 * Whether pid is still one of this rank's processes: run-guest, timeout or
 * QEMU, each of which has our pidfile's path as an argument (a pid that
 * ended and was reused has not). Only open/read/close: the guard, a forked
 * copy of a threaded process, calls it too.
 */
static bool ours(pid_t pid)
{
	static char buf[65536];		/* the whole command line; QEMU's is long */
	char path[32] = "/proc/", digits[16];
	size_t have = 0, i, at;
	int fd, nd = 0;
	ssize_t n;
	pid_t p;

	if (pid <= 0)
		return false;
	for (p = pid; p && nd < 15; p /= 10)
		digits[nd++] = (char)('0' + p % 10);
	for (at = 6; nd; )
		path[at++] = digits[--nd];
	memcpy(path + at, "/cmdline", 9);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (have < sizeof(buf) - 1 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)n;
	close(fd);
	buf[have] = '\0';
	for (i = 0; i < have; i += strlen(buf + i) + 1)	/* NUL-separated arguments */
		if (!strcmp(buf + i, files.pidfile))
			return true;
	return false;	/* a zombie's is empty: gone too */
}

/* The pid in QEMU's pidfile, if it is one of ours; 0 otherwise. */
static pid_t qemu_of_pidfile(void)
{
	char buf[32];
	long pid = 0;
	ssize_t n, i;
	int fd = open(files.pidfile, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		pid = pid * 10 + (buf[i] - '0');
	return pid > 0 && pid < INT_MAX && ours((pid_t)pid) ? (pid_t)pid : 0;
}

static void remove_files(void)
{
	const char *all[] = { files.pidfile, files.ctl, files.sock, files.shm, files.dgram[0],
			      files.dgram[1] };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i][0])
			unlink(all[i]);
}

/* SIGTERM, SIGINT, SIGHUP: pass it on; the main flow reaps and cleans up. */
static void on_stop(int sig)
{
	int saved = errno;

	stop_sig = sig;
	if (qemu_pid > 0)
		kill((pid_t)qemu_pid, sig);
	/* its trap ends it once QEMU is gone, and removes its own files */
	if (guest_pid > 0)
		kill((pid_t)guest_pid, SIGTERM);
	errno = saved;
}

static void catch_stop_signals(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa = { .sa_handler = on_stop };	/* no SA_RESTART: poll wakes */
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static void nap_100ms(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/*
 * The guard: a forked copy of the launcher, so only async-signal-safe calls.
 * It reads run-guest's pid from the pipe, then waits: one more byte says the
 * launcher ended everything itself; the pipe's end without it says the
 * launcher died. Then it stops QEMU (SIGTERM, SIGKILL after 10 s) and
 * run-guest (SIGTERM: its trap waits for QEMU), for at most 30 s, and
 * removes this rank's files.
 */
static void __attribute__((noreturn)) guard(int rfd)
{
	unsigned char buf[16];
	size_t have = 0;
	pid_t guest = 0, qemu = 0;
	int i, null, qterm = -1;	/* qterm: the round QEMU got SIGTERM */
	ssize_t n;

	/* Out of mpirun's way: its signals, the rank's output and its sockets. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	setpgid(0, 0);
	null = open("/dev/null", O_RDWR);
	for (i = 0; i < 3 && null >= 0; i++)
		dup2(null, i);
	if (rfd > 3)
		close_range(3, (unsigned int)rfd - 1, 0);
	close_range((unsigned int)rfd + 1, ~0u, 0);

	for (;;) {
		n = read(rfd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have > sizeof(pid_t))
			_exit(0);	/* the launcher's word: all is over */
	}
	if (have >= sizeof(pid_t))
		memcpy(&guest, buf, sizeof(guest));
	for (i = 0; i < 300; i++) {
		bool left = false;

		if (!qemu)
			qemu = qemu_of_pidfile();	/* it may start after we came here */
		if (qemu && ours(qemu)) {
			left = true;
			if (qterm < 0) {
				kill(qemu, SIGTERM);
				qterm = i;
			} else if (i - qterm == 100) {
				kill(qemu, SIGKILL);
			}
		}
		if (guest && ours(guest)) {
			left = true;
			if (i == 0)
				kill(guest, SIGTERM);
		}
		if (!left)
			break;
		nap_100ms();
	}
	remove_files();
	rmdir(files.dir);	/* once the host's last rank has removed its files */
	_exit(0);
}

/* Forks the guard; returns the pipe's write end, which only we hold. */
static int start_guard(pid_t *pid)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	*pid = fork();
	if (*pid < 0)
		die("fork: %s", strerror(errno));
	if (*pid == 0) {
		close(fds[1]);
		guard(fds[0]);
	}
	setpgid(*pid, *pid);	/* as the guard does: whichever runs first */
	close(fds[0]);
	return fds[1];
}

/* A connection to the QEMU's control port socket, or -1 while it is not there yet. */
static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sa.sun_path))
		die("%s: too long for a unix socket", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * Act on --kill-on / --fail-on in guest output @text (a line, or the start
 * of one: run-guest holds a line's newline back until the next line comes,
 * so a guest that then waits would never have its line seen whole).
 */
static void guest_events(const char *text, const char *pidfile, struct rank_result *res)
{
	bool killer = rank == opt.kill_rank && opt.kill_on;

	if (killer && !res->killed && strstr(text, opt.kill_on)) {
		pid_t qemu = read_pidfile(pidfile);

		if (qemu > 0 && kill(qemu, SIGKILL) == 0) {
			res->killed = 1;
			res->kill_time = now_real();
			printf("[rank %d] maia-cluster: killed QEMU (pid %d)\n", rank, qemu);
		} else {
			printf("[rank %d] maia-cluster: could not kill QEMU\n", rank);
		}
		fflush(stdout);
	}
	if (!killer && opt.fail_on && !res->fail_time && strstr(text, opt.fail_on))
		res->fail_time = now_real();
}

/* One whole line of guest output: echo it. */
static void guest_line(const char *line, const char *pidfile, struct rank_result *res)
{
	guest_events(line, pidfile, res);
	printf("[rank %d] %s\n", rank, line);
	fflush(stdout);
}

/*
 * One barrier round: @ended is 1 when this rank's guest has ended. Returns
 * 1 when every rank's guest has ended (no more rounds will come).
 */
static int barrier_round(int ended)
{
	int all_ended;

	MPI_Allreduce(&ended, &all_ended, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	return all_ended;
}

/*
 * Run run-guest with @argv, copy its output with a rank prefix, serve the
 * barriers on @ctl_path, kill its QEMU on --kill-on; fill @res. Once the
 * guest has ended, keep joining rounds until every guest has: the others
 * then never wait for this one past its QEMU's timeout.
 */
/*
 * Told to stop (on_stop()): say so once, stop QEMU if on_stop() could not
 * (its pidfile came later), and SIGKILL it if it is still there 10 s on.
 */
static void stop_step(pid_t child)
{
	static struct timespec since;
	static bool said, killed;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!qemu_pid) {
		qemu_pid = qemu_of_pidfile();
		if (qemu_pid)
			kill((pid_t)qemu_pid, (int)stop_sig);
	}
	if (!said) {
		said = true;
		since = now;
		printf("[rank %d] maia-cluster: signal %d: stopping QEMU (pid %d)\n", rank,
		       (int)stop_sig, (int)qemu_pid);
		fflush(stdout);
		kill(child, SIGTERM);
	}
	if (!killed && qemu_pid && now.tv_sec - since.tv_sec >= 10 && ours((pid_t)qemu_pid)) {
		killed = true;
		kill((pid_t)qemu_pid, SIGKILL);
	}
}

static void run_guest(char **argv, const char *pidfile, const char *ctl_path, int guard_fd,
		      struct rank_result *res)
{
	char out[8192], ctl[256];
	size_t out_len = 0, ctl_len = 0;
	int fds[2], wstatus, ctl_fd = -1;
	bool out_open = true;
	pid_t child;

	if (stop_sig)
		return;		/* told to stop before it started */
	if (pipe2(fds, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (child == 0) {
		/* Its own group: mpirun's SIGKILL of ours would leave its files. */
		setpgid(0, 0);
		dup2(fds[1], STDOUT_FILENO);
		execv(argv[0], argv);
		fprintf(stderr, "maia-cluster: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(child, child);
	guest_pid = child;
	if (write(guard_fd, &child, sizeof(child)) != sizeof(child))
		die("cannot tell the guard: %s", strerror(errno));
	close(fds[1]);
	while (out_open) {
		struct pollfd pfd[2] = { { .fd = fds[0], .events = POLLIN },
					 { .fd = ctl_fd, .events = POLLIN } };
		ssize_t n;
		char *nl;

		if (!qemu_pid)
			qemu_pid = qemu_of_pidfile();
		if (stop_sig)
			stop_step(child);
		if (ctl_fd == -1)
			ctl_fd = ctl_connect(ctl_path);
		pfd[1].fd = ctl_fd;
		/* Until QEMU made its socket, and while it stops, look again every 100 ms. */
		if (poll(pfd, 2, ctl_fd == -1 || stop_sig ? 100 : -1) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (pfd[0].revents) {
			n = read(fds[0], out + out_len, sizeof(out) - 1 - out_len);
			if (n <= 0) {
				out_open = false;
				n = 0;
			}
			out_len += (size_t)n;
			out[out_len] = '\0';
			while ((nl = strchr(out, '\n')) || (out_len == sizeof(out) - 1) ||
			       (!out_open && out_len)) {
				size_t used = nl ? (size_t)(nl - out) + 1 : out_len;

				if (nl)
					*nl = '\0';
				guest_line(out, pidfile, res);
				memmove(out, out + used, out_len - used);
				out_len -= used;
				out[out_len] = '\0';
			}
			if (out_len)
				guest_events(out, pidfile, res);
		}
		if (ctl_fd >= 0 && pfd[1].revents) {
			char *req;

			n = read(ctl_fd, ctl + ctl_len, sizeof(ctl) - 1 - ctl_len);
			if (n <= 0) {
				close(ctl_fd);
				ctl_fd = -2;	/* QEMU went away: do not reconnect */
				continue;
			}
			ctl_len += (size_t)n;
			ctl[ctl_len] = '\0';
			while (!stop_sig && (req = strstr(ctl, "ready\n"))) {
				barrier_round(0);
				if (write(ctl_fd, "go\n", 3) != 3)
					printf("[rank %d] maia-cluster: cannot answer the guest\n", rank);
				req += 6;
				ctl_len -= (size_t)(req - ctl);
				memmove(ctl, req, ctl_len + 1);
			}
			if (ctl_len == sizeof(ctl) - 1)
				ctl_len = 0;
		}
	}
	if (ctl_fd >= 0)
		close(ctl_fd);
	close(fds[0]);
	while (!stop_sig && !barrier_round(1))
		;	/* the others' barriers, until every guest has ended */
	while (waitpid(child, &wstatus, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	guest_pid = 0;
	qemu_pid = 0;	/* run-guest ends after its QEMU */
	res->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	if (res->killed)
		res->status = 0;	/* its guest never finished: as planned */
	else if (rank == opt.kill_rank && opt.kill_on)
		res->status = res->status ? res->status : 1;	/* the kill never happened */
}

/* The run-guest beside this binary's source tree (build/cluster/ -> qemu/). */
static const char *default_run_guest(void)
{
	static char path[PATH_MAX + 32];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	int i;

	if (n <= 0)
		die("cannot find myself");
	self[n] = '\0';
	for (i = 0; i < 3; i++) {	/* strip /maia-cluster, /cluster, /build */
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
	}
	snprintf(path, sizeof(path), "%s/qemu/run-guest", self);
	return path;
}

static void usage(void)
{
	fprintf(stderr, "usage: mpirun -np N maia-cluster [--link KIND[,KIND...]|mixed] "
		"[--host-addr ADDR|auto]\n"
		"       (KIND: unix, tcp, dgram, udp or shm; cable k, from rank k, is entry k mod the\n"
		"       list's length; mixed is unix,tcp)\n"
		"       [--ids K] [--timeout SEC] [--memory SIZE] [--device-opts OPTS]\n"
		"       [--kill-rank R --kill-on TEXT] [--fail-on TEXT] [--run-guest PATH]\n"
		"       [--qemu-arg ARG]... [--module-args ARGS]\n"
		"       -- GUEST-COMMAND [ARGS...]   ({rank} {nranks} {idG} {ids} replaced)\n");
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "link", required_argument, NULL, 'l' },
		{ "host-addr", required_argument, NULL, 'H' },
		{ "ids", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "memory", required_argument, NULL, 'm' },
		{ "device-opts", required_argument, NULL, 'd' },
		{ "kill-rank", required_argument, NULL, 'k' },
		{ "kill-on", required_argument, NULL, 'K' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "run-guest", required_argument, NULL, 'r' },
		{ "qemu-arg", required_argument, NULL, 'q' },
		{ "module-args", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': parse_links(optarg); break;
		case 'H': opt.host_addr = optarg; break;
		case 'i': opt.ids = atoi(optarg); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'm': opt.memory = optarg; break;
		case 'd': opt.device_opts = optarg; break;
		case 'k': opt.kill_rank = atoi(optarg); break;
		case 'K': opt.kill_on = optarg; break;
		case 'f': opt.fail_on = optarg; break;
		case 'r': opt.run_guest = optarg; break;
		case 'M': opt.module_args = optarg; break;
		case 'q':
			if (opt.nqemu_args == 16)
				die("at most 16 --qemu-arg");
			opt.qemu_args[opt.nqemu_args++] = optarg;
			break;
		default:
			usage();
			MPI_Finalize();
			exit(c == 'h' ? 0 : 2);
		}
	}
	if (optind >= argc || opt.ids < 1 || opt.ids > MAX_IDS || opt.timeout < 1) {
		usage();
		MPI_Finalize();
		exit(2);
	}
	if (!opt.run_guest)
		opt.run_guest = default_run_guest();
}

/* The guard's word that all is over, and its end. */
static void guard_done(int guard_fd, pid_t guard_pid)
{
	if (write(guard_fd, "d", 1) != 1)
		fprintf(stderr, "maia-cluster: rank %d: cannot tell the guard: %s\n", rank,
			strerror(errno));
	close(guard_fd);
	while (waitpid(guard_pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Stopped by a signal, QEMU and run-guest reaped: no MPI call (the other
 * ranks are being stopped too); remove the files and die of the signal.
 */
static void __attribute__((noreturn)) stopped(int guard_fd, pid_t guard_pid)
{
	int sig = (int)stop_sig;

	remove_files();
	rmdir(files.dir);	/* once the host's last rank has removed its files */
	guard_done(guard_fd, guard_pid);
	printf("[rank %d] maia-cluster: signal %d: QEMU and run-guest ended, files removed\n",
	       rank, sig);
	fflush(stdout);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

/* Rank 0's summary of the run, from every rank's result. */
static void report(const struct rank_result *all)
{
	double kill_time = 0;
	int r;

	for (r = 0; r < nranks; r++)
		if (all[r].killed)
			kill_time = all[r].kill_time;
	for (r = 0; r < nranks; r++) {
		printf("maia-cluster: rank %d: status %d", r, all[r].status);
		if (all[r].killed)
			printf(", killed its QEMU");
		else if (kill_time && all[r].fail_time)
			printf(", failure reported %.0f ms after the kill",
			       (all[r].fail_time - kill_time) * 1e3);
		else if (kill_time && opt.fail_on)
			printf(", no failure reported");
		printf("\n");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct maia_comm_id base;
	char dir[64] = "", pidfile[ADDR_LEN], nd[2][ARG_LEN], devopts[ARG_LEN], smem[32];
	char ctl_path[ADDR_LEN], ctl_dev[ARG_LEN];
	struct rank_result res = { 0 }, *results = NULL;
	struct rank_addr me = { 0 }, *all;
	char **gargv;
	int i, k, status, prank, guard_fd;
	pid_t guard_pid;
	bool udp_end;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	catch_stop_signals();
	parse_args(argc, argv);

	/* Rank 0: the ids and the job's directory; everyone gets them. */
	if (rank == 0) {
		char tmpl[] = "/tmp/maia-cluster.XXXXXX";

		if (maia_comm_get_unique_id(&base))
			die("%s", maia_last_error());
		if (!mkdtemp(tmpl))
			die("mkdtemp: %s", strerror(errno));
		snprintf(dir, sizeof(dir), "%s", tmpl);
	}
	MPI_Bcast(&base, sizeof(base), MPI_BYTE, 0, MPI_COMM_WORLD);
	MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
	if (mkdir(dir, 0700) && errno != EEXIST)	/* another host */
		die("mkdir %s: %s", dir, strerror(errno));

	/* Every rank's addresses, to all. */
	resolve_host(me.host, sizeof(me.host));
	if (gethostname(me.node, sizeof(me.node) - 1))
		snprintf(me.node, sizeof(me.node), "?");
	snprintf(me.path, sizeof(me.path), "%s/rank%d.sock", dir, rank);
	prank = (rank + nranks - 1) % nranks;
	if (cable_kind(rank) == LINK_TCP)
		me.port[0] = free_port(me.host, SOCK_STREAM);
	else if (cable_kind(rank) == LINK_UDP)
		me.port[0] = free_port(me.host, SOCK_DGRAM);
	if (cable_kind(prank) == LINK_UDP) {
		do
			me.port[1] = free_port(me.host, SOCK_DGRAM);
		while (me.port[1] == me.port[0]);
	}
	udp_end = nranks > 1 && (cable_kind(rank) == LINK_UDP || cable_kind(prank) == LINK_UDP);
	all = calloc((size_t)nranks, sizeof(*all));
	if (!all)
		die("out of memory");
	MPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, MPI_COMM_WORLD);

	/* qemu/run-guest with one device cabled into the ring. */
	snprintf(pidfile, sizeof(pidfile), "%s/qemu-rank%d.pid", dir, rank);
	snprintf(smem, sizeof(smem), "%d", opt.timeout);
	gargv = calloc((size_t)argc + 64, sizeof(*gargv));
	if (!gargv)
		die("out of memory");
	k = 0;
	gargv[k++] = (char *)opt.run_guest;
	gargv[k++] = "--no-build";
	gargv[k++] = "--devices";
	gargv[k++] = "1";
	gargv[k++] = "--smp";
	gargv[k++] = "1";
	gargv[k++] = "--memory";
	gargv[k++] = (char *)opt.memory;
	gargv[k++] = "--timeout";
	gargv[k++] = strdup(smem);
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "-pidfile";
	gargv[k++] = "--qemu-arg";
	gargv[k++] = pidfile;
	/* The start barrier's virtio-serial port (QEMU listens, we connect). */
	snprintf(ctl_path, sizeof(ctl_path), "%s/rank%d.ctl", dir, rank);
	snprintf(ctl_dev, sizeof(ctl_dev), "socket,id=mctl,path=%s,server=on,wait=off", ctl_path);
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "-device";
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "virtio-serial-pci,id=mser";
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "-chardev";
	gargv[k++] = "--qemu-arg";
	gargv[k++] = ctl_dev;
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "-device";
	gargv[k++] = "--qemu-arg";
	gargv[k++] = "virtserialport,bus=mser.0,chardev=mctl,name=maia.cluster";
	devopts[0] = '\0';
	if (nranks > 1) {
		netdevs(all, dir, nd);
		for (i = 0; i < 2; i++) {
			gargv[k++] = "--qemu-arg";
			gargv[k++] = cable_kind(i ? prank : rank) == LINK_SHM ? "-object" : "-netdev";
			gargv[k++] = "--qemu-arg";
			gargv[k++] = nd[i];
		}
		/*
		 * A UDP socket buffers about three 60 KiB frames by default
		 * (net.core.rmem_default) and drops the rest: two in flight.
		 * The window is the device's, for both ports (the credit it
		 * grants and what it sends ahead): a rank with either end of
		 * a UDP cable takes it, and its other cable runs with it too.
		 */
		snprintf(devopts, sizeof(devopts), "fabric0%s=fab0,fabric1%s=fab1%s%s%s",
			 cable_kind(rank) == LINK_SHM ? "-shm" : "",
			 cable_kind(prank) == LINK_SHM ? "-shm" : "",
			 udp_end && !(opt.device_opts &&
				      strstr(opt.device_opts, "fabric-window=")) ?
			 ",fabric-window=2" : "",
			 opt.device_opts ? "," : "", opt.device_opts ? opt.device_opts : "");
	} else if (opt.device_opts) {
		snprintf(devopts, sizeof(devopts), "%s", opt.device_opts);
	}
	for (i = 0; i < opt.nqemu_args; i++) {
		gargv[k++] = "--qemu-arg";
		gargv[k++] = substitute(opt.qemu_args[i], &base);
	}
	if (opt.module_args) {
		gargv[k++] = "--module-args";
		gargv[k++] = (char *)opt.module_args;
	}
	if (devopts[0]) {
		gargv[k++] = "--device-opts";
		gargv[k++] = devopts;
	}
	gargv[k++] = "--";
	for (i = optind; i < argc; i++)
		gargv[k++] = substitute(argv[i], &base);
	gargv[k] = NULL;
	if (rank == 0) {
		printf("maia-cluster: %d ranks, cables", nranks);
		for (i = 0; i < nranks && nranks > 1; i++)
			printf(" %d->%d %s", i, (i + 1) % nranks, link_names[cable_kind(i)]);
		printf("%s, job directory %s\n", nranks > 1 ? "" : " none", dir);
		for (i = 0; i < nranks; i++)
			printf("maia-cluster: rank %d on host %s, address %s\n", i, all[i].node,
			       all[i].host);
		fflush(stdout);
	}
	snprintf(files.dir, sizeof(files.dir), "%s", dir);
	snprintf(files.pidfile, sizeof(files.pidfile), "%s", pidfile);
	snprintf(files.ctl, sizeof(files.ctl), "%s", ctl_path);
	snprintf(files.sock, sizeof(files.sock), "%s", me.path);
	if (cable_kind(rank) == LINK_SHM)
		shm_path(files.shm, sizeof(files.shm), dir, rank);
	if (cable_kind(rank) == LINK_DGRAM || cable_kind(prank) == LINK_DGRAM)
		for (i = 0; i < 2; i++)
			snprintf(files.dgram[i], sizeof(files.dgram[i]), "%s.p%d", me.path, i);
	guard_fd = start_guard(&guard_pid);
	run_guest(gargv, pidfile, ctl_path, guard_fd, &res);
	if (stop_sig)
		stopped(guard_fd, guard_pid);

	/* Results to rank 0; everyone exits with the worst status. */
	if (rank == 0)
		results = calloc((size_t)nranks, sizeof(*results));
	MPI_Gather(&res, sizeof(res), MPI_BYTE, results, sizeof(res), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
	if (rank == 0)
		report(results);
	MPI_Allreduce(&res.status, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	remove_files();
	MPI_Barrier(MPI_COMM_WORLD);
	rmdir(dir);		/* the last rank of each host succeeds */
	guard_done(guard_fd, guard_pid);
	free(results);
	free(all);
	MPI_Finalize();
	return status;
}
