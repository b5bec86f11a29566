// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device address spaces: VM_BIND MAP/UNMAP of HBM and host buffer objects.
 * Mappings may not overlap, must be 4 KiB aligned, inside
 * [DRM_MAIA_VA_START, DRM_MAIA_VA_END) and inside their BO; UNMAP names
 * exactly one mapping; a mapping keeps its BO alive; page tables and BOs
 * are freed at close; each file has its own ASID, up to the device's limit.
 * Through the device: data moves host -> HBM -> host through the page
 * tables (4 KiB and 2 MiB pages, BO offsets); a read-only mapping, an
 * unmapped VA and another file's VA fault without touching the memory.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <maia/hw/cmd.h>
#include <maia/hw/queue.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

#define PAGE		4096ull
#define MIB		(1ull << 20)
#define VA0		DRM_MAIA_VA_START

static int bo_create(int fd, __u64 size, __u32 flags, __u32 *handle)
{
	struct drm_maia_bo_create c = { .size = size, .flags = flags };

	if (ioctl(fd, DRM_IOCTL_MAIA_BO_CREATE, &c))
		return -errno;
	*handle = c.handle;
	return 0;
}

static int gem_close(int fd, __u32 handle)
{
	struct drm_gem_close c = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c) ? -errno : 0;
}

static int vm_bind(int fd, __u32 op, __u32 handle, __u64 va, __u64 offset, __u64 size,
		   __u32 flags)
{
	struct drm_maia_vm_bind b = {
		.op = op, .handle = handle, .va = va, .offset = offset, .size = size,
		.flags = flags,
	};

	return ioctl(fd, DRM_IOCTL_MAIA_VM_BIND, &b) ? -errno : 0;
}

static int map(int fd, __u32 handle, __u64 va, __u64 offset, __u64 size)
{
	return vm_bind(fd, DRM_MAIA_VM_MAP, handle, va, offset, size, 0);
}

static int unmap(int fd, __u64 va, __u64 size)
{
	return vm_bind(fd, DRM_MAIA_VM_UNMAP, 0, va, 0, size, 0);
}

static unsigned long long hbm_used(const struct maia_node *node)
{
	char path[PATH_MAX], buf[64];

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/hbm_used_bytes",
		 node->minor);
	if (maia_read_file(path, buf, sizeof(buf)))
		return ~0ull;
	return strtoull(buf, NULL, 0);
}

FIXTURE(vm) {
	struct maia_node node;
	int fd;
	__u32 hbm;	/* 4 MiB HBM BO */
	__u32 host;	/* 1 MiB host BO */
};

FIXTURE_SETUP(vm)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node (is maia.ko loaded and a maia device present?)");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", self->node.path, strerror(errno));
	ASSERT_EQ(0, bo_create(self->fd, 4 * MIB, DRM_MAIA_BO_HBM, &self->hbm));
	ASSERT_EQ(0, bo_create(self->fd, MIB, DRM_MAIA_BO_HOST, &self->host));
}

FIXTURE_TEARDOWN(vm)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(vm, map_unmap_hbm_and_host)
{
	EXPECT_EQ(0, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
	EXPECT_EQ(0, map(self->fd, self->host, VA0 + 4 * MIB, 0, MIB));
	/* The same BO again elsewhere, partly, read-only. */
	EXPECT_EQ(0, vm_bind(self->fd, DRM_MAIA_VM_MAP, self->hbm, VA0 + 64 * MIB,
			     2 * MIB, 2 * MIB, DRM_MAIA_VM_READONLY));
	EXPECT_EQ(0, map(self->fd, self->host, VA0 + 80 * MIB + PAGE, PAGE, 3 * PAGE));
	/* At the very top of the range. */
	EXPECT_EQ(0, map(self->fd, self->host, DRM_MAIA_VA_END - MIB, 0, MIB));

	EXPECT_EQ(0, unmap(self->fd, VA0, 4 * MIB));
	EXPECT_EQ(0, unmap(self->fd, VA0 + 4 * MIB, MIB));
	EXPECT_EQ(0, unmap(self->fd, VA0 + 64 * MIB, 2 * MIB));
	EXPECT_EQ(0, unmap(self->fd, VA0 + 80 * MIB + PAGE, 3 * PAGE));
	EXPECT_EQ(0, unmap(self->fd, DRM_MAIA_VA_END - MIB, MIB));
	/* The range is free again. */
	EXPECT_EQ(0, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
	EXPECT_EQ(0, unmap(self->fd, VA0, 4 * MIB));
}

TEST_F(vm, overlapping_maps_rejected)
{
	ASSERT_EQ(0, map(self->fd, self->hbm, VA0 + 2 * MIB, 0, 2 * MIB));
	EXPECT_EQ(-EEXIST, map(self->fd, self->hbm, VA0 + 2 * MIB, 0, 2 * MIB));
	EXPECT_EQ(-EEXIST, map(self->fd, self->hbm, VA0 + 3 * MIB, 0, 2 * MIB));
	EXPECT_EQ(-EEXIST, map(self->fd, self->hbm, VA0 + MIB, 0, 2 * MIB));
	EXPECT_EQ(-EEXIST, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
	EXPECT_EQ(-EEXIST, map(self->fd, self->host, VA0 + 4 * MIB - PAGE, 0, PAGE));
	/* Touching is not overlapping. */
	EXPECT_EQ(0, map(self->fd, self->host, VA0 + 4 * MIB, 0, MIB));
	EXPECT_EQ(0, map(self->fd, self->host, VA0 + 2 * MIB - PAGE, 0, PAGE));
}

TEST_F(vm, unaligned_and_out_of_range_rejected)
{
	static const struct { __u64 va, offset, size; } bad[] = {
		{ VA0 + 1, 0, PAGE },			/* unaligned va */
		{ VA0 + 2048, 0, PAGE },
		{ VA0, 1, PAGE },			/* unaligned offset */
		{ VA0, 0, 100 },			/* unaligned size */
		{ VA0, 0, PAGE + 1 },
		{ VA0, 0, 0 },				/* empty */
		{ VA0 - PAGE, 0, PAGE },		/* below the range */
		{ 0, 0, PAGE },
		{ VA0 - PAGE, 0, 2 * PAGE },		/* straddles the start */
		{ DRM_MAIA_VA_END, 0, PAGE },		/* above */
		{ DRM_MAIA_VA_END - PAGE, 0, 2 * PAGE },/* straddles the end */
		{ 0xfffffffffffff000ull, 0, PAGE },
		{ VA0, 0, 0xfffffffffffff000ull },	/* va + size wraps */
		{ VA0, 4 * MIB, PAGE },			/* offset at the end of the BO */
		{ VA0, 3 * MIB, 2 * MIB },		/* offset + size past the end */
		{ VA0, 0, 4 * MIB + PAGE },
		{ VA0, 0xfffffffffffff000ull, 2 * PAGE }, /* offset + size wraps */
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(-EINVAL, map(self->fd, self->hbm, bad[i].va, bad[i].offset, bad[i].size))
			TH_LOG("case %u: va %#llx offset %#llx size %#llx", i,
			       (unsigned long long)bad[i].va, (unsigned long long)bad[i].offset,
			       (unsigned long long)bad[i].size);
	/* None of them left a mapping behind. */
	EXPECT_EQ(0, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
}

TEST_F(vm, bad_fields_rejected)
{
	struct drm_maia_vm_bind b = {
		.op = DRM_MAIA_VM_MAP, .handle = self->hbm, .va = VA0, .size = PAGE,
	};
	struct drm_maia_vm_bind ref;

	b.pad = 1;
	ref = b;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_MAIA_VM_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, memcmp(&b, &ref, sizeof(b)));
	b.pad = 0;

	EXPECT_EQ(-EINVAL, vm_bind(self->fd, DRM_MAIA_VM_MAP, self->hbm, VA0, 0, PAGE, 1u << 1));
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, DRM_MAIA_VM_MAP, self->hbm, VA0, 0, PAGE, 1u << 31));
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, 2, self->hbm, VA0, 0, PAGE, 0));
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, ~0u, self->hbm, VA0, 0, PAGE, 0));

	ASSERT_EQ(0, map(self->fd, self->hbm, VA0, 0, PAGE));
	/* UNMAP takes no handle, offset or flags. */
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, DRM_MAIA_VM_UNMAP, self->hbm, VA0, 0, PAGE, 0));
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, DRM_MAIA_VM_UNMAP, 0, VA0, PAGE, PAGE, 0));
	EXPECT_EQ(-EINVAL, vm_bind(self->fd, DRM_MAIA_VM_UNMAP, 0, VA0, 0, PAGE,
				   DRM_MAIA_VM_READONLY));
	EXPECT_EQ(0, unmap(self->fd, VA0, PAGE));
}

