// SPDX-License-Identifier: MIT
/*
 * The serving stack's host-only parts, on the host under ASan and UBSan
 * (tests/serve/run-in-guest.sh runs it before the guest boots), TAP:
 * the completion request parser against valid, invalid and mutated bodies,
 * reply escaping read back by the client's parser, the sampler, and the KV
 * block manager's bookkeeping.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	nfail += !ok;
}

static int parse(const char *body, struct llm_completion_req *r, char *err)
{
	return llm_parse_completion(body, strlen(body), r, err, 256);
}

static void test_parser(void)
{
	static const char *const bad[] = {
		"", " ", "null", "[]", "\"x\"", "{", "{}", "{\"prompt\"}", "{\"prompt\":}",
		"{\"prompt\": \"\"}", "{\"prompt\": \"a\",}", "{\"prompt\": \"a\" \"b\": 1}",
		"{\"prompt\": \"a\", \"max_tokens\": -1}", "{\"prompt\": \"a\", \"max_tokens\": 01}",
		"{\"prompt\": \"a\", \"max_tokens\": 1e400}", "{\"prompt\": \"a\", \"top_k\": 257}",
		"{\"prompt\": \"a\", \"top_p\": 1.5}", "{\"prompt\": \"a\", \"seed\": 1.5}",
		"{\"prompt\": \"a\", \"stream\": 1}", "{\"prompt\": \"a\", \"n\": 2}",
		"{\"prompt\": \"\\x\"}", "{\"prompt\": \"\\u12\"}", "{\"prompt\": \"\\udc00\"}",
		"{\"prompt\": \"a\"}}", "{\"prompt\": [\"a\"]}", "{\"prompt\": \"a\", \"model\": 3}",
		"{\"prompt\": \"a\", \"temperature\": true}", "{\"prompt\": \"a\", \"max_tokens\": .5}",
	};
	struct llm_completion_req r;
	char err[256];
	size_t i;
	int nbad = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &r, err) == -EINVAL && err[0] && !r.prompt)
			nbad++;
		else
			printf("# accepted or no message: %s\n", bad[i]);
	}
	tap(nbad == (int)i, "%d malformed bodies refused, each with a message", nbad);

	tap(!parse("{\"prompt\": \"hi \\\"there\\\" \\u00e9\\ud83d\\ude00\\n\", \"max_tokens\": 5, "
		   "\"temperature\": 0.5, \"top_k\": 3, \"top_p\": 0.25, \"seed\": 9, "
		   "\"stream\": true, \"model\": \"m\"}", &r, err) &&
	    r.prompt_len == 18 && !memcmp(r.prompt, "hi \"there\" \xc3\xa9\xf0\x9f\x98\x80\n", 18) &&
	    r.max_tokens == 5 && r.sampling.top_k == 3 && r.stream && r.sampling.seed == 9 &&
	    fabsf(r.sampling.top_p - 0.25f) < 1e-7f && fabsf(r.sampling.temperature - 0.5f) < 1e-7f,
	    "a full body: escapes and surrogate pairs decode to UTF-8 bytes, every member read");
	free(r.prompt);
	tap(!parse(" {\"prompt\":\"x\"} ", &r, err) && r.max_tokens == 16 && !r.stream &&
	    r.sampling.temperature == 0 && r.sampling.top_p == 1.0f,
	    "defaults: 16 tokens, greedy, no stream");
	free(r.prompt);
}

/* Mutations of a valid body: never a crash (ASan), always a result or a message. */
static void test_mutations(void)
{
	static const char base[] = "{\"prompt\": \"Hello \\u00e9\", \"max_tokens\": 8, "
				   "\"top_p\": 0.5, \"stream\": false}";
	uint64_t s = 99;
	char buf[sizeof(base) + 8], err[256];
	int i, ok = 0, refused = 0;

	for (i = 0; i < 20000; i++) {
		struct llm_completion_req r;
		size_t n = sizeof(base) - 1, k, edits;

		memcpy(buf, base, sizeof(base));
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		edits = 1 + (s >> 61);
		for (k = 0; k < edits; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			if ((s >> 20) % 4 == 0 && n > 1)
				n = 1 + (s >> 30) % (n - 1);	/* truncate */
			else
				buf[(s >> 30) % n] = (char)(s >> 56);	/* flip a byte */
		}
		if (!llm_parse_completion(buf, n, &r, err, sizeof(err))) {
			ok += r.prompt && r.prompt_len > 0;
			free(r.prompt);
		} else {
			refused += err[0] != 0;
		}
	}
	tap(ok + refused == 20000, "20000 mutated bodies: %d parsed, %d refused with a message",
	    ok, refused);
}

