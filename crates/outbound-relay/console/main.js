// The console's frame: who is signed in, the routes (in the URL's fragment, which never
// holds the token), the header, and moving between screens. Each screen is a module whose
// render(main, ctx) draws into <main> and returns what stops its timers.

import * as api from './api.js'
import { h, fill } from './dom.js'
import * as signin from './signin.js'
import * as sources from './sources.js'
import * as source from './source.js'
import * as attempts from './attempts.js'
import * as deadLetters from './dead_letters.js'
import * as settings from './settings.js'
import * as audit from './audit.js'
import * as tokens from './lifecycle.js'
import * as alerts from './alerts.js'
import * as subscriptions from './subscriptions.js'
import * as subscriptionEditor from './subscription_editor.js'

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const who = document.getElementById('who')
const signout = document.getElementById('signout')
const status = document.getElementById('status')

// Who the token is ({caller, source}); null when signed out.
let session = null
let stop = null
let generation = 0

function say(text) { status.textContent = text || '' }

function go(hash) {
  if (location.hash === hash) route()
  else location.hash = hash
}

// The route of the fragment: [screen, params].
function parse(hash) {
  const parts = hash.replace(/^#\/?/, '').split('?')[0].split('/').filter(Boolean).map(decodeURIComponent)
  if (parts[0] === 'audit' && parts.length === 1) return ['audit', {}]
  if (parts[0] === 'alerts' && parts.length === 1) return ['alerts', {}]
  if (parts[0] !== 'sources') return ['home', {}]
  if (parts.length === 1) return ['sources', {}]
  const name = parts[1]
  if (parts.length === 2) return ['source', { name }]
  if (parts[2] === 'webhooks' && parts.length === 4) return ['attempts', { name, index: Number(parts[3]) }]
  if (parts[2] === 'dead-letters') return ['deadLetters', { name }]
  // A subscription's own screens: the webhook's attempts and dead letters, pointed at it.
  if (parts[2] === 'subscriptions') {
    if (parts.length === 3) return ['subscriptions', { name }]
    if (parts.length === 4 && parts[3] === 'add') return ['subscriptionEditor', { name, sub: null }]
    const sub = parts[3]
    if (parts.length === 5 && parts[4] === 'edit') return ['subscriptionEditor', { name, sub }]
    if (parts.length === 5 && parts[4] === 'attempts') return ['attempts', { name, subscription: sub }]
    if (parts.length === 5 && parts[4] === 'dead-letters') return ['deadLetters', { name, subscription: sub }]
  }
  if (parts[2] === 'settings') return ['settings', { name }]
  if (parts[2] === 'audit') return ['audit', { name }]
  if (parts[2] === 'tokens') return ['tokens', { name }]
  return ['home', {}]
}

const SCREENS = { sources, source, attempts, deadLetters, settings, audit, tokens, alerts, subscriptions, subscriptionEditor }

function header() {
  const admin = session && session.caller === 'admin'
  fill(nav, session ? h('ul', {},
    admin ? h('li', {}, h('a', { href: '#/sources' }, 'Sources')) : null,
    admin ? h('li', {}, h('a', { href: '#/alerts' }, 'Alerts')) : null,
    admin ? h('li', {}, h('a', { href: '#/audit' }, 'Audit trail')) : null,
    !admin ? h('li', {}, h('a', { href: `#/sources/${encodeURIComponent(session.source)}` }, session.source)) : null,
  ) : null)
  who.textContent = !session ? '' : admin ? 'admin token' : `token of ${session.source}`
  signout.hidden = !session
}

async function route() {
  // Only routes of the console ("#/…"); the skip link's "#main" moves the focus only.
  if (location.hash && !location.hash.startsWith('#/')) return
  if (stop) { stop(); stop = null }
  const mine = ++generation
  say('')
  if (!session) {
    header()
    stop = signin.render(main, { signedIn })
    return
  }
  header()
  let [screen, params] = parse(location.hash)
  const adminOnly = screen === 'sources' || screen === 'alerts' || (screen === 'audit' && !params.name)
  if (screen === 'home' || (adminOnly && session.caller !== 'admin')) {
    // A source's token has no list: it lands on its own source.
    go(session.caller === 'admin' ? '#/sources' : `#/sources/${encodeURIComponent(session.source)}`)
    return
  }
  const ctx = {
    session, go, say, params,
    // Whether this screen is still the one shown (answers arriving late are dropped).
    current: () => mine === generation,
  }
  stop = SCREENS[screen].render(main, ctx) || null
  const heading = main.querySelector('h1')
  if (heading) { heading.setAttribute('tabindex', '-1'); heading.focus({ preventScroll: true }) }
}

async function signedIn(token) {
  api.keep(token)
  let me
  try {
    me = await api.get('/whoami')
  } catch (err) {
    api.forget()
    throw err
  }
  session = { caller: me.caller, source: me.source, token: me.token || null }
  go(me.caller === 'admin' ? '#/sources' : `#/sources/${encodeURIComponent(me.source)}`)
}

function signOut(message) {
  api.forget()
  session = null
  if (stop) { stop(); stop = null }
  fill(main)
  history.replaceState(null, '', location.pathname)
  route()
  if (message) say(message)
}

signout.addEventListener('click', () => signOut('Signed out.'))
api.onRefused(() => session && signOut('The token was refused (revoked, or the relay restarted with another): sign in again.'))
document.getElementById('skip').addEventListener('click', (e) => { e.preventDefault(); main.focus() })
window.addEventListener('hashchange', route)

async function start() {
  if (api.remembered()) {
    try {
      const me = await api.get('/whoami')
      session = { caller: me.caller, source: me.source, token: me.token || null }
    } catch {
      api.forget()
    }
  }
  route()
}
start()
