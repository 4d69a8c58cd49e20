/* kernel: the table of kernels and the arithmetic of their sizes and work. */
#include "exec/kernel.h"

#include <string.h>

#include "core/names.h"

static const char *const xy[] = {"x", "y", NULL};
static const char *const bc[] = {"b", "c", NULL};
static const char *const abc[] = {"a", "b", "c", NULL};
static const char *const x_only[] = {"x", NULL};

static const struct {
	const char *name;
	const char *const *inputs;
	unsigned optional;   /* bit per input that may be left out */
	unsigned params;     /* enum kernel_param */
	bool compute_bound;
	const char *sizes;   /* what its sizes mean: n is always the kernel's own n */
} table[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = {"saxpy", xy, 0, KERNEL_PARAM_ALPHA, false, "n, the vector length"},
	[KERNEL_TRIAD] = {"triad", bc, 0, KERNEL_PARAM_S, false, "n, the vector length"},
	[KERNEL_DOT] = {"dot", xy, 0, 0, false, "n, the vector length"},
	[KERNEL_SGEMM] = {"sgemm", abc, 1u << 2,
			  KERNEL_PARAM_ALPHA | KERNEL_PARAM_BETA | KERNEL_PARAM_M | KERNEL_PARAM_K | KERNEL_PARAM_PRECISION,
			  true, "m, n and k: C[m x n] = A[m x k] x B[k x n]"},
	[KERNEL_SOFTMAX] = {"softmax", x_only, 0, KERNEL_PARAM_M, false, "m and n: m rows of n (n is the row length)"},
};

static const char *const precision_names[] = {"highest", "tf32", "bf16"};

const char *kernel_precision_name(enum kernel_precision p)
{
	return names_at(precision_names, sizeof(precision_names) / sizeof(precision_names[0]), p);
}

bool kernel_precision_parse(const char *name, enum kernel_precision *out)
{
	int i = names_find(precision_names, sizeof(precision_names) / sizeof(precision_names[0]), name);

	if (i < 0)
		return false;
	*out = (enum kernel_precision)i;
	return true;
}

double kernel_precision_unit(enum kernel_precision p)
{
	switch (p) {
	case KERNEL_PRECISION_TF32:
		return 1.0 / 2048.0;
	case KERNEL_PRECISION_BF16:
		return 1.0 / 256.0;
	case KERNEL_PRECISION_HIGHEST:
		break;
	}
	return 1.0 / 16777216.0;
}

static bool valid(enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT;
}

const char *kernel_name(enum kernel_id k)
{
	return valid(k) ? table[k].name : "?";
}

bool kernel_parse(const char *name, enum kernel_id *out)
{
	for (unsigned i = 0; i < KERNEL_COUNT && name != NULL; i++) {
		if (strcmp(name, table[i].name) == 0) {
			*out = (enum kernel_id)i;
			return true;
		}
	}
	return false;
}

const char *kernel_sizes_text(enum kernel_id k)
{
	return valid(k) ? table[k].sizes : "?";
}

const char *kernel_names_text(void)
{
	return "saxpy, triad, dot, sgemm, softmax";
}

const char *const *kernel_inputs(enum kernel_id k)
{
	return valid(k) ? table[k].inputs : x_only;
}

bool kernel_input_optional(enum kernel_id k, unsigned i)
{
	return valid(k) && i < KERNEL_MAX_INPUTS && (table[k].optional & (1u << i)) != 0;
}

unsigned kernel_params(enum kernel_id k)
{
	return valid(k) ? table[k].params : 0;
}

bool kernel_compute_bound(enum kernel_id k)
{
	return valid(k) && table[k].compute_bound;
}

bool kernel_shape_complete(enum kernel_id k, const struct kernel_shape *s)
{
	unsigned p = kernel_params(k);

	return valid(k) && s->n > 0 && (!(p & KERNEL_PARAM_M) || s->m > 0) && (!(p & KERNEL_PARAM_K) || s->k > 0);
}

/* a * b, saturating at UINT64_MAX so oversized requests fail the limit checks instead of wrapping */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t kernel_input_len(enum kernel_id k, const struct kernel_shape *s, unsigned i)
{
	switch (k) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
	case KERNEL_DOT:
		return i < 2 ? s->n : 0;
	case KERNEL_SGEMM:
		return i == 0 ? mul_sat(s->m, s->k) : i == 1 ? mul_sat(s->k, s->n) : i == 2 ? mul_sat(s->m, s->n) : 0;
	case KERNEL_SOFTMAX:
		return i == 0 ? mul_sat(s->m, s->n) : 0;
	case KERNEL_COUNT:
		break;
	}
	return 0;
}

uint64_t kernel_output_len(enum kernel_id k, const struct kernel_shape *s)
{
	switch (k) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
		return s->n;
	case KERNEL_DOT:
		return 1;
	case KERNEL_SGEMM:
	case KERNEL_SOFTMAX:
		return mul_sat(s->m, s->n);
	case KERNEL_COUNT:
		break;
	}
	return 0;
}

unsigned kernel_output_rank(enum kernel_id k)
{
	switch (k) {
	case KERNEL_DOT:
		return 0;
	case KERNEL_SGEMM:
	case KERNEL_SOFTMAX:
		return 2;
	default:
		return 1;
	}
}

uint64_t kernel_total_len(enum kernel_id k, const struct kernel_shape *s)
{
	uint64_t total = kernel_output_len(k, s);

	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		total = add_sat(total, kernel_input_len(k, s, i));
	return total;
}

double kernel_flops(enum kernel_id k, const struct kernel_shape *s)
{
	switch (k) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
	case KERNEL_DOT:
		return 2.0 * (double)s->n;
	case KERNEL_SGEMM:
		return 2.0 * (double)s->m * (double)s->n * (double)s->k;
	case KERNEL_SOFTMAX:
		return 4.0 * (double)s->m * (double)s->n; /* max, subtract and exp, sum, scale */
	case KERNEL_COUNT:
		break;
	}
	return 0.0;
}

double kernel_bytes(enum kernel_id k, const struct kernel_shape *s)
{
	double total = 0.0;

	/* every input read once and the output written once: the least traffic a run can have */
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		total += 4.0 * (double)kernel_input_len(k, s, i);
	if (k != KERNEL_DOT)
		total += 4.0 * (double)kernel_output_len(k, s);
	return total;
}
