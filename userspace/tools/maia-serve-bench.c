// SPDX-License-Identifier: MIT
/*
 * maia-serve-bench: the load generator of the serving stack
 * (Documentation/serving.rst).
 *
 *   maia-serve-bench [--modes single,disagg] [--requests N] [--rate R]
 *                    [--prompt-len P] [--max-tokens T] [--weights TYPE]
 *                    [--kv-blocks N] [--max-batch N] [--device N] [--json]
 *
 * For each mode it loads the model in this process (the engine maia-serve
 * runs, without HTTP), sends N requests whose arrivals are a seeded Poisson
 * process at R per second (R = 0: all at once), and prints per mode the
 * time to first token (TTFT) and time per output token (TPOT) p50/p99 and
 * tokens/s, in host time and in the device time model (WAIT's
 * device_time_ns). Half the requests are greedy, half sample with top-k /
 * top-p and their own seed: every request must give the same tokens in
 * every mode, which it checks. In disaggregated mode, before the load, it
 * measures one prompt's prefill alone, its K/V transfer alone and the two
 * overlapped layer by layer, and a single remote write of the same bytes:
 * KV bytes moved, KV transfer GB/s beside the raw remote write, and the
 * fraction of the transfer the overlap hides: 1 - (how long after the
 * prefill's end the last layer landed, layer by layer, median of 9 runs)
 * / (the transfer alone); beside it what layer by layer saves over the
 * transfer after the prefill (the median of 9 paired differences, each
 * timed from the prefill's submission to the last layer landed), over the
 * transfer alone. --json prints make bench's JSON lines.
 *
 *   maia-serve-bench --url HOST:PORT [--requests N] [--rate R] [--prompt-len P]
 *                    [--max-tokens T]
 *
 * sends the same load to a running maia-serve over HTTP, each request a
 * streamed completion in its own thread, and prints what its clients saw:
 * completed and refused (503) requests, TTFT (to the first token's event)
 * and time per output token p50/p99, tokens/s.
 *
 *   maia-serve-bench --url HOST:PORT --prompt TEXT [--max-tokens T]
 *                    [--temperature T] [--top-k K] [--top-p P] [--seed S]
 *
 * sends one completion to a running maia-serve and prints the prompt, the
 * generated text and the figures the server reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"

#define REPS	9

static struct {
	uint32_t requests, prompt_len, max_tokens, kv_blocks, max_batch;
	double rate;
	int device;
	bool json, have_single, have_disagg;
	unsigned int wdtype;
	const char *url, *prompt;
	double temperature, top_p;
	uint32_t top_k;
	uint64_t seed;
} opt = { .requests = 16, .prompt_len = 64, .max_tokens = 32, .kv_blocks = 0, .max_batch = 8,
	  .rate = 4.0, .device = 0, .wdtype = MAIA_DTYPE_BF16, .top_p = 1.0 };

struct mode_result {
	bool ran;
	double ttft[2], tpot[2], tps;		/* host: p50, p99 (s); tokens/s */
	double dttft[2], dtpot[2], dtps;	/* device time */
	uint64_t kv_bytes, kv_host_ns, kv_dev_ns;
	uint8_t **tokens;
	/* Disaggregated only: the overlap measurement. */
	double p_host, x_host, e2e_host, seq_host, p_dev, x_dev, e2e_dev, seq_dev;
	double raw_gbps, raw_dev_gbps, xfer_bytes;
	uint32_t xfer_writes;		/* remote writes of the one-prompt transfer */
	double saved_host, saved_dev;		/* median of paired (after - layerwise) */
	double spread_host;			/* their interquartile range, host */
	double exposed_host, exposed_dev;	/* layer by layer: landed after the prefill */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted values. */
static double pct(const double *v, uint32_t n, double p)
{
	uint32_t k = (uint32_t)ceil(p * n);

	return n ? v[k ? k - 1 : 0] : 0;
}

/* The smallest of REPS values of one field of struct llm_xfer_times. */
static double best(const struct llm_xfer_times *t, size_t off)
{
	uint64_t v = UINT64_MAX, x;
	int i;

	for (i = 0; i < REPS; i++) {
		memcpy(&x, (const char *)&t[i] + off, sizeof(x));
		v = x < v ? x : v;
	}
	return (double)v;
}

