/*
 * The PJRT C API as acceld uses it: the subset of openxla/xla's xla/pjrt/c/pjrt_c_api.h that the PJRT backend
 * calls, declared here with the real layouts so a plugin (libtpu.so, JAX's xla_cuda_plugin.so, the test fake
 * tests/fakes/pjrt.c) can be dlopened and driven through `const PJRT_Api *GetPjrtApi(void)`.
 *
 * Source: openxla/xla xla/pjrt/c/pjrt_c_api.h at commit 0882740a8496c82a8dc8a25fadba88ca342fb0aa, which says
 * PJRT_API_MAJOR 0, PJRT_API_MINOR 94 (PJRT_HEADER_MINOR here), with the later PJRT_ExecuteOptions fields added; the
 * changelog is xla/pjrt/c/CHANGELOG.md. docs/pjrt.md has the sources. acceld speaks up to PJRT_API_MINOR (0.115):
 * the newest a real plugin ran every kernel with.
 *
 * Version rules (the header's own comments and the changelog):
 *   - The major version must match (0). A change of major is ABI-incompatible.
 *   - A newer minor only appends: fields at the end of PJRT_Api and at the end of argument structs. So a newer
 *     plugin's PJRT_Api is larger, and acceld reads a PJRT_Api slot only when the plugin's struct_size covers it
 *     (pjrt_api_has() below). Everything acceld calls sits in the block of PJRT_Api that has not moved since
 *     at least 0.33 (compared against the 0.33 header): the 0.57 "rearranged fields" change touched the tail.
 *   - Every argument struct starts with struct_size: the caller sets it to the *_STRUCT_SIZE it was built with
 *     (offsetof the last field + its size, as the real header computes it). A plugin rejects a struct_size
 *     smaller than its own (ActualStructSizeIsGreaterOrEqual in pjrt_c_api_wrapper_impl.cc) and reads only
 *     its own prefix of a larger one, so the structs here carry every field up to the newest one known, zeroed
 *     when unused. PJRT_ExecuteOptions grew after 0.94 (multi_slice_config in 0.97, then
 *     use_major_to_minor_data_layout_for_callbacks, hlo_output_callbacks, num_hlo_output_callbacks, which the
 *     GPU plugin's source reads): they are declared so a newer plugin accepts the struct.
 *   - The minimum minor acceld needs is PJRT_MIN_MINOR (45): PJRT_Extension_Base gained its leading struct_size
 *     in 0.45 (a breaking change inside 0.x), and acceld walks the extension chain; PJRT_NamedValue_kBool,
 *     needed for the GPU plugin's "preallocate" option, dates from 0.30. Every function acceld calls, including
 *     PJRT_Device_MemoryStats, is older: all are in the 0.33 header and not in the changelog, which starts at
 *     0.29.
 *
 * Only the slots acceld calls are typed; the others are `void *` placeholders that keep their positions.
 * Ownership follows PJRT: every PJRT_Error returned must be destroyed with PJRT_Error_Destroy; every client,
 * loaded executable, executable, buffer and event the plugin hands out must be destroyed by the caller; strings
 * returned by the plugin are borrowed and live as long as the object they came from.
 */
#ifndef ACCELD_PJRT_ABI_H
#define ACCELD_PJRT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PJRT_API_MAJOR 0
/* The minor acceld speaks: its argument structs have met JAX's CUDA plugin at 0.115 (jax-cuda13-pjrt 0.11.2), which
 * ran every kernel with them (tests/gpu/README.md, "Runs"). A newer plugin is used, with a note that says so. */
#define PJRT_API_MINOR 115
/* The header the layouts were read from. */
#define PJRT_HEADER_MINOR 94
/* The oldest minor whose layouts match everything acceld reads, extension chain included. */
#define PJRT_MIN_MINOR 45
/* The minor acceld refuses although it is in range: 0.57's changelog says it rearranged PJRT_Api, so a 0.56 table
 * need not hold the slots where acceld reads them. */
#define PJRT_REFUSED_MINOR 56
/* The newest minor acceld's argument structs have met: PJRT_API_MINOR. */
#define PJRT_NEWEST_CHECKED_MINOR PJRT_API_MINOR

/* The size a caller puts in struct_size: the end of the last field, not sizeof (no tail padding). */
#define PJRT_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

/* ------------------------------------------------------------------------------------------- extensions */

/* Types of the entries on a plugin's extension chain (PJRT_Api.extension_start); values as of 0.94. */
typedef enum {
	PJRT_Extension_Type_Gpu_Custom_Call = 0,
	PJRT_Extension_Type_Profiler,
	PJRT_Extension_Type_Custom_Partitioner,
	PJRT_Extension_Type_Stream,
	PJRT_Extension_Type_Layouts,
	PJRT_Extension_Type_FFI,
	PJRT_Extension_Type_MemoryDescriptions,
	PJRT_Extension_Type_Triton,
	PJRT_Extension_Type_RawBuffer,
	PJRT_Extension_Type_PhaseCompile,
	PJRT_Extension_Type_Example,
	PJRT_Extension_Type_Unknown,
	PJRT_Extension_Type_CrossHostTransfers,
	PJRT_Extension_Type_ExecutableMetadata,
	PJRT_Extension_Type_Callback,
	PJRT_Extension_Type_HostAllocator,
	PJRT_Extension_Type_TpuTopology,
	PJRT_Extension_Type_TpuExecutable,
	PJRT_Extension_Type_Megascale,
	PJRT_Extension_Type_Shardings,
	PJRT_Extension_Type_AbiVersion,
	PJRT_Extension_Type_Collectives,
} PJRT_Extension_Type;

/*
 * The head of every extension: a singly linked list starting at PJRT_Api.extension_start (and at each argument
 * struct's extension_start). The layout {struct_size, type, next} holds from 0.45; before it there was no
 * struct_size, so a chain is walked only for minor >= 45 (pjrt_find_extension below).
 */
typedef struct PJRT_Extension_Base {
	size_t struct_size;
	PJRT_Extension_Type type;
	struct PJRT_Extension_Base *next;
} PJRT_Extension_Base;
#define PJRT_Extension_Base_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Extension_Base, next)

