// SPDX-License-Identifier: MIT
/*
 * Disaggregated serving: prefill on device A, decode on device B. B opens a
 * fabric window over its KV pool; A computes the prompt's K/V layer by
 * layer into its staging buffer and, after each layer, signals semaphore
 * `layer` (llm_build_prefill with LLM_KV_SIGNAL). A second job on A, at
 * HIGH priority so that it runs on its own hardware queue, waits for each
 * semaphore in turn and pushes that layer's K and V into the request's
 * blocks on B with fabric remote writes (one per run of consecutive block
 * numbers, K and V together, for every request of the prefill batch), while the compute job
 * goes on with the next layer: the device parks a job on its remote write
 * and runs the other queue meanwhile. Both jobs share A's address space,
 * hence its semaphores.
 *
 * Timestamps (modeled time, on A's timeline): the compute job's first and
 * last command and the transfer job's last give the modeled end-to-end
 * time and how long after the prefill the last layer landed.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "drm/maia_accel.h"
#include "llm.h"

#define SEM_TIMEOUT_US	(30u * 1000000u)

/*
 * The transfer job's buffers on A, then the first port that is up with B
 * (serial dserial) at its other end (the ring cabling: device i's port 0
 * reaches device i + 1, port 1 device i - 1); one remote write checks that
 * B has the window. Only B's port: a write towards a device that is
 * resetting would hang.
 */
static int connect_to(struct llm_disagg *x, uint64_t dserial)
{
	struct llm_dev *pre = x->pre;
	unsigned int ports = 0, port;
	uint64_t serial;
	int err;

	err = maia_fabric_ports(pre->dev, &ports, &serial);
	if (!err && !ports)
		err = -ENODEV;
	err = err ?: maia_cmdbuf_create(pre->dev, 256 * 1024, &x->xcb);
	if (!err) {
		err = maia_bo_create(pre->dev, 4096, MAIA_BO_HOST, &x->ts.bo);
		err = err ?: maia_bo_map(x->ts.bo, &x->ts.cpu);
		if (!err)
			x->ts.va = maia_bo_va(x->ts.bo);
	}
	for (port = 0, err = err ?: -ENOLINK; err == -ENOLINK && port < ports; port++) {
		struct maia_fabric_port p;
		uint64_t h, d;

		if (maia_fabric_port(pre->dev, port, &p) || !p.up || p.peer_serial != dserial)
			continue;
		x->port = port;
		if (!llm_disagg_raw_write(x, 4096, &h, &d))
			err = 0;
	}
	if (err)
		llm_disagg_fini(x);
	return err;
}

int llm_disagg_init(struct llm_disagg *x, struct llm_dev *pre, struct llm_dev *dec)
{
	unsigned int dports = 0;
	uint64_t dserial = 0;
	int err;

	memset(x, 0, sizeof(*x));
	x->pre = pre;
	x->dec = dec;
	err = maia_fabric_ports(dec->dev, &dports, &dserial);
	if (!err && !dports)
		err = -ENODEV;
	x->dec_bytes = maia_bo_size(dec->pool.bo);
	err = err ?: maia_fabric_window_open(dec->pool.bo, 0, x->dec_bytes,
					     MAIA_FABRIC_REMOTE_WRITE, &x->key);
	if (err) {
		llm_disagg_fini(x);
		return err;
	}
	return connect_to(x, dserial);
}

int llm_disagg_init_remote(struct llm_disagg *x, struct llm_dev *pre, uint64_t dserial,
			   uint32_t key, uint64_t bytes)
{
	memset(x, 0, sizeof(*x));
	x->pre = pre;
	x->key = key;		/* the worker's: it closes it */
	x->dec_bytes = bytes;
	return connect_to(x, dserial);
}

