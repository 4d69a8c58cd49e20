/*
 * Unit tests of the OpenCL backend (exec_opencl.c) on the first OpenCL device found: PoCL's CPU device in CI.
 * Every kernel is compared with a double-precision reference at odd sizes (1, primes, sizes that are not multiples
 * of float4, of the 64 x 64 sgemm tile or of the work-group) and alpha/beta edge values (0, 1, -1).
 *
 * Tolerances (u = 2^-24), as in exec.c's verification:
 *   saxpy, triad: |got - ref| <= 1e-6 * (|first term| + |second term|) + 1e-30
 *   dot, sgemm:   |got - ref| <= (2e-6 + k * u) * sum |terms| + 1e-30
 *   softmax:      |got - ref| <= (2e-6 + cols * u) * ref + 1e-30 (OpenCL's exp is within 3 ulp)
 * Sizes stay small: CI has two cores and PoCL compiles each kernel once (cached in $ACCELD_BUILD/pocl-cache).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "check_main.h"
#include "core/clock.h"
#include "core/pool.h"
#include "exec/exec.h"
#include "exec/backend/exec_opencl.h"

#define U (1.0 / 16777216.0)

static struct device dev;
static struct exec_ocl *ocl;

/* The first OpenCL device, described as the registry would (platform/device index and name). */
static void find_first_device(struct device *d)
{
	cl_platform_id plats[8];
	cl_uint np = 0;

	device_init(d, DEVICE_CPU);
	DEVICE_SET(d->id, "cpu:0");
	ck_assert_int_eq(clGetPlatformIDs(8, plats, &np), CL_SUCCESS);
	for (cl_uint p = 0; p < np && p < 8; p++) {
		cl_device_id devs[8];
		cl_uint nd = 0;

		if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 8, devs, &nd) != CL_SUCCESS || nd == 0)
			continue;
		clGetDeviceInfo(devs[0], CL_DEVICE_NAME, sizeof(d->opencl.name), d->opencl.name, NULL);
		d->opencl.present = true;
		d->opencl.platform_index = p;
		d->opencl.device_index = 0;
		return;
	}
	ck_abort_msg("no OpenCL device: install pocl-opencl-icd");
}

static void setup(void)
{
	char dir[512];
	char err[4096];
	const char *build = getenv("ACCELD_BUILD");

	snprintf(dir, sizeof(dir), "%s/pocl-cache", build ? build : "build");
	exec_opencl_set_cache_dir(dir);
	find_first_device(&dev);
	ck_assert_msg(exec_ocl_open(&dev, &ocl, err, sizeof(err)) == ACCELD_OK, "%s", err);
}

static void teardown(void)
{
	exec_ocl_close(ocl);
	ocl = NULL;
}

static float *randv(size_t n, unsigned seed)
{
	float *v = malloc((n ? n : 1) * sizeof(float));
	unsigned s = seed * 2654435761u + 7;

	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
	return v;
}

static void check_close(double got, double ref, double tol, const char *what, size_t i)
{
	ck_assert_msg(fabs(got - ref) <= tol + 1e-30, "%s[%zu]: got %.9g, expected %.9g (tolerance %.3g)", what, i,
		      got, ref, tol);
}

static void run(struct kernel_work *w)
{
	struct backend_timing t = {0};
	char err[2048];

	ck_assert_msg(exec_ocl_run(ocl, w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert(t.kernel_ms >= 0.0 && t.transfer_ms >= 0.0);
}

START_TEST(vectors_match_reference)
{
	static const size_t sizes[] = {1, 2, 3, 4, 5, 7, 63, 64, 65, 1009, 65537};
	static const float alphas[] = {0.0f, 1.0f, -1.0f, 3.25f};

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		float *x = randv(n, 1);
		float *y = randv(n, 2);
		float *out = malloc(n * sizeof(float));
		double ref = 0.0;
		double mag = 0.0;

		for (size_t ai = 0; ai < 4; ai++) {
			struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = n, .alpha = alphas[ai], .scale = alphas[ai],
					      .in = {x, y, NULL}, .out = out};

			run(&w);
			for (size_t i = 0; i < n; i++)
				check_close(out[i], (double)w.alpha * x[i] + y[i],
					    1e-6 * (fabs((double)w.alpha * x[i]) + fabs(y[i])), "saxpy", i);
			w.kernel = KERNEL_TRIAD;
			run(&w);
			for (size_t i = 0; i < n; i++)
				check_close(out[i], x[i] + (double)w.scale * y[i],
					    1e-6 * (fabs(x[i]) + fabs((double)w.scale * y[i])), "triad", i);
		}
		{
			struct kernel_work w = {.kernel = KERNEL_DOT, .n = n, .in = {x, y, NULL}};

			for (size_t i = 0; i < n; i++) {
				ref += (double)x[i] * y[i];
				mag += fabs((double)x[i] * y[i]);
			}
			run(&w);
			check_close(w.value, ref, (2e-6 + (double)n * U) * mag, "dot", n);
		}
		free(x);
		free(y);
		free(out);
	}
}
END_TEST