/* ---------------------------------------------------------------------------------------------- version */

typedef struct PJRT_Api_Version {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	int major_version; /* out */
	int minor_version; /* out */
} PJRT_Api_Version;
#define PJRT_Api_Version_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Api_Version, minor_version)

/* ----------------------------------------------------------------------------------------------- errors */

typedef struct PJRT_Error PJRT_Error;

/* absl status codes; OK is never carried by a PJRT_Error (a NULL error means success). */
typedef enum {
	PJRT_Error_Code_OK = 0,
	PJRT_Error_Code_CANCELLED = 1,
	PJRT_Error_Code_UNKNOWN = 2,
	PJRT_Error_Code_INVALID_ARGUMENT = 3,
	PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
	PJRT_Error_Code_NOT_FOUND = 5,
	PJRT_Error_Code_ALREADY_EXISTS = 6,
	PJRT_Error_Code_PERMISSION_DENIED = 7,
	PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
	PJRT_Error_Code_FAILED_PRECONDITION = 9,
	PJRT_Error_Code_ABORTED = 10,
	PJRT_Error_Code_OUT_OF_RANGE = 11,
	PJRT_Error_Code_UNIMPLEMENTED = 12,
	PJRT_Error_Code_INTERNAL = 13,
	PJRT_Error_Code_UNAVAILABLE = 14,
	PJRT_Error_Code_DATA_LOSS = 15,
	PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

typedef struct PJRT_Error_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Error *error;
} PJRT_Error_Destroy_Args;
#define PJRT_Error_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error)
/* Frees error (NULL is allowed). */
typedef void PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args);

typedef struct PJRT_Error_Message_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const PJRT_Error *error;
	const char *message; /* out, lives as long as error; not NUL-terminated by contract */
	size_t message_size; /* out */
} PJRT_Error_Message_Args;
#define PJRT_Error_Message_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size)
typedef void PJRT_Error_Message(PJRT_Error_Message_Args *args);

typedef struct PJRT_Error_GetCode_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const PJRT_Error *error;
	PJRT_Error_Code code; /* out */
} PJRT_Error_GetCode_Args;
#define PJRT_Error_GetCode_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Error_GetCode_Args, code)
typedef PJRT_Error *PJRT_Error_GetCode(PJRT_Error_GetCode_Args *args);

/* ----------------------------------------------------------------------------------------- named values */

typedef enum {
	PJRT_NamedValue_kString = 0,
	PJRT_NamedValue_kInt64,
	PJRT_NamedValue_kInt64List,
	PJRT_NamedValue_kFloat,
	PJRT_NamedValue_kBool, /* since 0.30 */
} PJRT_NamedValue_Type;

/* A name and a typed value: create options, plugin and device attributes. value_size is the number of
 * elements of a list or the length of a string, 1 for a scalar; strings are not NUL-terminated by contract. */
typedef struct PJRT_NamedValue {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const char *name;
	size_t name_size;
	PJRT_NamedValue_Type type;
	union {
		const char *string_value;
		int64_t int64_value;
		const int64_t *int64_array_value;
		float float_value;
		bool bool_value;
	};
	size_t value_size;
} PJRT_NamedValue;
#define PJRT_NamedValue_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_NamedValue, value_size)

/* ----------------------------------------------------------------------------------------------- plugin */

typedef struct PJRT_Plugin_Initialize_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
} PJRT_Plugin_Initialize_Args;
#define PJRT_Plugin_Initialize_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start)
/* Once per process, before any other call. */
typedef PJRT_Error *PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args *args);

typedef struct PJRT_Plugin_Attributes_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const PJRT_NamedValue *attributes; /* out, live for the process */
	size_t num_attributes;             /* out */
} PJRT_Plugin_Attributes_Args;
#define PJRT_Plugin_Attributes_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes)
typedef PJRT_Error *PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args *args);

/* ----------------------------------------------------------------------------------------------- events */

/* Completion of asynchronous work, carrying its status; the caller destroys every event it is given. */
typedef struct PJRT_Event PJRT_Event;

typedef struct PJRT_Event_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Event *event;
} PJRT_Event_Destroy_Args;
#define PJRT_Event_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Event_Destroy_Args, event)
typedef PJRT_Error *PJRT_Event_Destroy(PJRT_Event_Destroy_Args *args);

typedef struct PJRT_Event_IsReady_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Event *event;
	bool is_ready; /* out */
} PJRT_Event_IsReady_Args;
#define PJRT_Event_IsReady_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Event_IsReady_Args, is_ready)
typedef PJRT_Error *PJRT_Event_IsReady(PJRT_Event_IsReady_Args *args);

typedef struct PJRT_Event_Error_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Event *event;
} PJRT_Event_Error_Args;
#define PJRT_Event_Error_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Event_Error_Args, event)
/* Only once the event is ready: its status as a new error to destroy, or NULL. */
typedef PJRT_Error *PJRT_Event_Error(PJRT_Event_Error_Args *args);

typedef struct PJRT_Event_Await_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Event *event;
} PJRT_Event_Await_Args;
#define PJRT_Event_Await_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Event_Await_Args, event)
/* Blocks until the event is ready; returns its status (an error to destroy, or NULL). */
typedef PJRT_Error *PJRT_Event_Await(PJRT_Event_Await_Args *args);

/* Called once the event is ready; it owns error and must destroy it. */
typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error *error, void *user_arg);

typedef struct PJRT_Event_OnReady_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Event *event;
	PJRT_Event_OnReadyCallback callback;
	void *user_arg;
} PJRT_Event_OnReady_Args;
#define PJRT_Event_OnReady_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Event_OnReady_Args, user_arg)
typedef PJRT_Error *PJRT_Event_OnReady(PJRT_Event_OnReady_Args *args);

/* ----------------------------------------------------------------------------------------------- client */

typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_MultiSlice_Config PJRT_MultiSlice_Config;

/* The key-value store callbacks of PJRT_Client_Create are for multi-process clients; acceld passes NULL, so
 * they are declared as plain pointers. */
