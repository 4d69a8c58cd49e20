/*
 * programs: the StableHLO programs acceld writes, at small sizes, for tests/stablehlo/check_programs.sh (run by hand
 * with ../shared/tools; `make test` does not build or run it).
 *
 *   programs dump DIR    writes DIR/NAME.mlir for every program (each kernel at each precision, sgemm with and
 *                        without C, the generator of a vector and of a matrix, the gather of a vector's sample
 *                        and of matrices' grids, a small one whole), the inputs each takes as .npy files made by the C twin of the generator
 *                        (kernel_gen_value) or as TYPE:VALUE scalars, and DIR/manifest.txt: one line per program,
 *                        "NAME ARG..." in the order of @main's parameters
 *   programs check DIR   reads DIR/NAME.out/result0.npy (what stablehlo-interpret computed) and compares it with
 *                        the C code: the generator bit for bit with kernel_gen_value, the gather with the elements
 *                        kernel_sample_index names, each kernel with kernel_verify (its tolerances); prints one
 *                        line per program and exits 1 when any differs
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "exec/backend/stablehlo.h"
#include "exec/kernel.h"

#define SEED 20261128u

struct prog {
	const char *name;
	int what; /* 0 kernel, 1 generator, 2 gather */
	enum kernel_id kernel;
	struct kernel_shape s;
	bool with_c;
	enum stablehlo_dot dot;
	uint64_t rows, cols;
	size_t count;
};

static const struct prog progs[] = {
	{"saxpy", 0, KERNEL_SAXPY, {0, 37, 0}, false, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"triad", 0, KERNEL_TRIAD, {0, 37, 0}, false, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"dot", 0, KERNEL_DOT, {0, 101, 0}, false, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"sgemm_highest", 0, KERNEL_SGEMM, {5, 7, 3}, false, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"sgemm_c_highest", 0, KERNEL_SGEMM, {5, 7, 3}, true, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"sgemm_default", 0, KERNEL_SGEMM, {5, 7, 3}, false, STABLEHLO_DOT_DEFAULT, 0, 0, 0},
	{"sgemm_c_bf16", 0, KERNEL_SGEMM, {5, 7, 3}, true, STABLEHLO_DOT_BF16, 0, 0, 0},
	{"softmax", 0, KERNEL_SOFTMAX, {3, 11, 0}, false, STABLEHLO_DOT_HIGHEST, 0, 0, 0},
	{"generate_vector", 1, KERNEL_COUNT, {0}, false, 0, 0, 1000, 0},
	{"generate_matrix", 1, KERNEL_COUNT, {0}, false, 0, 5, 7, 0},
	{"gather_vector", 2, KERNEL_COUNT, {0}, false, 0, 0, 5000, 4096},
	{"gather_matrix", 2, KERNEL_COUNT, {0}, false, 0, 70, 90, 4096},
	{"gather_tall", 2, KERNEL_COUNT, {0}, false, 0, 100, 50, 4050},
	{"gather_small", 2, KERNEL_COUNT, {0}, false, 0, 5, 7, 35},
};

#define NPROGS (sizeof(progs) / sizeof(progs[0]))

/* Writes n float32 values as a .npy file of shape (rows, cols), or (cols) when rows is 0. */
static int npy_write(const char *path, const float *v, uint64_t rows, uint64_t cols)
{
	char dict[128];
	char header[128];
	size_t hlen;
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		return -1;
	if (rows == 0)
		snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRIu64 ",), }", cols);
	else
		snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRIu64 ", %" PRIu64
			 "), }", rows, cols);
	hlen = strlen(dict) + 1;
	hlen += (64 - (10 + hlen) % 64) % 64;
	memset(header, ' ', sizeof(header));
	memcpy(header, dict, strlen(dict));
	header[hlen - 1] = '\n';
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc((int)(hlen & 0xff), f);
	fputc((int)(hlen >> 8), f);
	fwrite(header, 1, hlen, f);
	fwrite(v, sizeof(float), (size_t)((rows ? rows : 1) * cols), f);
	return fclose(f);
}

