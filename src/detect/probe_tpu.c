/*
 * probe_tpu: Google TPUs without a TPU library (see probe_tpu.h). One device per chip: TPU7x shows two PCI
 * functions per chip, so chips are counted per PCI slot. A /dev/accel or /dev/vfio node counts only when the PCI
 * function behind it has vendor 0x1ae0; NVIDIA's accel nodes and BlueField vfio groups are not TPUs.
 */
#include "detect/probe_tpu.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hwfile.h"
#include "detect/imds.h"
#include "core/mem.h"
#include "detect/probe.h"
#include "detect/visible.h"

#define VENDOR_GOOGLE 0x1ae0
#define TPU_MAX_CHIPS 64
#define METADATA_BUDGET_MS 800 /* both metadata requests together */

/* PCI device ids of TPU chips; v2 and v3 share one and differ by subsystem. */
static const struct {
	unsigned device;
	unsigned subsystem; /* 0: any */
	const char *generation;
	const char *model;
	unsigned cores_per_chip;
} tpu_ids[] = {
	{0x0027, 0x004e, "v2", "TPU v2", 2}, {0x0027, 0x004f, "v3", "TPU v3", 2}, {0x005e, 0, "v4", "TPU v4", 2},
	{0x0063, 0, "v5e", "TPU v5e", 1},    {0x0062, 0, "v5p", "TPU v5p", 2},    {0x006f, 0, "v6e", "TPU v6e", 1},
	{0x0076, 0, "tpu7x", "TPU7x", 2},
};

/* Accelerator-type prefixes and what their number counts. */
static const struct {
	const char *prefix;
	const char *generation;
	unsigned cores_per_unit; /* 2: the number counts TensorCores; 1: chips */
} type_names[] = {
	{"v2", "v2", 2},	  {"v3", "v3", 2},   {"v4", "v4", 2},   {"v5p", "v5p", 2},  {"v5litepod", "v5e", 1},
	{"v5lite", "v5e", 1}, {"v5e", "v5e", 1}, {"v6e", "v6e", 1}, {"tpu7x", "tpu7x", 2},
};

struct chip {
	char addr[16];           /* the lowest PCI function of the chip */
	unsigned device, subsystem;
	int id;                  /* row of tpu_ids; -1 an id acceld does not know */
	int numa;
	char node[64];
};

/* What the metadata server said, kept across probes (it does not change while the VM lives). */
struct tpu_state {
	bool metadata_done;
	struct tpu_env meta;
};

/* --- pure parsers --- */

static bool is_key_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

static bool is_bare_value_char(char c)
{
	return isalnum((unsigned char)c) || strchr("._,:/-+=@", c) != NULL;
}

/* Parses a decimal in [0, max] from exactly len bytes. */
static int parse_uint(const char *s, size_t len, unsigned max, unsigned *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 9)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int probe_tpu_topology_check(const char *text)
{
	size_t factors = 0;
	const char *p = text;

	if (text == NULL || strlen(text) >= sizeof(((struct tpu_env *)0)->topology))
		return -1;
	for (;;) {
		size_t n = strspn(p, "0123456789");
		unsigned v;

		if (parse_uint(p, n, 100000, &v) != 0 || v == 0)
			return -1;
		factors++;
		p += n;
		if (*p == '\0')
			break;
		if (*p != 'x' || factors == 3)
			return -1;
		p++;
	}
	return 0;
}

int probe_tpu_type_parse(const char *name, char *gen, size_t gensz, unsigned *chips)
{
	const char *dash;
	size_t plen;
	unsigned n;

	if (name == NULL)
		return -1;
	dash = strrchr(name, '-');
	if (dash == NULL)
		return -1;
	plen = (size_t)(dash - name);
	if (parse_uint(dash + 1, strlen(dash + 1), 1000000, &n) != 0 || n == 0)
		return -1;
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strlen(type_names[i].prefix) != plen || strncasecmp(name, type_names[i].prefix, plen) != 0)
			continue;
		if (n % type_names[i].cores_per_unit != 0)
			return -1;
		if (strlen(type_names[i].generation) >= gensz)
			return -1;
		memcpy(gen, type_names[i].generation, strlen(type_names[i].generation) + 1);
		*chips = n / type_names[i].cores_per_unit;
		return 0;
	}
	return -1;
}

