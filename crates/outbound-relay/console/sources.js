// The sources (admin token only): name, webhooks, health at a glance, messages waiting, dead
// letters and the last 5 minutes' failure rate. Searched (name or URL), filtered by state and
// sorted on the relay (GET /admin/sources?limit=&after=&q=&state=&sort=&order=), a page of 50
// at a time, so 10,000 sources cost a page each. The page asks again every 5 seconds and says
// as of when. The place (search, filter, order, page) is kept in the address and the
// history, so Back returns to it. An admin makes a source here too.

import * as api from './api.js'
import { h, fill, labelled, badge, count, when, percent } from './dom.js'
import { createForm } from './lifecycle.js'

const PAGE = 50
const EVERY_MS = 5000

const STATES = [
  ['', 'Any state'], ['failing,circuit_open,disabled', 'Not healthy'], ['failing', 'Failing'],
  ['circuit_open', 'Circuit open'], ['disabled', 'Blocked'], ['throttled', 'Throttled (at its rate limit)'],
  ['healthy', 'Healthy'], ['none', 'No webhook on'],
]
const SORTS = [
  ['name', 'Name'], ['state', 'Health (worst first)'], ['waiting', 'Waiting (most first)'],
  ['dead_letters', 'Dead letters (most first)'], ['failure_rate', 'Failure rate (highest first)'],
]

// The place in the address: `#/sources?q=&state=&sort=`; the pages' cursors in the history
// entry's state (Back restores both).
function placeOf() {
  const query = new URLSearchParams(location.hash.split('?')[1] || '')
  const pages = (history.state && Array.isArray(history.state.pages)) ? history.state.pages : ['']
  return { q: query.get('q') || '', state: query.get('state') || '', sort: query.get('sort') || 'name', pages }
}

function keepPlace(p) {
  const query = new URLSearchParams()
  if (p.q) query.set('q', p.q)
  if (p.state) query.set('state', p.state)
  if (p.sort !== 'name') query.set('sort', p.sort)
  if (p.pages.length > 1) query.set('page', String(p.pages.length))
  const hash = `#/sources${query.toString() ? `?${query}` : ''}`
  history.replaceState({ ...(history.state || {}), pages: p.pages }, '', hash)
}

function health(sum) {
  if (!sum) return 'changing…'
  const untried = sum.state === 'healthy' && sum.untried === sum.enabled
  return [untried ? h('span', { class: 'badge none' }, 'not tried yet') : badge(sum.state),
    sum.unhealthy > 1 ? h('span', { class: 'muted' }, ` (${sum.unhealthy} not healthy)`) : null]
}

export function render(main, ctx) {
  const place = placeOf()
  let timer = null
  let refresher = null
  const select = (id, options, value) => h('select', { id },
    options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)))
  const search = h('input', {
    id: 'search', type: 'search', name: 'q', autocomplete: 'off', placeholder: 'name or URL', value: place.q,
  })
  const state = select('state-filter', STATES, place.state)
  const sort = select('sort', SORTS, place.sort)
  const counted = h('p', { class: 'counted', role: 'status', 'aria-live': 'polite' })
  const asOf = h('span', { class: 'muted as-of' })
  const body = h('tbody')
  const prev = h('button', { type: 'button', disabled: true }, 'Previous page')
  const next = h('button', { type: 'button', disabled: true }, 'Next page')
  const form = h('form', { class: 'search', role: 'search' },
    h('label', { for: 'search' }, 'Search sources'), search,
    h('button', { type: 'submit' }, 'Search'),
    h('label', { for: 'state-filter' }, 'State'), state,
    h('label', { for: 'sort' }, 'Sort by'), sort)
  const columns = ['Source', 'Webhooks', 'Health', 'Waiting', 'Dead letters', 'Failed (5 min)']
  fill(main,
    h('h1', {}, 'Sources'),
    createForm(ctx),
    form,
    h('div', { class: 'toolbar' }, counted, asOf),
    h('div', { class: 'scroll' }, h('table', { class: 'list sources' },
      h('thead', {}, h('tr', {}, columns.map((c, i) => h('th', { scope: 'col', class: i > 2 ? 'num' : null }, c)))),
      body)),
    h('div', { class: 'pager' }, prev, next))

  async function load() {
    clearTimeout(refresher)
    const after = place.pages[place.pages.length - 1]
    const params = new URLSearchParams({ limit: String(PAGE) })
    if (after) params.set('after', after)
    if (place.q) params.set('q', place.q)
    if (place.state) params.set('state', place.state)
    if (place.sort !== 'name') params.set('sort', place.sort)
    keepPlace(place)
    let page
    try {
      page = await api.get(`/sources?${params}`)
    } catch (err) {
      if (!ctx.current()) return
      fill(body, h('tr', {}, h('td', { colspan: 6, class: 'error' }, err.message)))
      refresher = setTimeout(load, EVERY_MS)
      return
    }
    if (!ctx.current()) return
    const first = (place.pages.length - 1) * PAGE
    const filtered = place.q || place.state
    counted.textContent = page.matched === 0 ? (filtered ? 'No source matches.' : 'No sources yet.')
      : `Sources ${count(first + 1)}–${count(first + page.sources.length)} of ${count(page.matched)}${place.q ? ` matching “${place.q}”` : ''}${place.state ? ` in state ${STATES.find(([v]) => v === place.state)?.[1].toLowerCase() || place.state}` : ''}`
    asOf.textContent = `as of ${when(new Date().toISOString())}`
    // Refilled in place: the link that had the focus keeps it.
    const focused = body.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null
    fill(body, page.sources.map((s) => {
      const sum = s.summary || {}
      const href = `#/sources/${encodeURIComponent(s.name)}`
      return h('tr', { 'data-source': s.name },
        h('th', { scope: 'row' }, h('a', { href }, s.name)),
        h('td', {}, sum.webhooks === undefined ? '' : `${sum.enabled} of ${sum.webhooks} on`),
        h('td', {}, health(s.summary)),
        h('td', { class: 'num' }, count(sum.waiting)),
        h('td', { class: 'num' }, sum.dead_letters === null || sum.dead_letters === undefined ? '–'
          : h('a', { href: `${href}/dead-letters` }, count(sum.dead_letters))),
        h('td', { class: 'num' }, sum.failure_rate_5m === null || sum.failure_rate_5m === undefined ? '–'
          : `${percent(sum.failure_rate_5m)} of ${count(sum.attempts_5m)}`))
    }))
    if (focused) body.querySelector(`a[href="${CSS.escape(focused)}"]`)?.focus()
    labelled(body.closest('table'))
    prev.disabled = place.pages.length === 1
    next.disabled = !page.next
    next.dataset.after = page.next || ''
    refresher = setTimeout(load, EVERY_MS)
  }

  const restart = () => { place.pages = ['']; load() }
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    place.q = search.value.trim()
    restart()
  })
  // As one types, a quarter of a second after the last key.
  search.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      if (search.value.trim() === place.q) return
      place.q = search.value.trim()
      restart()
    }, 250)
  })
  state.addEventListener('change', () => { place.state = state.value; restart() })
  sort.addEventListener('change', () => { place.sort = sort.value; restart() })
  next.addEventListener('click', () => { place.pages.push(next.dataset.after); load() })
  prev.addEventListener('click', () => { if (place.pages.length > 1) { place.pages.pop(); load() } })
  load()
  return () => { clearTimeout(timer); clearTimeout(refresher) }
}
