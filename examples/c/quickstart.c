/* outbound from C: identify a user and track an event, then close.
 *
 * Build against an installed prefix (scripts/install-c.sh PREFIX):
 *   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
 *   cc -std=c11 quickstart.c -o quickstart $(pkg-config --cflags --libs outbound)
 *   LD_LIBRARY_PATH=PREFIX/lib ./quickstart
 * or fully static: $(pkg-config --cflags --libs outbound-static)
 *
 * Environment: OUTBOUND_WRITE_KEY (your source's write key), OUTBOUND_ENDPOINT (optional,
 * default https://api.segment.io). */
#include <outbound.h>

#include <stdio.h>
#include <stdlib.h>

/* Runs on the client's background thread, once per message. */
static void on_outcome(const char *message_id, const char *outcome, const char *detail,
                       void *userdata) {
    (void)userdata;
    printf("%s: %s%s%s\n", message_id, outcome, detail[0] ? ", " : "", detail);
}

static int fail(const char *call, outbound_result rc) {
    char text[512];
    outbound_last_error(text, sizeof text); /* the calling thread's last failure */
    fprintf(stderr, "%s: %s\n  %s\n", call, outbound_result_str(rc), text);
    return 1;
}

int main(void) {
    const char *write_key = getenv("OUTBOUND_WRITE_KEY");
    const char *endpoint = getenv("OUTBOUND_ENDPOINT");

    outbound_options *options = outbound_options_new();
    outbound_options_set_write_key(options, write_key ? write_key : "YOUR_WRITE_KEY");
    if (endpoint) outbound_options_set_endpoint(options, endpoint);
    outbound_options_set_outcome_callback(options, on_outcome, NULL);

    outbound_client *client = NULL;
    outbound_result rc = outbound_client_new(options, &client); /* consumes options */
    if (rc != OUTBOUND_RESULT_OK) return fail("outbound_client_new", rc);

    char id[OUTBOUND_ID_BUFFER_LEN];
    rc = outbound_identify(client, "user-42", NULL,
                           "{\"email\":\"ada@example.com\",\"plan\":\"pro\"}", /* traits */
                           NULL, NULL, NULL, NULL, id, sizeof id, NULL);
    if (rc != OUTBOUND_RESULT_OK) return fail("outbound_identify", rc);
    printf("queued identify %s\n", id);

    rc = outbound_track(client, "user-42", NULL, "Order Completed",
                        "{\"order_id\":\"o-1001\",\"total\":99.5,\"currency\":\"EUR\"}",
                        NULL, NULL, NULL, NULL, id, sizeof id, NULL);
    if (rc != OUTBOUND_RESULT_OK) return fail("outbound_track", rc);
    printf("queued track %s\n", id);

    /* A bad call is refused at once with its own code; nothing is queued. */
    rc = outbound_track(client, "user-42", NULL, "Oops", "[1,2,3]", NULL, NULL, NULL, NULL,
                        NULL, 0, NULL);
    if (rc == OUTBOUND_RESULT_WRONG_TYPE) printf("refused as expected: %s\n", outbound_result_str(rc));

    /* Deliver what is queued (waiting at most 5 s), stop the threads, release. */
    rc = outbound_client_close(client, 5000);
    outbound_stats stats;
    outbound_client_stats(client, &stats);
    printf("delivered %llu, failed %llu, dropped %llu\n", (unsigned long long)stats.delivered,
           (unsigned long long)stats.failed, (unsigned long long)stats.dropped);
    outbound_client_free(client);
    return rc == OUTBOUND_RESULT_OK ? 0 : fail("outbound_client_close", rc);
}
