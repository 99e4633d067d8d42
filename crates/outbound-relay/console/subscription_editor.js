// A subscription added or edited: its fields (name, trigger, method, URL, headers and data
// as JSON, on or off), or Segment's export pasted as it is, and in either form how its
// endpoint is called (endpoint.js, as a webhook's: its secrets write-only). Saved with one
// PUT of the source as the relay showed it, its `subscriptions` changed (If-Match: a change made meanwhile is
// said, never undone unseen); a refusal is shown at the field it names
// (`subscriptions[2].trigger`, `subscriptions[0].data.total.@path`). Beside it, a preview:
// what the form's settings, unsaved, would send for an event (POST …/subscriptions/preview),
// the event pasted or picked among the source's recent ones (recent_events.js).

import * as api from './api.js'
import { h, fill, labelled } from './dom.js'
import { recentEvents } from './recent_events.js'
import { refused, heading } from './source.js'
import { endpointFields, readEndpoint } from './endpoint.js'
import {
  describe, isSegment, withSubscriptions, subscriptionHeading, listHref, subHref, setFlash, takeFlash,
} from './subscriptions.js'

const METHODS = ['POST', 'PUT', 'PATCH']
// The fields a refusal may name, in words.
const WORDS = {
  name: 'Name', trigger: 'Trigger', url: 'URL', method: 'Method', headers: 'Headers', data: 'Data',
  enabled: 'On', segment: 'Segment’s export', event: 'Event',
  auth: 'Authentication', tls: 'TLS', signature_header: 'Signature header', signature_scheme: 'Signature scheme',
  rate_limit: 'Rate limit',
}
// How the endpoint is called: the same keys in either form, edited below both.
const ENDPOINT_KEYS = ['auth', 'tls', 'signature_header', 'signature_scheme', 'rate_limit']

// `s` without its endpoint settings (they have fields of their own).
function withoutEndpoint(s) {
  const out = { ...s }
  for (const k of ENDPOINT_KEYS) delete out[k]
  return out
}
let uid = 0

// A track event to preview with; its event name the trigger's, when the trigger names one.
function sample(trigger) {
  const named = /\bevent\s*=\s*"((?:[^"\\]|\\.)*)"/.exec(trigger || '')
  let event = 'Order Completed'
  try { if (named) event = JSON.parse(`"${named[1]}"`) } catch { /* the default */ }
  return {
    type: 'track',
    event,
    userId: 'user-1001',
    anonymousId: 'anon-6d3f',
    messageId: `preview-${Date.now().toString(36)}`,
    timestamp: new Date().toISOString(),
    properties: { order_id: 'o-1001', total: 42.5, currency: 'EUR', products: [{ sku: 'sku-1', quantity: 2 }] },
    context: { ip: '203.0.113.7', library: { name: 'analytics.js', version: 'next-1.70.0' } },
  }
}

const pretty = (v) => JSON.stringify(v, null, 2)

// Segment's export of our settings (what "Paste from Segment" would hold for them).
function toSegment(s) {
  const mapping = { url: s.url ?? '', method: s.method || 'POST' }
  if (s.headers !== undefined) mapping.headers = s.headers
  if (s.data !== undefined) mapping.data = s.data
  const out = { name: s.name ?? '', subscribe: s.trigger ?? '', mapping }
  if (s.enabled === false) out.enabled = false
  return out
}

// Our settings of Segment's export, when the fields can show all of it (else null).
function fromSegment(s) {
  const m = s.mapping || {}
  const known = new Set(['url', 'method', 'headers', 'data'])
  if (Object.keys(s).some((k) => !['name', 'subscribe', 'mapping', 'enabled'].includes(k))) return null
  if (Object.keys(m).some((k) => !known.has(k)) || (m.url !== undefined && typeof m.url !== 'string')) return null
  if (m.method !== undefined && typeof m.method !== 'string') return null
  const out = { name: s.name ?? '', trigger: s.subscribe ?? '', url: m.url ?? '' }
  if (m.method) out.method = m.method.toUpperCase()
  if (m.headers !== undefined) out.headers = m.headers
  if (m.data !== undefined) out.data = m.data
  if (s.enabled === false) out.enabled = false
  return out
}

