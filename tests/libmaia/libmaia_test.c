// SPDX-License-Identifier: MIT
/*
 * libmaia against the real device (in the guest): argument checks, error
 * paths, fences, BO sharing, and every command builder once with its result
 * checked against a CPU computation. kselftest harness, TAP output; every
 * test runs in its own process with its own device file (context).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libmaia.h"
#include "drm/maia_accel.h"
#include "maia/hw/queue.h"

#define SEC	1000000000ll

FIXTURE(dev) {
	struct maia_device *dev;
	struct maia_cmdbuf *cb;
	struct maia_bo *bo;	/* 1 MiB host scratch, CPU-mapped */
	uint8_t *cpu;
	uint64_t va;
};

FIXTURE_SETUP(dev)
{
	int err = maia_device_open(0, &self->dev);

	if (err == -ENODEV)
		SKIP(return, "no Maia device");
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 65536, &self->cb));
	ASSERT_EQ(0, maia_bo_create(self->dev, 1 << 20, MAIA_BO_HOST, &self->bo));
	ASSERT_EQ(0, maia_bo_map(self->bo, (void **)&self->cpu));
	memset(self->cpu, 0, 1 << 20);
	self->va = maia_bo_va(self->bo);
}

FIXTURE_TEARDOWN(dev)
{
	maia_cmdbuf_destroy(self->cb);
	maia_bo_destroy(self->bo);
	maia_device_close(self->dev);
}

/* FP32 tensor of the given shape at byte offset off of the scratch BO. */
static float *tensor(struct _test_data_dev *self, struct maia_tensor_desc *t, uint64_t off,
		     unsigned int rank, const uint32_t *shape)
{
	if (maia_tensor_init(t, self->va + off, MAIA_DTYPE_FP32, rank, shape))
		return NULL;
	return (float *)(self->cpu + off);
}

static void fill(float *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (float)((int)((i * 7919u + seed * 104729u) % 200u) - 100) / 50.0f;
}

static double max_diff(const float *got, const double *ref, size_t n)
{
	double m = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (!(fabs(got[i] - ref[i]) <= m))
			m = isnan(got[i]) ? INFINITY : fabs(got[i] - ref[i]);
	return m;
}

/* ---- argument checks: errors, never crashes, a message ------------------ */

TEST(open_bad_arguments)
{
	struct maia_device *dev;

	EXPECT_EQ(-EINVAL, maia_device_open(0, NULL));
	EXPECT_EQ(-EINVAL, maia_device_open(-1, &dev));
	EXPECT_EQ(-ENODEV, maia_device_open(1000, &dev));
	EXPECT_EQ(-ENODEV, maia_device_open_pci("ffff:ff:1f.7", &dev));
	EXPECT_EQ(-EINVAL, maia_device_open_pci(NULL, &dev));
	EXPECT_EQ(-EINVAL, maia_device_info(NULL, NULL));
	EXPECT_EQ(-EINVAL, maia_device_fd(NULL));
	maia_device_close(NULL);
	EXPECT_STRNE("", maia_strerror(-ENODEV));
}

TEST_F(dev, bo_bad_arguments)
{
	struct maia_bo *bo;
	void *p;
	int fd;

	EXPECT_EQ(-EINVAL, maia_bo_create(self->dev, 0, MAIA_BO_HOST, &bo));
	EXPECT_EQ(-EINVAL, maia_bo_create(self->dev, 4096, 7, &bo));
	EXPECT_EQ(-EINVAL, maia_bo_create(NULL, 4096, MAIA_BO_HOST, &bo));
	/* More than the device has: the kernel says no, nothing crashes. */
	EXPECT_GT(0, maia_bo_create(self->dev, 1ull << 46, MAIA_BO_HBM, &bo));
	EXPECT_EQ(-EINVAL, maia_bo_map(NULL, &p));
	EXPECT_EQ(-EINVAL, maia_bo_export(self->bo, NULL));
	EXPECT_EQ(-EINVAL, maia_bo_import(self->dev, -1, &bo));
	fd = open("/dev/null", O_RDONLY);
	EXPECT_GT(0, maia_bo_import(self->dev, fd, &bo));	/* not a dma-buf */
	close(fd);
	maia_bo_destroy(NULL);
}

