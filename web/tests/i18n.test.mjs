// Both languages have every text the pages ask for. Run: node --test web/tests/
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

// Russian has more plural forms than English.
const plural = /\.(few|many)$/;

test('Russian and English have the same keys', () => {
  assert.deepEqual(Object.keys(en).sort(), Object.keys(ru).filter((k) => !plural.test(k)).sort());
});

test('every literal key used by the pages exists', () => {
  const used = new Set([
    ...[...source.matchAll(/\bt\('([^']+)'/g)].map((m) => m[1]),
    ...[...source.matchAll(/\btn\('([^']+)'/g)].map((m) => `${m[1]}.other`),
  ]);
  for (const key of used) {
    assert.ok(key in ru, `ru: ${key}`);
    assert.ok(key in en, `en: ${key}`);
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

test('placeholders match between the languages', () => {
  const names = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join();
  for (const key of Object.keys(en)) assert.equal(names(en[key]), names(ru[key]), key);
});
