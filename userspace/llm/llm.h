/* SPDX-License-Identifier: MIT */
/*
 * A small decoder-only transformer LM that runs on Maia devices through
 * libmaia (Documentation/serving.rst): byte-level tokens, token embedding,
 * N layers of RMSNorm, grouped-query attention with rotary positions over
 * a block-based KV cache in HBM, SiLU-gated MLP, final norm, logits.
 * Weights are deterministic from a seed, stored BF16 or MX per run.
 *
 * One concern per file:
 *   llm_weights.c   weights from the seed, converted on the device
 *   llm_forward.c   the forward pass as device commands (prefill, decode)
 *   llm_kvcache.c   the KV-cache block manager (host bookkeeping)
 *   llm_sampler.c   greedy and seeded top-k / top-p sampling
 *   llm_ref.c       the CPU double reference
 *   llm_disagg.c    prefill on one device, K/V pushed layer by layer to another
 *   llm_remote.c    decode on a device in another QEMU process (its worker)
 *   llm_engine.c    requests, admission and continuous batching of decode steps
 *   llm_json.c      the completion request's JSON and the escaping of replies
 */
#ifndef MAIA_LLM_H
#define MAIA_LLM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libmaia.h"

#define LLM_VOCAB		256u	/* byte-level */
#define LLM_MAX_BATCH		16u	/* decode rows in one step */
#define LLM_MAX_LAYERS		16u

struct llm_config {
	uint32_t layers, d_model, heads, kv_heads, head_dim, ffn;
	uint32_t max_seq;		/* prompt + generated tokens of one request */
	uint32_t block_tokens;		/* tokens per KV-cache block */
	uint32_t kv_blocks;		/* blocks in the decode device's pool */
	uint32_t max_batch;		/* requests decoded together */
	unsigned int wdtype;		/* MAIA_DTYPE_BF16 or an MX format */
	uint64_t seed;
	float eps, rope_theta;
};

/* The defaults: 4 layers, d_model 256, 8 query heads over 2 KV heads. */
void llm_config_default(struct llm_config *c);
/* 0, or -EINVAL with a message in *why. */
int llm_config_check(const struct llm_config *c, const char **why);
static inline uint32_t llm_qdim(const struct llm_config *c) { return c->heads * c->head_dim; }
static inline uint32_t llm_kvdim(const struct llm_config *c) { return c->kv_heads * c->head_dim; }
/*
 * A cache row: one token's K then its V, BF16 (2 x kvdim elements), so one
 * layer's K and V of consecutive tokens are one contiguous range.
 */
static inline uint64_t llm_kv_row_bytes(const struct llm_config *c)
{
	return (uint64_t)llm_kvdim(c) * 2 * 2;
}
/* Bytes of one layer's K and V in one block. */
static inline uint64_t llm_block_bytes(const struct llm_config *c)
{
	return (uint64_t)c->block_tokens * llm_kv_row_bytes(c);
}

/* ---- weights (llm_weights.c) ---- */

/* Where one weight matrix lives in the device's weight BO. */
struct llm_wt {
	uint64_t off, scale_off;	/* data and MX block scales (0 without) in the BO */
	uint64_t ref_off;		/* first element in llm_weights.ref */
	uint32_t rows, cols;		/* [out, in], row-major, in innermost */
};

struct llm_layer_w {
	struct llm_wt attn_norm, wqkv, wo, mlp_norm, w1, w3, w2;
};

struct llm_weights {
	struct llm_config cfg;
	struct llm_layer_w layer[LLM_MAX_LAYERS];
	struct llm_wt emb, final_norm, lm_head, lm_bias;
	uint64_t bytes;			/* the weight BO's size */
	uint64_t nref;			/* elements of ref */
	float *ref;			/* the weights as the device decodes them, FP32 */
	float *init;			/* a shard's FP32 values to load (else the seed's) */
};

/* Lay out and generate the weights; host side only (ref filled later). */
int llm_weights_init(struct llm_weights *w, const struct llm_config *c);
void llm_weights_fini(struct llm_weights *w);
/* Host FP32 pointer of a tensor in w->ref (same layout, FP32 elements). */
float *llm_wref(const struct llm_weights *w, const struct llm_wt *t);
/*
 * A descriptor of a weight in the BO at va: matrices [rows, cols] in the
 * weight dtype, norm vectors (rows == 1) [cols] in FP32.
 */
