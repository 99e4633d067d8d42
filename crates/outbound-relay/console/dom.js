// Building the page: elements made with createElement and text set with textContent, never
// from HTML text, so whatever an event or an answer holds (`<script>`, `<img onerror>`)
// shows as text and runs nothing.

// h('a', {href: '#/x', class: 'c', onclick: fn}, 'text', child, [more]) -> the element.
// Attributes are set with setAttribute; `on…` keys add listeners; children are nodes or
// strings (text nodes); null and false are skipped.
export function h(tag, attrs, ...children) {
  const el = tag === 'svg' || SVG.has(tag)
    ? document.createElementNS('http://www.w3.org/2000/svg', tag)
    : document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else if (v === true) el.setAttribute(k, '')
    else el.setAttribute(k, String(v))
  }
  append(el, children)
  return el
}

const SVG = new Set(['g', 'rect', 'line', 'polyline', 'text', 'title', 'desc', 'path'])

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else if (c instanceof Node) el.appendChild(c)
    else el.appendChild(document.createTextNode(String(c)))
  }
}

// Replaces what `el` holds with `children`.
export function fill(el, ...children) {
  el.replaceChildren()
  append(el, children)
  return el
}

// A time as the reader's local "YYYY-MM-DD HH:MM:SS"; '' for none.
export function when(iso) {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return String(iso)
  const p = (n) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

export function ms(v) {
  return v === null || v === undefined ? '–' : `${Math.round(v * 10) / 10} ms`
}

export function percent(v) {
  return v === null || v === undefined ? '–' : `${Math.round(v * 1000) / 10} %`
}

export function count(n) {
  return (n ?? 0).toLocaleString('en-US')
}

const STATES = {
  healthy: 'healthy', throttled: 'throttled', failing: 'failing', circuit_open: 'circuit open', disabled: 'blocked',
}

// A health state as a badge (its words, not only its colour).
export function badge(state) {
  if (!state) return h('span', { class: 'badge none' }, 'no webhook on')
  return h('span', { class: `badge ${state}` }, STATES[state] || state)
}

// An answer's text cut to `n` characters, the whole of it behind a disclosure.
export function excerpt(text, n = 80) {
  if (text === null || text === undefined || text === '') return ''
  const s = String(text)
  if (s.length <= n) return h('code', {}, s)
  return h('details', { class: 'excerpt' }, h('summary', {}, h('code', {}, s.slice(0, n) + '…')), h('pre', {}, s))
}

// Gives each cell of `table`'s body its column's heading (data-label), which a phone's
// narrow layout shows before the cell's value, a row a card.
export function labelled(table) {
  const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent)
  for (const tr of table.querySelectorAll('tbody tr')) {
    ;[...tr.children].forEach((cell, i) => {
      if (heads[i] && !cell.hasAttribute('colspan')) cell.setAttribute('data-label', heads[i])
    })
  }
  return table
}

// A field as the API names it (`webhooks[1].headers["X-A"]`), in words, webhooks counted from
// 1 as the page numbers them: "Webhook 2, header “X-A”".
export function fieldLabel(field) {
  if (!field) return ''
  const ep = /^webhooks\[(\d+)\]\.(auth|tls|signature_header|signature_scheme|rate_limit)(?:\.([a-z_]+))?$/.exec(field)
  if (ep) {
    const words = { auth: 'authentication', tls: 'TLS', signature_header: 'signature header',
      signature_scheme: 'signature scheme', rate_limit: 'rate limit' }
    return `Webhook ${Number(ep[1]) + 1}, ${words[ep[2]]}${ep[3] ? ` (${ep[3].replace(/_/g, ' ')})` : ''}`
  }
  const m = /^webhooks\[(\d+)\](?:\.(url|enabled|headers))?(?:\[("(?:[^"\\]|\\.)*")\])?$/.exec(field)
  if (!m) return field
  const n = `Webhook ${Number(m[1]) + 1}`
  if (m[3]) {
    let name = m[3]
    try { name = JSON.parse(m[3]) } catch { /* shown as sent */ }
    return `${n}, header “${name}”`
  }
  return { url: `${n}, URL`, enabled: `${n}, on or off`, headers: `${n}, headers` }[m[2]] || n
}

// A refusal's message with its field in words (`webhooks[0].url: …` → `Webhook 1, URL: …`).
export function refusalText(err) {
  const msg = String(err.message || '')
  if (err.field && msg.startsWith(`${err.field}: `)) return `${fieldLabel(err.field)}: ${msg.slice(err.field.length + 2)}`
  return msg
}