typedef struct PJRT_Client_Create_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const PJRT_NamedValue *create_options; /* borrowed for the call */
	size_t num_options;
	void *kv_get_callback;
	void *kv_get_user_arg;
	void *kv_put_callback;
	void *kv_put_user_arg;
	PJRT_Client *client; /* out */
	void *kv_try_get_callback; /* since 0.61 */
	void *kv_try_get_user_arg;
} PJRT_Client_Create_Args;
#define PJRT_Client_Create_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg)
typedef PJRT_Error *PJRT_Client_Create(PJRT_Client_Create_Args *args);

typedef struct PJRT_Client_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
} PJRT_Client_Destroy_Args;
#define PJRT_Client_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_Destroy_Args, client)
typedef PJRT_Error *PJRT_Client_Destroy(PJRT_Client_Destroy_Args *args);

typedef struct PJRT_Client_PlatformName_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	const char *platform_name; /* out, lives as long as client: "cuda", "tpu", ... */
	size_t platform_name_size; /* out */
} PJRT_Client_PlatformName_Args;
#define PJRT_Client_PlatformName_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size)
typedef PJRT_Error *PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args *args);

typedef struct PJRT_Client_ProcessIndex_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	int process_index; /* out */
} PJRT_Client_ProcessIndex_Args;
#define PJRT_Client_ProcessIndex_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_ProcessIndex_Args, process_index)
typedef PJRT_Error *PJRT_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args *args);

typedef struct PJRT_Client_PlatformVersion_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	const char *platform_version; /* out, lives as long as client */
	size_t platform_version_size; /* out */
} PJRT_Client_PlatformVersion_Args;
#define PJRT_Client_PlatformVersion_Args_STRUCT_SIZE                                                                \
	PJRT_STRUCT_SIZE(PJRT_Client_PlatformVersion_Args, platform_version_size)
typedef PJRT_Error *PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args *args);

typedef struct PJRT_Client_Devices_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	PJRT_Device *const *devices; /* out, lives as long as client */
	size_t num_devices;          /* out */
} PJRT_Client_Devices_Args;
#define PJRT_Client_Devices_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_Devices_Args, num_devices)
typedef PJRT_Error *PJRT_Client_Devices(PJRT_Client_Devices_Args *args);

typedef struct PJRT_Client_AddressableDevices_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	PJRT_Device *const *addressable_devices; /* out, lives as long as client */
	size_t num_addressable_devices;          /* out */
} PJRT_Client_AddressableDevices_Args;
#define PJRT_Client_AddressableDevices_Args_STRUCT_SIZE                                                             \
	PJRT_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices)
typedef PJRT_Error *PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *args);

/* A program to compile. format "mlir": code is a StableHLO module as MLIR text or bytecode. */
typedef struct PJRT_Program {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	char *code; /* owned by the caller; not modified by PJRT_Client_Compile */
	size_t code_size;
	const char *format; /* "mlir", "hlo", "hlo_with_config" */
	size_t format_size;
} PJRT_Program;
#define PJRT_Program_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Program, format_size)

typedef struct PJRT_Client_Compile_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	const PJRT_Program *program;  /* borrowed for the call */
	const char *compile_options;  /* a serialized xla.CompileOptionsProto (docs/pjrt.md) */
	size_t compile_options_size;
	PJRT_LoadedExecutable *executable; /* out */
} PJRT_Client_Compile_Args;
#define PJRT_Client_Compile_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_Compile_Args, executable)
typedef PJRT_Error *PJRT_Client_Compile(PJRT_Client_Compile_Args *args);

typedef enum {
	PJRT_Buffer_Type_INVALID,
	PJRT_Buffer_Type_PRED,
	PJRT_Buffer_Type_S8,
	PJRT_Buffer_Type_S16,
	PJRT_Buffer_Type_S32,
	PJRT_Buffer_Type_S64,
	PJRT_Buffer_Type_U8,
	PJRT_Buffer_Type_U16,
	PJRT_Buffer_Type_U32,
	PJRT_Buffer_Type_U64,
	PJRT_Buffer_Type_F16,
	PJRT_Buffer_Type_F32, /* 11 */
	PJRT_Buffer_Type_F64,
	PJRT_Buffer_Type_BF16,
	PJRT_Buffer_Type_C64,
	PJRT_Buffer_Type_C128,
	PJRT_Buffer_Type_F8E5M2,
	PJRT_Buffer_Type_F8E4M3FN,
	PJRT_Buffer_Type_F8E4M3B11FNUZ,
	PJRT_Buffer_Type_F8E5M2FNUZ,
	PJRT_Buffer_Type_F8E4M3FNUZ,
	PJRT_Buffer_Type_S4,
	PJRT_Buffer_Type_U4,
	PJRT_Buffer_Type_TOKEN,
	PJRT_Buffer_Type_S2,
	PJRT_Buffer_Type_U2,
	PJRT_Buffer_Type_F8E4M3,
	PJRT_Buffer_Type_F8E3M4,
	PJRT_Buffer_Type_F8E8M0FNU,
	PJRT_Buffer_Type_F4E2M1FN,
	PJRT_Buffer_Type_S1,
	PJRT_Buffer_Type_U1,
} PJRT_Buffer_Type;

typedef enum {
	/* data may be freed or changed as soon as PJRT_Client_BufferFromHostBuffer returns */
	PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
	/* data must stay unchanged until done_with_host_buffer is ready */
	PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
	PJRT_HostBufferSemantics_kImmutableZeroCopy,
	PJRT_HostBufferSemantics_kMutableZeroCopy,
} PJRT_HostBufferSemantics;

/*
 * A buffer's layout. acceld passes one as PJRT_Buffer_ToHostBuffer's host_layout: without it the copy takes the
 * device buffer's own layout (the C API wrapper: host shape = DeviceShapeToHostShape(on-device shape)), which
 * the compiler chooses; acceld reads every output densely in row-major order, so it says so. The wrapper refuses
 * a strides layout and tiles there, so it is a tiled layout of minor_to_major only. As an upload's device_layout
 * acceld passes NULL: the plugin's default on-device layout; the host data's own layout is byte_strides.
 */
