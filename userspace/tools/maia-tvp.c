// SPDX-License-Identifier: MIT
/*
 * maia-tvp: assemble, disassemble and run TVP programs
 * (Documentation/tvp-asm.rst, man maia-tvp(1)).
 *
 *   maia-tvp as FILE [-o OUT]        source to instruction words
 *   maia-tvp dis FILE                instruction words to source
 *   maia-tvp run FILE --grid X[,Y,Z] [--arg ARG]... [--budget N] [--device N]
 *   maia-tvp bench [--quick] [--device N]   make bench's TVP figures (JSON lines)
 *
 * FILE "-" is standard input. run takes source or words (a file with a NUL
 * byte is words). An ARG is an integer (42, -1, 0x10), a float (f:1.5, as
 * its binary32 bits), or a buffer whose device VA is passed:
 *   in:TYPE:V1,V2,...    holding these values
 *   iota:TYPE:N          holding 0, 1, ..., N-1
 *   out:TYPE:N           N zeroed elements, printed after the run
 *   inout:TYPE:V1,...    as in, printed after the run
 * TYPE is f32 or i32.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "drm/maia_accel.h"
#include "libmaia.h"

#define PROG "maia-tvp"

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " as FILE [-o OUT]\n"
		   "       " PROG " dis FILE\n"
		   "       " PROG " run FILE --grid X[,Y,Z] [--arg ARG]... [--budget N] "
		   "[--device N]\n"
		   "       " PROG " bench [--quick] [--device N]\n"
		   "ARG: INT | f:FLOAT | in:TYPE:V1,V2,... | iota:TYPE:N | out:TYPE:N | "
		   "inout:TYPE:V1,...   (TYPE f32 or i32)\n");
}

/* The whole file (or stdin for "-"), NUL-terminated; *len without the NUL. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 4096, n = 0, r;
	char *buf = malloc(cap);

	if (!f || !buf) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		free(buf);
		return NULL;
	}
	while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 == cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
		}
	}
	if (buf && ferror(f)) {
		fprintf(stderr, PROG ": %s: read error\n", path);
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

/* Instruction words from FILE: assembled if it is text, as they are if it has a NUL. */
static int load_program(const char *path, struct maia_tvp_insn **insns, uint32_t *count)
{
	size_t len;
	char *buf = read_file(path, &len);
	int err;

	if (!buf)
		return -1;
	if (memchr(buf, '\0', len)) {
		if (len % sizeof(**insns) || !len || len / sizeof(**insns) > MAIA_TVP_MAX_INSNS) {
			fprintf(stderr, PROG ": %s: %zu bytes is not 1..%u instruction words of "
				"%zu bytes\n", path, len, MAIA_TVP_MAX_INSNS, sizeof(**insns));
			free(buf);
			return -1;
		}
		*insns = (struct maia_tvp_insn *)buf;
		*count = (uint32_t)(len / sizeof(**insns));
		return 0;
	}
	err = maia_tvp_assemble(buf, insns, count);
	free(buf);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", path, maia_last_error());
		return -1;
	}
	return 0;
}

static int cmd_as(const char *in, const char *out)
{
	struct maia_tvp_insn *insns;
	uint32_t count;
	FILE *f;
	int ok;

	if (load_program(in, &insns, &count))
		return 1;
	f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
		free(insns);
		return 1;
	}
	ok = fwrite(insns, sizeof(*insns), count, f) == count;
	ok &= (f == stdout ? fflush(f) : fclose(f)) == 0;
	if (!ok)
		fprintf(stderr, PROG ": %s: write error\n", out);
	free(insns);
	return ok ? 0 : 1;
}

static int cmd_dis(const char *in)
{
	struct maia_tvp_insn *insns;
	uint32_t count;
	char *text;
	int err;

	if (load_program(in, &insns, &count))
		return 1;
	err = maia_tvp_disassemble(insns, count, &text);
	free(insns);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", in, maia_last_error());
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}

/* ---- run ------------------------------------------------------------- */

enum arg_kind { ARG_VALUE, ARG_IN, ARG_OUT, ARG_INOUT };

