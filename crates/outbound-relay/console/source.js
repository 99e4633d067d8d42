// A source: each webhook's health (state, the last 5 minutes' success rate and p50/p99,
// messages waiting, the last error) and its messages delivered and failed in each minute of
// the last hour, asked again every 5 seconds while shown.

import * as api from './api.js'
import { h, fill, badge, when, ms, percent, count, labelled } from './dom.js'
import { chart } from './chart.js'
import { recentAlerts } from './alerts.js'

const EVERY_MS = 5000

// The source's title and its screens, `active` marked as the current page.
export function heading(name, active) {
  const base = `#/sources/${encodeURIComponent(name)}`
  const tab = (href, label, key) => h('li', {}, h('a', { href, 'aria-current': key === active ? 'page' : null }, label))
  return [
    h('h1', {}, name),
    h('nav', { class: 'tabs', 'aria-label': `Source ${name}` }, h('ul', {},
      tab(base, 'Health', 'health'),
      tab(`${base}/dead-letters`, 'Dead letters', 'dead-letters'),
      tab(`${base}/settings`, 'Webhooks and secret', 'settings'),
      tab(`${base}/subscriptions`, 'Subscriptions', 'subscriptions'),
      tab(`${base}/tokens`, 'Tokens', 'tokens'),
      tab(`${base}/audit`, 'Audit', 'audit'))),
  ]
}

// An answer refused (403: another source's, 404: none, or no such subscription) in place of
// the screen.
export function refused(main, name, err, subscription) {
  fill(main, h('h1', {}, name), h('p', { class: 'error', role: 'alert' },
    err.status === 403 ? `${err.message}: this token cannot see source “${name}”.`
      : err.status === 404 && err.field === 'subscription' ? `Source “${name}” has no subscription “${subscription}”.`
        : err.status === 404 ? `No source “${name}” (${err.message}).` : err.message))
}

// Whether a webhook has never been tried (since the relay started): "healthy" would say
// what nobody knows yet.
export function untried(hook) {
  return hook.attempts_5m === 0 && !hook.last_success && !hook.last_error
}

// What became of the messages sent to a webhook since the relay started. Success at any one
// webhook is success: what another webhook took while this one failed it is named, not
// counted as delivered here.
function messages(m, row) {
  if (!m) return []
  return [
    row('Delivered here', count(m.delivered)),
    row('Failed here', m.failed ? h('span', { class: 'error-text' }, count(m.failed)) : '0'),
    row('Retrying', count(m.retrying)),
    m.abandoned ? row('Given up', [h('span', { class: 'error-text' }, count(m.abandoned)),
      h('span', { class: 'muted' }, ' — it failed them and another webhook took them (success at any one webhook is success), so they were not tried here again')]) : null,
  ]
}

function card(hook, config, name) {
  const on = !config || config.enabled !== false
  const attempts = `#/sources/${encodeURIComponent(name)}/webhooks/${hook.webhook}`
  const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)]
  const state = !on ? h('span', { class: 'badge off' }, 'off')
    : hook.state === 'healthy' && untried(hook) ? h('span', { class: 'badge none' }, 'not tried yet')
      : badge(hook.state)
  return h('li', { class: 'card webhook', 'data-webhook': hook.webhook },
    h('h3', {}, `Webhook ${hook.webhook + 1} `, state),
    h('p', { class: 'url' }, h('code', {}, config ? config.url : hook.url)),
    h('dl', { class: 'facts' },
      row('Success (5 min)', `${percent(hook.success_rate_5m)} of ${count(hook.attempts_5m)}`),
      row('p50 / p99', `${ms(hook.p50_ms)} / ${ms(hook.p99_ms)}`),
      row('Waiting', count(hook.waiting)),
      config && config.rate_limit ? row('Rate limit', `${count(config.rate_limit.per_second)}/s, bursts of ${count(config.rate_limit.burst)}; ${count(hook.throttled)} waited for it`) : null,
      row('Failures in a row', count(hook.consecutive_failures)),
      ...messages(hook.messages, row),
      row('Last success', when(hook.last_success) || '–'),
      hook.last_error ? row('Last error', [h('span', { class: 'error-text' }, hook.last_error.message), ` (${when(hook.last_error.at)})`]) : null),
    h('p', {}, h('a', { href: attempts }, 'Recent attempts')))
}

export function render(main, ctx) {
  const { name } = ctx.params
  const path = `/sources/${api.enc(name)}`
  const hooks = h('ul', { class: 'cards' })
  const hour = h('div', { class: 'chart' })
  const meta = h('p', { class: 'meta' })
  const updated = h('span', { class: 'muted as-of' })
  const refresh = h('button', { type: 'button' }, 'Refresh')
  const alertsBox = h('section', { class: 'recent-alerts' })
  fill(main, ...heading(name, 'health'), meta,
    h('div', { class: 'toolbar' }, refresh, updated),
    h('section', { 'aria-labelledby': 'hooks-title' }, h('h2', { id: 'hooks-title' }, 'Webhooks'), hooks),
    h('section', { 'aria-labelledby': 'hour-title' }, h('h2', { id: 'hour-title' }, 'The last hour'), hour),
    alertsBox)
  let timer = null
  let first = true
  let last = null
  // A window resized (a phone turned): the chart drawn again at its new width.
  // The minutes' table stays open, and keeps the focus, across refreshes.
  const redraw = () => {
    if (!last) return
    const was = hour.querySelector('details.minutes')
    const open = !!(was && was.open)
    const focused = !!(was && was.contains(document.activeElement))
    fill(hour, chart(last, hour.clientWidth - 24))
    const now = hour.querySelector('details.minutes')
    now.open = open
    const table = now.querySelector('table')
    if (table) labelled(table)
    if (focused) now.querySelector('summary').focus({ preventScroll: true })
  }
  window.addEventListener('resize', redraw)

  async function load() {
    clearTimeout(timer)
    let source, health, activity
    try {
      [source, health, activity] = await Promise.all([
        api.get(path), api.get(`${path}/health`), api.get(`${path}/activity`)])
    } catch (err) {
      if (!ctx.current()) return
      if (first) { refused(main, name, err); return }
      ctx.say(`Could not refresh: ${err.message}`)
      timer = setTimeout(load, EVERY_MS)
      return
    }
    if (!ctx.current()) return
    first = false
    meta.textContent = `${source.managed_by === 'file' ? 'Managed by relay.toml' : 'Managed through the admin API'} · ` +
      `${source.write_keys.length} write key${source.write_keys.length === 1 ? '' : 's'} · ` +
      `signing secret ${source.has_shared_secret ? 'set' : 'not set'}`
    fill(hooks, health.webhooks.length ? health.webhooks.map((w) => card(w, source.webhooks[w.webhook], name))
      : h('li', {}, 'This source has no webhook.'))
    last = activity
    redraw()
    recentAlerts(alertsBox, name, ctx.current)
    updated.textContent = ` as of ${when(new Date().toISOString())}`
    timer = setTimeout(load, EVERY_MS)
  }
  refresh.addEventListener('click', load)
  load()
  return () => { clearTimeout(timer); window.removeEventListener('resize', redraw) }
}
