// SPDX-License-Identifier: MIT
/*
 * The serving engine: one thread owns the devices. Requests wait in a FIFO
 * until the KV-cache manager can give them every block they will need and a
 * decode row is free; then the engine prefills them (one at a time) and they
 * join the running set. Every iteration decodes one token of every running
 * request in one job (continuous batching: a request joins the batch at the
 * next step after its prefill and leaves it at the step that ends it, the
 * others carry on). In disaggregated mode a prefill runs on device A while
 * the engine runs the next decode step on device B, and the request joins
 * B's batch once its K/V landed there.
 *
 * Submitters (HTTP threads, the load generator) only touch the waiting
 * queue and read request state, all under the engine's lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"

uint64_t llm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *llm_mode_name(enum llm_mode m)
{
	return m == LLM_MODE_DISAGG ? "disagg" : m == LLM_MODE_TP ? "tp" : "single";
}

struct llm_request *llm_request_new(const uint8_t *prompt, uint32_t len, uint32_t max_tokens,
				    const struct llm_sampling *s)
{
	struct llm_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->prompt = malloc(len ? len : 1);
	r->out = malloc(max_tokens ? max_tokens : 1);
	if (!r->prompt || !r->out) {
		free(r->prompt);
		free(r->out);
		free(r);
		return NULL;
	}
	if (len)
		memcpy(r->prompt, prompt, len);
	r->prompt_len = len;
	r->max_tokens = max_tokens;
	r->sampling = *s;
	r->refs = 1;
	return r;
}

static void request_put(struct llm_request *r)
{
	if (--r->refs)
		return;
	free(r->prompt);
	free(r->out);
	free(r->logits);
	free(r);
}

void llm_engine_release(struct llm_engine *e, struct llm_request *r)
{
	pthread_mutex_lock(&e->lock);
	if (r->state == LLM_REQ_WAITING || r->state == LLM_REQ_RUNNING)
		r->cancelled = true;
	request_put(r);
	pthread_mutex_unlock(&e->lock);
}

static void engine_sync_init(struct llm_engine *e)
{
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->wake, NULL);
	pthread_cond_init(&e->progress, NULL);
	e->stats.kv_total = e->kv.nblocks;
}

int llm_engine_init_tp(struct llm_engine *e, const struct llm_config *c, int dev_index,
		       uint32_t ntp, uint32_t max_queue)
{
	static uint32_t comms;	/* atomic: a new communicator id per engine */
	uint32_t n = __atomic_fetch_add(&comms, 1, __ATOMIC_RELAXED);
	uint32_t comm = 0x544c0000u | ((uint32_t)getpid() & 0xffu) << 8 | (n & 0xffu);
	struct maia_device *d = NULL;
	struct maia_bo *bo = NULL;
	uint32_t r;
	int err;

	if (ntp < 2 || ntp > LLM_MAX_TP)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->mode = LLM_MODE_TP;
	e->cfg = *c;
	e->max_queue = max_queue;
	err = llm_weights_init(&e->w, c);
	err = err ?: llm_kv_init(&e->kv, c->kv_blocks);
	for (r = 0; r < ntp && !err; r++) {
		err = maia_device_open(dev_index + (int)r, &d);
		if (err)
			break;
		if (!r) {
			/* The whole model once, for the values the shards take. */
			err = maia_bo_create(d, e->w.bytes, MAIA_BO_HBM, &bo);
			err = err ?: llm_weights_load(&e->w, d, bo);
			if (bo)
				maia_bo_destroy(bo);
		}
		err = err ?: llm_weights_shard(&e->w, r, ntp, &e->tpw[r]);
		err = err ?: llm_dev_init(&e->devs[r], d, &e->tpw[r], true);
		if (err) {
			maia_device_close(d);
			break;
		}
		llm_dev_set_tp(&e->devs[r], r, ntp, comm);
		e->dev_index[r] = dev_index + (int)r;
		e->tp[r] = &e->devs[r];
	}
	if (err) {
		while (r--) {
			llm_dev_fini(&e->devs[r]);
			maia_device_close(e->devs[r].dev);
		}
		for (r = 0; r < ntp; r++)
			llm_weights_fini(&e->tpw[r]);
		llm_kv_fini(&e->kv);
		llm_weights_fini(&e->w);
		return err;
	}
	e->ntp = ntp;
	e->pre = e->dec = &e->devs[0];
	e->stats.dec_index = dev_index;
	engine_sync_init(e);
	return 0;
}

