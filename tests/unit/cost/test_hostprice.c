/*
 * Unit tests for hostprice.c and machines.c: the per-shape tables' integrity (every row sourced, dated and priced,
 * every accelerator it names in the accelerator table or a known gap), lookups, a spread of hosts on each cloud
 * (EC2, Azure, GCE rows and rates, n1 with attached GPUs, TPU hosts, Spot), honest unknowns with the nearest
 * region's price as a hint, and the split rule: shares add up to the host price, accelerators weigh the cloud's
 * own price of one where the tables give it, accelerators beyond the host price are scaled, accelerators the host
 * does not list keep their part, an accelerator without any price stops the split, Spot shares follow the same
 * fractions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "cost/hostprice.h"
#include "cost/machines.h"
#include "cost/pricebook.h"
#include "detect/specs.h"

#define PCI_T4 0x1eb8

static struct cloud_host host_of(enum cloud_kind cloud, const char *type, const char *region)
{
	struct cloud_host h;

	cloud_host_init(&h);
	h.cloud = cloud;
	h.state = CLOUD_KNOWN;
	snprintf(h.instance_type, sizeof(h.instance_type), "%s", type);
	snprintf(h.region, sizeof(h.region), "%s", region);
	return h;
}

static void gpu(struct device *d, const char *id, const char *key)
{
	device_init(d, DEVICE_GPU);
	snprintf(d->id, sizeof(d->id), "%s", id);
	snprintf(d->spec_key, sizeof(d->spec_key), "%s", key);
}

/* mkdir -p. */
static int mkdir_p(const char *path)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && access(buf, F_OK) != 0)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) == 0 || access(buf, F_OK) == 0 ? 0 : -1;
}

static void cpu(struct device *d)
{
	device_init(d, DEVICE_CPU);
	snprintf(d->id, sizeof(d->id), "cpu:0");
}

/* Accelerator keys the tables name that db/accelerators.csv has no row for yet (tools/prices/README.md): the split
 * weighs them by nothing, so a host carrying one shows its price but no shares. */
static const char *const unspecified[] = {"amd-mi25",      "amd-v520",    "aws-inferentia", "aws-inferentia2",
					  "aws-trainium",  "habana-gaudi", "nvidia-a10",    "nvidia-k80",
					  "nvidia-l40s",   "nvidia-m60",   "nvidia-t4g"};

static int is_unspecified(const char *key)
{
	for (size_t i = 0; i < sizeof(unspecified) / sizeof(unspecified[0]); i++)
		if (strcmp(key, unspecified[i]) == 0)
			return 1;
	return 0;
}

