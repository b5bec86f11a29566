// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: BO_CREATE / BO_INFO / mmap / GEM_CLOSE in HBM and host
 * memory, with data written through one CPU mapping and read back through
 * another; every malformed request rejected with its errno and no output
 * written; handles and mmap offsets private to their file; HBM accounting
 * back to where it started once everything is closed; fdinfo.
 */
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

#define PAGE		4096ull
#define CANARY32	0xdeadbeefu

static int bo_create(int fd, __u64 size, __u32 flags, __u32 *handle)
{
	struct drm_maia_bo_create c = { .size = size, .flags = flags, .handle = CANARY32 };

	if (ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &c))
		return -errno;
	*handle = c.handle;
	return 0;
}

static int bo_info(int fd, __u32 handle, struct drm_maia_bo_info *info)
{
	struct drm_maia_bo_info i = { .handle = handle };

	if (ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &i))
		return -errno;
	*info = i;
	return 0;
}

static int gem_close(int fd, __u32 handle)
{
	struct drm_gem_close c = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c) ? -errno : 0;
}

/* A device attribute of the node, as a number; ~0 if unreadable. */
static unsigned long long dev_attr(const struct maia_node *node, const char *attr)
{
	char path[PATH_MAX], buf[64];

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/%s", node->minor, attr);
	if (maia_read_file(path, buf, sizeof(buf)))
		return ~0ull;
	return strtoull(buf, NULL, 0);
}

FIXTURE(bo) {
	struct maia_node node;
	int fd;
	__u64 hbm_size;
};

FIXTURE_SETUP(bo)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node (is maia.ko loaded and a maia device present?)");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", self->node.path, strerror(errno));
	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_HBM_SIZE, &self->hbm_size));
}

FIXTURE_TEARDOWN(bo)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Create, query, map, write, unmap, map again, read back, close. */
static void round_trip(struct __test_metadata *_metadata, int fd, __u32 flags, __u64 size)
{
	struct drm_maia_bo_info info = { 0 };
	__u32 handle = 0, *p;
	__u64 i, words = size / 4;

	ASSERT_EQ(0, bo_create(fd, size, flags, &handle));
	ASSERT_NE(0, handle);
	ASSERT_EQ(0, bo_info(fd, handle, &info));
	EXPECT_EQ(flags, info.flags);
	EXPECT_EQ(size, info.size);
	EXPECT_NE(0, info.mmap_offset);
	EXPECT_EQ(0, info.mmap_offset % PAGE);

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	/* A new buffer never shows what an earlier owner left. */
	for (i = 0; i < words; i++)
		if (p[i])
			break;
	EXPECT_EQ(words, i) TH_LOG("word %llu of a new BO is %#x", i, p[i]);
	for (i = 0; i < words; i++)
		p[i] = (__u32)(i * 2654435761u) ^ flags;
	ASSERT_EQ(0, munmap(p, size));

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap again: %s", strerror(errno));
	for (i = 0; i < words; i++)
		if (p[i] != ((__u32)(i * 2654435761u) ^ flags))
			break;
	EXPECT_EQ(words, i) TH_LOG("word %llu reads back %#x", i, p[i]);
	ASSERT_EQ(0, munmap(p, size));

	/* DRM maps whole objects: an offset must be the object's own. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, info.mmap_offset + PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	/* A shorter mapping from the start sees the start. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap of one page: %s", strerror(errno));
	EXPECT_EQ((__u32)(1 * 2654435761u) ^ flags, p[1]);
	ASSERT_EQ(0, munmap(p, PAGE));

	EXPECT_EQ(0, gem_close(fd, handle));
	EXPECT_EQ(-ENOENT, bo_info(fd, handle, &info));
}

TEST_F(bo, hbm_round_trip)
{
	round_trip(_metadata, self->fd, DRM_MAIA_BO_HBM, 64 * 1024);
}

TEST_F(bo, hbm_round_trip_large)
{
	/* 2 MiB + 4 KiB: a 2 MiB block and a small one. */
	round_trip(_metadata, self->fd, DRM_MAIA_BO_HBM, (2 << 20) + PAGE);
}

