// A participant pays for a reserved ticket in Debian's chromium, driven by tests/it/browser.rs
// (which makes the event with a paid ticket type held 30 minutes for payment, and the account,
// and has the gateway listen at its public address, where the test provider's payment links
// point): the event page reserves and offers Pay with the time left; "my tickets" does too; Pay
// leads to the test provider's page, whose Decline comes back to the ticket's own page saying
// so; Pay again, Pay there, and the ticket's page shows the QR code. Every page of ours is
// screenshotted into ARTIFACTS and checked by axe-core; the last line is JSON.
import { readFileSync } from 'node:fs';
import { open, signIn } from './harness.mjs';

const { BASE, SLUG, TITLE, EMAIL, PASSWORD } = process.env;
const { browser, page, result, audit } = await open();
const PROVIDER = /\/api\/v1\/payments\/test\/[^/]+$/;
const TICKET = /\/me\/tickets\/[0-9a-f-]{36}$/;
const path = () => new URL(page.url()).pathname;
// The provider's page speaks the browser's language; both are accepted here.
const providerButton = (en, ru) => page.getByRole('button', { name: new RegExp(`^(${en}|${ru})$`) });

await signIn(page, BASE, EMAIL, PASSWORD);

// The event page: the paid ticket is reserved, and Pay comes with the time the seat is held.
await page.goto(`${BASE}/e/${SLUG}`);
await page.getByRole('button', { name: /^Reserve/ }).first().click();
await page.getByText(/Your seat is reserved until/).first().waitFor();
await page.getByRole('timer').waitFor();
result.eventCountdown = await page.getByRole('timer').textContent();
await page.getByRole('button', { name: 'Pay', exact: true }).waitFor();
await audit('event-reserved');

// My tickets: the reservation, its time left and its Pay button ("Pay: <event>" when heard).
await page.goto(`${BASE}/me/tickets`);
const held = page.getByRole('timer').first();
await held.waitFor();
result.countdown = await held.textContent();
await audit('tickets-reserved');
await page.getByRole('button', { name: /^Pay/ }).first().click();

// The test provider's page: decline. It sends the payer back to the ticket's own page.
await page.waitForURL(PROVIDER);
result.firstPayment = path();
await providerButton('Decline', 'Отказаться').click();
await page.waitForURL(TICKET);
result.returnPath = path();
await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
await page.getByText('The payment was declined. You can try again.').waitFor();
result.declined = true;
await page.getByRole('timer').waitFor();
await audit('ticket-declined');

// Pay again: a new attempt, a new payment page; paid there, the ticket's page shows the QR code.
await page.getByRole('button', { name: 'Pay', exact: true }).click();
await page.waitForURL(PROVIDER);
result.secondPayment = path();
await providerButton('Pay', 'Оплатить').click();
await page.waitForURL(TICKET);
result.paidReturnPath = path();
const qr = page.locator('canvas.qr');
await qr.waitFor();
result.qrLabel = await qr.getAttribute('aria-label');
await page.getByText(/Payment received/).waitFor();
result.received = true;
result.payButtonsAfter = await page.getByRole('button', { name: 'Pay', exact: true }).count();
await audit('ticket-paid');
// The pictures of web/README.md: the ticket with its QR code, the window only, on a phone and
// on a computer.
await page.setViewportSize({ width: 390, height: 844 });
await page.screenshot({ path: `${process.env.ARTIFACTS}/screen-ticket-390.png` });
await page.setViewportSize({ width: 1280, height: 860 });
await page.screenshot({ path: `${process.env.ARTIFACTS}/screen-ticket-1280.png` });

// Into the calendar: the .ics file the ticket's page makes, and the Google Calendar link.
const [download] = await Promise.all([
  page.waitForEvent('download'),
  page.getByRole('button', { name: 'Add to calendar (.ics)' }).click(),
]);
result.icsName = download.suggestedFilename();
result.ics = readFileSync(await download.path(), 'utf8');
result.google = await page.getByRole('link', { name: 'Google Calendar' }).getAttribute('href');

await browser.close();
console.log(JSON.stringify(result));
