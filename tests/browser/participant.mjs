// A participant's way through the web front in Debian's chromium, driven by
// tests/it/browser.rs (which prepares the event and the account and reads the figures this
// prints as its last line of JSON): the catalogue finds the event by search and its cards say
// what each event offers (free; from a price with few seats left; sold out) on a computer and
// a phone, the event page (first paint, JavaScript weight) registers, "my tickets" shows the
// QR code and the code. Every page is screenshotted into ARTIFACTS and checked by axe-core.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { open, signIn } from './harness.mjs';

const { BASE, SLUG, TITLE, EMAIL, PASSWORD, SUFFIX, FEW_TITLE, SOLD_TITLE, ARTIFACTS } = process.env;
const { browser, page, result, audit } = await open();

// The catalogue: the event is found by searching its title.
await page.goto(`${BASE}/`);
await page.getByLabel('Title or description').fill(TITLE);
await page.getByLabel('Title or description').press('Enter');
await page.getByRole('link', { name: TITLE }).waitFor();
await audit('catalogue');

// The cards of the three events, found by the suffix their titles share: what each offers as
// shown (price, badge), whether the badge is seen and inside the window at that width.
result.cards = {};
for (const [width, height] of [[1280, 860], [390, 844]]) {
  await page.setViewportSize({ width, height });
  await page.goto(`${BASE}/?q=${encodeURIComponent(SUFFIX)}`);
  await page.getByRole('link', { name: SOLD_TITLE }).waitFor();
  const shown = {};
  for (const [key, title] of [['free', TITLE], ['few', FEW_TITLE], ['sold', SOLD_TITLE]]) {
    const offer = page.locator('li.card').filter({ has: page.getByRole('link', { name: title }) }).locator('.offer');
    const badge = offer.locator('.badge');
    const has = await badge.count();
    shown[key] = {
      price: await offer.locator('.price').textContent(),
      badge: has ? await badge.textContent() : null,
      badgeSeen: has ? await badge.isVisible() : null,
      badgeInside: has ? await badge.evaluate((b) => b.getBoundingClientRect().right <= innerWidth) : null,
    };
  }
  shown.cards = await page.locator('li.card').count();
  result.cards[width] = shown;
  await audit(`catalogue-${width}`);
  // The pictures of web/README.md: the window only, from the count above the cards.
  await page.locator('.results .count').evaluate((c) => c.scrollIntoView());
  await page.screenshot({ path: `${ARTIFACTS}/screen-catalogue-${width}.png` });
}
await page.setViewportSize({ width: 1280, height: 720 });

// The event page by its slug, from a fresh load: first paint and the JavaScript it loads.
const scripts = [];
page.on('response', async (r) => {
  if (r.url().endsWith('.js')) scripts.push(await r.body().catch(() => Buffer.alloc(0)));
});
await page.goto(`${BASE}/e/${SLUG}`);
await page.getByRole('heading', { name: TITLE }).waitFor();
result.firstPaintMs = await page.evaluate(() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0]
    || performance.getEntriesByName('first-paint')[0];
  return paint ? paint.startTime : null;
});
result.eventJsBytes = scripts.reduce((n, b) => n + b.length, 0);
result.eventJsGzipBytes = scripts.reduce((n, b) => n + gzipSync(b).length, 0);
await audit('event');

// Sign in from the event page's prompt, then register for the first ticket type.
await page.goto(`${BASE}/signin`);
await audit('signin');
await signIn(page, BASE, EMAIL, PASSWORD);
await page.goto(`${BASE}/e/${SLUG}`);
const register = page.getByRole('button', { name: 'Register' }).first();
await register.waitFor();
// A double click registers once (one idempotency key per intent).
await register.dblclick();
await page.getByText(/You are registered/).first().waitFor();
await audit('registered');

// My tickets: the QR code and the confirmation code.
await page.goto(`${BASE}/me/tickets`);
const qr = page.locator('canvas.qr').first();
await qr.waitFor();
result.qrLabel = await qr.getAttribute('aria-label');
result.tickets = await page.locator('canvas.qr').count();
await audit('tickets');

// The ticket's own page: "Download PDF" saves the ticket (the fetch carries the token), and
// no wallet button is drawn where the installation has no wallet keys.
const walletAsked = page.waitForResponse((r) => r.url().endsWith('/api/v1/wallet'));
await page.getByRole('link', { name: 'Open the ticket' }).first().click();
const pdfButton = page.getByRole('button', { name: 'Download PDF' });
await pdfButton.waitFor();
const [saved] = await Promise.all([page.waitForEvent('download'), pdfButton.click()]);
const file = await saved.path();
const head = readFileSync(file).subarray(0, 5).toString();
if (!/^ticket-[A-Z0-9]{8}\.pdf$/.test(saved.suggestedFilename()) || head !== '%PDF-') {
  throw new Error(`the ticket PDF: ${saved.suggestedFilename()}, ${JSON.stringify(head)}`);
}
result.ticketPdf = saved.suggestedFilename();
await walletAsked;
await page.waitForTimeout(200);
if (await page.getByText(/Add to (Google|Apple) Wallet/).count()) throw new Error('a wallet button without wallet keys');
await audit('ticket');

for (const path of ['/signup', '/forgot-password', '/me/notifications']) {
  await page.goto(`${BASE}${path}`);
  await page.locator('main h1').first().waitFor();
  await audit(path.slice(1).replace('/', '-'));
}

await browser.close();
console.log(JSON.stringify(result));