/* The float32 data of a .npy file (malloc'ed), its element count in *n; NULL when it cannot be read. */
static float *npy_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char pre[10];
	long end;
	size_t hlen;
	float *v;

	if (f == NULL)
		return NULL;
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
		fclose(f);
		return NULL;
	}
	hlen = pre[8] | (size_t)pre[9] << 8;
	fseek(f, 0, SEEK_END);
	end = ftell(f);
	*n = ((size_t)end - 10 - hlen) / sizeof(float);
	v = malloc(*n * sizeof(float) + 4);
	fseek(f, (long)(10 + hlen), SEEK_SET);
	if (fread(v, sizeof(float), *n, f) != *n) {
		free(v);
		v = NULL;
	}
	fclose(f);
	return v;
}

/* Input i of a kernel program by the C twin of the generator. */
static float *twin(uint32_t key, size_t len)
{
	float *v = malloc((len ? len : 1) * sizeof(float));

	for (size_t e = 0; e < len; e++)
		v[e] = kernel_gen_value(key, e);
	return v;
}

static void dims(enum kernel_id k, unsigned i, const struct kernel_shape *s, uint64_t *rows, uint64_t *cols)
{
	const char *d = kernel_input_dims(k, i);
	struct kernel_shape c = *s;

	*rows = strlen(d) == 2 ? *kernel_size_of(&c, d[0]) : 0;
	*cols = *kernel_size_of(&c, d[strlen(d) - 1]);
}

static const float ALPHA = 1.5f, BETA = -0.5f, SCALE = 2.0f;

static int dump(const char *dir)
{
	char path[4096];
	FILE *man;

	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	man = fopen(path, "w");
	if (man == NULL)
		return 1;
	for (size_t p = 0; p < NPROGS; p++) {
		const struct prog *g = &progs[p];
		size_t len;
		char *text;
		FILE *f;

		if (g->what == 0)
			text = stablehlo_program(g->kernel, &g->s, g->with_c, g->dot, &len);
		else if (g->what == 1)
			text = stablehlo_generator(g->rows, g->cols, &len);
		else
			text = stablehlo_gather(g->rows, g->cols, g->count, &len);
		snprintf(path, sizeof(path), "%s/%s.mlir", dir, g->name);
		f = fopen(path, "w");
		fwrite(text, 1, len, f);
		fclose(f);
		free(text);
		fprintf(man, "%s", g->name);
		if (g->what == 1) {
			fprintf(man, " ui32:%" PRIu32, kernel_gen_key(SEED, 0));
		} else if (g->what == 2) {
			struct kernel_sample smp;
			float *v = twin(kernel_gen_key(SEED, 2), (size_t)((g->rows ? g->rows : 1) * g->cols));

			kernel_sample_plan(g->rows ? g->rows : 1, g->cols, SEED, &smp);
			snprintf(path, sizeof(path), "%s/%s.in0.npy", dir, g->name);
			npy_write(path, v, g->rows, g->cols);
			free(v);
			fprintf(man, " %s.in0.npy ui64:%" PRIu64 " ui64:%" PRIu64 " ui64:%" PRIu64 " ui64:%" PRIu64, g->name,
				smp.r0, smp.rs, smp.c0, smp.cs);
		} else {
			unsigned params = kernel_params(g->kernel);

			if (g->kernel == KERNEL_SAXPY || g->kernel == KERNEL_SGEMM)
				fprintf(man, " f32:%g", ALPHA);
			if (g->kernel == KERNEL_TRIAD)
				fprintf(man, " f32:%g", SCALE);
			if (g->with_c)
				fprintf(man, " f32:%g", BETA);
			(void)params;
			for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
				uint64_t rows, cols;
				float *v;

				if (kernel_input_len(g->kernel, &g->s, i) == 0 || (i == 2 && !g->with_c))
					continue;
				dims(g->kernel, i, &g->s, &rows, &cols);
				v = twin(kernel_gen_key(SEED, i), (size_t)kernel_input_len(g->kernel, &g->s, i));
				snprintf(path, sizeof(path), "%s/%s.in%u.npy", dir, g->name, i);
				npy_write(path, v, rows, cols);
				free(v);
				fprintf(man, " %s.in%u.npy", g->name, i);
			}
		}
		fprintf(man, "\n");
	}
	return fclose(man) == 0 ? 0 : 1;
}

