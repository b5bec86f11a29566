// SPDX-License-Identifier: MIT
/*
 * fuzz.h: what the files of maia_ioctl_fuzz share: the includes, the limits,
 * the options the workers read, the statistics in shared memory, the model
 * of a file (struct ctx), the random numbers, the reporting helpers and the
 * entry points of the workers.
 *
 *   maia_ioctl_fuzz.c  options, main(), process management, the summary, TAP;
 *                      the shared state, random numbers, reporting, sysfs
 *   ops.c              the random workers: the model, the operations, the loop
 *   coll.c             the collective worker: fabric discovery, rounds, checks,
 *                      the all-reduces after the run
 */
#ifndef MAIA_IOCTL_FUZZ_H
#define MAIA_IOCTL_FUZZ_H

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
#define MAX_BO		24
#define MAX_MAP		32
#define MAX_SYNC	16
#define MAX_SEQ		64
#define MAX_FLINK	64
#define MAX_ERRNO	134
#define MAX_WORKERS	64

#define CALL_WATCHDOG_S	60

/* --- options and shared state ------------------------------------------- */

extern unsigned long long opt_seed;
extern bool opt_core_warn;		/* allow the known core WARN (huge syncobj counts) */
extern unsigned int opt_coll_userq;	/* rounds through user queues, in percent */
extern unsigned int opt_coll_pause_ms;	/* between rounds */

enum op {
	OP_GET_PARAM, OP_PING, OP_BO_CREATE, OP_BO_INFO, OP_MAP, OP_UNMAP, OP_SUBMIT,
	OP_WAIT, OP_CTX_STATUS, OP_GEM_CLOSE, OP_PRIME_EXPORT, OP_PRIME_IMPORT,
	OP_SYNC_CREATE, OP_SYNC_DESTROY, OP_SYNC_WAIT, OP_SYNC_TL_WAIT, OP_SYNC_SIGNAL,
	OP_SYNC_RESET, OP_SYNC_FD, OP_SYNC_TL_SIGNAL, OP_SYNC_QUERY, OP_VERSION,
	OP_GET_UNIQUE, OP_CORE_RANDOM, OP_FLINK, OP_GEM_OPEN, OP_MMAP, OP_MUNMAP,
	OP_DMABUF_MMAP, OP_REOPEN, OP_BAD_SIZE, OP_BAD_PTR, OP_RAW, OP_USERQ, NUM_OPS
};

extern const char *const op_names[NUM_OPS];

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

extern struct shared *shm;
extern struct worker_stats *st;

/* --- random numbers ----------------------------------------------------- */

extern uint64_t rng_state;

uint64_t splitmix64(uint64_t *x);
uint64_t rnd(void);
/* Uniform in [0, n); n > 0 */
uint64_t rn(uint64_t n);
/* True with probability pct percent */
bool pct(unsigned int p);

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

struct maia_nodes {
	int n;
	char path[MAX_NODES][32];
	int minor[MAX_NODES];
};

extern struct maia_nodes nodes;

extern int worker_index;
extern bool in_coll_worker;
extern uint64_t worker_seed;
extern unsigned long long call_no;
extern const char *cur_op;

/* --- reporting ---------------------------------------------------------- */

void trace(const char *fmt, ...);
void violation(const char *fmt, ...);
void worker_start(int index, uint64_t seed);

/* errno list terminated by -1; 0 means success is allowed */
#define ALLOW(...)	((const int[]){ __VA_ARGS__, -1 })

bool allowed(int err, const int *list);
void expect(struct ctx *c, const char *what, int err, const int *list);
void count_result(int err);
int64_t mono_ns(void);
long long dev_attr(int node, const char *name);

/* --- the random workers (ops.c) ----------------------------------------- */

int worker(int index, unsigned long long calls, int64_t deadline_ns);

/* --- the collective worker (coll.c) ------------------------------------- */

#define MAX_PORTS	16

struct fabric {
	int nports[MAX_NODES];
	uint64_t serial[MAX_NODES];
	int peer_node[MAX_NODES][MAX_PORTS];	/* -1: down, or not one of ours */
	int peer_port[MAX_NODES][MAX_PORTS];
	int ring[MAX_NODES];			/* ring[r]: the node of rank r */
	int n;					/* ranks; below 2, no collectives */
};

extern struct fabric fab;

void fabric_discover(void);
int coll_worker(int index, unsigned long long rounds, int64_t deadline_ns);
int coll_abandon(uint32_t comm, char *why, size_t len);
int coll_final(uint64_t count, uint32_t comm, uint32_t seq, char *why, size_t len);

#endif /* MAIA_IOCTL_FUZZ_H */
