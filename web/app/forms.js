// Form pieces with their labels, hints and error messages tied together for assistive
// technology, and the display of the server's validation errors next to their fields.
import { h } from './dom.js';
import { t } from './i18n.js';

// Input names are the API's field names, so a validation error's details map
// ({field: message}) finds its input by name. `id` (default `f-{name}`) keeps ids unique when
// a page has several forms with the same field names; `tag` makes a textarea or a select
// (`options`: [[value, text], …]) with the same label, hint and error.
export function field(name, label, { type = 'text', hint, id = `f-${name}`, tag = 'input', options, ...attrs } = {}) {
  const describedBy = [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(' ');
  const control = tag === 'input'
    ? h('input', { id, name, type, 'aria-describedby': describedBy, ...attrs })
    : h(tag, { id, name, 'aria-describedby': describedBy, ...attrs, value: null },
      options?.map(([value, text]) => h('option', { value }, text)));
  if (tag !== 'input' && attrs.value != null) control.value = attrs.value;
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    hint && h('p', { class: 'hint', id: `${id}-hint` }, hint),
    control,
    h('p', { class: 'field-error', id: `${id}-error`, hidden: true }));
}

export function checkbox(name, label, checked, id = `f-${name}`) {
  return h('div', { class: 'check' },
    h('input', { id, name, type: 'checkbox', checked }),
    h('label', { for: id }, label));
}

export function submitButton(label) {
  return h('button', { type: 'submit', class: 'primary' }, label);
}

// A form of fields followed by its submit button and a place for its overall error.
// Browser validation is off: the server's messages come in the page's language.
export function form(onSubmit, ...children) {
  const el = h('form', { novalidate: true }, children, h('div', { class: 'form-error', role: 'alert' }));
  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    const button = el.querySelector('[type=submit]');
    if (button.disabled) return;
    clearErrors(el);
    button.disabled = true;
    el.setAttribute('aria-busy', 'true');
    try {
      await onSubmit(Object.fromEntries(new FormData(el)), el);
    } catch (err) {
      if (err.name !== 'AbortError') showErrors(el, err);
    } finally {
      button.disabled = false;
      el.removeAttribute('aria-busy');
    }
  });
  return el;
}

export function clearErrors(el) {
  el.querySelectorAll('[aria-invalid]').forEach((i) => i.removeAttribute('aria-invalid'));
  el.querySelectorAll('.field-error').forEach((p) => { p.hidden = true; p.textContent = ''; });
  el.querySelector('.form-error').textContent = '';
}

export function fieldError(el, name, message) {
  const input = el.elements[name];
  const out = input?.id && el.querySelector(`[id="${input.id}-error"]`);
  if (!out) return false;
  input.setAttribute('aria-invalid', 'true');
  out.textContent = message;
  out.hidden = false;
  return true;
}

// Field messages go to their fields (focus to the first); the rest to the form's alert.
export function showErrors(el, err) {
  const rest = [];
  if (err.code === 'validation_error' && err.details && typeof err.details === 'object') {
    for (const [name, message] of Object.entries(err.details)) {
      if (!fieldError(el, name, String(message))) rest.push(String(message));
    }
  }
  const first = el.querySelector('[aria-invalid=true]');
  el.querySelector('.form-error').textContent =
    first && !rest.length ? t('form.fixFields') : [err.message, ...rest].join(' ');
  (first || el.querySelector('.form-error')).focus?.();
}
