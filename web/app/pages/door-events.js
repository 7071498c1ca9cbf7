// "/door/": which event's door? The organization's published events from two days ago on.
//   GET /api/v1/events?organizationId={tenantId}&status=PUBLISHED&startsAfter&sort=startsAt,asc&page&size
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { when } from '../format.js';
import * as session from '../session.js';
import { orgEvents, pager } from '../staff/kit.js';
import { t } from '../staff/texts.js';

const SIZE = 50;

export default async function doorEvents({ root, signal }) {
  setTitle(t('door.pick'));
  if (!session.claims()?.tenantId) {
    root.replaceChildren(h('h1', {}, t('door.pick')), h('p', { class: 'notice' }, t('door.noOrg'), ' ', h('a', { href: '/org/' }, t('door.switch'))));
    return;
  }
  const list = h('div', {}, spinner());
  root.replaceChildren(h('h1', {}, t('door.pick')), list);
  const since = new Date(Date.now() - 2 * 864e5).toISOString();
  async function show(page) {
    const found = await orgEvents({ status: 'PUBLISHED', startsAfter: since, sort: 'startsAt,asc', page, size: SIZE, signal });
    fill(list, found.data.length
      ? [h('ul', { class: 'cards' }, found.data.map((e) => h('li', { class: 'card' },
        h('h2', {}, h('a', { href: `/door/${e.id}` }, e.title)),
        h('p', { class: 'meta' }, h('time', { datetime: e.startsAt }, when(e.startsAt, e.endsAt, e.timezone)))))),
      pager(found, (p) => show(p).then(() => list.querySelector('a')?.focus())
        .catch((err) => { if (err.name !== 'AbortError') announce(err.message, 'error'); }))]
      : h('p', {}, t('door.noEvents'), ' ', h('a', { href: '/org/events' }, t('door.toEvents'))));
  }
  await show(0);
}
