// SPDX-License-Identifier: MIT
/*
 * The serving stack's checks in the guest (tests/serve/run-in-guest.sh),
 * TAP on stdout:
 *
 *   serve_test model      device logits against the CPU double reference at
 *                         every generated position, BF16 and MXFP8 weights,
 *                         three requests batched together; then the same
 *                         requests disaggregated (prefill on device 0, decode
 *                         on device 1): the same tokens, also with the KV
 *                         pool's blocks scattered
 *   serve_test kv         the block manager (churn, no fragmentation, refusal)
 *                         and admission: a full queue refuses, a full KV pool
 *                         queues, every request completes with the tokens it
 *                         gets alone, every block comes back
 *   serve_test http PORT  a small fuzz of maia-serve's API on 127.0.0.1:PORT:
 *                         every malformed request gets a 4xx naming the
 *                         problem and the server keeps serving; a completion
 *                         and a streamed completion succeed
 *   serve_test fallback   disaggregated with a spare (devices 0, 1, 2): the
 *                         decode device's job hangs at step 6 until the
 *                         driver's job timeout resets it; the requests move to
 *                         device 2 and end with the single-device tokens
 *   serve_test tp4        tensor parallel over devices 0-3 (a ring of four,
 *                         kv_heads 4): the single-device tokens; not in the
 *                         suite
 *   serve_test http-fallback PORT  the same through maia-serve (--spare 2
 *                         --inject-decode-hang 4): the reply and /metrics say
 *                         it moved; a second request, on the spare from the
 *                         start, gives the same text
 *   serve_test http-remote PORT  maia-serve --remote-decode --spare 1 in the
 *                         prefill QEMU, its decode worker in another QEMU,
 *                         which the test's host side kills while a prefill's
 *                         K/V transfer is held (tests/serve/two-qemu.sh): a
 *                         completion decoded in the other process, then one
 *                         decoding there and one in its transfer when that
 *                         process dies, both moving to the spare (the first
 *                         with its prompt's K/V from the checkpoint, the
 *                         other prefilled again), and the same texts from the
 *                         spare alone
 *
 * Nothing here depends on timing: batches may form in any way, and the
 * checks hold for all of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm.h"

static int ntest, nfail;

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	nfail += !ok;
}

#define NREQ		3
#define PROMPT_LEN	40
#define GEN		24
/*
 * Logits bound (absolute). The device computes in FP32 what the reference
 * computes in double, on the same decoded weights and with K/V rounded to
 * BF16 in both. Per Documentation/tensor-engine.rst each GEMM adds at most
 * about 1.25 (K + 4) 2^-24 relative (K <= 512: 4e-5), the SiLU epilogue
 * 1e-5 relative, RMS norm half an FP32 ulp, attention 64 2^-24; four layers
 * of a handful of those on activations of magnitude ~1-10 give logits
 * (magnitude ~8) errors of ~1e-3. A K/V element whose FP32 and double
 * values round to different BF16 neighbours moves one attention input by
 * 2^-8 of itself: rare, and below ~1e-2 in the logits. The bound is 2e-2;
 * the observed maximum is printed (1.4e-3 BF16, 3.0e-3 MXFP8 on this tree).
 */
#define LOGIT_BOUND	2e-2

static void prompt_of(uint32_t i, uint8_t *p)
{
	static const char *const text[NREQ] = {
		"Maia runs a small language model on its ",
		"The KV cache lives in HBM, block by bloc",
		"Prefill on one device, decode on anothe",
	};

	memset(p, ' ', PROMPT_LEN);
	memcpy(p, text[i], strlen(text[i]));
}

static void sampling_of(uint32_t i, struct llm_sampling *s)
{
	*s = (struct llm_sampling){ .top_p = 1.0f };
	if (i == 1) {
		s->temperature = 0.7f;
		s->top_k = 20;
		s->top_p = 0.9f;
		s->seed = 42;
	}
}

/*
 * Leave only every other block of the pool free (before the engine runs),
 * so that requests get scattered blocks: the decode step then gathers them
 * and the disaggregated transfer writes each block on its own, where
 * consecutive blocks are read in place and written in one piece.
 */
static void fragment(struct llm_engine *e)
{
	uint32_t n = e->kv.nblocks, *all = malloc(n * sizeof(*all)), i;

	if (!all || llm_kv_alloc(&e->kv, n, all)) {
		free(all);
		return;
	}
	for (i = 0; i < n; i += 2)
		llm_kv_free(&e->kv, all + i, 1);
	free(all);
}

/* run() with a spare decode device and a hang injected (fallback tests). */
static int run_spare = -1, run_dev;
static bool run_ckpt;			/* with a KV checkpoint on the prefill device */
static uint64_t run_hang_step;
static struct llm_engine_stats run_stats;
static uint32_t run_fallbacks[NREQ], run_replayed[NREQ], run_copied[NREQ];
static uint64_t run_fb_host[NREQ], run_fb_dev[NREQ];
static int run_to[NREQ];

