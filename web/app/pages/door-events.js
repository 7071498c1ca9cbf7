// "/door/": which event's door? The organization's published events from two days ago on.
//   GET /api/v1/events?status=PUBLISHED&startsAfter&sort=startsAt,asc&size=100  (ours kept)
import { fill, h, setTitle, spinner } from '../dom.js';
import { when } from '../format.js';
import * as session from '../session.js';
import { orgEvents } from '../staff/kit.js';
import { t } from '../staff/texts.js';

export default async function doorEvents({ root, signal }) {
  setTitle(t('door.pick'));
  if (!session.claims()?.tenantId) {
    root.replaceChildren(h('h1', {}, t('door.pick')), h('p', { class: 'notice' }, t('door.noOrg'), ' ', h('a', { href: '/org/' }, t('door.switch'))));
    return;
  }
  const list = h('div', {}, spinner());
  root.replaceChildren(h('h1', {}, t('door.pick')), list);
  const since = new Date(Date.now() - 2 * 864e5).toISOString();
  const { events } = await orgEvents({ status: 'PUBLISHED', startsAfter: since, sort: 'startsAt,asc', signal, pages: 3 });
  fill(list, events.length
    ? h('ul', { class: 'cards' }, events.map((e) => h('li', { class: 'card' },
      h('h2', {}, h('a', { href: `/door/${e.id}` }, e.title)),
      h('p', { class: 'meta' }, h('time', { datetime: e.startsAt }, when(e.startsAt, e.endsAt, e.timezone))))))
    : h('p', {}, t('door.noEvents'), ' ', h('a', { href: '/org/events' }, t('door.toEvents'))));
}
