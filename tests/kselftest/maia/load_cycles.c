// SPDX-License-Identifier: GPL-2.0-only
/*
 * maia.ko loaded and unloaded 50 times must not leak kernel memory, and the
 * device must work after the last load.
 *
 * Leak check: every slab cache is counted exactly (caches dropped, each
 * SLUB cache shrunk, which flushes the per-CPU slabs so that
 * /sys/kernel/slab/X/objects is the number of live objects) three times:
 * after a few warm-up cycles, a third of the way, and at the end. A leak
 * grows in both stretches in proportion to their cycles, by an object or more
 * per cycle; the kernel's own one-time growth (first use of something, files
 * and inodes it keeps) shows up in one stretch only or by the same amount in
 * both, so a cache is a leak when it grew by at least 3/4 of an object per
 * cycle in each stretch. VmallocUsed gets the same test with a page a cycle.
 * Caches the kernel grows steadily by itself are in kernel_grown[] with the
 * reason.
 *
 * Needs root and maia.ko at $MAIA_KO (default /lib/modules/maia.ko); its
 * dependencies must be loaded (qemu/run-guest does both).
 * MAIA_LOAD_CYCLES overrides the number of cycles (default 50).
 */
#include "maia_ksft.h"
#include "kselftest_harness.h"

#define WARMUP_CYCLES	5
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
	/* Each load creates sysfs, debugfs and DRM pseudo-fs inodes; their LSM
	 * blobs are freed with the inode through RCU and the inode LRU, so the
	 * count drifts with the VFS, not in step with the cycles (seen: +45 over
	 * 15 cycles, then +506 over 30). A driver leak shows in kmalloc-*.
	 */
	{ "lsm_inode_cache", "inode security blobs, freed lazily by the VFS" },
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

/* Live-object counts of every SLUB cache; -errno on failure. */
static int count_caches(struct snapshot *s)
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
	return s->ncaches ? 0 : -ENOENT;
}

/*
 * Counts twice and keeps the second: the first walk creates the sysfs
 * dentries and inodes the walk itself needs, so that every snapshot counts
 * the same set of them.
 */
static int take_snapshot(struct snapshot *s)
{
	int ret = count_caches(s);

	if (ret)
		return ret;
	ret = count_caches(s);
	s->vmalloc_kb = meminfo_kb("VmallocUsed");
	s->sunreclaim_kb = meminfo_kb("SUnreclaim");
	s->available_kb = meminfo_kb("MemAvailable");
	return ret;
}

/*
 * SLUB merges caches of the same size: /sys/kernel/slab/<name> is then a
 * symlink to the merged cache (":0000088"), which is what a snapshot counts.
 */
static bool cache_is(const char *cache, const char *name)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t len;

	if (!strcmp(cache, name))
		return true;
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s", name);
	len = readlink(path, target, sizeof(target) - 1);
	if (len < 0)
		return false;
	target[len] = '\0';
	base = strrchr(target, '/');
	return !strcmp(base ? base + 1 : target, cache);
}

static const char *kernel_grown_reason(const char *cache)
{
	unsigned int i;

	for (i = 0; i < sizeof(kernel_grown) / sizeof(kernel_grown[0]); i++)
		if (cache_is(cache, kernel_grown[i].name))
			return kernel_grown[i].why;
	return NULL;
}

static long cache_objects(const struct snapshot *s, const char *name)
{
	struct slab_count key, *hit;

	snprintf(key.name, sizeof(key.name), "%s", name);
	hit = bsearch(&key, s->caches, s->ncaches, sizeof(s->caches[0]), cmp_cache);
	return hit ? hit->objects : 0;
}

/* Whether a quantity grew by 3/4 of `per_cycle` a cycle in both stretches. */
static bool grew_in_both_stretches(long a, long b, long c, int n1, int n2, long per_cycle)
{
	return (b - a) * 4 >= 3l * n1 * per_cycle && (c - b) * 4 >= 3l * n2 * per_cycle;
}

/* Counts the caches that leaked; logs every cache that grew noticeably. */
static int compare_snapshots(struct __test_metadata *_metadata, const struct snapshot *a,
			     const struct snapshot *b, const struct snapshot *c, int n1, int n2)
{
	int i, leaks = 0;

	for (i = 0; i < c->ncaches; i++) {
		const char *name = c->caches[i].name, *why;
		long oa = cache_objects(a, name), ob = cache_objects(b, name);
		long oc = c->caches[i].objects;

		if ((oc - oa) * 4 < n1 + n2)
			continue;
		why = kernel_grown_reason(name);
		if (grew_in_both_stretches(oa, ob, oc, n1, n2, 1) && !why) {
			TH_LOG("LEAK %s: %ld -> %ld -> %ld objects over %d + %d cycles",
			       name, oa, ob, oc, n1, n2);
			leaks++;
		} else {
			TH_LOG("%s: %ld -> %ld -> %ld objects over %d + %d cycles%s%s", name,
			       oa, ob, oc, n1, n2, why ? ", allowed: " : " (not steady: no leak)",
			       why ? why : "");
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
	static struct snapshot first, middle, last;
	int i, leaks, mid, n1, n2;
	long long t0;

	ASSERT_LE(WARMUP_CYCLES + 4, cycles);
	/* Unequal stretches tell per-cycle growth from per-snapshot growth. */
	mid = WARMUP_CYCLES + (cycles - WARMUP_CYCLES) / 3;
	n1 = mid - WARMUP_CYCLES;
	n2 = cycles - mid;
	t0 = maia_now_ms();
	for (i = 0; i < cycles; i++) {
		if (i == WARMUP_CYCLES)
			ASSERT_EQ(0, take_snapshot(&first)) TH_LOG("no /sys/kernel/slab counts");
		if (i == mid)
			ASSERT_EQ(0, take_snapshot(&middle));
		cycle(_metadata, self->pci_functions, i);
	}
	ASSERT_EQ(0, take_snapshot(&last));
	TH_LOG("%d cycles with %d device(s) in %lld ms", cycles, self->pci_functions,
	       maia_now_ms() - t0);

	leaks = compare_snapshots(_metadata, &first, &middle, &last, n1, n2);
	EXPECT_EQ(0, leaks);
	TH_LOG("VmallocUsed %ld -> %ld -> %ld kB, SUnreclaim %+ld kB, MemAvailable %+ld kB",
	       first.vmalloc_kb, middle.vmalloc_kb, last.vmalloc_kb,
	       last.sunreclaim_kb - first.sunreclaim_kb,
	       last.available_kb - first.available_kb);
	EXPECT_FALSE(grew_in_both_stretches(first.vmalloc_kb, middle.vmalloc_kb, last.vmalloc_kb,
					 n1, n2, 4)) TH_LOG("vmalloc leak: a page per cycle");

	/* The device works after the last load. */
	ASSERT_EQ(0, maia_module_load(NULL));
	ASSERT_EQ(self->pci_functions, maia_wait_nodes(self->pci_functions, 10000));
	EXPECT_EQ(0, maia_ping_first(0xfeedfacecafebeefull));
}

TEST_HARNESS_MAIN
