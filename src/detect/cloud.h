/*
 * cloud: which cloud VM this host is, learned once from the cloud's own instance metadata service: GCE's metadata
 * server (machine-type, zone, scheduling), EC2's IMDSv2 (a session token, then the identity document and the
 * instance life cycle) or Azure's IMDS (compute: vmSize, location, zone, priority).
 *
 * A service is asked only where the host says which cloud it is, from the DMI names under
 * <sysfs>/class/dmi/id as the clouds' own tools read them (or where ACCELD_CLOUD names the cloud), within one
 * small time budget for all requests together, in a short-lived thread of its own after start (never on a
 * request's path), and never again once it has run. A service that fails, answers slowly or answers garbage
 * leaves a note and an unknown instance type; it is not an error. On GCE the NVIDIA GPUs on the VM's PCI bus are
 * counted too (sysfs, no request), since GCE bills GPUs attached to an n1 apart and its metadata does not list them.
 *
 * The parsers below are pure and bounded so they can be tested and fuzzed on their own.
 */
#ifndef ACCELD_CLOUD_H
#define ACCELD_CLOUD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/config.h"

#define CLOUD_BUDGET_MS 1000 /* every metadata request of one host together */
#define CLOUD_NAME_MAX 64    /* instance types, regions, zones: [A-Za-z0-9._-], at most 63 bytes */
#define CLOUD_GPU_KINDS 4    /* kinds of GPU told apart on one host's PCI bus */
#define CLOUD_PCI_NVIDIA 0x10de

enum cloud_kind { CLOUD_NONE, CLOUD_GCE, CLOUD_AWS, CLOUD_AZURE };

enum cloud_state {
	CLOUD_PENDING,     /* not asked yet */
	CLOUD_KNOWN,       /* the metadata service named the instance type */
	CLOUD_FAILED,      /* a cloud host whose metadata service failed, was slow or answered garbage (see note) */
	CLOUD_NOT_A_CLOUD, /* the DMI names no cloud: bare metal or another hypervisor; nothing was asked */
	CLOUD_OFF,         /* ACCELD_CLOUD=none: nothing was asked */
};

/* GPUs of one kind on the host's PCI bus. */
struct cloud_gpus {
	unsigned vendor;                    /* PCI vendor id: CLOUD_PCI_NVIDIA */
	unsigned device;                    /* PCI device id: 0x1eb8 (T4) */
	unsigned count;
};

/* What acceld knows of the host it runs on. Strings are "" when unknown. */
struct cloud_host {
	enum cloud_kind cloud;
	enum cloud_state state;
	char instance_type[CLOUD_NAME_MAX]; /* "n2d-standard-16", "m7i.large", "Standard_D8s_v5" */
	char region[CLOUD_NAME_MAX];        /* "us-central1", "us-east-1", "eastus" */
	char zone[CLOUD_NAME_MAX];          /* "us-central1-a", "us-east-1b", "1"; "" where the cloud gives none */
	int spot;                           /* 1 Spot (or preemptible), 0 on demand, -1 unknown */
	char detected_by[160];              /* "DMI sys_vendor 'Amazon EC2'", "ACCELD_CLOUD=gce" */
	char note[256];                     /* why something is unknown; "" when all is known */
	/* the GPUs on the VM's PCI bus, all of them whatever the container was granted: GCE bills GPUs attached to
	 * an n1 apart from its machine type, and its metadata server does not list them (GCE hosts only) */
	struct cloud_gpus pci_gpus[CLOUD_GPU_KINDS];
	unsigned npci_gpus;                 /* kinds in pci_gpus */
};

/* "none", "gce", "aws", "azure". */
const char *cloud_kind_name(enum cloud_kind kind);

/* "pending", "known", "failed", "not_a_cloud", "off". */
const char *cloud_state_name(enum cloud_state state);

/* Sets h to "not asked yet" (cloud none, state pending, spot unknown). */
void cloud_host_init(struct cloud_host *h);

