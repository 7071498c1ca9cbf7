// "/e/{slug}": an event at a readable address.
//   GET  /api/v1/events/by-slug/{slug}            the event (same body as /events/{id})
//   GET  /api/v1/events/{id}/ticket-types         every 10 s while the page is visible
//   POST /api/v1/events/{id}/registrations        X-Idempotency-Key, one per click intent
//   GET|POST|DELETE /api/v1/events/{id}/waitlist  the caller's entries; when a type is sold out
//   GET  /api/v1/media/{coverImageId}/image       the cover (public for attached files)
//   POST /api/v1/analytics/track                  page.view and registration.started
//   POST /api/v1/registrations/{id}/checkout      Pay, for a reservation to pay (pay.js)
import { api, isRetryable, postIdempotent } from '../api.js';
import { admission, forgetAdmission } from '../admission.js';
import { cover } from '../cover.js';
import { announce, badge, h, hidden, setTitle } from '../dom.js';
import { dateTime, price, when } from '../format.js';
import { t, tn } from '../i18n.js';
import { navigate, signInHere } from '../nav.js';
import { endIntent, intent } from '../intent.js';
import { ACTIVE, myRegistrations, rememberEvent } from '../registrations.js';
import * as session from '../session.js';
import { sourceOf, track } from '../track.js';

const REFRESH_MS = 10_000;

