// "/org/events/{id}": one event of the organization: its life cycle, its fields, its cover,
// its ticket types, its registrations (and their refunds) and the export of its figures.
//   GET    /api/v1/events/{id}
//   POST   /api/v1/events/{id}/publish|unpublish|complete|cancel,  DELETE /api/v1/events/{id}
//   PUT    /api/v1/events/{id}                       fields; {coverImageId} for the cover
//   GET    /api/v1/organizations/{tenantId}/groups
//   POST   /api/v1/media/upload (multipart `file`),  GET /api/v1/media/{id}/url?variant=MEDIUM
//   GET    /api/v1/events/{id}/ticket-types?size=100
//   POST   /api/v1/events/{id}/ticket-types,  PUT|DELETE /api/v1/events/{id}/ticket-types/{typeId}
//   GET    /api/v1/events/{id}/registrations?search&status&ticketTypeId&page&size&sort
//   GET    /api/v1/events/{id}/registrations/export?status&ticketTypeId   CSV of every one, saved from a Blob
//   POST   /api/v1/registrations/{id}/check-in, /registrations/{id}/mark-paid,  DELETE /registrations/{id}
//   POST   /api/v1/registrations/{id}/refund   201 the refund; 409 refunded already; 422 nothing paid
//   GET    /api/v1/events/{id}/refunds (staff/refunds.js)
//   POST   /api/v1/analytics/export {eventId, organizationId, dateFrom, dateTo, format}
import { api } from '../api.js';
import { announce, badge, fill, h, setTitle, spinner } from '../dom.js';
import { checkbox, clearErrors, field, form, showErrors, submitButton } from '../forms.js';
import { dateTime, price, when } from '../format.js';
import { navigate } from '../nav.js';
import { eventForm } from '../staff/event-form.js';
import {
  download, fromMinor, imagePicker, invalid, isoToZoned, lifecycle, needOrg, orgNav, pager, scroller, tenantId, toMinor, upload, zonedToIso,
} from '../staff/kit.js';
import { amount } from '../staff/money.js';
import { refundable, refundsSection, whoOf } from '../staff/refunds.js';
import { t, tn } from '../staff/texts.js';

const REG_STATUSES = ['RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN', 'CANCELLED', 'EXPIRED'];
const FINAL = ['CANCELLED', 'COMPLETED'];
const REG_SIZE = 20;

const forTitle = (text) => h('span', { class: 'visually-hidden' }, text);

