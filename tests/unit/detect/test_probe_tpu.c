/*
 * Unit tests for probe_tpu.c: every TPU fixture tree, the decoys, the TPU_* environment, the name and tpu-env
 * parsers, and the GCE metadata path against a small HTTP server on 127.0.0.1 (and one that never answers).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_main.h"
#include "detect/probe.h"
#include "detect/probe_tpu.h"

static struct config cfg;
static char sys_root[256];
static char dev_root[256];
static char meta_url[256];

static void setup(void)
{
	static const char *vars[] = {"TPU_ACCELERATOR_TYPE", "TPU_TOPOLOGY", "TPU_WORKER_ID", "TPU_NAME",
				     "TPU_VISIBLE_CHIPS"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	memset(&cfg, 0, sizeof(cfg));
	cfg.sysfs_root = sys_root;
	cfg.dev_root = dev_root;
	/* nothing listens on port 9 of the loopback; only fixtures marked Google ask at all */
	snprintf(meta_url, sizeof(meta_url), "http://127.0.0.1:9/computeMetadata/v1");
	cfg.gce_metadata_url = meta_url;
}

static void use(const char *fixture)
{
	snprintf(sys_root, sizeof(sys_root), "tests/fixtures/%s/sys", fixture);
	snprintf(dev_root, sizeof(dev_root), "tests/fixtures/%s/dev", fixture);
}

static void run(void **st, struct device_list *out, struct probe_result *res)
{
	*st = NULL;
	device_list_init(out);
	memset(res, 0, sizeof(*res));
	probe_tpu_ops.probe(st, &cfg, out, res);
}

static void done(void *st, struct device_list *out)
{
	probe_tpu_ops.release(st);
	device_list_release(out);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Probes a fixture and checks the chip count and generation of each chip. */
static void expect_chips(const char *fixture, unsigned chips, const char *gen, const char *model, unsigned cores)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use(fixture);
	run(&st, &out, &res);
	ck_assert_msg(res.ok, "%s: %s", fixture, res.why);
	ck_assert(res.available);
	ck_assert_uint_eq(res.found, chips);
	ck_assert_uint_eq(out.n, chips);
	for (size_t i = 0; i < out.n; i++) {
		const struct device *d = &out.v[i];

		ck_assert_int_eq(d->type, DEVICE_TPU);
		ck_assert_str_eq(d->vendor, "Google");
		ck_assert_str_eq(d->model, model);
		ck_assert_str_eq(d->tpu.generation, gen);
		ck_assert_uint_eq(d->tpu.chips, chips);
		ck_assert_uint_eq(d->tpu.chip_index, i);
		ck_assert_uint_eq(d->tpu.cores_per_chip, cores);
		ck_assert(d->sources & SOURCE_PCI);
		ck_assert(d->sources & SOURCE_DEVNODE);
		ck_assert(!(d->sources & (SOURCE_ENV | SOURCE_METADATA)));
		ck_assert_str_eq(d->tpu.accelerator_type, "");
		ck_assert_int_eq(d->tpu.worker_id, -1);
		ck_assert_str_eq(d->id, "");
		if (i > 0)
			ck_assert_int_lt(strcmp(out.v[i - 1].pci_bus_id, d->pci_bus_id), 0);
	}
	done(st, &out);
}

START_TEST(fixtures)
{
	expect_chips("tpu-v3", 4, "v3", "TPU v3", 2);
	expect_chips("tpu-v4", 4, "v4", "TPU v4", 2);
	expect_chips("tpu-v5e", 4, "v5e", "TPU v5e", 1);
	expect_chips("tpu-v5p", 4, "v5p", "TPU v5p", 2);
	expect_chips("tpu-v6e-8", 8, "v6e", "TPU v6e", 1);
	/* four PCI functions, two chips */
	expect_chips("tpu-7x", 2, "tpu7x", "TPU7x", 2);
}
END_TEST

