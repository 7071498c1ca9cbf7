// Return addresses after signing in: only a path of this site, whatever a link put in `next`.
// Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';

globalThis.location ??= new URL('https://bilet.example/signin');
const { safeNext } = await import('../app/nav.js');

test('a path of this site is kept, with its query and fragment', () => {
  assert.equal(safeNext('/me/tickets'), '/me/tickets');
  assert.equal(safeNext('/e/rock-night?source=vk#types'), '/e/rock-night?source=vk#types');
});

test('anything that leaves the site, or is no path, goes home', () => {
  for (const next of ['//evil.example', '/\\evil.example', '/\\/evil.example', 'https://evil.example/',
    'javascript:alert(1)', 'evil.example', '', null, undefined, '/\t/evil.example']) {
    assert.equal(safeNext(next), '/', String(next));
  }
});