TEST_F(vm, unmap_must_name_one_mapping)
{
	ASSERT_EQ(0, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
	EXPECT_EQ(-ENOENT, unmap(self->fd, VA0 + 8 * MIB, PAGE));	/* nothing there */
	EXPECT_EQ(-ENOENT, unmap(self->fd, VA0, 2 * MIB));		/* part of it */
	EXPECT_EQ(-ENOENT, unmap(self->fd, VA0 + PAGE, 4 * MIB - PAGE));
	EXPECT_EQ(-ENOENT, unmap(self->fd, VA0, 8 * MIB));		/* more than it */
	EXPECT_EQ(0, unmap(self->fd, VA0, 4 * MIB));
	EXPECT_EQ(-ENOENT, unmap(self->fd, VA0, 4 * MIB));		/* already gone */
}

TEST_F(vm, bad_and_foreign_handles_rejected)
{
	__u32 other = 0;
	int fd2;

	EXPECT_EQ(-ENOENT, map(self->fd, 0, VA0, 0, PAGE));
	EXPECT_EQ(-ENOENT, map(self->fd, 9999, VA0, 0, PAGE));

	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	/* Until fd2 has a handle numbered past this file's last one. */
	do {
		ASSERT_EQ(0, bo_create(fd2, 8 * MIB, DRM_MAIA_BO_HBM, &other));
	} while (other <= self->host);
	EXPECT_EQ(-ENOENT, map(self->fd, other, VA0, 0, PAGE));
	/* And fd2 cannot map this file's BOs. */
	EXPECT_EQ(-ENOENT, map(fd2, self->host + 10, VA0, 0, PAGE));
	EXPECT_EQ(0, map(fd2, other, VA0, 0, 8 * MIB));
	close(fd2);
}

/* Address spaces are per file: the same VA is free in another file. */
TEST_F(vm, address_spaces_are_per_file)
{
	__u32 other = 0;
	int fd2;

	ASSERT_EQ(0, map(self->fd, self->hbm, VA0, 0, 4 * MIB));
	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(fd2, 4 * MIB, DRM_MAIA_BO_HBM, &other));
	EXPECT_EQ(0, map(fd2, other, VA0, 0, 4 * MIB));
	EXPECT_EQ(0, unmap(fd2, VA0, 4 * MIB));
	close(fd2);
	EXPECT_EQ(-EEXIST, map(self->fd, self->hbm, VA0, 0, PAGE));
}

/* A mapping holds its BO; the memory goes when the mapping does. */
TEST_F(vm, mapping_keeps_bo_alive)
{
	unsigned long long before, after_close;
	__u32 big = 0;

	before = hbm_used(&self->node);
	ASSERT_NE(~0ull, before);
	ASSERT_EQ(0, bo_create(self->fd, 16 * MIB, DRM_MAIA_BO_HBM, &big));
	ASSERT_EQ(0, map(self->fd, big, VA0 + 32 * MIB, 0, 16 * MIB));
	ASSERT_EQ(0, gem_close(self->fd, big));
	after_close = hbm_used(&self->node);
	/* The BO and the page tables of the mapping are still there. */
	EXPECT_LE(before + 16 * MIB, after_close);
	EXPECT_EQ(0, unmap(self->fd, VA0 + 32 * MIB, 16 * MIB));
	/* BO and the tables the mapping needed are gone. */
	EXPECT_EQ(before, hbm_used(&self->node));
}

/* Everything a file had on the device goes at close, mapped or not. */
TEST_F(vm, close_frees_everything)
{
	unsigned long long base;
	__u32 h[3] = { 0 };
	int fd2, i;

	base = hbm_used(&self->node);
	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	EXPECT_LT(base, hbm_used(&self->node));	/* its root table */
	ASSERT_EQ(0, bo_create(fd2, 6 * MIB, DRM_MAIA_BO_HBM, &h[0]));
	ASSERT_EQ(0, bo_create(fd2, 2 * MIB, DRM_MAIA_BO_HOST, &h[1]));
	ASSERT_EQ(0, bo_create(fd2, 64 * 1024, DRM_MAIA_BO_HBM, &h[2]));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, map(fd2, h[0], VA0 + (__u64)i * (1ull << 30), 0, 6 * MIB));
	ASSERT_EQ(0, map(fd2, h[1], DRM_MAIA_VA_END - 2 * MIB, 0, 2 * MIB));
	ASSERT_EQ(0, map(fd2, h[2], VA0 + 0x123456000ull, 0, 64 * 1024));
	close(fd2);
	EXPECT_EQ(base, hbm_used(&self->node));
}