/*
 * The cloud the DMI names under sysfs_root/class/dmi/id: GCE when product_name holds "Google Compute Engine" or
 * sys_vendor/bios_vendor is "Google"; EC2 when sys_vendor or bios_vendor is "Amazon EC2" or bios_version names
 * amazon (Xen instances); Azure when chassis_asset_tag is Azure's 7783-7084-3265-9085-8269-3286-77 (a Microsoft
 * "Virtual Machine" alone is any Hyper-V guest). CLOUD_NONE otherwise. why receives what was read.
 */
enum cloud_kind cloud_from_dmi(const char *sysfs_root, char *why, size_t whysz);

/* --- parsers of the services' answers: each returns 0, or -1 (and leaves out unchanged in what it owns) --- */

/* A metadata name: 1 to 63 bytes of [A-Za-z0-9._-]. */
int cloud_name_check(const char *s);

/* The last component of a GCE resource path ("projects/1/zones/us-central1-a" -> "us-central1-a"), len bytes. */
int cloud_parse_gce_path(const char *text, size_t len, char *out, size_t outsz);

/* GCE's region of a zone: "us-central1-a" -> "us-central1". */
int cloud_gce_region_of_zone(const char *zone, char *out, size_t outsz);

/* GCE instance/scheduling/?recursive=true: Spot when preemptible is TRUE or provisioningModel is SPOT. */
int cloud_parse_gce_scheduling(const char *text, size_t len, int *spot);

/* EC2's instance identity document: instanceType, region and availabilityZone into h. */
int cloud_parse_aws_identity(const char *text, size_t len, struct cloud_host *h);

/* EC2's instance-life-cycle: "spot" -> 1, "on-demand" or "scheduled" -> 0. */
int cloud_parse_aws_lifecycle(const char *text, size_t len, int *spot);

/* Azure's instance/compute document: vmSize, location, zone and priority ("Spot" -> 1, "Regular"/"Low"/"" -> 0). */
int cloud_parse_azure_compute(const char *text, size_t len, struct cloud_host *h);

/*
 * Counts the NVIDIA GPUs (PCI class 0x03, display controllers; not their audio functions or NVSwitches) under
 * sysfs_root/bus/pci/devices into h->pci_gpus, by device id, in the order first seen; kinds past CLOUD_GPU_KINDS
 * are left out. A bus that cannot be read counts nothing.
 */
void cloud_pci_gpus(const char *sysfs_root, struct cloud_host *h);

/* --- learning --- */

/*
 * Finds the host's cloud (ACCELD_CLOUD, else the DMI) and asks its metadata service, within CLOUD_BUDGET_MS.
 * Blocks for at most the budget; out is always filled (state says how far it got).
 */
void cloud_learn(const struct config *cfg, struct cloud_host *out);

/*
 * The host as JSON (a new object): cloud, state, instance_type, region, zone, spot, detected_by, note, and pci_gpus
 * ([{"pci_id": "10de:1eb8", "count": 2}], only where there are any).
 */
json_t *cloud_host_json(const struct cloud_host *h);

/* Learning in the background: one short-lived thread, started once. */
struct cloud;

/* Called once from the learning thread with what was learned (borrowed for the call). */
typedef void (*cloud_done_fn)(void *ctx, const struct cloud_host *host);

/* A learner for cfg (borrowed; must outlive it). Never NULL. */
struct cloud *cloud_new(const struct config *cfg);

/* Starts the thread; done (may be NULL) is called when it has learned. -1 when the thread cannot start. */
int cloud_start(struct cloud *c, cloud_done_fn done, void *ctx);

/* What is known now (pending until the thread has run). */
void cloud_get(struct cloud *c, struct cloud_host *out);

/* Waits for the thread (at most the budget) and frees; NULL is allowed. */
void cloud_free(struct cloud *c);

#endif
