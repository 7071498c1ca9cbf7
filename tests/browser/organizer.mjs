// The whole way of an event through the web front in Debian's chromium, driven by
// tests/it/browser.rs (which makes the accounts and the cover image, and checks the result
// this prints as its last line of JSON):
//   an organizer requests an organization, a platform administrator approves it, the
//   organizer creates it, creates an event with two ticket types and a cover and publishes
//   it, moving between the sections of the event's page (overview, details) by its tabs; a
//   participant finds it by search, registers and sees the QR code; the organizer finds the
//   registration in its own section, whose last action of a row is in view and clickable at
//   1280 and 820 px (and which a reload and Back keep); the door (on a
//   phone) checks the ticket in by its code; the dashboard shows the registration and the
//   check-in; the organizer changes the organization's description and uploads its logo, which
//   a reload still shows; the report lists the event with its registration and check-in; the
//   export downloads a CSV and an XLSX file.
// Every page is screenshotted into ARTIFACTS and checked by axe-core; the event's page also at
// 390 px and 1280 px, in the window's size (screen-*.png, the pictures of web/README.md).
import { readFileSync } from 'node:fs';
import { open, signIn } from './harness.mjs';

const {
  BASE, ADMIN_EMAIL, ORGANIZER_EMAIL, PARTICIPANT_EMAIL, PASSWORD, COVER, TITLE, SLUG,
  ORG_NAME, ORG_SLUG,
} = process.env;
const ARTIFACTS = process.env.ARTIFACTS;
const result = { violations: [], errors: [] };
const merge = (r) => { result.violations.push(...r.violations); result.errors.push(...r.errors); };
const waitText = (page, text) => page.getByText(text).first().waitFor();
// The tabs between the sections of an event's page, and the one shown (aria-current).
const tabs = (page) => page.getByRole('navigation', { name: 'Event sections' });
const section = async (page, name, path) => {
  await tabs(page).getByRole('link', { name, exact: true }).click();
  await page.waitForURL(path);
  await tabs(page).locator('a[aria-current="page"]', { hasText: name }).waitFor();
};
const current = (page) => tabs(page).locator('a[aria-current="page"]').textContent();
// What the window shows, without the rest of the page: the pictures of the README.
const screen = (page, name) => page.screenshot({ path: `${ARTIFACTS}/screen-${name}.png` });

// ---- The organizer asks for an organization ----
const organizer = await open();
let page = organizer.page;
await signIn(page, BASE, ORGANIZER_EMAIL, PASSWORD);
await page.goto(`${BASE}/org/`);
await page.locator('main h1').first().waitFor();
await organizer.audit('org-none');
await page.goto(`${BASE}/org/request`);
await page.locator('#req-name').fill(ORG_NAME);
await page.locator('#req-slug').fill(ORG_SLUG);
await page.locator('#req-description').fill('Chamber concerts in small halls.');
await page.getByRole('button', { name: 'Send the request' }).click();
await page.getByRole('heading', { name: ORG_NAME }).waitFor();
await waitText(page, 'Under review');
await organizer.audit('org-request');

// ---- A platform administrator approves it ----
const admin = await open();
await signIn(admin.page, BASE, ADMIN_EMAIL, PASSWORD);
await admin.page.goto(`${BASE}/admin/requests`);
await admin.page.getByRole('heading', { name: ORG_NAME }).waitFor();
// The administrator sees who asked: a name and an email, not an account's id.
const asked = admin.page.locator('li.card', { has: admin.page.getByRole('heading', { name: ORG_NAME }) });
result.requester = (await asked.locator('p.meta', { hasText: 'Requester:' }).textContent()).trim();
await admin.audit('admin-requests');
await admin.page.getByRole('button', { name: new RegExp(`^Approve\\W+${ORG_NAME}$`) }).click();
await waitText(admin.page, `Request “${ORG_NAME}” approved.`);
await admin.audit('admin-approved');
await admin.browser.close();
merge(admin.result);