/* Deterministic text-like prompts. */
static void make_prompt(uint8_t *p, uint32_t n, uint32_t i)
{
	static const char *const words[] = { "the", "device", "runs", "a", "small", "model",
					      "on", "tiles", "of", "memory", "and", "tokens" };
	uint64_t s = 0x70726f6d7074ull + i * 7919;
	uint32_t k = 0;

	while (k < n) {
		const char *w;
		size_t j;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		w = words[(s >> 33) % 12];
		for (j = 0; w[j] && k < n; j++)
			p[k++] = (uint8_t)w[j];
		if (k < n)
			p[k++] = ' ';
	}
}

static void sampling_of(uint32_t i, struct llm_sampling *s)
{
	*s = (struct llm_sampling){ .top_p = 1.0f };
	if (i % 2) {
		s->temperature = 0.8f;
		s->top_k = 40;
		s->top_p = 0.9f;
		s->seed = 1000 + i;
	}
}

static void sleep_until(uint64_t t)
{
	uint64_t now = llm_now_ns();

	if (t > now) {
		struct timespec ts = { (time_t)((t - now) / 1000000000ull),
				       (long)((t - now) % 1000000000ull) };

		nanosleep(&ts, NULL);
	}
}

/* Prefill alone, transfer alone, both overlapped; a raw write of the same bytes. */
static int measure_overlap(struct llm_engine *e, struct mode_result *m)
{
	struct llm_xfer_times seq[REPS], ovl[REPS], alone[REPS];
	struct llm_prefill_req pr;
	uint32_t blocks[1024], nb = llm_kv_blocks_for(opt.prompt_len, e->cfg.block_tokens);
	uint64_t rh[REPS], rd[REPS];
	uint8_t *p = malloc(opt.prompt_len);
	int err = p ? llm_kv_alloc(&e->kv, nb, blocks) : -ENOMEM;
	int i;

	if (err) {
		free(p);
		return err;
	}
	make_prompt(p, opt.prompt_len, 0);
	pr = (struct llm_prefill_req){ .tokens = p, .n = opt.prompt_len, .blocks = blocks };
	for (i = 0; i < REPS && !err; i++) {
		err = llm_disagg_begin(&e->x, &pr, 1, LLM_XFER_ALONE);
		err = err ?: llm_disagg_end(&e->x, &alone[i]);
		err = err ?: llm_disagg_begin(&e->x, &pr, 1, LLM_XFER_AFTER_PREFILL);
		err = err ?: llm_disagg_end(&e->x, &seq[i]);
		err = err ?: llm_disagg_begin(&e->x, &pr, 1, LLM_XFER_LAYERWISE);
		err = err ?: llm_disagg_end(&e->x, &ovl[i]);
	}
	for (i = 0; i < REPS && !err; i++)
		err = llm_disagg_raw_write(&e->x, alone[0].bytes, &rh[i], &rd[i]);
	llm_kv_free(&e->kv, blocks, nb);
	free(p);
	if (err)
		return err;
	/*
	 * The fastest of REPS runs (noise on a loaded emulator only adds; the
	 * modeled time of the overlapped pair depends on how the host
	 * interleaved the two queues' commands).
	 */
#define BEST(a, f) best(a, offsetof(struct llm_xfer_times, f))
	m->p_host = BEST(alone, prefill_host_ns);
	m->x_host = BEST(alone, xfer_host_ns);
	m->seq_host = BEST(seq, e2e_host_ns);
	m->e2e_host = BEST(ovl, e2e_host_ns);
	m->p_dev = (double)alone[0].prefill_dev_ns;
	m->x_dev = (double)alone[0].xfer_dev_ns;
	m->e2e_dev = BEST(ovl, e2e_dev_ns);
	m->seq_dev = BEST(seq, e2e_dev_ns);
#undef BEST
	{
		double dh[REPS], dd[REPS], eh[REPS], ed[REPS];

		for (i = 0; i < REPS; i++) {
			dh[i] = (double)seq[i].e2e_host_ns - (double)ovl[i].e2e_host_ns;
			dd[i] = (double)seq[i].e2e_dev_ns - (double)ovl[i].e2e_dev_ns;
			eh[i] = (double)ovl[i].exposed_host_ns;
			ed[i] = (double)ovl[i].exposed_dev_ns;
		}
		qsort(dh, REPS, sizeof(double), cmp_double);
		qsort(dd, REPS, sizeof(double), cmp_double);
		qsort(eh, REPS, sizeof(double), cmp_double);
		qsort(ed, REPS, sizeof(double), cmp_double);
		m->saved_host = dh[REPS / 2];
		m->spread_host = dh[(3 * REPS) / 4] - dh[REPS / 4];
		m->saved_dev = dd[REPS / 2];
		m->exposed_host = eh[REPS / 2];
		m->exposed_dev = ed[REPS / 2];
	}
	m->xfer_bytes = (double)alone[0].bytes;
	m->xfer_writes = alone[0].writes;
	for (i = 1; i < REPS; i++)
		rh[0] = rh[i] < rh[0] ? rh[i] : rh[0];
	m->raw_gbps = m->xfer_bytes / (double)rh[0];
	m->raw_dev_gbps = m->xfer_bytes / (double)rd[0];
	return 0;
}

