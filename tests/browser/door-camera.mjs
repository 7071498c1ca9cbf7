// The door's camera where the browser has no BarcodeDetector (Safari on iOS, Firefox), driven
// by tests/it/browser.rs (which makes the event, one confirmed ticket and the organizer).
// Chromium's fake camera plays a video of the ticket's QR code, drawn here by the project's
// own encoder (web/app/qr.js), and BarcodeDetector is taken away, so jsQR must read it. On a
// phone-sized screen the door starts the camera: the code is read and ACCEPTED, the figures
// go to 1 of 1; the ticket held in front of the camera is not checked again; the camera
// turned off and on reads it once more: REFUSED, already used. Screenshots and axe; JSON last.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeQr } from '../../web/app/qr.js';
import { open, signIn } from './harness.mjs';

const { BASE, EVENT, CODE, EMAIL, PASSWORD } = process.env;
const WIDTH = 640;
const HEIGHT = 480;
const FPS = 10;

// A YUV4MPEG2 video (what chromium's fake camera plays, in a loop) of `qr` on white paper:
// 4:2:0, full-range luma (C420jpeg), so white is 255 and black 0; colourless (chroma 128).
// The symbol with its 4-module quiet zone spans three quarters of the frame's height.
function y4m(qr, seconds) {
  const side = qr.size + 8;
  const scale = Math.floor((HEIGHT * 0.75) / side);
  const left = Math.floor((WIDTH - side * scale) / 2);
  const top = Math.floor((HEIGHT - side * scale) / 2);
  const luma = Buffer.alloc(WIDTH * HEIGHT, 255);
  qr.modules.forEach((row, my) => row.forEach((dark, mx) => {
    if (!dark) return;
    for (let y = 0; y < scale; y++) {
      const at = (top + (my + 4) * scale + y) * WIDTH + left + (mx + 4) * scale;
      luma.fill(0, at, at + scale);
    }
  }));
  const chroma = Buffer.alloc(WIDTH * HEIGHT / 2, 128); // U then V, each a quarter of the pixels
  const frame = Buffer.concat([Buffer.from('FRAME\n'), luma, chroma]);
  return Buffer.concat([
    Buffer.from(`YUV4MPEG2 W${WIDTH} H${HEIGHT} F${FPS}:1 Ip A1:1 C420jpeg\n`),
    ...Array(FPS * seconds).fill(frame),
  ]);
}

const dir = mkdtempSync(join(tmpdir(), 'bilet-camera-'));
const video = join(dir, 'ticket.y4m');
writeFileSync(video, y4m(encodeQr(CODE), 3));

// A phone (door staff hold one) whose camera is the video, allowed without asking.
const { browser, page, result, audit } = await open(
  { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, permissions: ['camera'] },
  { args: ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${video}`] },
);
// As in Safari on iOS and Firefox: no detector of the browser's own, the page must use jsQR.
await page.context().addInitScript(() => { delete window.BarcodeDetector; });

// What the page asks the server for: the decoder's file, and check-ins.
let decoderLoads = 0;
let checkIns = 0;
page.on('request', (r) => {
  const path = new URL(r.url()).pathname;
  if (path.endsWith('/vendor/jsQR.js')) decoderLoads += 1;
  if (r.method() === 'POST' && path.endsWith('/check-in')) checkIns += 1;
});

await signIn(page, BASE, EMAIL, PASSWORD);
await page.goto(`${BASE}/org/`);
await page.getByRole('button', { name: 'Act for it' }).first().click();
await page.getByText(/You now act for/).first().waitFor();

await page.goto(`${BASE}/door/${EVENT}`);
const figures = page.locator('.door-figures');
await figures.getByText('0 of 1 in', { exact: true }).waitFor();
result.typesBefore = await page.locator('.door-types').innerText();
result.barcodeDetector = await page.evaluate(() => 'BarcodeDetector' in window);
// The decoder comes once the page is drawn online, before any Start: a camera started later
// without a network still has it.
await page.waitForFunction(() => typeof self.jsQR === 'function');
result.decoderLoadsBeforeStart = decoderLoads;
await audit('door-camera');

const start = page.getByRole('button', { name: 'Scan the QR code with the camera' });
const outcome = async () => ({
  title: await page.locator('.outcome .outcome-title').textContent(),
  detail: await page.locator('.outcome .outcome-detail').textContent(),
  code: await page.locator('.outcome .outcome-code code').textContent(),
});

// ---- The camera reads the ticket ----
await start.click();
await page.getByText('The camera is on: point it at a QR code.').waitFor();
await page.locator('.outcome-ok .outcome-title').waitFor();
result.first = await outcome();
// Read at once, not waited for: the page's own count, before a refresh could bring the server's.
result.figures = await figures.textContent();
result.types = await page.locator('.door-types').innerText();
result.decoderLoads = decoderLoads;
await audit('door-camera-accepted');

// ---- Held in front of the camera, longer than the page ignores the same code ----
await page.waitForTimeout(4_500);
result.checkInsWhileHeld = checkIns;
result.titleWhileHeld = await page.locator('.outcome .outcome-title').textContent();
result.historyWhileHeld = await page.locator('.door-history li.past').count();

// ---- Off and on again: the used ticket is read again and refused ----
await page.getByRole('button', { name: 'Turn the camera off' }).click();
await page.getByText('The camera is off.').waitFor();
await start.click();
await page.locator('.outcome-refused .outcome-title').waitFor();
result.second = await outcome();
result.checkIns = checkIns;
result.history = await page.locator('.door-history li.past').count();
result.decoderLoadsAfterRestart = decoderLoads;
await audit('door-camera-refused');
await page.getByRole('button', { name: 'Turn the camera off' }).click();

await browser.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(result));
