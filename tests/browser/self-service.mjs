// A participant manages their own account in Debian's chromium, driven by tests/it/browser.rs
// (which makes the account): signed in on a computer and on a phone, the phone opens its
// folded menu and goes to the profile, renames the account, picks a picture (a text file is
// refused before any upload, a PNG previewed), saves it and finds it again after a reload, which
// the computer sees too and removes (the test checks the account over the API at each of those
// two hand-overs); sees both sessions (its own marked) and signs the computer out, whose next
// page sends it to sign in; then changes the password, which signs the phone out too, and signs
// in with the new one. Along the way: an unknown address shows the front's own 404 page, a
// reset link's token leaves the address bar, and a return address that leaves the site goes
// home. Screenshots and axe on each page; JSON last.
import { handOver, open, png, signIn } from './harness.mjs';

// The picture of the profile page once it has loaded (a link that answered, not the preview).
const pictureShown = (page) => page.waitForFunction(() => {
  const img = document.querySelector('section[aria-labelledby="profile-avatar"] img');
  return img && !img.hidden && !img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0
    ? img.naturalWidth : false;
}).then((w) => w.jsonValue());

const { BASE, EMAIL, PASSWORD, NEW_PASSWORD, GROUP_CODE } = process.env;
const result = { violations: [], errors: [] };
const merge = (r) => { result.violations.push(...r.violations); result.errors.push(...r.errors); };

// ---- The computer ----
const computer = await open();
await signIn(computer.page, BASE, EMAIL, PASSWORD);

// ---- The phone: the folded menu, the profile, a new name ----
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const phone = await open({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, userAgent: IPHONE });
const p = phone.page;
await signIn(p, BASE, EMAIL, PASSWORD);
const menu = p.getByRole('button', { name: 'Menu' });
result.menuFolded = await menu.getAttribute('aria-expanded');
result.profileHidden = !(await p.getByRole('link', { name: 'Test' }).isVisible());
await phone.audit('phone-menu-folded');
await menu.click();
result.menuOpened = await menu.getAttribute('aria-expanded');
await phone.audit('phone-menu-open');
await p.getByRole('link', { name: 'Test' }).click();
await p.getByRole('heading', { level: 1, name: 'Your profile' }).waitFor();
result.menuFoldedAfter = await menu.getAttribute('aria-expanded');
await p.getByLabel('First name').fill('Vera');
await p.getByLabel('Last name').fill('Pavlova');
await p.getByRole('button', { name: 'Save the name' }).click();
await p.getByText('The name is saved.').first().waitFor();
result.renamed = true;

// ---- The picture: checked before upload, previewed, saved, there after a reload ----
const picture = p.getByLabel('Choose a picture');
await picture.setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not an image') });
await p.locator('#avatar-file-error').waitFor();
result.pictureRefused = { invalid: await picture.getAttribute('aria-invalid'), said: await p.locator('#avatar-file-error').textContent() };
await picture.setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: png() });
await p.getByText('The picture you chose, not saved yet.').waitFor();
result.picturePreview = await p.locator('section[aria-labelledby="profile-avatar"] img')
  .evaluate((img) => img.src.startsWith('blob:') && !img.hidden);
await p.getByRole('button', { name: 'Save the picture' }).click();
await p.getByText('The picture is saved.').first().waitFor();
await p.reload();
await p.getByText('Your picture.').waitFor();
result.pictureAfterReload = await pictureShown(p);
await phone.audit('profile-picture-390');
await handOver('picture-saved');

// The computer finds the same picture and removes it.
const c0 = computer.page;
await c0.goto(`${BASE}/me/profile`);
result.pictureOnComputer = await pictureShown(c0);
await computer.audit('profile-picture-1280');
await c0.getByRole('button', { name: 'Remove the picture' }).click();
await c0.getByText('The picture is removed.').first().waitFor();
await c0.getByText('No picture yet.').waitFor();
result.removeGone = await c0.getByRole('button', { name: 'Remove the picture' }).count();
result.pictureHidden = await c0.locator('section[aria-labelledby="profile-avatar"] img').isHidden();
await computer.audit('profile-picture-removed');
await handOver('picture-removed');

// A group's link: the code leaves the address, the phone joins, the page says which group.
await p.goto(`${BASE}/me/join?code=${encodeURIComponent(GROUP_CODE)}`);
await p.getByText(/^You joined the group/).first().waitFor();
result.joined = await p.locator('main .notice').first().textContent();
result.joinAddress = new URL(p.url()).pathname + new URL(p.url()).search;
await phone.audit('joined');
await p.goto(`${BASE}/me/profile`);

// Every session (the test's own sign-in through the API too), this one marked as the
// iPhone it is; the computer's signed out from here.
const sessions = p.locator('li.session');
await sessions.nth(2).waitFor();
result.sessions = await sessions.count();
result.thisDevice = await sessions.filter({ hasText: 'This device' }).count();
result.thisDeviceIsThePhone = await sessions.filter({ hasText: 'This device' }).filter({ hasText: 'iPhone' }).count();
await phone.audit('profile');
const computerSession = sessions.filter({ hasText: 'X11' });
await computerSession.getByRole('button', { name: /^Sign out/ }).click();
await p.getByText(/^Signed out: /).first().waitFor();
await p.locator('li.session').nth(2).waitFor({ state: 'detached' });
result.sessionsAfter = await p.locator('li.session').count();

// The computer's next page finds its session ended: to the sign-in page.
await computer.page.goto(`${BASE}/me/tickets`);
await computer.page.waitForURL(/\/signin/);
result.computerSignedOut = new URL(computer.page.url()).pathname;

// ---- The password: changed on the phone, which is then signed out too ----
await p.getByLabel('Current password').fill(PASSWORD);
await p.getByLabel('New password').fill(NEW_PASSWORD);
await p.getByLabel('Repeat the password').fill(NEW_PASSWORD);
await p.getByRole('button', { name: 'Change the password' }).click();
await p.waitForURL(/\/signin$/);
await signIn(p, BASE, EMAIL, NEW_PASSWORD);
result.newPasswordWorks = true;

// ---- Addresses: an unknown one, a reset link, a return address elsewhere ----
const c = computer.page;
const missing = await c.goto(`${BASE}/about`);
result.missingStatus = missing.status();
await c.getByRole('heading', { level: 1 }).waitFor();
result.missingHeading = await c.getByRole('heading', { level: 1 }).textContent();
await computer.audit('not-found');
await c.goto(`${BASE}/reset-password?token=secret-token-1234`);
await c.getByLabel('New password').waitFor();
result.resetAddress = new URL(c.url()).pathname + new URL(c.url()).search;
result.resetHistory = await c.evaluate(() => history.length);
await c.goto(`${BASE}/signin?next=${encodeURIComponent('/\\evil.example')}`);
await c.getByLabel('Email').fill(EMAIL);
await c.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD);
await c.getByRole('button', { name: 'Sign in', exact: true }).click();
await c.waitForURL((u) => u.pathname === '/');
result.afterEvilNext = new URL(c.url()).href;

merge(phone.result);
merge(computer.result);
await phone.browser.close();
await computer.browser.close();
console.log(JSON.stringify(result));
// The hand-overs read stdin, which would keep the script alive after its last line.
process.stdin.destroy();
