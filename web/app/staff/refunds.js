// The refunds of an event as its organizer sees them (/org/events/{id}/refunds), and which
// registrations the registrations table offers "Refund" for:
//   GET  /api/v1/events/{id}/refunds        newest first, at most 1000
//   GET  /api/v1/registrations/{id}         whose refund it is, for the page of refunds shown
// The refund itself (POST /api/v1/registrations/{id}/refund) is a row action of that table.
import { api } from '../api.js';
import { announce, fill, h, spinner } from '../dom.js';
import { dateTime } from '../format.js';
import { pager, scroller } from './kit.js';
import { amount } from './money.js';
import { has, t, tn } from './texts.js';

const SIZE = 20;
const PARALLEL = 6; // registration reads at once
const CAP = 1000; // the server's limit

// A ticket with a price that was or is held may have been paid: the server says (422) when
// nothing was, and (409) when it was given back already.
export const refundable = (r) => r.priceCents > 0 && ['CONFIRMED', 'CHECKED_IN', 'CANCELLED'].includes(r.status);

export const whoOf = (r) => `${r.firstName} ${r.lastName}`.trim() || r.email || r.confirmationCode || '—';

const reason = (code) => (has(`refunds.reason.${code}`) ? t(`refunds.reason.${code}`) : code);

const status = (s) => h('span', { class: `badge badge-refund-${s.toLowerCase()}` }, t(`refunds.status.${s}`));

// The section: `el` to place, `load(tell)` to (re)read the list, `names` (registration id →
// participant) of those already known.
export function refundsSection(event, signal) {
  const names = new Map();
  let list = [];
  let page = 0;
  const box = h('div', { class: 'results' });

  async function loadNames(ids) {
    const missing = [...new Set(ids)].filter((id) => !names.has(id));
    let next = 0;
    const worker = async () => {
      while (next < missing.length) {
        const id = missing[next];
        next += 1;
        try {
          names.set(id, whoOf(await api.get(`/registrations/${id}`, { signal })));
        } catch (e) {
          if (e.name === 'AbortError') throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, missing.length) }, worker));
  }

  async function draw() {
    const shown = list.slice(page * SIZE, (page + 1) * SIZE);
    await loadNames(shown.map((f) => f.registrationId));
    const failed = list.filter((f) => f.status === 'FAILED').length;
    const pages = Math.ceil(list.length / SIZE);
    fill(box,
      h('p', { class: 'count', tabindex: '-1' }, list.length ? tn('refunds.found', list.length) : t('refunds.none'),
        failed > 0 && ` ${t('refunds.failed', { n: failed })}`),
      list.length >= CAP && h('p', { class: 'hint' }, t('refunds.capped', { n: CAP })),
      shown.length > 0 && scroller(t('refunds.title'), h('table', {},
        h('caption', { class: 'visually-hidden' }, t('refunds.title')),
        h('thead', {}, h('tr', {}, [t('reg.who'), t('refunds.amount'), t('reg.status'), t('refunds.why'), t('refunds.when')]
          .map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, shown.map((f) => h('tr', {},
          h('th', { scope: 'row' }, names.get(f.registrationId) || t('refunds.unknown', { id: f.registrationId.slice(0, 8) })),
          h('td', { class: 'num' }, amount(f.amountCents, f.currency)),
          h('td', {}, status(f.status), f.status === 'FAILED' && f.lastError && h('span', { class: 'sub' }, f.lastError)),
          h('td', {}, reason(f.reason)),
          h('td', {}, dateTime(f.createdAt, event.timezone))))))),
      failed > 0 && h('p', { class: 'hint' }, t('refunds.failedHint')),
      pager({ page, totalPages: pages, hasNext: page + 1 < pages, hasPrevious: page > 0 }, (p) => {
        page = p;
        draw().then(() => box.querySelector('.count').focus()).catch(failedToDraw);
      }));
  }

  const failedToDraw = (e) => { if (e.name !== 'AbortError') announce(e.message, 'error'); };

  // A list that cannot be read says why in its place; only leaving the page throws.
  async function load(tell) {
    box.setAttribute('aria-busy', 'true');
    try {
      list = (await api.get(`/events/${event.id}/refunds`, { signal })) || [];
      page = Math.min(page, Math.max(0, Math.ceil(list.length / SIZE) - 1));
      await draw();
      if (tell) announce(box.querySelector('.count').textContent);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      fill(box, h('p', {}, e.message));
      if (tell) announce(e.message, 'error');
    } finally {
      box.removeAttribute('aria-busy');
    }
  }

  const update = h('button', { type: 'button', onclick: () => load(true).catch(() => {}) }, t('refunds.update'));
  box.replaceChildren(spinner());
  const el = h('section', { 'aria-labelledby': 'refunds-title' },
    h('h2', { id: 'refunds-title' }, t('refunds.title')),
    h('p', { class: 'hint' }, t('refunds.help')),
    h('div', { class: 'actions' }, update),
    box);
  return { el, load, names };
}

// The section as the page /org/events/{id}/refunds (pages/org-event.js draws its frame).
export default async function refundsPage({ root, event, signal }) {
  const section = refundsSection(event(), signal);
  root.replaceChildren(section.el);
  await section.load(false);
}