export default async function orgEvent({ root, params, signal }) {
  setTitle(t('ev.title'));
  if (!needOrg(root, t('ev.title'))) return;
  const id = params.eventId;
  let event = await api.get(`/events/${encodeURIComponent(id)}`, { signal });
  setTitle(event.title);
  if (event.tenantId !== tenantId()) {
    root.replaceChildren(h('h1', {}, event.title),
      h('p', { class: 'notice' }, t('ev.otherOrg'), ' ', h('a', { href: '/org/' }, t('org.chooseOrg'))));
    return;
  }
  const groups = await api.get(`/organizations/${tenantId()}/groups?size=100&sort=name,asc`, { signal })
    .then((p) => p.data).catch(() => []);
  let types = [];

  // ---- Head: status, life cycle, links ----
  const head = h('div', { class: 'event-head' });
  const heading = h('h1', { tabindex: '-1' });
  function drawHead() {
    heading.textContent = event.title;
    setTitle(event.title);
    fill(head,
      h('p', {}, badge(event.status), ' ', h('time', { class: 'meta', datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
      h('p', { class: 'links' },
        h('a', { href: `/org/events/${event.id}/dashboard` }, t('org.dashboard')),
        h('a', { href: `/door/${event.id}` }, t('org.door')),
        // A draft's page is seen by its organizers only: how participants will see it.
        h('a', { href: `/e/${encodeURIComponent(event.slug)}` }, t(event.status === 'DRAFT' ? 'org.preview' : 'org.publicPage'))),
      lifecycle(event, (next) => {
        const wasFinal = FINAL.includes(event.status);
        event = next;
        drawHead();
        if (FINAL.includes(event.status) !== wasFinal) drawEdit();
        (head.querySelector('.lifecycle button') || heading).focus();
      }),
      event.status !== 'PUBLISHED' && h('p', {}, h('button', { type: 'button', class: 'danger', onclick: remove },
        t('ev.delete'), forTitle(`: ${event.title}`))));
  }

  async function remove() {
    if (!window.confirm(t('ev.confirmDelete', { title: event.title }))) return;
    try {
      await api.del(`/events/${event.id}`);
      navigate('/org/events');
      announce(t('ev.deleted', { title: event.title }));
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  // ---- The event's fields ----
  const edit = h('section', { 'aria-labelledby': 'fields-heading' });
  function drawEdit() {
    const final = FINAL.includes(event.status);
    const el = eventForm({
      current: () => event,
      groups,
      prefix: 'edit',
      saved: (next, changed) => {
        event = next;
        drawHead();
        announce(changed ? t('ev.saved') : t('ev.unchanged'));
      },
    });
    if (final) el.querySelectorAll('input, select, textarea, button').forEach((c) => { c.disabled = true; });
    fill(edit, h('h2', { id: 'fields-heading' }, t('ev.fields')), final && h('p', { class: 'hint' }, t('ev.final')), el);
  }

  // ---- Cover ----
  const coverImg = h('img', { class: 'cover-preview', alt: '', hidden: true });
  const coverNote = h('p', { class: 'hint' });
  function showCover(src, note) {
    coverImg.hidden = !src;
    if (src) coverImg.src = src;
    coverNote.textContent = note;
  }
  async function loadCover() {
    if (!event.coverImageId) { showCover(null, t('cover.none')); return; }
    const url = (v) => api.get(`/media/${event.coverImageId}/url${v}`, { signal });
    try {
      const { url: src } = await url('?variant=MEDIUM').catch(() => url(''));
      showCover(src, t('cover.current'));
    } catch {
      showCover(null, t('cover.unavailable'));
    }
  }
  const picker = imagePicker({
    id: 'cover-file',
    label: t('cover.choose'),
    rules: t('cover.rules'),
    pickFirst: t('cover.pick'),
    formOf: () => coverForm,
    preview: (src) => showCover(src, t('cover.preview')),
    cleared: loadCover,
  });
  const coverForm = form(async (_, el) => {
    const file = picker.file(el);
    announce(t('cover.uploading'));
    const media = await upload(file, signal);
    event = await api.put(`/events/${event.id}`, { coverImageId: media.id });
    el.reset();
    announce(t('cover.set'));
    drawRemoveCover();
    // The picked image is the cover now; the stored one replaces it once its link answers
    // (the original at once, the medium variant when it is made).
    showCover(picker.shown(), t('cover.current'));
    await loadCover();
  }, picker.field, submitButton(t('cover.upload')));
  const removeBox = h('p', {});
  function drawRemoveCover() {
    fill(removeBox, event.coverImageId && h('button', {
      type: 'button',
      onclick: async () => {
        try {
          event = await api.put(`/events/${event.id}`, { coverImageId: null });
          announce(t('cover.removed'));
          drawRemoveCover();
          loadCover();
          coverForm.querySelector('input').focus();
        } catch (e) {
          announce(e.message, 'error');
        }
      },
    }, t('cover.remove')));
  }

  // ---- Ticket types ----
  const typesBox = h('div', {});
  const typeEditor = h('div', {});

  async function loadTypes() {
    types = (await api.get(`/events/${event.id}/ticket-types?size=100`, { signal })).data;
    drawTypes();
    drawTypeFilter();
  }

  function sales(type) {
    if (!type.isActive) return t('tt.inactive');
    const parts = [];
    if (type.salesStart) parts.push(t('tt.from', { date: dateTime(type.salesStart, event.timezone) }));
    if (type.salesEnd) parts.push(t('tt.until', { date: dateTime(type.salesEnd, event.timezone) }));
    return parts.join(', ') || t('tt.onSale');
  }

  function drawTypes() {
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
            h('button', { type: 'button', 'data-edit': type.id, onclick: () => editType(type) }, t('org.edit'), forTitle(`: ${type.name}`)),
            h('button', { type: 'button', class: 'danger', onclick: () => deleteType(type) }, t('org.delete'), forTitle(`: ${type.name}`))))))))
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
      await loadTypes();
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

  function editType(type) {
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

  async function deleteType(type) {
    if (!window.confirm(t('tt.confirmDelete', { name: type.name }))) return;
    try {
      await api.del(`/events/${event.id}/ticket-types/${type.id}`);
      await loadTypes();
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

  // ---- Registrations and their refunds ----
  const refunds = refundsSection(event, signal);
  const regFilter = { search: '', status: '', ticketTypeId: '', page: 0 };
  const regBox = h('div', { class: 'results' });
  const typeSelect = h('div', {});
  function drawTypeFilter() {
    fill(typeSelect, field('ticketTypeId', t('reg.type'), {
      id: 'reg-type', tag: 'select', value: regFilter.ticketTypeId,
      options: [['', t('status.all')], ...types.map((x) => [x.id, x.name])],
    }));
  }
  const regForm = h('form', { class: 'filters', role: 'search', 'aria-label': t('reg.filter') },
    field('search', t('reg.search'), { id: 'reg-search', type: 'search', maxlength: 100, hint: t('reg.searchHint') }),
    field('status', t('reg.status'), {
      id: 'reg-status', tag: 'select', value: '',
      options: [['', t('status.all')], ...REG_STATUSES.map((s) => [s, t(`status.${s}`)])],
    }),
    typeSelect,
    h('button', { type: 'submit' }, t('org.show')));
  regForm.addEventListener('submit', (e) => {
    e.preventDefault();
    regFilter.search = regForm.elements.search.value.trim();
    regFilter.status = regForm.elements.status.value;
    regFilter.ticketTypeId = regForm.elements.ticketTypeId?.value || '';
    regFilter.page = 0;
    loadRegs(true).catch(failed);
  });
  const failed = (e) => { if (e.name !== 'AbortError') announce(e.message, 'error'); };

  // Every registration the filter shown selects (not only this page), as CSV.
  const regDownload = h('button', {
    type: 'button',
    'aria-describedby': 'reg-download-hint',
    onclick: async (e) => {
      const button = e.currentTarget;
      const q = new URLSearchParams();
      if (regFilter.status) q.set('status', regFilter.status);
      if (regFilter.ticketTypeId) q.set('ticketTypeId', regFilter.ticketTypeId);
      const query = String(q);
      button.disabled = true;
      try {
        announce(t('export.preparing'));
        await download(`/events/${event.id}/registrations/export${query ? `?${query}` : ''}`, null,
          `bilet-registrations-${event.id}.csv`);
        announce(t('export.done'));
      } catch (err) {
        announce(err.message, 'error');
      } finally {
        button.disabled = false;
      }
    },
  }, t('reg.download'));

  // `message` a text, or made of the answer; `after` reloads more than the registrations.
  async function regAction(call, message, after) {
    try {
      const answer = await call();
      announce(typeof message === 'function' ? message(answer) : message);
      await Promise.all([loadRegs(false), after?.()]);
      regBox.querySelector('[role=region]')?.focus();
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  function regActions(r) {
    const who = whoOf(r);
    return h('td', { class: 'row-actions' },
      r.status === 'CONFIRMED' && h('button', {
        type: 'button',
        onclick: () => regAction(() => api.post(`/registrations/${r.id}/check-in`, { method: 'MANUAL' }), t('reg.checkedIn', { who })),
      }, t('reg.checkIn'), forTitle(`: ${who}`)),
      ['RESERVED', 'PENDING'].includes(r.status) && h('button', {
        type: 'button',
        onclick: () => {
          if (window.confirm(t('reg.confirmPaid', { who, price: price(r.priceCents, r.currency) }))) {
            regAction(() => api.post(`/registrations/${r.id}/mark-paid`), t('reg.paid', { who }));
          }
        },
      }, t('reg.markPaid'), forTitle(`: ${who}`)),
      // A held seat is freed; the money goes back through the provider it came by.
      refundable(r) && h('button', {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (window.confirm(t('refunds.confirm', { who }))) {
            regAction(() => api.post(`/registrations/${r.id}/refund`),
              (f) => t('refunds.done', { who, amount: amount(f.amountCents, f.currency) }), () => refunds.load(false));
          }
        },
      }, t('refunds.refund'), forTitle(`: ${who}`)),
      ['RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'].includes(r.status) && h('button', {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (window.confirm(t('reg.confirmCancel', { who }))) regAction(() => api.del(`/registrations/${r.id}`), t('reg.cancelled', { who }));
        },
      }, t('reg.cancel'), forTitle(`: ${who}`)));
  }

  async function loadRegs(tell) {
    const q = new URLSearchParams({ page: regFilter.page, size: REG_SIZE, sort: 'createdAt,desc' });
    if (regFilter.search) q.set('search', regFilter.search);
    if (regFilter.status) q.set('status', regFilter.status);
    if (regFilter.ticketTypeId) q.set('ticketTypeId', regFilter.ticketTypeId);
    regBox.setAttribute('aria-busy', 'true');
    const page = await api.get(`/events/${event.id}/registrations?${q}`, { signal })
      .finally(() => regBox.removeAttribute('aria-busy'));
    const typeName = new Map(types.map((x) => [x.id, x.name]));
    page.data.forEach((r) => refunds.names.set(r.id, whoOf(r)));
    fill(regBox,
      h('p', { class: 'count' }, tn('reg.found', page.totalElements)),
      page.data.length ? scroller(t('reg.title'), h('table', {},
        h('caption', { class: 'visually-hidden' }, t('reg.title')),
        h('thead', {}, h('tr', {}, [t('reg.who'), t('reg.type'), t('reg.status'), t('reg.code'), t('tt.price'), t('reg.when'), t('reg.source'), t('org.actions')]
          .map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, page.data.map((r) => h('tr', {},
          h('th', { scope: 'row' }, `${r.firstName} ${r.lastName}`.trim() || '—', r.email && h('span', { class: 'sub' }, r.email)),
          h('td', {}, typeName.get(r.ticketTypeId) || '—'),
          h('td', {}, badge(r.status)),
          h('td', {}, r.confirmationCode ? h('code', {}, r.confirmationCode) : '—'),
          h('td', {}, price(r.priceCents, r.currency)),
          h('td', {}, dateTime(r.createdAt, event.timezone)),
          h('td', {}, r.source || '—'),
          regActions(r)))))) : h('p', {}, t('reg.none')),
      pager(page, (p) => { regFilter.page = p; loadRegs(false).then(() => regBox.querySelector('.count').focus()).catch(failed); }));
    regBox.querySelector('.count').tabIndex = -1;
    if (tell) announce(tn('reg.found', page.totalElements));
  }

  // ---- Export ----
  const day = (d) => d.toLocaleDateString('sv');
  const yearAgo = new Date(Date.now() - 365 * 864e5);
  const created = new Date(event.createdAt);
  const exportForm = h('form', { novalidate: true, class: 'export' },
    h('div', { class: 'row' },
      field('dateFrom', t('export.from'), { id: 'ex-from', type: 'date', value: day(created > yearAgo ? created : yearAgo) }),
      field('dateTo', t('export.to'), { id: 'ex-to', type: 'date', value: day(new Date(Date.now() + 864e5)), hint: t('export.toHint') })),
    h('div', { class: 'actions' }, ['csv', 'xlsx'].map((format) => h('button', {
      type: 'button',
      onclick: async (e) => {
        const button = e.currentTarget;
        clearErrors(exportForm);
        const { dateFrom, dateTo } = Object.fromEntries(new FormData(exportForm));
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
          showErrors(exportForm, err);
        } finally {
          button.disabled = false;
        }
      },
    }, t(`export.${format}`)))),
    h('div', { class: 'form-error', role: 'alert' }));

  // ---- The page ----
  drawTypeFilter();
  drawHead();
  drawEdit();
  drawRemoveCover();
  root.replaceChildren(
    heading, orgNav(null), head,
    edit,
    h('section', { 'aria-labelledby': 'cover-title' },
      h('h2', { id: 'cover-title' }, t('cover.title')), coverImg, coverNote, coverForm, removeBox),
    h('section', { 'aria-labelledby': 'tt-title' },
      h('h2', { id: 'tt-title' }, t('tt.title')), typesBox, typeEditor,
      h('section', { class: 'card', 'aria-labelledby': 'tt-new-title' }, h('h3', { id: 'tt-new-title' }, t('tt.new')), newType)),
    h('section', { 'aria-labelledby': 'reg-title' },
      h('h2', { id: 'reg-title' }, t('reg.title')), regForm,
      h('div', { class: 'actions' }, regDownload, h('p', { class: 'hint', id: 'reg-download-hint' }, t('reg.downloadHint'))),
      regBox),
    refunds.el,
    h('section', { 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title' }, t('export.title')), h('p', { class: 'hint' }, t('export.what')), exportForm));
  typesBox.replaceChildren(spinner());
  regBox.replaceChildren(spinner());
  await Promise.all([
    loadTypes().catch((e) => { if (e.name !== 'AbortError') typesBox.replaceChildren(h('p', {}, e.message)); }),
    loadCover(),
  ]);
  await loadRegs(false).catch((e) => { if (e.name !== 'AbortError') regBox.replaceChildren(h('p', {}, e.message)); });
  // After the registrations, whose names it then need not ask for.
  await refunds.load(false).catch(() => {});
  return picker.release;
}
