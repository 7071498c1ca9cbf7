// An event into a calendar: the .ics text (RFC 5545: CRLF lines, escaped text, UTC times,
// lines folded at 75 octets) and Google Calendar's link. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';

globalThis.window ??= new EventTarget();
const { setLang } = await import('../app/i18n.js');
const { fold, googleLink, ics } = await import('../app/calendar.js');
await setLang('en');

const event = {
  id: '0192f0c4-1111-7000-8000-000000000001',
  slug: 'night-of-strings',
  title: 'Strings; quartets, and more\\ more',
  startsAt: '2026-12-07T16:00:00Z',
  endsAt: null,
  locationAddress: 'Moscow, Tverskaya 1\nhall 2',
};
const origin = 'https://bilet.example';

test('the .ics file holds the event in UTC, its text escaped, two hours when it has no end', () => {
  const text = ics(event, { origin, code: 'AB12CD34', now: new Date('2026-11-27T10:00:00Z') });
  assert.ok(text.endsWith('\r\n'));
  // Read as a calendar does: folded lines joined again.
  const lines = text.replace(/\r\n /g, '').split('\r\n');
  assert.equal(lines[0], 'BEGIN:VCALENDAR');
  assert.ok(lines.includes('UID:0192f0c4-1111-7000-8000-000000000001@bilet'));
  assert.ok(lines.includes('DTSTAMP:20261127T100000Z'));
  assert.ok(lines.includes('DTSTART:20261207T160000Z'));
  assert.ok(lines.includes('DTEND:20261207T180000Z'));
  assert.ok(lines.includes('SUMMARY:Strings\\; quartets\\, and more\\\\ more'));
  assert.ok(lines.includes('LOCATION:Moscow\\, Tverskaya 1\\nhall 2'));
  assert.ok(lines.includes('DESCRIPTION:Confirmation code: AB12CD34\\nhttps://bilet.example/e/night-of-strings'));
  assert.ok(lines.includes('URL:https://bilet.example/e/night-of-strings'));
  assert.equal(lines.filter((l) => l === 'END:VEVENT').length, 1);
});

test('long lines fold at 75 octets without splitting a letter', () => {
  const long = `SUMMARY:${'Щелкунчик '.repeat(12)}`;
  const folded = fold(long);
  const parts = folded.split('\r\n');
  assert.ok(parts.length > 1);
  for (const [i, part] of parts.entries()) {
    assert.ok(new TextEncoder().encode(part).length <= 75, part);
    if (i > 0) assert.ok(part.startsWith(' '));
  }
  assert.equal(parts.map((p, i) => (i ? p.slice(1) : p)).join(''), long);
});

test('Google Calendar gets the same event', () => {
  const url = new URL(googleLink({ ...event, endsAt: '2026-12-07T19:30:00Z' }, { origin, code: null }));
  assert.equal(url.origin + url.pathname, 'https://calendar.google.com/calendar/render');
  assert.equal(url.searchParams.get('action'), 'TEMPLATE');
  assert.equal(url.searchParams.get('text'), event.title);
  assert.equal(url.searchParams.get('dates'), '20261207T160000Z/20261207T193000Z');
  assert.equal(url.searchParams.get('location'), event.locationAddress);
  assert.equal(url.searchParams.get('details'), 'https://bilet.example/e/night-of-strings');
});
