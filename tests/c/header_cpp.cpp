// include/outbound.h must compile as C++ (extern "C", enum underlying types) and link.
#include "outbound.h"

#include <cstdio>
#include <cstring>

int main() {
    outbound_options *opts = outbound_options_new();
    outbound_result rc = outbound_options_set_write_key(opts, "wk");
    outbound_options_free(opts);
    char sig[OUTBOUND_SIGNATURE_BUFFER_LEN];
    const char *body = "{\"cool\":true}";
    outbound_result signed_rc =
        outbound_sign(reinterpret_cast<const uint8_t *>("abc123"), 6,
                      reinterpret_cast<const uint8_t *>(body), std::strlen(body), sig, sizeof sig,
                      nullptr);
    outbound_stats stats = outbound_stats();
    bool ok = rc == OUTBOUND_RESULT_OK && signed_rc == OUTBOUND_RESULT_OK &&
              std::strcmp(sig, "5099cab379b3be52908387457007040cc934ef86") == 0 &&
              stats.accepted == 0 && outbound_flush(nullptr, 0) == OUTBOUND_RESULT_NULL_ARGUMENT;
    std::printf("c++ header check: %s (%s)\n", ok ? "ok" : "FAILED", outbound_version());
    return ok ? 0 : 1;
}
