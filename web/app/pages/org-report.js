// "/org/report": the organization's figures over a period, its events together and each one.
// The period is in the address (?from=YYYY-MM-DD&to=YYYY-MM-DD, UTC days, `to` included;
// without it the last 30 days, an empty value an open end), so a reload or a shared link
// shows the same.
//   GET /api/v1/analytics/organizations/{id}/report?from&to   RFC 3339, from inclusive, to exclusive:
//       {organizationId, totalViews, uniqueViews, totalRegistrations, confirmedRegistrations,
//        checkedIn, viewToRegistrationRate, registrationToCheckinRate,
//        events: [{eventId, …the same figures}]} (by registrations, most first)
//   GET /api/v1/events/{id}   each event's title (the report carries ids only); 404: deleted
//   GET /api/v1/events/revenue?from&to   the same period: {totals: [MoneyDto], events: [{eventId,
//       title, …MoneyDto}]} (one line per event and currency, most received first)
import { api } from '../api.js';
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { field, form, showErrors, submitButton } from '../forms.js';
import { bars, number, percent, totals } from '../staff/charts.js';
import { invalid, needOrg, orgNav, scroller, tenantId } from '../staff/kit.js';
import { byCurrency, moneyTable } from '../staff/money.js';
import { t, tn } from '../staff/texts.js';

const DAY = 864e5;
const DAYS = 30;
const CHART_MAX = 15; // events in the chart; the table has them all
const PARALLEL = 6; // title requests at once

