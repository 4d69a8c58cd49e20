/*
 * Unit tests for plan.c: the mesh chosen on fixture hosts (8 x H100 with NVLink, 4 x L4 without, a v6e-8 host, a v5p-128 slice, a
 * CPU-only host), end to end through plan_compute.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

START_TEST(fsdp_llama2_7b_on_8_a100_40gb)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(8, 8, 40 * GIB, 8));
	struct plan_result res;

	/* meta-llama/llama-recipes: full-parameter fine-tuning of Llama 2 7B "with FSDP only ... tested with BF16 on
	 * 8xA100, 40GB GPUs" (torchrun --nproc_per_node 8 ... --enable_fsdp --pure_bf16): Adam states in bf16,
	 * 8 B/param, 53.9 GB in all, 6.7 GB a GPU under FSDP 8 */
	llama2_7b(&r.model);
	r.mixed_precision = false;
	r.flash_attention = true; /* its --use_fast_kernels */
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.weights.bytes + res.memory.gradients.bytes + res.memory.optimizer.bytes,
			  6738415616ull * 8 / 8);
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit: needs");
	ck_assert_why(candidate(&res, 1, 8, 1, 1), "chosen:");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(h100x8_llama2_7b_training)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;

	/* mixed-precision Adam, 16 B/param = 107.8 GB: no replica fits an 80 GB H100, FSDP over the NVLink island
	 * does; without flash attention the 5as^2b scores at s 4096 need selective recomputation */
	llama2_7b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(res.fits);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_SELECTIVE);
	ck_assert_uint_eq(res.memory.weights.bytes, 2 * 6738415616ull / 8);
	ck_assert_uint_eq(res.memory.per_device_batch, 1);
	ck_assert_uint_eq(res.memory.global_batch, 8);
	ck_assert_uint_le(res.memory.total_bytes, res.memory.usable_bytes);
	ck_assert_uint_eq(res.memory.usable_bytes, 77309411328ull); /* 80 GiB x 0.9, as /batch-config */
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit: needs");
	ck_assert_why(candidate(&res, 2, 4, 1, 1), "narrower sharding");
	ck_assert_why(candidate(&res, 1, 4, 2, 1), "more tensor parallelism");
	/* the chosen mesh comes first */
	ck_assert(same_mesh(&res.candidates[0].mesh, 1, 8, 1, 1));
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_fsdp_needs_two_hosts)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	const struct plan_hint *h;

	/* Hugging Face, "Fine-tuning Llama 2 70B using PyTorch FSDP" (2023): 2 nodes x 8 A100 80GB, FULL_SHARD, bf16
	 * mixed precision, gradient checkpointing, flash attention, max_seq_len 2048, per-device batch 1. One host
	 * of 8 is not enough (70B x 16 B / 8 = 138 GB a GPU); acceld says 16 GPUs, 2 hosts of 8, FSDP 16 */
	llama2_70b(&r.model);
	r.flash_attention = true;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert(!res.fits);
	ck_assert(res.has_memory);
	ck_assert_msg(strstr(res.detail, "no mesh of 8 gpu devices fits") != NULL, "%s", res.detail);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 16);
	ck_assert(same_mesh(&h->mesh, 1, 16, 1, 1));
	ck_assert_msg(strstr(h->text, "2 hosts of 8") != NULL, "%s", h->text);
	h = hint(&res, PLAN_HINT_DTYPE); /* or pure bf16, 8 B/param: 69 GB a GPU, no room for FSDP's buffers */
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_BF16);
	ck_assert_msg(strstr(h->text, "pure bf16") != NULL, "%s", h->text);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_BATCH)); /* a batch of 1 a device */
	assert_texts_whole(&res);
	plan_result_free(&res);

	r.devices = gpus(16, 8, 80 * GIB, 8);
	r.remat = PLAN_REMAT_FULL;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 16, 1, 1));
	ck_assert_uint_eq(res.memory.optimizer.bytes, 68976648192ull / 16 * 12);
	/* 80 layer inputs (2sbh), the layer being recomputed (sb(18h + 6f) with flash attention, section 4.1), the
	 * fp32 logits */
	ck_assert_uint_eq(res.memory.activations_full.bytes,
			  80ull * 2 * 2048 * 8192 + 2048ull * (18 * 8192 + 6 * 28672) + 4ull * 2048 * 32000);
	/* FSDP gathers one layer's full weights and prefetches the next: 2 x 855,654,400 params x 2 B */
	ck_assert_uint_eq(res.memory.gather.bytes, 2ull * (2 * 8192ull * 8192 + 2 * 8192ull * 1024 +
							      3 * 8192ull * 28672 + 2 * 8192) * 2);
	ck_assert_why(candidate(&res, 2, 8, 1, 1), "does not fit"); /* hybrid sharding within a host: too large */
	ck_assert_why(candidate(&res, 1, 1, 16, 1), "tensor parallelism across hosts");
	ck_assert_why(candidate(&res, 1, 8, 2, 1), "more tensor parallelism");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* without flash attention FSDP over 16 misses by 31.3 MiB: the near miss says its shortfall rather than
	 * "72.0 GiB of 72.0 GiB"; tensor 2 inside NVLink fits */
	r.flash_attention = false;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 2, 1));
	ck_assert_why(candidate(&res, 1, 16, 1, 1), "does not fit: needs 72.0 GiB of 72.0 GiB usable (31.3 MiB short)");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_inference_one_h100)
{
	struct plan_request r = request(PLAN_INFER, gpus(1, 1, 80 * GIB, 1));
	struct plan_result res;
	const struct plan_hint *h;

	/* 70B in bf16 is 138 GB of weights: not one 80 GB GPU; two with NVLink, or int8 weights */
	llama2_70b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_uint_eq(res.memory.weights.bytes, 2 * 68976648192ull);
	ck_assert_why(candidate(&res, 1, 1, 1, 1), "does not fit: needs 135.9 GiB of 72.0 GiB usable");
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 2);
	ck_assert(same_mesh(&h->mesh, 1, 1, 2, 1));
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_INT8);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_REMAT)); /* inference: nothing to recompute */
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_inference_h100x8_tensor_parallel)
{
	struct plan_request r = request(PLAN_INFER, h100x8());
	struct plan_result res;

	/* on 8 H100 with NVLink it fits tensor-parallel; acceld takes the least tensor parallelism that fits (with
	 * a batch of one 4K sequence a replica) and replicates the rest */
	llama2_70b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_uint_ge(res.memory.mesh.tensor, 2);
	ck_assert_uint_eq(res.memory.mesh.fsdp, 1);
	ck_assert_uint_eq(res.memory.mesh.data * res.memory.mesh.tensor, 8);
	ck_assert_uint_le(res.memory.total_bytes, res.memory.usable_bytes);
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit");
	ck_assert_why(candidate(&res, 1, 8, 1, 1), "fsdp 8 in inference");
	ck_assert_why(candidate(&res, 1, 1, 8, 1), "fits");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(l4x4_without_nvlink)
{
	struct plan_request r = request(PLAN_INFER, gpus(4, 4, 24 * GIB, 1));
	struct plan_result res;
	const struct plan_hint *h;

	/* 4 x L4 24 GB on PCIe (a g2-standard-48): Llama 2 7B in bf16 (13.5 GB) fits each: data 4 */
	llama2_7b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 4, 1, 1, 1));
	ck_assert_why(candidate(&res, 4, 1, 1, 1), "chosen: a full replica");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 13B (26 GB) fits no one L4: inference runs tensor 2 over PCIe, as vLLM's tensor_parallel_size does
	 * without NVLink, and says what that costs */
	llama2_13b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 2, 1, 2, 1));
	ck_assert_why(candidate(&res, 2, 1, 2, 1), "chosen: tensor 2 over PCIe, without NVLink");
	ck_assert(candidate(&res, 1, 1, 4, 1)->slow_tensor);
	ck_assert_why(candidate(&res, 1, 1, 4, 1), "more tensor parallelism (tensor 4 vs 2)");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* training keeps tensor parallelism to NVLink: 13B's 16 B/param fit no mesh; int8 is no training dtype */
	r.mode = PLAN_TRAIN;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_why(candidate(&res, 2, 1, 2, 1), "tensor 2 without fast links (a fast-link domain of 1)");
	assert_texts_whole(&res);
	plan_result_free(&res);
	r.mode = PLAN_INFER;

	/* one L4 (issue: an invented NVLink): two L4s stay without NVLink, tensor over PCIe */
	r.devices = gpus(1, 1, 24 * GIB, 1);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 2);
	ck_assert(same_mesh(&h->mesh, 1, 1, 2, 1));
	ck_assert_str_eq(h->text, "2 GPUs on one host, without NVLink (tensor over PCIe): data 1 x fsdp 1 x tensor 2 x "
			 "expert 1");
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_INT8);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(v6e8_llama2_7b_training)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(8, 8, 32 * GIB, 2, 4, 0));
	struct plan_result res;

	/* a v6e-8 host: 8 chips of 32 GB, ICI torus 2x4. MaxText's default (base.yml ici_fsdp_parallelism: -1)
	 * puts all the slice's chips on the fsdp axis; acceld arrives at the same mesh for Llama 2 7B */
	llama2_7b(&r.model);
	r.flash_attention = true;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_NONE);
	ck_assert_uint_eq(res.memory.usable_bytes, 30923764531ull);
	ck_assert_uint_eq(res.hosts, 1);
	/* the torus holds tensor 8 (2 x 4): valid, ranked below */
	ck_assert(candidate(&res, 1, 1, 8, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(v5p128_slice)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(64, 4, 95 * GIB, 4, 4, 4));
	struct plan_result res;

	/* a v5p-128 slice: 64 chips of 95 GB, 16 hosts of 4, torus 4x4x4. Llama 2 70B with mixed-precision Adam
	 * (1.1 TB of state) fits FSDP over the whole slice (MaxText's default), 17.2 GB of state a chip */
	llama2_70b(&r.model);
	r.flash_attention = true;
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 64, 1, 1));
	ck_assert_uint_eq(res.hosts, 16);
	ck_assert_uint_eq(res.memory.weights.bytes + res.memory.gradients.bytes + res.memory.optimizer.bytes,
			  68976648192ull / 64 * 16);
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_FULL);
	/* ICI reaches across the slice's hosts: tensor 16 is valid on a TPU slice */
	ck_assert(candidate(&res, 1, 4, 16, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* Llama 2 13B has 40 heads */
	llama2_13b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 4, 16, 1), "heads 40 not divisible by tensor 16");
	ck_assert_why(candidate(&res, 1, 1, 64, 1), "heads 40 not divisible by tensor 64");
	ck_assert(candidate(&res, 1, 8, 8, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* two slices: the data axis crosses the data-centre network, tensor never does */
	r.devices.count = 128;
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 2, 64, 1, 1));
	ck_assert_why(candidate(&res, 1, 1, 128, 1), "spans more than one slice");
	ck_assert_why(candidate(&res, 2, 1, 64, 1), "fits");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(cpu_only_host)
{
	struct plan_request r = request(PLAN_INFER, (struct plan_devices){.kind = PLAN_CPU, .count = 1,
									.memory_bytes = 64 * GIB});
	struct plan_result res;
	const struct plan_hint *h;

	/* a CPU-only host is one device with the host's memory: 1.1B parameters in bf16 would fit, but without a
	 * shape the activations and the KV cache are unknown, so whether it fits cannot be said (not counted as 0) */
	r.model.params = 1100000000ull;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert(!res.judged);
	ck_assert(!res.fits);
	ck_assert(same_mesh(&res.memory.mesh, 1, 1, 1, 1));
	ck_assert_uint_eq(res.ncandidates, 1);
	ck_assert_uint_eq(res.memory.weights.bytes, 2200000000ull);
	ck_assert(!res.memory.activations_known);
	ck_assert(res.memory.activations.unknown && res.memory.kv_cache.unknown);
	ck_assert_msg(strstr(res.memory.activations.formula, "unknown") != NULL, "%s", res.memory.activations.formula);
	ck_assert_msg(strstr(res.detail, "cannot judge whether it fits") && strstr(res.detail, "give model"), "%s",
		      res.detail);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* with a shape it can: TinyLlama's (22 layers, hidden 2048, 32 heads, 4 KV heads) */
	r.model = (struct plan_model){.params = 1100000000ull, .layers = 22, .hidden = 2048, .heads = 32,
				      .kv_heads = 4, .ffn = 5632, .gated_ffn = true};
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(res.judged && res.fits);
	plan_result_free(&res);
	r.model = (struct plan_model){0};

	/* training Llama 2 7B (108 GB of state) does not: another host would, FSDP over both */
	r.mode = PLAN_TRAIN;
	llama2_7b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 2);
	ck_assert(same_mesh(&h->mesh, 1, 2, 1, 1));
	ck_assert_msg(strstr(h->text, "2 hosts of 1") != NULL, "%s", h->text);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");

	tcase_add_test(tc, fsdp_llama2_7b_on_8_a100_40gb);
	tcase_add_test(tc, h100x8_llama2_7b_training);
	tcase_add_test(tc, llama2_70b_fsdp_needs_two_hosts);
	tcase_add_test(tc, llama2_70b_inference_one_h100);
	tcase_add_test(tc, llama2_70b_inference_h100x8_tensor_parallel);
	tcase_add_test(tc, l4x4_without_nvlink);
	tcase_add_test(tc, v6e8_llama2_7b_training);
	tcase_add_test(tc, v5p128_slice);
	tcase_add_test(tc, cpu_only_host);
	suite_add_tcase(s, tc);
	return s;
}