TEST_F(dev, builder_bad_arguments)
{
	struct maia_tensor_desc a, b, c, bias, q;
	uint8_t perm[2] = { 0, 0 };
	uint32_t before;

	ASSERT_NE(NULL, tensor(self, &a, 0, 2, (uint32_t[]){ 8, 16 }));
	ASSERT_NE(NULL, tensor(self, &b, 4096, 2, (uint32_t[]){ 16, 4 }));
	ASSERT_NE(NULL, tensor(self, &c, 8192, 2, (uint32_t[]){ 8, 4 }));
	ASSERT_NE(NULL, tensor(self, &bias, 12288, 1, (uint32_t[]){ 5 }));
	before = maia_cmdbuf_size(self->cb);

	EXPECT_EQ(-EINVAL, maia_cmd_gemm(NULL, &a, &b, &c, 1, 0, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, NULL, &b, &c, 1, 0, 0));
	EXPECT_STRNE("", maia_last_error());
	/* K mismatch: A is 8x16, B^T would be 4x16 -> op(B) 16x4 only without TRANS_B */
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, &a, &b, &c, 1, 0, MAIA_GEMM_F_TRANS_B));
	EXPECT_NE(NULL, strstr(maia_last_error(), "gemm"));
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, &a, &c, &c, 1, 0, 0));	/* 8x16 * 8x4 */
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, &a, &b, &c, NAN, 0, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, &a, &b, &c, 1, 0, 0x100));
	{
		struct maia_gemm_args g = { .a = &a, .b = &b, .c = &c, .bias = &bias };

		EXPECT_EQ(-EINVAL, maia_cmd_gemm_ex(self->cb, &g));	/* bias has 5, N = 4 */
		g.bias = NULL;
		g.activation = 99;
		EXPECT_EQ(-EINVAL, maia_cmd_gemm_ex(self->cb, &g));
		EXPECT_EQ(-EINVAL, maia_cmd_gemm_batched(self->cb, &g, 0, 0, 0, 1));
	}
	/* C in a block format is not a GEMM output. */
	q = c;
	q.dtype = MAIA_DTYPE_MXFP8_E4M3;
	EXPECT_EQ(-EINVAL, maia_cmd_gemm(self->cb, &a, &b, &q, 1, 0, 0));
	/* Broken descriptors */
	q = a;
	q.rank = 0;
	EXPECT_EQ(-EINVAL, maia_cmd_add(self->cb, &q, &a, &a, 0));
	q = a;
	q.shape[3] = 2;
	EXPECT_EQ(-EINVAL, maia_cmd_add(self->cb, &q, &a, &a, 0));
	q = a;
	q.dtype = 200;
	EXPECT_EQ(-EINVAL, maia_cmd_scale(self->cb, &q, &a, 1, 0));
	q = a;
	q.strides[0] = 0;	/* an output overlapping itself */
	EXPECT_EQ(-EINVAL, maia_cmd_scale(self->cb, &a, &q, 1, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_add(self->cb, &a, &c, &a, 0));	/* shapes */
	EXPECT_EQ(-EINVAL, maia_cmd_activation(self->cb, &a, &a, MAIA_ACT_NONE));
	EXPECT_EQ(-EINVAL, maia_cmd_softmax(self->cb, &a, &c, 1, 0, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_softmax(self->cb, &a, &a, 1, 3, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_layernorm(self->cb, &a, &bias, &bias, &a, 1e-5f));
	EXPECT_EQ(-EINVAL, maia_cmd_layernorm(self->cb, &a, NULL, &bias, &a, 1e-5f));
	EXPECT_EQ(-EINVAL, maia_cmd_rmsnorm(self->cb, &a, NULL, &a, -1.0f));
	EXPECT_EQ(-EINVAL, maia_cmd_attention(self->cb, &a, &a, &a, &a, 0, 0));	/* rank 2 */
	EXPECT_EQ(-EINVAL, maia_cmd_quantize(self->cb, &a, &a, 0, 0));	/* fp32 -> fp32 */
	EXPECT_EQ(-EINVAL, maia_cmd_dequantize(self->cb, &a, &a));	/* fp32 is not quantized */
	EXPECT_EQ(-EINVAL, maia_cmd_reduce(self->cb, &a, &a, MAIA_REDUCE_SUM, 1));
	EXPECT_EQ(-EINVAL, maia_cmd_reduce(self->cb, &a, &c, MAIA_REDUCE_SUM, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_transpose(self->cb, &a, &a, perm));	/* not a perm */
	EXPECT_EQ(-EINVAL, maia_cmd_transpose(self->cb, &a, &a, NULL));
	EXPECT_EQ(-EINVAL, maia_tensor_init(&q, 0, MAIA_DTYPE_FP32, 5, (uint32_t[]){ 1, 1, 1, 1, 1 }));
	EXPECT_EQ(-EINVAL, maia_tensor_init(&q, 0, MAIA_DTYPE_MXFP8_E4M3, 1, (uint32_t[]){ 31 }));
	EXPECT_EQ(-EINVAL, maia_tensor_set_scale(&a, 2.0f));	/* fp32 has no scale */
	/* DMA and sync commands */
	EXPECT_EQ(-EINVAL, maia_cmd_fill(self->cb, self->va, 3, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_copy(self->cb, self->va, self->va + 4096, 0));
	EXPECT_EQ(-EINVAL, maia_cmd_copy_2d(self->cb, self->va, UINT64_MAX / 2, self->va, 64, 16,
					    8));
	EXPECT_EQ(-EINVAL, maia_cmd_fence_write(self->cb, self->va + 4, 1));
	EXPECT_EQ(-EINVAL, maia_cmd_timestamp(self->cb, self->va + 1));
	EXPECT_EQ(-EINVAL, maia_cmd_sem_signal(self->cb, MAIA_NUM_SEMAPHORES, 1));
	EXPECT_EQ(-EINVAL, maia_cmd_sem_wait(self->cb, 1000, 1, 10));
	EXPECT_NE(NULL, strstr(maia_last_error(), "semaphore"));
	/* Nothing was appended by any failed call. */
	EXPECT_EQ(before, maia_cmdbuf_size(self->cb));
	EXPECT_EQ(-EINVAL, maia_submit(self->dev, self->cb, NULL, &(uint64_t){ 0 }));	/* empty */
}

TEST_F(dev, cmdbuf_full)
{
	struct maia_cmdbuf *small;
	int i, err = 0;

	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 64, &small));
	for (i = 0; i < 16 && !err; i++)
		err = maia_cmd_nop(small);
	EXPECT_EQ(-ENOSPC, err);
	EXPECT_EQ(64u, maia_cmdbuf_size(small));
	maia_cmdbuf_destroy(small);
	EXPECT_EQ(-EINVAL, maia_cmdbuf_create(self->dev, 0, &small));
	EXPECT_EQ(-EINVAL, maia_cmdbuf_create(self->dev, 1u << 30, &small));
}

/* ---- waits, timeouts, fences ---------------------------------------------- */

/* A job that stalls about `us` on a semaphore nobody signals, then fails. */
static void stall_job(struct maia_cmdbuf *cb, uint32_t us)
{
	maia_cmdbuf_reset(cb);
	maia_cmd_sem_wait(cb, 7, 1, us);
}

TEST_F(dev, wait_timeout)
{
	struct maia_job_status st;
	uint64_t seqno;

	stall_job(self->cb, 300000);
	ASSERT_EQ(0, maia_submit(self->dev, self->cb, NULL, &seqno));
	EXPECT_EQ(-ETIME, maia_wait(self->dev, seqno, 1000000, &st));	/* 1 ms */
	ASSERT_EQ(0, maia_wait(self->dev, seqno, 30 * SEC, &st));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, st.status);
	EXPECT_EQ(MAIA_STATUS_SEM_TIMEOUT, st.device_status);
	EXPECT_EQ(0u, st.error_offset);
	EXPECT_EQ(-EINVAL, maia_wait(self->dev, seqno, -1, &st));
	/* maia_run maps a failed job to an errno and says why. */
	EXPECT_EQ(-EIO, maia_run(self->dev, self->cb, 30 * SEC, &st));
	EXPECT_NE(NULL, strstr(maia_last_error(), "status"));
}

/*
 * On a user queue maia_wait() polls the completion array for
 * MAIA_WAIT_SPIN_US before it sleeps in USERQ_WAIT (since 1.9): a job that
 * ends within the poll costs the waiter no sleep (no voluntary context
 * switch), one that does not is slept on, and the poll ends at the wait's
 * timeout (else it would see the job end). Jobs that stall on a semaphore
 * for 20 ms or 1 s, then fail.
 */
TEST(wait_polls_before_sleeping)
{
	static const struct {
		const char *spin_us;
		uint32_t stall_us;
		int64_t timeout_ns;
		int ret;
		bool sleeps;
	} c[] = {
		/* Stalls far inside the poll, and far past the 10 ms timeout. */
		{ "1000000", 20000, 30 * SEC, 0, false },
		{ "1000000", 1000000, SEC / 100, -ETIME, false },	/* 10 ms */
		{ "0", 1000000, 30 * SEC, 0, true },
	};
	struct maia_job_status st;
	struct maia_device *dev;
	struct maia_cmdbuf *cb;
	struct rusage r0, r1;
	uint64_t seqno;
	unsigned int i;
	int err;

	if (getenv("MAIA_USERQ") && !strcmp(getenv("MAIA_USERQ"), "0"))
		SKIP(return, "no user queue (MAIA_USERQ=0)");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		/* Read once per device, at its first submit. */
		setenv("MAIA_WAIT_SPIN_US", c[i].spin_us, 1);
		err = maia_device_open(0, &dev);
		if (err == -ENODEV)
			SKIP(return, "no Maia device");
		ASSERT_EQ(0, err);
		ASSERT_EQ(0, maia_cmdbuf_create(dev, 4096, &cb));
		stall_job(cb, c[i].stall_us);
		ASSERT_EQ(0, maia_submit(dev, cb, NULL, &seqno));
		if (!(seqno & (1ull << 62)))
			SKIP(return, "the driver has no user queues");
		ASSERT_EQ(0, getrusage(RUSAGE_SELF, &r0));
		EXPECT_EQ(c[i].ret, maia_wait(dev, seqno, c[i].timeout_ns, &st));
		ASSERT_EQ(0, getrusage(RUSAGE_SELF, &r1));
		if (!c[i].ret) {
			EXPECT_EQ(MAIA_STATUS_SEM_TIMEOUT, st.device_status);
			if (c[i].sleeps) {
				EXPECT_LT(r0.ru_nvcsw, r1.ru_nvcsw);
			} else {
				EXPECT_EQ(r0.ru_nvcsw, r1.ru_nvcsw);
			}
		}
		ASSERT_EQ(0, maia_wait(dev, seqno, 30 * SEC, &st));
		maia_cmdbuf_destroy(cb);
		maia_device_close(dev);
	}
	unsetenv("MAIA_WAIT_SPIN_US");
}