static void test_escape(void)
{
	uint8_t all[256];
	char esc[256 * 6 + 32], json[256 * 6 + 64], *back;
	size_t len = 0, i;

	for (i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	llm_json_escape(esc, sizeof(esc), all, 256);
	snprintf(json, sizeof(json), "{\"text\": \"%s\"}", esc);
	back = llm_json_get_string(json, "text", &len);
	tap(back && len == 256 && !memcmp(back, all, 256),
	    "every byte survives escaping and the client's unescaping");
	free(back);
	tap(llm_json_escape(esc, 3, all + 'a', 3) == 3 && !strcmp(esc, "ab"),
	    "escaping into a short buffer truncates and terminates");
}

static void test_sampler(void)
{
	float l[LLM_VOCAB];
	struct llm_sampling greedy = { .top_p = 1.0f }, s = { .temperature = 1.0f, .top_k = 2,
							      .top_p = 1.0f, .seed = 5 };
	uint64_t a = llm_rng_seed(5), b = llm_rng_seed(5), c;
	int i, seen[LLM_VOCAB] = { 0 }, same = 0, only2 = 1;

	for (i = 0; i < (int)LLM_VOCAB; i++)
		l[i] = (float)((i * 37) % 11);
	/* (i * 37) % 11 is 10 first at i = 8, then every 11th. */
	tap(llm_sample(l, LLM_VOCAB, &greedy, &a) == 8,
	    "greedy picks the largest logit, the lowest index on a tie");
	a = llm_rng_seed(5);
	for (i = 0; i < 2000; i++) {
		int x = llm_sample(l, LLM_VOCAB, &s, &a), y = llm_sample(l, LLM_VOCAB, &s, &b);

		same += x == y;
		seen[x]++;
	}
	for (i = 0; i < (int)LLM_VOCAB; i++)
		if (seen[i] && l[i] != 10)
			only2 = 0;
	tap(same == 2000, "the same seed gives the same tokens");
	tap(only2, "top_k 2 draws only among the two largest logits (a tie at 10 here)");
	s.top_k = 0;
	s.top_p = 1e-6f;
	c = llm_rng_seed(1);
	tap(llm_sample(l, LLM_VOCAB, &s, &c) == llm_sample(l, LLM_VOCAB, &greedy, &c),
	    "a tiny top_p keeps only the most likely token");
	tap(llm_rng_seed(1) != llm_rng_seed(2), "nearby seeds give different generators");
}

static void test_kv(void)
{
	struct llm_kv kv;
	uint32_t a[8], b[8];

	tap(!llm_kv_init(&kv, 8) && !llm_kv_alloc(&kv, 3, a) && a[0] == 0 && a[1] == 1 &&
	    a[2] == 2, "a fresh pool hands out consecutive blocks (one remote write per run)");
	tap(!llm_kv_alloc(&kv, 5, b) && llm_kv_alloc(&kv, 1, b + 5) == -ENOSPC &&
	    kv.refusals == 1, "the pool gives exactly its blocks, then -ENOSPC");
	llm_kv_free(&kv, a, 3);
	llm_kv_free(&kv, b, 5);
	tap(kv.nfree == 8 && !llm_kv_alloc(&kv, 8, a), "every block back, the whole pool again");
	llm_kv_fini(&kv);
	tap(llm_kv_blocks_for(1, 16) == 1 && llm_kv_blocks_for(16, 16) == 1 &&
	    llm_kv_blocks_for(17, 16) == 2, "blocks for 1, 16, 17 tokens: 1, 1, 2");
}

int main(void)
{
	printf("TAP version 13\n");
	test_parser();
	test_mutations();
	test_escape();
	test_sampler();
	test_kv();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
