// "/me/tickets": my registrations with status, confirmation code and the QR code of that
// code (what the door scans), paying a reservation, the refund of a paid ticket that ended,
// and cancellation. Each ticket links to its own page (/me/tickets/{id}).
//   GET    /api/v1/registrations?page&size&sort
//   GET    /api/v1/events/{id}, /events/{id}/ticket-types   titles, dates, type names
//   POST   /api/v1/registrations/{id}/checkout              Pay (pay.js)
//   GET    /api/v1/registrations/{id}/refunds               cancelled or lapsed paid tickets
//   DELETE /api/v1/registrations/{id}
import { api } from '../api.js';
import { announce, fill, h, hidden, setTitle, spinner } from '../dom.js';
import { navigate } from '../nav.js';
import { awaitsPayment, payBlock, ready } from '../pay.js';
import { mayHaveRefunds, refundNote } from '../refunds.js';
import { myRegistrations } from '../registrations.js';
import { t } from '../staff/texts.js';
import { eventOf, ticketDetails } from '../ticket-card.js';

const CANCELLABLE = ['RESERVED', 'PENDING', 'CONFIRMED'];

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

function ticket(reg, event, typeName, signal) {
  const title = event?.title || t('ticket.unknownEvent');
  const id = `reg-${reg.id}`;
  return h('li', { class: 'card ticket' }, h('article', { 'aria-labelledby': id },
    h('h2', { id }, event ? h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, title) : title),
    ticketDetails(reg, event, typeName),
    awaitsPayment(reg) && payBlock(reg, title),
    mayHaveRefunds(reg) && refundNote(reg, signal),
    h('p', {}, h('a', { href: `/me/tickets/${reg.id}` }, t('ticket.open'), hidden(`: ${title}`))),
    CANCELLABLE.includes(reg.status) && h('button', { type: 'button', class: 'danger', onclick: () => cancel(reg, title) },
      t('ticket.cancel'), hidden(`: ${title}`))));
}

// Each event is read once however many tickets it has.
async function eventsOf(regs, signal) {
  const ids = [...new Set(regs.map((r) => r.eventId))];
  return new Map(await Promise.all(ids.map(async (id) => [id, await eventOf(id, signal)])));
}

export default async function tickets({ root, query, signal }) {
  setTitle(t('tickets.title'));
  const pageNo = Math.max(1, Number.parseInt(query.get('page'), 10) || 1);
  const body = h('div', {}, spinner());
  root.replaceChildren(h('h1', {}, t('tickets.title')), body);

  const [page] = await Promise.all([myRegistrations({ page: pageNo - 1, signal }), ready()]);
  const events = await eventsOf(page.data, signal);
  const at = (p) => `/me/tickets${p > 1 ? `?page=${p}` : ''}`;
  fill(body,
    page.partial && h('p', { class: 'hint' }, t('tickets.partial')),
    page.data.length
      ? h('ul', { class: 'cards tickets' }, page.data.map((r) => {
        const e = events.get(r.eventId);
        return ticket(r, e?.event, e?.names.get(r.ticketTypeId), signal);
      }))
      : h('p', {}, t('tickets.empty'), ' ', h('a', { href: '/' }, t('error.toCatalogue'))),
    page.totalPages > 1 && h('nav', { class: 'pager', 'aria-label': t('paging.label') },
      page.hasPrevious && h('a', { href: at(pageNo - 1), rel: 'prev' }, t('paging.prev')),
      h('span', {}, t('paging.of', { page: pageNo, pages: page.totalPages })),
      page.hasNext && h('a', { href: at(pageNo + 1), rel: 'next' }, t('paging.next'))));
}
