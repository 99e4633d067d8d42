/* The caller's cost of outbound_enqueue_packed (the Go packages' call), for instruction
 * counts under callgrind: N track calls in the packed form, with the Go bench's event (5
 * properties), on a client that validates and counts but sends nothing (send off), so
 * only the call itself is measured.
 *
 *   cargo build --release -p outbound-c
 *   gcc -O2 -Iinclude bench/c/packed_calls.c target/release/liboutbound.a \
 *       -lpthread -ldl -lm -o /tmp/packed_calls
 *   valgrind --tool=callgrind --toggle-collect=outbound_enqueue_packed /tmp/packed_calls 20000
 *
 * Instructions per call = the collected total / N. */
#include "outbound.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t put_str(uint8_t *at, const char *s) {
    uint32_t n = (uint32_t)strlen(s);
    memcpy(at, &n, 4);
    memcpy(at + 4, s, n);
    return 4 + n;
}

static size_t field(uint8_t *at, uint8_t tag, const char *s) {
    at[0] = tag;
    return 1 + put_str(at + 1, s);
}

static size_t num(uint8_t *at, char tag, const void *v) {
    at[0] = (uint8_t)tag;
    memcpy(at + 1, v, 8);
    return 9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    uint8_t props[256], msg[512];
    size_t p = 0, m = 0;
    uint32_t five = 5, two = 2;
    double revenue = 49.99;
    int64_t items = 3;
    props[p++] = '{';
    memcpy(props + p, &five, 4), p += 4;
    p += put_str(props + p, "order_id"), props[p++] = 's', p += put_str(props + p, "ord-0001");
    p += put_str(props + p, "revenue"), p += num(props + p, 'd', &revenue);
    p += put_str(props + p, "items"), p += num(props + p, 'i', &items);
    p += put_str(props + p, "express"), props[p++] = 't';
    p += put_str(props + p, "tags"), props[p++] = '[';
    memcpy(props + p, &two, 4), p += 4;
    props[p++] = 's', p += put_str(props + p, "books");
    props[p++] = 's', p += put_str(props + p, "gift");
    m += field(msg + m, 1, "track");
    m += field(msg + m, 4, "user-12345");
    m += field(msg + m, 7, "Order Completed");
    msg[m++] = 13;
    uint32_t plen = (uint32_t)p;
    memcpy(msg + m, &plen, 4), m += 4;
    memcpy(msg + m, props, p), m += p;

    outbound_options *o = outbound_options_new();
    outbound_options_set_write_key(o, "bench");
    outbound_options_set_endpoint(o, "http://127.0.0.1:9");
    outbound_options_set_send(o, false);
    outbound_options_set_max_queue_size(o, (size_t)n + 1000);
    outbound_options_set_proxy_from_env(o, false);
    outbound_client *c = NULL;
    if (outbound_client_new(o, &c) != OUTBOUND_RESULT_OK) return 1;
    char id[OUTBOUND_ID_BUFFER_LEN];
    for (long i = 0; i < n; i++) {
        outbound_result rc = outbound_enqueue_packed(c, msg, m, id, sizeof id, NULL);
        if (rc != OUTBOUND_RESULT_OK) {
            fprintf(stderr, "call %ld: %s\n", i, outbound_result_str(rc));
            return 1;
        }
    }
    outbound_client_close(c, 10000);
    outbound_client_free(c);
    printf("%ld calls\n", n);
    return 0;
}