/* Stores a known key's value; -1 when it is a duplicate or malformed. */
static int env_store(const char *key, size_t klen, const char *val, size_t vlen, struct tpu_env *out)
{
	char text[TPU_ENV_MAX_VALUE + 1];
	char gen[16];
	unsigned n;

	memcpy(text, val, vlen);
	text[vlen] = '\0';
	if (klen == 16 && strncmp(key, "ACCELERATOR_TYPE", klen) == 0) {
		if (out->accelerator_type[0] != '\0' || vlen >= sizeof(out->accelerator_type) ||
		    probe_tpu_type_parse(text, gen, sizeof(gen), &n) != 0)
			return -1;
		memcpy(out->accelerator_type, text, vlen + 1);
	} else if (klen == 8 && strncmp(key, "TOPOLOGY", klen) == 0) {
		if (out->topology[0] != '\0' || probe_tpu_topology_check(text) != 0)
			return -1;
		memcpy(out->topology, text, vlen + 1);
	} else if (klen == 9 && strncmp(key, "WORKER_ID", klen) == 0) {
		if (out->worker_id >= 0 || parse_uint(text, vlen, 1000000, &n) != 0)
			return -1;
		out->worker_id = (int)n;
	}
	return 0;
}

/* Parses one line (without its newline); 0 or -1. */
static int env_line(const char *s, size_t len, struct tpu_env *out)
{
	size_t k = 0, v;
	const char *val;
	size_t vlen;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len == 0)
		return 0;
	while (k < len && k < 128 && is_key_char(s[k], k == 0))
		k++;
	if (k == 0 || k >= len || s[k] != ':')
		return -1;
	/* only three keys are used; the others (WORKER_NETWORK_ENDPOINTS and the like can be long) are skipped unread */
	if (!((k == 16 && strncmp(s, "ACCELERATOR_TYPE", k) == 0) || (k == 8 && strncmp(s, "TOPOLOGY", k) == 0) ||
	      (k == 9 && strncmp(s, "WORKER_ID", k) == 0)))
		return 0;
	v = k + 1;
	while (v < len && s[v] == ' ')
		v++;
	if (v < len && s[v] == '\'') {
		if (s[len - 1] != '\'' || len - v < 2)
			return -1;
		val = s + v + 1;
		vlen = len - v - 2;
		/* blanks inside the quotes are padding too */
		while (vlen > 0 && val[0] == ' ') {
			val++;
			vlen--;
		}
		while (vlen > 0 && val[vlen - 1] == ' ')
			vlen--;
		for (size_t i = 0; i < vlen; i++)
			if (val[i] == '\'' || (unsigned char)val[i] < 0x20 || val[i] == 0x7f)
				return -1;
	} else {
		val = s + v;
		vlen = len - v;
		for (size_t i = 0; i < vlen; i++)
			if (!is_bare_value_char(val[i]))
				return -1;
	}
	if (vlen > TPU_ENV_MAX_VALUE)
		return -1;
	return env_store(s, k, val, vlen, out);
}

int probe_tpu_env_parse(const char *text, size_t len, struct tpu_env *out)
{
	size_t pos = 0, lines = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->worker_id = -1;
	if (text == NULL || len > TPU_ENV_MAX_BYTES || memchr(text, '\0', len) != NULL)
		goto out;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;

		if (++lines > TPU_ENV_MAX_LINES || env_line(text + pos, end - pos, out) != 0)
			goto out;
		pos = end + 1;
	}
	rc = 0;
out:
	if (rc != 0) {
		memset(out, 0, sizeof(*out));
		out->worker_id = -1;
	}
	return rc;
}

/* --- the GCE metadata server --- */

