// A ticket as "my tickets" and a ticket's own page both draw it: the event's time, the ticket
// type, state, price and confirmation code, what the state means, and once confirmed the QR
// code of the code (what the door scans); and the reads of the event it needs.
//   GET /api/v1/events/{id}, /events/{id}/ticket-types   title, dates, type names
// Its texts need pay.js's ready() (the reason of a refund by the organizer is there).
import { api } from './api.js';
import { badge, h } from './dom.js';
import { dateTime, price, when } from './format.js';
import { drawQr, encodeQr } from './qr.js';
import { has, t } from './staff/texts.js';

// The event and the names of its ticket types. A part that cannot be read is left out: the
// ticket then shows without a title rather than not at all.
export async function eventOf(id, signal) {
  const [event, types] = await Promise.allSettled([
    api.get(`/events/${id}`, { signal }),
    api.get(`/events/${id}/ticket-types?size=100`, { signal }),
  ]);
  const names = new Map((types.value?.data || []).map((x) => [x.id, x.name]));
  return { event: event.value, names };
}

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

// What goes under the ticket's heading.
export function ticketDetails(reg, event, typeName) {
  const note = statusNote(reg, event?.timezone);
  return [
    event && h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    h('dl', {},
      typeName && [h('dt', {}, t('ticket.type')), h('dd', {}, typeName)],
      h('dt', {}, t('ticket.status')), h('dd', {}, badge(reg.status)),
      h('dt', {}, t('ticket.price')), h('dd', {}, price(reg.priceCents, reg.currency)),
      reg.confirmationCode && [h('dt', {}, t('ticket.code')), h('dd', {}, h('code', { class: 'code' }, reg.confirmationCode))]),
    note && h('p', { class: 'hint' }, note),
    reg.status === 'CONFIRMED' && reg.confirmationCode && qrCanvas(reg.confirmationCode),
  ];
}