/* Run NREQ requests in an engine; tokens (and logits) out. */
static int run(enum llm_mode mode, unsigned int wdtype, uint8_t tok[NREQ][GEN],
	       float *logits[NREQ], struct llm_weights *w_out, bool scatter)
{
	struct llm_request *r[NREQ] = { 0 };
	struct llm_engine e;
	struct llm_config c;
	uint32_t i;
	int err;

	llm_config_default(&c);
	c.wdtype = wdtype;
	err = llm_engine_init(&e, &c, mode, run_dev, 16);
	if (err) {
		printf("# engine (%s, %s): %s (%s)\n", llm_mode_name(mode), maia_dtype_name(wdtype),
		       maia_strerror(err), maia_last_error());
		return err;
	}
	if (run_spare >= 0) {
		err = llm_engine_add_spare(&e, run_spare);
		if (err) {
			printf("# spare device %d: %s (%s)\n", run_spare, maia_strerror(err),
			       maia_last_error());
			llm_engine_fini(&e);
			return err;
		}
		e.hang_at_step = run_hang_step;
		err = run_ckpt ? llm_engine_set_kv_checkpoint(&e) : 0;
		if (err) {
			printf("# KV checkpoint: %s\n", maia_strerror(err));
			llm_engine_fini(&e);
			return err;
		}
	}
	if (scatter)
		fragment(&e);
	/* All queued before the engine runs: one prefill of the three. */
	for (i = 0; i < NREQ && !err; i++) {
		uint8_t p[PROMPT_LEN];
		struct llm_sampling s;

		prompt_of(i, p);
		sampling_of(i, &s);
		r[i] = llm_request_new(p, PROMPT_LEN, GEN, &s);
		if (!r[i]) {
			err = -ENOMEM;
			break;
		}
		r[i]->keep_logits = logits != NULL;
		err = llm_engine_submit(&e, r[i]);
	}
	err = err ?: llm_engine_start(&e);
	for (i = 0; i < NREQ && r[i]; i++) {
		enum llm_req_state st = LLM_REQ_FAILED;

		if (!err)
			llm_engine_wait(&e, r[i], GEN, &st);
		if (st != LLM_REQ_DONE && !err)
			err = r[i]->error ? r[i]->error : -EIO;
		run_fallbacks[i] = r[i]->fallbacks;
		run_replayed[i] = r[i]->replayed_tokens;
		run_to[i] = r[i]->fallback_to;
		run_copied[i] = r[i]->kv_copied_tokens;
		run_fb_host[i] = r[i]->fallback_host_ns;
		run_fb_dev[i] = r[i]->fallback_dev_ns;
		if (!err) {
			memcpy(tok[i], r[i]->out, GEN);
			if (logits) {
				logits[i] = r[i]->logits;
				r[i]->logits = NULL;
			}
		}
		llm_engine_release(&e, r[i]);
	}
	llm_engine_get_stats(&e, &run_stats);
	if (w_out && !err) {
		*w_out = e.w;
		w_out->ref = malloc(e.w.nref * 4);
		if (w_out->ref)
			memcpy(w_out->ref, e.w.ref, e.w.nref * 4);
		else
			err = -ENOMEM;
	}
	llm_engine_fini(&e);
	return err;
}

static void test_model(unsigned int wdtype, uint8_t single_tok[NREQ][GEN])
{
	uint8_t tok[NREQ][GEN];
	float *logits[NREQ] = { 0 };
	struct llm_weights w = { 0 };
	struct llm_ref *ref = NULL;
	double *rl = malloc(LLM_VOCAB * sizeof(double)), max_err = 0, max_abs = 0;
	uint32_t i, j, k, argmax_same = 0, steps = 0;
	int err = run(LLM_MODE_SINGLE, wdtype, tok, logits, &w, false);

	tap(!err, "%s: three requests (greedy, top-k/top-p, greedy) prefilled and decoded "
	    "together on one device",
	    maia_dtype_name(wdtype));
	if (err || !rl || llm_ref_create(&w, &ref)) {
		tap(false, "%s: logits against the CPU double reference (no run)",
		    maia_dtype_name(wdtype));
		goto out;
	}
	for (i = 0; i < NREQ; i++) {
		uint8_t p[PROMPT_LEN];

		prompt_of(i, p);
		llm_ref_reset(ref);
		for (j = 0; j < PROMPT_LEN - 1; j++)
			llm_ref_step(ref, p[j], rl);
		for (j = 0; j < GEN; j++) {
			const float *dl = logits[i] + (size_t)j * LLM_VOCAB;
			uint32_t a = 0, b = 0;

			/* Position PROMPT_LEN - 1 + j gives generated token j. */
			llm_ref_step(ref, j ? tok[i][j - 1] : p[PROMPT_LEN - 1], rl);
			for (k = 0; k < LLM_VOCAB; k++) {
				double e = fabs(dl[k] - rl[k]);

				max_err = e > max_err ? e : max_err;
				max_abs = fabs(rl[k]) > max_abs ? fabs(rl[k]) : max_abs;
				a = dl[k] > dl[a] ? k : a;
				b = rl[k] > rl[b] ? k : b;
			}
			argmax_same += a == b;
			steps++;
		}
	}
	tap(max_err <= LOGIT_BOUND, "%s: logits of %u positions against the CPU double reference: "
	    "max |err| %.3g (bound %.0e, max |logit| %.3g); the reference's argmax agrees at %u",
	    maia_dtype_name(wdtype), steps, max_err, LOGIT_BOUND, max_abs, argmax_same);
	if (single_tok)
		memcpy(single_tok, tok, sizeof(tok));
out:
	llm_ref_destroy(ref);
	llm_weights_fini(&w);
	for (i = 0; i < NREQ; i++)
		free(logits[i]);
	free(rl);
}

