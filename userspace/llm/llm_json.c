// SPDX-License-Identifier: MIT
/*
 * The completion request's JSON (RFC 8259) and the escaping of replies. The
 * body must be one object whose members are the parameters below; anything
 * else (bad syntax, a duplicate or unknown member, a wrong type, a value
 * out of range, trailing bytes) is an error with a message naming it, which
 * the server returns with HTTP 400. Tokens are bytes: the prompt's string
 * is decoded to UTF-8 bytes, and replies escape every byte that is not
 * printable ASCII as \u00XX (so a client maps each code point below 256
 * back to the byte).
 *
 *   prompt       string, 1 byte or more (required)
 *   max_tokens   integer >= 1 (default 16)
 *   temperature  number 0..100 (default 0: greedy)
 *   top_k        integer 0..256 (0: all)
 *   top_p        number in (0, 1] (default 1)
 *   seed         integer 0..2^53 (default 0)
 *   stream       boolean (server-sent events)
 *   model        string (any: there is one model)
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"

struct parser {
	const char *p, *end;
	char *err;
	size_t errlen;
};

static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->err[0])
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
				   *ps->p == '\r'))
		ps->p++;
}

static int hex4(struct parser *ps, uint32_t *v)
{
	int i;

	*v = 0;
	if (ps->end - ps->p < 4)
		return fail(ps, "bad JSON: short \\u escape");
	for (i = 0; i < 4; i++) {
		char c = *ps->p++;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(ps, "bad JSON: bad \\u escape");
	}
	return 0;
}

static size_t utf8(uint32_t cp, uint8_t *o)
{
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | cp >> 12);
		o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | cp >> 18);
	o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * A string at ps->p (on the quote). With out, its decoded bytes go to a
 * malloc'd *out (length *len); else it is only checked.
 */
static int string(struct parser *ps, uint8_t **out, uint32_t *len)
{
	size_t cap = (size_t)(ps->end - ps->p) + 4, n = 0;
	uint8_t *b = NULL;

	if (ps->p >= ps->end || *ps->p != '"')
		return fail(ps, "bad JSON: expected a string");
	ps->p++;
	if (out) {
		b = malloc(cap);
		if (!b)
			return -ENOMEM;
	}
	while (ps->p < ps->end && *ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p++;
		uint8_t tmp[4];
		size_t k = 1;
		uint32_t cp, lo;

		tmp[0] = c;
		if (c < 0x20) {
			free(b);
			return fail(ps, "bad JSON: control character in a string");
		}
		if (c == '\\') {
			if (ps->p >= ps->end)
				break;
			c = (unsigned char)*ps->p++;
			switch (c) {
			case '"': case '\\': case '/': tmp[0] = c; break;
			case 'b': tmp[0] = '\b'; break;
			case 'f': tmp[0] = '\f'; break;
			case 'n': tmp[0] = '\n'; break;
			case 'r': tmp[0] = '\r'; break;
			case 't': tmp[0] = '\t'; break;
			case 'u':
				if (hex4(ps, &cp)) {
					free(b);
					return -EINVAL;
				}
				if (cp >= 0xd800 && cp < 0xdc00) {
					if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
						free(b);
						return fail(ps, "bad JSON: lone surrogate");
					}
					ps->p += 2;
					if (hex4(ps, &lo) || lo < 0xdc00 || lo >= 0xe000) {
						free(b);
						return fail(ps, "bad JSON: bad surrogate pair");
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp < 0xe000) {
					free(b);
					return fail(ps, "bad JSON: lone surrogate");
				}
				k = utf8(cp, tmp);
				break;
			default:
				free(b);
				return fail(ps, "bad JSON: unknown escape \\%c", c);
			}
		}
		if (b) {
			memcpy(b + n, tmp, k);
			n += k;
		}
	}
	if (ps->p >= ps->end) {
		free(b);
		return fail(ps, "bad JSON: unterminated string");
	}
	ps->p++;
	if (out) {
		*out = b;
		*len = (uint32_t)n;
	}
	return 0;
}

/* A JSON number, syntax checked before strtod reads it. */
static int number(struct parser *ps, double *v, bool *integral)
{
	const char *s = ps->p;
	char buf[64];

	*integral = true;
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return fail(ps, "bad JSON: expected a value");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		*integral = false;
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, "bad JSON: bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		*integral = false;
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, "bad JSON: bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if ((size_t)(ps->p - s) >= sizeof(buf))
		return fail(ps, "number too long");
	memcpy(buf, s, (size_t)(ps->p - s));
	buf[ps->p - s] = 0;
	*v = strtod(buf, NULL);
	if (!isfinite(*v))
		return fail(ps, "number out of range");
	return 0;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, word, n)) {
		ps->p += n;
		return true;
	}
	return false;
}

enum kind { K_STRING, K_NUMBER, K_BOOL, K_OTHER };

static const char *const params[] = { "prompt", "max_tokens", "temperature", "top_k", "top_p",
				      "seed", "stream", "model" };

static int num_in(struct parser *ps, const char *name, double v, bool integral, bool want_int,
		  double lo, double hi)
{
	if (want_int && !integral)
		return fail(ps, "'%s' must be an integer", name);
	if (v < lo || v > hi)
		return fail(ps, "'%s' must be between %g and %g", name, lo, hi);
	return 0;
}

