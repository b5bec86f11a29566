// SPDX-License-Identifier: MIT
/*
 * make check's "exporter" suite: maia-exporter's HTTP server on the host, no
 * guest. The exporter reads a fake sysfs tree made here (MAIA_SYSFS_ROOT:
 * one device, accel3 at 0000:00:04.0, with a few telemetry files), listens
 * on 127.0.0.1 on a port the kernel picks (--port 0; the port is read from
 * the "serving" line it prints), and every scrape must equal its --once
 * output byte for byte. Then: scrapes while 64 idle and 64 half-sent
 * connections are held open (the held sockets must still be open and
 * unanswered afterwards: the scrapes did not wait for them); the
 * per-connection timeout closing idle connections; the connection limit;
 * a seeded fuzz of malformed requests (EXPORTER_FUZZ_SEED=N repeats one),
 * after which a scrape must still be correct; SIGTERM and SIGINT stop it.
 *
 * Nothing here asserts how long something took: every check is on what
 * the exporter sent or closed. Waits for an event have a 60 s guard that
 * only stops a hang. Traffic goes only to 127.0.0.1. Every exporter started
 * is killed at the end, on failure, and if this program dies
 * (PR_SET_PDEATHSIG).
 *
 *   test_exporter PATH-TO-maia-exporter
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define GUARD_MS	60000	/* a hang guard, never a performance bound */
#define ALARM_S		280	/* the whole program, below make's timeout 300 */
#define PCI		"0000:00:04.0"
#define SERIES		"{device=\"maia3\",pci_address=\"" PCI "\","
#define N_IDLE		64
#define N_HALF		64
#define N_SCRAPES	10
#define FUZZ_CASES	400
#define FUZZ_MS		2000
#define MAX_RESP	(1 << 20)

static const char *exporter_bin;
static char tmpdir[] = "/tmp/maia-exporter-test.XXXXXX";
static char *once_out;		/* the --once scrape every HTTP scrape must equal */
static size_t once_len;

struct exporter {
	pid_t pid;
	int port;
	char log[PATH_MAX];
	char line[256];		/* its "serving" line */
};

#define MAX_EXPORTERS 8
static volatile pid_t started[MAX_EXPORTERS];
static int nstarted;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void kill_exporters(void)
{
	for (int i = 0; i < nstarted; i++)
		if (started[i] > 0) {
			kill(started[i], SIGKILL);
			waitpid(started[i], NULL, 0);
			started[i] = 0;
		}
}

static void rm_tree(const char *dir)
{
	char cmd[PATH_MAX + 32];

	if (strncmp(dir, "/tmp/maia-exporter-test.", 24) || strchr(dir, '\''))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", dir);
}

static void cleanup(void)
{
	kill_exporters();
	rm_tree(tmpdir);
}

static void on_alarm(int sig)
{
	static const char msg[] = "not ok 999 - hang guard: the test ran for 280 s\n";

	static char *const rm_argv[] = { "rm", "-rf", tmpdir, NULL };
	pid_t rm;

	(void)sig;
	for (int i = 0; i < nstarted; i++)
		if (started[i] > 0)
			kill(started[i], SIGKILL);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	/* only async-signal-safe calls here: fork, execve, waitpid */
	rm = tmpdir[sizeof(tmpdir) - 2] != 'X' ? fork() : -1;
	if (rm == 0) {
		execve("/bin/rm", rm_argv, environ);
		_exit(127);
	}
	if (rm > 0)
		waitpid(rm, NULL, 0);
	_exit(1);
}

/* ---------- the fake sysfs tree ---------- */

static bool put_file(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static bool mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0755) && errno != EEXIST)
				return false;
			*p = c;
			if (!c)
				return true;
		}
	}
}

/*
 * What libmaia reads (userspace/lib/device.c, telemetry.c): class/accel/
 * accelN/device, a link to the PCI device whose driver link ends in "maia";
 * the PCI device's telemetry files and the first hwmon directory under it.
 */
