// SPDX-License-Identifier: GPL-2.0-only
/*
 * maia.ko loaded and unloaded 50 times must not leak, and the device must
 * work after the last load.
 *
 * The verdict rests only on evidence that maia.ko itself produces, so that a
 * busy machine cannot fail it (whole-cache object counts drift with RCU,
 * the dcache and the VFS; see Documentation/reliability.rst):
 *
 * - files: after every unload none of the driver's files remain: its
 *   debugfs directories (under /sys/kernel/debug/accel and .../dri), its
 *   /sys/class/accel entries and /dev/accel nodes, its hwmon device,
 *   /sys/bus/pci/drivers/maia and /sys/module/maia;
 * - slab: after the last unload no live slab object was allocated by
 *   maia.ko code: with slub_debug=U every cache has
 *   /sys/kernel/debug/slab/<cache>/alloc_traces, the allocation stack of
 *   each live object, and an object is the driver's when a frame of that
 *   stack lies in the text of one of maia.ko's loads (recorded at each load
 *   from /sys/module/maia/sections/.text and /proc/vmallocinfo, since frames
 *   of an unloaded module print as raw addresses). Objects freed through
 *   RCU or kfree_rcu() may still be live right after the unload, so the
 *   count is polled, with RCU grace periods and shrinkers forced, for a
 *   bounded time until it reaches zero;
 * - vmalloc: no /proc/vmallocinfo area whose caller is maia.ko remains.
 *
 * Without slub_debug=U (no /sys/kernel/debug/slab) the slab check is
 * skipped with a message; run-in-guest.sh boots with it. The whole-cache
 * counts of the old check are still taken and logged, as information only.
 *
 * Needs root, kernel addresses visible to it (kptr_restrict < 2), debugfs at
 * /sys/kernel/debug (else its files are not checked) and maia.ko at $MAIA_KO
 * (default /lib/modules/maia.ko); its dependencies must be loaded
 * (qemu/run-guest does all that). MAIA_LOAD_CYCLES overrides the number of
 * cycles (default 50).
 */
#include <linux/membarrier.h>

#include "maia_ksft.h"
#include "kselftest_harness.h"

#define WARMUP_CYCLES	5
#define MAX_CACHES	1024
#define MAX_LOADS	256
#define MAX_NAMES	64
#define MAX_SYMS	8192
#define SETTLE_MS	15000	/* kfree_rcu() batches for up to 5 s, then a grace period */
#define SETTLE_MAX_MS	60000
#define DEBUGFS		"/sys/kernel/debug"
#define SLAB_DEBUGFS	DEBUGFS "/slab"

/* --- where maia.ko's code was ---------------------------------------------- */

struct text_range {
	unsigned long long start, end;
};

static struct text_range texts[MAX_LOADS];
static int ntexts;

/* maia.ko's functions at each address it had, to name raw frames. */
static struct maia_sym {
	unsigned long long addr;
	char name[48];
} syms[MAX_SYMS];
static int nsyms;

static void record_maia_syms(void)
{
	char line[256], type, name[128], mod[32];
	unsigned long long addr;
	FILE *f;

	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && nsyms < MAX_SYMS)
		if (sscanf(line, "%llx %c %127s %31s", &addr, &type, name, mod) == 4 &&
		    !strcmp(mod, "[maia]") && (type == 't' || type == 'T')) {
			syms[nsyms].addr = addr;
			snprintf(syms[nsyms].name, sizeof(syms[0].name), "%.47s", name);
			nsyms++;
		}
	fclose(f);
}

/* "maia_probe+0x3c" for an address in one of maia.ko's texts. */
static void maia_sym_name(unsigned long long addr, char *buf, size_t size)
{
	int i, best = -1;

	for (i = 0; i < nsyms; i++)
		if (syms[i].addr <= addr && (best < 0 || syms[i].addr > syms[best].addr))
			best = i;
	if (best < 0 || addr - syms[best].addr > 1 << 16)
		snprintf(buf, size, "0x%llx", addr);
	else
		snprintf(buf, size, "%s+0x%llx", syms[best].name, addr - syms[best].addr);
}

static bool in_maia_text(unsigned long long addr)
{
	int i;

	for (i = 0; i < ntexts; i++)
		if (addr >= texts[i].start && addr < texts[i].end)
			return true;
	return false;
}