int llm_wdesc(const struct llm_weights *w, const struct llm_wt *t, uint64_t va,
	      struct maia_tensor_desc *d);
/* Convert the FP32 weights on the device into the BO and read them back decoded. */
int llm_weights_load(struct llm_weights *w, struct maia_device *dev, struct maia_bo *wbo);
/*
 * Tensor-parallel shard `rank` of `n` of loaded weights (full->ref set):
 * the model with heads, kv_heads and ffn divided by n; its Wqkv rows are
 * rank's query heads, K heads and V heads, Wo its columns of those heads,
 * W1 and W3 its rows of the MLP, W2 its columns; norms, embedding and head
 * whole. -EINVAL if n does not divide kv_heads and ffn into valid shapes.
 */
int llm_weights_shard(const struct llm_weights *full, uint32_t rank, uint32_t n,
		      struct llm_weights *ws);

/* ---- a device and its buffers (llm_forward.c) ---- */

struct llm_buf {
	struct maia_bo *bo;
	uint64_t va;
	void *cpu;		/* HOST buffers only */
};

struct llm_dev {
	struct maia_device *dev;
	const struct llm_weights *w;
	struct llm_buf wbo;		/* weights in HBM */
	struct llm_buf rope;		/* [max_seq][2][head_dim]: C = [cos, cos], S = [-sin, sin] */
	struct llm_buf x, h, qkv, qr, att, t, g, u, krow;	/* activations, max_seq rows */
	struct llm_buf rope_step;	/* [max_seq][2][head_dim]: this job's rows */
	struct llm_buf logits;		/* HOST: [max(max_seq, max_batch)][vocab] FP32 */
	struct llm_buf gather;		/* [max_batch][max_seq][K|V row] */
	struct llm_buf staging;		/* prefill K/V: [layers][max_seq][K|V row] */
	struct llm_buf pool;		/* KV blocks: [layers][kv_blocks][block_tokens][K|V row] */
	struct maia_cmdbuf *cb;
	uint64_t pool_bytes;
	/* Counters (host time in ns, device time from maia_wait_times). */
	uint64_t jobs, job_host_ns, job_device_ns;
	/*
	 * Tensor parallel (llm_dev_set_tp): after Wo and W2 the partial
	 * sums are all-reduced over the ring's tp_n ranks; tp_seq numbers the
	 * collectives, the same on every rank.
	 */
	uint32_t tp_n, tp_rank, tp_comm, tp_seq;
};

/* Open buffers for the model on dev and load the weights there. */
int llm_dev_init(struct llm_dev *d, struct maia_device *dev, struct llm_weights *w,
		 bool with_pool);
void llm_dev_fini(struct llm_dev *d);
/* Give d a KV pool (llm_dev_init without one); 0 if it has one. */
int llm_dev_add_pool(struct llm_dev *d);
/* Submit d->cb, wait, account its times; *times may be NULL. */
int llm_dev_run(struct llm_dev *d, struct maia_job_times *times);
/* Rank `rank` of a ring of n devices cabled port 0 -> next; comm: the same on all. */
void llm_dev_set_tp(struct llm_dev *d, uint32_t rank, uint32_t n, uint32_t comm);
/* Submit every ds[i]->cb, then wait for each; rank 0's times in *times. */
int llm_devs_run(struct llm_dev *const *ds, uint32_t n, struct maia_job_times *times);

/*
 * Pool offset of (layer, block) in the KV pool: its block_tokens cache rows
 * (K then V each). A layer's blocks are adjacent, so a run of consecutive
 * block numbers is one contiguous range of one layer's K and V.
 */
static inline uint64_t llm_pool_off(const struct llm_config *c, uint32_t layer, uint32_t block)
{
	return ((uint64_t)layer * c->kv_blocks + block) * llm_block_bytes(c);
}

