// SPDX-License-Identifier: MIT
/*
 * maia-serve: an HTTP/JSON server for the small LM of userspace/llm/ on Maia
 * devices (Documentation/serving.rst), with libmicrohttpd.
 *
 *   maia-serve [--mode single|disagg] [--device N] [--bind ADDR] [--port N]
 *              [--weights bf16|mxfp8|mxfp6|mxfp4|mxint8] [--kv-blocks N]
 *              [--max-batch N] [--max-queue N] [--max-seq N] [--layers N]
 *              [--d-model N] [--seed N] [--ready-file PATH]
 *
 *   POST /v1/completions   OpenAI-style completion; "stream": true answers
 *                          with server-sent events, one per token
 *   GET  /health           {"status": "ok", ...}
 *   GET  /metrics          Prometheus text
 *
 * Listens on 127.0.0.1:8000 unless told otherwise. Bad requests get a 4xx
 * with a JSON error naming the problem: 400 for bad JSON, unknown or
 * out-of-range parameters, an empty prompt or one longer than the context;
 * 404/405 for other paths and methods; 413 for a body over 1 MiB; 503 with
 * Retry-After when the admission queue is full. SIGINT/SIGTERM stop it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "llm.h"

#define MAX_BODY	(1024 * 1024)
#define MODEL_NAME	"maia-tiny-lm"

static struct llm_engine engine;
static atomic_ulong http_4xx, http_5xx, next_id = 1;

struct conn {
	char *body;
	size_t len;
	bool too_big;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	if (code == 503)
		MHD_add_response_header(r, "Retry-After", "1");
	if (code >= 400 && code < 500)
		http_4xx++;
	else if (code >= 500)
		http_5xx++;
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s ? s : strdup("");
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned int code, const char *msg)
{
	char esc[512];

	llm_json_escape(esc, sizeof(esc), (const uint8_t *)msg, strlen(msg));
	return reply(c, code, "application/json",
		     fmt("{\"error\": {\"message\": \"%s\", \"type\": \"%s\", \"code\": %u}}\n",
			 esc, code == 503 ? "overloaded" : "invalid_request_error", code));
}

/* The "maia" member of a reply: where the time went. */
static char *maia_stats(const struct llm_request *r)
{
	double ttft = (r->t_first - r->t_submit) / 1e9;
	double dec = r->t_done > r->t_first ? (r->t_done - r->t_first) / 1e9 : 0;
	double tps = dec > 0 && r->n_out > 1 ? (r->n_out - 1) / dec : 0;
	double tpot = r->n_out > 1 ? dec / (r->n_out - 1) : 0;

	return fmt("{\"mode\": \"%s\", \"ttft_ms\": %.3f, \"time_per_output_token_ms\": %.3f, "
		   "\"tokens_per_s\": %.2f, \"device_ttft_us\": %.3f, "
		   "\"device_time_per_output_token_us\": %.3f, \"kv_bytes\": %llu, "
		   "\"kv_remote_writes\": %u, \"kv_exposed_ms\": %.3f, "
		   "\"kv_exposed_device_us\": %.3f, \"prefill_batch\": %u, \"fallbacks\": %u, "
		   "\"fallback_from\": %d, \"fallback_to\": %d, \"replayed_tokens\": %u, "
		   "\"fallback_from_remote\": %s, \"kv_copied_tokens\": %u, \"fallback_ms\": %.3f, "
		   "\"fallback_device_us\": %.3f}",
		   llm_mode_name(engine.mode), ttft * 1e3, tpot * 1e3, tps,
		   r->dev_ttft_ns / 1e3, r->decode_steps ? r->dev_decode_ns / 1e3 / r->decode_steps : 0.0,
		   (unsigned long long)r->xfer.bytes, r->xfer.writes, r->xfer.exposed_host_ns / 1e6,
		   r->xfer.exposed_dev_ns / 1e3, r->prefill_batch, r->fallbacks,
		   r->fallbacks ? r->fallback_from : -1, r->fallbacks ? r->fallback_to : -1,
		   r->replayed_tokens, r->fallback_from_remote ? "true" : "false",
		   r->kv_copied_tokens, r->fallback_host_ns / 1e6, r->fallback_dev_ns / 1e3);
}

