// The spec's webhook receiver (§5.3), with Node's built-in http and crypto only: parse the
// body, JSON.stringify it, HMAC-SHA1 hex with the shared secret, compare with X-Signature.
// Usage: node receiver.js SECRET EXPECTED. Prints "port N", then exits 0 after EXPECTED
// verified deliveries, or 1 at the first mismatch.
'use strict';
const http = require('http');
const crypto = require('crypto');
const [secret, expected] = [process.argv[2], Number(process.argv[3])];
const types = {};
let verified = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    const parsed = JSON.parse(raw);
    const digest = crypto.createHmac('sha1', secret).update(JSON.stringify(parsed), 'utf8').digest('hex');
    if (digest !== req.headers['x-signature']) {
      console.log(`MISMATCH on a ${parsed.type}: header ${req.headers['x-signature']} computed ${digest}\nbody: ${raw}`);
      process.exit(1);
    }
    types[parsed.type] = (types[parsed.type] || 0) + 1;
    verified++;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    if (verified === expected) {
      console.log(`verified ${verified} ${JSON.stringify(types)}`);
      process.exit(0);
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
