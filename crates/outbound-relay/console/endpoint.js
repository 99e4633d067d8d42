// How a webhook's endpoint is called, edited under its webhook: its auth (Basic, bearer,
// OAuth2 client credentials), its signature (scheme and header), a rate limit, and mutual TLS.
// Passwords, tokens, client secrets and the client key are write-only, as header values are:
// a stored one shows as set, and stays unless a new one is typed (the API keeps it only for
// the same URL, auth type and token URL). Fields carry the API's names (`data-name`), so a
// refusal lands beside the field it names (`webhooks[0].rate_limit.per_second`).

import { h } from './dom.js'

let uid = 0

const AUTH_TYPES = [['', 'None'], ['basic', 'Basic (user and password)'], ['bearer', 'Bearer token'],
  ['oauth2', 'OAuth2 client credentials']]
const SCHEMES = [['', 'The source’s'], ['x-signature', 'X-Signature'], ['hmac-sha256', 'HMAC-SHA256 (sha256=<hex>)'],
  ['standard-webhooks', 'Standard Webhooks']]

function kept(v) {
  return v !== null && typeof v === 'object' && v.has_value
}

function field(label, input) {
  const id = `ep-${++uid}`
  input.id = id
  return h('div', { class: 'ep-field' }, h('label', { for: id }, label), input)
}

function text(name, value, attrs = {}) {
  return h('input', { type: 'text', 'data-name': name, value: value ?? '', autocomplete: 'off', spellcheck: 'false', ...attrs })
}

// A write-only input: empty with a stored value means "keep it".
function secret(name, value) {
  const isKept = kept(value)
  return h('input', { type: 'password', 'data-name': name, class: 'write-only', autocomplete: 'new-password',
    value: isKept ? '' : (value ?? ''), 'data-kept': isKept ? '1' : '',
    placeholder: isKept ? 'Set (hidden): type to replace' : '' })
}

// A write-only PEM (a key): a textarea keeps its lines, which a password input would not.
function pemSecret(name, value) {
  const isKept = kept(value)
  return h('textarea', { 'data-name': name, class: 'pem write-only', rows: 3, autocomplete: 'off', spellcheck: 'false',
    'data-kept': isKept ? '1' : '', placeholder: isKept ? 'Set (hidden): paste to replace' : '-----BEGIN PRIVATE KEY-----' })
}

function select(name, options, value) {
  return h('select', { 'data-name': name },
    options.map(([v, label]) => h('option', { value: v, selected: v === (value || '') }, label)))
}

// The endpoint's fields of webhook `w` (as the API showed it).
export function endpointFields(w) {
  const a = w.auth || {}
  const t = w.tls || {}
  const r = w.rate_limit || {}
  const type = select('auth', AUTH_TYPES, a.type)
  type.classList.add('auth-type')
  const groups = {
    basic: h('div', { class: 'auth-group', 'data-type': 'basic' },
      field('User', text('auth.user', a.type === 'basic' ? a.user : '')),
      field('Password', secret('auth.password', a.type === 'basic' ? a.password : ''))),
    bearer: h('div', { class: 'auth-group', 'data-type': 'bearer' },
      field('Token', secret('auth.token', a.type === 'bearer' ? a.token : ''))),
    oauth2: h('div', { class: 'auth-group', 'data-type': 'oauth2' },
      field('Token URL', text('auth.token_url', a.type === 'oauth2' ? a.token_url : '', { type: 'url' })),
      field('Client id', text('auth.client_id', a.type === 'oauth2' ? a.client_id : '')),
      field('Client secret', secret('auth.client_secret', a.type === 'oauth2' ? a.client_secret : '')),
      field('Or a client assertion key (PEM; signs a JWT instead of the secret)', pemSecret('auth.client_assertion_key', a.type === 'oauth2' ? a.client_assertion_key : '')),
      field('Scope (optional)', text('auth.scope', a.type === 'oauth2' ? a.scope : '')),
      field('Audience (optional)', text('auth.audience', a.type === 'oauth2' ? a.audience : ''))),
  }
  const show = () => {
    for (const [k, g] of Object.entries(groups)) g.hidden = type.value !== k
  }
  type.addEventListener('change', show)
  show()
  const keyKept = kept(t.client_key)
  const key = h('textarea', { 'data-name': 'tls.client_key', class: 'pem write-only', rows: 3, autocomplete: 'off', spellcheck: 'false',
    'data-kept': keyKept ? '1' : '', placeholder: keyKept ? 'Set (hidden): paste a new key to replace' : '-----BEGIN PRIVATE KEY-----' })
  const dropKey = keyKept ? h('label', { class: 'check' }, h('input', { type: 'checkbox', class: 'drop-key' }), ' Remove the stored key') : null
  const pem = (name, value, placeholder) => h('textarea', { 'data-name': name, class: 'pem', rows: 3, autocomplete: 'off', spellcheck: 'false', placeholder }, value || '')
  const set = w.auth || w.tls || w.signature_header || w.signature_scheme || w.rate_limit
  return h('details', { class: 'endpoint', open: Boolean(set) },
    h('summary', {}, 'How the endpoint is called (auth, signature, rate limit, TLS)'),
    h('fieldset', { class: 'ep-auth' }, h('legend', {}, 'Authentication'),
      field('Type', type), groups.basic, groups.bearer, groups.oauth2),
    h('fieldset', { class: 'ep-signature' }, h('legend', {}, 'Signature'),
      field('Scheme', select('signature_scheme', SCHEMES, w.signature_scheme)),
      field('Header (empty: the scheme’s own)', text('signature_header', w.signature_header, { placeholder: 'X-Signature' }))),
    h('fieldset', { class: 'ep-rate', 'data-name': 'rate_limit' }, h('legend', {}, 'Rate limit (excess waits; per relay process)'),
      field('Requests a second (empty: none)', text('rate_limit.per_second', r.per_second, { inputmode: 'numeric' })),
      field('Burst (empty: as many)', text('rate_limit.burst', r.burst, { inputmode: 'numeric' }))),
    h('fieldset', { class: 'ep-tls', 'data-name': 'tls' }, h('legend', {}, 'Mutual TLS (PEM text)'),
      field('Client certificate', pem('tls.client_cert', t.client_cert, '-----BEGIN CERTIFICATE-----')),
      field('Client key', key), dropKey,
      field('Trusted CA (replaces the usual roots for this endpoint)', pem('tls.ca_certs', t.ca_certs, '-----BEGIN CERTIFICATE-----'))))
}

