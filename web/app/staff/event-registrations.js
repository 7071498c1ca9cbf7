// /org/events/{id}/registrations: who registered, found by name, email or code and filtered by
// status and type, with what an organizer does to one registration (check in, record a
// payment, refund, cancel) and the download of every registration the filter selects.
//   GET    /api/v1/events/{id}/ticket-types?size=100   the type filter and the types' names
//   GET    /api/v1/events/{id}/registrations?search&status&ticketTypeId&page&size&sort
//   GET    /api/v1/events/{id}/registrations/export?status&ticketTypeId   CSV of every one, saved from a Blob
//   POST   /api/v1/registrations/{id}/check-in, /registrations/{id}/mark-paid,  DELETE /registrations/{id}
//   POST   /api/v1/registrations/{id}/refund   201 the refund; 409 refunded already; 422 nothing paid
// The table is the widest of the organizer's: the page gives it the window's width (the frame's
// `wide` section), it scrolls sideways in its own labelled region when even that is too
// narrow, and its action column stays in view at the region's right edge (style.css).
import { api } from '../api.js';
import { announce, badge, fill, h, hidden, spinner } from '../dom.js';
import { field } from '../forms.js';
import { dateTime, price } from '../format.js';
import { download, pager } from './kit.js';
import { amount } from './money.js';
import { refundable, whoOf } from './refunds.js';
import { t, tn } from './texts.js';
import { ticketTypes } from './ticket-types.js';

const STATUSES = ['RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN', 'CANCELLED', 'EXPIRED'];
const SIZE = 20;

