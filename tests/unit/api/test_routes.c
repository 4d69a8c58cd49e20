/* Unit tests for routes.c: pattern matching and the dispatcher's shared answers, with a test route table. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check_main.h"
#include "api/routes.h"
#include "core/config.h"
#include "core/pool.h"
#include "metrics/metrics.h"

static int calls;

static void h_ok(struct app *app, struct http_req *req, struct http_resp *resp)
{
	(void)app;
	calls++;
	http_resp_json(resp, 200, json_pack("{s:s, s:b}", "param", req->nparams ? req->params[0] : "",
					    "json", req->json != NULL));
}

static const struct route table[] = {
	{HTTP_GET, "/things", h_ok, 0},
	{HTTP_POST, "/things", h_ok, ROUTE_JSON | ROUTE_AUTH},
	{HTTP_GET, "/things/{id}", h_ok, 0},
	{HTTP_DELETE, "/things/{id}", h_ok, ROUTE_AUTH},
	{HTTP_POST, "/opt", h_ok, ROUTE_JSON_OPTIONAL},
};

#define NT (sizeof(table) / sizeof(table[0]))

static struct http_req req_of(enum http_method m, const char *path)
{
	struct http_req r;

	memset(&r, 0, sizeof(r));
	r.method = m;
	r.method_name = http_method_name(m);
	r.path = path;
	r.body = "";
	r.max_json_depth = 8;
	return r;
}

static struct app *test_app(const char *token)
{
	static struct app app;

	memset(&app, 0, sizeof(app));
	app.cfg.token = (char *)(uintptr_t)token;
	atomic_store(&app.started, true);
	return &app;
}

static int dispatch(struct http_req *r, struct http_resp *resp, const char *token)
{
	http_resp_init(resp, "rid");
	routes_dispatch_table(table, NT, test_app(token), r, resp);
	json_decref(r->json);
	r->json = NULL;
	return resp->status;
}

static const char *header(const struct http_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

START_TEST(matching)
{
	struct http_req r = req_of(HTTP_GET, "");

	ck_assert(routes_match("/a/{id}", "/a/gpu:0", &r));
	ck_assert_uint_eq(r.nparams, 1);
	ck_assert_str_eq(r.params[0], "gpu:0");
	ck_assert(!routes_match("/a/{id}", "/a/", NULL));
	ck_assert(!routes_match("/a/{id}", "/a/x/y", NULL));
	ck_assert(!routes_match("/a", "/a/", NULL));
	ck_assert(!routes_match("/a", "/ab", NULL));
	ck_assert(routes_match("/a/{x}/b/{y}", "/a/1/b/2", &r));
	ck_assert_str_eq(r.params[1], "2");
}
END_TEST

START_TEST(not_found_and_method)
{
	struct http_req r = req_of(HTTP_GET, "/nope");
	struct http_resp resp;

	ck_assert_int_eq(dispatch(&r, &resp, NULL), 404);
	http_resp_release(&resp);

	r = req_of(HTTP_PUT, "/things/7");
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 405);
	ck_assert_str_eq(header(&resp, "Allow"), "GET, HEAD, DELETE, OPTIONS");
	http_resp_release(&resp);

	r = req_of(HTTP_OPTIONS, "/things");
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 204);
	ck_assert_str_eq(header(&resp, "Allow"), "GET, HEAD, POST, OPTIONS");
	http_resp_release(&resp);

	calls = 0;
	r = req_of(HTTP_HEAD, "/things/abc");
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 200); /* HEAD is served by the GET route */
	ck_assert_int_eq(calls, 1);
	http_resp_release(&resp);
}
END_TEST

