// "/me/tickets": my registrations with status, confirmation code and the QR code of that
// code (what the door scans), and cancellation.
//   GET    /api/v1/registrations?page&size&sort
//   GET    /api/v1/events/{id}, /events/{id}/ticket-types   titles, dates, type names
//   DELETE /api/v1/registrations/{id}
import { api } from '../api.js';
import { announce, badge, fill, h, setTitle, spinner } from '../dom.js';
import { dateTime, price, when } from '../format.js';
import { has, t } from '../i18n.js';
import { navigate } from '../nav.js';
import { drawQr, encodeQr } from '../qr.js';
import { myRegistrations } from '../registrations.js';

const CANCELLABLE = ['RESERVED', 'PENDING', 'CONFIRMED'];

function qrCanvas(code) {
  const canvas = h('canvas', { class: 'qr', role: 'img', 'aria-label': t('ticket.qr', { code }) });
  drawQr(canvas, encodeQr(code), 8);
  return canvas;
}

function statusNote(reg, timeZone) {
  if (reg.status === 'RESERVED' && reg.expiresAt) return t('ticket.reservedUntil', { until: dateTime(reg.expiresAt, timeZone) });
  if (reg.status === 'PENDING') return t('ticket.pending');
  if (reg.status === 'CHECKED_IN') return t('ticket.checkedIn');
  const reason = reg.cancellationReason;
  if (reg.status === 'CANCELLED' && reason) return t('ticket.cancelledWhy', { reason: has(`reason.${reason}`) ? t(`reason.${reason}`) : reason });
  return null;
}

async function cancel(reg, title) {
  if (!window.confirm(t('ticket.confirmCancel', { title }))) return;
  try {
    await api.del(`/registrations/${reg.id}`);
    navigate(location.pathname + location.search, { replace: true }); // draw the list again
    announce(t('ticket.cancelled'));
  } catch (e) {
    announce(e.message, 'error');
  }
}

function ticket(reg, event, typeName) {
  const title = event?.title || t('ticket.unknownEvent');
  const id = `reg-${reg.id}`;
  const note = statusNote(reg, event?.timezone);
  return h('li', { class: 'card ticket' }, h('article', { 'aria-labelledby': id },
    h('h2', { id }, event ? h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, title) : title),
    event && h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    h('dl', {},
      typeName && [h('dt', {}, t('ticket.type')), h('dd', {}, typeName)],
      h('dt', {}, t('ticket.status')), h('dd', {}, badge(reg.status)),
      h('dt', {}, t('ticket.price')), h('dd', {}, price(reg.priceCents, reg.currency)),
      reg.confirmationCode && [h('dt', {}, t('ticket.code')), h('dd', {}, h('code', { class: 'code' }, reg.confirmationCode))]),
    note && h('p', { class: 'hint' }, note),
    reg.status === 'CONFIRMED' && reg.confirmationCode && qrCanvas(reg.confirmationCode),
    CANCELLABLE.includes(reg.status) && h('button', { type: 'button', class: 'danger', onclick: () => cancel(reg, title) },
      t('ticket.cancel'), h('span', { class: 'visually-hidden' }, `: ${title}`))));
}

// Each event is read once however many tickets it has; one that cannot be read leaves
// its tickets without a title rather than the page without tickets.
async function eventsOf(regs, signal) {
  const ids = [...new Set(regs.map((r) => r.eventId))];
  const found = await Promise.all(ids.map(async (id) => {
    const [event, types] = await Promise.allSettled([
      api.get(`/events/${id}`, { signal }),
      api.get(`/events/${id}/ticket-types?size=100`, { signal }),
    ]);
    const names = new Map((types.value?.data || []).map((x) => [x.id, x.name]));
    return [id, { event: event.value, names }];
  }));
  return new Map(found);
}

export default async function tickets({ root, query, signal }) {
  setTitle(t('tickets.title'));
  const pageNo = Math.max(1, Number.parseInt(query.get('page'), 10) || 1);
  const body = h('div', {}, spinner());
  root.replaceChildren(h('h1', {}, t('tickets.title')), body);

  const page = await myRegistrations({ page: pageNo - 1, signal });
  const events = await eventsOf(page.data, signal);
  const at = (p) => `/me/tickets${p > 1 ? `?page=${p}` : ''}`;
  fill(body,
    page.partial && h('p', { class: 'hint' }, t('tickets.partial')),
    page.data.length
      ? h('ul', { class: 'cards tickets' }, page.data.map((r) => {
        const e = events.get(r.eventId);
        return ticket(r, e?.event, e?.names.get(r.ticketTypeId));
      }))
      : h('p', {}, t('tickets.empty'), ' ', h('a', { href: '/' }, t('error.toCatalogue'))),
    page.totalPages > 1 && h('nav', { class: 'pager', 'aria-label': t('paging.label') },
      page.hasPrevious && h('a', { href: at(pageNo - 1), rel: 'prev' }, t('paging.prev')),
      h('span', {}, t('paging.of', { page: pageNo, pages: page.totalPages })),
      page.hasNext && h('a', { href: at(pageNo + 1), rel: 'next' }, t('paging.next'))));
}