typedef struct PJRT_Buffer_MemoryLayout_Tiled {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const int64_t *minor_to_major; /* minor_to_major_size dimensions, the most minor first: {1, 0} is row-major */
	size_t minor_to_major_size;
	const int64_t *tile_dims;      /* acceld: no tiles */
	const size_t *tile_dim_sizes;
	size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;
#define PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Tiled, num_tiles)

typedef struct PJRT_Buffer_MemoryLayout_Strides {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const int64_t *byte_strides;
	size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;
#define PJRT_Buffer_MemoryLayout_Strides_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides)

typedef enum {
	PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
	PJRT_Buffer_MemoryLayout_Type_Strides,
} PJRT_Buffer_MemoryLayout_Type;

typedef struct PJRT_Buffer_MemoryLayout {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	union {
		PJRT_Buffer_MemoryLayout_Tiled tiled;
		PJRT_Buffer_MemoryLayout_Strides strides;
	};
	PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;
#define PJRT_Buffer_MemoryLayout_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout, type)

typedef struct PJRT_Client_BufferFromHostBuffer_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	const void *data;
	PJRT_Buffer_Type type;
	const int64_t *dims; /* num_dims sizes, major to minor; none for a scalar */
	size_t num_dims;
	const int64_t *byte_strides; /* NULL: dense row-major */
	size_t num_byte_strides;
	PJRT_HostBufferSemantics host_buffer_semantics;
	PJRT_Device *device;
	PJRT_Memory *memory;                     /* NULL: the device's default memory */
	PJRT_Buffer_MemoryLayout *device_layout; /* NULL: the plugin's default on-device layout */
	PJRT_Event *done_with_host_buffer;       /* out, destroy it */
	PJRT_Buffer *buffer;                     /* out, destroy it */
} PJRT_Client_BufferFromHostBuffer_Args;
#define PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer)
typedef PJRT_Error *PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *args);

/*
 * Registers host memory with the client's devices for DMA (CUDA: page-locks it), so transfers from and to it skip
 * the plugin's own staging; data, size: a page-aligned range that stays mapped until PJRT_Client_DmaUnmap. Slots
 * 110 and 111 of the table (after the async host-to-device transfer manager's), present when the table is that
 * long and the slot is set: pjrt_api_has().
 */
typedef struct PJRT_Client_DmaMap_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	void *data;
	size_t size;
} PJRT_Client_DmaMap_Args;
#define PJRT_Client_DmaMap_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_DmaMap_Args, size)
typedef PJRT_Error *PJRT_Client_DmaMap(PJRT_Client_DmaMap_Args *args);

typedef struct PJRT_Client_DmaUnmap_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	void *data; /* what PJRT_Client_DmaMap registered */
} PJRT_Client_DmaUnmap_Args;
#define PJRT_Client_DmaUnmap_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Client_DmaUnmap_Args, data)
typedef PJRT_Error *PJRT_Client_DmaUnmap(PJRT_Client_DmaUnmap_Args *args);

/* ---------------------------------------------------------------------------------- device descriptions */

typedef struct PJRT_DeviceDescription_Id_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	int id; /* out: global id, the one a DeviceAssignmentProto names */
} PJRT_DeviceDescription_Id_Args;
#define PJRT_DeviceDescription_Id_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Id_Args, id)
typedef PJRT_Error *PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args *args);

typedef struct PJRT_DeviceDescription_ProcessIndex_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	int process_index; /* out */
} PJRT_DeviceDescription_ProcessIndex_Args;
#define PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE                                                        \
	PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ProcessIndex_Args, process_index)
typedef PJRT_Error *PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args *args);

/* Note the order: the count comes before the array here, unlike PJRT_Plugin_Attributes_Args. */
typedef struct PJRT_DeviceDescription_Attributes_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	size_t num_attributes;             /* out */
	const PJRT_NamedValue *attributes; /* out, lives as long as the device */
} PJRT_DeviceDescription_Attributes_Args;
#define PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE                                                          \
	PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Attributes_Args, attributes)
typedef PJRT_Error *PJRT_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args *args);

typedef struct PJRT_DeviceDescription_Kind_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	const char *device_kind; /* out, e.g. "NVIDIA H100 80GB HBM3", "TPU v5 lite" */
	size_t device_kind_size; /* out */
} PJRT_DeviceDescription_Kind_Args;
#define PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Kind_Args, device_kind_size)
typedef PJRT_Error *PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args *args);

typedef struct PJRT_DeviceDescription_DebugString_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	const char *debug_string; /* out */
	size_t debug_string_size; /* out */
} PJRT_DeviceDescription_DebugString_Args;
#define PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE                                                         \
	PJRT_STRUCT_SIZE(PJRT_DeviceDescription_DebugString_Args, debug_string_size)
typedef PJRT_Error *PJRT_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args *args);

typedef struct PJRT_DeviceDescription_ToString_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_DeviceDescription *device_description;
	const char *to_string; /* out */
	size_t to_string_size; /* out */
} PJRT_DeviceDescription_ToString_Args;
#define PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE                                                            \
	PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ToString_Args, to_string_size)
typedef PJRT_Error *PJRT_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args *args);

/* ---------------------------------------------------------------------------------------------- devices */

typedef struct PJRT_Device_GetDescription_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	PJRT_DeviceDescription *device_description; /* out, lives as long as the device */
} PJRT_Device_GetDescription_Args;
#define PJRT_Device_GetDescription_Args_STRUCT_SIZE                                                                 \
	PJRT_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description)
typedef PJRT_Error *PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args *args);

typedef struct PJRT_Device_IsAddressable_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	bool is_addressable; /* out */
} PJRT_Device_IsAddressable_Args;
#define PJRT_Device_IsAddressable_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Device_IsAddressable_Args, is_addressable)
typedef PJRT_Error *PJRT_Device_IsAddressable(PJRT_Device_IsAddressable_Args *args);

