// A webhook's last 100 attempts, newest first: when, the message, the result, the status or
// what failed without one, how long it took, and the first bytes of a failure's answer (as
// text: an answer is the receiver's, whatever it holds).

import * as api from './api.js'
import { h, fill, labelled, when, ms } from './dom.js'
import { heading, refused } from './source.js'

export function render(main, ctx) {
  const { name, index } = ctx.params
  const body = h('tbody')
  const refresh = h('button', { type: 'button' }, 'Refresh')
  const url = h('p', { class: 'url' })
  fill(main, ...heading(name, 'health'),
    h('h2', {}, `Webhook ${index + 1}: recent attempts`), url,
    h('div', { class: 'toolbar' }, refresh,
      h('a', { href: `#/sources/${encodeURIComponent(name)}` }, 'Back to health')),
    h('div', { class: 'scroll' }, h('table', { class: 'list attempts' },
      h('thead', {}, h('tr', {}, ['When', 'Message', 'Result', 'Status', 'Duration', 'Answer'].map((c) => h('th', { scope: 'col', class: c === 'Duration' ? 'num' : null }, c)))),
      body)))

  async function load() {
    let page, source
    try {
      [page, source] = await Promise.all([
        api.get(`/sources/${api.enc(name)}/webhooks/${index}/attempts`),
        api.get(`/sources/${api.enc(name)}`)])
    } catch (err) {
      if (ctx.current()) refused(main, name, err)
      return
    }
    if (!ctx.current()) return
    const hook = source.webhooks[index]
    fill(url, h('code', {}, hook ? hook.url : ''))
    if (!page.attempts.length) {
      fill(body, h('tr', {}, h('td', { colspan: 6 }, 'No attempt yet (or none since it was last idle).')))
      return
    }
    fill(body, page.attempts.map((a) => h('tr', { class: a.result },
      h('td', {}, when(a.at)),
      h('td', {}, h('code', {}, a.message_id)),
      h('td', {}, h('span', { class: `result ${a.result}` }, a.result)),
      h('td', {}, a.status ?? a.error ?? '', a.detail && a.detail !== `status ${a.status}` ? h('span', { class: 'muted' }, ` ${a.detail}`) : null),
      h('td', { class: 'num' }, ms(a.duration_ms)),
      h('td', { class: 'answer' }, excerptOf(a)))))
    labelled(body.closest('table'))
  }
  refresh.addEventListener('click', load)
  load()
  return null
}

function excerptOf(a) {
  if (a.answer !== undefined) return h('pre', { class: 'answer' }, a.answer)
  if (a.answer_base64 !== undefined) return h('span', { class: 'muted' }, `(not text: ${a.answer_base64.length} base64 characters)`)
  return ''
}
