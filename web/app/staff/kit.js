// What the organizer, administrator and door pages share: the organization of the token,
// the organization's events, paging buttons, times on an event's clock, money in minor
// units, uploads and downloads that are not JSON, and the events' life-cycle buttons. The
// profile page takes its image picker and upload too (a participant page, but not the event
// page, whose budget must not carry this module).
import { api } from '../api.js';
import { announce, h } from '../dom.js';
import { download, fetchRaw } from '../download.js';
import { clearErrors, field, showErrors } from '../forms.js';
import * as session from '../session.js';
import { t } from './texts.js';

// ---- Who is acting --------------------------------------------------------

// The organization chosen with "switch" (the token's tenantId), and the roles there.
export const tenantId = () => session.claims()?.tenantId || null;
export const roles = () => session.claims()?.roles || [];
// Platform administrators are marked on the user of the sign-in answer, not in the token.
export const isAdmin = () => Boolean(session.user()?.platformAdmin);

// Draws "choose an organization first" when the token has none; false then.
export function needOrg(root, title) {
  if (tenantId()) return true;
  root.replaceChildren(h('h1', {}, title),
    h('p', { class: 'notice' }, t('org.noOrg'), ' ', h('a', { href: '/org/' }, t('org.chooseOrg'))));
  return false;
}

// The links between the organizer's pages.
export function orgNav(current) {
  const links = [
    ['/org/events', t('org.events')], ['/org/report', t('org.report')], ['/org/members', t('org.members')],
    ['/org/settings', t('org.settings')], ['/org/', t('org.orgs')], ['/door/', t('org.door')],
  ];
  return h('nav', { class: 'subnav', 'aria-label': t('org.section') }, h('ul', {},
    links.map(([href, label]) => h('li', {}, h('a', { href, 'aria-current': href === current ? 'page' : null }, label)))));
}

// A switch answers a new access token for the organization; the refresh token stays (the
// session remembers the organization, so the next refresh keeps it).
export async function switchTo(orgId) {
  const access = await api.post(`/organizations/${orgId}/switch`);
  session.save({ accessToken: access.accessToken, refreshToken: session.refreshToken() });
  return access;
}

// ---- The organization's events ------------------------------------------

// One page of the organization's events: GET /events?organizationId= shows the members of
// the token's organization its events of every status (and only those), paged like every
// list: {data, page, totalPages, totalElements, hasNext, hasPrevious}.
export function orgEvents({ status, startsAfter, sort = 'startsAt,desc', page = 0, size = 20, signal } = {}) {
  const q = new URLSearchParams({ organizationId: tenantId(), page, size, sort });
  if (status) q.set('status', status);
  if (startsAfter) q.set('startsAfter', startsAfter);
  return api.get(`/events?${q}`, { signal });
}

// Which life-cycle actions an event offers now (domain/src/events/lifecycle.rs): a draft is
// published only before its start; cancelled and completed events are final.
export function actionsFor(event, now = Date.now()) {
  switch (event.status) {
    case 'DRAFT': return [...(Date.parse(event.startsAt) > now ? ['publish'] : []), 'cancel'];
    case 'PUBLISHED': return ['unpublish', 'complete', 'cancel'];
    default: return [];
  }
}

const CONFIRM = { cancel: 'lifecycle.confirmCancel', complete: 'lifecycle.confirmComplete' };

// The buttons of an event's allowed transitions; `changed(event)` gets the new event.
export function lifecycle(event, changed) {
  const box = h('div', { class: 'actions lifecycle' });
  for (const action of actionsFor(event)) {
    const button = h('button', {
      type: 'button',
      class: action === 'cancel' ? 'danger' : action === 'publish' ? 'primary' : null,
      onclick: async () => {
        if (CONFIRM[action] && !window.confirm(t(CONFIRM[action], { title: event.title }))) return;
        button.disabled = true;
        try {
          const next = await api.post(`/events/${event.id}/${action}`);
          announce(t(`lifecycle.done.${action}`, { title: next.title }));
          changed(next);
        } catch (e) {
          button.disabled = false;
          announce(e.message, 'error');
        }
      },
    }, t(`lifecycle.${action}`), h('span', { class: 'visually-hidden' }, `: ${event.title}`));
    box.append(button);
  }
  return box;
}

// A refusal found before asking the server, drawn like its validation errors (forms.js).
export const invalid = (details) =>
  Object.assign(new Error(t('form.fixFields')), { code: 'validation_error', details });

// ---- Images ---------------------------------------------------------------

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'];
const MAX_IMAGE = 5 * 1024 * 1024;
const fits = (file) => IMAGE_TYPES.includes(file.type) && file.size <= MAX_IMAGE;