typedef struct PJRT_Device_LocalHardwareId_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	int local_hardware_id; /* out: e.g. the CUDA ordinal; -1 when undefined */
} PJRT_Device_LocalHardwareId_Args;
#define PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE                                                                \
	PJRT_STRUCT_SIZE(PJRT_Device_LocalHardwareId_Args, local_hardware_id)
typedef PJRT_Error *PJRT_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args *args);

/* Allocator statistics. Only bytes_in_use is always set; each other value counts only when its *_is_set is
 * true. A plugin may answer PJRT_Error_Code_UNIMPLEMENTED instead. */
typedef struct PJRT_Device_MemoryStats_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	int64_t bytes_in_use; /* out */
	int64_t peak_bytes_in_use;
	bool peak_bytes_in_use_is_set;
	int64_t num_allocs;
	bool num_allocs_is_set;
	int64_t largest_alloc_size;
	bool largest_alloc_size_is_set;
	int64_t bytes_limit; /* the most the allocator lets callers hold */
	bool bytes_limit_is_set;
	int64_t bytes_reserved;
	bool bytes_reserved_is_set;
	int64_t peak_bytes_reserved;
	bool peak_bytes_reserved_is_set;
	int64_t bytes_reservable_limit;
	bool bytes_reservable_limit_is_set;
	int64_t largest_free_block_bytes;
	bool largest_free_block_bytes_is_set;
	int64_t pool_bytes;
	bool pool_bytes_is_set;
	int64_t peak_pool_bytes;
	bool peak_pool_bytes_is_set;
	int64_t peak_allocated_bytes; /* 0.113 */
	bool peak_allocated_bytes_is_set;
} PJRT_Device_MemoryStats_Args;
/* 201 since 0.113 (185 before). JAX's CUDA plugin at 0.115 answers both (seen: tests/pjrt_conformance.md,
 * memory-stats); a plugin before 0.113 reads its own 185-byte prefix of the larger one. */
#define PJRT_Device_MemoryStats_Args_STRUCT_SIZE                                                                    \
	PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_allocated_bytes_is_set)
typedef PJRT_Error *PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args *args);

/* A device's memories (memory spaces): acceld does not call these; the stand-in answers them as the GPU plugin does. */
typedef struct PJRT_Device_AddressableMemories_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	PJRT_Memory *const *memories; /* out, lives as long as device */
	size_t num_memories;          /* out */
} PJRT_Device_AddressableMemories_Args;
#define PJRT_Device_AddressableMemories_Args_STRUCT_SIZE                                                            \
	PJRT_STRUCT_SIZE(PJRT_Device_AddressableMemories_Args, num_memories)
typedef PJRT_Error *PJRT_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args *args);

typedef struct PJRT_Device_DefaultMemory_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Device *device;
	PJRT_Memory *memory; /* out */
} PJRT_Device_DefaultMemory_Args;
#define PJRT_Device_DefaultMemory_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Device_DefaultMemory_Args, memory)
typedef PJRT_Error *PJRT_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args *args);

typedef struct PJRT_Memory_Id_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Memory *memory;
	int id; /* out */
} PJRT_Memory_Id_Args;
#define PJRT_Memory_Id_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Memory_Id_Args, id)
typedef PJRT_Error *PJRT_Memory_Id(PJRT_Memory_Id_Args *args);

/* "device", "pinned_host", ...: not NUL-terminated, lives as long as memory */
typedef struct PJRT_Memory_Kind_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Memory *memory;
	const char *kind; /* out */
	size_t kind_size; /* out */
} PJRT_Memory_Kind_Args;
#define PJRT_Memory_Kind_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Memory_Kind_Args, kind_size)
typedef PJRT_Error *PJRT_Memory_Kind(PJRT_Memory_Kind_Args *args);

/* ------------------------------------------------------------------------------------------ executables */

typedef struct PJRT_Executable_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Executable *executable;
} PJRT_Executable_Destroy_Args;
#define PJRT_Executable_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable)
typedef PJRT_Error *PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args *args);

typedef struct PJRT_Executable_NumOutputs_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Executable *executable;
	size_t num_outputs; /* out, per device */
} PJRT_Executable_NumOutputs_Args;
#define PJRT_Executable_NumOutputs_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs)
typedef PJRT_Error *PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args *args);

typedef struct PJRT_LoadedExecutable_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_LoadedExecutable *executable;
} PJRT_LoadedExecutable_Destroy_Args;
#define PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable)
typedef PJRT_Error *PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *args);

/* The executable behind a loaded one, for PJRT_Executable_NumOutputs; destroy it with PJRT_Executable_Destroy. */
typedef struct PJRT_LoadedExecutable_GetExecutable_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_LoadedExecutable *loaded_executable;
	PJRT_Executable *executable; /* out */
} PJRT_LoadedExecutable_GetExecutable_Args;
#define PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE                                                        \
	PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable)
typedef PJRT_Error *PJRT_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args *args);

/* A serialized executable, owned by the plugin until its deleter is called. */
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;

/* The plugin's own serialization of an executable (for the compile cache, pjrt_cache.c): serialized_bytes live
 * until serialized_executable_deleter(serialized_executable) is called, once. */
typedef struct PJRT_Executable_Serialize_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	const PJRT_Executable *executable;
	const char *serialized_bytes;                     /* out */
	size_t serialized_bytes_size;                     /* out */
	PJRT_SerializedExecutable *serialized_executable; /* out, backs serialized_bytes */
	void (*serialized_executable_deleter)(PJRT_SerializedExecutable *exec); /* out */
} PJRT_Executable_Serialize_Args;
#define PJRT_Executable_Serialize_Args_STRUCT_SIZE                                                                  \
	PJRT_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter)
typedef PJRT_Error *PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args *args);

/* Loads what PJRT_Executable_Serialize wrote, which must come from the same platform and plugin version. The two
 * overridden_* fields came in 0.71; NULL keeps the options the executable was compiled with. */
