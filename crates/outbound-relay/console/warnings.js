// Settings that can never deliver, found in the page before a save (the relay accepts them:
// they are not wrong, only useless or unsafe): a webhook on a private address the source
// has no network granted for (the relay's guard refuses every request to it), a port over
// 65535, the same URL twice, a secret too short to keep a signature from being forged, and
// every webhook off. Each says which webhook, counted from 1.

// The first MIN_SECRET characters are what a guessed signature has to find.
const MIN_SECRET = 16

// An IPv4 address as a number, or null.
function ipv4(text) {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (!m) return null
  const parts = m.slice(1).map(Number)
  if (parts.some((p) => p > 255)) return null
  return parts.reduce((a, p) => a * 256 + p, 0)
}

function inCidr(ip, cidr) {
  const [net, bits] = cidr.split('/')
  const base = ipv4(net.trim())
  const n = bits === undefined ? 32 : Number(bits)
  if (base === null || !(n >= 0 && n <= 32)) return false
  const size = 2 ** (32 - n)
  return Math.floor(ip / size) === Math.floor(base / size)
}

const PRIVATE_V4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16',
  '172.16.0.0/12', '192.168.0.0/16', '198.18.0.0/15']

// Why `host` is private (the guard's sense), or null.
function privateHost(host, granted) {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '')
  if (h === 'localhost' || h.endsWith('.localhost')) return 'this relay itself'
  const v4 = ipv4(h)
  if (v4 !== null) {
    if (!PRIVATE_V4.some((c) => inCidr(v4, c))) return null
    return granted.some((c) => inCidr(v4, c)) ? null : 'a private address'
  }
  if (h.includes(':')) {
    const privateV6 = h === '::1' || h === '::' || /^f[cd][0-9a-f]{0,2}:/.test(h) || /^fe[89ab][0-9a-f]?:/.test(h)
    // IPv6 networks granted are left to the relay to judge.
    if (privateV6 && !granted.some((c) => c.includes(':'))) return 'a private address'
  }
  return null
}

// The problems of `body` (the PUT about to be sent); `before`: the source as read;
// `secret`: the secret's choice (undefined: kept, null: cleared, a string: the new one).
export function problems(body, before, secret) {
  const out = []
  const granted = before.allowed_networks || []
  const seen = new Map()
  const hooks = body.webhooks || []
  hooks.forEach((w, i) => {
    const n = `Webhook ${i + 1}`
    const url = (w.url || '').trim()
    if (!url) return
    const port = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?(?:\[[^\]]*\]|[^:/?#]*):(\d+)/i.exec(url)
    if (port && Number(port[1]) > 65535) {
      out.push(`${n}: port ${port[1]} is over 65535, where nothing can listen.`)
      return
    }
    let parsed = null
    try { parsed = new URL(url) } catch { /* the relay names what is wrong */ }
    if (parsed) {
      const why = privateHost(parsed.hostname, granted)
      if (why) out.push(`${n}: ${parsed.hostname} is ${why}, and this source has no network granted for it: the relay's guard refuses every request to it (the admin grants networks).`)
    }
    const same = seen.get(url)
    if (same !== undefined) out.push(`${n} has the same URL as webhook ${same + 1}: it would receive every event twice.`)
    else seen.set(url, i)
  })
  if (hooks.length && hooks.every((w) => w.enabled === false)) {
    out.push('Every webhook is off: events are accepted and delivered nowhere.')
  }
  if (typeof secret === 'string' && secret.length < MIN_SECRET) {
    out.push(`The new secret has ${secret.length} character${secret.length === 1 ? '' : 's'}: with fewer than ${MIN_SECRET} a signature can be forged by guessing it.`)
  }
  return out
}
