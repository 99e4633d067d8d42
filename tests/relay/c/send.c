/* Sends a plan of Segment calls to the relay with outbound's C client (liboutbound), the
 * relay as its ingestion endpoint and no webhooks of its own.
 *
 *   send ENDPOINT PLAN.tsv
 *
 * PLAN.tsv: one call a line, "label<TAB>write key<TAB>call as JSON" (outbound_enqueue_json's
 * keys). One client per write key. Prints {"label":...,"messageId":...} per call, then "done"
 * once every client closed with everything delivered; exits 1 otherwise. */
#include <outbound.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CLIENTS 4

static int fail(const char *call, outbound_result rc) {
    char text[512];
    outbound_last_error(text, sizeof text);
    fprintf(stderr, "%s: %s\n  %s\n", call, outbound_result_str(rc), text);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: send ENDPOINT PLAN.tsv\n");
        return 2;
    }
    FILE *plan = fopen(argv[2], "r");
    if (!plan) {
        perror(argv[2]);
        return 2;
    }
    char keys[MAX_CLIENTS][128];
    outbound_client *clients[MAX_CLIENTS];
    int n_clients = 0;
    static char line[65536];
    while (fgets(line, sizeof line, plan)) {
        line[strcspn(line, "\n")] = 0;
        char *label = line, *key = strchr(line, '\t');
        if (!key) continue;
        *key++ = 0;
        char *json = strchr(key, '\t');
        if (!json) continue;
        *json++ = 0;
        int c = 0;
        while (c < n_clients && strcmp(keys[c], key) != 0) c++;
        if (c == n_clients) {
            if (n_clients == MAX_CLIENTS || strlen(key) >= sizeof keys[0]) return 2;
            outbound_options *o = outbound_options_new();
            outbound_options_set_write_key(o, key);
            outbound_options_set_endpoint(o, argv[1]);
            outbound_options_set_flush_at(o, 5);
            outbound_options_set_flush_interval_ms(o, 200);
            outbound_options_set_proxy_from_env(o, false);
            outbound_result rc = outbound_client_new(o, &clients[c]);
            if (rc != OUTBOUND_RESULT_OK) return fail("outbound_client_new", rc);
            strcpy(keys[c], key);
            n_clients++;
        }
        char id[OUTBOUND_ID_BUFFER_LEN];
        outbound_result rc = outbound_enqueue_json(clients[c], json, id, sizeof id, NULL);
        if (rc != OUTBOUND_RESULT_OK) return fail("outbound_enqueue_json", rc);
        printf("{\"label\":\"%s\",\"messageId\":\"%s\"}\n", label, id);
    }
    fclose(plan);
    int bad = 0;
    for (int c = 0; c < n_clients; c++) {
        outbound_result rc = outbound_client_close(clients[c], 20000);
        if (rc != OUTBOUND_RESULT_OK) bad |= fail("outbound_client_close", rc);
        outbound_client_free(clients[c]);
    }
    if (bad) return 1;
    printf("done\n");
    return 0;
}
