/* cost: the price book (built-in, file, API overrides), accrued cost from the store, and estimates. */
#include "cost/cost.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "cost/hostprice.h"
#include "cost/pricebook.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/mem.h"

struct cost {
	struct store *store;
	char *file;
	pthread_mutex_t mu;
	pthread_mutex_t put_mu;     /* orders replacements: memory and database see them in the same order */
	struct store_price *file_prices;
	size_t nfile;
	struct store_price *api_prices;
	size_t napi;
	bool api_loaded;            /* the stored overrides have been read (or replaced) */
	struct cloud_host host;     /* what the host is (cost_set_host); state pending until then */
};

/* The device selectors, most specific first; instance_type prices the whole host instead (hostprice.h). */
static const char *const selectors[] = {"device", "accelerator_type", "type"};

static int add_json(json_t *o, const char *key, json_t *v)
{
	return json_object_set_new(o, key, v);
}

/* --- the prices document --- */

#define ENTRY_FIELDS "device, accelerator_type, type, instance_type, usd_per_hour, usd_per_hour_spot, unit, note"
#define DOCUMENT_FIELDS "currency, prices"
#define TYPE_NAMES "cpu, gpu, tpu"

/*
 * Fills the refusal: its reason and detail, and as members the JSON path p and, when the field takes a set of names
 * (names, ", "-separated), `accepted`.
 */
static enum acceld_err vbad(struct refusal *f, enum reason r, const char *p, const char *names, const char *fmt,
			    va_list ap) __attribute__((format(printf, 5, 0)));

static enum acceld_err vbad(struct refusal *f, enum reason r, const char *p, const char *names, const char *fmt,
			    va_list ap)
{
	f->err = ACCELD_EINVAL;
	f->reason = r;
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	json_decref(f->extra);
	f->extra = json_pack("{s:s}", "path", p);
	if (names != NULL) {
		json_t *list = json_array();

		for (const char *n = names; *n != '\0'; n += strspn(n, ", ")) {
			size_t len = strcspn(n, ",");

			json_array_append_new(list, json_stringn(n, len));
			n += len;
		}
		json_object_set_new(f->extra, "accepted", list);
	}
	return ACCELD_EINVAL;
}

