// A participant's way through the web front in Debian's chromium, driven by
// tests/it/browser.rs (which prepares the event and the account and reads the figures this
// prints as its last line of JSON): the catalogue finds the event by search, the event page
// (first paint, JavaScript weight) registers, "my tickets" shows the QR code and the code.
// Every page is screenshotted into ARTIFACTS and checked by axe-core.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';

const { BASE, SLUG, TITLE, EMAIL, PASSWORD, ARTIFACTS } = process.env;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
mkdirSync(ARTIFACTS, { recursive: true });

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run'],
});
// axe-core is injected into each page, which the pages' content policy (rightly) forbids.
const context = await browser.newContext({ locale: 'en-US', bypassCSP: true });
// English texts, so the test reads the same words as its author.
await context.addInitScript(() => localStorage.setItem('bilet.lang', 'en'));
const page = await context.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
const result = { pages: {}, violations: [], errors };

// Serious or critical accessibility violations of the page as it is now.
async function audit(name) {
  await page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true });
  await page.addScriptTag({ content: axeSource });
  const found = await page.evaluate(async () => (await globalThis.axe.run(document, {
    resultTypes: ['violations'],
  })).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })));
  const bad = found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  result.violations.push(...bad.map((v) => ({ page: name, ...v })));
  result.pages[name] = true;
}

// The catalogue: the event is found by searching its title.
await page.goto(`${BASE}/`);
await page.getByLabel('Title or description').fill(TITLE);
await page.getByLabel('Title or description').press('Enter');
await page.getByRole('link', { name: TITLE }).waitFor();
await audit('catalogue');

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
await page.getByLabel('Email').fill(EMAIL);
await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
await audit('signin');
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('link', { name: 'Sign out' }).or(page.getByRole('button', { name: 'Sign out' })).first().waitFor();
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

for (const path of ['/signup', '/forgot-password', '/me/notifications']) {
  await page.goto(`${BASE}${path}`);
  await page.locator('main h1').first().waitFor();
  await audit(path.slice(1).replace('/', '-'));
}

await browser.close();
console.log(JSON.stringify(result));
