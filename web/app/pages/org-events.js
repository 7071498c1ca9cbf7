// "/org/events": the organization's events of every status, with the life-cycle buttons each
// one allows now, a copy of any of them, and the form to create one.
//   GET  /api/v1/events?organizationId={tenantId}&status&sort&page&size
//   POST /api/v1/events/{id}/publish|unpublish|complete|cancel
//   POST /api/v1/events/{id}/copy                  {} → the new DRAFT (X-Idempotency-Key)
//   GET  /api/v1/organizations/{tenantId}/groups   (for private events)
//   POST /api/v1/events                            (X-Idempotency-Key)
import { api, postIdempotent, uuid } from '../api.js';
import { announce, badge, fill, h, setTitle, spinner } from '../dom.js';
import { field } from '../forms.js';
import { when } from '../format.js';
import { navigate } from '../nav.js';
import { eventForm } from '../staff/event-form.js';
import { lifecycle, needOrg, orgEvents, orgNav, pager, tenantId } from '../staff/kit.js';
import { t, tn } from '../staff/texts.js';

const STATUSES = ['all', 'DRAFT', 'PUBLISHED', 'CANCELLED', 'COMPLETED'];
const SIZE = 20;

// "Make a copy": a new DRAFT with the event's details and the ticket types on offer, at the
// same date (the API moves it only when asked), so its page opens saying to check the date.
// One key per click: a retry after a lost answer makes one copy, not two.
function copyButton(event) {
  return h('button', {
    type: 'button',
    onclick: async (e) => {
      const button = e.currentTarget;
      button.disabled = true;
      try {
        const copy = await postIdempotent(`/events/${event.id}/copy`, {}, uuid());
        navigate(`/org/events/${copy.id}`);
        announce(t('org.copyMade', { title: copy.title }));
      } catch (err) {
        button.disabled = false;
        announce(err.message, 'error');
      }
    },
  }, t('org.copy'), h('span', { class: 'visually-hidden' }, `: ${event.title}`));
}

function row(event, replace) {
  const id = `ev-${event.id}`;
  const li = h('li', { class: 'card' }, h('article', { 'aria-labelledby': id },
    h('h2', { id }, h('a', { href: `/org/events/${event.id}` }, event.title)),
    h('p', {}, badge(event.status)),
    h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    h('p', { class: 'links' },
      h('a', { href: `/org/events/${event.id}` }, t('org.edit'), h('span', { class: 'visually-hidden' }, `: ${event.title}`)),
      h('a', { href: `/org/events/${event.id}/dashboard` }, t('org.dashboard'), h('span', { class: 'visually-hidden' }, `: ${event.title}`)),
      ['PUBLISHED', 'COMPLETED'].includes(event.status) && h('a', { href: `/door/${event.id}` }, t('org.door'), h('span', { class: 'visually-hidden' }, `: ${event.title}`)),
      event.status !== 'DRAFT' && h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, t('org.publicPage'), h('span', { class: 'visually-hidden' }, `: ${event.title}`))),
    h('p', { class: 'actions' }, copyButton(event)),
    lifecycle(event, (next) => {
      const fresh = row(next, replace);
      replace(event, next, fresh);
      li.replaceWith(fresh);
      // The pressed button is gone: the focus goes to the same event's new buttons.
      (fresh.querySelector('.lifecycle button') || fresh.querySelector('h2 a')).focus();
    })));
  return li;
}

export default async function eventsPage({ root, query, signal }) {
  setTitle(t('org.events'));
  if (!needOrg(root, t('org.events'))) return;
  let status = STATUSES.includes(query.get('status')) ? query.get('status') : 'all';
  let page = 0;
  let found = null; // the page the server answered
  const results = h('div', { class: 'results', 'aria-busy': 'true' }, spinner());

  function draw() {
    const replace = (old, next) => { found.data = found.data.map((e) => (e.id === old.id ? next : e)); };
    fill(results,
      h('p', { class: 'count' }, tn('org.eventsFound', found.totalElements)),
      found.data.length ? h('ul', { class: 'cards' }, found.data.map((e) => row(e, replace))) : h('p', {}, t('org.noEvents')),
      pager(found, (p) => {
        page = p;
        load().then(() => results.querySelector('.count').focus())
          .catch((err) => { if (err.name !== 'AbortError') announce(err.message, 'error'); });
      }));
    results.querySelector('.count').tabIndex = -1;
  }

  async function load() {
    results.setAttribute('aria-busy', 'true');
    found = await orgEvents({ status: status === 'all' ? null : status, page, size: SIZE, signal });
    results.removeAttribute('aria-busy');
    draw();
  }

  const filter = h('form', { class: 'filters', 'aria-label': t('org.filter') },
    field('status', t('org.status'), {
      tag: 'select', value: status, options: STATUSES.map((s) => [s, t(`status.${s}`)]),
    }),
    h('button', { type: 'submit' }, t('org.show')));
  filter.addEventListener('submit', (e) => {
    e.preventDefault();
    status = filter.elements.status.value;
    page = 0;
    history.replaceState(null, '', status === 'all' ? '/org/events' : `/org/events?status=${status}`);
    load().then(() => announce(tn('org.eventsFound', found.totalElements)))
      .catch((err) => { if (err.name !== 'AbortError') announce(err.message, 'error'); });
  });

  const groups = await api.get(`/organizations/${tenantId()}/groups?size=100&sort=name,asc`, { signal })
    .then((p) => p.data).catch(() => []);
  const create = h('section', { 'aria-labelledby': 'create-heading' },
    h('h2', { id: 'create-heading' }, t('ev.new')),
    eventForm({
      groups,
      prefix: 'new',
      saved: (event) => {
        navigate(`/org/events/${event.id}`);
        announce(t('ev.created', { title: event.title }));
      },
    }));

  root.replaceChildren(
    h('h1', {}, t('org.events')),
    orgNav('/org/events'),
    h('p', {}, h('button', {
      type: 'button',
      class: 'primary',
      onclick: () => { create.scrollIntoView(); create.querySelector('input').focus(); },
    }, t('ev.new'))),
    filter, results, create);
  await load();
}
