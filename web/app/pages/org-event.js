// "/org/events/{id}" and its sections: one event of the organization, one feature per
// address, so each section is a page of its own (a link can be shared, Back, Forward and a
// reload find it) and a long page no longer hides the registrations under four forms:
//   /org/events/{id}                 the overview: life cycle, ticket types (staff/event-overview.js)
//   /org/events/{id}/details         description, time, place, cover       (staff/event-details.js)
//   /org/events/{id}/registrations   the table and its actions              (staff/event-registrations.js)
//   /org/events/{id}/refunds         the event's refunds                    (staff/refunds.js)
//   /org/events/{id}/export          the analytics records of a period      (staff/event-export.js)
// This module is their frame: the event's title, status and links, and the tabs between the
// sections, which are links (aria-current marks the one shown). A section is loaded only
// when visited.
//   GET /api/v1/events/{id}
import { api } from '../api.js';
import { badge, fill, h, setTitle, spinner } from '../dom.js';
import { when } from '../format.js';
import { needOrg, orgNav, tenantId } from '../staff/kit.js';
import { t } from '../staff/texts.js';

// `wide`: the section's table takes the window's whole width rather than the reading width
// of the other pages (the registrations' action column was cut off at 1280 px).
const SECTIONS = [
  { path: '', label: 'ev.tab.overview', load: () => import('../staff/event-overview.js') },
  { path: 'details', label: 'ev.tab.details', load: () => import('../staff/event-details.js') },
  { path: 'registrations', label: 'reg.title', load: () => import('../staff/event-registrations.js'), wide: true },
  { path: 'refunds', label: 'refunds.title', load: () => import('../staff/refunds.js') },
  { path: 'export', label: 'export.title', load: () => import('../staff/event-export.js') },
];

export default async function orgEvent({ root, params, signal }) {
  const section = SECTIONS.find((s) => s.path === (params.section || '')) || SECTIONS[0];
  setTitle(t('ev.title'));
  if (!needOrg(root, t('ev.title'))) return undefined;
  // The wide layout is set at once and undone when the page is left, however it is left (a
  // navigation during a request aborts `signal` before any cleanup could be returned).
  if (section.wide) {
    document.body.classList.add('wide-page');
    signal.addEventListener('abort', () => document.body.classList.remove('wide-page'), { once: true });
  }
  const [loaded, module] = await Promise.all([
    api.get(`/events/${encodeURIComponent(params.eventId)}`, { signal }),
    section.load(),
  ]);
  let event = loaded;
  const heading = h('h1', { tabindex: '-1' }, event.title);
  if (event.tenantId !== tenantId()) {
    setTitle(event.title);
    root.replaceChildren(heading,
      h('p', { class: 'notice' }, t('ev.otherOrg'), ' ', h('a', { href: '/org/' }, t('org.chooseOrg'))));
    return undefined;
  }

  // ---- What every section shows: status, time, the event's other pages ----
  const head = h('div', { class: 'event-head' });
  function drawHead() {
    heading.textContent = event.title;
    // Each section has its own title, so history and tabs tell them apart.
    setTitle(section.path ? `${t(section.label)}: ${event.title}` : event.title);
    fill(head,
      h('p', {}, badge(event.status), ' ', h('time', { class: 'meta', datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
      h('p', { class: 'links' },
        h('a', { href: `/org/events/${event.id}/dashboard` }, t('org.dashboard')),
        h('a', { href: `/door/${event.id}` }, t('org.door')),
        // A draft's page is seen by its organizers only: how participants will see it.
        h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, t(event.status === 'DRAFT' ? 'org.preview' : 'org.publicPage'))));
  }

  const base = `/org/events/${encodeURIComponent(event.id)}`;
  const tabs = h('nav', { class: 'tabs', 'aria-label': t('ev.tabs') }, h('ul', {},
    SECTIONS.map((s) => h('li', {}, h('a', {
      href: s.path ? `${base}/${s.path}` : base,
      'aria-current': s === section ? 'page' : null,
    }, t(s.label))))));

  const panel = h('div', { class: 'event-section' }, spinner());
  drawHead();
  root.replaceChildren(heading, orgNav(null), head, tabs, panel);
  // A section changes the event (life cycle, fields, cover): the frame shows the new one.
  const changed = (next) => {
    event = next;
    drawHead();
  };
  return module.default({ root: panel, event: () => event, changed, heading, signal });
}
