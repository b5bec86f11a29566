// SPDX-License-Identifier: MIT
/*
 * The KERNEL command (maia/hw/tvp.h): checks the command, fetches the
 * program through the job's MMU, validates all of it before anything runs,
 * pre-decodes it, then runs the grid's instances on the tensor engine's
 * worker threads (one command at a time on them, like tensor commands):
 * instances are claimed in index order in chunks, each worker runs its
 * instances one after another in its own registers. The first failure
 * (MMU fault, watchdog, stop) ends the command: the other workers stop at
 * their next check (between instances, and every few thousand
 * instructions inside one), instances not started do not run, and the
 * stores of those that ran stay.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../tensor/te.h"
#include "tvp.h"

_Static_assert(sizeof(struct maia_tvp_insn) == 8, "TVP instruction word is 8 bytes");
_Static_assert(sizeof(struct maia_cmd_kernel) == 168, "KERNEL command size");

/* Instances a worker claims at once: few enough to balance, enough to amortise. */
#define CHUNK	16u

/* A worker thread's instance state, kept across commands (it is 140 KiB). */
static pthread_key_t state_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void make_key(void)
{
	pthread_key_create(&state_key, free);
}

static struct fw_tvp_state *thread_state(void)
{
	struct fw_tvp_state *st;

	pthread_once(&key_once, make_key);
	st = pthread_getspecific(state_key);
	if (!st) {
		st = aligned_alloc(64, sizeof(*st));
		if (!st)
			return NULL;
		memset(st, 0, sizeof(*st));
		if (pthread_setspecific(state_key, st)) {
			free(st);
			return NULL;
		}
	}
	return st;
}

struct run {
	struct fw_tvp_kernel *k;
	struct fw_tvp_stats *wstats;	/* per worker */
	uint64_t nchunks;
};

static void fail(struct fw_tvp_kernel *k, int status)
{
	int expected = MAIA_STATUS_OK;

	__atomic_compare_exchange_n(&k->status, &expected, status, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

static void add_stats(struct fw_tvp_stats *to, const struct fw_tvp_stats *from)
{
	for (unsigned int c = 0; c < MAIA_TVP_NUM_CLASSES; c++) {
		to->insns[c] += from->insns[c];
		to->units[c] += from->units[c];
	}
	to->instances += from->instances;
	to->flops += from->flops;
	to->bytes_read += from->bytes_read;
	to->bytes_written += from->bytes_written;
	to->sems_signaled |= from->sems_signaled;
}

static void run_chunk(void *arg, size_t chunk, unsigned int worker)
{
	struct run *r = arg;
	struct fw_tvp_kernel *k = r->k;
	struct fw_tvp_state *st = thread_state();
	uint64_t first = (uint64_t)chunk * CHUNK, end = first + CHUNK;

	if (!st) {
		fail(k, MAIA_STATUS_ABORTED);	/* no memory for the registers */
		return;
	}
	if (end > k->ninst)
		end = k->ninst;
	memset(&st->st, 0, sizeof(st->st));
	st->k = k;
	for (uint64_t i = first; i < end; i++) {
		int rc;

		if (__atomic_load_n(&k->status, __ATOMIC_RELAXED) != MAIA_STATUS_OK)
			break;
		if (k->env->stop && k->env->stop(k->env->stop_opaque)) {
			fail(k, FW_TVP_STOPPED);
			break;
		}
		rc = fw_tvp_run_instance(st, i);
		if (rc != MAIA_STATUS_OK) {
			fail(k, rc);
			break;
		}
	}
	add_stats(&r->wstats[worker], &st->st);
}

/* The command's fields (MAIA_STATUS_BAD_CMD if any is out of range). */
static bool cmd_ok(const struct maia_cmd_kernel *c, uint64_t *ninst)
{
	uint64_t n = 1;

	if (c->hdr.size != sizeof(*c) || c->hdr.flags || (c->program & 7u) ||
	    !c->num_insns || c->num_insns > MAIA_TVP_MAX_INSNS ||
	    c->num_args > MAIA_TVP_MAX_ARGS)
		return false;
	for (unsigned int i = 0; i < 3; i++) {
		if (!c->grid[i] || c->grid[i] > MAIA_TVP_MAX_GRID)
			return false;
		n *= c->grid[i];
	}
	*ninst = n;
	return n <= MAIA_TVP_MAX_GRID;
}

static int run_grid(const struct fw_tvp_env *env, struct fw_tvp_kernel *k,
		    struct fw_tvp_stats *st)
{
	struct fw_tensor_engine *te = env->te;
	unsigned int nworkers = te ? te->nworkers : 1;
	struct run r = { .k = k, .nchunks = (k->ninst + CHUNK - 1) / CHUNK };

	r.wstats = calloc(nworkers, sizeof(*r.wstats));
	if (!r.wstats)
		return MAIA_STATUS_ABORTED;
	if (te) {
		pthread_mutex_lock(&te->lock);
		fw_pool_run(te->pool, r.nchunks, run_chunk, &r);
		pthread_mutex_unlock(&te->lock);
	} else {
		for (uint64_t c = 0; c < r.nchunks; c++)
			run_chunk(&r, c, 0);
	}
	for (unsigned int w = 0; w < nworkers; w++)
		add_stats(st, &r.wstats[w]);
	free(r.wstats);
	return k->status;
}

int fw_tvp_kernel(const struct fw_tvp_env *env, const struct maia_cmd_kernel *cmd,
		  struct fw_tvp_stats *st)
{
	struct fw_tvp_kernel k = { .env = env, .status = MAIA_STATUS_OK };
	struct maia_tvp_insn *words;
	struct fw_tvp_dinsn *prog;
	uint32_t bad;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!cmd_ok(cmd, &k.ninst))
		return MAIA_STATUS_BAD_CMD;
	words = malloc((size_t)cmd->num_insns * sizeof(*words));
	prog = malloc((size_t)cmd->num_insns * sizeof(*prog));
	if (!words || !prog) {
		rc = MAIA_STATUS_ABORTED;
		goto out;
	}
	rc = env->mem->read(env->mem->opaque, cmd->program, words,
			    (size_t)cmd->num_insns * sizeof(*words));
	if (rc != MAIA_STATUS_OK)
		goto out;
	st->bytes_read += (uint64_t)cmd->num_insns * sizeof(*words);
	rc = fw_tvp_validate(words, cmd->num_insns, &bad);
	if (rc != MAIA_STATUS_OK)
		goto out;
	st->validated = true;
	fw_tvp_decode(words, cmd->num_insns, prog);
	k.prog = prog;
	k.n = cmd->num_insns;
	memcpy(k.grid, cmd->grid, sizeof(k.grid));
	k.nargs = cmd->num_args;
	memcpy(k.args, cmd->args, sizeof(k.args));
	k.budget = cmd->budget ? cmd->budget : MAIA_TVP_DEFAULT_BUDGET;
	fw_tvp_vop_best();	/* picked before the workers need it */
	rc = run_grid(env, &k, st);
out:
	free(words);
	free(prog);
	return rc;
}