static bool make_sysfs(const char *root)
{
	const char *dev = "bus/pci/devices/" PCI;
	char path[PATH_MAX];
	bool ok = mkdirs(root, "class/accel/accel3") && mkdirs(root, "bus/pci/drivers/maia") &&
		  mkdirs(root, "bus/pci/devices/" PCI "/hwmon/hwmon7");

	snprintf(path, sizeof(path), "%s/class/accel/accel3/device", root);
	ok = ok && !symlink("../../../bus/pci/devices/" PCI, path);
	snprintf(path, sizeof(path), "%s/%s/driver", root, dev);
	ok = ok && !symlink("../../../../bus/pci/drivers/maia", path);
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/utilization", "42\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hbm_ecc_ce_count", "7\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/topology", "2x2\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/tile_busy_time_us",
			    "1000000 2000000 3000000 4000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hwmon/hwmon7/temp1_input", "51250\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hwmon/hwmon7/power1_average",
			    "123456789\n");
	/* Modeled telemetry (telemetry 1.2): 2 s of modeled time, 4e14 flops: 200 TFLOP/s. */
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/modeled_time_ns", "2000000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/peak_time_ns", "500000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/busy_time_us", "1500000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/flops", "400000000000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hbm_bytes_read", "3000000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hbm_bytes_written", "1000000000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/hbm_utilization", "96\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/mfu", "25\n");
	/* The chip model (hardware 1.8): model/ with a few of its files. */
	ok = ok && mkdirs(root, "bus/pci/devices/" PCI "/model");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/model/name", "maia100\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/model/hbm_mbps", "1800000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/model/design_power_mw", "700000\n");
	ok = ok && put_file(root, "bus/pci/devices/" PCI "/model/peak_gflops_bf16", "800000\n");
	return ok;
}

/* A line "<metric>{device="maia3",pci_address="PCI",...} <value>" in text. */
static bool has_sample(const char *text, const char *metric, const char *value)
{
	size_t mlen = strlen(metric), slen = strlen(SERIES), vlen = strlen(value);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);

		if (len > mlen + slen + vlen + 2 && !strncmp(l, metric, mlen) &&
		    !strncmp(l + mlen, SERIES, slen) && l[len - vlen - 1] == ' ' &&
		    l[len - vlen - 2] == '}' && !strncmp(l + len - vlen, value, vlen))
			return true;
	}
	return false;
}

/* ---------- processes ---------- */

/* Runs the exporter with --once; its stdout, or NULL. */
static char *run_once(size_t *len_out)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	int fds[2], status;
	pid_t pid;

	if (!buf || pipe2(fds, O_CLOEXEC)) {
		free(buf);
		return NULL;
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		execl(exporter_bin, "maia-exporter", "--once", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r;

		if (len + 1 >= cap) {
			char *n = realloc(buf, cap *= 2);

			if (!n)
				break;
			buf = n;
		}
		r = read(fds[0], buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fds[0]);
	buf[len] = '\0';
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		free(buf);
		return NULL;
	}
	*len_out = len;
	return buf;
}

/*
 * Starts the exporter with --port 0 and args; waits (guarded) for its
 * "serving http://ADDR:PORT/metrics" line and takes the port from it.
 */
static bool start_exporter(struct exporter *e, const char *const *args)
{
	const char *argv[16] = { "maia-exporter", "--port", "0" };
	int argc = 3, fd;
	long long deadline = now_ms() + GUARD_MS;

	memset(e, 0, sizeof(*e));
	for (; *args && argc < 15; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	snprintf(e->log, sizeof(e->log), "%s/exporter%d.log", tmpdir, nstarted);
	fd = open(e->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || nstarted >= MAX_EXPORTERS)
		return false;
	e->pid = fork();
	if (e->pid == 0) {
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execv(exporter_bin, (char *const *)argv);
		_exit(127);
	}
	close(fd);
	if (e->pid < 0)
		return false;
	started[nstarted++] = e->pid;
	while (now_ms() < deadline) {
		char buf[512] = "", *p, *nl;
		FILE *f = fopen(e->log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		p = strstr(buf, "serving http://");
		nl = p ? strchr(p, '\n') : NULL;
		if (nl) {
			char *colon;

			*nl = '\0';
			snprintf(e->line, sizeof(e->line), "%s", p);
			colon = strrchr(p, ':');
			e->port = colon ? atoi(colon + 1) : 0;
			return e->port > 0;
		}
		if (waitpid(e->pid, NULL, WNOHANG) == e->pid) {
			printf("# the exporter exited at start: %s\n", buf);
			e->pid = 0;
			return false;
		}
		sleep_ms(10);
	}
	printf("# no \"serving\" line from the exporter in %d s\n", GUARD_MS / 1000);
	return false;
}

static bool alive(const struct exporter *e)
{
	return e->pid > 0 && waitpid(e->pid, NULL, WNOHANG) == 0;
}

/* Sends sig and waits (guarded) for the exit; true if it exited with status 0. */
static bool stop_exporter(struct exporter *e, int sig)
{
	long long deadline = now_ms() + GUARD_MS;
	int status;

	if (e->pid <= 0)
		return false;
	kill(e->pid, sig);
	while (now_ms() < deadline) {
		pid_t r = waitpid(e->pid, &status, WNOHANG);

		if (r == e->pid) {
			for (int i = 0; i < nstarted; i++)
				if (started[i] == e->pid)
					started[i] = 0;
			e->pid = 0;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				printf("# exporter exit status 0x%x\n", status);
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		}
		sleep_ms(10);
	}
	printf("# the exporter ignored signal %d for %d s\n", sig, GUARD_MS / 1000);
	return false;
}

/* Does /proc/net/tcp show a listener on 127.0.0.1:port (and on no other address)? */
static bool listens_on_loopback_only(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	bool loop = false, other = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned int addr, lport, state;

		if (sscanf(line, " %*u: %X:%X %*X:%*X %X", &addr, &lport, &state) != 3)
			continue;
		if (lport != (unsigned int)port || state != 0x0A)	/* TCP_LISTEN */
			continue;
		if (addr == htonl(INADDR_LOOPBACK))
			loop = true;
		else
			other = true;
	}
	fclose(f);
	return loop && !other;
}

/* ---------- HTTP client ---------- */

/*
 * A connection to 127.0.0.1:port by deadline, or -1. Sockets stay
 * non-blocking: every read and write here polls under a guard (a server
 * that accepts too slowly, its listen backlog full, cannot hang us).
 */
static int connect_by(int port, long long deadline)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t elen = sizeof(err);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		long long left = deadline - now_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) < 0) {
			if (left > 0 && errno == EINTR)
				continue;
			close(fd);
			errno = ETIMEDOUT;
			return -1;
		}
		if (pfd.revents)
			break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		close(fd);
		errno = err ? err : errno;
		return -1;
	}
	return fd;
}

