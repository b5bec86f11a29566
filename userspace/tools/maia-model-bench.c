// SPDX-License-Identifier: MIT
/*
 * maia-model-bench: what the device time model says about this device's
 * chip model (Documentation/hw/time-model.rst), measured through the uAPI:
 * every figure is a job's modeled device time (maia_wait_times()), the
 * same on any host.
 *
 *   maia-model-bench [--gemm] [--hbm] [--repeat N] [--throttle N] [--cap W]
 *                    [--device I]
 *
 * --gemm      GEMMs of the model's data types at small and large shapes:
 *             modeled_gemm_<dtype>_<M>x<N>x<K>_tflops beside the chip's peak
 * --hbm       a 256 MiB HBM -> HBM copy: modeled_hbm_stream_gbps beside the
 *             HBM bandwidth (bytes read + written over the modeled time)
 * --repeat N  the same GEMM job N times: modeled_repeatability, the largest
 *             difference between their modeled times (goal 0)
 * --allreduce an FP32 all-reduce of 16 and 64 MiB over every device, cabled
 *             as a ring (qemu/run-guest --fabric ring: port 0 to the next
 *             device's port 1): modeled_allreduce_busbw_n<N>_<size> beside
 *             the link rate, from the slowest rank's modeled time
 * --throttle N  N jobs of one BF16 4096^3 GEMM back to back, each line
 *             with the modeled time, power, clock and throttle events
 *             (text, for `make run`); --cap W first sets the power cap
 *             (hwmon power1_cap), and puts the previous cap back at the end
 *
 * JSON lines go to stdout (make bench's format), text to stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "drm/maia_accel.h"
#include "libmaia.h"

#define MIB	(1024ull * 1024ull)

static struct maia_device *dev;
static struct maia_device_info info;

static uint64_t param(uint32_t p, uint32_t index)
{
	struct drm_maia_get_param gp = { .param = p, .index = index };

	if (ioctl(maia_device_fd(dev), DRM_IOCTL_MAIA_GET_PARAM, &gp))
		return 0;
	return gp.value;
}

static const char *dtype_name(unsigned int d)
{
	static const char *const names[] = {
		[MAIA_DTYPE_FP32] = "fp32", [MAIA_DTYPE_FP16] = "fp16", [MAIA_DTYPE_BF16] = "bf16",
		[MAIA_DTYPE_FP8_E4M3] = "fp8", [MAIA_DTYPE_MXFP4_E2M1] = "fp4",
		[MAIA_DTYPE_MX9] = "mx9", [MAIA_DTYPE_MX6] = "mx6",
	};

	return d < sizeof(names) / sizeof(names[0]) && names[d] ? names[d] : "?";
}

/* Bytes of an m x n tensor of dtype d (block formats: whole blocks, scales apart). */
static uint64_t tensor_bytes(unsigned int d, uint64_t m, uint64_t n)
{
	unsigned int block = maia_dtype_block(d);

	return m * (n + block - 1) / block * maia_dtype_block_bytes(d);
}

/* One BO for an operand, with room for block scales; NULL on failure. */
static struct maia_bo *operand(unsigned int d, uint64_t m, uint64_t n)
{
	struct maia_bo *bo;

	if (maia_bo_create(dev, tensor_bytes(d, m, n) + m * n / 16 + 4096, MAIA_BO_HBM, &bo))
		return NULL;
	return bo;
}

/* A tensor descriptor over bo; block formats get their scales after the data. */
static void desc(struct maia_tensor_desc *t, struct maia_bo *bo, unsigned int d, uint32_t m,
		 uint32_t n)
{
	maia_tensor_init(t, maia_bo_va(bo), d, 2, (uint32_t[]){ m, n });
	if (maia_dtype_is_block(d))
		maia_tensor_set_scale_addr(t, maia_bo_va(bo) + ((tensor_bytes(d, m, n) + 4095) & ~4095ull));
}

/* Runs cb once; its modeled device time in ns, 0 on failure. */
static uint64_t run_modeled(struct maia_cmdbuf *cb)
{
	struct maia_job_times times = { 0 };
	struct maia_job_status st;
	uint64_t seqno;

	if (maia_submit(dev, cb, NULL, &seqno) ||
	    maia_wait_times(dev, seqno, 600ll * 1000000000, &st, &times) ||
	    !(times.valid & MAIA_JOB_TIMES_DEVICE)) {
		fprintf(stderr, "maia-model-bench: job failed (status %u, device status %u)\n",
			st.status, st.device_status);
		return 0;
	}
	return times.device_ns;
}

/* A job of count GEMMs m x n x k, A and B of one dtype, C in BF16, on buffers it owns. */
struct gemm_job {
	struct maia_bo *a, *b, *c;
	struct maia_cmdbuf *cb;
};