/*
 * 2 MiB pages where the VA and the HBM block allow: mapping 64 MiB of HBM
 * at a 2 MiB aligned VA needs only the L1 and L2 tables, the same BO at a
 * 4 KiB aligned VA needs an L3 table per 2 MiB as well. (Page tables live
 * in HBM, so hbm_used_bytes counts them.)
 */
TEST_F(vm, hbm_mappings_use_2mib_pages)
{
	unsigned long long used0, used1, used2;
	__u32 big = 0;
	int fd2;

	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(fd2, 64 * MIB, DRM_MAIA_BO_HBM, &big));
	used0 = hbm_used(&self->node);
	ASSERT_EQ(0, map(fd2, big, VA0, 0, 64 * MIB));
	used1 = hbm_used(&self->node);
	EXPECT_EQ(2 * PAGE, used1 - used0);
	ASSERT_EQ(0, map(fd2, big, VA0 + (1ull << 30) + PAGE, 0, 64 * MIB));
	used2 = hbm_used(&self->node);
	/* A new L2 table and 33 L3 tables (the range straddles 33 2 MiB slots). */
	EXPECT_EQ(34 * PAGE, used2 - used1);
	EXPECT_EQ(0, unmap(fd2, VA0, 64 * MIB));
	EXPECT_EQ(0, unmap(fd2, VA0 + (1ull << 30) + PAGE, 64 * MIB));
	EXPECT_EQ(used0, hbm_used(&self->node));
	close(fd2);
}

static __u64 rnd(__u64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* A value that is often near the edges VM_BIND checks. */
static __u64 edgy(__u64 *state, const __u64 *edges, unsigned int n)
{
	__u64 r = rnd(state);
	__u64 v = edges[r % n];

	switch ((r >> 8) % 4) {
	case 0:
		return v;
	case 1:
		return v + PAGE;
	case 2:
		return v - PAGE;
	default:
		return v + ((r >> 16) % 4096);
	}
}

/*
 * Thousands of random, mostly invalid VM_BINDs on a file with a few BOs:
 * every call returns (0 or an errno), and closing the file gives back all
 * the HBM it used, page tables included.
 */
TEST_F(vm, random_binds_leave_nothing_behind)
{
	static const __u64 vas[] = {
		0, VA0, VA0 + 2 * MIB, VA0 + (1ull << 30), DRM_MAIA_VA_END - 4 * MIB,
		DRM_MAIA_VA_END, 1ull << 48, ~0ull - 0xfff,
	};
	static const __u64 sizes[] = { 0, PAGE, 64 * 1024, 2 * MIB, 4 * MIB, 1ull << 40, ~0ull };
	static const __u64 offsets[] = { 0, PAGE, MIB, 4 * MIB, ~0ull - 0xfff };
	unsigned long long base;
	__u64 state = 0x9e3779b97f4a7c15ull;
	int i, fd2, ok = 0, errs = 0;
	__u32 h[3] = { 0 };

	base = hbm_used(&self->node);
	fd2 = maia_open_node(&self->node);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(fd2, 4 * MIB, DRM_MAIA_BO_HBM, &h[0]));
	ASSERT_EQ(0, bo_create(fd2, 64 * 1024, DRM_MAIA_BO_HBM, &h[1]));
	ASSERT_EQ(0, bo_create(fd2, MIB, DRM_MAIA_BO_HOST, &h[2]));

	for (i = 0; i < 20000; i++) {
		__u64 r = rnd(&state);
		struct drm_maia_vm_bind b = {
			.op = r % 8 ? r % 2 : (__u32)(r >> 32),
			.handle = (r >> 3) % 16 ? h[((r >> 5) % 3)] : (__u32)(r >> 40) % 8,
			.va = edgy(&state, vas, ARRAY_SIZE(vas)),
			.offset = (r >> 9) % 4 ? 0 : edgy(&state, offsets, ARRAY_SIZE(offsets)),
			.size = edgy(&state, sizes, ARRAY_SIZE(sizes)),
			.flags = (r >> 12) % 8 ? ((r >> 15) & 1) : (__u32)(r >> 20),
			.pad = (r >> 18) % 32 ? 0 : 1,
		};

		if (b.op == DRM_MAIA_VM_UNMAP && (r >> 22) % 4) {
			b.handle = 0;
			b.offset = 0;
			b.flags = 0;
		}
		if (ioctl(fd2, DRM_IOCTL_MAIA_VM_BIND, &b) == 0) {
			ok++;
		} else {
			errs++;
			ASSERT_TRUE(errno == EINVAL || errno == ENOENT || errno == EEXIST)
				TH_LOG("call %d: errno %d", i, errno);
		}
	}
	TH_LOG("%d binds succeeded, %d failed", ok, errs);
	EXPECT_LT(0, ok);
	close(fd2);
	EXPECT_EQ(base, hbm_used(&self->node));
	/* The device still works for everyone else. */
	EXPECT_EQ(0, maia_ping(self->fd, 5, NULL));
}

/* One ASID per open file; the 256th file is refused until one closes. */
TEST_F(vm, asids_run_out_and_come_back)
{
	int fds[300], n, i, err = 0;

	for (n = 0; n < 300; n++) {
		fds[n] = maia_open_node(&self->node);
		if (fds[n] < 0) {
			err = errno;
			break;
		}
	}
	EXPECT_GT(n, 200);
	EXPECT_LT(n, 255);	/* this fixture holds one ASID too */
	EXPECT_EQ(EBUSY, err);
	for (i = 0; i < n; i++)
		close(fds[i]);
	fds[0] = maia_open_node(&self->node);
	EXPECT_LE(0, fds[0]);
	if (fds[0] >= 0)
		close(fds[0]);
}

/* --- through the device ----------------------------------------------- */

struct bo {
	__u32 handle;
	__u64 size;
	void *cpu;
};

static void bo_new(struct __test_metadata *_metadata, int fd, __u64 size, __u32 flags,
		   struct bo *bo)
{
	struct drm_maia_bo_info info = { 0 };

	bo->size = size;
	ASSERT_EQ(0, bo_create(fd, size, flags, &bo->handle));
	info.handle = bo->handle;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &info));
	bo->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, bo->cpu);
}

/* Appends commands to a command buffer. */
struct cmdbuf {
	struct bo bo;
	__u64 used;
};

static void *cmd_add(struct cmdbuf *cb, __u16 opcode, __u32 size)
{
	struct maia_cmd_header *h = (void *)((char *)cb->bo.cpu + cb->used);

	memset(h, 0, size);
	h->opcode = opcode;
	h->size = size;
	cb->used += size;
	return h;
}

