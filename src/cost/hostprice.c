/* hostprice: the host's price from the price tables, and its split over the devices (rules in hostprice.h). */
#include "cost/hostprice.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/mem.h"
#include "cost/gcetype.h"
#include "cost/machines.h"
#include "cost/pricebook.h"
#include "cost/regions.h"
#include "detect/specs.h"

/* What the tables say of a shape in a region (gcetype.h's codes, for every cloud). */
enum price_answer { PRICE_FOUND, PRICE_IN_OTHER_REGIONS, PRICE_SHAPE_UNKNOWN };

/* The host's shape priced in region, into out (set whole); why not in out->source. */
static enum price_answer price_in(const struct cloud_host *host, const char *region, struct pricerec *out)
{
	static const enum price_answer of_gce[] = {[GCETYPE_PRICED] = PRICE_FOUND,
						   [GCETYPE_NOT_HERE] = PRICE_IN_OTHER_REGIONS,
						   [GCETYPE_UNKNOWN] = PRICE_SHAPE_UNKNOWN};
	const char *cloud = cloud_kind_name(host->cloud);
	const struct machine *m;
	int known;

	if (host->cloud == CLOUD_GCE)
		return of_gce[gcetype_price(host->instance_type, region, host->pci_gpus,
					    host->npci_gpus < CLOUD_GPU_KINDS ? host->npci_gpus : CLOUD_GPU_KINDS, out)];
	m = machines_find(cloud, host->instance_type, region);
	if (m != NULL) {
		machines_price(m, out);
		return PRICE_FOUND;
	}
	pricerec_init(out);
	known = machines_knows_type(cloud, host->instance_type);
	snprintf(out->source, sizeof(out->source), "none: the price tables have no %s %.60s%s%.60s", cloud,
		 host->instance_type, known ? " in " : " (in any region), region ", region);
	return known ? PRICE_IN_OTHER_REGIONS : PRICE_SHAPE_UNKNOWN;
}

struct candidate {
	double km;
	const char *region;
};

static int nearer(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	return (x->km > y->km) - (x->km < y->km);
}

/* The nearest other region where the tables price the host's shape, as out's hint (words appended). */
static void add_hint(const struct cloud_host *host, struct pricerec *out)
{
	const char *cloud = cloud_kind_name(host->cloud);
	size_t n, k = 0, len = strlen(out->source);
	const struct region *t = regions_table(&n);
	struct candidate *c = xcalloc(n ? n : 1, sizeof(*c));
	struct pricerec there;

	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].cloud, cloud) == 0 && strcmp(t[i].name, host->region) != 0)
			c[k++] = (struct candidate){regions_distance(cloud, host->region, t[i].name), t[i].name};
	qsort(c, k, sizeof(*c), nearer);
	for (size_t i = 0; i < k; i++) {
		if (price_in(host, c[i].region, &there) != PRICE_FOUND)
			continue;
		snprintf(out->hint_region, sizeof(out->hint_region), "%s", c[i].region);
		out->hint_usd_per_hour = there.usd_per_hour;
		out->hint_usd_per_hour_spot = there.usd_per_hour_spot;
		if (regions_placed(cloud, host->region, c[i].region))
			snprintf(out->source + len, sizeof(out->source) - len, "; nearest region priced: %s (%.0f km), "
				 "%.4f USD/h, a hint, not this host's price", c[i].region, c[i].km, there.usd_per_hour);
		else
			snprintf(out->source + len, sizeof(out->source) - len, "; nearest region priced (by name): %s, "
				 "%.4f USD/h, a hint, not this host's price", c[i].region, there.usd_per_hour);
		break;
	}
	free(c);
}

void hostprice_from_table(const struct cloud_host *host, struct pricerec *out)
{
	enum price_answer found;
	size_t len;

	pricerec_init(out);
	if (host->state != CLOUD_KNOWN) {
		snprintf(out->source, sizeof(out->source), "none: the host is not a known cloud VM (%s); set a price "
			 "with PUT /cost/prices or ACCELD_PRICES_FILE", cloud_state_name(host->state));
		return;
	}
	found = price_in(host, host->region, out);
	if (found == PRICE_FOUND)
		return;
	if (found == PRICE_IN_OTHER_REGIONS)
		add_hint(host, out);
	len = strlen(out->source);
	snprintf(out->source + len, sizeof(out->source) - len, "; set a price with an instance_type entry in PUT "
		 "/cost/prices");
}

