// An organizer copies an event from the organization's list, driven by tests/it/browser.rs
// (which makes the organization and the event with its two ticket types, and checks the copy
// over the API afterwards): on a computer, signed in and acting for the organization, the
// event's "Make a copy" lands on the copy's own page, which says to check the date. Then the
// organizer's profile, still acting for the organization, takes a picture as their own.
// Screenshots and axe on the list, the copy's page and the profile; JSON last.
import { open, png, signIn } from './harness.mjs';

const { BASE, EMAIL, PASSWORD, EVENT, TITLE } = process.env;
const { browser, page, result, audit } = await open({ viewport: { width: 1280, height: 860 } });

await signIn(page, BASE, EMAIL, PASSWORD);
await page.goto(`${BASE}/org/`);
await page.getByRole('button', { name: 'Act for it' }).first().click();
await page.getByText(/You now act for/).first().waitFor();

await page.goto(`${BASE}/org/events`);
const card = page.locator('li.card').filter({ has: page.getByRole('heading', { name: TITLE }) });
await card.waitFor();
result.cardsBefore = await page.locator('li.card').count();
await audit('org-events');

// The button names its event for a screen reader ("Make a copy: <title>"; Chrome puts a space
// before the hidden part, hence the loose match and the text read separately).
const copy = card.getByRole('button', { name: /^Make a copy/ });
result.copyButton = await copy.textContent();
await copy.click();
await page.waitForURL((u) => /^\/org\/events\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(EVENT));
result.copyId = new URL(page.url()).pathname.split('/').pop();
const said = page.locator('#status').getByText(/check the date/);
await said.waitFor();
result.said = await said.textContent();
await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
result.heading = await page.getByRole('heading', { level: 1 }).textContent();
await audit('org-copy');

// Back in the list: the copy beside its source, a draft.
await page.goto(`${BASE}/org/events`);
await page.locator('li.card').nth(1).waitFor();
result.cardsAfter = await page.locator('li.card').count();

// The same organizer's own picture, while acting for the organization: the upload asks to be
// personal, so it becomes their avatar, not the organization's file.
await page.goto(`${BASE}/me/profile`);
await page.getByRole('heading', { level: 2, name: 'Picture' }).waitFor();
result.pickerWhileActing = await page.getByLabel('Choose a picture').count();
await page.getByLabel('Choose a picture').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: png() });
await page.getByRole('button', { name: 'Save the picture' }).click();
await page.getByText('The picture is saved.').first().waitFor();
result.savedWhileActing = true;
await audit('profile-acting');

await browser.close();
console.log(JSON.stringify(result));
