// A source's subscriptions (Segment's Webhooks (Actions)): each with its trigger, where it
// sends (method and URL), whether it is on, and its state from
// GET /admin/sources/{name}/subscriptions/{subscription} (delivered, failed, waiting, its
// endpoint's health), asked again every 5 seconds. Each links to its attempts and dead
// letters (the webhook's screens, pointed at its routes) and its editor; it is turned off or
// on, or removed (asked first), with one PUT of the source as the relay showed it (If-Match).

import * as api from './api.js'
import { h, fill, badge, count, labelled, when, refusalText } from './dom.js'
import { heading, refused, untried } from './source.js'
import { confirmAction } from './dialog.js'

const EVERY_MS = 5000

// What a screen says once the next one is drawn (a save moves to another route).
let flash = ''
export function setFlash(text) { flash = text }
export function takeFlash() { const t = flash; flash = ''; return t }

// Whether `s` is written as Segment exports it (`subscribe`, `mapping`), as the relay tells.
export function isSegment(s) {
  return !!s && typeof s === 'object' && ('subscribe' in s || 'mapping' in s)
}

// A subscription as the page shows it, in whichever form it was written.
export function describe(s) {
  const seg = isSegment(s)
  const m = (seg ? s.mapping : s) || {}
  return {
    name: typeof s.name === 'string' ? s.name : '',
    trigger: String((seg ? s.subscribe : s.trigger) ?? ''),
    url: typeof m.url === 'string' ? m.url : JSON.stringify(m.url ?? ''),
    method: typeof m.method === 'string' ? m.method.toUpperCase() : 'POST',
    enabled: s.enabled !== false,
    segment: seg,
  }
}

// The source as a PUT takes it back: as GET showed it, its subscriptions replaced.
export function withSubscriptions(source, list) {
  const body = { ...source, subscriptions: list }
  delete body.summary
  return body
}

export function listHref(name) {
  return `#/sources/${encodeURIComponent(name)}/subscriptions`
}

export function subHref(name, sub, page) {
  return `${listHref(name)}/${encodeURIComponent(sub)}/${page}`
}

// The heading of a subscription's own screens: the source's tabs, its name, and its pages.
export function subscriptionHeading(name, sub, active) {
  const tab = (page, label) => h('li', {},
    h('a', { href: subHref(name, sub, page), 'aria-current': page === active ? 'page' : null }, label))
  return [
    ...heading(name, 'subscriptions'),
    h('div', { class: 'sub-head' },
      h('h2', {}, 'Subscription ', h('q', {}, sub)),
      h('nav', { class: 'subtabs', 'aria-label': `Subscription ${sub}` }, h('ul', {},
        tab('attempts', 'Recent attempts'), tab('dead-letters', 'Dead letters'),
        tab('edit', 'Settings and preview'),
        h('li', { class: 'back' }, h('a', { href: listHref(name) }, 'All subscriptions'))))),
  ]
}

// Its state as a badge: off, not tried yet, or its endpoint's health.
function stateOf(d, st) {
  if (!d.enabled) return h('span', { class: 'badge off' }, 'off')
  if (!st) return h('span', { class: 'muted' }, '–')
  const hl = st.health || {}
  if (hl.state === 'healthy' && untried(hl)) return h('span', { class: 'badge none' }, 'not tried yet')
  return [badge(hl.state),
    hl.last_error && hl.state !== 'healthy'
      ? h('span', { class: 'last-error error-text' }, hl.last_error.message.slice(0, 120)) : null]
}

