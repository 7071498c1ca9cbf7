// Building the page. Everything goes through h(), which sets text as text nodes, so data
// from the server is never parsed as HTML.
import { t } from './i18n.js';

// h('a', {href: '/', class: 'x', onclick: fn}, 'text', child, [more], null)
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    // value, checked: attributes, so a form's reset() keeps them
    else if (key in el && typeof value !== 'string' && key !== 'value' && key !== 'checked') el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// Replaces an element's content; like h(), skips null and false (replaceChildren would
// print them).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Text only screen readers hear, e.g. which ticket type a "Register" button is for.
export const hidden = (text) => h('span', { class: 'visually-hidden' }, text);

export function setTitle(text) {
  document.title = text ? `${text} — bilet` : 'bilet';
}

// The aria-live region under the header: every outcome of an action is told there.
let pending = null;
// `shown: false` when the result is already written next to what was pressed: then it is
// only heard, not shown twice.
export function announce(message, kind = 'ok', { shown = true } = {}) {
  const region = document.getElementById('status');
  clearTimeout(pending);
  region.textContent = '';
  region.className = 'status';
  if (!message) return;
  // Emptied first and refilled a moment later, so the same message twice is read twice. It
  // floats over the page's foot: a success leaves after a while (read by then), an error
  // stays until the next action or a click on it.
  pending = setTimeout(() => {
    region.className = `status status-${kind}${shown ? '' : ' visually-hidden'}`;
    region.textContent = message;
    if (kind === 'ok') pending = setTimeout(() => announce(''), OK_FOR_MS);
  }, 50);
}
const OK_FOR_MS = 10_000;
globalThis.document?.getElementById('status')?.addEventListener('click', () => announce(''));

export function spinner() {
  return h('p', { class: 'loading' }, t('loading'));
}

export function badge(status) {
  return h('span', { class: `badge badge-${status.toLowerCase()}` }, t(`status.${status}`));
}