int llm_parse_completion(const char *body, size_t len, struct llm_completion_req *req,
			 char *err, size_t errlen)
{
	struct parser ps = { body, body + len, err, errlen };
	unsigned int seen = 0;
	bool have_prompt = false;
	int rc = 0;

	memset(req, 0, sizeof(*req));
	req->max_tokens = 16;
	req->sampling.top_p = 1.0f;
	err[0] = 0;
	skip_ws(&ps);
	if (ps.p >= ps.end || *ps.p != '{')
		return fail(&ps, "the body must be a JSON object");
	ps.p++;
	skip_ws(&ps);
	if (ps.p < ps.end && *ps.p == '}')
		ps.p++;
	else
		for (;;) {
			uint8_t *key = NULL;
			uint32_t klen = 0;
			unsigned int i;
			double v = 0;
			bool integral = false, bv = false;
			enum kind kind = K_OTHER;
			uint8_t *sv = NULL;
			uint32_t slen = 0;

			skip_ws(&ps);
			rc = string(&ps, &key, &klen);
			if (rc)
				goto out;
			for (i = 0; i < sizeof(params) / sizeof(params[0]); i++)
				if (strlen(params[i]) == klen && !memcmp(params[i], key, klen))
					break;
			if (i == sizeof(params) / sizeof(params[0])) {
				rc = fail(&ps, "unknown parameter '%.*s'", (int)(klen > 40 ? 40 : klen),
					  (const char *)key);
				free(key);
				goto out;
			}
			free(key);
			if (seen & (1u << i)) {
				rc = fail(&ps, "parameter '%s' given twice", params[i]);
				goto out;
			}
			seen |= 1u << i;
			skip_ws(&ps);
			if (ps.p >= ps.end || *ps.p != ':') {
				rc = fail(&ps, "bad JSON: expected ':'");
				goto out;
			}
			ps.p++;
			skip_ws(&ps);
			if (ps.p < ps.end && *ps.p == '"') {
				kind = K_STRING;
				rc = string(&ps, &sv, &slen);
			} else if (literal(&ps, "true")) {
				kind = K_BOOL;
				bv = true;
			} else if (literal(&ps, "false")) {
				kind = K_BOOL;
			} else if (literal(&ps, "null")) {
				kind = K_OTHER;
			} else if (ps.p < ps.end && (*ps.p == '{' || *ps.p == '[')) {
				rc = fail(&ps, "'%s' must not be an object or array", params[i]);
			} else {
				kind = K_NUMBER;
				rc = number(&ps, &v, &integral);
			}
			if (rc)
				goto out;
			switch (i) {
			case 0:	/* prompt */
				if (kind != K_STRING)
					rc = fail(&ps, "'prompt' must be a string");
				else if (!slen)
					rc = fail(&ps, "'prompt' is empty");
				if (!rc) {
					req->prompt = sv;
					req->prompt_len = slen;
					sv = NULL;
					have_prompt = true;
				}
				break;
			case 1:
				rc = kind != K_NUMBER ? fail(&ps, "'max_tokens' must be an integer") :
				     num_in(&ps, "max_tokens", v, integral, true, 1, 1e9);
				req->max_tokens = (uint32_t)v;
				break;
			case 2:
				rc = kind != K_NUMBER ? fail(&ps, "'temperature' must be a number") :
				     num_in(&ps, "temperature", v, integral, false, 0, 100);
				req->sampling.temperature = (float)v;
				break;
			case 3:
				rc = kind != K_NUMBER ? fail(&ps, "'top_k' must be an integer") :
				     num_in(&ps, "top_k", v, integral, true, 0, LLM_VOCAB);
				req->sampling.top_k = (uint32_t)v;
				break;
			case 4:
				rc = kind != K_NUMBER ? fail(&ps, "'top_p' must be a number") :
				     num_in(&ps, "top_p", v, integral, false, 1e-9, 1);
				req->sampling.top_p = (float)v;
				break;
			case 5:
				rc = kind != K_NUMBER ? fail(&ps, "'seed' must be an integer") :
				     num_in(&ps, "seed", v, integral, true, 0, 9007199254740992.0);
				req->sampling.seed = (uint64_t)v;
				break;
			case 6:
				if (kind != K_BOOL)
					rc = fail(&ps, "'stream' must be true or false");
				req->stream = bv;
				break;
			default:	/* model: any string */
				if (kind != K_STRING)
					rc = fail(&ps, "'model' must be a string");
				break;
			}
			free(sv);
			if (rc)
				goto out;
			skip_ws(&ps);
			if (ps.p < ps.end && *ps.p == ',') {
				ps.p++;
				continue;
			}
			if (ps.p < ps.end && *ps.p == '}') {
				ps.p++;
				break;
			}
			rc = fail(&ps, "bad JSON: expected ',' or '}'");
			goto out;
		}
	skip_ws(&ps);
	if (ps.p != ps.end)
		rc = fail(&ps, "bad JSON: bytes after the object");
	else if (!have_prompt)
		rc = fail(&ps, "'prompt' is required");
out:
	if (rc) {
		free(req->prompt);
		req->prompt = NULL;
		if (!err[0])
			fail(&ps, "out of memory");
	}
	return rc;
}

size_t llm_json_escape(char *dst, size_t cap, const uint8_t *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	for (i = 0; i < n; i++) {
		uint8_t c = src[i];
		char e[7];
		size_t k;

		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			k = 2;
		} else if (c >= 0x20 && c < 0x7f) {
			e[0] = (char)c;
			k = 1;
		} else {
			memcpy(e, "\\u00", 4);
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			k = 6;
		}
		if (o + k < cap)
			memcpy(dst + o, e, k);
		o += k;
	}
	if (cap)
		dst[o < cap ? o : cap - 1] = 0;
	return o;
}