static void gemm_free(struct gemm_job *g)
{
	if (g->cb)
		maia_cmdbuf_destroy(g->cb);
	maia_bo_destroy(g->a);
	maia_bo_destroy(g->b);
	maia_bo_destroy(g->c);
	memset(g, 0, sizeof(*g));
}

static int gemm_setup(struct gemm_job *g, unsigned int d, uint32_t m, uint32_t n, uint32_t k,
		      int count)
{
	struct maia_tensor_desc ta, tb, tc;

	memset(g, 0, sizeof(*g));
	g->a = operand(d, m, k);
	g->b = operand(d, k, n);
	g->c = operand(MAIA_DTYPE_BF16, m, n);
	if (!g->a || !g->b || !g->c || maia_cmdbuf_create(dev, 4096, &g->cb))
		goto fail;
	desc(&ta, g->a, d, m, k);
	desc(&tb, g->b, d, k, n);
	desc(&tc, g->c, MAIA_DTYPE_BF16, m, n);
	for (int i = 0; i < count; i++)
		if (maia_cmd_gemm(g->cb, &ta, &tb, &tc, 1.0f, 0.0f, 0))
			goto fail;
	return 0;
fail:
	gemm_free(g);
	return -1;
}

/* HBM bytes the device counted, read + written. */
static uint64_t hbm_bytes(void)
{
	struct maia_telemetry t;

	if (maia_device_telemetry(dev, &t))
		return 0;
	return t.hbm_bytes_read + t.hbm_bytes_written;
}

/* One job on fresh buffers; its modeled time (0 on failure) and HBM bytes. */
static uint64_t gemm_once(unsigned int d, uint32_t m, uint32_t n, uint32_t k, uint64_t *bytes)
{
	struct gemm_job g;
	uint64_t ns, b0;

	if (gemm_setup(&g, d, m, n, k, 1))
		return 0;
	b0 = hbm_bytes();
	ns = run_modeled(g.cb);
	*bytes = hbm_bytes() - b0;
	gemm_free(&g);
	return ns;
}

static int bench_gemm(void)
{
	static const unsigned int m100[] = { MAIA_DTYPE_BF16, MAIA_DTYPE_MX9, MAIA_DTYPE_MX6 };
	static const unsigned int m200[] = { MAIA_DTYPE_BF16, MAIA_DTYPE_FP8_E4M3,
					     MAIA_DTYPE_MXFP4_E2M1 };
	static const uint32_t shapes[][3] = { { 256, 256, 256 }, { 32, 4096, 4096 },
					      { 2048, 2048, 2048 }, { 4096, 4096, 4096 } };
	bool maia200 = param(DRM_MAIA_PARAM_MODEL, 0) == DRM_MAIA_MODEL_MAIA200;
	const unsigned int *types = maia200 ? m200 : m100;
	int bad = 0;

	for (unsigned int t = 0; t < 3; t++) {
		double peak = (double)param(DRM_MAIA_PARAM_PEAK_GFLOPS, types[t]) / 1000.0;

		for (unsigned int s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			uint32_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
			uint64_t bytes = 0, ns = gemm_once(types[t], m, n, k, &bytes);
			double tflops = ns ? 2.0 * m * n * k / (double)ns / 1000.0 : 0.0;

			bad |= !ns || !peak || tflops > peak;
			printf("{\"name\": \"modeled_gemm_%s_%ux%ux%u_tflops\", \"value\": %.2f, "
			       "\"unit\": \"TFLOPS\", \"higher_is_better\": true, \"baseline\": "
			       "\"peak_%s\", \"baseline_value\": %.1f, \"ratio\": %.4f, "
			       "\"modeled_ns\": %llu, \"flops_per_hbm_byte\": %.1f}\n",
			       dtype_name(types[t]), m, n, k, tflops, dtype_name(types[t]), peak,
			       peak ? tflops / peak : 0.0, (unsigned long long)ns,
			       bytes ? 2.0 * m * n * k / (double)bytes : 0.0);
			fflush(stdout);
		}
	}
	return bad;
}

