// "/me/tickets/{id}": one ticket, and the page a payment comes back to (the provider sends the
// payer here after paying or declining). The outcome reaches the server in the provider's own
// notification, which may arrive after the payer does, so while the latest payment is still
// open the page asks again every 2 s, for a minute at most.
//   GET  /api/v1/registrations/{id}
//   GET  /api/v1/registrations/{id}/checkout   the latest payment (404: none yet)
//   GET  /api/v1/events/{id}, /events/{id}/ticket-types   title, date, type name
//   GET  /api/v1/registrations/{id}/refunds    a cancelled or lapsed paid ticket's money
//   POST /api/v1/registrations/{id}/checkout   Pay (pay.js), a new attempt after a decline
//   GET  /api/v1/registrations/{id}/ticket.pdf, /wallet, …/wallet/{kind}   a confirmed ticket's files (ticket-files.js)
import { api } from '../api.js';
import { calendarLinks } from '../calendar.js';
import { fill, h, setTitle } from '../dom.js';
import { navigate, signInHere } from '../nav.js';
import { awaitsPayment, cameBack, payBlock, ready } from '../pay.js';
import { mayHaveRefunds, refundNote } from '../refunds.js';
import { t } from '../staff/texts.js';
import { eventOf, ticketDetails } from '../ticket-card.js';
import { ticketFiles } from '../ticket-files.js';

const POLL_MS = 2000;
const POLL_FOR_MS = 60_000;
// Payments whose outcome the registration does not show yet. CLOSED: the hold ran out while
// the payment was open; the registration's lapse (or a late payment's seat) follows.
const UNSETTLED = ['CREATING', 'OPEN', 'PAID', 'CLOSED'];

export default async function ticketPage({ root, params, signal }) {
  const path = `/registrations/${encodeURIComponent(params.id)}`;
  const latest = () => api.get(`${path}/checkout`, { signal })
    .catch((e) => { if (e.status === 404) return null; throw e; });
  let [reg] = await Promise.all([api.get(path, { signal }), ready()]);
  // A payment that cannot be read leaves the ticket shown with Pay, as if none were open.
  let [checkout, { event, names }] = await Promise.all([
    awaitsPayment(reg) ? latest().catch(() => null) : null,
    eventOf(reg.eventId, signal),
  ]);
  const returning = cameBack(reg.id);

  const title = event?.title || t('ticket.unknownEvent');
  setTitle(title);
  const heading = h('h1', {}, event ? h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, title) : title);
  // One polite voice for what happens to the payment; filled a moment after it is on the
  // page, so the first sentence is heard too.
  const live = h('p', { class: 'notice live', role: 'status' });
  const card = h('div', { class: 'ticket' });
  root.replaceChildren(heading, live, card, h('p', {}, h('a', { href: '/me/tickets' }, t('event.toTickets'))));

  let said = null;
  let saying = null;
  const tell = (text) => {
    if (text === said) return;
    said = text;
    clearTimeout(saying);
    saying = setTimeout(() => { live.textContent = text; }, 100);
  };

  // Redrawn only when the registration or its payment changed, so a poll never takes the
  // Pay button (or the focus on it) away; focus inside what is redrawn goes to the heading.
  let drawn = null;
  function draw() {
    const key = `${reg.status} ${checkout?.status} ${checkout?.attempt}`;
    if (key === drawn) return;
    drawn = key;
    const hadFocus = card.contains(document.activeElement);
    fill(card,
      ticketDetails(reg, event, names.get(reg.ticketTypeId)),
      reg.status === 'CONFIRMED' && ticketFiles(reg, signal),
      event && ['CONFIRMED', 'RESERVED', 'PENDING'].includes(reg.status) && calendarLinks(event, reg.confirmationCode),
      awaitsPayment(reg) && payBlock(reg),
      mayHaveRefunds(reg) && refundNote(reg, signal));
    if (hadFocus) {
      heading.tabIndex = -1;
      heading.focus();
    }
  }

  // Draws and tells where things stand; true while the outcome is still to come.
  let awaited = false; // the registration awaited payment during this visit
  function show() {
    draw();
    if (awaitsPayment(reg)) {
      awaited = true;
      if (checkout?.status === 'DECLINED') tell(t('pay.declined'));
      else if (UNSETTLED.includes(checkout?.status)) tell(t('pay.waiting'));
      else tell('');
      return UNSETTLED.includes(checkout?.status);
    }
    if (reg.status === 'CONFIRMED' && (awaited || returning)) tell(t('pay.received'));
    else if (awaited) tell(t(`status.${reg.status}`));
    return false;
  }

  const until = Date.now() + POLL_FOR_MS;
  let timer = null;
  function next(waiting) {
    if (!waiting || signal.aborted) return;
    if (Date.now() < until) timer = setTimeout(poll, POLL_MS);
    else tell(t('pay.slow'));
  }
  async function poll() {
    try {
      [reg, checkout] = await Promise.all([api.get(path, { signal }), latest()]);
    } catch (e) {
      if (signal.aborted) return;
      if (e.status === 401) { navigate(signInHere()); return; }
      // No answer this time: the next round asks again.
    }
    next(show());
  }

  next(show());
  return () => {
    clearTimeout(timer);
    clearTimeout(saying);
  };
}