static void cmd_copy(struct cmdbuf *cb, __u64 src, __u64 dst, __u64 len)
{
	struct maia_cmd_dma_copy *c = cmd_add(cb, MAIA_OP_DMA_COPY, sizeof(*c));

	c->src = src;
	c->dst = dst;
	c->width = len;
	c->height = 1;
}

static void cmd_fill(struct cmdbuf *cb, __u64 dst, __u64 len, __u32 pattern)
{
	struct maia_cmd_fill *c = cmd_add(cb, MAIA_OP_FILL, sizeof(*c));

	c->dst = dst;
	c->size = len;
	c->pattern = pattern;
}

/* Runs the command buffer (mapped at cb_va) and returns the job status. */
static int run(struct __test_metadata *_metadata, int fd, struct cmdbuf *cb,
	       struct drm_maia_wait *w)
{
	struct drm_maia_submit s = {
		.cmdbuf_handle = cb->bo.handle,
		.cmdbuf_size = cb->used,
		.priority = DRM_MAIA_PRIO_NORMAL,
	};
	struct timespec now;

	if (ioctl(fd, DRM_IOCTL_MAIA_SUBMIT, &s))
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &now);
	memset(w, 0, sizeof(*w));
	w->seqno = s.seqno;
	w->timeout_ns = (now.tv_sec + 30) * 1000000000ll + now.tv_nsec;
	if (ioctl(fd, DRM_IOCTL_MAIA_WAIT, w))
		return -errno;
	return 0;
}

#define CB_VA		(VA0 + 0x7f000000ull)
#define SRC_VA		(VA0 + 0x10000000ull)
#define HBM_VA		(VA0 + 0x20000000ull)	/* 2 MiB aligned: huge pages */
#define DST_VA		(VA0 + 0x30001000ull)	/* not 2 MiB aligned */

FIXTURE(dev) {
	struct maia_node node;
	int fd;
	struct cmdbuf cb;
};

FIXTURE_SETUP(dev)
{
	self->fd = -1;
	if (maia_find_nodes(&self->node, 1) < 1)
		SKIP(return, "no maia accel node (is maia.ko loaded and a maia device present?)");
	self->fd = maia_open_node(&self->node);
	ASSERT_LE(0, self->fd);
	memset(&self->cb, 0, sizeof(self->cb));
	bo_new(_metadata, self->fd, 64 * 1024, DRM_MAIA_BO_HOST, &self->cb.bo);
	ASSERT_EQ(0, vm_bind(self->fd, DRM_MAIA_VM_MAP, self->cb.bo.handle, CB_VA, 0,
			     64 * 1024, DRM_MAIA_VM_READONLY));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

static __u32 pattern(__u64 i, __u32 seed)
{
	__u64 x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;

	return (__u32)(x >> 29);
}

/*
 * host -> HBM -> host, 3 MiB: the HBM BO is mapped with 2 MiB pages, the
 * destination at a BO offset and a VA that force 4 KiB pages. The CPU
 * checks the HBM copy through BAR2 and the final copy in host memory.
 */
TEST_F(dev, dma_round_trip_host_hbm_host)
{
	const __u64 len = 3 * MIB;
	struct bo src, hbm, dst;
	struct drm_maia_wait w;
	__u32 *s, *h, *d;
	__u64 i, n = len / 4;

	bo_new(_metadata, self->fd, len, DRM_MAIA_BO_HOST, &src);
	bo_new(_metadata, self->fd, 4 * MIB, DRM_MAIA_BO_HBM, &hbm);
	bo_new(_metadata, self->fd, len + 2 * PAGE, DRM_MAIA_BO_HOST, &dst);
	s = src.cpu;
	h = hbm.cpu;
	d = dst.cpu;
	for (i = 0; i < n; i++)
		s[i] = pattern(i, 1);
	memset(d, 0x5a, dst.size);

	ASSERT_EQ(0, vm_bind(self->fd, DRM_MAIA_VM_MAP, src.handle, SRC_VA, 0, len,
			     DRM_MAIA_VM_READONLY));
	ASSERT_EQ(0, map(self->fd, hbm.handle, HBM_VA, 0, 4 * MIB));
	/* BO offset 4 KiB lands at DST_VA. */
	ASSERT_EQ(0, map(self->fd, dst.handle, DST_VA, PAGE, len));

	cmd_copy(&self->cb, SRC_VA, HBM_VA + 4096, len);
	cmd_copy(&self->cb, HBM_VA + 4096, DST_VA, len);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u at offset %u",
						    w.device_status, w.error_offset);

	for (i = 0; i < n; i++)
		if (h[1024 + i] != s[i])
			break;
	EXPECT_EQ(n, i) TH_LOG("HBM word %llu: %#x, expected %#x", i, h[1024 + i], s[i]);
	EXPECT_EQ(0, h[1023]);		/* nothing before it */
	for (i = 0; i < n; i++)
		if (d[1024 + i] != s[i])
			break;
	EXPECT_EQ(n, i) TH_LOG("host word %llu: %#x, expected %#x", i, d[1024 + i], s[i]);
	/* The pages around the mapped part of dst were not written. */
	EXPECT_EQ(0x5a5a5a5a, d[0]);
	EXPECT_EQ(0x5a5a5a5a, d[1023]);
	EXPECT_EQ(0x5a5a5a5a, d[1024 + n]);
}

/* The same HBM BO in two places of one address space: the same memory. */
TEST_F(dev, aliased_mappings_share_memory)
{
	struct bo hbm;
	struct drm_maia_wait w;
	__u32 *h;

	bo_new(_metadata, self->fd, 2 * MIB, DRM_MAIA_BO_HBM, &hbm);
	h = hbm.cpu;
	ASSERT_EQ(0, map(self->fd, hbm.handle, HBM_VA, 0, 2 * MIB));
	ASSERT_EQ(0, map(self->fd, hbm.handle, DST_VA, MIB, PAGE));
	cmd_fill(&self->cb, DST_VA + 16, 8, 0xc0ffee00);
	cmd_fill(&self->cb, HBM_VA + 8, 4, 0x11223344);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u", w.device_status);
	EXPECT_EQ(0xc0ffee00, h[(MIB + 16) / 4]);
	EXPECT_EQ(0xc0ffee00, h[(MIB + 20) / 4]);
	EXPECT_EQ(0, h[(MIB + 24) / 4]);
	EXPECT_EQ(0x11223344, h[2]);
}

/*
 * The job's completion and the fault record arrive on different interrupt
 * vectors; the driver still promises that a CONTEXT_STATUS after WAIT
 * sees the fault with its address.
 */
static void expect_fault(struct __test_metadata *_metadata, int fd, __u64 va, __u32 access)
{
	struct drm_maia_context_status st;

	memset(&st, 0, sizeof(st));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, &st));
	EXPECT_EQ(DRM_MAIA_CTX_FAULTED, st.flags);	/* and the address is known */
	EXPECT_EQ(va, st.fault_addr);
	EXPECT_EQ(access, st.fault_access);
}

