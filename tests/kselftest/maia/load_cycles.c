// SPDX-License-Identifier: GPL-2.0-only
/*
 * maia.ko loaded and unloaded 50 times must not leak kernel memory, and the
 * device must work after the last load.
 *
 * Leak check: after a few warm-up cycles (first-use allocations the kernel
 * keeps), every slab cache is counted exactly: caches are dropped, each
 * SLUB cache shrunk (which flushes per-CPU slabs, so /sys/kernel/slab/X/objects
 * is the number of live objects), then counted. A cache that gained at least
 * one object per cycle is a leak; so is VmallocUsed growing by a page per
 * cycle. Caches whose growth belongs to the kernel, not the driver, are
 * listed in kernel_grown[] with the reason.
 *
 * Needs root and maia.ko at $MAIA_KO (default /lib/modules/maia.ko); its
 * dependencies must be loaded (qemu/run-guest does both).
 * MAIA_LOAD_CYCLES overrides the number of cycles (default 50).
 */
#include "maia_ksft.h"
#include "kselftest_harness.h"

#define WARMUP_CYCLES	3
#define MAX_CACHES	1024

/* Caches the kernel grows by itself during module load/unload cycles. */
static const struct {
	const char *name;
	const char *why;
} kernel_grown[] = {
	/* vfree() of module memory frees the pages at once but the vmap_area
	 * structs lazily, in batches (mm/vmalloc.c lazy_max_pages()).
	 */
	{ "vmap_area", "lazily purged vmalloc areas of unloaded module memory" },
};

struct slab_count {
	char name[64];
	long objects;
};

struct snapshot {
	struct slab_count caches[MAX_CACHES];
	int ncaches;
	long vmalloc_kb;
	long sunreclaim_kb;
	long available_kb;
};

static long meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = atol(line + klen + 1);
			break;
		}
	fclose(f);
	return v;
}

static int cmp_cache(const void *a, const void *b)
{
	return strcmp(((const struct slab_count *)a)->name, ((const struct slab_count *)b)->name);
}

/* Exact live-object counts of every SLUB cache; -errno on failure. */
static int take_snapshot(struct snapshot *s)
{
	char path[PATH_MAX], val[128];
	struct dirent *de;
	struct stat st;
	DIR *dir;

	sync();
	if (maia_write_file("/proc/sys/vm/drop_caches", "3"))
		return -errno;
	dir = opendir("/sys/kernel/slab");
	if (!dir)
		return -errno;
	s->ncaches = 0;
	while ((de = readdir(dir)) && s->ncaches < MAX_CACHES) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s", de->d_name);
		/* Merged caches are symlinks to the cache that holds them. */
		if (lstat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", de->d_name);
		maia_write_file(path, "1");
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/objects", de->d_name);
		if (maia_read_file(path, val, sizeof(val)))
			continue;
		if (strlen(de->d_name) >= sizeof(s->caches[0].name))
			continue;
		strcpy(s->caches[s->ncaches].name, de->d_name);
		s->caches[s->ncaches].objects = atol(val);
		s->ncaches++;
	}
	closedir(dir);
	qsort(s->caches, s->ncaches, sizeof(s->caches[0]), cmp_cache);
	s->vmalloc_kb = meminfo_kb("VmallocUsed");
	s->sunreclaim_kb = meminfo_kb("SUnreclaim");
	s->available_kb = meminfo_kb("MemAvailable");
	return s->ncaches ? 0 : -ENOENT;
}

static const char *kernel_grown_reason(const char *cache)
{
	unsigned int i;

	for (i = 0; i < sizeof(kernel_grown) / sizeof(kernel_grown[0]); i++)
		if (!strcmp(kernel_grown[i].name, cache))
			return kernel_grown[i].why;
	return NULL;
}

