/* Unit tests for batch.c: the factor, power-of-two rounding, alignment, the memory cap, TPU splits, limits and
 * overflow near 2^63, with devices built here. */
#include <string.h>

#include "select/batch.h"
#include "check_main.h"

#define GIB (1024ull * 1024ull * 1024ull)

static struct device dev;

static const struct device *tpu_v6e(void)
{
	device_init(&dev, DEVICE_TPU);
	DEVICE_SET(dev.id, "tpu:0");
	dev.memory_total_bytes = 32 * GIB;
	dev.tpu.chips = 8;
	dev.tpu.cores_per_chip = 1;
	return &dev;
}

static const struct device *tpu_v4(void)
{
	device_init(&dev, DEVICE_TPU);
	DEVICE_SET(dev.id, "tpu:0");
	dev.memory_total_bytes = 32 * GIB;
	dev.tpu.chips = 4;
	dev.tpu.cores_per_chip = 2;
	return &dev;
}

static const struct device *gpu(uint64_t mem)
{
	device_init(&dev, DEVICE_GPU);
	DEVICE_SET(dev.id, "gpu:1");
	dev.memory_total_bytes = mem;
	return &dev;
}

static const struct device *cpu(void)
{
	device_init(&dev, DEVICE_CPU);
	DEVICE_SET(dev.id, "cpu:0");
	dev.memory_total_bytes = 16 * GIB;
	return &dev;
}

static struct batch_request request(uint64_t base)
{
	struct batch_request r;

	batch_request_init(&r, NULL);
	r.base = base;
	return r;
}

static const struct batch_step *step(const struct batch_result *res, const char *name)
{
	for (size_t i = 0; i < res->nsteps; i++)
		if (strcmp(res->steps[i].name, name) == 0)
			return &res->steps[i];
	ck_abort_msg("no step %s", name);
	return NULL;
}

START_TEST(round_pow2)
{
	ck_assert_uint_eq(batch_round_pow2(0), 1);
	ck_assert_uint_eq(batch_round_pow2(1), 1);
	ck_assert_uint_eq(batch_round_pow2(2), 2);
	ck_assert_uint_eq(batch_round_pow2(3), 4);   /* 2 and 4 tie: up */
	ck_assert_uint_eq(batch_round_pow2(5), 4);
	ck_assert_uint_eq(batch_round_pow2(6), 8);   /* tie */
	ck_assert_uint_eq(batch_round_pow2(7), 8);
	ck_assert_uint_eq(batch_round_pow2(11), 8);
	ck_assert_uint_eq(batch_round_pow2(12), 16); /* tie */
	ck_assert_uint_eq(batch_round_pow2(13), 16);
	ck_assert_uint_eq(batch_round_pow2(1ull << 62), 1ull << 62);
	ck_assert_uint_eq(batch_round_pow2((1ull << 62) + 1), 1ull << 62);
	ck_assert_uint_eq(batch_round_pow2(1ull << 63), 1ull << 63);
	ck_assert_uint_eq(batch_round_pow2((1ull << 63) + 5), 1ull << 63);
	/* the tie above 2^63 would round to 2^64, which does not fit */
	ck_assert_uint_eq(batch_round_pow2((1ull << 63) + (1ull << 62)), 0);
	ck_assert_uint_eq(batch_round_pow2(UINT64_MAX), 0);
}
END_TEST

START_TEST(usable_bytes_exact)
{
	ck_assert_uint_eq(batch_usable_bytes(1000, 100000), 900);
	ck_assert_uint_eq(batch_usable_bytes(1001, 100000), 900); /* 900.9 floors */
	ck_assert_uint_eq(batch_usable_bytes(UINT64_MAX, 0), UINT64_MAX);
	ck_assert_uint_eq(batch_usable_bytes(1ull << 63, 100000), 8301034833169298227ull);
	ck_assert_uint_eq(batch_usable_bytes(UINT64_MAX, 900000), 1844674407370955161ull);
	ck_assert_uint_eq(batch_usable_bytes(80 * GIB, 100000), 77309411328ull);
}
END_TEST