/*
 * Records the text of the loaded maia.ko: the vmalloc area that holds its
 * .text (exact, from /proc/vmallocinfo), else .text up to the module's size.
 */
static int record_maia_text(void)
{
	unsigned long long text, start, end, size = 0;
	struct text_range r = { 0, 0 };
	char buf[64], line[512];
	FILE *f;
	int i;

	if (maia_read_file("/sys/module/maia/sections/.text", buf, sizeof(buf)))
		return -errno;
	text = strtoull(buf, NULL, 16);
	if (!text)
		return -EPERM;		/* addresses hidden (kptr_restrict) */
	f = fopen("/proc/vmallocinfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "0x%llx-0x%llx", &start, &end) == 2 &&
			    text >= start && text < end) {
				r.start = start;
				r.end = end;
				break;
			}
		fclose(f);
	}
	if (!r.start) {
		if (!maia_read_file("/sys/module/maia/coresize", buf, sizeof(buf)))
			size = strtoull(buf, NULL, 0);
		r.start = text;
		r.end = text + (size ? size : 1ull << 20);
	}
	for (i = 0; i < ntexts; i++)
		if (texts[i].start == r.start && texts[i].end == r.end)
			return 0;
	if (ntexts == MAX_LOADS)
		return -ENOSPC;
	texts[ntexts++] = r;
	record_maia_syms();
	return 0;
}

/* A symbolized frame (%pS) is maia's: "f+0x1/0x2 [maia]" or a raw address in its text. */
static bool frame_is_maia(const char *frame)
{
	if (!strncmp(frame, "0x", 2))
		return in_maia_text(strtoull(frame, NULL, 16));
	return strstr(frame, " [maia]");
}

/* A maia frame as "maia_probe+0x3c [maia]", also once maia.ko is gone. */
static void maia_frame_name(const char *frame, char *buf, size_t size)
{
	char name[96];

	if (strncmp(frame, "0x", 2)) {
		snprintf(buf, size, "%s", frame);
		return;
	}
	maia_sym_name(strtoull(frame, NULL, 16), name, sizeof(name));
	snprintf(buf, size, "%s [maia, unloaded]", name);
}

/* --- live slab objects maia.ko allocated ----------------------------------- */

static bool have_slab_traces(void)
{
	struct dirent *de;
	bool found = false;
	DIR *dir;

	dir = opendir(SLAB_DEBUGFS);
	if (!dir)
		return false;
	while (!found && (de = readdir(dir)))
		found = de->d_name[0] != '.';
	closedir(dir);
	return found;
}

/*
 * Parses one cache's alloc_traces: blocks of a header line
 * "<count> <call site> age=... pid=..." and the stack, a frame a line
 * indented by 8 spaces. Returns the number of live objects whose call site
 * or a stack frame is maia's; logs the first few such blocks.
 */
static long maia_objects_in(struct __test_metadata *_metadata, const char *cache,
			    int *logged)
{
	char path[PATH_MAX], *line = NULL, site[256] = "", via[256] = "";
	long total = 0, count = 0;
	bool maia = false, maia_initcall = false, creates_cache = false;
	size_t cap = 0;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), SLAB_DEBUGFS "/%s/alloc_traces", cache);
	f = fopen(path, "re");
	if (!f)
		return 0;
	for (;;) {
		const char *p;
		int indent;

		len = getline(&line, &cap, f);
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		for (indent = 0; len > 0 && line[indent] == ' '; indent++)
			;
		p = len > 0 ? line + indent : "";
		if (len > 0 && indent >= 8 && *p) {		/* a frame */
			if (strstr(p, "kmem_cache_create"))
				creates_cache = true;
			/*
			 * A module's init text is freed once its init has run, and a
			 * module loaded later (maia) may get that address: a frame
			 * called by do_one_initcall() and creating a slab cache then
			 * reads as maia's. maia.ko's init only registers its PCI
			 * driver, and it creates no slab cache anywhere, so such a
			 * block is another module's (gpu_sched's fence cache, seen).
			 */
			if (maia_initcall && creates_cache && !strncmp(p, "do_one_initcall", 15))
				maia = false;
			maia_initcall = false;
			if (!maia && frame_is_maia(p)) {
				maia = true;
				maia_initcall = true;
				maia_frame_name(p, via, sizeof(via));
			}
			continue;
		}
		/* A header or the end: account for the block before. */
		if (maia && count > 0) {
			total += count;
			if ((*logged)++ < 8)
				TH_LOG("  %s: %ld live object(s) from %s%s%s", cache, count, site,
				       strcmp(site, via) ? " via " : "",
				       strcmp(site, via) ? via : "");
		}
		if (len < 0)
			break;
		count = 0;
		maia = false;
		maia_initcall = false;
		creates_cache = false;
		if (!*p)
			continue;
		/* "<count> <call site> age=..." */
		count = strtol(p, (char **)&p, 10);
		while (*p == ' ')
			p++;
		snprintf(site, sizeof(site), "%.*s", (int)strcspn(p, " "), p);
		if (frame_is_maia(site)) {
			maia = true;
			maia_frame_name(site, via, sizeof(via));
			snprintf(site, sizeof(site), "%s", via);
		}
	}
	free(line);
	fclose(f);
	return total;
}

