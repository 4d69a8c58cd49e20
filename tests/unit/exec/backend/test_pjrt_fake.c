/*
 * Drives the stand-in PJRT plugin (tests/fakes/pjrt.c) through src/exec/backend/pjrt_abi.h: plugin, client with options,
 * devices and attributes, compile of the StableHLO modules docs/pjrt.md recommends, upload, execute, download,
 * and every failure switch. It proves the header and the fake agree before the backend relies on both.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "exec/backend/pjrt_abi.h"

static char lib_path[512];
static void *lib;
static const PJRT_Api *api;
static long (*fake_calls)(const char *);
static long (*fake_live)(const char *);
static const char *(*fake_precision)(void);
static const char *(*fake_create_option)(const char *);
static long long (*fake_compile_option)(const char *);

static void resolve(void *slot, size_t size, const char *name)
{
	void *sym = dlsym(lib, name);

	ck_assert_msg(sym != NULL, "%s not exported", name);
	/* ISO C has no object-to-function pointer cast; POSIX guarantees the representations agree */
	memcpy(slot, &sym, size);
}

static void setup(void)
{
	const char *build = getenv("ACCELD_BUILD");
	static const char *vars[] = {
		"FAKE_PJRT_PLATFORM",   "FAKE_PJRT_DEVICES",	 "FAKE_PJRT_KIND",	  "FAKE_PJRT_MEMORY",
		"FAKE_PJRT_CC",	"FAKE_PJRT_VERSION",	 "FAKE_PJRT_API_SIZE",	  "FAKE_PJRT_INIT_FAIL",
		"FAKE_PJRT_CREATE_FAIL", "FAKE_PJRT_BUSY",	 "FAKE_PJRT_BUSY_PID",	  "FAKE_PJRT_COMPILE_FAIL",
		"FAKE_PJRT_OOM",	"FAKE_PJRT_EXEC_FAIL",	 "FAKE_PJRT_SLOW_MS",	  "FAKE_PJRT_NO_MEMSTATS",
		"FAKE_PJRT_WRONG_RESULT", "FAKE_PJRT_EXACT", "FAKE_PJRT_BUSY_DEVICES", "FAKE_PJRT_EXEC_OPTIONS_SIZE",
		"FAKE_PJRT_CORES_PER_CHIP", "FAKE_PJRT_HW_IDS", "FAKE_PJRT_COMPILE_LOG", "FAKE_PJRT_DMA",
	};
	PJRT_GetPjrtApi_Fn *get;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	snprintf(lib_path, sizeof(lib_path), "%s/fakes/libpjrt.so", build && *build ? build : "build");
	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen %s: %s", lib_path, dlerror());
	resolve(&get, sizeof(get), "GetPjrtApi");
	resolve(&fake_calls, sizeof(fake_calls), "fake_pjrt_calls");
	resolve(&fake_live, sizeof(fake_live), "fake_pjrt_live");
	resolve(&fake_precision, sizeof(fake_precision), "fake_pjrt_last_precision");
	resolve(&fake_create_option, sizeof(fake_create_option), "fake_pjrt_create_option");
	resolve(&fake_compile_option, sizeof(fake_compile_option), "fake_pjrt_compile_option");
	api = get();
	ck_assert_ptr_nonnull(api);
}

static void teardown(void)
{
	if (lib != NULL)
		dlclose(lib);
	lib = NULL;
}

/* ------------------------------------------------------------------------------------------- helpers */

/* Reads an error's code and message into msg, destroys it; PJRT_Error_Code_OK for NULL. */
static PJRT_Error_Code take(PJRT_Error *err, char *msg, size_t len)
{
	PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = err};
	PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = err};
	PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = err};
	PJRT_Error *inner;

	if (msg != NULL && len > 0)
		msg[0] = '\0';
	if (err == NULL)
		return PJRT_Error_Code_OK;
	api->PJRT_Error_Message(&m);
	if (msg != NULL)
		snprintf(msg, len, "%.*s", (int)m.message_size, m.message);
	inner = api->PJRT_Error_GetCode(&g);
	ck_assert_ptr_null(inner);
	api->PJRT_Error_Destroy(&d);
	return g.code;
}

static void ok(PJRT_Error *err)
{
	char msg[512];
	PJRT_Error_Code code = take(err, msg, sizeof(msg));

	ck_assert_msg(code == PJRT_Error_Code_OK, "PJRT error %d: %s", (int)code, msg);
}

static void initialize(void)
{
	PJRT_Plugin_Initialize_Args a = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};

	ok(api->PJRT_Plugin_Initialize(&a));
}

static PJRT_Error *try_client(const PJRT_NamedValue *opts, size_t n, PJRT_Client **out)
{
	PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE, .create_options = opts,
				     .num_options = n};
	PJRT_Error *err = api->PJRT_Client_Create(&a);

	*out = a.client;
	return err;
}

static PJRT_Client *client_new(const PJRT_NamedValue *opts, size_t n)
{
	PJRT_Client *c = NULL;

	initialize();
	ok(try_client(opts, n, &c));
	ck_assert_ptr_nonnull(c);
	return c;
}

static void client_free(PJRT_Client *c)
{
	PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};

	ok(api->PJRT_Client_Destroy(&a));
}

static PJRT_Device *device(PJRT_Client *c, size_t i, size_t *n)
{
	PJRT_Client_AddressableDevices_Args a = {.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE,
						 .client = c};

	ok(api->PJRT_Client_AddressableDevices(&a));
	if (n != NULL)
		*n = a.num_addressable_devices;
	ck_assert_uint_lt(i, a.num_addressable_devices);
	return a.addressable_devices[i];
}

static PJRT_DeviceDescription *description(PJRT_Device *d)
{
	PJRT_Device_GetDescription_Args a = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE, .device = d};

	ok(api->PJRT_Device_GetDescription(&a));
	return a.device_description;
}

static int device_id(PJRT_Device *d)
{
	PJRT_DeviceDescription_Id_Args a = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
					    .device_description = description(d)};

	ok(api->PJRT_DeviceDescription_Id(&a));
	return a.id;
}

static const PJRT_NamedValue *attribute(PJRT_Device *d, const char *name)
{
	PJRT_DeviceDescription_Attributes_Args a = {
		.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE, .device_description = description(d)};

	ok(api->PJRT_DeviceDescription_Attributes(&a));
	for (size_t i = 0; i < a.num_attributes; i++)
		if (strlen(name) == a.attributes[i].name_size && strncmp(name, a.attributes[i].name, a.attributes[i].name_size) == 0)
			return &a.attributes[i];
	return NULL;
}

static void kind(PJRT_Device *d, char *out, size_t len)
{
	PJRT_DeviceDescription_Kind_Args a = {.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE,
					      .device_description = description(d)};

	ok(api->PJRT_DeviceDescription_Kind(&a));
	snprintf(out, len, "%.*s", (int)a.device_kind_size, a.device_kind);
}

static PJRT_Error *memory_stats(PJRT_Device *d, PJRT_Device_MemoryStats_Args *a)
{
	memset(a, 0, sizeof(*a));
	a->struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE;
	a->device = d;
	return api->PJRT_Device_MemoryStats(a);
}

static void await_free(PJRT_Event *e)
{
	PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = e};
	PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = e};

	ok(api->PJRT_Event_Await(&w));
	ok(api->PJRT_Event_Destroy(&d));
}

static PJRT_Error *try_upload(PJRT_Client *c, PJRT_Device *d, const float *data, const int64_t *dims, size_t nd,
			      PJRT_Buffer **out)
{
	PJRT_Client_BufferFromHostBuffer_Args a = {
		.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
		.client = c,
		.data = data,
		.type = PJRT_Buffer_Type_F32,
		.dims = dims,
		.num_dims = nd,
		.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
		.device = d,
	};
	PJRT_Error *err = api->PJRT_Client_BufferFromHostBuffer(&a);

	*out = a.buffer;
	if (err == NULL)
		await_free(a.done_with_host_buffer);
	return err;
}

static PJRT_Buffer *upload(PJRT_Client *c, PJRT_Device *d, const float *data, const int64_t *dims, size_t nd)
{
	PJRT_Buffer *b = NULL;

	ok(try_upload(c, d, data, dims, nd, &b));
	return b;
}

static void buffer_free(PJRT_Buffer *b)
{
	PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b};

	ok(api->PJRT_Buffer_Destroy(&a));
}

/* Copies b into dst and waits for it; returns the event's status. */
static PJRT_Error *download(PJRT_Buffer *b, float *dst, size_t n)
{
	PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					   .dst = dst, .dst_size = n * sizeof(float)};
	PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE};
	PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE};
	PJRT_Error *err;

	ok(api->PJRT_Buffer_ToHostBuffer(&a));
	w.event = d.event = a.event;
	err = api->PJRT_Event_Await(&w);
	ok(api->PJRT_Event_Destroy(&d));
	return err;
}

/*
 * A minimal xla.CompileOptionsProto (docs/pjrt.md): executable_build_options (field 3) holding device_ordinal
 * -1 (1), num_replicas 1 (4), num_partitions 1 (5) and a one-device device_assignment (9). Returns its length.
 */
static size_t compile_options(unsigned char *buf, int dev_id)
{
	static const unsigned char head[] = {
		0x1a, 0x1a,						      /* 3: executable_build_options, 26 bytes */
		0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* 1: device_ordinal = -1 */
		0x20, 0x01,						      /* 4: num_replicas = 1 */
		0x28, 0x01,						      /* 5: num_partitions = 1 */
		0x4a, 0x09,						      /* 9: device_assignment, 9 bytes */
		0x08, 0x01,						      /*   1: replica_count = 1 */
		0x10, 0x01,						      /*   2: computation_count = 1 */
		0x1a, 0x03,						      /*   3: computation_devices, 3 bytes */
		0x0a, 0x01,						      /*     1: replica_device_ids, packed */
	};

	memcpy(buf, head, sizeof(head));
	buf[sizeof(head)] = (unsigned char)dev_id; /* ids below 128 are one varint byte */
	return sizeof(head) + 1;
}

static PJRT_Error *try_compile(PJRT_Client *c, const char *text, const char *format, const unsigned char *opts,
			       size_t nopts, PJRT_LoadedExecutable **out)
{
	PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)(uintptr_t)text,
			  .code_size = strlen(text), .format = format, .format_size = strlen(format)};
	PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c, .program = &p,
				      .compile_options = (const char *)opts, .compile_options_size = nopts};
	PJRT_Error *err = api->PJRT_Client_Compile(&a);

	*out = a.executable;
	return err;
}