/*
 * A device's weight (rule 1): the cloud's price of one accelerator of the shape when the device is one of them and
 * the tables give that price, else its accelerator table price; NAN when neither is known. *cloud says which.
 */
static double weight_of(const struct pricerec *h, const struct device *d, bool *cloud)
{
	const struct spec *s = specs_find_key(d->spec_key);

	if (s == NULL)
		s = specs_for_device(d);
	*cloud = s != NULL && h->accelerator_key[0] != '\0' && strcmp(s->key, h->accelerator_key) == 0 &&
		 isfinite(h->accelerator_usd_per_hour);
	if (*cloud)
		return h->accelerator_usd_per_hour;
	return s != NULL ? s->usd_per_hour : NAN;
}

static void unshared(struct device_price *p)
{
	memset(p, 0, sizeof(*p));
	p->usd_per_hour = NAN;
	p->usd_per_hour_spot = NAN;
}

/*
 * One billing's split (rules 2-5): the host price H, what its CPU and memory cost without accelerators (cpu_est,
 * NAN unknown), the accelerators' weights w[0..n) (NAN for the CPU and devices without a share) and the shape's
 * accelerator part at those weights (part, of which listed is what acceld lists). Fills *cpu, *scale and *unlisted
 * and returns the factor each weight is multiplied by.
 */
static double split_one(double hh, double cpu_est, double part, double listed, double *cpu, double *scale,
			double *unlisted)
{
	double f;

	if (part <= 0) {
		*cpu = hh;
		*scale = 1;
		*unlisted = 0;
		return 0;
	}
	if (isfinite(cpu_est) && cpu_est > 0 && cpu_est < hh)
		f = (hh - cpu_est) / part; /* the accelerators get what the CPU and memory leave */
	else
		f = part > hh ? hh / part : 1.0;
	*cpu = hh - f * part;
	if (*cpu < 0)
		*cpu = 0;
	*scale = f;
	*unlisted = f * (part - listed);
	return f;
}

void hostprice_split(const struct cloud_host *host, const struct pricerec *h, const struct device *devs, size_t n,
		     struct device_price *shares, struct hostprice_split *info)
{
	struct hostprice_split s = {.scale = NAN, .cpu_usd_per_hour = NAN, .accelerators_usd_per_hour = NAN,
				    .unlisted_usd_per_hour = NAN, .devices_usd_per_hour = NAN};
	double *w = xcalloc(n ? n : 1, sizeof(*w));
	bool *by_cloud = xcalloc(n ? n : 1, sizeof(*by_cloud));
	double listed = 0, part, f, fs = NAN, hod = h->usd_per_hour, hs = h->usd_per_hour_spot, cpu, cpu_s = NAN;
	double scale_s, unlisted_s, cpu_est, cpu_est_s;
	const struct spec *shape = specs_find_key(h->accelerator_key);
	double unit = isfinite(h->accelerator_usd_per_hour) ? h->accelerator_usd_per_hour :
			shape != NULL ? shape->usd_per_hour : NAN;
	bool any_cloud = false, parts;
	long cpu_index = -1;
	const char *how;

