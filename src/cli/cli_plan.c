/* cli_plan: `acceld plan`, the command-line twin of GET /plan. */
#include "cli/cli_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "detect/detect.h"
#include "select/batch.h"
#include "select/envfmt.h"
#include "plan/plan_params.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void plan_help(FILE *out)
{
	static const char *const settings[] = {NULL};

	fprintf(out,
		"usage: acceld plan (--model NAME | --params N | --layers L --hidden H --heads A --vocab V)\n"
		"                   [--mode infer|train] [--devices D] [--json | --format env] [OPTIONS] [-v]\n"
		"\n"
		"Lays a model over devices (this host's, or a TPU worker's whole slice) and prints the mesh (data x\n"
		"fsdp x tensor x expert), the batch, the memory per device with each formula, and what would fit\n"
		"when nothing does; --json the document GET /plan answers. Exit status: 0 it fits, 1 nothing fits\n"
		"or the devices cannot be planned for (no such device, memory unknown), 2 bad usage.\n"
		"\n"
		"Model:\n"
		"  --model NAME        llama-2-7b|13b|70b, llama-3-8b|70b, llama-3.1-405b, mixtral-8x7b, gpt-3-175b\n"
		"  --params N          a count instead: 7000000000, 7B, 6.7B (K, M, B, T)\n"
		"  --layers L ...      a shape: --hidden, --heads, --vocab; --kv-heads, --head-dim, --ffn,\n"
		"                      --gated-ffn, --tied-embeddings, --experts, --experts-per-token\n"
		"  --dtype D           f32, bf16 (default), f16, fp8, int8, int4; --kv-dtype the KV cache's\n"
		"Work:\n"
		"  --mode M            infer (default) or train\n"
		"  --optimizer O       adam (adamw; default), sgd_momentum, sgd, adafactor\n"
		"  --mixed-precision B true (default): fp32 master weights and optimizer states\n"
		"  --remat R           auto (default: the least that fits), none, selective, full\n"
		"  --flash-attention   no stored attention scores\n"
		"  --seq-len S         default 2048; --global-batch N or --per-device-batch N (default 1)\n"
		"  --reserve R         the fraction of memory kept back, 0 to 0.9 (default 0.1)\n"
		"Devices (default: this host's of the kind acceld prefers):\n"
		"  --devices D         a shape (H100x8, L4x4, tpu:v5p-128, v6e-8) or ids (gpu:0,gpu:1)\n"
		"  --hosts N           this many hosts like this one; --memory-bytes SIZE each device's memory\n"
		"  --k8s-service S     a Kubernetes Job's headless service; --coordinator-port P (8476)\n"
		"Output (default: a summary for a person):\n"
		"  --json              the document GET /plan answers (also --format json)\n"
		"  --format env        export lines for a multi-host job: JAX_COORDINATOR_ADDRESS, ...\n"
		"  -v, --verbose       log at info on stderr (default: warn; --log-level L for another)\n"
		"\n");
	config_usage_units(out);
	cli_help_settings(out, settings);
}

static void init_plan(void *req, const struct config *cfg)
{
	(void)cfg;
	plan_params_init(req);
}

static enum acceld_err set_plan(void *req, const char *name, const char *value, char *err, size_t errsz)
{
	return plan_params_set(req, name, value, err, errsz);
}

static const char *process_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

/* The fields the messages of plan.c and plan_params.c name, said as flags here; model, devices and hosts are
 * words of those messages too ("a model shape"), so only the prefix below names them. */
static const char *const plan_words[] = {"params",	  "layers",	 "hidden",	 "heads",
					 "kv_heads",	  "head_dim",	 "ffn",		 "vocab",
					 "experts",	  "experts_per_token", "dtype", "kv_dtype",
					 "global_batch",  "per_device_batch", "seq_len", "reserve",
					 "memory_bytes", NULL};

/* A message of plan_params.c or plan.c about field (NULL: none) on stderr, in the command line's words. */
static void say(const char *field, const char *text)
{
	char words[1024];

	cli_words(text, plan_words, words, sizeof(words));
	fprintf(stderr, "acceld plan: ");
	if (field != NULL) {
		fprintf(stderr, "--");
		for (const char *p = field; *p != '\0'; p++)
			fputc(*p == '_' ? '-' : *p, stderr);
		fprintf(stderr, ": ");
	}
	fprintf(stderr, "%s\n", words);
}

static void gib(char *out, size_t outsz, uint64_t bytes)
{
	snprintf(out, outsz, "%.1f GiB", (double)bytes / GIB);
}

