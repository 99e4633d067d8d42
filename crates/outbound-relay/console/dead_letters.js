// A source's dead letters: its counts, a page at a time (newest first, 50 a page, 20 on a
// phone; the relay pages: 100,000 cost a page each), one found by its messageId (or linked
// to: `?id=`), one opened with its body and last attempts, replayed or discarded (asked
// first), and every one since a time replayed in the background (its count asked of the
// relay first, then confirmed), its progress asked every second until done. Each action's
// result is shown next to its button; a replay's progress outlives the screen (it is
// followed again on return).
// Searched by a text of their events (a user, an event, an order id): the search is kept in
// the address (`?q=`), and its results grow with "More", since the relay reads a bounded
// number of letters a page and may answer a short page that goes on.

import * as api from './api.js'
import { h, fill, labelled, when, count } from './dom.js'
import { heading, refused } from './source.js'
import { subscriptionHeading } from './subscriptions.js'
import { confirmAction } from './dialog.js'

const PAGE = 50
const PHONE_PAGE = 20

// The search in the address (`#/…/dead-letters?q=`), as the sources list keeps its own: a
// link or a reload shows the same letters.
function searched() {
  return new URLSearchParams(location.hash.split('?')[1] || '').get('q') || ''
}

function keepSearch(q) {
  const path = location.hash.split('?')[0]
  history.replaceState(history.state, '', q ? `${path}?${new URLSearchParams({ q })}` : path)
}

// The replays under way or last finished, by source or subscription: kept while the page is
// open, so leaving the screen and coming back shows them where they are.
const replays = new Map()

// A reason in words: "expired" here is the retry window's end (not the dead letters
// removed after their retention, which the counts call so).
export function reasonText(reason) {
  if (reason === 'expired') return 'gave up: retry window ended'
  if (reason === 'blocked') return 'blocked by the network rules'
  if (reason === 'gone') return 'gone (410: the receiver asked to stop)'
  return reason
}

