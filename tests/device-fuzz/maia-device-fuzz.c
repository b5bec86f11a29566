// SPDX-License-Identifier: MIT
/*
 * maia-device-fuzz: a hostile guest against the QEMU maia device model.
 *
 * Starts qemu-system-x86_64 with the qtest accelerator and drives it through
 * the qtest protocol on QEMU's stdin/stdout (-qtest stdio), like a guest that
 * does everything wrong. A run has one maia device, or two or three whose
 * fabric ports are cabled as a ring (as qemu/run-guest --fabric ring cables
 * them: device i's port 0 to device i+1's port 1 through hubport pair i),
 * each with its own configuration, BARs and guest RAM. It enumerates them
 * through 0xcf8/0xcfc, programs the BARs, MSI-X and bus mastering, then
 * issues seeded random and structured sequences, each on one device: raw
 * BAR0 accesses of every size and alignment, doorbells with random tails,
 * queue set-up with rings in guest RAM, command buffers with every opcode
 * (valid and mutated), tensor descriptors with mutated fields, DMA to RAM,
 * HBM, MMIO, another device's BARs and rings, unmapped and wrapping
 * addresses, mailbox commands, firmware boots with valid, partial and
 * garbage images, device MMU page tables, register resets and FLR in the
 * middle of work, random config-space writes, fault injection, system reset
 * and pulled cables (set_link) over QMP, and fabric frames: device 0 has one
 * more port (port 0 when alone) on a `-netdev dgram` unix socket whose
 * other end is this program, which sends it random and structured frames (a
 * fabric header with a valid CRC and random fields, so the link state
 * machine is reached, not only the parser).
 *
 * Collectives (MAIA_OP_COLLECTIVE, seq_coll()): every rank of a ring (all
 * devices, two over one cable, or one) gets the same command with its own
 * rank and ports, in a random order; all five collectives, FP32 and BF16,
 * counts from a few elements (gather-reduce) to a few MiB, chunk sizes,
 * buffers in guest RAM, in HBM or in a device MMU context whose pages are
 * read-write, read-only, absent or point at no memory. One rank may be
 * wrong (a buffer or report unmapped, read-only, not mapped or misaligned,
 * another communicator or seq, bogus rank, nranks, root or ports, any other
 * field), late (submitted hundreds of steps later: the device's fabric
 * thread and workers are host threads on the host clock, so steps are real
 * time, qtest's clock_step is not needed) or never there (its peers time
 * out after a short timeout_ms), or a device is reset, FLRed or system-reset,
 * or a cable pulled, while the ring runs. Completion entries and reports are
 * read later and only counted (--stats).
 *
 * One qtest (or QMP) command is one operation. Every decision comes from the
 * seeded PRNG and never from what the device answers, so a seed replays the
 * same command sequence (waits for a boot or for links to come up read the
 * same registers every time; only how long they sleep depends on the
 * answer). QEMU's stderr goes to a file that is scanned after every
 * operation: an AddressSanitizer, LeakSanitizer or UBSan report, QEMU
 * exiting, or a reply that does not come within the timeout is a failure,
 * reported with the seed and the operation index.
 *
 * Usage: maia-device-fuzz --qemu PATH [--seed N] [--ops N] [--ops-per-run N]
 *                         [--max-seconds S] [--timeout S] [--no-qmp]
 *                         [--trace] [--keep-logs] [--quiet] [--stats]
 *                         [--qemu-arg ARG]... [--lsan-suppressions FILE]
 *
 * --stats: at the end of each run, each device's fabric ports; at the end,
 * the completions left in the rings, the device telemetry, and the
 * collectives by mutation, timing, ranks and kind with how they ended (one
 * summary line of the collectives is printed without it too).
 * --ops-per-run N: restart QEMU every N operations; run n uses seed + n, so a
 * failure in any run replays alone with the seed and operation count printed.
 * --qemu-arg passes an argument through, e.g. "-d guest_errors -D FILE".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <zlib.h>

#include "maia/hw/fabric.h"
#include "maia/hw/regs.h"
#include "maia/hw/boot.h"
#include "maia/hw/queue.h"
#include "maia/hw/cmd.h"
#include "maia/hw/mbox.h"
#include "maia/hw/mmu.h"
#include "maia/hw/tensor.h"
#include "maia/hw/telemetry.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * ---- Guest physical layout (q35, -m 256M) --------------------------------
 * Device d (of up to MAX_DEVS) has its own 32 MiB of RAM at d * DEV_RAM_STRIDE
 * for rings, command buffers and DMA data, 16 MiB at COLL_RAM(d) for its
 * collectives, and its own BARs: the devices reach each other only on
 * purpose (a DMA operand or a page pointing at another device's BAR). The
 * 16 MiB gaps after each 32 MiB take most DMA that runs past a DATA_AREA.
 * The macros name the current device's (D's) areas.
 */
#define RAM_SIZE	(UINT64_C(256) << 20)
#define MAX_DEVS	3u
#define DEV_RAM_STRIDE	UINT64_C(0x03000000)	/* 32 MiB used, then a gap */
#define FW_AREA		(D->ram + UINT64_C(0x00100000))	/* firmware images, 1 MiB */
#define SQ_AREA		(D->ram + UINT64_C(0x00200000))	/* + q * SQ_STRIDE */
#define SQ_STRIDE	UINT64_C(0x00020000)	/* 4096 x 32-byte entries */
#define CQ_AREA		(D->ram + UINT64_C(0x00400000))
#define CQ_STRIDE	UINT64_C(0x00040000)	/* 4096 x 40-byte entries */
#define SHADOW_AREA	(D->ram + UINT64_C(0x00900000))	/* + q * 64 */
#define MSI_AREA	(D->ram + UINT64_C(0x00980000))	/* MSI-X messages land here */
#define CMD_AREA	(D->ram + UINT64_C(0x00a00000))	/* command buffers, CMD_SLOTS x CMD_SLOT */
#define CMD_SLOT	UINT64_C(0x00010000)
#define CMD_SLOTS	64u
#define DATA_AREA	(D->ram + UINT64_C(0x01000000))	/* DMA source/destination, 16 MiB */
#define DATA_SIZE	UINT64_C(0x01000000)
#define COLL_RAM(d)	(UINT64_C(0x09000000) + UINT64_C(0x01000000) * (d))	/* 2 MiB aligned */

#define BAR0_ADDR	(D->bar0)
#define BAR4_ADDR	(D->bar0 + 0x10000)
#define HBM_ADDR	(D->hbm)			/* BAR2, hbm-size <= 64 MiB */
#define UNMAPPED_BUS	UINT64_C(0x4000000000)		/* no RAM, no device */
#define DEV_SERIAL(d)	(UINT64_C(0x5eed00) + (d))	/* the fabric serial of device d */

#define PCIE_CAP	0x80u		/* MAIA_PCIE_CAP_OFFSET in maia-pci.c */
#define PCI_EXP_DEVCTL	8u
#define PCI_EXP_DEVCTL_FLR 0x8000u

/* ---- PRNG (splitmix64) --------------------------------------------------- */
static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd(uint32_t n)	/* 0 .. n-1 */
{
	return n ? (uint32_t)(rnd64() % n) : 0;
}

static bool chance(uint32_t percent)
{
	return rnd(100) < percent;
}

/*
 * A clean job (about a third of them) is built without mutations, so that
 * valid commands reach the engines too; valid(p) is then always true.
 */
static bool clean_job;

static bool valid(uint32_t percent)
{
	bool c = chance(percent);	/* same PRNG use either way */

	return clean_job || c;
}

/* Interesting 64-bit values for mutated fields. */
static uint64_t rnd_interesting(void)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095, 4096,
		65535, 65536, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		1ull << 24, (1ull << 24) + 1, 1ull << 32, 1ull << 48, 1ull << 56,
		1ull << 63, 0x7fffffffffffffffull, ~0ull, ~0ull - 7, ~0ull - 4095,
	};

	switch (rnd(4)) {
	case 0:
		return rnd64();
	case 1:
		return rnd64() & ((1ull << rnd(64)) - 1);
	default:
		return v[rnd(ARRAY_SIZE(v))];
	}
}

/* ---- State --------------------------------------------------------------- */
struct dev_cfg {
	uint32_t queues, clusters, tiles, sram_kib, workers;
	uint64_t hbm_size;
};

/* One maia device of the QEMU under test, as the fuzzer believes it is. */
struct dev {
	unsigned int index;
	struct dev_cfg cfg;
	uint64_t ram, bar0, hbm, serial;
	uint32_t nports;	/* fabric ports */
	uint32_t devfn, msix_cap, msix_table, msix_bar;
	bool booted;
	bool boot_failed;	/* a bad image may have failed the boot: START is then ignored */
	bool coll_ctx;		/* COLL_ASID set up since the last reset */
	uint32_t q_tail[MAIA_MAX_QUEUES], q_size[MAIA_MAX_QUEUES];
	bool q_on[MAIA_MAX_QUEUES];
};

static struct {
	const char *qemu;
	uint64_t seed, ops_total, ops_per_run;
	double max_seconds, timeout;
	bool qmp, trace, keep_logs, quiet, stats;
	const char *extra[16];	/* --qemu-arg */
	const char *lsan_supp;
	unsigned int nextra;
} opt = {
	.seed = 1, .ops_total = 100000, .ops_per_run = 200000,
	.max_seconds = 0, .timeout = 30, .qmp = true,
};

static struct {
	pid_t pid;
	int to_qemu, from_qemu, errfd, qmp;
	char errpath[256], qmppath[108];
	/* The fabric cable to us: our end (fabfd, fabpath) and QEMU's (fabqpath). */
	int fabfd;
	char fabpath[108], fabqpath[108];
	uint32_t fab_port;	/* device 0's port on that cable */
	off_t err_off;
	char rbuf[1 << 16];
	size_t rlen;
	uint64_t run_seed, run_ops, run_index, run_steps;
	/* The devices: 2 or 3 cabled as a ring (fabric ring of qemu/run-guest), or 1. */
	struct dev dev[MAX_DEVS];
	unsigned int ndev;
	char last[16][160];	/* last commands, for the failure report */
	unsigned int last_i;
} s;

/* The device the current step works on. */
static struct dev *D = &s.dev[0];

static uint64_t total_ops, reports;
static uint64_t job_status[MAIA_STATUS_FABRIC_COMM_BUSY + 2];	/* --stats */
static uint64_t telem_commands, telem_flops, telem_dma_bytes;
static double t_start;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void qemu_kill(void);

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;
	unsigned int i;
	char buf[4096];
	ssize_t n;

	fprintf(stderr, "\nmaia-device-fuzz: FAIL: seed %" PRIu64 " (run %" PRIu64
		", run seed %" PRIu64 "), operation %" PRIu64 " of the run (%" PRIu64
		" overall): ", opt.seed, s.run_index, s.run_seed, s.run_ops, total_ops);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nlast commands:\n");
	for (i = 0; i < ARRAY_SIZE(s.last); i++) {
		const char *l = s.last[(s.last_i + i) % ARRAY_SIZE(s.last)];

		if (*l)
			fprintf(stderr, "  %s\n", l);
	}
	qemu_kill();
	if (s.errfd >= 0) {
		off_t sz = lseek(s.errfd, 0, SEEK_END);
		off_t from = sz > 6000 ? sz - 6000 : 0;

		fprintf(stderr, "QEMU stderr (%s, last %lld bytes):\n", s.errpath,
			(long long)(sz - from));
		lseek(s.errfd, from, SEEK_SET);
		while ((n = read(s.errfd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, n, stderr);
	}
	fprintf(stderr, "replay: maia-device-fuzz --qemu %s --seed %" PRIu64
		" --ops %" PRIu64 " --ops-per-run %" PRIu64 " --trace\n",
		opt.qemu, s.run_seed, s.run_ops, s.run_ops);
	exit(1);
}

/* ---- QEMU's stderr: sanitizer reports ------------------------------------ */
static const char *const bad_patterns[] = {
	"ERROR: AddressSanitizer",
	"ERROR: LeakSanitizer",
	"runtime error:",
	"maia: firmware-sim",	/* the glue caught the library breaking a rule */
	"Assertion",
};

static void check_stderr(void)
{
	struct stat st;
	char buf[16384];
	off_t off;
	unsigned int i;

	if (fstat(s.errfd, &st) || st.st_size <= s.err_off)
		return;
	/* Re-read a little before the old end so a pattern split across writes is seen. */
	off = s.err_off > 64 ? s.err_off - 64 : 0;
	while (off < st.st_size) {
		ssize_t n = pread(s.errfd, buf, sizeof(buf), off);

		if (n <= 0)
			break;
		for (i = 0; i < ARRAY_SIZE(bad_patterns); i++) {
			if (memmem(buf, n, bad_patterns[i], strlen(bad_patterns[i]))) {
				reports++;
				fail("QEMU printed \"%s\"", bad_patterns[i]);
			}
		}
		if (off + n >= st.st_size || n <= 64)
			break;
		off += n - 64;
	}
	s.err_off = st.st_size;
}

/* ---- qtest protocol ---------------------------------------------------- */
static void write_all(int fd, const char *p, size_t len, const char *what)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("writing to %s: %s", what, n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= n;
	}
}

/* Reads one line (without the newline) from fd into s.rbuf-backed storage. */
static char *read_line(int fd, char *buf, size_t *len, size_t cap, const char *what)
{
	double deadline = now_s() + opt.timeout;

	for (;;) {
		char *nl = memchr(buf, '\n', *len);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left;
		ssize_t n;
		int r;

		if (nl) {
			static char line[1 << 16];
			size_t l = nl - buf;

			if (l >= sizeof(line))
				l = sizeof(line) - 1;
			memcpy(line, buf, l);
			line[l] = 0;
			*len -= nl + 1 - buf;
			memmove(buf, nl + 1, *len);
			return line;
		}
		left = deadline - now_s();
		if (left <= 0)
			fail("no reply from %s in %.0f s (QEMU hangs)", what, opt.timeout);
		r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			continue;
		if (*len == cap)
			fail("reply line from %s too long", what);
		n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int status;

			usleep(100000);
			if (waitpid(s.pid, &status, WNOHANG) == s.pid) {
				s.pid = 0;
				if (WIFSIGNALED(status))
					fail("QEMU was killed by signal %d", WTERMSIG(status));
				fail("QEMU exited with status %d", WEXITSTATUS(status));
			}
			fail("%s closed", what);
		}
		*len += n;
	}
}

static void remember(const char *cmd)
{
	snprintf(s.last[s.last_i], sizeof(s.last[0]), "[%" PRIu64 "] %.140s", s.run_ops, cmd);
	s.last_i = (s.last_i + 1) % ARRAY_SIZE(s.last);
}

/* The whole reply line of the last qtest command (until the next one). */
static const char *qt_reply;

/* Sends one qtest command; returns the value of an "OK <value>" reply. */
static uint64_t __attribute__((format(printf, 1, 2))) qt(const char *fmt, ...)
{
	static char cmd[1 << 17];
	va_list ap;
	int n;
	char *line;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(cmd) - 1)
		fail("qtest command too long");
	s.run_ops++;
	total_ops++;
	remember(cmd);
	if (opt.trace)
		fprintf(stderr, "%" PRIu64 ": %s\n", s.run_ops, cmd);
	cmd[n++] = '\n';
	write_all(s.to_qemu, cmd, n, "QEMU qtest");
	do {
		line = read_line(s.from_qemu, s.rbuf, &s.rlen, sizeof(s.rbuf), "QEMU qtest");
	} while (!strncmp(line, "IRQ", 3));
	if (strncmp(line, "OK", 2))
		fail("qtest answered \"%.100s\" to \"%.100s\"", line, cmd);
	check_stderr();
	qt_reply = line;
	return line[2] == ' ' ? strtoull(line + 3, NULL, 0) : 0;
}

/* Reads len bytes of guest memory (one qtest "read"). */
static void mem_read(uint64_t addr, void *data, size_t len)
{
	uint8_t *p = data;
	const char *h;
	size_t i;

	memset(data, 0, len);
	qt("read 0x%" PRIx64 " 0x%zx", addr, len);
	h = qt_reply + 3;
	if (strncmp(h, "0x", 2))
		return;
	for (i = 0, h += 2; i < len && h[0] && h[1]; i++, h += 2) {
		char b[3] = { h[0], h[1], 0 };

		p[i] = (uint8_t)strtoul(b, NULL, 16);
	}
}