START_TEST(nodes_and_addresses)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use("tpu-v4");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 4);
	ck_assert_str_eq(out.v[0].pci_bus_id, "0000:00:04.0");
	ck_assert_str_eq(out.v[3].pci_bus_id, "0000:00:07.0");
	ck_assert(ends_with(out.v[0].tpu.device_node, "/dev/accel0"));
	ck_assert(ends_with(out.v[3].tpu.device_node, "/dev/accel3"));
	ck_assert_int_eq(out.v[0].numa_node, 0);
	done(st, &out);

	use("tpu-v6e-8");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 8);
	ck_assert(ends_with(out.v[0].tpu.device_node, "/dev/vfio/10"));
	ck_assert(ends_with(out.v[7].tpu.device_node, "/dev/vfio/17"));
	ck_assert_int_eq(out.v[7].numa_node, 1);
	done(st, &out);

	use("tpu-7x");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 2);
	ck_assert_str_eq(out.v[0].pci_bus_id, "0000:00:04.0");
	ck_assert_str_eq(out.v[1].pci_bus_id, "0000:00:05.0");
	ck_assert(ends_with(out.v[1].tpu.device_node, "/dev/vfio/21"));
	done(st, &out);
}
END_TEST

START_TEST(decoys_yield_nothing)
{
	static const char *trees[] = {"decoy-nvidia-accel", "decoy-bluefield-vfio", "amd-mi300x", "intel-gpu"};

	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		void *st;
		struct device_list out;
		struct probe_result res;

		use(trees[i]);
		run(&st, &out, &res);
		ck_assert(res.ok);
		ck_assert_msg(!res.available, "%s", trees[i]);
		ck_assert_uint_eq(out.n, 0);
		done(st, &out);
	}
}
END_TEST

START_TEST(missing_trees)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use("does-not-exist");
	setenv("TPU_ACCELERATOR_TYPE", "v6e-8", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(!res.available);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_ptr_nonnull(strstr(res.why, "no TPU is on the PCI bus"));
	done(st, &out);
}
END_TEST

static size_t visible_chips(const char *value, unsigned *idx, struct probe_result *res)
{
	void *st;
	struct device_list out;
	size_t n;

	setenv("TPU_VISIBLE_CHIPS", value, 1);
	run(&st, &out, res);
	n = out.n;
	for (size_t i = 0; i < n; i++) {
		idx[i] = out.v[i].tpu.chip_index;
		ck_assert_uint_eq(out.v[i].tpu.chips, n);
	}
	done(st, &out);
	return n;
}

START_TEST(visible_chips_filter)
{
	unsigned idx[8];
	struct probe_result res;

	use("tpu-v6e-8");
	ck_assert_uint_eq(visible_chips("1,3", idx, &res), 2);
	ck_assert_uint_eq(idx[0], 1);
	ck_assert_uint_eq(idx[1], 3);
	ck_assert_uint_eq(visible_chips("", idx, &res), 0);
	ck_assert(res.available);
	ck_assert_uint_eq(visible_chips("7,8,0", idx, &res), 1);
	ck_assert_uint_eq(idx[0], 7);
	ck_assert_ptr_nonnull(strstr(res.why, "TPU_VISIBLE_CHIPS entry 1"));
	ck_assert_uint_eq(visible_chips("0,1,2,3,4,5,6,7", idx, &res), 8);
}
END_TEST