/* Where a prefill puts each layer's K/V once computed. */
enum llm_kv_dest {
	LLM_KV_LOCAL_POOL,	/* copy into this device's pool blocks */
	LLM_KV_SIGNAL,		/* leave in staging, signal semaphore sem_base + layer */
	LLM_KV_SIGNAL_AT_END,	/* the same, every layer's signal after the last layer */
};

/* One request of a prefill. */
struct llm_prefill_req {
	const uint8_t *tokens;
	uint32_t n;			/* prompt tokens, >= 1 */
	const uint32_t *blocks;		/* its pool blocks (LLM_KV_LOCAL_POOL, transfers) */
};

/*
 * Append a prefill of nreq prompts (at most max_batch, max_seq tokens in
 * all) to d->cb as one batch: their rows one after another, in staging too
 * (request i from row llm_prefill_row(reqs, i)); logits row i gets request
 * i's last position. With LOCAL_POOL each request's K/V goes to its blocks.
 */
int llm_build_prefill(struct llm_dev *d, const struct llm_prefill_req *reqs, uint32_t nreq,
		      enum llm_kv_dest dest, uint32_t sem_base);
static inline uint32_t llm_prefill_row(const struct llm_prefill_req *reqs, uint32_t i)
{
	uint32_t r = 0, k;

	for (k = 0; k < i; k++)
		r += reqs[k].n;
	return r;
}

/* One request's row in a decode step. */
struct llm_step_row {
	uint8_t token;			/* the token at position pos */
	uint32_t pos;			/* 0-based */
	const uint32_t *blocks;		/* its pool blocks, pos / block_tokens + 1 used */
};

/* Append one decode step for n rows to d->cb; logits row i for row i. */
int llm_build_decode(struct llm_dev *d, const struct llm_step_row *rows, uint32_t n);
/* The logits of row i after the job ran. */
const float *llm_logits(const struct llm_dev *d, uint32_t row);

/* ---- KV-cache block manager (llm_kvcache.c) ---- */

/*
 * Fixed-size blocks handed out from a free list: any free block serves any
 * request, so the pool never fragments; a request gets all the blocks its
 * prompt plus max_tokens need at admission, or none.
 */
struct llm_kv {
	uint32_t nblocks, nfree;
	uint32_t *free;			/* stack of free block numbers */
	uint8_t *used;			/* per block: 1 while a request holds it */
	uint64_t allocs, refusals;
};

int llm_kv_init(struct llm_kv *kv, uint32_t nblocks);
void llm_kv_fini(struct llm_kv *kv);
/* Blocks for tokens tokens of a request with block_tokens per block. */
uint32_t llm_kv_blocks_for(uint32_t tokens, uint32_t block_tokens);
/* Take n blocks into out[] (ascending where possible); -ENOSPC if fewer are free. */
int llm_kv_alloc(struct llm_kv *kv, uint32_t n, uint32_t *out);
void llm_kv_free(struct llm_kv *kv, const uint32_t *blocks, uint32_t n);

/* ---- sampling (llm_sampler.c) ---- */

struct llm_sampling {
	float temperature;		/* 0: greedy */
	uint32_t top_k;			/* 0: all */
	float top_p;			/* 1: all */
	uint64_t seed;
};

/* The next token from logits[vocab]; *rng is the request's generator state. */
int llm_sample(const float *logits, uint32_t vocab, const struct llm_sampling *s,
	       uint64_t *rng);
uint64_t llm_rng_seed(uint64_t seed);

/* ---- CPU double reference (llm_ref.c) ---- */

struct llm_ref;
int llm_ref_create(const struct llm_weights *w, struct llm_ref **out);
void llm_ref_destroy(struct llm_ref *r);
/* Feed token at the next position; logits[vocab] of that position. */
int llm_ref_step(struct llm_ref *r, uint8_t token, double *logits);
void llm_ref_reset(struct llm_ref *r);

/* ---- disaggregation (llm_disagg.c) ---- */

/* When the transfer job may push a layer's K/V. */
enum llm_xfer_sched {
	LLM_XFER_LAYERWISE,	/* as soon as the layer is done (serving) */
	LLM_XFER_AFTER_PREFILL,	/* both jobs submitted, the transfer after the last layer */
	LLM_XFER_ALONE,		/* submitted once the prefill job completed: its own time */
};

