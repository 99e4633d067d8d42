"""A webhook receiver that checks X-Signature (Python standard library only).

    OUTBOUND_SECRET=s3cret PORT=8080 python3 receiver.py

Answers 204 to a correctly signed POST and 401 to anything else. With the outbound package
installed, `outbound.verify(secret, raw_body, signature)` is the same check in one call.
"""

import hashlib
import hmac
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

SECRET = os.environ["OUTBOUND_SECRET"].encode()


def signature_matches(secret: bytes, raw_body: bytes, signature: Optional[str]) -> bool:
    """X-Signature is the lowercase hex HMAC-SHA1 of the raw body bytes. A missing header
    is simply not a match (answer 401, not 500)."""
    if signature is None:
        return False
    expected = hmac.new(secret, raw_body, hashlib.sha1).hexdigest()
    # Constant-time comparison, of bytes: compare_digest refuses non-ASCII str.
    return hmac.compare_digest(expected.encode(), signature.strip().lower().encode())


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not signature_matches(SECRET, raw, self.headers.get("X-Signature")):
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        message = json.loads(raw)
        # Answer fast (within 5 s, or the message is sent again) and deduplicate: see
        # "Delivery guarantees" in docs/receivers.md.
        print(message["type"], message.get("messageId", "(delete)"), flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