static int bench_hbm(void)
{
	const uint64_t size = 256 * MIB;
	double bw = (double)param(DRM_MAIA_PARAM_HBM_MBPS, 0) / 1000.0, gbps;
	struct maia_bo *src, *dst;
	struct maia_cmdbuf *cb;
	uint64_t ns;

	if (maia_bo_create(dev, size, MAIA_BO_HBM, &src) ||
	    maia_bo_create(dev, size, MAIA_BO_HBM, &dst) || maia_cmdbuf_create(dev, 4096, &cb) ||
	    maia_cmd_copy(cb, maia_bo_va(dst), maia_bo_va(src), size))
		return 1;
	ns = run_modeled(cb);
	gbps = ns ? 2.0 * (double)size / (double)ns : 0.0;
	printf("{\"name\": \"modeled_hbm_stream_gbps\", \"value\": %.1f, \"unit\": \"GB/s\", "
	       "\"higher_is_better\": true, \"baseline\": \"hbm_bandwidth\", \"baseline_value\": %.1f, "
	       "\"ratio\": %.4f, \"modeled_ns\": %llu}\n",
	       gbps, bw, bw ? gbps / bw : 0.0, (unsigned long long)ns);
	maia_cmdbuf_destroy(cb);
	maia_bo_destroy(src);
	maia_bo_destroy(dst);
	return !ns || gbps > bw;
}

/* The same job (the same buffers) run n times. */
static int bench_repeat(int n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	struct gemm_job g;

	if (gemm_setup(&g, MAIA_DTYPE_BF16, 1024, 1024, 1024, 4))
		return 1;
	for (int i = 0; i < n; i++) {
		uint64_t ns = run_modeled(g.cb);

		if (!ns) {
			gemm_free(&g);
			return 1;
		}
		lo = ns < lo ? ns : lo;
		hi = ns > hi ? ns : hi;
	}
	gemm_free(&g);
	printf("{\"name\": \"modeled_repeatability\", \"value\": %llu, \"unit\": \"ns\", "
	       "\"higher_is_better\": false, \"runs\": %d, \"modeled_ns\": %llu}\n",
	       (unsigned long long)(hi - lo), n, (unsigned long long)lo);
	return 0;
}

/* One all-reduce of bytes over n devices; the slowest rank's modeled time, 0 on failure. */
static uint64_t allreduce_once(struct maia_device **devs, int n, uint64_t bytes, uint32_t seq)
{
	struct maia_bo *bufs[16] = { 0 };
	struct maia_cmdbuf *cbs[16] = { 0 };
	uint64_t seqnos[16], worst = 0;
	int bad = 0;

	for (int r = 0; r < n && !bad; r++) {
		struct maia_cmd_collective c = {
			.coll = MAIA_COLL_ALL_REDUCE, .redop = MAIA_REDOP_SUM,
			.dtype = MAIA_DTYPE_FP32, .send_port = 0, .recv_port = 1,
			.rank = (uint16_t)r, .nranks = (uint16_t)n, .comm_id = 0x4d4f444c,
			.seq = seq, .count = bytes / 4,
		};

		bad = maia_bo_create(devs[r], bytes, MAIA_BO_HBM, &bufs[r]) ||
		      maia_cmdbuf_create(devs[r], 4096, &cbs[r]);
		if (!bad) {
			c.send_addr = c.recv_addr = maia_bo_va(bufs[r]);
			bad = maia_cmd_collective(cbs[r], &c) ||
			      maia_submit(devs[r], cbs[r], NULL, &seqnos[r]);
		}
	}
	for (int r = 0; r < n; r++) {
		struct maia_job_times times = { 0 };
		struct maia_job_status st;

		if (!bad && !maia_wait_times(devs[r], seqnos[r], 600ll * 1000000000, &st, &times) &&
		    (times.valid & MAIA_JOB_TIMES_DEVICE))
			worst = times.device_ns > worst ? times.device_ns : worst;
		else
			bad = 1;
	}
	for (int r = 0; r < n; r++) {
		if (cbs[r])
			maia_cmdbuf_destroy(cbs[r]);
		maia_bo_destroy(bufs[r]);
	}
	return bad ? 0 : worst;
}

static int bench_allreduce(void)
{
	static const uint64_t sizes[] = { 16 * MIB, 64 * MIB };
	double link = (double)param(DRM_MAIA_PARAM_LINK_MBPS, 0) / 1000.0;
	struct maia_device *devs[16] = { dev };
	int n = maia_device_count(), bad = 0;

	if (n < 2 || n > 16)
		return 1;
	for (int r = 1; r < n && !bad; r++)
		bad = maia_device_open(r, &devs[r]);
	for (unsigned int i = 0; i < 2 && !bad; i++) {
		uint64_t ns = allreduce_once(devs, n, sizes[i], i + 1);
		double busbw = ns ? 2.0 * (n - 1) / n * (double)sizes[i] / (double)ns : 0.0;

		bad = !ns;
		printf("{\"name\": \"modeled_allreduce_busbw_n%d_%lluMiB\", \"value\": %.2f, "
		       "\"unit\": \"GB/s\", \"higher_is_better\": true, \"baseline\": \"link_rate\", "
		       "\"baseline_value\": %.1f, \"ratio\": %.4f, \"modeled_ns\": %llu}\n",
		       n, (unsigned long long)(sizes[i] / MIB), busbw, link, link ? busbw / link : 0.0,
		       (unsigned long long)ns);
		fflush(stdout);
	}
	for (int r = 1; r < n; r++)
		if (devs[r])
			maia_device_close(devs[r]);
	return bad;
}