/*
 * maia_wait_times (since 1.8): a job's device time (modeled on hardware
 * 1.8) and host time, on whichever path maia_submit took (this program
 * runs once with user queues, once with MAIA_USERQ=0); the host time lies
 * inside the time this test saw pass.
 */
TEST_F(dev, wait_times)
{
	struct maia_job_times times;
	struct maia_job_status st;
	struct timespec t0, t1;
	uint64_t seqno, wall;

	ASSERT_EQ(0, maia_cmd_fill(self->cb, self->va, 256 << 10, 0x5eed));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, maia_submit(self->dev, self->cb, NULL, &seqno));
	memset(&times, 0xa5, sizeof(times));
	ASSERT_EQ(0, maia_wait_times(self->dev, seqno, 30 * SEC, &st, &times));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wall = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec -
	       (uint64_t)t0.tv_nsec;
	EXPECT_EQ(DRM_MAIA_JOB_OK, st.status);
	EXPECT_EQ(MAIA_JOB_TIMES_DEVICE | MAIA_JOB_TIMES_HOST, times.valid);
	EXPECT_LT(0u, times.device_ns);
	EXPECT_LT(0u, times.host_ns);
	EXPECT_GE(wall, times.host_ns);
	/* again, the job done: the same times; NULL times is maia_wait */
	{
		struct maia_job_times again;

		ASSERT_EQ(0, maia_wait_times(self->dev, seqno, 0, NULL, &again));
		EXPECT_EQ(times.device_ns, again.device_ns);
		EXPECT_EQ(times.host_ns, again.host_ns);
		ASSERT_EQ(0, maia_wait_times(self->dev, seqno, 0, &st, NULL));
	}
	TH_LOG("256 KiB fill (%s): device %llu ns, host %llu ns",
	       getenv("MAIA_USERQ") && !strcmp(getenv("MAIA_USERQ"), "0") ? "SUBMIT" : "auto",
	       (unsigned long long)times.device_ns, (unsigned long long)times.host_ns);
}

TEST_F(dev, device_rejects_raw_command)
{
	struct maia_cmd_gemm g;
	struct maia_job_status st;

	/* Bypass the builder: a GEMM whose descriptors are all zero (rank 0). */
	memset(&g, 0, sizeof(g));
	g.hdr.opcode = MAIA_OP_GEMM;
	g.hdr.size = sizeof(g);
	ASSERT_EQ(0, maia_cmd_nop(self->cb));
	ASSERT_EQ(0, maia_cmd_raw(self->cb, &g));
	EXPECT_EQ(-EIO, maia_run(self->dev, self->cb, 30 * SEC, &st));
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, st.status);
	EXPECT_EQ(MAIA_STATUS_BAD_DESC, st.device_status);
	EXPECT_EQ(sizeof(struct maia_cmd_nop), st.error_offset);
	/* A size that is not a multiple of 8 never reaches the device. */
	g.hdr.size = 12;
	EXPECT_EQ(-EINVAL, maia_cmd_raw(self->cb, &g));
}

TEST_F(dev, fence_fd_poll_and_wait)
{
	struct maia_submit_opts opts = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct maia_job_status st;
	struct pollfd pfd;
	uint64_t seqno;
	int fd = -1;

	stall_job(self->cb, 300000);
	opts.out_fence_fd = &fd;
	ASSERT_EQ(0, maia_submit(self->dev, self->cb, &opts, &seqno));
	ASSERT_LE(0, fd);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));			/* still running */
	EXPECT_EQ(-ETIME, maia_fence_wait(fd, 1000000));
	EXPECT_EQ(0, maia_fence_wait(fd, 30 * SEC));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(0, maia_wait(self->dev, seqno, 0, &st));	/* done: no wait needed */
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, st.status);
	close(fd);
	EXPECT_EQ(-EINVAL, maia_fence_wait(-1, 0));
}

TEST_F(dev, syncobj_dependency)
{
	struct maia_submit_opts o1 = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct maia_submit_opts o2 = { .priority = DRM_MAIA_PRIO_HIGH };
	struct maia_cmdbuf *cb2;
	uint64_t s1, s2, *ts = (uint64_t *)self->cpu;
	uint32_t sync;
	int fd;

	ASSERT_EQ(0, maia_syncobj_create(self->dev, &sync));
	ASSERT_EQ(0, maia_cmdbuf_create(self->dev, 4096, &cb2));
	/* Job 1: a large fill, then a timestamp; job 2 (high priority) waits for it. */
	ASSERT_EQ(0, maia_cmd_fill(self->cb, self->va + 65536, 512 * 1024, 0x11111111));
	ASSERT_EQ(0, maia_cmd_timestamp(self->cb, self->va));
	o1.out_syncobj = sync;
	ASSERT_EQ(0, maia_cmd_timestamp(cb2, self->va + 8));
	o2.in_syncobjs = &sync;
	o2.num_in_syncobjs = 1;
	ASSERT_EQ(0, maia_submit(self->dev, self->cb, &o1, &s1));
	ASSERT_EQ(0, maia_submit(self->dev, cb2, &o2, &s2));
	ASSERT_EQ(0, maia_wait(self->dev, s2, 30 * SEC, NULL));
	EXPECT_EQ(0, maia_syncobj_wait(self->dev, sync, 0));
	EXPECT_NE(0u, ts[0]);
	EXPECT_LE(ts[0], ts[1]);	/* job 2 ran after job 1 */
	ASSERT_EQ(0, maia_syncobj_export(self->dev, sync, &fd));
	EXPECT_EQ(0, maia_fence_wait(fd, 0));
	close(fd);
	maia_syncobj_destroy(self->dev, sync);
	maia_cmdbuf_destroy(cb2);
}

