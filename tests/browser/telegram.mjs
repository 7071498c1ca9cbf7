// Sign-in with Telegram in Debian's chromium, driven by tests/it/browser.rs. Telegram's sign-in
// page cannot be reached from here, so the test stands in for it (and only for it): a route
// answers its address by sending the browser back to `return_to` with the signed account in
// the fragment, as Telegram does once the person confirms. The rest is real: our sign-in page,
// the return page, the API's check of the signature. The last line is JSON.
import { open } from './harness.mjs';

const { BASE, TG_RESULT, TG_FORGED } = process.env;
const { browser, page, result, audit } = await open();

await page.route('https://oauth.telegram.org/**', (route) => {
  const asked = new URL(route.request().url());
  result.asked = Object.fromEntries(asked.searchParams);
  route.fulfill({ status: 302, headers: { location: `${asked.searchParams.get('return_to')}#tgAuthResult=${TG_RESULT}` } });
});

await page.goto(`${BASE}/signin?next=/me/tickets`);
const link = page.getByRole('link', { name: 'Sign in with Telegram' });
await link.waitFor();
result.href = await link.getAttribute('href');
await audit('telegram-signin');
await link.click();
await page.waitForURL(`${BASE}/me/tickets`);
await page.getByRole('button', { name: 'Sign out' }).or(page.getByRole('link', { name: 'Sign out' })).first().waitFor();
// The signed pass does not stay in the address or the history.
result.addressAfter = page.url();
result.userName = await page.locator('header').textContent();
await audit('telegram-signed-in');

// A forged pass is refused and says so; nothing is signed in.
await page.evaluate(() => localStorage.clear());
await page.goto(`${BASE}/signin/telegram?next=/me/tickets#tgAuthResult=${TG_FORGED}`);
await page.getByRole('heading', { name: 'Telegram sign-in failed' }).waitFor();
result.forged = await page.getByRole('alert').filter({ hasText: /verification/ }).count();
result.forgedAddress = page.url();
await audit('telegram-refused');

await browser.close();
console.log(JSON.stringify(result));
