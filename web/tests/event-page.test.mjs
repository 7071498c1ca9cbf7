// The event page stays light: the organizer, administrator and door modules (and their
// texts) are reached only by dynamic import() from the router, never by the static imports
// an event page loads. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const app = new URL('../app/', import.meta.url);

// The files a module pulls in with static `import … from '…'` (dynamic import() is left out).
function graph(entries) {
  const seen = new Set();
  const visit = (url) => {
    if (seen.has(url.href)) return;
    seen.add(url.href);
    const text = readFileSync(url, 'utf8');
    for (const m of text.matchAll(/^\s*import\s[^;]*?from\s+'([^']+)'/gms)) visit(new URL(m[1], url));
    for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) visit(new URL(m[1], url));
  };
  entries.forEach((e) => visit(new URL(e, app)));
  return [...seen].map((href) => href.slice(app.href.length));
}

// main.js and its modules, the page and its modules, and the dictionary i18n.js loads.
const eventPage = (l) => [...graph(['main.js', 'pages/event.js']), `lang/${l}.js`];
const bytes = (files) => files.reduce((n, f) => n + readFileSync(new URL(f, app)).length, 0);

test('the event page loads no organizer, administrator or door module', () => {
  for (const file of eventPage('ru')) {
    assert.ok(!/^(staff\/|lang\/\w+\.\w+\.js$|pages\/(org|admin|door))/.test(file), file);
  }
});

test('the event page reaches the staff pages only through the router', () => {
  const main = readFileSync(new URL('main.js', app), 'utf8');
  assert.match(main, /import\('\.\/staff\/router\.js'\)/);
});

test('the event page JavaScript stays within its size', () => {
  // 43.3 KB in Russian before the organizer pages, 45.0 KB with the Telegram sign-in texts
  // (the shared dictionary is on every page). The bound a visitor feels is 150 KB gzipped;
  // this one makes every kilobyte added here a decision.
  for (const l of ['ru', 'en']) {
    const size = bytes(eventPage(l));
    assert.ok(size < 46_000, `${l}: ${size} bytes`);
  }
});
