// "/docs": the API reference, drawn from the server's OpenAPI document.
//   GET /api/v1/openapi.json
// The page's own texts are in lang/docs.{ru,en}.js; the document's texts (summaries,
// descriptions) are shown as they come, marked as English, the language they are written in.
import { api } from '../api.js';
import { fill, h, hidden, setTitle } from '../dom.js';
import { content, fields, groups, matches, resolve, slug, target, typeLabel, values } from '../openapi.js';
import { loadTexts, t, tn } from '../staff/texts.js';

const SOURCE = '/openapi.json';
const DOC_LANG = 'en';
let cached = null; // kept for a language switch

const apiText = (tag, text, cls) => text && h(tag, { lang: DOC_LANG, class: cls }, text);
// A type, and the values of the enum it names.
const type = (label, list) => [h('code', {}, label || '—'),
  list && h('span', { class: 'values' }, t('docs.values'), ' ', list.map((v, i) => [i ? ', ' : '', h('code', {}, String(v))]))];
// "GET /api/v1/events", the method in a coloured box.
const signature = (e) => [h('span', { class: `method method-${e.method}` }, e.method.toUpperCase()), ' ', h('code', {}, e.path)];
// A name, marked in words when required (a column of its own would not fit a phone).
const named = (text, required) => [h('code', {}, text), required && h('span', { class: 'required' }, t('docs.requiredMark'))];

function table(caption, head, rows) {
  return h('table', { class: 'api' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, head.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows));
}

const fieldTable = (caption, rows) => table(caption,
  [t('docs.name'), t('docs.type'), t('docs.description')],
  rows.map((r) => h('tr', { class: r.depth ? 'nested' : null },
    h('th', { scope: 'row' }, named(r.name, r.required)),
    h('td', {}, type(r.type, r.values), r.cycle && ` ${t('docs.recursive')}`),
    h('td', { lang: DOC_LANG }, r.description))));

function requestBody(doc, e) {
  const c = content(doc, e.body);
  if (!c) return null;
  const rows = fields(doc, c.schema);
  return [
    h('h4', {}, t('docs.body')),
    h('p', {}, h('code', {}, typeLabel(c.schema) || '—'), ' · ', h('code', {}, c.type), ' · ',
      e.body.required ? t('docs.requiredMark') : t('docs.bodyOptional')),
    apiText('p', e.body.description || target(doc, c.schema).schema?.description, 'description'),
    rows.length > 0 && fieldTable(t('docs.fieldsOf', { name: typeLabel(c.schema) }), rows),
  ];
}

function operation(doc, e) {
  const { op } = e;
  const name = `${e.method.toUpperCase()} ${e.path}`;
  const responses = Object.entries(op.responses || {});
  return h('section', { class: 'op', 'aria-labelledby': e.id },
    h('h3', { id: e.id, tabindex: '-1' }, signature(e)),
    h('p', { class: 'op-link' }, h('a', { href: `#${e.id}` }, t('docs.link'), hidden(` ${name}`)),
      op.deprecated && h('span', { class: 'badge badge-cancelled' }, t('docs.deprecated'))),
    apiText('p', op.summary, 'summary'),
    op.description !== op.summary && apiText('p', op.description, 'description'),
    e.params.length > 0 && [h('h4', {}, t('docs.params')), table(t('docs.paramsOf', { op: name }),
      [t('docs.name'), t('docs.in'), t('docs.type'), t('docs.description')],
      e.params.map((p) => h('tr', {},
        h('th', { scope: 'row' }, named(p.name, p.required)),
        h('td', {}, p.in),
        h('td', {}, type(typeLabel(p.schema), values(doc, p.schema))),
        h('td', { lang: DOC_LANG }, p.description || ''))))],
    requestBody(doc, e),
    responses.length > 0 && [h('h4', {}, t('docs.responses')), table(t('docs.responsesOf', { op: name }),
      [t('docs.status'), t('docs.description'), t('docs.schema')],
      responses.map(([status, r]) => {
        const c = content(doc, r);
        return h('tr', {},
          h('th', { scope: 'row' }, status),
          h('td', { lang: DOC_LANG }, resolve(doc, r)?.description || ''),
          h('td', {}, c ? [h('code', {}, typeLabel(c.schema) || '—'), ' ', h('span', { class: 'hint' }, c.type)] : '—'));
      }))]);
}