static int cmd_model(void)
{
	uint8_t single[NREQ][GEN], dis[NREQ][GEN], scat[NREQ][GEN];
	int err;

	test_model(MAIA_DTYPE_BF16, single);
	test_model(MAIA_DTYPE_MXFP8_E4M3, NULL);
	err = run(LLM_MODE_DISAGG, MAIA_DTYPE_BF16, dis, NULL, NULL, false);
	tap(!err, "disaggregated: prefill on device 0, K/V pushed layer by layer, decode on "
	    "device 1");
	tap(!err && !memcmp(single, dis, sizeof(single)),
	    "disaggregated and single-device runs give identical tokens (%d requests x %d)", NREQ,
	    GEN);
	err = run(LLM_MODE_SINGLE, MAIA_DTYPE_BF16, scat, NULL, NULL, true);
	tap(!err && !memcmp(single, scat, sizeof(single)),
	    "scattered KV blocks (gathered every step) give the same tokens as consecutive ones");
	err = run(LLM_MODE_DISAGG, MAIA_DTYPE_BF16, scat, NULL, NULL, true);
	tap(!err && !memcmp(single, scat, sizeof(single)),
	    "disaggregated into scattered blocks (a remote write per block): the same tokens");
	/* Devices 3 and 4: a ring of two (run-in-guest.sh). */
	run_dev = 3;
	err = run(LLM_MODE_TP, MAIA_DTYPE_BF16, dis, NULL, NULL, false);
	run_dev = 0;
	tap(!err, "tensor parallel on devices 3 and 4: heads and MLP columns split, an all-reduce "
	    "after each layer's attention output and MLP (%s)", err ? maia_strerror(err) : "ok");
	if (!err && memcmp(single, dis, sizeof(single)))
		for (uint32_t i = 0; i < NREQ; i++)
			printf("# request %u: single %.24s, tp %.24s\n", i, (char *)single[i],
			       (char *)dis[i]);
	tap(!err && !memcmp(single, dis, sizeof(single)),
	    "tensor-parallel and single-device runs give identical tokens (%d requests x %d)",
	    NREQ, GEN);
	return 0;
}

/*
 * Spare-device fallback: device 1's decode job at step 6 waits on a
 * semaphore nobody signals; the driver's job timeout (the script sets 1 s)
 * fails it and resets device 1. Every request then has its first tokens
 * (one from the prefill, five from steps 1-5): they move to device 2 and
 * must end with exactly the tokens of the single-device run.
 */
/* The last run's moves: their time in all (a figure, not a check). */
static void fb_times(const char *how)
{
	uint64_t h = 0, d = 0;
	uint32_t i;

	for (i = 0; i < NREQ; i++) {
		h += run_fb_host[i];
		d += run_fb_dev[i];
	}
	printf("# move of %d requests to the spare, %s: %.2f ms host, %.1f us device time\n",
	       NREQ, how, h / 1e6, d / 1e3);
}

static int cmd_fallback(void)
{
	uint8_t single[NREQ][GEN], fb[NREQ][GEN];
	uint32_t i, moved = 0, replayed = 0;
	int err = run(LLM_MODE_SINGLE, MAIA_DTYPE_BF16, single, NULL, NULL, false);

	tap(!err, "reference: the three requests on one device");
	run_spare = 2;
	run_hang_step = 6;
	err = run(LLM_MODE_DISAGG, MAIA_DTYPE_BF16, fb, NULL, NULL, false);
	run_spare = -1;
	run_hang_step = 0;
	for (i = 0; i < NREQ; i++) {
		moved += run_fallbacks[i] == 1 && run_to[i] == 2;
		replayed += run_replayed[i];
	}
	tap(!err, "disaggregated on devices 0 -> 1 with spare 2, device 1's job hung at step 6: "
	    "every request completes (%s)", err ? maia_strerror(err) : "ok");
	tap(!err && !memcmp(single, fb, sizeof(single)),
	    "after the move to device 2 the tokens are those of the single-device run "
	    "(%d requests x %d)", NREQ, GEN);
	tap(moved == NREQ && run_stats.fallbacks == 1 && run_stats.dec_failures == 1 &&
	    run_stats.dec_index == 2 && replayed == NREQ * (PROMPT_LEN + 5) &&
	    run_stats.replayed_tokens == replayed && run_stats.failed == 0,
	    "each request says it moved to device 2 with %u tokens replayed (prompt + 5); the "
	    "engine counts 1 failure, 1 fallback, %llu replayed, 0 failed", PROMPT_LEN + 5,
	    (unsigned long long)run_stats.replayed_tokens);
	fb_times("prompt prefilled again");

	/* The same, resuming from the prefill device's KV checkpoint. */
	run_spare = 2;
	run_hang_step = 6;
	run_ckpt = true;
	err = run(LLM_MODE_DISAGG, MAIA_DTYPE_BF16, fb, NULL, NULL, false);
	run_spare = -1;
	run_hang_step = 0;
	run_ckpt = false;
	for (i = 0, moved = 0, replayed = 0; i < NREQ; i++) {
		moved += run_fallbacks[i] == 1 && run_to[i] == 2 && run_copied[i] == PROMPT_LEN;
		replayed += run_replayed[i];
	}
	tap(!err && !memcmp(single, fb, sizeof(single)),
	    "with a KV checkpoint on device 0: after the move to device 2 the tokens are those "
	    "of the single-device run (%s)", err ? maia_strerror(err) : "ok");
	tap(moved == NREQ && replayed == NREQ * 5 && run_stats.replayed_tokens == replayed &&
	    run_stats.kv_copied_tokens == NREQ * PROMPT_LEN && run_stats.failed == 0,
	    "each request's %u prompt tokens' K/V copied from device 0 over the fabric, only its "
	    "5 generated tokens replayed; the engine counts %llu copied, %llu replayed",
	    PROMPT_LEN, (unsigned long long)run_stats.kv_copied_tokens,
	    (unsigned long long)run_stats.replayed_tokens);
	fb_times("prompt K/V copied");
	return 0;
}

