/*
 * store_fill: builds a database holding a month of 1 s samples for 8 devices through the store's own writer, the
 * way the sampler would have written them, ending now. Used by bench/store.sh.
 * Usage: store_fill DB [DAYS] [DEVICES]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "detect/device.h"
#include "store/store.h"

#define CHUNK 8192

int main(int argc, char **argv)
{
	static struct store_sample buf[CHUNK];
	struct store_opts o = {.backlog_samples = 1 << 17};
	struct store *st = NULL;
	struct device devs[16];
	struct store_stats stats;
	long days = argc > 2 ? strtol(argv[2], NULL, 10) : 30;
	long ndev = argc > 3 ? strtol(argv[3], NULL, 10) : 8;
	int64_t end, start;
	size_t n = 0;
	char err[256];

	if (argc < 2 || days < 1 || days > 400 || ndev < 1 || ndev > 16) {
		fprintf(stderr, "usage: store_fill DB [DAYS 1..400] [DEVICES 1..16]\n");
		return 2;
	}
	o.path = argv[1];
	end = clock_real_ms() / 1000 * 1000;
	start = end - days * 86400000LL;
	if (store_open_opts(&o, &st, err, sizeof(err)) != ACCELD_OK || err[0]) {
		fprintf(stderr, "store_fill: %s\n", err);
		return 1;
	}
	for (long d = 0; d < ndev; d++) {
		device_init(&devs[d], d == 0 ? DEVICE_CPU : DEVICE_GPU);
		snprintf(devs[d].id, sizeof(devs[d].id), "%s:%ld", d == 0 ? "cpu" : "gpu", d == 0 ? 0 : d - 1);
		snprintf(devs[d].accelerator_type, sizeof(devs[d].accelerator_type), "%s", d == 0 ? "" : "H100");
		devs[d].price.usd_per_hour = d == 0 ? NAN : 10.98;
		snprintf(devs[d].price.source, sizeof(devs[d].price.source), "bench");
	}
	store_devices_seen(st, devs, (size_t)ndev, start);
	for (int64_t t = start; t < end; t += 1000) {
		for (long d = 0; d < ndev; d++) {
			struct store_sample *x = &buf[n++];

			*x = (struct store_sample){.ts_ms = t, .dt_ms = 1000,
						   .source = d == 0 ? STORE_SRC_PROC_STAT : STORE_SRC_DEVICE,
						   .utilization_ratio = (double)((t / 1000 + d * 7) % 100) / 100.0,
						   .memory_used_bytes = 1e9 + (double)(t / 1000 % 1000) * 1e6,
						   .temperature_celsius = d == 0 ? NAN : 40 + (double)(t / 1000 % 30),
						   .power_watts = d == 0 ? NAN : 100 + (double)(t / 1000 % 300)};
			snprintf(x->device, sizeof(x->device), "%s", devs[d].id);
		}
		if (n + (size_t)ndev > CHUNK) {
			store_add_samples(st, buf, n);
			n = 0;
			if (!store_flush(st, 120000)) {
				fprintf(stderr, "store_fill: writes failing\n");
				return 1;
			}
		}
	}
	store_add_samples(st, buf, n);
	store_devices_seen(st, devs, (size_t)ndev, end);
	store_flush(st, 120000);
	store_stats(st, &stats);
	store_close(st);
	printf("store_fill: %llu samples written, %llu dropped, %ld days, %ld devices\n",
	       (unsigned long long)stats.written_samples, (unsigned long long)stats.dropped_samples, days, ndev);
	return stats.dropped_samples == 0 ? 0 : 1;
}
