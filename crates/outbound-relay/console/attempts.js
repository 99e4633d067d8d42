// A webhook's kept attempts (or a subscription's), newest first: when, the message, the
// result, the status or what failed without one, how long it took, and the first bytes of a
// failure's answer (as text: an answer is the receiver's, whatever it holds). Chosen by
// result, status, message and time (kept in the address: Back and a shared link keep them);
// a failure's details (its request's headers, credentials redacted, the answer's headers and
// all of it that is kept) asked of the relay when opened, with links to all of its message's
// attempts and to its dead letter. 10 at a time on a phone, 100 on a desktop, more on request.
// A long answer shows its start, the rest behind a disclosure: no box scrolls, so nothing
// needs a tab stop of its own to be read.

import * as api from './api.js'
import { h, fill, labelled, when, ms, count } from './dom.js'
import { heading, refused } from './source.js'
import { subscriptionHeading, describe } from './subscriptions.js'

const PHONE_ROWS = 10
const DESKTOP_ROWS = 100
const SHORT = 160
// The most asked for at once (the relay keeps up to its attempt_log_size).
const ASKED = 1000
const RESULTS = [['', 'Any result'], ['delivered', 'Delivered'], ['retryable', 'Failed, retryable'], ['permanent', 'Failed for good']]

// The filters in the address: `#/sources/x/webhooks/0?result=&status=&message=&since=&until=`
// (times as the inputs write them, local).
function filtersOf() {
  const q = new URLSearchParams(location.hash.split('?')[1] || '')
  const get = (k) => q.get(k) || ''
  return { result: get('result'), status: get('status'), message: get('message'), since: get('since'), until: get('until') }
}

function keepFilters(f) {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v)
  const path = location.hash.split('?')[0]
  history.replaceState(history.state, '', `${path}${q.toString() ? `?${q}` : ''}`)
}

// The relay's query for `f`: local times as RFC 3339.
function queryOf(f) {
  const q = new URLSearchParams({ limit: String(ASKED) })
  if (f.result) q.set('result', f.result)
  if (f.status) q.set('status', f.status)
  if (f.message) q.set('message_id', f.message)
  for (const k of ['since', 'until']) {
    const t = f[k] ? new Date(f[k]) : null
    if (t && !Number.isNaN(t.getTime())) q.set(k, t.toISOString())
  }
  return q.toString()
}

