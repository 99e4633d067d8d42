/* A small HTTP/1.1 receiver for the C tests: listens on 127.0.0.1 (never anything else)
 * on a free port, one thread per connection (keep-alive), records every request and
 * answers with a configurable status after a configurable delay. */
#ifndef OUTBOUND_TEST_RECEIVER_H
#define OUTBOUND_TEST_RECEIVER_H

#include <stddef.h>

typedef struct rx_request {
    char method[16];
    char path[512];
    char *headers; /* the raw header lines, "Name: value\r\n" each */
    char *body;    /* the body bytes, NUL-terminated for convenience */
    size_t body_len;
} rx_request;

typedef struct receiver receiver;

/* Starts listening on 127.0.0.1:0; NULL on failure (errno set). */
receiver *rx_start(void);
int rx_port(const receiver *rx);
/* Status and delay used for every response from now on. */
void rx_set_status(receiver *rx, int status);
void rx_set_delay_ms(receiver *rx, int delay_ms);
/* Requests recorded so far. */
size_t rx_count(receiver *rx);
/* Waits until at least n requests were recorded; 1 when they were, 0 on timeout. */
int rx_wait_count(receiver *rx, size_t n, int timeout_ms);
/* The i-th request (stable until rx_stop), or NULL. */
const rx_request *rx_get(receiver *rx, size_t i);
/* Copies header `name` (case-insensitive) of `req` into buf; 1 when found. */
int rx_header(const rx_request *req, const char *name, char *buf, size_t len);
/* Counts the occurrences of `needle` in the bodies of every request so far. */
size_t rx_count_in_bodies(receiver *rx, const char *needle);
/* Closes every connection, joins every thread, frees everything. */
void rx_stop(receiver *rx);

void sleep_ms(int ms);

#endif