// ---- The organizer creates the organization and acts for it ----
await page.reload();
await page.getByRole('button', { name: new RegExp(`^Create the organization\\W+${ORG_NAME}$`) }).click();
await page.waitForURL(`${BASE}/org/events`);
await page.getByRole('heading', { name: 'Organization events' }).waitFor();
await organizer.audit('org-events');

// ---- An event with two ticket types and a cover, published ----
await page.locator('#new-title').fill(TITLE);
await page.locator('#new-slug').fill(SLUG);
await page.locator('#new-description').fill('Quartets by candlelight, then a glass of wine.');
await page.locator('#new-startsAt').fill('2027-03-12T19:00');
await page.locator('#new-endsAt').fill('2027-03-12T22:00');
await page.locator('#new-timezone').fill('Europe/Moscow');
await page.locator('#new-locationType').selectOption('OFFLINE');
await page.locator('#new-locationAddress').fill('Moscow, Bolshaya Nikitskaya 13');
await page.getByRole('button', { name: 'Create the draft' }).click();
await page.waitForURL(/\/org\/events\/[0-9a-f-]{36}$/);
const eventId = page.url().split('/').pop();
const EVENT = `${BASE}/org/events/${eventId}`;
await page.getByRole('heading', { name: TITLE, level: 1 }).waitFor();
result.tabs = { created: await current(page) };

for (const [name, price, seats] of [['Stalls', '0', '80'], ['Balcony', '1500', '20']]) {
  await page.locator('#tt-new-name').fill(name);
  await page.locator('#tt-new-priceCents').fill(price);
  await page.locator('#tt-new-quantity').fill(seats);
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await waitText(page, `Ticket type “${name}” added.`);
}
result.typeRows = await page.locator('section[aria-labelledby="tt-title"] table tbody tr').count();
// Both on sale: the form starts the second type with the same defaults as the first.
result.offSale = await page.locator('section[aria-labelledby="tt-title"] table').getByText('Off sale').count();

// The cover is with the event's fields, in their own section.
await section(page, 'Details', `${EVENT}/details`);
result.tabs.details = await current(page);
await page.locator('#cover-file').setInputFiles(COVER);
await waitText(page, 'This is the new cover.');
await page.getByRole('button', { name: 'Upload and use as the cover' }).click();
await waitText(page, 'Cover saved.');
// The cover shown is the stored one (its presigned link), loaded and decoded.
const cover = page.locator('section[aria-labelledby="cover-title"] img');
await cover.waitFor();
await page.waitForFunction(() => {
  const img = document.querySelector('section[aria-labelledby="cover-title"] img');
  return img && img.complete && img.naturalWidth > 0 && !img.src.startsWith('blob:');
});
result.coverWidth = await cover.evaluate((img) => img.naturalWidth);
await organizer.audit('org-event-details');

await section(page, 'Overview', EVENT);
await page.getByRole('button', { name: /^Publish\b/ }).first().click();
await waitText(page, `“${TITLE}” is published.`);
await organizer.audit('org-event');