static enum acceld_err bad(struct refusal *f, enum reason r, const char *p, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static enum acceld_err bad(struct refusal *f, enum reason r, const char *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbad(f, r, p, NULL, fmt, ap);
	va_end(ap);
	return ACCELD_EINVAL;
}

static enum acceld_err bad_among(struct refusal *f, enum reason r, const char *p, const char *names,
				 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum acceld_err bad_among(struct refusal *f, enum reason r, const char *p, const char *names,
				 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbad(f, r, p, names, fmt, ap);
	va_end(ap);
	return ACCELD_EINVAL;
}

static enum acceld_err parse_entry(json_t *e, size_t idx, struct store_price *p, struct refusal *f)
{
	char base[48];
	char at[112];
	const char *key;
	json_t *v;
	int nsel = 0;

	snprintf(base, sizeof(base), "$.prices[%zu]", idx);
	if (!json_is_object(e))
		return bad(f, REASON_INVALID_TYPE, base, "must be an object");
	memset(p, 0, sizeof(*p));
	p->usd_per_hour = NAN;
	p->usd_per_hour_spot = NAN;
	json_object_foreach(e, key, v) {
		snprintf(at, sizeof(at), "%s.%.60s", base, key);
		if (strcmp(key, "device") == 0 || strcmp(key, "accelerator_type") == 0 || strcmp(key, "type") == 0 ||
		    strcmp(key, "instance_type") == 0) {
			const char *s = json_string_value(v);

			if (s == NULL)
				return bad(f, REASON_INVALID_TYPE, at, "must be a non-empty string of at most 39 bytes");
			if (*s == '\0' || strlen(s) >= sizeof(p->value))
				return bad(f, REASON_INVALID_VALUE, at, "must be a non-empty string of at most 39 bytes");
			if (strcmp(key, "type") == 0 && strcmp(s, "cpu") != 0 && strcmp(s, "gpu") != 0 &&
			    strcmp(s, "tpu") != 0)
				return bad_among(f, REASON_INVALID_VALUE, at, TYPE_NAMES, "'%.39s' is not one of "
						 TYPE_NAMES, s);
			/* a price may name a device not here now (prices outlive devices), never a malformed id */
			if (strcmp(key, "device") == 0 && !device_id_valid(s))
				return bad(f, REASON_INVALID_VALUE, at, "'%.39s' is not " DEVICE_ID_SYNTAX, s);
			snprintf(p->selector, sizeof(p->selector), "%s", key);
			snprintf(p->value, sizeof(p->value), "%s", s);
			nsel++;
		} else if (strcmp(key, "usd_per_hour") == 0 || strcmp(key, "usd_per_hour_spot") == 0) {
			bool spot = key[12] == '_';
			double d;

			if (spot && json_is_null(v))
				continue;
			if (!json_is_number(v))
				return bad(f, REASON_INVALID_TYPE, at, "must be a number");
			d = json_number_value(v);
			if (!isfinite(d) || d < 0 || d > 1e6)
				return bad(f, REASON_INVALID_VALUE, at, "%g is not from 0 to 1000000", d);
			if (spot)
				p->usd_per_hour_spot = d;
			else
				p->usd_per_hour = d;
		} else if (strcmp(key, "unit") == 0 || strcmp(key, "note") == 0) {
			const char *s = json_string_value(v);
			size_t cap = key[0] == 'u' ? sizeof(p->unit) : sizeof(p->note);

			if (s == NULL || strlen(s) >= cap)
				return bad(f, s == NULL ? REASON_INVALID_TYPE : REASON_INVALID_VALUE, at,
					   key[0] == 'u' ? "must be a string of at most 15 bytes"
							 : "must be a string of at most 159 bytes");
			snprintf(key[0] == 'u' ? p->unit : p->note, cap, "%s", s);
		} else {
			return bad_among(f, REASON_UNKNOWN_FIELD, at, ENTRY_FIELDS, "unknown field; accepted: "
					 ENTRY_FIELDS);
		}
	}
	if (nsel != 1)
		return bad(f, nsel == 0 ? REASON_MISSING_FIELD : REASON_CONFLICTING_FIELDS, base,
			   "must name exactly one of device, accelerator_type, type or instance_type");
	if (!isfinite(p->usd_per_hour)) {
		snprintf(at, sizeof(at), "%s.usd_per_hour", base);
		return bad(f, REASON_MISSING_FIELD, at, "is required");
	}
	return ACCELD_OK;
}

enum acceld_err cost_parse_prices(json_t *doc, struct store_price **out, size_t *n, struct refusal *why)
{
	struct refusal *f = why;
	struct store_price *v = NULL;
	json_t *list;
	const char *key;
	json_t *val;
	size_t len;
	enum acceld_err e = ACCELD_OK;

	*out = NULL;
	*n = 0;
	if (!json_is_object(doc))
		return bad(f, REASON_INVALID_TYPE, "$", "must be an object with a prices array");
	json_object_foreach(doc, key, val) {
		char at[80];

		snprintf(at, sizeof(at), "$.%.60s", key);
		if (strcmp(key, "currency") == 0) {
			if (!json_is_string(val))
				return bad(f, REASON_INVALID_TYPE, at, "must be the string \"USD\"");
			if (strcmp(json_string_value(val), "USD") != 0)
				return bad(f, REASON_INVALID_VALUE, at, "'%.16s' is not USD, the one currency acceld "
					   "counts in", json_string_value(val));
		} else if (strcmp(key, "prices") != 0) {
			return bad_among(f, REASON_UNKNOWN_FIELD, at, DOCUMENT_FIELDS, "unknown field; accepted: "
					 DOCUMENT_FIELDS);
		}
	}
	list = json_object_get(doc, "prices");
	if (!json_is_array(list))
		return bad(f, list == NULL ? REASON_MISSING_FIELD : REASON_INVALID_TYPE, "$.prices", "must be an array");
	len = json_array_size(list);
	if (len > COST_MAX_PRICES)
		return bad(f, REASON_INVALID_VALUE, "$.prices", "has more than 1024 entries");
	v = len ? xcalloc(len, sizeof(*v)) : NULL;
	for (size_t i = 0; i < len && e == ACCELD_OK; i++) {
		e = parse_entry(json_array_get(list, i), i, &v[i], f);
		for (size_t j = 0; j < i && e == ACCELD_OK; j++) {
			if (strcmp(v[j].selector, v[i].selector) == 0 && strcmp(v[j].value, v[i].value) == 0) {
				char at[48];

				snprintf(at, sizeof(at), "$.prices[%zu]", i);
				e = bad(f, REASON_INVALID_VALUE, at, "repeats an earlier entry's selector");
			}
		}
	}
	if (e != ACCELD_OK) {
		free(v);
		return e;
	}
	*out = v;
	*n = len;
	return ACCELD_OK;
}

static enum acceld_err load_file(struct cost *c, char *err, size_t errsz)
{
	json_error_t je;
	json_t *doc = json_load_file(c->file, JSON_REJECT_DUPLICATES, &je);
	struct refusal why = {.err = ACCELD_OK};
	enum acceld_err e;

	if (doc == NULL && je.line < 1) /* not read at all: jansson's text names the file's fault ("No such file") */
		snprintf(err, errsz, "prices file %s (ACCELD_PRICES_FILE): %s", c->file, je.text);
	else if (doc == NULL)
		snprintf(err, errsz, "prices file %s (ACCELD_PRICES_FILE): %s at line %d, column %d", c->file, je.text,
			 je.line, je.column);
	if (doc == NULL)
		return ACCELD_EINVAL;
	e = cost_parse_prices(doc, &c->file_prices, &c->nfile, &why);
	json_decref(doc);
	if (e != ACCELD_OK)
		snprintf(err, errsz, "prices file %s (ACCELD_PRICES_FILE): %s %s", c->file,
			 json_string_value(json_object_get(why.extra, "path")), why.detail);
	refusal_release(&why);
	return e;
}

/* Reads the stored API overrides once the database answers. Called with c->mu held. */
static void load_api_locked(struct cost *c)
{
	struct store_price *v = NULL;
	size_t n = 0;

	if (c->api_loaded || c->store == NULL)
		return;
	if (store_prices_load(c->store, &v, &n) != ACCELD_OK)
		return;
	free(c->api_prices);
	c->api_prices = v;
	c->napi = n;
	c->api_loaded = true;
}

enum acceld_err cost_new(struct store *store, const char *prices_file, struct cost **out, char *err, size_t errsz)
{
	struct cost *c = xcalloc(1, sizeof(*c));

	c->store = store;
	cloud_host_init(&c->host);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->put_mu, NULL);
	if (prices_file != NULL) {
		c->file = xstrdup(prices_file);
		if (load_file(c, err, errsz) != ACCELD_OK) {
			cost_free(c);
			return ACCELD_EINVAL;
		}
	}
	pthread_mutex_lock(&c->mu);
	load_api_locked(c);
	pthread_mutex_unlock(&c->mu);
	*out = c;
	return ACCELD_OK;
}

bool cost_file_check(const char *prices_file, char *err, size_t errsz)
{
	struct cost *c;

	if (prices_file == NULL)
		return true;
	if (cost_new(NULL, prices_file, &c, err, errsz) != ACCELD_OK)
		return false;
	cost_free(c);
	return true;
}

void cost_free(struct cost *c)
{
	if (c == NULL)
		return;
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->put_mu);
	free(c->file_prices);
	free(c->api_prices);
	free(c->file);
	free(c);
}

