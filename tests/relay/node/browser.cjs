// Drives analytics.js in headless Chromium (Debian's chromium, through puppeteer-core):
//
//   node browser.cjs PAGE_URL CDN_URL PLAN.json
//
// For each write key of the plan, opens PAGE_URL (served from 127.0.0.1), calls the page's
// run() with that key's steps and CDN_URL (the relay, "http://127.0.0.1:PORT": analytics.js
// loads its settings from it), and waits until the page's network is idle. Options, in the
// environment: CLOCK_SHIFT_MS (the page's clock that far ahead: Date and Date.now),
// EXTRA_FIELD ({"name","value"}: a top-level field on every event), METRICS_HOST (inline
// settings sampling analytics.js's telemetry to "127.0.0.1:PORT/v1"). Prints one
// {"label","messageId"} line per call, then "done". Exits non-zero on a page error, a call
// analytics.js reports as failed, or a request outside 127.0.0.1.
'use strict'
const fs = require('fs')
const puppeteer = require('puppeteer-core')

async function main() {
  const [pageUrl, cdnURL, planPath] = process.argv.slice(2)
  const shift = Number(process.env.CLOCK_SHIFT_MS || 0)
  const extraField = process.env.EXTRA_FIELD ? JSON.parse(process.env.EXTRA_FIELD) : null
  const metricsHost = process.env.METRICS_HOST || null
  const plan = JSON.parse(fs.readFileSync(planPath, 'utf8'))
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  })
  const problems = []
  const requests = []
  try {
    const keys = [...new Set(plan.map((s) => s.key))]
    for (const key of keys) {
      const page = await browser.newPage()
      page.on('pageerror', (e) => problems.push('page error: ' + e.message))
      page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()) })
      page.on('requestfailed', (r) => problems.push('request failed: ' + r.method() + ' ' + r.url() + ' ' + (r.failure() || {}).errorText))
      page.on('request', (r) => requests.push(r.method() + ' ' + r.url()))
      if (shift) {
        // The device's clock, wrong: every Date the page makes is that far ahead.
        await page.evaluateOnNewDocument((ms) => {
          const Real = Date
          class Shifted extends Real {
            constructor(...a) { if (a.length) super(...a); else super(Real.now() + ms) }
            static now() { return Real.now() + ms }
          }
          window.Date = Shifted
        }, shift)
      }
      await page.goto(pageUrl, { waitUntil: 'load' })
      const steps = plan.filter((s) => s.key === key)
      const cfg = { writeKey: key, cdnURL, steps, extraField, metricsHost }
      const out = await page.evaluate((c) => window.run(c), cfg)
      await page.waitForNetworkIdle({ idleTime: 500, timeout: 30000 })
      for (const o of out) {
        if (o.failed) problems.push(o.label + ': ' + o.failed)
        console.log(JSON.stringify({ label: o.label, messageId: o.messageId }))
      }
      await page.close()
    }
  } finally {
    await browser.close()
  }
  const outside = requests.filter((r) => /^\w+ (https?|wss?):/.test(r) && !/^\w+ http:\/\/127\.0\.0\.1[:/]/.test(r))
  if (outside.length) problems.push('requests outside 127.0.0.1: ' + outside.join(', '))
  if (problems.length) {
    console.error(problems.join('\n'))
    process.exit(1)
  }
  console.error(requests.join('\n'))
  console.log('done')
}
main().catch((e) => { console.error(e); process.exit(1) })
