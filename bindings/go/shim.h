/* C helpers for the Go package: each one makes its liboutbound call and, on failure, reads
 * the thread-local error text in the same cgo call (a goroutine may move to another thread
 * between two cgo calls), and the trampolines hand callbacks to the exported Go functions
 * with the cgo.Handle that stands in for userdata. */
#ifndef OUTBOUND_GO_SHIM_H
#define OUTBOUND_GO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "outbound.h"

/* The result of a call that may return a text (a message id, a timestamp). */
typedef struct gob_result {
    outbound_result rc;
    char text[OUTBOUND_ID_BUFFER_LEN];
    /* On failure: the text of outbound_last_error, malloc'd (the Go side frees it). */
    char *err;
} gob_result;

gob_result gob_enqueue(const outbound_client *client, const char *json, int want_id);
gob_result gob_enqueue_packed(const outbound_client *client, const uint8_t *packed, size_t len,
                              int want_id);
gob_result gob_timestamp_format(int64_t unix_seconds, uint32_t nanoseconds);
gob_result gob_client_new(outbound_options *options, outbound_client **out);
/* A failure's text from the calling thread, malloc'd (NULL if out of memory). */
char *gob_last_error(void);
outbound_result gob_set_outcome_callback(outbound_options *options, uintptr_t handle);
outbound_result gob_set_log_callback(outbound_options *options, uintptr_t handle);

#endif
