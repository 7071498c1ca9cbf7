// Charts drawn as inline SVG, no library: columns (a series by day), horizontal bars (a few
// series by category), and a funnel. Every figure is also printed as text or in a table, so
// the colours and shapes are never the only way to read it. Colours come from style.css.
import { h } from '../dom.js';
import { lang } from '../i18n.js';
import { t } from './texts.js';

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) el.setAttribute(k, v);
  for (const c of children.flat(Infinity)) if (c != null && c !== false) el.append(c);
  return el;
}

export const number = (n) => new Intl.NumberFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB').format(n);
export const percent = (r) => new Intl.NumberFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { style: 'percent', maximumFractionDigits: 1 }).format(r);

// The figures every analytics answer carries (the dashboard's and the report's totals), as
// the term–value pairs of a <dl>.
export const totals = (d) => [
  ['dash.views', number(d.totalViews)],
  ['dash.uniqueViews', number(d.uniqueViews)],
  ['dash.registrations', number(d.totalRegistrations)],
  ['dash.confirmed', number(d.confirmedRegistrations)],
  ['dash.checkedIn', number(d.checkedIn)],
  ['dash.viewToRegistration', percent(d.viewToRegistrationRate)],
  ['dash.registrationToCheckin', percent(d.registrationToCheckinRate)],
].map(([key, value]) => h('div', {}, h('dt', {}, t(key)), h('dd', {}, value)));

// One series over days: points [{label, value}], oldest first. `label` names the chart for
// assistive technology (its figures are in the table next to it).
export function columns(points, { label, series = 1, max: fixed } = {}) {
  const max = fixed ?? Math.max(1, ...points.map((p) => p.value));
  const w = Math.max(points.length, 1) * 10;
  const svg = s('svg', {
    class: `chart chart-columns series-${series}`, viewBox: `0 0 ${w} 100`, preserveAspectRatio: 'none',
    role: 'img', 'aria-label': label, focusable: 'false',
  },
  s('line', { class: 'axis', x1: 0, y1: 99.5, x2: w, y2: 99.5, 'vector-effect': 'non-scaling-stroke' }),
  points.map((p, i) => {
    const height = p.value ? Math.max(1.5, (p.value / max) * 96) : 0;
    return s('rect', { x: i * 10 + 1.5, y: 99 - height, width: 7, height }, s('title', {}, `${p.label}: ${number(p.value)}`));
  }));
  return h('div', { class: 'plot' },
    h('div', { class: 'plot-max', 'aria-hidden': 'true' }, number(max)),
    svg,
    points.length > 0 && h('div', { class: 'plot-axis', 'aria-hidden': 'true' },
      h('span', {}, points[0].label), points.length > 1 && h('span', {}, points[points.length - 1].label)));
}

// Categories with one or more series on a shared scale: rows [{label, values: [n, …]}],
// series [name, …]. The numbers are printed beside the bars.
export function bars(rows, series) {
  const max = Math.max(1, ...rows.flatMap((r) => r.values));
  return h('div', { class: 'bars' },
    series.length > 1 && h('ul', { class: 'legend' }, series.map((name, i) => h('li', {},
      s('svg', { class: `swatch series-${i + 1}`, viewBox: '0 0 10 10', 'aria-hidden': 'true', focusable: 'false' }, s('rect', { width: 10, height: 10 })),
      name))),
    h('ul', { class: 'bar-rows' }, rows.map((r) => h('li', {},
      h('span', { class: 'bar-label' }, r.label),
      r.values.map((v, i) => h('span', { class: 'bar-line' },
        s('svg', { class: `chart series-${i + 1}`, viewBox: '0 0 100 10', preserveAspectRatio: 'none', 'aria-hidden': 'true', focusable: 'false' },
          s('rect', { width: v ? Math.max(0.5, (v / max) * 100) : 0, height: 10 })),
        h('span', { class: 'bar-value' }, series.length > 1 && h('span', { class: 'visually-hidden' }, `${series[i]}: `), number(v))))))));
}

// Stages [{label, value, rate?}] drawn as bars centred on one axis, narrowing like a funnel;
// `rate` (of the stage before) is printed after the value.
export function funnel(stages) {
  const max = Math.max(1, ...stages.map((x) => x.value));
  return h('ol', { class: 'funnel' }, stages.map((x) => {
    const w = x.value ? Math.max(0.5, (x.value / max) * 100) : 0;
    return h('li', {},
      h('span', { class: 'bar-label' }, x.label),
      s('svg', { class: 'chart series-1', viewBox: '0 0 100 10', preserveAspectRatio: 'none', 'aria-hidden': 'true', focusable: 'false' },
        s('rect', { x: (100 - w) / 2, width: w, height: 10 })),
      h('span', { class: 'bar-value' }, number(x.value), x.rate != null && ` (${percent(x.rate)})`));
  }));
}

// The figures of a chart as a table, behind a disclosure that keeps its state across redraws;
// `region` names its scrolling box (apart from the section the chart is in).
export function tableBox(summary, region) {
  const body = h('div', {});
  const details = h('details', { class: 'as-table' }, h('summary', {}, summary), body);
  return {
    el: details,
    set(caption, headers, rows) {
      body.replaceChildren(h('div', { class: 'scroller', role: 'region', 'aria-label': region, tabindex: '0' },
        h('table', {},
          h('caption', {}, caption),
          h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', {}, rows.map(([first, ...rest]) => h('tr', {},
            h('th', { scope: 'row' }, first), rest.map((x) => h('td', { class: 'num' }, x))))))));
    },
  };
}