/* A write through a read-only mapping faults and writes nothing. */
TEST_F(dev, readonly_mapping_faults_on_write)
{
	struct drm_maia_wait w;
	struct bo hbm;
	__u32 *h;

	bo_new(_metadata, self->fd, 64 * 1024, DRM_MAIA_BO_HBM, &hbm);
	h = hbm.cpu;
	h[0] = 0x600dda7a;
	ASSERT_EQ(0, vm_bind(self->fd, DRM_MAIA_VM_MAP, hbm.handle, HBM_VA, 0, 64 * 1024,
			     DRM_MAIA_VM_READONLY));
	cmd_fill(&self->cb, HBM_VA, 64, 0xbad0bad0);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_JOB_FAULT, w.status);
	EXPECT_EQ(DRM_MAIA_DEVICE_MMU_FAULT, w.device_status);
	EXPECT_EQ(0x600dda7a, h[0]);
	EXPECT_EQ(0, h[1]);
	expect_fault(_metadata, self->fd, HBM_VA, DRM_MAIA_ACCESS_WRITE);
}

/* After UNMAP the device sees nothing at the old VA. */
TEST_F(dev, unmapped_va_faults)
{
	struct drm_maia_wait w;
	struct bo hbm;
	__u32 *h;

	bo_new(_metadata, self->fd, 2 * MIB, DRM_MAIA_BO_HBM, &hbm);
	h = hbm.cpu;
	ASSERT_EQ(0, map(self->fd, hbm.handle, HBM_VA, 0, 2 * MIB));
	cmd_fill(&self->cb, HBM_VA + MIB, 4, 0x1);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_EQ(1, h[MIB / 4]);

	/* The first run put the 2 MiB translation in the TLB: UNMAP flushes it. */
	ASSERT_EQ(0, unmap(self->fd, HBM_VA, 2 * MIB));
	self->cb.used = 0;
	cmd_fill(&self->cb, HBM_VA + MIB, 4, 0x2);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_JOB_FAULT, w.status);
	EXPECT_EQ(1, h[MIB / 4]);
	expect_fault(_metadata, self->fd, HBM_VA + MIB, DRM_MAIA_ACCESS_WRITE);
}

/*
 * Host pages are pinned while the BO is mapped on the device, and only
 * then; what the device wrote stays in the BO after the unmap.
 */
TEST_F(dev, host_pages_pinned_only_while_mapped)
{
	struct drm_maia_bo_info info = { 0 };
	struct cmdbuf cb = { 0 };
	struct drm_maia_wait w;
	__u32 host = 0, *p;
	int fd;

	/* A file of its own, so the fixture's command buffer is not counted. */
	fd = maia_open_node(&self->node);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create(fd, 2 * MIB, DRM_MAIA_BO_HOST, &host));
	EXPECT_EQ(0, maia_fdinfo_bytes(fd, "drm-resident-host"));
	ASSERT_EQ(0, map(fd, host, DST_VA, 0, 2 * MIB));
	EXPECT_EQ(2 * MIB, maia_fdinfo_bytes(fd, "drm-resident-host"));
	ASSERT_EQ(0, map(fd, host, SRC_VA, MIB, MIB));
	EXPECT_EQ(2 * MIB, maia_fdinfo_bytes(fd, "drm-resident-host"));

	/* The fixture's file cannot see fd's BO: run the fill from fd. */
	bo_new(_metadata, fd, PAGE, DRM_MAIA_BO_HBM, &cb.bo);
	ASSERT_EQ(0, map(fd, cb.bo.handle, CB_VA, 0, PAGE));
	cmd_fill(&cb, DST_VA + 8, 8, 0x5eed5eed);
	ASSERT_EQ(0, run(_metadata, fd, &cb, &w));
	ASSERT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_EQ(0, unmap(fd, CB_VA, PAGE));

	EXPECT_EQ(0, unmap(fd, DST_VA, 2 * MIB));
	EXPECT_EQ(2 * MIB, maia_fdinfo_bytes(fd, "drm-resident-host"));	/* still mapped once */
	EXPECT_EQ(0, unmap(fd, SRC_VA, MIB));
	EXPECT_EQ(0, maia_fdinfo_bytes(fd, "drm-resident-host"));

	info.handle = host;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_MAIA_BO_INFO, &info));
	p = mmap(NULL, 2 * MIB, PROT_READ, MAP_SHARED, fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, p[1]);
	EXPECT_EQ(0x5eed5eed, p[2]);
	EXPECT_EQ(0x5eed5eed, p[3]);
	EXPECT_EQ(0, p[4]);
	munmap(p, 2 * MIB);
	close(fd);
}

/*
 * Isolation: file B aims a job at the VA where file A has its data. B's job
 * faults, A's data is untouched, A is not faulted and keeps working.
 */
TEST_F(dev, other_file_cannot_reach_my_memory)
{
	struct drm_maia_context_status st;
	struct drm_maia_wait w;
	struct cmdbuf cb_b;
	struct bo hbm;
	__u32 *h;
	int fd_b;

	bo_new(_metadata, self->fd, 2 * MIB, DRM_MAIA_BO_HBM, &hbm);
	h = hbm.cpu;
	h[0] = 0xa11ce;
	ASSERT_EQ(0, map(self->fd, hbm.handle, HBM_VA, 0, 2 * MIB));

	fd_b = maia_open_node(&self->node);
	ASSERT_LE(0, fd_b);
	memset(&cb_b, 0, sizeof(cb_b));
	bo_new(_metadata, fd_b, 64 * 1024, DRM_MAIA_BO_HOST, &cb_b.bo);
	ASSERT_EQ(0, map(fd_b, cb_b.bo.handle, CB_VA, 0, 64 * 1024));
	cmd_fill(&cb_b, HBM_VA, 4096, 0xb0b0b0b0);
	ASSERT_EQ(0, run(_metadata, fd_b, &cb_b, &w));
	EXPECT_EQ(DRM_MAIA_JOB_FAULT, w.status);
	expect_fault(_metadata, fd_b, HBM_VA, DRM_MAIA_ACCESS_WRITE);
	/* B is done for: further submits fail. */
	EXPECT_EQ(-EBADFD, run(_metadata, fd_b, &cb_b, &w));

	EXPECT_EQ(0xa11ce, h[0]);
	EXPECT_EQ(0, h[1]);
	memset(&st, 0, sizeof(st));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_MAIA_CONTEXT_STATUS, &st));
	EXPECT_EQ(0, st.flags);
	cmd_fill(&self->cb, HBM_VA + 4, 4, 0xa);
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	EXPECT_EQ(0xa, h[1]);
	close(fd_b);
}