export default async function docs({ root, query, signal }) {
  const [doc] = await Promise.all([cached || api.get(SOURCE, { signal }), loadTexts(['docs'])]);
  cached = doc;
  setTitle(t('docs.title'));
  const view = groups(doc, t('docs.other'));
  const total = view.reduce((n, g) => n + g.ops.length, 0);

  const toc = h('ul', {}, view.map((g) => (g.toc = h('li', {},
    h('a', { href: `#tag-${slug(g.name)}` }, g.name),
    h('ul', {}, g.ops.map((e) => (e.toc = h('li', {},
      h('a', { href: `#${e.id}` }, signature(e))))))))));
  const sections = view.map((g) => (g.el = h('section', { class: 'api-tag', 'aria-labelledby': `tag-${slug(g.name)}` },
    h('h2', { id: `tag-${slug(g.name)}`, tabindex: '-1' }, g.name),
    apiText('p', g.description),
    g.ops.map((e) => (e.el = operation(doc, e))),
    h('p', {}, h('a', { href: '#docs-toc' }, t('docs.toToc'))))));

  const count = h('p', { id: 'docs-count', class: 'hint', 'aria-live': 'polite' });
  const none = h('p', { hidden: true }, t('docs.none'));
  const input = h('input', { type: 'search', id: 'docs-filter', value: query.get('q') || '', 'aria-describedby': 'docs-filter-hint docs-count', autocomplete: 'off', oninput: () => apply(true) });
  let timer = null;
  function apply(typed) {
    const q = input.value.trim();
    let shown = 0;
    for (const g of view) {
      const before = shown;
      for (const e of g.ops) shown += !(e.el.hidden = e.toc.hidden = !matches(e, q));
      g.el.hidden = g.toc.hidden = shown === before;
    }
    none.hidden = shown > 0;
    clearTimeout(timer);
    // Counted once typing pauses, so a screen reader hears one number, not one per key.
    timer = setTimeout(() => fill(count, q ? tn('docs.shown', shown, { total }) : tn('docs.count', total)), typed ? 400 : 0);
    if (typed) history.replaceState(history.state, '', `${location.pathname}${q ? `?q=${encodeURIComponent(q)}` : ''}${location.hash}`);
  }

  const info = doc.info || {};
  fill(root,
    h('h1', {}, t('docs.title')),
    h('p', {}, apiText('strong', info.title), info.version && ` ${t('docs.version', { v: info.version })}`, ' · ',
      h('a', { href: `/api/v1${SOURCE}` }, t('docs.json'))),
    apiText('p', info.description, 'description'),
    h('form', { role: 'search', class: 'docs-filter', onsubmit: (ev) => ev.preventDefault() },
      h('div', { class: 'field' },
        h('label', { for: 'docs-filter' }, t('docs.filter')),
        h('p', { id: 'docs-filter-hint', class: 'hint' }, t('docs.filterHint')),
        input),
      count),
    none,
    h('nav', { class: 'toc', 'aria-labelledby': 'docs-toc' }, h('h2', { id: 'docs-toc', tabindex: '-1' }, t('docs.contents')), toc),
    sections);
  apply(false);

  // The fragment of an operation: found once drawn (after the router's focus on <h1>),
  // and again when an in-page link changes it.
  const jump = () => {
    let el = null;
    try {
      el = location.hash.length > 1 && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    } catch { /* a malformed %-escape names nothing */ }
    if (!el || !root.contains(el)) return;
    el.scrollIntoView();
    el.focus({ preventScroll: true });
  };
  const first = setTimeout(jump, 0);
  window.addEventListener('hashchange', jump);
  return () => {
    clearTimeout(first);
    clearTimeout(timer);
    window.removeEventListener('hashchange', jump);
  };
}
