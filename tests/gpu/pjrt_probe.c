/*
 * pjrt_probe: prints what a real PJRT plugin says about itself, for comparing with the stand-in
 * (tests/fakes/pjrt.c) and its conformance table: the API version and table size, the extension chain, the plugin
 * attributes, and for clients created with several option sets, every device with its id, kind, local hardware id,
 * description attributes and memory statistics (asked with 0.112's 185-byte struct_size and with 0.113's 201 bytes,
 * which appends peak_allocated_bytes).
 *
 *   pjrt_probe PLUGIN.so [FIRST]
 *
 * FIRST (an ordinal) makes the process's first client ask for visible_devices=[FIRST] and stops there: what the
 * plugin does with a set of its own (the CUDA plugin keeps the first client's GPUs for the process).
 * Built by tests/gpu/bundle.sh from src/exec/backend/pjrt_abi.h; output is plain text, one fact per line. The raw
 * output of every run goes under tests/gpu/runs/ (its README), so that each "seen" has its evidence.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/pjrt_abi.h"

static const PJRT_Api *api;

/* Prints and frees err; true when there was none. */
static int ok(PJRT_Error *err, const char *what)
{
	PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = err};
	PJRT_Error_GetCode_Args c = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = err};
	PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = err};

	if (err == NULL)
		return 1;
	api->PJRT_Error_Message(&m);
	api->PJRT_Error_GetCode(&c);
	printf("%s: error code %d: %.*s\n", what, (int)c.code, (int)m.message_size, m.message);
	api->PJRT_Error_Destroy(&d);
	return 0;
}

static void print_value(const char *prefix, const PJRT_NamedValue *v)
{
	printf("%s %.*s (type %d, size %zu) = ", prefix, (int)v->name_size, v->name, (int)v->type, v->value_size);
	switch (v->type) {
	case PJRT_NamedValue_kString:
		printf("'%.*s'", (int)v->value_size, v->string_value);
		break;
	case PJRT_NamedValue_kInt64:
		printf("%lld", (long long)v->int64_value);
		break;
	case PJRT_NamedValue_kInt64List:
		for (size_t i = 0; i < v->value_size; i++)
			printf("%s%lld", i ? "," : "[", (long long)v->int64_array_value[i]);
		printf("]");
		break;
	case PJRT_NamedValue_kFloat:
		printf("%g", (double)v->float_value);
		break;
	case PJRT_NamedValue_kBool:
		printf("%s", v->bool_value ? "true" : "false");
		break;
	default:
		printf("?");
	}
	printf("\n");
}

/*
 * PJRT_Device_MemoryStats asked with `size` in struct_size: 185 bytes (0.112 and before: up to
 * peak_pool_bytes_is_set) or 201 (0.113: peak_allocated_bytes and its flag appended). pjrt_abi.h declares the 201-byte
 * struct, so both calls send the same struct and only struct_size differs; peak_allocated_bytes sits at offset 192.
 */
static void memory_stats(PJRT_Device *dev, size_t size, const char *label)
{
	PJRT_Device_MemoryStats_Args s;

	memset(&s, 0, sizeof(s));
	s.struct_size = size;
	s.device = dev;
	if (!ok(api->PJRT_Device_MemoryStats(&s), label))
		return;
	printf("%s: in_use %lld limit %lld (set %d) reserved %lld (set %d) peak %lld (set %d) peak_allocated %lld "
	       "(set %d)\n",
	       label, (long long)s.bytes_in_use, (long long)s.bytes_limit, s.bytes_limit_is_set,
	       (long long)s.bytes_reserved, s.bytes_reserved_is_set, (long long)s.peak_bytes_in_use,
	       s.peak_bytes_in_use_is_set, (long long)s.peak_allocated_bytes, s.peak_allocated_bytes_is_set);
}