START_TEST(machine_tables_are_sourced)
{
	size_t n;
	const struct machine *t = machines_table(&n);
	size_t per_cloud[3] = {0, 0, 0};
	const char *clouds[] = {"gce", "aws", "azure"};

	ck_assert_uint_ge(n, 4000);
	for (size_t i = 0; i < n; i++) {
		const struct pricebook_source *src = pricebook_source(t[i].source);

		ck_assert_msg(isfinite(t[i].usd_per_hour) && t[i].usd_per_hour > 0, "%s %s", t[i].instance_type,
			      t[i].region);
		ck_assert_msg(isnan(t[i].usd_per_hour_spot) || t[i].usd_per_hour_spot <= t[i].usd_per_hour, "%s %s",
			      t[i].instance_type, t[i].region);
		ck_assert_msg(src != NULL, "%s %s: source %s not in sources.csv", t[i].instance_type, t[i].region,
			      t[i].source);
		ck_assert_msg(t[i].accelerators == 0 || specs_find_key(t[i].accelerator_key) != NULL ||
				      is_unspecified(t[i].accelerator_key),
			      "%s names %s", t[i].instance_type, t[i].accelerator_key);
		for (size_t c = 0; c < 3; c++)
			per_cloud[c] += strcmp(t[i].cloud, clouds[c]) == 0;
	}
	ck_assert_uint_ge(per_cloud[0], 390);
	ck_assert_uint_ge(per_cloud[1], 3300);
	ck_assert_uint_ge(per_cloud[2], 390);
	/* the families the tables are meant to cover */
	static const char *const families[][2] = {
		{"gce", "e2-medium"},  {"gce", "a2-"},        {"gce", "a3-"},          {"gce", "g2-"},
		{"gce", "ct6e-"},      {"gce", "ct5lp-"},     {"gce", "ct5p-"},        {"aws", "m7i."},
		{"aws", "m6i."},       {"aws", "c6a."},       {"aws", "r6i."},         {"aws", "g4dn."},
		{"aws", "g6e."},       {"aws", "g5."},        {"aws", "p4d."},         {"aws", "p5."},
		{"aws", "trn1."},      {"azure", "Standard_F"}, {"azure", "Standard_NC"}, {"azure", "Standard_ND"},
		{"azure", "Standard_NV"},
	};
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		size_t rows = 0;

		for (size_t i = 0; i < n; i++)
			rows += strcmp(t[i].cloud, families[f][0]) == 0 &&
				strncmp(t[i].instance_type, families[f][1], strlen(families[f][1])) == 0;
		ck_assert_msg(rows > 0, "no %s %s rows", families[f][0], families[f][1]);
	}
	/* one row per cloud, type and region (the tables are sorted by type, then region) */
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(strcmp(t[i].cloud, t[i - 1].cloud) ||
				      strcmp(t[i].instance_type, t[i - 1].instance_type) ||
				      strcmp(t[i].region, t[i - 1].region),
			      "%s %s twice", t[i].instance_type, t[i].region);
	ck_assert_ptr_nonnull(machines_find("aws", "M7I.LARGE", "us-east-1"));
	ck_assert_ptr_nonnull(machines_find("azure", "standard_f8s_v2", "EASTUS"));
	ck_assert_ptr_null(machines_find("gce", "n2-standard-8", "europe-west4")); /* computed from rates */
	ck_assert_ptr_null(machines_find("aws", "m7i.large", "sa-east-1"));
	ck_assert_int_eq(machines_knows_type("aws", "m7i.large"), 1);
	ck_assert_int_eq(machines_knows_type("gce", "m7i.large"), 0);
	ck_assert_ptr_null(machines_find("gce", NULL, "x"));
}
END_TEST