static void mem_write(uint64_t addr, const void *data, size_t len)
{
	static char hex[(1 << 16) + 8];
	static const char digits[] = "0123456789abcdef";
	const uint8_t *p = data;
	size_t i;

	if (!len)
		return;
	if (len > (sizeof(hex) - 8) / 2)
		len = (sizeof(hex) - 8) / 2;
	for (i = 0; i < len; i++) {
		hex[2 * i] = digits[p[i] >> 4];
		hex[2 * i + 1] = digits[p[i] & 15];
	}
	hex[2 * len] = 0;
	qt("write 0x%" PRIx64 " 0x%zx 0x%s", addr, len, hex);
}

static void reg_wr(uint32_t off, uint32_t val)
{
	qt("writel 0x%" PRIx64 " 0x%x", BAR0_ADDR + off, val);
}

static uint32_t reg_rd(uint32_t off)
{
	return qt("readl 0x%" PRIx64, BAR0_ADDR + off);
}

/* ---- QMP (optional) ------------------------------------------------------ */
static char qmp_buf[1 << 14];
static size_t qmp_len;

/*
 * Sends a QMP command (a JSON object without its closing brace) and waits
 * for the answer carrying its id, or with event set, for that event instead
 * (system_reset announces RESET; its answer may come later and is skipped).
 */
static void qmp_cmd(const char *json, const char *event)
{
	static unsigned int id;
	char cmd[512], want[32];
	char *line;

	if (s.qmp < 0)
		return;
	snprintf(cmd, sizeof(cmd), "%s,\"id\":%u}\n", json, ++id);
	snprintf(want, sizeof(want), "\"id\": %u", id);
	s.run_ops++;
	total_ops++;
	remember(cmd);
	if (opt.trace)
		fprintf(stderr, "%" PRIu64 ": QMP %s", s.run_ops, cmd);
	write_all(s.qmp, cmd, strlen(cmd), "QMP");
	for (;;) {
		line = read_line(s.qmp, qmp_buf, &qmp_len, sizeof(qmp_buf), "QMP");
		char *at = strstr(line, event ? event : want);

		if (at && (event || (at[strlen(want)] < '0' || at[strlen(want)] > '9')))
			break;
	}
	check_stderr();
}

