// A webhook receiver that checks X-Signature (Node.js, no dependencies).
//
//   OUTBOUND_SECRET=s3cret PORT=8080 node receiver.js
//
// Answers 204 to a correctly signed POST and 401 to anything else. It checks the raw body;
// set OUTBOUND_VERIFY=parsed to check the re-serialized body instead, as a receiver whose
// framework only hands over the parsed object (express.json()) would.
'use strict';
const crypto = require('node:crypto');
const http = require('node:http');

const secret = process.env.OUTBOUND_SECRET;

// True when `header` (the X-Signature value, maybe undefined) is the lowercase hex
// HMAC-SHA1 of `bytes` (a Buffer or a string, hashed as UTF-8).
function signatureMatches(secret, bytes, header) {
  if (typeof header !== 'string') return false; // no header: not a match
  const expected = Buffer.from(crypto.createHmac('sha1', secret).update(bytes).digest('hex'));
  const given = Buffer.from(header.trim().toLowerCase());
  // timingSafeEqual throws on different lengths, so check that first.
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

// 1. Over the raw body: always right.
function verifyRaw(secret, rawBody, header) {
  return signatureMatches(secret, rawBody, header);
}

// 2. Over the parsed body, re-serialized: JSON.stringify(JSON.parse(body)) gives back the
// exact bytes outbound sent, because it writes every body in that form already.
function verifyParsed(secret, parsedBody, header) {
  return signatureMatches(secret, JSON.stringify(parsedBody), header);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const header = req.headers['x-signature'];
    let ok = false;
    try {
      ok = process.env.OUTBOUND_VERIFY === 'parsed'
        ? verifyParsed(secret, JSON.parse(raw.toString('utf8')), header)
        : verifyRaw(secret, raw, header);
    } catch (e) {
      ok = false; // not JSON
    }
    if (!ok) {
      res.writeHead(401).end();
      return;
    }
    const message = JSON.parse(raw.toString('utf8'));
    // Answer fast and deduplicate: see "Delivery guarantees" in docs/receivers.md.
    console.log(message.type, message.messageId || '(delete)');
    res.writeHead(204).end();
  });
});
server.listen(Number(process.env.PORT || 8080), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