/* The device's memory spaces (PJRT_Device_AddressableMemories) and which is its default. */
static void memory_kinds(PJRT_Device *dev)
{
	PJRT_Device_AddressableMemories_Args am = {.struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE,
						   .device = dev};
	PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE, .device = dev};

	if (!ok(api->PJRT_Device_AddressableMemories(&am), "AddressableMemories"))
		return;
	if (!ok(api->PJRT_Device_DefaultMemory(&dm), "DefaultMemory"))
		dm.memory = NULL;
	printf("memories %zu\n", am.num_memories);
	for (size_t i = 0; i < am.num_memories; i++) {
		PJRT_Memory_Kind_Args k = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE, .memory = am.memories[i]};
		PJRT_Memory_Id_Args id = {.struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE, .memory = am.memories[i]};

		if (ok(api->PJRT_Memory_Kind(&k), "Memory_Kind") && ok(api->PJRT_Memory_Id(&id), "Memory_Id"))
			printf("memory %zu id %d kind '%.*s'%s\n", i, id.id, (int)k.kind_size, k.kind,
			       am.memories[i] == dm.memory ? " (default)" : "");
	}
}

static void client(const PJRT_NamedValue *opts, size_t nopts, const char *label)
{
	PJRT_Client_Create_Args c = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE, .create_options = opts,
				     .num_options = nopts};
	PJRT_Client_PlatformName_Args pn = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE};
	PJRT_Client_PlatformVersion_Args pv = {.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE};
	PJRT_Client_Devices_Args all = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE};
	PJRT_Client_AddressableDevices_Args ad = {.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE};
	PJRT_Client_Destroy_Args cd = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE};

	printf("== client %s\n", label);
	if (!ok(api->PJRT_Client_Create(&c), "PJRT_Client_Create"))
		return;
	pn.client = pv.client = all.client = ad.client = cd.client = c.client;
	if (ok(api->PJRT_Client_PlatformName(&pn), "PlatformName"))
		printf("platform_name '%.*s'\n", (int)pn.platform_name_size, pn.platform_name);
	if (ok(api->PJRT_Client_PlatformVersion(&pv), "PlatformVersion"))
		printf("platform_version '%.*s'\n", (int)pv.platform_version_size, pv.platform_version);
	if (ok(api->PJRT_Client_Devices(&all), "Devices"))
		printf("devices %zu\n", all.num_devices);
	if (ok(api->PJRT_Client_AddressableDevices(&ad), "AddressableDevices")) {
		printf("addressable_devices %zu\n", ad.num_addressable_devices);
		for (size_t i = 0; i < ad.num_addressable_devices; i++) {
			PJRT_Device *dev = ad.addressable_devices[i];
			PJRT_Device_GetDescription_Args gd = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE,
							      .device = dev};
			PJRT_Device_LocalHardwareId_Args hw = {
				.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE, .device = dev};

			if (!ok(api->PJRT_Device_GetDescription(&gd), "GetDescription"))
				continue;
			PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
							     .device_description = gd.device_description};
			PJRT_DeviceDescription_Kind_Args kd = {
				.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE,
				.device_description = gd.device_description};
			PJRT_DeviceDescription_Attributes_Args at = {
				.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE,
				.device_description = gd.device_description};
			PJRT_DeviceDescription_ToString_Args ts = {
				.struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE,
				.device_description = gd.device_description};
			PJRT_DeviceDescription_DebugString_Args ds = {
				.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE,
				.device_description = gd.device_description};

			printf("-- device %zu\n", i);
			if (ok(api->PJRT_DeviceDescription_Id(&id), "Id"))
				printf("id %d\n", id.id);
			if (ok(api->PJRT_DeviceDescription_Kind(&kd), "Kind"))
				printf("kind '%.*s'\n", (int)kd.device_kind_size, kd.device_kind);
			if (ok(api->PJRT_Device_LocalHardwareId(&hw), "LocalHardwareId"))
				printf("local_hardware_id %d\n", hw.local_hardware_id);
			if (ok(api->PJRT_DeviceDescription_ToString(&ts), "ToString"))
				printf("to_string '%.*s'\n", (int)ts.to_string_size, ts.to_string);
			if (ok(api->PJRT_DeviceDescription_DebugString(&ds), "DebugString"))
				printf("debug_string '%.*s'\n", (int)ds.debug_string_size, ds.debug_string);
			if (ok(api->PJRT_DeviceDescription_Attributes(&at), "Attributes")) {
				printf("attributes %zu\n", at.num_attributes);
				/* the plugin's entries, stepped by their own size (pjrt_attribute's rule) */
				size_t step = at.num_attributes > 0 ? (at.attributes[0].struct_size + 7) / 8 * 8 : 0;

				if (at.num_attributes > 0)
					printf("attribute struct_size %zu\n", at.attributes[0].struct_size);
				for (size_t k = 0; k < at.num_attributes && step >= PJRT_NamedValue_STRUCT_SIZE; k++)
					print_value("attribute", (const PJRT_NamedValue *)(const void *)(
									 (const char *)at.attributes + k * step));
			}
			memory_stats(dev, PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set),
				     "MemoryStats(size 185)");
			memory_stats(dev, PJRT_Device_MemoryStats_Args_STRUCT_SIZE, "MemoryStats(size 201)");
			memory_kinds(dev);
		}
	}
	ok(api->PJRT_Client_Destroy(&cd), "Client_Destroy");
}