void cost_set_overrides_notify(struct cost *c, const struct store_price *v, size_t n, store_done_fn done, void *ctx)
{
	struct store_price *copy = n ? xcalloc(n, sizeof(*copy)) : NULL;
	int64_t now = clock_real_ms();

	for (size_t i = 0; i < n; i++) {
		copy[i] = v[i];
		copy[i].updated_ms = now;
	}
	pthread_mutex_lock(&c->put_mu);
	pthread_mutex_lock(&c->mu);
	free(c->api_prices);
	c->api_prices = copy;
	c->napi = n;
	c->api_loaded = true;
	pthread_mutex_unlock(&c->mu);
	/* without c->mu: done may run here and read the book */
	store_prices_replace_notify(c->store, copy, n, done, ctx);
	pthread_mutex_unlock(&c->put_mu);
}

void cost_set_overrides(struct cost *c, const struct store_price *v, size_t n)
{
	cost_set_overrides_notify(c, v, n, NULL, NULL);
}

/* --- effective prices --- */

static const struct store_price *find(const struct store_price *v, size_t n, const char *sel, const char *value)
{
	if (value == NULL || *value == '\0')
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].selector, sel) == 0 && strcmp(v[i].value, value) == 0)
			return &v[i];
	return NULL;
}

void cost_set_host(struct cost *c, const struct cloud_host *host)
{
	pthread_mutex_lock(&c->mu);
	c->host = *host;
	pthread_mutex_unlock(&c->mu);
}

/*
 * The host's price: an override naming its instance type (API over file), else the machine table. Called with
 * c->mu held.
 */
static void host_price_locked(struct cost *c, struct pricerec *h)
{
	const struct store_price *o = NULL;
	const char *origin = "api override";

	hostprice_from_table(&c->host, h);
	if (c->host.state != CLOUD_KNOWN)
		return;
	o = find(c->api_prices, c->napi, "instance_type", c->host.instance_type);
	if (o == NULL) {
		o = find(c->file_prices, c->nfile, "instance_type", c->host.instance_type);
		origin = "prices file";
	}
	if (o == NULL)
		return;
	h->usd_per_hour = o->usd_per_hour;
	h->usd_per_hour_spot = o->usd_per_hour_spot;
	/* the override is the price: no table's source, date, bound or hint stands beside it (the shape and its
	 * accelerators stay, to split it) */
	memset(h->sources, 0, sizeof(h->sources));
	h->as_of[0] = h->hint_region[0] = '\0';
	h->hint_usd_per_hour = h->hint_usd_per_hour_spot = NAN;
	h->lower_bound = false;
	snprintf(h->source, sizeof(h->source), "%s (instance_type %s)%s%.160s", origin, o->value, o->note[0] ? ": " : "",
		 o->note);
}

/* The CPU's source when nothing prices it: the host price is unknown, and why. Called with c->mu held. */
static void unpriced_cpu_source(struct cost *c, char *out, size_t outsz)
{
	struct pricerec h;

	host_price_locked(c, &h);
	if (c->host.state == CLOUD_KNOWN && !isfinite(h.usd_per_hour))
		snprintf(out, outsz, "%s", h.source);
	else
		snprintf(out, outsz, "none: the host price is unknown (%s); set one with PUT /cost/prices "
			 "({\"type\": \"cpu\", ...}) or ACCELD_PRICES_FILE", cloud_state_name(c->host.state));
}