export default async function registrations({ root, event: current, signal }) {
  const event = current();
  const filter = { search: '', status: '', ticketTypeId: '', page: 0 };
  let types = [];
  const box = h('div', { class: 'results' }, spinner());
  const failed = (e) => { if (e.name !== 'AbortError') announce(e.message, 'error'); };

  const typeSelect = h('div', {});
  function drawTypeFilter() {
    fill(typeSelect, field('ticketTypeId', t('reg.type'), {
      id: 'reg-type', tag: 'select', value: filter.ticketTypeId,
      options: [['', t('status.all')], ...types.map((x) => [x.id, x.name])],
    }));
  }
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': t('reg.filter') },
    field('search', t('reg.search'), { id: 'reg-search', type: 'search', maxlength: 100, hint: t('reg.searchHint') }),
    field('status', t('reg.status'), {
      id: 'reg-status', tag: 'select', value: '',
      options: [['', t('status.all')], ...STATUSES.map((s) => [s, t(`status.${s}`)])],
    }),
    typeSelect,
    h('button', { type: 'submit' }, t('org.show')));
  filters.addEventListener('submit', (e) => {
    e.preventDefault();
    filter.search = filters.elements.search.value.trim();
    filter.status = filters.elements.status.value;
    filter.ticketTypeId = filters.elements.ticketTypeId?.value || '';
    filter.page = 0;
    load(true).catch(failed);
  });

  // Every registration the filter shown selects (not only this page), as CSV.
  const downloadButton = h('button', {
    type: 'button',
    'aria-describedby': 'reg-download-hint',
    onclick: async (e) => {
      const button = e.currentTarget;
      const q = new URLSearchParams();
      if (filter.status) q.set('status', filter.status);
      if (filter.ticketTypeId) q.set('ticketTypeId', filter.ticketTypeId);
      const query = String(q);
      button.disabled = true;
      try {
        announce(t('export.preparing'));
        await download(`/events/${event.id}/registrations/export${query ? `?${query}` : ''}`, null,
          `bilet-registrations-${event.id}.csv`);
        announce(t('export.done'));
      } catch (err) {
        announce(err.message, 'error');
      } finally {
        button.disabled = false;
      }
    },
  }, t('reg.download'));

  // `message` a text, or made of the answer.
  async function act(call, message) {
    try {
      const answer = await call();
      announce(typeof message === 'function' ? message(answer) : message);
      await load(false);
      box.querySelector('[role=region]')?.focus();
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  function actions(r) {
    const who = whoOf(r);
    return h('div', { class: 'row-actions' },
      r.status === 'CONFIRMED' && h('button', {
        type: 'button',
        onclick: () => act(() => api.post(`/registrations/${r.id}/check-in`, { method: 'MANUAL' }), t('reg.checkedIn', { who })),
      }, t('reg.checkIn'), hidden(`: ${who}`)),
      ['RESERVED', 'PENDING'].includes(r.status) && h('button', {
        type: 'button',
        onclick: () => {
          if (window.confirm(t('reg.confirmPaid', { who, price: price(r.priceCents, r.currency) }))) {
            act(() => api.post(`/registrations/${r.id}/mark-paid`), t('reg.paid', { who }));
          }
        },
      }, t('reg.markPaid'), hidden(`: ${who}`)),
      // A held seat is freed; the money goes back through the provider it came by.
      refundable(r) && h('button', {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (window.confirm(t('refunds.confirm', { who }))) {
            act(() => api.post(`/registrations/${r.id}/refund`),
              (f) => t('refunds.done', { who, amount: amount(f.amountCents, f.currency) }));
          }
        },
      }, t('refunds.refund'), hidden(`: ${who}`)),
      ['RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'].includes(r.status) && h('button', {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (window.confirm(t('reg.confirmCancel', { who }))) act(() => api.del(`/registrations/${r.id}`), t('reg.cancelled', { who }));
        },
      }, t('reg.cancel'), hidden(`: ${who}`)));
  }

  function table(page) {
    const typeName = new Map(types.map((x) => [x.id, x.name]));
    // Named by the section's heading; focusable, so a keyboard scrolls it when it overflows.
    return h('div', { class: 'scroller', role: 'region', tabindex: '0', 'aria-labelledby': 'reg-title' },
      h('table', { class: 'reg-table' },
        h('caption', { class: 'visually-hidden' }, t('reg.title')),
        h('thead', {}, h('tr', {},
          [t('reg.who'), t('reg.type'), t('reg.status'), t('reg.code'), t('tt.price'), t('reg.when'), t('reg.source')]
            .map((x) => h('th', { scope: 'col' }, x)),
          h('th', { scope: 'col', class: 'row-end' }, t('org.actions')))),
        h('tbody', {}, page.data.map((r) => h('tr', {},
          h('th', { scope: 'row' }, `${r.firstName} ${r.lastName}`.trim() || '—', r.email && h('span', { class: 'sub' }, r.email)),
          h('td', {}, typeName.get(r.ticketTypeId) || '—'),
          h('td', {}, badge(r.status)),
          h('td', {}, r.confirmationCode ? h('code', {}, r.confirmationCode) : '—'),
          h('td', {}, price(r.priceCents, r.currency)),
          h('td', {}, dateTime(r.createdAt, event.timezone)),
          h('td', {}, r.source || '—'),
          h('td', { class: 'row-end' }, actions(r)))))));
  }

  async function load(tell) {
    const q = new URLSearchParams({ page: filter.page, size: SIZE, sort: 'createdAt,desc' });
    if (filter.search) q.set('search', filter.search);
    if (filter.status) q.set('status', filter.status);
    if (filter.ticketTypeId) q.set('ticketTypeId', filter.ticketTypeId);
    box.setAttribute('aria-busy', 'true');
    const page = await api.get(`/events/${event.id}/registrations?${q}`, { signal })
      .finally(() => box.removeAttribute('aria-busy'));
    fill(box,
      h('p', { class: 'count', tabindex: '-1' }, tn('reg.found', page.totalElements)),
      page.data.length ? table(page) : h('p', {}, t('reg.none')),
      pager(page, (p) => { filter.page = p; load(false).then(() => box.querySelector('.count').focus()).catch(failed); }));
    if (tell) announce(tn('reg.found', page.totalElements));
  }

  drawTypeFilter();
  root.replaceChildren(
    h('h2', { id: 'reg-title' }, t('reg.title')), filters,
    h('div', { class: 'actions' }, downloadButton, h('p', { class: 'hint', id: 'reg-download-hint' }, t('reg.downloadHint'))),
    box);
  // The types name the rows' type and fill the filter; without them the rows still show.
  types = await ticketTypes(event.id, signal).catch((e) => { if (e.name === 'AbortError') throw e; return []; });
  drawTypeFilter();
  await load(false).catch((e) => { if (e.name !== 'AbortError') fill(box, h('p', {}, e.message)); });
}