static int run_mode(enum llm_mode mode, struct mode_result *m)
{
	struct llm_request **reqs = calloc(opt.requests, sizeof(*reqs));
	double *ttft = calloc(opt.requests, sizeof(double)), *tpot = calloc(opt.requests, 8);
	double *dttft = calloc(opt.requests, sizeof(double)), *dtpot = calloc(opt.requests, 8);
	uint8_t *prompt = malloc(opt.prompt_len);
	uint64_t t0, next, s = 0x6172726976616cull, first = UINT64_MAX, last = 0, gen = 0;
	uint64_t dev_busy;
	struct llm_engine e;
	struct llm_config c;
	uint32_t i, n = 0;
	int err;

	if (!reqs || !ttft || !tpot || !dttft || !dtpot || !prompt)
		return -ENOMEM;
	llm_config_default(&c);
	c.wdtype = opt.wdtype;
	c.max_batch = opt.max_batch;
	if (opt.kv_blocks)
		c.kv_blocks = opt.kv_blocks;
	err = llm_engine_init(&e, &c, mode, opt.device, opt.requests);
	if (err) {
		fprintf(stderr, "maia-serve-bench: %s: cannot load the model: %s (%s)\n",
			llm_mode_name(mode), maia_strerror(err), maia_last_error());
		return err;
	}
	if (mode == LLM_MODE_DISAGG) {
		err = measure_overlap(&e, m);
		if (err) {
			fprintf(stderr, "maia-serve-bench: the overlap measurement failed: %s (%s)\n",
				maia_strerror(err), maia_last_error());
			llm_engine_fini(&e);
			return err;
		}
	}
	err = llm_engine_start(&e);
	t0 = next = llm_now_ns();
	for (i = 0; i < opt.requests && !err; i++) {
		struct llm_sampling sp;

		make_prompt(prompt, opt.prompt_len, i);
		sampling_of(i, &sp);
		reqs[i] = llm_request_new(prompt, opt.prompt_len, opt.max_tokens, &sp);
		if (!reqs[i]) {
			err = -ENOMEM;
			break;
		}
		sleep_until(next);
		err = llm_engine_submit(&e, reqs[i]);
		if (opt.rate > 0) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			next += (uint64_t)(-log(1.0 - (double)(s >> 11) / (double)(1ull << 53)) /
					   opt.rate * 1e9);
		}
	}
	for (i = 0; i < opt.requests && reqs[i]; i++) {
		enum llm_req_state st = LLM_REQ_FAILED;
		struct llm_request *r = reqs[i];

		if (!err)
			llm_engine_wait(&e, r, r->max_tokens, &st);
		if (st != LLM_REQ_DONE) {
			if (!err)
				err = r->error ? r->error : -EIO;
			llm_engine_release(&e, r);
			continue;
		}
		ttft[n] = (r->t_first - r->t_submit) / 1e9;
		tpot[n] = r->n_out > 1 ? (r->t_done - r->t_first) / 1e9 / (r->n_out - 1) : 0;
		dttft[n] = r->dev_ttft_ns / 1e9;
		dtpot[n] = r->decode_steps ? r->dev_decode_ns / 1e9 / r->decode_steps : 0;
		first = r->t_submit < first ? r->t_submit : first;
		last = r->t_done > last ? r->t_done : last;
		gen += r->n_out;
		m->kv_bytes += r->xfer.bytes;
		m->kv_host_ns += r->xfer.xfer_host_ns;
		m->kv_dev_ns += r->xfer.xfer_dev_ns;
		m->tokens[i] = malloc(r->n_out);
		if (m->tokens[i])
			memcpy(m->tokens[i], r->out, r->n_out);
		llm_engine_release(&e, r);
		n++;
	}
	(void)t0;
	/* The busier device's modeled time bounds the device-time throughput. */
	dev_busy = e.devs[0].job_device_ns;
	if (mode == LLM_MODE_DISAGG && e.devs[1].job_device_ns > dev_busy)
		dev_busy = e.devs[1].job_device_ns;
	llm_engine_fini(&e);
	qsort(ttft, n, 8, cmp_double);
	qsort(tpot, n, 8, cmp_double);
	qsort(dttft, n, 8, cmp_double);
	qsort(dtpot, n, 8, cmp_double);
	m->ttft[0] = pct(ttft, n, 0.5);
	m->ttft[1] = pct(ttft, n, 0.99);
	m->tpot[0] = pct(tpot, n, 0.5);
	m->tpot[1] = pct(tpot, n, 0.99);
	m->dttft[0] = pct(dttft, n, 0.5);
	m->dttft[1] = pct(dttft, n, 0.99);
	m->dtpot[0] = pct(dtpot, n, 0.5);
	m->dtpot[1] = pct(dtpot, n, 0.99);
	m->tps = last > first ? gen / ((last - first) / 1e9) : 0;
	m->dtps = dev_busy ? gen / (dev_busy / 1e9) : 0;
	m->ran = !err;
	free(reqs);
	free(ttft);
	free(tpot);
	free(dttft);
	free(dtpot);
	free(prompt);
	return err;
}