static void qmp_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int i;

	s.qmp = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s.qmppath);
	for (i = 0; i < 500; i++) {
		if (!connect(s.qmp, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		usleep(20000);
	}
	if (i == 500)
		fail("cannot connect to QMP at %s", s.qmppath);
	qmp_len = 0;
	read_line(s.qmp, qmp_buf, &qmp_len, sizeof(qmp_buf), "QMP greeting");
	qmp_cmd("{\"execute\":\"qmp_capabilities\"", NULL);
}

/* ---- QEMU process -------------------------------------------------------- */
/*
 * The devices of a run: 1 (20%), or 2 or 3 cabled as qemu/run-guest --fabric
 * ring cables them (device i's port 0 to device i+1's port 1 through hub i,
 * netdevs c<i>a and c<i>b), device 0 then having a third port on our dgram
 * socket. Each device draws its own configuration.
 */
static void plan_devices(char devarg[MAX_DEVS][512], char netarg[2 * MAX_DEVS + 1][400])
{
	static const uint32_t queues[] = { 1, 2, 4, 8, 16 };
	static const uint32_t windows[] = { 0, 0, 0, 0, 1, 2, 4, 16, 64 };
	unsigned int d, r = rnd(10);

	s.ndev = r < 2 ? 1 : r < 6 ? 2 : 3;
	s.fab_port = s.ndev > 1 ? 2 : 0;
	snprintf(netarg[0], sizeof(netarg[0]),
		 "dgram,id=fab0,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s",
		 s.fabqpath, s.fabpath);
	for (d = 0; d < s.ndev; d++) {
		struct dev *v = &s.dev[d];
		struct dev_cfg *c = &v->cfg;
		char ports[128];
		/* A lossy ring still runs collectives; a dead one only fails them. */
		uint32_t ppm = chance(50) ? 0 : s.ndev == 1 ? rnd(1000001) :
			       chance(80) ? rnd(20001) : rnd(300001);

		memset(v, 0, sizeof(*v));
		v->index = d;
		v->ram = DEV_RAM_STRIDE * d;
		v->bar0 = UINT64_C(0xe0000000) + UINT64_C(0x100000) * d;
		v->hbm = UINT64_C(0xe4000000) + UINT64_C(0x4000000) * d;
		v->serial = DEV_SERIAL(d);
		v->devfn = (4 + d) << 3;
		c->queues = queues[rnd(ARRAY_SIZE(queues))];
		c->hbm_size = chance(50) ? 16ull << 20 : 64ull << 20;
		c->clusters = chance(50) ? 1 + rnd(4) : 16;
		c->tiles = 1 + rnd(4);
		c->sram_kib = chance(50) ? 1024 : 8192;
		c->workers = 1 + rnd(2);
		if (s.ndev == 1) {
			v->nports = 2;
			snprintf(ports, sizeof(ports), "fabric0=fab0,fabric-ports=2");
		} else {
			v->nports = d ? 2 : 3;
			snprintf(netarg[1 + 2 * d], sizeof(netarg[0]), "hubport,id=c%ua,hubid=%u", d, d);
			snprintf(netarg[2 + 2 * d], sizeof(netarg[0]), "hubport,id=c%ub,hubid=%u", d, d);
			snprintf(ports, sizeof(ports), "fabric0=c%ua,fabric1=c%ub%s", d,
				 (d + s.ndev - 1) % s.ndev, d ? "" : ",fabric2=fab0");
		}
		snprintf(devarg[d], sizeof(devarg[0]),
			 "maia,id=maia%u,addr=0x%x,serial=0x%" PRIx64 ",hbm-size=%" PRIu64 "M,"
			 "queues=%u,clusters=%u,tiles-per-cluster=%u,sram-kib=%u,worker-threads=%u,"
			 "%s,fabric-drop-ppm=%u,fabric-drop-seed=%u,fabric-window=%u",
			 d, 4 + d, v->serial, c->hbm_size >> 20, c->queues, c->clusters, c->tiles,
			 c->sram_kib, c->workers, ports, ppm, rnd(1000),
			 windows[rnd(ARRAY_SIZE(windows))]);
	}
	D = &s.dev[0];
}

static void qemu_start(void)
{
	int in[2], out[2];
	char devarg[MAX_DEVS][512], qmparg[160], netarg[2 * MAX_DEVS + 1][400];
	struct sockaddr_un fa = { .sun_family = AF_UNIX };
	const char *tmp = getenv("TMPDIR") ?: "/tmp";
	unsigned int d;

	snprintf(s.fabpath, sizeof(s.fabpath), "%s/maia-fuzz-fab.%d.%" PRIu64,
		 tmp, getpid(), s.run_index);
	snprintf(s.fabqpath, sizeof(s.fabqpath), "%s/maia-fuzz-fabq.%d.%" PRIu64,
		 tmp, getpid(), s.run_index);
	plan_devices(devarg, netarg);
	unlink(s.fabpath);
	unlink(s.fabqpath);
	snprintf(fa.sun_path, sizeof(fa.sun_path), "%s", s.fabpath);
	s.fabfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s.fabfd < 0 || bind(s.fabfd, (struct sockaddr *)&fa, sizeof(fa))) {
		perror("maia-device-fuzz: fabric socket");
		exit(2);
	}
	snprintf(s.errpath, sizeof(s.errpath), "%s/maia-device-fuzz.%d.%" PRIu64 ".stderr",
		 tmp, getpid(), s.run_index);
	snprintf(s.qmppath, sizeof(s.qmppath), "%s/maia-fuzz-qmp.%d.%" PRIu64,
		 tmp, getpid(), s.run_index);
	snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", s.qmppath);
	unlink(s.qmppath);
	s.errfd = open(s.errpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s.errfd < 0 || pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		perror("maia-device-fuzz: set-up");
		exit(2);
	}
	s.err_off = 0;
	s.rlen = 0;
	s.pid = fork();
	if (s.pid == 0) {
		const char *argv[64];
		int a = 0;

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(s.errfd, 2);
		argv[a++] = opt.qemu;
		argv[a++] = "-machine";
		argv[a++] = "q35";
		argv[a++] = "-accel";
		argv[a++] = "qtest";
		argv[a++] = "-nodefaults";
		argv[a++] = "-display";
		argv[a++] = "none";
		argv[a++] = "-m";
		argv[a++] = "256M";
		argv[a++] = "-qtest";
		argv[a++] = "stdio";
		argv[a++] = "-qtest-log";	/* the default logs every command to stderr */
		argv[a++] = "none";
		if (opt.qmp) {
			argv[a++] = "-qmp";
			argv[a++] = qmparg;
		}
		for (d = 0; d < (s.ndev > 1 ? 2 * s.ndev + 1 : 1); d++) {
			argv[a++] = "-netdev";
			argv[a++] = netarg[d];
		}
		for (d = 0; d < s.ndev; d++) {
			argv[a++] = "-device";
			argv[a++] = devarg[d];
		}
		for (unsigned int i = 0; i < opt.nextra; i++)
			argv[a++] = opt.extra[i];
		argv[a] = NULL;
		/*
		 * Keep going after a UBSan report so it reaches the log, with a
		 * stack. Full malloc stacks, so that LSan suppressions can match
		 * frames below glib (built without frame pointers).
		 */
		setenv("UBSAN_OPTIONS", "print_stacktrace=1", 0);
		setenv("ASAN_OPTIONS", "abort_on_error=1:fast_unwind_on_malloc=0", 0);
		if (opt.lsan_supp) {
			char lsan[512];

			snprintf(lsan, sizeof(lsan), "suppressions=%s:print_suppressions=0",
				 opt.lsan_supp);
			setenv("LSAN_OPTIONS", lsan, 0);
		}
		execv(opt.qemu, (char **)argv);
		perror("exec qemu");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s.to_qemu = in[1];
	s.from_qemu = out[0];
	s.qmp = -1;
	for (d = 0; d < s.ndev && !opt.quiet; d++)
		fprintf(stderr, "maia-device-fuzz: run %" PRIu64 " seed %" PRIu64 ": -device %s\n",
			s.run_index, s.run_seed, devarg[d]);
	if (opt.qmp)
		qmp_connect();
}

/* Ends QEMU; returns its wait status, or -1. */
static int qemu_stop(bool force)
{
	int status = -1, i;

	if (s.pid <= 0) {	/* reaped already (it died): its sockets are still there */
		unlink(s.qmppath);
		unlink(s.fabpath);
		unlink(s.fabqpath);
		return -1;
	}
	if (s.qmp >= 0 && !force) {
		write_all(s.qmp, "{\"execute\":\"quit\"}\n", 19, "QMP");
	} else {
		kill(s.pid, SIGTERM);
	}
	for (i = 0; i < (force ? 50 : (int)(opt.timeout * 10)); i++) {
		if (waitpid(s.pid, &status, WNOHANG) == s.pid)
			break;
		usleep(100000);
	}
	if (waitpid(s.pid, &status, WNOHANG) == 0) {
		kill(s.pid, SIGKILL);
		waitpid(s.pid, &status, 0);
		status = -2;
	}
	s.pid = 0;
	close(s.to_qemu);
	close(s.from_qemu);
	if (s.qmp >= 0)
		close(s.qmp);
	s.qmp = -1;
	unlink(s.qmppath);
	if (s.fabfd >= 0)
		close(s.fabfd);
	s.fabfd = -1;
	unlink(s.fabpath);
	unlink(s.fabqpath);
	return status;
}

static void qemu_kill(void)
{
	qemu_stop(true);
}

/* ---- PCI ---------------------------------------------------------------- */
static uint32_t cfg_addr(uint32_t off)
{
	return 0x80000000u | (D->devfn << 8) | (off & 0xfc);
}

static uint32_t cfg_rd(uint32_t off, unsigned int size)
{
	qt("outl 0xcf8 0x%x", cfg_addr(off));
	switch (size) {
	case 1:
		return qt("inb 0x%x", 0xcfc + (off & 3));
	case 2:
		return qt("inw 0x%x", 0xcfc + (off & 2));
	default:
		return qt("inl 0xcfc");
	}
}

static void cfg_wr(uint32_t off, unsigned int size, uint32_t val)
{
	qt("outl 0xcf8 0x%x", cfg_addr(off));
	switch (size) {
	case 1:
		qt("outb 0x%x 0x%x", 0xcfc + (off & 3), val & 0xff);
		break;
	case 2:
		qt("outw 0x%x 0x%x", 0xcfc + (off & 2), val & 0xffff);
		break;
	default:
		qt("outl 0xcfc 0x%x", val);
	}
}

static void msix_entry(uint32_t v, uint64_t addr, uint32_t data, bool masked)
{
	uint64_t e = BAR4_ADDR + D->msix_table + 16ull * v;

	qt("writel 0x%" PRIx64 " 0x%x", e, (uint32_t)addr);
	qt("writel 0x%" PRIx64 " 0x%x", e + 4, (uint32_t)(addr >> 32));
	qt("writel 0x%" PRIx64 " 0x%x", e + 8, data);
	qt("writel 0x%" PRIx64 " 0x%x", e + 12, masked);
}

/* Programs the BARs, enables memory + bus master and MSI-X. */
static void pci_setup(void)
{
	uint32_t v, nvec = MAIA_NUM_VECTORS(D->cfg.queues);

	cfg_wr(0x10, 4, (uint32_t)BAR0_ADDR);
	cfg_wr(0x18, 4, (uint32_t)HBM_ADDR | 0xc);
	cfg_wr(0x1c, 4, (uint32_t)(HBM_ADDR >> 32));
	cfg_wr(0x20, 4, (uint32_t)BAR4_ADDR);
	cfg_wr(0x04, 2, 0x0006);	/* memory space + bus master */
	if (!D->msix_cap)
		return;
	cfg_wr(D->msix_cap + 2, 2, 0x8000);	/* MSI-X enable, function unmasked */
	for (v = 0; v < nvec; v++)
		msix_entry(v, MSI_AREA + 4 * v, 0x100 + v, false);
}

/* Finds every maia device on bus 0 (slots 4.., in -device order), sets each up. */
static void pci_find(void)
{
	uint32_t devfn, cap, guard = 0;
	unsigned int found = 0;

	D = s.dev;
	for (devfn = 0; devfn < 256; devfn += 8) {
		D->devfn = devfn;
		if (cfg_rd(0, 4) != (MAIA_PCI_VENDOR_ID | (MAIA_PCI_DEVICE_ID << 16)))
			continue;
		if (found == s.ndev || devfn != (4 + found) << 3)
			fail("maia device at devfn 0x%x: expected %u devices at slots 4..", devfn, s.ndev);
		found++;
	}
	for (D = s.dev; D < s.dev + s.ndev; D++)
		D->devfn = (4 + D->index) << 3;
	if (found != s.ndev)
		fail("%u maia devices on bus 0, expected %u", found, s.ndev);
	for (D = s.dev; D < s.dev + s.ndev; D++) {
		D->msix_cap = 0;
		guard = 0;
		cap = cfg_rd(0x34, 1) & 0xfc;
		while (cap && guard++ < 48) {
			if ((cfg_rd(cap, 1)) == 0x11) {
				D->msix_cap = cap;
				D->msix_table = cfg_rd(cap + 4, 4);
				D->msix_bar = D->msix_table & 7;
				D->msix_table &= ~7u;
				break;
			}
			cap = cfg_rd(cap + 1, 1) & 0xfc;
		}
		if (!D->msix_cap || D->msix_bar != MAIA_BAR_MSIX)
			fail("no MSI-X capability in BAR%u", MAIA_BAR_MSIX);
		pci_setup();
	}
	D = s.dev;
}

/* ---- Addresses and sizes for DMA ---------------------------------------- */
static uint64_t rnd_hbm_off(uint64_t len)
{
	uint64_t span = D->cfg.hbm_size > len ? D->cfg.hbm_size - len : 1;

	return rnd64() % span & ~7ull;
}

/* Another device than D (D itself when alone). */
static struct dev *other_dev(void)
{
	return &s.dev[(D->index + 1 + rnd(s.ndev > 1 ? s.ndev - 1 : 1)) % s.ndev];
}

/* A device address for len bytes: mostly valid, sometimes hostile. */
static uint64_t rnd_addr(uint64_t len)
{
	struct dev *o;

	switch (rnd(22)) {
	case 20:	/* peer to peer: another device's HBM, or its registers */
		o = other_dev();
		return chance(70) ? o->hbm + (rnd64() % o->cfg.hbm_size & ~7ull) :
		       o->bar0 + (rnd(MAIA_BAR0_SIZE) & ~3u);
	case 21:	/* another device's rings and command buffers */
		o = other_dev();
		return o->ram + 0x200000 + (rnd64() % 0xe00000 & ~7ull);
	case 0:
		return BAR0_ADDR + (rnd(MAIA_BAR0_SIZE) & ~3u);	/* our own registers */
	case 1:
		return BAR4_ADDR + (rnd(4096) & ~3u);		/* MSI-X table */
	case 2:
		return HBM_ADDR + rnd_hbm_off(len);		/* our BAR2 by bus address */
	case 3:
		return 0x4000000000ull + rnd64() % (1ull << 36);	/* unmapped */
	case 4:
		return RAM_SIZE - (rnd(8192) & ~7u);		/* runs off the end of RAM */
	case 5:
		return MAIA_PHYS_HBM | (D->cfg.hbm_size - (rnd(8192) & ~7u));	/* off HBM */
	case 6:
		return rnd_interesting();
	case 7:
		return 0xfee00000ull;				/* the local APIC */
	case 8:
		return 0xfffc0000ull + (rnd(0x40000) & ~7u);	/* BIOS ROM */
	case 9: case 10: case 11: case 12:
		return MAIA_PHYS_HBM | rnd_hbm_off(len);
	default:
		return DATA_AREA + (rnd64() % (DATA_SIZE > len ? DATA_SIZE - len : 1) & ~7ull);
	}
}

static uint64_t rnd_len(void)
{
	switch (rnd(16)) {
	case 0:
		return rnd_interesting();
	case 1:
		return 1ull << (16 + rnd(9));	/* 64 KiB .. 16 MiB */
	case 2:
		return rnd(8);
	default:
		return 8 * (1 + rnd(512));
	}
}

/* ---- Command buffers ------------------------------------------------------ */
/*
 * A command buffer; batched GEMM pointer arrays go in its last 96 bytes
 * (extra[]), at device address extra_dev.
 */
#define CMDBUF_MAX	(0x3000 - 96)
struct cmdbuf {
	uint8_t b[CMDBUF_MAX];
	size_t len;
	uint64_t extra[12];
	uint64_t extra_dev;
};

/* ASID of the job being built: addresses then are device VAs. */
static unsigned int cur_asid;

static uint64_t rnd_operand(uint64_t len)
{
	if (cur_asid && chance(80)) {
		/* The structured context maps VA 0..64K (4K pages) and 2M..4M. */
		if (chance(50))
			return (rnd64() % 0x10000) & ~7ull;
		return 0x200000 + ((rnd64() % 0x200000) & ~7ull);
	}
	if (clean_job) {
		uint64_t a = rnd_addr(len);	/* same PRNG use */

		(void)a;
		return chance(50) ? MAIA_PHYS_HBM | rnd_hbm_off(len) :
		       DATA_AREA + (rnd64() % (DATA_SIZE - (len < DATA_SIZE ? len : 0)) & ~(uint64_t)63);
	}
	return rnd_addr(len);
}

static void put_cmd(struct cmdbuf *cb, void *cmd, size_t size, uint16_t opcode,
		    uint16_t flags)
{
	struct maia_cmd_header *h = cmd;

	h->opcode = opcode;
	h->flags = flags;
	h->size = size;
	/* Mutations: header and any byte of the body. */
	if (!valid(92))
		h->size = chance(50) ? (uint32_t)rnd_interesting() : (size + 8 * (rnd(5) - 2) + (chance(30) ? rnd(8) : 0));
	if (!valid(95))
		h->flags = rnd(0x10000);
	if (!valid(90)) {
		unsigned int n = 1 + rnd(4);

		while (n--) {
			size_t at = rnd(size);

			((uint8_t *)cmd)[at] ^= 1u << rnd(8);
		}
	}
	if (cb->len + size > CMDBUF_MAX)
		return;
	memcpy(cb->b + cb->len, cmd, size);
	cb->len += size;
}

static const uint8_t block_dtype[] = { 7, 8, 9, 10, 11, 12, 13, 14, 15 };

static bool dtype_block(unsigned int dt)
{
	return dt >= MAIA_DTYPE_MXFP8_E4M3 && dt < MAIA_DTYPE_COUNT;
}

static unsigned int rnd_dtype(void)
{
	if (chance(50))
		return rnd(3);				/* FP32, FP16, BF16 */
	if (chance(40))
		return block_dtype[rnd(ARRAY_SIZE(block_dtype))];
	return rnd(MAIA_DTYPE_COUNT);
}

/* A contiguous row-major descriptor, then maybe one mutated field. */
static void mk_desc(struct maia_tensor_desc *d, unsigned int dtype, unsigned int rank,
		    const uint32_t *shape)
{
	uint64_t elems = 1, stride = 1;
	int i;

	memset(d, 0, sizeof(*d));
	d->dtype = dtype;
	d->rank = rank;
	for (i = rank - 1; i >= 0; i--) {
		uint32_t dim = shape[i];

		if (dtype_block(dtype) && i == (int)rank - 1)
			dim = (dim + 31) & ~31u;
		d->shape[i] = dim;
		d->strides[i] = stride;
		stride *= dim;
		elems *= dim;
	}
	d->addr = rnd_operand(elems * 4);
	if (dtype_block(dtype))
		d->scale_addr = rnd_operand(elems / 16 + 1);
	if (dtype == MAIA_DTYPE_INT8 || dtype == MAIA_DTYPE_FP8_E4M3 ||
	    dtype == MAIA_DTYPE_FP8_E5M2)
		d->scale = chance(50) ? 0 : 0x3f800000u;	/* 1.0f */
	if (!valid(88)) {
		unsigned int f = rnd(9), k = rnd(MAIA_TENSOR_MAX_RANK);

		switch (f) {
		case 0: d->dtype = rnd(256); break;
		case 1: d->rank = rnd(8); break;
		case 2: d->shape[k] = (uint32_t)rnd_interesting(); break;
		case 3: d->strides[k] = rnd_interesting(); break;
		case 4: d->flags = rnd(0x10000); break;
		case 5: d->scale = (uint32_t)rnd64(); break;
		case 6: d->scale_addr = rnd_interesting(); break;
		case 7: d->addr = rnd_interesting(); break;
		default: d->strides[k] = 0; break;	/* broadcast, or overlap in an output */
		}
	}
}

static uint32_t rnd_dim(void)
{
	return valid(90) ? 1 + rnd(24) : 1 + rnd(96);
}

static void gen_tensor_cmd(struct cmdbuf *cb, uint16_t op)
{
	union {
		struct maia_cmd_gemm gemm;
		struct maia_cmd_gemm_batched gb;
		struct maia_cmd_eltwise elt;
		struct maia_cmd_scale scale;
		struct maia_cmd_activation act;
		struct maia_cmd_softmax sm;
		struct maia_cmd_norm norm;
		struct maia_cmd_attention attn;
		struct maia_cmd_convert conv;
		struct maia_cmd_reduce red;
		struct maia_cmd_transpose tr;
		uint8_t raw[512];
	} c;
	uint32_t m = rnd_dim(), n = rnd_dim(), k = rnd_dim(), b = 1 + rnd(3);
	uint32_t sh[4] = { m, n, k, b };
	unsigned int dt = rnd_dtype(), rank = 1 + rnd(valid(80) ? 2 : 4);
	size_t size;

	memset(&c, 0, sizeof(c));
	switch (op) {
	case MAIA_OP_GEMM:
	case MAIA_OP_GEMM_BATCHED: {
		uint32_t a_sh[2] = { m, k }, b_sh[2] = { k, n }, c_sh[2] = { m, n }, bias_sh[1] = { n };
		struct maia_cmd_gemm *g = &c.gemm;

		mk_desc(&g->a, dt, 2, a_sh);
		mk_desc(&g->b, valid(80) ? dt : rnd_dtype(), 2, b_sh);
		mk_desc(&g->c, chance(50) ? MAIA_DTYPE_FP32 : rnd_dtype(), 2, c_sh);
		if (chance(30)) {
			g->hdr.flags |= MAIA_GEMM_F_BIAS;
			mk_desc(&g->bias, MAIA_DTYPE_FP32, 1, bias_sh);
		}
		if (chance(20))
			g->hdr.flags |= rnd(MAIA_GEMM_F_ALL + 1);
		g->alpha = valid(70) ? 0 : (uint32_t)rnd64();
		g->beta = valid(70) ? 0 : 0x3f800000u;
		g->activation = valid(90) ? rnd(MAIA_ACT_COUNT) : (uint32_t)rnd64();
		size = sizeof(c.gemm);
		if (op == MAIA_OP_GEMM_BATCHED) {
			struct maia_cmd_gemm_batched *bb = &c.gb;
			uint32_t i, count = valid(95) ? 1 + rnd(4) : (uint32_t)rnd_interesting();

			/* Same leading fields; the pointer arrays follow the command buffer. */
			bb->alpha = g->alpha;
			bb->beta = g->beta;
			bb->activation = g->activation;
			bb->batch_count = count;
			for (i = 0; i < 4; i++) {
				cb->extra[i] = valid(90) ? g->a.addr : rnd_operand(4096);
				cb->extra[4 + i] = valid(90) ? g->b.addr : rnd_operand(4096);
				cb->extra[8 + i] = rnd_operand(4096);
			}
			bb->a_ptrs = cb->extra_dev;
			bb->b_ptrs = cb->extra_dev + 32;
			bb->c_ptrs = cb->extra_dev + 64;
			if (chance(10))
				bb->a_ptrs = rnd_operand(32);
			if (chance(5))
				bb->c_ptrs |= 4;	/* misaligned */
			size = sizeof(c.gb);
		}
		break;
	}
	case MAIA_OP_ADD:
	case MAIA_OP_MUL:
		mk_desc(&c.elt.x, dt, rank, sh);
		mk_desc(&c.elt.y, valid(80) ? dt : rnd_dtype(), rank, sh);
		mk_desc(&c.elt.out, valid(80) ? dt : rnd_dtype(), rank, sh);
		if (chance(20))
			c.elt.hdr.flags = MAIA_ELTWISE_F_SAT;
		size = sizeof(c.elt);
		break;
	case MAIA_OP_SCALE:
		mk_desc(&c.scale.x, dt, rank, sh);
		mk_desc(&c.scale.out, dt, rank, sh);
		c.scale.alpha = chance(50) ? 0x40000000u : (uint32_t)rnd64();
		c.scale.beta = chance(50) ? 0 : (uint32_t)rnd64();
		size = sizeof(c.scale);
		break;
	case MAIA_OP_ACTIVATION:
		mk_desc(&c.act.x, dt, rank, sh);
		mk_desc(&c.act.out, dt, rank, sh);
		c.act.activation = valid(90) ? rnd(MAIA_ACT_COUNT) : (uint32_t)rnd64();
		size = sizeof(c.act);
		break;
	case MAIA_OP_SOFTMAX:
		mk_desc(&c.sm.x, dt, rank, sh);
		mk_desc(&c.sm.out, dt, rank, sh);
		c.sm.hdr.flags = rnd(4);
		c.sm.scale = valid(70) ? 0 : (uint32_t)rnd64();
		size = sizeof(c.sm);
		break;
	case MAIA_OP_LAYERNORM:
	case MAIA_OP_RMSNORM: {
		uint32_t g_sh[1] = { sh[rank - 1] };

		mk_desc(&c.norm.x, dt, rank, sh);
		mk_desc(&c.norm.gamma, MAIA_DTYPE_FP32, 1, g_sh);
		mk_desc(&c.norm.beta, MAIA_DTYPE_FP32, 1, g_sh);
		mk_desc(&c.norm.out, dt, rank, sh);
		c.norm.hdr.flags = chance(20) ? MAIA_NORM_F_NO_AFFINE : 0;
		c.norm.eps = valid(80) ? 0x3727c5acu : (uint32_t)rnd64();	/* 1e-5 */
		size = sizeof(c.norm);
		break;
	}
	case MAIA_OP_ATTENTION: {
		uint32_t q_sh[3] = { b, m, k }, kv_sh[3] = { b, n, k };

		rank = valid(70) ? 2 : 3;
		mk_desc(&c.attn.q, dt, rank, rank == 2 ? q_sh + 1 : q_sh);
		mk_desc(&c.attn.k, dt, rank, rank == 2 ? kv_sh + 1 : kv_sh);
		mk_desc(&c.attn.v, dt, rank, rank == 2 ? kv_sh + 1 : kv_sh);
		mk_desc(&c.attn.out, dt, rank, rank == 2 ? q_sh + 1 : q_sh);
		c.attn.hdr.flags = chance(30) ? MAIA_ATTN_F_CAUSAL : 0;
		c.attn.scale = valid(70) ? 0 : (uint32_t)rnd64();
		size = sizeof(c.attn);
		break;
	}
	case MAIA_OP_QUANTIZE:
	case MAIA_OP_DEQUANTIZE:
		mk_desc(&c.conv.x, op == MAIA_OP_QUANTIZE ? MAIA_DTYPE_FP32 : dt, rank, sh);
		mk_desc(&c.conv.out, op == MAIA_OP_QUANTIZE ? dt : MAIA_DTYPE_FP32, rank, sh);
		c.conv.hdr.flags = rnd(4);
		if (c.conv.hdr.flags & MAIA_QUANT_F_DYNAMIC)
			c.conv.scale_out = rnd_operand(8);
		size = sizeof(c.conv);
		break;
	case MAIA_OP_REDUCE: {
		uint32_t o_sh[4];
		unsigned int i;

		c.red.op = valid(90) ? rnd(MAIA_REDUCE_COUNT) : (uint32_t)rnd64();
		c.red.axes = valid(90) ? 1 + rnd((1u << rank) - 1) : (uint32_t)rnd64();
		for (i = 0; i < 4; i++)
			o_sh[i] = (c.red.axes >> i) & 1 ? 1 : sh[i];
		mk_desc(&c.red.x, dt, rank, sh);
		mk_desc(&c.red.out, chance(50) ? MAIA_DTYPE_FP32 : dt, rank, o_sh);
		size = sizeof(c.red);
		break;
	}
	case MAIA_OP_TRANSPOSE:
	case MAIA_OP_COPY: {
		uint32_t o_sh[4];
		unsigned int i;

		for (i = 0; i < 4; i++)
			c.tr.perm[i] = i < rank ? i : 0;
		if (op == MAIA_OP_TRANSPOSE && rank >= 2) {
			c.tr.perm[rank - 1] = rank - 2;
			c.tr.perm[rank - 2] = rank - 1;
		}
		if (chance(10))
			c.tr.perm[rnd(4)] = rnd(8);
		for (i = 0; i < 4; i++)
			o_sh[i] = sh[c.tr.perm[i] & 3];
		mk_desc(&c.tr.x, dt, rank, sh);
		mk_desc(&c.tr.out, valid(70) ? dt : rnd_dtype(), rank, o_sh);
		size = sizeof(c.tr);
		break;
	}
	default:
		/* Unknown tensor opcode: a random body of a plausible size. */
		size = 8 * (1 + rnd(40));
		for (unsigned int i = 8; i < size; i++)
			c.raw[i] = rnd(256);
		break;
	}
	put_cmd(cb, &c, size, op, c.gemm.hdr.flags);
}

static void gen_cmd(struct cmdbuf *cb)
{
	static const uint16_t ops[] = {
		MAIA_OP_NOP, MAIA_OP_DMA_COPY, MAIA_OP_FILL, MAIA_OP_FENCE_WRITE,
		MAIA_OP_TIMESTAMP, MAIA_OP_SEM_SIGNAL, MAIA_OP_SEM_WAIT,
		MAIA_OP_GEMM, MAIA_OP_GEMM_BATCHED, MAIA_OP_ADD, MAIA_OP_MUL,
		MAIA_OP_SCALE, MAIA_OP_ACTIVATION, MAIA_OP_SOFTMAX, MAIA_OP_LAYERNORM,
		MAIA_OP_RMSNORM, MAIA_OP_ATTENTION, MAIA_OP_QUANTIZE,
		MAIA_OP_DEQUANTIZE, MAIA_OP_REDUCE, MAIA_OP_TRANSPOSE, MAIA_OP_COPY,
	};
	uint16_t op = valid(95) ? ops[rnd(ARRAY_SIZE(ops))] :
		      chance(50) ? 0x07 + rnd(0x30) : rnd(0x10000);

	switch (op) {
	case MAIA_OP_NOP: {
		struct maia_cmd_nop c = { 0 };

		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_DMA_COPY: {
		struct maia_cmd_dma_copy c = { 0 };
		uint64_t w = rnd_len();

		c.height = valid(70) ? 1 : valid(90) ? 1 + rnd(16) : (uint32_t)rnd_interesting();
		if (c.height > 1 && w > 4096 && chance(80))
			w = 8 * (1 + rnd(64));
		c.width = w;
		c.src_stride = valid(80) ? w + 8 * rnd(4) : rnd_interesting();
		c.dst_stride = valid(80) ? w + 8 * rnd(4) : rnd_interesting();
		c.src = rnd_operand(w * c.height);
		c.dst = rnd_operand(w * c.height);
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_FILL: {
		struct maia_cmd_fill c = { 0 };

		c.size = rnd_len();
		c.dst = rnd_operand(c.size);
		c.pattern = rnd64();
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_FENCE_WRITE: {
		struct maia_cmd_fence_write c = { 0 };

		c.addr = rnd_operand(8) | (chance(5) ? rnd(8) : 0);
		c.value = rnd64();
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_TIMESTAMP: {
		struct maia_cmd_timestamp c = { 0 };

		c.addr = rnd_operand(8) | (chance(5) ? rnd(8) : 0);
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_SEM_SIGNAL: {
		struct maia_cmd_sem_signal c = { 0 };

		c.index = valid(90) ? rnd(MAIA_NUM_SEMAPHORES) : (uint32_t)rnd_interesting();
		c.value = valid(80) ? 1 + rnd(4) : (uint32_t)rnd_interesting();
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	case MAIA_OP_SEM_WAIT: {
		struct maia_cmd_sem_wait c = { 0 };

		c.index = valid(90) ? rnd(MAIA_NUM_SEMAPHORES) : (uint32_t)rnd_interesting();
		c.value = valid(80) ? 1 + rnd(2) : (uint32_t)rnd_interesting();
		/* Mostly short waits; a long one is ended by a reset or times out. */
		c.timeout_us = valid(95) ? rnd(2000) : chance(50) ? 200000 : (uint32_t)rnd64();
		put_cmd(cb, &c, sizeof(c), op, 0);
		break;
	}
	default:
		if (op >= MAIA_OP_TENSOR_FIRST && op <= MAIA_OP_TENSOR_LAST) {
			gen_tensor_cmd(cb, op);
		} else {
			uint8_t raw[64];
			size_t size = 8 * (1 + rnd(8));
			unsigned int i;

			for (i = 0; i < size; i++)
				raw[i] = rnd(256);
			put_cmd(cb, raw, size, op, 0);
		}
	}
}

/* ---- Structured sequences ------------------------------------------------- */
/* build_fw(): a record value that a firmware may refuse (the boot then fails). */
static bool fw_risky;

static uint32_t risky(uint64_t v)
{
	fw_risky = true;
	return (uint32_t)v;
}

static void build_fw(uint8_t *img, size_t *len, bool mutate)
{
	static uint32_t crc_table[256];
	struct maia_fw_header *h = (void *)img;
	uint8_t *p = img + sizeof(*h), *start = p;
	uint32_t crc = 0xffffffffu, v;
	unsigned int i, n;
	size_t plen;

	if (!crc_table[1]) {
		for (i = 0; i < 256; i++) {
			uint32_t c = i;
			int b;

			for (b = 0; b < 8; b++)
				c = (c >> 1) ^ (0xedb88320u & -(c & 1));
			crc_table[i] = c;
		}
	}
	memset(h, 0, sizeof(*h));
	fw_risky = false;
	/* TLVs: a valid set, then maybe random records. */
#define TLV(t, l) do { struct maia_fw_tlv tl = { .type = (t), .length = (l) }; \
	memcpy(p, &tl, sizeof(tl)); p += sizeof(tl); } while (0)
	TLV(MAIA_FW_TLV_NAME, 8);
	memcpy(p, "fuzzfw\0\0", 8);
	p += 8;
	TLV(MAIA_FW_TLV_OPCODES, 8);
	{
		uint64_t all = chance(80) ? ~0ull : rnd64();

		memcpy(p, &all, 8);
		p += 8;
	}
	if (chance(50)) {
		TLV(MAIA_FW_TLV_CLOCK_MHZ, 4);
		v = chance(80) ? 500 + rnd(2000) : risky(rnd_interesting());
		memcpy(p, &v, 4);
		p += 4;
	}
	if (chance(50)) {
		TLV(MAIA_FW_TLV_TDP_W, 4);
		v = chance(80) ? 100 + rnd(600) : risky(rnd_interesting());
		memcpy(p, &v, 4);
		p += 4;
	}
	if (chance(40)) {
		TLV(MAIA_FW_TLV_SCHED_QUANTUM_US, 4);
		v = chance(80) ? 10 + rnd(2000) : risky(rnd_interesting());
		memcpy(p, &v, 4);
		p += 4;
	}
	if (chance(15)) {
		TLV(MAIA_FW_TLV_SELFTEST_MS, 4);
		v = chance(90) ? rnd(20) : risky(rnd_interesting());
		memcpy(p, &v, 4);
		p += 4;
	}
	if (mutate && chance(50)) {
		n = 1 + rnd(4);
		while (n--) {
			uint16_t l = chance(80) ? rnd(16) : rnd(0x10000);

			TLV(rnd(10), l);
			for (i = 0; i < (l > 64 ? 64u : l); i++)
				*p++ = rnd(256);
			while ((p - start) & 3)
				*p++ = 0;
		}
	}
	if (chance(50))
		TLV(MAIA_FW_TLV_END, 0);
#undef TLV
	plen = p - start;
	for (i = 0; i < plen; i++)
		crc = crc_table[(crc ^ start[i]) & 0xff] ^ (crc >> 8);
	h->magic = MAIA_FW_MAGIC;
	h->abi_major = MAIA_FW_ABI_MAJOR;
	h->abi_minor = MAIA_FW_ABI_MINOR;
	h->fw_version = MAIA_FW_VERSION(1u, rnd(10), rnd(10));
	h->header_size = sizeof(*h);
	h->payload_size = plen;
	h->payload_crc32 = ~crc;
	snprintf(h->build_id, sizeof(h->build_id), "fuzz-%u", rnd(1000));
	*len = sizeof(*h) + plen;
	if (mutate) {
		switch (rnd(8)) {
		case 0: h->magic ^= 1u << rnd(32); break;
		case 1: h->abi_major = rnd(4); break;
		case 2: h->header_size = (uint32_t)rnd_interesting(); break;
		case 3: h->payload_size = (uint32_t)rnd_interesting(); break;
		case 4: h->flags = rnd64(); break;
		case 5: memset(h->build_id, 'x', sizeof(h->build_id)); break;
		case 6: *len = rnd(*len + 1); break;	/* truncated */
		default:
			n = 1 + rnd(8);
			while (n--)
				img[rnd(*len)] ^= 1u << rnd(8);
		}
	}
}

static void seq_boot(bool valid)
{
	static uint8_t img[4096];
	size_t len;
	uint64_t addr = FW_AREA + (rnd(256) & ~3u);
	uint32_t size, polls;

	build_fw(img, &len, !valid);
	if (!valid && chance(15)) {	/* pure garbage */
		len = 16 + rnd(512);
		for (size_t i = 0; i < len; i++)
			img[i] = rnd(256);
	}
	mem_write(addr, img, len);
	size = len;
	if (!valid && chance(30))
		size = chance(50) ? (uint32_t)rnd_interesting() : MAIA_FW_MAX_SIZE + rnd(2);
	if (!valid && chance(20))
		addr = rnd_addr(size);
	reg_wr(MAIA_REG_BOOT_ADDR_LO, (uint32_t)addr);
	reg_wr(MAIA_REG_BOOT_ADDR_HI, (uint32_t)(addr >> 32));
	reg_wr(MAIA_REG_BOOT_SIZE, size);
	reg_wr(MAIA_REG_BOOT_CTRL, valid || chance(80) ? MAIA_BOOT_CTRL_START : rnd64());
	if (chance(10))	/* START again while loading */
		reg_wr(MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	polls = valid ? 20 : rnd(6);
	while (polls--) {
		if (reg_rd(MAIA_REG_BOOT_STATUS) >= MAIA_BOOT_STATUS_READY && !valid)
			break;
		usleep(200);
	}
	reg_rd(MAIA_REG_BOOT_ERROR);
	reg_rd(MAIA_REG_FW_VERSION);
	/* What the device most likely did (a failed boot ignores START until a reset). */
	if (!D->booted && (!valid || fw_risky))
		D->boot_failed = true;
	if (valid && !fw_risky && !D->boot_failed)
		D->booted = true;
}

static void coll_harvest_dev(struct dev *v, int q);

/* After a reset of v: no firmware, no queue, no context. */
static void forget(struct dev *v)
{
	coll_harvest_dev(v, -1);	/* before a set-up clears the rings */
	v->booted = false;
	v->boot_failed = false;
	v->coll_ctx = false;
	memset(v->q_on, 0, sizeof(v->q_on));
}

static void dev_reset(void)
{
	reg_wr(MAIA_REG_RESET, MAIA_RESET_MAGIC);
	forget(D);
}

static void dev_flr(void)
{
	coll_harvest_dev(D, -1);	/* BAR0 is off after an FLR */
	cfg_wr(PCIE_CAP + PCI_EXP_DEVCTL, 2, PCI_EXP_DEVCTL_FLR);
	forget(D);
	if (chance(90))
		pci_setup();
}

/* QMP system_reset: every device starts over (PCI config included). */
static void system_reset(void)
{
	struct dev *cur = D;

	qmp_cmd("{\"execute\":\"system_reset\"", "\"RESET\"");
	for (D = s.dev; D < s.dev + s.ndev; D++) {
		pci_setup();
		forget(D);
	}
	D = cur;
}

/* Ring size as the fuzzer last set it (8 before any set-up). */
static uint32_t qsz(uint32_t qi)
{
	return D->q_size[qi] ? D->q_size[qi] : 8;
}

/* Mostly not the last queue of several: collectives mostly run there (coll_queue). */
static uint32_t rnd_queue(void)
{
	uint32_t n = D->cfg.queues > 1 && chance(85) ? D->cfg.queues - 1 : D->cfg.queues;

	return chance(95) ? rnd(n) : rnd(MAIA_MAX_QUEUES + 2);
}

static void seq_queue_setup(uint32_t q)
{
	uint32_t size = chance(90) ? 1u << (1 + rnd(6)) : chance(70) ? 1u << (1 + rnd(12)) :
			(uint32_t)rnd_interesting();
	uint64_t sq = SQ_AREA + SQ_STRIDE * (q % MAIA_MAX_QUEUES);
	uint64_t cq = CQ_AREA + CQ_STRIDE * (q % MAIA_MAX_QUEUES);
	uint32_t ctrl = MAIA_Q_CTRL_ENABLE | (rnd(4) << MAIA_Q_CTRL_PRIO_SHIFT);
	bool disabled;

	if (chance(10))
		sq = rnd_addr(32ull * size);
	if (chance(10))
		cq = rnd_addr(40ull * size);
	if (chance(5))
		sq |= 1 + rnd(7);
	if (chance(5))
		ctrl = rnd64();
	disabled = chance(50);
	if (disabled)	/* disable first: addresses are taken only while disabled */
		reg_wr(MAIA_REG_Q(q, MAIA_Q_CTRL), 0);
	if (chance(50) && size <= MAIA_QUEUE_MAX_ENTRIES) {
		if (q < MAIA_MAX_QUEUES)
			coll_harvest_dev(D, q);
		qt("memset 0x%" PRIx64 " 0x%x 0", cq, 40u * size);
	}
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SQ_LO), (uint32_t)sq);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SQ_HI), (uint32_t)(sq >> 32));
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CQ_LO), (uint32_t)cq);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CQ_HI), (uint32_t)(cq >> 32));
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SIZE), size);
	if (chance(15)) {
		uint64_t sh = chance(85) ? SHADOW_AREA + 64 * (q % MAIA_MAX_QUEUES) : rnd_addr(4);

		qt("writel 0x%" PRIx64 " 0", sh);
		reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_LO), (uint32_t)sh);
		reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_HI), (uint32_t)(sh >> 32));
	} else if (chance(30)) {
		reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_LO), 0);
		reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_HI), 0);
	}
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CTRL), ctrl);
	reg_rd(MAIA_REG_Q(q, MAIA_Q_STATUS));
	/* An enabled queue kept its ring, size and tail. */
	if (q < MAIA_MAX_QUEUES && (disabled || !D->q_on[q])) {
		D->q_on[q] = true;
		D->q_tail[q] = 0;
		D->q_size[q] = size && size <= MAIA_QUEUE_MAX_ENTRIES ? size : 8;
	}
}