static int check_one(const char *dir, const struct prog *g, struct pool *pool, char *why, size_t whysz)
{
	char path[4096];
	size_t n = 0;
	float *got;
	int bad = 0;

	snprintf(path, sizeof(path), "%s/%s.out/result0.npy", dir, g->name);
	got = npy_read(path, &n);
	if (got == NULL) {
		snprintf(why, whysz, "no result (%s)", path);
		return 1;
	}
	if (g->what == 1) {
		uint32_t key = kernel_gen_key(SEED, 0);
		size_t want = (size_t)((g->rows ? g->rows : 1) * g->cols);

		for (size_t e = 0; e < n && e < want; e++)
			bad += got[e] != kernel_gen_value(key, e);
		snprintf(why, whysz, "%zu elements, %d differ from kernel_gen_value", n, bad);
		bad += n != want;
	} else if (g->what == 2) {
		struct kernel_sample smp;
		uint32_t key = kernel_gen_key(SEED, 2);

		kernel_sample_plan(g->rows ? g->rows : 1, g->cols, SEED, &smp);
		for (size_t j = 0; j < n && j < smp.count; j++)
			bad += got[j] != kernel_gen_value(key, kernel_sample_index(&smp, j));
		snprintf(why, whysz, "%zu sampled elements (%zu rows x %zu columns), %d differ from the output at "
			 "kernel_sample_index", n, smp.nrows, smp.ncols, bad);
		bad += n != smp.count || g->count != smp.count;
	} else {
		struct kernel_work w = {.kernel = g->kernel, .m = g->s.m, .n = g->s.n, .k = g->s.k, .alpha = ALPHA,
				      .beta = g->with_c ? BETA : 0.0f, .scale = SCALE, .seed = SEED};
		struct kernel_verification v;
		float *in[KERNEL_MAX_INPUTS] = {NULL, NULL, NULL};

		w.precision = g->dot == STABLEHLO_DOT_BF16 ? KERNEL_PRECISION_BF16 : KERNEL_PRECISION_HIGHEST;
		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			if (kernel_input_len(g->kernel, &g->s, i) > 0 && (i < 2 || g->with_c))
				w.in[i] = in[i] = twin(kernel_gen_key(SEED, i), (size_t)kernel_input_len(g->kernel, &g->s, i));
		if (kernel_output_rank(g->kernel) == 0)
			w.value = got[0];
		else
			w.out = got;
		kernel_verify(pool, &w, &v);
		snprintf(why, whysz, "%zu elements, kernel_verify: %s (worst error / tolerance %.3g, %s)", n,
			 v.verified ? "verified" : "WRONG", v.worst_ratio, v.method);
		bad = !v.verified || n != (size_t)kernel_output_len(g->kernel, &g->s);
		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			free(in[i]);
	}
	free(got);
	return bad != 0;
}

static int check(const char *dir)
{
	struct pool *pool = pool_new(1);
	int failed = 0;

	for (size_t p = 0; p < NPROGS; p++) {
		char why[256];
		int bad = check_one(dir, &progs[p], pool, why, sizeof(why));

		printf("%-18s %s: %s\n", progs[p].name, bad ? "FAIL" : "ok", why);
		failed += bad;
	}
	pool_free(pool);
	return failed != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "dump") == 0)
		return dump(argv[2]);
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check(argv[2]);
	fprintf(stderr, "usage: programs dump|check DIR\n");
	return 2;
}