/*
 * The fraction of the transfer the layer-wise overlap hides: all of the
 * transfer alone but what sticks out past the prefill's end (how long
 * after it the last layer landed). The transfer after the prefill is no
 * zero-overlap baseline (its writes still run beside the prefill's last
 * commands, and its job is fetched while the prefill runs), so what layer
 * by layer saves over it (saved()) understates the part hidden.
 */
static double hidden(double exposed, double xfer)
{
	return xfer > 0 ? 1.0 - (exposed < xfer ? exposed : xfer) / xfer : 0;
}

static double saved(double saved_ns, double xfer)
{
	return xfer > 0 ? saved_ns / xfer : 0;
}

static void json_line(const char *name, double v, const char *unit, const char *base, double bv,
		      const char *extra)
{
	printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"higher_is_better\": true",
	       name, v, unit);
	if (base)
		printf(", \"baseline\": \"%s\", \"baseline_value\": %.6g, \"ratio\": %.4g", base, bv,
		       bv ? v / bv : 0.0);
	printf("%s}\n", extra ? extra : "");
}

static void report(enum llm_mode mode, const struct mode_result *m)
{
	const char *name = llm_mode_name(mode);
	char extra[512];

	if (opt.json) {
		char key[64];

		snprintf(key, sizeof(key), "serving_tokens_per_s_%s", name);
		snprintf(extra, sizeof(extra), ", \"device_time_value\": %.6g, \"ttft_p50_ms\": %.4g, "
			 "\"ttft_p99_ms\": %.4g, \"tpot_p50_ms\": %.4g, \"tpot_p99_ms\": %.4g",
			 m->dtps, m->ttft[0] * 1e3, m->ttft[1] * 1e3, m->tpot[0] * 1e3,
			 m->tpot[1] * 1e3);
		json_line(key, m->tps, "tokens/s", NULL, 0, extra);
		if (mode == LLM_MODE_DISAGG) {
			double kv = m->xfer_bytes / m->x_host, dkv = m->xfer_bytes / m->x_dev;

			snprintf(extra, sizeof(extra), ", \"bytes\": %.0f, \"writes\": %u, "
				 "\"device_time_value\": %.6g, \"device_time_baseline_value\": %.6g, "
				 "\"device_time_ratio\": %.4g", m->xfer_bytes, m->xfer_writes, dkv,
				 m->raw_dev_gbps, m->raw_dev_gbps ? dkv / m->raw_dev_gbps : 0.0);
			json_line("serving_kv_transfer_gbps", kv, "GB/s", "fabric_remote_write_gbps",
				  m->raw_gbps, extra);
			snprintf(extra, sizeof(extra), ", \"device_time_value\": %.4f, "
				 "\"exposed_ms\": %.4g, \"device_time_exposed_us\": %.4g, "
				 "\"transfer_alone_ms\": %.4g, \"device_time_transfer_alone_us\": %.4g, "
				 "\"saved_vs_after_prefill\": %.4g, "
				 "\"device_time_saved_vs_after_prefill\": %.4f, "
				 "\"saved_ms\": %.4g, \"saved_iqr_ms\": %.4g",
				 hidden(m->exposed_dev, m->x_dev), m->exposed_host / 1e6,
				 m->exposed_dev / 1e3, m->x_host / 1e6, m->x_dev / 1e3,
				 saved(m->saved_host, m->x_host), saved(m->saved_dev, m->x_dev),
				 m->saved_host / 1e6, m->spread_host / 1e6);
			json_line("serving_kv_overlap_fraction", hidden(m->exposed_host, m->x_host),
				  "fraction", NULL, 0, extra);
		}
		return;
	}
	printf("mode %s: %u requests at %.1f/s, prompt %u bytes, %u tokens each, weights %s\n",
	       name, opt.requests, opt.rate, opt.prompt_len, opt.max_tokens,
	       maia_dtype_name(opt.wdtype));
	printf("  host time:   TTFT p50 %.2f ms p99 %.2f ms, time per output token p50 %.2f ms "
	       "p99 %.2f ms, %.1f tokens/s\n", m->ttft[0] * 1e3, m->ttft[1] * 1e3,
	       m->tpot[0] * 1e3, m->tpot[1] * 1e3, m->tps);
	printf("  device time: TTFT p50 %.1f us p99 %.1f us, time per output token p50 %.1f us "
	       "p99 %.1f us, %.0f tokens/s\n", m->dttft[0] * 1e6, m->dttft[1] * 1e6,
	       m->dtpot[0] * 1e6, m->dtpot[1] * 1e6, m->dtps);
	if (mode != LLM_MODE_DISAGG) {
		printf("  KV bytes moved between devices: 0 (one device)\n");
		return;
	}
	printf("  KV bytes moved during the load: %llu (%.1f GB/s device time)\n",
	       (unsigned long long)m->kv_bytes, m->kv_dev_ns ? (double)m->kv_bytes / m->kv_dev_ns : 0);
	printf("  one %u-byte prompt: %.0f K/V bytes in %u remote writes; transfer alone %.3f GB/s "
	       "host, %.1f GB/s device; one remote write of the same bytes %.3f GB/s host, %.1f GB/s "
	       "device; ratio %.2f host, %.2f device\n",
	       opt.prompt_len, m->xfer_bytes, m->xfer_writes, m->xfer_bytes / m->x_host,
	       m->xfer_bytes / m->x_dev, m->raw_gbps, m->raw_dev_gbps,
	       m->xfer_bytes / m->x_host / m->raw_gbps, m->xfer_bytes / m->x_dev / m->raw_dev_gbps);
	printf("  layer-wise overlap, host time: prefill %.2f ms, transfer %.2f ms alone; "
	       "layer by layer the last layer landed %.3f ms after the prefill (median of %d): "
	       "%.0f %% hidden; %.2f ms transfer after the prefill, %.2f ms layer by layer (best "
	       "of %d), saved %.3f ms (median of pairs, interquartile range %.3f ms): %.0f %% of "
	       "the transfer\n", m->p_host / 1e6, m->x_host / 1e6, m->exposed_host / 1e6, REPS,
	       100 * hidden(m->exposed_host, m->x_host), m->seq_host / 1e6, m->e2e_host / 1e6,
	       REPS, m->saved_host / 1e6, m->spread_host / 1e6,
	       100 * saved(m->saved_host, m->x_host));
	printf("  layer-wise overlap, device time: prefill %.1f us, transfer %.1f us alone; layer "
	       "by layer the last layer landed %.1f us after the prefill: %.0f %% hidden; %.1f us "
	       "transfer after the prefill, %.1f us layer by layer, saved %.0f %% of the "
	       "transfer\n", m->p_dev / 1e3, m->x_dev / 1e3, m->exposed_dev / 1e3,
	       100 * hidden(m->exposed_dev, m->x_dev), m->seq_dev / 1e3, m->e2e_dev / 1e3,
	       100 * saved(m->saved_dev, m->x_dev));
}