/* A spread of hosts on each cloud: the price, its source and date, the shape. */
START_TEST(hosts_on_each_cloud)
{
	static const struct {
		enum cloud_kind cloud;
		const char *type, *region;
		double usd, spot;
		const char *source, *words;
	} cases[] = {
		/* EC2: read from the catalog (with Spot), from Karpenter's list, scaled to the region */
		{CLOUD_AWS, "m7i.large", "us-east-1", 0.1008, 0.0316, "skypilot-aws@001367d2", "built-in table: aws"},
		{CLOUD_AWS, "g4dn.xlarge", "us-west-2", 0.526, 0.1779, "skypilot-aws@001367d2",
		 "g4dn.xlarge us-west-2"},
		{CLOUD_AWS, "m6i.large", "us-east-1", 0.096, NAN, "karpenter-aws@031e72b6", "as of 2026-01-19"},
		{CLOUD_AWS, "r7i.2xlarge", "us-west-2", 0.5292, NAN, "aws-scaled@001367d2+031e72b6", "r7i.2xlarge"},
		/* Azure */
		{CLOUD_AZURE, "Standard_F8s_v2", "westus3", 0.338, 0.03718, "skypilot-azure@098741e7",
		 "Standard_F8s_v2"},
		{CLOUD_AZURE, "Standard_NC24ads_A100_v4", "eastus", 3.673, 0.444433, "skypilot-azure@098741e7",
		 "azure"},
		{CLOUD_AZURE, "Standard_D8s_v5", "southcentralus", 0.461, 0.054951, "skypilot-azure@098741e7",
		 "Standard_D8s_v5"},
		{CLOUD_AZURE, "Standard_E4ds_v5", "eastus2", 0.288, 0.03744, "skypilot-azure@098741e7", "azure"},
		/* GCE: predefined from rates, shared-core and bundled rows, a vCPU-only family, a TPU host */
		{CLOUD_GCE, "n2-standard-2", "us-central1", 2 * 0.031611 + 8 * 0.004237, 2 * 0.01499 + 8 * 0.00201,
		 "cyclenerd-gce@fd66b26f", "= 2 vCPU x 0.031611 + 8 GiB x 0.004237 USD/h (n2 rates"},
		{CLOUD_GCE, "e2-medium", "us-central1", 0.03350571, 0.020106, "cyclenerd-gce@fd66b26f",
		 "built-in table: gce"},
		{CLOUD_GCE, "g2-standard-16", "us-central1", 1.147208, 0.644944, "cyclenerd-gce@fd66b26f",
		 "g2-standard-16"},
		{CLOUD_GCE, "c2-standard-8", "us-central1", 8 * 0.052202, 8 * 0.02492, "cyclenerd-gce@fd66b26f",
		 "memory included"},
		{CLOUD_GCE, "ct6e-standard-4t", "us-central1", 10.8, 2.2914, "skypilot-gcp@8427bbff",
		 "as of 2026-02-05"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cloud_host h = host_of(cases[i].cloud, cases[i].type, cases[i].region);
		struct pricerec hp;

		hostprice_from_table(&h, &hp);
		ck_assert_msg(fabs(hp.usd_per_hour - cases[i].usd) < 1e-9, "%s: %g", cases[i].type, hp.usd_per_hour);
		if (isnan(cases[i].spot))
			ck_assert_msg(isnan(hp.usd_per_hour_spot), "%s", cases[i].type);
		else
			ck_assert_msg(fabs(hp.usd_per_hour_spot - cases[i].spot) < 1e-9, "%s: %g", cases[i].type,
				      hp.usd_per_hour_spot);
		ck_assert_str_eq(hp.sources[0], cases[i].source);
		ck_assert_str_eq(hp.sources[1], "");
		ck_assert_str_eq(hp.as_of, pricebook_source(cases[i].source)->as_of);
		ck_assert_msg(strstr(hp.source, cases[i].words) != NULL, "%s", hp.source);
		ck_assert(!hp.lower_bound);
		ck_assert(hp.hint_region[0] == '\0' && isnan(hp.hint_usd_per_hour));
	}
}
END_TEST

/* An n1 with two T4s on its PCI bus: the VM from n1 rates plus each GPU at its price in the region; the split gives
 * each listed T4 that price and the CPU the VM. */
START_TEST(n1_with_attached_gpus)
{
	struct cloud_host h = host_of(CLOUD_GCE, "n1-standard-8", "us-central1");
	double vm = 8 * 0.031611 + 30 * 0.004237, vm_spot = 8 * 0.01115 + 30 * 0.001494;
	struct pricerec hp;
	struct hostprice_split s;
	struct device d[3];
	struct device_price p[3];

	h.npci_gpus = 1;
	h.pci_gpus[0] = (struct cloud_gpus){.vendor = CLOUD_PCI_NVIDIA, .device = PCI_T4, .count = 2};
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, vm + 2 * 0.35, 1e-9);
	ck_assert_double_eq_tol(hp.usd_per_hour_spot, vm_spot + 2 * 0.14, 1e-9);
	ck_assert_uint_eq(hp.accelerators, 2);
	ck_assert_str_eq(hp.accelerator_key, "nvidia-t4");
	ck_assert_double_eq_tol(hp.accelerator_usd_per_hour, 0.35, 1e-12);
	ck_assert_double_eq(hp.vcpus, 8);
	ck_assert_double_eq_tol(hp.memory_gib, 30, 1e-12);
	ck_assert_ptr_nonnull(strstr(hp.source, "+ 2 x nvidia-t4 x 0.35 USD/h"));
	cpu(&d[0]);
	gpu(&d[1], "gpu:0", "nvidia-t4");
	gpu(&d[2], "gpu:1", "nvidia-t4");
	hostprice_split(&h, &hp, d, 3, p, &s);
	ck_assert(s.split);
	ck_assert_double_eq_tol(p[1].usd_per_hour, 0.35, 1e-12);
	ck_assert_double_eq_tol(p[2].usd_per_hour, 0.35, 1e-12);
	ck_assert_double_eq_tol(p[0].usd_per_hour, vm, 1e-9);
	ck_assert_double_eq_tol(p[0].usd_per_hour_spot + p[1].usd_per_hour_spot + p[2].usd_per_hour_spot,
				hp.usd_per_hour_spot, 1e-9);
	ck_assert_ptr_nonnull(strstr(s.rule, "cloud prices"));
	ck_assert_ptr_nonnull(strstr(p[1].source, "the cloud's price of one"));
	/* one T4 hidden from acceld: its part stays off the devices, the CPU still gets the VM */
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert_double_eq_tol(p[0].usd_per_hour, vm, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 0.35, 1e-12);
	/* a custom n1 takes GPUs too, at predefined rates: a lower bound */
	snprintf(h.instance_type, sizeof(h.instance_type), "custom-4-16384");
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 4 * 0.031611 + 16 * 0.004237 + 2 * 0.35, 1e-9);
	ck_assert(hp.lower_bound);
	ck_assert_ptr_nonnull(strstr(hp.source, "a lower bound"));
	/* GPUs on a shape that bundles its own are not counted twice */
	snprintf(h.instance_type, sizeof(h.instance_type), "g2-standard-16");
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 1.147208, 1e-9);
	ck_assert_uint_eq(hp.accelerators, 1);
	ck_assert_str_eq(hp.accelerator_key, "nvidia-l4");
}
END_TEST

