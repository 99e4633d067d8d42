// Asking before a destructive or bulk action: a modal <dialog> (the browser keeps the focus
// in it, Escape cancels) that says what will happen, with its counts, and names the action
// on its button. With `typed`, the button waits until that text is typed (a source's name
// before it is deleted).

import { h } from './dom.js'

let uid = 0

// Resolves true when confirmed, false when cancelled.
export function confirmAction({ title, lines, action, typed, danger = true }) {
  return new Promise((resolve) => {
    const id = `dialog-${++uid}`
    const input = typed ? h('input', { id: `${id}-typed`, type: 'text', autocomplete: 'off', spellcheck: 'false' }) : null
    const ok = h('button', { type: 'submit', class: danger ? 'danger-solid' : 'primary', disabled: !!typed }, action)
    const cancel = h('button', { type: 'button', class: 'cancel' }, 'Cancel')
    const form = h('form', {},
      h('h2', { id: `${id}-title` }, title),
      h('ul', { id: `${id}-desc`, class: 'facts-list' }, lines.filter(Boolean).map((l) => h('li', {}, l))),
      typed ? [h('label', { for: `${id}-typed` }, `Type “${typed}” to confirm`), input] : null,
      h('div', { class: 'toolbar' }, ok, cancel))
    const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-desc` }, form)
    let answered = false
    const done = (yes) => {
      if (answered) return
      answered = true
      dialog.close()
      dialog.remove()
      resolve(yes)
    }
    if (input) input.addEventListener('input', () => { ok.disabled = input.value !== typed })
    form.addEventListener('submit', (e) => { e.preventDefault(); if (!ok.disabled) done(true) })
    cancel.addEventListener('click', () => done(false))
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); done(false) })
    document.body.appendChild(dialog)
    dialog.showModal()
    ;(input || cancel).focus()
  })
}
