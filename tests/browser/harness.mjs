// What every browser test shares: Debian's chromium (no browser is downloaded), English texts,
// script errors collected, and an audit that screenshots the page into ARTIFACTS and keeps
// axe-core's serious and critical violations.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { crc32, deflateSync } from 'node:zlib';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// Pages still open when a step fails are screenshotted (failure-N.png) before the run ends,
// so a failed run shows where it stood.
const live = new Set();
async function failed(e) {
  let n = 0;
  for (const page of live) {
    n += 1;
    await page.screenshot({ path: `${process.env.ARTIFACTS}/failure-${n}.png`, fullPage: true }).catch(() => {});
  }
  console.error(e);
  process.exit(1);
}
// A failed step of a script's top level arrives as an uncaught exception.
process.on('uncaughtException', failed);
process.on('unhandledRejection', failed);

// A page in a fresh browser; `contextOptions` add to the defaults (a phone's screen, say),
// `args` to chromium's command line (a fake camera, say).
export async function open(contextOptions = {}, { args = [] } = {}) {
  mkdirSync(process.env.ARTIFACTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', ...args],
  });
  // axe-core is injected into each page, which the pages' content policy (rightly) forbids.
  const context = await browser.newContext({ locale: 'en-US', bypassCSP: true, ...contextOptions });
  // English texts, so a test reads the same words as its author.
  await context.addInitScript(() => localStorage.setItem('bilet.lang', 'en'));
  const page = await context.newPage();
  live.add(page);
  page.on('close', () => live.delete(page));
  const result = { violations: [], errors: [] };
  page.on('pageerror', (e) => result.errors.push(String(e)));
  // Another tab of the same browser is audited when given.
  const audit = async (name, tab = page) => {
    await tab.screenshot({ path: `${process.env.ARTIFACTS}/${name}.png`, fullPage: true });
    await tab.addScriptTag({ content: axeSource });
    const found = await tab.evaluate(async () => (await globalThis.axe.run(document, {
      resultTypes: ['violations'],
    })).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })));
    result.violations.push(...found
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ page: name, ...v })));
  };
  return { browser, page, result, audit };
}

// Signs in through the sign-in page and waits until the header has it (on a phone the
// header's menu is folded, so its Sign out is there but not shown).
export async function signIn(page, base, email, password) {
  await page.goto(`${base}/signin`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator('#account button.link').waitFor({ state: 'attached' });
}

// Hands over to the Rust test between two steps of a script: prints "@name" and resolves
// with the line the test answers on stdin once it has done its part (moved its clock, taken
// a seat for someone else). Scripts that never hand over never read stdin.
let lines = null;
export function handOver(name) {
  if (!lines) {
    lines = { ready: [], waiting: null, rest: '' };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      lines.rest += chunk;
      for (let at; (at = lines.rest.indexOf('\n')) >= 0;) {
        lines.ready.push(lines.rest.slice(0, at));
        lines.rest = lines.rest.slice(at + 1);
      }
      if (lines.waiting && lines.ready.length) lines.waiting(lines.ready.shift());
    });
  }
  console.log(`@${name}`);
  if (lines.ready.length) return Promise.resolve(lines.ready.shift());
  return new Promise((resolve) => {
    lines.waiting = (line) => { lines.waiting = null; resolve(line); };
  });
}

// A 48×48 PNG with a gradient, made here so a test needs no file of its own: eight-bit RGB,
// each row led by filter 0, the chunks' CRCs over type and data.
export function png(size = 48) {
  const chunk = (type, data) => {
    const out = Buffer.alloc(data.length + 12);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc(size * (1 + 3 * size));
  for (let y = 0; y < size; y += 1) {
    for (let x = 0; x < size; x += 1) rows.set([x * 5, y * 5, 160], y * (1 + 3 * size) + 1 + 3 * x);
  }
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}