typedef struct PJRT_Executable_DeserializeAndLoad_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Client *client;
	const char *serialized_executable;
	size_t serialized_executable_size;
	PJRT_LoadedExecutable *loaded_executable; /* out, destroy it */
	const char *overridden_serialized_compile_options;
	size_t overridden_serialized_compile_options_size;
} PJRT_Executable_DeserializeAndLoad_Args;
#define PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE                                                         \
	PJRT_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size)
typedef PJRT_Error *PJRT_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args *args);

/* Per-execution options; acceld zeroes them all and sets struct_size. The last four fields came after 0.94. */
typedef struct PJRT_ExecuteOptions {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	void **send_callbacks; /* PJRT_SendCallbackInfo **, unused */
	void **recv_callbacks; /* PJRT_RecvCallbackInfo **, unused */
	size_t num_send_ops;
	size_t num_recv_ops;
	int launch_id;
	const int64_t *non_donatable_input_indices;
	size_t num_non_donatable_input_indices;
	PJRT_ExecuteContext *context;
	const char *call_location;
	size_t num_tasks;
	int *task_ids;
	int64_t *incarnation_ids; /* the last field in 0.94 */
	PJRT_MultiSlice_Config *multi_slice_config; /* 0.97 */
	bool use_major_to_minor_data_layout_for_callbacks;
	void *hlo_output_callbacks;
	size_t num_hlo_output_callbacks;
} PJRT_ExecuteOptions;
#define PJRT_ExecuteOptions_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, num_hlo_output_callbacks)

/*
 * The PJRT_ExecuteOptions struct_size acceld sends to a plugin of this minor: the struct as that version defines it
 * where acceld knows (0.94 ends at incarnation_ids, 0.97 adds multi_slice_config), else the whole struct acceld
 * knows. A plugin reads only its own prefix of a larger struct, and refuses a smaller one.
 */
static inline size_t pjrt_execute_options_size(int minor)
{
	if (minor < 97)
		return PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, incarnation_ids);
	return PJRT_ExecuteOptions_STRUCT_SIZE;
}

typedef struct PJRT_LoadedExecutable_Execute_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_LoadedExecutable *executable;
	PJRT_ExecuteOptions *options;
	PJRT_Buffer *const *const *argument_lists; /* [num_devices][num_args] */
	size_t num_devices;
	size_t num_args;
	/* [num_devices][num_outputs], both levels allocated by the caller; the plugin fills in buffers the caller
	 * destroys */
	PJRT_Buffer **const *output_lists;
	/* NULL, or num_devices slots the plugin fills with events the caller destroys (not filled on error) */
	PJRT_Event **device_complete_events;
	PJRT_Device *execute_device; /* NULL: the device(s) chosen at compile time */
} PJRT_LoadedExecutable_Execute_Args;
#define PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device)
typedef PJRT_Error *PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *args);

/* ---------------------------------------------------------------------------------------------- buffers */

typedef struct PJRT_Buffer_Destroy_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *buffer;
} PJRT_Buffer_Destroy_Args;
#define PJRT_Buffer_Destroy_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer)
typedef PJRT_Error *PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args *args);

typedef struct PJRT_Buffer_ElementType_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *buffer;
	PJRT_Buffer_Type type; /* out */
} PJRT_Buffer_ElementType_Args;
#define PJRT_Buffer_ElementType_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type)
typedef PJRT_Error *PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args *args);

typedef struct PJRT_Buffer_Dimensions_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *buffer;
	const int64_t *dims; /* out, lives as long as buffer */
	size_t num_dims;     /* out */
} PJRT_Buffer_Dimensions_Args;
#define PJRT_Buffer_Dimensions_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims)
typedef PJRT_Error *PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args *args);

typedef struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *buffer;
	size_t on_device_size_in_bytes; /* out */
} PJRT_Buffer_OnDeviceSizeInBytes_Args;
#define PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE                                                            \
	PJRT_STRUCT_SIZE(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes)
typedef PJRT_Error *PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args *args);

/* Copies the buffer into dst in host_layout (NULL: the device buffer's own layout); dst holds the data only once
 * event is ready. With dst NULL it only sets dst_size to the size needed. */
typedef struct PJRT_Buffer_ToHostBuffer_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *src;
	PJRT_Buffer_MemoryLayout *host_layout; /* NULL: src's layout */
	void *dst;                             /* in/out */
	size_t dst_size;                       /* in/out */
	PJRT_Event *event;                     /* out, destroy it */
} PJRT_Buffer_ToHostBuffer_Args;
#define PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event)
typedef PJRT_Error *PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *args);

typedef struct PJRT_Buffer_ReadyEvent_Args {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Buffer *buffer;
	PJRT_Event *event; /* out, destroy it */
} PJRT_Buffer_ReadyEvent_Args;
#define PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE PJRT_STRUCT_SIZE(PJRT_Buffer_ReadyEvent_Args, event)
typedef PJRT_Error *PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args *args);

/* ---------------------------------------------------------------------------------------------- the API */

/*
 * The table GetPjrtApi returns, in the real order, up to PJRT_Buffer_ReadyEvent, the last slot acceld calls.
 * A plugin's table goes on past it (to PJRT_Device_GetAttributes in 0.94); acceld never reads beyond.
 */
