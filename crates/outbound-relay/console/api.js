// The admin API, as the signed-in token calls it. The token lives in this tab's session
// storage (gone when the tab closes) and in this module; it is sent only in the
// Authorization header of same-origin requests, never in a URL, and never logged.

const KEY = 'outbound-relay-console-token'
let token = null

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`)
    this.status = status
    this.field = (body && body.field) || null
  }
}

export function remembered() {
  token = sessionStorage.getItem(KEY)
  return token
}

export function keep(t) {
  token = t
  sessionStorage.setItem(KEY, t)
}

export function forget() {
  token = null
  sessionStorage.clear()
}

export const enc = encodeURIComponent

// Listeners of a refused token (401): the page signs out.
const refused = []
export function onRefused(f) { refused.push(f) }

// `method` `path` (under /admin) with an optional JSON body; the answer's JSON, or throws an
// ApiError with the API's message and the field it names.
export async function call(method, path, body, extra) {
  return (await exchange(method, path, body, extra)).data
}

// The same, with the answer's ETag: { data, etag }. `extra`: more request headers
// (If-Match). A refusal's ApiError carries the ETag too (a 412 gives the source's tag now).
export async function exchange(method, path, body, extra) {
  const headers = { ...(extra || {}), Authorization: `Bearer ${token}` }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  // Relative to /console/, so a relay served under a path prefix works too.
  const res = await fetch(`../admin${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
  })
  const text = await res.text()
  let data = null
  try { data = text ? JSON.parse(text) : null } catch { data = { message: text } }
  if (res.status === 401 && token) refused.forEach((f) => f())
  const etag = res.headers.get('ETag')
  if (!res.ok) {
    const err = new ApiError(res.status, data)
    err.etag = etag
    throw err
  }
  return { data, etag }
}

export const get = (path) => call('GET', path)
