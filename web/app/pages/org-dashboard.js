// "/org/events/{id}/dashboard": an event's figures as charts: views, registrations and
// check-ins by day; by ticket type; by source; the funnel. Every 10 seconds while the tab is
// visible, and at once when it shows again.
//   GET /api/v1/events/{id},  GET /api/v1/events/{id}/ticket-types?size=100
//   GET /api/v1/analytics/events/{id}/dashboard   totals, byDay, byTicketType, bySource
//   GET /api/v1/analytics/events/{id}/funnel      views, started, completed, checkedIn, rates
//   GET /api/v1/events/{id}/revenue               {eventId, currencies: [MoneyDto]} (none: nothing paid)
import { api } from '../api.js';
import { fill, h, setTitle, spinner } from '../dom.js';
import { when } from '../format.js';
import { lang } from '../i18n.js';
import { bars, columns, funnel, number, tableBox, totals } from '../staff/charts.js';
import { needOrg, orgNav, tenantId } from '../staff/kit.js';
import { byCurrency } from '../staff/money.js';
import { t } from '../staff/texts.js';

const REFRESH_MS = 10_000;
const DAY = 864e5;

// The days from the first to the last one with figures, the empty ones included, so the
// time axis is even (at most a year back from the last).
export function everyDay(byDay) {
  if (!byDay.length) return [];
  const known = new Map(byDay.map((d) => [d.date, d]));
  const last = Date.parse(`${byDay[byDay.length - 1].date}T00:00:00Z`);
  const first = Math.max(Date.parse(`${byDay[0].date}T00:00:00Z`), last - 365 * DAY);
  const days = [];
  for (let d = first; d <= last; d += DAY) {
    const date = new Date(d).toISOString().slice(0, 10);
    days.push(known.get(date) || { date, views: 0, registrations: 0, checkedIn: 0 });
  }
  return days;
}

