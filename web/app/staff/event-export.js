// /org/events/{id}/export: the event's analytics records of a period (views, registrations,
// check-ins) as CSV or XLSX, saved from a Blob (a link could not carry the bearer token).
//   POST   /api/v1/analytics/export {eventId, organizationId, dateFrom, dateTo, format}
import { announce, h } from '../dom.js';
import { clearErrors, field, showErrors } from '../forms.js';
import { download, invalid, tenantId } from './kit.js';
import { t } from './texts.js';

const day = (d) => d.toLocaleDateString('sv');

export default function exportPage({ root, event: current }) {
  const event = current();
  // The records of the last year at most (the server's limit), from the event's creation.
  const yearAgo = new Date(Date.now() - 365 * 864e5);
  const created = new Date(event.createdAt);
  const form = h('form', { novalidate: true, class: 'export' },
    h('div', { class: 'row' },
      field('dateFrom', t('export.from'), { id: 'ex-from', type: 'date', value: day(created > yearAgo ? created : yearAgo) }),
      field('dateTo', t('export.to'), { id: 'ex-to', type: 'date', value: day(new Date(Date.now() + 864e5)), hint: t('export.toHint') })),
    h('div', { class: 'actions' }, ['csv', 'xlsx'].map((format) => h('button', {
      type: 'button',
      onclick: async (e) => {
        const button = e.currentTarget;
        clearErrors(form);
        const { dateFrom, dateTo } = Object.fromEntries(new FormData(form));
        button.disabled = true;
        try {
          if (!dateFrom || !dateTo) throw invalid({ [dateFrom ? 'dateTo' : 'dateFrom']: t('org.required') });
          announce(t('export.preparing'));
          await download('/analytics/export', {
            eventId: event.id,
            organizationId: tenantId(),
            dateFrom: new Date(`${dateFrom}T00:00`).toISOString(),
            dateTo: new Date(`${dateTo}T00:00`).toISOString(),
            format,
          }, `bilet-${event.slug}.${format}`);
          announce(t('export.done'));
        } catch (err) {
          showErrors(form, err);
        } finally {
          button.disabled = false;
        }
      },
    }, t(`export.${format}`)))),
    h('div', { class: 'form-error', role: 'alert' }));
  root.replaceChildren(h('section', { 'aria-labelledby': 'export-title' },
    h('h2', { id: 'export-title' }, t('export.title')), h('p', { class: 'hint' }, t('export.what')), form));
}