/* cost_price_lookup's work, with c->mu held; the stored overrides are not read here. */
static void lookup_locked(struct cost *c, const char *id, const char *type, const char *accelerator_type,
			  const struct device_price *def, struct cost_price *out)
{
	const char *values[] = {id, accelerator_type, type};
	const struct store_price *hit = NULL;
	const char *origin = NULL;
	const char *billing;

	memset(out, 0, sizeof(*out));
	out->usd_per_hour = NAN;
	out->usd_per_hour_spot = NAN;
	for (size_t s = 0; s < 3 && hit == NULL; s++) {
		hit = find(c->api_prices, c->napi, selectors[s], values[s]);
		origin = "api override";
		if (hit == NULL) {
			hit = find(c->file_prices, c->nfile, selectors[s], values[s]);
			origin = "prices file";
		}
	}
	if (hit != NULL) {
		out->usd_per_hour = hit->usd_per_hour;
		out->usd_per_hour_spot = hit->usd_per_hour_spot;
		snprintf(out->unit, sizeof(out->unit), "%s", hit->unit);
		snprintf(out->source, sizeof(out->source), "%s%s%s (%s %s)%s%.80s", origin,
			 strcmp(origin, "prices file") == 0 ? " " : "",
			 strcmp(origin, "prices file") == 0 ? c->file : "", hit->selector, hit->value,
			 hit->note[0] ? ": " : "", hit->note);
	} else if (def != NULL && isfinite(def->usd_per_hour)) {
		out->usd_per_hour = def->usd_per_hour;
		out->usd_per_hour_spot = def->usd_per_hour_spot;
		snprintf(out->unit, sizeof(out->unit), "%s", def->unit);
		snprintf(out->as_of, sizeof(out->as_of), "%s", def->as_of);
		snprintf(out->source, sizeof(out->source), "built-in table%s%.180s", def->source[0] ? ": " : "",
			 def->source);
	} else if (type != NULL && strcmp(type, "cpu") == 0) {
		unpriced_cpu_source(c, out->source, sizeof(out->source));
	} else {
		snprintf(out->source, sizeof(out->source),
			 "none: no price known for this device; set one with PUT /cost/prices or ACCELD_PRICES_FILE");
	}
	out->applied = hostprice_applied(c->host.spot, out->usd_per_hour, out->usd_per_hour_spot, &billing);
	snprintf(out->billing, sizeof(out->billing), "%s", billing);
}

void cost_price_lookup(struct cost *c, const char *id, const char *type, const char *accelerator_type,
		       const struct device_price *def, struct cost_price *out)
{
	pthread_mutex_lock(&c->mu);
	load_api_locked(c);
	lookup_locked(c, id, type, accelerator_type, def, out);
	pthread_mutex_unlock(&c->mu);
}

/*
 * Each present device's share of the host price (override or table; NAN where there is none) into shares[0..n),
 * and the host's price and split. Called with c->mu held.
 */
static void shares_locked(struct cost *c, const struct device *devs, size_t n, struct device_price *shares,
			  struct pricerec *h, struct hostprice_split *split)
{
	host_price_locked(c, h);
	hostprice_split(&c->host, h, devs, n, shares, split);
}

/* The built-in layer of a present device: its host share where there is one, else its table price. */
static const struct device_price *builtin_of(const struct device *d, const struct device_price *share)
{
	return share != NULL && isfinite(share->usd_per_hour) ? share : &d->price;
}

static void price_of_device(struct cost *c, const struct device *d, const struct device_price *share,
			    struct cost_price *out)
{
	cost_price_lookup(c, d->id, device_type_name(d->type), d->accelerator_type, builtin_of(d, share), out);
}

/* The host object of an answer: what it is, its price and the split. Takes c->mu. */
static json_t *host_json(struct cost *c, const struct device *devs, size_t n)
{
	struct device_price *shares = xcalloc(n ? n : 1, sizeof(*shares));
	struct pricerec h;
	struct hostprice_split split;
	json_t *o;

	pthread_mutex_lock(&c->mu);
	shares_locked(c, devs, n, shares, &h, &split);
	o = hostprice_json(&c->host, &h, &split);
	pthread_mutex_unlock(&c->mu);
	free(shares);
	return o;
}

/* Every present device's share (shares[0..n), owned by the caller). Takes c->mu. */
static struct device_price *shares_of(struct cost *c, const struct device *devs, size_t n)
{
	struct device_price *shares = xcalloc(n ? n : 1, sizeof(*shares));
	struct pricerec h;
	struct hostprice_split split;

	pthread_mutex_lock(&c->mu);
	shares_locked(c, devs, n, shares, &h, &split);
	pthread_mutex_unlock(&c->mu);
	return shares;
}

void cost_applied_prices(struct cost *c, const struct device *devs, size_t n, double *usd,
			 struct cost_host_applied *host)
{
	struct device_price *shares = xcalloc(n ? n : 1, sizeof(*shares));
	struct pricerec h;
	struct hostprice_split split;
	const char *billing;

	pthread_mutex_lock(&c->mu);
	shares_locked(c, devs, n, shares, &h, &split);
	for (size_t i = 0; i < n; i++) {
		struct cost_price p;

		lookup_locked(c, devs[i].id, device_type_name(devs[i].type), devs[i].accelerator_type,
			      builtin_of(&devs[i], &shares[i]), &p);
		usd[i] = p.applied;
	}
	host->host = c->host;
	host->usd_per_hour = hostprice_applied(c->host.spot, h.usd_per_hour, h.usd_per_hour_spot, &billing);
	snprintf(host->billing, sizeof(host->billing), "%s", billing);
	pthread_mutex_unlock(&c->mu);
	free(shares);
}