START_TEST(sgemm_matches_reference)
{
	static const size_t shapes[][3] = {{1, 1, 1}, {1, 5, 3}, {5, 1, 7}, {64, 64, 64}, {65, 63, 17}, {67, 131, 29},
					   {128, 64, 1}};
	static const float ab[][2] = {{1.0f, 0.0f}, {0.0f, 1.0f}, {-1.0f, -1.0f}, {1.0f, 1.0f}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		size_t m = shapes[s][0];
		size_t n = shapes[s][1];
		size_t k = shapes[s][2];
		float *a = randv(m * k, 3);
		float *b = randv(k * n, 4);
		float *c = randv(m * n, 5);
		float *out = malloc(m * n * sizeof(float));

		for (size_t e = 0; e < sizeof(ab) / sizeof(ab[0]); e++) {
			struct kernel_work w = {.kernel = KERNEL_SGEMM, .m = m, .n = n, .k = k, .alpha = ab[e][0],
					      .beta = ab[e][1], .in = {a, b, e == 3 ? NULL : c}, .out = out};

			run(&w);
			for (size_t i = 0; i < m; i++) {
				for (size_t j = 0; j < n; j++) {
					double ref = 0.0;
					double mag = 0.0;

					for (size_t p = 0; p < k; p++) {
						ref += (double)a[i * k + p] * b[p * n + j];
						mag += fabs((double)a[i * k + p] * b[p * n + j]);
					}
					ref *= w.alpha;
					mag *= fabs(w.alpha);
					if (w.in[2] != NULL && w.beta != 0.0f) {
						ref += (double)w.beta * c[i * n + j];
						mag += fabs((double)w.beta * c[i * n + j]);
					}
					check_close(out[i * n + j], ref, (2e-6 + (double)k * U) * mag, "sgemm", i * n + j);
				}
			}
		}
		free(a);
		free(b);
		free(c);
		free(out);
	}
}
END_TEST

START_TEST(softmax_matches_reference)
{
	static const size_t shapes[][2] = {{1, 1}, {1, 5}, {3, 64}, {7, 65}, {5, 1009}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		size_t rows = shapes[s][0];
		size_t cols = shapes[s][1];
		float *x = randv(rows * cols, 6);
		float *out = malloc(rows * cols * sizeof(float));
		struct kernel_work w = {.kernel = KERNEL_SOFTMAX, .m = rows, .n = cols, .in = {x, NULL, NULL},
					.out = out};

		for (size_t i = 0; i < rows * cols; i++)
			x[i] *= 40.0f;
		run(&w);
		for (size_t r = 0; r < rows; r++) {
			double m = x[r * cols];
			double sum = 0.0;

			for (size_t j = 0; j < cols; j++)
				m = fmax(m, x[r * cols + j]);
			for (size_t j = 0; j < cols; j++)
				sum += exp((double)x[r * cols + j] - m);
			for (size_t j = 0; j < cols; j++) {
				double ref = exp((double)x[r * cols + j] - m) / sum;

				check_close(out[r * cols + j], ref, (2e-6 + (double)cols * U) * ref, "softmax", r * cols + j);
			}
		}
		free(x);
		free(out);
	}
}
END_TEST