static int connect_to(int port)
{
	return connect_by(port, now_ms() + GUARD_MS);
}

/* 0 sent, -1 the peer closed or reset, -2 the guard ran out. */
static int send_all(int fd, const void *data, size_t len, long long deadline)
{
	const char *p = data;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		long long left = deadline - now_ms();
		ssize_t w;

		if (left <= 0)
			return -2;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Reads until EOF (or a reset) into a malloc'ed, NUL-terminated buffer.
 * 0 at EOF, -2 if the guard ran out first.
 */
static int read_to_eof(int fd, char **out, size_t *len_out, long long deadline)
{
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap);

	*out = NULL;
	*len_out = 0;
	if (!buf)
		return -1;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t r;

		if (left <= 0) {
			buf[len] = '\0';
			*out = buf;
			*len_out = len;
			return -2;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if (len + 1 >= cap && cap < MAX_RESP) {
			char *n = realloc(buf, cap *= 2);

			if (!n)
				break;
			buf = n;
		}
		r = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			break;	/* EOF, or ECONNRESET: the end either way */
		len += (size_t)r;
		if (len + 1 >= MAX_RESP)
			break;
	}
	buf[len] = '\0';
	*out = buf;
	*len_out = len;
	return 0;
}

struct response {
	int status;		/* 0: nothing, or not HTTP */
	char *raw;
	size_t raw_len;
	const char *body;
	size_t body_len;
	bool complete;		/* Content-Length present and equal to the body's length */
};

/* The value of header name in the response head, copied to val. */
static bool header(const struct response *r, const char *name, char *val, size_t size)
{
	size_t n = strlen(name);

	for (const char *l = strstr(r->raw, "\r\n"); l && l + 2 < r->body; l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2, *end;

		if (strncasecmp(v, name, n) || v[n] != ':')
			continue;
		v += n + 1;
		while (*v == ' ')
			v++;
		end = strstr(v, "\r\n");
		if (!end)
			return false;
		snprintf(val, size, "%.*s", (int)(end - v), v);
		return true;
	}
	return false;
}

static void parse_response(struct response *r)
{
	const char *head_end = strstr(r->raw, "\r\n\r\n");
	char cl[32];
	int st;

	r->status = 0;
	r->body = NULL;
	r->complete = false;
	if (r->raw_len < 12 || strncmp(r->raw, "HTTP/1.", 7) || r->raw[8] != ' ' ||
	    sscanf(r->raw + 9, "%3d", &st) != 1 || !head_end)
		return;
	r->status = st;
	r->body = head_end + 4;
	r->body_len = r->raw_len - (size_t)(r->body - r->raw);
	if (header(r, "Content-Length", cl, sizeof(cl)))
		r->complete = strtoull(cl, NULL, 10) == r->body_len;
}

