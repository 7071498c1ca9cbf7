// The ticket page's files (issue 32): it reaches the bearer-token download through the shared
// download.js, never the organizer's kit, and names its buttons in both languages. Run:
// node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { app, graph } from './imports.mjs';

const read = (f) => readFileSync(new URL(f, app), 'utf8');

test('the ticket page downloads through download.js, not the staff kit', () => {
  const files = graph(['pages/ticket.js']);
  assert.ok(files.includes('ticket-files.js'), files.join(' '));
  assert.ok(files.includes('download.js'), files.join(' '));
  assert.ok(!files.includes('staff/kit.js'), files.join(' '));
  // The organizer's pages save their exports through the same helper.
  assert.match(read('staff/kit.js'), /from '\.\.\/download\.js'/);
});

test('the files are offered for a confirmed ticket only, the wallets only where issued', () => {
  assert.match(read('pages/ticket.js'), /reg\.status === 'CONFIRMED' && ticketFiles\(reg, signal\)/);
  const files = read('ticket-files.js');
  assert.match(files, /api\.get\('\/wallet'/);
  assert.match(files, /if \(google\)/);
  assert.match(files, /if \(apple\)/);
});

test('the buttons are worded in both languages', async () => {
  const en = (await import(new URL('lang/pay.en.js', app))).default;
  const ru = (await import(new URL('lang/pay.ru.js', app))).default;
  for (const key of ['ticket.pdf', 'ticket.google', 'ticket.apple']) {
    assert.ok(en[key] && ru[key] && en[key] !== ru[key], key);
  }
});