// ---- A participant finds it, registers and sees the QR code ----
const participant = await open();
const p = participant.page;
// First as a visitor: the catalogue finds it, the event page shows the cover and the types.
await p.goto(`${BASE}/`);
await p.getByLabel('Title or description').fill(TITLE);
await p.getByLabel('Title or description').press('Enter');
// Its card shows the cover (MEDIUM, through the redirection to the stored file).
await p.waitForFunction(() => {
  const img = document.querySelector('.cards .card img.cover');
  return img && !img.hidden && img.complete && img.naturalWidth > 0;
});
result.cardCoverWidth = await p.locator('.cards .card img.cover').first().evaluate((img) => img.naturalWidth);
await p.getByRole('link', { name: TITLE }).click();
await p.waitForURL(`${BASE}/e/${SLUG}`);
await p.getByRole('heading', { name: TITLE }).waitFor();
await p.getByRole('heading', { name: 'Balcony' }).waitFor();
await p.getByRole('heading', { name: 'Stalls' }).waitFor();
result.participantSeesTypes = true;
await p.waitForFunction(() => {
  const img = document.querySelector('img.cover');
  return img && !img.hidden && img.complete && img.naturalWidth > 0;
});
result.visitorCoverWidth = await p.locator('img.cover').evaluate((img) => img.naturalWidth);
await participant.audit('visitor-event');
await signIn(p, BASE, PARTICIPANT_EMAIL, PASSWORD);
await p.goto(`${BASE}/e/${SLUG}`);
await p.getByRole('heading', { name: TITLE }).waitFor();
await p.getByRole('button', { name: 'Register' }).first().click();
await waitText(p, /You are registered/);
await participant.audit('participant-registered');
await p.goto(`${BASE}/me/tickets`);
const qr = p.locator('canvas.qr').first();
await qr.waitFor();
result.qrLabel = await qr.getAttribute('aria-label');
await participant.audit('participant-tickets');
await participant.browser.close();
merge(participant.result);
const code = result.qrLabel.match(/[A-Z0-9]{6,}/g).pop();
result.code = code;

// ---- The organizer finds the registration in its section, on a computer and a tablet ----
// The last action of the first row where the page stands (only the window scrolled down to
// it, never its table sideways): inside the window and inside the visible part of the table's
// region, and the element a click at its centre reaches.
const lastAction = () => page.evaluate(() => {
  const row = document.querySelector('.reg-table tbody tr');
  window.scrollTo(0, row.getBoundingClientRect().top + window.scrollY - window.innerHeight / 3);
  const button = [...row.querySelectorAll('button')].pop();
  const r = button.getBoundingClientRect();
  const region = button.closest('[role="region"]').getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {
    name: button.textContent,
    left: r.left,
    right: r.right,
    innerWidth: window.innerWidth,
    inside: r.left >= 0 && r.right <= window.innerWidth && r.left >= region.left && r.right <= region.right,
    reached: button.contains(hit),
  };
});
const actionAt = async (width, height) => {
  await page.setViewportSize({ width, height });
  const place = await lastAction();
  // Playwright's own test of a click (visible, stable, enabled, not covered), without clicking.
  await page.locator('.reg-table tbody tr').first().getByRole('button').last().click({ trial: true, timeout: 5_000 });
  return { ...place, clickable: true };
};
await section(page, 'Registrations', `${EVENT}/registrations`);
await page.locator('.reg-table tbody tr').first().waitFor();
result.tabs.registrations = await current(page);
result.registrationRows = await page.locator('.reg-table tbody tr').count();
result.registrationsRegion = await page.locator('.reg-table').evaluate((table) => {
  const region = table.closest('[role="region"]');
  return { tabindex: region.getAttribute('tabindex'), label: document.getElementById(region.getAttribute('aria-labelledby'))?.textContent };
});
// The search finds the participant by the beginning of the email typed in capitals, and
// nobody by its middle; an empty search shows everyone again.
const search = async (text) => {
  await page.getByLabel('Name, email or code').fill(text);
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  await page.waitForFunction(() => !document.querySelector('.results').hasAttribute('aria-busy'));
  return {
    count: await page.locator('.results .count').textContent(),
    emails: await page.locator('.reg-table tbody tr .sub').allTextContents(),
    none: await page.getByText('No registrations.').count(),
  };
};
result.searches = {
  start: await search(PARTICIPANT_EMAIL.slice(0, 6).toUpperCase()),
  middle: await search(PARTICIPANT_EMAIL.slice(3, 9)),
  cleared: await search(''),
};
await page.locator('.reg-table tbody tr').first().waitFor();
result.actions = { 1280: await actionAt(1280, 720) };
await organizer.audit('org-registrations-1280');
await page.setViewportSize({ width: 1280, height: 860 });
await screen(page, 'org-registrations-1280');
// A reload draws the same section.
await page.reload();
await page.locator('.reg-table tbody tr').first().waitFor();
result.tabs.reloaded = await current(page);
result.actions[820] = await actionAt(820, 1180);
await organizer.audit('org-registrations-820');
await page.setViewportSize({ width: 390, height: 844 });
await organizer.audit('org-registrations-390');
// On a phone the table is below the filters: the picture starts a little above it.
await page.evaluate(() => window.scrollTo(0, document.querySelector('.results').getBoundingClientRect().top + window.scrollY - 160));
await screen(page, 'org-registrations-390');
// The overview on a phone, and Back to the registrations.
await section(page, 'Overview', EVENT);
await page.getByRole('heading', { name: 'Ticket types' }).waitFor();
await organizer.audit('org-event-390');
await page.evaluate(() => window.scrollTo(0, 0));
await screen(page, 'org-event-390');
await page.goBack();
await page.waitForURL(`${EVENT}/registrations`);
await page.locator('.reg-table tbody tr').first().waitFor();
result.tabs.back = await current(page);
await page.setViewportSize({ width: 1280, height: 800 });
await section(page, 'Overview', EVENT);
await page.getByRole('heading', { name: 'Ticket types' }).waitFor();
await organizer.audit('org-event-1280');
await page.evaluate(() => window.scrollTo(0, 0));
await screen(page, 'org-event-1280');
await section(page, 'Refunds', `${EVENT}/refunds`);
await waitText(page, 'No refunds');
await organizer.audit('org-event-refunds');
await page.setViewportSize({ width: 1280, height: 720 });