/* A file with a command buffer of its own, mapped at CB_VA. */
static int open_with_cmdbuf(struct __test_metadata *_metadata, const struct maia_node *node,
			    struct cmdbuf *cb)
{
	int fd = maia_open_node(node);

	if (fd < 0)
		return fd;
	memset(cb, 0, sizeof(*cb));
	bo_new(_metadata, fd, 64 * 1024, DRM_MAIA_BO_HOST, &cb->bo);
	if (map(fd, cb->bo.handle, CB_VA, 0, 64 * 1024)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void set_fault_report_delay(unsigned int ms)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", ms);
	maia_write_file("/sys/module/maia/parameters/fault_report_delay_ms", v);
}

/*
 * A fault reaches only the context that caused it. File A's job faults and
 * A closes at once; B opens right after, while the interrupt thread that
 * handles A's fault event is still held back (fault_report_delay_ms). B is
 * not faulted, before or after that thread runs, and its jobs run.
 */
TEST_F(dev, fault_not_inherited)
{
	struct drm_maia_context_status st;
	struct drm_maia_wait w;
	struct cmdbuf cb_a, cb_b;
	struct bo hbm;
	int i, fd_a, fd_b;

	set_fault_report_delay(400);
	for (i = 0; i < 3; i++) {
		fd_a = open_with_cmdbuf(_metadata, &self->node, &cb_a);
		ASSERT_LE(0, fd_a);
		cmd_fill(&cb_a, HBM_VA + (i + 1) * 0x1000, 64, 0xa0a0a0a0);	/* nothing mapped */
		ASSERT_EQ(0, run(_metadata, fd_a, &cb_a, &w));
		EXPECT_EQ(DRM_MAIA_JOB_FAULT, w.status);
		expect_fault(_metadata, fd_a, HBM_VA + (i + 1) * 0x1000, DRM_MAIA_ACCESS_WRITE);
		close(fd_a);

		fd_b = open_with_cmdbuf(_metadata, &self->node, &cb_b);
		ASSERT_LE(0, fd_b);
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, ioctl(fd_b, DRM_IOCTL_MAIA_CONTEXT_STATUS, &st));
		EXPECT_EQ(0, st.flags) TH_LOG("round %d: a new file is faulted at %#llx",
					     i, st.fault_addr);
		bo_new(_metadata, fd_b, 64 * 1024, DRM_MAIA_BO_HBM, &hbm);
		ASSERT_EQ(0, map(fd_b, hbm.handle, HBM_VA, 0, 64 * 1024));
		cmd_fill(&cb_b, HBM_VA, 64, 0xb0b0b0b0);
		ASSERT_EQ(0, run(_metadata, fd_b, &cb_b, &w));
		EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
		maia_sleep_ms(500);	/* the held-back thread has run */
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, ioctl(fd_b, DRM_IOCTL_MAIA_CONTEXT_STATUS, &st));
		EXPECT_EQ(0, st.flags);
		cb_b.used = 0;
		cmd_fill(&cb_b, HBM_VA + 64, 64, 0xb1b1b1b1);
		ASSERT_EQ(0, run(_metadata, fd_b, &cb_b, &w));
		EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
		EXPECT_EQ(0xb1b1b1b1, ((__u32 *)hbm.cpu)[16]);
		munmap(hbm.cpu, hbm.size);
		close(fd_b);
	}
	set_fault_report_delay(0);
}

/*
 * Two contexts fault at nearly the same time, over and over. Neither ever
 * reports the other's address. From hardware 1.7 the device queues every
 * fault (the fault queue), so each learns its own address and access; before,
 * it kept one record, and the second could only say it did not know
 * (ADDR_UNKNOWN, address and access 0).
 */
TEST_F(dev, near_simultaneous_faults)
{
	const __u64 va[2] = { HBM_VA + 0x3000, HBM_VA + 0x9000 };
	struct drm_maia_context_status st;
	struct drm_maia_submit s;
	struct drm_maia_wait w;
	struct cmdbuf cb[2];
	struct timespec now;
	int fd[2], i, k, unknown = 0;
	__u64 rev = 0;

	ASSERT_EQ(0, maia_get_param(self->fd, DRM_MAIA_PARAM_REVISION, &rev));
	for (i = 0; i < 10; i++) {
		for (k = 0; k < 2; k++) {
			fd[k] = open_with_cmdbuf(_metadata, &self->node, &cb[k]);
			ASSERT_LE(0, fd[k]);
			cmd_fill(&cb[k], va[k], 64, 0xf0f0f0f0);
		}
		for (k = 0; k < 2; k++) {
			memset(&s, 0, sizeof(s));
			s.cmdbuf_handle = cb[k].bo.handle;
			s.cmdbuf_size = cb[k].used;
			s.priority = k ? DRM_MAIA_PRIO_HIGH : DRM_MAIA_PRIO_NORMAL;
			ASSERT_EQ(0, ioctl(fd[k], DRM_IOCTL_MAIA_SUBMIT, &s));
		}
		for (k = 0; k < 2; k++) {
			memset(&w, 0, sizeof(w));
			w.seqno = 1;
			clock_gettime(CLOCK_MONOTONIC, &now);
			w.timeout_ns = (now.tv_sec + 30) * 1000000000ll + now.tv_nsec;
			ASSERT_EQ(0, ioctl(fd[k], DRM_IOCTL_MAIA_WAIT, &w));
			EXPECT_EQ(DRM_MAIA_JOB_FAULT, w.status);
			memset(&st, 0, sizeof(st));
			ASSERT_EQ(0, ioctl(fd[k], DRM_IOCTL_MAIA_CONTEXT_STATUS, &st));
			ASSERT_TRUE(st.flags & DRM_MAIA_CTX_FAULTED);
			if (st.flags & DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN) {
				unknown++;
				EXPECT_EQ(0, st.fault_addr);
				EXPECT_EQ(0, st.fault_access);
			} else {
				EXPECT_EQ(va[k], st.fault_addr) TH_LOG("round %d file %d", i, k);
				EXPECT_EQ(DRM_MAIA_ACCESS_WRITE, st.fault_access);
			}
		}
		for (k = 0; k < 2; k++)
			close(fd[k]);
	}
	TH_LOG("%d of 20 faults came back with the address unknown", unknown);
	if ((rev & 0xff) >= (MAIA_HW_REVISION_FAULTQ & 0xff))
		EXPECT_EQ(0, unknown);
}

static void cmd_sem_wait(struct cmdbuf *cb, __u32 index, __u32 value, __u32 timeout_us)
{
	struct maia_cmd_sem_wait *c = cmd_add(cb, MAIA_OP_SEM_WAIT, sizeof(*c));

	c->index = index;
	c->value = value;
	c->timeout_us = timeout_us;
}

