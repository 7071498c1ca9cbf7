// "/org/request": asking the platform for an organization, following my requests, and
// creating the organization once a request is approved.
//   POST /api/v1/organization-requests {name, slug, description}
//   GET  /api/v1/organization-requests?sort=createdAt,desc&size=20   (mine; all for admins)
//   POST /api/v1/organizations {requestId}  → the organization; then
//   POST /api/v1/organizations/{id}/switch
import { api } from '../api.js';
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { dateTime } from '../format.js';
import { navigate } from '../nav.js';
import * as session from '../session.js';
import { invalid, switchTo } from '../staff/kit.js';
import { t } from '../staff/texts.js';

export const requestBadge = (status) => h('span', { class: `badge badge-req-${status.toLowerCase()}` }, t(`req.${status}`));

export default async function orgRequest({ root, signal }) {
  setTitle(t('req.title'));
  const mine = h('div', {}, spinner());
  const me = session.user()?.id;

  async function create(request, button) {
    button.disabled = true;
    try {
      const org = await api.post('/organizations', { requestId: request.id });
      await switchTo(org.id);
      navigate('/org/events');
      announce(t('req.orgCreated', { name: org.name }));
    } catch (e) {
      button.disabled = false;
      announce(e.message, 'error');
    }
  }

  async function load() {
    const page = await api.get('/organization-requests?sort=createdAt,desc&size=20', { signal });
    // An administrator's list has everyone's requests; this page is about the caller's own.
    const own = page.data.filter((r) => !me || r.userId === me);
    fill(mine, own.length
      ? h('ul', { class: 'cards' }, own.map((r) => h('li', { class: 'card' },
        h('h3', {}, r.name, ' ', requestBadge(r.status)),
        h('p', { class: 'meta' }, r.slug, ' · ', dateTime(r.createdAt)),
        r.reviewComment && h('p', {}, t(r.status === 'REJECTED' ? 'req.reason' : 'req.comment'), ' ', r.reviewComment),
        r.status === 'APPROVED' && !r.organizationId && [
          r.reservedUntil && h('p', { class: 'hint' }, t('req.reservedUntil', { date: dateTime(r.reservedUntil) })),
          h('button', { type: 'button', class: 'primary', onclick: (e) => create(r, e.currentTarget) },
            t('req.createOrg'), h('span', { class: 'visually-hidden' }, `: ${r.name}`)),
        ],
        r.organizationId && h('p', {}, h('a', { href: '/org/' }, t('req.created'))))))
      : h('p', {}, t('req.none')));
  }

  const el = form(async (data) => {
    const body = { name: data.name.trim(), slug: data.slug.trim(), ...(data.description.trim() && { description: data.description.trim() }) };
    const bad = {};
    if (!body.name) bad.name = t('org.required');
    if (!/^[a-z0-9-]{3,50}$/.test(body.slug)) bad.slug = t('req.slugRule');
    if (Object.keys(bad).length) throw invalid(bad);
    await api.post('/organization-requests', body);
    el.reset();
    await load();
    announce(t('req.sent'));
    mine.querySelector('h3')?.setAttribute('tabindex', '-1');
    mine.querySelector('h3')?.focus();
  },
  field('name', t('req.name'), { id: 'req-name', maxlength: 255, required: true, autocomplete: 'organization' }),
  field('slug', t('req.slug'), { id: 'req-slug', maxlength: 50, required: true, hint: t('req.slugRule'), autocapitalize: 'none', spellcheck: 'false' }),
  field('description', t('req.description'), { id: 'req-description', tag: 'textarea', rows: 4, maxlength: 5000 }),
  submitButton(t('req.send')));

  root.replaceChildren(
    h('h1', {}, t('req.title')),
    h('p', {}, t('req.help')),
    el,
    h('section', { 'aria-labelledby': 'mine-title' }, h('h2', { id: 'mine-title' }, t('req.mine')), mine));
  await load();
}