START_TEST(tpu_base_one_gives_128)
{
	struct batch_request r = request(1);
	struct batch_result res;

	ck_assert_int_eq(batch_compute(tpu_v6e(), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.factor, 128);
	ck_assert_uint_eq(res.batch_size, 128);
	ck_assert_uint_eq(res.alignment, 8);
	ck_assert(!res.has_max);
	ck_assert(res.tpu);
	ck_assert_uint_eq(res.batch_per_chip, 128);
	ck_assert_uint_eq(res.batch_per_core, 128);
	ck_assert_uint_eq(res.global_batch_size, 1024);
	ck_assert_uint_eq(res.nsteps, 4);
	ck_assert_uint_eq(step(&res, "factor")->output, 128);
	ck_assert_uint_eq(step(&res, "round")->output, 128);
	ck_assert_uint_eq(step(&res, "align")->output, 128);
	ck_assert_msg(strstr(step(&res, "memory")->text, "no cap") != NULL, "%s", step(&res, "memory")->text);
}
END_TEST

START_TEST(tpu_two_cores_align_to_16)
{
	struct batch_request r = request(1);
	struct batch_result res;

	r.factor[DEVICE_TPU] = 1;
	ck_assert_int_eq(batch_compute(tpu_v4(), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.alignment, 16);
	ck_assert_uint_eq(step(&res, "align")->input, 1);
	ck_assert_uint_eq(res.batch_size, 16);
	ck_assert_uint_eq(res.batch_per_core, 8);
	ck_assert_uint_eq(res.global_batch_size, 64);
	ck_assert_msg(strstr(step(&res, "align")->text, "128 per core") != NULL, "%s", step(&res, "align")->text);

	r = request(3);
	ck_assert_int_eq(batch_compute(tpu_v4(), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(step(&res, "factor")->output, 384);
	ck_assert_uint_eq(step(&res, "round")->output, 512); /* 256 and 512 tie at 384: up */
	ck_assert_uint_eq(res.batch_size, 512);
	ck_assert_uint_eq(res.batch_per_core, 256);
}
END_TEST

START_TEST(gpu_factor_and_alignment)
{
	struct batch_request r = request(1);
	struct batch_result res;

	ck_assert_int_eq(batch_compute(gpu(24 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(step(&res, "factor")->output, 4);
	ck_assert_uint_eq(step(&res, "round")->output, 4);
	ck_assert_uint_eq(step(&res, "align")->output, 8);
	ck_assert_uint_eq(res.batch_size, 8);
	ck_assert(!res.tpu);

	r = request(5); /* 20 -> 16 */
	ck_assert_int_eq(batch_compute(gpu(24 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.batch_size, 16);
}
END_TEST

START_TEST(cpu_factor_one)
{
	struct batch_request r = request(3);
	struct batch_result res;

	ck_assert_int_eq(batch_compute(cpu(), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.factor, 1);
	ck_assert_uint_eq(res.alignment, 1);
	ck_assert_uint_eq(res.batch_size, 4);
	ck_assert_str_eq(step(&res, "align")->text, "CPU: no alignment needed");
}
END_TEST

START_TEST(memory_cap_infer)
{
	struct batch_request r = request(64);
	struct batch_result res;

	/* L4, 7e9 params bf16: state 14e9; usable 24 GiB x 0.9 = 23192823398; (23192823398 - 14e9) / 1e8 = 91 */
	r.params = 7000000000ull;
	r.sample_bytes = 100000000ull;
	ck_assert_int_eq(batch_compute(gpu(24 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.memory.usable_bytes, 23192823398ull);
	ck_assert_uint_eq(res.memory.state_bytes, 14000000000ull);
	ck_assert(res.has_max);
	ck_assert_uint_eq(res.max_batch_size, 91);
	ck_assert_uint_eq(step(&res, "memory")->input, 256);
	ck_assert_uint_eq(res.batch_size, 88); /* the largest multiple of 8 that fits */
	ck_assert_msg(strstr(step(&res, "memory")->text, "= 91") != NULL, "%s", step(&res, "memory")->text);

	/* fp32 weights take 4 bytes each: (23192823398 - 28e9) < 0 -> does not fit */
	r.dtype = DTYPE_F32;
	ck_assert_int_eq(batch_compute(gpu(24 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_msg(strstr(res.detail, "does not fit") && strstr(res.detail, "28000000000"), "%s", res.detail);

	/* int8 weights: 7e9 */
	r.dtype = DTYPE_INT8;
	ck_assert_int_eq(batch_compute(gpu(24 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.memory.state_bytes, 7000000000ull);
	ck_assert_uint_eq(res.max_batch_size, 161);
}
END_TEST

START_TEST(memory_cap_small_batch_fits)
{
	struct batch_request r = request(1);
	struct batch_result res;

	r.model_bytes = 1000000000ull;
	r.sample_bytes = 1000000ull;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.batch_size, 8);
	ck_assert_uint_eq(res.max_batch_size, (77309411328ull - 1000000000ull) / 1000000ull);
	ck_assert_msg(strstr(step(&res, "memory")->text, "the batch fits") != NULL, "%s",
		      step(&res, "memory")->text);

	/* below one aligned step the cap itself is used */
	r.sample_bytes = (77309411328ull - 1000000000ull) / 5;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.max_batch_size, 5);
	ck_assert_uint_eq(res.batch_size, 5);
}
END_TEST

START_TEST(train_state)
{
	struct batch_request r = request(1);
	struct batch_result res;

	/* 7e9 params x 16 B = 112e9 > 80 GiB x 0.9 */
	r.mode = BATCH_TRAIN;
	r.params = 7000000000ull;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_msg(strstr(res.detail, "112000000000") && strstr(res.detail, "77309411328"), "%s", res.detail);

	/* 1e9 params: 16e9 fits; model_bytes 2e9 in train counts x8 = 16e9 as well */
	r.params = 1000000000ull;
	r.sample_bytes = 1000000000ull;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.memory.state_bytes, 16000000000ull);
	ck_assert_uint_eq(res.max_batch_size, 61);
	r.params = 0;
	r.model_bytes = 2000000000ull;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.memory.state_bytes, 16000000000ull);
	ck_assert_uint_eq(res.max_batch_size, 61);
}
END_TEST

START_TEST(reserve_changes_the_cap)
{
	struct batch_request r = request(1);
	struct batch_result res;

	r.sample_bytes = GIB;
	r.reserve_ppm = 0;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.max_batch_size, 80);
	r.reserve_ppm = 900000;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.max_batch_size, 8);
}
END_TEST

START_TEST(overflow_near_2_63)
{
	struct batch_request r = request(1);
	struct batch_result res;

	/* 2^62 params x 16 B overflows 64 bits */
	r.mode = BATCH_TRAIN;
	r.params = 1ull << 62;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_msg(strstr(res.detail, "2^64") != NULL, "%s", res.detail);

	/* INT64_MAX model bytes x 8 overflows */
	r.params = 0;
	r.model_bytes = (uint64_t)INT64_MAX;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);

	/* INT64_MAX params x 4 (fp32 inference) overflows */
	r = request(1);
	r.params = (uint64_t)INT64_MAX;
	r.dtype = DTYPE_F32;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);

	/* INT64_MAX model bytes for inference fits no device but does not overflow */
	r = request(1);
	r.model_bytes = (uint64_t)INT64_MAX;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_msg(strstr(res.detail, "9223372036854775807") != NULL, "%s", res.detail);

	/* one sample of INT64_MAX bytes does not fit */
	r = request(1);
	r.sample_bytes = (uint64_t)INT64_MAX;
	ck_assert_int_eq(batch_compute(gpu(80 * GIB), &r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_msg(strstr(res.detail, "not one sample fits") != NULL, "%s", res.detail);

	/* a device with memory near 2^63 and the largest base: arithmetic stays exact */
	r = request(BATCH_MAX_BASE);
	r.factor[DEVICE_GPU] = 65536;
	r.sample_bytes = 1;
	ck_assert_int_eq(batch_compute(gpu((uint64_t)INT64_MAX), &r, &res), ACCELD_OK);
	ck_assert_uint_eq(step(&res, "factor")->output, 1ull << 36);
	ck_assert_uint_eq(res.max_batch_size, batch_usable_bytes((uint64_t)INT64_MAX, 100000));
	ck_assert_uint_eq(res.batch_size, 1ull << 36);
}
END_TEST

START_TEST(unknown_memory_skips_the_cap)
{
	struct batch_request r = request(1);
	struct batch_result res;

	r.model_bytes = 1000;
	r.sample_bytes = 10;
	ck_assert_int_eq(batch_compute(gpu(0), &r, &res), ACCELD_OK);
	ck_assert(!res.has_max);
	ck_assert_msg(strstr(step(&res, "memory")->text, "unknown") != NULL, "%s", step(&res, "memory")->text);
}
END_TEST

START_TEST(request_fields)
{
	struct batch_request r;
	const char *param = NULL;
	char err[256];

	batch_request_init(&r, NULL);
	ck_assert_uint_eq(r.factor[DEVICE_TPU], 128);
	ck_assert_uint_eq(r.factor[DEVICE_GPU], 4);
	ck_assert_uint_eq(r.factor[DEVICE_CPU], 1);
	ck_assert_int_eq(batch_request_set(&r, "base", "0", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_msg(strstr(err, "base") && strstr(err, "1 to 1048576"), "%s", err);
	ck_assert_int_eq(batch_request_set(&r, "base", "1048576", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(batch_request_set(&r, "base", "1048577", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "base", "-1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "base", "1e3", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "params", "9223372036854775807", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(batch_request_set(&r, "params", "9223372036854775808", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "params", "18446744073709551616", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "sample_bytes", "0", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "dtype", "fp8", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(r.dtype, DTYPE_FP8);
	ck_assert_int_eq(batch_request_set(&r, "dtype", "fp64", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(err, "dtype: 'fp64' is not one of f32, bf16, f16, fp8, int8, int4");
	ck_assert_ptr_nonnull(batch_param_values("dtype"));
	ck_assert_ptr_null(batch_param_values("base"));
	ck_assert_int_eq(batch_request_set(&r, "mode", "train", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(batch_request_set(&r, "mode", "serve", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0.25", err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(r.reserve_ppm, 250000);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0", err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(r.reserve_ppm, 0);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0.9", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0.900001", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0.1234567", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", ".1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "0.", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "reserve", "nan", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "device", "tpu:3", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(batch_request_set(&r, "device", "tpu", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(batch_request_set(&r, "device", "npu:3", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(err, "device: 'npu:3' is not a device id (cpu:N, gpu:N or tpu:N)");
	ck_assert_int_eq(batch_request_set(&r, "size", "1", err, sizeof(err)), ACCELD_ENOTFOUND);

	batch_request_init(&r, NULL);
	r.params = 10;
	r.model_bytes = 10;
	ck_assert_int_eq(batch_request_check(&r, &param, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "model_bytes");
	r.params = 0;
	r.dtype = DTYPE_F16;
	ck_assert_int_eq(batch_request_check(&r, &param, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "dtype");
	r.model_bytes = 0;
	r.params = 5;
	ck_assert_int_eq(batch_request_check(&r, &param, err, sizeof(err)), ACCELD_OK);
}
END_TEST

START_TEST(result_json)
{
	struct batch_request r = request(1);
	struct batch_result res;
	json_t *doc;
	json_t *steps;

	r.params = 1000;
	r.sample_bytes = 1000;
	ck_assert_int_eq(batch_compute(tpu_v6e(), &r, &res), ACCELD_OK);
	doc = batch_result_to_json(&res, &r, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "batch_size")), 128);
	ck_assert(json_is_integer(json_object_get(doc, "max_batch_size")));
	steps = json_object_get(doc, "steps");
	ck_assert_uint_eq(json_array_size(steps), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(steps, 0), "step")), "factor");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "tpu"), "global_batch_size")), 1024);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "memory"), "state_bytes")), 2000);
	json_decref(doc);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("batch");
	TCase *tc = tcase_create("batch");

	tcase_add_test(tc, round_pow2);
	tcase_add_test(tc, usable_bytes_exact);
	tcase_add_test(tc, tpu_base_one_gives_128);
	tcase_add_test(tc, tpu_two_cores_align_to_16);
	tcase_add_test(tc, gpu_factor_and_alignment);
	tcase_add_test(tc, cpu_factor_one);
	tcase_add_test(tc, memory_cap_infer);
	tcase_add_test(tc, memory_cap_small_batch_fits);
	tcase_add_test(tc, train_state);
	tcase_add_test(tc, reserve_changes_the_cap);
	tcase_add_test(tc, overflow_near_2_63);
	tcase_add_test(tc, unknown_memory_skips_the_cap);
	tcase_add_test(tc, request_fields);
	tcase_add_test(tc, result_json);
	suite_add_tcase(s, tc);
	return s;
}