static PJRT_LoadedExecutable *compile(PJRT_Client *c, const char *text, int dev_id)
{
	unsigned char opts[64];
	size_t n = compile_options(opts, dev_id);
	PJRT_LoadedExecutable *x = NULL;

	ok(try_compile(c, text, "mlir", opts, n, &x));
	ck_assert_ptr_nonnull(x);
	return x;
}

static void executable_free(PJRT_LoadedExecutable *x)
{
	PJRT_LoadedExecutable_Destroy_Args a = {.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
						.executable = x};

	ok(api->PJRT_LoadedExecutable_Destroy(&a));
}

static size_t num_outputs(PJRT_LoadedExecutable *x)
{
	PJRT_LoadedExecutable_GetExecutable_Args g = {
		.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = x};
	PJRT_Executable_NumOutputs_Args n = {.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE};
	PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE};

	ok(api->PJRT_LoadedExecutable_GetExecutable(&g));
	n.executable = d.executable = g.executable;
	ok(api->PJRT_Executable_NumOutputs(&n));
	ok(api->PJRT_Executable_Destroy(&d));
	return n.num_outputs;
}

/* Runs x on args with a PJRT_ExecuteOptions of `size` bytes; *out gets the output buffer (its event awaited). */
static PJRT_Error *execute_sized(PJRT_LoadedExecutable *x, PJRT_Buffer **args, size_t nargs, PJRT_Buffer **out,
				 size_t size)
{
	PJRT_ExecuteOptions opts = {.struct_size = size};
	PJRT_Buffer *const *lists[1] = {args};
	PJRT_Buffer **outs[1] = {out};
	PJRT_LoadedExecutable_Execute_Args a = {.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
						.executable = x, .options = &opts, .argument_lists = lists,
						.num_devices = 1, .num_args = nargs, .output_lists = outs};

	return api->PJRT_LoadedExecutable_Execute(&a);
}

/* Sets FAKE_PJRT_VERSION and FAKE_PJRT_API_SIZE (NULL: unset) and asks for the table again, as a loader would. */
static void set_version(const char *version, const char *size)
{
	PJRT_GetPjrtApi_Fn *get;

	if (version != NULL)
		setenv("FAKE_PJRT_VERSION", version, 1);
	else
		unsetenv("FAKE_PJRT_VERSION");
	if (size != NULL)
		setenv("FAKE_PJRT_API_SIZE", size, 1);
	else
		unsetenv("FAKE_PJRT_API_SIZE");
	resolve(&get, sizeof(get), "GetPjrtApi");
	ck_assert_ptr_eq(get(), api);
}

/* Runs x on args; *out gets the output buffer and *done the completion event (when done is not NULL). */
static PJRT_Error *execute(PJRT_LoadedExecutable *x, PJRT_Buffer **args, size_t nargs, PJRT_Buffer **out,
			   PJRT_Event **done)
{
	PJRT_ExecuteOptions opts = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
	PJRT_Buffer *const *arg_list[1] = {args};
	PJRT_Buffer *outs[1] = {NULL};
	PJRT_Buffer **out_list[1] = {outs};
	PJRT_Event *events[1] = {NULL};
	PJRT_LoadedExecutable_Execute_Args a = {
		.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
		.executable = x,
		.options = &opts,
		.argument_lists = arg_list,
		.num_devices = 1,
		.num_args = nargs,
		.output_lists = out_list,
		.device_complete_events = done != NULL ? events : NULL,
	};
	PJRT_Error *err = api->PJRT_LoadedExecutable_Execute(&a);

	*out = outs[0];
	if (done != NULL)
		*done = events[0];
	return err;
}

/* ------------------------------------------------------------------------------------ the modules */

/* The StableHLO modules docs/pjrt.md recommends, for the given sizes (the generic forms of the spec). */
static void module_saxpy(char *buf, size_t len, const char *kernel, long n)
{
	/* saxpy: alpha*x + y; triad: b + s*c, the scalar first in both */
	int triad = strcmp(kernel, "triad") == 0;

	snprintf(buf, len,
		 "module @acceld_%s {\n"
		 "  func.func public @main(%%arg0: tensor<f32>, %%arg1: tensor<%ldxf32>, %%arg2: tensor<%ldxf32>) "
		 "-> tensor<%ldxf32> {\n"
		 "    %%0 = \"stablehlo.broadcast_in_dim\"(%%arg0) {broadcast_dimensions = array<i64>} : (tensor<f32>) "
		 "-> tensor<%ldxf32>\n"
		 "    %%1 = \"stablehlo.multiply\"(%%0, %%%s) : (tensor<%ldxf32>, tensor<%ldxf32>) -> tensor<%ldxf32>\n"
		 "    %%2 = \"stablehlo.add\"(%%1, %%%s) : (tensor<%ldxf32>, tensor<%ldxf32>) -> tensor<%ldxf32>\n"
		 "    func.return %%2 : tensor<%ldxf32>\n"
		 "  }\n"
		 "}\n",
		 kernel, n, n, n, n, triad ? "arg2" : "arg1", n, n, n, triad ? "arg1" : "arg2", n, n, n, n);
}

static void module_dot(char *buf, size_t len, long n)
{
	snprintf(buf, len,
		 "module @acceld_dot {\n"
		 "  func.func public @main(%%arg0: tensor<%ldxf32>, %%arg1: tensor<%ldxf32>) -> tensor<f32> {\n"
		 "    %%0 = \"stablehlo.multiply\"(%%arg0, %%arg1) : (tensor<%ldxf32>, tensor<%ldxf32>) -> tensor<%ldxf32>\n"
		 "    %%1 = \"stablehlo.constant\"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>\n"
		 "    %%2 = \"stablehlo.reduce\"(%%0, %%1) ({\n"
		 "    ^bb0(%%a0: tensor<f32>, %%b0: tensor<f32>):\n"
		 "      %%s0 = \"stablehlo.add\"(%%a0, %%b0) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
		 "      \"stablehlo.return\"(%%s0) : (tensor<f32>) -> ()\n"
		 "    }) {dimensions = array<i64: 0>} : (tensor<%ldxf32>, tensor<f32>) -> tensor<f32>\n"
		 "    func.return %%2 : tensor<f32>\n"
		 "  }\n"
		 "}\n",
		 n, n, n, n, n, n);
}

static void module_sgemm(char *buf, size_t len, long m, long k, long n, const char *p)
{
	char a[32], b[32], c[32];

	snprintf(a, sizeof(a), "tensor<%ldx%ldxf32>", m, k);
	snprintf(b, sizeof(b), "tensor<%ldx%ldxf32>", k, n);
	snprintf(c, sizeof(c), "tensor<%ldx%ldxf32>", m, n);
	snprintf(buf, len,
		 "module @acceld_sgemm {\n"
		 "  func.func public @main(%%arg0: tensor<f32>, %%arg1: tensor<f32>, %%arg2: %s, %%arg3: %s,\n"
		 "                         %%arg4: %s) -> %s {\n"
		 "    %%0 = \"stablehlo.dot_general\"(%%arg2, %%arg3) {\n"
		 "      dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
		 "rhs_contracting_dimensions = [0]>,\n"
		 "      precision_config = [#stablehlo<precision %s>, #stablehlo<precision %s>]\n"
		 "    } : (%s, %s) -> %s\n"
		 "    %%1 = \"stablehlo.broadcast_in_dim\"(%%arg0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> %s\n"
		 "    %%2 = \"stablehlo.multiply\"(%%1, %%0) : (%s, %s) -> %s\n"
		 "    %%3 = \"stablehlo.broadcast_in_dim\"(%%arg1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> %s\n"
		 "    %%4 = \"stablehlo.multiply\"(%%3, %%arg4) : (%s, %s) -> %s\n"
		 "    %%5 = \"stablehlo.add\"(%%2, %%4) : (%s, %s) -> %s\n"
		 "    func.return %%5 : %s\n"
		 "  }\n"
		 "}\n",
		 a, b, c, c, p, p, a, b, c, c, c, c, c, c, c, c, c, c, c, c, c);
}

static void module_softmax(char *buf, size_t len, long m, long n)
{
	char x[32], r[32];

	snprintf(x, sizeof(x), "tensor<%ldx%ldxf32>", m, n);
	snprintf(r, sizeof(r), "tensor<%ldxf32>", m);
	snprintf(buf, len,
		 "module @acceld_softmax {\n"
		 "  func.func public @main(%%arg0: %s) -> %s {\n"
		 "    %%0 = \"stablehlo.constant\"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>\n"
		 "    %%1 = \"stablehlo.reduce\"(%%arg0, %%0) ({\n"
		 "    ^bb0(%%a0: tensor<f32>, %%b0: tensor<f32>):\n"
		 "      %%m0 = \"stablehlo.maximum\"(%%a0, %%b0) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
		 "      \"stablehlo.return\"(%%m0) : (tensor<f32>) -> ()\n"
		 "    }) {dimensions = array<i64: 1>} : (%s, tensor<f32>) -> %s\n"
		 "    %%2 = \"stablehlo.broadcast_in_dim\"(%%1) {broadcast_dimensions = array<i64: 0>} : (%s) -> %s\n"
		 "    %%3 = \"stablehlo.subtract\"(%%arg0, %%2) : (%s, %s) -> %s\n"
		 "    %%4 = \"stablehlo.exponential\"(%%3) : (%s) -> %s\n"
		 "    %%5 = \"stablehlo.constant\"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>\n"
		 "    %%6 = \"stablehlo.reduce\"(%%4, %%5) ({\n"
		 "    ^bb0(%%a1: tensor<f32>, %%b1: tensor<f32>):\n"
		 "      %%s1 = \"stablehlo.add\"(%%a1, %%b1) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
		 "      \"stablehlo.return\"(%%s1) : (tensor<f32>) -> ()\n"
		 "    }) {dimensions = array<i64: 1>} : (%s, tensor<f32>) -> %s\n"
		 "    %%7 = \"stablehlo.broadcast_in_dim\"(%%6) {broadcast_dimensions = array<i64: 0>} : (%s) -> %s\n"
		 "    %%8 = \"stablehlo.divide\"(%%4, %%7) : (%s, %s) -> %s\n"
		 "    func.return %%8 : %s\n"
		 "  }\n"
		 "}\n",
		 x, x, x, r, r, x, x, x, x, x, x, x, r, r, x, x, x, x, x);
}