struct llm_disagg {
	struct llm_dev *pre, *dec;	/* prefill device A, decode device B (NULL: remote) */
	uint32_t key;			/* B's window over its pool */
	uint64_t dec_bytes;		/* the window's size */
	uint32_t port;			/* A's port cabled to B */
	struct maia_cmdbuf *xcb;	/* A's transfer job (HIGH priority queue) */
	struct llm_buf ts;		/* HOST on A: modeled timestamps */
	uint64_t bytes_moved, writes;
	/* The prefill in flight between begin and end (one at a time). */
	bool pending;
	bool broken;			/* a job failed: semaphore counts are unknown */
	/*
	 * KV checkpoint: the transfer job also copies each request's prompt
	 * K/V into the same blocks of A's own pool (A has one), so that a
	 * spare can get them from A (llm_disagg_push_blocks) if B fails.
	 */
	bool ckpt;
	/*
	 * Tests: the next transfer job waits on LLM_HOLD_SEM after its first
	 * layer's writes, until the host signals it (llm_disagg_release()).
	 */
	bool hold;
	bool xfer_failed;		/* the last end: the prefill ran, its transfer failed */
	enum llm_xfer_sched sched;
	uint64_t seq_c, seq_x, t0, xfer_bytes;
	uint32_t xfer_writes;
	uint32_t req_writes[LLM_MAX_BATCH];	/* per request of the batch */
	uint64_t req_bytes[LLM_MAX_BATCH];
};

int llm_disagg_init(struct llm_disagg *x, struct llm_dev *pre, struct llm_dev *dec);
/* The same towards a decode device in another process: its serial and window. */
int llm_disagg_init_remote(struct llm_disagg *x, struct llm_dev *pre, uint64_t dserial,
			   uint32_t key, uint64_t bytes);
void llm_disagg_fini(struct llm_disagg *x);

/* What one disaggregated prefill (batch) took. */
struct llm_xfer_times {
	uint64_t bytes;			/* K/V bytes pushed to B */
	uint64_t prefill_host_ns, prefill_dev_ns;	/* the compute job */
	uint64_t xfer_host_ns, xfer_dev_ns;		/* the transfer job */
	uint64_t e2e_host_ns;		/* compute submit to the last layer landed */
	uint64_t e2e_dev_ns;		/* the same on A's modeled timeline */
	uint64_t compute_done_ns;	/* host CLOCK_MONOTONIC: A's logits ready */
	uint64_t exposed_host_ns;	/* the last layer landed this long after that */
	uint64_t exposed_dev_ns;	/* the same in modeled time on A */
	uint32_t writes;		/* remote writes it took */
};

/*
 * Prefill tokens on A; every layer's K/V goes to B's pool blocks by remote
 * writes from a second job on A's HIGH-priority hardware queue as soon as
 * that layer is done (a semaphore per layer), so the transfer of layer l
 * overlaps the compute of layer l + 1. begin submits, end waits for both
 * jobs (the caller may run B meanwhile); then A's logits row 0 holds the
 * last position's logits and B's pool the request's K/V. The other
 * schedules are the baselines the overlap is measured against.
 */
int llm_disagg_begin(struct llm_disagg *x, const struct llm_prefill_req *reqs, uint32_t nreq,
		     enum llm_xfer_sched sched);
int llm_disagg_end(struct llm_disagg *x, struct llm_xfer_times *t);
/* The semaphore a held transfer waits on, and its release (a job on A). */
#define LLM_HOLD_SEM	(MAIA_NUM_SEMAPHORES - 2)
int llm_disagg_release(struct llm_disagg *x);
/*
 * After a failed transfer (x->broken): take the signals of the prefill's
 * layers that no transfer took (each layer's semaphore at most once, a
 * wait of 1 ms that times out when none is left), so that the next transfer
 * waits for its own prefill; clears broken.
 */
int llm_disagg_drain(struct llm_disagg *x);
/*
 * Push tokens [0, ntok) of every layer's K/V in blocks from A's pool (the
 * checkpoint) into the same blocks of B's window: one remote write per
 * layer and run of consecutive blocks. The job's times in *host_ns, *dev_ns.
 */