/* MMU: page tables in HBM for ASID 1..3, then SET_CONTEXT. */
#define PT_ROOT		0x10000ull
static void mbox(uint32_t cmd, const uint32_t *arg, unsigned int polls)
{
	unsigned int i;

	for (i = 0; i < MAIA_MBOX_NARGS; i++)
		reg_wr(MAIA_REG_MBOX_ARG(i), arg[i]);
	reg_wr(MAIA_REG_MBOX_CMD, cmd);
	for (i = 0; i < polls; i++) {
		if (!(reg_rd(MAIA_REG_MBOX_STATUS) & MAIA_MBOX_STATUS_BUSY))
			break;
		usleep(100);
	}
	reg_rd(MAIA_REG_MBOX_RESP(0));
	reg_wr(MAIA_REG_INT_STATUS, MAIA_INT_MBOX_DONE);
}

static void hbm_wr64(uint64_t off, uint64_t val)
{
	qt("writeq 0x%" PRIx64 " 0x%" PRIx64, HBM_ADDR + off, val);
}

static void seq_mmu(void)
{
	uint64_t rw = MAIA_PTE_VALID | MAIA_PTE_READ | MAIA_PTE_WRITE;
	uint32_t asid = 1 + rnd(3), arg[4] = { 0 };
	unsigned int i;

	if (chance(60)) {
		hbm_wr64(PT_ROOT, (PT_ROOT + 0x1000) | MAIA_PTE_VALID);
		hbm_wr64(PT_ROOT + 0x1000, (PT_ROOT + 0x2000) | MAIA_PTE_VALID);
		hbm_wr64(PT_ROOT + 0x2000, (PT_ROOT + 0x3000) | MAIA_PTE_VALID);
		/* L2[1]: a 2 MiB page at HBM 4 MiB (hbm-size >= 16 MiB). */
		hbm_wr64(PT_ROOT + 0x2008, (4ull << 20) | rw | MAIA_PTE_HUGE);
		for (i = 0; i < 16; i++) {
			uint64_t pte = i < 12 ? (0x100000 + 0x1000 * i) | rw :
				       (DATA_AREA + 0x1000 * i) | rw | MAIA_PTE_SYSMEM;

			if (chance(5))
				pte = rnd_interesting();
			hbm_wr64(PT_ROOT + 0x3000 + 8 * i, pte);
		}
	} else {
		/* Garbage in any table entry. */
		hbm_wr64(PT_ROOT + 0x1000 * rnd(4) + 8 * rnd(512),
			 chance(50) ? rnd_interesting() : (rnd64() & ~0xfffull) | (rnd(256)));
	}
	arg[0] = chance(90) ? asid : (uint32_t)rnd_interesting();
	arg[1] = chance(90) ? (uint32_t)PT_ROOT : (uint32_t)rnd_interesting();
	arg[2] = chance(95) ? 0 : (uint32_t)rnd64();
	mbox(chance(80) ? MAIA_MBOX_SET_CONTEXT : MAIA_MBOX_TLB_INVALIDATE, arg, 10);
}

static void seq_mbox(void)
{
	uint32_t arg[4], cmd = chance(90) ? 1 + rnd(4) : (uint32_t)rnd_interesting();
	unsigned int i;

	for (i = 0; i < 4; i++)
		arg[i] = chance(50) ? rnd(300) : (uint32_t)rnd_interesting();
	if (cmd == MAIA_MBOX_SET_POWER_CAP && chance(50))
		arg[0] = 50000 + rnd(700000);
	mbox(cmd, arg, rnd(5));
}

