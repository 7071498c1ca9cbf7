// The door in Debian's chromium, driven by tests/it/browser.rs: the organizer signs in, acts
// for the organization, opens the event's door page on a phone-sized screen and checks a
// ticket in by its typed code (ACCEPTED), then the same code again (REFUSED: already used),
// then a ticket of another event (REFUSED, naming that event).
// Pages are screenshotted into ARTIFACTS and checked by axe-core; the last line is JSON.
import { open, signIn } from './harness.mjs';

const { BASE, EVENT, CODE, EMAIL, PASSWORD, ARTIFACTS } = process.env;
// A phone: door staff hold one.
const { browser, page, result, audit } = await open({
  viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
});
result.outcomes = [];

await signIn(page, BASE, EMAIL, PASSWORD);

// Act for the organization (the token then carries it).
await page.goto(`${BASE}/org/`);
await page.getByRole('button', { name: 'Act for it' }).first().click();
await page.getByText(/You now act for/).first().waitFor();
await audit('organizations');

await page.goto(`${BASE}/door/${EVENT}`);
const code = page.getByLabel('Confirmation code');
await code.waitFor();
await audit('door');
// Typed in lower case on purpose: case does not matter at the door.
for (const [attempt, expected] of [['first', 'ACCEPTED'], ['again', 'REFUSED']]) {
  await code.fill(CODE.toLowerCase());
  await page.getByRole('button', { name: 'Check', exact: true }).click();
  await page.getByText(expected, { exact: true }).first().waitFor();
  result.outcomes.push(expected);
  await audit(`door-${attempt}`);
  if (attempt === 'first') {
    // The pictures of web/README.md: the window only, on a phone and on a computer.
    await page.screenshot({ path: `${ARTIFACTS}/screen-door-390.png` });
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.screenshot({ path: `${ARTIFACTS}/screen-door-1280.png` });
    await page.setViewportSize({ width: 390, height: 844 });
  }
}
result.already = await page.getByText('This ticket has already been used to enter.').count();
// A ticket of the organization's other event, typed at this door.
await code.fill(process.env.OTHER_CODE);
await page.getByRole('button', { name: 'Check', exact: true }).click();
await page.getByText(/This ticket is for another event: “Other hall”/).first().waitFor();
result.outcomes.push('OTHER_EVENT');
await audit('door-other-event');

await browser.close();
console.log(JSON.stringify(result));