/* The block manager alone, then admission through an engine. */
static int cmd_kv(void)
{
	struct llm_kv kv;
	uint32_t held[64][8], nheld[64] = { 0 }, i, all[64];
	uint64_t s = 1;
	bool ok = true;
	int err;

	err = llm_kv_init(&kv, 64);
	for (i = 0; i < 2000 && !err; i++) {
		uint32_t slot, n;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		slot = (uint32_t)(s >> 40) % 64;
		n = 1 + (uint32_t)(s >> 20) % 8;
		if (nheld[slot]) {
			llm_kv_free(&kv, held[slot], nheld[slot]);
			nheld[slot] = 0;
		} else if (!llm_kv_alloc(&kv, n, held[slot])) {
			nheld[slot] = n;
		}
	}
	for (i = 0; i < 64; i++)
		if (nheld[i])
			llm_kv_free(&kv, held[i], nheld[i]);
	ok = !err && kv.nfree == 64;
	tap(ok, "KV blocks: 2000 random allocations and frees, every block back (%u of 64 free)",
	    kv.nfree);
	ok = !llm_kv_alloc(&kv, 64, all);
	tap(ok, "KV blocks: after the churn one request still gets the whole pool (no fragmentation)");
	tap(llm_kv_alloc(&kv, 1, all + 63) == -ENOSPC && kv.refusals >= 1,
	    "KV blocks: an allocation beyond the pool is refused with -ENOSPC");
	llm_kv_free(&kv, all, 64);
	llm_kv_fini(&kv);

	/* Admission: 8 blocks of 16 tokens; each request needs 40 + 24 = 64 tokens = 4 blocks. */
	{
		struct llm_engine e;
		struct llm_config c;
		struct llm_request *r[5] = { 0 }, *big;
		uint8_t alone[NREQ][GEN];
		struct llm_sampling sp;
		struct llm_engine_stats st;
		int rc[5];
		bool same = true, done = true;

		err = run(LLM_MODE_SINGLE, MAIA_DTYPE_BF16, alone, NULL, NULL, false);
		llm_config_default(&c);
		c.kv_blocks = 8;
		err = err ?: llm_engine_init(&e, &c, LLM_MODE_SINGLE, 0, 3);
		if (err) {
			tap(false, "engine with 8 KV blocks: %s", maia_strerror(err));
			return 0;
		}
		/* Before the engine runs, the queue fills deterministically. */
		for (i = 0; i < 4; i++) {
			uint8_t p[PROMPT_LEN];

			prompt_of(i % NREQ, p);
			sampling_of(i % NREQ, &sp);
			r[i] = llm_request_new(p, PROMPT_LEN, GEN, &sp);
			rc[i] = r[i] ? llm_engine_submit(&e, r[i]) : -ENOMEM;
		}
		tap(!rc[0] && !rc[1] && !rc[2] && rc[3] == -EBUSY,
		    "a fourth request beyond a queue of 3 is refused (-EBUSY, HTTP 503): %d %d %d %d",
		    rc[0], rc[1], rc[2], rc[3]);
		big = llm_request_new((const uint8_t *)"x", 1, 140, &sp);
		tap(big && llm_engine_submit(&e, big) == -E2BIG,
		    "a request needing 9 blocks of an 8-block pool is refused outright (-E2BIG)");
		if (big)
			llm_engine_release(&e, big);
		llm_engine_start(&e);
		for (i = 0; i < 3; i++) {
			enum llm_req_state stt = LLM_REQ_FAILED;

			llm_engine_wait(&e, r[i], GEN, &stt);
			done &= stt == LLM_REQ_DONE;
			same &= stt == LLM_REQ_DONE && !memcmp(r[i]->out, alone[i], GEN);
		}
		llm_engine_get_stats(&e, &st);
		tap(done && same, "with room for two at a time (prefilled together), the third waits "
		    "for blocks (prefilled alone); all three give the tokens of one prefill of three");
		tap(st.kv_used == 0 && st.kv_total == 8 && st.completed == 3 && st.refused == 1,
		    "afterwards every block is free (%u used of %u), 3 completed, 1 refused",
		    st.kv_used, st.kv_total);
		for (i = 0; i < 4; i++)
			if (r[i])
				llm_engine_release(&e, r[i]);
		/*
		 * Clients that go away: one after its first token, one queued
		 * behind it (each needs the whole 8-block pool). Whether each is
		 * cancelled or finished first depends on timing; either way
		 * both end and nothing stays held.
		 */
		{
			struct llm_request *a, *b;
			uint64_t ended = st.completed + st.cancelled;
			uint8_t p[PROMPT_LEN];
			int k;

			prompt_of(0, p);
			sampling_of(0, &sp);
			a = llm_request_new(p, PROMPT_LEN, 128 - PROMPT_LEN, &sp);
			b = llm_request_new(p, PROMPT_LEN, 128 - PROMPT_LEN, &sp);
			rc[0] = a ? llm_engine_submit(&e, a) : -ENOMEM;
			rc[1] = b ? llm_engine_submit(&e, b) : -ENOMEM;
			if (!rc[0])
				llm_engine_wait(&e, a, 0, NULL);
			if (a)
				llm_engine_release(&e, a);
			if (b)
				llm_engine_release(&e, b);
			for (k = 0; k < 6000; k++) {	/* bounded: 60 s */
				llm_engine_get_stats(&e, &st);
				if (st.completed + st.cancelled == ended + 2)
					break;
				usleep(10000);
			}
			tap(!rc[0] && !rc[1] && st.completed + st.cancelled == ended + 2 &&
			    st.kv_used == 0 && st.running == 0 && st.queue_depth == 0,
			    "two requests whose client lets go (after its first token, and queued) "
			    "end and hold nothing (%llu cancelled, %u blocks used)",
			    (unsigned long long)st.cancelled, st.kv_used);
		}
		llm_engine_fini(&e);
	}
	return 0;
}