static void free_response(struct response *r)
{
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* Sends req on a new connection and reads the answer to EOF. */
static bool request(int port, const char *req, struct response *r)
{
	long long deadline = now_ms() + GUARD_MS;
	int fd = connect_to(port), rc;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return false;
	if (send_all(fd, req, strlen(req), deadline)) {
		close(fd);
		return false;
	}
	rc = read_to_eof(fd, &r->raw, &r->raw_len, deadline);
	close(fd);
	if (!r->raw)
		return false;
	parse_response(r);
	return rc == 0;
}

static const char scrape_req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				 "User-Agent: test_exporter\r\nAccept: text/plain\r\n\r\n";

/* A 200 with the exposition format's type and a body equal to the --once output. */
static bool scrape_matches(const struct response *r, char *why, size_t size)
{
	char type[128] = "";

	if (r->status != 200) {
		snprintf(why, size, "status %d: %.60s", r->status, r->raw ? r->raw : "(none)");
		return false;
	}
	if (!header(r, "Content-Type", type, sizeof(type)) ||
	    strncmp(type, "text/plain; version=0.0.4", 25)) {
		snprintf(why, size, "Content-Type '%s'", type);
		return false;
	}
	if (!r->complete) {
		snprintf(why, size, "body of %zu bytes, not its Content-Length", r->body_len);
		return false;
	}
	if (r->body_len != once_len || memcmp(r->body, once_out, once_len)) {
		snprintf(why, size, "body (%zu bytes) differs from --once (%zu bytes)",
			 r->body_len, once_len);
		return false;
	}
	return true;
}

static bool scrape_ok(int port, char *why, size_t size)
{
	struct response r;
	bool ok;

	if (!request(port, scrape_req, &r)) {
		snprintf(why, size, "no complete answer (connect, send or EOF failed)");
		free_response(&r);
		return false;
	}
	ok = scrape_matches(&r, why, size);
	free_response(&r);
	return ok;
}

/* why, as " (why)" to end a test's description, or "" */
static const char *note(const char *why)
{
	static char buf[300];

	if (!*why)
		return "";
	snprintf(buf, sizeof(buf), " (%s)", why);
	return buf;
}

/*
 * Is fd still open with nothing from the server? (A recv that would block;
 * 0 is EOF, > 0 bytes the server sent.)
 */
static bool open_and_silent(int fd)
{
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* ---------- the fuzz ---------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *data, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		size_t cap = (b->len + len + 1) * 2;
		char *n = realloc(b->p, cap);

		if (!n)
			return;
		b->p = n;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void put_fill(struct buf *b, char c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(b, &c, 1);
}

static void put_random(struct buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = (char)rnd();

		put(b, &c, 1);
	}
}

static const char *const methods[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PATCH",
	"get", "GETT", "G ET", "", "\x01\x02", "GET\0", "PRI",
};

static const char *const paths[] = {
	"/metrics", "/", "/metrics?x=1", "/metrics#frag", "/%6detrics", "/../../etc/passwd",
	"*", "http://127.0.0.1/metrics", "/metrics/", "//metrics", "/%00", "/%zz", "metrics",
	"/metrics\x7f", "",
};

static const char *const versions[] = {
	"HTTP/1.1", "HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "HTTP/1.1x", "HTTP/9.9", "http/1.1",
	"HTTP/", "", "HTTP/1.1 extra",
};

/* One malformed (or merely odd) request; the kind is recorded in *kind. */
static void make_case(struct buf *b, const char **kind)
{
	const char *m = methods[rnd_below(sizeof(methods) / sizeof(methods[0]))];
	const char *pth = paths[rnd_below(sizeof(paths) / sizeof(paths[0]))];
	const char *v = versions[rnd_below(sizeof(versions) / sizeof(versions[0]))];
	size_t cut;

	switch (rnd_below(12)) {
	case 0:
		*kind = "garbage bytes";
		put_random(b, 1 + rnd_below(4096));
		break;
	case 1:
		*kind = "odd request line";
		puts_(b, m);
		puts_(b, " ");
		puts_(b, pth);
		puts_(b, rnd_below(2) ? " " : "\t");
		puts_(b, v);
		puts_(b, rnd_below(2) ? "\r\n\r\n" : "\n\n");
		break;
	case 2:
		*kind = "huge URI";
		puts_(b, "GET /");
		put_fill(b, 'a', 1000 + rnd_below(100000));
		puts_(b, " HTTP/1.1\r\n\r\n");
		break;
	case 3:
		*kind = "overlong header";
		puts_(b, "GET /metrics HTTP/1.1\r\nX-Long: ");
		put_fill(b, 'x', 1000 + rnd_below(100000));
		puts_(b, "\r\n\r\n");
		break;
	case 4:
		*kind = "many headers";
		puts_(b, "GET /metrics HTTP/1.1\r\n");
		for (size_t i = 0, n = 10 + rnd_below(3000); i < n; i++)
			puts_(b, "X-A: b\r\n");
		puts_(b, "\r\n");
		break;
	case 5:
		*kind = "half line";
		cut = 1 + rnd_below(sizeof(scrape_req) - 2);
		put(b, scrape_req, cut);
		break;
	case 6:
		*kind = "NUL bytes";
		put(b, scrape_req, sizeof(scrape_req) - 1);
		for (size_t i = 0, n = 1 + rnd_below(4); i < n; i++)
			b->p[rnd_below(b->len)] = '\0';
		break;
	case 7:
		*kind = "pipelined junk";
		puts_(b, scrape_req);
		put_random(b, rnd_below(2048));
		if (rnd_below(2))
			puts_(b, scrape_req);
		puts_(b, "GARBAGE / HTTP/1.1\r\n\r\n");
		break;
	case 8:
		*kind = "bad header syntax";
		puts_(b, "GET /metrics HTTP/1.1\r\n");
		switch (rnd_below(6)) {
		case 0: puts_(b, "NoColon\r\n"); break;
		case 1: puts_(b, " leading: space\r\n"); break;
		case 2: puts_(b, "Bad Name: x\r\n"); break;
		case 3: puts_(b, ": empty\r\n"); break;
		case 4: puts_(b, "X: a\r\n\tfolded\r\n"); break;
		default: puts_(b, "X: \x01\x02\xff\r\n"); break;
		}
		puts_(b, "\r\n");
		break;
	case 9:
		*kind = "bad body framing";
		puts_(b, rnd_below(2) ? "POST" : "GET");
		puts_(b, " /metrics HTTP/1.1\r\n");
		switch (rnd_below(6)) {
		case 0: puts_(b, "Content-Length: -1\r\n"); break;
		case 1: puts_(b, "Content-Length: 99999999999999999999999\r\n"); break;
		case 2: puts_(b, "Content-Length: 5\r\nContent-Length: 7\r\n"); break;
		case 3: puts_(b, "Transfer-Encoding: chunked\r\n"); break;
		case 4: puts_(b, "Transfer-Encoding: gzip, chunked\r\n"); break;
		default: puts_(b, "Content-Length: 10\r\n"); break;
		}
		puts_(b, "\r\n");
		if (rnd_below(2))
			puts_(b, "zz\r\nnot-hex\r\n0\r\n\r\n");
		else
			put_random(b, rnd_below(64));
		break;
	case 10:
		*kind = "only line ends";
		for (size_t i = 0, n = 1 + rnd_below(5000); i < n; i++)
			puts_(b, rnd_below(2) ? "\r\n" : "\n");
		break;
	default:
		*kind = "mutated scrape";
		put(b, scrape_req, sizeof(scrape_req) - 1);
		for (size_t i = 0, n = 1 + rnd_below(8); i < n; i++)
			b->p[rnd_below(b->len)] = (char)rnd();
		break;
	}
}

/*
 * Each case on a new connection, sent in one to three pieces; then the
 * sending side is shut (or, now and then, the socket reset) and whatever
 * the exporter answers is read to EOF. An answer must be an HTTP status
 * line; no answer (a connection closed on bad input) is fine.
 */
static bool fuzz(int port, uint64_t seed, int *cases_out, char *why, size_t size)
{
	long long stop_at = now_ms() + FUZZ_MS;
	int counts[600] = { 0 }, none = 0, cases = 0;
	bool ok = true;

	rng_state = seed;
	for (; cases < FUZZ_CASES && now_ms() < stop_at && ok; cases++) {
		long long deadline = now_ms() + GUARD_MS;
		struct buf b = { 0 };
		const char *kind = "";
		struct response r = { 0 };
		size_t off = 0;
		int fd, pieces, rc;

		make_case(&b, &kind);
		if (!b.p)
			continue;
		fd = connect_to(port);
		if (fd < 0) {
			snprintf(why, size, "case %d (%s): connect failed: %s", cases, kind,
				 strerror(errno));
			ok = false;
			free(b.p);
			break;
		}
		pieces = 1 + (int)rnd_below(3);
		for (int i = 0; i < pieces && off < b.len; i++) {
			size_t n = i == pieces - 1 ? b.len - off : rnd_below(b.len - off + 1);

			if (send_all(fd, b.p + off, n, deadline))
				break;	/* closed by the exporter: its answer (if any) is read below */
			off += n;
		}
		free(b.p);
		if (rnd_below(16) == 0) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);	/* a reset mid-request */
			continue;
		}
		shutdown(fd, SHUT_WR);
		rc = read_to_eof(fd, &r.raw, &r.raw_len, deadline);
		close(fd);
		if (rc == -2) {
			snprintf(why, size, "case %d (%s): no EOF in %d s", cases, kind,
				 GUARD_MS / 1000);
			ok = false;
		} else if (r.raw && r.raw_len) {
			parse_response(&r);
			if (r.status < 100 || r.status > 599) {
				snprintf(why, size, "case %d (%s): answer not HTTP: %.40s", cases,
					 kind, r.raw);
				ok = false;
			} else {
				counts[r.status]++;
			}
		} else {
			none++;
		}
		free_response(&r);
	}
	printf("# fuzz: %d cases; answers:", cases);
	for (int s = 0; s < 600; s++)
		if (counts[s])
			printf(" %d x%d", s, counts[s]);
	printf("; closed without an answer x%d\n", none);
	*cases_out = cases;
	return ok;
}