/* Writes one PCI function's vendor, device and class under root/bus/pci/devices/addr. */
static void pci_function(const char *root, const char *addr, const char *vendor, const char *device, const char *klass)
{
	const char *names[] = {"vendor", "device", "class"}, *values[] = {vendor, device, klass};
	char path[512];

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", root, addr);
	ck_assert_int_eq(mkdir_p(path), 0);
	for (int i = 0; i < 3; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", root, addr, names[i]);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "%s\n", values[i]);
		fclose(f);
	}
}

/* The GPUs on the PCI bus as cloud.c counts them for the price: NVIDIA display controllers by device id, not their
 * audio functions nor other vendors' devices; a bus that cannot be read counts nothing. */
START_TEST(pci_bus_names_the_attached_gpus)
{
	char root[] = "/tmp/acceld-pci-XXXXXX";
	struct cloud_host h = host_of(CLOUD_GCE, "n1-highmem-8", "europe-west4");
	struct pricerec hp;
	char cmd[600];

	ck_assert_ptr_nonnull(mkdtemp(root));
	pci_function(root, "0000:00:04.0", "0x10de", "0x1db1", "0x030200");
	pci_function(root, "0000:00:05.0", "0x10de", "0x1db1", "0x030200");
	pci_function(root, "0000:00:06.0", "0x10de", "0x1eb8", "0x030000");
	pci_function(root, "0000:00:07.0", "0x10de", "0x10f8", "0x040300"); /* an NVIDIA audio function */
	pci_function(root, "0000:00:08.0", "0x1af4", "0x1000", "0x020000"); /* virtio-net */
	cloud_pci_gpus(root, &h);
	ck_assert_uint_eq(h.npci_gpus, 2);
	for (unsigned k = 0; k < h.npci_gpus; k++) {
		ck_assert_uint_eq(h.pci_gpus[k].vendor, CLOUD_PCI_NVIDIA);
		ck_assert_uint_eq(h.pci_gpus[k].count, h.pci_gpus[k].device == 0x1db1 ? 2 : 1);
	}
	/* V100s and a T4 on one n1 (GCE would not): both priced, no one price per accelerator to weigh them by */
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour,
				8 * pricebook_gce_rate("n1", "europe-west4")->usd_per_vcpu_hour +
					52 * pricebook_gce_rate("n1", "europe-west4")->usd_per_gib_hour +
					2 * pricebook_gce_gpu("nvidia-v100", "europe-west4")->usd_per_hour +
					pricebook_gce_gpu("nvidia-t4", "europe-west4")->usd_per_hour,
				1e-9);
	ck_assert_uint_eq(hp.accelerators, 3);
	ck_assert_str_eq(hp.accelerator_key, "");
	ck_assert(isnan(hp.accelerator_usd_per_hour));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
	cloud_pci_gpus(root, &h);
	ck_assert_uint_eq(h.npci_gpus, 0);
}
END_TEST