void llm_disagg_fini(struct llm_disagg *x)
{
	if (x->key && x->dec)
		maia_fabric_window_close(x->dec->dev, x->key);
	maia_cmdbuf_destroy(x->xcb);
	if (x->ts.bo)
		maia_bo_destroy(x->ts.bo);
	memset(x, 0, sizeof(*x));
}

/*
 * The transfer job: per layer, wait for its semaphore, then write every
 * request's K and V from its staging rows to its blocks on B. A cache row
 * holds a token's K and V, and a layer's blocks are adjacent in the pool,
 * so each run of consecutive block numbers is one write of both.
 */
static int build_transfer(struct llm_disagg *x, const struct llm_prefill_req *reqs,
			  uint32_t nreq)
{
	const struct llm_config *c = &x->pre->w->cfg;
	uint64_t row = llm_kv_row_bytes(c);
	uint32_t l, b, e, i, off;
	int err = 0;

	maia_cmdbuf_reset(x->xcb);
	x->xfer_bytes = 0;
	x->xfer_writes = 0;
	for (i = 0; i < nreq; i++) {
		x->req_writes[i] = 0;
		x->req_bytes[i] = 0;
	}
	for (l = 0; l < c->layers && !err; l++) {
		err = maia_cmd_sem_wait(x->xcb, l, 1, SEM_TIMEOUT_US);
		for (i = 0, off = 0; i < nreq && !err; off += reqs[i].n, i++) {
			uint32_t n = reqs[i].n, nb = llm_kv_blocks_for(n, c->block_tokens);
			const uint32_t *blocks = reqs[i].blocks;
			uint64_t src = x->pre->staging.va + (uint64_t)l * c->max_seq * row + off * row;

			for (b = 0; b < nb && !err; b = e) {
				uint32_t last;
				uint64_t bytes;

				for (e = b + 1; e < nb && blocks[e] == blocks[e - 1] + 1; e++)
					;
				last = e * c->block_tokens < n ? e * c->block_tokens : n;
				bytes = (uint64_t)(last - b * c->block_tokens) * row;
				err = maia_cmd_fabric_write(x->xcb, x->port, x->key,
							    llm_pool_off(c, l, blocks[b]),
							    src + (uint64_t)b * c->block_tokens * row,
							    bytes);
				x->xfer_bytes += bytes;
				x->req_bytes[i] += bytes;
				x->req_writes[i]++;
				x->xfer_writes++;
				x->writes++;
			}
		}
		/* tests: the decode device goes away while this job is in flight */
		if (!l && x->hold && !err)
			err = maia_cmd_sem_wait(x->xcb, LLM_HOLD_SEM, 1, SEM_TIMEOUT_US);
	}
	x->hold = false;
	err = err ?: maia_cmd_timestamp(x->xcb, x->ts.va + 8);
	/* The checkpoint: after the last layer landed, so no figure above moves. */
	for (l = 0; l < c->layers && x->ckpt && !err; l++) {
		uint64_t lsrc = x->pre->staging.va + (uint64_t)l * c->max_seq * row;

		for (i = 0, off = 0; i < nreq && !err; off += reqs[i].n, i++) {
			uint32_t n = reqs[i].n, nb = llm_kv_blocks_for(n, c->block_tokens);
			const uint32_t *blocks = reqs[i].blocks;

			for (b = 0; b < nb && !err; b = e) {
				uint32_t last;

				for (e = b + 1; e < nb && blocks[e] == blocks[e - 1] + 1; e++)
					;
				last = e * c->block_tokens < n ? e * c->block_tokens : n;
				err = maia_cmd_copy(x->xcb, x->pre->pool.va +
						    llm_pool_off(c, l, blocks[b]),
						    lsrc + (off + (uint64_t)b * c->block_tokens) * row,
						    (uint64_t)(last - b * c->block_tokens) * row);
			}
		}
	}
	return err;
}

static int wait_job(struct maia_device *dev, uint64_t seq, struct maia_job_times *t);