/* Counts the caches that leaked; logs every cache that grew noticeably. */
static int compare_snapshots(struct __test_metadata *_metadata, const struct snapshot *a,
			     const struct snapshot *b, int cycles)
{
	int i, j, leaks = 0;

	for (i = 0, j = 0; i < b->ncaches; i++) {
		const char *why;
		long before = 0, delta;

		while (j < a->ncaches && strcmp(a->caches[j].name, b->caches[i].name) < 0)
			j++;
		if (j < a->ncaches && !strcmp(a->caches[j].name, b->caches[i].name))
			before = a->caches[j].objects;
		delta = b->caches[i].objects - before;
		if (delta * 4 < cycles)
			continue;
		why = kernel_grown_reason(b->caches[i].name);
		if (delta >= cycles && !why) {
			TH_LOG("LEAK %s: %ld -> %ld objects (+%ld in %d cycles)", b->caches[i].name,
			       before, b->caches[i].objects, delta, cycles);
			leaks++;
		} else {
			TH_LOG("%s: +%ld objects in %d cycles%s%s", b->caches[i].name, delta, cycles,
			       why ? ", allowed: " : "", why ? why : "");
		}
	}
	return leaks;
}

FIXTURE(module) {
	int pci_functions;
};

FIXTURE_SETUP(module)
{
	if (geteuid() != 0)
		SKIP(return, "needs root to load modules");
	if (access(maia_ko_path(), R_OK))
		SKIP(return, "no %s (set MAIA_KO)", maia_ko_path());
	self->pci_functions = maia_count_pci_functions();
	if (!self->pci_functions)
		SKIP(return, "no maia PCI function on this machine");
	ASSERT_EQ(0, maia_module_ensure_unloaded());
}

FIXTURE_TEARDOWN(module)
{
	/* Leave the driver loaded, as the tests that follow expect. */
	if (!maia_module_loaded())
		maia_module_load(NULL);
}

/* One cycle: load, wait for every node, ping, unload, nodes gone. */
static void cycle(struct __test_metadata *_metadata, int pci_functions, int i)
{
	struct maia_node nodes[MAIA_MAX_DEVICES];
	int ret;

	ret = maia_module_load(NULL);
	ASSERT_EQ(0, ret) TH_LOG("cycle %d: load %s: %s", i, maia_ko_path(), strerror(-ret));
	ASSERT_EQ(pci_functions, maia_wait_nodes(pci_functions, 10000))
		TH_LOG("cycle %d: not every device probed", i);
	ASSERT_EQ(0, maia_ping_first(0x10000 + i)) TH_LOG("cycle %d: ping failed", i);
	ret = maia_module_unload();
	ASSERT_EQ(0, ret) TH_LOG("cycle %d: unload: %s", i, strerror(-ret));
	ASSERT_EQ(0, maia_find_nodes(nodes, MAIA_MAX_DEVICES));
}

TEST_F_TIMEOUT(module, load_unload_cycles_no_leak, 900)
{
	int cycles = maia_env_ull("MAIA_LOAD_CYCLES", 50);
	static struct snapshot before, after;
	int i, leaks, measured;
	long long t0;
	long dv;

	ASSERT_LT(WARMUP_CYCLES, cycles);
	t0 = maia_now_ms();
	for (i = 0; i < cycles; i++) {
		if (i == WARMUP_CYCLES)
			ASSERT_EQ(0, take_snapshot(&before)) TH_LOG("no /sys/kernel/slab counts");
		cycle(_metadata, self->pci_functions, i);
	}
	ASSERT_EQ(0, take_snapshot(&after));
	measured = cycles - WARMUP_CYCLES;
	TH_LOG("%d cycles with %d device(s) in %lld ms", cycles, self->pci_functions,
	       maia_now_ms() - t0);

	leaks = compare_snapshots(_metadata, &before, &after, measured);
	EXPECT_EQ(0, leaks);
	dv = after.vmalloc_kb - before.vmalloc_kb;
	TH_LOG("VmallocUsed %+ld kB, SUnreclaim %+ld kB, MemAvailable %+ld kB", dv,
	       after.sunreclaim_kb - before.sunreclaim_kb,
	       after.available_kb - before.available_kb);
	/* A page per cycle is a leak. */
	EXPECT_GT(4l * measured, dv);

	/* The device works after the last load. */
	ASSERT_EQ(0, maia_module_load(NULL));
	ASSERT_EQ(self->pci_functions, maia_wait_nodes(self->pci_functions, 10000));
	EXPECT_EQ(0, maia_ping_first(0xfeedfacecafebeefull));
}

TEST_HARNESS_MAIN