static PJRT_NamedValue named(const char *name, PJRT_NamedValue_Type type)
{
	return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name, .name_size = strlen(name),
				 .type = type, .value_size = 1};
}

int main(int argc, char **argv)
{
	void *h;
	PJRT_GetPjrtApi_Fn *get;
	PJRT_Plugin_Initialize_Args init = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
	PJRT_Plugin_Attributes_Args pa = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
	static const int64_t zero[] = {0}, zero_one[] = {0, 1}, nine[] = {9};

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: pjrt_probe PLUGIN.so [FIRST]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	get = (PJRT_GetPjrtApi_Fn *)dlsym(h, "GetPjrtApi");
	if (get == NULL || (api = get()) == NULL) {
		printf("GetPjrtApi: missing\n");
		return 1;
	}
	printf("api struct_size %zu (slots %zu), version %d.%d\n", api->struct_size,
	       (api->struct_size - offsetof(PJRT_Api, PJRT_Error_Destroy)) / sizeof(void *),
	       api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version);
	for (const PJRT_Extension_Base *e = api->extension_start; e != NULL; e = e->next)
		printf("extension type %d struct_size %zu\n", (int)e->type, e->struct_size);
	if (!ok(api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize"))
		return 1;
	if (ok(api->PJRT_Plugin_Attributes(&pa), "PJRT_Plugin_Attributes"))
		for (size_t i = 0; i < pa.num_attributes; i++)
			print_value("plugin attribute", &pa.attributes[i]);

	PJRT_NamedValue prealloc = named("preallocate", PJRT_NamedValue_kBool);
	prealloc.bool_value = false;
	if (argc == 3) {
		static int64_t first[1];
		PJRT_NamedValue only[2] = {prealloc, named("visible_devices", PJRT_NamedValue_kInt64List)};

		first[0] = strtoll(argv[2], NULL, 10);
		only[1].int64_array_value = first;
		client(only, 2, "the first client: visible_devices=[FIRST]");
		client(&prealloc, 1, "the second: no visible_devices");
		return 0;
	}
	client(&prealloc, 1, "preallocate=false (as acceld)");

	PJRT_NamedValue vis[2] = {prealloc, named("visible_devices", PJRT_NamedValue_kInt64List)};
	vis[1].int64_array_value = zero;
	client(vis, 2, "preallocate=false visible_devices=[0]");
	PJRT_NamedValue odd[2] = {prealloc, named("no_such_option", PJRT_NamedValue_kInt64)};
	client(odd, 2, "an unknown option");
	PJRT_NamedValue wrong[2] = {prealloc, named("visible_devices", PJRT_NamedValue_kInt64)};
	client(wrong, 2, "visible_devices as an int64, not a list");
	/* last: a plugin may abort on ordinals it lacks */
	vis[1].int64_array_value = zero_one;
	vis[1].value_size = 2;
	client(vis, 2, "visible_devices=[0,1] (1 absent)");
	vis[1].int64_array_value = nine;
	vis[1].value_size = 1;
	client(vis, 2, "visible_devices=[9] (absent)");
	return 0;
}