static void ring_doorbell(uint32_t q, uint32_t tail)
{
	if (q < MAIA_MAX_QUEUES && chance(50))	/* a shadow tail, if the queue has one */
		qt("writel 0x%" PRIx64 " 0x%x", SHADOW_AREA + 64 * q, tail);
	reg_wr(MAIA_REG_DOORBELL(q), tail);
}

static void seq_submit(void)
{
	static struct cmdbuf cb;
	uint32_t q = rnd_queue(), njobs = 1 + rnd(4), j, slot;
	uint64_t cbaddr = CMD_AREA + CMD_SLOT * rnd(CMD_SLOTS), cbdev;

	if (!D->booted && chance(60))
		seq_boot(true);
	if (q >= MAIA_MAX_QUEUES || !D->q_on[q] || chance(3))
		seq_queue_setup(q);
	clean_job = chance(35);
	cur_asid = chance(75) ? 0 : chance(90) ? 1 + rnd(3) : rnd(MAIA_MAX_ASIDS + 4);
	if (cur_asid && chance(30))
		seq_mmu();
	/* In a context, the buffer is at VA 0xc000: SYSMEM pages 12.. of seq_mmu. */
	cbdev = cbaddr;
	if (cur_asid) {
		cbaddr = DATA_AREA + 0xc000;
		cbdev = 0xc000;
	}
	cb.len = 0;
	cb.extra_dev = cbdev + CMDBUF_MAX;
	j = 1 + rnd(chance(80) ? 4 : 12);
	while (j--)
		gen_cmd(&cb);
	mem_write(cbaddr, cb.b, cb.len);
	mem_write(cbaddr + CMDBUF_MAX, cb.extra, sizeof(cb.extra));
	for (j = 0; j < njobs; j++) {
		struct maia_sq_entry e = { 0 };
		uint32_t qi = q % MAIA_MAX_QUEUES;

		slot = D->q_tail[qi] % qsz(qi);
		e.cmdbuf_addr = valid(95) ? cbdev : rnd_operand(cb.len);
		e.cmdbuf_size = valid(90) ? cb.len : (uint32_t)rnd_interesting();
		e.asid = cur_asid;
		e.flags = chance(10) ? MAIA_SQE_NOP : chance(3) ? rnd(0x10000) : 0;
		e.job_id = rnd64();
		e.reserved = chance(3) ? rnd64() : 0;
		mem_write(SQ_AREA + SQ_STRIDE * qi + 32ull * slot, &e, sizeof(e));
		D->q_tail[qi] = (D->q_tail[qi] + 1) % qsz(qi);
	}
	clean_job = false;
	ring_doorbell(q, chance(95) ? D->q_tail[q % MAIA_MAX_QUEUES] : (uint32_t)rnd_interesting());
	/* Look at the outcome a few times (values are not used: reproducibility). */
	for (j = rnd(4); j; j--) {
		usleep(rnd(300));
		qt("read 0x%" PRIx64 " 0x28", CQ_AREA + CQ_STRIDE * (q % MAIA_MAX_QUEUES) +
		   (uint64_t)40 * ((D->q_tail[q % MAIA_MAX_QUEUES] + qsz(q % MAIA_MAX_QUEUES) - 1) %
			    qsz(q % MAIA_MAX_QUEUES)));
		reg_rd(MAIA_REG_Q(q, chance(50) ? MAIA_Q_HEAD : MAIA_Q_COMPLETED));
	}
}

/* ---- Collectives across the devices ---------------------------------------- */
/*
 * MAIA_OP_COLLECTIVE on every rank of a ring of devices of this QEMU, with
 * seeded mutations (Documentation/hw/fabric.rst, "Collectives"). A rank's
 * job runs in ASID 0 (buffers in guest RAM or HBM) or in the collective
 * context COLL_ASID, whose tables (HBM at COLL_PT, one 4 KiB table per
 * level) map, by VA:
 *   [0, 4K)        nothing (a null pointer)
 *   [4K, 68K)      command buffers, COLL_RAM + [0, 64K), system memory
 *   [68K, 84K)     reports, then fences, COLL_RAM + [64K, 80K), system memory
 *   [128K, 1M)     HBM 2M + VA, 4 KiB pages, read-write
 *   [1M, 1.5M)     the same, read-only
 *   [1.5M, 2M)     nothing
 *   [2M, 6M)       COLL_RAM + [2M, 6M), 2 MiB system memory pages, read-write
 *   [6M, 10M)      HBM [8M, 12M), 2 MiB pages, read-write
 *   [10M, 12M)     HBM [12M, 14M), read-only
 *   [12M, 14M)     nothing
 *   [14M, 16M)     system memory at UNMAPPED_BUS: DMA errors
 *   [16M, 18M)     another device's HBM BAR by bus address (peer to peer)
 */
#define COLL_ASID	4u
#define COLL_PT		UINT64_C(0x20000)	/* HBM offset of L0; L1..L3 follow */
#define MIB		(UINT64_C(1) << 20)
#define KIB		(UINT64_C(1) << 10)
#define COLL_CB_SLOTS	16u		/* 4 KiB command buffers at COLL_RAM */
#define COLL_REPORTS	256u		/* 32-byte reports at COLL_RAM + 64K, fences after */
#define COLL_LATER_MAX	32u
#define COLL_JOBS_MAX	256u

/* What is wrong with one rank (the victim) of a collective. */
enum coll_mut {
	CM_CLEAN, CM_RECV_UNMAPPED, CM_SEND_UNMAPPED, CM_RECV_RO, CM_RECV_ABSENT,
	CM_SEND_ABSENT, CM_REPORT_BAD, CM_PEER_MEM, CM_BOGUS_COMM, CM_BOGUS_RANK,
	CM_BOGUS_FIELD, CM_COUNT
};
static const char *const coll_mut_name[CM_COUNT] = {
	"clean", "recv-unmapped", "send-unmapped", "recv-read-only", "recv-not-mapped",
	"send-not-mapped", "report-bad", "peer-memory", "bogus-comm", "bogus-rank-ports",
	"bogus-field",
};

/* When the ranks come, and what happens to the ring meanwhile. */
enum coll_when {
	CW_ON_TIME, CW_LATE, CW_NEVER, CW_RESET, CW_FLR, CW_SYSTEM_RESET, CW_CABLE, CW_COUNT
};
static const char *const coll_when_name[CW_COUNT] = {
	"on-time", "late", "never", "reset", "flr", "system-reset", "cable-pulled",
};

/* One rank's job. */
struct coll_rank {
	uint8_t dev, q;
	bool ctx;			/* in COLL_ASID, else ASID 0 */
	bool nop, fence;		/* a NOP before, a FENCE_WRITE after */
	uint8_t ncmd;			/* 1, or 2: seq and seq + 1 */
	uint32_t cb_slot, report_slot;
	uint64_t report_bus;		/* its report in our RAM, or 0 */
	struct maia_cmd_collective k;
};

/* A job whose completion is read later (for --stats and the summary). */
struct coll_job {
	uint64_t at_step, job_id, cqe, report_bus;
	uint8_t dev, q;
};

/* An action deferred to a later step: a late rank, or a cable put back. */
struct coll_later {
	uint64_t at_step;
	bool link_on;
	unsigned int cable;
	char end;
	struct coll_rank r;
};

static struct {
	uint32_t comm_id[4], comm_seq[4];
	uint32_t cb_next[MAX_DEVS], report_next[MAX_DEVS];
	uint64_t next_job;
	bool cable_off[MAX_DEVS];
	struct coll_later later[COLL_LATER_MAX];
	unsigned int nlater;
	struct coll_job jobs[COLL_JOBS_MAX];
	unsigned int njobs;
} cs;

/* Totals over all runs. */
static struct {
	uint64_t seqs, jobs, late_bad_mem, by_nranks[4], by_coll[6];
	uint64_t by_mut[CM_COUNT], by_when[CW_COUNT];
	uint64_t status[MAIA_STATUS_FABRIC_COMM_BUSY + 2], waiting, unseen;
	uint64_t report_status[MAIA_STATUS_FABRIC_COMM_BUSY + 2], report_unwritten;
	uint64_t fabric_waits, ops, bytes_sent, bytes_received, max_step;
} cst;

static void coll_reset_run(void)
{
	unsigned int i;

	memset(&cs, 0, sizeof(cs));
	for (i = 0; i < ARRAY_SIZE(cs.comm_id); i++)
		cs.comm_id[i] = (uint32_t)rnd64() | 1;
	cs.next_job = UINT64_C(0xc011) << 48;
}

/* Writes one 4 KiB page table at HBM offset off. */
static void hbm_table(uint64_t off, const uint64_t *t)
{
	mem_write(HBM_ADDR + off, t, 4096);
}

/* The collective context's tables (see above), then SET_CONTEXT. */
static void coll_ctx_setup(void)
{
	static uint64_t t[512];
	const uint64_t rw = MAIA_PTE_VALID | MAIA_PTE_READ | MAIA_PTE_WRITE;
	const uint64_t ro = MAIA_PTE_VALID | MAIA_PTE_READ;
	uint64_t cr = COLL_RAM(D->index);
	uint32_t arg[4] = { COLL_ASID, (uint32_t)COLL_PT, 0, 0 };
	unsigned int i;

	memset(t, 0, sizeof(t));
	t[0] = (COLL_PT + 0x1000) | MAIA_PTE_VALID;
	hbm_table(COLL_PT, t);
	t[0] = (COLL_PT + 0x2000) | MAIA_PTE_VALID;
	hbm_table(COLL_PT + 0x1000, t);
	t[0] = (COLL_PT + 0x3000) | MAIA_PTE_VALID;
	t[1] = (cr + 2 * MIB) | rw | MAIA_PTE_HUGE | MAIA_PTE_SYSMEM;
	t[2] = (cr + 4 * MIB) | rw | MAIA_PTE_HUGE | MAIA_PTE_SYSMEM;
	t[3] = (8 * MIB) | rw | MAIA_PTE_HUGE;
	t[4] = (10 * MIB) | rw | MAIA_PTE_HUGE;
	t[5] = (12 * MIB) | ro | MAIA_PTE_HUGE;
	t[6] = 0;
	t[7] = UNMAPPED_BUS | rw | MAIA_PTE_HUGE | MAIA_PTE_SYSMEM;
	t[8] = other_dev()->hbm | rw | MAIA_PTE_HUGE | MAIA_PTE_SYSMEM;
	if (chance(3))
		t[rnd(9)] = rnd_interesting();
	hbm_table(COLL_PT + 0x2000, t);
	memset(t, 0, sizeof(t));
	for (i = 1; i < 21; i++)	/* command buffers, then reports */
		t[i] = (cr + (i - 1) * 0x1000) | rw | MAIA_PTE_SYSMEM;
	for (i = 32; i < 384; i++)
		t[i] = (2 * MIB + i * 0x1000) | (i < 256 ? rw : ro);
	if (chance(3))
		t[rnd(512)] = rnd_interesting();
	hbm_table(COLL_PT + 0x3000, t);
	if (chance(5))
		arg[1] = (uint32_t)rnd_interesting();
	mbox(MAIA_MBOX_SET_CONTEXT, arg, 10);
	D->coll_ctx = true;
}

/*
 * A queue set up afresh for a rank: random doorbells leave most queues in
 * an error state or far behind stale entries; a job parked on it is dropped.
 */
static void coll_queue(uint32_t q)
{
	uint64_t sq = SQ_AREA + SQ_STRIDE * q, cq = CQ_AREA + CQ_STRIDE * q;
	uint32_t size = 1u << (chance(80) ? 5 + rnd(3) : 1 + rnd(4));	/* small ones wrap */

	coll_harvest_dev(D, q);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CTRL), 0);
	qt("memset 0x%" PRIx64 " 0x%x 0", cq, 40u * size);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SQ_LO), (uint32_t)sq);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SQ_HI), (uint32_t)(sq >> 32));
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CQ_LO), (uint32_t)cq);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CQ_HI), (uint32_t)(cq >> 32));
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SIZE), size);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_LO), 0);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_SHADOW_HI), 0);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_ASID), 0);
	reg_wr(MAIA_REG_Q(q, MAIA_Q_CTRL), MAIA_Q_CTRL_ENABLE | rnd(3) << MAIA_Q_CTRL_PRIO_SHIFT);
	D->q_on[q] = true;
	D->q_tail[q] = 0;
	D->q_size[q] = size;
}

/*
 * A boot that works (seq_boot() draws record values a firmware may refuse),
 * after a reset if a boot may have failed, then a wait for READY: a
 * doorbell before it is ignored. The same reads every time (a seed replays
 * the same commands); only the sleeps depend on the answers.
 */
static void coll_boot(void)
{
	static uint8_t img[4096];
	const size_t opcodes_at = sizeof(struct maia_fw_header) + 16;	/* after NAME */
	size_t len;
	unsigned int i;
	uint64_t ops;

	if (D->boot_failed || chance(10))
		dev_reset();
	do {	/* refusable values, or no collectives: draw again */
		build_fw(img, &len, false);
		memcpy(&ops, img + opcodes_at, 8);
	} while (fw_risky || !(ops >> MAIA_OP_COLLECTIVE & 1));
	mem_write(FW_AREA, img, len);
	reg_wr(MAIA_REG_BOOT_ADDR_LO, (uint32_t)FW_AREA);
	reg_wr(MAIA_REG_BOOT_ADDR_HI, (uint32_t)(FW_AREA >> 32));
	reg_wr(MAIA_REG_BOOT_SIZE, len);
	reg_wr(MAIA_REG_BOOT_CTRL, MAIA_BOOT_CTRL_START);
	for (i = 0; i < 4; i++)
		if (reg_rd(MAIA_REG_BOOT_STATUS) != MAIA_BOOT_STATUS_READY)
			usleep(3000);
	D->booted = true;
}

/* Firmware, the queue and (for a context job) the context, mostly. */
static void coll_prepare(const struct coll_rank *r)
{
	D = &s.dev[r->dev];
	if (!D->booted && chance(90))
		coll_boot();
	if (!D->q_on[r->q] || chance(8))
		coll_queue(r->q);
	if (r->ctx && (!D->coll_ctx ? chance(95) : chance(3)))
		coll_ctx_setup();
}