	for (size_t i = 0; i < n; i++)
		unshared(&shares[i]);
	if (!isfinite(hod) || hod <= 0) {
		snprintf(s.rule, sizeof(s.rule), "no split: the host's on-demand price is unknown");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (devs[i].type == DEVICE_CPU) {
			if (cpu_index < 0)
				cpu_index = (long)i;
			continue;
		}
		w[i] = weight_of(h, &devs[i], &by_cloud[i]);
		any_cloud = any_cloud || by_cloud[i];
		if (!isfinite(w[i])) {
			snprintf(s.rule, sizeof(s.rule),
				 "no split: accelerator %s (%.40s) has no table price to weigh it",
				 devs[i].id, devs[i].model[0] ? devs[i].model : devs[i].accelerator_type);
			goto out;
		}
		listed += w[i];
	}
	part = listed;
	if (h->accelerators > 0 && isfinite(unit) && h->accelerators * unit > part)
		part = h->accelerators * unit;
	/* where the cloud prices the parts (GCE: the VM part and each GPU or chip) the CPU gets the VM part; elsewhere
	 * the CPU and memory at the nearest unbundled family's rate (pricerec.h); the accelerators the rest */
	parts = h->accelerators > 0 && isfinite(h->accelerator_usd_per_hour);
	cpu_est = parts ? hod - h->accelerators * h->accelerator_usd_per_hour : h->cpu_usd_per_hour;
	cpu_est_s = parts ? hs - h->accelerators * h->accelerator_usd_per_hour_spot : h->cpu_usd_per_hour_spot;
	f = split_one(hod, cpu_est, part, listed, &cpu, &s.scale, &s.unlisted_usd_per_hour);
	if (isfinite(hs) && isfinite(cpu_est_s) && cpu_est_s > 0 && cpu_est_s < hs)
		fs = split_one(hs, cpu_est_s, part, listed, &cpu_s, &scale_s, &unlisted_s);
	s.split = true;
	s.accelerators_usd_per_hour = f * listed;
	s.cpu_usd_per_hour = cpu_index >= 0 ? cpu : NAN;
	s.devices_usd_per_hour = f * listed + (cpu_index >= 0 ? cpu : 0);
	how = part <= 0 || !(isfinite(cpu_est) && cpu_est > 0 && cpu_est < hod) ? "" :
	      parts ? "the VM part the cloud prices" : "CPU and memory at unbundled rates";
	if (how[0] != '\0' && !parts)
		snprintf(s.rule, sizeof(s.rule), "CPU: %s (%.50s), %.4f USD/h; the accelerators the rest, weighed by their "
			 "%s prices%s", how, h->cpu_like, cpu, any_cloud ? "cloud" : "table",
			 part > listed ? "; the shape's accelerators acceld does not list keep their part" : "");
	else if (how[0] != '\0')
		snprintf(s.rule, sizeof(s.rule), "CPU: %s, %.4f USD/h; the accelerators the rest, weighed by their %s "
			 "prices%s", how, cpu, any_cloud ? "cloud" : "table",
			 part > listed ? "; the shape's accelerators acceld does not list keep their part" : "");
	else
		snprintf(s.rule, sizeof(s.rule), "accelerators at their %s prices%s, the rest (%.4f USD/h) to the CPU%s",
			 any_cloud ? "cloud" : "table", f < 1 ? " scaled to fit the host price" : "", cpu,
			 part > listed ? "; the shape's accelerators acceld does not list keep their part" : "");
	for (size_t i = 0; i < n; i++) {
		double v, vs;

		if (devs[i].type == DEVICE_CPU && (long)i != cpu_index)
			continue;
		v = devs[i].type == DEVICE_CPU ? cpu : f * w[i];
		/* Spot: its own split where its parts are known, else the on-demand fractions of the Spot price */
		vs = !isfinite(hs)    ? NAN :
		     isfinite(fs)     ? (devs[i].type == DEVICE_CPU ? cpu_s : fs * w[i]) :
					v / hod * hs;
		shares[i].usd_per_hour = v;
		shares[i].usd_per_hour_spot = vs;
		snprintf(shares[i].unit, sizeof(shares[i].unit), "host share");
		snprintf(shares[i].as_of, sizeof(shares[i].as_of), "%s", h->as_of);
		snprintf(shares[i].source, sizeof(shares[i].source), "share of host %s %.60s (%.40s): %s",
			 cloud_kind_name(host->cloud), host->instance_type, host->region,
			 devs[i].type == DEVICE_CPU ? "what the accelerators leave" :
			 by_cloud[i] ? "the cloud's price of one" : "accelerator table price");
	}
out:
	free(by_cloud);
	free(w);
	if (info != NULL)
		*info = s;
}

double hostprice_applied(int spot, double usd_per_hour, double usd_per_hour_spot, const char **billing)
{
	if (spot == 1 && isfinite(usd_per_hour_spot)) {
		*billing = "spot";
		return usd_per_hour_spot;
	}
	*billing = "on_demand";
	return usd_per_hour;
}

/* The sources of h spelled out (db/prices/sources.csv); an id the table lacks stands alone. */
static json_t *sources_json(const struct pricerec *h)
{
	json_t *a = json_array();

	for (size_t i = 0; i < PRICEREC_SOURCES && h->sources[i][0] != '\0'; i++) {
		const struct pricebook_source *src = pricebook_source(h->sources[i]);
		json_t *o = json_pack("{s:s}", "source", h->sources[i]);

		if (src != NULL) {
			json_object_set_new(o, "description", json_string(src->description));
			if (src->url[0] != '\0')
				json_object_set_new(o, "url", json_string(src->url));
			json_object_set_new(o, "version", json_string(src->version));
			jsonval_set_as_of(o, src->as_of, clock_real_ms());
		}
		json_array_append_new(a, o);
	}
	return a;
}