// A number as typed, or the text itself (the API then names the field).
function number(v) {
  return /^\d+$/.test(v) ? Number(v) : v
}

// The endpoint settings of webhook element `el`, as a PUT takes them (unset: null).
export function readEndpoint(el) {
  const q = (name) => el.querySelector(`[data-name="${name}"]`)
  const val = (name) => q(name).value.trim()
  const writeOnly = (name) => {
    const input = q(name)
    return input.value === '' && input.getAttribute('data-kept') ? { has_value: true } : input.value
  }
  const type = val('auth')
  let auth = null
  if (type === 'basic') auth = { type, user: val('auth.user'), password: writeOnly('auth.password') }
  else if (type === 'bearer') auth = { type, token: writeOnly('auth.token') }
  else if (type === 'oauth2') {
    auth = { type, token_url: val('auth.token_url'), client_id: val('auth.client_id'), client_secret: writeOnly('auth.client_secret') }
    const assertionKey = writeOnly('auth.client_assertion_key')
    if (assertionKey !== '') auth.client_assertion_key = assertionKey
    if (val('auth.scope')) auth.scope = val('auth.scope')
    if (val('auth.audience')) auth.audience = val('auth.audience')
  }
  const tls = {}
  if (val('tls.client_cert')) tls.client_cert = q('tls.client_cert').value
  if (val('tls.ca_certs')) tls.ca_certs = q('tls.ca_certs').value
  const drop = el.querySelector('.drop-key')
  if (!(drop && drop.checked)) {
    const key = writeOnly('tls.client_key')
    if (key !== '') tls.client_key = key
  }
  const per = val('rate_limit.per_second')
  const burst = val('rate_limit.burst')
  const rate = per === '' ? null : burst === '' ? { per_second: number(per) } : { per_second: number(per), burst: number(burst) }
  return {
    auth,
    tls: Object.keys(tls).length ? tls : null,
    signature_header: val('signature_header') || null,
    signature_scheme: val('signature_scheme') || null,
    rate_limit: rate,
  }
}

// What changed in how webhook `n`'s endpoint is called, in words (never a secret's value).
export function endpointDifferences(n, x, y) {
  const out = []
  const words = { auth: 'authentication', tls: 'TLS', signature_header: 'signature header',
    signature_scheme: 'signature scheme', rate_limit: 'rate limit' }
  const shown = (v) => JSON.stringify(v === undefined ? null : v)
  for (const [k, label] of Object.entries(words)) {
    if (shown(x[k]) !== shown(y[k])) out.push(`${n}: its ${label} changed`)
  }
  return out
}
