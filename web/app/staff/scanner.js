// Reading a ticket's QR code from the camera's picture, in every current browser.
// `qrReader()` gives `read(video)`: the text of a QR code in the video's current frame, or
// null. Where the browser has its own BarcodeDetector and it knows QR codes (Chrome on
// Android, macOS and ChromeOS), that is used: native, fast, nothing downloaded. Elsewhere
// (Safari on iOS, Firefox, Chrome on Windows and Linux) the frame is decoded by jsQR
// (vendor/jsQR.js, 257 KB, 57 KB gzipped), imported only here: by the door page once it is
// drawn online (`warm()`), so the camera still reads codes after the network goes — a door in
// a basement loses it — and no other page downloads it.
// The caller paces the reads (a few a second, one at a time): decoding runs on the main thread.

// jsQR's time grows with the pixels; a ticket held up to the phone still spans a third of a
// 640-pixel frame, far more than the 4 pixels a module needs.
const MAX_WIDTH = 640;

// The browser's own detector, or null when it has none that reads QR codes.
async function nativeReader() {
  if (!('BarcodeDetector' in window)) return null;
  // Without getSupportedFormats (an early implementation) the constructor is the only test.
  const formats = window.BarcodeDetector.getSupportedFormats
    ? await window.BarcodeDetector.getSupportedFormats().catch(() => [])
    : ['qr_code'];
  if (!formats.includes('qr_code')) return null;
  const detector = new window.BarcodeDetector({ formats: ['qr_code'] });
  return async (video) => (await detector.detect(video)).find((c) => c.rawValue)?.rawValue || null;
}

// jsQR's file is a UMD bundle, not an ES module: imported, it exports nothing and sets
// `self.jsQR`. The promise is kept so a second start does not fetch it again, and dropped on
// failure (no network at the door) so a later start can try again.
let loading = null;
function loadJsQR() {
  loading ||= import('../vendor/jsQR.js').then(() => {
    if (typeof self.jsQR !== 'function') throw new Error('jsQR did not load');
    return self.jsQR;
  }).catch((e) => {
    loading = null;
    throw e;
  });
  return loading;
}

async function jsqrReader() {
  const jsQR = await loadJsQR();
  const canvas = document.createElement('canvas');
  // Read back every frame: the browser keeps the canvas in memory rather than on the GPU.
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  return (video) => {
    const scale = Math.min(1, MAX_WIDTH / video.videoWidth);
    const width = Math.round(video.videoWidth * scale);
    const height = Math.round(video.videoHeight * scale);
    if (!width || !height) return null; // no frame yet
    if (canvas.width !== width) canvas.width = width;
    if (canvas.height !== height) canvas.height = height;
    ctx.drawImage(video, 0, 0, width, height);
    const { data } = ctx.getImageData(0, 0, width, height);
    // Tickets are dark on light, on paper or a screen: trying the inverted image as well
    // would double the work of every frame for codes nobody shows.
    return jsQR(data, width, height, { inversionAttempts: 'dontInvert' })?.data || null;
  };
}

/** @returns {Promise<(video: HTMLVideoElement) => Promise<string|null>|string|null>} */
export async function qrReader() {
  return (await nativeReader().catch(() => null)) || jsqrReader();
}

/** Loads what `qrReader()` will need while the network is there; failures wait for Start. */
export async function warm() {
  if (!(await nativeReader().catch(() => null))) await loadJsQR().catch(() => {});
}