START_TEST(auth)
{
	struct http_req r = req_of(HTTP_DELETE, "/things/1");
	struct http_resp resp;

	ck_assert_int_eq(dispatch(&r, &resp, NULL), 200); /* no token configured: open */
	http_resp_release(&resp);
	ck_assert_int_eq(dispatch(&r, &resp, "tok"), 401);
	ck_assert_str_eq(header(&resp, "WWW-Authenticate"), "Bearer realm=\"acceld\"");
	http_resp_release(&resp);
	r.authorization = "Bearer tok2";
	ck_assert_int_eq(dispatch(&r, &resp, "tok"), 401);
	ck_assert_ptr_nonnull(strstr(header(&resp, "WWW-Authenticate"), "invalid_token"));
	http_resp_release(&resp);
	r.authorization = "bearer tok";
	ck_assert_int_eq(dispatch(&r, &resp, "tok"), 200);
	http_resp_release(&resp);

	ck_assert(routes_token_ok("Bearer abc", "abc"));
	ck_assert(!routes_token_ok("Bearer ab", "abc"));
	ck_assert(!routes_token_ok("Bearer abcd", "abc"));
	ck_assert(!routes_token_ok("Basic abc", "abc"));
	ck_assert(!routes_token_ok(NULL, "abc"));
}
END_TEST

START_TEST(json_routes)
{
	struct http_req r = req_of(HTTP_POST, "/things");
	struct http_resp resp;

	r.content_type = "text/plain";
	r.body = "{}";
	r.body_len = 2;
	r.has_body = true;
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 415);
	http_resp_release(&resp);
	r.content_type = "application/json";
	r.body = "{\"a\":";
	r.body_len = 5;
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 400);
	http_resp_release(&resp);
	r.body = "{\"a\":1}";
	r.body_len = 7;
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 200);
	ck_assert(json_is_true(json_object_get(resp.json, "json")));
	http_resp_release(&resp);

	/* an optional body may be left out */
	r = req_of(HTTP_POST, "/opt");
	ck_assert_int_eq(dispatch(&r, &resp, NULL), 200);
	ck_assert(json_is_false(json_object_get(resp.json, "json")));
	http_resp_release(&resp);
}
END_TEST

START_TEST(starting_and_draining)
{
	struct http_req r = req_of(HTTP_GET, "/things");
	struct http_resp resp;
	struct app *app = test_app(NULL);

	atomic_store(&app->started, false);
	http_resp_init(&resp, "rid");
	routes_dispatch_table(table, NT, app, &r, &resp);
	ck_assert_int_eq(resp.status, 503); /* no module may be touched before start-up publishes it */
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "STARTING");
	ck_assert_str_eq(header(&resp, "Retry-After"), "1");
	http_resp_release(&resp);

	atomic_store(&app->started, true);
	atomic_store(&app->draining, true);
	r = req_of(HTTP_DELETE, "/things/1");
	http_resp_init(&resp, "rid");
	routes_dispatch_table(table, NT, app, &r, &resp);
	ck_assert_int_eq(resp.status, 503); /* no new work while draining */
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "SHUTTING_DOWN");
	http_resp_release(&resp);
	r = req_of(HTTP_GET, "/things/1");
	http_resp_init(&resp, "rid");
	routes_dispatch_table(table, NT, app, &r, &resp);
	ck_assert_int_eq(resp.status, 200); /* reads still answer */
	http_resp_release(&resp);
}
END_TEST

static const struct route needs_table[] = {
	{HTTP_GET, "/dev", h_ok, ROUTE_DETECT},
	{HTTP_GET, "/exec", h_ok, ROUTE_EXEC},
	{HTTP_GET, "/store", h_ok, ROUTE_STORE},
	{HTTP_GET, "/cost", h_ok, ROUTE_COST | ROUTE_STORE},
	{HTTP_GET, "/metrics", h_ok, ROUTE_METRICS},
	{HTTP_POST, "/json", h_ok, ROUTE_JSON | ROUTE_AUTH | ROUTE_EXEC},
};

static int dispatch_needs(struct app *app, const char *method_path, struct http_resp *resp)
{
	struct http_req r = req_of(strncmp(method_path, "POST ", 5) == 0 ? HTTP_POST : HTTP_GET,
				   strchr(method_path, ' ') + 1);

	http_resp_init(resp, "rid");
	routes_dispatch_table(needs_table, sizeof(needs_table) / sizeof(needs_table[0]), app, &r, resp);
	json_decref(r.json);
	return resp->status;
}