/* ---- a faulted context --------------------------------------------------------- */

TEST_F(dev, fault_unmapped_va)
{
	struct maia_context_status cs;
	struct maia_job_status st;
	uint64_t bad = DRM_MAIA_VA_END - (1ull << 30), seqno;

	ASSERT_EQ(0, maia_context_status(self->dev, &cs));
	EXPECT_FALSE(cs.faulted);
	ASSERT_EQ(0, maia_cmd_fill(self->cb, bad, 4096, 0xdeadbeef));
	EXPECT_EQ(-EFAULT, maia_run(self->dev, self->cb, 30 * SEC, &st));
	EXPECT_EQ(DRM_MAIA_JOB_FAULT, st.status);
	ASSERT_EQ(0, maia_context_status(self->dev, &cs));
	EXPECT_TRUE(cs.faulted);
	EXPECT_EQ(bad >> 12, cs.fault_addr >> 12);
	/* The context stays faulted: further submits are refused. */
	EXPECT_EQ(-EBADFD, maia_submit(self->dev, self->cb, NULL, &seqno));
	/* Another open of the device is a fresh, healthy context. */
	{
		struct maia_device *dev2;

		ASSERT_EQ(0, maia_device_open(0, &dev2));
		ASSERT_EQ(0, maia_context_status(dev2, &cs));
		EXPECT_FALSE(cs.faulted);
		maia_device_close(dev2);
	}
}

/* ---- dma-buf export / import ---------------------------------------------------- */

TEST_F(dev, bo_export_import_round_trip)
{
	struct maia_device *dev2;
	struct maia_cmdbuf *cb2;
	struct maia_bo *imp, *dst;
	uint32_t *src = (uint32_t *)self->cpu, *out, *view;
	int fd, i;

	for (i = 0; i < 1024; i++)
		src[i] = 0xa5000000u | (uint32_t)i;
	ASSERT_EQ(0, maia_bo_export(self->bo, &fd));
	ASSERT_EQ(0, maia_device_open(0, &dev2));	/* another context */
	ASSERT_EQ(0, maia_bo_import(dev2, fd, &imp));
	close(fd);
	EXPECT_EQ(maia_bo_size(self->bo), maia_bo_size(imp));
	/* The CPU sees the same pages... */
	ASSERT_EQ(0, maia_bo_map(imp, (void **)&view));
	EXPECT_EQ(0, memcmp(view, src, 4096));
	/* ...and so does the device, through the importer's own VA. */
	ASSERT_EQ(0, maia_bo_create(dev2, 4096, MAIA_BO_HBM, &dst));
	ASSERT_EQ(0, maia_cmdbuf_create(dev2, 4096, &cb2));
	ASSERT_EQ(0, maia_cmd_copy(cb2, maia_bo_va(dst), maia_bo_va(imp), 4096));
	ASSERT_EQ(0, maia_cmd_fill(cb2, maia_bo_va(imp) + 8192, 4096, 0x5a5a5a5a));
	ASSERT_EQ(0, maia_run(dev2, cb2, 30 * SEC, NULL));
	ASSERT_EQ(0, maia_bo_map(dst, (void **)&out));
	EXPECT_EQ(0, memcmp(out, src, 4096));
	EXPECT_EQ(0x5a5a5a5au, src[2048]);	/* written by dev2, seen by the exporter */
	maia_cmdbuf_destroy(cb2);
	maia_bo_destroy(dst);
	maia_bo_destroy(imp);
	maia_device_close(dev2);
}

TEST_F(dev, bo_import_into_exporter)
{
	struct maia_bo *again;
	uint32_t *view;
	int fd;

	/* Same file: the kernel hands back the exporter's handle; both must work. */
	ASSERT_EQ(0, maia_bo_export(self->bo, &fd));
	ASSERT_EQ(0, maia_bo_import(self->dev, fd, &again));
	close(fd);
	EXPECT_EQ(maia_bo_handle(self->bo), maia_bo_handle(again));
	EXPECT_NE(maia_bo_va(self->bo), maia_bo_va(again));
	ASSERT_EQ(0, maia_cmd_fill(self->cb, maia_bo_va(again), 4096, 0x77777777));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_EQ(0x77777777u, ((uint32_t *)self->cpu)[100]);
	maia_bo_destroy(again);
	/* The original still works after the import is gone. */
	maia_cmdbuf_reset(self->cb);
	ASSERT_EQ(0, maia_cmd_fill(self->cb, self->va, 4096, 0x88888888));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	ASSERT_EQ(0, maia_bo_map(self->bo, (void **)&view));
	EXPECT_EQ(0x88888888u, view[100]);
}

TEST(dtype_bytes)
{
	uint64_t data, scales;

	ASSERT_EQ(0, maia_dtype_bytes(MAIA_DTYPE_FP32, 10, &data, &scales));
	EXPECT_EQ(40u, data);
	EXPECT_EQ(0u, scales);
	ASSERT_EQ(0, maia_dtype_bytes(MAIA_DTYPE_MXFP8_E4M3, 64, &data, &scales));
	EXPECT_EQ(64u, data);
	EXPECT_EQ(2u, scales);
	ASSERT_EQ(0, maia_dtype_bytes(MAIA_DTYPE_MXFP4_E2M1, 64, &data, &scales));
	EXPECT_EQ(32u, data);
	ASSERT_EQ(0, maia_dtype_bytes(MAIA_DTYPE_MX4, 32, &data, &scales));
	EXPECT_EQ(14u, data);	/* 2 blocks of 16 x 3 bits + 8 microexponent bits */
	EXPECT_EQ(2u, scales);
	EXPECT_EQ(-EINVAL, maia_dtype_bytes(MAIA_DTYPE_MXFP8_E4M3, 33, &data, &scales));
	EXPECT_NE(NULL, strstr(maia_last_error(), "block"));
	EXPECT_EQ(-EINVAL, maia_dtype_bytes(MAIA_DTYPE_COUNT, 1, &data, &scales));
	EXPECT_NE(NULL, strstr(maia_last_error(), "dtype"));
	/* A successful call clears the message. */
	EXPECT_EQ(0, maia_dtype_bytes(MAIA_DTYPE_BF16, 2, &data, NULL));
	EXPECT_STREQ("", maia_last_error());
}

