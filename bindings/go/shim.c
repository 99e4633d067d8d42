#include "shim.h"

#include <stdlib.h>

#include "_cgo_export.h"

char *gob_last_error(void) {
    size_t n = outbound_last_error(NULL, 0);
    char *text = malloc(n + 1);
    if (text != NULL) outbound_last_error(text, n + 1);
    return text;
}

gob_result gob_enqueue(const outbound_client *client, const char *json, int want_id) {
    gob_result r = {0};
    r.rc = outbound_enqueue_json(client, json, want_id ? r.text : NULL,
                                 want_id ? sizeof r.text : 0, NULL);
    if (r.rc != OUTBOUND_RESULT_OK) r.err = gob_last_error();
    return r;
}

gob_result gob_enqueue_packed(const outbound_client *client, const uint8_t *packed, size_t len,
                              int want_id) {
    gob_result r = {0};
    r.rc = outbound_enqueue_packed(client, packed, len, want_id ? r.text : NULL,
                                   want_id ? sizeof r.text : 0, NULL);
    if (r.rc != OUTBOUND_RESULT_OK) r.err = gob_last_error();
    return r;
}

gob_result gob_timestamp_format(int64_t unix_seconds, uint32_t nanoseconds) {
    gob_result r = {0};
    r.rc = outbound_timestamp_format(unix_seconds, nanoseconds, r.text, sizeof r.text, NULL);
    if (r.rc != OUTBOUND_RESULT_OK) r.err = gob_last_error();
    return r;
}

gob_result gob_client_new(outbound_options *options, outbound_client **out) {
    gob_result r = {0};
    r.rc = outbound_client_new(options, out);
    if (r.rc != OUTBOUND_RESULT_OK) r.err = gob_last_error();
    return r;
}

static void gob_outcome(const outbound_outcome *o, void *userdata) {
    goOutboundOutcome((char *)o->message_id, (char *)o->outcome, (char *)o->detail,
                      (char *)o->subscription, (uintptr_t)userdata);
}

static void gob_log(outbound_log_level level, const char *line, void *userdata) {
    goOutboundLog((uint32_t)level, (char *)line, (uintptr_t)userdata);
}

outbound_result gob_set_outcome_callback(outbound_options *options, uintptr_t handle) {
    return outbound_options_set_outcome_callback_ex(options, gob_outcome, (void *)handle);
}

outbound_result gob_set_log_callback(outbound_options *options, uintptr_t handle) {
    return outbound_options_set_log_callback(options, gob_log, (void *)handle);
}

static gob_status gob_status_of(outbound_result rc) {
    gob_status s = {rc, NULL};
    if (rc != OUTBOUND_RESULT_OK) s.err = gob_last_error();
    return s;
}

gob_status gob_webhook_attempts(const outbound_client *client, size_t webhook,
                                outbound_webhook_attempt_list **out) {
    return gob_status_of(outbound_client_webhook_attempts(client, webhook, out));
}

gob_status gob_webhook_attempts_where(const outbound_client *client, size_t webhook,
                                      const outbound_attempt_query *query,
                                      outbound_webhook_attempt_list **out) {
    return gob_status_of(outbound_client_webhook_attempts_where(client, webhook, query, out));
}

gob_status gob_webhook_health(const outbound_client *client, outbound_webhook_health_list **out) {
    return gob_status_of(outbound_client_webhook_health(client, out));
}

gob_status gob_dead_letters(const outbound_client *client, int64_t since_ms, int64_t until_ms,
                            size_t limit, const char *cursor, const char *contains,
                            outbound_dead_letter_list **out) {
    return gob_status_of(outbound_client_search_dead_letters(client, since_ms, until_ms, limit,
                                                             cursor, contains, out));
}

gob_status gob_dead_letter(const outbound_client *client, const char *message_id,
                           outbound_dead_letter_list **out) {
    return gob_status_of(outbound_client_dead_letter(client, message_id, out));
}

gob_status gob_delete_dead_letter(const outbound_client *client, const char *message_id,
                                  bool *found) {
    return gob_status_of(outbound_client_delete_dead_letter(client, message_id, found));
}

gob_status gob_replay_dead_letter(const outbound_client *client, const char *message_id,
                                  size_t webhook, outbound_replay_progress *out, bool *found) {
    return gob_status_of(outbound_client_replay_dead_letter(client, message_id, webhook, out, found));
}

gob_status gob_replay_dead_letters(const outbound_client *client, int64_t since_ms,
                                   int64_t until_ms, size_t webhook,
                                   outbound_replay_progress *out) {
    return gob_status_of(outbound_client_replay_dead_letters(client, since_ms, until_ms, webhook, out));
}

gob_status gob_replay_progress(const outbound_client *client, uint64_t replay_id,
                               outbound_replay_progress *out, bool *found) {
    return gob_status_of(outbound_client_replay_progress(client, replay_id, out, found));
}

gob_status gob_dead_letter_stats(const outbound_client *client, outbound_dead_letter_stats *out) {
    return gob_status_of(outbound_client_dead_letter_stats(client, out));
}
