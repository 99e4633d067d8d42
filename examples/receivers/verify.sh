#!/bin/sh
# Checks a webhook's X-Signature with openssl:
#   verify.sh SECRET BODY_FILE SIGNATURE      exit 0: signed; 1: not
# BODY_FILE holds the raw request body, byte for byte.
expected=$(openssl dgst -sha1 -hmac "$1" < "$2" | sed 's/^.*= //')
given=$(printf '%s' "$3" | tr 'A-F' 'a-f')
[ -n "$given" ] && [ "$expected" = "$given" ]
