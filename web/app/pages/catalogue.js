// "/": the event catalogue. GET /api/v1/events with the list's filters (search, status,
// startsAfter) and paging; each card shows the event's cover, lowest price and "few left" or
// "sold out" from its `offer`. The filters live in the address (?q=&from=&status=&sort=&page=),
// so a search can be shared and Back returns to it.
import { api } from '../api.js';
import { announce, badge, fill, h, setTitle, spinner } from '../dom.js';
import { field } from '../forms.js';
import { cover } from '../cover.js';
import { price, when } from '../format.js';
import { t, tn } from '../i18n.js';

const SORTS = ['startsAt,asc', 'startsAt,desc', 'title,asc', 'createdAt,desc'];
const STATUSES = ['PUBLISHED', 'COMPLETED', 'CANCELLED', 'all'];
const SIZE = 20;

const today = () => new Date().toLocaleDateString('sv'); // YYYY-MM-DD, local

// Without `from` in the address the catalogue shows what is still ahead (from today);
// an empty `from` shows everything.
function readFilters(query) {
  return {
    q: query.get('q') || '',
    from: query.has('from') ? query.get('from') : today(),
    status: STATUSES.includes(query.get('status')) ? query.get('status') : 'PUBLISHED',
    sort: SORTS.includes(query.get('sort')) ? query.get('sort') : SORTS[0],
    page: Math.max(1, Number.parseInt(query.get('page'), 10) || 1),
  };
}

function address(f, page = 1) {
  const q = new URLSearchParams();
  if (f.q) q.set('q', f.q);
  if (f.from !== today()) q.set('from', f.from);
  if (f.status !== 'PUBLISHED') q.set('status', f.status);
  if (f.sort !== SORTS[0]) q.set('sort', f.sort);
  if (page > 1) q.set('page', page);
  const s = q.toString();
  return s ? `/?${s}` : '/';
}

function apiQuery(f) {
  const q = new URLSearchParams({ page: f.page - 1, size: SIZE, sort: f.sort });
  if (f.q.trim()) q.set('search', f.q.trim());
  if (f.status !== 'all') q.set('status', f.status);
  // Local midnight of the chosen day, as the UTC instant the API takes.
  if (/^\d{4}-\d{2}-\d{2}$/.test(f.from)) q.set('startsAfter', new Date(`${f.from}T00:00`).toISOString());
  return q;
}

function select(name, label, values, chosen) {
  return h('div', { class: 'field' },
    h('label', { for: `f-${name}` }, label),
    h('select', { id: `f-${name}`, name },
      values.map((v) => h('option', { value: v, selected: v === chosen }, t(`${name}.${v}`)))));
}

// What the event offers (the types on sale): its lowest price, and seats when they run short.
function offer(event) {
  const o = event.offer;
  if (!o || event.status !== 'PUBLISHED') return null;
  const from = o.lowestPriceCents ? t('card.from', { price: price(o.lowestPriceCents, o.currency) }) : t('price.free');
  const seats = o.availability === 'SOLD_OUT' ? h('span', { class: 'badge badge-cancelled' }, t('type.soldOut'))
    : o.availability === 'FEW_LEFT' ? h('span', { class: 'badge badge-few' }, t('card.fewLeft')) : null;
  return h('p', { class: 'offer' }, h('span', { class: 'price' }, from), seats);
}

function item(event) {
  const place = event.locationAddress || (event.locationType ? t(`place.${event.locationType}`) : '');
  return h('li', { class: 'card' },
    cover(event, 'MEDIUM', { loading: 'lazy', width: 320, height: 180 }),
    h('h2', {}, h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, event.title)),
    event.status !== 'PUBLISHED' && badge(event.status),
    h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    place && h('p', { class: 'meta' }, place),
    offer(event));
}

function pager(f, result) {
  if (result.totalPages <= 1) return null;
  return h('nav', { class: 'pager', 'aria-label': t('paging.label') },
    result.hasPrevious && h('a', { href: address(f, f.page - 1), rel: 'prev' }, t('paging.prev')),
    h('span', {}, t('paging.of', { page: f.page, pages: result.totalPages })),
    result.hasNext && h('a', { href: address(f, f.page + 1), rel: 'next' }, t('paging.next')));
}

export default async function catalogue({ root, query, signal }) {
  setTitle(t('catalogue.title'));
  let filters = readFilters(query);
  const results = h('div', { class: 'results' });

  async function load(tell) {
    results.replaceChildren(spinner());
    results.setAttribute('aria-busy', 'true');
    try {
      const page = await api.get(`/events?${apiQuery(filters)}`, { signal });
      fill(results,
        h('p', { class: 'count' }, tn('catalogue.found', page.totalElements)),
        page.data.length ? h('ul', { class: 'cards' }, page.data.map(item)) : h('p', {}, t('catalogue.empty')),
        pager(filters, page));
      if (tell) announce(tn('catalogue.found', page.totalElements));
    } finally {
      results.removeAttribute('aria-busy');
    }
  }

  const search = h('form', { role: 'search', class: 'filters', 'aria-label': t('catalogue.filters') },
    field('q', t('catalogue.search'), { type: 'search', value: filters.q, maxlength: 200 }),
    field('from', t('catalogue.from'), { type: 'date', value: filters.from }),
    select('status', t('catalogue.status'), STATUSES, filters.status),
    select('sort', t('catalogue.sort'), SORTS, filters.sort),
    h('button', { type: 'submit', class: 'primary' }, t('catalogue.find')));
  // Searching keeps the focus in the form and updates only the results.
  search.addEventListener('submit', (e) => {
    e.preventDefault();
    const data = new FormData(search);
    filters = { q: data.get('q'), from: data.get('from'), status: data.get('status'), sort: data.get('sort'), page: 1 };
    history.pushState(null, '', address(filters));
    // A failed search says so where its results would be, and aloud.
    load(true).catch((err) => {
      if (err.name === 'AbortError') return;
      results.replaceChildren(h('p', { class: 'notice notice-error' }, err.message));
      announce(err.message, 'error');
    });
  });

  root.replaceChildren(h('h1', {}, t('catalogue.title')), search, results);
  await load(false);
}
