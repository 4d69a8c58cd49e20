/*
 * probe_cpu: what the CPU probe reads besides hwloc and the cgroup that tests need to reach on their own: the CPU's
 * maximum clock as the firmware's DMI table and CPUID leaf 0x16 tell it. Both are asked only when cpufreq says
 * nothing (a VM, a container without cpufreq under /sys/devices/system/cpu), and a maximum below the clock seen now is
 * not believed (QEMU's DMI says 2000 MHz whatever the host runs at).
 */
#ifndef ACCELD_PROBE_CPU_H
#define ACCELD_PROBE_CPU_H

#include <stddef.h>

#define PROBE_CPU_DMI_MAX_BYTES (1u << 20) /* the largest DMI table read */

/*
 * The highest "Max Speed" (MHz) of the populated processor sockets (SMBIOS structure type 4, offset 0x14) in a DMI
 * table of len bytes (the raw /sys/firmware/dmi/tables/DMI); 0 when no structure gives one. Bounded: a malformed
 * table ends the walk where it stops making sense.
 */
unsigned probe_cpu_dmi_max_mhz(const unsigned char *table, size_t len);

/*
 * The reader of CPUID leaf 0x16's maximum frequency (MHz; 0 when the CPU does not tell, as on AMD and in most VMs):
 * this CPU's, asked only when cfg->proc_root is the host's own /proc (a fixture tree describes another CPU). A test
 * sets a fake, which is asked whatever the roots; NULL restores the real one.
 */
void probe_cpu_set_cpuid(unsigned (*max_mhz)(void));

#endif
