// "/admin/requests": platform administrators approve or reject organization requests.
//   GET  /api/v1/organization-requests?status&page&size&sort=createdAt,desc
//   POST /api/v1/organization-requests/{id}/approve {reason?}   (the comment)
//   POST /api/v1/organization-requests/{id}/reject  {reason}    (required)
import { api } from '../api.js';
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { clearErrors, field, showErrors } from '../forms.js';
import { dateTime } from '../format.js';
import { isAdmin, invalid, pager } from '../staff/kit.js';
import { t, tn } from '../staff/texts.js';
import { requestBadge } from './org-request.js';

const STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'all'];

export default async function adminRequests({ root, query, signal }) {
  setTitle(t('admin.title'));
  if (!isAdmin()) {
    // The server refuses anyway; this saves the visitor a page of errors.
    root.replaceChildren(h('h1', {}, t('admin.title')), h('p', { class: 'notice' }, t('admin.only')));
    return;
  }
  const state = { status: STATUSES.includes(query.get('status')) ? query.get('status') : 'PENDING', page: 0 };
  const results = h('div', { class: 'results' }, spinner());

  function review(r) {
    const el = h('form', { novalidate: true, class: 'review' },
      field('reason', t('admin.reason'), { id: `rv-${r.id}-reason`, tag: 'textarea', rows: 2, hint: t('admin.reasonHint'), maxlength: 2000 }),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', onclick: () => decide('approve') }, t('admin.approve'), h('span', { class: 'visually-hidden' }, `: ${r.name}`)),
        h('button', { type: 'button', class: 'danger', onclick: () => decide('reject') }, t('admin.reject'), h('span', { class: 'visually-hidden' }, `: ${r.name}`))),
      h('div', { class: 'form-error', role: 'alert' }));
    el.addEventListener('submit', (e) => e.preventDefault());
    async function decide(action) {
      clearErrors(el);
      const reason = el.elements.reason.value.trim();
      const buttons = el.querySelectorAll('button');
      buttons.forEach((b) => { b.disabled = true; });
      try {
        if (action === 'reject' && !reason) throw invalid({ reason: t('admin.reasonNeeded') });
        await api.post(`/organization-requests/${r.id}/${action}`, reason ? { reason } : {});
        announce(t(action === 'approve' ? 'admin.approved' : 'admin.rejected', { name: r.name }));
        await load();
        results.querySelector('.count')?.focus();
      } catch (e) {
        buttons.forEach((b) => { b.disabled = false; });
        showErrors(el, e);
      }
    }
    return el;
  }

  function item(r) {
    const id = `rq-${r.id}`;
    return h('li', { class: 'card' }, h('article', { 'aria-labelledby': id },
      h('h2', { id }, r.name, ' ', requestBadge(r.status)),
      h('p', { class: 'meta' }, t('admin.slug'), ' ', h('code', {}, r.slug), ' · ', dateTime(r.createdAt)),
      // Who asked, by name and email; the account's id only when it has neither.
      h('p', { class: 'meta' }, t('admin.requester'), ' ',
        r.requesterName || r.requesterEmail
          ? [r.requesterName, r.requesterEmail && h('a', { href: `mailto:${r.requesterEmail}` }, r.requesterEmail)]
            .filter(Boolean).flatMap((x, i) => (i ? [' · ', x] : [x]))
          : h('code', {}, r.userId)),
      r.description && h('p', { class: 'description' }, r.description),
      r.reviewComment && h('p', {}, t(r.status === 'REJECTED' ? 'req.reason' : 'req.comment'), ' ', r.reviewComment),
      r.reviewedAt && h('p', { class: 'hint' }, t('admin.reviewedAt', { date: dateTime(r.reviewedAt) })),
      r.status === 'PENDING' && review(r)));
  }

  async function load() {
    const q = new URLSearchParams({ page: state.page, size: 20, sort: 'createdAt,desc' });
    if (state.status !== 'all') q.set('status', state.status);
    results.setAttribute('aria-busy', 'true');
    const page = await api.get(`/organization-requests?${q}`, { signal });
    if (!page.data.length && state.page > 0) { // the last one of a page was just decided
      state.page -= 1;
      await load();
      return;
    }
    results.removeAttribute('aria-busy');
    fill(results,
      h('p', { class: 'count', tabindex: '-1' }, tn('admin.found', page.totalElements)),
      page.data.length ? h('ul', { class: 'cards' }, page.data.map(item)) : h('p', {}, t('admin.none')),
      pager(page, (p) => { state.page = p; load().then(() => results.querySelector('.count').focus()).catch(failed); }));
  }
  const failed = (e) => { if (e.name !== 'AbortError') announce(e.message, 'error'); };

  const filter = h('form', { class: 'filters', 'aria-label': t('admin.filter') },
    field('status', t('admin.status'), { tag: 'select', value: state.status, options: STATUSES.map((s) => [s, t(`req.${s}`)]) }),
    h('button', { type: 'submit' }, t('org.show')));
  filter.addEventListener('submit', (e) => {
    e.preventDefault();
    state.status = filter.elements.status.value;
    state.page = 0;
    history.replaceState(null, '', state.status === 'PENDING' ? '/admin/requests' : `/admin/requests?status=${state.status}`);
    load().then(() => announce(results.querySelector('.count').textContent)).catch(failed);
  });

  root.replaceChildren(h('h1', {}, t('admin.title')), filter, results);
  await load();
}