START_TEST(environment)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *d;

	use("tpu-v6e-8");
	setenv("TPU_ACCELERATOR_TYPE", "v6e-8", 1);
	setenv("TPU_TOPOLOGY", "2x4", 1);
	setenv("TPU_WORKER_ID", "0", 1);
	setenv("TPU_NAME", "my-tpu", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_str_eq(res.why, "");
	ck_assert_uint_eq(out.n, 8);
	d = &out.v[5];
	ck_assert_str_eq(d->tpu.accelerator_type, "v6e-8");
	ck_assert_str_eq(d->tpu.topology, "2x4");
	ck_assert_str_eq(d->tpu.name, "my-tpu");
	ck_assert_int_eq(d->tpu.worker_id, 0);
	ck_assert(d->sources & SOURCE_ENV);
	ck_assert(!(d->sources & SOURCE_METADATA));
	done(st, &out);

	/* blanks around the values are padding, not part of them */
	setenv("TPU_ACCELERATOR_TYPE", " v6e-8\t", 1);
	setenv("TPU_TOPOLOGY", "2x4 ", 1);
	setenv("TPU_WORKER_ID", " 0", 1);
	setenv("TPU_NAME", "  my-tpu  ", 1);
	run(&st, &out, &res);
	ck_assert_str_eq(res.why, "");
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v6e-8");
	ck_assert_str_eq(out.v[0].tpu.topology, "2x4");
	ck_assert_str_eq(out.v[0].tpu.name, "my-tpu");
	ck_assert_int_eq(out.v[0].tpu.worker_id, 0);
	done(st, &out);

	/* malformed values are noted and left out */
	setenv("TPU_ACCELERATOR_TYPE", "banana", 1);
	setenv("TPU_TOPOLOGY", "2x", 1);
	setenv("TPU_WORKER_ID", "-1", 1);
	setenv("TPU_NAME", "bad name!", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 8);
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "");
	ck_assert_str_eq(out.v[0].tpu.topology, "");
	ck_assert_int_eq(out.v[0].tpu.worker_id, -1);
	ck_assert(!(out.v[0].sources & SOURCE_ENV));
	ck_assert_ptr_nonnull(strstr(res.why, "TPU_ACCELERATOR_TYPE 'banana'"));
	ck_assert_ptr_nonnull(strstr(res.why, "TPU_TOPOLOGY"));
	ck_assert_ptr_nonnull(strstr(res.why, "TPU_WORKER_ID"));
	ck_assert_ptr_nonnull(strstr(res.why, "TPU_NAME"));
	ck_assert_str_eq(out.v[0].tpu.name, "");
	done(st, &out);

	/* a type from another generation, or a slice smaller than the host, is pointed out */
	use("tpu-v4");
	setenv("TPU_ACCELERATOR_TYPE", "v6e-1", 1);
	unsetenv("TPU_TOPOLOGY");
	unsetenv("TPU_WORKER_ID");
	unsetenv("TPU_NAME");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 4);
	ck_assert_ptr_nonnull(strstr(res.why, "does not match the v4 chips"));
	ck_assert_ptr_nonnull(strstr(res.why, "has 1 chips but this host shows 4"));
	done(st, &out);

	setenv("TPU_ACCELERATOR_TYPE", "v4-8", 1);
	run(&st, &out, &res);
	ck_assert_str_eq(res.why, "");
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v4-8");
	done(st, &out);
}
END_TEST

static const char *type_of(const char *name, unsigned *chips)
{
	static char gen[16];

	*chips = 0;
	if (probe_tpu_type_parse(name, gen, sizeof(gen), chips) != 0)
		return "invalid";
	return gen;
}

START_TEST(type_names)
{
	unsigned c;

	ck_assert_str_eq(type_of("v6e-8", &c), "v6e");
	ck_assert_uint_eq(c, 8);
	ck_assert_str_eq(type_of("v5litepod-4", &c), "v5e");
	ck_assert_uint_eq(c, 4);
	ck_assert_str_eq(type_of("v5lite-1", &c), "v5e");
	ck_assert_str_eq(type_of("v5e-16", &c), "v5e");
	ck_assert_uint_eq(c, 16);
	ck_assert_str_eq(type_of("v4-8", &c), "v4");
	ck_assert_uint_eq(c, 4);
	ck_assert_str_eq(type_of("v5p-8", &c), "v5p");
	ck_assert_uint_eq(c, 4);
	ck_assert_str_eq(type_of("v2-8", &c), "v2");
	ck_assert_uint_eq(c, 4);
	ck_assert_str_eq(type_of("v3-32", &c), "v3");
	ck_assert_uint_eq(c, 16);
	ck_assert_str_eq(type_of("tpu7x-16", &c), "tpu7x");
	ck_assert_uint_eq(c, 8);
	ck_assert_str_eq(type_of("V6E-8", &c), "v6e");
	ck_assert_str_eq(type_of("v4-7", &c), "invalid");
	ck_assert_str_eq(type_of("v6e-0", &c), "invalid");
	ck_assert_str_eq(type_of("v7-8", &c), "invalid");
	ck_assert_str_eq(type_of("v6e", &c), "invalid");
	ck_assert_str_eq(type_of("v6e-", &c), "invalid");
	ck_assert_str_eq(type_of("-8", &c), "invalid");
	ck_assert_str_eq(type_of("v6e-8x", &c), "invalid");
	ck_assert_str_eq(type_of("v6e--8", &c), "invalid");
	ck_assert_str_eq(type_of("v6e-+8", &c), "invalid");
	ck_assert_str_eq(type_of("v6e-99999999999", &c), "invalid");
	ck_assert_str_eq(type_of("", &c), "invalid");
	ck_assert_str_eq(type_of(NULL, &c), "invalid");
	ck_assert_int_eq(probe_tpu_type_parse("tpu7x-16", (char[4]){0}, 4, &c), -1);
}
END_TEST