typedef struct PJRT_Api {
	size_t struct_size;
	PJRT_Extension_Base *extension_start;
	PJRT_Api_Version pjrt_api_version;

	PJRT_Error_Destroy *PJRT_Error_Destroy;
	PJRT_Error_Message *PJRT_Error_Message;
	PJRT_Error_GetCode *PJRT_Error_GetCode;

	PJRT_Plugin_Initialize *PJRT_Plugin_Initialize;
	PJRT_Plugin_Attributes *PJRT_Plugin_Attributes;

	PJRT_Event_Destroy *PJRT_Event_Destroy;
	PJRT_Event_IsReady *PJRT_Event_IsReady;
	PJRT_Event_Error *PJRT_Event_Error;
	PJRT_Event_Await *PJRT_Event_Await;
	PJRT_Event_OnReady *PJRT_Event_OnReady;

	PJRT_Client_Create *PJRT_Client_Create;
	PJRT_Client_Destroy *PJRT_Client_Destroy;
	PJRT_Client_PlatformName *PJRT_Client_PlatformName;
	PJRT_Client_ProcessIndex *PJRT_Client_ProcessIndex;
	PJRT_Client_PlatformVersion *PJRT_Client_PlatformVersion;
	PJRT_Client_Devices *PJRT_Client_Devices;
	PJRT_Client_AddressableDevices *PJRT_Client_AddressableDevices;
	void *PJRT_Client_LookupDevice;
	void *PJRT_Client_LookupAddressableDevice;
	void *PJRT_Client_AddressableMemories;
	PJRT_Client_Compile *PJRT_Client_Compile;
	void *PJRT_Client_DefaultDeviceAssignment;
	PJRT_Client_BufferFromHostBuffer *PJRT_Client_BufferFromHostBuffer;

	PJRT_DeviceDescription_Id *PJRT_DeviceDescription_Id;
	PJRT_DeviceDescription_ProcessIndex *PJRT_DeviceDescription_ProcessIndex;
	PJRT_DeviceDescription_Attributes *PJRT_DeviceDescription_Attributes;
	PJRT_DeviceDescription_Kind *PJRT_DeviceDescription_Kind;
	PJRT_DeviceDescription_DebugString *PJRT_DeviceDescription_DebugString;
	PJRT_DeviceDescription_ToString *PJRT_DeviceDescription_ToString;

	PJRT_Device_GetDescription *PJRT_Device_GetDescription;
	PJRT_Device_IsAddressable *PJRT_Device_IsAddressable;
	PJRT_Device_LocalHardwareId *PJRT_Device_LocalHardwareId;
	PJRT_Device_AddressableMemories *PJRT_Device_AddressableMemories;
	PJRT_Device_DefaultMemory *PJRT_Device_DefaultMemory;
	PJRT_Device_MemoryStats *PJRT_Device_MemoryStats;

	PJRT_Memory_Id *PJRT_Memory_Id;
	PJRT_Memory_Kind *PJRT_Memory_Kind;
	void *PJRT_Memory_DebugString;
	void *PJRT_Memory_ToString;
	void *PJRT_Memory_AddressableByDevices;

	PJRT_Executable_Destroy *PJRT_Executable_Destroy;
	void *PJRT_Executable_Name;
	void *PJRT_Executable_NumReplicas;
	void *PJRT_Executable_NumPartitions;
	PJRT_Executable_NumOutputs *PJRT_Executable_NumOutputs;
	void *PJRT_Executable_SizeOfGeneratedCodeInBytes;
	void *PJRT_Executable_GetCostAnalysis;
	void *PJRT_Executable_OutputMemoryKinds;
	void *PJRT_Executable_OptimizedProgram;
	PJRT_Executable_Serialize *PJRT_Executable_Serialize;

	PJRT_LoadedExecutable_Destroy *PJRT_LoadedExecutable_Destroy;
	PJRT_LoadedExecutable_GetExecutable *PJRT_LoadedExecutable_GetExecutable;
	void *PJRT_LoadedExecutable_AddressableDevices;
	void *PJRT_LoadedExecutable_Delete;
	void *PJRT_LoadedExecutable_IsDeleted;
	PJRT_LoadedExecutable_Execute *PJRT_LoadedExecutable_Execute;
	PJRT_Executable_DeserializeAndLoad *PJRT_Executable_DeserializeAndLoad;
	void *PJRT_LoadedExecutable_Fingerprint;

	PJRT_Buffer_Destroy *PJRT_Buffer_Destroy;
	PJRT_Buffer_ElementType *PJRT_Buffer_ElementType;
	PJRT_Buffer_Dimensions *PJRT_Buffer_Dimensions;
	void *PJRT_Buffer_UnpaddedDimensions;
	void *PJRT_Buffer_DynamicDimensionIndices;
	void *PJRT_Buffer_GetMemoryLayout;
	PJRT_Buffer_OnDeviceSizeInBytes *PJRT_Buffer_OnDeviceSizeInBytes;
	void *PJRT_Buffer_Device;
	void *PJRT_Buffer_Memory;
	void *PJRT_Buffer_Delete;
	void *PJRT_Buffer_IsDeleted;
	void *PJRT_Buffer_CopyToDevice;
	PJRT_Buffer_ToHostBuffer *PJRT_Buffer_ToHostBuffer;
	void *PJRT_Buffer_IsOnCpu;
	PJRT_Buffer_ReadyEvent *PJRT_Buffer_ReadyEvent;

	/* slots 73 to 109 (unsafe pointers, copy streams, topologies, PJRT_Compile, ... the async host-to-device
	 * transfer manager): not called */
	void *unused_73_109[37];
	PJRT_Client_DmaMap *PJRT_Client_DmaMap;
	PJRT_Client_DmaUnmap *PJRT_Client_DmaUnmap;
} PJRT_Api;

/* The entry point a plugin exports. */
typedef const PJRT_Api *PJRT_GetPjrtApi_Fn(void);

#if UINTPTR_MAX == UINT64_MAX && SIZE_MAX == UINT64_MAX
/* Offsets on LP64 (x86_64, aarch64), worked out by hand from the real header: 40 bytes of head, then one
 * pointer per slot in order. A slip in the slot list above breaks the build here instead of a plugin call. */