static void assert_close(const float *got, const float *want, size_t n, float tol)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])), "element %zu: got %g, want %g",
			      i, (double)got[i], (double)want[i]);
}

/* ------------------------------------------------------------------------------------------- the API */

/* Attribute arrays are stepped by the plugin's entry size and each entry's struct_size is checked. */
START_TEST(attributes_stepped_by_the_plugins_entry_size)
{
	/* a newer plugin's entries: acceld's struct and 8 bytes more */
	struct bigger {
		PJRT_NamedValue v;
		int64_t later;
	} big[3];
	PJRT_NamedValue small[2];
	const PJRT_NamedValue *v;
	static const char *const names[3] = {"coords", "core_count", "device_vendor"};

	memset(big, 0, sizeof(big));
	for (int i = 0; i < 3; i++) {
		big[i].v.struct_size = PJRT_NamedValue_STRUCT_SIZE + 8;
		big[i].v.name = names[i];
		big[i].v.name_size = strlen(names[i]);
		big[i].v.type = PJRT_NamedValue_kInt64;
		big[i].v.int64_value = 10 + i;
	}
	v = pjrt_attribute(&big[0].v, 3, "device_vendor");
	ck_assert_ptr_eq(v, &big[2].v);
	ck_assert_int_eq(v->int64_value, 12);
	ck_assert_ptr_null(pjrt_attribute(&big[0].v, 3, "core"));
	/* an entry of another size ends the walk */
	big[1].v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
	ck_assert_ptr_null(pjrt_attribute(&big[0].v, 3, "device_vendor"));
	ck_assert_ptr_eq(pjrt_attribute(&big[0].v, 3, "coords"), &big[0].v);
	/* entries smaller than acceld's are not read at all */
	memset(small, 0, sizeof(small));
	small[0].struct_size = small[1].struct_size = PJRT_NamedValue_STRUCT_SIZE - 8;
	small[0].name = "coords";
	small[0].name_size = 6;
	ck_assert_ptr_null(pjrt_attribute(small, 2, "coords"));
	ck_assert_ptr_null(pjrt_attribute(NULL, 0, "coords"));
}
END_TEST

START_TEST(api_table_and_version)
{
	PJRT_Plugin_Attributes_Args pa = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
	int seen = 0;

	ck_assert_int_eq(api->pjrt_api_version.major_version, PJRT_API_MAJOR);
	/* as JAX's CUDA plugin 0.11.2: 0.115, a table of 1144 bytes, which goes on past every slot acceld declares */
	ck_assert_int_eq(api->pjrt_api_version.minor_version, 115);
	ck_assert_uint_eq(api->struct_size, 1144);
	ck_assert_uint_gt(api->struct_size, sizeof(PJRT_Api));
	/* the old ones as knobs: 0.94 and a table that ends at PJRT_Buffer_ReadyEvent (624 bytes) */
	set_version("0.94", "624");
	ck_assert_int_eq(api->pjrt_api_version.minor_version, 94);
	ck_assert_uint_eq(api->struct_size, 624);
	ck_assert(pjrt_api_has(api, PJRT_Buffer_ReadyEvent));
	set_version(NULL, NULL);
	ck_assert_uint_eq(api->struct_size, 1144);
	ck_assert(pjrt_api_version_ok(api));
	ck_assert(pjrt_api_has(api, PJRT_Buffer_ReadyEvent));
	ck_assert(pjrt_api_has(api, PJRT_Device_MemoryStats));
	ck_assert(!pjrt_api_has(api, PJRT_Client_LookupDevice)); /* a slot the fake leaves empty */
	ck_assert_ptr_nonnull(pjrt_find_extension(api, PJRT_Extension_Type_Layouts, PJRT_Extension_Base_STRUCT_SIZE));
	ck_assert_ptr_null(pjrt_find_extension(api, PJRT_Extension_Type_Megascale, PJRT_Extension_Base_STRUCT_SIZE));
	ck_assert_ptr_null(pjrt_find_extension(api, PJRT_Extension_Type_Profiler, 64));
	ok(api->PJRT_Plugin_Attributes(&pa));
	for (size_t i = 0; i < pa.num_attributes; i++)
		if (pa.attributes[i].name_size == 25 && strncmp(pa.attributes[i].name, "stablehlo_current_version", 25) == 0) {
			ck_assert_int_eq(pa.attributes[i].type, PJRT_NamedValue_kInt64List);
			ck_assert_uint_eq(pa.attributes[i].value_size, 3);
			seen = 1;
		}
	ck_assert(seen);
	ck_assert_int_eq(fake_calls("GetPjrtApi"), 3); /* setup's, and the two of set_version */
}
END_TEST

START_TEST(version_and_size_switches)
{
	PJRT_GetPjrtApi_Fn *get;

	resolve(&get, sizeof(get), "GetPjrtApi");
	setenv("FAKE_PJRT_VERSION", "0.44", 1);
	ck_assert(!pjrt_api_version_ok(get()));
	ck_assert_ptr_null(pjrt_find_extension(api, PJRT_Extension_Type_Layouts, PJRT_Extension_Base_STRUCT_SIZE));
	setenv("FAKE_PJRT_VERSION", "1.0", 1);
	ck_assert(!pjrt_api_version_ok(get()));
	setenv("FAKE_PJRT_VERSION", "0.45", 1);
	ck_assert(pjrt_api_version_ok(get()));
	setenv("FAKE_PJRT_VERSION", "0.120", 1);
	ck_assert(pjrt_api_version_ok(get()));
	/* an older plugin's shorter table: the slots past its end are not there */
	setenv("FAKE_PJRT_API_SIZE", "320", 1);
	ck_assert_uint_eq(get()->struct_size, 320);
	ck_assert(pjrt_api_has(api, PJRT_Device_MemoryStats));
	ck_assert(!pjrt_api_has(api, PJRT_Executable_NumOutputs));
	ck_assert(!pjrt_api_has(api, PJRT_Buffer_ReadyEvent));
}
END_TEST

START_TEST(struct_size_checked)
{
	PJRT_Client_Create_Args a = {.struct_size = PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, client)};
	char msg[256];

	initialize();
	/* a caller built before kv_try_get_callback (0.61) is refused, as the real plugins refuse it */
	ck_assert_int_eq(take(api->PJRT_Client_Create(&a), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "Unexpected PJRT_Client_Create_Args size"));
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(initialize_first)
{
	PJRT_Client *c;
	char msg[256];

	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_FAILED_PRECONDITION);
	ck_assert_ptr_nonnull(strstr(msg, "PJRT_Plugin_Initialize"));
}
END_TEST

/* -------------------------------------------------------------------------------------- the devices */