static char *text_of(const struct llm_request *r, uint32_t from, uint32_t to)
{
	size_t cap = (size_t)(to - from) * 6 + 1;
	char *s = malloc(cap);

	if (s)
		llm_json_escape(s, cap, r->out + from, to - from);
	return s;
}

static enum MHD_Result complete_plain(struct MHD_Connection *c, struct llm_request *r,
				      unsigned long id)
{
	enum llm_req_state st;
	char *text, *stats, *body;

	llm_engine_wait(&engine, r, r->max_tokens, &st);
	if (st == LLM_REQ_FAILED) {
		llm_engine_release(&engine, r);
		return error(c, 500, "the device failed the request");
	}
	text = text_of(r, 0, r->n_out);
	stats = maia_stats(r);
	body = fmt("{\"id\": \"cmpl-%lu\", \"object\": \"text_completion\", \"created\": %ld, "
		   "\"model\": \"%s\", \"choices\": [{\"index\": 0, \"text\": \"%s\", "
		   "\"finish_reason\": \"length\", \"logprobs\": null}], \"usage\": "
		   "{\"prompt_tokens\": %u, \"completion_tokens\": %u, \"total_tokens\": %u}, "
		   "\"maia\": %s}\n", id, (long)time(NULL), MODEL_NAME, text ? text : "",
		   r->prompt_len, r->n_out, r->prompt_len + r->n_out, stats);
	free(text);
	free(stats);
	llm_engine_release(&engine, r);
	return reply(c, 200, "application/json", body);
}

/* A streamed completion: one server-sent event per token, then [DONE]. */
struct stream {
	struct llm_request *r;
	unsigned long id;
	uint32_t sent;
	bool finished;
	char *pending;
	size_t plen, poff;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	size_t n;

	(void)pos;
	if (s->poff == s->plen) {
		enum llm_req_state st;
		uint32_t got;
		char *text, *stats;

		free(s->pending);
		s->pending = NULL;
		s->plen = s->poff = 0;
		if (s->finished)
			return MHD_CONTENT_READER_END_OF_STREAM;
		got = llm_engine_wait(&engine, s->r, s->sent, &st);
		if (st == LLM_REQ_FAILED) {
			s->pending = fmt("data: {\"error\": {\"message\": \"the device failed the "
					 "request\", \"code\": 500}}\n\ndata: [DONE]\n\n");
			s->finished = true;
		} else if (got > s->sent) {
			/* One event per token, also when several came since the last look. */
			char *all = strdup(""), *ev, *joined;

			for (; s->sent < got && all; s->sent++) {
				text = text_of(s->r, s->sent, s->sent + 1);
				ev = fmt("data: {\"id\": \"cmpl-%lu\", \"object\": "
					 "\"text_completion\", \"model\": \"%s\", \"choices\": "
					 "[{\"index\": 0, \"text\": \"%s\", \"finish_reason\": "
					 "null}]}\n\n", s->id, MODEL_NAME, text ? text : "");
				joined = fmt("%s%s", all, ev);
				free(text);
				free(ev);
				free(all);
				all = joined;
			}
			s->pending = all ? all : strdup("");
		} else {
			stats = maia_stats(s->r);
			s->pending = fmt("data: {\"id\": \"cmpl-%lu\", \"object\": \"text_completion\", "
					 "\"model\": \"%s\", \"choices\": [{\"index\": 0, \"text\": \"\", "
					 "\"finish_reason\": \"length\"}], \"usage\": {\"prompt_tokens\": "
					 "%u, \"completion_tokens\": %u, \"total_tokens\": %u}, "
					 "\"maia\": %s}\n\ndata: [DONE]\n\n", s->id, MODEL_NAME,
					 s->r->prompt_len, s->r->n_out, s->r->prompt_len + s->r->n_out,
					 stats);
			free(stats);
			s->finished = true;
		}
		s->plen = strlen(s->pending);
	}
	n = s->plen - s->poff < max ? s->plen - s->poff : max;
	memcpy(buf, s->pending + s->poff, n);
	s->poff += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;

