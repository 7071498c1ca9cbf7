// The organizer's money: amounts (zero is an amount, not "free"), which registrations offer
// "Refund", and the revenue and refund modules kept off the participant pages.
// Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

// session.js (under api.js) listens to the window's storage events when loaded; Node has no
// window, so the modules are loaded after giving it something to listen on.
globalThis.window ??= new EventTarget();
const { setLang } = await import('../app/i18n.js');
const { amount } = await import('../app/staff/money.js');
const { refundable, whoOf } = await import('../app/staff/refunds.js');

test('amounts in the currency’s smallest unit, zero included', async () => {
  await setLang('en');
  assert.match(amount(150050, 'RUB'), /^RUB\s1,500\.50$/);
  assert.equal(amount(0, 'EUR'), '€0.00');
  assert.equal(amount(1500, 'JPY'), 'JP¥1,500');
  await setLang('ru');
  assert.match(amount(150050, 'RUB'), /^1\s500,50\s₽$/);
  assert.match(amount(0, 'RUB'), /^0,00\s₽$/);
});

test('a paid ticket that is or was held offers a refund', () => {
  const reg = (status, priceCents = 1500) => ({ status, priceCents });
  for (const s of ['CONFIRMED', 'CHECKED_IN', 'CANCELLED']) assert.ok(refundable(reg(s)), s);
  for (const s of ['RESERVED', 'PENDING', 'EXPIRED']) assert.ok(!refundable(reg(s)), s);
  assert.ok(!refundable(reg('CONFIRMED', 0)), 'free');
});

test('a refund names its participant', () => {
  assert.equal(whoOf({ firstName: 'Anna', lastName: 'Ivanova', email: 'a@x' }), 'Anna Ivanova');
  assert.equal(whoOf({ firstName: 'Anna', lastName: '', email: 'a@x' }), 'Anna');
  assert.equal(whoOf({ firstName: '', lastName: '', email: 'a@x' }), 'a@x');
  assert.equal(whoOf({ firstName: '', lastName: '', confirmationCode: 'ABC123' }), 'ABC123');
  assert.equal(whoOf({ firstName: '', lastName: '' }), '—');
});

test('the organizer pages reach the money modules statically, the participant pages not at all', () => {
  const read = (f) => readFileSync(new URL(`../app/${f}`, import.meta.url), 'utf8');
  assert.match(read('pages/org-dashboard.js'), /from '\.\.\/staff\/money\.js'/);
  assert.match(read('pages/org-report.js'), /from '\.\.\/staff\/money\.js'/);
  // The event's page loads its sections when visited: the refunds page, and the
  // registrations, whose table offers "Refund".
  assert.match(read('pages/org-event.js'), /import\('\.\.\/staff\/refunds\.js'\)/);
  assert.match(read('staff/event-registrations.js'), /from '\.\/refunds\.js'/);
  for (const f of ['pages/event.js', 'pages/tickets.js', 'pages/ticket.js', 'main.js']) {
    assert.doesNotMatch(read(f), /staff\/(money|refunds)\.js/, f);
  }
});