START_TEST(gpu_devices_and_options)
{
	static const int64_t visible[] = {0, 1};
	PJRT_NamedValue opts[] = {
		{.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "preallocate", .name_size = 11,
		 .type = PJRT_NamedValue_kBool, .bool_value = false, .value_size = 1},
		{.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "memory_fraction", .name_size = 15,
		 .type = PJRT_NamedValue_kFloat, .float_value = 0.5f, .value_size = 1},
		{.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "allocator", .name_size = 9,
		 .type = PJRT_NamedValue_kString, .string_value = "platform", .value_size = 8},
		{.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "visible_devices", .name_size = 15,
		 .type = PJRT_NamedValue_kInt64List, .int64_array_value = visible, .value_size = 2},
	};
	PJRT_Client_PlatformName_Args pn = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE};
	PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE};
	PJRT_Device_IsAddressable_Args ad = {.struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE};
	PJRT_Device_MemoryStats_Args ms;
	PJRT_Client *c;
	PJRT_Device *d1;
	const PJRT_NamedValue *v;
	char text[128];
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "3", 1);
	c = client_new(opts, 4);
	pn.client = c;
	ok(api->PJRT_Client_PlatformName(&pn));
	ck_assert_int_eq((int)pn.platform_name_size, 4);
	ck_assert_int_eq(strncmp(pn.platform_name, "cuda", 4), 0);
	d1 = device(c, 1, &n);
	ck_assert_uint_eq(n, 2); /* visible_devices kept two of three */
	ck_assert_int_eq(device_id(d1), 1);
	hw.device = ad.device = d1;
	ok(api->PJRT_Device_LocalHardwareId(&hw));
	ck_assert_int_eq(hw.local_hardware_id, 1);
	ok(api->PJRT_Device_IsAddressable(&ad));
	ck_assert(ad.is_addressable);
	kind(d1, text, sizeof(text));
	ck_assert_str_eq(text, "NVIDIA H100 80GB HBM3");
	v = attribute(d1, "compute_capability");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->type, PJRT_NamedValue_kString);
	ck_assert_int_eq(strncmp(v->string_value, "9.0", v->value_size), 0);
	v = attribute(d1, "core_count");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->int64_value, 132);
	ck_assert_ptr_nonnull(attribute(d1, "device_vendor"));
	/* what JAX's CUDA plugin says of a GPU, and no PCI address or UUID (tests/pjrt_conformance.md) */
	v = attribute(d1, "device_memory_bytes_limit");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->int64_value, 16ll << 30);
	ck_assert_ptr_nonnull(attribute(d1, "fabric_uuid"));
	ck_assert_ptr_null(attribute(d1, "pci_bus_id"));
	ck_assert_ptr_null(attribute(d1, "uuid"));
	ok(memory_stats(d1, &ms));
	ck_assert(ms.bytes_limit_is_set);
	ck_assert_int_eq(ms.bytes_limit, 8ll << 30); /* 16 GiB at memory_fraction 0.5 */
	ck_assert_int_eq(ms.bytes_in_use, 0);
	ck_assert_str_eq(fake_create_option("preallocate"), "false");
	ck_assert_str_eq(fake_create_option("memory_fraction"), "0.5");
	ck_assert_str_eq(fake_create_option("allocator"), "platform");
	ck_assert_str_eq(fake_create_option("visible_devices"), "0,1");
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* conf-create-options: names and types checked, with the real plugin's messages */
START_TEST(conf_create_options)
{
	PJRT_NamedValue wrong_type = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "preallocate",
				      .name_size = 11, .type = PJRT_NamedValue_kInt64, .int64_value = 0,
				      .value_size = 1};
	PJRT_NamedValue unknown = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "ml_framework_name",
				   .name_size = 17, .type = PJRT_NamedValue_kString, .string_value = "acceld",
				   .value_size = 6};
	PJRT_NamedValue bad_allocator = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "allocator",
					 .name_size = 9, .type = PJRT_NamedValue_kString, .string_value = "magic",
					 .value_size = 5};
	PJRT_Client *c;
	char msg[512];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	initialize();
	ck_assert_int_eq(take(try_client(&wrong_type, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "with name preallocate has type index"));
	/* word for word what JAX's CUDA plugin 0.11.2 said (it prints the expected type as PJRT's enum) */
	wrong_type.name = "visible_devices";
	wrong_type.name_size = 15;
	ck_assert_int_eq(take(try_client(&wrong_type, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Option passed to PJRT_Client_Create with name visible_devices has type index 2 but "
			      "expected type index is 2");
	ck_assert_int_eq(take(try_client(&unknown, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "Unexpected option name passed to PJRT_Client_Create: ml_framework_name"));
	ck_assert_int_eq(take(try_client(&bad_allocator, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_UNIMPLEMENTED);
	ck_assert_ptr_nonnull(strstr(msg, "Allocator magic not supported"));
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* conf-tpu-attributes: libtpu describes a chip by coords and core_on_chip, no PCI address */
START_TEST(conf_tpu_attributes)
{
	PJRT_NamedValue name = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "ml_framework_name",
				.name_size = 17, .type = PJRT_NamedValue_kString, .string_value = "acceld",
				.value_size = 6};
	PJRT_NamedValue allocator = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "allocator", .name_size = 9,
				     .type = PJRT_NamedValue_kString, .string_value = "bfc", .value_size = 3};
	PJRT_Client *c;
	PJRT_Device *d;
	const PJRT_NamedValue *v;
	char text[128];
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_DEVICES", "4", 1);
	initialize();
	ck_assert_int_eq(take(try_client(&allocator, 1, &c), text, sizeof(text)), PJRT_Error_Code_INVALID_ARGUMENT);
	ok(try_client(&name, 1, &c));
	d = device(c, 3, &n);
	ck_assert_uint_eq(n, 4);
	kind(d, text, sizeof(text));
	ck_assert_str_eq(text, "TPU v5 lite");
	v = attribute(d, "coords");
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->type, PJRT_NamedValue_kInt64List);
	ck_assert_uint_eq(v->value_size, 3);
	ck_assert_int_eq(v->int64_array_value[0], 1);
	ck_assert_int_eq(v->int64_array_value[1], 1);
	ck_assert_ptr_nonnull(attribute(d, "core_on_chip"));
	ck_assert_ptr_null(attribute(d, "pci_bus_id"));
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* --------------------------------------------------------------------------------------- the kernels */

START_TEST(saxpy_and_triad)
{
	static const char *const kernels[] = {"saxpy", "triad"};
	const float alpha = 2.5f, x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 20, 30, 40, 50};
	const int64_t n = 5;

	for (size_t k = 0; k < 2; k++) {
		PJRT_Client *c = client_new(NULL, 0);
		PJRT_Device *d = device(c, 0, NULL);
		PJRT_Buffer *args[3], *out;
		PJRT_Buffer_Dimensions_Args dims = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE};
		PJRT_Buffer_ElementType_Args et = {.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE};
		PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {.struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE};
		PJRT_Event *done;
		PJRT_LoadedExecutable *x1;
		float got[5], want[5];
		char text[2048];

		module_saxpy(text, sizeof(text), kernels[k], (long)n);
		x1 = compile(c, text, device_id(d));
		ck_assert_uint_eq(num_outputs(x1), 1);
		ck_assert_int_eq(fake_compile_option("num_replicas"), 1);
		ck_assert_int_eq(fake_compile_option("num_partitions"), 1);
		ck_assert_int_eq(fake_compile_option("device_ordinal"), -1);
		ck_assert_int_eq(fake_compile_option("device_id"), 0);
		args[0] = upload(c, d, &alpha, NULL, 0);
		args[1] = upload(c, d, x, &n, 1);
		args[2] = upload(c, d, y, &n, 1);
		ok(execute(x1, args, 3, &out, &done));
		await_free(done);
		dims.buffer = et.buffer = sz.buffer = out;
		ok(api->PJRT_Buffer_Dimensions(&dims));
		ck_assert_uint_eq(dims.num_dims, 1);
		ck_assert_int_eq(dims.dims[0], 5);
		ok(api->PJRT_Buffer_ElementType(&et));
		ck_assert_int_eq(et.type, PJRT_Buffer_Type_F32);
		ok(api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
		ck_assert_uint_eq(sz.on_device_size_in_bytes, 20);
		ok(download(out, got, 5));
		for (int i = 0; i < 5; i++)
			want[i] = k == 0 ? alpha * x[i] + y[i] : x[i] + alpha * y[i];
		assert_close(got, want, 5, 1e-6f);
		for (int i = 0; i < 3; i++)
			buffer_free(args[i]);
		buffer_free(out);
		executable_free(x1);
		client_free(c);
		ck_assert_int_eq(fake_live("all"), 0);
	}
}
END_TEST

START_TEST(dot)
{
	const float x[4] = {1, 2, 3, 4}, y[4] = {0.5f, -1, 2, 0.25f};
	const int64_t n = 4;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *args[2], *out;
	PJRT_Buffer_Dimensions_Args dims = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE};
	PJRT_LoadedExecutable *x1;
	float got, want = 0;
	char text[2048];

	module_dot(text, sizeof(text), (long)n);
	x1 = compile(c, text, device_id(d));
	args[0] = upload(c, d, x, &n, 1);
	args[1] = upload(c, d, y, &n, 1);
	ok(execute(x1, args, 2, &out, NULL));
	dims.buffer = out;
	ok(api->PJRT_Buffer_Dimensions(&dims));
	ck_assert_uint_eq(dims.num_dims, 0);
	ok(download(out, &got, 1));
	for (int i = 0; i < 4; i++)
		want += x[i] * y[i];
	assert_close(&got, &want, 1, 1e-6f);
	buffer_free(args[0]);
	buffer_free(args[1]);
	buffer_free(out);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* Runs sgemm (m=2, k=3, n=2) at the given precision on the current platform into got. */
static void run_sgemm(const char *precision, const float *a, const float *b, float *got)
{
	const float alpha = 1.5f, beta = -0.5f, cin[4] = {1, 2, 3, 4};
	const int64_t da[2] = {2, 3}, db[2] = {3, 2}, dc[2] = {2, 2};
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *args[5], *out;
	PJRT_LoadedExecutable *x1;
	char text[4096];

	module_sgemm(text, sizeof(text), 2, 3, 2, precision);
	x1 = compile(c, text, device_id(d));
	ck_assert_str_eq(fake_precision(), precision);
	args[0] = upload(c, d, &alpha, NULL, 0);
	args[1] = upload(c, d, &beta, NULL, 0);
	args[2] = upload(c, d, a, da, 2);
	args[3] = upload(c, d, b, db, 2);
	args[4] = upload(c, d, cin, dc, 2);
	ok(execute(x1, args, 5, &out, NULL));
	ok(download(out, got, 4));
	for (int i = 0; i < 5; i++)
		buffer_free(args[i]);
	buffer_free(out);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}

static void sgemm_reference(const float *a, const float *b, float *want)
{
	const float cin[4] = {1, 2, 3, 4};

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			double acc = 0;

			for (int p = 0; p < 3; p++)
				acc += (double)a[i * 3 + p] * b[p * 2 + j];
			want[i * 2 + j] = (float)(1.5 * acc - 0.5 * cin[i * 2 + j]);
		}
}

START_TEST(sgemm_highest)
{
	const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5f, 1, -1, 2, 0.25f, 3};
	float got[4], want[4];

	run_sgemm("HIGHEST", a, b, got);
	sgemm_reference(a, b, want);
	assert_close(got, want, 4, 1e-6f);
}
END_TEST

START_TEST(sgemm_precision_on_cuda)
{
	/* 1 + 2^-12 survives float32 but not TF32's 10-bit mantissa */
	const float e = 1.0f + 1.0f / 4096.0f;
	const float a[6] = {e, e, e, e, e, e}, b[6] = {e, e, e, e, e, e};
	float got[4], want[4];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	sgemm_reference(a, b, want);
	run_sgemm("HIGHEST", a, b, got);
	assert_close(got, want, 4, 1e-6f);
	run_sgemm("DEFAULT", a, b, got);
	ck_assert_msg(fabsf(got[0] - want[0]) > 1e-4f, "DEFAULT on cuda should round to TF32: %g vs %g",
		      (double)got[0], (double)want[0]);
	ck_assert_float_eq_tol(got[0], 1.5f * 3.0f - 0.5f, 1e-6f);
	setenv("FAKE_PJRT_EXACT", "1", 1);
	run_sgemm("DEFAULT", a, b, got);
	assert_close(got, want, 4, 1e-6f);
}
END_TEST

START_TEST(sgemm_precision_on_tpu)
{
	/* bfloat16 keeps 7 mantissa bits and loses 2^-12; three passes (HIGH) keep it */
	const float e = 1.0f + 1.0f / 4096.0f;
	const float a[6] = {e, e, e, e, e, e}, b[6] = {e, e, e, e, e, e};
	float got[4], want[4];

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	sgemm_reference(a, b, want);
	run_sgemm("DEFAULT", a, b, got);
	ck_assert_float_eq_tol(got[0], 1.5f * 3.0f - 0.5f, 1e-6f);
	run_sgemm("HIGH", a, b, got);
	assert_close(got, want, 4, 1e-6f);
}
END_TEST

START_TEST(softmax)
{
	const float x[6] = {1, 2, 3, -1, 0, 1000};
	const int64_t dims[2] = {2, 3};
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *in, *out;
	PJRT_LoadedExecutable *x1;
	float got[6], want[6];
	char text[4096];

	module_softmax(text, sizeof(text), 2, 3);
	x1 = compile(c, text, device_id(d));
	ck_assert_str_eq(fake_precision(), "");
	in = upload(c, d, x, dims, 2);
	ok(execute(x1, &in, 1, &out, NULL));
	ok(download(out, got, 6));
	for (int r = 0; r < 2; r++) {
		float mx = fmaxf(fmaxf(x[r * 3], x[r * 3 + 1]), x[r * 3 + 2]), sum = 0;

		for (int j = 0; j < 3; j++)
			sum += want[r * 3 + j] = expf(x[r * 3 + j] - mx);
		for (int j = 0; j < 3; j++)
			want[r * 3 + j] /= sum;
	}
	assert_close(got, want, 6, 1e-6f);
	buffer_free(in);
	buffer_free(out);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(memory_stats_track_buffers)
{
	const float x[256] = {0};
	const int64_t n = 256;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Device_MemoryStats_Args ms;
	PJRT_Buffer *b1, *b2;

	b1 = upload(c, d, x, &n, 1);
	b2 = upload(c, d, x, &n, 1);
	ok(memory_stats(d, &ms));
	ck_assert_int_eq(ms.bytes_in_use, 2048);
	ck_assert_int_eq(ms.bytes_limit, 16ll << 30);
	ck_assert(ms.peak_bytes_in_use_is_set);
	buffer_free(b1);
	ok(memory_stats(d, &ms));
	ck_assert_int_eq(ms.bytes_in_use, 1024);
	ck_assert_int_eq(ms.peak_bytes_in_use, 2048);
	buffer_free(b2);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* ---------------------------------------------------- conformance: tests/pjrt_conformance.md, row by row */

/* conf-plugin-attributes */
START_TEST(conf_plugin_attributes)
{
	PJRT_Plugin_Attributes_Args a = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
	static const char *const names[] = {"xla_version", "stablehlo_current_version", "stablehlo_minimum_version",
					    "cuda_version"};

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	ok(api->PJRT_Plugin_Attributes(&a));
	ck_assert_uint_eq(a.num_attributes, 4);
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_eq(strncmp(a.attributes[i].name, names[i], a.attributes[i].name_size), 0);
	ck_assert_int_eq(a.attributes[1].int64_array_value[1], 20);
	ck_assert_int_eq(a.attributes[3].int64_value, 13000);
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	ok(api->PJRT_Plugin_Attributes(&a));
	ck_assert_uint_eq(a.num_attributes, 3); /* cuda_version is the CUDA plugin's */
}
END_TEST

/* conf-gpu-attributes: exactly the real plugin's nine, in an order that changes from client to client */
START_TEST(conf_gpu_attributes)
{
	static const char *const names[] = {"coords", "device_vendor", "slice_index", "partition_index",
					    "compute_capability", "shared_memory_per_block_optin", "core_count",
					    "device_memory_bytes_limit", "fabric_uuid"};
	PJRT_DeviceDescription_Attributes_Args a = {.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE};
	char first[2][64];
	PJRT_Client *c;
	const PJRT_NamedValue *v;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	for (int round = 0; round < 2; round++) {
		c = client_new(NULL, 0);
		a.device_description = description(device(c, 0, NULL));
		ok(api->PJRT_DeviceDescription_Attributes(&a));
		ck_assert_uint_eq(a.num_attributes, 9);
		for (size_t i = 0; i < 9; i++)
			ck_assert_ptr_nonnull(attribute(device(c, 0, NULL), names[i]));
		snprintf(first[round], sizeof(first[round]), "%.*s", (int)a.attributes[0].name_size,
			 a.attributes[0].name);
		v = attribute(device(c, 0, NULL), "coords");
		ck_assert_uint_eq(v->value_size, 3);
		v = attribute(device(c, 0, NULL), "device_vendor");
		ck_assert_int_eq(strncmp(v->string_value, "NVIDIA Corporation", v->value_size), 0);
		client_free(c);
	}
	ck_assert_str_ne(first[0], first[1]);
}
END_TEST

/* conf-memory-kinds: a GPU's memory spaces are "device" (its default) and "pinned_host" */
START_TEST(conf_memory_kinds)
{
	PJRT_Device_AddressableMemories_Args m = {.struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE};
	PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE};
	PJRT_Memory_Kind_Args k = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE};
	PJRT_Client *c;
	char kinds[2][32];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	c = client_new(NULL, 0);
	m.device = dm.device = device(c, 0, NULL);
	ok(api->PJRT_Device_AddressableMemories(&m));
	ck_assert_uint_eq(m.num_memories, 2);
	for (int i = 0; i < 2; i++) {
		k.memory = m.memories[i];
		ok(api->PJRT_Memory_Kind(&k));
		snprintf(kinds[i], sizeof(kinds[i]), "%.*s", (int)k.kind_size, k.kind);
	}
	ck_assert_str_eq(kinds[0], "device");
	ck_assert_str_eq(kinds[1], "pinned_host");
	ok(api->PJRT_Device_DefaultMemory(&dm));
	ck_assert_ptr_eq(dm.memory, m.memories[0]);
	client_free(c);
}
END_TEST

/* conf-api-version: the version and table size of JAX's CUDA plugin 0.11.2 by default, the old ones as knobs */
START_TEST(conf_api_version)
{
	ck_assert_int_eq(api->pjrt_api_version.major_version, 0);
	ck_assert_int_eq(api->pjrt_api_version.minor_version, 115);
	ck_assert_uint_eq(api->struct_size, 1144);
	ck_assert_uint_eq((api->struct_size - offsetof(PJRT_Api, PJRT_Error_Destroy)) / sizeof(void *), 138);
	set_version("0.94", "624");
	ck_assert_int_eq(api->pjrt_api_version.minor_version, 94);
	ck_assert_uint_eq(api->struct_size, 624);
	set_version(NULL, NULL);
}
END_TEST

/* conf-dma-map: DmaMap registers page-aligned host memory and DmaUnmap takes back only that; a plugin without the
 * slots, or one that refuses, is what acceld falls back from */
START_TEST(conf_dma_map)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *mem = aligned_alloc(page, 4 * page);
	PJRT_Client *c;
	PJRT_Client_DmaMap_Args m = {.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE, .data = mem, .size = 4 * page};
	PJRT_Client_DmaUnmap_Args u = {.struct_size = PJRT_Client_DmaUnmap_Args_STRUCT_SIZE, .data = mem};
	char msg[256];

	ck_assert_ptr_nonnull(mem);
	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	c = client_new(NULL, 0);
	m.client = u.client = c;
	/* slots 110 and 111 of a 0.115 table */
	ck_assert(pjrt_api_has(api, PJRT_Client_DmaMap) && pjrt_api_has(api, PJRT_Client_DmaUnmap));
	ok(api->PJRT_Client_DmaMap(&m));
	ok(api->PJRT_Client_DmaUnmap(&u));
	ck_assert_int_eq(fake_calls("PJRT_Client_DmaMap"), 1);
	ck_assert_int_eq(fake_calls("PJRT_Client_DmaUnmap"), 1);
	/* only what was registered comes back; the stand-in takes page-aligned memory only */
	ck_assert_int_eq(take(api->PJRT_Client_DmaUnmap(&u), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	m.data = mem + 1;
	ck_assert_int_eq(take(api->PJRT_Client_DmaMap(&m), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "fake plugin: DmaMap needs page-aligned memory");
	m.data = mem;
	setenv("FAKE_PJRT_DMA", "fail", 1);
	ck_assert_int_eq(take(api->PJRT_Client_DmaMap(&m), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	/* a table without them: the slots empty, or the table too short to hold them (0.94's layout as acceld read it) */
	setenv("FAKE_PJRT_DMA", "none", 1);
	set_version(NULL, NULL);
	ck_assert(!pjrt_api_has(api, PJRT_Client_DmaMap));
	unsetenv("FAKE_PJRT_DMA");
	set_version("0.94", "624");
	ck_assert(!pjrt_api_has(api, PJRT_Client_DmaMap));
	set_version(NULL, NULL);
	ck_assert(pjrt_api_has(api, PJRT_Client_DmaMap));
	client_free(c);
	free(mem);
}
END_TEST

/* conf-gpu-strings: ToString and DebugString as se_gpu_topology_description.cc sets them; coords (0, 0, local id) */
START_TEST(conf_gpu_strings)
{
	PJRT_DeviceDescription_ToString_Args t = {.struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE};
	PJRT_DeviceDescription_DebugString_Args d = {.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE};
	PJRT_Client *c;
	const PJRT_NamedValue *v;
	char got[256];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	c = client_new(NULL, 0);
	t.device_description = d.device_description = description(device(c, 1, NULL));
	ok(api->PJRT_DeviceDescription_ToString(&t));
	snprintf(got, sizeof(got), "%.*s", (int)t.to_string_size, t.to_string);
	ck_assert_str_eq(got, "CudaDevice(id=1)");
	ok(api->PJRT_DeviceDescription_DebugString(&d));
	snprintf(got, sizeof(got), "%.*s", (int)d.debug_string_size, d.debug_string);
	ck_assert_str_eq(got, "cuda:1");
	v = attribute(device(c, 1, NULL), "coords");
	ck_assert_uint_eq(v->value_size, 3);
	ck_assert_int_eq(v->int64_array_value[0], 0);
	ck_assert_int_eq(v->int64_array_value[1], 0);
	ck_assert_int_eq(v->int64_array_value[2], 1);
	client_free(c);
}
END_TEST

/* conf-no-visible-gpu: CUDA_VISIBLE_DEVICES="" leaves CUDA no GPU: client creation fails FAILED_PRECONDITION */
START_TEST(conf_no_visible_gpu)
{
	PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
	char msg[256];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	initialize();
	ck_assert_int_eq(take(api->PJRT_Client_Create(&a), msg, sizeof(msg)), PJRT_Error_Code_FAILED_PRECONDITION);
	ck_assert_str_eq(msg, "No visible GPU devices.");
	unsetenv("CUDA_VISIBLE_DEVICES");
}
END_TEST

/* conf-memory-stats: 185 and 201 bytes answered, peak_allocated only for 201, less refused; the BFC limit */
START_TEST(conf_memory_stats)
{
	struct {
		PJRT_Device_MemoryStats_Args a;
		char spare[32];
	} m;
	PJRT_Client *c;
	PJRT_Device *d;
	char msg[256];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_MEMORY", "85017493504", 1); /* an H100 80GB HBM3, as CUDA counts it */
	c = client_new(NULL, 0);
	d = device(c, 0, NULL);
	memset(&m, 0, sizeof(m));
	m.a.struct_size = 185;
	m.a.device = d;
	ok(api->PJRT_Device_MemoryStats(&m.a));
	ck_assert_int_eq(m.a.bytes_limit, 63763906560ll); /* 0.75 of it, rounded up to 2 MiB: the H100's figure */
	ck_assert(!m.a.peak_allocated_bytes_is_set);
	m.a.struct_size = 201;
	ok(api->PJRT_Device_MemoryStats(&m.a));
	ck_assert(m.a.peak_allocated_bytes_is_set);
	ck_assert(m.a.bytes_reserved_is_set);
	m.a.struct_size = 177;
	ck_assert_int_eq(take(api->PJRT_Device_MemoryStats(&m.a), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "expected 185, got 177"));
	client_free(c);
	/* an H200 (CUDA's 150109880320 bytes): 0.75 is 112582410240, rounded up to 2 MiB 112583507968, as seen (to
	 * 1 MiB it would be 112582459392) */
	setenv("FAKE_PJRT_MEMORY", "150109880320", 1);
	c = client_new(NULL, 0);
	m.a.struct_size = 185;
	m.a.device = device(c, 0, NULL);
	ok(api->PJRT_Device_MemoryStats(&m.a));
	ck_assert_int_eq(m.a.bytes_limit, 112583507968ll);
	client_free(c);
}
END_TEST

/* conf-first-client-gpus: the process's first CUDA client decides its GPUs for every later client */
START_TEST(conf_first_client_gpus)
{
	const int64_t one[] = {1}, zero[] = {0};
	PJRT_NamedValue vis = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "visible_devices",
			       .name_size = 15, .type = PJRT_NamedValue_kInt64List, .value_size = 1};
	PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE};
	PJRT_Client *c;
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	vis.int64_array_value = one;
	c = client_new(&vis, 1);
	hw.device = device(c, 0, &n);
	ck_assert_uint_eq(n, 1);
	ok(api->PJRT_Device_LocalHardwareId(&hw));
	ck_assert_int_eq(hw.local_hardware_id, 1);
	client_free(c);
	vis.int64_array_value = zero; /* asks for GPU 0, gets the first client's GPU 1 */
	c = client_new(&vis, 1);
	hw.device = device(c, 0, &n);
	ck_assert_uint_eq(n, 1);
	ok(api->PJRT_Device_LocalHardwareId(&hw));
	ck_assert_int_eq(hw.local_hardware_id, 1);
	client_free(c);
}
END_TEST

/* conf-absent-gpu: a first client that names only GPUs CUDA lacks fails, and keeps nothing */
START_TEST(conf_absent_gpu)
{
	const int64_t nine[] = {9};
	PJRT_NamedValue vis = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "visible_devices",
			       .name_size = 15, .type = PJRT_NamedValue_kInt64List, .int64_array_value = nine,
			       .value_size = 1};
	PJRT_Client *c;
	char msg[256];
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	initialize();
	ck_assert_int_eq(take(try_client(&vis, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(msg, "no supported devices found for platform CUDA");
	c = client_new(NULL, 0);
	device(c, 0, &n);
	ck_assert_uint_eq(n, 1);
	client_free(c);
}
END_TEST

/* conf-busy-gpu: a GPU held by another process is skipped with XLA's warning on stderr, the client opens on the
 * others; with none left it fails "no supported devices found for platform CUDA" and nothing is kept */
START_TEST(conf_busy_gpu)
{
	const int64_t both[] = {0, 1}, one[] = {1};
	PJRT_NamedValue vis = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "visible_devices",
			       .name_size = 15, .type = PJRT_NamedValue_kInt64List, .int64_array_value = one,
			       .value_size = 1};
	char msg[256], log[] = "/tmp/acceld-stderr-XXXXXX", said[512] = "";
	int fd = mkstemp(log), saved = dup(2);
	PJRT_Client *c;
	FILE *f;
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	setenv("FAKE_PJRT_BUSY_DEVICES", "1", 1);
	initialize();
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	dup2(fd, 2);
	/* none left: an error, and nothing kept */
	ck_assert_int_eq(take(try_client(&vis, 1, &c), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(msg, "no supported devices found for platform CUDA");
	/* the held one is left out, the others taken (and kept for the process) */
	vis.int64_array_value = both;
	vis.value_size = 2;
	c = client_new(&vis, 1);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	device(c, 0, &n);
	ck_assert_uint_eq(n, 1);
	{
		PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE,
						       .device = device(c, 0, NULL)};

		ok(api->PJRT_Device_LocalHardwareId(&hw));
		ck_assert_int_eq(hw.local_hardware_id, 0);
	}
	client_free(c);
	f = fdopen(fd, "r");
	ck_assert_ptr_nonnull(f);
	rewind(f);
	n = fread(said, 1, sizeof(said) - 1, f);
	said[n] = '\0';
	fclose(f);
	unlink(log);
	ck_assert_msg(strstr(said, "] unable to create StreamExecutor for CUDA:1: ") != NULL, "%s", said);
	ck_assert_ptr_null(strstr(said, "CUDA:0"));
}
END_TEST

/* conf-serialize: an executable's serialization loads back on the plugin version and platform that wrote it, and
 * on no other */
START_TEST(conf_serialize)
{
	char text[2048], msg[256];
	PJRT_Client *c;
	PJRT_LoadedExecutable *x;
	PJRT_LoadedExecutable_GetExecutable_Args g = {
		.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE};
	PJRT_Executable_Serialize_Args sa = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE};
	PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE};
	PJRT_Executable_DeserializeAndLoad_Args l = {.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE};
	PJRT_GetPjrtApi_Fn *get;
	char *bytes;
	size_t n;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	initialize();
	c = client_new(NULL, 0);
	module_saxpy(text, sizeof(text), "saxpy", 16);
	x = compile(c, text, device_id(device(c, 0, NULL)));
	g.loaded_executable = x;
	ok(api->PJRT_LoadedExecutable_GetExecutable(&g));
	sa.executable = g.executable;
	ok(api->PJRT_Executable_Serialize(&sa));
	ck_assert_uint_gt(sa.serialized_bytes_size, 0);
	ck_assert(sa.serialized_executable_deleter != NULL);
	n = sa.serialized_bytes_size;
	bytes = malloc(n);
	memcpy(bytes, sa.serialized_bytes, n);
	sa.serialized_executable_deleter(sa.serialized_executable);
	d.executable = g.executable;
	ok(api->PJRT_Executable_Destroy(&d));
	executable_free(x);
	/* loads back, and runs as the compiled one did */
	l.client = c;
	l.serialized_executable = bytes;
	l.serialized_executable_size = n;
	ok(api->PJRT_Executable_DeserializeAndLoad(&l));
	ck_assert_ptr_nonnull(l.loaded_executable);
	ck_assert_uint_eq(num_outputs(l.loaded_executable), 1);
	executable_free(l.loaded_executable);
	/* a shortened one, and one of another plugin version, are refused */
	l.serialized_executable_size = n - 1;
	ck_assert_int_eq(take(api->PJRT_Executable_DeserializeAndLoad(&l), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	resolve(&get, sizeof(get), "GetPjrtApi");
	setenv("FAKE_PJRT_VERSION", "0.114", 1);
	get();
	l.serialized_executable_size = n;
	ck_assert_int_eq(take(api->PJRT_Executable_DeserializeAndLoad(&l), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "serialized by PJRT"));
	unsetenv("FAKE_PJRT_VERSION");
	get();
	free(bytes);
	client_free(c);
}
END_TEST

/* conf-tpu-process-lock: libtpu's lockf on its lock file, held until the process exits, and its ABORTED message */
START_TEST(conf_tpu_process_lock)
{
	char path[] = "/tmp/acceld-tpu-lock-XXXXXX";
	int fd = mkstemp(path);
	int ready[2];
	char msg[512];
	char want[96];
	char c;
	PJRT_Client *cl;
	pid_t holder;
	int status;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pipe(ready), 0);
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_LOCKFILE", path, 1);
	holder = fork();
	ck_assert_int_ge(holder, 0);
	if (holder == 0) { /* another process holds the TPU */
		if (lockf(fd, F_TLOCK, 0) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	initialize();
	ck_assert_int_eq(take(try_client(NULL, 0, &cl), msg, sizeof(msg)), PJRT_Error_Code_ABORTED);
	snprintf(want, sizeof(want), "The TPU is already in use by process with pid %d.", (int)holder);
	ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);
	/* free again: the client takes the lock, and destroying the client keeps it */
	cl = client_new(NULL, 0);
	client_free(cl);
	holder = fork();
	ck_assert_int_ge(holder, 0);
	if (holder == 0) {
		int again = open(path, O_RDWR);

		_exit(again >= 0 && lockf(again, F_TLOCK, 0) != 0 ? 0 : 1);
	}
	waitpid(holder, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unsetenv("FAKE_PJRT_LOCKFILE");
	close(fd);
	unlink(path);
}
END_TEST

/* conf-check-failure-aborts: a CHECK failure in XLA or a driver fault ends the whole process (abort) */
START_TEST(conf_check_failure_aborts)
{
	static const char *const where[] = {"client", "compile", "execute"};

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		int err[2];
		char line[256] = "";
		char want[96];
		int status;
		pid_t pid;
		ssize_t n;

		ck_assert_int_eq(pipe(err), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			float x[4] = {1, 2, 3, 4};
			int64_t dims[] = {4};
			char text[2048];
			PJRT_Client *cl;
			PJRT_LoadedExecutable *exe;
			PJRT_Buffer *in[2];
			PJRT_Buffer *out[1];

			dup2(err[1], 2);
			setenv("FAKE_PJRT_CRASH", where[i], 1);
			cl = client_new(NULL, 0);
			module_saxpy(text, sizeof(text), "saxpy", 4);
			exe = compile(cl, text, 0);
			in[0] = upload(cl, device(cl, 0, NULL), x, dims, 1);
			in[1] = upload(cl, device(cl, 0, NULL), x, dims, 1);
			execute(exe, in, 2, out, NULL);
			_exit(0);
		}
		close(err[1]);
		n = read(err[0], line, sizeof(line) - 1);
		line[n > 0 ? n : 0] = '\0';
		close(err[0]);
		waitpid(pid, &status, 0);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "%s: status %d", where[i], status);
		snprintf(want, sizeof(want), "fake pjrt: FAKE_PJRT_CRASH=%s: aborting", where[i]);
		ck_assert_msg(strstr(line, want) != NULL, "%s", line);
	}
}
END_TEST

/* conf-host-layout: ToHostBuffer takes a tiled major-to-minor layout, refuses strides as the C API wrapper does */
START_TEST(conf_host_layout)
{
	const float x[6] = {1, 2, 3, 4, 5, 6};
	const int64_t dims[2] = {2, 3}, m2m[2] = {1, 0}, strides[2] = {12, 4};
	float back[6];
	PJRT_Client *c;
	PJRT_Device *d;
	PJRT_Buffer *b;
	PJRT_Buffer_MemoryLayout l = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
				      .type = PJRT_Buffer_MemoryLayout_Type_Tiled,
				      .tiled = {.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE,
						.minor_to_major = m2m, .minor_to_major_size = 2}};
	PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
					   .host_layout = &l, .dst = back, .dst_size = sizeof(back)};
	char msg[256];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	c = client_new(NULL, 0);
	d = device(c, 0, NULL);
	b = upload(c, d, x, dims, 2);
	a.src = b;
	ok(api->PJRT_Buffer_ToHostBuffer(&a));
	await_free(a.event);
	ck_assert_float_eq(back[5], 6.0f);
	l.type = PJRT_Buffer_MemoryLayout_Type_Strides;
	l.strides = (PJRT_Buffer_MemoryLayout_Strides){.struct_size = PJRT_Buffer_MemoryLayout_Strides_STRUCT_SIZE,
						       .byte_strides = strides, .num_byte_strides = 2};
	ck_assert_int_eq(take(api->PJRT_Buffer_ToHostBuffer(&a), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "PJRT_Buffer_ToHostBuffer does not support host_layout with strides for platform cuda");
	buffer_free(b);
	client_free(c);
}
END_TEST

/* --------------------------------------------------------------------------------- what goes wrong */

START_TEST(compile_errors)
{
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_LoadedExecutable *x;
	unsigned char opts[64];
	size_t nopts = compile_options(opts, 0);
	static const unsigned char garbage[] = {0x1a, 0x7f, 0x08};
	static const unsigned char replicas_only[] = {0x1a, 0x02, 0x20, 0x01};
	char text[2048], msg[1024];

	ck_assert_int_eq(take(try_compile(c, "module @acceld_fft {\n  func.func public @main() -> () {}\n}\n", "mlir",
					  opts, nopts, &x),
			      msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "<program>:1:9: error: unknown module '@acceld_fft'"));
	ck_assert_ptr_nonnull(strstr(msg, "\n  module @acceld_fft {"));
	ck_assert_int_eq(take(try_compile(c, "\n\nfunc.func @f() {}\n", "mlir", opts, nopts, &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "<program>:3:1: error: expected 'module @acceld_<kernel>'"));
	ck_assert_int_eq(take(try_compile(c, "module @acceld_dot {\n  func.func @main() {}\n}\n", "mlir", opts, nopts, &x),
			      msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "expected 'func.func public @main('"));
	module_dot(text, sizeof(text), 4);
	text[strlen("module @acceld_")] = 'X'; /* @acceld_Xot */
	ck_assert_int_eq(take(try_compile(c, text, "mlir", opts, nopts, &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	module_saxpy(text, sizeof(text), "dot", 4); /* saxpy's signature under the dot name */
	ck_assert_int_eq(take(try_compile(c, text, "mlir", opts, nopts, &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "@main of @acceld_dot must have the signature"));
	module_dot(text, sizeof(text), 4);
	ck_assert_int_eq(take(try_compile(c, text, "hlo", opts, nopts, &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Unknown program format 'hlo'.");
	ck_assert_int_eq(take(try_compile(c, text, "mlir", garbage, sizeof(garbage), &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "failed to deserialize CompileOptionsProto"));
	ck_assert_int_eq(take(try_compile(c, text, "mlir", replicas_only, sizeof(replicas_only), &x), msg, sizeof(msg)),
			 PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(msg, "num_partitions"));
	setenv("FAKE_PJRT_COMPILE_FAIL", "1", 1);
	ck_assert_int_eq(take(try_compile(c, text, "mlir", opts, nopts, &x), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* conf-execute-options: Execute checks its arguments, and refuses a PJRT_ExecuteOptions smaller than its own */
START_TEST(conf_execute_options)
{
	const float x[8] = {0};
	const int64_t four = 4, eight = 8;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *args[2], *eight_buffer, *out = NULL;
	PJRT_LoadedExecutable *x1;
	char text[2048], msg[512];

	module_dot(text, sizeof(text), 4);
	x1 = compile(c, text, 0);
	args[0] = upload(c, d, x, &four, 1);
	args[1] = eight_buffer = upload(c, d, x, &eight, 1);
	ck_assert_int_eq(take(execute(x1, args, 2, &out, NULL), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Executable expected shape f32[4] for argument 1 but got incompatible shape f32[8]");
	ck_assert_int_eq(take(execute(x1, args, 1, &out, NULL), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Execution supplied 1 buffers but compiled program expected 2 buffers");
	/* a plugin refuses a PJRT_ExecuteOptions smaller than its own, as a newer plugin would acceld's */
	args[1] = args[0];
	setenv("FAKE_PJRT_EXEC_OPTIONS_SIZE", "160", 1);
	ck_assert_int_eq(take(execute(x1, args, 2, &out, NULL), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Unexpected PJRT_ExecuteOptions size: expected 160, got 144. Check installed software "
			      "versions.");
	unsetenv("FAKE_PJRT_EXEC_OPTIONS_SIZE");
	/* 0.115's own is 144 bytes: 0.94's 112 is refused; as a 0.94 plugin (the knob) it takes 112 */
	ck_assert_int_eq(take(execute_sized(x1, args, 2, &out, 112), msg, sizeof(msg)), PJRT_Error_Code_INVALID_ARGUMENT);
	ck_assert_str_eq(msg, "Unexpected PJRT_ExecuteOptions size: expected 144, got 112. Check installed software "
			      "versions.");
	set_version("0.94", NULL);
	ok(execute_sized(x1, args, 2, &out, 112));
	buffer_free(out);
	set_version(NULL, NULL);
	buffer_free(args[0]);
	buffer_free(eight_buffer);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(client_destroy_with_live_buffers)
{
	const float v = 1;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Buffer *b = upload(c, device(c, 0, NULL), &v, NULL, 0);
	PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};

	ck_assert_int_eq(take(api->PJRT_Client_Destroy(&a), NULL, 0), PJRT_Error_Code_FAILED_PRECONDITION);
	buffer_free(b);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(init_and_create_failures)
{
	PJRT_Plugin_Initialize_Args a = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
	PJRT_Client *c;
	char msg[512];

	setenv("FAKE_PJRT_INIT_FAIL", "1", 1);
	ck_assert_int_eq(take(api->PJRT_Plugin_Initialize(&a), NULL, 0), PJRT_Error_Code_INTERNAL);
	unsetenv("FAKE_PJRT_INIT_FAIL");
	initialize();
	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_CREATE_FAIL", "1", 1);
	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(msg, "no supported devices found for platform CUDA");
	unsetenv("FAKE_PJRT_CREATE_FAIL");
	/* every GPU busy: each skipped (on stderr), none left */
	setenv("FAKE_PJRT_BUSY", "1", 1);
	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(msg, "no supported devices found for platform CUDA");
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_BUSY_PID", "777", 1);
	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_ABORTED);
	ck_assert_str_eq(msg, "The TPU is already in use by process with pid 777. Not attempting to load libtpu.so "
			      "in this process.");
	setenv("FAKE_PJRT_BUSY", "device", 1);
	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_ptr_nonnull(strstr(msg, "open(/dev/accel0): Device or resource busy"));
	unsetenv("FAKE_PJRT_BUSY");
	setenv("FAKE_PJRT_DEVICES", "0", 1);
	ck_assert_int_eq(take(try_client(NULL, 0, &c), msg, sizeof(msg)), PJRT_Error_Code_NOT_FOUND);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(out_of_memory)
{
	const float x[512] = {0};
	const int64_t n = 512, two = 2;
	PJRT_Client *c;
	PJRT_Device *d;
	PJRT_Buffer *b = NULL, *args[2], *out = NULL;
	PJRT_LoadedExecutable *x1;
	char text[2048], msg[512];

	setenv("FAKE_PJRT_MEMORY", "3k", 1);
	c = client_new(NULL, 0);
	d = device(c, 0, NULL);
	setenv("FAKE_PJRT_OOM", "1", 1);
	ck_assert_int_eq(take(try_upload(c, d, x, &two, 1, &b), msg, sizeof(msg)), PJRT_Error_Code_RESOURCE_EXHAUSTED);
	ck_assert_str_eq(msg, "Out of memory while trying to allocate 8 bytes.");
	unsetenv("FAKE_PJRT_OOM");
	/* 2 KiB fits in 3 KiB, a second 2 KiB does not */
	b = upload(c, d, x, &n, 1);
	ck_assert_int_eq(take(try_upload(c, d, x, &n, 1, &args[0]), msg, sizeof(msg)), PJRT_Error_Code_RESOURCE_EXHAUSTED);
	ck_assert_ptr_nonnull(strstr(msg, "Out of memory while trying to allocate 2048 bytes."));
	buffer_free(b);
	module_dot(text, sizeof(text), 2);
	x1 = compile(c, text, 0);
	args[0] = upload(c, d, x, &two, 1);
	args[1] = upload(c, d, x, &two, 1);
	setenv("FAKE_PJRT_OOM", "execute", 1);
	ck_assert_int_eq(take(execute(x1, args, 2, &out, NULL), NULL, 0), PJRT_Error_Code_RESOURCE_EXHAUSTED);
	buffer_free(args[0]);
	buffer_free(args[1]);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* On a GPU the allocator's words are the CUDA plugin's BFC allocator's, as seen on an H200 (docs/pjrt.md). */
START_TEST(conf_gpu_out_of_memory)
{
	const float x[2] = {0};
	const int64_t n = 600000, two = 2;
	float *big = calloc((size_t)n, sizeof(float));
	PJRT_Client *c;
	PJRT_Device *d;
	PJRT_Buffer *b = NULL, *more = NULL;
	char msg[512];

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_MEMORY", "1m", 1);
	c = client_new(NULL, 0);
	d = device(c, 0, NULL);
	setenv("FAKE_PJRT_OOM", "1", 1);
	ck_assert_int_eq(take(try_upload(c, d, x, &two, 1, &b), msg, sizeof(msg)), PJRT_Error_Code_RESOURCE_EXHAUSTED);
	ck_assert_str_eq(msg, "Out of memory while trying to allocate 8B with allocator GPU_0_bfc on device 0.");
	unsetenv("FAKE_PJRT_OOM");
	/* beyond the allocator's limit (0.75 of 1 MiB, rounded up to 2 MiB) */
	ck_assert_int_eq(take(try_upload(c, d, big, &n, 1, &more), msg, sizeof(msg)), PJRT_Error_Code_RESOURCE_EXHAUSTED);
	ck_assert_str_eq(msg, "Out of memory while trying to allocate 2.29MiB with allocator GPU_0_bfc on device 0.");
	free(big);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(execute_failures)
{
	const float x[2] = {1, 2};
	const int64_t two = 2;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *args[2], *out = NULL;
	PJRT_Buffer_ReadyEvent_Args re = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE};
	PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE};
	PJRT_Event_Destroy_Args ed = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE};
	PJRT_Event *done = NULL;
	PJRT_LoadedExecutable *x1;
	float got[1];
	char text[2048], msg[512];

	module_dot(text, sizeof(text), 2);
	x1 = compile(c, text, 0);
	args[0] = upload(c, d, x, &two, 1);
	args[1] = upload(c, d, x, &two, 1);
	setenv("FAKE_PJRT_EXEC_FAIL", "1", 1);
	ck_assert_int_eq(take(execute(x1, args, 2, &out, &done), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_ptr_null(done);
	/* async: Execute succeeds, the failure arrives through the events */
	setenv("FAKE_PJRT_EXEC_FAIL", "async", 1);
	ok(execute(x1, args, 2, &out, &done));
	w.event = ed.event = done;
	ck_assert_int_eq(take(api->PJRT_Event_Await(&w), msg, sizeof(msg)), PJRT_Error_Code_INTERNAL);
	ck_assert_ptr_nonnull(strstr(msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
	ok(api->PJRT_Event_Destroy(&ed));
	re.buffer = out;
	ok(api->PJRT_Buffer_ReadyEvent(&re));
	w.event = ed.event = re.event;
	ck_assert_int_eq(take(api->PJRT_Event_Await(&w), NULL, 0), PJRT_Error_Code_INTERNAL);
	ok(api->PJRT_Event_Destroy(&ed));
	ck_assert_int_eq(take(download(out, got, 1), NULL, 0), PJRT_Error_Code_INTERNAL);
	buffer_free(out);
	buffer_free(args[0]);
	buffer_free(args[1]);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

START_TEST(wrong_result_and_no_memstats)
{
	const float x[2] = {1, 2};
	const int64_t two = 2;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Device_MemoryStats_Args ms;
	PJRT_Buffer *args[2], *out;
	PJRT_LoadedExecutable *x1;
	float got;
	char text[2048];

	setenv("FAKE_PJRT_NO_MEMSTATS", "1", 1);
	ck_assert_int_eq(take(memory_stats(d, &ms), NULL, 0), PJRT_Error_Code_UNIMPLEMENTED);
	setenv("FAKE_PJRT_WRONG_RESULT", "1", 1);
	module_dot(text, sizeof(text), 2);
	x1 = compile(c, text, 0);
	args[0] = upload(c, d, x, &two, 1);
	args[1] = upload(c, d, x, &two, 1);
	ok(execute(x1, args, 2, &out, NULL));
	ok(download(out, &got, 1));
	ck_assert_float_ne(got, 5.0f);
	buffer_free(out);
	buffer_free(args[0]);
	buffer_free(args[1]);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
}
END_TEST

/* ------------------------------------------------------------------------------------------ events */

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *await_thread(void *arg)
{
	PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = arg};

	return api->PJRT_Event_Await(&w);
}

struct callback_seen {
	int calls;
	PJRT_Error_Code code;
};

static void on_ready(PJRT_Error *err, void *arg)
{
	struct callback_seen *seen = arg;

	seen->code = take(err, NULL, 0);
	__atomic_add_fetch(&seen->calls, 1, __ATOMIC_SEQ_CST);
}

START_TEST(slow_execution_blocks_awaits)
{
	const float x[2] = {1, 2};
	const int64_t two = 2;
	PJRT_Client *c = client_new(NULL, 0);
	PJRT_Device *d = device(c, 0, NULL);
	PJRT_Buffer *args[2], *out;
	PJRT_Event *done;
	PJRT_Event_IsReady_Args ready = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE};
	PJRT_Event_Error_Args early = {.struct_size = PJRT_Event_Error_Args_STRUCT_SIZE};
	PJRT_Event_OnReady_Args cb = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .callback = on_ready};
	PJRT_Event_Destroy_Args ed = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE};
	PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE};
	struct callback_seen seen = {0, PJRT_Error_Code_UNKNOWN};
	PJRT_LoadedExecutable *x1;
	pthread_t waiter;
	void *status;
	double t0;
	float got = 0;
	char text[2048];

	module_dot(text, sizeof(text), 2);
	x1 = compile(c, text, 0);
	args[0] = upload(c, d, x, &two, 1);
	args[1] = upload(c, d, x, &two, 1);
	setenv("FAKE_PJRT_SLOW_MS", "200", 1);
	t0 = seconds();
	ok(execute(x1, args, 2, &out, &done));
	ck_assert_msg(seconds() - t0 < 0.15, "Execute itself must not wait");
	ready.event = early.event = cb.event = ed.event = done;
	ok(api->PJRT_Event_IsReady(&ready));
	ck_assert(!ready.is_ready);
	ck_assert_int_eq(take(api->PJRT_Event_Error(&early), NULL, 0), PJRT_Error_Code_FAILED_PRECONDITION);
	cb.user_arg = &seen;
	ok(api->PJRT_Event_OnReady(&cb));
	/* the download is not there until its event completes: dst holds NaN before the await */
	th.src = out;
	th.dst = &got;
	th.dst_size = sizeof(got);
	ok(api->PJRT_Buffer_ToHostBuffer(&th));
	ck_assert(isnan(got));
	ck_assert_int_eq(pthread_create(&waiter, NULL, await_thread, done), 0);
	ck_assert_int_eq(pthread_join(waiter, &status), 0);
	ck_assert_ptr_null(status);
	ck_assert_msg(seconds() - t0 >= 0.19, "the await returned after %.3f s", seconds() - t0);
	ok(api->PJRT_Event_IsReady(&ready));
	ck_assert(ready.is_ready);
	ok(api->PJRT_Event_Destroy(&ed));
	await_free(th.event);
	ck_assert_float_eq(got, 5.0f);
	while (fake_live("callbacks") > 0)
		usleep(1000);
	ck_assert_int_eq(__atomic_load_n(&seen.calls, __ATOMIC_SEQ_CST), 1);
	ck_assert_int_eq(seen.code, PJRT_Error_Code_OK);
	buffer_free(out);
	buffer_free(args[0]);
	buffer_free(args[1]);
	executable_free(x1);
	client_free(c);
	ck_assert_int_eq(fake_live("all"), 0);
	ck_assert_int_eq(fake_calls("PJRT_Event_OnReady"), 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pjrt_fake");
	TCase *api_tc = tcase_create("api");
	TCase *kernels = tcase_create("kernels");
	TCase *failures = tcase_create("failures");
	TCase *conformance = tcase_create("conformance");

	tcase_add_checked_fixture(api_tc, setup, teardown);
	tcase_add_test(api_tc, api_table_and_version);
	tcase_add_test(api_tc, attributes_stepped_by_the_plugins_entry_size);
	tcase_add_test(api_tc, version_and_size_switches);
	tcase_add_test(api_tc, struct_size_checked);
	tcase_add_test(api_tc, initialize_first);
	tcase_add_test(api_tc, gpu_devices_and_options);
	suite_add_tcase(s, api_tc);

	tcase_add_checked_fixture(kernels, setup, teardown);
	tcase_add_test(kernels, saxpy_and_triad);
	tcase_add_test(kernels, dot);
	tcase_add_test(kernels, sgemm_highest);
	tcase_add_test(kernels, sgemm_precision_on_cuda);
	tcase_add_test(kernels, sgemm_precision_on_tpu);
	tcase_add_test(kernels, softmax);
	tcase_add_test(kernels, memory_stats_track_buffers);
	suite_add_tcase(s, kernels);

	tcase_add_checked_fixture(failures, setup, teardown);
	tcase_add_test(failures, compile_errors);
	tcase_add_test(failures, client_destroy_with_live_buffers);
	tcase_add_test(failures, init_and_create_failures);
	tcase_add_test(failures, out_of_memory);
	tcase_add_test(failures, execute_failures);
	tcase_add_test(failures, wrong_result_and_no_memstats);
	tcase_add_test(failures, slow_execution_blocks_awaits);
	suite_add_tcase(s, failures);

	/* one test per row of tests/pjrt_conformance.md, named conf_<row id>; test_conformance.py checks the pairing */
	tcase_add_checked_fixture(conformance, setup, teardown);
	tcase_add_test(conformance, conf_plugin_attributes);
	tcase_add_test(conformance, conf_create_options);
	tcase_add_test(conformance, conf_tpu_attributes);
	tcase_add_test(conformance, conf_absent_gpu);
	tcase_add_test(conformance, conf_gpu_attributes);
	tcase_add_test(conformance, conf_memory_stats);
	tcase_add_test(conformance, conf_first_client_gpus);
	tcase_add_test(conformance, conf_busy_gpu);
	tcase_add_test(conformance, conf_host_layout);
	tcase_add_test(conformance, conf_serialize);
	tcase_add_test(conformance, conf_gpu_strings);
	tcase_add_test(conformance, conf_no_visible_gpu);
	tcase_add_test(conformance, conf_api_version);
	tcase_add_test(conformance, conf_dma_map);
	tcase_add_test(conformance, conf_memory_kinds);
	tcase_add_test(conformance, conf_gpu_out_of_memory);
	tcase_add_test(conformance, conf_execute_options);
	tcase_add_test(conformance, conf_tpu_process_lock);
	tcase_add_test(conformance, conf_check_failure_aborts);
	suite_add_tcase(s, conformance);
	return s;
}
