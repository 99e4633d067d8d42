#!/usr/bin/env node
// Generates subscription cases from a seed and runs Segment's own code on each, writing one JSON
// line per case: the inputs (trigger, Send action mapping, secret, events) and Segment's answers
// (parseFql and validate's decisions, mapping-kit's validate and transform, and the request the
// webhook destination's perform / performBatch makes, captured by a fake fetch: nothing is sent).
// The Rust side (crates/outbound/examples/subscriptions_diff.rs) computes ours and compares.
//
//   node gen.mjs --seed S --count N [--out FILE]

import { createRequire } from 'node:module'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

// Nothing connects anywhere: a socket opened by mistake fails the run instead of leaving.
net.Socket.prototype.connect = function () {
  throw new Error('gen.mjs opens no connection')
}

const require = createRequire(import.meta.url)
const { parseFql, validate, generateFql } = require('@segment/destination-subscriptions')
const core = require('@segment/actions-core')
const coreDir = path.dirname(require.resolve('@segment/actions-core'))
const mappingValidate = require(path.join(coreDir, 'mapping-kit', 'validate.js')).default
// The webhook destination of @segment/action-destinations, its two files taken from the pinned
// package (setup.sh): the package itself pulls in every destination's SDKs.
const webhook = require('./vendor/webhook/index.js').default

// No request leaves the process: actions-core's fetch is replaced by one that records. Its
// headers are all actions-core sets; node-fetch's own (host, content-length, connection,
// accept, accept-encoding) would be added after it, unseen.
const fetchModule = require(path.join(coreDir, 'fetch.js'))
let captured = []
fetchModule.default = async (request) => {
  const body = request.body === null ? null : await request.text()
  const headers = {}
  for (const [name, values] of Object.entries(request.headers.raw())) headers[name] = values.join(', ')
  captured.push({ url: request.url, method: request.method, headers, body })
  return new fetchModule.Response('ok', { status: 200 })
}

// `--from I --count N`: cases I..I+N of the seed (each case depends on the seed and its index only).
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), [])
)
const seed = String(args.seed ?? '1')
const from = Number(args.from ?? 0)
const count = Number(args.count ?? 1000)
const out = args.out ? fs.createWriteStream(args.out) : process.stdout

// ---------------------------------------------------------------- a seeded generator

function hash(s) {
  let h = 2166136261
  for (const c of s) h = Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0
  return h
}

