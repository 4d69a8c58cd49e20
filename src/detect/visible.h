/*
 * visible: the *_VISIBLE_DEVICES lists that restrict which devices a process may use (CUDA_VISIBLE_DEVICES,
 * ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, TPU_VISIBLE_CHIPS). Pure functions: the caller reads the variable.
 *
 * The rules follow CUDA's: a comma-separated list of ordinals or UUIDs ("GPU-8932f937", any unique prefix of a
 * device's UUID; "MIG-..." names a MIG instance and makes its GPU visible); an unset variable shows every device,
 * an empty one none; the first entry that is invalid (out of range, unknown or ambiguous UUID, a device already
 * listed, malformed text) ends the list and the entries before it stay.
 */
#ifndef ACCELD_VISIBLE_H
#define ACCELD_VISIBLE_H

#include <stdbool.h>
#include <stddef.h>

/* The devices a list refers to, in ordinal order. Everything is borrowed. */
struct visible_set {
	size_t n;                     /* devices */
	const char *const *uuids;     /* n UUIDs as the API writes them ("GPU-..."), or NULL: ordinals only */
	const char *const *mig_uuids; /* nmig MIG instance UUIDs ("MIG-..."), or NULL */
	const size_t *mig_parent;     /* the device index of each MIG instance */
	size_t nmig;
};

/*
 * Applies the list in value (NULL when the variable is unset) to set: writes the indices of the visible devices
 * into sel (at most cap, in list order, each once) and returns how many. *stopped, when not NULL, is set to the
 * 0-based position of the entry that ended the list early, or -1 when every entry was used.
 */
size_t visible_select(const char *value, const struct visible_set *set, size_t *sel, size_t cap, int *stopped);

#endif
