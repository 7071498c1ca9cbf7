// Both languages have every text the pages ask for. Run: node --test web/tests/
// The shared texts are lang/ru.js and lang/en.js; the organizer and door pages have their own
// dictionaries (lang/org.ru.js, lang/door.en.js, …), loaded with those pages only.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import ru from '../app/lang/ru.js';
import en from '../app/lang/en.js';

const app = new URL('../app/', import.meta.url);
const source = readdirSync(app, { recursive: true })
  .filter((f) => f.endsWith('.js'))
  .map((f) => readFileSync(new URL(f, app), 'utf8'))
  .join('\n');

// The section dictionaries: {name: {ru, en}}.
const langDir = new URL('../app/lang/', import.meta.url);
const sections = {};
for (const file of readdirSync(langDir)) {
  const m = /^(\w+)\.(ru|en)\.js$/.exec(file);
  if (!m) continue;
  sections[m[1]] ||= {};
  sections[m[1]][m[2]] = (await import(new URL(file, langDir))).default;
}
const all = (l) => Object.assign({}, l === 'ru' ? ru : en, ...Object.values(sections).map((s) => s[l]));
const allRu = all('ru');
const allEn = all('en');

// Russian has more plural forms than English.
const plural = /\.(few|many)$/;

test('Russian and English have the same keys', () => {
  assert.deepEqual(Object.keys(en).sort(), Object.keys(ru).filter((k) => !plural.test(k)).sort());
});

test('every section dictionary exists in both languages with the same keys', () => {
  assert.ok(Object.keys(sections).length >= 2, 'org and door dictionaries');
  for (const [name, s] of Object.entries(sections)) {
    assert.ok(s.ru && s.en, `${name}: both languages`);
    assert.deepEqual(Object.keys(s.en).sort(), Object.keys(s.ru).filter((k) => !plural.test(k)).sort(), name);
  }
});

test('no key is defined twice across the dictionaries', () => {
  const seen = new Map(Object.keys(ru).map((k) => [k, 'ru.js']));
  for (const [name, s] of Object.entries(sections)) {
    for (const key of Object.keys(s.ru)) {
      assert.ok(!seen.has(key), `${key} in ${name}.ru.js and ${seen.get(key)}`);
      seen.set(key, `${name}.ru.js`);
    }
  }
});

test('every literal key used by the pages exists', () => {
  const used = new Set([
    ...[...source.matchAll(/\bt\('([^']+)'/g)].map((m) => m[1]),
    ...[...source.matchAll(/\btn\('([^']+)'/g)].map((m) => `${m[1]}.other`),
  ]);
  for (const key of used) {
    assert.ok(key in allRu, `ru: ${key}`);
    assert.ok(key in allEn, `en: ${key}`);
  }
});

test('statuses, places and reasons the API sends have texts', () => {
  const keys = [
    ...['DRAFT', 'PUBLISHED', 'CANCELLED', 'COMPLETED', 'RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN', 'EXPIRED']
      .map((s) => `status.${s}`),
    ...['OFFLINE', 'ONLINE', 'HYBRID'].map((p) => `place.${p}`),
    ...['reminders', 'changes', 'waitingList', 'receipts'].map((k) => `notif.${k}`),
  ];
  for (const key of keys) assert.ok(key in ru && key in en, key);
});

test('keys the organizer and door pages build at run time have texts', () => {
  const keys = [
    ...['publish', 'unpublish', 'complete', 'cancel'].flatMap((a) => [`lifecycle.${a}`, `lifecycle.done.${a}`]),
    'lifecycle.confirmCancel', 'lifecycle.confirmComplete',
    ...['PENDING', 'APPROVED', 'REJECTED', 'all'].map((s) => `req.${s}`),
    'req.reason', 'req.comment',
    ...['OWNER', 'MODERATOR'].map((r) => `role.${r}`),
    ...['csv', 'xlsx'].map((f) => `export.${f}`),
    'admin.approved', 'admin.rejected',
    'mem.confirmLeave', 'mem.confirmRemove',
    ...['already', 'notConfirmed', 'unknown', 'format', 'forbidden'].map((w) => `door.why.${w}`),
    'status.all',
    ...['REQUESTED', 'SENT', 'SUCCEEDED', 'FAILED'].map((s) => `refunds.status.${s}`),
    ...['EVENT_CANCELLED', 'EVENT_CANCELLED_BEFORE_PAYMENT', 'NO_SEAT', 'ALREADY_PAID', 'AMOUNT_MISMATCH', 'REFUNDED_BY_ORGANIZER']
      .map((r) => `refunds.reason.${r}`),
  ];
  for (const key of keys) assert.ok(key in allRu && key in allEn, key);
});

test('keys the payment and refund texts build at run time have texts', () => {
  const keys = [
    ...['sent', 'done', 'failed'].map((k) => `refund.${k}`),
    // Told on the ticket page when a payment it waited for ends otherwise.
    ...['CANCELLED', 'EXPIRED', 'CHECKED_IN'].map((s) => `status.${s}`),
  ];
  for (const key of keys) assert.ok(key in allRu && key in allEn, key);
});

test('placeholders match between the languages', () => {
  const names = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join();
  for (const key of Object.keys(allEn)) assert.equal(names(allEn[key]), names(allRu[key]), key);
  // Russian-only plural forms carry the placeholders of their .other form.
  for (const key of Object.keys(allRu).filter((k) => plural.test(k))) {
    assert.equal(names(allRu[key]), names(allRu[key.replace(plural, '.other')]), key);
  }
});
