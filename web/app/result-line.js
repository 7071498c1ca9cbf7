// A line under a form or button saying what it did, for the pages of one's own account (not
// loaded by the event page, whose budget every byte counts against).
import { announce, h } from './dom.js';

// `say` also lets a screen reader hear it (once: the floating status region stays hidden, the
// result being on the page already).
export function resultLine() {
  const p = h('p', { class: 'notice', hidden: true });
  p.say = (text, kind = 'ok') => {
    p.className = `notice ${kind === 'error' ? 'notice-error' : 'notice-ok'}`;
    p.textContent = text;
    p.hidden = false;
    announce(text, kind, { shown: false });
  };
  return p;
}
