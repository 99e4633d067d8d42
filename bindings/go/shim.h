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

/* The result of a call whose outputs go through its out-parameters. */
typedef struct gob_status {
    outbound_result rc;
    /* On failure: the text of outbound_last_error, malloc'd (the Go side frees it). */
    char *err;
} gob_status;

/* The delivery records (deliveries.go): each calls its outbound_client_ function. */
gob_status gob_webhook_attempts(const outbound_client *client, size_t webhook,
                                outbound_webhook_attempt_list **out);
gob_status gob_webhook_attempts_where(const outbound_client *client, size_t webhook,
                                      const outbound_attempt_query *query,
                                      outbound_webhook_attempt_list **out);
gob_status gob_webhook_health(const outbound_client *client, outbound_webhook_health_list **out);
gob_status gob_dead_letters(const outbound_client *client, int64_t since_ms, int64_t until_ms,
                            size_t limit, const char *cursor, const char *contains,
                            outbound_dead_letter_list **out);
gob_status gob_dead_letter(const outbound_client *client, const char *message_id,
                           outbound_dead_letter_list **out);
gob_status gob_delete_dead_letter(const outbound_client *client, const char *message_id,
                                  bool *found);
gob_status gob_replay_dead_letter(const outbound_client *client, const char *message_id,
                                  size_t webhook, outbound_replay_progress *out, bool *found);
gob_status gob_replay_dead_letters(const outbound_client *client, int64_t since_ms,
                                   int64_t until_ms, size_t webhook,
                                   outbound_replay_progress *out);
gob_status gob_replay_progress(const outbound_client *client, uint64_t replay_id,
                               outbound_replay_progress *out, bool *found);
gob_status gob_dead_letter_stats(const outbound_client *client, outbound_dead_letter_stats *out);

#endif