START_TEST(shares_add_up)
{
	struct cloud_host h = host_of(CLOUD_AWS, "g6.12xlarge", "us-east-1");
	struct pricerec hp;
	struct hostprice_split s;
	struct device d[5];
	struct device_price p[5];
	double sum = 0;

	cpu(&d[0]);
	for (int i = 1; i < 5; i++) {
		char id[DEVICE_ID_MAX];

		snprintf(id, sizeof(id), "gpu:%d", i - 1);
		gpu(&d[i], id, "nvidia-l4");
	}
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 4.6016, 1e-9);
	ck_assert_uint_eq(hp.accelerators, 4);
	ck_assert(isnan(hp.accelerator_usd_per_hour)); /* EC2 bundles them: the accelerator table weighs */
	hp.usd_per_hour_spot = 1.5;                    /* Karpenter's row has no Spot figure: as if it had */
	hostprice_split(&h, &hp, d, 5, p, &s);
	ck_assert(s.split);
	for (int i = 0; i < 5; i++)
		sum += p[i].usd_per_hour;
	ck_assert_double_eq_tol(sum, hp.usd_per_hour, 1e-9);
	sum = 0;
	for (int i = 0; i < 5; i++)
		sum += p[i].usd_per_hour_spot;
	ck_assert_double_eq_tol(sum, 1.5, 1e-9);
	/* EC2 does not price the parts: the CPU and memory (48 vCPUs, 192 GiB) at the rates of the unbundled c6i,
	 * m6i and r6i sizes in the region (4 GiB per vCPU: close to what an m6i.12xlarge costs), the L4s the rest */
	ck_assert_str_eq(hp.cpu_like, "c6i/m6i/r6i rates in us-east-1");
	ck_assert_double_eq_tol(hp.cpu_usd_per_hour, machines_find("aws", "m6i.12xlarge", "us-east-1")->usd_per_hour,
				0.05 * hp.cpu_usd_per_hour);
	ck_assert_double_eq_tol(p[0].usd_per_hour, hp.cpu_usd_per_hour, 1e-9);
	ck_assert_double_eq_tol(p[1].usd_per_hour, (4.6016 - hp.cpu_usd_per_hour) / 4, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 0, 1e-12);
	ck_assert_str_eq(p[1].unit, "host share");
	ck_assert_str_eq(p[1].as_of, hp.as_of);
	ck_assert_ptr_nonnull(strstr(s.rule, "unbundled"));
	/* two of the four GPUs hidden: their part stays off the devices, not on the CPU */
	hostprice_split(&h, &hp, d, 3, p, &s);
	ck_assert_double_eq_tol(p[0].usd_per_hour, hp.cpu_usd_per_hour, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, (4.6016 - hp.cpu_usd_per_hour) / 2, 1e-9);
	ck_assert_double_eq_tol(s.devices_usd_per_hour + s.unlisted_usd_per_hour, 4.6016, 1e-9);
	/* a GCE g2: the L4 weighs GCE's own L4 price in the region, the CPU gets the VM part */
	h = host_of(CLOUD_GCE, "g2-standard-4", "us-central1");
	hostprice_from_table(&h, &hp);
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert_double_eq_tol(p[1].usd_per_hour, 0.5600402, 1e-9);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 0.7068323 - 0.5600402, 1e-9);
}
END_TEST

START_TEST(accelerators_beyond_the_host_price_are_scaled)
{
	struct cloud_host h = host_of(CLOUD_AWS, "p5.48xlarge", "us-east-1");
	struct pricerec hp;
	struct hostprice_split s;
	struct device d[2];
	struct device_price p[2];

	cpu(&d[0]);
	gpu(&d[1], "gpu:0", "nvidia-h100-sxm");
	hostprice_from_table(&h, &hp);
	/* 8 x H100 at the table's 10.98 = 87.84 > 55.04 (the price since AWS's 2025 cut): the CPU and memory still
	 * cost what an unbundled shape's rate says, the H100s share the rest */
	ck_assert_double_eq_tol(hp.usd_per_hour, 55.04, 1e-9);
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert(p[0].usd_per_hour > 0);
	ck_assert_double_eq_tol(p[0].usd_per_hour, hp.cpu_usd_per_hour, 1e-9);
	ck_assert_double_eq_tol(p[1].usd_per_hour, (55.04 - hp.cpu_usd_per_hour) / 8, 1e-9);
	ck_assert_double_eq_tol(s.scale, (55.04 - hp.cpu_usd_per_hour) / 87.84, 1e-12);
	/* where no unbundled shape prices the CPU: everything scales to fit */
	hp.cpu_usd_per_hour = hp.cpu_usd_per_hour_spot = NAN;
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert_double_eq_tol(s.scale, 55.04 / 87.84, 1e-12);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 0, 1e-12);
	hp.usd_per_hour = 44; /* half of the GPUs' part: everything scales by 0.5, the CPU gets nothing */
	hp.usd_per_hour_spot = NAN;
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert_double_eq_tol(s.scale, 44 / 87.84, 1e-12);
	ck_assert_double_eq_tol(p[1].usd_per_hour, 10.98 * 44 / 87.84, 1e-9);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 0, 1e-12);
	ck_assert(isnan(p[1].usd_per_hour_spot));
}
END_TEST

