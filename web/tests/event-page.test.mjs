// The event page stays light: the organizer, administrator and door modules (and their
// texts) are reached only by dynamic import() from the router, never by the static imports
// an event page loads. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { app, graph } from './imports.mjs';

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

test('the event page stays within its budget', () => {
  // What a visitor's phone downloads for an event page, compressed as the gateway sends it:
  // 43.3 KB raw in Russian before the organizer pages, 45.0 KB with the Telegram sign-in
  // texts, 47.2 KB (18.4 KB gzipped, file by file) with the folding menu and safer return addresses,
  // 49.8 KB (19.5 KB) with the waiting room's way to the queue and its admission. The
  // bound a visitor feels is 150 KB gzipped; these make every kilobyte added a decision.
  const css = gzipSync(readFileSync(new URL('style.css', app))).length;
  for (const l of ['ru', 'en']) {
    const files = eventPage(l);
    const size = bytes(files);
    const zipped = files.reduce((n, f) => n + gzipSync(readFileSync(new URL(f, app))).length, 0);
    assert.ok(size < 50_500, `${l}: ${size} bytes`);
    assert.ok(zipped < 20_000, `${l}: ${zipped} bytes gzipped`);
    // The shell, its style sheet and each module: one request each (HTTP/1.1 keeps six at once).
    assert.ok(files.length + 2 <= 16, `${l}: ${files.length + 2} requests`);
  }
  assert.ok(css < 7_000, `style.css: ${css} bytes gzipped`);
});