/* One raw request; the status, and whether the server still answers /health. */
static int raw(int port, const char *req, size_t len, char **reply)
{
	int status = 0;

	llm_http_raw("127.0.0.1", port, req, len, 30000, &status, reply, NULL);
	return status;
}

static int raws(int port, const char *req, char **reply)
{
	return raw(port, req, strlen(req), reply);
}

static bool healthy(int port)
{
	static const char h[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char *reply = NULL;
	bool ok = raw(port, h, sizeof(h) - 1, &reply) == 200 && reply &&
		  strstr(reply, "\"status\": \"ok\"");

	free(reply);
	return ok;
}

static int post(int port, const char *body, char **reply)
{
	int status = 0;

	llm_http_post("127.0.0.1", port, "/v1/completions", body, 60000, &status, reply, NULL);
	return status;
}

static int cmd_http(int port)
{
	static const struct { const char *body; const char *why; } bad[] = {
		{ "", "an empty body" },
		{ "{", "truncated JSON" },
		{ "[1, 2]", "an array instead of an object" },
		{ "{\"prompt\": \"\"}", "an empty prompt" },
		{ "{\"max_tokens\": 4}", "no prompt" },
		{ "{\"prompt\": 7}", "a prompt that is not a string" },
		{ "{\"prompt\": \"hi\", \"frobnicate\": 1}", "an unknown parameter" },
		{ "{\"prompt\": \"hi\", \"max_tokens\": 0}", "max_tokens 0" },
		{ "{\"prompt\": \"hi\", \"max_tokens\": 1.5}", "a fractional max_tokens" },
		{ "{\"prompt\": \"hi\", \"max_tokens\": 1000}", "a prompt + max_tokens over the context" },
		{ "{\"prompt\": \"hi\", \"top_p\": 0}", "top_p 0" },
		{ "{\"prompt\": \"hi\", \"temperature\": -1}", "a negative temperature" },
		{ "{\"prompt\": \"hi\", \"stream\": \"yes\"}", "a stream that is not a boolean" },
		{ "{\"prompt\": \"hi\", \"prompt\": \"again\"}", "a duplicate member" },
		{ "{\"prompt\": \"hi\"} trailing", "bytes after the object" },
		{ "{\"prompt\": \"\\ud800\"}", "a lone surrogate" },
		{ "{\"prompt\": \"a\x01b\"}", "a raw control character" },
		{ "{\"prompt\": \"hi\", \"top_k\": {\"a\": 1}}", "an object where a number goes" },
	};
	char *reply = NULL, *long_body, *text;
	uint64_t s = 7;
	size_t i, tlen = 0;
	int status, st_ok = 0, healthy_after = 0, n4xx = 0, garbage_ok = 0;

	tap(healthy(port), "GET /health answers 200 {\"status\": \"ok\", ...}");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		status = post(port, bad[i].body, &reply);
		if (status == 400 && reply && strstr(reply, "\"message\""))
			n4xx++;
		else
			printf("# %s: HTTP %d %s\n", bad[i].why, status, reply ? reply : "");
		free(reply);
		reply = NULL;
		healthy_after += healthy(port);
	}
	tap(n4xx == (int)(sizeof(bad) / sizeof(bad[0])),
	    "%d malformed completion bodies (bad JSON, empty or over-long prompt, unknown or "
	    "out-of-range parameters) each get 400 with a message: %d did", (int)i, n4xx);
	/* Over-long prompt by itself: 300 bytes in a 256-token context. */
	long_body = malloc(400);
	if (long_body) {
		memcpy(long_body, "{\"prompt\": \"", 12);
		memset(long_body + 12, 'a', 300);
		strcpy(long_body + 312, "\"}");
		status = post(port, long_body, &reply);
		tap(status == 400 && reply && strstr(reply, "exceed the context"),
		    "a 300-byte prompt gets 400 (exceeds the 256-token context): HTTP %d", status);
		free(reply);
		reply = NULL;
		free(long_body);
	}
	status = raws(port, "GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		      &reply);
	st_ok += status == 405;
	free(reply);
	status = raws(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &reply);
	st_ok += status == 404;
	free(reply);
	status = raws(port, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n"
		     "Connection: close\r\n\r\n{}", &reply);
	st_ok += status == 413 || status == 400 || (status == 0 && healthy(port));
	free(reply);
	tap(st_ok == 3, "wrong method 405, unknown path 404, an oversized body refused");
	/* Seeded garbage: never a crash; a reply, if any, is a 4xx. */
	for (i = 0; i < 40; i++) {
		char g[256];
		size_t n = 1 + (size_t)(s >> 58) * 4, k;

		for (k = 0; k < n && k < sizeof(g); k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			g[k] = (char)(s >> 56);
		}
		if (i % 2)	/* half of them start like a real request */
			memcpy(g, "POST /v1/completions HTTP/1.1\r\n", 31 < n ? 31 : n);
		status = raw(port, g, n < sizeof(g) ? n : sizeof(g), &reply);
		free(reply);
		reply = NULL;
		garbage_ok += (status == 0 || (status >= 400 && status < 500));
		healthy_after += healthy(port);
	}
	tap(garbage_ok == 40, "40 seeded garbage requests: each closed or answered 4xx (%d)",
	    garbage_ok);
	tap(healthy_after == (int)(sizeof(bad) / sizeof(bad[0])) + 40,
	    "the server answered /health after every bad request (%d of %d)", healthy_after,
	    (int)(sizeof(bad) / sizeof(bad[0])) + 40);
	status = post(port, "{\"prompt\": \"Hello, Maia\", \"max_tokens\": 8, \"temperature\": 0.5, "
		      "\"top_k\": 10, \"top_p\": 0.95, \"seed\": 3, \"model\": \"x\"}", &reply);
	text = reply ? llm_json_get_string(reply, "text", &tlen) : NULL;
	tap(status == 200 && text && tlen == 8 && llm_json_get_number(reply, "completion_tokens") == 8,
	    "a valid completion: 200, 8 tokens (HTTP %d)", status);
	free(text);
	free(reply);
	reply = NULL;
	status = post(port, "{\"prompt\": \"Hello, Maia\", \"max_tokens\": 5, \"stream\": true}",
		      &reply);
	{
		int events = 0;
		const char *p = reply;

		while (p && (p = strstr(p, "data: {")))
			events++, p++;
		tap(status == 200 && reply && strstr(reply, "text/event-stream") &&
		    strstr(reply, "data: [DONE]") && events == 6,
		    "a streamed completion: server-sent events, 5 tokens + the final one, [DONE] "
		    "(%d events)", events);
	}
	free(reply);
	reply = NULL;
	status = raws(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		      &reply);
	tap(status == 200 && reply && strstr(reply, "maia_serve_requests_completed_total 2") &&
	    strstr(reply, "maia_serve_kv_blocks_used 0"),
	    "GET /metrics: Prometheus text, 2 completed, no KV block held");
	free(reply);
	return 0;
}

/*
 * Tensor parallel over 4 devices (0-3, a ring of four; not in the suite):
 * with kv_heads 4 so that each device has one K/V head, the same tokens as
 * one device with that model.
 */
static int cmd_tp4(void)
{
	struct llm_request *r[NREQ] = { 0 };
	uint8_t tok[2][NREQ][GEN];
	struct llm_config c;
	int err = 0, pass;

	llm_config_default(&c);
	c.kv_heads = 4;
	for (pass = 0; pass < 2 && !err; pass++) {
		struct llm_engine e;
		uint32_t i;

		err = pass ? llm_engine_init_tp(&e, &c, 0, 4, 16) :
			     llm_engine_init(&e, &c, LLM_MODE_SINGLE, 0, 16);
		if (err)
			break;
		for (i = 0; i < NREQ && !err; i++) {
			uint8_t p[PROMPT_LEN];
			struct llm_sampling s;

			prompt_of(i, p);
			sampling_of(i, &s);
			r[i] = llm_request_new(p, PROMPT_LEN, GEN, &s);
			err = r[i] ? llm_engine_submit(&e, r[i]) : -ENOMEM;
		}
		err = err ?: llm_engine_start(&e);
		for (i = 0; i < NREQ && r[i]; i++) {
			enum llm_req_state st = LLM_REQ_FAILED;

			if (!err)
				llm_engine_wait(&e, r[i], GEN, &st);
			if (!err && st != LLM_REQ_DONE)
				err = r[i]->error ? r[i]->error : -EIO;
			if (!err)
				memcpy(tok[pass][i], r[i]->out, GEN);
			llm_engine_release(&e, r[i]);
			r[i] = NULL;
		}
		llm_engine_fini(&e);
	}
	tap(!err, "kv_heads 4: one device, then tensor parallel over devices 0-3 (%s)",
	    err ? maia_strerror(err) : "ok");
	tap(!err && !memcmp(tok[0], tok[1], sizeof(tok[0])),
	    "tensor parallel over 4 devices gives the single-device tokens (%d requests x %d)",
	    NREQ, GEN);
	return 0;
}

/* maia-serve --spare 2 --inject-decode-hang 4 on PORT (run-in-guest.sh). */
static int cmd_http_fallback(int port)
{
	static const char body[] = "{\"prompt\": \"Failover keeps serving the \", "
				   "\"max_tokens\": 12, \"temperature\": 0.8, \"seed\": 5}";
	char *r1 = NULL, *r2 = NULL, *m = NULL, *t1, *t2;
	int s1 = post(port, body, &r1), s2 = post(port, body, &r2), sm;
	bool same;

	t1 = r1 ? strstr(r1, "\"text\"") : NULL;
	t2 = r2 ? strstr(r2, "\"text\"") : NULL;
	same = t1 && t2 && strstr(t1, "\"finish_reason\"") &&
	       !strncmp(t1, t2, (size_t)(strstr(t1, "\"finish_reason\"") - t1) + 1);
	tap(s1 == 200 && r1 && strstr(r1, "\"fallbacks\": 1, \"fallback_from\": 1, "
					  "\"fallback_to\": 2"),
	    "a completion whose decode device hung: 200, its reply says it moved from device 1 "
	    "to 2");
	tap(s2 == 200 && r2 && strstr(r2, "\"fallbacks\": 0") && same,
	    "the same request again, on device 2 from the start: the same text");
	if (!same)
		printf("# first: %s\n# second: %s\n", r1 ? r1 : "-", r2 ? r2 : "-");
	sm = raws(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &m);
	tap(sm == 200 && m && strstr(m, "maia_serve_fallbacks_total 1\n") &&
	    strstr(m, "maia_serve_decode_failures_total 1\n") &&
	    strstr(m, "maia_serve_decode_device 2\n") &&
	    strstr(m, "maia_serve_requests_completed_total 2\n") &&
	    strstr(m, "maia_serve_requests_failed_total 0\n"),
	    "/metrics: 1 decode failure, 1 fallback, decode device 2, 2 completed, 0 failed");
	free(r1);
	free(r2);
	free(m);
	return 0;
}

struct post_arg {
	int port;
	const char *body;
	char *reply;
	int status;
};

static void *post_thread(void *arg)
{
	struct post_arg *a = arg;

	a->status = post(a->port, a->body, &a->reply);
	return NULL;
}

/* maia_serve_generated_tokens_total, or -1. */
static long generated(int port)
{
	static const char key[] = "\nmaia_serve_generated_tokens_total ";
	char *m = NULL, *p;
	long n = -1;

	if (raws(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &m) == 200 &&
	    m && (p = strstr(m, key)))
		n = strtol(p + sizeof(key) - 1, NULL, 10);
	free(m);
	return n;
}

/* The reply's text member up to its finish_reason, the same in both. */
static bool same_text(const char *a, const char *b)
{
	const char *t1 = a ? strstr(a, "\"text\"") : NULL, *t2 = b ? strstr(b, "\"text\"") : NULL;
	const char *f = t1 ? strstr(t1, "\"finish_reason\"") : NULL;

	return t1 && t2 && f && !strncmp(t1, t2, (size_t)(f - t1) + 1);
}

/*
 * maia-serve --mode disagg --remote-decode maia.serve --spare 1
 * --kv-checkpoint --inject-xfer-hold 3 on PORT, its worker in the other
 * QEMU (two-qemu.sh). The first completion is decoded by the worker. The
 * second (48 tokens) is decoding there when a third comes: that one's
 * prefill (the server's third) pushes its first layer, then its transfer
 * job is held until the worker's QEMU is killed, and its remote writes
 * then fail. Both move to the spare: the second with its prompt's K/V from
 * the checkpoint, the third with its prompt prefilled there. The third is
 * sent once the second has 3 tokens (generated_tokens_total >= 7): the
 * second has 45 steps to go and the engine, held, runs none of them, so it
 * is still running whatever the machine's load.
 */
static int cmd_http_remote(int port)
{
	static const char b0[] = "{\"prompt\": \"Two QEMU processes \", \"max_tokens\": 4}";
	static const char body[] = "{\"prompt\": \"Failover keeps serving the \", "
				   "\"max_tokens\": 48, \"temperature\": 0.8, \"seed\": 5}";
	static const char p3[] = "Killed in its K/V transfer: ";
	static const char b3[] = "{\"prompt\": \"Killed in its K/V transfer: \", \"max_tokens\": 8}";
	struct post_arg a1 = { .port = port, .body = body };
	char *r0 = NULL, *r3 = NULL, *r1s = NULL, *r3s = NULL, *m0 = NULL, *m = NULL, want[160];
	int s0, s3, s1s, s3s, sm0, sm, tries;
	pthread_t th;
	bool started;

	s0 = post(port, b0, &r0);
	sm0 = raws(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &m0);
	tap(s0 == 200 && r0 && strstr(r0, "\"fallbacks\": 0") && strstr(r0, "\"kv_bytes\": ") &&
	    !strstr(r0, "\"kv_bytes\": 0,") && sm0 == 200 && m0 &&
	    strstr(m0, "maia_serve_decode_remote 1\n"),
	    "a completion decoded by the worker in the other QEMU: 200, its K/V pushed over the "
	    "fabric (kv_bytes > 0), /metrics: decode device remote");
	if (s0 != 200 || !r0)
		printf("# first: status %d %s\n", s0, r0 ? r0 : "-");
	started = !pthread_create(&th, NULL, post_thread, &a1);
	/* Bounded: 60 s of 20 ms looks (the second request itself gives up after 60 s). */
	for (tries = 0; started && tries < 3000 && generated(port) < 4 + 3; tries++)
		usleep(20000);
	s3 = post(port, b3, &r3);
	if (started)
		pthread_join(th, NULL);
	tap(a1.status == 200 && a1.reply && strstr(a1.reply, "\"completion_tokens\": 48") &&
	    strstr(a1.reply, "\"fallbacks\": 1, \"fallback_from\": 0, \"fallback_to\": 1, ") &&
	    strstr(a1.reply, "\"fallback_from_remote\": true, \"kv_copied_tokens\": 27,"),
	    "a completion decoding in the other QEMU when it was killed: 200, 48 tokens, moved "
	    "from the remote device to spare device 1, its 27 prompt tokens' K/V copied from the "
	    "checkpoint");
	snprintf(want, sizeof(want), "\"fallbacks\": 1, \"fallback_from\": 0, \"fallback_to\": 1, "
		 "\"replayed_tokens\": %zu, \"fallback_from_remote\": true, \"kv_copied_tokens\": 0,",
		 sizeof(p3) - 1);
	tap(s3 == 200 && r3 && strstr(r3, "\"completion_tokens\": 8") && strstr(r3, want),
	    "a completion whose K/V transfer was in flight when the decode QEMU was killed: 200, "
	    "8 tokens, moved to spare device 1, its %zu prompt tokens prefilled there",
	    sizeof(p3) - 1);
	if (a1.status != 200 || s3 != 200 || !strstr(r3 ? r3 : "", want))
		printf("# second: %s\n# third: %s\n", a1.reply ? a1.reply : "-", r3 ? r3 : "-");
	s1s = post(port, body, &r1s);
	s3s = post(port, b3, &r3s);
	tap(s1s == 200 && s3s == 200 && r1s && r3s && strstr(r1s, "\"fallbacks\": 0") &&
	    strstr(r3s, "\"fallbacks\": 0") && same_text(a1.reply, r1s) && same_text(r3, r3s),
	    "both again, on the spare from the start: the same texts");
	if (!same_text(a1.reply, r1s) || !same_text(r3, r3s))
		printf("# again: %s\n# again: %s\n", r1s ? r1s : "-", r3s ? r3s : "-");
	sm = raws(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &m);
	tap(sm == 200 && m && strstr(m, "maia_serve_fallbacks_total 1\n") &&
	    strstr(m, "maia_serve_decode_failures_total 1\n") &&
	    strstr(m, "maia_serve_decode_device 1\n") &&
	    strstr(m, "maia_serve_decode_remote 0\n") &&
	    strstr(m, "maia_serve_requests_completed_total 5\n") &&
	    strstr(m, "maia_serve_kv_copied_tokens_total 27\n") &&
	    strstr(m, "maia_serve_requests_failed_total 0\n"),
	    "/metrics: 1 decode failure, 1 fallback, 27 tokens' K/V copied, decode device 1 "
	    "(local), 5 completed, 0 failed");
	if (a1.reply && strstr(a1.reply, "\"fallback_ms\""))
		printf("# the second's move: %.64s\n", strstr(a1.reply, "\"fallback_ms\""));
	if (r3 && strstr(r3, "\"fallback_ms\""))
		printf("# the third's move: %.64s\n", strstr(r3, "\"fallback_ms\""));
	free(r0);
	free(a1.reply);
	free(r3);
	free(r1s);
	free(r3s);
	free(m0);
	free(m);
	return 0;
}

int main(int argc, char **argv)
{
	printf("TAP version 13\n");
	if (argc == 2 && !strcmp(argv[1], "model"))
		cmd_model();
	else if (argc == 2 && !strcmp(argv[1], "kv"))
		cmd_kv();
	else if (argc == 3 && !strcmp(argv[1], "http"))
		cmd_http(atoi(argv[2]));
	else if (argc == 2 && !strcmp(argv[1], "tp4"))
		cmd_tp4();
	else if (argc == 2 && !strcmp(argv[1], "fallback"))
		cmd_fallback();
	else if (argc == 3 && !strcmp(argv[1], "http-fallback"))
		cmd_http_fallback(atoi(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "http-remote"))
		cmd_http_remote(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: serve_test model | kv | http PORT | fallback | "
			"http-fallback PORT | http-remote PORT | tp4\n");
		return 2;
	}
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