static void mesh_line(const struct plan_mesh *m, char *out, size_t outsz)
{
	snprintf(out, outsz, "data %u x fsdp %u x tensor %u x expert %u", m->data, m->fsdp, m->tensor, m->expert);
}

static void term_line(const char *name, const struct plan_term *t)
{
	char size[32];

	if (t->unknown)
		snprintf(size, sizeof(size), "unknown");
	else
		gib(size, sizeof(size), t->bytes);
	printf("  %-12s %10s  %s\n", name, size, t->formula);
}

/* What was planned: the model, the work, the devices. */
static void print_heading(const struct plan_params *p, const struct plan_result *res,
			  const struct plan_devices_origin *origin)
{
	const struct plan_request *r = &res->req;
	char mem[32], usable[32];

	printf("%s%s%llu parameters%s, %s", p->model, p->model[0] ? " (" : "", (unsigned long long)res->params,
	       p->model[0] ? ")" : "", r->mode == PLAN_TRAIN ? "training" : "inference");
	if (r->mode == PLAN_TRAIN)
		printf(" with %s%s", plan_optimizer_name(r->optimizer), r->mixed_precision ? ", mixed precision" : "");
	printf(", %s weights, sequence %u\n", plan_dtype_name(r->dtype), r->seq_len);
	gib(mem, sizeof(mem), r->devices.memory_bytes);
	gib(usable, sizeof(usable), batch_usable_bytes(r->devices.memory_bytes, r->reserve_ppm));
	printf("on %s\n%u %s device%s, %u host%s, %s each (%s usable)\n\n", origin->text, r->devices.count,
	       plan_kind_name(r->devices.kind), r->devices.count == 1 ? "" : "s", res->hosts,
	       res->hosts == 1 ? "" : "s", mem, usable);
}

static void print_memory(const struct plan_result *res)
{
	const struct plan_memory *m = &res->memory;
	char total[32], usable[32];
	const struct plan_term *act = m->remat == PLAN_REMAT_FULL	? &m->activations_full
				      : m->remat == PLAN_REMAT_SELECTIVE ? &m->activations_selective
									: &m->activations;

	gib(total, sizeof(total), m->total_bytes);
	gib(usable, sizeof(usable), m->usable_bytes);
	printf("memory per device: %s%s of %s usable%s%s\n", m->activations_known ? "" : "at least ", total, usable,
	       res->req.mode == PLAN_TRAIN ? ", " : "",
	       res->req.mode == PLAN_TRAIN ? plan_remat_phrase(m->remat) : "");
	term_line("weights", &m->weights);
	if (res->req.mode == PLAN_TRAIN) {
		term_line("gradients", &m->gradients);
		term_line("optimizer", &m->optimizer);
	}
	term_line("activations", act);
	if (res->req.mode == PLAN_INFER)
		term_line("kv cache", &m->kv_cache);
	if (m->gather.bytes || m->gather.unknown)
		term_line("fsdp gather", &m->gather);
}

static void print_env(const struct plan_env *env)
{
	struct envfmt e;

	if (env->source == PLAN_ENV_NONE && env->num_processes == 1)
		return;
	plan_env_to_envfmt(env, &e);
	printf("\nmulti-host (acceld plan --format env prints the export lines):\n");
	for (size_t i = 0; i < e.n; i++)
		printf("  %s=%s\n", e.vars[i].name, e.vars[i].value);
	printf("  %s\n", env->note);
}

/* The plan for a person: whether it fits and on which mesh, the batch, the memory, then what would fit. */
static void print_plan(const struct plan_params *p, const struct plan_result *res,
		       const struct plan_devices_origin *origin, const struct plan_env *env)
{
	char ms[96];
	size_t others = res->ncandidates > 0 ? res->ncandidates - (res->fits ? 1 : 0) : 0;

	print_heading(p, res, origin);
	if (res->fits) {
		mesh_line(&res->memory.mesh, ms, sizeof(ms));
		printf("fits: %s\n", ms);
		for (size_t i = 0; i < res->ncandidates; i++)
			if (memcmp(&res->candidates[i].mesh, &res->memory.mesh, sizeof(res->memory.mesh)) == 0)
				printf("  %s\n", res->candidates[i].why);
		printf("batch: %llu a device, %llu in all\n", (unsigned long long)res->memory.per_device_batch,
		       (unsigned long long)res->memory.global_batch);
		for (size_t i = 0; i < res->nhints; i++)
			printf("  or %s\n", res->hints[i].text);
		printf("\n");
	} else if (!res->judged) {
		printf("%s\n\n", res->detail);
		if (res->has_memory) {
			mesh_line(&res->memory.mesh, ms, sizeof(ms));
			printf("the mesh the known terms fit, %s:\n", ms);
		}
	} else {
		printf("nothing fits: %s\n", res->detail);
		if (res->nhints > 0)
			printf("what would:\n");
		for (size_t i = 0; i < res->nhints; i++)
			printf("  %-15s %s\n", plan_hint_name(res->hints[i].kind), res->hints[i].text);
		printf("\n");
		if (res->has_memory) {
			mesh_line(&res->memory.mesh, ms, sizeof(ms));
			printf("the closest mesh, %s:\n", ms);
		}
	}
	if (res->has_memory)
		print_memory(res);
	print_env(env);
	if (others > 0)
		printf("\n%zu other mesh%s rejected or ranked below (--json lists each, and why)\n", others,
		       others == 1 ? "" : "es");
}