TEST_F(bo, host_round_trip)
{
	round_trip(_metadata, self->fd, DRM_MAIA_BO_HOST, 64 * 1024);
}

/*
 * A BO's dma-buf mapped at a page offset shows the BO from that page on,
 * for every page of a BO that spans buddy blocks of different sizes (HBM)
 * or shmem pages (host); a mapping past the end is refused.
 */
static void dmabuf_offsets(struct __test_metadata *_metadata, int fd, __u32 flags, __u64 size)
{
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR };
	const __u64 pages = size / PAGE;
	struct drm_maia_bo_info info = { 0 };
	__u32 handle = 0, *p;
	__u64 pg;

	ASSERT_EQ(0, bo_create(fd, size, flags, &handle));
	ASSERT_EQ(0, bo_info(fd, handle, &info));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (pg = 0; pg < pages; pg++)
		p[pg * PAGE / 4] = 0xd0000000u | (__u32)pg;
	ASSERT_EQ(0, munmap(p, size));

	prime.handle = handle;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime)) TH_LOG("%s", strerror(errno));
	for (pg = 0; pg < pages; pg += pg < 4 ? 1 : pages / 7 + 1) {
		__u64 len = (pages - pg) * PAGE < 3 * PAGE ? (pages - pg) * PAGE : 3 * PAGE;

		p = mmap(NULL, len, PROT_READ, MAP_SHARED, prime.fd, pg * PAGE);
		ASSERT_NE(MAP_FAILED, p) TH_LOG("dma-buf mmap at page %llu: %s", pg, strerror(errno));
		EXPECT_EQ(0xd0000000u | (__u32)pg, p[0]) TH_LOG("page %llu of the dma-buf", pg);
		if (len > PAGE)
			EXPECT_EQ(0xd0000000u | (__u32)(pg + 1), p[PAGE / 4]);
		ASSERT_EQ(0, munmap(p, len));
	}
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, prime.fd, (pages - 1) * PAGE);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("a dma-buf mapping past the end");
	if (p != MAP_FAILED)
		munmap(p, 2 * PAGE);
	close(prime.fd);
	EXPECT_EQ(0, gem_close(fd, handle));
}

TEST_F(bo, hbm_dmabuf_mmap_at_offset)
{
	/* 2 MiB + 12 KiB: a 2 MiB block, then smaller ones. */
	dmabuf_offsets(_metadata, self->fd, DRM_MAIA_BO_HBM, (2 << 20) + 3 * PAGE);
}

TEST_F(bo, host_dmabuf_mmap_at_offset)
{
	dmabuf_offsets(_metadata, self->fd, DRM_MAIA_BO_HOST, 64 * PAGE);
}

/*
 * HBM freed by one owner and allocated by the next reads as zeros: the
 * driver clears it (with the device) before handing it out.
 */
TEST_F(bo, reused_hbm_is_cleared)
{
	static const __u64 sizes[] = { PAGE, 64 * 1024, 2 << 20, (4 << 20) + 3 * PAGE };
	struct drm_maia_bo_info info = { 0 };
	unsigned int i, round;
	__u32 handle = 0;
	__u64 j;
	__u32 *p;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (round = 0; round < 2; round++) {
			ASSERT_EQ(0, bo_create(self->fd, sizes[i], DRM_MAIA_BO_HBM, &handle));
			ASSERT_EQ(0, bo_info(self->fd, handle, &info));
			p = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
				 info.mmap_offset);
			ASSERT_NE(MAP_FAILED, p);
			for (j = 0; j < sizes[i] / 4; j++)
				if (p[j])
					break;
			EXPECT_EQ(sizes[i] / 4, j) TH_LOG("size %llu round %u: word %llu is %#x",
							  (unsigned long long)sizes[i], round,
							  (unsigned long long)j, p[j]);
			/* Leave a mess for the next owner. */
			memset(p, 0xa5, sizes[i]);
			ASSERT_EQ(0, munmap(p, sizes[i]));
			ASSERT_EQ(0, gem_close(self->fd, handle));
		}
	}
}