export function render(main, ctx) {
  const { name } = ctx.params
  const path = `/sources/${api.enc(name)}`
  let source = null
  let etag = null
  let timer = null
  let first = true
  let shown = null
  // Each row's state cells, by subscription: a refresh fills them in place (the focus stays).
  const cells = new Map()
  const body = h('tbody')
  const notice = h('div')
  const said = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' }, takeFlash())
  const updated = h('span', { class: 'muted as-of' })
  const refresh = h('button', { type: 'button' }, 'Refresh')
  const adds = h('span', { class: 'adds' })
  fill(main, ...heading(name, 'subscriptions'),
    h('p', { class: 'help' }, 'Each subscription (Segment’s Webhooks (Actions)) sends the events its trigger matches to its own URL, with the body its mapping makes (a request an event, or batches): with its own retries, attempts and dead letters.'),
    notice,
    h('div', { class: 'toolbar' }, adds, refresh, said, updated),
    h('div', { class: 'scroll' }, h('table', { class: 'list subscriptions' },
      h('thead', {}, h('tr', {}, ['Subscription', 'Trigger', 'Sends', 'State', 'Delivered', 'Failed', 'Waiting', 'Actions']
        .map((c, i) => h('th', { scope: 'col', class: i >= 4 && i <= 6 ? 'num' : null }, c)))),
      body)))

  function row(s, readOnly) {
    const d = describe(s)
    const state = h('td', { class: 'state' }, h('span', { class: 'muted' }, '–'))
    const nums = [0, 1, 2].map(() => h('td', { class: 'num' }, '–'))
    const note = h('span', { class: 'result', role: 'status' })
    const toggle = readOnly ? null : h('button', { type: 'button', 'data-action': 'toggle' }, d.enabled ? 'Turn off' : 'Turn on')
    const remove = readOnly ? null : h('button', { type: 'button', class: 'danger', 'data-action': 'remove' }, 'Remove…')
    if (toggle) toggle.addEventListener('click', () => change(d.name, 'toggle', note))
    if (remove) remove.addEventListener('click', () => change(d.name, 'remove', note))
    cells.set(d.name, { d, state, nums })
    return h('tr', { 'data-subscription': d.name },
      h('th', { scope: 'row' }, h('span', { class: 'sub-name' }, d.name),
        d.segment ? h('span', { class: 'muted form-of' }, 'as Segment exports it') : null,
        h('span', { class: 'sub-links' },
          h('a', { href: subHref(name, d.name, 'attempts') }, 'Attempts'), ' · ',
          h('a', { href: subHref(name, d.name, 'dead-letters') }, 'Dead letters'))),
      h('td', { class: 'trigger' }, h('code', { class: 'trigger' }, d.trigger)),
      h('td', { class: 'sends' }, h('span', { class: 'method' }, d.method), ' ', h('code', { class: 'url' }, d.url)),
      state, ...nums,
      h('td', { class: 'actions' },
        h('a', { href: subHref(name, d.name, 'edit'), class: 'button', 'data-action': 'edit' }, readOnly ? 'View, preview' : 'Edit, preview'),
        toggle, remove, note))
  }

  function draw(states) {
    const readOnly = source.managed_by === 'file'
    const key = JSON.stringify([source.subscriptions, readOnly])
    if (key !== shown) {
      shown = key
      // Drawn again (the list changed): the focus goes back to the same row's same control.
      const active = document.activeElement
      const was = body.contains(active)
        ? [active.closest('tr')?.getAttribute('data-subscription'), active.getAttribute('data-action')] : null
      cells.clear()
      fill(notice, readOnly ? h('p', { class: 'notice' }, 'This source is managed by relay.toml: change its subscriptions there (and send the relay SIGHUP). Shown here read-only; the preview works.') : null)
      fill(adds, readOnly ? null : [
        h('a', { href: `${listHref(name)}/add`, class: 'button primary' }, 'Add a subscription'),
        h('a', { href: `${listHref(name)}/add?from=segment`, class: 'button' }, 'Paste from Segment')])
      fill(body, source.subscriptions.length ? source.subscriptions.map((s) => row(s, readOnly))
        : h('tr', {}, h('td', { colspan: 8 }, 'No subscription yet.')))
      labelled(body.closest('table'))
      if (was) {
        const tr = [...body.children].find((r) => r.getAttribute('data-subscription') === was[0])
        const again = tr && (tr.querySelector(`[data-action="${was[1]}"]`) || tr.querySelector('a'))
        if (again) again.focus({ preventScroll: true })
        else refresh.focus({ preventScroll: true })
      }
    }
    for (const [n, c] of cells) {
      const st = states.get(n)
      fill(c.state, stateOf(c.d, st))
      const v = st ? [st.delivered, st.failed, st.waiting] : null
      c.nums.forEach((td, k) => { td.textContent = v ? count(v[k]) : '–' })
    }
  }

  async function load() {
    clearTimeout(timer)
    let got
    try {
      got = await api.exchange('GET', path)
    } catch (err) {
      if (!ctx.current()) return
      if (first) { refused(main, name, err); return }
      said.textContent = `Could not refresh: ${err.message}`
      timer = setTimeout(load, EVERY_MS)
      return
    }
    ;({ data: source, etag } = got)
    // A subscription just added may not have a state yet: shown without one.
    const states = new Map(await Promise.all(source.subscriptions.map(async (s) => {
      const n = describe(s).name
      try {
        return [n, await api.get(`${path}/subscriptions/${api.enc(n)}`)]
      } catch {
        return [n, null]
      }
    })))
    if (!ctx.current()) return
    first = false
    draw(states)
    updated.textContent = `as of ${when(new Date().toISOString())}`
    timer = setTimeout(load, EVERY_MS)
  }

  // Turns subscription `sub` off or on, or removes it (asked first): the source PUT back as
  // last read, with If-Match, so a change made meanwhile is never undone unseen.
  async function change(sub, what, note) {
    const d = describe(source.subscriptions.find((s) => describe(s).name === sub))
    if (what === 'remove') {
      const letters = await api.get(`${path}/subscriptions/${api.enc(d.name)}/dead-letters?limit=1`).catch(() => null)
      const n = letters ? letters.stats.count : 0
      const yes = await confirmAction({
        title: `Remove subscription “${d.name}”?`,
        lines: [`The events its trigger matches are no longer sent to ${d.method} ${d.url}.`,
          n ? `Its ${count(n)} dead letter${n === 1 ? '' : 's'} can no longer be replayed from here.` : null,
          'The source’s other settings and subscriptions stay as they are.'],
        action: 'Remove the subscription',
      })
      if (!yes) { note.textContent = 'Not removed.'; return }
    }
    // The list as read last (a refresh may have come while the dialog was open).
    const list = source.subscriptions.map((s) => ({ ...s }))
    const i = list.findIndex((s) => describe(s).name === sub)
    if (i < 0) { note.textContent = 'Not changed: it was removed meanwhile.'; return }
    const on = describe(list[i]).enabled
    if (what === 'remove') {
      list.splice(i, 1)
    } else if (on) {
      list[i].enabled = false
    } else {
      delete list[i].enabled // on is the default
    }
    note.textContent = 'Saving…'
    try {
      await api.call('PUT', path, withSubscriptions(source, list), etag ? { 'If-Match': etag } : undefined)
    } catch (err) {
      if (!ctx.current()) return
      if (err.status !== 412) { note.textContent = `Not changed: ${refusalText(err)}`; return }
      note.textContent = ''
      said.textContent = `Not changed: this source was changed meanwhile. It is shown as it is now: look, and try again.`
      load()
      return
    }
    if (!ctx.current()) return
    said.textContent = what === 'remove' ? `Subscription “${d.name}” removed.`
      : `Subscription “${d.name}” turned ${on ? 'off' : 'on'}.`
    note.textContent = ''
    load()
  }

  refresh.addEventListener('click', load)
  load()
  return () => clearTimeout(timer)
}