static int submit_transfer(struct llm_disagg *x)
{
	struct maia_submit_opts o = { .priority = DRM_MAIA_PRIO_HIGH };

	return maia_submit(x->pre->dev, x->xcb, &o, &x->seq_x);
}

int llm_disagg_begin(struct llm_disagg *x, const struct llm_prefill_req *reqs, uint32_t nreq,
		     enum llm_xfer_sched sched)
{
	struct llm_dev *a = x->pre;
	int err;

	if (x->pending)
		return -EBUSY;
	if (x->broken)
		return -EIO;
	maia_cmdbuf_reset(a->cb);
	err = maia_cmd_timestamp(a->cb, x->ts.va);
	err = err ?: llm_build_prefill(a, reqs, nreq, sched == LLM_XFER_LAYERWISE ? LLM_KV_SIGNAL :
				       LLM_KV_SIGNAL_AT_END, 0);
	err = err ?: maia_cmd_timestamp(a->cb, x->ts.va + 16);
	err = err ?: build_transfer(x, reqs, nreq);
	if (err)
		return err;
	x->sched = sched;
	x->t0 = llm_now_ns();
	err = maia_submit(a->dev, a->cb, NULL, &x->seq_c);
	if (!err && sched != LLM_XFER_ALONE) {
		err = submit_transfer(x);
		if (err) {
			/* The prefill's signals would be left for the next transfer. */
			x->broken = true;
			wait_job(a->dev, x->seq_c, NULL);
		}
	}
	if (err)
		return err;
	x->pending = true;
	return 0;
}

static int wait_job(struct maia_device *dev, uint64_t seq, struct maia_job_times *t)
{
	struct maia_job_status st;
	int err = maia_wait_times(dev, seq, 60ll * 1000000000, &st, t);

	if (!err && st.status != DRM_MAIA_JOB_OK)
		err = -EIO;
	return err;
}

int llm_disagg_end(struct llm_disagg *x, struct llm_xfer_times *t)
{
	struct maia_job_times tc = { 0 }, tx = { 0 };
	const uint64_t *ts = x->ts.cpu;
	uint64_t done;
	int err, err2;

	if (!x->pending)
		return -EINVAL;
	x->pending = false;
	x->xfer_failed = false;
	err = wait_job(x->pre->dev, x->seq_c, &tc);
	done = llm_now_ns();
	if (x->sched == LLM_XFER_ALONE) {
		if (err)
			return err;
		err = submit_transfer(x);
		if (err)
			return err;
	}
	/* Wait for the transfer even after a failed prefill: it times out. */
	err2 = wait_job(x->pre->dev, x->seq_x, &tx);
	x->xfer_failed = !err && err2;
	err = err ?: err2;
	if (err) {
		/*
		 * One job failed part-way: semaphores may hold signals no
		 * transfer took, which would let the next one start early.
		 * Refuse further prefills rather than push stale K/V.
		 */
		x->broken = true;
		if (x->xfer_failed) {
			/* the prefill's own figures hold: its requests may move on */
			memset(t, 0, sizeof(*t));
			t->prefill_host_ns = tc.host_ns;
			t->prefill_dev_ns = tc.device_ns;
		}
		return err;
	}
	memset(t, 0, sizeof(*t));
	t->bytes = x->xfer_bytes;
	t->e2e_host_ns = llm_now_ns() - x->t0;
	t->compute_done_ns = done;
	t->exposed_host_ns = llm_now_ns() - done;
	t->exposed_dev_ns = ts[1] > ts[2] ? ts[1] - ts[2] : 0;
	t->writes = x->xfer_writes;
	t->prefill_host_ns = tc.host_ns;
	t->prefill_dev_ns = tc.device_ns;
	t->xfer_host_ns = tx.host_ns;
	t->xfer_dev_ns = tx.device_ns;
	/* to the later of the prefill's end and the last layer's transfer */
	t->e2e_dev_ns = (ts[1] > ts[2] ? ts[1] : ts[2]) - ts[0];
	x->bytes_moved += x->xfer_bytes;
	x->pre->jobs++;
	x->pre->job_host_ns += tc.host_ns;
	x->pre->job_device_ns += tc.device_ns + tx.device_ns;
	return 0;
}

