// The operator's alerts this relay sent (GET /admin/alerts): a URL's circuit opened or
// closed, dead letters or messages waiting past a threshold and back, a spool near its cap;
// where they go and whether that URL takes them. Asked again every 5 seconds. A source's
// token sees its own source's (on its Health screen, `recentAlerts`).

import * as api from './api.js'
import { h, fill, labelled, when, badge, count } from './dom.js'

const EVERY_MS = 5000

const EVENTS = {
  'webhook.circuit_opened': 'circuit opened',
  'webhook.circuit_closed': 'circuit closed',
  'source.dead_letters_above': 'dead letters over the threshold',
  'source.dead_letters_below': 'dead letters back under the threshold',
  'source.waiting_above': 'messages waiting over the threshold',
  'source.waiting_below': 'messages waiting back under the threshold',
  'source.spool_near_full': 'spool near its cap',
  'source.spool_ok': 'spool back under its threshold',
}

// What an alert says, in words.
function facts(a) {
  const p = a.properties || {}
  const out = []
  if (p.webhook !== undefined) out.push(`webhook ${p.webhook + 1} (${p.url})`)
  if (p.consecutive_failures !== undefined && a.event.endsWith('opened')) out.push(`${count(p.consecutive_failures)} failures in a row`)
  if (p.last_error) out.push(`last error: ${p.last_error}`)
  if (p.dead_letters !== undefined) out.push(`${count(p.dead_letters)} dead letters (threshold ${count(p.threshold)})`)
  if (p.waiting !== undefined) out.push(`${count(p.waiting)} waiting (threshold ${count(p.threshold)})`)
  if (p.percent !== undefined) out.push(`${p.percent} % of ${count(p.spool_max_bytes)} bytes (threshold ${p.threshold_percent} %)`)
  return out.join('; ')
}

function rows(list, withSource) {
  return list.map((a) => h('tr', { 'data-event': a.event },
    h('td', {}, when(a.at)),
    h('td', {}, EVENTS[a.event] || a.event),
    withSource ? h('td', {}, h('a', { href: `#/sources/${encodeURIComponent(a.source)}` }, a.source)) : null,
    h('td', {}, facts(a))))
}

function table(withSource) {
  const body = h('tbody')
  const heads = ['When', 'Alert', withSource ? 'Source' : null, 'Details'].filter(Boolean)
  const el = h('div', { class: 'scroll' }, h('table', { class: 'list alerts' },
    h('thead', {}, h('tr', {}, heads.map((c) => h('th', { scope: 'col' }, c)))), body))
  return { el, body }
}

// The alerts of source `name` (its Health screen): the last 5, or nothing when none.
export async function recentAlerts(box, name, current) {
  let list
  try {
    list = await api.get(`/alerts?${new URLSearchParams({ source: name, limit: '5' })}`)
  } catch {
    return
  }
  if (!current()) return
  if (!list.alerts.length) { fill(box); box.removeAttribute('aria-labelledby'); return }
  const t = table(false)
  fill(t.body, rows(list.alerts, false))
  labelled(t.body.closest('table'))
  fill(box, h('h2', { id: 'alerts-title' }, 'Recent alerts'), t.el)
  box.setAttribute('aria-labelledby', 'alerts-title')
}

export function render(main, ctx) {
  const where = h('p', { class: 'meta' })
  const asOf = h('span', { class: 'muted as-of' })
  const t = table(true)
  fill(main, h('h1', {}, 'Alerts'),
    h('p', { class: 'help' }, 'What this relay told the operator (alert_url in relay.toml), newest first: its last 500 since it started.'),
    where, h('div', { class: 'toolbar' }, asOf), t.el)
  let timer = null
  async function load() {
    let list
    try {
      list = await api.get('/alerts')
    } catch (err) {
      if (ctx.current()) fill(t.body, h('tr', {}, h('td', { colspan: 4, class: 'error' }, err.message)))
      return
    }
    if (!ctx.current()) return
    fill(where, list.on ? ['Alerts go to ', h('code', {}, list.url || ''), ', signed with alert_secret. That URL: ', badge(list.state)]
      : 'Alerts are off: set alert_url and alert_secret in relay.toml (and restart) to have them sent.')
    asOf.textContent = `as of ${when(new Date().toISOString())}`
    fill(t.body, list.alerts.length ? rows(list.alerts, true) : h('tr', {}, h('td', { colspan: 4 }, 'No alert sent.')))
    labelled(t.body.closest('table'))
    timer = setTimeout(load, EVERY_MS)
  }
  load()
  return () => clearTimeout(timer)
}