static void cmd_sem_signal(struct cmdbuf *cb, __u32 index, __u32 value)
{
	struct maia_cmd_sem_signal *c = cmd_add(cb, MAIA_OP_SEM_SIGNAL, sizeof(*c));

	c->index = index;
	c->value = value;
}

/* Submits cb at priority prio without waiting; *seqno is the job's. */
static int submit_prio(int fd, struct cmdbuf *cb, __u32 prio, __u64 *seqno)
{
	struct drm_maia_submit s = {
		.cmdbuf_handle = cb->bo.handle, .cmdbuf_size = cb->used, .priority = prio,
	};

	if (ioctl(fd, DRM_IOCTL_MAIA_SUBMIT, &s))
		return -errno;
	*seqno = s.seqno;
	return 0;
}

static int submit(int fd, struct cmdbuf *cb, __u64 *seqno)
{
	return submit_prio(fd, cb, DRM_MAIA_PRIO_NORMAL, seqno);
}

/* Waits for job seqno of fd without a deadline. */
static void wait_job(struct __test_metadata *_metadata, int fd, __u64 seqno,
		     struct drm_maia_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->seqno = seqno;
	w->timeout_ns = INT64_MAX;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_MAIA_WAIT, w));
}

#define PINNED_PARAM	"/sys/module/maia/parameters/max_pinned_mb"
#define PIN_VA		(VA0 + 0x40000000ull)

static long long host_pinned(const struct maia_node *node)
{
	char path[PATH_MAX], buf[64];

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/host_pinned_bytes",
		 node->minor);
	if (maia_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 0);
}

/*
 * max_pinned_mb caps the host memory a device has pinned for mappings: a
 * mapping past it fails with ENOMEM and leaves nothing pinned; unmapping
 * makes room again; host_pinned_bytes follows.
 */
TEST_F(dev, pinned_host_memory_cap)
{
	char old[32], limit[32];
	long long base;
	struct bo a, b;

	if (geteuid() != 0)
		SKIP(return, "needs root to set max_pinned_mb");
	ASSERT_EQ(0, maia_read_file(PINNED_PARAM, old, sizeof(old)));
	base = host_pinned(&self->node);
	ASSERT_LE(64 * 1024, base);	/* at least the fixture's command buffer */
	/* room for one 4 MiB buffer, not two */
	snprintf(limit, sizeof(limit), "%lld", (base >> 20) + 5);
	ASSERT_EQ(0, maia_write_file(PINNED_PARAM, limit));
	bo_new(_metadata, self->fd, 4 * MIB, DRM_MAIA_BO_HOST, &a);
	bo_new(_metadata, self->fd, 4 * MIB, DRM_MAIA_BO_HOST, &b);
	EXPECT_EQ(0, map(self->fd, a.handle, PIN_VA, 0, 4 * MIB));
	EXPECT_EQ(base + 4 * MIB, host_pinned(&self->node));
	EXPECT_EQ(-ENOMEM, map(self->fd, b.handle, PIN_VA + 4 * MIB, 0, 4 * MIB));
	EXPECT_EQ(base + 4 * MIB, host_pinned(&self->node));
	EXPECT_EQ(0, unmap(self->fd, PIN_VA, 4 * MIB));
	EXPECT_EQ(base, host_pinned(&self->node));
	EXPECT_EQ(0, map(self->fd, b.handle, PIN_VA + 4 * MIB, 0, 4 * MIB));
	EXPECT_EQ(0, unmap(self->fd, PIN_VA + 4 * MIB, 4 * MIB));
	EXPECT_EQ(0, maia_write_file(PINNED_PARAM, old));
	EXPECT_EQ(base, host_pinned(&self->node));
}

#define SEM_UNMAP	61
#define SEM_KILL	62
#define SEM_ISOLATION	63
#define SIG_VA		(VA0 + 0x7e000000ull)

/*
 * UNMAP waits for the file's jobs in flight: a job that wrote through the
 * mapping and then stalls (a semaphore wait nobody in its context
 * answers, 500 ms) keeps UNMAP waiting until it has finished, and the job
 * ends by its own timeout, not by a fault on a page taken away under it.
 */
TEST_F(dev, unmap_waits_for_jobs_in_flight)
{
	struct drm_maia_wait w;
	long long t0, waited;
	__u64 seqno = 0;
	struct bo hbm;
	__u32 *h;

	bo_new(_metadata, self->fd, 2 * MIB, DRM_MAIA_BO_HBM, &hbm);
	h = hbm.cpu;
	ASSERT_EQ(0, map(self->fd, hbm.handle, HBM_VA, 0, 2 * MIB));
	cmd_fill(&self->cb, HBM_VA + 64, 4, 0x0dd0c0de);
	cmd_sem_wait(&self->cb, SEM_UNMAP, 1, 500000);
	cmd_fill(&self->cb, HBM_VA + 128, 4, 0x0dd0c0de);
	ASSERT_EQ(0, submit(self->fd, &self->cb, &seqno));
	maia_sleep_ms(100);	/* the job is now in its wait */

	t0 = maia_now_ms();
	EXPECT_EQ(0, unmap(self->fd, HBM_VA, 2 * MIB));
	waited = maia_now_ms() - t0;
	EXPECT_LE(200, waited) TH_LOG("UNMAP returned after %lld ms, before the job ended", waited);

	wait_job(_metadata, self->fd, seqno, &w);
	EXPECT_EQ(DRM_MAIA_JOB_ERROR, w.status);
	EXPECT_EQ(DRM_MAIA_DEVICE_SEM_TIMEOUT, w.device_status);
	EXPECT_EQ(0x0dd0c0de, h[16]);	/* written before the wait */
	EXPECT_EQ(0, h[32]);		/* the job stopped at the wait */
}

/*
 * Semaphores belong to a context: another file signalling the same index
 * (from its HIGH-priority queue, so it runs while this file's job waits)
 * does not release this file's wait, which times out; this file's own
 * signal, from a HIGH-priority job, does.
 */
