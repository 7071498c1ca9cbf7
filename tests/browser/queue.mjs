// A visitor's on-sale through the waiting room on a phone, driven by tests/it/browser.rs: the
// event page sends them to the queue, the queue page says they are in the pre-queue (drawn at
// the on-sale time), then — pushed by the server, without reloading — that it is their turn;
// they register with the admission the page kept. Every page is checked by axe-core.
import { handOver, open, signIn } from './harness.mjs';

const { BASE, SLUG, TITLE, EMAIL, PASSWORD } = process.env;
const { browser, page, result, audit } = await open({
  viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
});

await signIn(page, BASE, EMAIL, PASSWORD);
await page.goto(`${BASE}/e/${SLUG}`);
await page.getByRole('heading', { name: TITLE }).waitFor();
// No Register button while the room is open: the way in is the queue.
const toQueue = page.getByRole('link', { name: 'Join the queue' }).first();
await toQueue.waitFor();
result.registerShown = await page.getByRole('button', { name: 'Register' }).count();
await audit('event-with-room');
await toQueue.click();
await page.getByText('You are in the queue. The order is drawn at random').waitFor();
result.fairness = await page.locator('.queue .hint').textContent();
await audit('queue-pre');

// The sale opens and the visitor's turn comes (the test moves the node's clock and lets the
// admitter run): the page hears it without being reloaded.
const loads = [];
page.on('load', () => loads.push(page.url()));
await handOver('pre-queue');
await page.getByText('It is your turn!').waitFor({ timeout: 15_000 });
result.reloaded = loads.length;
await audit('queue-admitted');

await page.getByRole('link', { name: 'Register now' }).click();
await page.getByRole('heading', { name: TITLE }).waitFor();
await page.getByRole('button', { name: 'Register' }).first().click();
await page.getByText('You are registered').first().waitFor();
result.registered = true;
await audit('registered-through-queue');

await browser.close();
console.log(JSON.stringify(result));
process.stdin.destroy();
