// Drives the relay's console in headless Chromium (Debian's chromium, through
// puppeteer-core) for tests/relay/test_console.py, one command a line:
//
//   node console.cjs        then JSON lines on stdin, one JSON answer line each on stdout
//
// Commands ({"op": ..., ...}): goto {url}; viewport {width, height, mobile}; type {selector,
// text} (the field is emptied first); click {selector, text?} (the first element matching
// selector whose text contains text); press {key}; waitText {text, selector?, timeout?};
// waitGone {selector}; text {selector}; count {selector}; eval {js} (an expression's value);
// screenshot {path}; axe (axe-core's rules run on the page as it is: each violation's id,
// impact, help and first nodes); report (what the page did: dialogs, errors, CSP
// violations, every request); close. Answers {"ok": true, "value": ...} or {"ok": false,
// "error": ...}.
//
// The page's dialogs (alert, confirm) are recorded and dismissed; a test asserts there
// were none. Nothing here changes what the page may run: the console's own policy applies
// (axe-core is evaluated through the DevTools protocol, as the driver's own code is, and
// fetches nothing).
'use strict'
const fs = require('fs')
const readline = require('readline')
const puppeteer = require('puppeteer-core')

const seen = { dialogs: [], pageErrors: [], consoleErrors: [], requests: [], failed: [], csp: [] }

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--font-render-hinting=none'],
  })
  const page = await browser.newPage()
  await page.setViewport({ width: 1280, height: 800 })
  page.on('dialog', async (d) => { seen.dialogs.push(d.type() + ': ' + d.message()); await d.dismiss() })
  page.on('pageerror', (e) => seen.pageErrors.push(e.message))
  page.on('console', (m) => { if (m.type() === 'error') seen.consoleErrors.push(m.text()) })
  page.on('request', (r) => seen.requests.push(r.method() + ' ' + r.url()))
  page.on('requestfailed', (r) => seen.failed.push(r.method() + ' ' + r.url() + ' ' + (r.failure() || {}).errorText))
  // Violations of the page's policy, as the page's own event reports them.
  await page.exposeFunction('__reportCsp', (v) => seen.csp.push(v))
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__reportCsp(e.violatedDirective + ' ' + e.blockedURI))
  })

  const find = async (selector, text) => {
    const handles = await page.$$(selector)
    for (const el of handles) {
      const t = await el.evaluate((n) => n.innerText || n.textContent || n.value || '')
      if (text === undefined || t.includes(text)) return el
    }
    throw new Error(`no ${selector}${text === undefined ? '' : ` with text ${JSON.stringify(text)}`}`)
  }

  const ops = {
    goto: async ({ url }) => { await page.goto(url, { waitUntil: 'load' }) },
    viewport: async ({ width, height, mobile }) => {
      await page.setViewport({ width, height, isMobile: !!mobile, hasTouch: !!mobile, deviceScaleFactor: 1 })
    },
    type: async ({ selector, text }) => {
      const el = await page.waitForSelector(selector, { visible: true, timeout: 15000 })
      await el.click({ clickCount: 3 })
      await el.evaluate((n) => { n.value = ''; n.dispatchEvent(new Event('input', { bubbles: true })) })
      await el.type(text)
    },
    click: async ({ selector, text, timeout }) => {
      const end = Date.now() + (timeout || 15000)
      for (;;) {
        try {
          const el = await find(selector, text)
          await el.click()
          return
        } catch (e) {
          if (Date.now() > end) throw e
          await new Promise((r) => setTimeout(r, 100))
        }
      }
    },
    press: async ({ key }) => { await page.keyboard.press(key) },
    waitText: async ({ text, selector, timeout }) => {
      await page.waitForFunction((s, t) => {
        const el = document.querySelector(s)
        return el && el.innerText.includes(t)
      }, { timeout: timeout || 20000, polling: 100 }, selector || 'body', text)
    },
    waitGone: async ({ selector, timeout }) => {
      await page.waitForFunction((s) => !document.querySelector(s), { timeout: timeout || 20000 }, selector)
    },
    text: async ({ selector }) => (await page.waitForSelector(selector, { timeout: 15000 })).evaluate((n) => n.innerText),
    count: async ({ selector }) => (await page.$$(selector)).length,
    eval: async ({ js }) => page.evaluate(js),
    screenshot: async ({ path, fullPage }) => { await page.screenshot({ path, fullPage: fullPage !== false }) },
    axe: async () => {
      if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
        await page.evaluate(fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'))
      }
      return page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] })
        return r.violations.map((v) => ({
          id: v.id, impact: v.impact, help: v.help,
          nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
        }))
      })
    },
    report: async () => seen,
    close: async () => { await browser.close(); process.exit(0) },
  }

  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    if (!line.trim()) continue
    let answer
    try {
      const cmd = JSON.parse(line)
      const value = await ops[cmd.op](cmd)
      answer = { ok: true, value: value === undefined ? null : value }
    } catch (e) {
      answer = { ok: false, error: String(e && e.stack || e) }
    }
    process.stdout.write(JSON.stringify(answer) + '\n')
  }
  await browser.close()
}
main().catch((e) => { console.error(e); process.exit(1) })