START_TEST(buffers_are_pooled)
{
	float *x = randv(4096, 7);
	float *out = malloc(4096 * sizeof(float));
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 4096, .alpha = 1.0f, .in = {x, x, NULL}, .out = out};
	uint64_t after_first;

	run(&w);
	after_first = exec_ocl_pool_bytes(ocl);
	ck_assert_uint_gt(after_first, 0);
	for (int i = 0; i < 5; i++)
		run(&w);
	ck_assert_uint_eq(exec_ocl_pool_bytes(ocl), after_first);
	free(x);
	free(out);
}
END_TEST

/* Host copies of a run's generated inputs: the kernel table's generator, the C twin of exec_generate. */
static float *twin(const struct kernel_work *w, unsigned i)
{
	struct kernel_shape sh = {w->m, w->n, w->k};
	size_t len = (size_t)kernel_input_len(w->kernel, &sh, i);
	float *v = malloc((len ? len : 1) * sizeof(float));
	uint32_t key = kernel_gen_key(w->seed, i);

	for (size_t e = 0; e < len; e++)
		v[e] = kernel_gen_value(key, e);
	return v;
}

/* A run with inputs made on the device gives the same bits as one with the C twin's inputs uploaded; only the
 * output crosses the link, and the sample is the output's elements at the sample's indices. */
START_TEST(generated_inputs_match_the_c_twin)
{
	static const struct {
		enum kernel_id k;
		size_t m, n, kk;
		float beta;
	} runs[] = {{KERNEL_SAXPY, 0, 1009, 0, 0.0f}, {KERNEL_TRIAD, 0, 65, 0, 0.0f},
		    {KERNEL_SGEMM, 70, 130, 33, 0.5f}, {KERNEL_SGEMM, 64, 128, 16, 0.0f},
		    {KERNEL_SOFTMAX, 5, 77, 0, 0.0f}};

	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		struct kernel_shape sh = {runs[r].m, runs[r].n, runs[r].kk};
		size_t len = (size_t)kernel_output_len(runs[r].k, &sh);
		float *dev_out = malloc(len * sizeof(float));
		float *host_out = malloc(len * sizeof(float));
		float sample[KERNEL_SAMPLE_MAX];
		struct kernel_sample smp;
		struct kernel_work w = {.kernel = runs[r].k, .m = sh.m, .n = sh.n, .k = sh.k, .alpha = 1.5f,
				      .beta = runs[r].beta, .scale = -2.0f, .seed = 42 + r, .generate = true,
				      .out = dev_out, .sample = sample};
		struct kernel_work h = w;
		struct backend_timing t = {0};
		char err[512];

		kernel_sample_of(w.kernel, &sh, w.seed, &smp);
		w.grid = smp;
		w.nsample = smp.count;
		ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
		ck_assert_uint_eq(t.transfer_bytes, (len + smp.count) * sizeof(float));
		/* no input went up; the output and its sample came down, pageable on PoCL's CPU device (no staging
		 * there: the device's memory is the host's) */
		ck_assert_uint_eq(t.upload_bytes, 0);
		ck_assert_int_eq(t.transfer_memory, BACKEND_MEMORY_PAGEABLE);
		ck_assert_uint_eq(exec_ocl_stages_made(ocl), 0);
		ck_assert_uint_eq(t.download_bytes, (len + smp.count) * sizeof(float));
		ck_assert_double_eq_tol(t.upload_ms + t.download_ms, t.transfer_ms, 1e-9);
		ck_assert(t.generate_ms > 0.0);
		h.generate = false;
		h.out = host_out;
		h.nsample = 0;
		float *hin[KERNEL_MAX_INPUTS] = {NULL, NULL, NULL};

		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			h.in[i] = hin[i] = kernel_input_generated(&h, i) ? twin(&h, i) : NULL;
		run(&h);
		ck_assert_msg(memcmp(dev_out, host_out, len * sizeof(float)) == 0, "%s: device-made inputs differ",
			      kernel_name(w.kernel));
		for (size_t j = 0; j < smp.count; j++)
			ck_assert(sample[j] == dev_out[kernel_sample_index(&smp, j)]);
		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			free(hin[i]);
		free(dev_out);
		free(host_out);
	}
}
END_TEST

/* A generated job whose output stays on the device moves the sample alone, and makes no new buffers once its sizes
 * were seen; a second run of the same seed finds its inputs made; sampled verification from the C twin passes. */