/*
 * Communicator ids derived from one: the same index gives the same id
 * (what lets cluster ranks agree with no message), others differ from it
 * and from the base, and only a real id can be a base.
 */
TEST(comm_id_derive)
{
	struct maia_comm_id base, a, b, c, junk;
	uint32_t i;

	ASSERT_EQ(0, maia_comm_get_unique_id(&base));
	ASSERT_EQ(0, maia_comm_id_derive(&base, 7, &a));
	ASSERT_EQ(0, maia_comm_id_derive(&base, 7, &b));
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	EXPECT_NE(0, memcmp(&a, &base, sizeof(a)));
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, maia_comm_id_derive(&base, i, &c));
		EXPECT_NE(0, memcmp(&c, &base, sizeof(c)));
		if (i != 7)
			EXPECT_NE(0, memcmp(&c, &a, sizeof(c)));
	}
	/* A derived id is an id: it derives further, and differently. */
	ASSERT_EQ(0, maia_comm_id_derive(&a, 7, &c));
	EXPECT_NE(0, memcmp(&c, &a, sizeof(c)));
	memset(&junk, 0x5a, sizeof(junk));
	EXPECT_EQ(-EINVAL, maia_comm_id_derive(&junk, 0, &c));
	EXPECT_NE(NULL, strstr(maia_last_error(), "maia_comm_get_unique_id"));
	EXPECT_EQ(-EINVAL, maia_comm_id_derive(NULL, 0, &c));
}

/*
 * An id makes one communicator per device: a second init with it is refused
 * at once (the device would drop its chunks as stale and time out), also
 * after the first is gone; a derived id works; a refused init leaves the id
 * unused.
 */
TEST_F(dev, comm_id_single_use)
{
	struct maia_comm_id id, next;
	struct maia_comm *a, *b;

	ASSERT_EQ(0, maia_comm_get_unique_id(&id));
	ASSERT_EQ(0, maia_comm_init_rank(&a, self->dev, 1, &id, 0));
	EXPECT_EQ(-EINVAL, maia_comm_init_rank(&b, self->dev, 1, &id, 0));
	EXPECT_NE(NULL, strstr(maia_last_error(), "single-use"));
	maia_comm_destroy(a);
	EXPECT_EQ(-EINVAL, maia_comm_init_rank(&b, self->dev, 1, &id, 0));
	ASSERT_EQ(0, maia_comm_id_derive(&id, 1, &next));
	ASSERT_EQ(0, maia_comm_init_rank(&b, self->dev, 1, &next, 0));
	maia_comm_destroy(b);
	/* Refused for its arguments: the id is still free afterwards. */
	ASSERT_EQ(0, maia_comm_id_derive(&id, 2, &next));
	EXPECT_EQ(-EINVAL, maia_comm_init_rank(&b, self->dev, 1, &next, 1));
	ASSERT_EQ(0, maia_comm_init_rank(&b, self->dev, 1, &next, 0));
	maia_comm_destroy(b);
}

/*
 * Choosing the all-reduce algorithm (MAIA_COMM_ALGO, maia_comm_set_algorithm):
 * unknown ones are refused, gather-reduce only up to its 64 KiB of inputs,
 * and what is accepted runs (one rank: the device still checks the command).
 */
TEST_F(dev, comm_algorithm)
{
	uint64_t big = MAIA_COLL_GATHER_REDUCE_BYTES / 4 + 1;
	struct maia_comm *comm;
	float *in = (float *)self->cpu, *out = (float *)(self->cpu + 512 * 1024);
	unsigned int i, algo;

	setenv("MAIA_COMM_ALGO", "tree", 1);
	EXPECT_EQ(-EINVAL, maia_comm_init_all(&comm, &self->dev, 1));
	EXPECT_NE(NULL, strstr(maia_last_error(), "MAIA_COMM_ALGO=tree"));
	setenv("MAIA_COMM_ALGO", "gather-reduce", 1);
	ASSERT_EQ(0, maia_comm_init_all(&comm, &self->dev, 1));
	unsetenv("MAIA_COMM_ALGO");
	EXPECT_EQ(-EINVAL, maia_all_reduce(comm, self->va, self->va + 512 * 1024, big,
					   MAIA_DTYPE_FP32, MAIA_REDOP_SUM));
	EXPECT_NE(NULL, strstr(maia_last_error(), "gather-reduce"));
	EXPECT_EQ(-EINVAL, maia_comm_set_algorithm(comm, MAIA_COLL_ALGO_GATHER_REDUCE + 1));
	EXPECT_EQ(-EINVAL, maia_comm_set_algorithm(NULL, MAIA_COLL_ALGO_RING));
	for (algo = MAIA_COLL_ALGO_AUTO; algo <= MAIA_COLL_ALGO_GATHER_REDUCE; algo++) {
		ASSERT_EQ(0, maia_comm_set_algorithm(comm, algo));
		for (i = 0; i < 1000; i++) {
			in[i] = (float)(i * 3 + algo);
			out[i] = -1.0f;
		}
		ASSERT_EQ(0, maia_all_reduce(comm, self->va, self->va + 512 * 1024, 1000,
					     MAIA_DTYPE_FP32, MAIA_REDOP_MAX));
		ASSERT_EQ(0, maia_comm_sync(comm, 30 * SEC));
		for (i = 0; i < 1000; i++)
			ASSERT_EQ((float)(i * 3 + algo), out[i]);
	}
	/* Other collectives are the ring's whatever the choice. */
	ASSERT_EQ(0, maia_all_gather(comm, self->va, self->va + 512 * 1024, 1000, MAIA_DTYPE_FP32));
	ASSERT_EQ(0, maia_comm_sync(comm, 30 * SEC));
	maia_comm_destroy(comm);
}

/* ---- every command, data checked ------------------------------------------------ */

/*
 * Closing a device with live buffer objects: they stay usable (CPU mapping,
 * device VA, dma-buf export) and the last one destroyed closes the device
 * file.
 */
