// The vendored third-party files (web/app/vendor/): each is the very file vendor.json pins
// (sha256; scripts/vendor-web.sh checks the npm tarball's integrity when fetching it), its
// license is next to it, only the door's scanner reaches it and only by import(), and the
// decoder reads the codes our own encoder draws on tickets. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { app, graph } from './imports.mjs';
import { encodeQr } from '../app/qr.js';

const vendor = new URL('vendor/', app);
const manifest = JSON.parse(readFileSync(new URL('vendor.json', vendor), 'utf8'));

test('each vendored file is the one the manifest pins, with its license', () => {
  assert.ok(manifest.files.length >= 1);
  for (const f of manifest.files) {
    const body = readFileSync(new URL(f.file, vendor));
    assert.equal(createHash('sha256').update(body).digest('hex'), f.sha256, `${f.file}: run scripts/vendor-web.sh`);
    assert.match(f.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/, f.file);
    assert.match(f.version, /^\d+\.\d+\.\d+$/, `${f.file}: an exact version`);
    assert.ok(f.tarball.endsWith(`/${f.package}-${f.version}.tgz`), f.file);
    const license = readFileSync(new URL(f.licenseFile, vendor), 'utf8');
    if (f.license === 'Apache-2.0') assert.match(license, /Apache License\s+Version 2\.0/);
  }
  // Nothing sits in vendor/ that the manifest does not account for.
  const known = new Set(['vendor.json', ...manifest.files.flatMap((f) => [f.file, f.licenseFile])]);
  for (const name of readdirSync(vendor)) assert.ok(known.has(name), `${name} is not in vendor.json`);
});

test('the event page and the door page never load the decoder statically', () => {
  for (const file of graph(['main.js', 'pages/event.js'])) {
    assert.ok(!file.startsWith('vendor/') && file !== 'staff/scanner.js', file);
  }
  // The door page carries the small scanner module; jsQR comes by import() once it is drawn.
  const door = graph(['pages/door.js']);
  assert.ok(door.includes('staff/scanner.js'));
  assert.ok(!door.some((f) => f.startsWith('vendor/')), door.join());
});

test('only the scanner names the vendored decoder, and by import()', () => {
  const naming = readdirSync(app, { recursive: true })
    .filter((f) => f.endsWith('.js') && !f.startsWith('vendor'))
    .filter((f) => readFileSync(new URL(f, app), 'utf8').includes('vendor/'));
  assert.deepEqual(naming, ['staff/scanner.js']);
  const scanner = readFileSync(new URL('staff/scanner.js', app), 'utf8');
  assert.match(scanner, /import\('\.\.\/vendor\/jsQR\.js'\)/);
});

// RGBA pixels of a symbol: light quiet zone of 4 modules, `scale` pixels a module.
function pixels(qr, scale) {
  const side = (qr.size + 8) * scale;
  const data = new Uint8ClampedArray(side * side * 4).fill(255);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const my = Math.floor(y / scale) - 4;
      const mx = Math.floor(x / scale) - 4;
      if (qr.modules[my]?.[mx]) data.fill(0, (y * side + x) * 4, (y * side + x) * 4 + 3);
    }
  }
  return { data, side };
}

test('jsQR, imported as a module, sets self.jsQR and reads the codes qr.js draws', async () => {
  // As a browser loads it: an ES module (strict, no `module`, `exports` or `define`, so the
  // UMD wrapper falls back to `self`). Node would take the file for CommonJS by its missing
  // `import`/`export`, so it is imported from a data: address, always a module; and node has
  // no `self`, which a browser's window and worker have.
  globalThis.self ??= globalThis;
  const source = readFileSync(new URL('jsQR.js', vendor), 'utf8');
  const exported = await import(`data:text/javascript,${encodeURIComponent(source)}`);
  assert.deepEqual(Object.keys(exported), [], 'a UMD bundle exports nothing to a module');
  assert.equal(typeof self.jsQR, 'function');
  for (const text of ['K7Q2XW9M', 'AB12CD34', 'https://bilet.example/e/spring-quartets']) {
    const { data, side } = pixels(encodeQr(text), 3);
    const found = self.jsQR(data, side, side, { inversionAttempts: 'dontInvert' });
    assert.equal(found?.data, text);
  }
  // A blank frame reads as nothing, not as an error.
  const blank = new Uint8ClampedArray(100 * 100 * 4).fill(255);
  assert.equal(self.jsQR(blank, 100, 100, { inversionAttempts: 'dontInvert' }), null);
});