/* ---------- the tests ---------- */

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Connections held open: the first n_idle send nothing, the rest half a request. */
static int hold(int port, int *fds, int n_idle, int n_half)
{
	static const char *const halves[] = {
		"G", "GET", "GET /metr", "GET /metrics", "GET /metrics HTTP/1.1",
		"GET /metrics HTTP/1.1\r\n", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n",
		"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: ab",
	};
	long long deadline = now_ms() + GUARD_MS;
	int held = 0;

	for (int i = 0; i < n_idle + n_half; i++) {
		fds[i] = connect_by(port, deadline);
		if (fds[i] < 0)
			continue;
		if (i >= n_idle) {
			const char *h = halves[i % (sizeof(halves) / sizeof(halves[0]))];

			if (send_all(fds[i], h, strlen(h), deadline)) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
		}
		held++;
	}
	return held;
}

static int count_open(const int *fds, int n)
{
	int open = 0;

	for (int i = 0; i < n; i++)
		open += fds[i] >= 0 && open_and_silent(fds[i]);
	return open;
}

/* Waits (guarded) for EOF on fd; true if EOF came with no byte before it. */
static bool wait_eof_silent(int fd, bool *timed_out)
{
	char *data;
	size_t len;
	int rc = read_to_eof(fd, &data, &len, now_ms() + GUARD_MS);

	*timed_out = rc == -2;
	free(data);
	return rc == 0 && len == 0;
}