int llm_disagg_push_blocks(struct llm_disagg *x, const uint32_t *blocks, uint32_t ntok,
			   uint64_t *host_ns, uint64_t *dev_ns);
/* One remote write of bytes from A to B's window (the raw link figure). */
int llm_disagg_raw_write(struct llm_disagg *x, uint64_t bytes, uint64_t *host_ns,
			 uint64_t *dev_ns);

/* ---- decode on a device in another QEMU process (llm_remote.c) ---- */

/*
 * The engine's end of a decode worker (maia-serve --mode decode-worker) in
 * another guest: a byte stream (a virtio-serial port) carries its hello
 * (fabric serial, window key over its pool), the decode steps' rows and
 * their logits; the K/V go over the fabric into the window.
 */
struct llm_remote {
	int fd;				/* the stream; -1 once it failed */
	uint64_t serial;		/* the worker device's fabric serial */
	uint32_t key;			/* its window over its KV pool */
	uint64_t pool_bytes;
	int index;			/* its device index in its own guest */
	float *logits;			/* [max_batch][vocab]: the last step's */
	uint64_t steps;
};

/*
 * Open the virtio-serial port `port` (its name, or a /dev path) and wait up
 * to timeout_ms for the worker's hello; -EINVAL if its model or pool is not
 * c's, -ETIMEDOUT if none came.
 */
int llm_vport_open(const char *port);
int llm_remote_connect(struct llm_remote *r, const char *port, const struct llm_config *c,
		       int timeout_ms);
/*
 * One decode step of n rows on the worker: its logits in r->logits, its
 * times in *t. -EPIPE when the worker went away (its QEMU killed), then
 * the stream is closed.
 */
int llm_remote_step(struct llm_remote *r, const struct llm_step_row *rows, uint32_t n,
		    const struct llm_config *c, struct maia_job_times *t);
void llm_remote_close(struct llm_remote *r);
/* Tests: wait up to timeout_ms for the worker to go away (0) or -ETIMEDOUT. */
int llm_remote_wait_gone(struct llm_remote *r, int timeout_ms);
/*
 * The worker: d (with its pool) serves decode steps to the engine at the
 * other end of `port` until it says bye or goes away (0). pause_at_step
 * (tests): that step never runs; the worker prints that it paused and
 * sleeps timeout_ms (the test kills its QEMU meanwhile). timeout_ms also
 * bounds the wait for the engine's end at start.
 */
int llm_remote_serve(struct llm_dev *d, int index, const char *port, uint64_t pause_at_step,
		     int timeout_ms);

/* ---- the engine: requests and continuous batching (llm_engine.c) ---- */

enum llm_mode { LLM_MODE_SINGLE, LLM_MODE_DISAGG, LLM_MODE_TP };

#define LLM_MAX_TP	4

enum llm_req_state { LLM_REQ_WAITING, LLM_REQ_RUNNING, LLM_REQ_DONE, LLM_REQ_FAILED };

struct llm_request {
	/* Set by the submitter. */
	uint8_t *prompt;
	uint32_t prompt_len, max_tokens;
	struct llm_sampling sampling;
	bool keep_logits;		/* tests: keep every step's logits */
	/* Filled by the engine; the fields below are under the engine's lock. */
	enum llm_req_state state;
	int error;			/* negative errno when FAILED */
	uint8_t *out;			/* generated tokens (max_tokens) */
	uint32_t n_out;
	float *logits;			/* keep_logits: (max_tokens) x vocab */
	uint64_t t_submit, t_first, t_done;	/* host CLOCK_MONOTONIC ns */
	uint64_t dev_ttft_ns, dev_decode_ns;	/* modeled time */
	uint32_t decode_steps;
	uint32_t prefill_batch;		/* requests prefilled in its job */
	struct llm_xfer_times xfer;
	uint32_t blocks[1024];
	uint32_t nblocks;
	uint32_t pos;			/* next position to feed */
	uint64_t rng;
	struct llm_request *next;	/* engine lists */
	int refs;			/* submitter + engine */
	bool cancelled;			/* the submitter let go before it ended */
	/* Spare-device fallback (under the engine's lock). */
	uint32_t fallbacks;		/* times it moved to a spare decode device */
	int fallback_from, fallback_to;	/* device indexes of the last move */
	uint32_t replayed_tokens;	/* prompt and generated tokens recomputed there */
	bool fallback_from_remote;	/* the device it left was in another process */
	uint32_t kv_copied_tokens;	/* ... prompt tokens whose K/V came from the checkpoint */
	bool kv_lost;			/* its K/V transfer failed: not in the checkpoint */
	uint64_t fallback_host_ns;	/* its move: the replay (and copy), host time */
	uint64_t fallback_dev_ns;	/* ... the jobs' device time */
};

