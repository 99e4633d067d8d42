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

static void gob_outcome(const char *message_id, const char *outcome, const char *detail,
                        void *userdata) {
    goOutboundOutcome((char *)message_id, (char *)outcome, (char *)detail, (uintptr_t)userdata);
}

static void gob_log(outbound_log_level level, const char *line, void *userdata) {
    goOutboundLog((uint32_t)level, (char *)line, (uintptr_t)userdata);
}

outbound_result gob_set_outcome_callback(outbound_options *options, uintptr_t handle) {
    return outbound_options_set_outcome_callback(options, gob_outcome, (void *)handle);
}

outbound_result gob_set_log_callback(outbound_options *options, uintptr_t handle) {
    return outbound_options_set_log_callback(options, gob_log, (void *)handle);
}
