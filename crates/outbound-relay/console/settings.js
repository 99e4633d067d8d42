// A source's webhooks (URL, headers, on or off, how each endpoint is called: endpoint.js) and
// its signing secret, edited in place and saved with one PUT of the source as the relay
// showed it, changed. The secret is write-only: the page says whether one is set, and can
// set a new one or clear it, never show it. A refusal (400) is shown next to the field it names (`webhooks[1].url`,
// `webhooks[1].headers["X-A"]`), in words that count webhooks from 1 as the page does.
// Settings that can never deliver are said before the save, which then asks again. What a
// save did is said next to its button.

import * as api from './api.js'
import { h, fill, fieldLabel, refusalText } from './dom.js'
import { heading, refused } from './source.js'
import { deleteSource } from './lifecycle.js'
import { problems } from './warnings.js'
import { endpointFields, readEndpoint, endpointDifferences } from './endpoint.js'

const MAX_WEBHOOKS = 5
let uid = 0

export function render(main, ctx) {
  const { name } = ctx.params
  const path = `/sources/${api.enc(name)}`
  // The source as last read, and its ETag: a save is applied only if nobody changed it since
  // (If-Match); otherwise the relay answers 412 and the page says what changed.
  let source = null
  let etag = null

  // `focusSave`: after a save, the keyboard stays at the Save button (the form is drawn
  // again), its result beside it.
  async function load(message, focusSave) {
    try {
      ({ data: source, etag } = await api.exchange('GET', path))
    } catch (err) {
      if (ctx.current()) refused(main, name, err)
      return
    }
    if (!ctx.current()) return
    draw(message)
    if (focusSave) main.querySelector('form.settings button[type=submit]').focus({ preventScroll: true })
  }

  // A save refused as stale (412): the source read again and what changed shown; the form
  // keeps the user's edits, and a save from here on replaces the source as it is now.
  async function conflict(form) {
    const box = form.querySelector('.conflict')
    let now
    try {
      now = await api.exchange('GET', path)
    } catch (err) {
      fill(box, h('p', {}, err.status === 404 ? 'Not saved: this source was deleted since you opened this page.'
        : `Not saved: this source was changed since you opened this page, and cannot be read again (${err.message}).`))
      box.hidden = false
      return
    }
    if (!ctx.current()) return
    const changes = differences(source, now.data)
    source = now.data
    etag = now.etag
    fill(box,
      h('h2', { id: 'conflict-title', tabindex: '-1' }, 'Not saved: this source was changed since you opened this page'),
      h('ul', {}, changes.map((c) => h('li', {}, c))),
      h('p', {}, 'Your edits are still in the form. Save again to replace those changes with what the form holds, or:'),
      h('button', { type: 'button', class: 'reload', onclick: () => load('Showing the current settings; your edits were dropped.') },
        'Show the current settings (drop my edits)'))
    box.hidden = false
    box.querySelector('h2').focus()
  }

  function draw(message) {
    const readOnly = source.managed_by === 'file'
    const hooks = h('div', { class: 'webhooks' })
    const formError = h('p', { class: 'error', id: 'form-error', role: 'alert' })
    const saved = h('p', { class: 'saved', role: 'status', 'aria-live': 'polite' }, message || '')
    const addHook = h('button', { type: 'button' }, 'Add a webhook')
    const secret = secretFields(source.has_shared_secret)
    const save = h('button', { type: 'submit', class: 'primary' }, 'Save')
    // Settings that can never deliver, said before the save (beside its button).
    const warned = h('section', { class: 'warnings', hidden: true, 'aria-labelledby': 'warn-title' })
    const box = h('section', { class: 'conflict', role: 'alert', hidden: true, 'aria-labelledby': 'conflict-title' })
    const fields = h('fieldset', { disabled: readOnly },
      h('legend', { class: 'sr-only' }, 'Settings of the source'),
      h('h2', {}, 'Webhooks'), hooks, addHook,
      h('h2', {}, 'Signing secret'), secret.el,
      formError, box, warned,
      h('div', { class: 'toolbar' }, save, saved))
    const form = h('form', { class: 'settings', novalidate: true, 'aria-describedby': 'form-error' }, fields)
    let acknowledged = null
    const keys = h('section', { 'aria-labelledby': 'keys-title', class: 'keys' },
      h('h2', { id: 'keys-title' }, 'Write keys'),
      h('p', { class: 'help' }, 'What its SDKs send (not secrets: they are in every page that loads an SDK).'),
      h('ul', { class: 'write-keys' }, source.write_keys.map((k) => h('li', {}, h('code', {}, k)))))
    const gone = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' })
    const removable = ctx.session.caller === 'admin' && !readOnly
    const remove = removable ? h('section', { 'aria-labelledby': 'delete-title', class: 'danger-zone' },
      h('h2', { id: 'delete-title' }, 'Delete this source'),
      h('p', { class: 'help' }, 'Its write keys are refused at once; what it accepted is still delivered.'),
      h('div', { class: 'toolbar' },
        h('button', { type: 'button', class: 'danger', onclick: async () => {
          gone.textContent = ''
          const said = await deleteSource(ctx, name, etag, source.write_keys.length)
          if (said && ctx.current()) gone.textContent = said
        } }, 'Delete this source…'), gone)) : null
    fill(main, ...heading(name, 'settings'),
      readOnly ? h('p', { class: 'notice' }, 'This source is managed by relay.toml: change it there (and send the relay SIGHUP). Shown here read-only.') : null,
      form, keys, remove)
    source.webhooks.forEach((w) => hooks.appendChild(webhookFields(w)))
    renumber(hooks)
    const syncAdd = () => { addHook.disabled = hooks.children.length >= MAX_WEBHOOKS }
    syncAdd()
    addHook.addEventListener('click', () => {
      const el = webhookFields({ url: '', headers: {}, enabled: true })
      hooks.appendChild(el)
      renumber(hooks)
      syncAdd()
      el.querySelector('input').focus()
    })
    hooks.addEventListener('click', (e) => {
      if (e.target.matches('.remove-webhook')) {
        e.target.closest('.webhook').remove()
        renumber(hooks)
        syncAdd()
        addHook.focus()
      }
    })
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      clearErrors(form)
      renumber(hooks)
      saved.textContent = ''
      const body = { ...source }
      delete body.summary
      body.webhooks = [...hooks.children].map(readWebhook)
      const s = secret.value()
      if (s === null) body.shared_secret = null
      else if (s !== undefined) body.shared_secret = s
      box.hidden = true
      // Said once; saved when asked again with the same problems.
      const found = problems(body, source, s)
      const key = JSON.stringify(found)
      if (found.length && acknowledged !== key) {
        acknowledged = key
        fill(warned,
          h('h2', { id: 'warn-title', tabindex: '-1' }, found.length === 1 ? 'This can never deliver:' : 'These can never deliver:'),
          h('ul', {}, found.map((p) => h('li', {}, p))),
          h('p', {}, 'Change them, or press Save again to save as it is.'))
        warned.hidden = false
        save.textContent = 'Save anyway'
        warned.querySelector('h2').focus()
        return
      }
      warned.hidden = true
      save.textContent = 'Save'
      saved.textContent = 'Saving…'
      try {
        await api.call('PUT', path, body, etag ? { 'If-Match': etag } : undefined)
      } catch (err) {
        saved.textContent = ''
        if (err.status === 412) conflict(form)
        else showError(form, formError, err)
        return
      }
      if (ctx.current()) await load('Saved: the relay applies it to the events it accepts from now on.', true)
    })
    if (message) {
      saved.scrollIntoView({ block: 'nearest' })
    }
  }

  load()
  return null
}