/* GETs url with Google's metadata header within timeout_ms (imds.h); the body goes into a. 0, or -1 with why. */
static int metadata_get(const char *url, long timeout_ms, struct imds_answer *a, char *why, size_t whysz)
{
	const struct imds_request req = {.url = url, .headers = {"Metadata-Flavor: Google"}, .timeout_ms = timeout_ms};

	return imds_request(&req, a, why, whysz);
}

static long ms_left(uint64_t start_ns)
{
	uint64_t spent = (clock_mono_ns() - start_ns) / 1000000u;

	return spent >= METADATA_BUDGET_MS ? 0 : (long)(METADATA_BUDGET_MS - spent);
}

/* Asks the metadata server for accelerator-type and tpu-env; returns 0 when either answered usefully. */
static int metadata_fetch(const struct config *cfg, struct tpu_env *out, char *why, size_t whysz)
{
	struct imds_answer b = {.data = xmalloc(IMDS_MAX_BYTES + 1)};
	char url[1024];
	char gen[16];
	unsigned n;
	uint64_t start = clock_mono_ns();
	bool got = false;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->worker_id = -1;
	if (snprintf(url, sizeof(url), "%s/instance/attributes/tpu-env", cfg->gce_metadata_url) >= (int)sizeof(url)) {
		snprintf(why, whysz, "metadata URL too long");
		goto out;
	}
	if (metadata_get(url, ms_left(start), &b, why, whysz) == 0) {
		if (probe_tpu_env_parse(b.data, b.len, out) != 0) {
			snprintf(why, whysz, "tpu-env is malformed");
			goto out;
		}
		got = true;
	}
	if (ms_left(start) == 0)
		goto out;
	snprintf(url, sizeof(url), "%s/instance/attributes/accelerator-type", cfg->gce_metadata_url);
	if (metadata_get(url, ms_left(start), &b, why, whysz) == 0) {
		char *t = b.data;
		size_t len;

		device_set_trimmed(t, b.len + 1, t);
		len = strlen(t);
		if (len >= sizeof(out->accelerator_type) || probe_tpu_type_parse(t, gen, sizeof(gen), &n) != 0) {
			snprintf(why, whysz, "accelerator-type is malformed");
			goto out;
		}
		if (out->accelerator_type[0] == '\0')
			memcpy(out->accelerator_type, t, len + 1);
		got = true;
	}
	rc = got ? 0 : -1;
out:
	free(b.data);
	return rc;
}

/* --- hardware --- */

static int find_id(unsigned device, unsigned subsystem)
{
	for (size_t i = 0; i < sizeof(tpu_ids) / sizeof(tpu_ids[0]); i++)
		if (tpu_ids[i].device == device && (tpu_ids[i].subsystem == 0 || tpu_ids[i].subsystem == subsystem))
			return (int)i;
	return -1;
}

/* Whether two PCI addresses share domain, bus and device (differ at most by function). */
static bool same_slot(const char *a, const char *b)
{
	return strncmp(a, b, 10) == 0;
}

/*
 * Records the PCI function at dir (a sysfs device folder) with address addr when it is a TPU chip; returns the
 * chip's index in chips or -1. A second function of a chip already seen merges into it.
 */
static int add_function(struct chip *chips, size_t *n, const char *dir, const char *addr)
{
	uint64_t vendor, device, sub = 0;
	int64_t numa;
	int id;

	if (hwfile_read_u64(&vendor, "%s/vendor", dir) != 0 || vendor != VENDOR_GOOGLE ||
	    hwfile_read_u64(&device, "%s/device", dir) != 0)
		return -1;
	hwfile_read_u64(&sub, "%s/subsystem_device", dir);
	id = find_id((unsigned)device, (unsigned)sub);
	/* gVNIC and other Google functions share the vendor id */
	if (id < 0 && device != 0x0027)
		return -1;
	for (size_t i = 0; i < *n; i++) {
		if (same_slot(chips[i].addr, addr)) {
			if (strcmp(addr, chips[i].addr) < 0)
				memcpy(chips[i].addr, addr, strlen(addr) + 1);
			return (int)i;
		}
	}
	if (*n >= TPU_MAX_CHIPS)
		return -1;
	memset(&chips[*n], 0, sizeof(chips[*n]));
	memcpy(chips[*n].addr, addr, strlen(addr) + 1);
	chips[*n].device = (unsigned)device;
	chips[*n].subsystem = (unsigned)sub;
	chips[*n].id = id;
	chips[*n].numa = hwfile_read_i64(&numa, "%s/numa_node", dir) == 0 && numa >= 0 && numa < 4096 ? (int)numa : -1;
	return (int)(*n)++;
}

