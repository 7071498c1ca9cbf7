// What the app's modules load, read from their text: shared by the tests that keep a page's
// downloads in check (not a test itself: node --test runs *.test.mjs).
import { readFileSync } from 'node:fs';

export const app = new URL('../app/', import.meta.url);

// The files (paths below app/) the entries pull in with static `import … from '…'` and
// `import '…'`, the entries included; dynamic import() is left out.
export function graph(entries) {
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