const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);
const isDay = (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && utcDay(Date.parse(`${s}T00:00:00Z`)) === s;

// The period of the address; a missing or malformed day is the default one.
export function readPeriod(query, now = Date.now()) {
  const pick = (key, fallback) => {
    const v = query.get(key);
    return v === '' || (v && isDay(v)) ? v : fallback;
  };
  return { from: pick('from', utcDay(now - (DAYS - 1) * DAY)), to: pick('to', utcDay(now)) };
}

// The API's half-open period: midnight UTC of `from`, and the midnight after `to`.
export function apiPeriod({ from, to }) {
  const q = new URLSearchParams();
  if (from) q.set('from', `${from}T00:00:00Z`);
  if (to) q.set('to', `${utcDay(Date.parse(`${to}T00:00:00Z`) + DAY)}T00:00:00Z`);
  return q;
}

const address = ({ from, to }) => `/org/report?${new URLSearchParams({ from, to })}`;

export default async function orgReport({ root, query, signal }) {
  setTitle(t('org.report'));
  if (!needOrg(root, t('org.report'))) return;
  const orgId = tenantId();
  let period = readPeriod(query);
  // eventId → title; null for an event that is gone (404). Kept across periods.
  const titles = new Map();

  const totalsBox = h('dl', { class: 'totals' });
  const count = h('p', { class: 'count' });
  const chart = h('div', {});
  const table = h('div', {});
  const results = h('div', { class: 'results' }, spinner());
  const moneyBox = h('div', { class: 'results' }, spinner());

  async function loadTitles(ids) {
    const missing = ids.filter((id) => !titles.has(id));
    let next = 0;
    const worker = async () => {
      while (next < missing.length) {
        const id = missing[next];
        next += 1;
        try {
          titles.set(id, (await api.get(`/events/${id}`, { signal })).title);
        } catch (e) {
          if (e.name === 'AbortError') throw e;
          if (e.status === 404) titles.set(id, null);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, missing.length) }, worker));
  }

  const label = (id) => titles.get(id) ?? (titles.has(id) ? t('rep.deleted') : t('rep.unnamed', { id: id.slice(0, 8) }));
  const name = (id) => (titles.get(id) ? h('a', { href: `/org/events/${id}/dashboard` }, titles.get(id)) : label(id));

  function draw(r) {
    fill(totalsBox, totals(r));
    const events = r.events || [];
    count.textContent = events.length ? tn('rep.found', events.length) : t('rep.none');
    if (!events.length) {
      fill(chart);
      fill(table);
      return;
    }
    const series = [t('dash.registrations'), t('dash.checkedIn')];
    fill(chart, h('figure', { class: 'dash-figure' },
      h('figcaption', {}, t('rep.chart')),
      bars(events.slice(0, CHART_MAX).map((e) => ({ label: label(e.eventId), values: [e.totalRegistrations, e.checkedIn] })), series),
      events.length > CHART_MAX && h('p', { class: 'hint' }, t('rep.chartTop', { n: CHART_MAX }))));
    const heads = [t('rep.event'), t('dash.views'), t('dash.uniqueViews'), t('dash.registrations'), t('dash.confirmed'),
      t('dash.checkedIn'), t('rep.conversion'), t('rep.attendance')];
    fill(table, scroller(t('rep.events'), h('table', {},
      h('caption', { class: 'visually-hidden' }, t('rep.events')),
      h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, events.map((e) => h('tr', {},
        h('th', { scope: 'row' }, name(e.eventId)),
        [number(e.totalViews), number(e.uniqueViews), number(e.totalRegistrations), number(e.confirmedRegistrations),
          number(e.checkedIn), percent(e.viewToRegistrationRate), percent(e.registrationToCheckinRate)]
          .map((x) => h('td', { class: 'num' }, x))))))),
    h('p', { class: 'hint' }, t('rep.tableHint')));
  }

  function drawMoney(m) {
    const events = m.events || [];
    if (!events.length) {
      fill(moneyBox, h('p', {}, t('money.noneInPeriod')));
      return;
    }
    fill(moneyBox,
      byCurrency(m.totals || []),
      moneyTable(t('money.byEvent'), t('rep.event'), events.map((e) => ({
        head: h('a', { href: `/org/events/${e.eventId}/dashboard` }, e.title),
        money: e,
      }))),
      h('p', { class: 'hint' }, t('money.netHint')));
  }

  // The money's failure is told in its section and leaves the figures drawn.
  async function loadMoney(q) {
    moneyBox.setAttribute('aria-busy', 'true');
    try {
      drawMoney(await api.get(`/events/revenue${q ? `?${q}` : ''}`, { signal }));
    } catch (e) {
      if (e.name === 'AbortError' || e.status === 401) throw e;
      fill(moneyBox, h('p', {}, e.message));
    } finally {
      moneyBox.removeAttribute('aria-busy');
    }
  }

  async function load(p) {
    results.setAttribute('aria-busy', 'true');
    try {
      const q = String(apiPeriod(p));
      const [r] = await Promise.all([
        api.get(`/analytics/organizations/${orgId}/report${q ? `?${q}` : ''}`, { signal }),
        loadMoney(q),
      ]);
      await loadTitles((r.events || []).map((e) => e.eventId));
      draw(r);
      fill(results, count, chart, table);
    } finally {
      results.removeAttribute('aria-busy');
    }
  }

  const periodForm = form(async (data) => {
    const next = { from: data.from, to: data.to };
    if (next.from && next.to && next.from > next.to) throw invalid({ to: t('rep.toBeforeFrom') });
    await load(next);
    period = next;
    history.replaceState(null, '', address(period));
    announce(count.textContent);
  },
  h('div', { class: 'row' },
    field('from', t('rep.from'), { id: 'rep-from', type: 'date', value: period.from, hint: t('rep.fromHint') }),
    field('to', t('rep.to'), { id: 'rep-to', type: 'date', value: period.to, hint: t('rep.toHint') })),
  submitButton(t('org.show')));
  periodForm.setAttribute('aria-label', t('rep.period'));

  root.replaceChildren(
    h('h1', {}, t('org.report')),
    orgNav('/org/report'),
    h('p', { class: 'hint' }, t('rep.help')),
    periodForm,
    h('section', { class: 'dash-section', 'aria-labelledby': 'rep-totals' }, h('h2', { id: 'rep-totals' }, t('rep.totals')), totalsBox),
    h('section', { class: 'dash-section', 'aria-labelledby': 'rep-money' }, h('h2', { id: 'rep-money' }, t('money.period')),
      h('p', { class: 'hint' }, t('money.periodHint')), moneyBox),
    h('section', { class: 'dash-section', 'aria-labelledby': 'rep-events' }, h('h2', { id: 'rep-events' }, t('rep.events')), results));
  await load(period).catch((e) => {
    if (e.name === 'AbortError' || e.status === 401) throw e;
    // A period the server refuses (from after to in a typed address) is shown on its field.
    if (e.code === 'validation_error') showErrors(periodForm, e);
    fill(results, h('p', {}, e.message));
  });
}