static void scan_pci(const struct config *cfg, struct chip *chips, size_t *n)
{
	char path[HWFILE_PATH_MAX];
	char addr[16];
	DIR *d;

	snprintf(path, sizeof(path), "%s/bus/pci/devices", cfg->sysfs_root);
	d = opendir(path);
	if (d == NULL)
		return;
	for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
		char dir[HWFILE_PATH_MAX];

		if (hwfile_pci_normalise(e->d_name, addr, sizeof(addr)) != 0 ||
		    snprintf(dir, sizeof(dir), "%s/%s", path, e->d_name) >= (int)sizeof(dir))
			continue;
		add_function(chips, n, dir, addr);
	}
	closedir(d);
}

/* The decimal suffix of name after prefix, or -1. */
static long name_number(const char *name, const char *prefix)
{
	size_t plen = strlen(prefix);
	unsigned v;

	if (strncmp(name, prefix, plen) != 0 || parse_uint(name + plen, strlen(name + plen), 65535, &v) != 0)
		return -1;
	return (long)v;
}

/* /dev/accelN and /dev/accel/accelN whose PCI function is a TPU (v2-v4). */
static void scan_accel(const struct config *cfg, struct chip *chips, size_t *n, const char *sub)
{
	char path[HWFILE_PATH_MAX];
	DIR *d;

	snprintf(path, sizeof(path), "%s%s", cfg->dev_root, sub);
	d = opendir(path);
	if (d == NULL)
		return;
	for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
		long num = name_number(e->d_name, "accel");
		char link[64], addr[16], dir[HWFILE_PATH_MAX];
		int idx;

		if (num < 0 ||
		    hwfile_link_base(link, sizeof(link), "%s/class/accel/accel%ld/device", cfg->sysfs_root, num) != 0 ||
		    hwfile_pci_normalise(link, addr, sizeof(addr)) != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/class/accel/accel%ld/device", cfg->sysfs_root, num);
		idx = add_function(chips, n, dir, addr);
		if (idx >= 0 && chips[idx].node[0] == '\0' &&
		    snprintf(chips[idx].node, sizeof(chips[idx].node), "%s/%s", path, e->d_name) >=
			    (int)sizeof(chips[idx].node))
			chips[idx].node[0] = '\0';
	}
	closedir(d);
}

/* /dev/vfio/<group> whose IOMMU group holds a TPU function (v5e and later). */
static void scan_vfio(const struct config *cfg, struct chip *chips, size_t *n)
{
	char path[HWFILE_PATH_MAX];
	DIR *d;

	snprintf(path, sizeof(path), "%s/vfio", cfg->dev_root);
	d = opendir(path);
	if (d == NULL)
		return;
	for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
		long group = name_number(e->d_name, "");
		char gpath[HWFILE_PATH_MAX];
		DIR *g;

		if (group < 0)
			continue;
		snprintf(gpath, sizeof(gpath), "%s/kernel/iommu_groups/%ld/devices", cfg->sysfs_root, group);
		g = opendir(gpath);
		if (g == NULL)
			continue;
		for (struct dirent *f = readdir(g); f != NULL; f = readdir(g)) {
			char addr[16], dir[HWFILE_PATH_MAX];
			int idx;

			if (hwfile_pci_normalise(f->d_name, addr, sizeof(addr)) != 0 ||
			    snprintf(dir, sizeof(dir), "%s/%s", gpath, f->d_name) >= (int)sizeof(dir))
				continue;
			idx = add_function(chips, n, dir, addr);
			if (idx >= 0 && chips[idx].node[0] == '\0' &&
			    snprintf(chips[idx].node, sizeof(chips[idx].node), "%s/vfio/%ld", cfg->dev_root, group) >=
				    (int)sizeof(chips[idx].node))
				chips[idx].node[0] = '\0';
		}
		closedir(g);
	}
	closedir(d);
}