/* Element size on the wire's buffers, and the buffers' sizes in bytes. */
static void coll_bytes(const struct maia_cmd_collective *k, uint64_t *sb, uint64_t *rb)
{
	uint64_t es = k->dtype == MAIA_DTYPE_BF16 ? 2 : 4, n = k->nranks ? k->nranks : 1;

	*sb = *rb = k->count * es;
	if (k->coll == MAIA_COLL_REDUCE_SCATTER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*sb *= n;
	if (k->coll == MAIA_COLL_ALL_GATHER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*rb *= n;
}

/* A random start for len bytes in [lo, hi) (len must fit), 64-byte aligned or not. */
static uint64_t coll_at(uint64_t lo, uint64_t hi, uint64_t len)
{
	uint64_t span = hi - lo > len ? hi - lo - len : 0;
	uint64_t off = span ? rnd64() % (span + 1) : 0;

	off &= chance(90) ? ~UINT64_C(63) : ~UINT64_C(1);
	return lo + off;
}

/*
 * A good place for len bytes: half 0 or 1 of a region of the rank's address
 * space, so that send and receive buffers do not overlap.
 */
static uint64_t coll_good(const struct coll_rank *r, uint64_t len, unsigned int half)
{
	uint64_t lo, hi, mid;
	struct dev *v = &s.dev[r->dev];

	if (r->ctx) {
		static const uint64_t reg[3][2] = {
			{ 128 * KIB, 1 * MIB }, { 2 * MIB, 6 * MIB }, { 6 * MIB, 10 * MIB },
		};
		unsigned int i = rnd(3);

		if ((reg[i][1] - reg[i][0]) / 2 < len)
			i = 1 + rnd(2);	/* 2 MiB halves: ctx buffers are at most 2 MiB */
		lo = reg[i][0];
		hi = reg[i][1];
	} else if (chance(60) || v->cfg.hbm_size - 4 * MIB < 2 * len) {
		lo = COLL_RAM(r->dev) + 2 * MIB;
		hi = COLL_RAM(r->dev) + 16 * MIB;
	} else {
		lo = MAIA_PHYS_HBM | 4 * MIB;
		hi = MAIA_PHYS_HBM | v->cfg.hbm_size;
	}
	mid = lo + (hi - lo) / 2;
	return half ? coll_at(mid, hi, len) : coll_at(lo, mid, len);
}

/* A place for len bytes that fails as mutation m says (part of it may be fine). */
static uint64_t coll_bad(const struct coll_rank *r, uint64_t len, enum coll_mut m)
{
	uint64_t part = len ? rnd64() % len : 0;	/* the good bytes before the bad ones */

	switch (m) {
	case CM_RECV_UNMAPPED:
	case CM_SEND_UNMAPPED:
		if (r->ctx)
			return coll_at(14 * MIB, 16 * MIB, 0);
		switch (rnd(3)) {
		case 0:
			return UNMAPPED_BUS + (rnd64() % (1ull << 30) & ~63ull);
		case 1:
			return RAM_SIZE - (part & ~7ull);		/* off the end of RAM */
		default:
			return MAIA_PHYS_HBM | (s.dev[r->dev].cfg.hbm_size - (part & ~7ull));
		}
	case CM_RECV_RO:
		if (chance(50))
			return 1 * MIB - (part < 896 * KIB ? part & ~63ull : 0);	/* RW into RO */
		return chance(50) ? coll_at(1 * MIB, 1536 * KIB, 0) : coll_at(10 * MIB, 12 * MIB, 0);
	case CM_PEER_MEM:
		if (r->ctx)
			return coll_at(16 * MIB, 18 * MIB, 0);
		return other_dev()->hbm + (rnd64() % (8 * MIB) & ~63ull);
	default:	/* not mapped */
		switch (rnd(5)) {
		case 0:
			return 0;
		case 1:
			return 1536 * KIB - (part < 512 * KIB ? part & ~63ull : 0);	/* RO into nothing */
		case 2:
			return coll_at(12 * MIB, 14 * MIB, 0);
		case 3:
			return (1ull << 40) + (rnd64() % MIB & ~63ull);
		default:
			return coll_at(1536 * KIB, 2 * MIB, 0);
		}
	}
}

/* A report place: its VA or bus address, and where we can read it back. */
static uint64_t coll_report(struct coll_rank *r, bool bad)
{
	uint64_t bus;

	r->report_slot = cs.report_next[r->dev]++ % COLL_REPORTS;
	bus = COLL_RAM(r->dev) + 64 * KIB + 32 * r->report_slot;
	r->report_bus = 0;
	if (!bad) {
		if (chance(15))
			return 0;	/* no report */
		r->report_bus = bus;
		return r->ctx ? 68 * KIB + 32 * r->report_slot : bus;
	}
	switch (rnd(7)) {
	case 0:
		return (r->ctx ? 68 * KIB + 32 * r->report_slot : bus) + 1 + rnd(7);	/* misaligned */
	case 1:
		return ~0ull - 8 * rnd(4);	/* wraps */
	case 2:
		return r->ctx ? coll_at(14 * MIB, 16 * MIB, 0) : UNMAPPED_BUS + 8 * rnd(1000);
	case 3:
		return r->ctx ? coll_at(10 * MIB, 12 * MIB, 0) & ~7ull : RAM_SIZE - 8 * rnd(4);
	case 4:
		return r->ctx ? coll_at(12 * MIB, 14 * MIB, 0) & ~7ull : 0xfee00000ull;
	case 5:
		return other_dev()->bar0 + 8 * rnd(MAIA_BAR0_SIZE / 8);	/* registers */
	default:
		return MAIA_PHYS_HBM | (s.dev[r->dev].cfg.hbm_size - 8 * rnd(4));
	}
}

static void coll_bogus_rank(struct maia_cmd_collective *k, unsigned int nports)
{
	switch (rnd(7)) {
	case 0:
		if (k->nranks > 1)	/* another rank's number: two of one, none of another */
			k->rank = (k->rank + 1 + rnd(k->nranks - 1)) % k->nranks;
		else
			k->rank = 1;
		break;
	case 1:
		k->rank = k->nranks + rnd(3);
		break;
	case 2:
		k->nranks = k->nranks > 1 && chance(50) ? k->nranks - 1 : k->nranks + 1;
		break;
	case 3: {
		uint8_t p = k->send_port;

		k->send_port = k->recv_port;
		k->recv_port = p;
		break;
	}
	case 4:
		if (chance(50))
			k->send_port = rnd(nports + 2);
		else
			k->recv_port = rnd(nports + 2);
		break;
	case 5:
		k->nranks = chance(50) ? 0 : (uint16_t)(MAIA_COLL_MAX_RANKS + rnd(0x10000 - MAIA_COLL_MAX_RANKS));
		break;
	default:
		k->root = rnd(k->nranks + 2);
	}
}

static void coll_bogus_field(struct maia_cmd_collective *k)
{
	switch (rnd(11)) {
	case 0:
		k->coll = chance(70) ? 1u + (k->coll % 5u) : rnd(256);
		break;
	case 1:
		k->dtype = chance(50) ? (k->dtype == MAIA_DTYPE_FP32 ? MAIA_DTYPE_BF16 : MAIA_DTYPE_FP32) :
			   rnd(MAIA_DTYPE_COUNT + 2);
		break;
	case 2:
		k->redop = chance(50) ? (k->redop + 1u) % 3u : 3 + rnd(253);
		break;
	case 3:
		k->algo = rnd(chance(80) ? 3 : 256);
		break;
	case 4:
		k->count = chance(60) ? k->count + 1 + rnd(64) : rnd_interesting();
		break;
	case 5:
		k->chunk_bytes = chance(50) ? 4 * (1 + rnd(MAIA_FABRIC_MSG_MAX_DATA / 4)) :
				 (uint32_t)rnd_interesting() | (chance(50) ? 1 : 0);
		break;
	case 6:
		/* Bit 0 is MAIA_COLL_F_REACH, valid since hardware 1.10. */
		k->hdr.flags = (uint16_t)((1 + rnd(0x7fff)) << 1);
		break;
	case 7:
		k->reserved1 = 1 + rnd(0xffff);
		break;
	case 8:
		k->hdr.size = chance(50) ? sizeof(*k) - 8 : sizeof(*k) + 8;
		break;
	case 9:
		k->timeout_ms = chance(50) ? 1 : (uint32_t)rnd_interesting() % 3000;
		break;
	default:
		k->send_addr = k->recv_addr;	/* in place where it is not allowed */
	}
}

/* Reads a rank job's completion entry and report later, for the counts. */
static void coll_harvest(const struct coll_job *j)
{
	struct maia_coll_report rep;
	uint64_t fs, id;
	uint32_t st;

	D = &s.dev[j->dev];
	fs = qt("readq 0x%" PRIx64, j->cqe + 8);
	id = qt("readq 0x%" PRIx64, j->cqe);
	/* Still parked on the fabric, or gone (ring reused, reset)? */
	st = reg_rd(MAIA_REG_Q(j->q, MAIA_Q_STATUS));
	if (id == j->job_id && (fs >> 32) & MAIA_CQE_VALID)
		cst.status[(uint32_t)fs <= MAIA_STATUS_FABRIC_COMM_BUSY ? (uint32_t)fs :
			   MAIA_STATUS_FABRIC_COMM_BUSY + 1]++;
	else if (st & MAIA_Q_STATUS_FABRIC_WAIT)
		cst.waiting++;
	else
		cst.unseen++;
	if (!j->report_bus)
		return;
	mem_read(j->report_bus, &rep, sizeof(rep));
	st = rep.status;
	if (st == UINT32_MAX) {
		cst.report_unwritten++;
		return;
	}
	cst.report_status[st <= MAIA_STATUS_FABRIC_COMM_BUSY ? st :
			  MAIA_STATUS_FABRIC_COMM_BUSY + 1]++;
	if (st <= MAIA_STATUS_FABRIC_COMM_BUSY) {
		cst.bytes_sent += rep.bytes_sent;
		cst.bytes_received += rep.bytes_received;
		if (rep.step > cst.max_step)
			cst.max_step = rep.step;
	}
}

/* Reads v's jobs (on queue q, or all) now, before their rings are cleared. */
static void coll_harvest_dev(struct dev *v, int q)
{
	struct dev *cur = D;
	unsigned int i = 0;

	while (i < cs.njobs) {
		if (cs.jobs[i].dev != v->index || (q >= 0 && cs.jobs[i].q != q)) {
			i++;
			continue;
		}
		coll_harvest(&cs.jobs[i]);
		cs.jobs[i] = cs.jobs[--cs.njobs];
	}
	D = cur;
}

static void coll_harvest_due(bool all)
{
	unsigned int i = 0;

	while (i < cs.njobs) {
		if (!all && cs.jobs[i].at_step > s.run_steps) {
			i++;
			continue;
		}
		coll_harvest(&cs.jobs[i]);
		cs.jobs[i] = cs.jobs[--cs.njobs];
	}
}

/* Writes a rank's command buffer and queue entry, and rings the doorbell. */
static void coll_submit(struct coll_rank *r, bool prepare)
{
	uint8_t cb[4 * sizeof(struct maia_cmd_collective)];
	struct maia_sq_entry e = { 0 };
	uint64_t cbbus, cbva;
	size_t len = 0;
	uint32_t q = r->q, slot, i;

	if (prepare)
		coll_prepare(r);
	D = &s.dev[r->dev];
	if (r->nop) {
		struct maia_cmd_nop c = { .hdr = { .opcode = MAIA_OP_NOP, .size = sizeof(c) } };

		memcpy(cb + len, &c, sizeof(c));
		len += sizeof(c);
	}
	for (i = 0; i < r->ncmd; i++) {
		struct maia_cmd_collective k = r->k;

		k.seq += i;	/* the second's report overwrites the first's */
		memcpy(cb + len, &k, sizeof(k));
		len += sizeof(k);
	}
	if (r->fence) {
		struct maia_cmd_fence_write c = {
			.hdr = { .opcode = MAIA_OP_FENCE_WRITE, .size = sizeof(c) },
			.addr = (r->ctx ? 68 * KIB : COLL_RAM(r->dev) + 64 * KIB) + 8 * KIB +
				32 * r->report_slot,
			.value = rnd64(),
		};

		memcpy(cb + len, &c, sizeof(c));
		len += sizeof(c);
	}
	if (r->report_bus)
		qt("memset 0x%" PRIx64 " 0x20 0xff", r->report_bus);
	r->cb_slot = cs.cb_next[r->dev]++ % COLL_CB_SLOTS;
	cbbus = COLL_RAM(r->dev) + 0x1000 * r->cb_slot;
	cbva = r->ctx ? 0x1000 * (1 + r->cb_slot) : cbbus;
	mem_write(cbbus, cb, len);
	slot = D->q_tail[q] % qsz(q);
	e.cmdbuf_addr = cbva;
	e.cmdbuf_size = len;
	e.asid = r->ctx ? COLL_ASID : 0;
	e.job_id = cs.next_job++;
	mem_write(SQ_AREA + SQ_STRIDE * q + 32ull * slot, &e, sizeof(e));
	D->q_tail[q] = (D->q_tail[q] + 1) % qsz(q);
	qt("writel 0x%" PRIx64 " 0x%x", SHADOW_AREA + 64 * q, D->q_tail[q]);
	reg_wr(MAIA_REG_DOORBELL(q), D->q_tail[q]);
	cst.jobs++;
	if (cs.njobs == COLL_JOBS_MAX) {
		coll_harvest(&cs.jobs[0]);
		cs.jobs[0] = cs.jobs[--cs.njobs];
		D = &s.dev[r->dev];
	}
	cs.jobs[cs.njobs++] = (struct coll_job){
		.at_step = s.run_steps + 30 + rnd(600), .job_id = e.job_id,
		.cqe = CQ_AREA + CQ_STRIDE * q + 40ull * slot, .report_bus = r->report_bus,
		.dev = r->dev, .q = q,
	};
}

/* QMP set_link on one end of cable i (device i's port 0 to device i+1's port 1). */
static void set_link(unsigned int i, char end, bool up)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "{\"execute\":\"set_link\",\"arguments\":"
		 "{\"name\":\"c%u%c\",\"up\":%s}", i, end, up ? "true" : "false");
	qmp_cmd(cmd, NULL);
}

static struct coll_later *later_slot(uint64_t steps)
{
	struct coll_later *l;

	if (cs.nlater == COLL_LATER_MAX)
		return NULL;
	l = &cs.later[cs.nlater++];
	memset(l, 0, sizeof(*l));
	l->at_step = s.run_steps + steps;
	return l;
}

/* Pulls cable i out (one end) for the next `steps` steps. */
static void cable(unsigned int i, uint64_t steps)
{
	struct coll_later *l;
	char end = chance(50) ? 'a' : 'b';

	if (s.qmp < 0 || s.ndev < 2 || cs.cable_off[i] || !(l = later_slot(steps)))
		return;
	set_link(i, end, false);
	cs.cable_off[i] = true;
	l->link_on = true;
	l->cable = i;
	l->end = end;
}

/* Runs what is due: late ranks, cables put back. */
static void coll_run_later(void)
{
	unsigned int i = 0;

	while (i < cs.nlater) {
		struct coll_later l = cs.later[i];

		if (l.at_step > s.run_steps) {
			i++;
			continue;
		}
		cs.later[i] = cs.later[--cs.nlater];
		if (l.link_on) {
			set_link(l.cable, l.end, true);
			cs.cable_off[l.cable] = false;
		} else {
			coll_submit(&l.r, true);
		}
	}
}

/* Counts so that a buffer stays within a few MiB; tiny ones take gather-reduce. */
static uint64_t coll_count(unsigned int mult, unsigned int es)
{
	uint64_t c, max = 4 * MIB / es / mult;
	uint32_t r = rnd(100);

	if (r < 4)
		c = 0;
	else if (r < 35)
		c = 1 + rnd(64);
	else if (r < 65)
		c = 1 + rnd(16384);
	else if (r < 95)
		c = 1 + rnd(262144);
	else
		c = 1 + rnd(1u << 20);
	return c > max ? max : c;
}

/*
 * One collective: the ring (all devices, two ranks over one cable, or one
 * rank), its command, the ranks' buffers, one mutation on one rank (the
 * victim), then the submissions in a random order, with the victim late,
 * missing, or a reset or pulled cable while the ring runs.
 */