/* One completion through a running maia-serve, for the demo. */
static int one_request(void)
{
	char host[64], *body = NULL, *reply = NULL, *text, esc[1024], *colon;
	int port, status = 0, err;
	size_t tlen = 0;

	snprintf(host, sizeof(host), "%s", opt.url);
	colon = strrchr(host, ':');
	if (!colon || strlen(opt.prompt) > 300) {
		fprintf(stderr, "maia-serve-bench: --url HOST:PORT, a prompt of at most 300 bytes\n");
		return 2;
	}
	*colon = 0;
	port = atoi(colon + 1);
	llm_json_escape(esc, sizeof(esc), (const uint8_t *)opt.prompt, strlen(opt.prompt));
	if (asprintf(&body, "{\"prompt\": \"%s\", \"max_tokens\": %u, \"temperature\": %g, "
		     "\"top_k\": %u, \"top_p\": %g, \"seed\": %llu}", esc, opt.max_tokens,
		     opt.temperature, opt.top_k, opt.top_p, (unsigned long long)opt.seed) < 0)
		return 1;
	err = llm_http_post(host, port, "/v1/completions", body, 120000, &status, &reply, NULL);
	free(body);
	if (err || status != 200) {
		fprintf(stderr, "maia-serve-bench: POST /v1/completions: %s, HTTP %d\n%s\n",
			err ? strerror(-err) : "ok", status, reply ? reply : "");
		free(reply);
		return 1;
	}
	text = llm_json_get_string(reply, "text", &tlen);
	printf("prompt:    \"%s\"\n", opt.prompt);
	printf("generated: \"");
	for (size_t i = 0; text && i < tlen; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c >= 0x20 && c < 0x7f)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	printf("\" (%g tokens, byte-level model with random weights: not meant to read well)\n",
	       llm_json_get_number(reply, "completion_tokens"));
	printf("mode %s: TTFT %.2f ms, %.1f tokens/s, time per output token %.2f ms (host time); "
	       "device time: TTFT %.1f us, %.1f us per output token\n",
	       strstr(reply, "\"disagg\"") ? "disagg" : "single",
	       llm_json_get_number(reply, "ttft_ms"), llm_json_get_number(reply, "tokens_per_s"),
	       llm_json_get_number(reply, "time_per_output_token_ms"),
	       llm_json_get_number(reply, "device_ttft_us"),
	       llm_json_get_number(reply, "device_time_per_output_token_us"));
	if (llm_json_get_number(reply, "kv_bytes") > 0)
		printf("KV transfer: %.0f bytes, prefill device -> decode device in %.0f fabric remote "
		       "writes pushed layer by layer; the last landed %.3f ms after the prefill's "
		       "logits (host time), %.2f us (device time)\n",
		       llm_json_get_number(reply, "kv_bytes"),
		       llm_json_get_number(reply, "kv_remote_writes"),
		       llm_json_get_number(reply, "kv_exposed_ms"),
		       llm_json_get_number(reply, "kv_exposed_device_us"));
	free(text);
	free(reply);
	return 0;
}

