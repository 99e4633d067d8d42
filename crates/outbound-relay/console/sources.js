// The sources (admin token only): name, webhooks, health at a glance, messages waiting; a
// search by name or URL and pages of 50 in name order, asked of the relay
// (GET /admin/sources?limit=&after=&q=), so 10,000 sources cost a page each.

import * as api from './api.js'
import { h, fill, labelled, badge, count } from './dom.js'

const PAGE = 50

export function render(main, ctx) {
  let query = ''
  // The `after` of each page shown so far: [''] is the first page.
  let pages = ['']
  let timer = null
  const search = h('input', {
    id: 'search', type: 'search', name: 'q', autocomplete: 'off', placeholder: 'name or URL',
  })
  const counted = h('p', { class: 'counted', role: 'status', 'aria-live': 'polite' })
  const body = h('tbody')
  const prev = h('button', { type: 'button', disabled: true }, 'Previous page')
  const next = h('button', { type: 'button', disabled: true }, 'Next page')
  const form = h('form', { class: 'search', role: 'search' },
    h('label', { for: 'search' }, 'Search sources'), search,
    h('button', { type: 'submit' }, 'Search'))
  fill(main,
    h('h1', {}, 'Sources'),
    form,
    counted,
    h('div', { class: 'scroll' }, h('table', { class: 'list sources' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Source'), h('th', { scope: 'col' }, 'Webhooks'),
        h('th', { scope: 'col' }, 'Health'), h('th', { scope: 'col', class: 'num' }, 'Waiting'))),
      body)),
    h('div', { class: 'pager' }, prev, next))

  async function load() {
    const after = pages[pages.length - 1]
    const params = new URLSearchParams({ limit: String(PAGE) })
    if (after) params.set('after', after)
    if (query) params.set('q', query)
    let page
    try {
      page = await api.get(`/sources?${params}`)
    } catch (err) {
      if (ctx.current()) fill(body, h('tr', {}, h('td', { colspan: 4, class: 'error' }, err.message)))
      return
    }
    if (!ctx.current()) return
    const first = (pages.length - 1) * PAGE
    counted.textContent = page.matched === 0 ? (query ? `No source matches “${query}”.` : 'No sources yet.')
      : `Sources ${count(first + 1)}–${count(first + page.sources.length)} of ${count(page.matched)}${query ? ` matching “${query}”` : ''}`
    fill(body, page.sources.map((s) => {
      const sum = s.summary || {}
      const href = `#/sources/${encodeURIComponent(s.name)}`
      return h('tr', {},
        h('th', { scope: 'row' }, h('a', { href }, s.name)),
        h('td', {}, sum.webhooks === undefined ? '' : `${sum.enabled} of ${sum.webhooks} on`),
        h('td', {}, s.summary ? badge(sum.state) : 'changing…',
          sum.unhealthy > 1 ? h('span', { class: 'muted' }, ` (${sum.unhealthy} not healthy)`) : null),
        h('td', { class: 'num' }, count(sum.waiting)))
    }))
    labelled(body.closest('table'))
    prev.disabled = pages.length === 1
    next.disabled = !page.next
    next.dataset.after = page.next || ''
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    query = search.value.trim()
    pages = ['']
    load()
  })
  // As one types, a quarter of a second after the last key.
  search.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      if (search.value.trim() === query) return
      query = search.value.trim()
      pages = ['']
      load()
    }, 250)
  })
  next.addEventListener('click', () => { pages.push(next.dataset.after); load() })
  prev.addEventListener('click', () => { if (pages.length > 1) { pages.pop(); load() } })
  load()
  return () => clearTimeout(timer)
}