/* The hwmon power1_cap of this device, in uW; 0 if there is none. */
static int cap_path(char *path, size_t size)
{
	char dir[256];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/hwmon", info.pci_address);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "hwmon", 5))
			break;
	if (de)
		snprintf(path, size, "%s/%s/power1_cap", dir, de->d_name);
	closedir(d);
	return de ? 0 : -ENOENT;
}

static uint64_t cap_get(void)
{
	unsigned long long v = 0;
	char path[600];
	FILE *f;

	if (cap_path(path, sizeof(path)) || !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int cap_set(uint64_t uw)
{
	char path[600];
	FILE *f;
	int err;

	if (cap_path(path, sizeof(path)) || !(f = fopen(path, "w")))
		return -errno;
	err = fprintf(f, "%llu\n", (unsigned long long)uw) < 0;
	return fclose(f) || err ? -EIO : 0;
}

/* A sustained GEMM load: the same job, on the same buffers, back to back. */
static int bench_throttle(int jobs, int cap_w)
{
	uint64_t old_cap = cap_get(), total = 0, events0;
	struct maia_telemetry t;
	struct gemm_job g;
	int bad = 0;

	if (cap_w && cap_set((uint64_t)cap_w * 1000000)) {
		fprintf(stderr, "maia-model-bench: cannot set the power cap to %d W\n", cap_w);
		return 1;
	}
	if (gemm_setup(&g, MAIA_DTYPE_BF16, 4096, 4096, 4096, 1))
		return 1;
	maia_device_telemetry(dev, &t);
	events0 = t.throttle_count;
	fprintf(stderr, "model %s, cap %.0f W: %d jobs of one BF16 4096^3 GEMM\n",
		param(DRM_MAIA_PARAM_MODEL, 0) == DRM_MAIA_MODEL_MAIA200 ? "maia200" : "maia100",
		(double)t.power_cap_uw / 1e6, jobs);
	for (int i = 0; i < jobs && !bad; i++) {
		uint64_t ns = run_modeled(g.cb);

		bad = !ns;
		total += ns;
		maia_device_telemetry(dev, &t);
		fprintf(stderr, "  job %d: %7.1f us modeled (%.0f TFLOPS)  power %5.1f W  clock %4.0f MHz  "
			"clock step-downs %llu\n", i + 1, ns / 1e3, ns ? 2.0 * 4096 * 4096 * 4096 / ns / 1e3 : 0,
			(double)t.power_uw / 1e6, (double)t.clock_hz / 1e6,
			(unsigned long long)(t.throttle_count - events0));
	}
	fprintf(stderr, "  all: %.1f us modeled\n", total / 1e3);
	gemm_free(&g);
	if (cap_w && old_cap)
		cap_set(old_cap);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gemm", no_argument, NULL, 'g' },
		{ "hbm", no_argument, NULL, 'b' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "throttle", required_argument, NULL, 't' },
		{ "cap", required_argument, NULL, 'c' },
		{ "allreduce", no_argument, NULL, 'a' },
		{ "device", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int gemm = 0, hbm = 0, repeat = 0, throttle = 0, cap = 0, index = 0, bad = 0, c;
	int allreduce = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'g': gemm = 1; break;
		case 'b': hbm = 1; break;
		case 'r': repeat = atoi(optarg); break;
		case 't': throttle = atoi(optarg); break;
		case 'c': cap = atoi(optarg); break;
		case 'd': index = atoi(optarg); break;
		case 'a': allreduce = 1; break;
		default:
			fprintf(stderr, "usage: maia-model-bench [--gemm] [--hbm] [--repeat N] "
				"[--throttle N] [--cap W] [--allreduce] [--device I]\n");
			return 2;
		}
	}
	if (maia_device_open(index, &dev) || maia_device_info(dev, &info)) {
		fprintf(stderr, "maia-model-bench: no device %d\n", index);
		return 1;
	}
	if (param(DRM_MAIA_PARAM_MODEL, 0) == DRM_MAIA_MODEL_NONE) {
		fprintf(stderr, "maia-model-bench: the device has no chip model (hardware before 1.8)\n");
		return 1;
	}
	if (gemm)
		bad |= bench_gemm();
	if (hbm)
		bad |= bench_hbm();
	if (repeat)
		bad |= bench_repeat(repeat);
	if (throttle)
		bad |= bench_throttle(throttle, cap);
	if (allreduce)
		bad |= bench_allreduce();
	maia_device_close(dev);
	return bad;
}