int llm_engine_init(struct llm_engine *e, const struct llm_config *c, enum llm_mode mode,
		    int dev_index, uint32_t max_queue)
{
	struct maia_device *d0 = NULL, *d1 = NULL;
	int err;

	if (mode == LLM_MODE_TP)
		return llm_engine_init_tp(e, c, dev_index, 2, max_queue);

	memset(e, 0, sizeof(*e));
	e->mode = mode;
	e->cfg = *c;
	e->max_queue = max_queue;
	err = llm_weights_init(&e->w, c);
	err = err ?: llm_kv_init(&e->kv, c->kv_blocks);
	err = err ?: maia_device_open(dev_index, &d0);
	if (!err && mode == LLM_MODE_DISAGG)
		err = maia_device_open(dev_index + 1, &d1);
	if (err)
		goto fail;
	if (mode == LLM_MODE_SINGLE) {
		err = llm_dev_init(&e->devs[0], d0, &e->w, true);
		e->pre = e->dec = &e->devs[0];
	} else {
		err = llm_dev_init(&e->devs[0], d0, &e->w, false);
		err = err ?: llm_dev_init(&e->devs[1], d1, &e->w, true);
		err = err ?: llm_disagg_init(&e->x, &e->devs[0], &e->devs[1]);
		e->pre = &e->devs[0];
		e->dec = &e->devs[1];
	}
	if (err)
		goto fail;
	e->dev_index[0] = dev_index;
	e->dev_index[1] = dev_index + 1;
	e->stats.dec_index = mode == LLM_MODE_SINGLE ? dev_index : dev_index + 1;
	engine_sync_init(e);
	return 0;
fail:
	if (e->devs[1].cb)
		llm_dev_fini(&e->devs[1]);
	if (e->devs[0].cb)
		llm_dev_fini(&e->devs[0]);
	if (d1)
		maia_device_close(d1);
	if (d0)
		maia_device_close(d0);
	llm_kv_fini(&e->kv);
	llm_weights_fini(&e->w);
	return err;
}

int llm_engine_init_remote(struct llm_engine *e, const struct llm_config *c, int dev_index,
			   const char *port, int timeout_ms, uint32_t max_queue)
{
	struct maia_device *d0 = NULL;
	int err;

	memset(e, 0, sizeof(*e));
	e->remote.fd = -1;
	e->mode = LLM_MODE_DISAGG;
	e->cfg = *c;
	e->max_queue = max_queue;
	err = llm_weights_init(&e->w, c);
	err = err ?: llm_kv_init(&e->kv, c->kv_blocks);
	err = err ?: maia_device_open(dev_index, &d0);
	err = err ?: llm_dev_init(&e->devs[0], d0, &e->w, false);
	if (err)
		goto fail;
	err = llm_remote_connect(&e->remote, port, c, timeout_ms);
	err = err ?: llm_disagg_init_remote(&e->x, &e->devs[0], e->remote.serial, e->remote.key,
					    e->remote.pool_bytes);
	if (err)
		goto fail;
	e->pre = &e->devs[0];
	e->dec = NULL;
	e->dec_remote = true;
	e->dev_index[0] = dev_index;
	e->stats.dec_index = e->remote.index;
	e->stats.dec_remote = true;
	engine_sync_init(e);
	return 0;
fail:
	if (e->remote.logits)
		llm_remote_close(&e->remote);
	if (e->devs[0].cb)
		llm_dev_fini(&e->devs[0]);
	if (d0)
		maia_device_close(d0);
	llm_kv_fini(&e->kv);
	llm_weights_fini(&e->w);
	return err;
}