_Static_assert(offsetof(PJRT_Api, PJRT_Error_Destroy) == 40, "PJRT_Api head");
_Static_assert(offsetof(PJRT_Api, PJRT_Client_Create) == 40 + 10 * 8, "PJRT_Api slot 10");
_Static_assert(offsetof(PJRT_Api, PJRT_Client_Compile) == 40 + 20 * 8, "PJRT_Api slot 20");
_Static_assert(offsetof(PJRT_Api, PJRT_Client_BufferFromHostBuffer) == 40 + 22 * 8, "PJRT_Api slot 22");
_Static_assert(offsetof(PJRT_Api, PJRT_Device_MemoryStats) == 40 + 34 * 8, "PJRT_Api slot 34");
_Static_assert(offsetof(PJRT_Api, PJRT_Executable_NumOutputs) == 40 + 44 * 8, "PJRT_Api slot 44");
_Static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_Execute) == 40 + 55 * 8, "PJRT_Api slot 55");
_Static_assert(offsetof(PJRT_Api, PJRT_Buffer_ToHostBuffer) == 40 + 70 * 8, "PJRT_Api slot 70");
_Static_assert(offsetof(PJRT_Api, PJRT_Buffer_ReadyEvent) == 40 + 72 * 8, "PJRT_Api slot 72");
_Static_assert(offsetof(PJRT_Api, PJRT_Client_DmaMap) == 40 + 110 * 8, "PJRT_Api slot 110");
_Static_assert(sizeof(PJRT_Api) == 40 + 112 * 8, "PJRT_Api ends at PJRT_Client_DmaUnmap, slot 111");
_Static_assert(PJRT_Client_DmaMap_Args_STRUCT_SIZE == 40, "PJRT_Client_DmaMap_Args");
_Static_assert(PJRT_Client_DmaUnmap_Args_STRUCT_SIZE == 32, "PJRT_Client_DmaUnmap_Args");
_Static_assert(PJRT_NamedValue_STRUCT_SIZE == 56, "PJRT_NamedValue");
_Static_assert(PJRT_Client_Create_Args_STRUCT_SIZE == 88, "PJRT_Client_Create_Args");
_Static_assert(PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE == 120, "PJRT_Client_BufferFromHostBuffer_Args");
_Static_assert(PJRT_Device_MemoryStats_Args_STRUCT_SIZE == 201, "PJRT_Device_MemoryStats_Args as of 0.113");
_Static_assert(offsetof(PJRT_Device_MemoryStats_Args, peak_allocated_bytes) == 185 + 7, "0.113's new field");
_Static_assert(offsetof(PJRT_ExecuteOptions, incarnation_ids) == 104, "PJRT_ExecuteOptions as of 0.94");
_Static_assert(PJRT_ExecuteOptions_STRUCT_SIZE == 144, "PJRT_ExecuteOptions");
_Static_assert(PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE == 80, "PJRT_LoadedExecutable_Execute_Args");
_Static_assert(PJRT_Plugin_Attributes_Args_STRUCT_SIZE == 32, "PJRT_Plugin_Attributes_Args");
_Static_assert(PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE == 56, "PJRT_Buffer_MemoryLayout_Tiled");
_Static_assert(PJRT_Buffer_MemoryLayout_STRUCT_SIZE == 76, "PJRT_Buffer_MemoryLayout");
_Static_assert(offsetof(PJRT_Api, PJRT_Executable_Serialize) == 40 + 49 * 8, "PJRT_Api slot 49");
_Static_assert(offsetof(PJRT_Api, PJRT_Executable_DeserializeAndLoad) == 40 + 56 * 8, "PJRT_Api slot 56");
_Static_assert(PJRT_Executable_Serialize_Args_STRUCT_SIZE == 56, "PJRT_Executable_Serialize_Args");
_Static_assert(PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE == 64, "PJRT_Executable_DeserializeAndLoad_Args");
#endif

/* True when the plugin's table is long enough to hold slot `field` and the slot is filled. */
#define pjrt_api_has(api, field)                                                                                   \
	((api)->struct_size >= offsetof(PJRT_Api, field) + sizeof(void *) && (api)->field != NULL)

/*
 * The named entry of an array of PJRT_NamedValue a plugin returned (device or plugin attributes), or NULL. The array
 * is of the plugin's own struct, so it is stepped by the first entry's struct_size (rounded up to the struct's
 * alignment, as the plugin's compiler laid it out), not by acceld's: a newer plugin's entries may be larger. An
 * entry smaller than acceld's struct (it lacks fields acceld reads) or of another size than the first ends the
 * walk: the rest cannot be found safely.
 */
static inline const PJRT_NamedValue *pjrt_attribute(const PJRT_NamedValue *v, size_t n, const char *name)
{
	const size_t align = _Alignof(PJRT_NamedValue);
	size_t step, len = 0;

	while (name[len] != '\0')
		len++;
	if (v == NULL || n == 0 || v[0].struct_size < PJRT_NamedValue_STRUCT_SIZE || v[0].struct_size > 4096)
		return NULL;
	step = (v[0].struct_size + align - 1) / align * align;
	for (size_t i = 0; i < n; i++) {
		const PJRT_NamedValue *e = (const PJRT_NamedValue *)(const void *)((const char *)v + i * step);
		size_t k = 0;

		if (e->struct_size != v[0].struct_size)
			return NULL;
		if (e->name_size != len || e->name == NULL)
			continue;
		while (k < len && e->name[k] == name[k])
			k++;
		if (k == len)
			return e;
	}
	return NULL;
}

/* True when the plugin speaks major PJRT_API_MAJOR at a minor of at least PJRT_MIN_MINOR. */
static inline bool pjrt_api_version_ok(const PJRT_Api *api)
{
	const size_t need = offsetof(PJRT_Api, pjrt_api_version) + PJRT_Api_Version_STRUCT_SIZE;

	return api != NULL && api->struct_size >= need && api->pjrt_api_version.major_version == PJRT_API_MAJOR &&
	       api->pjrt_api_version.minor_version >= PJRT_MIN_MINOR;
}

/*
 * The first extension of the given type on the plugin's chain whose struct_size covers min_size bytes, or NULL.
 * Walks only plugins at minor >= 45 (before that the chain had another layout) and at most 64 links, so a
 * looping chain cannot hang the caller.
 */
static inline const PJRT_Extension_Base *pjrt_find_extension(const PJRT_Api *api, PJRT_Extension_Type type,
							     size_t min_size)
{
	const PJRT_Extension_Base *ext;
	int hops = 0;

	if (!pjrt_api_version_ok(api))
		return NULL;
	for (ext = api->extension_start; ext != NULL && hops < 64; ext = ext->next, hops++)
		if (ext->type == type && ext->struct_size >= min_size)
			return ext;
	return NULL;
}

#endif