// The fields of one webhook; `data-field` attributes carry the API's names once numbered.
function webhookFields(w) {
  const id = ++uid
  const headers = h('div', { class: 'headers' })
  const el = h('fieldset', { class: 'webhook' },
    h('legend', {}, 'Webhook'),
    h('label', { for: `url-${id}` }, 'URL'),
    h('input', { id: `url-${id}`, class: 'url', type: 'url', value: w.url, 'data-name': 'url', autocomplete: 'off', spellcheck: 'false' }),
    h('label', { class: 'check' },
      h('input', { type: 'checkbox', class: 'enabled', 'data-name': 'enabled', checked: w.enabled !== false }), ' On (off: kept, sent nothing new)'),
    h('div', { class: 'headers-block', 'data-name': 'headers' },
      h('p', { class: 'label' }, 'Headers'), headers,
      h('button', { type: 'button', class: 'add-header' }, 'Add a header')),
    endpointFields(w),
    h('button', { type: 'button', class: 'remove-webhook danger' }, 'Remove this webhook'))
  for (const [k, v] of Object.entries(w.headers || {})) headers.appendChild(headerRow(k, v))
  el.querySelector('.add-header').addEventListener('click', () => {
    const row = headerRow('', '')
    headers.appendChild(row)
    row.querySelector('input').focus()
  })
  return el
}