struct arg {
	enum arg_kind kind;
	int is_float;			/* buffers: f32 elements, else i32 */
	uint64_t value;			/* ARG_VALUE */
	uint32_t *init;			/* buffers: n elements (NULL: zero) */
	uint32_t n;
	struct maia_bo *bo;
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	if (*s == '-')
		*v = (uint64_t)strtoll(s, &end, 0);
	else
		*v = strtoull(s, &end, 0);
	return !*s || *end || errno ? -1 : 0;
}

/* One element of TYPE from text. */
static int parse_elem(const char *s, size_t len, int is_float, uint32_t *out)
{
	char buf[64], *end;

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	if (is_float) {
		float f = strtof(buf, &end);

		memcpy(out, &f, sizeof(*out));
	} else {
		long long v = strtoll(buf, &end, 0);

		if (v < INT32_MIN || v > UINT32_MAX)
			return -1;
		*out = (uint32_t)v;
	}
	return *end || errno ? -1 : 0;
}

static int parse_arg(const char *s, struct arg *a)
{
	const char *colon = strchr(s, ':'), *type, *rest;
	uint64_t n;

	memset(a, 0, sizeof(*a));
	if (!colon)
		return parse_u64(s, &a->value);
	if (!strncmp(s, "f:", 2)) {
		uint32_t bits;

		if (parse_elem(s + 2, strlen(s + 2), 1, &bits))
			return -1;
		a->value = bits;
		return 0;
	}
	type = colon + 1;
	if (!strncmp(type, "f32:", 4))
		a->is_float = 1;
	else if (strncmp(type, "i32:", 4))
		return -1;
	rest = type + 4;
	if (!strncmp(s, "out:", 4) || !strncmp(s, "iota:", 5)) {
		if (parse_u64(rest, &n) || !n || n > (1u << 26))
			return -1;
		a->n = (uint32_t)n;
		a->kind = *s == 'o' ? ARG_OUT : ARG_IN;
		if (*s == 'i') {
			a->init = malloc(n * sizeof(*a->init));
			if (!a->init)
				return -1;
			for (uint32_t i = 0; i < a->n; i++) {
				float f = (float)i;

				if (a->is_float)
					memcpy(&a->init[i], &f, sizeof(f));
				else
					a->init[i] = i;
			}
		}
		return 0;
	}
	if (!strncmp(s, "in:", 3) || !strncmp(s, "inout:", 6)) {
		a->kind = s[2] == ':' ? ARG_IN : ARG_INOUT;
		for (const char *p = rest; ; ) {
			const char *c = strchr(p, ',');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			uint32_t *b = realloc(a->init, (a->n + 1) * sizeof(*b));

			if (!b)
				return -1;
			a->init = b;
			if (parse_elem(p, len, a->is_float, &a->init[a->n++]))
				return -1;
			if (!c)
				break;
			p = c + 1;
		}
		return 0;
	}
	return -1;
}