START_TEST(no_weight_no_split)
{
	struct cloud_host h = host_of(CLOUD_AZURE, "Standard_NC40ads_H100_v5", "eastus");
	struct pricerec hp;
	struct hostprice_split s;
	struct device d[2];
	struct device_price p[2];

	cpu(&d[0]);
	gpu(&d[1], "gpu:0", "nvidia-h100-pcie"); /* no price in the accelerator table, none of Azure's apart */
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 6.98, 1e-9);
	ck_assert(isnan(hp.usd_per_hour_spot));
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert(!s.split);
	ck_assert_ptr_nonnull(strstr(s.rule, "gpu:0"));
	ck_assert(isnan(p[0].usd_per_hour) && isnan(p[1].usd_per_hour));
	h.state = CLOUD_NOT_A_CLOUD;
	hostprice_from_table(&h, &hp);
	ck_assert(isnan(hp.usd_per_hour));
	ck_assert_ptr_nonnull(strstr(hp.source, "not_a_cloud"));
}
END_TEST

/* What the tables lack says so, naming the nearest region they price the shape in as a hint, never the price. */
START_TEST(unknowns_name_the_nearest_region)
{
	static const struct {
		enum cloud_kind cloud;
		const char *type, *region, *hint, *words;
		double hint_usd;
	} cases[] = {
		/* EC2 outside the regions read: Sao Paulo's nearest is us-east-1 */
		{CLOUD_AWS, "m6i.large", "sa-east-1", "us-east-1", "no aws m6i.large in sa-east-1", 0.096},
		/* Azure outside the US and four regions is missing: Seoul's nearest priced F8s_v2 is in Tokyo */
		{CLOUD_AZURE, "Standard_F8s_v2", "koreacentral", "japaneast", "no azure Standard_F8s_v2 in koreacentral",
		 0.428},
		/* GCE: n1 rates in Osaka, but no T4 price there: Tokyo has both */
		{CLOUD_GCE, "n1-standard-8", "asia-northeast2", "asia-northeast1", "no nvidia-t4 price there", NAN},
		/* a region the region table does not know yet: its namesakes */
		{CLOUD_GCE, "n2-standard-2", "europe-west15", "europe-west1", "(by name)",
		 2 * 0.034773 + 8 * 0.004661},
		/* a bundled shape where the source lists none */
		{CLOUD_GCE, "a3-highgpu-8g", "africa-south1", NULL, "priced per shape", NAN},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cloud_host h = host_of(cases[i].cloud, cases[i].type, cases[i].region);
		struct pricerec hp;

		if (strcmp(cases[i].type, "n1-standard-8") == 0) {
			h.npci_gpus = 1;
			h.pci_gpus[0] = (struct cloud_gpus){.vendor = CLOUD_PCI_NVIDIA, .device = PCI_T4, .count = 2};
		}
		hostprice_from_table(&h, &hp);
		ck_assert_msg(isnan(hp.usd_per_hour) && isnan(hp.usd_per_hour_spot), "%s", cases[i].type);
		ck_assert_msg(strncmp(hp.source, "none: ", 6) == 0, "%s", hp.source);
		ck_assert_msg(strstr(hp.source, cases[i].words) != NULL, "%s", hp.source);
		ck_assert_msg(strstr(hp.source, "PUT /cost/prices") != NULL, "%s", hp.source);
		ck_assert_str_eq(hp.sources[0], "");
		if (cases[i].hint != NULL) {
			ck_assert_str_eq(hp.hint_region, cases[i].hint);
			ck_assert_msg(isfinite(hp.hint_usd_per_hour), "%s", cases[i].type);
			if (isfinite(cases[i].hint_usd))
				ck_assert_double_eq_tol(hp.hint_usd_per_hour, cases[i].hint_usd, 1e-9);
			ck_assert_msg(strstr(hp.source, "a hint, not this host's price") != NULL, "%s", hp.source);
		}
	}
	/* names the tables cannot price anywhere: no hint to give */
	static const char *const unknown[][2] = {{"aws", "m99z.large"}, {"gce", "n2-standard-4-lssd"},
						 {"gce", "zz9-standard-4"}, {"azure", "Standard_D8s_v6"}};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		struct cloud_host h = host_of(strcmp(unknown[i][0], "aws") == 0 ? CLOUD_AWS :
					      strcmp(unknown[i][0], "gce") == 0 ? CLOUD_GCE : CLOUD_AZURE,
					      unknown[i][1], "us-east1");
		struct pricerec hp;

		hostprice_from_table(&h, &hp);
		ck_assert(isnan(hp.usd_per_hour));
		ck_assert_msg(strstr(hp.source, "(in any region)") != NULL, "%s", hp.source);
		ck_assert_str_eq(hp.hint_region, "");
	}
}
END_TEST