let state = 0
function rand() {
  state = (state + 0x6d2b79f5) >>> 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const int = (n) => Math.floor(rand() * n)
const pick = (list) => list[int(list.length)]
const chance = (p) => rand() < p
const some = (n, f) => Array.from({ length: n }, f)

// ---------------------------------------------------------------- the vocabulary events and triggers share

const TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias']
const EVENTS = ['Order Completed', 'order completed', 'Signed Up', 'Product Viewed', 'Größe Gewählt', '日本語イベント', 'emoji 🎉 time', 'a😀b', '42', '']
const NAMES = ['Home', 'Pricing', 'Checkout', 'café', '']
const KEYS = ['total', 'price', 'sku', 'name', 'plan', 'email', 'count', 'flag', 'tags', 'items', 'nested', 'a b', 'x-y', '0', '1', '10', 'émoji', 'length', 'constructor', 'toString', 'empty']
const STRINGS = ['', 'a', 'pro', 'Pro', 'PRO', 'free', 'Order Completed', '42', '3.14', ' 7 ', '-5', '0', '0x10', 'true', 'false', 'null', 'undefined', 'Größe', 'straße', 'ΟΔΟΣ', 'İstanbul', '日本語', '😀', 'a😀b', 'café', '€uro', 'tab\there', 'line\nbreak', 'a.b', 'a,b', '{{userId}}', '{"k":[1,2]}', '[1,"x"]', '$&', 'x*', '*x', 'u1', 'user@example.com']
const NUMBERS = [0, 1, -1, 2, 5, 10, 25, 42, 99.5, 3.14, -2.5, 0.1, 100, 1000, 1e21, 1e-7, 1.5e300, 5e-324, 123456789012, 2 ** 53]

function scalar() {
  const r = rand()
  if (r < 0.5) return pick(STRINGS)
  if (r < 0.8) return pick(NUMBERS)
  if (r < 0.9) return chance(0.5)
  return null
}

function value(depth) {
  const r = rand()
  if (depth > 2 || r < 0.6) return scalar()
  if (r < 0.8) return some(int(4), () => value(depth + 1))
  return object(depth + 1, int(4))
}

function object(depth, n) {
  const o = {}
  for (let i = 0; i < n; i++) o[pick(KEYS)] = value(depth)
  return o
}

function properties() {
  const r = rand()
  if (r < 0.04) return null
  if (r < 0.06) return 'not an object'
  if (r < 0.08) return [1, 2]
  const p = object(1, int(6))
  if (chance(0.6)) p.total = pick(NUMBERS)
  if (chance(0.4)) p.price = pick([...STRINGS.slice(5, 11), ...NUMBERS.slice(0, 6)])
  if (chance(0.4)) p.name = pick(STRINGS)
  if (chance(0.3)) p.tags = some(int(3), () => pick(STRINGS))
  if (chance(0.3)) p.items = some(int(3), () => ({ sku: pick(['x1', 'x2', 'X3']), price: pick(NUMBERS), qty: int(3) }))
  if (chance(0.2)) p.nested = { a: { b: pick(NUMBERS), c: null }, d: [1, { e: pick(STRINGS) }] }
  if (chance(0.2)) p.flag = chance(0.5)
  if (chance(0.1)) p.json = JSON.stringify(value(1))
  return p
}

function event() {
  const type = pick(TYPES)
  const e = { type }
  if (chance(0.9)) e.userId = chance(0.9) ? pick(['u1', 'u2', 'user-3', '42', '']) : pick([42, true, null])
  if (chance(0.5)) e.anonymousId = 'anon-' + int(100)
  if (type === 'track') e.event = chance(0.95) ? pick(EVENTS) : pick([null, 5])
  if (type === 'page' || type === 'screen') e.name = chance(0.9) ? pick(NAMES) : null
  if (type === 'group') e.groupId = 'g' + int(10)
  if (type === 'alias') e.previousId = 'p' + int(10)
  if (type === 'identify' || type === 'group' || chance(0.2)) e.traits = { plan: pick(['pro', 'free', 'Pro']), email: pick(['a@b.co', null, '']), ...object(1, int(3)) }
  if (type !== 'identify' && type !== 'alias' && chance(0.9)) e.properties = properties()
  if (chance(0.85)) {
    e.context = {
      app: { name: pick(['Shop', 'shop', 'Shöp', '']), version: pick(['1.0', '2.3.4', 2]) },
      library: { name: pick(['analytics.js', 'analytics-go', 'outbound']) },
      locale: pick(['en-US', 'de-DE', 'ja-JP'])
    }
    if (chance(0.2)) e.context.ip = '127.0.0.1'
  }
  e.messageId = 'm-' + int(1e6)
  e.timestamp = '2026-11-29T10:00:00.000Z'
  return e
}

// ---------------------------------------------------------------- triggers

const fqlString = (s) => `"${s.replace(/"/g, '')}"`
function fqlValue() {
  const r = rand()
  if (r < 0.45) return fqlString(pick(STRINGS))
  if (r < 0.8) return String(pick([0, 1, -1, 5, 10, 25, 42, 99.5, 3.14, -2.5, 100, 1000, '1.50', '007', '+5']))
  return pick(['true', 'false', 'null'])
}
const PATHS = () => pick([
  `properties.${pick(['total', 'price', 'sku', 'name', 'email', 'count', 'flag', 'tags', 'empty', '0'])}`,
  'properties.items.length', 'properties.tags.length', 'properties.nested.a.b', 'properties.name.length',
  'properties.a\\ b', 'properties.tags.\\0', 'properties.__proto__', 'properties.__proto__.polluted', 'properties.name.\\1', 'properties.constructor', 'properties.toString',
  `traits.${pick(['plan', 'email', 'name', 'total'])}`, 'context.app.name', 'context.app.version', 'context.library.name',
  'context.locale', 'context.ip'
])
const OPS = ['=', '!=', '<', '<=', '>', '>=']

// A condition read off one of the case's events, so that triggers match about half the time.
function hinted(tags, e) {
  const r = rand()
  const num = (x) => (typeof x === 'number' && Number.isFinite(x) && Math.abs(x) < 1e15 ? x : null)
  if (r < 0.3) { tags.add('op:type='); return `type = ${fqlString(e.type)}` }
  if (r < 0.45 && typeof e.event === 'string') { tags.add('op:event='); return `event = ${fqlString(e.event)}` }
  if (r < 0.55 && typeof e.event === 'string' && e.event.length > 1) {
    const chars = [...e.event.replace(/"/g, '')]
    const cut = 1 + int(chars.length - 1)
    const starts = chance(0.5)
    tags.add(starts ? 'op:match-starts' : 'op:match-ends')
    return starts ? `match(event, "${chars.slice(0, cut).join('')}*")` : `match(event, "*${chars.slice(cut).join('')}")`
  }
  const p = e.properties && typeof e.properties === 'object' && !Array.isArray(e.properties) ? e.properties : null
  if (r < 0.75 && p && num(p.total) !== null) {
    const op = pick(OPS)
    tags.add(`op:${op}:number`)
    return `properties.total ${op} ${num(p.total) + pick([-1, 0, 0, 1])}`
  }
  if (r < 0.85 && p && typeof p.name === 'string' && !p.name.includes('"')) {
    const op = pick(['=', '!=', 'contains'])
    tags.add(op === 'contains' ? 'op:contains' : `op:${op}:string`)
    return op === 'contains' ? `contains(properties.name, "${[...p.name].slice(0, 2).join('')}")` : `properties.name ${op} ${fqlString(p.name)}`
  }
  if (r < 0.95 && e.context?.app) { tags.add('op:=:string'); return `context.app.name = ${fqlString(String(e.context.app.name))}` }
  tags.add('op:!=:exists')
  return `userId != null`
}

function condition(tags, events) {
  if (events && chance(0.5)) return hinted(tags, pick(events))
  const r = rand()
  let q
  if (r < 0.15) {
    const op = pick(['=', '!='])
    q = `type ${op} ${fqlString(pick(TYPES))}`
    tags.add(`op:type${op}`)
  } else if (r < 0.3) {
    const op = pick(['=', '!='])
    q = `event ${op} ${fqlString(pick(EVENTS))}`
    tags.add(`op:event${op}`)
  } else if (r < 0.45) {
    const fn = pick(['contains', 'match'])
    const neg = chance(0.3) ? '!' : ''
    const field = pick(['event', 'event', 'name', 'userId', PATHS()])
    const text = [...pick([...EVENTS, ...STRINGS])].slice(0, 1 + int(6)).join('').replace(/"/g, '')
    const arg = fn === 'contains' ? `"${text}"` : chance(0.5) ? `"${text}*"` : chance(0.9) ? `"*${text}"` : `"${text}"`
    q = `${neg}${fn}(${field}, ${arg})`
    tags.add(`op:${neg}${fn}${fn === 'match' ? (arg.endsWith('*"') ? '-starts' : '-ends') : ''}`)
  } else if (r < 0.55) {
    const field = pick(['name', 'userId'])
    const form = pick(['!= null', '= null', `= ${fqlString(pick([...NAMES, 'u1', 'u2']))}`, `!= ${fqlString('u1')}`, '= true', '= false'])
    q = `${field} ${form}`
    tags.add(`op:${field}`)
  } else {
    const op = pick(OPS)
    const v = fqlValue()
    q = `${PATHS()} ${op} ${v}`
    const kind = v === 'null' ? (op === '=' ? 'not-exists' : op === '!=' ? 'exists' : 'null') : v === 'true' || v === 'false' ? (op === '=' ? 'boolean' : 'bool-op') : v.startsWith('"') ? 'string' : 'number'
    tags.add(`op:${op}:${kind}`)
  }
  return q
}

function wellFormed(tags, events) {
  const n = 1 + int(4)
  const conds = some(n, () => condition(tags, events))
  const join = () => pick([' and ', ' or '])
  if (n >= 3 && chance(0.4)) {
    tags.add('fql:group')
    const j = join()
    const inner = `(${conds[0]}${j}${conds[1]})`
    return [inner, ...conds.slice(2)].join(join())
  }
  const j = join()
  if (n > 1) tags.add(j.trim() === 'and' ? 'fql:and' : 'fql:or')
  return conds.join(chance(0.85) ? j : join())
}

// Triggers as Segment's UI writes them: a condition tree given to its generateFql.
const UI_FIELDS = ['event-type', 'event', 'event', 'name', 'userId', 'event-property', 'event-property', 'event-trait', 'event-context']
const UI_NAMES = {
  'event-property': ['total', 'price', 'name', 'sku', 'tags', 'items.length', 'nested.a.b', 'a b', 'émoji', 'x-y', 'flag', 'email', 'count', 'product 1.price'],
  'event-trait': ['plan', 'email', 'a b', 'total'],
  'event-context': ['app.name', 'app.version', 'library.name', 'locale', 'ip']
}
const UI_OPS = {
  'event-type': ['=', '!='],
  event: ['=', '!=', 'contains', 'not_contains', 'starts_with', 'not_starts_with', 'ends_with', 'not_ends_with'],
  name: ['=', '!=', 'contains', 'starts_with', 'exists', 'not_exists'],
  userId: ['=', '!=', 'exists', 'not_exists', 'is_true', 'is_false', 'contains'],
  property: ['=', '!=', '<', '<=', '>', '>=', 'number_equals', 'number_not_equals', 'contains', 'not_contains', 'starts_with', 'not_starts_with', 'ends_with', 'not_ends_with', 'exists', 'not_exists', 'is_true', 'is_false']
}
function uiCondition(tags, events) {
  const type = pick(UI_FIELDS)
  const ops = UI_OPS[type] ?? UI_OPS.property
  const operator = pick(ops)
  tags.add(`ui:${operator}`)
  const e = events && chance(0.5) ? pick(events) : null
  const numeric = ['<', '<=', '>', '>=', 'number_equals', 'number_not_equals'].includes(operator)
  let value
  if (type === 'event-type') value = e ? e.type : pick(TYPES)
  else if (type === 'event') value = e && typeof e.event === 'string' && chance(0.7) ? [...e.event].slice(0, operator === '=' || operator === '!=' ? 99 : 1 + int(4)).join('') : pick(EVENTS)
  else if (numeric) value = pick([0, 1, 5, 10, 25, 42, 99.5, -2.5, 100, 1000])
  else value = pick([...STRINGS, ...NAMES, 'u1', 'pro'])
  const node = { type, operator }
  if (!['exists', 'not_exists', 'is_true', 'is_false'].includes(operator)) node.value = value
  if (type.startsWith('event-') && type !== 'event-type') node.name = pick(UI_NAMES[type])
  return node
}
function uiTrigger(tags, events) {
  tags.add('fql:ui')
  const children = some(1 + int(3), () => uiCondition(tags, events))
  if (chance(0.3)) children.push({ type: 'group', operator: pick(['and', 'or']), children: some(2 + int(2), () => uiCondition(tags, events)) })
  return generateFql({ type: 'group', operator: pick(['and', 'or']), children })
}

const NOISE = ['foo', 'toString', 'and', 'or', '!', ',', '[', ']', '(', ')', '()', '1.2.3', '5.', '-', '+5', '"x"', "'y'", 'null', '=', '\r', 'é', '\\', 'contains', 'match(event', 'type', 'properties.x>5', '!=x']
function mutated(tags, events) {
  let q = wellFormed(tags, events)
  tags.add('fql:mutated')
  const m = int(10)
  if (m === 0) q = q.replace(/ ([=<>!]=?) /g, '$1')
  else if (m === 1) q = q.replace(/"/g, "'")
  else if (m === 2) q = `(${q}`
  else if (m === 3) q = `(${q}) and (${q})`
  else if (m === 4) q = `((${q}))`
  else if (m === 5) q = [...q].slice(0, int([...q].length + 1)).join('')
  else if (m === 6) {
    const chars = [...q]
    const at = int(chars.length + 1)
    q = chars.slice(0, at).join('') + ` ${pick(NOISE)} ` + chars.slice(at).join('')
  } else if (m === 7) q = `!(${q})`
  else if (m === 8) q = pick(['', '   ', 'type =', 'type', '()', `${q} and ()`, `() or ${q}`, 'all', '*'])
  else q = q.replace(/ and | or /, pick([' and and ', ' AND ', ' && ', ' or ']))
  return q
}

// ---------------------------------------------------------------- mappings

const PATH_ARGS = () => pick([
  '$.', '$', '$.userId', '$.event', '$.type', '$.name', '$.properties', '$.properties.total', '$.properties.price', '$.properties.name',
  '$.properties.tags', '$.properties.tags[0]', '$.properties.tags.length', '$.properties.items', '$.properties.items[1].sku',
  "$.properties['a b']", '$.properties.nested.a.b', '$.properties.nested', '$.properties.missing.x', '$.properties.email',
  '$.properties.empty', '$.traits', '$.traits.plan', '$.context.app.name', '$.context', '$.properties.name.length',
  '$.properties.constructor', '$.properties.total.toFixed', '$.properties.__proto__', '$.properties.__proto__.polluted', 'properties.total', '$.properties.json', '$.properties.0'
])
const TEMPLATE_KEYS = () => pick(['userId', 'event', 'type', 'properties.total', 'properties.name', 'properties.tags', 'properties.items',
  'properties.nested', ' properties.price ', 'context.app.name', 'traits.plan', 'properties.missing', 'properties.email', '', 'properties.items[0].sku', 'properties.constructor'])

function template(tags) {
  tags.add('dir:@template')
  const parts = some(1 + int(3), () => {
    const r = rand()
    if (r < 0.6) return `{{${TEMPLATE_KEYS()}}}`
    if (r < 0.75) return `{{{${TEMPLATE_KEYS()}}}}`
    if (r < 0.8) return '{{}}'
    return pick(['Hi ', ' paid ', '/', '{', '}', 'é', ' '])
  })
  return parts.join(pick(['', ' ', '-']))
}

// Texts for @json's decode that JSON.parse reads in its own way.
const JSON_TEXTS = ['1e400', '[-1e400, 1e-400]', ' {"b":1,"a":[2],"1":3} ', '-0', '1E2', '{"a":1,"a":2}', '[1,]', '01', '"\\u00e9\\ud83d\\ude00"',
  '"\\ud800"', '{"__proto__":1}', '[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]', '"\\/"', 'nul', '{"a":\t1}']

function directive(depth, tags) {
  const d = pick(['@path', '@path', '@path', '@template', '@template', '@if', '@literal', '@arrayPath', '@case', '@replace', '@merge', '@json', '@flatten', '@excludeWhenNull', '@transform'])
  tags.add(`dir:${d}`)
  const v = () => mapValue(depth + 1, tags)
  switch (d) {
    case '@path':
      return { '@path': chance(0.95) ? PATH_ARGS() : { '@template': '$.{{' + pick(['type', 'event']) + '}}' } }
    case '@template':
      return { '@template': chance(0.95) ? template(tags) : { '@path': '$.properties.name' } }
    case '@if': {
      const o = {}
      const key = chance(0.6) ? 'exists' : chance(0.9) ? 'blank' : 'nothing'
      o[key] = chance(0.8) ? { '@path': PATH_ARGS() } : pick([0, '', 'x', null, false])
      if (chance(0.8)) o.then = v()
      if (chance(0.6)) o.else = chance(0.8) ? v() : pick([0, '', null])
      return { '@if': o }
    }
    case '@literal':
      return { '@literal': chance(0.7) ? value(1) : v() }
    case '@arrayPath':
      return { '@arrayPath': [chance(0.85) ? pick(['$.properties.items', '$.properties.tags', '$.properties.nested', '$.context', '$.properties.missing', '$.properties']) : { '@path': '$.properties.items' },
        ...(chance(0.85) ? [pick([{ id: { '@path': '$.sku' }, n: 1 }, { v: { '@template': '{{price}}-{{qty}}' } }, { '@path': '$.sku' }, {}, { all: { '@path': '$.' } }])] : [])] }
    case '@case':
      return { '@case': { operator: pick(['lower', 'upper', 'upper', 'lower', 'title']), ...(chance(0.95) ? { value: chance(0.8) ? { '@path': PATH_ARGS() } : pick(STRINGS) } : {}) } }
    case '@replace': {
      const o = { pattern: pick(['a', 'e', '.', ' ', 'O', 'ß', '$', 'é', '😀', '.*', 'com', 'x']), value: chance(0.8) ? { '@path': PATH_ARGS() } : pick(STRINGS) }
      if (chance(0.8)) o.replacement = pick(['', '-', 'X', '$&$&', '$$', '$`', "$'", '$1', 'é'])
      if (chance(0.3)) o.global = chance(0.5)
      if (chance(0.3)) o.ignorecase = chance(0.5)
      if (chance(0.2)) { o.pattern2 = pick(['-', 'X', 'b']); if (chance(0.7)) o.replacement2 = pick(['', '+']) }
      return { '@replace': o }
    }
    case '@merge':
      return { '@merge': { ...(chance(0.9) ? { direction: chance(0.95) ? pick(['left', 'right', 'right', 'LEFT']) : { '@template': 'left' } } : {}),
        objects: some(1 + int(3), () => chance(0.5) ? object(2, 1 + int(3)) : { '@path': pick(['$.properties', '$.traits', '$.context.app', '$.properties.tags', '$.userId', '$.properties.nested']) }) } }
    case '@json':
      return { '@json': { mode: pick(['encode', 'encode', 'decode', 'decode', 'bogus']), value: chance(0.7) ? { '@path': PATH_ARGS() } : pick([...STRINGS, { a: 1 }, ...JSON_TEXTS]) } }
    case '@flatten':
      return { '@flatten': { separator: chance(0.95) ? pick(['.', '_', '/', '']) : { '@path': pick(['$.type', '$.properties.total']) }, value: { '@path': pick(['$.properties', '$.properties.nested', '$.context', '$.properties.items', '$.properties.tags', '$.userId']) }, ...(chance(0.3) ? { omitArrays: chance(0.5) } : {}) } }
    case '@excludeWhenNull':
      return { '@excludeWhenNull': chance(0.8) ? { '@path': pick(['$.properties', '$.properties.email', '$.traits', '$.properties.nested', '$.properties.missing']) } : v() }
    case '@transform':
      return { '@transform': { apply: { who: { '@path': '$.userId' }, what: { '@path': pick(['$.properties', '$.event']) } }, mapping: pick([{ id: { '@path': '$.who' }, w: { '@path': '$.what' } }, { '@path': '$.what' }, { t: { '@template': '{{who}}:{{what}}' } }]) } }
  }
}

function invalidDirective(tags) {
  tags.add('dir:invalid')
  return pick([
    { '@pathh': '$.userId' },
    { '@path': '$.userId', '@template': 'x' },
    { '@path': '$.userId', extra: 1 },
    { '@path': 5 },
    { '@template': ['x'] },
    { '@replace': { pattern: 'abcdefghijk', value: 'x' } },
    { '@replace': { pattern: 'a', value: 'x', global: 'yes' } },
    { '@json': { mode: 'pack', value: 'x' } },
    { '@merge': { objects: 'x' } },
    { '@arrayPath': [] },
    { '@case': { operator: 3 } },
    { '@transform': { apply: 'x', mapping: {} } },
    { '@if': { exists: { '@nope': 1 } } },
    [{ '@nope': 1 }],
    [{ '@path': 5 }],
    { '@': 1 }
  ])
}

function mapValue(depth, tags) {
  const r = rand()
  if (depth > 3 || r < 0.25) return value(2)
  if (r < 0.88) return directive(depth, tags)
  if (r < 0.9) { tags.add('dir:_metadata'); return { ...directive(depth, tags), _metadata: { label: 'x' } } }
  if (r < 0.95) return [mapValue(depth + 1, tags), directive(depth + 1, tags)]
  return { inner: directive(depth + 1, tags), k: value(2) }
}

function dataMapping(tags) {
  const r = rand()
  if (r < 0.15) { tags.add('data:default'); return { '@path': '$.' } }
  if (r < 0.2) { tags.add('data:path'); return { '@path': pick(['$.properties', '$.traits', '$.context', '$.properties.total', '$.properties.items']) } }
  if (r < 0.22) { tags.add('dir:@liquid'); return { text: { '@liquid': '{{ userId | upcase }}' } } }
  if (r < 0.25) return { bad: invalidDirective(tags) }
  if (r < 0.27) { tags.add('data:odd'); return pick([null, '', [{ a: 1 }], [1], 'text', { '@path': '$.properties.missing' }]) }
  const o = {}
  for (let i = 0; i < 1 + int(6); i++) o[pick(['id', 'user', 'total', 'name', 'event', 'items', 'tags', 'meta', 'when', '0', '2', 'a b'])] = mapValue(0, tags)
  return o
}

function headersMapping(tags) {
  const r = rand()
  if (r < 0.15) return undefined
  if (r < 0.65) { tags.add('headers:fixed'); return { 'X-Source': 'outbound', ...(chance(0.3) ? { Authorization: 'Bearer t0k3n' } : {}) } }
  if (r < 0.85) { tags.add('headers:mapped'); return { 'X-User': { '@path': pick(['$.userId', '$.properties.total', '$.properties.tags', '$.context', '$.properties.missing']) }, 'X-Event': { '@template': '{{event}}' } } }
  tags.add('headers:odd')
  return pick([
    { 'Bad Header': 'x' }, { 'X-Euro': '€' }, { 'X-Cafe': 'café' }, { 'X-A': 'undefined', 'X-B': 'b' }, { 'X-Dup': '1', 'x-dup': '2' },
    { 'Content-Type': 'text/plain' }, { 'X-Signature': 'mine' }, { 'X-Signature': 'undefined' }, { 'X-N': 5, 'X-B': true, 'X-Null': null },
    { 'X-Line': 'a\nb' }, { '': 'x' }, null, '', [{ 'X-Arr': 'one' }], 'text', { 'User-Agent': 'custom/1' }
  ])
}

// ---------------------------------------------------------------- running Segment's code

const hasHole = (node) => node === null || node === undefined ||
  (node.type === 'group' ? node.children.some(hasHole) : 'name' in node && node.name !== '' && !String(node.name).match(/([^[.\]])+/g))

function errorText(e) {
  return String(e && e.message !== undefined ? e.message : e).slice(0, 300)
}

const destination = new core.Destination(webhook)

async function runSegment(c) {
  const result = {}
  const parsed = parseFql(c.subscribe)
  result.fql = parsed.error ? { ok: false, error: errorText(parsed.error) } : { ok: true, holes: hasHole(parsed) }
  if (!parsed.error) {
    result.decisions = c.events.map((e) => {
      try { return validate(parsed, e) } catch { return 'throw' }
    })
  }
  try { mappingValidate(c.mapping); result.mapping = { ok: true } } catch (e) { result.mapping = { ok: false, error: errorText(e) } }
  result.transforms = c.events.map((e) => {
    try {
      const t = core.transform(c.mapping, e)
      return { data: t.data === undefined ? null : JSON.stringify(t.data) ?? null, headers: t.headers === undefined ? null : JSON.stringify(t.headers) ?? null }
    } catch (err) { return { error: errorText(err) } }
  })
  const settings = { ...(c.secret ? { sharedSecret: c.secret } : {}), subscription: { subscribe: c.subscribe, partnerAction: 'send', mapping: c.mapping } }
  if (c.batch) {
    // Segment's pipeline groups a batch by its batch keys (url, method, headers) before the
    // action sees it; the action then sends each group with its first event's url, method and
    // headers. The groups are made here the same way, from each event's mapped headers.
    const groups = new Map()
    c.events.forEach((e, i) => {
      let key
      try { key = JSON.stringify(core.transform(c.mapping, e).headers ?? null) } catch { key = `!${i}` }
      if (!groups.has(key)) groups.set(key, [])
      groups.get(key).push(i)
    })
    result.batches = []
    for (const indices of groups.values()) {
      captured = []
      try {
        const r = await destination.onBatch(indices.map((i) => c.events[i]), settings)
        result.batches.push({ indices, request: captured[0] ?? null, statuses: r[0]?.multistatus?.map((s) => s.status) ?? indices.map(() => 0) })
      } catch (err) { result.batches.push({ indices, error: errorText(err) }) }
    }
  } else {
    result.requests = []
    for (const e of c.events) {
      captured = []
      try {
        const r = await destination.onEvent(e, settings)
        result.requests.push(captured[0] ? { request: captured[0] } : { none: String(r?.[0]?.output ?? '') })
      } catch (err) { result.requests.push({ error: errorText(err) }) }
    }
  }
  return result
}

// ---------------------------------------------------------------- the cases

async function main() {
  for (let index = from; index < from + count; index++) {
    state = hash(`${seed}/${index}`)
    const tags = new Set()
    const batch = chance(0.2)
    const texts = some(batch ? 2 + int(5) : 1 + int(3), () => {
      let text = JSON.stringify(event())
      // An own `__proto__` key, which only JSON.parse makes.
      if (chance(0.05)) {
        const own = `"__proto__":${pick(['{"polluted":true}', '1', 'null'])}`
        text = text.replace(/"properties":\{(\}?)/, (_, empty) => `"properties":{${own}${empty ? '}' : ','}`)
      }
      // Numbers JSON.stringify never writes, in the event's text: big integers, -0, 1.0, 1E2.
      return chance(0.1) ? text.replace(/"(total|price|count)":-?[0-9][0-9.eE+-]*/, (_, k) => `"${k}":${pick(['12345678901234567890', '9007199254740993', '-0', '1.0', '1E2', '-1.50e-3', '100000000000000000000000'])}`) : text
    })
    const events = texts.map((t) => JSON.parse(t))
    const r = rand()
    const subscribe = r < 0.45 ? wellFormed(tags, events) : r < 0.85 ? uiTrigger(tags, events) : mutated(tags, events)
    const mapping = { url: `http://127.0.0.1:9/hooks/${int(100)}${chance(0.2) ? '?k=v' : ''}`, method: chance(0.97) ? pick(['POST', 'PUT', 'PATCH']) : pick(['GET', 'post']) }
    const headers = batch && chance(0.7) ? { 'X-Source': 'outbound' } : headersMapping(tags)
    if (headers !== undefined) mapping.headers = headers
    mapping.data = dataMapping(tags)
    if (batch) { mapping.enable_batching = true; mapping.batch_size = 100; tags.add('batch') }
    const secret = chance(0.7) ? pick(['s3cret', 'whsec-like', 'ü-secret']) : null
    if (texts.some((t, i) => t !== JSON.stringify(events[i]))) tags.add('event:raw-numbers')
    const c = { seed, index, tags: [...tags].sort(), subscribe, mapping, secret, batch, events }
    c.segment = await runSegment(c)
    // The events as their text was, so the Rust side reads the same numbers Segment's JSON.parse read.
    const line = JSON.stringify({ ...c, events: '@EVENTS@' }).replace('"@EVENTS@"', () => `[${texts.join(',')}]`) + '\n'
    if (!out.write(line)) await new Promise((r) => out.once('drain', r))
  }
  if (out !== process.stdout) out.end()
}

main().catch((e) => { console.error(e); process.exit(1) })
