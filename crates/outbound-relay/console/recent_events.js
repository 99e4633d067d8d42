// A subscription preview's "Recent events": the events the source accepted while the picker
// is open. Opening it asks the relay (GET …/recent-events), which starts capturing the
// source's events for a few minutes; while open it asks again every few seconds, which
// shows what came and keeps the capture on. Picking one hands it to the preview.

import * as api from './api.js'
import { h, fill, when } from './dom.js'

const EVERY_MS = 2500
let uid = 0

// The picker of source `name`'s recent events: { el, stop }. `current()`: the screen is
// still the one drawn; `pick(event)`: an event was picked (its JSON, as the preview takes it).
export function recentEvents(name, current, pick) {
  const id = `recent-${++uid}`
  const status = h('p', { class: 'help recent-status', id: `${id}-status`, role: 'status', 'aria-live': 'polite' })
  const list = h('ul', { class: 'recent-list', 'aria-label': 'Recent events, newest first', 'aria-describedby': status.id })
  const el = h('details', { class: 'recent-events' },
    h('summary', {}, 'Recent events'),
    status, list)
  let timer = null
  let stopped = false
  let drawn = ''
  // Each opening's asking is its own: one closed (or opened again) meanwhile ends.
  let round = 0
  const live = (mine) => mine === round && !stopped && el.open && el.isConnected && current()

  async function load(mine) {
    if (!live(mine)) return
    let got
    try {
      got = await api.get(`/sources/${api.enc(name)}/recent-events`)
    } catch (err) {
      if (!live(mine)) return
      status.textContent = `The recent events cannot be read: ${err.message}`
      timer = setTimeout(() => load(mine), EVERY_MS)
      return
    }
    if (!live(mine)) return
    draw(got)
    timer = setTimeout(() => load(mine), EVERY_MS)
  }

  function end() {
    round++
    clearTimeout(timer)
    timer = null
  }

  function draw(got) {
    const until = when(got.capturing_until)
    status.textContent = got.events.length
      ? `Newest first, the last ${got.capacity} this relay accepted for the source while capturing (until ${until}). Pick one to preview it.`
      : `Capturing is on until ${until}: send an event to this source (one of its write keys) and it shows here.`
    // Drawn again only when it changed, so that a keyboard's focus stays where it is.
    const seen = JSON.stringify(got.events.map((e) => [e.received_at, e.type, e.name, e.size]))
    if (seen === drawn) return
    drawn = seen
    const focused = list.contains(document.activeElement) ? document.activeElement.dataset.key : null
    fill(list, got.events.map((e) => item(e)))
    const again = focused ? [...list.querySelectorAll('button')].find((b) => b.dataset.key === focused) : null
    if (again) again.focus({ preventScroll: true })
  }

  function item(e) {
    const what = [h('span', { class: 'recent-time' }, when(e.received_at)), ' ',
      h('code', { class: 'recent-type' }, e.type), e.name ? [' ', h('span', { class: 'recent-name' }, e.name)] : null]
    if (e.too_large) {
      return h('li', {}, h('button', { type: 'button', disabled: true, 'data-key': key(e) },
        what, ` (too large to keep: ${e.size.toLocaleString('en-US')} bytes)`))
    }
    return h('li', {}, h('button', { type: 'button', 'data-key': key(e), onclick: () => pick(e.event) }, what))
  }

  el.addEventListener('toggle', () => {
    end()
    if (!el.open) return
    if (!drawn) status.textContent = 'Asking the relay…'
    load(round)
  })

  return {
    el,
    stop: () => {
      stopped = true
      end()
    },
  }
}

const key = (e) => `${e.received_at}|${e.type}|${e.name}|${e.size}`
