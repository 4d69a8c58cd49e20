/*
 * Unit tests for backend.c: the lookups the executor, detection and the request parsers share (by name, the default
 * of a device, the lists for messages, a device's document), over a list of fake backends defined here, and the
 * built-in list's own shape.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "exec/backend.h"

static bool serves_cpu(const struct device *dev)
{
	return dev->type == DEVICE_CPU;
}

static bool serves_gpu(const struct device *dev)
{
	return dev->type == DEVICE_GPU;
}

static bool serves_cpu_gpu(const struct device *dev)
{
	return dev->type != DEVICE_TPU;
}

static json_t *describe_cpu(const struct device *dev)
{
	return dev->type == DEVICE_CPU ? json_pack("{s:i}", "threads", 4) : NULL;
}

static double reference_value;

static double fixed_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	(void)dev;
	(void)k;
	*source = "measured here";
	return reference_value;
}

/* alpha serves CPUs, gamma GPUs, and beta both with the lowest rank: the default wherever it serves */
static const struct backend_ops alpha = {
	.name = "alpha", .serves_what = "CPUs", .rank = 10, .serves = serves_cpu, .describe = describe_cpu};
static const struct backend_ops beta = {
	.name = "beta", .serves_what = "CPUs and GPUs", .rank = 5, .serves = serves_cpu_gpu};
static const struct backend_ops gamma_ops = {
	.name = "gamma", .serves_what = "GPUs", .rank = 7, .serves = serves_gpu, .reference = fixed_reference};
static const struct backend_ops *const fakes[] = {&alpha, &beta, &gamma_ops, NULL};
static const struct backend_ops *const none[] = {NULL};

static struct device dev_of(enum device_type type)
{
	struct device d;

	device_init(&d, type);
	return d;
}

START_TEST(memory_names)
{
	ck_assert_str_eq(backend_memory_name(BACKEND_MEMORY_PINNED), "pinned");
	ck_assert_str_eq(backend_memory_name(BACKEND_MEMORY_PAGEABLE), "pageable");
	ck_assert_ptr_null(backend_memory_name(BACKEND_MEMORY_UNKNOWN));
}
END_TEST

START_TEST(find_by_name)
{
	ck_assert_ptr_eq(backend_find(fakes, "alpha"), &alpha);
	ck_assert_ptr_eq(backend_find(fakes, "gamma"), &gamma_ops);
	ck_assert_ptr_null(backend_find(fakes, "Alpha")); /* names are exact */
	ck_assert_ptr_null(backend_find(fakes, "delta"));
	ck_assert_ptr_null(backend_find(fakes, ""));
	ck_assert_ptr_null(backend_find(fakes, NULL));
	ck_assert_ptr_null(backend_find(none, "alpha"));
}
END_TEST

START_TEST(default_is_the_lowest_rank_that_serves)
{
	struct device cpu = dev_of(DEVICE_CPU);
	struct device gpu = dev_of(DEVICE_GPU);
	struct device tpu = dev_of(DEVICE_TPU);
	static const struct backend_ops *const no_beta[] = {&alpha, &gamma_ops, NULL};

	ck_assert_ptr_eq(backend_default(fakes, &cpu), &beta);
	ck_assert_ptr_eq(backend_default(fakes, &gpu), &beta);
	ck_assert_ptr_null(backend_default(fakes, &tpu)); /* nothing serves it */
	ck_assert_ptr_eq(backend_default(no_beta, &cpu), &alpha);
	ck_assert_ptr_eq(backend_default(no_beta, &gpu), &gamma_ops);
	ck_assert_ptr_null(backend_default(none, &cpu));

	ck_assert(backend_serves_any((void *)(uintptr_t)fakes, &cpu));
	ck_assert(backend_serves_any((void *)(uintptr_t)fakes, &gpu));
	ck_assert(!backend_serves_any((void *)(uintptr_t)fakes, &tpu));
	ck_assert(!backend_serves_any((void *)(uintptr_t)none, &cpu));
	ck_assert(backend_serves_any(NULL, &cpu)); /* NULL: the built-in list, whose native backend runs on CPUs */
}
END_TEST