// `subscription`: that subscription's dead letters (its routes, the same shapes).
export function render(main, ctx) {
  const { name, subscription } = ctx.params
  const sub = subscription !== undefined
  const base = sub ? `/sources/${api.enc(name)}/subscriptions/${api.enc(subscription)}/dead-letters`
    : `/sources/${api.enc(name)}/dead-letters`
  const whereTo = sub ? 'to the subscription’s URL' : 'to the current webhooks'
  const size = window.matchMedia('(max-width: 700px)').matches ? PHONE_PAGE : PAGE
  let cursors = [null]
  let polling = null
  let query = searched()
  // Letters a search has listed so far (its pages are added to the table, not swapped).
  let shown = 0
  const stats = h('p', { class: 'meta', role: 'status' })
  const body = h('tbody')
  const prev = h('button', { type: 'button', disabled: true }, 'Newer')
  const next = h('button', { type: 'button', disabled: true }, 'Older')
  const detail = h('section', { class: 'detail', hidden: true, 'aria-labelledby': 'letter-title' })
  const progress = h('div', { class: 'progress', role: 'status', 'aria-live': 'polite' })
  const find = h('input', { id: 'find', type: 'search', autocomplete: 'off', spellcheck: 'false' })
  const findForm = h('form', { class: 'search', role: 'search' },
    h('label', { for: 'find' }, 'Find by messageId'), find, h('button', { type: 'submit' }, 'Find'))
  const contains = h('input', {
    id: 'contains', type: 'search', name: 'q', autocomplete: 'off', spellcheck: 'false', value: query,
    'aria-describedby': 'contains-help',
  })
  const searchForm = h('form', { class: 'search', role: 'search', 'aria-label': 'Dead letters by their event' },
    h('label', { for: 'contains' }, 'Find in the event'), contains, h('button', { type: 'submit' }, 'Search'),
    h('p', { class: 'help', id: 'contains-help' },
      'Exact text of the event as sent, case-sensitive: "userId":"u7" finds user u7, not u70; an order id finds its order. Empty: every dead letter.'))
  const found = h('p', { class: 'meta found', role: 'status', 'aria-live': 'polite', hidden: true })
  const more = h('button', { type: 'button', hidden: true }, 'More')
  const since = h('input', { id: 'since', type: 'datetime-local', step: 1, required: true })
  const replayForm = h('form', { class: 'replay-all' },
    h('label', { for: 'since' }, 'Replay every dead letter that failed since'), since,
    h('button', { type: 'submit', class: 'primary' }, 'Replay since…'),
    h('p', { class: 'help' }, `Your local time. The relay counts them first and you confirm. Each is sent again with its messageId, signed with the current secret, ${whereTo}.`),
    progress)
  const head = sub ? subscriptionHeading(name, subscription, 'dead-letters') : heading(name, 'dead-letters')
  fill(main, ...head, stats, findForm, searchForm, replayForm, detail,
    h('div', { class: 'scroll' }, h('table', { class: 'list dead-letters' },
      h('thead', {}, h('tr', {}, ['Message', 'Failed at', 'Why', 'Rounds', 'Action'].map((c) => h('th', { scope: 'col', class: c === 'Rounds' ? 'num' : null }, c)))),
      body)),
    h('div', { class: 'pager' }, prev, next), h('div', { class: 'toolbar' }, found, more))

  // `after`: a search's next page, added to what it showed.
  async function load(after) {
    const params = new URLSearchParams({ limit: String(size) })
    const cursor = query ? after : cursors[cursors.length - 1]
    if (cursor) params.set('cursor', cursor)
    if (query) params.set('contains', query)
    let page
    try {
      page = await api.get(`${base}?${params}`)
    } catch (err) {
      if (!ctx.current()) return
      // A search the relay refuses (too long) is said beside it; the screen stays.
      if (query && err.status === 400) {
        found.hidden = false
        found.textContent = `Search refused: ${err.message}`
        return
      }
      refused(main, name, err, subscription)
      return
    }
    if (!ctx.current()) return
    const s = page.stats || {}
    stats.textContent = `${count(s.count)} dead letter${s.count === 1 ? '' : 's'} (${count(s.bytes)} bytes) · ` +
      `${count(s.evicted)} removed for room · ${count(s.expired)} removed after their retention`
    if (query) {
      showFound(page, after)
    } else {
      fill(body, page.dead_letters.length ? page.dead_letters.map(row)
        : h('tr', {}, h('td', { colspan: 5 }, cursors.length > 1 ? 'No older dead letter.' : 'No dead letter: everything failed was delivered or replayed.')))
    }
    labelled(body.closest('table'))
    prev.hidden = next.hidden = Boolean(query)
    found.hidden = !query
    more.hidden = !query || !page.next
    prev.disabled = cursors.length === 1
    next.disabled = !page.next
    next.dataset.cursor = page.next || ''
    more.dataset.cursor = page.next || ''
  }

  // A search's page: a short one with a next is not the end (the relay stopped reading at
  // its bound), so it says it goes on, and "More" reads on.
  function showFound(page, after) {
    const letters = page.dead_letters
    shown = (after ? shown : 0) + letters.length
    if (after) {
      if (letters.length) {
        if (body.querySelector('td[colspan]')) fill(body)
        body.append(...letters.map(row))
      }
    } else {
      fill(body, letters.length ? letters.map(row) : h('tr', {}, h('td', { colspan: 5 },
        page.next ? `None found yet holding “${query}”.` : `No dead letter holds “${query}”.`)))
    }
    const n = `${count(shown)} shown`
    found.textContent = !page.next
      ? (shown ? `${count(shown)} found holding “${query}”: all of them.` : `No dead letter holds “${query}”.`)
      : letters.length < size ? `${n}, searching on…` : `${n}; more may hold “${query}”.`
  }

  function row(d) {
    const result = h('span', { class: 'result', role: 'status' })
    const replay = h('button', { type: 'button', disabled: d.replaying }, 'Replay')
    replay.addEventListener('click', () => replayOne(d.message_id, [replay], result))
    return h('tr', { 'data-message-id': d.message_id },
      h('th', { scope: 'row' }, h('button', { type: 'button', class: 'link', onclick: () => open(d.message_id) }, d.message_id)),
      h('td', {}, when(d.failed_at)),
      h('td', {}, reasonText(d.reason), d.replaying ? h('span', { class: 'badge replaying' }, 'replaying') : null),
      h('td', { class: 'num' }, count(d.rounds)),
      h('td', {}, replay, result))
  }

  async function open(id) {
    let d
    try {
      d = await api.get(`${base}/${api.enc(id)}`)
    } catch (err) {
      if (!ctx.current()) return
      detail.hidden = false
      fill(detail, h('h2', { id: 'letter-title', tabindex: '-1' }, 'Not found'),
        h('p', { class: 'error' }, err.status === 404 ? `No dead letter with messageId “${id}”.` : err.message))
      detail.querySelector('h2').focus()
      return
    }
    if (!ctx.current()) return
    detail.hidden = false
    const attempts = (d.last_attempts || []).map((a) => h('li', {},
      `${when(a.at)}${sub ? '' : ` webhook ${a.webhook + 1}`}: ${a.status ?? a.error ?? a.result}`,
      a.answer ? h('pre', { class: 'answer' }, a.answer) : null))
    const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' })
    const replay = h('button', { type: 'button', class: 'primary', disabled: d.replaying }, 'Replay this one')
    const discardIt = h('button', { type: 'button', class: 'danger', disabled: d.replaying }, 'Discard…')
    replay.addEventListener('click', () => replayOne(d.message_id, [replay, discardIt], result))
    discardIt.addEventListener('click', () => discard(d.message_id, [replay, discardIt], result))
    fill(detail,
      h('h2', { id: 'letter-title', tabindex: '-1' }, 'Dead letter ', h('code', {}, d.message_id)),
      h('p', {}, `Failed ${when(d.failed_at)}: ${reasonText(d.reason)}${d.detail ? ` (${d.detail})` : ''}; ${count(d.rounds)} round${d.rounds === 1 ? '' : 's'}; ${count(d.size)} bytes.`),
      h('div', { class: 'toolbar' }, replay, discardIt,
        h('button', { type: 'button', onclick: () => { detail.hidden = true } }, 'Close'), result),
      h('h3', {}, 'Last attempts'), h('ul', { class: 'attempts' }, attempts),
      h('h3', { id: 'body-title' }, 'Body as sent'),
      // Scrolls inside its box: a tab stop, so the keyboard scrolls it too.
      h('pre', { class: 'body', tabindex: '0', role: 'region', 'aria-labelledby': 'body-title' }, JSON.stringify(d.body, null, 2)))
    detail.querySelector('h2').focus()
  }

  // The buttons of a letter being replayed are disabled (a second replay would be refused),
  // and what happened is said next to them.
  async function replayOne(id, buttons, result) {
    buttons.forEach((b) => { b.disabled = true })
    result.textContent = 'Replaying…'
    try {
      const p = await api.call('POST', `${base}/${api.enc(id)}/replay`, {})
      if (!ctx.current()) return
      result.textContent = `Replay of ${id} started.`
      follow(p, `Replaying ${id}`, result)
    } catch (err) {
      if (!ctx.current()) return
      result.textContent = `Replay refused: ${err.message}`
      if (err.status !== 409) buttons.forEach((b) => { b.disabled = false })
    }
  }

  async function discard(id, buttons, result) {
    const yes = await confirmAction({
      title: `Discard dead letter ${id}?`,
      lines: ['1 dead letter is deleted for good: it can no longer be replayed.', 'Its receivers are not told.'],
      action: 'Discard it',
    })
    if (!yes) { result.textContent = 'Not discarded.'; return }
    try {
      await api.call('DELETE', `${base}/${api.enc(id)}`)
    } catch (err) {
      result.textContent = `Discard refused: ${err.message}`
      return
    }
    buttons.forEach((b) => { b.disabled = true })
    result.textContent = `Dead letter ${id} discarded.`
    ctx.say(`Dead letter ${id} discarded.`)
    load()
  }

  const show = (q) => fill(progress, h('p', { class: q.done ? 'done' : '' },
    `${q.label}: ${q.done ? 'done' : 'under way'} · ${count(q.total)} in all · ${count(q.sent)} sent · ` +
    `${count(q.delivered)} delivered · ${count(q.failed)} failed · ${count(q.skipped)} skipped`))

  // A replay's progress, asked every second until it is done (also after the screen is
  // left and shown again: the replay is the relay's, and goes on meanwhile).
  function follow(p, label, near) {
    clearTimeout(polling)
    const kept = { ...p, label }
    replays.set(base, kept)
    show(kept)
    ;(near || progress).scrollIntoView({ block: 'nearest' })
    load()
    const tick = async () => {
      if (!ctx.current()) return
      try {
        const q = await api.get(`${base}/replays/${p.id}`)
        if (!ctx.current()) return
        const now = { ...q, label }
        replays.set(base, now)
        show(now)
        if (q.done) {
          // The relay removes the replayed letters at its next commits: look again shortly.
          load()
          for (const ms of [1000, 3000, 8000]) setTimeout(() => { if (ctx.current()) load() }, ms)
          return
        }
      } catch (err) {
        progress.textContent = `Progress unavailable: ${err.message}`
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

  searchForm.addEventListener('submit', (e) => {
    e.preventDefault()
    query = contains.value
    keepSearch(query)
    cursors = [null]
    // What the last search said is not this one's answer.
    found.textContent = 'Searching…'
    load()
  })
  more.addEventListener('click', () => load(more.dataset.cursor))
  findForm.addEventListener('submit', (e) => {
    e.preventDefault()
    const id = find.value.trim()
    if (id) open(id)
  })
  replayForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    const at = new Date(since.value)
    if (!since.value || Number.isNaN(at.getTime())) { progress.textContent = 'Choose a time to replay from.'; since.focus(); return }
    const range = { since: at.toISOString() }
    let n
    try {
      n = (await api.call('POST', `${base}/replay`, { ...range, dry_run: true })).total
    } catch (err) {
      progress.textContent = `Replay refused: ${err.message}`
      return
    }
    if (!ctx.current()) return
    if (n === 0) { progress.textContent = `No dead letter failed since ${when(range.since)}: nothing to replay.`; return }
    const yes = await confirmAction({
      title: `Replay ${count(n)} dead letter${n === 1 ? '' : 's'}?`,
      lines: [`Every dead letter that failed since ${when(range.since)}: ${count(n)}.`,
        `Each is sent again with its messageId (receivers that deduplicate take it once), signed with the current secret, ${whereTo}.`],
      action: `Replay ${count(n)}`,
      danger: false,
    })
    if (!yes) { progress.textContent = 'Not replayed.'; return }
    try {
      const p = await api.call('POST', `${base}/replay`, range)
      follow(p, `Replay since ${when(range.since)}`)
    } catch (err) {
      progress.textContent = `Replay refused: ${err.message}`
    }
  })
  next.addEventListener('click', () => { cursors.push(next.dataset.cursor); load() })
  prev.addEventListener('click', () => { if (cursors.length > 1) { cursors.pop(); load() } })
  load()
  // A link to one letter (`?id=`, from an attempt): opened as "Find by messageId" opens it.
  const linked = new URLSearchParams(location.hash.split('?')[1] || '').get('id')
  if (linked) { find.value = linked; open(linked) }
  // A replay of these dead letters under way when the screen was left: followed again.
  const under = replays.get(base)
  if (under) {
    show(under)
    if (!under.done) follow(under, under.label)
  }
  return () => clearTimeout(polling)
}