static int by_addr(const void *a, const void *b)
{
	return strcmp(((const struct chip *)a)->addr, ((const struct chip *)b)->addr);
}


static bool google_host(const struct config *cfg)
{
	char product[128];

	return hwfile_read_line(product, sizeof(product), "%s/class/dmi/id/product_name", cfg->sysfs_root) == 0 &&
	       strstr(product, "Google") != NULL;
}

/*
 * The variable's value without the blanks around it, in buf (cut at bufsz - 1, long enough for the checks to see
 * a value too long for its field); NULL when it is unset or blank.
 */
static const char *env_trimmed(const char *name, char *buf, size_t bufsz)
{
	const char *v = getenv(name);

	if (v == NULL)
		return NULL;
	device_set_trimmed(buf, bufsz, v);
	return buf[0] != '\0' ? buf : NULL;
}

/* The slice facts from the environment, then the metadata server for what is still missing. */
static unsigned slice_info(struct tpu_state *st, const struct config *cfg, struct tpu_env *info,
			   struct probe_result *res)
{
	char type_buf[128], topo_buf[128], worker_buf[32], name_buf[128];
	const char *type = env_trimmed("TPU_ACCELERATOR_TYPE", type_buf, sizeof(type_buf));
	const char *topo = env_trimmed("TPU_TOPOLOGY", topo_buf, sizeof(topo_buf));
	const char *worker = env_trimmed("TPU_WORKER_ID", worker_buf, sizeof(worker_buf));
	const char *name = env_trimmed("TPU_NAME", name_buf, sizeof(name_buf));
	unsigned sources = 0;
	unsigned n;
	char gen[16];

	memset(info, 0, sizeof(*info));
	info->worker_id = -1;
	if (type) {
		if (strlen(type) < sizeof(info->accelerator_type) && probe_tpu_type_parse(type, gen, sizeof(gen), &n) == 0)
			DEVICE_SET(info->accelerator_type, type);
		else
			probe_note(res, "TPU_ACCELERATOR_TYPE '%.32s' is not a TPU type", type);
	}
	if (topo) {
		if (probe_tpu_topology_check(topo) == 0)
			DEVICE_SET(info->topology, topo);
		else
			probe_note(res, "TPU_TOPOLOGY '%.32s' is malformed", topo);
	}
	if (worker) {
		if (parse_uint(worker, strlen(worker), 1000000, &n) == 0)
			info->worker_id = (int)n;
		else
			probe_note(res, "TPU_WORKER_ID '%.16s' is malformed", worker);
	}
	if (name) {
		if (strlen(name) < sizeof(info->name) && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") ==
							     strlen(name))
			DEVICE_SET(info->name, name);
		else
			probe_note(res, "TPU_NAME '%.32s' is not a resource name", name);
	}
	if (info->accelerator_type[0] || info->topology[0] || info->worker_id >= 0 || info->name[0])
		sources |= SOURCE_ENV;
	if (info->accelerator_type[0] == '\0' && google_host(cfg)) {
		if (!st->metadata_done) {
			char why[128] = "";

			if (metadata_fetch(cfg, &st->meta, why, sizeof(why)) == 0)
				st->metadata_done = true;
			else
				probe_note(res, "GCE metadata: %s", why);
		}
		if (st->metadata_done) {
			DEVICE_SET(info->accelerator_type, st->meta.accelerator_type);
			if (info->topology[0] == '\0')
				DEVICE_SET(info->topology, st->meta.topology);
			if (info->worker_id < 0)
				info->worker_id = st->meta.worker_id;
			sources |= SOURCE_METADATA;
		}
	}
	return sources;
}