json_t *hostprice_json(const struct cloud_host *host, const struct pricerec *h, const struct hostprice_split *s)
{
	json_t *o = cloud_host_json(host);
	json_t *p = json_object();
	json_t *x = json_object();
	const char *billing;
	double applied = hostprice_applied(host->spot, h->usd_per_hour, h->usd_per_hour_spot, &billing);

	/* a host that is no known cloud VM is billed by nobody acceld knows */
	json_object_set_new(o, "billing", host->state == CLOUD_KNOWN ? json_string(billing) : json_null());
	json_object_set_new(p, "usd_per_hour", jsonval_num(h->usd_per_hour));
	json_object_set_new(p, "usd_per_hour_spot", jsonval_num(h->usd_per_hour_spot));
	json_object_set_new(p, "applied_usd_per_hour", jsonval_num(applied));
	if (host->spot == 1 && !isfinite(h->usd_per_hour_spot) && isfinite(h->usd_per_hour))
		json_object_set_new(p, "note", json_string("Spot host without a known Spot price: on-demand applied"));
	json_object_set_new(p, "source", json_string(h->source));
	jsonval_set_as_of(p, h->as_of, clock_real_ms());
	if (h->sources[0][0] != '\0')
		json_object_set_new(p, "sources", sources_json(h));
	if (isfinite(h->vcpus))
		json_object_set_new(p, "vcpus", json_real(h->vcpus));
	if (isfinite(h->memory_gib))
		json_object_set_new(p, "memory_gib", json_real(h->memory_gib));
	if (h->lower_bound)
		json_object_set_new(p, "lower_bound", json_true());
	if (h->accelerators > 0) {
		json_object_set_new(p, "accelerators", json_integer(h->accelerators));
		json_object_set_new(p, "accelerator", json_string(h->accelerator_key));
		if (isfinite(h->accelerator_usd_per_hour)) {
			json_object_set_new(p, "accelerator_usd_per_hour", json_real(h->accelerator_usd_per_hour));
			json_object_set_new(p, "accelerator_usd_per_hour_spot",
					    jsonval_num(h->accelerator_usd_per_hour_spot));
		}
	}
	if (h->hint_region[0] != '\0')
		json_object_set_new(p, "hint", json_pack("{s:s, s:o, s:o, s:s}", "region", h->hint_region,
							 "usd_per_hour", jsonval_num(h->hint_usd_per_hour),
							 "usd_per_hour_spot", jsonval_num(h->hint_usd_per_hour_spot),
							 "note", "the nearest region the tables price this shape in: "
							 "not this host's price"));
	json_object_set_new(o, "price", p);
	json_object_set_new(x, "rule", json_string(s->rule));
	json_object_set_new(x, "cpu_usd_per_hour", jsonval_num(s->cpu_usd_per_hour));
	json_object_set_new(x, "accelerators_usd_per_hour", jsonval_num(s->accelerators_usd_per_hour));
	json_object_set_new(x, "unlisted_accelerators_usd_per_hour", jsonval_num(s->unlisted_usd_per_hour));
	json_object_set_new(x, "devices_usd_per_hour", jsonval_num(s->devices_usd_per_hour));
	json_object_set_new(o, "split", x);
	return o;
}

void hostprice_apply_builtin(const struct cloud_host *host, struct device *devs, size_t n, struct pricerec *hout,
			     struct hostprice_split *info)
{
	struct pricerec h;
	struct device_price *shares = xcalloc(n ? n : 1, sizeof(*shares));

	hostprice_from_table(host, &h);
	hostprice_split(host, &h, devs, n, shares, info);
	for (size_t i = 0; i < n; i++)
		if (isfinite(shares[i].usd_per_hour))
			devs[i].price = shares[i];
	free(shares);
	if (hout != NULL)
		*hout = h;
}

json_t *hostprice_for_registry(void *ctx, const struct cloud_host *host, struct device *devs, size_t n,
			       struct detect_host_price *price)
{
	struct pricerec h;
	struct hostprice_split split;

	(void)ctx;
	hostprice_apply_builtin(host, devs, n, &h, &split);
	price->usd_per_hour = h.usd_per_hour;
	price->usd_per_hour_spot = h.usd_per_hour_spot;
	snprintf(price->source, sizeof(price->source), "%s", h.source);
	snprintf(price->split_rule, sizeof(price->split_rule), "%s", split.rule);
	return hostprice_json(host, &h, &split);
}