// A header's value is write-only: a stored one shows as set, and stays unless a new one is
// typed (for the same URL; the API refuses to keep it for another).
function headerRow(k, v) {
  const id = ++uid
  const kept = v !== null && typeof v === 'object' && v.has_value
  const row = h('div', { class: 'header-row' },
    h('label', { for: `hk-${id}`, class: 'sr-only' }, 'Header name'),
    h('input', { id: `hk-${id}`, class: 'header-name', value: k, placeholder: 'Name', autocomplete: 'off' }),
    h('label', { for: `hv-${id}`, class: 'sr-only' }, 'Header value'),
    h('input', { id: `hv-${id}`, class: 'header-value', type: kept ? 'password' : 'text', value: kept ? '' : v,
      placeholder: kept ? 'Set (hidden): type to replace' : 'Value', autocomplete: 'new-password', 'data-kept': kept ? '1' : '' }),
    h('button', { type: 'button', class: 'quiet' }, 'Remove header'))
  row.querySelector('button').addEventListener('click', () => row.remove())
  return row
}

// Numbers the webhooks' fieldsets and fields as the API names them (webhooks[i].url; a
// header's value `webhooks[i].headers["X-A"]`, as a refusal names it).
function renumber(hooks) {
  ;[...hooks.children].forEach((el, i) => {
    el.querySelector('legend').textContent = `Webhook ${i + 1}`
    el.setAttribute('data-field', `webhooks[${i}]`)
    el.querySelectorAll('[data-name]').forEach((f) => f.setAttribute('data-field', `webhooks[${i}].${f.getAttribute('data-name')}`))
    el.querySelectorAll('.header-row').forEach((row) => {
      const k = row.querySelector('.header-name').value.trim()
      row.querySelector('.header-value').setAttribute('data-field', `webhooks[${i}].headers[${JSON.stringify(k)}]`)
    })
  })
}

function readWebhook(el) {
  const headers = {}
  el.querySelectorAll('.header-row').forEach((row) => {
    const k = row.querySelector('.header-name').value.trim()
    const value = row.querySelector('.header-value')
    if (!k) return
    headers[k] = value.value === '' && value.getAttribute('data-kept') ? { has_value: true } : value.value
  })
  return {
    url: el.querySelector('input.url').value.trim(),
    headers,
    enabled: el.querySelector('input.enabled').checked,
    ...readEndpoint(el),
  }
}

// Keep, set or clear: the secret itself is never shown.
function secretFields(isSet) {
  const id = ++uid
  const input = h('input', { id: `secret-${id}`, type: 'password', autocomplete: 'new-password', disabled: true, 'data-field': 'shared_secret' })
  const choice = (value, label, checked) => h('label', { class: 'check' },
    h('input', { type: 'radio', name: `secret-${id}`, value, checked }), ` ${label}`)
  const el = h('div', { class: 'secret' },
    h('p', {}, isSet ? 'A secret is set (it is never shown).' : 'No secret is set: requests are not signed.'),
    h('div', { role: 'radiogroup', 'aria-label': 'Signing secret' },
      choice('keep', isSet ? 'Keep it' : 'Leave it unset', true),
      choice('set', isSet ? 'Replace it with' : 'Set one', false),
      isSet ? choice('clear', 'Clear it (stop signing)', false) : null),
    h('label', { for: `secret-${id}`, class: 'sr-only' }, 'New secret'), input)
  el.addEventListener('change', () => {
    input.disabled = el.querySelector('input[type=radio]:checked').value !== 'set'
    if (!input.disabled) input.focus()
  })
  return {
    el,
    // undefined: keep; null: clear; a string: set.
    value() {
      const c = el.querySelector('input[type=radio]:checked').value
      return c === 'keep' ? undefined : c === 'clear' ? null : input.value
    },
  }
}

