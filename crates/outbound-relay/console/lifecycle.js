// A source's life: made (the admin: a name, a write key the page draws, its first webhook;
// `If-None-Match: *`, so an existing source of that name is never replaced), its write keys
// shown, its tokens made (shown once), listed and revoked (the admin for any source, a
// customer for its own), and deleted (the admin), each destructive step asked first with
// what it touches, counted.

import * as api from './api.js'
import { h, fill, labelled, when, count, refusalText } from './dom.js'
import { heading, refused } from './source.js'
import { confirmAction } from './dialog.js'

// `bytes` random bytes in hex (the browser's generator).
function randomHex(bytes) {
  const b = new Uint8Array(bytes)
  crypto.getRandomValues(b)
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
}

// An error beside the field it names (or the form's own), the field marked and focused.
function fieldError(form, fields, err) {
  form.querySelectorAll('.field-error').forEach((e) => e.remove())
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'))
  const input = fields[err.field] || fields[''] || null
  const note = h('p', { class: 'field-error', id: `${form.id}-error`, role: 'alert' }, refusalText(err))
  if (!input) { form.prepend(note); return }
  input.after(note)
  input.setAttribute('aria-invalid', 'true')
  input.setAttribute('aria-describedby', note.id)
  input.focus()
}

// "New source" (the admin): a disclosure on the list of sources.
export function createForm(ctx) {
  if (ctx.session.caller !== 'admin') return null
  const name = h('input', { id: 'new-name', required: true, autocomplete: 'off', spellcheck: 'false', pattern: '[A-Za-z0-9_-]{1,64}' })
  const key = h('input', { id: 'new-key', required: true, autocomplete: 'off', spellcheck: 'false', value: `wk_${randomHex(16)}` })
  const url = h('input', { id: 'new-url', type: 'url', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'https://' })
  const again = h('button', { type: 'button' }, 'Draw another')
  const form = h('form', { id: 'new-source', class: 'new-source', novalidate: true },
    h('label', { for: 'new-name' }, 'Name'),
    h('p', { class: 'help', id: 'new-name-help' }, 'Letters, digits, - and _: it names the source in the API and its files.'),
    name,
    h('label', { for: 'new-key' }, 'Write key'),
    h('p', { class: 'help' }, 'What its SDKs send (not a secret). Drawn at random here; keep it or give your own.'),
    h('div', { class: 'row' }, key, again),
    h('label', { for: 'new-url' }, 'Webhook URL'), url,
    h('div', { class: 'toolbar' }, h('button', { type: 'submit', class: 'primary' }, 'Make the source')))
  name.setAttribute('aria-describedby', 'new-name-help')
  again.addEventListener('click', () => { key.value = `wk_${randomHex(16)}` })
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const n = name.value.trim()
    const fields = { name, 'write_keys[0]': key, write_keys: key, 'webhooks[0].url': url, webhooks: url, 'if-none-match': name, '': name }
    if (!n) { fieldError(form, fields, { field: 'name', message: 'Give the source a name.' }); return }
    const body = { write_keys: [key.value.trim()], webhooks: [{ url: url.value.trim() }] }
    try {
      // Made only if no source has this name: never a replacement of one.
      await api.call('PUT', `/sources/${api.enc(n)}`, body, { 'If-None-Match': '*' })
    } catch (err) {
      if (err.status === 412) err.message = `A source “${n}” exists already: choose another name.`
      fieldError(form, fields, err)
      return
    }
    ctx.say(`Source ${n} made.`)
    ctx.go(`#/sources/${encodeURIComponent(n)}/settings`)
  })
  return h('details', { class: 'create' }, h('summary', {}, 'New source'), form)
}