static json_t *price_json(const struct cost_price *p)
{
	json_t *o = json_object();

	add_json(o, "usd_per_hour", jsonval_num(p->usd_per_hour));
	add_json(o, "usd_per_hour_spot", jsonval_num(p->usd_per_hour_spot));
	add_json(o, "applied_usd_per_hour", jsonval_num(p->applied));
	add_json(o, "billing", json_string(p->billing));
	if (p->unit[0])
		add_json(o, "unit", json_string(p->unit));
	add_json(o, "source", json_string(p->source));
	jsonval_set_as_of(o, p->as_of, clock_real_ms());
	return o;
}

static json_t *overrides_json(const struct store_price *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		add_json(o, v[i].selector, json_string(v[i].value));
		add_json(o, "usd_per_hour", json_real(v[i].usd_per_hour));
		if (isfinite(v[i].usd_per_hour_spot))
			add_json(o, "usd_per_hour_spot", json_real(v[i].usd_per_hour_spot));
		if (v[i].unit[0])
			add_json(o, "unit", json_string(v[i].unit));
		if (v[i].note[0])
			add_json(o, "note", json_string(v[i].note));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *cost_prices_json(struct cost *c, const struct device *devs, size_t n)
{
	json_t *doc = json_object();
	json_t *list = json_array();
	struct device_price *shares = shares_of(c, devs, n);

	for (size_t i = 0; i < n; i++) {
		struct cost_price p;
		json_t *o;

		price_of_device(c, &devs[i], &shares[i], &p);
		o = price_json(&p);
		add_json(o, "device", json_string(devs[i].id));
		add_json(o, "type", json_string(device_type_name(devs[i].type)));
		if (devs[i].accelerator_type[0])
			add_json(o, "accelerator_type", json_string(devs[i].accelerator_type));
		json_array_append_new(list, o);
	}
	free(shares);
	add_json(doc, "currency", json_string("USD"));
	add_json(doc, "host", host_json(c, devs, n));
	add_json(doc, "prices", list);
	pthread_mutex_lock(&c->mu);
	add_json(doc, "overrides", overrides_json(c->api_prices, c->napi));
	add_json(doc, "file_overrides", overrides_json(c->file_prices, c->nfile));
	if (c->file)
		add_json(doc, "prices_file", json_string(c->file));
	pthread_mutex_unlock(&c->mu);
	return doc;
}

/* --- accrued cost --- */

static json_t *time_json(int64_t ms)
{
	char t[CLOCK_RFC3339_LEN];

	clock_rfc3339(ms, t);
	return json_string(t);
}

static double usd(double ms, double usd_per_hour)
{
	return isfinite(usd_per_hour) ? ms / 3600000.0 * usd_per_hour : NAN;
}

/* One entry of the report: a device present now, or one only history knows. */
struct subject {
	char id[DEVICE_ID_MAX];
	char type[8];
	char accelerator_type[32];
	struct device_price def;
	bool present;
};

/*
 * A sum of money over devices: the parts with a price added up, and whether a part that cost something (time
 * present or busy, jobs run) has none. Unknown money is never 0: a sum whose every such part is unpriced is
 * null, and any unpriced part makes the totals incomplete. Nothing used costs 0, and is known.
 */
struct money {
	double usd;
	bool priced;                /* a part with a price was added */
	bool unpriced;              /* a part that cost something has no price */
};

static void money_add(struct money *m, double usd, bool costs)
{
	if (isfinite(usd)) {
		m->usd += usd;
		m->priced = true;
	} else if (costs) {
		m->unpriced = true;
	}
}

/*
 * The one rule for money in /cost, a part's and a total's alike: unknown (null) only when something that cost
 * something (time present or busy, jobs run) has no price; nothing that cost anything is 0, whatever the price.
 */
static json_t *money_json(const struct money *m)
{
	return m->unpriced && !m->priced ? json_null() : json_real(m->usd);
}

/* One part's money under that rule: usd (NaN when unpriced) for a part that cost something when costs. */
static json_t *money_of(double usd, bool costs)
{
	struct money m = {0};

	money_add(&m, costs ? usd : 0.0, costs);
	return money_json(&m);
}

struct totals {
	struct money allocated, utilized, jobs;
	json_t *groups;             /* start_time -> {allocated_usd, utilized_usd}, null until a part is priced */
};

/* Adds a device's group to the totals' group of the same start; a part without a price leaves a sum as it is. */
static void add_group_total(struct totals *t, const char *when, double alloc, double util)
{
	json_t *g = json_object_get(t->groups, when);
	json_t *a, *u;

	if (g == NULL) {
		g = json_object();
		add_json(g, "start_time", json_string(when));
		add_json(g, "allocated_usd", json_null());
		add_json(g, "utilized_usd", json_null());
		json_object_set_new(t->groups, when, g);
	}
	a = json_object_get(g, "allocated_usd");
	u = json_object_get(g, "utilized_usd");
	if (isfinite(alloc))
		add_json(g, "allocated_usd", json_real(json_number_value(a) + alloc));
	if (isfinite(util))
		add_json(g, "utilized_usd", json_real(json_number_value(u) + util));
}

static enum acceld_err report_one(struct cost *c, const struct subject *s, const struct cost_query *q,
				  struct totals *t, json_t **out)
{
	struct store_usage *u = NULL;
	struct store_jobs_usage ju;
	struct cost_price p;
	size_t n = 0;
	double present = 0, busy = 0;
	json_t *o, *groups, *x;
	enum acceld_err e = store_usage(c->store, s->id, q->start_ms, q->end_ms, q->bucket_ms, &u, &n);

	if (e == ACCELD_ENOTFOUND)
		e = ACCELD_OK;
	if (e != ACCELD_OK)
		return e;
	e = store_jobs_usage(c->store, s->id, q->start_ms, q->end_ms, &ju);
	if (e != ACCELD_OK) {
		free(u);
		return e;
	}
	if (!s->present && n == 0 && ju.jobs == 0) {
		*out = NULL;
		free(u);
		return ACCELD_OK;
	}
	cost_price_lookup(c, s->id, s->type, s->accelerator_type, &s->def, &p);
	groups = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *g = json_object();
		char when[CLOCK_RFC3339_LEN];
		double a = usd(u[i].present_ms, p.applied), b = usd(u[i].busy_ms, p.applied);

		clock_rfc3339(u[i].t_ms, when);
		add_json(g, "start_time", json_string(when));
		add_json(g, "allocated_seconds", json_real(u[i].present_ms / 1000.0));
		add_json(g, "utilized_seconds", json_real(u[i].busy_ms / 1000.0));
		add_json(g, "allocated_usd", money_of(a, u[i].present_ms > 0));
		add_json(g, "utilized_usd", money_of(b, u[i].busy_ms > 0));
		json_array_append_new(groups, g);
		add_group_total(t, when, u[i].present_ms > 0 ? a : 0.0, u[i].busy_ms > 0 ? b : 0.0);
		present += u[i].present_ms;
		busy += u[i].busy_ms;
	}
	free(u);
	o = json_object();
	add_json(o, "device", json_string(s->id));
	add_json(o, "type", json_string(s->type));
	if (s->accelerator_type[0])
		add_json(o, "accelerator_type", json_string(s->accelerator_type));
	add_json(o, "present", json_boolean(s->present));
	add_json(o, "usd_per_hour", jsonval_num(p.applied));
	add_json(o, "billing", json_string(p.billing));
	add_json(o, "price", price_json(&p));
	x = json_object();
	add_json(x, "seconds", json_real(present / 1000.0));
	add_json(x, "usd", money_of(usd(present, p.applied), present > 0));
	add_json(o, "allocated", x);
	x = json_object();
	add_json(x, "seconds", json_real(busy / 1000.0));
	add_json(x, "usd", money_of(usd(busy, p.applied), busy > 0));
	add_json(o, "utilized", x);
	x = json_object();
	add_json(x, "count", json_integer(ju.jobs));
	add_json(x, "seconds", json_real(ju.seconds));
	{
		/* the cost the jobs recorded when they all did, else the current price over their time */
		double jusd = ju.jobs > 0 && ju.priced == ju.jobs ? ju.cost_usd : usd(ju.seconds * 1000.0, p.applied);

		add_json(x, "usd", money_of(jusd, ju.jobs > 0));
		money_add(&t->jobs, jusd, ju.jobs > 0);
	}
	add_json(o, "jobs", x);
	add_json(o, "groups", groups);
	money_add(&t->allocated, usd(present, p.applied), present > 0);
	money_add(&t->utilized, usd(busy, p.applied), busy > 0);
	*out = o;
	return ACCELD_OK;
}

