/* hostprice: the host's price from the machine table and its split over the devices (rule in hostprice.h). */
#include "cost/hostprice.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonval.h"
#include "cost/machines.h"
#include "core/mem.h"
#include "detect/specs.h"

static void nan_price(struct hostprice *h)
{
	memset(h, 0, sizeof(*h));
	h->usd_per_hour = NAN;
	h->usd_per_hour_spot = NAN;
}

void hostprice_from_table(const struct cloud_host *host, struct hostprice *out)
{
	const struct machine *m;
	const char *cloud = cloud_kind_name(host->cloud);

	nan_price(out);
	if (host->state != CLOUD_KNOWN) {
		snprintf(out->source, sizeof(out->source), "none: the host is not a known cloud VM (%s); set a price "
			 "with PUT /cost/prices or ACCELD_PRICES_FILE", cloud_state_name(host->state));
		return;
	}
	m = machines_find(cloud, host->instance_type, host->region);
	if (m == NULL) {
		snprintf(out->source, sizeof(out->source), "none: the machine table has no %s %.60s%s%.60s; set a price "
			 "with an instance_type entry in PUT /cost/prices", cloud, host->instance_type,
			 machines_knows_type(cloud, host->instance_type) ? " in " : " (in any region), region ",
			 host->region);
		return;
	}
	out->usd_per_hour = m->usd_per_hour;
	out->usd_per_hour_spot = m->usd_per_hour_spot;
	out->accelerators = m->accelerators;
	snprintf(out->accelerator_key, sizeof(out->accelerator_key), "%s", m->accelerator_key);
	snprintf(out->source, sizeof(out->source), "built-in table: %s %s %s: %.150s, as of %s", cloud,
		 m->instance_type, m->region, m->source, m->as_of);
}

/* The accelerator table's on-demand price of a device, or NAN. */
static double table_weight(const struct device *d)
{
	const struct spec *s = specs_find_key(d->spec_key);

	if (s == NULL)
		s = specs_for_device(d);
	return s != NULL ? s->usd_per_hour : NAN;
}

static void unshared(struct device_price *p)
{
	memset(p, 0, sizeof(*p));
	p->usd_per_hour = NAN;
	p->usd_per_hour_spot = NAN;
}

void hostprice_split(const struct cloud_host *host, const struct hostprice *h, const struct device *devs, size_t n,
		     struct device_price *shares, struct hostprice_split *info)
{
	struct hostprice_split s = {.scale = NAN, .cpu_usd_per_hour = NAN, .accelerators_usd_per_hour = NAN,
				    .unlisted_usd_per_hour = NAN, .devices_usd_per_hour = NAN};
	double *w = xcalloc(n ? n : 1, sizeof(*w));
	double listed = 0, part, f, hod = h->usd_per_hour, cpu;
	const struct spec *shape = specs_find_key(h->accelerator_key);
	unsigned naccel = 0;
	long cpu_index = -1;

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
		w[i] = table_weight(&devs[i]);
		naccel++;
		if (!isfinite(w[i])) {
			snprintf(s.rule, sizeof(s.rule), "no split: accelerator %s (%.40s) has no table price to weigh it",
				 devs[i].id, devs[i].model[0] ? devs[i].model : devs[i].accelerator_type);
			goto out;
		}
		listed += w[i];
	}
	part = listed;
	if (h->accelerators > 0 && shape != NULL && isfinite(shape->usd_per_hour) &&
	    h->accelerators * shape->usd_per_hour > part)
		part = h->accelerators * shape->usd_per_hour;
	f = part > hod ? hod / part : 1.0;
	cpu = hod - f * part;
	if (cpu < 0)
		cpu = 0;
	s.split = true;
	s.scale = f;
	s.accelerators_usd_per_hour = f * listed;
	s.unlisted_usd_per_hour = f * (part - listed);
	s.cpu_usd_per_hour = cpu_index >= 0 ? cpu : NAN;
	s.devices_usd_per_hour = f * listed + (cpu_index >= 0 ? cpu : 0);
	snprintf(s.rule, sizeof(s.rule),
		 "accelerators at their table prices%s, the rest (%.4f USD/h) to the CPU%s",
		 f < 1 ? " scaled to fit the host price" : "", cpu,
		 part > listed ? "; the shape's accelerators acceld does not list keep their part" : "");
	for (size_t i = 0; i < n; i++) {
		double v;

		if (devs[i].type == DEVICE_CPU && (long)i != cpu_index)
			continue;
		v = devs[i].type == DEVICE_CPU ? cpu : f * w[i];
		shares[i].usd_per_hour = v;
		shares[i].usd_per_hour_spot = isfinite(h->usd_per_hour_spot) ? v / hod * h->usd_per_hour_spot : NAN;
		snprintf(shares[i].unit, sizeof(shares[i].unit), "host share");
		snprintf(shares[i].source, sizeof(shares[i].source), "share of host %s %.60s (%.40s): %s",
			 cloud_kind_name(host->cloud), host->instance_type, host->region,
			 devs[i].type == DEVICE_CPU ? "what the accelerators leave" : "accelerator table price");
	}
out:
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

json_t *hostprice_json(const struct cloud_host *host, const struct hostprice *h, const struct hostprice_split *s)
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
	if (h->accelerators > 0) {
		json_object_set_new(p, "accelerators", json_integer(h->accelerators));
		json_object_set_new(p, "accelerator", json_string(h->accelerator_key));
	}
	json_object_set_new(o, "price", p);
	json_object_set_new(x, "rule", json_string(s->rule));
	json_object_set_new(x, "cpu_usd_per_hour", jsonval_num(s->cpu_usd_per_hour));
	json_object_set_new(x, "accelerators_usd_per_hour", jsonval_num(s->accelerators_usd_per_hour));
	json_object_set_new(x, "unlisted_accelerators_usd_per_hour", jsonval_num(s->unlisted_usd_per_hour));
	json_object_set_new(x, "devices_usd_per_hour", jsonval_num(s->devices_usd_per_hour));
	json_object_set_new(o, "split", x);
	return o;
}

void hostprice_apply_builtin(const struct cloud_host *host, struct device *devs, size_t n, struct hostprice *hout,
			     struct hostprice_split *info)
{
	struct hostprice h;
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
			       struct hostprice *price, struct hostprice_split *split)
{
	(void)ctx;
	hostprice_apply_builtin(host, devs, n, price, split);
	return hostprice_json(host, price, split);
}