	llm_engine_release(&engine, s->r);
	free(s->pending);
	free(s);
}

static enum MHD_Result completions(struct MHD_Connection *c, const struct conn *cc)
{
	struct llm_completion_req req;
	struct llm_request *r;
	struct MHD_Response *resp;
	struct stream *s;
	enum MHD_Result ret;
	char err[256], msg[320];
	unsigned long id;
	int rc;

	if (cc->too_big)
		return error(c, 413, "the body is over 1 MiB");
	if (llm_parse_completion(cc->body ? cc->body : "", cc->len, &req, err, sizeof(err)))
		return error(c, 400, err);
	if ((uint64_t)req.prompt_len + req.max_tokens > engine.cfg.max_seq) {
		snprintf(msg, sizeof(msg), "the prompt (%u tokens) plus max_tokens (%u) exceed the "
			 "context of %u tokens", req.prompt_len, req.max_tokens, engine.cfg.max_seq);
		free(req.prompt);
		return error(c, 400, msg);
	}
	r = llm_request_new(req.prompt, req.prompt_len, req.max_tokens, &req.sampling);
	free(req.prompt);
	if (!r)
		return error(c, 503, "out of memory");
	rc = llm_engine_submit(&engine, r);
	if (rc) {
		llm_engine_release(&engine, r);
		if (rc == -EBUSY)
			return error(c, 503, "the server is full: the admission queue is at its limit");
		if (rc == -E2BIG)
			return error(c, 400, "the request needs more KV-cache blocks than the pool has");
		return error(c, 500, "cannot queue the request");
	}
	id = next_id++;
	if (!req.stream)
		return complete_plain(c, r, id);
	s = calloc(1, sizeof(*s));
	if (!s) {
		llm_engine_release(&engine, r);
		return error(c, 503, "out of memory");
	}
	s->r = r;
	s->id = id;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s,
						 stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static char *metrics(void)
{
	struct llm_engine_stats s;

	llm_engine_get_stats(&engine, &s);
	return fmt("# HELP maia_serve_requests_total Completion requests received.\n"
		   "# TYPE maia_serve_requests_total counter\nmaia_serve_requests_total %llu\n"
		   "# HELP maia_serve_requests_completed_total Requests that generated all their tokens.\n"
		   "# TYPE maia_serve_requests_completed_total counter\n"
		   "maia_serve_requests_completed_total %llu\n"
		   "# HELP maia_serve_requests_refused_total Requests refused with 503 (queue full).\n"
		   "# TYPE maia_serve_requests_refused_total counter\n"
		   "maia_serve_requests_refused_total %llu\n"
		   "# HELP maia_serve_requests_failed_total Requests a device job failed.\n"
		   "# TYPE maia_serve_requests_failed_total counter\n"
		   "maia_serve_requests_failed_total %llu\n"
		   "# HELP maia_serve_requests_cancelled_total Requests whose client went away.\n"
		   "# TYPE maia_serve_requests_cancelled_total counter\n"
		   "maia_serve_requests_cancelled_total %llu\n"
		   "# HELP maia_serve_http_errors_total Replies with an error status, by class.\n"
		   "# TYPE maia_serve_http_errors_total counter\n"
		   "maia_serve_http_errors_total{class=\"4xx\"} %lu\n"
		   "maia_serve_http_errors_total{class=\"5xx\"} %lu\n"
		   "# HELP maia_serve_prompt_tokens_total Prompt tokens admitted.\n"
		   "# TYPE maia_serve_prompt_tokens_total counter\nmaia_serve_prompt_tokens_total %llu\n"
		   "# HELP maia_serve_generated_tokens_total Tokens generated.\n"
		   "# TYPE maia_serve_generated_tokens_total counter\n"
		   "maia_serve_generated_tokens_total %llu\n"
		   "# HELP maia_serve_decode_steps_total Decode steps (device jobs) run.\n"
		   "# TYPE maia_serve_decode_steps_total counter\nmaia_serve_decode_steps_total %llu\n"
		   "# HELP maia_serve_decode_rows_total Request rows over all decode steps.\n"
		   "# TYPE maia_serve_decode_rows_total counter\nmaia_serve_decode_rows_total %llu\n"
		   "# HELP maia_serve_queue_depth Requests waiting for admission.\n"
		   "# TYPE maia_serve_queue_depth gauge\nmaia_serve_queue_depth %u\n"
		   "# HELP maia_serve_running Requests being decoded.\n"
		   "# TYPE maia_serve_running gauge\nmaia_serve_running %u\n"
		   "# HELP maia_serve_kv_blocks_used KV-cache blocks held by requests.\n"
		   "# TYPE maia_serve_kv_blocks_used gauge\nmaia_serve_kv_blocks_used %u\n"
		   "# HELP maia_serve_kv_blocks_total KV-cache blocks in the pool.\n"
		   "# TYPE maia_serve_kv_blocks_total gauge\nmaia_serve_kv_blocks_total %u\n"
		   "# HELP maia_serve_kv_transfer_bytes_total K/V bytes pushed from the prefill to "
		   "the decode device.\n# TYPE maia_serve_kv_transfer_bytes_total counter\n"
		   "maia_serve_kv_transfer_bytes_total %llu\n"
		   "# HELP maia_serve_decode_failures_total Decode jobs that failed on the decode "
		   "device.\n# TYPE maia_serve_decode_failures_total counter\n"
		   "maia_serve_decode_failures_total %llu\n"
		   "# HELP maia_serve_fallbacks_total Moves of the running requests to the spare "
		   "decode device.\n# TYPE maia_serve_fallbacks_total counter\n"
		   "maia_serve_fallbacks_total %llu\n"
		   "# HELP maia_serve_replayed_tokens_total Prompt and generated tokens recomputed on "
		   "the spare.\n# TYPE maia_serve_replayed_tokens_total counter\n"
		   "maia_serve_replayed_tokens_total %llu\n"
		   "# HELP maia_serve_kv_copied_tokens_total Prompt tokens whose K/V the spare got "
		   "from the prefill device's checkpoint.\n"
		   "# TYPE maia_serve_kv_copied_tokens_total counter\n"
		   "maia_serve_kv_copied_tokens_total %llu\n"
		   "# HELP maia_serve_decode_device The decode device's index (in its own guest).\n"
		   "# TYPE maia_serve_decode_device gauge\nmaia_serve_decode_device %d\n"
		   "# HELP maia_serve_decode_remote 1 while the decode device is in another QEMU "
		   "process.\n# TYPE maia_serve_decode_remote gauge\nmaia_serve_decode_remote %d\n"
		   "# HELP maia_serve_ttft_seconds Time to first token (host time).\n"
		   "# TYPE maia_serve_ttft_seconds summary\n"
		   "maia_serve_ttft_seconds_sum %.6f\n"
		   "maia_serve_ttft_seconds_count %llu\n",
		   (unsigned long long)s.requests, (unsigned long long)s.completed,
		   (unsigned long long)s.refused, (unsigned long long)s.failed,
		   (unsigned long long)s.cancelled,
		   (unsigned long)http_4xx, (unsigned long)http_5xx,
		   (unsigned long long)s.prompt_tokens, (unsigned long long)s.generated_tokens,
		   (unsigned long long)s.steps, (unsigned long long)s.step_rows, s.queue_depth,
		   s.running, s.kv_used, s.kv_total, (unsigned long long)s.kv_bytes_moved,
		   (unsigned long long)s.dec_failures, (unsigned long long)s.fallbacks,
		   (unsigned long long)s.replayed_tokens, (unsigned long long)s.kv_copied_tokens,
		   s.dec_index, s.dec_remote ? 1 : 0,
		   s.ttft_sum_ns / 1e9, (unsigned long long)(s.completed + s.failed));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct conn *cc = *con_cls;
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");

	(void)cls;
	(void)version;
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return MHD_NO;
		*con_cls = cc;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!cc->too_big && cc->len + *upload_size <= MAX_BODY) {
			char *nb = realloc(cc->body, cc->len + *upload_size + 1);

			if (!nb)
				return MHD_NO;
			cc->body = nb;
			memcpy(cc->body + cc->len, upload, *upload_size);
			cc->len += *upload_size;
			cc->body[cc->len] = 0;
		} else {
			cc->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/v1/completions"))
		return post ? completions(c, cc) : error(c, 405, "use POST for /v1/completions");
	if (!strcmp(url, "/health")) {
		struct llm_engine_stats s;

		if (!get)
			return error(c, 405, "use GET for /health");
		llm_engine_get_stats(&engine, &s);
		return reply(c, 200, "application/json",
			     fmt("{\"status\": \"ok\", \"model\": \"%s\", \"mode\": \"%s\", "
				 "\"running\": %u, \"queue_depth\": %u, \"kv_blocks_free\": %u}\n",
				 MODEL_NAME, llm_mode_name(engine.mode), s.running, s.queue_depth,
				 s.kv_total - s.kv_used));
	}
	if (!strcmp(url, "/metrics"))
		return get ? reply(c, 200, "text/plain; version=0.0.4", metrics()) :
			     error(c, 405, "use GET for /metrics");
	return error(c, 404, "no such endpoint (POST /v1/completions, GET /health, GET /metrics)");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
		 enum MHD_RequestTerminationCode toe)
{
	struct conn *cc = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (cc) {
		free(cc->body);
		free(cc);
	}
	*con_cls = NULL;
}

static int weights_type(const char *s, unsigned int *t)
{
	static const struct { const char *name; unsigned int type; } map[] = {
		{ "bf16", MAIA_DTYPE_BF16 }, { "mxfp8", MAIA_DTYPE_MXFP8_E4M3 },
		{ "mxfp8_e5m2", MAIA_DTYPE_MXFP8_E5M2 }, { "mxfp6", MAIA_DTYPE_MXFP6_E2M3 },
		{ "mxfp4", MAIA_DTYPE_MXFP4_E2M1 }, { "mxint8", MAIA_DTYPE_MXINT8 },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(s, map[i].name)) {
			*t = map[i].type;
			return 0;
		}
	return -EINVAL;
}

/*
 * --mode decode-worker: this guest's device decodes for an engine in
 * another QEMU process, at the other end of virtio-serial port `port`.
 */
static int run_worker(const struct llm_config *cfg, int dev, const char *port,
		      uint64_t pause_step, int timeout_s)
{
	struct llm_weights w;
	struct maia_device *d = NULL;
	struct llm_dev ld;
	int err;

	err = llm_weights_init(&w, cfg);
	if (err) {
		fprintf(stderr, "maia-serve: decode-worker: %s\n", maia_strerror(err));
		return 1;
	}
	err = maia_device_open(dev, &d);
	err = err ?: llm_dev_init(&ld, d, &w, true);
	if (err) {
		fprintf(stderr, "maia-serve: decode-worker: cannot load the model on device %d: "
			"%s (%s)\n", dev, maia_strerror(err), maia_last_error());
		if (d)
			maia_device_close(d);
		llm_weights_fini(&w);
		return 1;
	}
	fprintf(stderr, "maia-serve: decode-worker on device %d, engine on port %s\n", dev, port);
	err = llm_remote_serve(&ld, dev, port, pause_step, timeout_s * 1000);
	if (err)
		fprintf(stderr, "maia-serve: decode-worker: %s\n", maia_strerror(err));
	llm_dev_fini(&ld);
	maia_device_close(d);
	llm_weights_fini(&w);
	return err ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: maia-serve [--mode single|disagg|tp] [--tp N] [--device N] [--bind ADDR]\n"
		"                  [--port N]\n"
		"                  [--weights bf16|mxfp8|mxfp8_e5m2|mxfp6|mxfp4|mxint8]\n"
		"                  [--kv-blocks N] [--max-batch N] [--max-queue N] [--max-seq N]\n"
		"                  [--layers N] [--d-model N] [--seed N] [--ready-file PATH]\n"
		"                  [--spare N [--kv-checkpoint]] [--inject-decode-hang STEP]\n"
		"                  [--remote-decode PORT [--remote-timeout SEC]\n"
		"                  [--inject-xfer-hold PREFILL]]\n"
		"       maia-serve --mode decode-worker --remote-decode PORT [--device N]\n"
		"                  [--remote-timeout SEC] [--inject-pause STEP] [model options]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' }, { "device", required_argument, NULL, 'd' },
		{ "bind", required_argument, NULL, 'b' }, { "port", required_argument, NULL, 'p' },
		{ "weights", required_argument, NULL, 'w' },
		{ "kv-blocks", required_argument, NULL, 'k' },
		{ "max-batch", required_argument, NULL, 'B' },
		{ "max-queue", required_argument, NULL, 'q' },
		{ "max-seq", required_argument, NULL, 'S' }, { "layers", required_argument, NULL, 'L' },
		{ "d-model", required_argument, NULL, 'D' }, { "seed", required_argument, NULL, 's' },
		{ "ready-file", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ "spare", required_argument, NULL, 'P' }, { "tp", required_argument, NULL, 'T' },
		{ "inject-decode-hang", required_argument, NULL, 'H' },
		{ "remote-decode", required_argument, NULL, 'R' },
		{ "remote-timeout", required_argument, NULL, 'O' },
		{ "inject-pause", required_argument, NULL, 'I' },
		{ "kv-checkpoint", no_argument, NULL, 'C' },
		{ "inject-xfer-hold", required_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 }
	};
	const char *bind_addr = "127.0.0.1", *ready = NULL, *why, *remote = NULL;
	bool worker = false, ckpt = false;
	int remote_timeout = 120;
	uint64_t pause_step = 0;
	enum llm_mode mode = LLM_MODE_SINGLE;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct llm_config cfg;
	struct MHD_Daemon *d;
	uint32_t max_queue = 64;
	int port = 8000, dev = 0, spare = -1, o, err, sig;
	uint64_t hang_step = 0, hold_at = 0;
	uint32_t tp = 2;
	sigset_t stop;