START_TEST(names_and_descriptions_for_messages)
{
	char out[128];
	char small[12];

	backend_names(fakes, out, sizeof(out));
	ck_assert_str_eq(out, "alpha, beta, gamma");
	backend_describe(fakes, out, sizeof(out));
	ck_assert_str_eq(out, "alpha serves CPUs; beta serves CPUs and GPUs; gamma serves GPUs");
	backend_names(none, out, sizeof(out));
	ck_assert_str_eq(out, "");
	backend_describe(none, out, sizeof(out));
	ck_assert_str_eq(out, "");

	/* a short buffer is cut, never overrun, and stays terminated */
	memset(small, 'x', sizeof(small));
	backend_names(fakes, small, sizeof(small));
	ck_assert_str_eq(small, "alpha, beta");
	memset(small, 'x', sizeof(small));
	backend_describe(fakes, small, sizeof(small));
	ck_assert_str_eq(small, "alpha serve");
}
END_TEST

START_TEST(device_document_lists_the_default_first)
{
	struct device cpu = dev_of(DEVICE_CPU);
	struct device gpu = dev_of(DEVICE_GPU);
	struct device tpu = dev_of(DEVICE_TPU);
	json_t *doc = json_object();
	json_t *names;

	backend_describe_device((void *)(uintptr_t)fakes, &cpu, doc);
	names = json_object_get(doc, "backends");
	ck_assert_uint_eq(json_array_size(names), 2);
	ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "beta"); /* rank order, not list order */
	ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "alpha");
	/* what a backend says of the device, under its name; nothing from those with nothing to say */
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "alpha"), "threads")), 4);
	ck_assert_ptr_null(json_object_get(doc, "beta"));
	ck_assert_uint_eq(json_object_size(doc), 2);
	json_decref(doc);

	doc = json_object();
	backend_describe_device((void *)(uintptr_t)fakes, &gpu, doc);
	names = json_object_get(doc, "backends");
	ck_assert_uint_eq(json_array_size(names), 2);
	ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "beta");
	ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "gamma");
	ck_assert_ptr_null(json_object_get(doc, "alpha"));
	json_decref(doc);

	doc = json_object();
	backend_describe_device((void *)(uintptr_t)fakes, &tpu, doc);
	ck_assert(json_is_array(json_object_get(doc, "backends"))); /* present and empty: no job can run there */
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "backends")), 0);
	json_decref(doc);
}
END_TEST

START_TEST(reference_fraction_of_the_peak)
{
	struct device gpu = dev_of(DEVICE_GPU);
	const char *source = "stale";

	ck_assert(backend_reference(NULL, &gpu, KERNEL_SGEMM, &source) == 1.0);
	ck_assert_ptr_null(source);
	source = "stale";
	ck_assert(backend_reference(&alpha, &gpu, KERNEL_SGEMM, &source) == 1.0); /* says none */
	ck_assert_ptr_null(source);

	reference_value = 0.8;
	ck_assert(backend_reference(&gamma_ops, &gpu, KERNEL_TRIAD, &source) == 0.8);
	ck_assert_str_eq(source, "measured here");
	/* 1.0 or nonsense leaves the spec figure as it is, and nothing to say of it */
	for (double v = -1.0; v < 3.0; v += 1.0) {
		reference_value = v == 0.0 ? NAN : v; /* -1, NaN, 1, 2 */
		source = "stale";
		ck_assert(backend_reference(&gamma_ops, &gpu, KERNEL_TRIAD, &source) == 1.0);
		ck_assert_ptr_null(source);
	}
}
END_TEST

START_TEST(builtin_list_is_whole)
{
	size_t n = 0;

	for (; backend_builtin[n] != NULL; n++) {
		const struct backend_ops *b = backend_builtin[n];

		ck_assert(b->name != NULL && b->name[0] != '\0');
		ck_assert(b->serves_what != NULL && b->serves_what[0] != '\0');
		ck_assert(b->serves != NULL && b->open != NULL && b->run != NULL && b->close != NULL);
		ck_assert_ptr_eq(backend_find(backend_builtin, b->name), b); /* no name is listed twice */
	}
	ck_assert_uint_ge(n, 1);
	ck_assert_ptr_eq(backend_find(backend_builtin, "native"), &backend_native);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("lookups");

	tcase_add_test(tc, find_by_name);
	tcase_add_test(tc, memory_names);
	tcase_add_test(tc, default_is_the_lowest_rank_that_serves);
	tcase_add_test(tc, names_and_descriptions_for_messages);
	tcase_add_test(tc, device_document_lists_the_default_first);
	tcase_add_test(tc, reference_fraction_of_the_peak);
	tcase_add_test(tc, builtin_list_is_whole);
	suite_add_tcase(s, tc);
	return s;
}