START_TEST(topologies)
{
	ck_assert_int_eq(probe_tpu_topology_check("2x4"), 0);
	ck_assert_int_eq(probe_tpu_topology_check("2x2x1"), 0);
	ck_assert_int_eq(probe_tpu_topology_check("16"), 0);
	ck_assert_int_eq(probe_tpu_topology_check("2x2x1x1"), -1);
	ck_assert_int_eq(probe_tpu_topology_check("0x4"), -1);
	ck_assert_int_eq(probe_tpu_topology_check("2x"), -1);
	ck_assert_int_eq(probe_tpu_topology_check("x2"), -1);
	ck_assert_int_eq(probe_tpu_topology_check("2X4"), -1);
	ck_assert_int_eq(probe_tpu_topology_check(""), -1);
	ck_assert_int_eq(probe_tpu_topology_check(NULL), -1);
}
END_TEST

static int parse(const char *text, struct tpu_env *e)
{
	return probe_tpu_env_parse(text, strlen(text), e);
}

START_TEST(tpu_env_parser)
{
	struct tpu_env e;
	char *big;

	ck_assert_int_eq(parse("ACCELERATOR_TYPE: 'v6e-8'\nALT: 'false'\nCHIPS_PER_HOST_BOUNDS: '2,4,1'\n"
			       "TOPOLOGY: '2x4'\nWORKER_ID: '3'\nZONE: 'us-east5-b'\n",
			       &e),
			 0);
	ck_assert_str_eq(e.accelerator_type, "v6e-8");
	ck_assert_str_eq(e.topology, "2x4");
	ck_assert_int_eq(e.worker_id, 3);
	ck_assert_int_eq(parse("", &e), 0);
	ck_assert_str_eq(e.accelerator_type, "");
	ck_assert_int_eq(e.worker_id, -1);
	ck_assert_int_eq(parse("\n\r\n  \nWORKER_ID: 0\r\nTOPOLOGY:'2x2x1'  \r\n", &e), 0);
	ck_assert_int_eq(e.worker_id, 0);
	ck_assert_str_eq(e.topology, "2x2x1");
	ck_assert_int_eq(parse("NODE_ID: ''\nOTHER: 'any text, even spaces'", &e), 0);
	/* blanks inside the quotes are padding */
	ck_assert_int_eq(parse("ACCELERATOR_TYPE: '  v6e-8 '\nTOPOLOGY: ' 2x4'\n", &e), 0);
	ck_assert_str_eq(e.accelerator_type, "v6e-8");
	ck_assert_str_eq(e.topology, "2x4");
	/* malformed: each leaves nothing behind */
	ck_assert_int_eq(parse("ACCELERATOR_TYPE: 'v6e-8'\nACCELERATOR_TYPE: 'v6e-8'\n", &e), -1);
	ck_assert_str_eq(e.accelerator_type, "");
	ck_assert_int_eq(parse("WORKER_ID: '1'\nWORKER_ID: '1'\n", &e), -1);
	ck_assert_int_eq(parse("ACCELERATOR_TYPE 'v6e-8'\n", &e), -1);
	ck_assert_int_eq(parse("accelerator_type: 'v6e-8'\n", &e), -1);
	ck_assert_int_eq(parse("9KEY: 'x'\n", &e), -1);
	ck_assert_int_eq(parse(": 'x'\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: '2x2\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: '2x'2'\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: '\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: '2x\t2'\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: 2 x2\n", &e), -1);
	/* keys acceld does not use are skipped unread, however long or odd their values */
	ck_assert_int_eq(parse("WORKER_NETWORK_ENDPOINTS: 'a b,c'd'\nTOPOLOGY: '2x2'\n", &e), 0);
	ck_assert_str_eq(e.topology, "2x2");
	ck_assert_int_eq(parse("ACCELERATOR_TYPE: 'v9-8'\n", &e), -1);
	ck_assert_int_eq(parse("ACCELERATOR_TYPE: 'v6e-8-and-a-very-long-tail-1234567890'\n", &e), -1);
	ck_assert_int_eq(parse("TOPOLOGY: '2x'\n", &e), -1);
	ck_assert_int_eq(parse("WORKER_ID: ''\n", &e), -1);
	ck_assert_int_eq(parse("WORKER_ID: '-1'\n", &e), -1);
	ck_assert_int_eq(parse("WORKER_ID: '99999999999'\n", &e), -1);
	ck_assert_int_eq(probe_tpu_env_parse("WORKER_ID: '1'\0junk", 20, &e), -1);
	ck_assert_int_eq(probe_tpu_env_parse(NULL, 0, &e), -1);
	/* the length bounds the text: no NUL terminator is needed */
	ck_assert_int_eq(probe_tpu_env_parse("WORKER_ID: '12'garbage", 15, &e), 0);
	ck_assert_int_eq(e.worker_id, 12);
	/* limits */
	big = calloc(1, TPU_ENV_MAX_BYTES + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, '\n', TPU_ENV_MAX_BYTES + 1);
	ck_assert_int_eq(probe_tpu_env_parse(big, TPU_ENV_MAX_BYTES + 1, &e), -1);
	ck_assert_int_eq(probe_tpu_env_parse(big, TPU_ENV_MAX_LINES, &e), 0);
	ck_assert_int_eq(probe_tpu_env_parse(big, TPU_ENV_MAX_LINES + 1, &e), -1);
	/* a used key's value past the cap is refused; an unused key's is skipped whatever its length */
	memcpy(big, "TOPOLOGY: '", 11);
	memset(big + 11, '2', TPU_ENV_MAX_VALUE + 1);
	memcpy(big + 11 + TPU_ENV_MAX_VALUE + 1, "'", 2);
	ck_assert_int_eq(parse(big, &e), -1);
	memcpy(big, "UNUSED_K: '", 11);
	ck_assert_int_eq(parse(big, &e), 0);
	free(big);
}
END_TEST