TEST_F(bo, size_rounds_up_to_4k)
{
	struct drm_maia_bo_info info = { 0 };
	__u32 handle = 0;

	ASSERT_EQ(0, bo_create(self->fd, 1, DRM_MAIA_BO_HBM, &handle));
	ASSERT_EQ(0, bo_info(self->fd, handle, &info));
	EXPECT_EQ(PAGE, info.size);
	ASSERT_EQ(0, bo_create(self->fd, PAGE + 1, DRM_MAIA_BO_HOST, &handle));
	ASSERT_EQ(0, bo_info(self->fd, handle, &info));
	EXPECT_EQ(2 * PAGE, info.size);
}

/* Fails with `err` and leaves the output handle alone. */
static void expect_create_fails(struct __test_metadata *_metadata, int fd,
				__u64 size, __u32 flags, int err)
{
	struct drm_maia_bo_create c = { .size = size, .flags = flags, .handle = CANARY32 };

	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &c))
		TH_LOG("size %#llx flags %#x succeeded", (unsigned long long)size, flags);
	EXPECT_EQ(err, errno) TH_LOG("size %#llx flags %#x", (unsigned long long)size, flags);
	EXPECT_EQ(CANARY32, c.handle);
	EXPECT_EQ(size, c.size);
	EXPECT_EQ(flags, c.flags);
}

TEST_F(bo, create_rejects_bad_sizes)
{
	static const __u32 placements[] = { DRM_MAIA_BO_HBM, DRM_MAIA_BO_HOST };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		expect_create_fails(_metadata, self->fd, 0, placements[i], EINVAL);
		expect_create_fails(_metadata, self->fd, UINT64_MAX, placements[i], EINVAL);
		expect_create_fails(_metadata, self->fd, UINT64_MAX - PAGE + 2,
				    placements[i], EINVAL);
		expect_create_fails(_metadata, self->fd, 1ull << 62, placements[i], EINVAL);
	}
	expect_create_fails(_metadata, self->fd, self->hbm_size, DRM_MAIA_BO_HBM, EINVAL);
	expect_create_fails(_metadata, self->fd, self->hbm_size + PAGE, DRM_MAIA_BO_HBM, EINVAL);
}

TEST_F(bo, create_rejects_bad_flags)
{
	static const __u32 flags[] = {
		0, DRM_MAIA_BO_HBM | DRM_MAIA_BO_HOST, 1u << 2, 1u << 31,
		DRM_MAIA_BO_HBM | (1u << 5), DRM_MAIA_BO_HOST | (1u << 16),
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++)
		expect_create_fails(_metadata, self->fd, PAGE, flags[i], EINVAL);
}

TEST_F(bo, hbm_exhaustion_is_enomem)
{
	__u64 half = self->hbm_size / 2;
	__u32 a = 0, b = 0;

	/* Fits by size, but this file's page tables already use some HBM. */
	expect_create_fails(_metadata, self->fd, self->hbm_size - PAGE, DRM_MAIA_BO_HBM, ENOMEM);

	ASSERT_EQ(0, bo_create(self->fd, half, DRM_MAIA_BO_HBM, &a));
	expect_create_fails(_metadata, self->fd, half, DRM_MAIA_BO_HBM, ENOMEM);
	/* Freeing makes the room usable again. */
	ASSERT_EQ(0, gem_close(self->fd, a));
	ASSERT_EQ(0, bo_create(self->fd, half, DRM_MAIA_BO_HBM, &b));
	EXPECT_EQ(0, gem_close(self->fd, b));
}

TEST_F(bo, info_rejects_bad_handles)
{
	struct drm_maia_bo_info info = {
		.handle = 12345, .flags = CANARY32, .size = 77, .mmap_offset = 88,
	};

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_BO_INFO, &info));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(CANARY32, info.flags);
	EXPECT_EQ(77, info.size);
	EXPECT_EQ(88, info.mmap_offset);
	info.handle = 0;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_BO_INFO, &info));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(bo, close_twice_fails)
{
	__u32 handle = 0;

	ASSERT_EQ(0, bo_create(self->fd, PAGE, DRM_MAIA_BO_HOST, &handle));
	EXPECT_EQ(0, gem_close(self->fd, handle));
	EXPECT_EQ(-EINVAL, gem_close(self->fd, handle));
}