START_TEST(applied_price_and_json)
{
	struct cloud_host h = host_of(CLOUD_GCE, "ct6e-standard-4t", "us-central1");
	struct pricerec hp;
	struct hostprice_split s;
	struct device d[1];
	const char *billing;
	json_t *o, *price, *src;

	ck_assert_double_eq(hostprice_applied(1, 2, 1, &billing), 1);
	ck_assert_str_eq(billing, "spot");
	ck_assert_double_eq(hostprice_applied(1, 2, NAN, &billing), 2);
	ck_assert_str_eq(billing, "on_demand");
	ck_assert_double_eq(hostprice_applied(-1, 2, 1, &billing), 2);
	cpu(&d[0]);
	h.spot = 1;
	hostprice_apply_builtin(&h, d, 1, &hp, &s);
	/* four chips the host does not list: their part is unlisted, the CPU gets what is left (nothing) */
	ck_assert_double_eq_tol(d[0].price.usd_per_hour, 0, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 10.8, 1e-9);
	o = hostprice_json(&h, &hp, &s);
	price = json_object_get(o, "price");
	ck_assert_str_eq(json_string_value(json_object_get(o, "billing")), "spot");
	ck_assert_double_eq_tol(json_real_value(json_object_get(price, "applied_usd_per_hour")), 2.2914, 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(price, "as_of")), "2026-02-05");
	ck_assert_int_eq(json_integer_value(json_object_get(price, "accelerators")), 4);
	ck_assert_double_eq_tol(json_real_value(json_object_get(price, "accelerator_usd_per_hour")), 2.7, 1e-12);
	/* the source spelled out */
	src = json_array_get(json_object_get(price, "sources"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(src, "source")), "skypilot-gcp@8427bbff");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(src, "description")), "SkyPilot"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(src, "url")), "skypilot-catalog"));
	ck_assert_ptr_null(json_object_get(price, "hint"));
	ck_assert_ptr_null(json_object_get(price, "lower_bound"));
	json_decref(o);
	/* a custom shape says it is a lower bound; an unknown one carries its hint, and null prices */
	h = host_of(CLOUD_GCE, "n2-custom-4-16384-ext", "us-central1");
	hostprice_apply_builtin(&h, d, 1, &hp, &s);
	o = hostprice_json(&h, &hp, &s);
	price = json_object_get(o, "price");
	ck_assert(json_is_true(json_object_get(price, "lower_bound")));
	ck_assert_double_eq_tol(json_real_value(json_object_get(price, "memory_gib")), 16, 1e-12);
	json_decref(o);
	h = host_of(CLOUD_AWS, "m6i.large", "sa-east-1");
	cpu(&d[0]);
	hostprice_apply_builtin(&h, d, 1, &hp, &s);
	o = hostprice_json(&h, &hp, &s);
	price = json_object_get(o, "price");
	ck_assert(json_is_null(json_object_get(price, "usd_per_hour")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(price, "hint"), "region")), "us-east-1");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(price, "hint"), "usd_per_hour")), 0.096,
				1e-12);
	ck_assert(isnan(d[0].price.usd_per_hour)); /* the hint prices nothing */
	json_decref(o);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("hostprice");
	TCase *tc = tcase_create("hostprice");

	tcase_add_test(tc, machine_tables_are_sourced);
	tcase_add_test(tc, hosts_on_each_cloud);
	tcase_add_test(tc, n1_with_attached_gpus);
	tcase_add_test(tc, pci_bus_names_the_attached_gpus);
	tcase_add_test(tc, shares_add_up);
	tcase_add_test(tc, accelerators_beyond_the_host_price_are_scaled);
	tcase_add_test(tc, no_weight_no_split);
	tcase_add_test(tc, unknowns_name_the_nearest_region);
	tcase_add_test(tc, applied_price_and_json);
	suite_add_tcase(s, tc);
	return s;
}