/* A job of one control command on A, waited for. */
static int control_job(struct llm_disagg *x, bool signal, uint32_t sem, uint32_t timeout_us)
{
	struct maia_cmdbuf *cb = NULL;
	uint64_t seq;
	int err = maia_cmdbuf_create(x->pre->dev, 4096, &cb);

	err = err ?: (signal ? maia_cmd_sem_signal(cb, sem, 1) :
		      maia_cmd_sem_wait(cb, sem, 1, timeout_us));
	err = err ?: maia_submit(x->pre->dev, cb, NULL, &seq);
	err = err ?: wait_job(x->pre->dev, seq, NULL);
	maia_cmdbuf_destroy(cb);
	return err;
}

int llm_disagg_release(struct llm_disagg *x)
{
	return control_job(x, true, LLM_HOLD_SEM, 0);
}

int llm_disagg_drain(struct llm_disagg *x)
{
	const struct llm_config *c = &x->pre->w->cfg;
	uint32_t l;

	/* A wait that times out fails its job (-EIO): that layer had none left. */
	for (l = 0; l < c->layers; l++)
		control_job(x, false, l, 1000);
	control_job(x, false, LLM_HOLD_SEM, 1000);
	x->broken = false;
	return 0;
}

int llm_disagg_push_blocks(struct llm_disagg *x, const uint32_t *blocks, uint32_t ntok,
			   uint64_t *host_ns, uint64_t *dev_ns)
{
	const struct llm_config *c = &x->pre->w->cfg;
	uint32_t nb = llm_kv_blocks_for(ntok, c->block_tokens), l, b, e, last;
	uint64_t row = llm_kv_row_bytes(c), seq;
	struct maia_job_times t = { 0 };
	int err = 0;

	if (!x->pre->pool.bo || x->pending)
		return -EINVAL;
	maia_cmdbuf_reset(x->xcb);
	for (l = 0; l < c->layers && !err; l++)
		for (b = 0; b < nb && !err; b = e) {
			for (e = b + 1; e < nb && blocks[e] == blocks[e - 1] + 1; e++)
				;
			last = e * c->block_tokens < ntok ? e * c->block_tokens : ntok;
			err = maia_cmd_fabric_write(x->xcb, x->port, x->key,
						    llm_pool_off(c, l, blocks[b]),
						    x->pre->pool.va + llm_pool_off(c, l, blocks[b]),
						    (uint64_t)(last - b * c->block_tokens) * row);
		}
	err = err ?: maia_submit(x->pre->dev, x->xcb, NULL, &seq);
	err = err ?: wait_job(x->pre->dev, seq, &t);
	if (!err) {
		*host_ns = t.host_ns;
		*dev_ns = t.device_ns;
	}
	return err;
}

int llm_disagg_raw_write(struct llm_disagg *x, uint64_t bytes, uint64_t *host_ns,
			 uint64_t *dev_ns)
{
	struct maia_job_times t = { 0 };
	uint64_t seq;
	int err;

	/* It overwrites B's pool: only while no request holds blocks there. */
	if (!bytes || bytes > maia_bo_size(x->pre->staging.bo) ||
	    bytes > x->dec_bytes)
		return -EINVAL;
	maia_cmdbuf_reset(x->xcb);
	err = maia_cmd_fabric_write(x->xcb, x->port, x->key, 0, x->pre->staging.va, bytes);
	err = err ?: maia_submit(x->pre->dev, x->xcb, NULL, &seq);
	err = err ?: wait_job(x->pre->dev, seq, &t);
	if (!err) {
		*host_ns = t.host_ns;
		*dev_ns = t.device_ns;
	}
	return err;
}
