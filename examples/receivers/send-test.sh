#!/bin/sh
# Sends your receiver a correctly signed test message, as outbound would:
#   OUTBOUND_SECRET=s3cret send-test.sh http://127.0.0.1:8080/hook
# Prints the HTTP status your receiver answered.
body='{"version":1,"type":"track","userId":"u-42","event":"Test Event","properties":{"ok":true},"context":{"library":{"name":"outbound","version":"0.2.0"}},"messageId":"test-0001","timestamp":"2026-11-21T09:30:00.123Z"}'
signature=$(printf '%s' "$body" | openssl dgst -sha1 -hmac "$OUTBOUND_SECRET" | sed 's/^.*= //')
curl -sS -o /dev/null -w '%{http_code}\n' -X POST "$1" \
  -H 'Content-Type: application/json' -H 'User-Agent: Outbound/1.0' \
  -H "X-Signature: $signature" --data-binary "$body"