struct llm_engine_stats {
	uint64_t requests, completed, refused, failed, cancelled;
	uint64_t prompt_tokens, generated_tokens, steps, step_rows, prefills;
	uint64_t kv_bytes_moved, ttft_sum_ns;
	uint64_t dec_failures;		/* decode jobs that failed on the decode device */
	uint64_t fallbacks;		/* moves to the spare decode device */
	uint64_t replayed_tokens;	/* tokens recomputed on the spare */
	uint64_t kv_copied_tokens;	/* tokens whose K/V the spare got from the checkpoint */
	uint32_t queue_depth, running, kv_used, kv_total;
	int dec_index;			/* the decode device's index (in its own guest) */
	bool dec_remote;		/* the decode device is in another process */
};

struct llm_engine {
	enum llm_mode mode;
	struct llm_config cfg;
	struct llm_weights w;
	struct llm_dev devs[LLM_MAX_TP];
	int dev_index[LLM_MAX_TP];
	uint32_t ntp;			/* tensor parallel: ranks devs[0..ntp) */
	struct llm_dev *tp[LLM_MAX_TP];
	struct llm_weights tpw[LLM_MAX_TP];	/* their shards */
	struct llm_disagg x;
	struct llm_dev *pre, *dec;
	struct llm_dev *spare;		/* a decode device to move to; NULL: none (left) */
	struct llm_remote remote;	/* the decode device in another process ... */
	bool dec_remote;		/* ... is the decode device (dec NULL) */
	bool dec_failed;		/* engine thread: a decode job failed, move */
	bool local_prefill;		/* after a move no port reached: the spare prefills */
	bool kv_checkpoint;		/* the prefill device keeps the prompts' K/V */
	uint64_t hang_at_step;		/* tests: decode step (1-based) whose job hangs */
	/*
	 * Tests, remote decode: prefill (1-based) whose transfer is held after
	 * its first layer until the worker went away (its QEMU killed).
	 */
	uint64_t hold_xfer_at;
	struct llm_kv kv;
	uint32_t max_queue;
	pthread_mutex_t lock;		/* protects the lists, stats, kv and request states */
	pthread_cond_t wake;		/* engine: work arrived / stop */
	pthread_cond_t progress;	/* submitters: a request advanced */
	struct llm_request *waiting, *running;
	bool stop;
	pthread_t thread;
	bool started;
	struct llm_engine_stats stats;
};

/*
 * Open the devices (single: dev_index; disagg: dev_index and the next,
 * which its port 0 must reach) and load the model.
 */
int llm_engine_init(struct llm_engine *e, const struct llm_config *c, enum llm_mode mode,
		    int dev_index, uint32_t max_queue);
/*
 * Tensor parallel over ntp (2 or 4) devices dev_index.. cabled as a ring:
 * each holds a shard of the weights (llm_weights_shard) and its heads' K/V;
 * every prefill and decode step is one job per device, with an all-reduce
 * after each layer's attention output and MLP. LLM_MODE_TP in
 * llm_engine_init() is this with 2.
 */
int llm_engine_init_tp(struct llm_engine *e, const struct llm_config *c, int dev_index,
		       uint32_t ntp, uint32_t max_queue);
/*
 * Disaggregated across processes: prefill on device dev_index, decode on
 * the worker at the other end of virtio-serial port `port` (waited for up
 * to timeout_ms), whose device device dev_index's fabric must reach.
 */
int llm_engine_init_remote(struct llm_engine *e, const struct llm_config *c, int dev_index,
			   const char *port, int timeout_ms, uint32_t max_queue);
