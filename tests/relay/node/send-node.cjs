// Sends a plan of Segment calls to the relay with @segment/analytics-node (Segment's own
// Node SDK). Run with NODE_PATH=.tools/relay/node/node_modules:
//
//   node send-node.cjs ENDPOINT PLAN.json
//
// PLAN is a JSON array of {label, key, msg}. Prints one {"label","messageId"} line per call,
// the messageId the SDK made (from its callback's context), then "done". Exits non-zero
// when the SDK reports an error.
'use strict'
const fs = require('fs')
const { Analytics } = require('@segment/analytics-node')

async function main() {
  const [endpoint, planPath] = process.argv.slice(2)
  const plan = JSON.parse(fs.readFileSync(planPath, 'utf8'))
  const clients = new Map()
  const errors = []
  for (const s of plan) {
    if (!clients.has(s.key)) {
      const a = new Analytics({ writeKey: s.key, host: endpoint, path: '/v1/batch',
        flushAt: 5, flushInterval: 200, maxRetries: 3 })
      a.on('error', (e) => errors.push(e))
      clients.set(s.key, a)
    }
  }
  const sent = plan.map((s) => new Promise((resolve) => {
    const a = clients.get(s.key)
    const { type, ...params } = s.msg
    const cb = (err, ctx) => {
      if (err) errors.push(err)
      resolve({ label: s.label, messageId: ctx && ctx.event.messageId })
    }
    if (type === 'page' || type === 'screen') {
      a[type]({ userId: params.userId, name: params.name, properties: params.properties,
        integrations: params.integrations }, cb)
    } else {
      a[type](params, cb)
    }
  }))
  const lines = await Promise.all(sent)
  for (const a of clients.values()) await a.closeAndFlush({ timeout: 10000 })
  for (const l of lines) console.log(JSON.stringify(l))
  if (errors.length) {
    console.error('errors:', errors.map((e) => (e && (e.code || e.message)) || String(e)))
    process.exit(1)
  }
  console.log('done')
}
main().catch((e) => { console.error(e); process.exit(1) })