// `{field, rest}` of a refusal's field about the subscription edited (`subscriptions[i].…`
// of a PUT, `subscription.…` of a preview); null for another one's or the source's own.
function local(field, index) {
  const put = /^subscriptions\[(\d+)\](?:\.(.*))?$/.exec(field || '')
  const preview = /^subscription(?:\.(.*))?$/.exec(field || '')
  let path
  if (put) {
    path = put[2] || ''
    // A name taken is named at the later of the two: it is this one's name that changed.
    if (Number(put[1]) !== index && !/^name$/.test(path)) return null
  } else if (preview) {
    path = preview[1] || ''
  } else {
    return null
  }
  const key = path.split(/[.[]/)[0]
  return { key, rest: path.slice(key.length).replace(/^\./, '') }
}

// A char's index in `text` of a byte's (the relay counts a trigger's bytes, UTF-8).
function charAt(text, byte) {
  const enc = new TextEncoder()
  let seen = 0
  for (let i = 0; i < text.length; i++) {
    if (seen >= byte) return i
    seen += enc.encode(text[i]).length
  }
  return text.length
}

export function render(main, ctx) {
  const { name, sub } = ctx.params
  const path = `/sources/${api.enc(name)}`
  const fromSegmentFirst = !sub && /(^|&)from=segment(&|$)/.test(location.hash.split('?')[1] || '')
  let source = null
  let etag = null
  // The recent events' picker of the form drawn last: its asking ends with the screen.
  let stopRecent = () => {}

  async function load(message) {
    try {
      ({ data: source, etag } = await api.exchange('GET', path))
    } catch (err) {
      if (ctx.current()) refused(main, name, err)
      return
    }
    if (!ctx.current()) return
    const original = sub === null ? null : source.subscriptions.find((s) => describe(s).name === sub)
    if (sub !== null && !original) {
      fill(main, ...heading(name, 'subscriptions'), h('p', { class: 'error', role: 'alert' },
        `Source “${name}” has no subscription “${sub}”. `, h('a', { href: listHref(name) }, 'Its subscriptions')))
      return
    }
    draw(original, message || takeFlash())
  }

  function draw(original, message) {
    const readOnly = source.managed_by === 'file'
    const id = ++uid
    const field = (key, label, input, help) => {
      input.id = `sub-${key}-${id}`
      input.setAttribute('data-local', key)
      const helpEl = help ? h('p', { class: 'help', id: `sub-${key}-${id}-help` }, help) : null
      if (helpEl) input.setAttribute('aria-describedby', helpEl.id)
      return h('div', { class: `field field-${key}` }, h('label', { for: input.id }, label), helpEl, input)
    }
    const area = (rows, value, placeholder) => h('textarea', { rows, spellcheck: 'false', autocomplete: 'off', placeholder }, value)
    const given = original && !isSegment(original) ? original : null
    const d = given ? describe(given) : null
    // Settings the fields do not show (batch_size, batch_signature): kept, and said so.
    const shownKeys = ['name', 'trigger', 'url', 'method', 'headers', 'data', 'enabled', ...ENDPOINT_KEYS]
    const kept = given ? Object.keys(given).filter((k) => !shownKeys.includes(k)).map((k) => `${k} = ${JSON.stringify(given[k])}`) : []
    const inputs = {
      name: h('input', { type: 'text', value: d ? d.name : '', autocomplete: 'off', spellcheck: 'false' }),
      trigger: h('input', { type: 'text', class: 'mono', value: d ? d.trigger : '', autocomplete: 'off', spellcheck: 'false', placeholder: 'type = "track" and event = "Order Completed"' }),
      method: h('select', {}, METHODS.map((m) => h('option', { value: m, selected: m === (d ? d.method : 'POST') }, m))),
      url: h('input', { type: 'url', value: d ? d.url : '', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://' }),
      headers: area(3, given && given.headers !== undefined ? pretty(given.headers) : '', '{"X-Team": "growth"}'),
      data: area(7, given && given.data !== undefined ? pretty(given.data) : '', 'Empty: the whole event'),
      enabled: h('input', { type: 'checkbox', checked: d ? d.enabled : true }),
      segment: area(14, original && isSegment(original) ? pretty(withoutEndpoint(original)) : '',
        '{"name": "…", "subscribe": "type = \\"track\\"", "mapping": {"url": "https://…", "method": "POST", "data": {…}}}'),
    }
    inputs.enabled.setAttribute('data-local', 'enabled')
    const mode = (value, label, checked) => h('label', { class: 'check' },
      h('input', { type: 'radio', name: `sub-mode-${id}`, value, checked }), ` ${label}`)
    const segmentFirst = (original && isSegment(original)) || fromSegmentFirst
    const modes = h('div', { class: 'modes', role: 'radiogroup', 'aria-label': 'How the subscription is given' },
      mode('fields', 'Fields', !segmentFirst), mode('segment', 'Paste from Segment (its export, as it is)', segmentFirst))
    const fieldsBox = h('div', { class: 'sub-fields' },
      field('name', 'Name', inputs.name, 'Unique in the source: it names the subscription’s records.'),
      field('trigger', 'Trigger', inputs.trigger, 'Segment’s FQL: which events it gets.'),
      h('div', { class: 'request-row' },
        field('method', 'Method', inputs.method),
        field('url', 'URL', inputs.url)),
      field('headers', 'Headers (JSON)', inputs.headers, 'An object of names and values; a value may be a mapping, as {"@template": "Bearer {{properties.token}}"}. Values set earlier are not shown: {"has_value": true} keeps one as it is.'),
      field('data', 'Data (JSON)', inputs.data, 'The body, a mapping-kit object such as {"total": {"@path": "$.properties.total"}}. Empty: the whole event.'),
      h('label', { class: 'check' }, inputs.enabled, ' On (off: kept, sent nothing)'),
      kept.length ? h('p', { class: 'help' }, `Kept as set (not shown here): ${kept.join(', ')}.`) : null)
    const endpointBox = h('div', { class: 'sub-endpoint' }, endpointFields(original || {}))
    const segmentBox = h('div', { class: 'sub-segment' },
      field('segment', 'Segment’s export (JSON)', inputs.segment, 'One Webhooks (Actions) subscription as Segment’s Config API exports it: {"name", "subscribe", "mapping": {"url", "method", "headers", "data"}}. Saved as it is.'))
    const formError = h('p', { class: 'error', id: `sub-form-error-${id}`, role: 'alert' })
    const box = h('section', { class: 'conflict', role: 'alert', hidden: true, 'aria-labelledby': `sub-conflict-${id}` })
    const saved = h('p', { class: 'saved', role: 'status', 'aria-live': 'polite' }, message || '')
    const save = h('button', { type: 'submit', class: 'primary' }, sub === null ? 'Add the subscription' : 'Save')
    const fields = h('fieldset', { disabled: readOnly },
      h('legend', { class: 'sr-only' }, 'The subscription'),
      modes, fieldsBox, segmentBox, endpointBox, formError, box,
      readOnly ? null : h('div', { class: 'toolbar' }, save, h('a', { href: listHref(name) }, 'Back to the list'), saved))
    const form = h('form', { class: 'sub-form', novalidate: true, 'aria-describedby': formError.id }, fields)

    // The preview, outside the fieldset: it works on a read-only source too.
    const event = area(16, pretty(sample(original ? describe(original).trigger : '')), '{"type": "track", …}')
    const sampleButton = h('button', { type: 'button' }, 'Sample track event')
    const previewButton = h('button', { type: 'submit', class: 'primary' }, 'Preview')
    const result = h('div', { class: 'preview-result', role: 'status', 'aria-live': 'polite' })
    const previewForm = h('form', { class: 'preview', novalidate: true, 'aria-labelledby': `preview-title-${id}` },
      h('h2', { id: `preview-title-${id}` }, 'Preview'),
      h('p', { class: 'help' }, 'What the settings in the form (saved or not) would send for this event. Nothing is sent.'),
      field('event', 'Event (JSON)', event, 'Paste an event, or pick one this source just sent in Recent events.'),
      h('div', { class: 'toolbar' }, previewButton, sampleButton),
      result)
    // Picked, an event goes in the box and is previewed at once.
    stopRecent()
    const recent = recentEvents(name, ctx.current, (picked) => {
      event.value = pretty(picked)
      previewForm.requestSubmit()
    })
    stopRecent = recent.stop
    event.closest('.field').after(recent.el)

    fill(main, ...(sub === null ? [...heading(name, 'subscriptions'),
      h('div', { class: 'sub-head' }, h('h2', {}, 'New subscription'),
        h('nav', { class: 'subtabs', 'aria-label': 'Subscriptions' }, h('ul', {},
          h('li', { class: 'back' }, h('a', { href: listHref(name) }, 'All subscriptions')))))]
      : subscriptionHeading(name, sub, 'edit')),
    readOnly ? h('p', { class: 'notice' }, 'This source is managed by relay.toml: change its subscriptions there (and send the relay SIGHUP). Shown here read-only; the preview works.') : null,
    h('div', { class: 'sub-editor' }, form, previewForm))

    const segmentMode = () => modes.querySelector('input:checked').value === 'segment'
    const showMode = () => {
      fieldsBox.hidden = segmentMode()
      segmentBox.hidden = !segmentMode()
    }
    showMode()
    // Switched, what the other side holds is carried over when it reads.
    modes.addEventListener('change', () => {
      clearErrors()
      if (segmentMode()) {
        const ours = readFields(false)
        if (!ours.error && (ours.value.name || ours.value.trigger || ours.value.url)) inputs.segment.value = pretty(toSegment(ours.value))
      } else {
        let theirs = null
        try { theirs = JSON.parse(inputs.segment.value) } catch { /* left as it is */ }
        const ours = theirs && typeof theirs === 'object' ? fromSegment(theirs) : null
        if (ours) fillFields(ours)
        else if (inputs.segment.value.trim()) formError.textContent = 'The export holds what the fields cannot show (or is not JSON): the fields are left as they were.'
      }
      showMode()
    })

    function fillFields(s) {
      const x = describe(s)
      inputs.name.value = x.name
      inputs.trigger.value = x.trigger
      inputs.url.value = x.url
      inputs.method.value = METHODS.includes(x.method) ? x.method : 'POST'
      inputs.headers.value = s.headers === undefined ? '' : pretty(s.headers)
      inputs.data.value = s.data === undefined ? '' : pretty(s.data)
      inputs.enabled.checked = x.enabled
    }

    // The subscription as the form gives it: {value} or {error: {local, message}}. Settings
    // the fields do not show (batch_size, …) are kept as they were; the endpoint's are its
    // fields' in either form.
    function read() {
      const got = segmentMode() ? readSegment() : readFields(true)
      if (got.value) {
        for (const [k, x] of Object.entries(readEndpoint(endpointBox))) {
          if (x === null) delete got.value[k]
          else got.value[k] = x
        }
      }
      return got
    }

    function readSegment() {
      let v
      try { v = JSON.parse(inputs.segment.value) } catch (e) {
        return { error: { local: 'segment', message: `not JSON: ${e.message}` } }
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: { local: 'segment', message: 'must be a JSON object' } }
      return { value: v }
    }

    // `strict`: JSON that does not read is an error (else the field is left as it was).
    function readFields(strict) {
      const v = given ? { ...given } : {}
      v.name = inputs.name.value.trim()
      v.trigger = inputs.trigger.value.trim()
      v.url = inputs.url.value.trim()
      if (inputs.method.value !== 'POST' || (given && given.method !== undefined)) v.method = inputs.method.value
      else delete v.method
      for (const key of ['headers', 'data']) {
        const text = inputs[key].value.trim()
        if (!text) { delete v[key]; continue }
        try { v[key] = JSON.parse(text) } catch (e) {
          if (strict) return { error: { local: key, message: `not JSON: ${e.message}` } }
        }
      }
      if (inputs.enabled.checked) delete v.enabled
      else v.enabled = false
      return { value: v }
    }

    function clearErrors() {
      for (const f of [form, previewForm]) {
        f.querySelectorAll('.field-error').forEach((e) => e.remove())
        f.querySelectorAll('[aria-invalid]').forEach((e) => {
          e.removeAttribute('aria-invalid')
          const help = document.getElementById(`${e.id}-help`)
          if (help) e.setAttribute('aria-describedby', help.id)
          else e.removeAttribute('aria-describedby')
        })
      }
      formError.textContent = ''
    }

    // A refusal at the field it names (`{key, rest}` of local()), marked and focused; a
    // trigger's byte selected. False when no field of the form holds it.
    function mark(key, rest, message) {
      const at = (name) => endpointBox.querySelector(`[data-name="${name}"]`)
      const ep = ENDPOINT_KEYS.includes(key) ? at([key, rest].filter(Boolean).join('.')) || at(key) : null
      if (ep) ep.closest('details').open = true
      const whole = segmentMode() && key !== 'event' && !ep
      const target = ep || (whole ? inputs.segment : inputs[key] || (key === 'event' ? event : null))
      if (!target) return false
      const where = whole && key !== 'segment' ? [key, rest].filter(Boolean).join('.') : rest
      const label = `${WORDS[whole ? 'segment' : key]}${where ? ` (${where})` : ''}`
      const note = h('p', { class: 'field-error', id: `sub-err-${++uid}` }, `${label}: ${message}`)
      ;(target.type === 'checkbox' ? target.closest('label') : target).after(note)
      target.setAttribute('aria-invalid', 'true')
      target.setAttribute('aria-describedby', [note.id, target.getAttribute('aria-describedby')].filter(Boolean).join(' '))
      target.focus()
      const byte = /^at byte (\d+)/.exec(message)
      if (byte && target === inputs.trigger) {
        const at = charAt(target.value, Number(byte[1]))
        target.setSelectionRange(at, Math.min(at + 1, target.value.length))
      }
      return true
    }

    // The API's refusal `err` (or the page's own, `{local: key, message}`) in place.
    function showRefusal(err, index, top) {
      const own = err.local ? { key: err.local, rest: '' } : local(err.field, index)
      let message = String(err.message || '')
      if (err.field && message.startsWith(`${err.field}: `)) message = message.slice(err.field.length + 2)
      if (own && mark(own.key, own.rest, message)) {
        top.textContent = `${top === formError ? 'Not saved' : 'No preview'}: see ${WORDS[own.key] || own.key} ${own.key === 'event' ? 'above' : 'in the form'}.`
        return
      }
      top.textContent = `${top === formError ? 'Not saved' : 'No preview'}: ${err.message}`
    }

    // A save refused as stale (412): the source read again and what changed said; the edits
    // stay, and a save from here on applies them to the source as it is now.
    async function conflict(before) {
      let now
      try {
        now = await api.exchange('GET', path)
      } catch (err) {
        fill(box, h('p', {}, `Not saved: this source was changed since you opened this page, and cannot be read again (${err.message}).`))
        box.hidden = false
        return
      }
      if (!ctx.current()) return
      source = now.data
      etag = now.etag
      fill(box,
        h('h2', { id: `sub-conflict-${id}`, tabindex: '-1' }, 'Not saved: this source was changed since you opened this page'),
        h('ul', {}, changes(before, source).map((c) => h('li', {}, c))),
        h('p', {}, 'Your edits are still in the form. Save again to apply them to the source as it is now, or:'),
        h('button', { type: 'button', onclick: () => load('Showing the current settings; your edits were dropped.') },
          'Show the current settings (drop my edits)'))
      box.hidden = false
      box.querySelector('h2').focus()
    }

    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      clearErrors()
      box.hidden = true
      saved.textContent = ''
      const got = read()
      const list = source.subscriptions.map((s) => s)
      let index = sub === null ? -1 : list.findIndex((s) => describe(s).name === sub)
      if (index < 0) index = list.length
      if (got.error) { showRefusal(got.error, index, formError); return }
      list[index] = got.value
      saved.textContent = 'Saving…'
      const before = source
      try {
        await api.call('PUT', path, withSubscriptions(source, list), etag ? { 'If-Match': etag } : undefined)
      } catch (err) {
        saved.textContent = ''
        if (!ctx.current()) return
        if (err.status === 412) conflict(before)
        else showRefusal(err, index, formError)
        return
      }
      if (!ctx.current()) return
      const now = describe(got.value).name
      const said = `Saved: subscription “${now}” gets the events the relay accepts from now on.`
      if (now === sub) { await load(said); main.querySelector('form.sub-form button[type=submit]')?.focus({ preventScroll: true }); return }
      setFlash(said)
      ctx.go(subHref(name, now, 'edit'))
    })

    sampleButton.addEventListener('click', () => {
      event.value = pretty(sample(segmentMode() ? (() => { try { return JSON.parse(inputs.segment.value).subscribe } catch { return '' } })() : inputs.trigger.value))
    })

    previewForm.addEventListener('submit', async (e) => {
      e.preventDefault()
      clearErrors()
      fill(result)
      const got = read()
      if (got.error) { showRefusal(got.error, null, result); return }
      let ev
      try { ev = JSON.parse(event.value) } catch (err) {
        showRefusal({ local: 'event', message: `not JSON: ${err.message}` }, null, result)
        return
      }
      result.textContent = 'Asking the relay…'
      let p
      try {
        p = await api.call('POST', `${path}/subscriptions/preview`, { subscription: got.value, event: ev })
      } catch (err) {
        if (!ctx.current()) return
        fill(result)
        showRefusal(err, null, result)
        return
      }
      if (!ctx.current()) return
      fill(result, shown(p, source.has_shared_secret))
    })
  }

  load()
  return () => stopRecent()
}

// A preview's answer: whether it matches, and the request (or why it would fail).
function shown(p, secret) {
  const out = []
  out.push(h('p', { class: 'verdict' },
    p.matches ? h('span', { class: 'badge healthy' }, 'matches') : h('span', { class: 'badge none' }, 'does not match'), ' ',
    p.matches ? (p.error ? 'The trigger matches, but Segment’s code fails this event:' : 'The trigger matches this event: it would send')
      : (p.error ? 'Segment’s code cannot read this event with the trigger:' : 'The trigger does not match this event: nothing is sent.')))
  if (p.error) out.push(h('p', { class: 'error-text preview-error' }, p.error))
  const r = p.request
  if (r) {
    out.push(h('p', { class: 'request-line' }, h('code', {}, h('strong', {}, r.method), ` ${r.url}`)))
    out.push(labelled(h('table', { class: 'list preview-headers' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Header'), h('th', { scope: 'col' }, 'Value'))),
      h('tbody', {}, r.headers.map(([k, v]) => h('tr', {}, h('td', {}, h('code', {}, k)), h('td', {}, h('code', {}, v))))))))
    out.push(h('p', { class: 'help' }, !r.signed ? 'Not signed by the relay: its headers give their own X-Signature.'
      : secret ? 'The relay adds user-agent and the signature of the source’s secret when it sends.'
        : 'The relay adds user-agent when it sends; it signs nothing: the source has no signing secret.'))
    let body = r.body
    if (body !== null) {
      try { body = JSON.stringify(JSON.parse(body), null, 2) } catch { /* shown as it is */ }
    }
    out.push(h('h3', {}, 'Body'))
    out.push(body === null ? h('p', { class: 'muted' }, 'No body.')
      : h('pre', { class: 'body preview-body', tabindex: '0', role: 'region', 'aria-label': 'The body it would send' }, body))
  }
  return out
}

// What changed in a source between two readings, for its subscriptions, in words.
function changes(before, after) {
  const out = []
  const a = new Map(before.subscriptions.map((s) => [describe(s).name, s]))
  const b = new Map(after.subscriptions.map((s) => [describe(s).name, s]))
  for (const [n, s] of b) {
    if (!a.has(n)) out.push(`Subscription “${n}” added (${describe(s).method} ${describe(s).url})`)
    else if (JSON.stringify(a.get(n)) !== JSON.stringify(s)) out.push(`Subscription “${n}” changed`)
  }
  for (const n of a.keys()) if (!b.has(n)) out.push(`Subscription “${n}” removed`)
  const rest = (s) => JSON.stringify({ ...s, subscriptions: null, summary: null })
  if (rest(before) !== rest(after)) out.push('Other settings of the source changed (they are kept as they are now)')
  if (!out.length) out.push('A change that is not shown here (a secret or a header’s value replaced).')
  return out
}