// Deleting source `name` (the admin), asked first with what it touches; `etag`: the
// revision the page read (If-Match: a source changed since is not deleted unseen).
export async function deleteSource(ctx, name, etag, writeKeys) {
  const path = `/sources/${api.enc(name)}`
  const [listed, letters, tokens] = await Promise.all([
    api.get(`/sources?${new URLSearchParams({ q: name, limit: '1000' })}`).catch(() => null),
    api.get(`${path}/dead-letters?limit=1`).catch(() => null),
    api.get(`${path}/tokens`).catch(() => null)])
  const summary = listed && (listed.sources.find((s) => s.name === name) || {}).summary
  const waiting = summary ? summary.waiting : null
  const yes = await confirmAction({
    title: `Delete source ${name}?`,
    lines: [
      `Its ${count(writeKeys)} write key${writeKeys === 1 ? ' is' : 's are'} refused at once: its SDKs' events are no longer taken.`,
      waiting === null ? null : `${count(waiting)} message${waiting === 1 ? '' : 's'} waiting ${waiting === 1 ? 'is' : 'are'} still delivered (it drains).`,
      letters ? `Its ${count(letters.stats.count)} dead letter${letters.stats.count === 1 ? '' : 's'} can no longer be replayed.` : null,
      tokens ? `Its ${count(tokens.tokens.length)} token${tokens.tokens.length === 1 ? ' is' : 's are'} revoked.` : null,
      'A source made again under this name starts afresh.',
    ],
    action: 'Delete the source',
    typed: name,
  })
  if (!yes) return 'Not deleted.'
  try {
    await api.call('DELETE', path, undefined, etag ? { 'If-Match': etag } : undefined)
  } catch (err) {
    if (err.status === 412) return 'Not deleted: the source was changed since this page read it. Look at it again first.'
    return `Not deleted: ${err.message}`
  }
  ctx.say(`Source ${name} deleted: what it accepted is still delivered.`)
  ctx.go('#/sources')
  return null
}

// `#/sources/{name}/tokens`: its tokens (ids, never the token), one made and shown once,
// one revoked.
export function render(main, ctx) {
  const { name } = ctx.params
  const path = `/sources/${api.enc(name)}/tokens`
  const body = h('tbody')
  const made = h('div', { class: 'made', role: 'status', 'aria-live': 'polite' })
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' })
  const make = h('button', { type: 'button', class: 'primary' }, 'Make a token')
  fill(main, ...heading(name, 'tokens'),
    h('p', { class: 'help' }, `A token reaches source ${name} only: its settings, records and tokens. It is shown once, when made; the relay keeps only its hash.`),
    h('div', { class: 'toolbar' }, make, result),
    made,
    h('div', { class: 'scroll' }, h('table', { class: 'list tokens' },
      h('thead', {}, h('tr', {}, ['Token', 'Made', 'Action'].map((c) => h('th', { scope: 'col' }, c)))),
      body)))

  async function load() {
    let list
    try {
      list = await api.get(path)
    } catch (err) {
      if (ctx.current()) refused(main, name, err)
      return
    }
    if (!ctx.current()) return
    fill(body, list.tokens.length ? list.tokens.map((t) => h('tr', { 'data-token': t.id },
      h('th', { scope: 'row' }, h('code', {}, t.id), t.id === ctx.session.token ? h('span', { class: 'badge none' }, 'this session') : null),
      h('td', {}, when(new Date(t.created_ms).toISOString())),
      h('td', {}, h('button', { type: 'button', class: 'danger', onclick: () => revoke(t.id) }, 'Revoke'))))
      : h('tr', {}, h('td', { colspan: 3 }, 'No token.')))
    labelled(body.closest('table'))
  }

  async function revoke(id) {
    const mine = id === ctx.session.token
    const yes = await confirmAction({
      title: `Revoke token ${id}?`,
      lines: ['Whoever uses it is refused from the next request on (401).',
        mine ? 'It is the token you are signed in with: you will be signed out.' : null],
      action: 'Revoke the token',
    })
    if (!yes) { result.textContent = 'Not revoked.'; return }
    try {
      await api.call('DELETE', `${path}/${api.enc(id)}`)
    } catch (err) {
      result.textContent = `Not revoked: ${err.message}`
      return
    }
    result.textContent = `Token ${id} revoked.`
    load()
  }

  make.addEventListener('click', async () => {
    let t
    try {
      t = await api.call('POST', path)
    } catch (err) {
      result.textContent = `No token made: ${err.message}`
      return
    }
    result.textContent = ''
    const shown = h('input', { id: 'new-token', readonly: true, value: t.token, spellcheck: 'false', autocomplete: 'off' })
    fill(made,
      h('h2', { id: 'made-title', tabindex: '-1' }, `Token ${t.id} made`),
      h('p', {}, 'Copy it now: it is shown this once, and nowhere else.'),
      h('label', { for: 'new-token' }, 'The token'), shown,
      h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: () => fill(made) }, 'Done: hide it')))
    made.querySelector('h2').focus()
    shown.select()
    load()
  })
  load()
  return () => fill(made)
}