static void test_once(void)
{
	bool ok = once_out && has_sample(once_out, "MAIA_FI_DEV_UTIL", "42") &&
		  has_sample(once_out, "MAIA_FI_DEV_TEMP", "51.25") &&
		  has_sample(once_out, "MAIA_FI_DEV_POWER_USAGE", "123.456789") &&
		  has_sample(once_out, "MAIA_FI_DEV_ECC_SBE_VOL_TOTAL", "7") &&
		  strstr(once_out, "cluster=\"1\",tile=\"1\"} 4\n") &&
		  strstr(once_out, "# TYPE MAIA_FI_DEV_UTIL gauge\n");
	bool modeled = once_out && has_sample(once_out, "MAIA_FI_PROF_HBM_ACTIVE", "0.96") &&
		       has_sample(once_out, "MAIA_FI_PROF_MFU", "0.25") &&
		       has_sample(once_out, "MAIA_FI_PROF_MODELED_TIME", "2") &&
		       has_sample(once_out, "MAIA_FI_PROF_PEAK_TIME", "0.5") &&
		       has_sample(once_out, "MAIA_FI_PROF_ACHIEVED_TFLOPS", "200") &&
		       has_sample(once_out, "MAIA_FI_PROF_FLOPS_TOTAL", "4e+14") &&
		       has_sample(once_out, "MAIA_FI_DEV_HBM_BANDWIDTH", "1.8e+12") &&
		       has_sample(once_out, "MAIA_FI_DEV_POWER_DESIGN", "700") &&
		       strstr(once_out, "dtype=\"bf16\"} 800\n") &&
		       strstr(once_out, "model=\"maia100\"} 1\n") &&
		       strstr(once_out, "# TYPE MAIA_FI_PROC_BUSY_TIME counter\n");

	tap_ok(ok, "--once on the fake sysfs tree: maia3 at " PCI
	       " with utilization 42, temperature 51.25 C, power 123.456789 W, 7 ECC CE, "
	       "4 tiles (%zu bytes)", once_len);
	tap_ok(modeled, "--once: the chip model (maia100, 1.8 TB/s HBM, 700 W, BF16 800 TFLOP/s) "
	       "and modeled telemetry: HBM saturation 0.96, MFU 0.25, 2 s modeled, "
	       "200 TFLOP/s achieved since power-on");
}