/* --- a metadata server on 127.0.0.1 --- */

struct meta_server {
	int fd;
	int port;
	pthread_t thread;
	const char *tpu_env;  /* NULL: 404 */
	const char *type;     /* NULL: 404 */
	int requests;
	int with_flavor;
	char paths[8][128];
};

static void reply(int c, int status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/text\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, status == 200 ? "OK" : "Not Found", strlen(body));

	if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

static void *meta_serve(void *arg)
{
	struct meta_server *s = arg;

	for (;;) {
		char req[4096];
		size_t len = 0;
		int c = accept(s->fd, NULL, NULL);
		char *sp, *sp2;
		const char *body;

		if (c < 0)
			break;
		while (len < sizeof(req) - 1) {
			ssize_t r = read(c, req + len, sizeof(req) - 1 - len);

			if (r <= 0)
				break;
			len += (size_t)r;
			req[len] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[len] = '\0';
		sp = strchr(req, ' ');
		sp2 = sp ? strchr(sp + 1, ' ') : NULL;
		if (sp2 && s->requests < 8) {
			*sp2 = '\0';
			snprintf(s->paths[s->requests], sizeof(s->paths[0]), "%s", sp + 1);
			*sp2 = ' ';
		}
		if (sp2 && strcasestr(sp2, "\r\nMetadata-Flavor: Google\r\n"))
			s->with_flavor++;
		body = NULL;
		if (s->requests < 8 && strstr(s->paths[s->requests], "/instance/attributes/tpu-env"))
			body = s->tpu_env;
		else if (s->requests < 8 && strstr(s->paths[s->requests], "/instance/attributes/accelerator-type"))
			body = s->type;
		s->requests++;
		reply(c, body ? 200 : 404, body ? body : "not found");
		close(c);
	}
	return NULL;
}

/* Listens on 127.0.0.1:0; serves requests in a thread unless answer is false (then it never accepts). */
static void meta_start(struct meta_server *s, bool answer)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int one = 1;

	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(s->fd, 0);
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s->fd, 8), 0);
	ck_assert_int_eq(getsockname(s->fd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	snprintf(meta_url, sizeof(meta_url), "http://127.0.0.1:%d/computeMetadata/v1", s->port);
	if (answer)
		ck_assert_int_eq(pthread_create(&s->thread, NULL, meta_serve, s), 0);
}

static void meta_stop(struct meta_server *s, bool answer)
{
	shutdown(s->fd, SHUT_RDWR);
	if (answer)
		pthread_join(s->thread, NULL);
	close(s->fd);
}

START_TEST(metadata_server)
{
	struct meta_server s = {.tpu_env = "ACCELERATOR_TYPE: 'v6e-4'\nTOPOLOGY: '2x2'\nWORKER_ID: '0'\n",
				.type = "v6e-4\n"};
	void *st;
	struct device_list out;
	struct probe_result res;

	use("gce-tpu-v6e");
	meta_start(&s, true);
	run(&st, &out, &res);
	ck_assert_msg(res.ok, "%s", res.why);
	ck_assert_str_eq(res.why, "");
	ck_assert_uint_eq(out.n, 4);
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v6e-4");
	ck_assert_str_eq(out.v[0].tpu.topology, "2x2");
	ck_assert_int_eq(out.v[0].tpu.worker_id, 0);
	ck_assert(out.v[3].sources & SOURCE_METADATA);
	ck_assert(!(out.v[3].sources & SOURCE_ENV));
	/* the answer is kept: a second probe asks nothing */
	device_list_release(&out);
	memset(&res, 0, sizeof(res));
	probe_tpu_ops.probe(&st, &cfg, &out, &res);
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v6e-4");
	done(st, &out);
	meta_stop(&s, true);
	ck_assert_int_eq(s.requests, 2);
	ck_assert_int_eq(s.with_flavor, 2);
	ck_assert_str_eq(s.paths[0], "/computeMetadata/v1/instance/attributes/tpu-env");
	ck_assert_str_eq(s.paths[1], "/computeMetadata/v1/instance/attributes/accelerator-type");
}
END_TEST

START_TEST(metadata_partial_and_malformed)
{
	struct meta_server s = {.tpu_env = NULL, .type = "  v6e-4 \n"};
	struct meta_server bad = {.tpu_env = "ACCELERATOR_TYPE: v6e-4\nTOPOLOGY: '2x2\n", .type = "v6e-4"};
	void *st;
	struct device_list out;
	struct probe_result res;

	use("gce-tpu-v6e");
	meta_start(&s, true);
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 4);
	/* the padded answer, trimmed */
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v6e-4");
	ck_assert_str_eq(out.v[0].tpu.topology, "");
	ck_assert(out.v[0].sources & SOURCE_METADATA);
	done(st, &out);
	meta_stop(&s, true);

	meta_start(&bad, true);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 4);
	ck_assert_ptr_nonnull(strstr(res.why, "GCE metadata: tpu-env is malformed"));
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "");
	ck_assert(!(out.v[0].sources & SOURCE_METADATA));
	done(st, &out);
	meta_stop(&bad, true);
}
END_TEST

