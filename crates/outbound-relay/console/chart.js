// The last hour as a hand-drawn SVG: a bar a minute, messages delivered below and failed
// stacked on top, and a line of the messages a webhook missed (failed, or gave up on because
// another took them: delivered all the same), with the totals in words for those who do not
// see it.

import { h, count, when } from './dom.js'

// Drawn at the width it is shown (one unit a pixel: its words keep their size from a phone
// to a desktop); redrawn at each refresh.
const H = 170
const LEFT = 40
const BOTTOM = 20
const TOP = 8

// Rounds up to 1, 2 or 5 times a power of ten (the axis's top).
function nice(n) {
  if (n <= 4) return 4
  const p = 10 ** Math.floor(Math.log10(n))
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= n)
}

// Each minute's messages missed at webhook `w` (failed there, or given up there).
const missedAt = (w, i) => (w.failed[i] || 0) + (w.abandoned[i] || 0)

export function chart({ delivered, failed, from, bucket_seconds, webhooks = [] }, width) {
  const W = Math.max(Math.round(width || 600), 240)
  const n = delivered.length
  const totals = delivered.map((d, i) => d + failed[i])
  const missed = delivered.map((_, i) => webhooks.reduce((a, w) => a + missedAt(w, i), 0))
  const top = nice(Math.max(...totals, ...missed, 0))
  const plotW = W - LEFT
  const plotH = H - BOTTOM - TOP
  const slot = plotW / n
  const y = (v) => TOP + plotH - (v / top) * plotH
  const sumD = delivered.reduce((a, b) => a + b, 0)
  const sumF = failed.reduce((a, b) => a + b, 0)
  const summary = `Last hour: ${count(sumD)} delivered, ${count(sumF)} failed`
  const start = new Date(from).getTime()
  const bars = []
  for (let i = 0; i < n; i++) {
    const x = LEFT + i * slot + 1
    const w = Math.max(slot - 2, 1)
    const at = when(new Date(start + i * bucket_seconds * 1000).toISOString())
    const tip = h('title', {}, `${at}: ${delivered[i]} delivered, ${failed[i]} failed${missed[i] ? `, ${missed[i]} missed at a webhook` : ''}`)
    const g = h('g', { class: 'minute' }, tip)
    // An empty minute still answers a pointer (its title) through an invisible bar.
    g.appendChild(h('rect', { class: 'hit', x, y: TOP, width: w, height: plotH }))
    if (delivered[i]) g.appendChild(h('rect', { class: 'delivered', x, y: y(delivered[i]), width: w, height: y(0) - y(delivered[i]) }))
    if (failed[i]) g.appendChild(h('rect', { class: 'failed', x, y: y(totals[i]), width: w, height: y(delivered[i]) - y(totals[i]) }))
    bars.push(g)
  }
  // The webhooks' misses as a line over the bars, drawn only when there are any.
  const line = missed.some((m) => m)
    ? [h('polyline', { class: 'missed', points: missed.map((m, i) => `${LEFT + (i + 0.5) * slot},${y(m)}`).join(' ') })]
    : []
  const grid = [0, top / 2, top].map((v) => h('g', { class: 'grid' },
    h('line', { x1: LEFT, x2: W, y1: y(v), y2: y(v) }),
    h('text', { x: LEFT - 6, y: y(v) + 4, 'text-anchor': 'end' }, count(v))))
  const axis = [[0, '60 min ago'], [n / 2, '30 min'], [n, 'now']].map(([i, label]) =>
    h('text', { class: 'axis', x: LEFT + i * slot, y: H - 4, 'text-anchor': i === 0 ? 'start' : i === n ? 'end' : 'middle' }, label))
  const svg = h('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'chart-title', class: 'hour',
  }, h('title', { id: 'chart-title' }, `${summary} (per minute)`), ...grid, ...bars, ...line, ...axis)
  // The values without a pointer: each minute that had an outcome, in a table behind a
  // disclosure (keyboard, touch and screen readers alike).
  const busy = delivered.map((d, i) => [i, d, failed[i], missed[i]]).filter(([, d, f, m]) => d || f || m)
  const minutes = h('details', { class: 'minutes' },
    h('summary', {}, `Minute by minute (${busy.length} minute${busy.length === 1 ? '' : 's'} with messages)`),
    busy.length ? h('table', { class: 'list minute-table' },
      h('thead', {}, h('tr', {}, ['Minute', 'Delivered', 'Failed', 'Missed at a webhook'].map((c, k) => h('th', { scope: 'col', class: k ? 'num' : null }, c)))),
      h('tbody', {}, busy.reverse().map(([i, d, f, m]) => h('tr', {},
        h('td', {}, when(new Date(start + i * bucket_seconds * 1000).toISOString())),
        h('td', { class: 'num' }, count(d)), h('td', { class: 'num' }, count(f)), h('td', { class: 'num' }, count(m))))))
      : h('p', {}, 'No message ended in the last hour.'))
  // Each webhook that missed messages this hour, in words: a webhook refusing everything
  // reads as failing here even while its source's messages read delivered.
  const missing = webhooks.map((w) => {
    const f = w.failed.reduce((a, b) => a + b, 0)
    const g = w.abandoned.reduce((a, b) => a + b, 0)
    return (f || g) ? h('li', { class: 'missed-at', 'data-webhook': w.webhook },
      h('strong', {}, `Webhook ${w.webhook + 1}`), ` missed ${count(f + g)}: ${count(f)} failed there, ${count(g)} given up because another webhook took them`) : null
  }).filter(Boolean)
  return [
    svg,
    h('p', { class: 'legend' },
      h('span', { class: 'key delivered' }), `Delivered ${count(sumD)}`, ' ',
      h('span', { class: 'key failed' }), `Failed ${count(sumF)}`,
      missing.length ? [' ', h('span', { class: 'key missed' }), `Missed at a webhook ${count(missed.reduce((a, b) => a + b, 0))}`] : null,
      h('span', { class: 'muted' }, ' · messages that ended each minute; a retry is not a failure')),
    missing.length ? h('ul', { class: 'missed-list' }, missing) : null,
    minutes,
  ]
}