START_TEST(missing_services_answer_503_unavailable)
{
	static const char *const cases[][2] = {
		{"GET /dev", "devices"},  {"GET /exec", "executor"}, {"GET /store", "database"},
		{"GET /cost", "database"}, {"GET /metrics", "metrics"}, {"POST /json", "executor"},
	};
	static char present; /* any non-NULL pointer stands for a running service: the handler never uses it */
	struct app *app = test_app(NULL);
	struct http_resp resp;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		calls = 0;
		ck_assert_int_eq(dispatch_needs(app, cases[i][0], &resp), 503);
		ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "UNAVAILABLE");
		ck_assert_str_eq(json_string_value(json_object_get(resp.json, "service")), cases[i][1]);
		ck_assert_str_eq(header(&resp, "Retry-After"), "1");
		ck_assert_int_eq(calls, 0); /* the handler never runs without its service */
		http_resp_release(&resp);
	}

	/* a token is checked before the services: an unauthenticated caller learns nothing of them */
	app->cfg.token = (char *)(uintptr_t)"tok";
	ck_assert_int_eq(dispatch_needs(app, "POST /json", &resp), 401);
	http_resp_release(&resp);
	app->cfg.token = NULL;

	/* the cost route needs both: the store alone is not enough */
	app->store = (struct store *)(void *)&present;
	ck_assert_int_eq(dispatch_needs(app, "GET /cost", &resp), 503);
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "service")), "prices");
	http_resp_release(&resp);

	app->detect = (struct detect *)(void *)&present;
	app->exec = (struct exec *)(void *)&present;
	app->cost = (struct cost *)(void *)&present;
	app->metrics = (struct metrics *)(void *)&present;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		calls = 0;
		/* the JSON route answers 415 (no body) once its service is there: the dispatcher went on */
		ck_assert_int_eq(dispatch_needs(app, cases[i][0], &resp), i == 5 ? 415 : 200);
		ck_assert_int_eq(calls, i == 5 ? 0 : 1);
		http_resp_release(&resp);
	}
}
END_TEST

START_TEST(service_table_is_sane)
{
	size_t n;
	const struct route *t = routes_table(&n);

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert(t[i].fn != NULL);
		ck_assert_int_eq(t[i].pattern[0], '/');
		for (size_t j = 0; j < i; j++) /* no route is listed twice */
			ck_assert(!(t[i].method == t[j].method && strcmp(t[i].pattern, t[j].pattern) == 0));
	}
}
END_TEST

START_TEST(health_listener_serves_probes_only)
{
	static const char *const other[] = {"/devices", "/run", "/", "/livez/x", "/metricsx"};
	struct http_req r = req_of(HTTP_GET, "/livez");
	struct http_resp resp;

	http_resp_init(&resp, "rid");
	routes_dispatch_health(test_app(NULL), &r, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.route, "/livez");
	http_resp_release(&resp);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		r = req_of(HTTP_GET, other[i]);
		http_resp_init(&resp, "rid");
		routes_dispatch_health(test_app(NULL), &r, &resp);
		ck_assert_int_eq(resp.status, 404);
		ck_assert_ptr_null(resp.route);
		http_resp_release(&resp);
	}
}
END_TEST

/* No environment: the settings come from the arguments and the defaults alone. */
static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