/* Handles and mmap offsets belong to the file that created them. */
TEST_F(bo, foreign_handle_and_mmap_offset)
{
	struct drm_maia_bo_info info = { 0 }, other = { 0 };
	__u32 handle = 0;
	void *p;
	int fd2;

	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(self->fd, 2 * PAGE, DRM_MAIA_BO_HBM, &handle));
	ASSERT_EQ(0, bo_info(self->fd, handle, &info));

	EXPECT_EQ(-ENOENT, bo_info(fd2, handle, &other));
	EXPECT_EQ(-EINVAL, gem_close(fd2, handle));

	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, info.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	if (p != MAP_FAILED)
		munmap(p, 2 * PAGE);

	/* Still there and usable in its own file. */
	EXPECT_EQ(0, bo_info(self->fd, handle, &other));
	close(fd2);
}

TEST_F(bo, mmap_past_the_end_fails)
{
	static const __u32 placements[] = { DRM_MAIA_BO_HBM, DRM_MAIA_BO_HOST };
	struct drm_maia_bo_info info = { 0 };
	unsigned int i;
	__u32 handle = 0;
	void *p;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, bo_create(self->fd, 2 * PAGE, placements[i], &handle));
		ASSERT_EQ(0, bo_info(self->fd, handle, &info));

		p = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, self->fd, info.mmap_offset);
		EXPECT_EQ(MAP_FAILED, p)
			TH_LOG("placement %#x: 3 pages of 2 mapped", placements[i]);
		if (p != MAP_FAILED)
			munmap(p, 3 * PAGE);
		p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd,
			 info.mmap_offset + PAGE);
		EXPECT_EQ(MAP_FAILED, p)
			TH_LOG("placement %#x: pages 1-2 of 2 mapped", placements[i]);
		if (p != MAP_FAILED)
			munmap(p, 2 * PAGE);
		/* Copy-on-write of device memory is refused too. */
		if (placements[i] == DRM_MAIA_BO_HBM) {
			p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
				 info.mmap_offset);
			EXPECT_EQ(MAP_FAILED, p);
			if (p != MAP_FAILED)
				munmap(p, PAGE);
		}
		EXPECT_EQ(0, gem_close(self->fd, handle));
	}
}

/* A mapping keeps the BO alive after its handle is closed. */
TEST_F(bo, mmap_outlives_handle)
{
	struct drm_maia_bo_info info = { 0 };
	__u32 handle = 0;
	__u32 *p;

	ASSERT_EQ(0, bo_create(self->fd, PAGE, DRM_MAIA_BO_HBM, &handle));
	ASSERT_EQ(0, bo_info(self->fd, handle, &info));
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, gem_close(self->fd, handle));
	p[0] = 0x12345678;
	p[1023] = 0x9abcdef0;
	EXPECT_EQ(0x12345678, p[0]);
	EXPECT_EQ(0x9abcdef0, p[1023]);
	EXPECT_EQ(0, munmap(p, PAGE));
}

TEST_F(bo, hbm_used_returns_to_baseline)
{
	unsigned long long base, used, free_bytes;
	struct drm_maia_bo_info info = { 0 };
	__u32 handle[4] = { 0 };
	void *p;
	int i, fd2;

	base = dev_attr(&self->node, "hbm_used_bytes");
	free_bytes = dev_attr(&self->node, "hbm_free_bytes");
	ASSERT_NE(~0ull, base);
	ASSERT_NE(~0ull, free_bytes);
	EXPECT_EQ(self->hbm_size, base + free_bytes);

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, bo_create(self->fd, (1 << 20) << i, DRM_MAIA_BO_HBM, &handle[i]));
	used = dev_attr(&self->node, "hbm_used_bytes");
	EXPECT_EQ(base + (15ull << 20), used);

	ASSERT_EQ(0, bo_info(self->fd, handle[0], &info));
	p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, gem_close(self->fd, handle[i]));
	/* The mapping still holds the first one. */
	EXPECT_EQ(base + (1ull << 20), dev_attr(&self->node, "hbm_used_bytes"));
	EXPECT_EQ(0, munmap(p, 1 << 20));
	EXPECT_EQ(base, dev_attr(&self->node, "hbm_used_bytes"));

	/* A whole file: its BOs and page tables go at close. */
	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(fd2, 3 << 20, DRM_MAIA_BO_HBM, &handle[0]));
	EXPECT_LT(base + (3ull << 20) - 1, dev_attr(&self->node, "hbm_used_bytes"));
	close(fd2);
	EXPECT_EQ(base, dev_attr(&self->node, "hbm_used_bytes"));
}

