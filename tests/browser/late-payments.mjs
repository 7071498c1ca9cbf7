// Payments that come late, and an event cancelled after it was paid for, in Debian's chromium,
// driven by tests/it/browser.rs (which makes two events of one paid seat each, held 5 minutes
// for payment, and the accounts; its clock is manual, so it moves time on when this script
// hands over):
//   the participant reserves the seat of each event and opens both payment pages; the test
//   lets both holds run out and gives the second event's seat to someone else; paying late on
//   the first takes its still free seat (the ticket's page shows the QR code), paying late on
//   the second finds no seat (the page shows the money going back, and then back);
//   the organizer cancels the first event on its page, and the participant's ticket shows the
//   refund succeed; the organizer's event page lists the refund and the dashboard and the
//   report show the money received and refunded.
// Every page is screenshotted into ARTIFACTS and checked by axe-core; the last line is JSON.
import { handOver, open, signIn } from './harness.mjs';

const {
  BASE, FREE_SLUG, TAKEN_SLUG, FREE_EVENT, FREE_TITLE, EMAIL, ORGANIZER_EMAIL, PASSWORD,
} = process.env;
const PROVIDER = /\/api\/v1\/payments\/test\/[^/]+$/;
const TICKET = /\/me\/tickets\/[0-9a-f-]{36}$/;
const { browser, page, result, audit } = await open();
const context = page.context();
// The provider's page speaks the browser's language; both are accepted here.
const payThere = (p) => p.getByRole('button', { name: /^(Pay|Оплатить)$/ }).click();
const waitText = (p, text) => p.getByText(text).first().waitFor({ timeout: 30_000 });

await signIn(page, BASE, EMAIL, PASSWORD);

// Both seats reserved, both payment pages open, one tab each.
async function toPaymentPage(tab, slug) {
  await tab.goto(`${BASE}/e/${slug}`);
  await tab.getByRole('button', { name: /^Reserve/ }).first().click();
  await tab.getByRole('button', { name: 'Pay', exact: true }).click();
  await tab.waitForURL(PROVIDER);
}
await toPaymentPage(page, FREE_SLUG);
const second = await context.newPage();
second.on('pageerror', (e) => result.errors.push(String(e)));
await toPaymentPage(second, TAKEN_SLUG);

// The test lets both holds run out, and someone else takes the second event's seat.
await handOver('lapse');

// Late, with the seat still free: the payment takes it.
await payThere(page);
await page.waitForURL(TICKET);
result.freePath = new URL(page.url()).pathname;
await page.locator('canvas.qr').waitFor();
await waitText(page, /Payment received/);
result.lateWithSeat = 'QR';
await audit('late-paid');

// Late, with the seat gone: the ticket says it lapsed and shows its money going back, then back.
await payThere(second);
await second.waitForURL(TICKET);
result.takenPath = new URL(second.url()).pathname;
await waitText(second, 'Reservation expired');
await waitText(second, /no seat|seat had gone/);
await waitText(second, /^Refund of .*: succeeded\./);
result.lateWithoutSeat = await second.locator('.refunds p').first().textContent();
result.qrWithoutSeat = await second.locator('canvas.qr').count();
await audit('late-refunded', second);
await second.close();

// The organizer cancels the first event on its page.
const organizer = await open();
const op = organizer.page;
await signIn(op, BASE, ORGANIZER_EMAIL, PASSWORD);
await op.goto(`${BASE}/org/`);
await op.getByRole('button', { name: 'Act for it' }).first().click();
await waitText(op, /You now act for/);
await op.goto(`${BASE}/org/events/${FREE_EVENT}`);
op.on('dialog', (d) => d.accept());
await op.getByRole('button', { name: /^Cancel the event/ }).click();
await waitText(op, /cancelled/i);

// The participant's ticket: cancelled with its event, and the money back.
await page.reload();
await waitText(page, /the event was cancelled/);
await waitText(page, /^Refund of .*: succeeded\./);
result.cancelled = await page.locator('.refunds p').first().textContent();
await audit('cancelled-refunded');

// The organizer's side of the money: the refund listed (in the event's Refunds section),
// revenue on the dashboard and report.
await op.goto(`${BASE}/org/events/${FREE_EVENT}/refunds`);
const refunds = op.locator('section', { has: op.getByRole('heading', { name: 'Refunds', exact: true }) });
await refunds.getByRole('table').waitFor();
result.organizerRefunds = await refunds.locator('tbody tr').count();
await organizer.audit('org-event-refunds');
await op.goto(`${BASE}/org/events/${FREE_EVENT}/dashboard`);
const money = op.locator('section', { has: op.getByRole('heading', { name: 'Revenue', exact: true }) });
await money.getByRole('table').waitFor();
result.dashboardMoney = (await money.getByRole('table').innerText()).replace(/\s+/g, ' ');
await organizer.audit('org-dashboard-revenue');
await op.goto(`${BASE}/org/report`);
await op.getByRole('heading', { name: 'Revenue for the period' }).waitFor();
await op.getByRole('table').filter({ hasText: FREE_TITLE }).first().waitFor();
await organizer.audit('org-report-revenue');

result.violations.push(...organizer.result.violations);
result.errors.push(...organizer.result.errors);
await organizer.browser.close();
await browser.close();
console.log(JSON.stringify(result));
process.stdin.destroy();