/* Loads cfg from the settings given (NULL-terminated) and the defaults. */
static void configure(struct config *cfg, const char *const *args)
{
	char *argv[32];
	char msg[512];
	int argc = 0;

	for (; args[argc] != NULL; argc++) {
		ck_assert_int_lt(argc, 32);
		argv[argc] = strdup(args[argc]);
	}
	ck_assert_msg(config_load(cfg, argc, argv, no_env, msg, sizeof(msg)) == 0, "%s", msg);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

START_TEST(server_settings)
{
	struct app app;
	struct http_server_opts o;
	char cert[] = "tests/fixtures/tls/cert.pem";
	char key[] = "tests/fixtures/tls/key.pem";

	memset(&app, 0, sizeof(app));
	configure(&app.cfg, (const char *const[]){"--listen", "127.0.0.1:8123", "--threads", "3", "--max-connections",
						  "100", "--max-connections-per-ip", "7", "--idle-timeout", "1500ms",
						  "--conn-memory", "64KiB", "--max-body", "2MiB", "--max-json-depth", "10",
						  "--access-log=false", NULL});
	app.metrics = metrics_new();
	routes_server_opts(&app, &o);
	ck_assert_str_eq(o.host, "127.0.0.1");
	ck_assert_uint_eq(o.port, 8123);
	ck_assert_uint_eq(o.threads, 3);
	ck_assert_uint_eq(o.max_connections, 100);
	ck_assert_uint_eq(o.max_connections_per_ip, 7);
	ck_assert_uint_eq(o.idle_timeout_s, 2); /* 1.5 s rounds up */
	ck_assert_uint_eq(o.conn_memory, 65536);
	ck_assert_uint_eq(o.max_body, 2097152);
	ck_assert_uint_eq(o.max_json_depth, 10);
	ck_assert(!o.access_log);
	ck_assert_ptr_null(o.tls_cert_pem);
	ck_assert(o.dispatch == routes_dispatch);
	ck_assert_ptr_eq(o.ctx, &app);
	ck_assert(o.observe == metrics_http_hook);
	ck_assert_ptr_eq(o.observe_ctx, app.metrics);
	config_release(&app.cfg);

	/* threads 0: one per usable CPU; whole seconds stay as they are; TLS from the files' contents */
	configure(&app.cfg, (const char *const[]){"--idle-timeout", "30s", "--tls-cert", cert, "--tls-key", key,
						  "--health-listen", "127.0.0.1:8124", NULL});
	routes_server_opts(&app, &o);
	ck_assert_uint_eq(o.threads, pool_usable_cpus());
	ck_assert_uint_eq(o.idle_timeout_s, 30);
	ck_assert_str_eq(o.host, "127.0.0.1");
	ck_assert_uint_eq(o.port, 9470);
	ck_assert_ptr_eq(o.tls_cert_pem, app.cfg.tls_cert_pem);
	ck_assert_ptr_eq(o.tls_key_pem, app.cfg.tls_key_pem);
	ck_assert_ptr_nonnull(strstr(o.tls_cert_pem, "BEGIN CERTIFICATE"));

	/* the health listener: its address, one thread, a small budget, no per-address limit, plain HTTP, probes */
	routes_health_server_opts(&app, &o);
	ck_assert_str_eq(o.host, "127.0.0.1");
	ck_assert_uint_eq(o.port, 8124);
	ck_assert_uint_eq(o.threads, 1);
	ck_assert_uint_eq(o.max_connections, 16);
	ck_assert_uint_eq(o.max_connections_per_ip, 0);
	ck_assert_ptr_null(o.tls_cert_pem);
	ck_assert_ptr_null(o.tls_key_pem);
	ck_assert(o.dispatch == routes_dispatch_health);
	/* the rest as the main listener's */
	ck_assert_uint_eq(o.idle_timeout_s, 30);
	ck_assert_uint_eq(o.max_body, app.cfg.max_body);
	ck_assert_ptr_eq(o.ctx, &app);
	ck_assert_ptr_eq(o.observe_ctx, app.metrics);
	config_release(&app.cfg);
	metrics_free(app.metrics);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("routes");
	TCase *tc = tcase_create("dispatch");

	tcase_add_test(tc, matching);
	tcase_add_test(tc, not_found_and_method);
	tcase_add_test(tc, auth);
	tcase_add_test(tc, json_routes);
	tcase_add_test(tc, starting_and_draining);
	tcase_add_test(tc, missing_services_answer_503_unavailable);
	tcase_add_test(tc, service_table_is_sane);
	tcase_add_test(tc, health_listener_serves_probes_only);
	tcase_add_test(tc, server_settings);
	suite_add_tcase(s, tc);
	return s;
}