/* One request of the HTTP load: its times and what came back. */
struct hreq {
	uint32_t i;
	uint64_t t_send, t_first, t_done, start;
	int status, err;
	uint32_t tokens;
	char tail[64];		/* the end of the last piece: a pattern may straddle two */
	size_t ntail;
	const char *host;
	int port;
};

static void on_event(void *arg, const char *data, size_t n)
{
	static const char pat[] = "\"finish_reason\": null";
	struct hreq *h = arg;
	char buf[sizeof(h->tail) + 4096];
	size_t len = h->ntail + n, keep;
	const char *p = buf;

	if (n > 4096) {		/* the client hands at most 4096 bytes */
		data += n - 4096;
		n = 4096;
		len = h->ntail + n;
	}
	memcpy(buf, h->tail, h->ntail);
	memcpy(buf + h->ntail, data, n);
	/* Each token's event carries one pat; the tail keeps a partial one. */
	while ((p = memmem(p, len - (size_t)(p - buf), pat, sizeof(pat) - 1))) {
		if (!h->tokens++)
			h->t_first = llm_now_ns();
		p += sizeof(pat) - 1;
	}
	keep = len < sizeof(pat) - 1 ? len : sizeof(pat) - 1;
	memcpy(h->tail, buf + len - keep, keep);
	h->ntail = keep;
}