static int parse_grid(const char *s, uint32_t grid[3])
{
	char *end;

	grid[0] = grid[1] = grid[2] = 1;
	for (int i = 0; i < 3; i++) {
		unsigned long v;

		errno = 0;
		v = strtoul(s, &end, 10);
		if (end == s || errno || !v || v > MAIA_TVP_MAX_GRID)
			return -1;
		grid[i] = (uint32_t)v;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
	return -1;
}

static void print_buffer(unsigned int index, const struct arg *a, const uint32_t *data)
{
	printf("s%u (%s %s x %u):", index + 1, a->kind == ARG_OUT ? "out" : "inout",
	       a->is_float ? "f32" : "i32", a->n);
	for (uint32_t i = 0; i < a->n; i++) {
		float f;

		memcpy(&f, &data[i], sizeof(f));
		if (a->is_float)
			printf(" %.9g", f);
		else
			printf(" %d", (int32_t)data[i]);
	}
	printf("\n");
}

static int cmd_run(const char *path, const uint32_t grid[3], struct arg *args, uint32_t nargs,
		   uint32_t budget, int device)
{
	struct maia_tvp_insn *insns = NULL;
	uint64_t vals[MAIA_TVP_MAX_ARGS];
	struct maia_kernel *k = NULL;
	struct maia_cmdbuf *cb = NULL;
	struct maia_device *dev = NULL;
	struct maia_job_status st;
	struct maia_job_times t;
	uint64_t seqno;
	uint32_t count;
	int err, rc = 1;

	if (load_program(path, &insns, &count))
		return 1;
	err = maia_device_open(device, &dev);
	if (err) {
		fprintf(stderr, PROG ": cannot open Maia device %d: %s\n", device,
			maia_strerror(err));
		free(insns);
		return 1;
	}
	err = maia_kernel_create(dev, insns, count, &k);
	for (uint32_t i = 0; !err && i < nargs; i++) {
		void *cpu;

		vals[i] = args[i].value;
		if (args[i].kind == ARG_VALUE)
			continue;
		err = maia_bo_create(dev, (uint64_t)args[i].n * 4, MAIA_BO_HBM, &args[i].bo);
		err = err ?: maia_bo_map(args[i].bo, &cpu);
		if (err)
			break;
		if (args[i].init)
			memcpy(cpu, args[i].init, (size_t)args[i].n * 4);
		else
			memset(cpu, 0, (size_t)args[i].n * 4);
		vals[i] = maia_bo_va(args[i].bo);
	}
	err = err ?: maia_cmdbuf_create(dev, 4096, &cb);
	err = err ?: maia_cmd_kernel(cb, k, grid, vals, nargs, budget);
	err = err ?: maia_submit(dev, cb, NULL, &seqno);
	err = err ?: maia_wait_times(dev, seqno, 60 * 1000000000ll, &st, &t);
	if (err) {
		fprintf(stderr, PROG ": %s (%s)\n", maia_last_error(), maia_strerror(err));
		goto out;
	}
	if (st.status != DRM_MAIA_JOB_OK) {
		fprintf(stderr, PROG ": the kernel failed: job %s, device status %u (%s)\n",
			maia_job_status_name(st.status), st.device_status,
			maia_device_status_name(st.device_status));
		goto out;
	}
	printf("%u instructions, grid %u x %u x %u: ok", count, grid[0], grid[1], grid[2]);
	if (t.valid & MAIA_JOB_TIMES_DEVICE)
		printf(", device time %.3f us", t.device_ns / 1e3);
	printf("\n");
	for (uint32_t i = 0; i < nargs; i++) {
		void *cpu;

		if (args[i].kind == ARG_OUT || args[i].kind == ARG_INOUT) {
			if (maia_bo_map(args[i].bo, &cpu))
				goto out;
			print_buffer(i, &args[i], cpu);
		}
	}
	rc = 0;
out:
	maia_cmdbuf_destroy(cb);
	for (uint32_t i = 0; i < nargs; i++)
		maia_bo_destroy(args[i].bo);
	maia_kernel_destroy(k);
	maia_device_close(dev);
	free(insns);
	return rc;
}


/* ---- bench ------------------------------------------------------------ */

/*
 * make bench's figures (Documentation/benchmarks.rst), each beside what the
 * device's built-in commands do with the same data in the same run: wall
 * time of a job submitted and waited for, median of the repeats.
 */

/* out[i] = a[i] + b[i]: s1 = a, s2 = b, s3 = out, one instance per 1024 elements. */
static const char bench_vector_add[] =
	"	pid s5, 0\n"
	"	muli s6, s5, 4096\n"
	"	add s1, s1, s6\n"
	"	add s2, s2, s6\n"
	"	add s3, s3, s6\n"
	"	vld v1, s1, unit, f32\n"
	"	vld v2, s2, unit, f32\n"
	"	vfadd v3, v1, v2\n"
	"	vst v3, s3, unit, f32\n"
	"	halt\n";

/* Softmax of 1024-element rows, one instance per row: s1 = x, s2 = out. */
static const char bench_softmax[] =
	"	pid s5, 0\n"
	"	muli s6, s5, 4096\n"
	"	add s1, s1, s6\n"
	"	add s2, s2, s6\n"
	"	vld v1, s1, unit, f32\n"
	"	vredmax v2, v1, 1\n"
	"	vbcast v2, v2\n"
	"	vfsub v3, v1, v2\n"
	"	vexp v3, v3\n"
	"	vredsum v4, v3, 1\n"
	"	vbcast v4, v4\n"
	"	vfdiv v5, v3, v4\n"
	"	vst v5, s2, unit, f32\n"
	"	halt\n";

static int bench_kernel(struct maia_device *dev, const char *src, struct maia_kernel **k)
{
	struct maia_tvp_insn *insns;
	uint32_t count;
	int err = maia_tvp_assemble(src, &insns, &count);

	if (!err) {
		err = maia_kernel_create(dev, insns, count, k);
		free(insns);
	}
	return err;
}

/* Median wall time of repeat runs of cb (after one warm-up), ns. */
static int time_job(struct maia_device *dev, struct maia_cmdbuf *cb, unsigned int repeat,
		    double *ns)
{
	struct bench_samples t = { 0 };
	int err = maia_run(dev, cb, 120 * 1000000000ll, NULL);

	for (unsigned int i = 0; i < repeat && !err; i++) {
		uint64_t t0 = bench_now_ns();

		err = maia_run(dev, cb, 120 * 1000000000ll, NULL);
		bench_add(&t, (double)(bench_now_ns() - t0));
	}
	*ns = bench_median(&t);
	bench_free(&t);
	return err;
}

static int cmd_bench(int quick, int device)
{
	const uint32_t rows = quick ? 256 : 2048, n = rows * 1024, repeat = quick ? 3 : 7;
	const uint64_t bytes = (uint64_t)n * 4;
	struct maia_kernel *add = NULL, *smax = NULL;
	struct maia_bo *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	struct maia_tensor_desc x, y;
	struct maia_cmdbuf *cb = NULL;
	struct maia_device *dev = NULL;
	double t_kernel, t_dma, t_cmd, diff = 0;
	float *pa, *pc, *pd;
	int err;

	err = maia_device_open(device, &dev);
	err = err ?: maia_bo_create(dev, bytes, MAIA_BO_HBM, &a);
	err = err ?: maia_bo_create(dev, bytes, MAIA_BO_HBM, &b);
	err = err ?: maia_bo_create(dev, bytes, MAIA_BO_HBM, &c);
	err = err ?: maia_bo_create(dev, bytes, MAIA_BO_HBM, &d);
	err = err ?: maia_bo_map(a, (void **)&pa);
	err = err ?: maia_bo_map(c, (void **)&pc);
	err = err ?: maia_bo_map(d, (void **)&pd);
	err = err ?: maia_cmdbuf_create(dev, 4096, &cb);
	err = err ?: bench_kernel(dev, bench_vector_add, &add);
	err = err ?: bench_kernel(dev, bench_softmax, &smax);
	if (err)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		pa[i] = (float)((int)((i * 7919u) % 200u) - 100) / 25.0f;

	/* Vector add: 2 reads and 1 write per element, beside a DMA copy (1 and 1). */
	{
		const uint32_t grid[3] = { rows, 1, 1 };
		const uint64_t args[] = { maia_bo_va(a), maia_bo_va(a), maia_bo_va(c) };

		err = maia_cmd_kernel(cb, add, grid, args, 3, 0);
		err = err ?: time_job(dev, cb, repeat, &t_kernel);
		maia_cmdbuf_reset(cb);
		err = err ?: maia_cmd_copy(cb, maia_bo_va(b), maia_bo_va(a), bytes);
		err = err ?: time_job(dev, cb, repeat, &t_dma);
		maia_cmdbuf_reset(cb);
		if (err)
			goto out;
		for (uint32_t i = 0; i < n && !err; i++)
			err = pc[i] != pa[i] + pa[i] ? -EIO : 0;
		if (err) {
			fprintf(stderr, PROG ": bench: the vector add kernel computed a wrong sum\n");
			goto out;
		}
		bench_emit("kernel_vector_add_gbps", 3.0 * bytes / t_kernel, "GB/s", true,
			   "maia-dma-copy", 2.0 * bytes / t_dma);
	}

	/* Row softmax: the TVP kernel beside the built-in SOFTMAX command. */
	{
		const uint32_t grid[3] = { rows, 1, 1 }, shape[2] = { rows, 1024 };
		const uint64_t args[] = { maia_bo_va(a), maia_bo_va(c) };

		err = maia_cmd_kernel(cb, smax, grid, args, 2, 0);
		err = err ?: time_job(dev, cb, repeat, &t_kernel);
		maia_cmdbuf_reset(cb);
		err = err ?: maia_tensor_init(&x, maia_bo_va(a), MAIA_DTYPE_FP32, 2, shape);
		err = err ?: maia_tensor_init(&y, maia_bo_va(d), MAIA_DTYPE_FP32, 2, shape);
		err = err ?: maia_cmd_softmax(cb, &x, &y, 1.0f, 0, 0);
		err = err ?: time_job(dev, cb, repeat, &t_cmd);
		if (err)
			goto out;
		for (uint32_t i = 0; i < n; i++)
			diff = fmax(diff, fabs((double)pc[i] - pd[i]));
		if (!(diff < 1e-6)) {
			fprintf(stderr, PROG ": bench: the softmax kernel and the SOFTMAX command "
				"differ by %g\n", diff);
			err = -EIO;
			goto out;
		}
		bench_emit("kernel_softmax_fused", t_kernel / 1e6, "ms", false, "softmax-command",
			   t_cmd / 1e6);
	}
out:
	if (err && err != -EIO)
		fprintf(stderr, PROG ": bench: %s (%s)\n", maia_last_error(), maia_strerror(err));
	maia_kernel_destroy(smax);
	maia_kernel_destroy(add);
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(d);
	maia_bo_destroy(c);
	maia_bo_destroy(b);
	maia_bo_destroy(a);
	maia_device_close(dev);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "grid", required_argument, NULL, 'g' },
		{ "arg", required_argument, NULL, 'a' },
		{ "budget", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, 'd' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct arg args[MAIA_TVP_MAX_ARGS];
	uint32_t grid[3] = { 0 }, nargs = 0, budget = 0;
	const char *out = "-", *cmd;
	int device = 0, quick = 0, c, rc;
	uint64_t v;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'g':
			if (parse_grid(optarg, grid)) {
				fprintf(stderr, PROG ": --grid %s: want X[,Y,Z], each 1..%u\n",
					optarg, MAIA_TVP_MAX_GRID);
				return 2;
			}
			break;
		case 'a':
			if (nargs == MAIA_TVP_MAX_ARGS) {
				fprintf(stderr, PROG ": more than %u --arg\n", MAIA_TVP_MAX_ARGS);
				return 2;
			}
			if (parse_arg(optarg, &args[nargs])) {
				fprintf(stderr, PROG ": --arg %s: want INT, f:FLOAT, in:TYPE:V1,..., "
					"iota:TYPE:N, out:TYPE:N or inout:TYPE:V1,... (TYPE f32 "
					"or i32)\n", optarg);
				return 2;
			}
			nargs++;
			break;
		case 'b':
		case 'd':
			if (parse_u64(optarg, &v) || v > (c == 'b' ? UINT32_MAX : 1024)) {
				fprintf(stderr, PROG ": bad number '%s'\n", optarg);
				return 2;
			}
			if (c == 'b')
				budget = (uint32_t)v;
			else
				device = (int)v;
			break;
		case 'q':
			quick = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!strcmp(cmd, "bench") && optind == argc)
		return cmd_bench(quick, device);
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "as"))
		rc = cmd_as(argv[optind], out);
	else if (!strcmp(cmd, "dis"))
		rc = cmd_dis(argv[optind]);
	else if (!strcmp(cmd, "run") && grid[0])
		rc = cmd_run(argv[optind], grid, args, nargs, budget, device);
	else {
		fprintf(stderr, PROG ": %s\n", !strcmp(cmd, "run") ? "run needs --grid" :
			"unknown command (as, dis or run)");
		usage(stderr);
		return 2;
	}
	for (uint32_t i = 0; i < nargs; i++)
		free(args[i].init);
	return rc;
}