TEST(close_with_live_bos)
{
	struct maia_device *dev;
	struct maia_bo *bo;
	struct maia_cmdbuf *cb;
	uint32_t *p;
	int fd, dmabuf = -1;

	if (maia_device_open(0, &dev) == -ENODEV)
		SKIP(return, "no Maia device");
	fd = maia_device_fd(dev);
	ASSERT_EQ(0, maia_bo_create(dev, 65536, MAIA_BO_HBM, &bo));
	ASSERT_EQ(0, maia_cmdbuf_create(dev, 4096, &cb));
	ASSERT_EQ(0, maia_bo_map(bo, (void **)&p));
	p[100] = 0x600dcafe;
	maia_device_close(dev);
	/* still open: the BOs work */
	EXPECT_EQ(0, fcntl(fd, F_GETFD) < 0 ? -errno : 0);
	EXPECT_EQ(0x600dcafeu, p[100]);
	EXPECT_NE(0u, maia_bo_va(bo));
	EXPECT_EQ(0, maia_bo_export(bo, &dmabuf));
	EXPECT_LE(0, dmabuf);
	if (dmabuf >= 0)
		close(dmabuf);
	maia_bo_destroy(bo);
	EXPECT_EQ(0, fcntl(fd, F_GETFD) < 0 ? -errno : 0);	/* the command buffer holds it */
	maia_cmdbuf_destroy(cb);	/* the last one: the device file is closed */
	EXPECT_EQ(-EBADF, fcntl(fd, F_GETFD) < 0 ? -errno : 0);
}

/*
 * maia-smi --json: one object per device with its PCI address and one
 * tile_busy_us value per tile of the topology; brackets balance.
 */
TEST(smi_json)
{
	const char *smi = getenv("MAIA_SMI") ? getenv("MAIA_SMI") : "/usr/bin/maia-smi";
	char cmd[PATH_MAX + 16], out[65536], *p, *q;
	struct maia_device_info info;
	struct maia_device *dev;
	int depth = 0, tiles = 1;
	size_t len;
	FILE *f;

	if (maia_device_open(0, &dev) == -ENODEV)
		SKIP(return, "no Maia device");
	ASSERT_EQ(0, maia_device_info(dev, &info));
	maia_device_close(dev);
	if (access(smi, X_OK))
		SKIP(return, "no %s (set MAIA_SMI)", smi);
	snprintf(cmd, sizeof(cmd), "%s --json", smi);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	len = fread(out, 1, sizeof(out) - 1, f);
	ASSERT_EQ(0, pclose(f));
	out[len] = '\0';
	for (p = out; *p; p++) {
		depth += *p == '[' || *p == '{';
		depth -= *p == ']' || *p == '}';
		ASSERT_LE(0, depth);
	}
	EXPECT_EQ(0, depth);
	p = strstr(out, info.pci_address);
	ASSERT_NE(NULL, p) TH_LOG("%s not in: %s", info.pci_address, out);
	p = strstr(p, "\"tile_busy_us\":[");
	ASSERT_NE(NULL, p);
	q = strchr(p, ']');
	ASSERT_NE(NULL, q);
	for (p = strchr(p, '['); p < q; p++)
		tiles += *p == ',';
	EXPECT_EQ((int)(info.clusters * info.tiles_per_cluster), tiles);
}

TEST_F(dev, dma_commands)
{
	uint32_t *p = (uint32_t *)self->cpu;
	uint64_t *q = (uint64_t *)(self->cpu + 65536);
	int i;

	for (i = 0; i < 256; i++)
		p[i] = (uint32_t)i * 2654435761u;
	ASSERT_EQ(0, maia_cmd_nop(self->cb));
	ASSERT_EQ(0, maia_cmd_copy(self->cb, self->va + 4096, self->va, 1024));
	/* 2D: 4 rows of 16 bytes with source stride 64, destination stride 32 */
	ASSERT_EQ(0, maia_cmd_copy_2d(self->cb, self->va + 8192, 32, self->va, 64, 16, 4));
	ASSERT_EQ(0, maia_cmd_fill(self->cb, self->va + 12288, 256, 0xcafef00d));
	ASSERT_EQ(0, maia_cmd_sem_signal(self->cb, 3, 2));
	ASSERT_EQ(0, maia_cmd_sem_wait(self->cb, 3, 2, 1000000));
	ASSERT_EQ(0, maia_cmd_fence_write(self->cb, self->va + 65536, 0x123456789abcdefull));
	ASSERT_EQ(0, maia_cmd_timestamp(self->cb, self->va + 65544));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_EQ(0, memcmp(self->cpu + 4096, p, 1024));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, memcmp(self->cpu + 8192 + 32 * i, self->cpu + 64 * i, 16));
	for (i = 0; i < 64; i++)
		EXPECT_EQ(0xcafef00du, p[3072 + i]);
	EXPECT_EQ(0x123456789abcdefull, q[0]);
	EXPECT_NE(0u, q[1]);
}

TEST_F(dev, gemm_bias_relu_and_batched)
{
	enum { M = 8, K = 16, N = 12, BATCH = 3 };
	struct maia_tensor_desc a, b, c, bias, a2, b2, c2;
	double ref[M * N], ref2[BATCH * M * N];
	float *pa, *pb, *pc, *pbias, *pc2;
	uint64_t *ptrs = (uint64_t *)(self->cpu + 262144);
	struct maia_gemm_args g;
	int i, j, p, bt;

	pa = tensor(self, &a, 0, 2, (uint32_t[]){ K, M });	/* stored K x M: TRANS_A */
	pb = tensor(self, &b, 4096, 2, (uint32_t[]){ K, N });
	pc = tensor(self, &c, 8192, 2, (uint32_t[]){ M, N });
	pbias = tensor(self, &bias, 12288, 1, (uint32_t[]){ N });
	fill(pa, K * M, 1);
	fill(pb, K * N, 2);
	fill(pbias, N, 3);
	fill(pc, M * N, 4);
	for (i = 0; i < M; i++)
		for (j = 0; j < N; j++) {
			double s = 0;

			for (p = 0; p < K; p++)
				s += (double)pa[p * M + i] * pb[p * N + j];
			s = 0.5 * s + 0.25 * pc[i * N + j] + pbias[j];
			ref[i * N + j] = s > 0 ? s : 0;
		}
	g = (struct maia_gemm_args){ .a = &a, .b = &b, .c = &c, .bias = &bias, .alpha = 0.5f,
				     .beta = 0.25f, .activation = MAIA_ACT_RELU,
				     .flags = MAIA_GEMM_F_TRANS_A };
	ASSERT_EQ(0, maia_cmd_gemm_ex(self->cb, &g));

	/* Pointer-array batch: BATCH (A_i N x K stored as B^T) products. */
	ASSERT_EQ(0, maia_tensor_init(&a2, 0, MAIA_DTYPE_FP32, 2, (uint32_t[]){ M, K }));
	ASSERT_EQ(0, maia_tensor_init(&b2, 0, MAIA_DTYPE_FP32, 2, (uint32_t[]){ K, N }));
	ASSERT_EQ(0, maia_tensor_init(&c2, 0, MAIA_DTYPE_FP32, 2, (uint32_t[]){ M, N }));
	for (bt = 0; bt < BATCH; bt++) {
		float *ab = (float *)(self->cpu + 16384 + bt * 4096);
		float *bb = (float *)(self->cpu + 32768 + bt * 4096);

		fill(ab, M * K, 10 + bt);
		fill(bb, K * N, 20 + bt);
		ptrs[bt] = self->va + 16384 + bt * 4096;
		ptrs[8 + bt] = self->va + 32768 + bt * 4096;
		ptrs[16 + bt] = self->va + 65536 + bt * 4096;
		for (i = 0; i < M; i++)
			for (j = 0; j < N; j++) {
				double s = 0;

				for (p = 0; p < K; p++)
					s += (double)ab[i * K + p] * bb[p * N + j];
				ref2[bt * M * N + i * N + j] = s;
			}
	}
	g = (struct maia_gemm_args){ .a = &a2, .b = &b2, .c = &c2, .alpha = 1.0f };
	ASSERT_EQ(0, maia_cmd_gemm_batched(self->cb, &g, self->va + 262144, self->va + 262144 + 64,
					   self->va + 262144 + 128, BATCH));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_GT(1e-5, max_diff(pc, ref, M * N));
	for (bt = 0; bt < BATCH; bt++) {
		pc2 = (float *)(self->cpu + 65536 + bt * 4096);
		EXPECT_GT(1e-5, max_diff(pc2, ref2 + bt * M * N, M * N));
	}
}