static void *http_one(void *arg)
{
	struct hreq *h = arg;
	uint8_t prompt[256];
	char esc[256 * 6 + 1], *req = NULL, *body = NULL;
	struct llm_sampling sp;
	int n;

	make_prompt(prompt, opt.prompt_len, h->i);
	sampling_of(h->i, &sp);
	llm_json_escape(esc, sizeof(esc), prompt, opt.prompt_len);
	if (asprintf(&body, "{\"prompt\": \"%s\", \"max_tokens\": %u, \"temperature\": %g, "
		     "\"top_k\": %u, \"top_p\": %g, \"seed\": %llu, \"stream\": true}", esc,
		     opt.max_tokens, sp.temperature, sp.top_k, sp.top_p,
		     (unsigned long long)sp.seed) < 0) {
		h->err = -ENOMEM;
		return NULL;
	}
	n = asprintf(&req, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: "
		     "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     h->host, strlen(body), body);
	free(body);
	if (n < 0) {
		h->err = -ENOMEM;
		return NULL;
	}
	sleep_until(h->start);
	h->t_send = llm_now_ns();
	h->err = llm_http_stream(h->host, h->port, req, (size_t)n, 300000, on_event, h, &h->status);
	h->t_done = llm_now_ns();
	free(req);
	return NULL;
}

/* The load against a running maia-serve: streamed completions, timed by the client. */
static int http_load(const char *host, int port)
{
	struct hreq *h = calloc(opt.requests, sizeof(*h));
	pthread_t *th = calloc(opt.requests, sizeof(*th));
	double *ttft = calloc(opt.requests, 8), *tpot = calloc(opt.requests, 8);
	uint64_t t = llm_now_ns() + 100000000ull, s = 0x6172726976616cull;
	uint64_t first = UINT64_MAX, last = 0, tokens = 0;
	uint32_t i, n = 0, ok = 0, busy = 0, other = 0;

	if (!h || !th || !ttft || !tpot)
		return 1;
	for (i = 0; i < opt.requests; i++) {
		h[i] = (struct hreq){ .i = i, .start = t, .host = host, .port = port };
		if (pthread_create(&th[i], NULL, http_one, &h[i])) {
			fprintf(stderr, "maia-serve-bench: cannot start thread %u\n", i);
			opt.requests = i;
			break;
		}
		if (opt.rate > 0) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			t += (uint64_t)(-log(1.0 - (double)(s >> 11) / (double)(1ull << 53)) /
					opt.rate * 1e9);
		}
	}
	for (i = 0; i < opt.requests; i++) {
		pthread_join(th[i], NULL);
		if (h[i].status == 200 && !h[i].err && h[i].tokens == opt.max_tokens) {
			ok++;
			ttft[n] = (h[i].t_first - h[i].t_send) / 1e9;
			tpot[n] = h[i].tokens > 1 ?
				  (h[i].t_done - h[i].t_first) / 1e9 / (h[i].tokens - 1) : 0;
			n++;
			tokens += h[i].tokens;
			first = h[i].t_send < first ? h[i].t_send : first;
			last = h[i].t_done > last ? h[i].t_done : last;
		} else if (h[i].status == 503) {
			busy++;
		} else {
			other++;
			fprintf(stderr, "maia-serve-bench: request %u: HTTP %d, %s, %u of %u tokens\n",
				i, h[i].status, h[i].err ? strerror(-h[i].err) : "no error",
				h[i].tokens, opt.max_tokens);
		}
	}
	qsort(ttft, n, 8, cmp_double);
	qsort(tpot, n, 8, cmp_double);
	printf("http %s:%d: %u requests at %.1f/s, prompt %u bytes, %u tokens each, streamed\n",
	       host, port, opt.requests, opt.rate, opt.prompt_len, opt.max_tokens);
	printf("  %u completed, %u refused (503), %u failed\n", ok, busy, other);
	printf("  client time: TTFT p50 %.2f ms p99 %.2f ms, time per output token p50 %.2f ms "
	       "p99 %.2f ms, %.1f tokens/s\n", pct(ttft, n, 0.5) * 1e3, pct(ttft, n, 0.99) * 1e3,
	       pct(tpot, n, 0.5) * 1e3, pct(tpot, n, 0.99) * 1e3,
	       last > first ? tokens / ((last - first) / 1e9) : 0.0);
	free(h);
	free(th);
	free(ttft);
	free(tpot);
	return other ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: maia-serve-bench [--modes single,disagg] [--requests N] [--rate R]\n"
		"                        [--prompt-len P] [--max-tokens T] [--weights bf16|mxfp8]\n"
		"                        [--kv-blocks N] [--max-batch N] [--device N] [--json]\n"
		"       maia-serve-bench --url HOST:PORT [--requests N] [--rate R] [--prompt-len P]\n"
		"                        [--max-tokens T]\n"
		"       maia-serve-bench --url HOST:PORT --prompt TEXT [--max-tokens T]\n"
		"                        [--temperature T] [--top-k K] [--top-p P] [--seed S]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "modes", required_argument, NULL, 'm' }, { "requests", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' }, { "prompt-len", required_argument, NULL, 'P' },
		{ "max-tokens", required_argument, NULL, 'T' },
		{ "weights", required_argument, NULL, 'w' },
		{ "kv-blocks", required_argument, NULL, 'k' },
		{ "max-batch", required_argument, NULL, 'B' }, { "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' }, { "url", required_argument, NULL, 'u' },
		{ "prompt", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ "temperature", required_argument, NULL, 't' },
		{ "top-k", required_argument, NULL, 'K' }, { "top-p", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	struct mode_result res[2] = { 0 };
	uint32_t i, same = 0;
	int o, err = 0;

	opt.have_single = opt.have_disagg = true;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			opt.have_single = strstr(optarg, "single") != NULL;
			opt.have_disagg = strstr(optarg, "disagg") != NULL;
			break;
		case 'n': opt.requests = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': opt.rate = atof(optarg); break;
		case 'P': opt.prompt_len = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'T': opt.max_tokens = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w':
			if (!strcmp(optarg, "bf16"))
				opt.wdtype = MAIA_DTYPE_BF16;
			else if (!strcmp(optarg, "mxfp8"))
				opt.wdtype = MAIA_DTYPE_MXFP8_E4M3;
			else
				goto bad;
			break;
		case 'k': opt.kv_blocks = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'B': opt.max_batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': opt.device = atoi(optarg); break;
		case 'j': opt.json = true; break;
		case 'u': opt.url = optarg; break;
		case 'p': opt.prompt = optarg; break;
		case 't': opt.temperature = atof(optarg); break;
		case 'K': opt.top_k = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'o': opt.top_p = atof(optarg); break;
		case 's': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if (opt.url && !opt.prompt) {
		char host[64], *colon;

		snprintf(host, sizeof(host), "%s", opt.url);
		colon = strrchr(host, ':');
		if (!colon || !opt.requests || opt.requests > 1024 || !opt.prompt_len ||
		    opt.prompt_len > 256 || !opt.max_tokens)
			goto bad;
		*colon = 0;
		return http_load(host, atoi(colon + 1));
	}
	if (opt.url || opt.prompt) {
		if (!opt.url || !opt.prompt || !opt.max_tokens)
			goto bad;
		return one_request();
	}
	if (!opt.requests || opt.requests > 4096 || !opt.prompt_len || !opt.max_tokens ||
	    opt.prompt_len + opt.max_tokens > 256 || opt.rate < 0 ||
	    (!opt.have_single && !opt.have_disagg)) {
		fprintf(stderr, "maia-serve-bench: 1..4096 requests, prompt + max_tokens <= 256, "
			"rate >= 0, modes single and/or disagg\n");
		return 2;
	}
	for (i = 0; i < 2; i++) {
		enum llm_mode mode = i ? LLM_MODE_DISAGG : LLM_MODE_SINGLE;

		if (!(i ? opt.have_disagg : opt.have_single))
			continue;
		res[i].tokens = calloc(opt.requests, sizeof(uint8_t *));
		if (!res[i].tokens)
			return 1;
		err = run_mode(mode, &res[i]);
		if (err)
			break;
		report(mode, &res[i]);
		fflush(stdout);
	}
	if (!err && res[0].ran && res[1].ran) {
		for (i = 0; i < opt.requests; i++)
			same += res[0].tokens[i] && res[1].tokens[i] &&
				!memcmp(res[0].tokens[i], res[1].tokens[i], opt.max_tokens);
		if (opt.json)
			printf("{\"name\": \"serving_tokens_identical_across_modes\", \"value\": %u, "
			       "\"unit\": \"requests\", \"higher_is_better\": true, \"of\": %u}\n", same,
			       opt.requests);
		else
			printf("tokens identical across modes: %u of %u requests\n", same, opt.requests);
		if (same != opt.requests)
			err = -EIO;
	}
	for (i = 0; i < 2; i++) {
		for (uint32_t k = 0; res[i].tokens && k < opt.requests; k++)
			free(res[i].tokens[k]);
		free(res[i].tokens);
	}
	return err ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