/* Under the lock: the request has made progress or ended. */
static void finish(struct llm_engine *e, struct llm_request *r, int error)
{
	struct llm_request **p;

	for (p = &e->running; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	r->state = error ? LLM_REQ_FAILED : LLM_REQ_DONE;
	r->error = error;
	r->t_done = llm_now_ns();
	llm_kv_free(&e->kv, r->blocks, r->nblocks);
	r->nblocks = 0;
	e->stats.running--;
	if (error == -ECANCELED)
		e->stats.cancelled++;
	else if (error)
		e->stats.failed++;
	else
		e->stats.completed++;
	request_put(r);
}

/* Under the lock: one more token for r from logits. */
static void add_token(struct llm_engine *e, struct llm_request *r, const float *logits)
{
	int tok = llm_sample(logits, LLM_VOCAB, &r->sampling, &r->rng);

	if (r->logits)
		memcpy(r->logits + (size_t)r->n_out * LLM_VOCAB, logits, LLM_VOCAB * 4);
	r->out[r->n_out++] = (uint8_t)(tok < 0 ? 0 : tok);
	e->stats.generated_tokens++;
	if (r->n_out == r->max_tokens)
		finish(e, r, 0);
}

static int decode_step(struct llm_engine *e)
{
	struct llm_step_row rows[LLM_MAX_BATCH];
	struct llm_request *batch[LLM_MAX_BATCH], *r;
	struct maia_job_times t = { 0 };
	const float *logits = NULL;
	uint32_t n = 0, i;
	int err;

	/* Only this thread changes the running list: no lock to walk it. */
	for (r = e->running; r && n < e->cfg.max_batch; r = r->next) {
		batch[n] = r;
		rows[n] = (struct llm_step_row){ .token = r->out[r->n_out - 1], .pos = r->pos,
						 .blocks = r->blocks };
		n++;
	}
	if (!n)
		return 0;
	err = 0;
	if (e->dec_remote) {
		err = llm_remote_step(&e->remote, rows, n, &e->cfg, &t);
		logits = e->remote.logits;
		goto ran;
	}
	maia_cmdbuf_reset(e->dec->cb);
	if (e->hang_at_step && e->stats.steps + 1 == e->hang_at_step) {
		/* tests: a wait nobody signals, until the driver gives up on it; once */
		e->hang_at_step = 0;
		err = maia_cmd_sem_wait(e->dec->cb, MAIA_NUM_SEMAPHORES - 1, 1, 600u * 1000000u);
	}
	if (e->ntp) {
		for (i = 0; i < e->ntp && !err; i++) {
			if (i)
				maia_cmdbuf_reset(e->tp[i]->cb);
			err = llm_build_decode(e->tp[i], rows, n);
		}
		err = err ?: llm_devs_run(e->tp, e->ntp, &t);
	} else {
		err = err ?: llm_build_decode(e->dec, rows, n);
		err = err ?: llm_dev_run(e->dec, &t);
	}
	logits = llm_logits(e->dec, 0);
ran:
	pthread_mutex_lock(&e->lock);
	if (err && e->spare) {
		/* The requests stay as they are: fall_back() moves them. */
		e->stats.dec_failures++;
		e->dec_failed = true;
		pthread_mutex_unlock(&e->lock);
		return err;
	}
	e->stats.steps++;
	e->stats.step_rows += n;
	for (i = 0; i < n; i++) {
		r = batch[i];
		if (err) {
			finish(e, r, err);
			continue;
		}
		r->pos++;
		r->decode_steps++;
		r->dev_decode_ns += t.device_ns;
		if (r->cancelled)
			finish(e, r, -ECANCELED);
		else
			add_token(e, r, logits + (size_t)i * LLM_VOCAB);
	}
	pthread_cond_broadcast(&e->progress);
	pthread_mutex_unlock(&e->lock);
	return err;
}

/*
 * Prefill rs[0..n) together (blocks already taken); each gets its first
 * token and joins the running set.
 */
static void prefill(struct llm_engine *e, struct llm_request **rs, uint32_t n)
{
	struct llm_prefill_req pr[LLM_MAX_BATCH];
	struct maia_job_times t = { 0 };
	struct llm_xfer_times xt = { 0 };
	uint64_t done;
	uint32_t i;
	int err;

	for (i = 0; i < n; i++)
		pr[i] = (struct llm_prefill_req){ .tokens = rs[i]->prompt, .n = rs[i]->prompt_len,
						  .blocks = rs[i]->blocks };
	if (e->ntp) {
		for (i = 0, err = 0; i < e->ntp && !err; i++) {
			maia_cmdbuf_reset(e->tp[i]->cb);
			err = llm_build_prefill(e->tp[i], pr, n, LLM_KV_LOCAL_POOL, 0);
		}
		err = err ?: llm_devs_run(e->tp, e->ntp, &t);
		done = llm_now_ns();
		xt.prefill_dev_ns = t.device_ns;
	} else if (e->mode == LLM_MODE_SINGLE || e->local_prefill) {
		maia_cmdbuf_reset(e->pre->cb);
		err = llm_build_prefill(e->pre, pr, n, LLM_KV_LOCAL_POOL, 0);
		err = err ?: llm_dev_run(e->pre, &t);
		done = llm_now_ns();
		xt.prefill_dev_ns = t.device_ns;
	} else {
		bool hold = e->dec_remote && e->hold_xfer_at &&
			    e->stats.prefills + 1 == e->hold_xfer_at;

		e->x.hold = hold;
		err = llm_disagg_begin(&e->x, pr, n, LLM_XFER_LAYERWISE);
		/* B decodes the others while A prefills these. */
		if (!err && e->running)
			decode_step(e);
		if (!err && hold) {
			/* tests: the worker's QEMU is killed while the transfer is held */
			fprintf(stderr, "maia-serve: transfer of prefill %llu held\n",
				(unsigned long long)e->hold_xfer_at);
			llm_remote_wait_gone(&e->remote, 120000);
			llm_disagg_release(&e->x);
		}
		err = err ?: llm_disagg_end(&e->x, &xt);
		if (err && e->x.xfer_failed && e->spare) {
			/*
			 * A's prefill ran but its K/V did not all reach B: B is
			 * taken as failed, and these requests move with the
			 * running ones, their prompts prefilled on the spare.
			 */
			pthread_mutex_lock(&e->lock);
			if (!e->dec_failed)
				e->stats.dec_failures++;
			e->dec_failed = true;
			pthread_mutex_unlock(&e->lock);
			for (i = 0; i < n; i++)
				rs[i]->kv_lost = true;
			err = 0;
		}
		/* The first token goes out once its K/V is on B: that is its TTFT. */
		done = llm_now_ns();
	}
	pthread_mutex_lock(&e->lock);
	for (i = 0; i < n; i++) {
		struct llm_request *r = rs[i];

		r->state = LLM_REQ_RUNNING;
		r->next = e->running;
		e->running = r;
		e->stats.running++;
		if (err) {
			finish(e, r, err);
			continue;
		}
		r->xfer = xt;
		if (e->mode == LLM_MODE_DISAGG && !e->local_prefill && !r->kv_lost) {
			r->xfer.bytes = e->x.req_bytes[i];
			r->xfer.writes = e->x.req_writes[i];
		}
		r->dev_ttft_ns = xt.prefill_dev_ns;
		r->prefill_batch = n;
		r->t_first = done;
		r->pos = r->prompt_len;
		e->stats.ttft_sum_ns += done - r->t_submit;
		e->stats.kv_bytes_moved += r->xfer.bytes;
		add_token(e, r, llm_logits(e->pre, i));
	}
	e->stats.prefills++;
	pthread_cond_broadcast(&e->progress);
	pthread_mutex_unlock(&e->lock);
}

/*
 * On the spare: r's prompt K/V copied from the prefill device's checkpoint
 * (kv_checkpoint, when a port reaches the spare) or its prompt prefilled
 * again; then its tokens so far fed one step each. *copied: whether the
 * prompt's K/V were copied; *dev_ns: the jobs' device time.
 */
static int replay(struct llm_engine *e, struct llm_request *r, bool *copied, uint64_t *dev_ns)
{
	struct llm_prefill_req pr = { .tokens = r->prompt, .n = r->prompt_len,
				      .blocks = r->blocks };
	struct maia_job_times t = { 0 };
	uint64_t h, d;
	uint32_t k;
	int err;

	*copied = e->kv_checkpoint && e->mode == LLM_MODE_DISAGG && !e->local_prefill &&
		  !r->kv_lost;
	*dev_ns = 0;
	if (*copied) {
		err = llm_disagg_push_blocks(&e->x, r->blocks, r->prompt_len, &h, &d);
		*dev_ns += d;
	} else {
		maia_cmdbuf_reset(e->dec->cb);
		err = llm_build_prefill(e->dec, &pr, 1, LLM_KV_LOCAL_POOL, 0);
		err = err ?: llm_dev_run(e->dec, &t);
		*dev_ns += t.device_ns;
	}
	/* The last token is the next step's input: its K/V come then. */
	for (k = 0; k + 1 < r->n_out && !err; k++) {
		struct llm_step_row row = { .token = r->out[k], .pos = r->prompt_len + k,
					    .blocks = r->blocks };

		maia_cmdbuf_reset(e->dec->cb);
		err = llm_build_decode(e->dec, &row, 1);
		err = err ?: llm_dev_run(e->dec, &t);
		*dev_ns += t.device_ns;
	}
	return err;
}

/*
 * The decode device failed: the running requests move to the spare, from
 * their prompt and the tokens they have (the engine thread's only).
 */
static void fall_back(struct llm_engine *e)
{
	struct llm_request *rs[LLM_MAX_BATCH], *r;
	int from = e->stats.dec_index, to, err = 0;
	bool from_remote = e->dec_remote, copied[LLM_MAX_BATCH] = { false };
	uint64_t host_ns[LLM_MAX_BATCH] = { 0 }, dev_ns[LLM_MAX_BATCH] = { 0 }, t0;
	uint32_t n = 0, i;

	e->dec_failed = false;
	if (from_remote) {
		/* Its window and the stream went with it. */
		llm_remote_close(&e->remote);
		e->dec_remote = false;
	}
	e->dec = e->spare;
	e->spare = NULL;
	to = e->dev_index[e->dec - e->devs];
	if (e->mode == LLM_MODE_SINGLE) {
		e->pre = e->dec;	/* the failed device prefilled too */
	} else if (e->mode == LLM_MODE_DISAGG) {
		/* A failed transfer left signals the next one must not take. */
		if (e->x.broken)
			llm_disagg_drain(&e->x);
		llm_disagg_fini(&e->x);
		if (!llm_disagg_init(&e->x, e->pre, e->dec)) {
			e->x.ckpt = false;	/* no second spare to resume on */
		} else {
			/* No port reaches the spare: it prefills too. */
			e->local_prefill = true;
			e->pre = e->dec;
		}
	}
	/* Only this thread changes the running list: no lock to walk it. */
	for (r = e->running; r && n < LLM_MAX_BATCH; r = r->next)
		rs[n++] = r;
	for (i = 0; i < n && !err; i++) {
		t0 = llm_now_ns();
		err = replay(e, rs[i], &copied[i], &dev_ns[i]);
		host_ns[i] = llm_now_ns() - t0;
	}
	pthread_mutex_lock(&e->lock);
	e->stats.fallbacks++;
	e->stats.dec_index = to;
	e->stats.dec_remote = false;
	for (i = 0; i < n; i++) {
		r = rs[i];
		if (err) {
			finish(e, r, err);
			continue;
		}
		r->fallbacks++;
		r->fallback_from = from;
		r->fallback_to = to;
		r->fallback_from_remote = from_remote;
		r->fallback_host_ns = host_ns[i];
		r->fallback_dev_ns = dev_ns[i];
		r->kv_lost = false;	/* its K/V are on the spare now */
		if (copied[i]) {
			r->kv_copied_tokens += r->prompt_len;
			r->replayed_tokens += r->n_out - 1;
			e->stats.kv_copied_tokens += r->prompt_len;
			e->stats.replayed_tokens += r->n_out - 1;
		} else {
			r->replayed_tokens += r->prompt_len + r->n_out - 1;
			e->stats.replayed_tokens += r->prompt_len + r->n_out - 1;
		}
	}
	pthread_cond_broadcast(&e->progress);
	pthread_mutex_unlock(&e->lock);
}

static void *engine_main(void *arg)
{
	struct llm_request *batch[LLM_MAX_BATCH];
	struct llm_engine *e = arg;
	uint32_t n, rows;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		struct llm_request *r = e->waiting;

		if (!r && !e->running) {
			pthread_cond_wait(&e->wake, &e->lock);
			continue;
		}
		if (r && r->cancelled) {
			/* Its client went away while it waited. */
			e->waiting = r->next;
			e->stats.queue_depth--;
			e->stats.cancelled++;
			r->state = LLM_REQ_FAILED;
			r->error = -ECANCELED;
			request_put(r);
			continue;
		}
		/*
		 * Admission: FIFO, all blocks up front, a free decode row; as
		 * many as fit go into one prefill (max_seq prompt tokens in all).
		 */
		n = 0;
		rows = 0;
		while ((r = e->waiting) && !r->cancelled &&
		       e->stats.running + n < e->cfg.max_batch &&
		       rows + r->prompt_len <= e->cfg.max_seq &&
		       !llm_kv_alloc(&e->kv, llm_kv_blocks_for(r->prompt_len + r->max_tokens,
							       e->cfg.block_tokens), r->blocks)) {
			r->nblocks = llm_kv_blocks_for(r->prompt_len + r->max_tokens,
						       e->cfg.block_tokens);
			e->waiting = r->next;
			r->next = NULL;
			e->stats.queue_depth--;
			rows += r->prompt_len;
			batch[n++] = r;
		}
		e->stats.kv_used = e->kv.nblocks - e->kv.nfree;
		if (n) {
			pthread_mutex_unlock(&e->lock);
			prefill(e, batch, n);
		} else if (e->running) {
			pthread_mutex_unlock(&e->lock);
			decode_step(e);
		} else {
			/* Nothing runs yet the head does not fit: cannot happen (submit checks). */
			pthread_cond_wait(&e->wake, &e->lock);
			continue;
		}
		if (e->dec_failed)
			fall_back(e);
		pthread_mutex_lock(&e->lock);
		e->stats.kv_used = e->kv.nblocks - e->kv.nfree;
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int llm_engine_add_spare(struct llm_engine *e, int dev_index)
{
	struct maia_device *d = NULL;
	int err;

	if (e->started || e->devs[2].cb || e->ntp)
		return e->ntp ? -EINVAL : -EBUSY;
	err = maia_device_open(dev_index, &d);
	err = err ?: llm_dev_init(&e->devs[2], d, &e->w, true);
	if (err) {
		if (d)
			maia_device_close(d);
		return err;
	}
	e->dev_index[2] = dev_index;
	e->spare = &e->devs[2];
	return 0;
}

int llm_engine_set_kv_checkpoint(struct llm_engine *e)
{
	int err;

	if (e->started || e->mode != LLM_MODE_DISAGG || e->local_prefill || !e->spare)
		return -EINVAL;
	err = llm_dev_add_pool(e->pre);
	if (err)
		return err;
	e->kv_checkpoint = true;
	e->x.ckpt = true;
	return 0;
}

int llm_engine_start(struct llm_engine *e)
{
	int err = pthread_create(&e->thread, NULL, engine_main, e);

	if (err)
		return -err;
	e->started = true;
	return 0;
}

void llm_engine_fini(struct llm_engine *e)
{
	struct llm_request *r;
	uint32_t i;

	if (e->started) {
		pthread_mutex_lock(&e->lock);
		e->stop = true;
		pthread_cond_broadcast(&e->wake);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
	}
	/* Whatever is left fails, so that no waiter sleeps for ever. */
	pthread_mutex_lock(&e->lock);
	while ((r = e->running))
		finish(e, r, -ECANCELED);
	while ((r = e->waiting)) {
		e->waiting = r->next;
		r->state = LLM_REQ_FAILED;
		r->error = -ECANCELED;
		request_put(r);
	}
	pthread_cond_broadcast(&e->progress);
	pthread_mutex_unlock(&e->lock);
	if (e->mode == LLM_MODE_DISAGG && !e->local_prefill)
		llm_disagg_fini(&e->x);
	if (e->dec_remote)
		llm_remote_close(&e->remote);
	for (i = 0; i < LLM_MAX_TP; i++) {
		if (!e->devs[i].cb)
			continue;
		llm_dev_fini(&e->devs[i]);
		maia_device_close(e->devs[i].dev);
	}
	for (i = 0; i < e->ntp; i++)
		llm_weights_fini(&e->tpw[i]);
	llm_kv_fini(&e->kv);
	llm_weights_fini(&e->w);
}

int llm_engine_submit(struct llm_engine *e, struct llm_request *r)
{
	uint32_t need;
	struct llm_request **p;

	if (!r->prompt_len || !r->max_tokens ||
	    (uint64_t)r->prompt_len + r->max_tokens > e->cfg.max_seq)
		return -E2BIG;
	need = llm_kv_blocks_for(r->prompt_len + r->max_tokens, e->cfg.block_tokens);
	if (need > e->kv.nblocks)
		return -E2BIG;
	pthread_mutex_lock(&e->lock);
	e->stats.requests++;
	if (e->stats.queue_depth >= e->max_queue) {
		e->stats.refused++;
		pthread_mutex_unlock(&e->lock);
		return -EBUSY;
	}
	if (r->keep_logits && !r->logits) {
		r->logits = malloc((size_t)r->max_tokens * LLM_VOCAB * 4);
		if (!r->logits) {
			pthread_mutex_unlock(&e->lock);
			return -ENOMEM;
		}
	}
	r->state = LLM_REQ_WAITING;
	r->rng = llm_rng_seed(r->sampling.seed);
	r->t_submit = llm_now_ns();
	r->refs++;
	r->next = NULL;
	for (p = &e->waiting; *p; p = &(*p)->next)
		;
	*p = r;
	e->stats.queue_depth++;
	e->stats.prompt_tokens += r->prompt_len;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

uint32_t llm_engine_wait(struct llm_engine *e, struct llm_request *r, uint32_t n_seen,
			 enum llm_req_state *state)
{
	uint32_t n;

	pthread_mutex_lock(&e->lock);
	while (r->n_out <= n_seen && r->state != LLM_REQ_DONE && r->state != LLM_REQ_FAILED)
		pthread_cond_wait(&e->progress, &e->lock);
	n = r->n_out;
	if (state)
		*state = r->state;
	pthread_mutex_unlock(&e->lock);
	return n;
}

void llm_engine_get_stats(struct llm_engine *e, struct llm_engine_stats *s)
{
	pthread_mutex_lock(&e->lock);
	*s = e->stats;
	s->kv_used = e->kv.nblocks - e->kv.nfree;
	pthread_mutex_unlock(&e->lock);
}