// ---- The door, on the organizer's phone ----
const door = await open({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
await signIn(door.page, BASE, ORGANIZER_EMAIL, PASSWORD);
await door.page.goto(`${BASE}/org/`);
await door.page.getByRole('button', { name: 'Act for it' }).first().click();
await waitText(door.page, /You now act for/);
await door.page.goto(`${BASE}/door/`);
await door.page.getByRole('link', { name: TITLE }).click();
const typed = door.page.getByLabel('Confirmation code');
await typed.waitFor();
await typed.fill(code);
await door.page.getByRole('button', { name: 'Check', exact: true }).click();
await door.page.getByText('ACCEPTED', { exact: true }).first().waitFor();
result.door = 'ACCEPTED';
await door.audit('door-accepted');
await door.browser.close();
merge(door.result);

// ---- The dashboard shows the registration and the check-in ----
await page.goto(`${BASE}/org/events/${eventId}/dashboard`);
await page.getByRole('heading', { name: 'By day' }).waitFor();
// The figures come through the broker into analytics; the page refreshes every 10 s.
const caption = (what) => page.locator('figure.dash-figure figcaption', { hasText: what });
await page.waitForFunction(() => {
  const read = (what) => [...document.querySelectorAll('figure.dash-figure figcaption')]
    .find((c) => c.textContent.startsWith(what))?.querySelector('strong')?.textContent;
  return read('Registrations') === '1' && read('Checked in') === '1';
}, null, { timeout: 60_000, polling: 500 });
result.dashboard = {
  registrations: await caption('Registrations').locator('strong').textContent(),
  checkedIn: await caption('Checked in').locator('strong').textContent(),
  // The bars drawn: a column of non-zero height in each of the two charts.
  registrationBars: await page.locator('figure.dash-figure', { hasText: 'Registrations' })
    .locator('svg rect[height]:not([height="0"])').count(),
  checkInBars: await page.locator('figure.dash-figure', { hasText: 'Checked in' })
    .locator('svg rect[height]:not([height="0"])').count(),
};
await organizer.audit('dashboard');

// ---- The organization's settings: a new description and a logo, kept across a reload ----
const DESCRIPTION = `Quartets and trios in small halls, by candlelight (${ORG_SLUG}).`;
const logoShown = () => page.waitForFunction(() => {
  const img = document.querySelector('section[aria-labelledby="logo-title"] img');
  return img && !img.hidden && img.complete && img.naturalWidth > 0 && !img.src.startsWith('blob:');
});
await page.goto(`${BASE}/org/settings`);
await page.getByRole('heading', { name: 'Organization settings', level: 1 }).waitFor();
await page.locator('#set-description').fill(DESCRIPTION);
await page.getByRole('button', { name: 'Save', exact: true }).click();
await waitText(page, 'Settings saved.');
// The same image as the cover.
await page.locator('#logo-file').setInputFiles(COVER);
await waitText(page, 'This is the new logo.');
await page.getByRole('button', { name: 'Upload and use as the logo' }).click();
await waitText(page, 'Logo saved.');
await logoShown();
await page.reload();
await page.getByRole('heading', { name: 'Organization settings', level: 1 }).waitFor();
await logoShown();
result.settings = {
  description: DESCRIPTION,
  shownDescription: await page.locator('#set-description').inputValue(),
  logoWidth: await page.locator('section[aria-labelledby="logo-title"] img').evaluate((img) => img.naturalWidth),
  // The owner may change them: nothing is read-only.
  readOnly: await page.locator('main input[readonly], main textarea[readonly], main button:disabled').count(),
};
await organizer.audit('org-settings');

// ---- The report: the event with its registration and check-in, linked to its dashboard ----
await page.goto(`${BASE}/org/report`);
await page.getByRole('heading', { name: 'Events report', level: 1 }).waitFor();
await page.locator('section[aria-labelledby="rep-events"] table').getByRole('link', { name: TITLE }).waitFor();
result.report = await page.evaluate((title) => {
  const table = document.querySelector('section[aria-labelledby="rep-events"] table');
  const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
  const row = [...table.querySelectorAll('tbody tr')].find((tr) => tr.querySelector('th').textContent === title);
  const cell = (name) => row?.children[heads.indexOf(name)]?.textContent ?? null;
  const total = (name) => [...document.querySelectorAll('section[aria-labelledby="rep-totals"] dt')]
    .find((dt) => dt.textContent === name)?.nextElementSibling?.textContent ?? null;
  return {
    rows: table.querySelectorAll('tbody tr').length,
    link: row?.querySelector('th a')?.getAttribute('href') ?? null,
    registrations: cell('Registrations'),
    checkedIn: cell('Checked in'),
    totalRegistrations: total('Registrations'),
  };
}, TITLE);
await organizer.audit('org-report');

// ---- Export: the files download ----
await page.goto(`${EVENT}/export`);
await page.getByRole('heading', { name: TITLE, level: 1 }).waitFor();
result.tabs.export = await current(page);
result.exports = {};
for (const [format, label] of [['csv', 'Download CSV'], ['xlsx', 'Download XLSX']]) {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: label }).click(),
  ]);
  const path = `${ARTIFACTS}/export.${format}`;
  await download.saveAs(path);
  const bytes = readFileSync(path);
  result.exports[format] = {
    name: download.suggestedFilename(),
    bytes: bytes.length,
    head: format === 'csv' ? bytes.toString('utf8').split(/\r?\n/)[0] : bytes.subarray(0, 2).toString('latin1'),
    lines: format === 'csv' ? bytes.toString('utf8').trim().split(/\r?\n/).length : null,
  };
}
await organizer.audit('org-event-exported');

// ---- The other organizer pages and the API reference ----
for (const [path, name] of [['/org/members', 'org-members'], ['/org/', 'org-list'], ['/door/', 'door-events'], ['/docs', 'docs']]) {
  await page.goto(`${BASE}${path}`);
  await page.locator('main h1').first().waitFor();
  await page.waitForLoadState('networkidle');
  await organizer.audit(name);
}

await organizer.browser.close();
merge(organizer.result);
result.eventId = eventId;
console.log(JSON.stringify(result));
