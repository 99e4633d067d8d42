// A source's dead letters: its counts, a page at a time (newest first, 50 a page, the
// relay pages: 100,000 cost a page each), one found by its messageId, one opened with its
// body and last attempts, replayed or discarded, and every one since a time replayed in the
// background, its progress asked every second until done.

import * as api from './api.js'
import { h, fill, labelled, when, count } from './dom.js'
import { heading, refused } from './source.js'

const PAGE = 50

export function render(main, ctx) {
  const { name } = ctx.params
  const base = `/sources/${api.enc(name)}/dead-letters`
  let cursors = [null]
  let polling = null
  const stats = h('p', { class: 'meta', role: 'status' })
  const body = h('tbody')
  const prev = h('button', { type: 'button', disabled: true }, 'Newer')
  const next = h('button', { type: 'button', disabled: true }, 'Older')
  const detail = h('section', { class: 'detail', 'aria-live': 'polite', hidden: true, 'aria-labelledby': 'letter-title' })
  const progress = h('div', { class: 'progress', role: 'status', 'aria-live': 'polite' })
  const find = h('input', { id: 'find', type: 'search', autocomplete: 'off', spellcheck: 'false' })
  const findForm = h('form', { class: 'search', role: 'search' },
    h('label', { for: 'find' }, 'Find by messageId'), find, h('button', { type: 'submit' }, 'Find'))
  const since = h('input', { id: 'since', type: 'datetime-local', step: 1, required: true })
  const replayForm = h('form', { class: 'replay-all' },
    h('label', { for: 'since' }, 'Replay every dead letter that failed since'), since,
    h('button', { type: 'submit', class: 'primary' }, 'Replay since'),
    h('p', { class: 'help' }, 'Your local time. Each is sent again with its messageId, signed with the current secret, to the current webhooks.'))
  fill(main, ...heading(name, 'dead-letters'), stats, findForm, replayForm, progress, detail,
    h('div', { class: 'scroll' }, h('table', { class: 'list dead-letters' },
      h('thead', {}, h('tr', {}, ['Message', 'Failed at', 'Reason', 'Rounds', 'Action'].map((c) => h('th', { scope: 'col', class: c === 'Rounds' ? 'num' : null }, c)))),
      body)),
    h('div', { class: 'pager' }, prev, next))

  async function load() {
    const params = new URLSearchParams({ limit: String(PAGE) })
    const cursor = cursors[cursors.length - 1]
    if (cursor) params.set('cursor', cursor)
    let page
    try {
      page = await api.get(`${base}?${params}`)
    } catch (err) {
      if (ctx.current()) refused(main, name, err)
      return
    }
    if (!ctx.current()) return
    const s = page.stats || {}
    stats.textContent = `${count(s.count)} dead letter${s.count === 1 ? '' : 's'} (${count(s.bytes)} bytes) · ${count(s.evicted)} evicted for room · ${count(s.expired)} expired`
    fill(body, page.dead_letters.length ? page.dead_letters.map(row)
      : h('tr', {}, h('td', { colspan: 5 }, cursors.length > 1 ? 'No older dead letter.' : 'No dead letter: everything failed was delivered or replayed.')))
    labelled(body.closest('table'))
    prev.disabled = cursors.length === 1
    next.disabled = !page.next
    next.dataset.cursor = page.next || ''
  }

  function row(d) {
    return h('tr', { 'data-message-id': d.message_id },
      h('th', { scope: 'row' }, h('button', { type: 'button', class: 'link', onclick: () => open(d.message_id) }, d.message_id)),
      h('td', {}, when(d.failed_at)),
      h('td', {}, d.reason, d.replaying ? h('span', { class: 'badge replaying' }, 'replaying') : null),
      h('td', { class: 'num' }, count(d.rounds)),
      h('td', {}, h('button', { type: 'button', disabled: d.replaying, onclick: () => replayOne(d.message_id) }, 'Replay')))
  }

  async function open(id) {
    let d
    try {
      d = await api.get(`${base}/${api.enc(id)}`)
    } catch (err) {
      if (!ctx.current()) return
      detail.hidden = false
      fill(detail, h('h2', { id: 'letter-title' }, 'Not found'),
        h('p', { class: 'error' }, err.status === 404 ? `No dead letter with messageId “${id}”.` : err.message))
      return
    }
    if (!ctx.current()) return
    detail.hidden = false
    const attempts = (d.last_attempts || []).map((a) => h('li', {},
      `${when(a.at)} webhook ${a.webhook + 1}: ${a.status ?? a.error ?? a.result}`,
      a.answer ? h('pre', { class: 'answer' }, a.answer) : null))
    fill(detail,
      h('h2', { id: 'letter-title' }, 'Dead letter ', h('code', {}, d.message_id)),
      h('p', {}, `Failed ${when(d.failed_at)}: ${d.reason}${d.detail ? ` (${d.detail})` : ''}; ${count(d.rounds)} round${d.rounds === 1 ? '' : 's'}; ${count(d.size)} bytes.`),
      h('div', { class: 'toolbar' },
        h('button', { type: 'button', class: 'primary', disabled: d.replaying, onclick: () => replayOne(d.message_id) }, 'Replay this one'),
        h('button', { type: 'button', class: 'danger', onclick: () => discard(d.message_id) }, 'Discard'),
        h('button', { type: 'button', onclick: () => { detail.hidden = true } }, 'Close')),
      h('h3', {}, 'Last attempts'), h('ul', { class: 'attempts' }, attempts),
      h('h3', {}, 'Body as sent'),
      h('pre', { class: 'body' }, JSON.stringify(d.body, null, 2)))
    detail.querySelector('h2').setAttribute('tabindex', '-1')
    detail.querySelector('h2').focus()
  }

  async function replayOne(id) {
    try {
      const p = await api.call('POST', `${base}/${api.enc(id)}/replay`, {})
      follow(p, `Replaying ${id}`)
    } catch (err) {
      ctx.say(`Replay refused: ${err.message}`)
    }
  }

  async function discard(id) {
    try {
      await api.call('DELETE', `${base}/${api.enc(id)}`)
      detail.hidden = true
      ctx.say(`Dead letter ${id} discarded.`)
      load()
    } catch (err) {
      ctx.say(`Discard refused: ${err.message}`)
    }
  }

  // A replay's progress, asked every second until it is done.
  function follow(p, label) {
    clearTimeout(polling)
    const show = (q) => fill(progress, h('p', { class: q.done ? 'done' : '' },
      `${label}: ${q.done ? 'done' : 'under way'} · ${count(q.total)} in all · ${count(q.sent)} sent · ` +
      `${count(q.delivered)} delivered · ${count(q.failed)} failed · ${count(q.skipped)} skipped`))
    show(p)
    load()
    const tick = async () => {
      if (!ctx.current()) return
      try {
        const q = await api.get(`${base}/replays/${p.id}`)
        if (!ctx.current()) return
        show(q)
        if (q.done) { load(); return }
      } catch (err) {
        ctx.say(`Progress unavailable: ${err.message}`)
        return
      }
      polling = setTimeout(tick, 1000)
    }
    polling = setTimeout(tick, 1000)
  }

  // An hour ago, in the field's local form, to start from.
  const ago = new Date(Date.now() - 3600 * 1000)
  const p2 = (n) => String(n).padStart(2, '0')
  since.value = `${ago.getFullYear()}-${p2(ago.getMonth() + 1)}-${p2(ago.getDate())}T${p2(ago.getHours())}:${p2(ago.getMinutes())}:${p2(ago.getSeconds())}`

  findForm.addEventListener('submit', (e) => {
    e.preventDefault()
    const id = find.value.trim()
    if (id) open(id)
  })
  replayForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    const at = new Date(since.value)
    if (!since.value || Number.isNaN(at.getTime())) { ctx.say('Choose a time to replay from.'); since.focus(); return }
    try {
      const p = await api.call('POST', `${base}/replay`, { since: at.toISOString() })
      follow(p, `Replay since ${when(at.toISOString())}`)
    } catch (err) {
      ctx.say(`Replay refused: ${err.message}`)
    }
  })
  next.addEventListener('click', () => { cursors.push(next.dataset.cursor); load() })
  prev.addEventListener('click', () => { if (cursors.length > 1) { cursors.pop(); load() } })
  load()
  return () => clearTimeout(polling)
}