// A file field for an image (a cover, a logo), checked and previewed before any upload:
// `preview(url)` gets a good pick's object URL, `cleared()` runs when the pick is removed, and
// a bad pick shows `rules` on the field of `formOf()`. `file(form)` is the picked file or the
// field's error, `shown()` the preview's URL, `release()` frees it.
export function imagePicker({ id, label, rules, pickFirst, formOf, preview, cleared }) {
  let chosen = null;
  const release = () => {
    if (chosen) URL.revokeObjectURL(chosen);
    chosen = null;
  };
  const input = field('file', label, {
    id, type: 'file', accept: IMAGE_TYPES.join(','), hint: rules,
    onchange: (e) => {
      const file = e.target.files[0];
      clearErrors(formOf());
      release();
      if (!file) { cleared(); return; }
      if (!fits(file)) {
        showErrors(formOf(), invalid({ file: rules }));
        return;
      }
      chosen = URL.createObjectURL(file);
      preview(chosen);
    },
  });
  return {
    field: input,
    file(form) {
      const file = form.elements.file.files[0];
      if (!file) throw invalid({ file: pickFirst });
      if (!fits(file)) throw invalid({ file: rules });
      return file;
    },
    shown: () => chosen,
    release,
  };
}

// ---- Lists ----------------------------------------------------------------

// Previous / next buttons for a page object {page, totalPages, hasNext, hasPrevious}.
export function pager(p, go) {
  if (!p || p.totalPages <= 1) return null;
  return h('nav', { class: 'pager', 'aria-label': t('paging.label') },
    h('button', { type: 'button', disabled: !p.hasPrevious, onclick: () => go(p.page - 1) }, t('paging.prev')),
    h('span', {}, t('paging.of', { page: p.page + 1, pages: p.totalPages })),
    h('button', { type: 'button', disabled: !p.hasNext, onclick: () => go(p.page + 1) }, t('paging.next')));
}

// A wide table scrolls sideways on a phone; the keyboard can scroll it too.
export const scroller = (label, table) =>
  h('div', { class: 'scroller', role: 'region', 'aria-label': t('org.tableOf', { what: label }), tabindex: '0' }, table);

export function copyButton(text, label) {
  const button = h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        announce(t('org.copied'));
      } catch {
        announce(t('org.copyFailed'), 'error');
      }
    },
  }, label);
  return button;
}

// ---- Time on the event's clock ------------------------------------------

export const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
export const zones = () => Intl.supportedValuesOf?.('timeZone') || [];

function wallClock(ms, timeZone) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(ms);
  const v = Object.fromEntries(parts.map((p) => [p.type, p.value]));
  return { ...v, utc: Date.UTC(+v.year, v.month - 1, +v.day, +v.hour, +v.minute, +v.second) };
}

const safeZone = (tz) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return tz;
  } catch {
    return 'UTC';
  }
};

// "2025-07-12T19:00" read on the clock of `timeZone` → the ISO instant; '' → null.
export function zonedToIso(local, timeZone) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(local || '');
  if (!m) return local ? local : null; // let the server say what is wrong with it
  const tz = safeZone(timeZone);
  const guess = Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5]);
  let ms = guess - (wallClock(guess, tz).utc - guess);
  ms = guess - (wallClock(ms, tz).utc - ms); // once more across a change of offset
  return new Date(ms).toISOString();
}

// The ISO instant → "2025-07-12T19:00" on the clock of `timeZone`, for datetime-local inputs.
export function isoToZoned(iso, timeZone) {
  if (!iso) return '';
  const v = wallClock(Date.parse(iso), safeZone(timeZone));
  return `${v.year}-${v.month}-${v.day}T${v.hour}:${v.minute}`;
}

// ---- Money ----------------------------------------------------------------

const digits = (currency) => {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits;
  } catch {
    return 2;
  }
};

// "1 500,50" → 150050 (kopecks); NaN when it is no amount.
export function toMinor(text, currency) {
  const s = String(text ?? '').replace(/\s/g, '').replace(',', '.');
  if (s === '') return 0;
  if (!/^\d+(\.\d+)?$/.test(s)) return Number.NaN;
  return Math.round(Number(s) * 10 ** digits(currency));
}

export const fromMinor = (cents, currency) => (cents / 10 ** digits(currency)).toFixed(digits(currency));

// ---- Requests that are not JSON -------------------------------------------
// The bearer-token fetch and file saving are download.js's, shared with the ticket page.

// POST /media/upload (multipart field `file`) → the MediaFileDto.
// `personal`: the uploader's own file even while acting for an organization (a profile picture).
export async function upload(file, signal, { personal = false } = {}) {
  const body = new FormData();
  body.append('file', file, file.name);
  const path = personal ? '/media/upload?personal=true' : '/media/upload';
  return (await fetchRaw('POST', path, { body, signal, headers: { Accept: 'application/json' } })).json();
}

// A file the API answers (exports), saved through a temporary link.
export { download };
