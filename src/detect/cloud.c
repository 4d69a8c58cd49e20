/*
 * cloud: the host's cloud, instance type, region and Spot status from the cloud's metadata service (see
 * cloud.h). The services' answers are parsed by the pure functions first in this file; the requests go through
 * imds.c within one budget.
 */
#include "detect/cloud.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/hwfile.h"
#include "detect/imds.h"
#include "core/mem.h"

#define AZURE_CHASSIS_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"
#define AWS_TOKEN_MAX 1024
#define AZURE_API_VERSION "2021-02-01"

const char *cloud_kind_name(enum cloud_kind kind)
{
	switch (kind) {
	case CLOUD_GCE:
		return "gce";
	case CLOUD_AWS:
		return "aws";
	case CLOUD_AZURE:
		return "azure";
	case CLOUD_NONE:
		break;
	}
	return "none";
}

const char *cloud_state_name(enum cloud_state state)
{
	switch (state) {
	case CLOUD_KNOWN:
		return "known";
	case CLOUD_FAILED:
		return "failed";
	case CLOUD_NOT_A_CLOUD:
		return "not_a_cloud";
	case CLOUD_OFF:
		return "off";
	case CLOUD_PENDING:
		break;
	}
	return "pending";
}

void cloud_host_init(struct cloud_host *h)
{
	memset(h, 0, sizeof(*h));
	h->cloud = CLOUD_NONE;
	h->state = CLOUD_PENDING;
	h->spot = -1;
}

/* --- the DMI --- */

static void dmi(const char *root, const char *name, char *out, size_t outsz)
{
	if (hwfile_read_line(out, outsz, "%s/class/dmi/id/%s", root, name) != 0)
		out[0] = '\0';
}

enum cloud_kind cloud_from_dmi(const char *sysfs_root, char *why, size_t whysz)
{
	char product[128], sys_vendor[128], bios_vendor[128], bios_version[128], chassis_tag[128];

	dmi(sysfs_root, "product_name", product, sizeof(product));
	dmi(sysfs_root, "sys_vendor", sys_vendor, sizeof(sys_vendor));
	dmi(sysfs_root, "bios_vendor", bios_vendor, sizeof(bios_vendor));
	dmi(sysfs_root, "bios_version", bios_version, sizeof(bios_version));
	dmi(sysfs_root, "chassis_asset_tag", chassis_tag, sizeof(chassis_tag));
	if (strstr(product, "Google Compute Engine") != NULL || strcmp(sys_vendor, "Google") == 0 ||
	    strcmp(bios_vendor, "Google") == 0) {
		snprintf(why, whysz, "DMI product_name '%.60s', sys_vendor '%.40s'", product, sys_vendor);
		return CLOUD_GCE;
	}
	if (strcmp(sys_vendor, "Amazon EC2") == 0 || strcmp(bios_vendor, "Amazon EC2") == 0 ||
	    strcasestr(bios_version, "amazon") != NULL) {
		snprintf(why, whysz, "DMI sys_vendor '%.40s', bios_version '%.40s'", sys_vendor, bios_version);
		return CLOUD_AWS;
	}
	if (strcmp(chassis_tag, AZURE_CHASSIS_ASSET_TAG) == 0) {
		snprintf(why, whysz, "DMI chassis_asset_tag '%s'", chassis_tag);
		return CLOUD_AZURE;
	}
	snprintf(why, whysz, "DMI names no cloud (sys_vendor '%.40s', product_name '%.60s')", sys_vendor, product);
	return CLOUD_NONE;
}

/* --- parsers --- */

int cloud_name_check(const char *s)
{
	size_t len = s != NULL ? strlen(s) : 0;

	if (len == 0 || len >= CLOUD_NAME_MAX)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return -1;
	return 0;
}

