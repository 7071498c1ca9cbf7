// An event into the visitor's calendar: an .ics file (RFC 5545: Apple, Outlook, Thunderbird,
// Android's calendars open it) made in the browser, and a link to Google Calendar's form with
// the event filled in. An event without an end is put down as two hours. No DOM but in
// calendarLinks.
import { h } from './dom.js';
import { t } from './i18n.js';

const HOURS_IF_NO_END = 2;

// 2026-12-07T19:00:00Z → 20261207T190000Z
const stamp = (date) => date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

const endOf = (event) => (event.endsAt
  ? new Date(event.endsAt)
  : new Date(Date.parse(event.startsAt) + HOURS_IF_NO_END * 3_600_000));

// Text values escape backslash, semicolon, comma and line breaks.
const text = (s) => String(s ?? '').replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,')
  .replace(/\r\n|\r|\n/g, '\\n');

// Lines longer than 75 octets continue on the next line after a space, never inside a
// character's UTF-8 bytes.
export function fold(line) {
  const bytes = new TextEncoder();
  const out = [];
  let current = '';
  let size = 0;
  for (const ch of line) {
    const n = bytes.encode(ch).length;
    if (size + n > (out.length ? 74 : 75)) {
      out.push(current);
      current = '';
      size = 0;
    }
    current += ch;
    size += n;
  }
  out.push(current);
  return out.join('\r\n ');
}

const pageOf = (event, origin) => `${origin}/e/${encodeURIComponent(event.slug)}`;

// The .ics text of `event` (its id, title, times, place, page; `code`: the ticket's).
export function ics(event, { origin, code, now = new Date() }) {
  const place = event.locationAddress || event.locationUrl;
  const about = [code && `${t('ticket.code')} ${code}`, pageOf(event, origin)].filter(Boolean).join('\n');
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//bilet//tickets//EN',
    'CALSCALE:GREGORIAN',
    'METHOD:PUBLISH',
    'BEGIN:VEVENT',
    `UID:${event.id}@bilet`,
    `DTSTAMP:${stamp(now)}`,
    `DTSTART:${stamp(new Date(event.startsAt))}`,
    `DTEND:${stamp(endOf(event))}`,
    `SUMMARY:${text(event.title)}`,
    place && `LOCATION:${text(place)}`,
    `DESCRIPTION:${text(about)}`,
    `URL:${pageOf(event, origin)}`,
    'END:VEVENT',
    'END:VCALENDAR',
  ].filter(Boolean).map(fold).join('\r\n') + '\r\n';
}

// Google Calendar's "new event" form, filled in.
export function googleLink(event, { origin, code }) {
  const q = new URLSearchParams({
    action: 'TEMPLATE',
    text: event.title,
    dates: `${stamp(new Date(event.startsAt))}/${stamp(endOf(event))}`,
    details: [code && `${t('ticket.code')} ${code}`, pageOf(event, origin)].filter(Boolean).join('\n'),
  });
  const place = event.locationAddress || event.locationUrl;
  if (place) q.set('location', place);
  return `https://calendar.google.com/calendar/render?${q}`;
}

// "Add to calendar (.ics)" and "Google Calendar" for `event`.
export function calendarLinks(event, code) {
  const origin = location.origin;
  const file = `${(event.slug || 'event').replace(/[^\w-]+/g, '-')}.ics`;
  const download = h('button', {
    type: 'button',
    onclick: () => {
      const url = URL.createObjectURL(new Blob([ics(event, { origin, code })], { type: 'text/calendar;charset=utf-8' }));
      const a = h('a', { href: url, download: file, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    },
  }, t('calendar.ics'));
  return h('p', { class: 'calendar actions' },
    download,
    h('a', { href: googleLink(event, { origin, code }), target: '_blank', rel: 'noopener noreferrer' }, t('calendar.google')));
}
