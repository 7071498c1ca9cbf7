// Paying for a reservation: the Pay button, which opens (or finds again) the registration's
// payment at its provider and goes to the provider's page, and the time the seat is still held.
//   POST /api/v1/registrations/{id}/checkout   the same open payment however often it is asked
// The server keys the payment by the registration and its attempt, so a second click or a retry
// after a 503 opens nothing twice: no X-Idempotency-Key is needed. The provider sends the payer
// back to /me/tickets/{id} (pages/ticket.js), which waits for the outcome.
// The event page imports this module (and its texts) only for a reservation to pay.
import { api } from './api.js';
import { announce, h, hidden } from './dom.js';
import { navigate, signInHere } from './nav.js';
import { loadTexts, t } from './staff/texts.js';

const BACK = 'bilet.paying';

// The texts of pay.js, refunds.js, ticket-card.js and the ticket page, in the current language;
// a page awaits it before drawing (and again after a language switch, which redraws).
export const ready = () => loadTexts(['pay']);

export const awaitsPayment = (reg) => reg.priceCents > 0 && ['RESERVED', 'PENDING'].includes(reg.status);

// Whether this tab left for the provider's page to pay `id`: the page it comes back to says
// "Payment received" although the payment was settled before it loaded. Asked once.
export function cameBack(id) {
  const back = sessionStorage.getItem(BACK) === id;
  if (back) sessionStorage.removeItem(BACK);
  return back;
}

// "04:05", past an hour "1:02:03": what is left of the hold, a started second counted whole.
export function clock(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const two = (n) => String(n).padStart(2, '0');
  const hours = Math.floor(s / 3600);
  const rest = `${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
  return hours ? `${hours}:${rest}` : rest;
}

// The time left, redrawn every second. Screen readers are not told every second (role timer,
// aria-live off): they read it where it stands, and hear once when it is over. It stops by
// itself once its element has left the page.
export function countdown(expiresAt, onEnd) {
  const end = Date.parse(expiresAt);
  const el = h('p', { class: 'countdown', role: 'timer', 'aria-live': 'off' });
  const tick = () => {
    const left = end - Date.now();
    if (left > 0) {
      el.textContent = t('pay.heldFor', { time: clock(left) });
      return;
    }
    clearInterval(timer);
    el.textContent = t('pay.timeUp');
    onEnd();
    if (el.isConnected) announce(t('pay.timeUp'));
  };
  const timer = setInterval(() => (el.isConnected ? tick() : clearInterval(timer)), 1000);
  tick();
  return el;
}

// Back from the provider's page through the browser's back-forward cache, the page is as it
// was left: the click that left it is over.
globalThis.addEventListener?.('pageshow', (e) => {
  if (!e.persisted) return;
  for (const b of document.querySelectorAll('.pay button[aria-busy]')) {
    b.disabled = false;
    b.removeAttribute('aria-busy');
  }
});

async function pay(reg, button) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  announce(t('pay.opening'));
  try {
    const checkout = await api.post(`/registrations/${reg.id}/checkout`);
    const url = checkout?.paymentUrl || '';
    if (/^https?:\/\//i.test(url) || url.startsWith('/')) {
      sessionStorage.setItem(BACK, reg.id);
      // The provider's page is another site: a real navigation, not the app's router.
      location.href = url;
      return;
    }
    announce(t('pay.unavailable'), 'error'); // no page yet: asking again finds it
  } catch (e) {
    if (e.status === 401) { navigate(signInHere()); return; }
    // 503: the provider did not answer, and the same request later is safe. 422: the
    // registration no longer awaits payment, as the server's message says.
    announce(e.status === 503 ? t('pay.unavailable') : e.message, 'error');
  }
  button.disabled = false;
  button.removeAttribute('aria-busy');
}

// The Pay button, with the time left for a reservation that runs out. `label` names the
// ticket to screen readers where several are listed.
export function payBlock(reg, label) {
  const button = h('button', { type: 'button', class: 'primary', onclick: () => pay(reg, button) },
    t('pay.button'), label && hidden(`: ${label}`));
  const timer = reg.status === 'RESERVED' && reg.expiresAt
    && countdown(reg.expiresAt, () => { button.disabled = true; });
  return h('div', { class: 'pay' }, timer, button);
}