START_TEST(metadata_only_on_google_hosts)
{
	struct meta_server s = {.tpu_env = "WORKER_ID: '0'\n", .type = "v6e-8"};
	void *st;
	struct device_list out;
	struct probe_result res;

	meta_start(&s, true);
	use("tpu-v6e-8");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 8);
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "");
	done(st, &out);
	/* the environment already says what the server would */
	use("gce-tpu-v6e");
	setenv("TPU_ACCELERATOR_TYPE", "v6e-4", 1);
	run(&st, &out, &res);
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "v6e-4");
	done(st, &out);
	/* a Google host without TPUs asks nothing either */
	unsetenv("TPU_ACCELERATOR_TYPE");
	use("gce-no-tpu");
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 0);
	done(st, &out);
	meta_stop(&s, true);
	ck_assert_int_eq(s.requests, 0);
}
END_TEST

START_TEST(metadata_timeout)
{
	struct meta_server s = {0};
	void *st;
	struct device_list out;
	struct probe_result res;

	use("gce-tpu-v6e");
	meta_start(&s, false);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 4);
	ck_assert_ptr_nonnull(strstr(res.why, "GCE metadata: Timeout"));
	ck_assert_str_eq(out.v[0].tpu.accelerator_type, "");
	done(st, &out);
	meta_stop(&s, false);
}
END_TEST

START_TEST(metadata_refused)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use("gce-tpu-v6e");
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 4);
	ck_assert_ptr_nonnull(strstr(res.why, "GCE metadata:"));
	done(st, &out);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe_tpu");
	TCase *tc = tcase_create("tpu");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, fixtures);
	tcase_add_test(tc, nodes_and_addresses);
	tcase_add_test(tc, decoys_yield_nothing);
	tcase_add_test(tc, missing_trees);
	tcase_add_test(tc, visible_chips_filter);
	tcase_add_test(tc, environment);
	tcase_add_test(tc, type_names);
	tcase_add_test(tc, topologies);
	tcase_add_test(tc, tpu_env_parser);
	tcase_add_test(tc, metadata_server);
	tcase_add_test(tc, metadata_partial_and_malformed);
	tcase_add_test(tc, metadata_only_on_google_hosts);
	tcase_add_test(tc, metadata_timeout);
	tcase_add_test(tc, metadata_refused);
	suite_add_tcase(s, tc);
	return s;
}