function clearErrors(form) {
  form.querySelectorAll('.field-error').forEach((e) => e.remove())
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'))
  form.querySelector('#form-error').textContent = ''
}

// The API's 400 beside the field it names: that field (a header's value by its name,
// `webhooks[1].headers["Bad Header:"]`), or the nearest one holding it (`webhooks[0]` →
// webhook 1), else above the Save button.
function showError(form, top, err) {
  const strip = (f) => f.replace(/(\.[^.[\]]+|\[(\d+|"(?:[^"\\]|\\.)*")\])$/, '')
  let field = err.field || ''
  let target = null
  while (field && !target) {
    target = [...form.querySelectorAll('[data-field]')].find((e) => e.getAttribute('data-field') === field) || null
    const shorter = strip(field)
    field = shorter === field ? '' : shorter
  }
  if (!target) {
    top.textContent = `Not saved: ${refusalText(err)}`
    return
  }
  const id = `err-${++uid}`
  const note = h('p', { class: 'field-error', id }, refusalText(err))
  const anchor = target.type === 'checkbox' ? target.closest('label')
    : target.classList.contains('header-value') ? target.closest('.header-row') : target
  anchor.after(note)
  // A field inside a closed disclosure (the endpoint's settings) is shown first.
  const closed = target.closest('details:not([open])')
  if (closed) closed.open = true
  const input = target.matches('input, select, textarea') ? target : target.querySelector('input, select, textarea')
  if (input) {
    input.setAttribute('aria-invalid', 'true')
    input.setAttribute('aria-describedby', id)
    input.focus()
  }
  top.textContent = `Not saved: see ${fieldLabel(err.field) || 'the field marked'} above.`
}

// What changed between two readings of a source, in words (never a secret: the API shows
// none, only whether each is set).
export function differences(before, after) {
  const out = []
  const a = before.webhooks || []
  const b = after.webhooks || []
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const n = `Webhook ${i + 1}`
    const x = a[i]
    const y = b[i]
    if (!x) { out.push(`${n} added: ${y.url}${y.enabled === false ? ' (off)' : ''}`); continue }
    if (!y) { out.push(`${n} removed (it was ${x.url})`); continue }
    if (x.url !== y.url) out.push(`${n}: its URL is now ${y.url} (it was ${x.url})`)
    if ((x.enabled !== false) !== (y.enabled !== false)) out.push(`${n} turned ${y.enabled === false ? 'off' : 'on'}`)
    const hx = Object.keys(x.headers || {}).sort().join(', ')
    const hy = Object.keys(y.headers || {}).sort().join(', ')
    if (hx !== hy) out.push(`${n}: its headers are now ${hy || 'none'} (they were ${hx || 'none'})`)
    out.push(...endpointDifferences(n, x, y))
  }
  if (before.has_shared_secret !== after.has_shared_secret) {
    out.push(after.has_shared_secret ? 'A signing secret was set' : 'The signing secret was cleared')
  }
  const shown = (s) => JSON.stringify(s === undefined ? null : s)
  const skip = new Set(['webhooks', 'has_shared_secret', 'summary'])
  const keys = new Set([...Object.keys(before), ...Object.keys(after)])
  for (const k of [...keys].sort()) {
    if (!skip.has(k) && shown(before[k]) !== shown(after[k])) out.push(`${k} changed`)
  }
  if (!out.length) out.push('A change that is not shown here: a secret, a header\'s value or an endpoint\'s credential replaced.')
  return out
}
