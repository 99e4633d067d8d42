/* Checks a webhook's X-Signature in C with outbound_verify (liboutbound).
 *
 *   cc -std=c11 verify.c -o verify $(pkg-config --cflags --libs outbound)
 *   ./verify SECRET BODY_FILE [SIGNATURE]     exit 0: signed; 1: not (or no SIGNATURE)
 *
 * In a server, pass the raw request body and the X-Signature header value the same way;
 * a missing header is NULL with length 0, which is not a match. */
#include <outbound.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s SECRET BODY_FILE [SIGNATURE]\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1];
    const char *signature = argc == 4 ? argv[3] : NULL; /* the header, if there was one */

    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 2;
    }
    static uint8_t body[1 << 20];
    size_t body_len = fread(body, 1, sizeof body, f);
    fclose(f);

    outbound_result rc = outbound_verify((const uint8_t *)secret, strlen(secret), body, body_len,
                                         signature, signature ? strlen(signature) : 0);
    if (rc == OUTBOUND_RESULT_OK) {
        puts("signed");
        return 0;
    }
    printf("not signed: %s\n", outbound_result_str(rc)); /* OUTBOUND_RESULT_BAD_SIGNATURE */
    return 1;
}