TEST_F(dev, semaphores_are_per_context)
{
	struct cmdbuf other = { 0 }, sig = { 0 };
	__u64 seqno = 0, sseq = 0;
	struct drm_maia_wait w;
	int fd2 = maia_open_node(&self->node);

	ASSERT_LE(0, fd2);
	cmd_sem_wait(&self->cb, SEM_ISOLATION, 1, 500000);
	ASSERT_EQ(0, submit(self->fd, &self->cb, &seqno));
	bo_new(_metadata, fd2, PAGE, DRM_MAIA_BO_HOST, &other.bo);
	ASSERT_EQ(0, map(fd2, other.bo.handle, CB_VA, 0, PAGE));
	cmd_sem_signal(&other, SEM_ISOLATION, 1);
	ASSERT_EQ(0, submit_prio(fd2, &other, DRM_MAIA_PRIO_HIGH, &sseq));
	wait_job(_metadata, fd2, sseq, &w);
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
	wait_job(_metadata, self->fd, seqno, &w);
	EXPECT_EQ(DRM_MAIA_DEVICE_SEM_TIMEOUT, w.device_status) TH_LOG("status %u", w.status);
	close(fd2);

	self->cb.used = 0;
	cmd_sem_wait(&self->cb, SEM_ISOLATION, 1, 20000000);
	ASSERT_EQ(0, submit(self->fd, &self->cb, &seqno));
	bo_new(_metadata, self->fd, PAGE, DRM_MAIA_BO_HOST, &sig.bo);
	ASSERT_EQ(0, map(self->fd, sig.bo.handle, SIG_VA, 0, PAGE));
	cmd_sem_signal(&sig, SEM_ISOLATION, 1);
	ASSERT_EQ(0, submit_prio(self->fd, &sig, DRM_MAIA_PRIO_HIGH, &sseq));
	wait_job(_metadata, self->fd, seqno, &w);
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status) TH_LOG("device status %u", w.device_status);
}

/*
 * A process killed while its job runs: everything it had on the device is
 * released once it is gone, and the device keeps serving others.
 */
TEST_F(dev, kill_mid_job_frees_everything)
{
	unsigned long long base;
	struct drm_maia_wait w;
	int pipefd[2], status;
	char c = 0;
	pid_t pid;

	base = hbm_used(&self->node);
	ASSERT_NE(~0ull, base);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct cmdbuf cb = { 0 };
		struct bo hbm, host;
		__u64 seqno;
		int fd = maia_open_node(&self->node);

		bo_new(_metadata, fd, PAGE, DRM_MAIA_BO_HOST, &cb.bo);
		bo_new(_metadata, fd, 8 * MIB, DRM_MAIA_BO_HBM, &hbm);
		bo_new(_metadata, fd, MIB, DRM_MAIA_BO_HOST, &host);
		if (map(fd, cb.bo.handle, CB_VA, 0, PAGE) ||
		    map(fd, hbm.handle, HBM_VA, 0, 8 * MIB) ||
		    map(fd, host.handle, SRC_VA, 0, MIB))
			_exit(1);
		/* Nobody signals it: the job runs until the device gives up. */
		cmd_sem_wait(&cb, SEM_KILL, 1, 1500000);
		cmd_copy(&cb, SRC_VA, HBM_VA, MIB);
		if (submit(fd, &cb, &seqno))
			_exit(2);
		if (write(pipefd[1], &c, 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_LT(base + 8 * MIB, hbm_used(&self->node));	/* BO and page tables */
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	close(pipefd[0]);

	EXPECT_EQ(base, hbm_used(&self->node));
	/* The device still runs jobs. */
	self->cb.used = 0;
	cmd_add(&self->cb, MAIA_OP_NOP, sizeof(struct maia_cmd_nop));
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
}

/*
 * kill -9 of many processes at once, each with jobs in flight (one parked on
 * a semaphore nobody signals, FILLs behind it) and HBM and host BOs mapped:
 * every one's memory comes back (HBM in use and host pages pinned return to
 * where they were), and the device still runs jobs. MAIA_KILL_PROCS sets the
 * number: 8 by default (make check), 100 in make fuzz. A killed file's close
 * waits for its jobs already on the device, so the parked one gives up soon.
 */
TEST_F_TIMEOUT(dev, kill_many_processes_frees_everything, 300)
{
	int n = (int)maia_env_ull("MAIA_KILL_PROCS", 8), i, ready = 0, killed = 0, status;
	unsigned long long base;
	long long pinned0;
	struct drm_maia_wait w;
	int pipefd[2];
	pid_t *pids;
	char c;

	base = hbm_used(&self->node);
	pinned0 = host_pinned(&self->node);
	ASSERT_NE(~0ull, base);
	ASSERT_LE(0, pinned0);
	pids = calloc(n, sizeof(*pids));
	ASSERT_NE(NULL, pids);
	ASSERT_EQ(0, pipe(pipefd));
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			struct cmdbuf cb = { 0 };
			struct bo hbm, host;
			__u64 seqno;
			int fd = maia_open_node(&self->node), k;

			close(pipefd[0]);
			if (fd < 0)
				_exit(1);
			bo_new(_metadata, fd, 64 * 1024, DRM_MAIA_BO_HOST, &cb.bo);
			bo_new(_metadata, fd, MIB, DRM_MAIA_BO_HBM, &hbm);
			bo_new(_metadata, fd, 256 * 1024, DRM_MAIA_BO_HOST, &host);
			if (map(fd, cb.bo.handle, CB_VA, 0, 64 * 1024) ||
			    map(fd, hbm.handle, HBM_VA, 0, MIB) ||
			    map(fd, host.handle, SRC_VA, 0, 256 * 1024))
				_exit(2);
			cmd_sem_wait(&cb, SEM_KILL, 1, 300000);
			cmd_copy(&cb, SRC_VA, HBM_VA, 256 * 1024);
			if (submit(fd, &cb, &seqno))
				_exit(3);
			for (k = 0; k < 3; k++) {
				struct cmdbuf more = cb;

				more.used = cb.used;
				cmd_fill(&more, HBM_VA + k * 4096, 4096, k);
				cb.used = more.used;
				if (submit(fd, &cb, &seqno))
					_exit(4);
			}
			if (write(pipefd[1], "r", 1) != 1)
				_exit(5);
			pause();
			_exit(6);
		}
	}
	close(pipefd[1]);
	while (ready < n && read(pipefd[0], &c, 1) == 1)
		ready++;
	TH_LOG("%d of %d processes have jobs in flight", ready, n);
	EXPECT_EQ(n, ready);
	for (i = 0; i < n; i++)
		if (!kill(pids[i], SIGKILL))
			killed++;
	for (i = 0; i < n; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("child %d exited %d", i,
							WEXITSTATUS(status));
	}
	close(pipefd[0]);
	free(pids);
	EXPECT_EQ(n, killed);

	EXPECT_EQ(base, hbm_used(&self->node));
	EXPECT_EQ(pinned0, host_pinned(&self->node));
	self->cb.used = 0;
	cmd_add(&self->cb, MAIA_OP_NOP, sizeof(struct maia_cmd_nop));
	ASSERT_EQ(0, run(_metadata, self->fd, &self->cb, &w));
	EXPECT_EQ(DRM_MAIA_JOB_OK, w.status);
}

TEST_HARNESS_MAIN