export default async function dashboard({ root, params, signal }) {
  setTitle(t('dash.title'));
  if (!needOrg(root, t('dash.title'))) return undefined;
  const event = await api.get(`/events/${encodeURIComponent(params.eventId)}`, { signal });
  setTitle(`${t('dash.title')}: ${event.title}`);
  if (event.tenantId !== tenantId()) {
    root.replaceChildren(h('h1', {}, event.title),
      h('p', { class: 'notice' }, t('ev.otherOrg'), ' ', h('a', { href: '/org/' }, t('org.chooseOrg'))));
    return undefined;
  }
  let names = new Map();
  const dayFormat = new Intl.DateTimeFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });
  const timeFormat = new Intl.DateTimeFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { timeStyle: 'medium' });

  const totalsBox = h('dl', { class: 'totals' });
  const daily = h('div', { class: 'daily' });
  const dailyTable = tableBox(t('dash.asTable'), t('org.tableOf', { what: t('dash.byDay') }));
  const typesChart = h('div', {});
  const typesTable = tableBox(t('dash.asTable'), t('org.tableOf', { what: t('dash.byType') }));
  const sourcesChart = h('div', {});
  const sourcesTable = tableBox(t('dash.asTable'), t('org.tableOf', { what: t('dash.bySource') }));
  const funnelChart = h('div', {});
  const moneyBox = h('div', {}, spinner());
  let moneyShown = null;
  const updated = h('p', { class: 'hint' });

  const section = (id, title, ...children) =>
    h('section', { class: 'dash-section', 'aria-labelledby': id }, h('h2', { id }, title), children);

  function drawTotals(d) {
    fill(totalsBox, totals(d));
  }

  function drawDaily(byDay) {
    const days = everyDay(byDay).map((d) => ({ ...d, label: dayFormat.format(new Date(`${d.date}T00:00:00Z`)) }));
    if (!days.length) {
      fill(daily, h('p', {}, t('dash.noData')));
      dailyTable.set(t('dash.byDay'), [t('dash.day')], []);
      return;
    }
    const series = [['views', 'dash.views'], ['registrations', 'dash.registrations'], ['checkedIn', 'dash.checkedIn']];
    fill(daily, series.map(([k, key], i) => {
      const total = days.reduce((n, d) => n + d[k], 0);
      return h('figure', { class: 'dash-figure' },
        h('figcaption', {}, t(key), ': ', h('strong', {}, number(total))),
        columns(days.map((d) => ({ label: d.label, value: d[k] })), {
          series: i + 1,
          label: t('dash.dailyLabel', { what: t(key), days: days.length, from: days[0].label, to: days[days.length - 1].label, total: number(total) }),
        }));
    }));
    dailyTable.set(t('dash.byDay'), [t('dash.day'), t('dash.views'), t('dash.registrations'), t('dash.checkedIn')],
      days.map((d) => [d.label, number(d.views), number(d.registrations), number(d.checkedIn)]));
  }

  const typeName = (id) => (id ? names.get(id) || t('dash.otherType') : t('dash.noType'));
  const sourceName = (s) => (s === 'direct' ? t('dash.direct') : s);

  function drawTypes(rows) {
    const series = [t('dash.registrations'), t('dash.checkedIn')];
    fill(typesChart, rows.length
      ? bars(rows.map((r) => ({ label: typeName(r.ticketTypeId), values: [r.registrations, r.checkedIn] })), series)
      : h('p', {}, t('dash.noData')));
    typesTable.set(t('dash.byType'), [t('dash.type'), ...series],
      rows.map((r) => [typeName(r.ticketTypeId), number(r.registrations), number(r.checkedIn)]));
  }

  function drawSources(rows) {
    const series = [t('dash.views'), t('dash.registrations')];
    fill(sourcesChart, rows.length
      ? bars(rows.map((r) => ({ label: sourceName(r.source), values: [r.views, r.registrations] })), series)
      : h('p', {}, t('dash.noData')));
    sourcesTable.set(t('dash.bySource'), [t('dash.source'), ...series],
      rows.map((r) => [sourceName(r.source), number(r.views), number(r.registrations)]));
  }

  function drawFunnel(f) {
    fill(funnelChart,
      funnel([
        { label: t('dash.views'), value: f.views },
        { label: t('dash.started'), value: f.started, rate: f.startRate },
        { label: t('dash.completed'), value: f.completed, rate: f.completionRate },
        { label: t('dash.checkedIn'), value: f.checkedIn, rate: f.attendanceRate },
      ]),
      h('p', { class: 'hint' }, t('dash.funnelRates')));
  }

  // Redrawn only when it changed, so a refresh never takes the focus from its table.
  function drawMoney(lines) {
    const shown = JSON.stringify(lines);
    if (shown === moneyShown) return;
    moneyShown = shown;
    fill(moneyBox, lines.length ? [byCurrency(lines), h('p', { class: 'hint' }, t('money.netHint'))] : h('p', {}, t('money.none')));
  }

  // The money's own failure leaves its last figures (or says why there are none) and the
  // analytics drawn.
  const money = () => api.get(`/events/${event.id}/revenue`, { signal })
    .then((r) => drawMoney(r.currencies || []))
    .catch((e) => {
      if (e.name === 'AbortError' || e.status === 401) throw e;
      if (moneyShown === null) fill(moneyBox, h('p', {}, e.message));
    });

  async function refresh() {
    const [d, f] = await Promise.all([
      api.get(`/analytics/events/${event.id}/dashboard`, { signal }),
      api.get(`/analytics/events/${event.id}/funnel`, { signal }),
      money(),
    ]);
    drawTotals(d);
    drawDaily(d.byDay);
    drawTypes(d.byTicketType);
    drawSources(d.bySource);
    drawFunnel(f);
    updated.textContent = t('dash.updated', { time: timeFormat.format(new Date()) });
  }

  root.replaceChildren(
    h('h1', {}, t('dash.title'), h('span', { class: 'door-event' }, event.title)),
    orgNav(null),
    h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone)), ' · ',
      h('a', { href: `/org/events/${event.id}` }, t('dash.toEvent'))),
    h('p', { class: 'hint' }, t('dash.live')), updated,
    section('dash-totals', t('dash.totals'), totalsBox),
    section('dash-money', t('money.title'), moneyBox),
    section('dash-daily', t('dash.byDay'), daily, dailyTable.el),
    section('dash-types', t('dash.byType'), typesChart, typesTable.el),
    section('dash-sources', t('dash.bySource'), sourcesChart, sourcesTable.el),
    section('dash-funnel', t('dash.funnel'), funnelChart));

  names = await api.get(`/events/${event.id}/ticket-types?size=100`, { signal })
    .then((p) => new Map(p.data.map((x) => [x.id, x.name]))).catch(() => new Map());
  await refresh().catch((e) => {
    if (e.name === 'AbortError' || e.status === 401) throw e;
    updated.textContent = t('dash.stale', { error: e.message });
  });

  // A failed refresh keeps the last figures and says so; the next one may work.
  const tick = () => {
    if (document.hidden) return;
    refresh().catch((e) => {
      if (e.name !== 'AbortError') updated.textContent = t('dash.stale', { error: e.message });
    });
  };
  const timer = setInterval(tick, REFRESH_MS);
  document.addEventListener('visibilitychange', tick);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', tick);
  };
}