/* Whether --format was given (--format json asks for the document, as --json does). */
static bool format_given(const struct cli_request *c)
{
	for (size_t i = 0; i < c->nfields; i++)
		if (strcmp(c->fields[i], "format") == 0)
			return true;
	return false;
}

int cli_plan_main(int argc, char **argv)
{
	static const char *const bools[] = {"gated_ffn", "tied_embeddings", "mixed_precision", "flash_attention",
					    NULL};
	static const struct cli_kind kind = {"plan", plan_param_names, bools, NULL, true, init_plan, set_plan,
					     plan_param_accepted, plan_help};
	struct cli_request c;
	struct plan_params p;
	struct plan_devices_origin origin;
	struct plan_result res = {0};
	struct plan_env env;
	const char *param = NULL;
	char why[320], msg[400];
	enum acceld_err err;
	int rc = cli_request_start(&c, &kind, argc, argv, &p);

	if (rc >= 0)
		goto out;
	rc = CLI_EXIT_USAGE;
	if (plan_params_missing(&p) != NULL) {
		say("model", plan_params_missing(&p));
		goto out;
	}
	if (plan_params_finish(&p, &param, why, sizeof(why)) != ACCELD_OK) {
		say(param, why);
		goto out;
	}
	err = plan_params_devices(&p, c.snap->devices, c.snap->n, &p.req.devices, &origin, &param, why, sizeof(why));
	if (err == ACCELD_ENOTFOUND || err == ACCELD_EUNPROCESSABLE) {
		/* the command line was right; this host cannot answer it (acceld report lists the devices) */
		snprintf(msg, sizeof(msg), "%s%s", why, err == ACCELD_ENOTFOUND ? " (acceld report lists the devices)" : "");
		say(NULL, msg);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (err == ACCELD_OK && plan_request_check(&p.req, &param, why, sizeof(why)) != ACCELD_OK)
		err = ACCELD_EINVAL;
	if (err != ACCELD_OK) {
		say(param, why);
		rc = strcmp(param, "devices") == 0 && plan_params_source(&p) == PLAN_SOURCE_HOST ? CLI_EXIT_FAIL
												 : CLI_EXIT_USAGE;
		goto out;
	}
	err = plan_compute(&p.req, &res);
	if (err != ACCELD_OK && err != ACCELD_EUNPROCESSABLE) {
		say(NULL, res.detail[0] ? res.detail : "the plan could not be computed");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	plan_params_env(&p, c.snap->devices, c.snap->n, res.hosts, process_getenv, NULL, &env);
	if (p.format == PLAN_FORMAT_ENV && !c.json && res.hosts > 1 && !plan_env_known(&env)) {
		snprintf(msg, sizeof(msg), "--format env: this host's process of the %u-host plan cannot be placed: %s",
			 res.hosts, env.note);
		say(NULL, msg);
		rc = CLI_EXIT_FAIL;
		goto out;
	} else if (p.format == PLAN_FORMAT_ENV && !c.json) {
		struct envfmt e;
		size_t len;
		char *text;

		plan_env_to_envfmt(&env, &e);
		text = envfmt_to_text(&e, &len);
		fwrite(text, 1, len, stdout);
		free(text);
	} else if (c.json || format_given(&c)) {
		cli_print_json(plan_params_json(&p, &res, &origin, &env));
	} else {
		print_plan(&p, &res, &origin, &env);
	}
	rc = res.fits ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
	plan_result_free(&res);
	cli_request_finish(&c);
	return rc;
}
