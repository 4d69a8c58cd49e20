/* plan_fixtures: the models (Llama 2, Mixtral), device sets and assertions the plan tests share. */
#ifndef ACCELD_TEST_PLAN_FIXTURES_H
#define ACCELD_TEST_PLAN_FIXTURES_H

#include <string.h>

#include <check.h>

#include "plan/plan.h"

#define GIB (1024ull * 1024ull * 1024ull)

/* Llama 2 (Touvron et al. 2023; the Hugging Face configs of meta-llama/Llama-2-*-hf): SwiGLU, RMSNorm, no
 * biases, untied embeddings, vocabulary 32000. */
static inline void llama2_7b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008, .gated_ffn = true,
				 .vocab = 32000};
}

static inline void llama2_13b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 40, .hidden = 5120, .heads = 40, .ffn = 13824, .gated_ffn = true,
				 .vocab = 32000};
}

static inline void llama2_70b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672,
				 .gated_ffn = true, .vocab = 32000};
}

/* Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts"; mistralai/Mixtral-8x7B-v0.1 config): 8 experts, top-2. */
static inline void mixtral(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336,
				 .gated_ffn = true, .vocab = 32000, .experts = 8, .experts_per_token = 2};
}

static inline struct plan_devices gpus(unsigned count, unsigned per_host, uint64_t mem, unsigned domain)
{
	return (struct plan_devices){.kind = PLAN_GPU, .count = count, .per_host = per_host, .memory_bytes = mem,
				     .fast_domain = domain};
}

/* HGX H100: 8 x 80 GiB joined by NVLink/NVSwitch. */
static inline struct plan_devices h100x8(void)
{
	return gpus(8, 8, 80 * GIB, 8);
}

/* A TPU slice: chips, chips per host, HBM per chip (db/accelerators.csv: v5p 95 GiB, v6e 32 GiB), the torus. */
static inline struct plan_devices tpu(unsigned count, unsigned per_host, uint64_t mem, unsigned x, unsigned y, unsigned z)
{
	return (struct plan_devices){.kind = PLAN_TPU, .count = count, .per_host = per_host, .memory_bytes = mem,
				     .torus = {x, y, z}};
}

static inline struct plan_request request(enum plan_mode mode, struct plan_devices d)
{
	struct plan_request r;

	plan_request_init(&r);
	r.mode = mode;
	r.devices = d;
	return r;
}

static inline bool same_mesh(const struct plan_mesh *m, unsigned d, unsigned f, unsigned t, unsigned e)
{
	return m->data == d && m->fsdp == f && m->tensor == t && m->expert == e;
}

static inline const struct plan_candidate *candidate(const struct plan_result *res, unsigned d, unsigned f, unsigned t,
					      unsigned e)
{
	for (size_t i = 0; i < res->ncandidates; i++)
		if (same_mesh(&res->candidates[i].mesh, d, f, t, e))
			return &res->candidates[i];
	ck_abort_msg("no candidate %ux%ux%ux%u", d, f, t, e);
	return NULL;
}

static inline const struct plan_hint *hint(const struct plan_result *res, enum plan_hint_kind kind)
{
	for (size_t i = 0; i < res->nhints; i++)
		if (res->hints[i].kind == kind)
			return &res->hints[i];
	return NULL;
}

/* Every formula, reason and hint is whole: none reached its field's end and was cut. */
static inline void assert_whole(const struct plan_memory *m)
{
	const struct plan_term *terms[] = {&m->weights, &m->gradients, &m->optimizer, &m->activations,
					   &m->activations_selective, &m->activations_full, &m->kv_cache};

	for (size_t i = 0; i < sizeof(terms) / sizeof(terms[0]); i++)
		ck_assert_msg(terms[i]->formula[0] && strlen(terms[i]->formula) < PLAN_TEXT_MAX - 1, "formula %zu: %s",
			      i, terms[i]->formula);
}

static inline void assert_texts_whole(const struct plan_result *res)
{
	if (res->has_memory)
		assert_whole(&res->memory);
	for (size_t i = 0; i < res->ncandidates; i++)
		ck_assert_msg(res->candidates[i].why[0] && strlen(res->candidates[i].why) < PLAN_WHY_MAX - 1, "%s",
			      res->candidates[i].why);
	for (size_t i = 0; i < res->nhints; i++)
		ck_assert_msg(strlen(res->hints[i].text) < PLAN_TEXT_MAX - 1, "%s", res->hints[i].text);
}

#define ck_assert_why(cand, text)                                                                                    \
	ck_assert_msg(strstr((cand)->why, (text)) != NULL, "reason '%s' lacks '%s'", (cand)->why, (text))

#endif
