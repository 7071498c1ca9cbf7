// Paying for a ticket: the time left as the countdown shows it, the refund lines, and the
// event page reaching pay.js only when a reservation is to be paid. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

// session.js (under api.js) listens to the window's storage events when loaded; Node has no
// window, so the modules are loaded after giving it something to listen on.
globalThis.window ??= new EventTarget();
const { setLang } = await import('../app/i18n.js');
const { clock } = await import('../app/pay.js');
const { refundText } = await import('../app/refunds.js');
const { loadTexts } = await import('../app/staff/texts.js');

test('clock shows minutes and seconds, hours only past an hour', () => {
  assert.equal(clock(30 * 60_000), '30:00');
  assert.equal(clock(4 * 60_000 + 5000), '04:05');
  // A started second counts: 0.2 s left is not yet nothing.
  assert.equal(clock(200), '00:01');
  assert.equal(clock(0), '00:00');
  assert.equal(clock(-5000), '00:00');
  assert.equal(clock(3_723_000), '1:02:03');
  assert.equal(clock(24 * 3_600_000), '24:00:00');
});

test('a refund says where the money is, in the currency it went in', async () => {
  await setLang('en');
  await loadTexts(['pay']);
  const refund = (status) => refundText({ status, amountCents: 150000, currency: 'RUB' });
  assert.match(refund('SUCCEEDED'), /^Refund of .*1,500\.00.*: succeeded\.$/);
  assert.match(refund('REQUESTED'), /on its way/);
  assert.match(refund('SENT'), /on its way/);
  assert.match(refund('FAILED'), /failed — contact the organizer/);
  // Why, when the ticket does not say it: a payment late for a seat that had gone.
  const late = refundText({ status: 'SUCCEEDED', amountCents: 90000, currency: 'RUB', reason: 'NO_SEAT' });
  assert.match(late, /: succeeded\. Your payment came after .* the seat had gone/);
  // A cancelled event's ticket says so itself.
  assert.match(refundText({ status: 'SUCCEEDED', amountCents: 90000, currency: 'RUB', reason: 'EVENT_CANCELLED' }), /: succeeded\.$/);
  await setLang('ru');
  await loadTexts(['pay']);
  assert.match(refund('SUCCEEDED'), /^Возврат .*1\s500,00.*: выполнен\.$/);
});

test('the event page loads pay.js by import(), not with its own modules', () => {
  const event = readFileSync(new URL('../app/pages/event.js', import.meta.url), 'utf8');
  assert.match(event, /import\('\.\.\/pay\.js'\)/);
  assert.doesNotMatch(event, /from '\.\.\/pay\.js'/);
});