const httpUrl = (u) => (/^https?:\/\//i.test(u || '') ? u : null);

function place(event) {
  const parts = [];
  if (event.locationType) parts.push(h('span', { class: 'badge' }, t(`place.${event.locationType}`)));
  if (event.locationAddress) parts.push(h('span', {}, event.locationAddress));
  const url = httpUrl(event.locationUrl);
  if (url) parts.push(h('a', { href: url, rel: 'noopener noreferrer', target: '_blank' }, url));
  return parts.length ? h('p', { class: 'meta place' }, parts) : null;
}

export default async function eventPage({ root, params, query, signal }) {
  const event = await api.get(`/events/by-slug/${encodeURIComponent(params.slug)}`, { signal });
  setTitle(event.title);
  const source = sourceOf(query);
  const open = event.status === 'PUBLISHED';
  const cards = new Map(); // ticket type id → {li, type, busy, parts}
  const list = h('ul', { class: 'types' });
  const mine = h('div', { class: 'mine' });
  const refreshNote = h('p', { class: 'hint' }, t('event.live'));
  let myReg = null;
  let waiting = new Map(); // ticket type id → the caller's open waiting-list entry
  const room = open && event.waitingRoom; // a free seat is had through the room's queue

  // ---- What a ticket type offers right now ----
  function offer(type) {
    const now = Date.now();
    if (!open) return { kind: 'text', text: t('event.closed') };
    if (!type.isActive) return { kind: 'text', text: t('type.inactive') };
    if (type.salesStart && Date.parse(type.salesStart) > now) {
      return { kind: 'text', text: t('type.salesStart', { date: dateTime(type.salesStart, event.timezone) }) };
    }
    if (type.salesEnd && Date.parse(type.salesEnd) <= now) return { kind: 'text', text: t('type.salesEnded') };
    if (myReg) return { kind: 'text', text: myReg.ticketTypeId === type.id ? t('type.yours') : t('type.registeredOther') };
    if (room && type.available > 0 && !admission(event.id)) return { kind: 'queue' };
    if (!session.signedIn()) return { kind: 'signin', text: t(type.available > 0 ? 'event.signInToRegister' : 'event.signInToWait') };
    const w = waiting.get(type.id);
    // A seat offered from the waiting list is held for the caller until expiresAt.
    if (type.available > 0 || (w?.status === 'NOTIFIED' && Date.parse(w.expiresAt) > now)) return { kind: 'register' };
    return { kind: w ? 'leave' : 'join' };
  }

  function action(card, o) {
    const name = hidden(`: ${card.type.name}`);
    switch (o.kind) {
      case 'signin':
        return h('a', { class: 'button', href: signInHere() }, o.text, name);
      case 'queue':
        return h('a', { class: 'button primary', href: `/e/${encodeURIComponent(params.slug)}/queue` }, t('event.queue'), name);
      case 'register':
        return h('button', { type: 'button', class: 'primary', onclick: () => register(card) },
          card.type.priceCents ? t('event.reserve') : t('event.register'), name);
      case 'join':
        return h('button', { type: 'button', onclick: () => joinWaitlist(card) }, t('waitlist.join'), name);
      case 'leave':
        return h('button', { type: 'button', onclick: () => leaveWaitlist(card) }, t('waitlist.leave'), name);
      default:
        return h('p', { class: 'hint' }, o.text);
    }
  }

  function availability(type) {
    if (type.available <= 0) return t('type.soldOut');
    return tn('type.left', type.available, { total: type.quantity });
  }

  function createCard(type) {
    const id = `type-${type.id}`;
    const parts = {
      name: h('h3', { id }),
      description: h('p', { class: 'description' }),
      price: h('p', { class: 'price' }),
      available: h('p', { class: 'available' }),
      action: h('div', { class: 'actions' }),
    };
    const li = h('li', { class: 'card' }, Object.values(parts));
    return { li, parts, type, kind: null, busy: false };
  }

  // Refreshes replace text in place; the button is rebuilt only when what it does changes,
  // so a refresh never takes the keyboard focus away.
  function updateCard(card, type) {
    card.type = type;
    const { parts } = card;
    parts.name.textContent = type.name;
    parts.description.textContent = type.description;
    parts.description.hidden = !type.description;
    parts.price.textContent = price(type.priceCents, type.currency);
    parts.available.textContent = availability(type);
    const o = offer(type);
    const key = `${o.kind}:${o.text || ''}`;
    if (card.busy || key === card.kind) return;
    const hadFocus = parts.action.contains(document.activeElement);
    card.kind = key;
    parts.action.replaceChildren(action(card, o));
    if (hadFocus) parts.action.firstChild.focus?.();
  }

  function showTypes(types) {
    const ids = types.map((x) => x.id);
    list.querySelector('.empty')?.remove();
    for (const [id, card] of cards) if (!ids.includes(id)) { card.li.remove(); cards.delete(id); }
    types.forEach((type, i) => {
      let card = cards.get(type.id);
      if (!card) cards.set(type.id, (card = createCard(type)));
      updateCard(card, type);
      if (list.children[i] !== card.li) list.insertBefore(card.li, list.children[i] || null);
    });
    if (!types.length) list.replaceChildren(h('li', { class: 'empty' }, t('event.noTypes')));
  }

  async function loadTypes() {
    const page = await api.get(`/events/${event.id}/ticket-types?size=100`, { signal });
    showTypes(page.data);
  }

  function showMine() {
    if (!myReg) { mine.replaceChildren(); return; }
    const reg = myReg;
    const type = cards.get(reg.ticketTypeId)?.type;
    const notice = h('div', { class: 'notice' },
      h('p', {}, t('event.youAreRegistered'), ' ', badge(reg.status)),
      type && h('p', {}, type.name),
      reg.confirmationCode && h('p', {}, t('ticket.code'), ' ', h('code', {}, reg.confirmationCode)),
      h('p', {}, h('a', { href: '/me/tickets' }, t('event.toTickets'))));
    mine.replaceChildren(notice);
    // A reservation to pay: the Pay button and the time left. pay.js and its texts are
    // loaded only then, which keeps them off every other visit of this page.
    if (reg.priceCents > 0 && ['RESERVED', 'PENDING'].includes(reg.status)) {
      import('../pay.js').then(async (pay) => {
        await pay.ready();
        notice.lastChild.before(pay.payBlock(reg)); // above the link to my tickets
      }).catch(() => {});
    }
  }

  async function loadMine() {
    if (!session.signedIn()) return;
    const page = await myRegistrations({ eventId: event.id, signal });
    myReg = page.data.find((r) => r.eventId === event.id && ACTIVE.includes(r.status)) || null;
    if (myReg) rememberEvent(event.id);
    showMine();
  }

  async function loadWaiting() {
    if (!session.signedIn()) return;
    const entries = await api.get(`/events/${event.id}/waitlist`, { signal })
      .catch((e) => { if (e.status === 404) return []; throw e; });
    waiting = new Map(entries.map((w) => [w.ticketTypeId, w]));
  }

  const refresh = loadTypes; // showTypes also re-decides every offer

  // ---- Actions ----
  async function register(card) {
    if (card.busy) return;
    const button = card.parts.action.querySelector('button');
    card.busy = true;
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    announce(t('event.registering'));
    const body = { ticketTypeId: card.type.id, ...(source && { source }) };
    const { key, body: sent } = intent(card.type.id, body);
    track('registration.started', event.id, { ticketTypeId: card.type.id, ...(source && { source }) });
    try {
      const shown = admission(event.id);
      myReg = await postIdempotent(`/events/${event.id}/registrations`, sent, key, 4, shown ? { 'X-Admission': shown } : {});
      endIntent(card.type.id);
      rememberEvent(event.id);
      announce(registeredMessage(myReg));
    } catch (e) {
      // Only an answer that decided something ends the intent; after a lost answer the
      // next click must ask with the same key.
      if (!isRetryable(e)) endIntent(card.type.id);
      if (e.status === 401) { navigate(signInHere()); return; }
      announce(e.message, 'error');
      if (e.status === 403) forgetAdmission(event.id); // refused: back through the queue
      if (e.status === 409) await loadMine().catch(() => {});
    } finally {
      card.busy = false;
      card.kind = null; // rebuild the button
    }
    showMine();
    // A refresh that fails still rebuilds the button from what is known, so it is never
    // left disabled.
    await refresh().catch(() => cards.forEach((c) => updateCard(c, c.type)));
    mine.querySelector('a')?.focus();
  }

  function registeredMessage(reg) {
    if (reg.status === 'RESERVED' && reg.expiresAt) return t('event.reserved', { until: dateTime(reg.expiresAt, event.timezone) });
    if (reg.status === 'PENDING') return t('event.pending');
    return t('event.registered', { code: reg.confirmationCode || '' });
  }

  async function waitlistCall(card, call, ok) {
    if (card.busy) return;
    card.busy = true;
    card.parts.action.querySelector('button').disabled = true;
    try {
      await call();
      announce(ok);
    } catch (e) {
      if (e.status === 401) { navigate(signInHere()); return; }
      announce(e.message, 'error');
    } finally {
      card.busy = false;
      card.kind = null;
    }
    // The server says which lists the caller is on now (also after a 409 or a 404).
    await loadWaiting().catch(() => {});
    await refresh().catch(() => cards.forEach((c) => updateCard(c, c.type)));
  }

  const joinWaitlist = (card) => waitlistCall(card,
    () => api.post(`/events/${event.id}/waitlist`, { ticketTypeId: card.type.id }), t('waitlist.joined'));

  // The API leaves every list of the event at once.
  const leaveWaitlist = (card) => waitlistCall(card, () => api.del(`/events/${event.id}/waitlist`), t('waitlist.left'));

  // ---- The page ----
  const notice = { CANCELLED: 'event.cancelled', COMPLETED: 'event.completed', DRAFT: 'event.draft' }[event.status];
  const calendar = h('div', {});
  root.replaceChildren(h('article', { class: 'event' },
    h('h1', {}, event.title),
    notice && h('p', { class: 'notice' }, badge(event.status), ' ', t(notice)),
    cover(event, 'LARGE'),
    h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    place(event),
    calendar,
    event.description && h('div', { class: 'description' }, event.description),
    h('section', { 'aria-labelledby': 'tickets-title' },
      h('h2', { id: 'tickets-title' }, t('event.tickets')),
      mine, list, open && refreshNote)));
  // Into one's calendar, for an event still to come; its module is not part of the page's
  // own load.
  if (event.status === 'PUBLISHED') {
    import('../calendar.js').then((c) => calendar.replaceChildren(c.calendarLinks(event))).catch(() => {});
  }

  // The event stays readable when its tickets or the caller's registration cannot be had.
  await Promise.all([
    loadTypes().catch((e) => { if (e.name !== 'AbortError') list.replaceChildren(h('li', {}, e.message)); }),
    loadMine().catch(() => {}),
    loadWaiting().catch(() => {}),
  ]);
  cards.forEach((card) => updateCard(card, card.type));
  showMine();
  track('page.view', event.id, source ? { source } : {});
  if (!open) return undefined;

  // Live availability: every 10 s while the tab is visible, at once when it shows again.
  const tick = () => { if (!document.hidden) refresh().catch(() => {}); };
  const timer = setInterval(tick, REFRESH_MS);
  document.addEventListener('visibilitychange', tick);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', tick);
  };
}
