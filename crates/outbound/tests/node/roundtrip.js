// Reads bodies, one per line, from the file named in argv[2] and checks that each one is a
// fixed point of JSON.stringify(JSON.parse(body)). Exits 1 at the first one that is not.
'use strict';
const fs = require('fs');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
let n = 0;
for (const body of lines) {
  const again = JSON.stringify(JSON.parse(body));
  if (again !== body) {
    console.log(`MISMATCH at body ${n}\nours: ${body}\nnode: ${again}`);
    process.exit(1);
  }
  n++;
}
console.log(`round-tripped ${n} bodies`);
