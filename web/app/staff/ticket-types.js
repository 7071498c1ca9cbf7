// An event's ticket types as its organizer manages them (a section of /org/events/{id}): the
// table with each type's figures, its editor, and the form of a new type.
//   GET    /api/v1/events/{id}/ticket-types?size=100
//   POST   /api/v1/events/{id}/ticket-types,  PUT|DELETE /api/v1/events/{id}/ticket-types/{typeId}
import { api } from '../api.js';
import { announce, fill, h, hidden } from '../dom.js';
import { checkbox, field, form, submitButton } from '../forms.js';
import { dateTime, price } from '../format.js';
import { fromMinor, invalid, isoToZoned, scroller, toMinor, zonedToIso } from './kit.js';
import { t } from './texts.js';

// The types of an event, for the sections that only read them (filters, type names).
export const ticketTypes = (eventId, signal) =>
  api.get(`/events/${eventId}/ticket-types?size=100`, { signal }).then((p) => p.data);

// The section: `el` to place, `load()` to read the types and draw them.
export function ticketTypesSection(event, signal) {
  let types = [];
  const typesBox = h('div', {});
  const typeEditor = h('div', {});

  async function load() {
    types = await ticketTypes(event.id, signal);
    draw();
  }

  function sales(type) {
    if (!type.isActive) return t('tt.inactive');
    const parts = [];
    if (type.salesStart) parts.push(t('tt.from', { date: dateTime(type.salesStart, event.timezone) }));
    if (type.salesEnd) parts.push(t('tt.until', { date: dateTime(type.salesEnd, event.timezone) }));
    return parts.join(', ') || t('tt.onSale');
  }

  function draw() {
    fill(typesBox, types.length
      ? scroller(t('tt.title'), h('table', {},
        h('caption', { class: 'visually-hidden' }, t('tt.title')),
        h('thead', {}, h('tr', {}, [t('tt.name'), t('tt.price'), t('tt.quantity'), t('tt.sold'), t('tt.reserved'), t('tt.available'), t('tt.sales'), t('org.actions')]
          .map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, types.map((type) => h('tr', {},
          h('th', { scope: 'row' }, type.name),
          h('td', {}, price(type.priceCents, type.currency)),
          h('td', { class: 'num' }, type.quantity),
          h('td', { class: 'num' }, type.soldCount),
          h('td', { class: 'num' }, type.reservedCount),
          h('td', { class: 'num' }, type.available),
          h('td', {}, sales(type)),
          h('td', { class: 'row-actions' },
            h('button', { type: 'button', 'data-edit': type.id, onclick: () => edit(type) }, t('org.edit'), hidden(`: ${type.name}`)),
            h('button', { type: 'button', class: 'danger', onclick: () => remove(type) }, t('org.delete'), hidden(`: ${type.name}`))))))))
      : h('p', {}, t('tt.none')));
  }

  function typeForm(type, prefix, done) {
    const id = (n) => `${prefix}-${n}`;
    const tz = event.timezone;
    const currency = type?.currency || 'RUB';
    return form(async (data) => {
      const cur = (data.currency || 'RUB').trim().toUpperCase();
      const num = (v) => (String(v).trim() === '' ? null : Number(v));
      const body = {
        name: data.name.trim(),
        description: data.description,
        priceCents: toMinor(data.priceCents, cur),
        currency: cur,
        quantity: num(data.quantity),
        reservationMinutes: num(data.reservationMinutes),
        prepaymentPercent: num(data.prepaymentPercent) ?? 100,
        salesStart: zonedToIso(data.salesStart, tz),
        salesEnd: zonedToIso(data.salesEnd, tz),
        sortOrder: num(data.sortOrder) ?? 0,
        isActive: data.isActive === 'on',
      };
      const bad = {};
      if (!body.name) bad.name = t('org.required');
      if (!Number.isInteger(body.priceCents) || body.priceCents < 0) bad.priceCents = t('tt.badPrice');
      for (const k of ['quantity', 'reservationMinutes', 'prepaymentPercent', 'sortOrder']) {
        if (body[k] !== null && !Number.isInteger(body[k])) bad[k] = t('org.wholeNumber');
      }
      if (body.quantity === null) bad.quantity = t('org.required');
      if (Object.keys(bad).length) throw invalid(bad);
      const saved = type
        ? await api.put(`/events/${event.id}/ticket-types/${type.id}`, body)
        : await api.post(`/events/${event.id}/ticket-types`, body);
      await load();
      done(saved);
    },
    field('name', t('tt.name'), { id: id('name'), value: type?.name || '', maxlength: 255, required: true }),
    field('description', t('tt.description'), { id: id('description'), tag: 'textarea', rows: 2, value: type?.description || '' }),
    h('div', { class: 'row' },
      field('priceCents', t('tt.priceMajor'), { id: id('priceCents'), inputmode: 'decimal', value: type ? fromMinor(type.priceCents, currency) : '0', hint: t('tt.priceHint') }),
      field('currency', t('tt.currency'), { id: id('currency'), value: currency, maxlength: 3, autocapitalize: 'characters', size: 4 }),
      field('quantity', t('tt.quantity'), { id: id('quantity'), type: 'number', min: 1, step: 1, value: type?.quantity ?? '', required: true })),
    h('div', { class: 'row' },
      field('reservationMinutes', t('tt.reservationMinutes'), { id: id('reservationMinutes'), type: 'number', min: 1, step: 1, value: type?.reservationMinutes ?? '', hint: t('tt.reservationHint') }),
      field('prepaymentPercent', t('tt.prepayment'), { id: id('prepaymentPercent'), type: 'number', min: 0, max: 100, step: 1, value: type?.prepaymentPercent ?? 100 }),
      field('sortOrder', t('tt.sortOrder'), { id: id('sortOrder'), type: 'number', step: 1, value: type?.sortOrder ?? types.length })),
    h('div', { class: 'row' },
      field('salesStart', t('tt.salesStart'), { id: id('salesStart'), type: 'datetime-local', value: isoToZoned(type?.salesStart, tz), hint: t('tt.clock', { zone: tz }) }),
      field('salesEnd', t('tt.salesEnd'), { id: id('salesEnd'), type: 'datetime-local', value: isoToZoned(type?.salesEnd, tz), hint: t('tt.clock', { zone: tz }) })),
    checkbox('isActive', t('tt.active'), type ? type.isActive : true, id('isActive')),
    h('div', { class: 'actions' },
      submitButton(type ? t('org.save') : t('tt.add')),
      type && h('button', { type: 'button', onclick: () => done(null) }, t('org.cancelEdit'))));
  }

  function edit(type) {
    const back = () => typesBox.querySelector(`[data-edit="${type.id}"]`)?.focus();
    const el = typeForm(type, 'tt-edit', (saved) => {
      typeEditor.replaceChildren();
      if (saved) announce(t('tt.saved', { name: saved.name }));
      back();
    });
    typeEditor.replaceChildren(h('section', { class: 'card editor', 'aria-labelledby': 'tt-edit-title' },
      h('h3', { id: 'tt-edit-title' }, t('tt.editing', { name: type.name })), el));
    el.querySelector('input').focus();
  }

  async function remove(type) {
    if (!window.confirm(t('tt.confirmDelete', { name: type.name }))) return;
    try {
      await api.del(`/events/${event.id}/ticket-types/${type.id}`);
      await load();
      // A type with sales is retired rather than deleted: off sale, kept for its tickets.
      announce(types.some((x) => x.id === type.id) ? t('tt.retired', { name: type.name }) : t('tt.deleted', { name: type.name }));
      typesBox.querySelector('button')?.focus();
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  const newType = typeForm(null, 'tt-new', (saved) => {
    newType.reset();
    announce(t('tt.created', { name: saved.name }));
    newType.querySelector('input').focus();
  });

  const el = h('section', { 'aria-labelledby': 'tt-title' },
    h('h2', { id: 'tt-title' }, t('tt.title')), typesBox, typeEditor,
    h('section', { class: 'card', 'aria-labelledby': 'tt-new-title' }, h('h3', { id: 'tt-new-title' }, t('tt.new')), newType));
  return { el, load, box: typesBox };
}