/*
 * Before llm_engine_start: device dev_index is the spare. When a decode job
 * fails (its device hung and was reset, or went away), the running requests
 * move to the spare: each one's prompt is prefilled there and its tokens so
 * far are fed through decode steps (their K/V recomputed, nothing sampled),
 * then decoding goes on; a disaggregated engine's prefill device then
 * pushes K/V to the spare (through whichever port reaches it).
 */
int llm_engine_add_spare(struct llm_engine *e, int dev_index);
/*
 * Before llm_engine_start, disaggregated with a spare: the prefill device
 * keeps every prompt's K/V in a pool of its own (the same blocks), and a
 * move to the spare copies them there over the fabric instead of
 * prefilling the prompt again; only the generated tokens are replayed.
 */
int llm_engine_set_kv_checkpoint(struct llm_engine *e);
int llm_engine_start(struct llm_engine *e);
void llm_engine_fini(struct llm_engine *e);
/*
 * Queue a request (copies nothing: r stays the caller's until released).
 * -E2BIG: it can never fit (prompt + max_tokens > max_seq, or more blocks
 * than the pool has); -EBUSY: the queue is full (refused, try later).
 */
int llm_engine_submit(struct llm_engine *e, struct llm_request *r);
/*
 * Wait until r has more than n_seen tokens or is finished (n_seen =
 * max_tokens: until finished); returns r->n_out and its state then.
 */
uint32_t llm_engine_wait(struct llm_engine *e, struct llm_request *r, uint32_t n_seen,
			 enum llm_req_state *state);
/*
 * The submitter is done with r. A request still waiting or running is then
 * cancelled: it leaves the queue, or the batch at the next step, and gives
 * back its blocks (a client that went away holds nothing).
 */
void llm_engine_release(struct llm_engine *e, struct llm_request *r);
struct llm_request *llm_request_new(const uint8_t *prompt, uint32_t len, uint32_t max_tokens,
				    const struct llm_sampling *s);
void llm_engine_get_stats(struct llm_engine *e, struct llm_engine_stats *s);
const char *llm_mode_name(enum llm_mode m);
uint64_t llm_now_ns(void);

/* ---- the completion request (llm_json.c) ---- */

struct llm_completion_req {
	uint8_t *prompt;		/* bytes (malloc'd) */
	uint32_t prompt_len;
	uint32_t max_tokens;
	struct llm_sampling sampling;
	bool stream;
};

/*
 * Parse an OpenAI-style completion body. 0, or -EINVAL with a message in
 * err (bad JSON, wrong types, unknown parameters, out-of-range values).
 */
int llm_parse_completion(const char *body, size_t len, struct llm_completion_req *req,
			 char *err, size_t errlen);
/* Append bytes as the contents of a JSON string (\u00XX for non-ASCII). */
size_t llm_json_escape(char *dst, size_t cap, const uint8_t *src, size_t n);

/* ---- a minimal HTTP/1.1 client for the tools and tests (llm_client.c) ---- */

/*
 * Send raw (a whole request, sent as is) to host:port over TCP and read the
 * reply until the server closes; *status is the reply's status code (0 if
 * none came), *reply its malloc'd bytes (NUL-terminated) for the caller to
 * free. timeout_ms bounds each send and receive.
 */
int llm_http_raw(const char *host, int port, const char *raw, size_t len, int timeout_ms,
		 int *status, char **reply, size_t *reply_len);
/*
 * The same, handing each piece of the reply to fn as it arrives (for
 * server-sent events); *status as above. The reply is not kept.
 */
int llm_http_stream(const char *host, int port, const char *raw, size_t len, int timeout_ms,
		    void (*fn)(void *arg, const char *data, size_t n), void *arg, int *status);
/* POST body to path; the same results. */
int llm_http_post(const char *host, int port, const char *path, const char *body,
		  int timeout_ms, int *status, char **reply, size_t *reply_len);
/* The JSON string member `name` of a reply, unescaped (\u00XX to bytes); malloc'd. */
char *llm_json_get_string(const char *json, const char *name, size_t *len);
/* The JSON number member `name`; NAN when absent. */
double llm_json_get_number(const char *json, const char *name);

#endif /* MAIA_LLM_H */
