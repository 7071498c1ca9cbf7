// Two phones at one door lose the network, driven by tests/it/browser.rs (which makes the
// event, its three confirmed tickets and the organizer): both open the door page online (each
// keeps the list of valid tickets), go offline, and check people in — the first Ann by her
// code and Boris found by name, the second Boris too (by his code) and Clara, then Clara again,
// refused on the phone itself. Back online, the first phone sends its two, the second sends
// Clara and reports Boris as used twice; the figures end at 3 of 3. Screenshots and axe, the
// header hidden for the door's own bar; JSON last.
import { open, signIn } from './harness.mjs';

const { BASE, EVENT, EMAIL, PASSWORD, CODE_A, CODE_B, CODE_C } = process.env;
const result = { violations: [], errors: [] };
const merge = (r) => { result.violations.push(...r.violations); result.errors.push(...r.errors); };
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

async function atTheDoor() {
  const phone = await open(PHONE);
  const p = phone.page;
  await signIn(p, BASE, EMAIL, PASSWORD);
  await p.goto(`${BASE}/org/`);
  await p.getByRole('button', { name: 'Act for it' }).first().click();
  await p.getByText(/You now act for/).first().waitFor();
  await p.goto(`${BASE}/door/${EVENT}`);
  await p.locator('.door-figures').getByText('0 of 3 in', { exact: true }).waitFor();
  return phone;
}
const outcome = (p) => p.locator('.outcome .outcome-title');
async function typeCode(p, code) {
  await p.getByLabel('Confirmation code').fill(code);
  await p.getByRole('button', { name: 'Check', exact: true }).click();
  await p.locator('.outcome').getByText(code).waitFor();
  return { title: await outcome(p).textContent(), detail: await p.locator('.outcome .outcome-detail').textContent() };
}

const first = await atTheDoor();
const second = await atTheDoor();
result.headerShown = await first.page.locator('header.site').isVisible();
result.bar = await first.page.locator('.door-bar').innerText();
await first.audit('door-online');

// ---- No network ----
await first.page.context().setOffline(true);
await second.page.context().setOffline(true);
await first.page.getByText(/^Offline/).waitFor();
await second.page.getByText(/^Offline/).waitFor();

result.firstA = await typeCode(first.page, CODE_A);
await first.page.getByLabel('Find by name').fill('boris');
await first.page.getByRole('button', { name: /^Check in/ }).click();
await first.page.locator('.outcome').getByText(CODE_B).waitFor();
result.firstB = await outcome(first.page).textContent();
result.firstState = await first.page.locator('.door-state').textContent();
await first.audit('door-offline');

result.secondB = await typeCode(second.page, CODE_B);
result.secondC = await typeCode(second.page, CODE_C);
// The same ticket again on the same phone: refused there and then.
await second.page.getByLabel('Confirmation code').fill(CODE_C);
await second.page.getByRole('button', { name: 'Check', exact: true }).click();
await second.page.locator('.outcome-refused').waitFor();
result.secondCAgain = await second.page.locator('.outcome .outcome-detail').textContent();
result.secondState = await second.page.locator('.door-state').textContent();

// ---- The network returns: the first phone, then the second ----
await first.page.context().setOffline(false);
await first.page.getByText(/Network back: 2 check-ins sent/).waitFor({ timeout: 30_000 });
result.firstReport = await first.page.locator('.door-report').innerText();
await second.page.context().setOffline(false);
await second.page.getByText(/Network back: 1 check-in sent/).waitFor({ timeout: 30_000 });
result.secondReport = await second.page.locator('.door-report').innerText();
await second.page.locator('.door-figures').getByText('3 of 3 in', { exact: true }).waitFor({ timeout: 30_000 });
result.secondFigures = await second.page.locator('.door-figures').textContent();
await second.audit('door-synced');

merge(first.result);
merge(second.result);
await first.browser.close();
await second.browser.close();
console.log(JSON.stringify(result));
