// Signing in: the admin token, or a source's own token. The token goes to session storage
// (this tab only) once the relay has accepted it; the field is a password field.

import { h, fill } from './dom.js'

export function render(main, { signedIn }) {
  const input = h('input', {
    id: 'token', type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false',
    required: true, 'aria-describedby': 'token-help',
  })
  const error = h('p', { class: 'error', id: 'signin-error', role: 'alert' })
  const form = h('form', { class: 'signin', novalidate: true },
    h('h1', {}, 'Sign in'),
    h('label', { for: 'token' }, 'Token'),
    input,
    h('p', { id: 'token-help', class: 'help' },
      'The admin token (admin_token in relay.toml) or a source token (obt_…). It is kept in this tab only, until you sign out or close it.'),
    error,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'))
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const token = input.value.trim()
    error.textContent = ''
    if (!token) { error.textContent = 'Enter a token.'; input.focus(); return }
    try {
      await signedIn(token)
    } catch (err) {
      error.textContent = err.status === 401 ? 'This token is not accepted by the relay.'
        : err.status === 404 ? 'The admin API is off on this relay (no admin_token).'
          : `Cannot sign in: ${err.message}`
      input.focus()
    }
  })
  fill(main, form)
  input.focus()
  return null
}