START_TEST(generated_job_moves_no_input_bytes)
{
	struct pool *p = pool_new(1);
	float sample[KERNEL_SAMPLE_MAX];
	struct kernel_sample smp;
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 100000, .alpha = 2.0f, .seed = 7, .generate = true,
			      .sample = sample};
	struct kernel_verification v;
	struct backend_timing t = {0};
	char err[512];
	uint64_t made;

	kernel_sample_plan(1, w.n, w.seed, &smp);
	ck_assert_uint_eq(smp.count, KERNEL_SAMPLE_MAX);
	w.grid = smp;
	w.nsample = smp.count;
	ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	made = exec_ocl_buffers_made(ocl);
	ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert_uint_eq(exec_ocl_buffers_made(ocl), made);
	ck_assert_uint_eq(t.transfer_bytes, KERNEL_SAMPLE_MAX * sizeof(float));
	/* the inputs the first run made were still there: the generator did not run again */
	ck_assert_double_eq(t.generate_ms, 0.0);
	ck_assert_uint_eq(t.upload_bytes, 0);
	ck_assert_uint_eq(t.download_bytes, KERNEL_SAMPLE_MAX * sizeof(float));
	/* no data of the host's crossed: nothing to say of its memory */
	ck_assert_int_eq(t.transfer_memory, BACKEND_MEMORY_UNKNOWN);
	kernel_verify_sample(p, &w, &v);
	ck_assert(v.verified && v.sampled);
	ck_assert_uint_eq(v.checked, KERNEL_SAMPLE_MAX);
	/* a run of inline inputs of the same size writes over them: the next generated run makes them again */
	{
		static float b[100000], c[100000];
		struct kernel_work u = {.kernel = KERNEL_TRIAD, .n = 100000, .scale = 3.0f, .in = {b, c},
				      .sample = sample, .grid = smp, .nsample = smp.count};

		for (size_t i = 0; i < 100000; i++)
			b[i] = c[i] = (float)i;
		ck_assert_msg(exec_ocl_run(ocl, &u, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	}
	ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert(t.generate_ms > 0.0);
	kernel_verify_sample(p, &w, &v);
	ck_assert(v.verified);
	/* another seed is made anew */
	w.seed = 8;
	ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert(t.generate_ms > 0.0);
	pool_free(p);
}
END_TEST

/* ACCELD_FAULT_WRONG_ELEMENT spoils one element of the output: sampled and full verification both catch it. */
START_TEST(fault_knob_is_caught)
{
	struct pool *p = pool_new(1);
	struct exec_ocl *bad = NULL;
	float sample[KERNEL_SAMPLE_MAX];
	float out[300];
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 300, .alpha = 1.0f, .seed = 3, .generate = true,
			      .out = out, .nsample = 300, .sample = sample};
	struct kernel_verification v;
	struct backend_timing t = {0};
	char err[512];

	kernel_sample_plan(1, w.n, w.seed, &w.grid);
	setenv("ACCELD_FAULT_WRONG_ELEMENT", "123", 1);
	ck_assert_msg(exec_ocl_open(&dev, &bad, err, sizeof(err)) == ACCELD_OK, "%s", err);
	unsetenv("ACCELD_FAULT_WRONG_ELEMENT");
	ck_assert_msg(exec_ocl_run(bad, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	kernel_verify_sample(p, &w, &v);
	ck_assert(!v.verified);
	ck_assert(v.max_abs_error > 1e5);
	float *x = twin(&w, 0);
	float *y = twin(&w, 1);

	w.in[0] = x;
	w.in[1] = y;
	kernel_verify(p, &w, &v);
	ck_assert(!v.verified && !v.sampled);
	ck_assert_uint_eq(v.checked, 300);
	free(x);
	free(y);
	exec_ocl_close(bad);
	pool_free(p);
}
END_TEST

/* Every kernel's time comes from the device's clock (PoCL profiles its queues), and lies within the run's wall time. */
START_TEST(kernel_time_is_the_devices)
{
	float sample[KERNEL_SAMPLE_MAX];
	struct kernel_work works[] = {
		{.kernel = KERNEL_SAXPY, .n = 100000, .alpha = 2.0f, .seed = 1, .generate = true},
		{.kernel = KERNEL_TRIAD, .n = 100000, .scale = 3.0f, .seed = 2, .generate = true},
		{.kernel = KERNEL_DOT, .n = 100000, .seed = 3, .generate = true},
		{.kernel = KERNEL_SGEMM, .m = 70, .n = 90, .k = 20, .alpha = 1.0f, .seed = 4, .generate = true},
		{.kernel = KERNEL_SOFTMAX, .m = 8, .n = 400, .seed = 5, .generate = true},
	};

	for (size_t i = 0; i < sizeof(works) / sizeof(works[0]); i++) {
		struct kernel_work *w = &works[i];
		struct backend_timing t = {0};
		char err[2048];
		uint64_t t0 = clock_mono_ns();
		double wall;

		if (kernel_output_rank(w->kernel) > 0) {
			w->sample = sample;
			kernel_sample_of(w->kernel, &(struct kernel_shape){w->m, w->n, w->k}, w->seed, &w->grid);
			w->nsample = w->grid.count;
		}
		ck_assert_msg(exec_ocl_run(ocl, w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
		wall = (double)(clock_mono_ns() - t0) / 1e6;
		ck_assert_msg(t.kernel_device_clock, "%s: kernel_ms from the host's clock", kernel_name(w->kernel));
		ck_assert(t.kernel_ms > 0.0);
		ck_assert_msg(t.kernel_ms + t.transfer_ms + t.generate_ms <= wall, "%s: %.3f + %.3f + %.3f > %.3f ms",
			      kernel_name(w->kernel), t.kernel_ms, t.transfer_ms, t.generate_ms, wall);
	}
}
END_TEST

/* A run whose buffers the device cannot allocate (the fault knob: as NVIDIA's driver fails at the kernel's launch)
 * exceeds the device's memory, named in bytes; a smaller one runs on the same device. */
START_TEST(allocation_failure_exceeds_device_memory)
{
	struct exec_ocl *small = NULL;
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 300000, .alpha = 1.0f, .seed = 3, .generate = true};
	struct kernel_work fits = {.kernel = KERNEL_SAXPY, .n = 3000, .alpha = 1.0f, .seed = 3, .generate = true};
	struct backend_timing t = {0};
	char err[512];

	setenv("ACCELD_FAULT_DEVICE_MEMORY", "1000000", 1);
	ck_assert_msg(exec_ocl_open(&dev, &small, err, sizeof(err)) == ACCELD_OK, "%s", err);
	unsetenv("ACCELD_FAULT_DEVICE_MEMORY");
	ck_assert_int_eq(exec_ocl_run(small, &w, &t, err, sizeof(err)), ACCELD_EDEVMEM);
	ck_assert_msg(strstr(err, "the job's buffers take 3600000 bytes") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)") != NULL, "%s", err);
	ck_assert_msg(exec_ocl_run(small, &fits, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	exec_ocl_close(small);
}
END_TEST

/* A matrix whose output stays on the device: the gather returns the grid's elements, and one wrong element inside
 * the grid (the fault knob set to its index) is caught by sampled verification. */
START_TEST(fault_inside_the_grid_is_caught)
{
	struct pool *p = pool_new(1);
	struct exec_ocl *bad = NULL;
	float sample[KERNEL_SAMPLE_MAX];
	struct kernel_work w = {.kernel = KERNEL_SGEMM, .m = 100, .n = 90, .k = 8, .alpha = 1.0f, .seed = 4,
			      .generate = true, .sample = sample};
	struct kernel_verification v;
	struct backend_timing t = {0};
	char err[512], element[32];

	kernel_sample_of(w.kernel, &(struct kernel_shape){w.m, w.n, w.k}, w.seed, &w.grid);
	ck_assert(w.grid.nrows == 64 && w.grid.ncols == 64 && !kernel_sample_whole(&w.grid));
	w.nsample = w.grid.count;
	ck_assert_msg(exec_ocl_run(ocl, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert_uint_eq(t.transfer_bytes, w.nsample * sizeof(float));
	kernel_verify_sample(p, &w, &v);
	ck_assert(v.verified && v.checked == w.nsample);
	snprintf(element, sizeof(element), "%" PRIu64, kernel_sample_index(&w.grid, 2345));
	setenv("ACCELD_FAULT_WRONG_ELEMENT", element, 1);
	ck_assert_msg(exec_ocl_open(&dev, &bad, err, sizeof(err)) == ACCELD_OK, "%s", err);
	unsetenv("ACCELD_FAULT_WRONG_ELEMENT");
	ck_assert_msg(exec_ocl_run(bad, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s", err);
	ck_assert(sample[2345] == 1e6f);
	kernel_verify_sample(p, &w, &v);
	ck_assert(!v.verified && v.max_abs_error > 1e5);
	exec_ocl_close(bad);
	pool_free(p);
}
END_TEST

START_TEST(missing_device_is_reported)
{
	struct device bad = dev;
	struct exec_ocl *o = NULL;
	char err[512];

	bad.opencl.platform_index = 7;
	DEVICE_SET(bad.opencl.name, "no such device");
	ck_assert_int_eq(exec_ocl_open(&bad, &o, err, sizeof(err)), ACCELD_EDEVICE);
	ck_assert_ptr_null(o);
	ck_assert_msg(strstr(err, "no such device") != NULL, "%s", err);
	bad.opencl.present = false;
	ck_assert_int_eq(exec_ocl_open(&bad, &o, err, sizeof(err)), ACCELD_EUNSUPPORTED);
}
END_TEST

START_TEST(serves_and_admits)
{
	struct device d = dev;
	enum reason reason = REASON_COUNT;
	char detail[256];
	struct kernel_shape fits = {.n = 1000};
	struct kernel_shape big = {.m = 4096, .n = 4096, .k = 16};

	ck_assert(backend_opencl.serves(&d));
	d.opencl.max_alloc_bytes = 64u << 20;
	ck_assert_int_eq(backend_opencl.admit(&d, KERNEL_SAXPY, &fits, &reason, detail, sizeof(detail)), ACCELD_OK);
	/* 4096 x 4096 floats is 64 MiB: the output fits exactly, one more row would not */
	ck_assert_int_eq(backend_opencl.admit(&d, KERNEL_SGEMM, &big, &reason, detail, sizeof(detail)), ACCELD_OK);
	big.m++;
	ck_assert_int_eq(backend_opencl.admit(&d, KERNEL_SGEMM, &big, &reason, detail, sizeof(detail)),
			 ACCELD_ETOOLARGE);
	ck_assert_int_eq(reason, REASON_EXCEEDS_DEVICE_ALLOCATION);
	ck_assert_msg(strstr(detail, "largest allocation") != NULL, "%s", detail);
	/* a CPU with PoCL is served, but natively first; a TPU never */
	d.type = DEVICE_CPU;
	ck_assert(backend_opencl.serves(&d));
	ck_assert(backend_default(backend_builtin, &d) == &backend_native);
	d.type = DEVICE_TPU;
	ck_assert(!backend_opencl.serves(&d));
	d.type = DEVICE_GPU;
	d.opencl.present = false;
	ck_assert(!backend_opencl.serves(&d));
	ck_assert_ptr_null(backend_default(backend_builtin, &d));
}
END_TEST

START_TEST(error_names)
{
	ck_assert_str_eq(exec_ocl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
	ck_assert_str_eq(exec_ocl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
	ck_assert_str_eq(exec_ocl_error_name(CL_INVALID_KERNEL_NAME), "CL_INVALID_KERNEL_NAME");
	ck_assert_str_eq(exec_ocl_error_name(-12345), "CL_UNKNOWN_ERROR");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_opencl");
	TCase *tc = tcase_create("pocl");

	tcase_set_timeout(tc, 240);
	/* checked: OpenCL is first used inside each forked test process (PoCL hangs in a child forked after its init) */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, vectors_match_reference);
	tcase_add_test(tc, sgemm_matches_reference);
	tcase_add_test(tc, softmax_matches_reference);
	tcase_add_test(tc, buffers_are_pooled);
	tcase_add_test(tc, generated_inputs_match_the_c_twin);
	tcase_add_test(tc, generated_job_moves_no_input_bytes);
	tcase_add_test(tc, fault_knob_is_caught);
	tcase_add_test(tc, kernel_time_is_the_devices);
	tcase_add_test(tc, allocation_failure_exceeds_device_memory);
	tcase_add_test(tc, fault_inside_the_grid_is_caught);
	tcase_add_test(tc, missing_device_is_reported);
	tcase_add_test(tc, serves_and_admits);
	tcase_add_test(tc, error_names);
	suite_add_tcase(s, tc);
	return s;
}