TEST_F(dev, eltwise_scale_activation)
{
	enum { R = 4, C = 32 };
	struct maia_tensor_desc x, y, row, o1, o2, o3, o4;
	double r1[R * C], r2[R * C], r3[R * C], r4[R * C];
	float *px, *py, *prow, *p1, *p2, *p3, *p4;
	int i;

	px = tensor(self, &x, 0, 2, (uint32_t[]){ R, C });
	py = tensor(self, &y, 4096, 2, (uint32_t[]){ R, C });
	prow = tensor(self, &row, 8192, 2, (uint32_t[]){ 1, C });	/* broadcast over rows */
	p1 = tensor(self, &o1, 12288, 2, (uint32_t[]){ R, C });
	p2 = tensor(self, &o2, 16384, 2, (uint32_t[]){ R, C });
	p3 = tensor(self, &o3, 20480, 2, (uint32_t[]){ R, C });
	p4 = tensor(self, &o4, 24576, 2, (uint32_t[]){ R, C });
	fill(px, R * C, 1);
	fill(py, R * C, 2);
	fill(prow, C, 3);
	for (i = 0; i < R * C; i++) {
		r1[i] = (double)px[i] + py[i];
		r2[i] = (double)px[i] * prow[i % C];
		r3[i] = 3.0 * px[i] - 0.5;
		r4[i] = px[i] / (1.0 + exp(-(double)px[i]));
	}
	ASSERT_EQ(0, maia_cmd_add(self->cb, &x, &y, &o1, 0));
	ASSERT_EQ(0, maia_cmd_mul(self->cb, &x, &row, &o2, 0));
	ASSERT_EQ(0, maia_cmd_scale(self->cb, &x, &o3, 3.0f, -0.5f));
	ASSERT_EQ(0, maia_cmd_activation(self->cb, &x, &o4, MAIA_ACT_SILU));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_GT(1e-6, max_diff(p1, r1, R * C));
	EXPECT_GT(1e-6, max_diff(p2, r2, R * C));
	EXPECT_GT(1e-6, max_diff(p3, r3, R * C));
	EXPECT_GT(1e-5, max_diff(p4, r4, R * C));
}

TEST_F(dev, softmax_and_norms)
{
	enum { R = 4, D = 32 };
	struct maia_tensor_desc x, g, b, o1, o2, o3;
	double r1[R * D], r2[R * D], r3[R * D];
	float *px, *pg, *pb, *p1, *p2, *p3;
	int i, j;

	px = tensor(self, &x, 0, 2, (uint32_t[]){ R, D });
	pg = tensor(self, &g, 4096, 1, (uint32_t[]){ D });
	pb = tensor(self, &b, 8192, 1, (uint32_t[]){ D });
	p1 = tensor(self, &o1, 12288, 2, (uint32_t[]){ R, D });
	p2 = tensor(self, &o2, 16384, 2, (uint32_t[]){ R, D });
	p3 = tensor(self, &o3, 20480, 2, (uint32_t[]){ R, D });
	fill(px, R * D, 5);
	fill(pg, D, 6);
	fill(pb, D, 7);
	for (i = 0; i < R; i++) {
		double mx = -INFINITY, sum = 0, mean = 0, var = 0, ms = 0;

		/* causal with offset 1: row i sees columns 0..i+1 */
		for (j = 0; j <= i + 1; j++)
			mx = fmax(mx, 2.0 * px[i * D + j]);
		for (j = 0; j < D; j++) {
			r1[i * D + j] = j <= i + 1 ? exp(2.0 * px[i * D + j] - mx) : 0;
			sum += r1[i * D + j];
			mean += px[i * D + j];
			ms += (double)px[i * D + j] * px[i * D + j];
		}
		mean /= D;
		ms /= D;
		for (j = 0; j < D; j++) {
			r1[i * D + j] /= sum;
			var += (px[i * D + j] - mean) * (px[i * D + j] - mean);
		}
		var /= D;
		for (j = 0; j < D; j++) {
			r2[i * D + j] = (px[i * D + j] - mean) / sqrt(var + 1e-5) * pg[j] + pb[j];
			r3[i * D + j] = px[i * D + j] / sqrt(ms + 1e-5) * pg[j];
		}
	}
	ASSERT_EQ(0, maia_cmd_softmax(self->cb, &x, &o1, 2.0f, 1, MAIA_SOFTMAX_F_CAUSAL));
	ASSERT_EQ(0, maia_cmd_layernorm(self->cb, &x, &g, &b, &o2, 1e-5f));
	ASSERT_EQ(0, maia_cmd_rmsnorm(self->cb, &x, &g, &o3, 1e-5f));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_GT(1e-6, max_diff(p1, r1, R * D));
	EXPECT_GT(1e-5, max_diff(p2, r2, R * D));
	EXPECT_GT(1e-5, max_diff(p3, r3, R * D));
}

