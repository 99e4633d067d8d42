// A webhook's last 100 attempts (or a subscription's), newest first: when, the message, the
// result, the status or what failed without one, how long it took, and the first bytes of a
// failure's answer (as text: an answer is the receiver's, whatever it holds). 10 at a time
// on a phone, more on request. A long answer shows its start, the rest behind a disclosure:
// no box scrolls, so nothing needs a tab stop of its own to be read.

import * as api from './api.js'
import { h, fill, labelled, when, ms } from './dom.js'
import { heading, refused } from './source.js'
import { subscriptionHeading, describe } from './subscriptions.js'

const PHONE_ROWS = 10
const SHORT = 160

// The status cell: the status, or what failed without one, then the detail when it adds
// something ("timeout: operation timed out" after "timeout" reads "operation timed out").
export function statusText(a) {
  const head = a.status !== null && a.status !== undefined ? String(a.status) : (a.error || '')
  let detail = (a.detail || '').trim()
  for (const said of [`status ${a.status}`, head]) {
    if (said && detail.toLowerCase().startsWith(said.toLowerCase())) detail = detail.slice(said.length).replace(/^[:\s]+/, '')
  }
  return [head, detail ? h('span', { class: 'muted' }, ` ${detail}`) : null]
}

function answerOf(a) {
  if (a.answer !== undefined) {
    const text = a.answer
    if (text.length <= SHORT) return h('pre', { class: 'answer' }, text)
    return h('details', { class: 'answer' },
      h('summary', {}, h('pre', { class: 'answer' }, `${text.slice(0, SHORT)}…`), h('span', { class: 'more' }, `the whole answer (${text.length} characters)`)),
      h('pre', { class: 'answer whole' }, text))
  }
  if (a.answer_base64 !== undefined) return h('span', { class: 'muted' }, `(not text: ${a.answer_base64.length} base64 characters)`)
  return ''
}

// `index`: a webhook's; or `subscription`: a subscription's (its client's one endpoint).
export function render(main, ctx) {
  const { name, index, subscription } = ctx.params
  const sub = subscription !== undefined
  const own = sub ? `/sources/${api.enc(name)}/subscriptions/${api.enc(subscription)}`
    : `/sources/${api.enc(name)}/webhooks/${index}`
  const body = h('tbody')
  const refresh = h('button', { type: 'button' }, 'Refresh')
  const more = h('button', { type: 'button', hidden: true }, 'Show more')
  const url = h('p', { class: 'url' })
  const asOf = h('span', { class: 'muted as-of' })
  const phone = window.matchMedia('(max-width: 700px)').matches
  let shown = phone ? PHONE_ROWS : Infinity
  let rows = []
  fill(main, ...(sub ? subscriptionHeading(name, subscription, 'attempts')
    : [...heading(name, 'health'), h('h2', {}, `Webhook ${index + 1}: recent attempts`)]), url,
    h('div', { class: 'toolbar' }, refresh,
      sub ? null : h('a', { href: `#/sources/${encodeURIComponent(name)}` }, 'Back to health'), asOf),
    h('div', { class: 'scroll' }, h('table', { class: 'list attempts' },
      h('thead', {}, h('tr', {}, ['When', 'Message', 'Result', 'Status', 'Duration', 'Answer'].map((c) => h('th', { scope: 'col', class: c === 'Duration' ? 'num' : null }, c)))),
      body)),
    h('div', { class: 'pager' }, more))

  function draw() {
    if (!rows.length) {
      fill(body, h('tr', {}, h('td', { colspan: 6 }, 'No attempt yet (or none since it was last idle).')))
      more.hidden = true
      return
    }
    fill(body, rows.slice(0, shown).map((a) => h('tr', { class: a.result },
      h('td', {}, when(a.at)),
      h('td', {}, h('code', {}, a.message_id)),
      h('td', {}, h('span', { class: `result ${a.result}` }, a.result)),
      h('td', {}, statusText(a)),
      h('td', { class: 'num' }, ms(a.duration_ms)),
      h('td', { class: 'answer' }, answerOf(a)))))
    labelled(body.closest('table'))
    const left = rows.length - Math.min(shown, rows.length)
    more.hidden = left === 0
    more.textContent = `Show ${Math.min(left, PHONE_ROWS)} more (${left} not shown)`
  }

  async function load() {
    let page, source
    try {
      [page, source] = await Promise.all([
        api.get(`${own}/attempts`),
        api.get(`/sources/${api.enc(name)}`)])
    } catch (err) {
      if (ctx.current()) refused(main, name, err, subscription)
      return
    }
    if (!ctx.current()) return
    if (sub) {
      const found = source.subscriptions.find((s) => describe(s).name === subscription)
      const d = found ? describe(found) : null
      fill(url, d ? h('code', {}, `${d.method} ${d.url}`) : '', d && !d.enabled ? h('span', { class: 'badge off' }, 'off') : null)
    } else {
      const hook = source.webhooks[index]
      fill(url, h('code', {}, hook ? hook.url : ''))
    }
    asOf.textContent = `as of ${when(new Date().toISOString())}`
    rows = page.attempts
    draw()
  }
  refresh.addEventListener('click', load)
  more.addEventListener('click', () => { shown += PHONE_ROWS; draw() })
  load()
  return null
}