/*
 * Caches whose live objects do not mean their allocator still holds them.
 * mm/vmalloc.c reuses a freed vmap_area as the node of the free address
 * space it now describes (merge_or_add_vmap_area(), the per-node pools), so
 * the vmap_area of an iounmap()ed BAR lives on with maia.ko in its
 * allocation stack; the areas maia.ko still holds are in /proc/vmallocinfo
 * with their caller, which maia_vmalloc_areas() checks.
 */
static const char *const not_ownership[] = { "vmap_area" };

static bool tracks_ownership(const char *cache)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(not_ownership); i++)
		if (!strcmp(cache, not_ownership[i]))
			return false;
	return true;
}

/* Live slab objects allocated by maia.ko code, over every tracked cache. */
static long maia_slab_objects(struct __test_metadata *_metadata, bool log)
{
	int logged = log ? 0 : 1 << 30;
	struct dirent *de;
	long total = 0;
	DIR *dir;

	dir = opendir(SLAB_DEBUGFS);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.' && tracks_ownership(de->d_name))
			total += maia_objects_in(_metadata, de->d_name, &logged);
	closedir(dir);
	return total;
}

/* vmalloc/ioremap areas whose caller is maia.ko's code. */
static int maia_vmalloc_areas(struct __test_metadata *_metadata, bool log)
{
	char line[512], range[64], caller[256], name[256];
	unsigned long size;
	int n = 0;
	FILE *f;

	f = fopen("/proc/vmallocinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "0xstart-0xend size caller pages=... vmalloc" */
		if (sscanf(line, "%63s %lu %255s", range, &size, caller) != 3 ||
		    !frame_is_maia(caller))
			continue;
		maia_frame_name(caller, name, sizeof(name));
		if (log && n < 8)
			TH_LOG("  vmalloc area %s (%lu bytes) from %s", range, size, name);
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Lets RCU callbacks and kfree_rcu() batches run: drop_caches=2 runs the
 * shrinkers (kfree_rcu's drains its batches at once) and
 * MEMBARRIER_CMD_GLOBAL waits for an RCU grace period.
 */
static void let_deferred_frees_run(void)
{
	maia_write_file("/proc/sys/vm/drop_caches", "2");
	syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

/*
 * Waits until no slab object (if `slab`) and no vmalloc area of maia.ko is
 * live, or until the count has not fallen for SETTLE_MS (SETTLE_MAX_MS at
 * most), and logs what is left. Frees that RCU, kfree_rcu() or a worker
 * defer finish meanwhile; a leak stays.
 */
static void settle(struct __test_metadata *_metadata, bool slab, long *objects, int *areas)
{
	long long t0 = maia_now_ms(), fell = t0, now;
	long total, before = -1;

	for (;;) {
		let_deferred_frees_run();
		*areas = maia_vmalloc_areas(_metadata, false);
		/* The first pass shows what was still on its way out. */
		*objects = slab ? maia_slab_objects(_metadata, before < 0) : 0;
		total = *objects + *areas;
		now = maia_now_ms();
		if (before < 0 || total < before)
			fell = now;
		if (total <= 0 || now - fell > SETTLE_MS || now - t0 > SETTLE_MAX_MS)
			break;
		if (total != before)
			TH_LOG("%ld slab object(s), %d vmalloc area(s) of maia.ko live %lld ms after the unload",
			       *objects, *areas, now - t0);
		before = total;
		maia_sleep_ms(250);
	}
	if (*objects > 0)
		maia_slab_objects(_metadata, true);
	if (*areas > 0)
		maia_vmalloc_areas(_metadata, true);
	TH_LOG("%ld slab object(s)%s, %d vmalloc area(s) of maia.ko live %lld ms after the unload",
	       *objects, slab ? "" : " (not checked)", *areas, now - t0);
}

/* --- the driver's files ---------------------------------------------------- */

struct name_set {
	char names[MAX_NAMES][64];
	int n;
};

static void list_dir(const char *path, struct name_set *s)
{
	struct dirent *de;
	DIR *dir;

	s->n = 0;
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir)) && s->n < MAX_NAMES)
		if (de->d_name[0] != '.')
			snprintf(s->names[s->n++], sizeof(s->names[0]), "%.*s",
				 (int)sizeof(s->names[0]) - 1, de->d_name);
	closedir(dir);
}

static bool name_in(const struct name_set *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

/* Directories whose entries the driver adds while loaded. */
static const char *const driver_dirs[] = {
	DEBUGFS "/accel", DEBUGFS "/dri", "/sys/class/accel", "/dev/accel",
};

#define NDIRS ARRAY_SIZE(driver_dirs)

struct files_baseline {
	struct name_set dirs[NDIRS];	/* their entries with maia unloaded */
};

static void take_files_baseline(struct files_baseline *b)
{
	unsigned int i;

	for (i = 0; i < NDIRS; i++)
		list_dir(driver_dirs[i], &b->dirs[i]);
}

/* A hwmon device named "maia". */
static bool maia_hwmon_present(void)
{
	char path[PATH_MAX], name[64];
	struct dirent *de;
	bool found = false;
	DIR *dir;

	dir = opendir("/sys/class/hwmon");
	if (!dir)
		return false;
	while (!found && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/name", de->d_name);
		found = !maia_read_file(path, name, sizeof(name)) && !strcmp(name, "maia");
	}
	closedir(dir);
	return found;
}

/* Logs and counts the driver's files left after an unload. */
static int files_left(struct __test_metadata *_metadata, const struct files_baseline *b,
		      int cycle)
{
	static const char *const gone[] = { "/sys/module/maia", "/sys/bus/pci/drivers/maia" };
	struct name_set now;
	unsigned int i;
	int j, left = 0;

	for (i = 0; i < ARRAY_SIZE(gone); i++)
		if (!access(gone[i], F_OK)) {
			TH_LOG("cycle %d: %s remains after the unload", cycle, gone[i]);
			left++;
		}
	for (i = 0; i < NDIRS; i++) {
		list_dir(driver_dirs[i], &now);
		for (j = 0; j < now.n; j++)
			if (!name_in(&b->dirs[i], now.names[j])) {
				TH_LOG("cycle %d: %s/%s remains after the unload", cycle,
				       driver_dirs[i], now.names[j]);
				left++;
			}
	}
	if (maia_hwmon_present()) {
		TH_LOG("cycle %d: a hwmon device named maia remains after the unload", cycle);
		left++;
	}
	return left;
}

/* --- whole-cache counts, for information only ------------------------------ */

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

/* Object counts of every SLUB cache after dropping caches and shrinking each. */
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
 * Counts twice and keeps the second, so that the dentries and inodes of the
 * walk itself are there in every snapshot.
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

static long cache_objects(const struct snapshot *s, const char *name)
{
	struct slab_count key, *hit;

	snprintf(key.name, sizeof(key.name), "%s", name);
	hit = bsearch(&key, s->caches, s->ncaches, sizeof(s->caches[0]), cmp_cache);
	return hit ? hit->objects : 0;
}

/*
 * Logs every cache that grew by a quarter of an object a cycle or more.
 * Information only: these counts include objects waiting for RCU, the dcache
 * and inode LRUs and everything else the machine did meanwhile, and grow on
 * a busy machine without any leak (Documentation/reliability.rst).
 */
static void log_cache_growth(struct __test_metadata *_metadata, const struct snapshot *a,
			     const struct snapshot *b, const struct snapshot *c, int n1, int n2)
{
	int i;

	for (i = 0; i < c->ncaches; i++) {
		long oa = cache_objects(a, c->caches[i].name);
		long ob = cache_objects(b, c->caches[i].name);
		long oc = c->caches[i].objects;

		if ((oc - oa) * 4 >= n1 + n2)
			TH_LOG("info: cache %s: %ld -> %ld -> %ld objects over %d + %d cycles",
			       c->caches[i].name, oa, ob, oc, n1, n2);
	}
	TH_LOG("info: VmallocUsed %ld -> %ld -> %ld kB, SUnreclaim %+ld kB, MemAvailable %+ld kB",
	       a->vmalloc_kb, b->vmalloc_kb, c->vmalloc_kb, c->sunreclaim_kb - a->sunreclaim_kb,
	       c->available_kb - a->available_kb);
}

/* --- the test -------------------------------------------------------------- */

FIXTURE(module) {
	int pci_functions;
	struct files_baseline files;
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
	if (access(DEBUGFS "/accel", F_OK))
		TH_LOG("no %s/accel (debugfs not mounted?): debugfs files not checked", DEBUGFS);
	/* What the driver loaded at boot allocated counts too. */
	if (maia_module_loaded())
		ASSERT_EQ(0, record_maia_text());
	ASSERT_EQ(0, maia_module_ensure_unloaded());
	take_files_baseline(&self->files);
}

FIXTURE_TEARDOWN(module)
{
	/* Leave the driver loaded, as the tests that follow expect. */
	if (!maia_module_loaded())
		maia_module_load(NULL);
}

/* One cycle: load, wait for every node, ping, unload, nothing of it left. */
static void cycle(struct __test_metadata *_metadata, FIXTURE_DATA(module) *self, int i)
{
	int ret;

	ret = maia_module_load(NULL);
	ASSERT_EQ(0, ret) TH_LOG("cycle %d: load %s: %s", i, maia_ko_path(), strerror(-ret));
	ret = record_maia_text();
	ASSERT_EQ(0, ret) TH_LOG("cycle %d: where is maia.ko's text: %s", i, strerror(-ret));
	ASSERT_EQ(self->pci_functions, maia_wait_nodes(self->pci_functions, 10000))
		TH_LOG("cycle %d: not every device probed", i);
	ASSERT_EQ(0, maia_ping_first(0x10000 + i)) TH_LOG("cycle %d: ping failed", i);
	ret = maia_module_unload();
	ASSERT_EQ(0, ret) TH_LOG("cycle %d: unload: %s", i, strerror(-ret));
	ASSERT_EQ(0, files_left(_metadata, &self->files, i));
}

TEST_F_TIMEOUT(module, load_unload_cycles_no_leak, 5400)
{
	int cycles = maia_env_ull("MAIA_LOAD_CYCLES", 50);
	static struct snapshot first, middle, last;
	long objects;
	int i, mid, areas;
	long long t0;
	bool slab;

	ASSERT_LE(WARMUP_CYCLES + 4, cycles);
	/* Unequal stretches tell per-cycle growth from per-snapshot growth. */
	mid = WARMUP_CYCLES + (cycles - WARMUP_CYCLES) / 3;
	t0 = maia_now_ms();
	for (i = 0; i < cycles; i++) {
		if (i == WARMUP_CYCLES)
			ASSERT_EQ(0, take_snapshot(&first)) TH_LOG("no /sys/kernel/slab counts");
		if (i == mid)
			ASSERT_EQ(0, take_snapshot(&middle));
		cycle(_metadata, self, i);
	}
	TH_LOG("%d cycles with %d device(s) in %lld ms, no driver file left after any unload; "
	       "maia.ko text at %d address(es)", cycles, self->pci_functions,
	       maia_now_ms() - t0, ntexts);

	ASSERT_EQ(0, take_snapshot(&last));
	log_cache_growth(_metadata, &first, &middle, &last, mid - WARMUP_CYCLES, cycles - mid);

	/* Nothing the driver allocated is live any more. */
	slab = have_slab_traces();
	if (!slab)
		TH_LOG("slab check skipped: no %s/*/alloc_traces (boot with slub_debug=U)",
		       SLAB_DEBUGFS);
	settle(_metadata, slab, &objects, &areas);
	EXPECT_EQ(0, areas) TH_LOG("vmalloc areas of maia.ko left after the unload");
	EXPECT_EQ(0, objects) TH_LOG("slab objects allocated by maia.ko left after the unload");

	/* The device works after the last load. */
	ASSERT_EQ(0, maia_module_load(NULL));
	ASSERT_EQ(self->pci_functions, maia_wait_nodes(self->pci_functions, 10000));
	EXPECT_EQ(0, maia_ping_first(0xfeedfacecafebeefull));
}

TEST_HARNESS_MAIN