TEST_F(dev, attention)
{
	enum { H = 2, L = 8, D = 16 };
	struct maia_tensor_desc q, k, v, o;
	double ref[H * L * D];
	float *pq, *pk, *pv, *po;
	int h, i, j, c;

	pq = tensor(self, &q, 0, 4, (uint32_t[]){ 1, H, L, D });
	pk = tensor(self, &k, 4096, 4, (uint32_t[]){ 1, H, L, D });
	pv = tensor(self, &v, 8192, 4, (uint32_t[]){ 1, H, L, D });
	po = tensor(self, &o, 12288, 4, (uint32_t[]){ 1, H, L, D });
	fill(pq, H * L * D, 8);
	fill(pk, H * L * D, 9);
	fill(pv, H * L * D, 10);
	for (h = 0; h < H; h++)
		for (i = 0; i < L; i++) {
			double s[L], mx = -INFINITY, sum = 0;

			for (j = 0; j <= i; j++) {
				s[j] = 0;
				for (c = 0; c < D; c++)
					s[j] += (double)pq[(h * L + i) * D + c] * pk[(h * L + j) * D + c];
				s[j] /= sqrt(D);
				mx = fmax(mx, s[j]);
			}
			for (j = 0; j <= i; j++)
				sum += (s[j] = exp(s[j] - mx));
			for (c = 0; c < D; c++) {
				double acc = 0;

				for (j = 0; j <= i; j++)
					acc += s[j] / sum * pv[(h * L + j) * D + c];
				ref[(h * L + i) * D + c] = acc;
			}
		}
	ASSERT_EQ(0, maia_cmd_attention(self->cb, &q, &k, &v, &o, 0.0f, MAIA_ATTN_F_CAUSAL));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_GT(1e-5, max_diff(po, ref, H * L * D));
}

TEST_F(dev, quantize_dequantize_copy)
{
	enum { N = 64 };
	struct maia_tensor_desc x, q8, dq, bf, mx, mxd;
	float *px, *pdq, *pmxd, *scale_out = (float *)(self->cpu + 65536);
	int8_t *pq8;
	uint16_t *pbf;
	double amax = 0, s, ref[N];
	int i;

	px = tensor(self, &x, 0, 1, (uint32_t[]){ N });
	fill(px, N, 11);
	ASSERT_EQ(0, maia_tensor_init(&q8, self->va + 4096, MAIA_DTYPE_INT8, 1, (uint32_t[]){ N }));
	pq8 = (int8_t *)(self->cpu + 4096);
	pdq = tensor(self, &dq, 8192, 1, (uint32_t[]){ N });
	ASSERT_EQ(0, maia_tensor_init(&bf, self->va + 12288, MAIA_DTYPE_BF16, 1, (uint32_t[]){ N }));
	pbf = (uint16_t *)(self->cpu + 12288);
	ASSERT_EQ(0, maia_tensor_init(&mx, self->va + 16384, MAIA_DTYPE_MXFP8_E4M3, 1,
				      (uint32_t[]){ N }));
	ASSERT_EQ(0, maia_tensor_set_scale_addr(&mx, self->va + 20480));
	pmxd = tensor(self, &mxd, 24576, 1, (uint32_t[]){ N });

	ASSERT_EQ(0, maia_cmd_quantize(self->cb, &x, &q8, self->va + 65536, MAIA_QUANT_F_DYNAMIC));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	for (i = 0; i < N; i++)
		amax = fmax(amax, fabs(px[i]));
	s = amax / 127.0;
	EXPECT_GT(1e-6, fabs(*scale_out - s));
	for (i = 0; i < N; i++)
		EXPECT_GE(1, abs(pq8[i] - (int)lrint(px[i] / s)));
	/* Dequantize with the scale the device computed. */
	maia_cmdbuf_reset(self->cb);
	ASSERT_EQ(0, maia_tensor_set_scale(&q8, *scale_out));
	ASSERT_EQ(0, maia_cmd_dequantize(self->cb, &q8, &dq));
	ASSERT_EQ(0, maia_cmd_tensor_copy(self->cb, &x, &bf));
	ASSERT_EQ(0, maia_cmd_quantize(self->cb, &x, &mx, 0, 0));
	ASSERT_EQ(0, maia_cmd_dequantize(self->cb, &mx, &mxd));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	for (i = 0; i < N; i++) {
		uint32_t u = (uint32_t)pbf[i] << 16;
		/* the block scale the device chose, 2^(e - 127) */
		double bs = ldexp(1.0, (int)self->cpu[20480 + i / 32] - 127);
		float f;

		ref[i] = pq8[i] * (double)*scale_out;
		memcpy(&f, &u, 4);
		/* BF16 keeps 8 significant bits: round to nearest is within 2^-8 relative */
		EXPECT_GE(ldexp(fabs(px[i]), -8), fabs(f - px[i]));
		/*
		 * MXFP8 E4M3 keeps 4 significant bits (2^-4 relative), values
		 * above 448 * scale saturate (OCP picks the scale from the block
		 * maximum's exponent, so up to 1 - 448/512), and subnormals are
		 * 2^-9 * scale apart.
		 */
		EXPECT_GE(fmax(ldexp(fabs(px[i]), -4), fabs(px[i]) - 448 * bs) + ldexp(bs, -10),
			  fabs(pmxd[i] - px[i]));
	}
	EXPECT_GT(1e-6, max_diff(pdq, ref, N));
}

TEST_F(dev, reduce_and_transpose)
{
	enum { R = 3, C = 5 };
	struct maia_tensor_desc x, sum_rows, max_all, t;
	float *px, *ps, *pm, *pt;
	double rs[R], rm[1], rt[R * C];
	int i, j;

	px = tensor(self, &x, 0, 2, (uint32_t[]){ R, C });
	ps = tensor(self, &sum_rows, 4096, 2, (uint32_t[]){ R, 1 });
	pm = tensor(self, &max_all, 8192, 2, (uint32_t[]){ 1, 1 });
	pt = tensor(self, &t, 12288, 2, (uint32_t[]){ C, R });
	fill(px, R * C, 12);
	rm[0] = -INFINITY;
	for (i = 0; i < R; i++) {
		rs[i] = 0;
		for (j = 0; j < C; j++) {
			rs[i] += px[i * C + j];
			rm[0] = fmax(rm[0], px[i * C + j]);
			rt[j * R + i] = px[i * C + j];
		}
	}
	ASSERT_EQ(0, maia_cmd_reduce(self->cb, &x, &sum_rows, MAIA_REDUCE_SUM, 1u << 1));
	ASSERT_EQ(0, maia_cmd_reduce(self->cb, &x, &max_all, MAIA_REDUCE_MAX, 3));
	ASSERT_EQ(0, maia_cmd_transpose(self->cb, &x, &t, (uint8_t[]){ 1, 0 }));
	ASSERT_EQ(0, maia_run(self->dev, self->cb, 30 * SEC, NULL));
	EXPECT_GT(1e-6, max_diff(ps, rs, R));
	EXPECT_EQ(0, max_diff(pm, rm, 1));
	EXPECT_EQ(0, max_diff(pt, rt, R * C));
}

TEST_HARNESS_MAIN