TEST_F(bo, fdinfo_memory_stats)
{
	struct drm_maia_bo_info info = { 0 };
	__u32 hbm = 0, host = 0;
	void *p;

	ASSERT_EQ(0, bo_create(self->fd, 1 << 20, DRM_MAIA_BO_HBM, &hbm));
	ASSERT_EQ(0, bo_create(self->fd, 2 << 20, DRM_MAIA_BO_HOST, &host));
	EXPECT_EQ(1 << 20, maia_fdinfo_bytes(self->fd, "drm-total-hbm"));
	EXPECT_EQ(1 << 20, maia_fdinfo_bytes(self->fd, "drm-resident-hbm"));
	EXPECT_EQ(2 << 20, maia_fdinfo_bytes(self->fd, "drm-total-host"));
	/* shmem pages come on first use */
	EXPECT_EQ(0, maia_fdinfo_bytes(self->fd, "drm-resident-host"));

	ASSERT_EQ(0, bo_info(self->fd, host, &info));
	p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, 2 << 20);
	EXPECT_EQ(2 << 20, maia_fdinfo_bytes(self->fd, "drm-resident-host"));
	munmap(p, 2 << 20);

	EXPECT_EQ(0, gem_close(self->fd, hbm));
	EXPECT_EQ(0, gem_close(self->fd, host));
	EXPECT_EQ(0, maia_fdinfo_bytes(self->fd, "drm-total-hbm"));
	EXPECT_EQ(0, maia_fdinfo_bytes(self->fd, "drm-total-host"));
}

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(sigbus_jmp, 1);
}

/*
 * Unbinding the device under a process that has HBM mapped (CPU and
 * device): the CPU mapping stops reaching the BAR (SIGBUS), ioctls fail
 * with ENODEV, closing the file afterwards is clean, and the device binds
 * again. Runs last: it rebinds the driver.
 */
TEST_F(bo, unbind_with_live_mappings)
{
	struct drm_maia_vm_bind bind = { .op = DRM_MAIA_VM_MAP, .va = DRM_MAIA_VA_START,
					 .size = PAGE };
	struct drm_maia_bo_info info = { 0 };
	/* volatile: the read after unbind must really happen (and fault). */
	volatile __u32 *p;
	__u32 handle = 0, h2 = 0;
	int faulted;

	if (geteuid())
		SKIP(return, "needs root to unbind the driver");
	ASSERT_EQ(0, bo_create(self->fd, PAGE, DRM_MAIA_BO_HBM, &handle));
	ASSERT_EQ(0, bo_info(self->fd, handle, &info));
	bind.handle = handle;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_VM_BIND, &bind));
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 42;
	ASSERT_EQ(42, p[0]);

	ASSERT_EQ(0, maia_write_file("/sys/bus/pci/drivers/maia/unbind", self->node.bdf));
	signal(SIGBUS, on_sigbus);
	faulted = sigsetjmp(sigbus_jmp, 1);
	if (!faulted)
		(void)p[0];
	signal(SIGBUS, SIG_DFL);
	EXPECT_TRUE(faulted) TH_LOG("HBM still mapped after unbind");
	EXPECT_EQ(-ENODEV, bo_create(self->fd, PAGE, DRM_MAIA_BO_HBM, &h2));
	close(self->fd);
	self->fd = -1;

	ASSERT_EQ(0, maia_write_file("/sys/bus/pci/drivers/maia/bind", self->node.bdf));
	EXPECT_LE(1, maia_wait_nodes(1, 20000));
}

TEST_HARNESS_MAIN