static void seq_coll(void)
{
	struct coll_rank rk[MAX_DEVS];
	struct maia_cmd_collective k = { 0 };
	enum coll_mut mut = CM_CLEAN;
	enum coll_when when = CW_ON_TIME;
	unsigned int n, first, i, victim, order[MAX_DEVS], cables = 0, ci, ncmd;
	uint64_t sb, rb;
	bool two = false;
	uint32_t r;

	/* The ring. */
	r = rnd(100);
	if (s.ndev == 1)
		n = r < 70 ? 1 : 2;	/* two ranks, the second never there */
	else if (r < 15)
		n = 1;
	else if (r < 55 || s.ndev == 2)
		n = s.ndev;
	else
		n = 2, two = true;	/* two ranks over one cable of the ring */
	if (s.ndev == 2 && n == 2 && chance(40))
		two = true;
	first = rnd(s.ndev);
	k.hdr.opcode = MAIA_OP_COLLECTIVE;
	k.hdr.size = sizeof(k);
	k.coll = 1 + rnd(5);
	k.redop = rnd(3);
	k.dtype = chance(70) ? MAIA_DTYPE_FP32 : MAIA_DTYPE_BF16;
	r = rnd(100);
	k.algo = r < 60 ? MAIA_COLL_ALGO_AUTO : r < 85 ? MAIA_COLL_ALGO_RING :
		 MAIA_COLL_ALGO_GATHER_REDUCE;
	k.nranks = n;
	k.root = rnd(n);
	ci = rnd(ARRAY_SIZE(cs.comm_id));
	k.comm_id = chance(90) ? cs.comm_id[ci] : (uint32_t)rnd64();
	if (chance(10) && cs.comm_seq[ci])
		cs.comm_seq[ci]--;	/* a seq again */
	else if (chance(5))
		cs.comm_seq[ci] += 1 + rnd(4);
	k.seq = cs.comm_seq[ci];
	k.count = coll_count(k.coll == MAIA_COLL_ALL_REDUCE || k.coll == MAIA_COLL_BROADCAST ? 1 : n,
			     k.dtype == MAIA_DTYPE_BF16 ? 2 : 4);
	/* Gather-reduce asked for where it does not apply: BAD_CMD on every rank, now and then. */
	if (k.algo == MAIA_COLL_ALGO_GATHER_REDUCE && chance(90) &&
	    (k.coll != MAIA_COLL_ALL_REDUCE || !maia_coll_gather_reduce_fits(k.count, n)))
		k.algo = MAIA_COLL_ALGO_AUTO;
	coll_bytes(&k, &sb, &rb);
	ncmd = chance(10) ? 2 : 1;
	if (chance(40)) {
		k.chunk_bytes = 0;
	} else {
		static const uint32_t chunks[] = { 4, 64, 1024, 4096, 8192, 32768, 61440 };
		uint64_t least = (sb > rb ? sb : rb) / 1024;	/* at most ~1024 chunks a step */

		k.chunk_bytes = chance(50) ? chunks[rnd(ARRAY_SIZE(chunks))] :
				4 * (1 + rnd(MAIA_FABRIC_MSG_MAX_DATA / 4));
		if (k.chunk_bytes < least)
			k.chunk_bytes = least > MAIA_FABRIC_MSG_MAX_DATA - 4 ? MAIA_FABRIC_MSG_MAX_DATA :
					(uint32_t)(least + 4) & ~3u;
	}
	r = rnd(100);
	k.timeout_ms = r < 60 ? 20 + rnd(400) : r < 75 ? 0 : 1 + rnd(20);

	/* What goes wrong. */
	if (chance(40)) {
		mut = CM_CLEAN;
	} else {
		mut = 1 + rnd(CM_COUNT - 1);
	}
	r = rnd(100);
	if (n == 1)
		when = r < 85 ? CW_ON_TIME : CW_RESET + rnd(3);
	else if (s.ndev == 1)
		when = CW_NEVER;
	else if (r < 50)
		when = CW_ON_TIME;
	else if (r < 68)
		when = CW_LATE;
	else if (r < 76)
		when = CW_NEVER;
	else if (r < 84)
		when = CW_RESET;
	else if (r < 90)
		when = CW_FLR;
	else if (r < 93)
		when = CW_SYSTEM_RESET;
	else
		when = CW_CABLE;
	if ((when == CW_SYSTEM_RESET || when == CW_CABLE) && s.qmp < 0)
		when = CW_RESET;
	victim = rnd(n);
	if (when == CW_LATE && chance(40))	/* a late rank with bad memory: the crash of a55a249 */
		mut = (enum coll_mut[]){ CM_RECV_UNMAPPED, CM_RECV_RO, CM_RECV_ABSENT,
					 CM_REPORT_BAD }[rnd(4)];
	/* Read-only and unmapped pages are the context's; its buffers are <= 2 MiB. */
	if ((mut == CM_RECV_RO || mut == CM_RECV_ABSENT || mut == CM_SEND_ABSENT) &&
	    (sb > 2 * MIB || rb > 2 * MIB))
		mut = CM_RECV_UNMAPPED;
	if (when == CW_LATE)
		k.timeout_ms = chance(50) ? 0 : 200 + rnd(2000);
	else if (when == CW_NEVER)
		k.timeout_ms = 5 + rnd(150);

	/* The ranks: rank i on device first + i, ports as cabled. */
	for (i = 0; i < n; i++) {
		struct coll_rank *p = &rk[i];
		struct dev *v;

		memset(p, 0, sizeof(*p));
		p->dev = (first + i) % s.ndev;
		v = &s.dev[p->dev];
		p->q = v->cfg.queues > 1 && chance(80) ? v->cfg.queues - 1 : rnd(v->cfg.queues);
		p->ctx = chance(35) && sb <= 2 * MIB && rb <= 2 * MIB;
		p->nop = chance(10);
		p->fence = chance(15);
		p->ncmd = ncmd;
		p->k = k;
		p->k.rank = i;
		if (s.ndev == 1) {
			p->k.send_port = rnd(2);
			p->k.recv_port = rnd(2);
		} else if (two || n == 1) {
			p->k.send_port = p->k.recv_port = i;	/* device first's port 0 to first+1's port 1 */
		} else {
			p->k.send_port = 0;
			p->k.recv_port = 1;
		}
		if (i == victim && (mut == CM_RECV_RO || mut == CM_RECV_ABSENT || mut == CM_SEND_ABSENT))
			p->ctx = true;
		p->k.send_addr = coll_good(p, sb, 0);
		p->k.recv_addr = coll_good(p, rb, 1);
		if ((k.coll == MAIA_COLL_ALL_REDUCE || k.coll == MAIA_COLL_BROADCAST) && chance(15))
			p->k.recv_addr = p->k.send_addr;	/* in place */
		p->k.report_addr = coll_report(p, i == victim && mut == CM_REPORT_BAD);
		if (!p->ctx && !(p->k.send_addr & MAIA_PHYS_HBM) && sb && chance(20))
			qt("memset 0x%" PRIx64 " 0x%" PRIx64 " 0x%x", (uint64_t)p->k.send_addr,
			   sb < 64 * KIB ? sb : 64 * KIB, rnd(256));	/* NaNs, infinities, zeros */
	}
	if (two)
		cables = 1u << first;
	else if (n > 1 && s.ndev > 1)
		cables = (1u << s.ndev) - 1;

	/* The victim's mutation. */
	switch (mut) {
	case CM_RECV_UNMAPPED:
	case CM_RECV_RO:
	case CM_RECV_ABSENT:
		rk[victim].k.recv_addr = coll_bad(&rk[victim], rb, mut);
		break;
	case CM_SEND_UNMAPPED:
	case CM_SEND_ABSENT:
		rk[victim].k.send_addr = coll_bad(&rk[victim], sb, mut);
		break;
	case CM_PEER_MEM:
		if (chance(50))
			rk[victim].k.recv_addr = coll_bad(&rk[victim], rb, mut);
		else
			rk[victim].k.send_addr = coll_bad(&rk[victim], sb, mut);
		break;
	case CM_BOGUS_COMM:
		if (chance(50))
			rk[victim].k.comm_id = chance(50) ? cs.comm_id[rnd(4)] : (uint32_t)rnd64();
		else
			rk[victim].k.seq += chance(50) ? 1 : -1;
		break;
	case CM_BOGUS_RANK:
		coll_bogus_rank(&rk[victim].k, s.dev[rk[victim].dev].nports);
		break;
	case CM_BOGUS_FIELD:
		coll_bogus_field(&rk[victim].k);
		break;
	default:
		break;
	}
	cst.seqs++;
	cst.by_mut[mut]++;
	cst.by_when[when]++;
	cst.by_nranks[n]++;
	cst.by_coll[k.coll]++;
	if (when == CW_LATE && (mut == CM_RECV_UNMAPPED || mut == CM_RECV_RO ||
				mut == CM_RECV_ABSENT || mut == CM_REPORT_BAD))
		cst.late_bad_mem++;
	for (i = 0; i < ARRAY_SIZE(cs.comm_seq); i++)
		if (cs.comm_id[i] == k.comm_id)
			cs.comm_seq[i] += ncmd;

	/* Firmware, queues, contexts first, so that the ranks start close together. */
	for (i = 0; i < n; i++)
		if (!(i == victim && (when == CW_LATE || when == CW_NEVER)))
			coll_prepare(&rk[i]);
	/*
	 * A reset takes a device's links down for a HELLO or two: mostly let
	 * the links come up. The same reads every time (a seed replays the
	 * same commands); only the sleeps depend on what they say.
	 */
	if (n > 1 && s.ndev > 1 && chance(80)) {
		unsigned int round;

		for (round = 0; round < 3; round++) {
			bool down = false;

			for (i = 0; i < n; i++) {
				D = &s.dev[rk[i].dev];
				down |= !(reg_rd(MAIA_REG_FPORT(rk[i].k.send_port, MAIA_FPORT_STATE)) &
					  MAIA_FPORT_STATE_UP);
			}
			if (down)
				usleep(6000);
		}
	}

	/* Submit in a random order. */
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		unsigned int j = rnd(i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < n; i++) {
		struct coll_rank *p = &rk[order[i]];

		if (p == &rk[victim] && when == CW_NEVER)
			continue;
		if (p == &rk[victim] && when == CW_LATE) {
			struct coll_later *l = later_slot(chance(70) ? 20 + rnd(300) : 300 + rnd(3000));

			if (l)
				l->r = *p;
			continue;
		}
		coll_submit(p, false);
		if (chance(30))
			usleep(rnd(3000));	/* the first rank's chunks wait for the next */
	}

	/* While the ring runs. */
	if (when >= CW_RESET && when <= CW_CABLE)
		usleep(rnd(chance(50) ? 500 : 5000));
	D = &s.dev[rk[rnd(n)].dev];
	switch (when) {
	case CW_RESET:
		dev_reset();
		break;
	case CW_FLR:
		dev_flr();
		break;
	case CW_SYSTEM_RESET:
		system_reset();
		break;
	case CW_CABLE:
		if (cables) {
			do
				i = rnd(s.ndev);
			while (!(cables >> i & 1));
			cable(i, 5 + rnd(chance(80) ? 60 : 600));
		}
		break;
	default:
		break;
	}
	/* Sometimes look at how it went (the values only count). */
	if (when == CW_ON_TIME && chance(20)) {
		usleep(rnd(8000));
		for (i = 0; i < n; i++) {
			D = &s.dev[rk[i].dev];
			reg_rd(MAIA_REG_Q(rk[i].q, chance(50) ? MAIA_Q_STATUS : MAIA_Q_FABRIC_WAITS));
		}
	}
}

static const uint32_t known_regs[] = {
	MAIA_REG_ID, MAIA_REG_REVISION, MAIA_REG_CAPS, MAIA_REG_DTYPES,
	MAIA_REG_TOPOLOGY, MAIA_REG_NUM_QUEUES, MAIA_REG_HBM_SIZE_LO,
	MAIA_REG_HBM_SIZE_HI, MAIA_REG_SRAM_KIB, MAIA_REG_MSIX_VECTORS,
	MAIA_REG_RESET, MAIA_REG_SCRATCH, MAIA_REG_BOOT_STATUS,
	MAIA_REG_BOOT_ERROR, MAIA_REG_BOOT_ADDR_LO, MAIA_REG_BOOT_ADDR_HI,
	MAIA_REG_BOOT_SIZE, MAIA_REG_BOOT_CTRL, MAIA_REG_FW_VERSION,
	MAIA_REG_FW_ABI, MAIA_REG_TIME_LO, MAIA_REG_TIME_HI,
	MAIA_REG_INT_STATUS, MAIA_REG_INT_MASK, MAIA_REG_FAULT_INFO,
	MAIA_REG_FAULT_ADDR_LO, MAIA_REG_FAULT_ADDR_HI, MAIA_REG_MBOX_CMD,
	MAIA_REG_MBOX_STATUS, MAIA_REG_MBOX_ARG(0), MAIA_REG_MBOX_ARG(3),
	MAIA_REG_MBOX_RESP(0), MAIA_REG_MBOX_RESP(3),
	MAIA_REG_TELEM_VERSION, MAIA_REG_TELEM_POWER_MW, MAIA_REG_TELEM_TEMP_MC,
	MAIA_REG_TELEM_TIME_NS_LO, MAIA_REG_TELEM_TIME_NS_LO + 4,
	MAIA_REG_TELEM_ENERGY_UJ_LO, MAIA_REG_TELEM_COMMANDS_LO + 4,
	MAIA_REG_TELEM_LAST, MAIA_REG_TELEM_END - 4, MAIA_REG_TELEM_TILE_NS_BASE,
	MAIA_REG_TELEM_TILE_NS_END - 4, MAIA_REG_DOORBELL_BASE,
	MAIA_REG_DOORBELL(MAIA_MAX_QUEUES - 1), MAIA_REG_DOORBELL(MAIA_MAX_QUEUES),
	MAIA_BAR0_SIZE - 4,
};

static void op_raw_mmio(void)
{
	static const char *const rd[] = { "readb", "readw", "readl", "readq" };
	static const char *const wr[] = { "writeb", "writew", "writel", "writeq" };
	unsigned int sz = chance(70) ? 2 : rnd(4);
	uint32_t off;
	uint64_t val = chance(50) ? rnd_interesting() : rnd64();

	switch (rnd(4)) {
	case 0:
		off = known_regs[rnd(ARRAY_SIZE(known_regs))];
		break;
	case 1:
		off = MAIA_REG_Q(rnd(MAIA_MAX_QUEUES + 1), rnd(0x40) & ~3u);
		break;
	case 2:
		off = MAIA_REG_TELEMETRY_BASE + (rnd(0x100) & ~3u);
		break;
	default:
		off = rnd(MAIA_BAR0_SIZE + 16);
	}
	if (chance(15))
		off += 1 + rnd(3);	/* misaligned */
	if (chance(50)) {
		qt("%s 0x%" PRIx64, rd[sz], BAR0_ADDR + off);
		return;
	}
	qt("%s 0x%" PRIx64 " 0x%" PRIx64, wr[sz], BAR0_ADDR + off,
	   sz == 3 ? val : val & (((uint64_t)1 << (8 << sz)) - 1));
	if (off == MAIA_REG_RESET) {	/* maybe a reset: forget the device state */
		forget(D);
	}
}

static void op_flr(void)
{
	dev_flr();
}

static void op_config(void)
{
	uint32_t off = rnd(256);
	unsigned int size = 1u << rnd(3);

	off &= ~(size - 1);
	if (chance(50)) {
		cfg_rd(off, size);
		return;
	}
	/* A random write to the device's config space, then set up again. */
	cfg_wr(off, size, (uint32_t)rnd64());
	if (chance(80))
		pci_setup();
}

static void op_msix(void)
{
	uint32_t v = rnd(MAIA_NUM_VECTORS(D->cfg.queues));
	uint64_t addr;

	switch (rnd(6)) {
	case 0: addr = BAR0_ADDR + MAIA_REG_DOORBELL(rnd(D->cfg.queues)); break;	/* MSI rings our doorbell */
	case 1: addr = BAR0_ADDR + MAIA_REG_RESET; break;			/* ... or resets us */
	case 2: addr = 0xfee00000ull; break;
	case 3: addr = rnd_addr(4) & ~3ull; break;
	default: addr = MSI_AREA + 4 * v; break;
	}
	msix_entry(v, addr, chance(30) ? MAIA_RESET_MAGIC : (uint32_t)rnd64(), chance(20));
	if (chance(10))
		cfg_wr(D->msix_cap + 2, 2, chance(50) ? 0x8000 : rnd(4) << 14);
}

static void op_data(void)
{
	uint8_t buf[512];
	size_t len = 8 + rnd(sizeof(buf) - 8), i;

	for (i = 0; i < len; i++)
		buf[i] = rnd(256);
	if (chance(50))
		mem_write(DATA_AREA + (rnd64() % (DATA_SIZE - len)), buf, len);
	else
		mem_write(HBM_ADDR + rnd_hbm_off(len), buf, len);
}

static void op_qmp(void)
{
	char cmd[256];

	if (s.qmp < 0)
		return;
	if (chance(10)) {
		system_reset();
		return;
	}
	if (s.ndev > 1 && chance(10)) {	/* a cable out for a while */
		cable(rnd(s.ndev), 1 + rnd(chance(80) ? 100 : 1000));
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "{\"execute\":\"qom-set\",\"arguments\":{\"path\":\"/machine/peripheral/maia%u\","
		 "\"property\":\"%s\",\"value\":%u}", D->index,
		 chance(50) ? "inject-hang" : "inject-fault",
		 chance(90) ? rnd(D->cfg.queues) : rnd(100));
	qmp_cmd(cmd, NULL);
}

/*
 * A frame on fabric port 0's cable: random bytes, or a fabric frame whose
 * fields are random but plausible and whose CRC is usually right, so that
 * it passes the parser and drives the link (HELLOs with any epoch, DATA
 * with any sequence number and payload, acks and credits from nowhere).
 * What the device sent is read and thrown away, so its sends never block.
 */
