// The event form, for creating (POST /events) and changing (PUT /events/{id}) an event.
// Times are typed on the event's own clock (its time zone field), whatever the browser's.
// A change sends only the fields that differ, so an untouched start or place does not tell
// the participants about a change that did not happen.
import { api, postIdempotent, uuid } from '../api.js';
import { h } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { browserZone, invalid, isoToZoned, zonedToIso, zones } from './kit.js';
import { t } from './texts.js';

const PLACES = ['OFFLINE', 'ONLINE', 'HYBRID'];
const OPTIONAL = ['endsAt', 'locationType', 'locationAddress', 'locationUrl', 'groupId'];

function values(data, event) {
  const timezone = (data.timezone || '').trim() || 'UTC';
  const v = {
    title: data.title.trim(),
    description: data.description,
    startsAt: zonedToIso(data.startsAt, timezone),
    endsAt: zonedToIso(data.endsAt, timezone),
    timezone,
    locationType: data.locationType || null,
    locationAddress: data.locationAddress.trim() || null,
    locationUrl: data.locationUrl.trim() || null,
    participantsVisibility: data.participantsVisibility,
  };
  if ('groupId' in data) v.groupId = data.groupId || null;
  if (!event && data.slug?.trim()) v.slug = data.slug.trim();
  return v;
}

function changes(v, event) {
  const same = (k) => (k.endsWith('At') && v[k] && event[k]
    ? Date.parse(v[k]) === Date.parse(event[k])
    : (v[k] ?? null) === (event[k] ?? null));
  return Object.fromEntries(Object.keys(v).filter((k) => !same(k)).map((k) => [k, v[k]]));
}

// `current()`: the event to change as it is now (absent: a new one); `groups`: the
// organization's groups, for private events; `saved(event, changed)` gets the answer.
export function eventForm({ current = () => null, groups = [], prefix, saved }) {
  const id = (name) => `${prefix}-${name}`;
  const event = current();
  const tz = event?.timezone || browserZone();
  const list = `${prefix}-zones`;
  const el = form(async (data) => {
    const event = current();
    const v = values(data, event);
    if (!v.title) throw invalid({ title: t('org.required') });
    if (!v.startsAt) throw invalid({ startsAt: t('org.required') });
    if (event) {
      const body = changes(v, event);
      if (!Object.keys(body).length) { saved(event, false); return; }
      saved(await api.put(`/events/${event.id}`, body), true);
    } else {
      const body = Object.fromEntries(Object.entries(v).filter(([k, x]) => !(OPTIONAL.includes(k) && x == null)));
      saved(await postIdempotent('/events', body, uuid()), true);
    }
  },
  field('title', t('ev.f.title'), { id: id('title'), value: event?.title || '', maxlength: 255, required: true }),
  !event && field('slug', t('ev.f.slug'), { id: id('slug'), hint: t('ev.f.slugHint'), maxlength: 100, autocapitalize: 'none', spellcheck: 'false' }),
  field('description', t('ev.f.description'), { id: id('description'), tag: 'textarea', rows: 5, value: event?.description || '' }),
  h('div', { class: 'row' },
    field('startsAt', t('ev.f.startsAt'), { id: id('startsAt'), type: 'datetime-local', value: isoToZoned(event?.startsAt, tz), required: true, hint: t('ev.f.clock') }),
    field('endsAt', t('ev.f.endsAt'), { id: id('endsAt'), type: 'datetime-local', value: isoToZoned(event?.endsAt, tz), hint: t('ev.f.optional') })),
  field('timezone', t('ev.f.timezone'), { id: id('timezone'), value: tz, list, autocapitalize: 'none', spellcheck: 'false', hint: t('ev.f.timezoneHint') }),
  h('datalist', { id: list }, zones().map((z) => h('option', { value: z }))),
  field('locationType', t('ev.f.locationType'), {
    id: id('locationType'), tag: 'select', value: event?.locationType || '',
    options: [['', t('org.notSaid')], ...PLACES.map((p) => [p, t(`place.${p}`)])],
  }),
  field('locationAddress', t('ev.f.address'), { id: id('locationAddress'), value: event?.locationAddress || '', maxlength: 500 }),
  field('locationUrl', t('ev.f.url'), { id: id('locationUrl'), type: 'url', value: event?.locationUrl || '', hint: t('ev.f.urlHint') }),
  field('participantsVisibility', t('ev.f.visibility'), {
    id: id('participantsVisibility'), tag: 'select', value: event?.participantsVisibility || 'CLOSED',
    options: [['CLOSED', t('ev.f.closed')], ['OPEN', t('ev.f.open')]],
  }),
  (groups.length || event?.groupId) && field('groupId', t('ev.f.group'), {
    id: id('groupId'), tag: 'select', value: event?.groupId || '', hint: t('ev.f.groupHint'),
    options: [['', t('ev.f.public')], ...groups.map((g) => [g.id, g.name])],
  }),
  submitButton(event ? t('org.save') : t('ev.create')));
  return el;
}
