/* A standalone local receiver for running examples/c/quickstart.c in CI:
 *   receiver PORT_FILE MIN_REQUESTS TIMEOUT_MS
 * Listens on 127.0.0.1 (a free port, written to PORT_FILE), prints each request it gets
 * and exits 0 once it has MIN_REQUESTS, or 1 at the timeout. */
#define _POSIX_C_SOURCE 200809L
#include "receiver.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT_FILE MIN_REQUESTS TIMEOUT_MS\n", argv[0]);
        return 2;
    }
    receiver *rx = rx_start();
    if (!rx) {
        perror("receiver");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        rx_stop(rx);
        return 2;
    }
    fprintf(f, "%d\n", rx_port(rx));
    fclose(f);
    size_t want = (size_t)strtoul(argv[2], NULL, 10);
    int ok = rx_wait_count(rx, want, atoi(argv[3]));
    for (size_t i = 0; i < rx_count(rx); i++) {
        const rx_request *r = rx_get(rx, i);
        char auth[128] = "";
        rx_header(r, "Authorization", auth, sizeof auth);
        printf("receiver: %s %s (%s) %s\n", r->method, r->path, auth, r->body);
    }
    rx_stop(rx);
    return ok ? 0 : 1;
}
