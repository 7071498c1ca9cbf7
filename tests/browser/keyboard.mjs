// A participant's way with the keyboard alone, in Debian's chromium, driven by
// tests/it/browser.rs: the skip link, the catalogue's search, the event, signing in and
// registering, with Tab, typing and Enter only. Every element the focus lands on must show
// where the focus is. The last line is JSON.
import { open } from './harness.mjs';

const { BASE, SLUG, TITLE, EMAIL, PASSWORD } = process.env;
const { browser, page, result, audit } = await open();
result.unmarked = [];
result.steps = [];

// Where the focus is, and whether it can be seen (an outline or a ring).
const focused = () => page.evaluate(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const marked = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
    || (style.boxShadow && style.boxShadow !== 'none');
  const label = el.labels?.[0]?.textContent?.trim();
  return {
    tag: el.tagName, id: el.id, text: (el.getAttribute('aria-label') || label || el.textContent || '').trim().slice(0, 80), marked,
  };
});

// Tabs forward until `wanted(focus)` holds (at most `limit` presses).
async function tabTo(what, wanted, limit = 60) {
  for (let i = 0; i < limit; i += 1) {
    await page.keyboard.press('Tab');
    const f = await focused();
    if (f && !f.marked && !f.id.startsWith('app')) result.unmarked.push(f);
    if (f && wanted(f)) { result.steps.push(what); return f; }
  }
  throw new Error(`the keyboard never reached ${what}`);
}

await page.goto(`${BASE}/`);
await page.getByLabel('Title or description').waitFor();
// The first Tab is the skip link; it jumps past the header.
await tabTo('skip link', (f) => f.text === 'Skip to content', 1);
await page.keyboard.press('Enter');
// Still there a moment later: the jump is within the page, which is not drawn again.
await page.waitForTimeout(500);
result.afterSkip = await page.evaluate(() => document.activeElement?.id);
await tabTo('search', (f) => f.text === 'Title or description');
await page.keyboard.type(TITLE);
await page.keyboard.press('Enter');
await page.getByRole('link', { name: TITLE }).waitFor();
await tabTo('the event', (f) => f.tag === 'A' && f.text === TITLE);
await page.keyboard.press('Enter');
await page.waitForURL(`${BASE}/e/${SLUG}`);
await page.getByRole('heading', { name: TITLE }).waitFor();
// A new page puts the focus on its heading, where a screen reader starts reading, once it
// has finished loading (the heading is drawn before the page's last requests return).
await page.waitForFunction(() => !document.getElementById('app').hasAttribute('aria-busy'));
result.focusOnArrival = await page.evaluate(() => document.activeElement?.tagName);

await tabTo('sign in', (f) => f.tag === 'A' && /^Sign in/.test(f.text));
await page.keyboard.press('Enter');
await page.waitForURL(/\/signin/);
await page.getByLabel('Email').waitFor();
await tabTo('email', (f) => f.text === 'Email');
await page.keyboard.type(EMAIL);
await tabTo('password', (f) => f.text === 'Password', 1);
await page.keyboard.type(PASSWORD);
await page.keyboard.press('Enter');
await page.waitForURL(`${BASE}/e/${SLUG}`);
await page.getByRole('heading', { name: TITLE }).waitFor();
await tabTo('register', (f) => f.tag === 'BUTTON' && f.text.startsWith('Register'));
await page.keyboard.press('Enter');
await page.getByText(/You are registered/).first().waitFor();
result.steps.push('registered');
await audit('keyboard-registered');

await browser.close();
console.log(JSON.stringify(result));