static void subject_from_device(struct subject *s, const struct device *d, const struct device_price *share)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", d->id);
	snprintf(s->type, sizeof(s->type), "%s", device_type_name(d->type));
	snprintf(s->accelerator_type, sizeof(s->accelerator_type), "%s", d->accelerator_type);
	s->def = *builtin_of(d, share);
	s->present = true;
}

static void subject_from_row(struct subject *s, const struct store_device_row *r)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", r->id);
	snprintf(s->type, sizeof(s->type), "%s", r->type);
	snprintf(s->accelerator_type, sizeof(s->accelerator_type), "%s", r->accelerator_type);
	s->def.usd_per_hour = r->usd_per_hour;
	s->def.usd_per_hour_spot = NAN;
	snprintf(s->def.source, sizeof(s->def.source), "%s", r->price_source);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * "price_note" on doc when a built-in price used for a present device (of q's device, where it names one) is older
 * than PRICEBOOK_STALE_DAYS: which, and how old.
 */
static void stale_note(struct cost *c, const struct device *devs, size_t n, const struct device_price *shares,
		       const struct cost_query *q, json_t *doc)
{
	char oldest[16] = "", who[DEVICE_ID_MAX] = "", text[320];
	int64_t now = clock_real_ms();
	long age;

	for (size_t i = 0; i < n; i++) {
		struct cost_price p;

		if (q->device != NULL && strcmp(q->device, devs[i].id) != 0)
			continue;
		price_of_device(c, &devs[i], &shares[i], &p);
		if (p.as_of[0] != '\0' && (oldest[0] == '\0' || strcmp(p.as_of, oldest) < 0)) {
			snprintf(oldest, sizeof(oldest), "%s", p.as_of);
			snprintf(who, sizeof(who), "%s", devs[i].id);
		}
	}
	age = clock_days_since(oldest, now);
	if (oldest[0] == '\0' || age == LONG_MIN || age <= PRICEBOOK_STALE_DAYS)
		return;
	snprintf(text, sizeof(text), "a price used is %ld days old (device %s, as of %s), older than %d days: the cloud "
		 "may bill otherwise now; set a current one with PUT /cost/prices", age, who, oldest,
		 PRICEBOOK_STALE_DAYS);
	add_json(doc, "price_note", json_string(text));
}

enum acceld_err cost_report(struct cost *c, const struct device *devs, size_t n, const struct cost_query *q,
			    json_t **out)
{
	struct store_device_row *rows = NULL;
	struct device_price *shares = NULL;
	size_t nrows = 0, nsub = 0;
	struct subject *subs;
	struct totals t = {.groups = json_object()};
	json_t *list = json_array();
	json_t *doc, *tot, *garr;
	const char *k;
	json_t *v;
	enum acceld_err e = store_devices_list(c->store, &rows, &nrows);

	if (e != ACCELD_OK)
		goto out;
	subs = xcalloc(n + nrows, sizeof(*subs));
	shares = shares_of(c, devs, n);
	for (size_t i = 0; i < n; i++)
		if (q->device == NULL || strcmp(q->device, devs[i].id) == 0)
			subject_from_device(&subs[nsub++], &devs[i], &shares[i]);
	for (size_t i = 0; i < nrows; i++) {
		bool known = false;

		for (size_t j = 0; j < n && !known; j++)
			known = strcmp(devs[j].id, rows[i].id) == 0;
		if (!known && (q->device == NULL || strcmp(q->device, rows[i].id) == 0))
			subject_from_row(&subs[nsub++], &rows[i]);
	}
	if (q->device != NULL && nsub == 0)
		e = ACCELD_ENOTFOUND;
	for (size_t i = 0; i < nsub && e == ACCELD_OK; i++) {
		json_t *one = NULL;

		e = report_one(c, &subs[i], q, &t, &one);
		if (one != NULL)
			json_array_append_new(list, one);
	}
	free(subs);
	if (e != ACCELD_OK)
		goto out;
	doc = json_object();
	add_json(doc, "currency", json_string("USD"));
	add_json(doc, "start_time", time_json(q->start_ms));
	add_json(doc, "end_time", time_json(q->end_ms));
	add_json(doc, "group_by", json_string(q->bucket_ms == STORE_DAY_MS ? "day" : "hour"));
	add_json(doc, "host", host_json(c, devs, n));
	add_json(doc, "devices", list);
	tot = json_object();
	add_json(tot, "allocated_usd", money_json(&t.allocated));
	add_json(tot, "utilized_usd", money_json(&t.utilized));
	add_json(tot, "jobs_usd", money_json(&t.jobs));
	add_json(tot, "complete",
		 json_boolean(!t.allocated.unpriced && !t.utilized.unpriced && !t.jobs.unpriced));
	garr = json_array();
	/* object keys are RFC 3339 times of the same form, so sorting them sorts by time */
	{
		size_t ng = json_object_size(t.groups), i = 0;
		const char **keys = xcalloc(ng ? ng : 1, sizeof(*keys));

		json_object_foreach(t.groups, k, v)
			keys[i++] = k;
		qsort(keys, ng, sizeof(*keys), cmp_str);
		for (i = 0; i < ng; i++)
			json_array_append(garr, json_object_get(t.groups, keys[i]));
		free(keys);
	}
	add_json(tot, "groups", garr);
	add_json(doc, "totals", tot);
	add_json(doc, "note", json_string("current prices applied to the whole window; allocated = time the device was "
					  "present, utilized = that time weighted by utilization"));
	stale_note(c, devs, n, shares, q, doc);
	*out = doc;
	list = NULL;
out:
	json_decref(list);
	json_decref(t.groups);
	free(shares);
	free(rows);
	return e;
}

/* --- estimates --- */

struct estimate {
	const struct device *d;
	double seconds, usd;
	struct cost_price p;
	char basis[96];
	double gflops;
};

static int cmp_estimate(const void *a, const void *b)
{
	const struct estimate *x = a, *y = b;
	bool xk = isfinite(x->usd), yk = isfinite(y->usd);

	if (xk != yk)
		return xk ? -1 : 1;
	if (xk && x->usd != y->usd)
		return x->usd < y->usd ? -1 : 1;
	if (isfinite(x->seconds) != isfinite(y->seconds))
		return isfinite(x->seconds) ? -1 : 1;
	if (isfinite(x->seconds) && x->seconds != y->seconds)
		return x->seconds < y->seconds ? -1 : 1;
	return strcmp(x->d->id, y->d->id);
}

/* Seconds for the work on d: measured throughput of earlier jobs, else the slower of compute and memory peaks. */
static void estimate_time(struct cost *c, const struct device *d, const char *kernel, double flops, double bytes,
			  struct estimate *e)
{
	double fps = NAN;
	unsigned jobs = 0;
	double t_flops = NAN, t_bytes = NAN;

	e->seconds = NAN;
	e->gflops = NAN;
	if (store_throughput(c->store, d->id, kernel, &fps, &jobs) == ACCELD_OK && jobs > 0 && fps > 0) {
		e->seconds = flops / fps;
		e->gflops = fps / 1e9;
		snprintf(e->basis, sizeof(e->basis), "measured: %u earlier %s job%s on this device", jobs, kernel,
			 jobs == 1 ? "" : "s");
		return;
	}
	if (isfinite(d->peak.fp32_tflops) && d->peak.fp32_tflops > 0)
		t_flops = flops / (d->peak.fp32_tflops * 1e12);
	if (isfinite(d->peak.memory_gbytes_per_s) && d->peak.memory_gbytes_per_s > 0)
		t_bytes = bytes / (d->peak.memory_gbytes_per_s * 1e9);
	if (isfinite(t_flops) || isfinite(t_bytes)) {
		e->seconds = !isfinite(t_flops) ? t_bytes : !isfinite(t_bytes) ? t_flops : fmax(t_flops, t_bytes);
		e->gflops = flops / e->seconds / 1e9;
		snprintf(e->basis, sizeof(e->basis), "peak figures (%s)",
			 isfinite(t_flops) && isfinite(t_bytes) ? "fp32 and memory bandwidth"
			 : isfinite(t_flops)		     ? "fp32 only"
							     : "memory bandwidth only");
		return;
	}
	snprintf(e->basis, sizeof(e->basis), "unknown: no earlier jobs and no peak figures");
}

enum acceld_err cost_estimate(struct cost *c, const struct device *devs, size_t n,
			      const struct cost_estimate_query *q, json_t **out)
{
	struct estimate *v = xcalloc(n ? n : 1, sizeof(*v));
	struct device_price *shares = NULL;
	double flops = 0, bytes = 0;
	size_t len = 0;
	json_t *doc, *list;
	enum acceld_err e = ACCELD_OK;

	if (q->seconds <= 0 && (q->kernel < 0 || q->kernel >= KERNEL_COUNT)) {
		free(v);
		return ACCELD_EINVAL;
	}
	if (q->seconds <= 0) {
		flops = kernel_flops((enum kernel_id)q->kernel, &q->shape);
		bytes = kernel_bytes((enum kernel_id)q->kernel, &q->shape);
	}
	shares = shares_of(c, devs, n);
	for (size_t i = 0; i < n; i++) {
		struct estimate *x;

		if (q->device != NULL && strcmp(q->device, devs[i].id) != 0)
			continue;
		x = &v[len++];
		x->d = &devs[i];
		price_of_device(c, &devs[i], &shares[i], &x->p);
		if (q->seconds > 0) {
			x->seconds = q->seconds;
			snprintf(x->basis, sizeof(x->basis), "given");
			x->gflops = NAN;
		} else {
			estimate_time(c, &devs[i], kernel_name((enum kernel_id)q->kernel), flops, bytes, x);
		}
		x->usd = isfinite(x->seconds) ? usd(x->seconds * 1000.0, x->p.applied) : NAN;
	}
	free(shares);
	if (q->device != NULL && len == 0) {
		free(v);
		return ACCELD_ENOTFOUND;
	}
	qsort(v, len, sizeof(*v), cmp_estimate);
	doc = json_object();
	list = json_array();
	add_json(doc, "currency", json_string("USD"));
	if (q->seconds > 0) {
		add_json(doc, "seconds", json_real(q->seconds));
	} else {
		unsigned params = kernel_params((enum kernel_id)q->kernel);

		add_json(doc, "kernel", json_string(kernel_name((enum kernel_id)q->kernel)));
		add_json(doc, "n", json_integer((json_int_t)q->shape.n));
		if (params & KERNEL_PARAM_M)
			add_json(doc, "m", json_integer((json_int_t)q->shape.m));
		if (params & KERNEL_PARAM_K)
			add_json(doc, "k", json_integer((json_int_t)q->shape.k));
		add_json(doc, "flops", json_real(flops));
		add_json(doc, "bytes", json_real(bytes));
	}
	for (size_t i = 0; i < len; i++) {
		json_t *o = json_object();

		add_json(o, "device", json_string(v[i].d->id));
		add_json(o, "type", json_string(device_type_name(v[i].d->type)));
		add_json(o, "executable", json_boolean(v[i].d->executable));
		add_json(o, "seconds", jsonval_num(v[i].seconds));
		add_json(o, "usd", jsonval_num(v[i].usd));
		add_json(o, "usd_per_hour", jsonval_num(v[i].p.applied));
		add_json(o, "billing", json_string(v[i].p.billing));
		add_json(o, "price_source", json_string(v[i].p.source));
		add_json(o, "basis", json_string(v[i].basis));
		if (isfinite(v[i].gflops))
			add_json(o, "gflops", json_real(v[i].gflops));
		json_array_append_new(list, o);
	}
	add_json(doc, "estimates", list);
	add_json(doc, "host", host_json(c, devs, n));
	free(v);
	*out = doc;
	return e;
}
