// The audit trail (GET /admin/audit): who changed what and when, newest first, a page at a
// time. The admin sees every source's entries (or one's: `#/sources/web/audit`); a source's
// token sees its own source's only, as the API decides.

import * as api from './api.js'
import { h, fill, labelled, when, fieldLabel } from './dom.js'
import { heading, refused } from './source.js'

const PAGE = 50

const ACTIONS = {
  'source.created': 'source created',
  'source.updated': 'settings changed',
  'source.deleted': 'source deleted',
  'token.created': 'token made',
  'token.revoked': 'token revoked',
  'dead_letter.discarded': 'dead letter discarded',
  'dead_letter.replayed': 'dead letter replayed',
  'dead_letters.replayed': 'dead letters replayed',
  'user.deleted': 'user deletion sent',
  'audience.synced': 'audience synced',
}

function who(by) {
  if (by.caller === 'admin') return 'admin token'
  if (by.caller === 'relay') return 'the relay'
  return h('span', {}, 'token ', h('code', {}, by.token || '?'), ` of ${by.source}`)
}

// What an entry's facts say, in words (never a secret's value: the API keeps none).
function what(e) {
  const d = e.detail || {}
  const out = []
  if (d.changed) out.push(d.changed.length ? `changed: ${d.changed.map(fieldLabel).join('; ')}` : 'nothing changed')
  if (d.token) out.push(h('span', {}, 'token ', h('code', {}, d.token)))
  if (d.message_id) out.push(h('span', {}, 'messageId ', h('code', {}, d.message_id)))
  if (d.since || d.until) out.push(`failed ${d.since ? `since ${when(d.since)}` : ''}${d.since && d.until ? ' and ' : ''}${d.until ? `before ${when(d.until)}` : ''}`)
  if (d.webhook !== undefined) out.push(`to webhook ${/^\d+$/.test(d.webhook) ? Number(d.webhook) + 1 : d.webhook}`)
  if (d.total !== undefined) out.push(`${d.total} sent again`)
  if (d.user_id) out.push(h('span', {}, 'userId ', h('code', {}, d.user_id)))
  if (d.audience) out.push(`audience ${d.audience}: ${d.joined ?? 0} joined, ${d.left ?? 0} left`)
  if (d.reason) out.push(d.reason)
  return out.flatMap((x, i) => (i ? ['; ', x] : [x]))
}

export function render(main, ctx) {
  const { name } = ctx.params
  let cursors = [null]
  const body = h('tbody')
  const note = h('p', { class: 'meta', role: 'status' })
  const prev = h('button', { type: 'button', disabled: true }, 'Newer')
  const next = h('button', { type: 'button', disabled: true }, 'Older')
  const top = name ? heading(name, 'audit') : [h('h1', {}, 'Audit trail')]
  fill(main, ...top,
    h('p', { class: 'help' }, 'Every change and destructive action, with who did it and when: for a change of settings the fields it changed, never a secret.'),
    note,
    h('div', { class: 'scroll' }, h('table', { class: 'list audit' },
      h('thead', {}, h('tr', {}, ['When', 'Who', 'What was done', name ? null : 'Source', 'Details']
        .filter(Boolean).map((c) => h('th', { scope: 'col' }, c)))),
      body)),
    h('div', { class: 'pager' }, prev, next))

  async function load() {
    const params = new URLSearchParams({ limit: String(PAGE) })
    const before = cursors[cursors.length - 1]
    if (before) params.set('before', before)
    if (name) params.set('source', name)
    let page
    try {
      page = await api.get(`/audit?${params}`)
    } catch (err) {
      if (!ctx.current()) return
      if (name) refused(main, name, err)
      else fill(body, h('tr', {}, h('td', { colspan: 5, class: 'error' }, err.message)))
      return
    }
    if (!ctx.current()) return
    note.textContent = page.entries.length ? '' : (cursors.length > 1 ? 'No older entry.' : 'Nothing recorded yet.')
    fill(body, page.entries.map((e) => h('tr', { 'data-action': e.action },
      h('td', {}, when(e.at)),
      h('td', {}, who(e.by)),
      h('td', {}, ACTIONS[e.action] || e.action),
      name ? null : h('td', {}, e.source ? h('a', { href: `#/sources/${encodeURIComponent(e.source)}/audit` }, e.source) : '–'),
      h('td', {}, what(e)))))
    labelled(body.closest('table'))
    prev.disabled = cursors.length === 1
    next.disabled = !page.next
    next.dataset.cursor = page.next || ''
  }
  next.addEventListener('click', () => { cursors.push(next.dataset.cursor); load() })
  prev.addEventListener('click', () => { if (cursors.length > 1) { cursors.pop(); load() } })
  load()
  return null
}