/* Copies len bytes of text without the blanks around them into out when they form a valid name. */
static int take_name(const char *text, size_t len, char *out, size_t outsz)
{
	char buf[CLOUD_NAME_MAX];

	while (len > 0 && isspace((unsigned char)*text)) {
		text++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	if (len == 0 || len >= sizeof(buf) || len >= outsz)
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (cloud_name_check(buf) != 0)
		return -1;
	memcpy(out, buf, len + 1);
	return 0;
}

int cloud_parse_gce_path(const char *text, size_t len, char *out, size_t outsz)
{
	size_t start = 0;

	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	for (size_t i = 0; i < len; i++)
		if (text[i] == '/')
			start = i + 1;
	return take_name(text + start, len - start, out, outsz);
}

int cloud_gce_region_of_zone(const char *zone, char *out, size_t outsz)
{
	const char *dash = strrchr(zone, '-');
	size_t len;

	if (cloud_name_check(zone) != 0 || dash == NULL || dash == zone || dash[1] == '\0')
		return -1;
	len = (size_t)(dash - zone);
	if (len >= outsz)
		return -1;
	memcpy(out, zone, len);
	out[len] = '\0';
	return 0;
}

/* Parses text as a JSON object; NULL when it is not one. */
static json_t *object_of(const char *text, size_t len)
{
	json_error_t je;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);

	if (doc != NULL && !json_is_object(doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* A string member checked as a name into out; "" allowed when optional. */
static int member_name(json_t *doc, const char *key, bool optional, char *out, size_t outsz)
{
	json_t *v = json_object_get(doc, key);
	const char *s = json_string_value(v);

	if (v == NULL || json_is_null(v) || (s != NULL && *s == '\0' && optional)) {
		if (!optional)
			return -1;
		out[0] = '\0';
		return 0;
	}
	if (s == NULL)
		return -1;
	return take_name(s, strlen(s), out, outsz);
}

int cloud_parse_gce_scheduling(const char *text, size_t len, int *spot)
{
	json_t *doc = object_of(text, len);
	const char *pre, *model;
	int rc = -1;

	if (doc == NULL)
		return -1;
	pre = json_string_value(json_object_get(doc, "preemptible"));
	model = json_string_value(json_object_get(doc, "provisioningModel"));
	if (pre == NULL && model == NULL)
		goto out;
	*spot = (pre != NULL && strcasecmp(pre, "TRUE") == 0) || (model != NULL && strcasecmp(model, "SPOT") == 0);
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

int cloud_parse_aws_identity(const char *text, size_t len, struct cloud_host *h)
{
	char type[CLOUD_NAME_MAX], region[CLOUD_NAME_MAX], zone[CLOUD_NAME_MAX];
	json_t *doc = object_of(text, len);
	int rc = -1;

	if (doc == NULL)
		return -1;
	if (member_name(doc, "instanceType", false, type, sizeof(type)) != 0 ||
	    member_name(doc, "region", false, region, sizeof(region)) != 0 ||
	    member_name(doc, "availabilityZone", true, zone, sizeof(zone)) != 0)
		goto out;
	memcpy(h->instance_type, type, sizeof(type));
	memcpy(h->region, region, sizeof(region));
	memcpy(h->zone, zone, sizeof(zone));
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

int cloud_parse_aws_lifecycle(const char *text, size_t len, int *spot)
{
	char word[CLOUD_NAME_MAX];

	if (take_name(text, len, word, sizeof(word)) != 0)
		return -1;
	if (strcmp(word, "spot") == 0)
		*spot = 1;
	else if (strcmp(word, "on-demand") == 0 || strcmp(word, "scheduled") == 0)
		*spot = 0;
	else
		return -1;
	return 0;
}

int cloud_parse_azure_compute(const char *text, size_t len, struct cloud_host *h)
{
	char type[CLOUD_NAME_MAX], region[CLOUD_NAME_MAX], zone[CLOUD_NAME_MAX], priority[CLOUD_NAME_MAX];
	json_t *doc = object_of(text, len);
	int rc = -1;

	if (doc == NULL)
		return -1;
	if (member_name(doc, "vmSize", false, type, sizeof(type)) != 0 ||
	    member_name(doc, "location", false, region, sizeof(region)) != 0 ||
	    member_name(doc, "zone", true, zone, sizeof(zone)) != 0 ||
	    member_name(doc, "priority", true, priority, sizeof(priority)) != 0)
		goto out;
	if (priority[0] != '\0' && strcasecmp(priority, "Spot") != 0 && strcasecmp(priority, "Regular") != 0 &&
	    strcasecmp(priority, "Low") != 0)
		goto out;
	memcpy(h->instance_type, type, sizeof(type));
	memcpy(h->region, region, sizeof(region));
	memcpy(h->zone, zone, sizeof(zone));
	h->spot = strcasecmp(priority, "Spot") == 0;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

/* --- the GPUs on the PCI bus --- */

void cloud_pci_gpus(const char *sysfs_root, struct cloud_host *h)
{
	char path[HWFILE_PATH_MAX];
	DIR *d;

	h->npci_gpus = 0;
	if (snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs_root) >= (int)sizeof(path))
		return;
	d = opendir(path);
	if (d == NULL)
		return;
	for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
		uint64_t vendor, device, pci_class;
		unsigned k = 0;

		if (e->d_name[0] == '.' || hwfile_read_u64(&vendor, "%s/%s/vendor", path, e->d_name) != 0 ||
		    vendor != CLOUD_PCI_NVIDIA || hwfile_read_u64(&pci_class, "%s/%s/class", path, e->d_name) != 0 ||
		    (pci_class >> 16) != 0x03 || hwfile_read_u64(&device, "%s/%s/device", path, e->d_name) != 0 ||
		    device > 0xffff)
			continue;
		while (k < h->npci_gpus && h->pci_gpus[k].device != device)
			k++;
		if (k == h->npci_gpus) {
			if (k == CLOUD_GPU_KINDS)
				continue;
			h->pci_gpus[k] = (struct cloud_gpus){.vendor = (unsigned)vendor, .device = (unsigned)device};
			h->npci_gpus++;
		}
		h->pci_gpus[k].count++;
	}
	closedir(d);
}

/* --- the services --- */

/* One request's shared state: the budget's start and the answer buffer. */
struct ask {
	uint64_t start_ns;
	struct imds_answer a;
	char why[160];
};

static long ms_left(const struct ask *q)
{
	uint64_t spent = (clock_mono_ns() - q->start_ns) / 1000000u;

	return spent >= CLOUD_BUDGET_MS ? 0 : (long)(CLOUD_BUDGET_MS - spent);
}

/* Sends one request of the ask; 0 when it answered 200. */
static int ask_send(struct ask *q, const char *method, const char *url, const char *h1, const char *h2)
{
	const struct imds_request req = {.method = method, .url = url, .headers = {h1, h2}, .timeout_ms = ms_left(q)};

	return imds_request(&req, &q->a, q->why, sizeof(q->why));
}

/* Formats base + path into url; -1 when it does not fit. */
static int url_of(char *url, size_t urlsz, const char *base, const char *path)
{
	return snprintf(url, urlsz, "%s%s", base, path) < (int)urlsz ? 0 : -1;
}

static int ask_gce(const struct config *cfg, struct ask *q, struct cloud_host *h)
{
	static const char flavor[] = "Metadata-Flavor: Google";
	char url[1100];

	if (url_of(url, sizeof(url), cfg->gce_metadata_url, "/instance/machine-type") != 0 ||
	    ask_send(q, "GET", url, flavor, NULL) != 0) {
		snprintf(h->note, sizeof(h->note), "GCE metadata machine-type: %s", q->why);
		return -1;
	}
	if (cloud_parse_gce_path(q->a.data, q->a.len, h->instance_type, sizeof(h->instance_type)) != 0) {
		snprintf(h->note, sizeof(h->note), "GCE metadata machine-type: not a machine type (%.40s)", q->a.data);
		return -1;
	}
	if (url_of(url, sizeof(url), cfg->gce_metadata_url, "/instance/zone") != 0 ||
	    ask_send(q, "GET", url, flavor, NULL) != 0) {
		snprintf(h->note, sizeof(h->note), "GCE metadata zone: %s", q->why);
		return -1;
	}
	if (cloud_parse_gce_path(q->a.data, q->a.len, h->zone, sizeof(h->zone)) != 0 ||
	    cloud_gce_region_of_zone(h->zone, h->region, sizeof(h->region)) != 0) {
		h->zone[0] = '\0';
		snprintf(h->note, sizeof(h->note), "GCE metadata zone: not a zone (%.40s)", q->a.data);
		return -1;
	}
	/* the provisioning model is worth knowing but not worth the instance type: a failure leaves it unknown */
	if (url_of(url, sizeof(url), cfg->gce_metadata_url, "/instance/scheduling/?recursive=true") != 0 ||
	    ask_send(q, "GET", url, flavor, NULL) != 0)
		snprintf(h->note, sizeof(h->note), "GCE metadata scheduling: %s; Spot or on-demand unknown", q->why);
	else if (cloud_parse_gce_scheduling(q->a.data, q->a.len, &h->spot) != 0)
		snprintf(h->note, sizeof(h->note), "GCE metadata scheduling: malformed; Spot or on-demand unknown");
	return 0;
}

static int ask_aws(const struct config *cfg, struct ask *q, struct cloud_host *h)
{
	char url[1100];
	char token_header[AWS_TOKEN_MAX + 40];
	size_t tlen;

	/* IMDSv2: a session token first (PUT), then every GET carries it; acceld never falls back to IMDSv1 */
	if (url_of(url, sizeof(url), cfg->aws_metadata_url, "/latest/api/token") != 0 ||
	    ask_send(q, "PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 60", NULL) != 0) {
		snprintf(h->note, sizeof(h->note), "EC2 metadata token (IMDSv2): %s", q->why);
		return -1;
	}
	tlen = strcspn(q->a.data, "\r\n");
	if (tlen == 0 || tlen > AWS_TOKEN_MAX || tlen != q->a.len) {
		snprintf(h->note, sizeof(h->note), "EC2 metadata token (IMDSv2): malformed token");
		return -1;
	}
	for (size_t i = 0; i < tlen; i++) {
		if (!isgraph((unsigned char)q->a.data[i])) {
			snprintf(h->note, sizeof(h->note), "EC2 metadata token (IMDSv2): malformed token");
			return -1;
		}
	}
	snprintf(token_header, sizeof(token_header), "X-aws-ec2-metadata-token: %s", q->a.data);
	if (url_of(url, sizeof(url), cfg->aws_metadata_url, "/latest/dynamic/instance-identity/document") != 0 ||
	    ask_send(q, "GET", url, token_header, NULL) != 0) {
		snprintf(h->note, sizeof(h->note), "EC2 metadata identity document: %s", q->why);
		return -1;
	}
	if (cloud_parse_aws_identity(q->a.data, q->a.len, h) != 0) {
		snprintf(h->note, sizeof(h->note), "EC2 metadata identity document: malformed");
		return -1;
	}
	if (url_of(url, sizeof(url), cfg->aws_metadata_url, "/latest/meta-data/instance-life-cycle") != 0 ||
	    ask_send(q, "GET", url, token_header, NULL) != 0)
		snprintf(h->note, sizeof(h->note), "EC2 metadata instance-life-cycle: %s; Spot or on-demand unknown",
			 q->why);
	else if (cloud_parse_aws_lifecycle(q->a.data, q->a.len, &h->spot) != 0)
		snprintf(h->note, sizeof(h->note), "EC2 metadata instance-life-cycle: malformed; Spot or on-demand unknown");
	return 0;
}

static int ask_azure(const struct config *cfg, struct ask *q, struct cloud_host *h)
{
	char url[1100];

	if (url_of(url, sizeof(url), cfg->azure_metadata_url,
		   "/metadata/instance/compute?api-version=" AZURE_API_VERSION) != 0 ||
	    ask_send(q, "GET", url, "Metadata: true", NULL) != 0) {
		snprintf(h->note, sizeof(h->note), "Azure metadata compute: %s", q->why);
		return -1;
	}
	if (cloud_parse_azure_compute(q->a.data, q->a.len, h) != 0) {
		snprintf(h->note, sizeof(h->note), "Azure metadata compute: malformed");
		return -1;
	}
	return 0;
}

void cloud_learn(const struct config *cfg, struct cloud_host *out)
{
	static const enum cloud_kind forced[] = {
		[CLOUD_CHOICE_GCE] = CLOUD_GCE, [CLOUD_CHOICE_AWS] = CLOUD_AWS, [CLOUD_CHOICE_AZURE] = CLOUD_AZURE};
	struct ask q = {.start_ns = clock_mono_ns(), .a = {.data = xmalloc(IMDS_MAX_BYTES + 1)}};
	int rc = -1;

	cloud_host_init(out);
	if (cfg->cloud == CLOUD_CHOICE_NONE) {
		out->state = CLOUD_OFF;
		snprintf(out->detected_by, sizeof(out->detected_by), "ACCELD_CLOUD=none");
		goto done;
	}
	if (cfg->cloud == CLOUD_CHOICE_GCE || cfg->cloud == CLOUD_CHOICE_AWS || cfg->cloud == CLOUD_CHOICE_AZURE) {
		out->cloud = forced[cfg->cloud];
		snprintf(out->detected_by, sizeof(out->detected_by), "ACCELD_CLOUD=%s", cloud_kind_name(out->cloud));
	} else {
		out->cloud = cloud_from_dmi(cfg->sysfs_root, out->detected_by, sizeof(out->detected_by));
	}
	switch (out->cloud) {
	case CLOUD_GCE:
		rc = ask_gce(cfg, &q, out);
		break;
	case CLOUD_AWS:
		rc = ask_aws(cfg, &q, out);
		break;
	case CLOUD_AZURE:
		rc = ask_azure(cfg, &q, out);
		break;
	case CLOUD_NONE:
		out->state = CLOUD_NOT_A_CLOUD;
		goto done;
	}
	if (rc == 0) {
		out->state = CLOUD_KNOWN;
		/* GCE bills GPUs attached to an n1 apart from its machine type, and no metadata path lists them */
		if (out->cloud == CLOUD_GCE)
			cloud_pci_gpus(cfg->sysfs_root, out);
	} else {
		/* nothing half-learned is kept: a type without its region prices nothing */
		out->state = CLOUD_FAILED;
		out->instance_type[0] = out->region[0] = out->zone[0] = '\0';
		out->spot = -1;
	}
done:
	free(q.a.data);
}

json_t *cloud_host_json(const struct cloud_host *h)
{
	json_t *o = json_object();

	json_object_set_new(o, "cloud", json_string(cloud_kind_name(h->cloud)));
	json_object_set_new(o, "state", json_string(cloud_state_name(h->state)));
	json_object_set_new(o, "instance_type", h->instance_type[0] ? json_string(h->instance_type) : json_null());
	json_object_set_new(o, "region", h->region[0] ? json_string(h->region) : json_null());
	json_object_set_new(o, "zone", h->zone[0] ? json_string(h->zone) : json_null());
	json_object_set_new(o, "spot", h->spot < 0 ? json_null() : json_boolean(h->spot));
	if (h->detected_by[0])
		json_object_set_new(o, "detected_by", json_string(h->detected_by));
	if (h->note[0])
		json_object_set_new(o, "note", json_string(h->note));
	if (h->npci_gpus > 0) {
		json_t *a = json_array();

		for (unsigned k = 0; k < h->npci_gpus && k < CLOUD_GPU_KINDS; k++) {
			char id[16];

			snprintf(id, sizeof(id), "%04x:%04x", h->pci_gpus[k].vendor & 0xffff,
				 h->pci_gpus[k].device & 0xffff);
			json_array_append_new(a, json_pack("{s:s, s:I}", "pci_id", id, "count",
							   (json_int_t)h->pci_gpus[k].count));
		}
		json_object_set_new(o, "pci_gpus", a);
	}
	return o;
}

/* --- in the background --- */

struct cloud {
	const struct config *cfg;
	pthread_mutex_t mu;
	struct cloud_host host;
	cloud_done_fn done;
	void *ctx;
	pthread_t thread;
	bool started;
};

struct cloud *cloud_new(const struct config *cfg)
{
	struct cloud *c = xcalloc(1, sizeof(*c));

	c->cfg = cfg;
	pthread_mutex_init(&c->mu, NULL);
	cloud_host_init(&c->host);
	return c;
}

static void *learner(void *arg)
{
	struct cloud *c = arg;
	struct cloud_host h;

	cloud_learn(c->cfg, &h);
	pthread_mutex_lock(&c->mu);
	c->host = h;
	pthread_mutex_unlock(&c->mu);
	if (c->done != NULL)
		c->done(c->ctx, &h);
	return NULL;
}

int cloud_start(struct cloud *c, cloud_done_fn done, void *ctx)
{
	if (c->started)
		return 0;
	c->done = done;
	c->ctx = ctx;
	if (pthread_create(&c->thread, NULL, learner, c) != 0)
		return -1;
	c->started = true;
	return 0;
}

void cloud_get(struct cloud *c, struct cloud_host *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->host;
	pthread_mutex_unlock(&c->mu);
}

void cloud_free(struct cloud *c)
{
	if (c == NULL)
		return;
	if (c->started)
		pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