function headerTable(caption, list) {
  if (!list || !list.length) return h('p', { class: 'muted' }, `${caption}: none kept.`)
  return h('table', { class: 'list headers' }, h('caption', {}, caption),
    h('tbody', {}, list.map((x) => h('tr', {}, h('th', { scope: 'row' }, h('code', {}, x.name)), h('td', {}, h('code', {}, x.value))))))
}

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
  const step = phone ? PHONE_ROWS : DESKTOP_ROWS
  let shown = step
  let rows = []
  const filters = filtersOf()
  const result = h('select', { id: 'f-result' }, RESULTS.map(([v, label]) => h('option', { value: v, selected: v === filters.result }, label)))
  const status = h('input', { id: 'f-status', type: 'number', min: 100, max: 599, inputmode: 'numeric', value: filters.status })
  const message = h('input', { id: 'f-message', type: 'search', autocomplete: 'off', spellcheck: 'false', value: filters.message })
  const since = h('input', { id: 'f-since', type: 'datetime-local', step: 1, value: filters.since })
  const until = h('input', { id: 'f-until', type: 'datetime-local', step: 1, value: filters.until })
  const clear = h('button', { type: 'button' }, 'Clear')
  // Each label with its field: they wrap together.
  const field = (id, label, input) => h('span', { class: 'field' }, h('label', { for: id }, label), input)
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Choose attempts' },
    field('f-result', 'Result', result), field('f-status', 'Status', status),
    field('f-message', 'Message', message), field('f-since', 'From', since),
    field('f-until', 'Until', until), h('button', { type: 'submit' }, 'Show'), clear)
  const matched = h('p', { class: 'meta', role: 'status' })
  const lettersOf = (id) => `#/sources/${encodeURIComponent(name)}${sub ? `/subscriptions/${encodeURIComponent(subscription)}` : ''}/dead-letters?id=${encodeURIComponent(id)}`
  const attemptsOf = (id) => `${location.hash.split('?')[0]}?message=${encodeURIComponent(id)}`
  fill(main, ...(sub ? subscriptionHeading(name, subscription, 'attempts')
    : [...heading(name, 'health'), h('h2', {}, `Webhook ${index + 1}: recent attempts`)]), url,
    h('div', { class: 'toolbar' }, refresh,
      sub ? null : h('a', { href: `#/sources/${encodeURIComponent(name)}` }, 'Back to health'), asOf),
    form, matched,
    h('div', { class: 'scroll' }, h('table', { class: 'list attempts' },
      h('thead', {}, h('tr', {}, ['When', 'Message', 'Result', 'Status', 'Duration', 'Answer', 'Details'].map((c) => h('th', { scope: 'col', class: c === 'Duration' ? 'num' : null }, c)))),
      body)),
    h('div', { class: 'pager' }, more))

  // A failure's details, asked of the relay when opened: one message's attempts carry their
  // headers and all of their answer that is kept.
  function details(a) {
    const box = h('div', { class: 'attempt-detail' })
    const links = h('p', {}, h('a', { href: attemptsOf(a.message_id) }, 'All attempts of this message'),
      a.result === 'delivered' ? null : [' · ', h('a', { href: lettersOf(a.message_id) }, 'Its dead letter, if any')])
    const d = h('details', { class: 'attempt' }, h('summary', {}, a.result === 'delivered' ? 'Links' : 'Headers and answer'), links, box)
    let asked = false
    d.addEventListener('toggle', async () => {
      if (!d.open || asked || a.result === 'delivered') return
      asked = true
      fill(box, h('p', { class: 'muted' }, 'Asking…'))
      try {
        const one = await api.get(`${own}/attempts?message_id=${encodeURIComponent(a.message_id)}&limit=${ASKED}`)
        const same = one.attempts.find((x) => x.at === a.at) || one.attempts[0]
        if (!same) { fill(box, h('p', { class: 'muted' }, 'No longer kept.')); return }
        fill(box, headerTable('Request headers (credentials redacted)', same.request_headers),
          headerTable('Answer headers', same.answer_headers),
          same.answer_bytes ? h('p', {}, `The answer’s first ${count(same.answer_bytes)} bytes:`) : null,
          same.answer !== undefined ? h('pre', { class: 'answer whole' }, same.answer) : answerOf(same))
      } catch (err) {
        fill(box, h('p', { class: 'error' }, err.message))
      }
    })
    return d
  }

  function draw() {
    if (!rows.length) {
      const chosen = Object.values(filtersOf()).some(Boolean)
      fill(body, h('tr', {}, h('td', { colspan: 7 }, chosen ? 'No kept attempt matches.' : 'No attempt yet (or none since it was last idle).')))
      more.hidden = true
      return
    }
    fill(body, rows.slice(0, shown).map((a) => h('tr', { class: a.result },
      h('td', {}, when(a.at)),
      h('td', {}, h('a', { href: attemptsOf(a.message_id), title: 'All attempts of this message' }, h('code', {}, a.message_id))),
      h('td', {}, h('span', { class: `result ${a.result}` }, a.result)),
      h('td', {}, statusText(a)),
      h('td', { class: 'num' }, ms(a.duration_ms)),
      h('td', { class: 'answer' }, answerOf(a)),
      h('td', {}, details(a)))))
    labelled(body.closest('table'))
    const left = rows.length - Math.min(shown, rows.length)
    more.hidden = left === 0
    more.textContent = `Show ${Math.min(left, step)} more (${left} not shown)`
  }

  // Only the last question's answer is drawn (a filter changed while one was out).
  let questions = 0
  async function load() {
    const mine = ++questions
    let page, source
    try {
      [page, source] = await Promise.all([
        api.get(`${own}/attempts?${queryOf(filtersOf())}`),
        api.get(`/sources/${api.enc(name)}`)])
    } catch (err) {
      if (ctx.current()) refused(main, name, err, subscription)
      return
    }
    if (!ctx.current() || mine !== questions) return
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
    const f = filtersOf()
    const chosen = Object.values(f).some(Boolean)
    matched.textContent = `${count(rows.length)}${rows.length === ASKED ? '+' : ''} kept attempt${rows.length === 1 ? '' : 's'}${chosen ? (rows.length === 1 ? ' matches' : ' match') : ''}${f.message ? ` (message ${f.message})` : ''}`
    draw()
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    keepFilters({ result: result.value, status: status.value, message: message.value.trim(), since: since.value, until: until.value })
    shown = step
    load()
  })
  clear.addEventListener('click', () => {
    for (const input of [status, message, since, until]) input.value = ''
    result.value = ''
    keepFilters({})
    shown = step
    load()
  })
  refresh.addEventListener('click', load)
  more.addEventListener('click', () => { shown += step; draw() })
  load()
  return null
}