static void op_frame(void)
{
	static uint8_t frame[MAIA_FABRIC_BACKEND_MAX_FRAME];
	/* Strangers, and the ring's own devices (one device on two cables). */
	static const uint64_t serials[] = { 0x1, 0xfeedull, UINT64_MAX, DEV_SERIAL(0), DEV_SERIAL(1) };
	struct sockaddr_un qa = { .sun_family = AF_UNIX };
	struct maia_fabric_hdr h;
	uint32_t len, plen;

	D = &s.dev[0];	/* the cable to us is on device 0 */
	while (recv(s.fabfd, frame, sizeof(frame), MSG_DONTWAIT) > 0)
		;
	if (chance(30)) {
		len = 1 + rnd(chance(90) ? 256 : MAIA_FABRIC_BACKEND_MAX_FRAME - 1);
		for (uint32_t i = 0; i < len; i++)
			frame[i] = (uint8_t)rnd64();
	} else {
		plen = chance(50) ? rnd(64) : chance(90) ? rnd(4096) :
		       rnd(MAIA_FABRIC_MAX_PAYLOAD + 16);
		memset(&h, 0, sizeof(h));
		h.version = valid(95) ? MAIA_FABRIC_VERSION : (uint8_t)rnd64();
		h.type = valid(95) ? 1 + rnd(5) : (uint8_t)rnd64();
		h.src_port = (uint8_t)rnd(chance(90) ? 3 : 256);
		h.dst_port = chance(50) ? MAIA_FABRIC_PORT_ANY : chance(50) ? s.fab_port :
			     (uint8_t)rnd(chance(80) ? 3 : 256);
		/* MAIA_FABRIC_F_DUP and F_ACK_NOW (wire version 6's delayed acks), or any */
		h.flags = chance(60) ? 0 : chance(75) ? (uint16_t)rnd(4) : (uint16_t)rnd64();
		h.src_serial = serials[rnd(ARRAY_SIZE(serials))];
		h.epoch = chance(80) ? 1 + rnd(4) : (uint32_t)rnd_interesting();
		h.peer_epoch = chance(50) ? 0 : (uint32_t)rnd_interesting();
		h.seq = chance(70) ? rnd(8) : (uint32_t)rnd_interesting();
		h.ack = chance(70) ? rnd(8) : (uint32_t)rnd_interesting();
		h.credit = chance(70) ? rnd(128) : (uint32_t)rnd_interesting();
		if (h.type != MAIA_FABRIC_DATA && valid(95))
			plen = 0;
		h.payload_len = plen;
		if (!valid(95))
			h.payload_len = (uint32_t)rnd_interesting();
		len = MAIA_FABRIC_MIN_FRAME + plen;
		if (len > sizeof(frame))
			len = sizeof(frame);
		for (uint32_t i = MAIA_FABRIC_MIN_FRAME; i < len; i++)
			frame[i] = (uint8_t)rnd64();
		if (valid(90)) {
			uLong crc = crc32_z(0, (const Bytef *)&h, sizeof(h));

			h.crc = (uint32_t)crc32_z(crc, frame + MAIA_FABRIC_MIN_FRAME,
						  len - MAIA_FABRIC_MIN_FRAME);
		} else {
			h.crc = (uint32_t)rnd64();
		}
		memset(frame, 0xff, MAIA_ETH_ALEN);
		frame[6] = 0x02;
		memset(frame + 7, 0, 5);
		frame[12] = MAIA_FABRIC_ETHERTYPE >> 8;
		frame[13] = MAIA_FABRIC_ETHERTYPE & 0xff;
		memcpy(frame + MAIA_ETH_HLEN, &h, sizeof(h));
		if (chance(5))
			len = 1 + rnd(len);	/* truncated */
	}
	snprintf(qa.sun_path, sizeof(qa.sun_path), "%s", s.fabqpath);
	remember("fabric frame");
	/* A full socket drops the frame, as a lossy cable would. */
	(void)sendto(s.fabfd, frame, len, MSG_DONTWAIT, (struct sockaddr *)&qa, sizeof(qa));
	reg_rd(MAIA_REG_FPORT(rnd(3), rnd(MAIA_REG_FPORT_STRIDE) & ~3u));
	if (chance(10))
		reg_rd(MAIA_REG_FABRIC_BASE + (rnd(0x700) & ~3u));
}

/* One step: a single operation or a structured sequence. */
static void step(void)
{
	uint64_t ops = s.run_ops;
	uint32_t r;

	s.run_steps++;
	coll_run_later();
	coll_harvest_due(false);
	cst.ops += s.run_ops - ops;
	D = &s.dev[rnd(s.ndev)];
	r = rnd(1000);
	if (r < 220) {
		op_raw_mmio();
	} else if (r < 420) {
		seq_submit();
	} else if (r < 460) {
		seq_queue_setup(rnd_queue());
	} else if (r < 510) {
		uint32_t q = rnd_queue();

		ring_doorbell(q, chance(80) ? rnd(qsz(q % MAIA_MAX_QUEUES) + 1) :
			      chance(50) ? rnd(4096) : (uint32_t)rnd_interesting());
	} else if (r < 560) {
		seq_mbox();
	} else if (r < 580) {
		seq_boot(true);
	} else if (r < 610) {
		seq_boot(false);
	} else if (r < 700) {
		/* Status reads, interrupt acknowledge and mask. */
		reg_rd(MAIA_REG_INT_STATUS);
		if (chance(50))
			reg_wr(MAIA_REG_INT_STATUS, chance(80) ? MAIA_INT_ALL : rnd64());
		if (chance(20))
			reg_wr(MAIA_REG_INT_MASK, chance(80) ? 0 : rnd64());
		reg_rd(MAIA_REG_Q(rnd_queue(), MAIA_Q_STATUS));
		reg_rd(MAIA_REG_FAULT_INFO);
	} else if (r < 720) {
		/* Fewer where collectives run: a reset takes the device's links down. */
		if (s.ndev == 1 || chance(20)) {
			if (r < 715)
				dev_reset();
			else
				op_flr();
		}
	} else if (r < 735) {
		op_config();
	} else if (r < 755) {
		op_msix();
	} else if (r < 785) {
		seq_mmu();
	} else if (r < 830) {
		if (chance(50))
			qt("readq 0x%" PRIx64, HBM_ADDR + rnd_hbm_off(8));
		else
			hbm_wr64(rnd_hbm_off(8), rnd64());
	} else if (r < 900) {
		op_data();
	} else if (r < 910) {
		/* Bus mastering off for a while: device DMA must fail cleanly. */
		cfg_wr(0x04, 2, 0x0002);
		seq_submit();
		usleep(rnd(500));
		cfg_wr(0x04, 2, 0x0006);
	} else if (r < 915) {
		qt("clock_step %u", 1 + rnd(1000000));
	} else if (r < 920) {
		op_qmp();
	} else if (r < 930) {
		usleep(rnd(2000));	/* let the worker run */
	} else if (r < 970) {
		op_frame();
	} else {
		ops = s.run_ops;
		seq_coll();
		cst.ops += s.run_ops - ops;
	}
}

/*
 * --stats: the status of every valid completion left in the rings at the
 * end of a run (a sample of what the jobs did; rings are reused).
 */
static uint64_t telem64(uint32_t lo)
{
	uint64_t v = reg_rd(lo);

	return v | (uint64_t)reg_rd(lo + 4) << 32;
}

static const char *const status_name[] = {
	"OK", "BAD_OPCODE", "BAD_CMD", "MMU_FAULT", "DMA_ERROR", "BAD_DESC", "BAD_CONTEXT",
	"ABORTED", "SEM_TIMEOUT", "HBM_ECC", "FABRIC_LINK", "FABRIC_KEY", "FABRIC_REMOTE",
	"FABRIC_TIMEOUT", "ASID_DENIED", "FABRIC_COMM_BUSY", "other",
};

static void collect_stats(void)
{
	uint32_t q, i, p;

	for (D = s.dev; D < s.dev + s.ndev; D++) {
		char line[512];
		int o;

		/* The power controller's counters survive resets: the run's totals. */
		pci_setup();
		telem_commands += telem64(MAIA_REG_TELEM_COMMANDS_LO);
		telem_flops += telem64(MAIA_REG_TELEM_FLOPS_LO);
		telem_dma_bytes += telem64(MAIA_REG_TELEM_DMA_BYTES_LO);

		for (q = 0; q < MAIA_MAX_QUEUES; q++) {
			uint64_t base = CQ_AREA + CQ_STRIDE * q;

			if (!D->q_on[q])
				continue;
			cst.fabric_waits += reg_rd(MAIA_REG_Q(q, MAIA_Q_FABRIC_WAITS));
			for (i = 0; i < qsz(q); i++) {
				uint64_t flags_status = qt("readq 0x%" PRIx64, base + (uint64_t)40 * i + 8);
				uint32_t status = (uint32_t)flags_status;

				if (!((flags_status >> 32) & MAIA_CQE_VALID))
					continue;
				job_status[status < ARRAY_SIZE(status_name) - 1 ? status :
					   ARRAY_SIZE(status_name) - 1]++;
			}
		}
		/* Whether frames got through (BAR0 as the fuzz left it; LO halves). */
		o = snprintf(line, sizeof(line), "maia-device-fuzz: run %" PRIu64 ": device %u:",
			     s.run_index, D->index);
		for (p = 0; p < D->nports && o < (int)sizeof(line); p++)
			o += snprintf(line + o, sizeof(line) - o,
				      " port %u%s %s, rx %u frames, %u dropped, %u link ups;", p,
				      s.ndev > 1 && p < 2 ? "" : " (ours)",
				      reg_rd(MAIA_REG_FPORT(p, MAIA_FPORT_STATE)) & MAIA_FPORT_STATE_UP ?
				      "up" : "down",
				      reg_rd(MAIA_REG_FPORT(p, MAIA_FPORT_RX_FRAMES)),
				      reg_rd(MAIA_REG_FPORT(p, MAIA_FPORT_RX_DROPS)),
				      reg_rd(MAIA_REG_FPORT(p, MAIA_FPORT_LINK_UPS)));
		fprintf(stderr, "%s\n", line);
	}
	D = s.dev;
}

/* What the collectives did: always one line, the rest with --stats. */
static void print_coll_stats(void)
{
	unsigned int i;
	uint64_t ends = 0;

	for (i = 0; i < ARRAY_SIZE(cst.status); i++)
		ends += cst.status[i];
	printf("collectives: %" PRIu64 " submitted (%" PRIu64 " rank jobs, %" PRIu64
	       " operations, %.0f %%), %" PRIu64 " ends read from completions (%" PRIu64
	       " OK), %" PRIu64 " late ranks with bad memory\n", cst.seqs, cst.jobs, cst.ops,
	       total_ops ? 100.0 * cst.ops / total_ops : 0.0, ends, cst.status[0], cst.late_bad_mem);
	if (!opt.stats)
		return;
	printf("collectives by mutation:");
	for (i = 0; i < CM_COUNT; i++)
		printf(" %s %" PRIu64, coll_mut_name[i], cst.by_mut[i]);
	printf("\ncollectives by timing:");
	for (i = 0; i < CW_COUNT; i++)
		printf(" %s %" PRIu64, coll_when_name[i], cst.by_when[i]);
	printf("\ncollectives by ranks: 1 %" PRIu64 " 2 %" PRIu64 " 3 %" PRIu64
	       "; by kind: all-reduce %" PRIu64 " all-gather %" PRIu64 " reduce-scatter %" PRIu64
	       " broadcast %" PRIu64 " all-to-all %" PRIu64 "\n", cst.by_nranks[1],
	       cst.by_nranks[2], cst.by_nranks[3], cst.by_coll[1], cst.by_coll[2], cst.by_coll[3],
	       cst.by_coll[4], cst.by_coll[5]);
	printf("collective rank jobs, completion read later:");
	for (i = 0; i < ARRAY_SIZE(status_name); i++)
		if (cst.status[i])
			printf(" %s %" PRIu64, status_name[i], cst.status[i]);
	printf("; not there: its queue in a fabric wait %" PRIu64 ", other (not yet, ring reused, reset) %"
	       PRIu64 "\n", cst.waiting, cst.unseen);
	printf("collective reports read:");
	for (i = 0; i < ARRAY_SIZE(status_name); i++)
		if (cst.report_status[i])
			printf(" %s %" PRIu64, status_name[i], cst.report_status[i]);
	printf(" not written %" PRIu64 "; in them %" PRIu64 " bytes sent, %" PRIu64
	       " used, steps up to %" PRIu64 "; fabric waits begun on the queues still enabled at "
	       "the end: %" PRIu64 "\n", cst.report_unwritten, cst.bytes_sent, cst.bytes_received,
	       cst.max_step, cst.fabric_waits);
}

/* ---- Main ---------------------------------------------------------------- */
static void usage(void)
{
	fprintf(stderr, "usage: maia-device-fuzz --qemu PATH [--seed N] [--ops N] "
		"[--ops-per-run N] [--max-seconds S] [--timeout S] [--no-qmp] "
		"[--trace] [--keep-logs] [--quiet] [--stats] [--qemu-arg ARG]... "
		"[--lsan-suppressions FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i;
	double t;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--qemu") && v)
			opt.qemu = argv[++i];
		else if (!strcmp(a, "--seed") && v)
			opt.seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--ops") && v)
			opt.ops_total = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--ops-per-run") && v)
			opt.ops_per_run = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--max-seconds") && v)
			opt.max_seconds = strtod(argv[++i], NULL);
		else if (!strcmp(a, "--timeout") && v)
			opt.timeout = strtod(argv[++i], NULL);
		else if (!strcmp(a, "--qemu-arg") && v && opt.nextra < ARRAY_SIZE(opt.extra))
			opt.extra[opt.nextra++] = argv[++i];
		else if (!strcmp(a, "--lsan-suppressions") && v)
			opt.lsan_supp = argv[++i];
		else if (!strcmp(a, "--stats"))
			opt.stats = true;
		else if (!strcmp(a, "--no-qmp"))
			opt.qmp = false;
		else if (!strcmp(a, "--trace"))
			opt.trace = true;
		else if (!strcmp(a, "--keep-logs"))
			opt.keep_logs = true;
		else if (!strcmp(a, "--quiet"))
			opt.quiet = true;
		else
			usage();
	}
	if (!opt.qemu || !opt.ops_per_run)
		usage();
	signal(SIGPIPE, SIG_IGN);
	s.errfd = -1;
	s.qmp = -1;
	t_start = now_s();
	while (total_ops < opt.ops_total) {
		uint64_t run_end;
		int status;

		if (opt.max_seconds && now_s() - t_start >= opt.max_seconds)
			break;
		/* Run n uses seed + n: every run replays on its own. */
		s.run_seed = opt.seed + s.run_index;
		rng_state = s.run_seed;
		s.run_ops = 0;
		s.run_steps = 0;
		memset(s.last, 0, sizeof(s.last));
		qemu_start();
		pci_find();
		coll_reset_run();
		run_end = opt.ops_per_run;
		if (opt.ops_total - total_ops + s.run_ops < run_end)
			run_end = opt.ops_total - total_ops + s.run_ops;
		while (s.run_ops < run_end) {
			if (opt.max_seconds && now_s() - t_start >= opt.max_seconds)
				break;
			step();
		}
		coll_harvest_due(true);
		if (opt.stats)
			collect_stats();
		/* A clean exit, and nothing more in the log (leaks are reported at exit). */
		status = qemu_stop(false);
		if (status == -2)
			fail("QEMU did not exit within %.0f s of quit", opt.timeout);
		check_stderr();
		if (WIFSIGNALED(status))
			fail("QEMU died with signal %d at exit", WTERMSIG(status));
		if (WEXITSTATUS(status))
			fail("QEMU exited with status %d", WEXITSTATUS(status));
		close(s.errfd);
		s.errfd = -1;
		if (!opt.keep_logs)
			unlink(s.errpath);
		s.run_index++;
	}
	t = now_s() - t_start;
	printf("maia-device-fuzz: seed %" PRIu64 ": %" PRIu64 " operations in %" PRIu64
	       " QEMU runs, %.1f s, %.0f ops/s, %" PRIu64 " sanitizer reports\n",
	       opt.seed, total_ops, s.run_index, t, total_ops / t, reports);
	print_coll_stats();
	if (opt.stats) {
		printf("completions left in the rings:");
		for (i = 0; i < (int)ARRAY_SIZE(status_name); i++)
			if (job_status[i] || i <= (int)MAIA_STATUS_SEM_TIMEOUT)
				printf(" %s %" PRIu64, status_name[i], job_status[i]);
		printf("\ndevice telemetry over all runs: %" PRIu64 " commands executed, %" PRIu64
		       " flops, %" PRIu64 " DMA bytes\n", telem_commands, telem_flops, telem_dma_bytes);
	}
	return 0;
}