/* Applies TPU_VISIBLE_CHIPS (chip indices on this host); returns how many chips stay, compacted in order. */
static size_t apply_visible(struct chip *chips, size_t n, unsigned *index, struct probe_result *res)
{
	const char *value = getenv("TPU_VISIBLE_CHIPS");
	struct visible_set set = {.n = n};
	size_t sel[TPU_MAX_CHIPS];
	struct chip kept[TPU_MAX_CHIPS];
	size_t count;
	int stopped;

	count = visible_select(value, &set, sel, TPU_MAX_CHIPS, &stopped);
	if (stopped >= 0)
		probe_note(res, "TPU_VISIBLE_CHIPS entry %d is not a chip; it and later entries are ignored", stopped);
	for (size_t i = 0; i < count; i++)
		kept[i] = chips[sel[i]];
	for (size_t i = 0; i < count; i++) {
		index[i] = (unsigned)sel[i];
		chips[i] = kept[i];
	}
	return count;
}

static void tpu_probe(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res)
{
	struct tpu_state *st = *state;
	struct chip *chips = xcalloc(TPU_MAX_CHIPS, sizeof(*chips));
	unsigned index[TPU_MAX_CHIPS];
	struct tpu_env info;
	unsigned sources = 0;
	char type_gen[16] = "";
	unsigned slice_chips = 0;
	size_t n = 0, visible;

	res->ok = true;
	res->available = false;
	res->why[0] = '\0';
	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		*state = st;
	}
	scan_pci(cfg, chips, &n);
	scan_accel(cfg, chips, &n, "");
	scan_accel(cfg, chips, &n, "/accel");
	scan_vfio(cfg, chips, &n);
	if (n == 0) {
		if (getenv("TPU_ACCELERATOR_TYPE") != NULL)
			probe_note(res, "TPU_ACCELERATOR_TYPE is set but no TPU is on the PCI bus");
		goto out;
	}
	res->available = true;
	qsort(chips, n, sizeof(*chips), by_addr);
	visible = apply_visible(chips, n, index, res);
	sources = slice_info(st, cfg, &info, res);
	if (info.accelerator_type[0])
		probe_tpu_type_parse(info.accelerator_type, type_gen, sizeof(type_gen), &slice_chips);
	for (size_t i = 0; i < visible; i++) {
		const struct chip *c = &chips[i];
		struct device d;
		const char *gen = c->id >= 0 ? tpu_ids[c->id].generation : type_gen;

		device_init(&d, DEVICE_TPU);
		DEVICE_SET(d.vendor, "Google");
		if (c->id >= 0)
			DEVICE_SET(d.model, tpu_ids[c->id].model);
		else if (gen[0])
			snprintf(d.model, sizeof(d.model), "TPU %s", gen);
		DEVICE_SET(d.pci_bus_id, c->addr);
		d.numa_node = c->numa;
		d.sources = SOURCE_PCI | sources | (c->node[0] ? SOURCE_DEVNODE : 0u);
		DEVICE_SET(d.tpu.generation, gen);
		DEVICE_SET(d.tpu.accelerator_type, info.accelerator_type);
		DEVICE_SET(d.tpu.topology, info.topology);
		DEVICE_SET(d.tpu.name, info.name);
		d.tpu.worker_id = info.worker_id;
		d.tpu.chips = (unsigned)visible;
		d.tpu.cores_per_chip = c->id >= 0 ? tpu_ids[c->id].cores_per_chip : 0;
		d.tpu.chip_index = index[i];
		DEVICE_SET(d.tpu.device_node, c->node);
		probe_pcie_sysfs(cfg->sysfs_root, &d);
		device_list_add(out, &d);
		res->found++;
	}
	if (type_gen[0] && chips[0].id >= 0 && strcmp(type_gen, tpu_ids[chips[0].id].generation) != 0)
		probe_note(res, "accelerator type %s does not match the %s chips on the PCI bus", info.accelerator_type,
		     tpu_ids[chips[0].id].generation);
	if (slice_chips > 0 && slice_chips < n)
		probe_note(res, "accelerator type %s has %u chips but this host shows %zu", info.accelerator_type,
		     slice_chips, n);
out:
	free(chips);
}

const struct probe_ops probe_tpu_ops = {
	.name = "tpu",
	.trust = 2,
	.probe = tpu_probe,
	.refresh = NULL,
	.release = free,
};