static void test_http_basics(struct exporter *a)
{
	char why[256] = "", allow[64] = "";
	struct response r;
	bool ok;

	ok = scrape_ok(a->port, why, sizeof(why));
	tap_ok(ok, "GET /metrics: 200, text/plain; version=0.0.4, body equal to --once%s", note(why));

	ok = request(a->port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", &r) && r.status == 404;
	free_response(&r);
	ok = ok && request(a->port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
			   "\r\nabc", &r) && r.status == 405 && header(&r, "Allow", allow,
			   sizeof(allow)) && !strcmp(allow, "GET, HEAD");
	free_response(&r);
	ok = ok && request(a->port, "DELETE /metrics HTTP/1.0\r\n\r\n", &r) && r.status == 405;
	free_response(&r);
	ok = ok && request(a->port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r) &&
	     r.status == 200 && r.body_len == 0;
	free_response(&r);
	ok = ok && request(a->port, "GET /metrics HTTP/1.0\r\n\r\n", &r) &&
	     scrape_matches(&r, why, sizeof(why));
	free_response(&r);
	tap_ok(ok, "404 for /nope, 405 with Allow: GET, HEAD for POST and DELETE, HEAD "
	       "/metrics 200 without a body, an HTTP/1.0 scrape answered%s", note(why));
}

static void test_held(struct exporter *a)
{
	int fds[N_IDLE + N_HALF], held, good = 0, still;
	char why[256] = "";

	held = hold(a->port, fds, N_IDLE, N_HALF);
	for (int i = 0; i < N_SCRAPES; i++) {
		char w[200];

		if (!scrape_ok(a->port, w, sizeof(w))) {
			snprintf(why, sizeof(why), "scrape %d: %s", i, w);
			break;	/* each may have waited for its guard: no more */
		}
		good++;
	}
	tap_ok(held == N_IDLE + N_HALF && good == N_SCRAPES,
	       "%d of %d scrapes answered completely and correctly while %d idle and %d "
	       "half-sent connections were held open (%d held)%s", good, N_SCRAPES, N_IDLE,
	       N_HALF, held, note(why));
	/*
	 * The held connections came first in the accept queue, so the exporter
	 * had them all before the first scrape; each is still open and has had
	 * nothing from the exporter: no scrape waited for one to end.
	 */
	still = count_open(fds, N_IDLE + N_HALF);
	tap_ok(still == N_IDLE + N_HALF, "after the scrapes, %d of %d held connections still "
	       "open and unanswered (the scrapes did not wait for them)", still, N_IDLE + N_HALF);
	close_all(fds, N_IDLE + N_HALF);
}

static void test_fuzz(struct exporter *a)
{
	const char *env = getenv("EXPORTER_FUZZ_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) :
			((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
	char why[256] = "";
	int cases = 0;
	bool ok;

	printf("# fuzz seed %llu (EXPORTER_FUZZ_SEED=%llu repeats it)\n",
	       (unsigned long long)seed, (unsigned long long)seed);
	ok = fuzz(a->port, seed, &cases, why, sizeof(why));
	tap_ok(ok, "fuzz, seed %llu: %d malformed requests (garbage, bad methods and versions, "
	       "huge URIs, overlong and bad headers, half lines, NUL bytes, pipelined junk, "
	       "bad body framing), every answer HTTP, every connection closed%s",
	       (unsigned long long)seed, cases, note(why));
	why[0] = '\0';
	ok = alive(a) && scrape_ok(a->port, why, sizeof(why));
	tap_ok(ok, "after the fuzz the exporter is alive and a scrape is correct%s", note(why));
}

static void test_timeout(void)
{
	static const char *const args[] = { "--bind", "127.0.0.1", "--conn-timeout", "1", NULL };
	struct exporter b;
	bool to1 = false, to2 = false, ok1, ok2;
	char why[256] = "";
	int fds[2];

	if (!start_exporter(&b, args)) {
		tap_ok(false, "exporter with --conn-timeout 1 started");
		tap_ok(false, "exporter with --conn-timeout 1 answers a scrape");
		tap_ok(false, "SIGINT stops the exporter, exit status 0");
		return;
	}
	fds[0] = connect_to(b.port);
	fds[1] = connect_to(b.port);
	ok1 = fds[0] >= 0 && wait_eof_silent(fds[0], &to1);
	ok2 = fds[1] >= 0 && send_all(fds[1], "GET /metrics HTTP/1.1\r\nHo", 25,
				      now_ms() + GUARD_MS) == 0 && wait_eof_silent(fds[1], &to2);
	tap_ok(ok1 && ok2, "--conn-timeout 1: the exporter closed an idle and a half-sent "
	       "connection, sending nothing%s", to1 || to2 ? " (still open after the guard)" : "");
	close_all(fds, 2);
	tap_ok(scrape_ok(b.port, why, sizeof(why)), "the exporter with --conn-timeout 1 "
	       "answers a scrape%s", note(why));
	tap_ok(stop_exporter(&b, SIGINT), "SIGINT stops the exporter, exit status 0");
}

static void test_limit(void)
{
	static const char *const args[] = { "--bind", "127.0.0.1", "--max-conns", "8",
					     "--conn-timeout", "300", NULL };
	int fds[8], held, x, still;
	struct exporter c;
	struct response r = { 0 };
	char why[256] = "";
	bool silent = false, ok = false;
	struct pollfd pfd;

	if (!start_exporter(&c, args)) {
		tap_ok(false, "exporter with --max-conns 8 started");
		tap_ok(false, "a scrape answered once a slot is free");
		tap_ok(false, "SIGTERM stops the exporter, exit status 0");
		return;
	}
	held = hold(c.port, fds, 8, 0);
	/*
	 * A ninth connection with a whole request: the exporter must not
	 * answer it while the eight are held. It either waits in the listen
	 * backlog (MHD stops accepting at the limit) or is closed unanswered.
	 * One second of silence is taken as the answer "not served": a slow
	 * machine can only make this pass, never fail.
	 */
	x = connect_to(c.port);
	if (x >= 0 && held == 8 && !send_all(x, scrape_req, strlen(scrape_req),
					     now_ms() + GUARD_MS)) {
		char ch;
		ssize_t n;

		pfd = (struct pollfd){ .fd = x, .events = POLLIN };
		n = poll(&pfd, 1, 1000) > 0 ? recv(x, &ch, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
		silent = n <= 0;
		printf("# the 9th connection: %s\n", n < 0 ? "no answer (waiting)" :
		       n == 0 ? "closed without an answer" : "answered");
	}
	tap_ok(held == 8 && silent, "--max-conns 8 with 8 connections held: a 9th gets no "
	       "answer (%d held)", held);

	/* Free one slot: the waiting scrape (or, if it was closed, a new one) is served. */
	close(fds[7]);
	fds[7] = -1;
	if (x >= 0 && silent) {
		int rc = read_to_eof(x, &r.raw, &r.raw_len, now_ms() + GUARD_MS);

		if (rc == 0 && r.raw_len) {
			parse_response(&r);
			ok = scrape_matches(&r, why, sizeof(why));
		} else {
			ok = scrape_ok(c.port, why, sizeof(why));
		}
		free_response(&r);
	}
	if (x >= 0)
		close(x);
	still = count_open(fds, 7);
	tap_ok(ok && still == 7, "one held connection closed: a scrape is answered completely "
	       "in its slot, the other 7 still open (%d)%s", still, note(why));
	close_all(fds, 7);
	tap_ok(stop_exporter(&c, SIGTERM), "SIGTERM stops the exporter (--max-conns 8), "
	       "exit status 0");
}

int main(int argc, char **argv)
{
	static const char *const args_a[] = { "--conn-timeout", "300", "--max-conns", "512",
					      NULL };
	char root[sizeof(tmpdir) + 8];
	struct exporter a;
	bool started_a;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-maia-exporter\n", argv[0]);
		return 2;
	}
	exporter_bin = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(ALARM_S);
	if (access(exporter_bin, X_OK)) {
		printf("not ok 1 - no maia-exporter at %s (make userspace builds it)\n1..1\n",
		       exporter_bin);
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		printf("not ok 1 - mkdtemp: %s\n1..1\n", strerror(errno));
		return 1;
	}
	atexit(cleanup);
	snprintf(root, sizeof(root), "%s/sys", tmpdir);
	if (mkdir(root, 0755) || !make_sysfs(root)) {
		printf("not ok 1 - fake sysfs tree in %s: %s\n1..1\n", root, strerror(errno));
		return 1;
	}
	setenv("MAIA_SYSFS_ROOT", root, 1);

	once_out = run_once(&once_len);
	test_once();

	/* The default bind address (none given) is loopback only. */
	started_a = start_exporter(&a, args_a);
	tap_ok(started_a && strstr(a.line, "http://127.0.0.1:") && listens_on_loopback_only(a.port),
	       "without --bind the exporter listens on 127.0.0.1 only, port %d picked by the "
	       "kernel (%s)", a.port, a.line);
	if (started_a && once_out) {
		test_http_basics(&a);
		test_held(&a);
		test_fuzz(&a);
		tap_ok(stop_exporter(&a, SIGTERM), "SIGTERM stops the exporter, exit status 0");
	} else {
		printf("# the exporter did not start (log %s) or --once failed\n", a.log);
		for (int i = 0; i < 7; i++)
			tap_ok(false, "skipped: no exporter");
	}
	test_timeout();
	test_limit();
	free(once_out);
	return tap_done();
}