	llm_config_default(&cfg);
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			if (!strcmp(optarg, "single"))
				mode = LLM_MODE_SINGLE;
			else if (!strcmp(optarg, "disagg"))
				mode = LLM_MODE_DISAGG;
			else if (!strcmp(optarg, "tp"))
				mode = LLM_MODE_TP;
			else if (!strcmp(optarg, "decode-worker"))
				worker = true;
			else
				goto bad;
			break;
		case 'd': dev = atoi(optarg); break;
		case 'b': bind_addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'w':
			if (weights_type(optarg, &cfg.wdtype))
				goto bad;
			break;
		case 'k': cfg.kv_blocks = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'B': cfg.max_batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'q': max_queue = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': cfg.max_seq = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'L': cfg.layers = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'D': cfg.d_model = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'r': ready = optarg; break;
		case 'P': spare = atoi(optarg); break;
		case 'T': tp = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'H': hang_step = strtoull(optarg, NULL, 0); break;
		case 'R': remote = optarg; break;
		case 'O': remote_timeout = atoi(optarg); break;
		case 'I': pause_step = strtoull(optarg, NULL, 0); break;
		case 'C': ckpt = true; break;
		case 'X': hold_at = strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind != argc || port <= 0 || port > 65535 || inet_pton(AF_INET, bind_addr,
								     &sa.sin_addr) != 1)
		goto bad;
	if (llm_config_check(&cfg, &why)) {
		fprintf(stderr, "maia-serve: %s\n", why);
		return 2;
	}
	if ((worker && !remote) || (remote && !worker && mode != LLM_MODE_DISAGG) ||
	    remote_timeout <= 0 || remote_timeout > 3600) {
		fprintf(stderr, "maia-serve: --mode decode-worker needs --remote-decode PORT; "
			"--remote-decode is for --mode disagg or decode-worker; --remote-timeout "
			"1..3600\n");
		return 2;
	}
	if (worker)
		return run_worker(&cfg, dev, remote, pause_step, remote_timeout);
	sa.sin_port = htons((uint16_t)port);
	/* Signals to sigwait, blocked before any thread starts. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (remote)
		err = llm_engine_init_remote(&engine, &cfg, dev, remote, remote_timeout * 1000,
					     max_queue);
	else
		err = mode == LLM_MODE_TP ? llm_engine_init_tp(&engine, &cfg, dev, tp, max_queue) :
					    llm_engine_init(&engine, &cfg, mode, dev, max_queue);
	if (err) {
		fprintf(stderr, "maia-serve: cannot load the model on device %d%s: %s (%s)\n", dev,
			remote ? " and the decode worker" : mode == LLM_MODE_DISAGG ? " and the next" : mode == LLM_MODE_TP ?
			" and the next ones" : "", maia_strerror(err),
			maia_last_error());
		if (remote && err == -EINVAL)
			fprintf(stderr, "maia-serve: the decode worker runs another model or pool "
				"(give both the same model options)\n");
		else if (remote && err == -ETIMEDOUT)
			fprintf(stderr, "maia-serve: no hello from a decode worker on port %s within "
				"%d s\n", remote, remote_timeout);
		else if (remote && (err == -ENOLINK || err == -ENODEV))
			fprintf(stderr, "maia-serve: no fabric port of device %d reaches the decode "
				"worker's device\n", dev);
		else if (mode == LLM_MODE_DISAGG && (err == -ENOLINK || err == -ENODEV))
			fprintf(stderr, "maia-serve: --mode disagg needs device %d's fabric port 0 "
				"cabled to device %d (qemu/run-guest --fabric ring)\n", dev, dev + 1);
		if (mode == LLM_MODE_TP && err == -EINVAL)
			fprintf(stderr, "maia-serve: --tp must be 2 or 4 and divide kv_heads and the "
				"MLP width; the devices a ring in order (qemu/run-guest --fabric "
				"ring)\n");
		return 1;
	}
	engine.hang_at_step = hang_step;
	engine.hold_xfer_at = hold_at;
	if (spare >= 0) {
		err = llm_engine_add_spare(&engine, spare);
		if (err) {
			fprintf(stderr, "maia-serve: cannot load the model on spare device %d: %s (%s)\n",
				spare, maia_strerror(err), maia_last_error());
			llm_engine_fini(&engine);
			return 1;
		}
	}
	if (ckpt) {
		err = spare >= 0 && mode == LLM_MODE_DISAGG ?
		      llm_engine_set_kv_checkpoint(&engine) : -EINVAL;
		if (err) {
			fprintf(stderr, "maia-serve: --kv-checkpoint needs --mode disagg and --spare: "
				"%s\n", maia_strerror(err));
			llm_engine_fini(&engine);
			return 1;
		}
	}
	err = llm_engine_start(&engine);
	d = err ? NULL : MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					  MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
					  0, NULL, NULL, handle, NULL,
					  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					  MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
					  MHD_OPTION_CONNECTION_LIMIT, 64u,
					  MHD_OPTION_CONNECTION_TIMEOUT, 30u,
					  MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "maia-serve: cannot listen on %s:%d\n", bind_addr, port);
		llm_engine_fini(&engine);
		return 1;
	}
	fprintf(stderr, "maia-serve: serving http://%s:%d (mode %s, device %d%s, weights %s, "
		"%u layers, d_model %u, %u KV blocks of %u tokens)\n", bind_addr, port,
		llm_mode_name(mode), dev, remote ? " -> decode worker" :
		mode == LLM_MODE_DISAGG ? " -> next" : "",
		maia_dtype_name(cfg.wdtype), cfg.layers, cfg.d_model, cfg.kv_blocks,
		cfg.block_tokens);
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (f)
			fclose(f);
	}
	while (sigwait(&stop, &sig))
		;
	MHD_stop_daemon(d);
	llm_engine_fini(&engine);
	return 0;
bad:
	usage(stderr);
	return 2;
}
