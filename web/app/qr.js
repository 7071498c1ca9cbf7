// A small QR Code encoder (ISO/IEC 18004): byte mode, error correction level M,
// versions 1–10, with the mask chosen by the standard's penalty rules.
// Tickets carry an 8-character confirmation code, so version 1 is the usual case;
// 10 (213 bytes) leaves room for longer texts. No DOM at import: node tests load it.

const MAX_VERSION = 10;
// Level M per version (index = version): EC codewords per block, number of blocks.
const ECC_PER_BLOCK = [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26];
const BLOCKS = [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5];
const LEVEL_M = 0b00; // the two EC-level bits of the format information

export const sizeOf = (version) => version * 4 + 17;

// Modules left for data and EC after the function patterns, in bits.
export function rawModules(version) {
  let n = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    n -= (25 * align - 10) * align - 55;
    if (version >= 7) n -= 36; // two version-information blocks of 18
  }
  return n;
}

export const dataCapacity = (v) =>
  Math.floor(rawModules(v) / 8) - ECC_PER_BLOCK[v] * BLOCKS[v];

// Bytes that fit: mode (4 bits) and count (8 bits, 16 from version 10) come first.
export const byteCapacity = (v) =>
  Math.floor((dataCapacity(v) * 8 - 4 - (v < 10 ? 8 : 16)) / 8);

export function alignmentPositions(version) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const out = [6];
  for (let pos = sizeOf(version) - 7; out.length < count; pos -= step) out.splice(1, 0, pos);
  return out;
}

// ---- Data codewords -------------------------------------------------------

function pushBits(bits, value, length) {
  for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1);
}

// Mode, count, bytes, terminator, then the pad bytes 0xEC 0x11 alternately.
export function dataCodewords(bytes, version) {
  const capacityBits = dataCapacity(version) * 8;
  const bits = [];
  pushBits(bits, 0b0100, 4);
  pushBits(bits, bytes.length, version < 10 ? 8 : 16);
  for (const b of bytes) pushBits(bits, b, 8);
  if (bits.length > capacityBits) throw new RangeError('data too long for this version');
  pushBits(bits, 0, Math.min(4, capacityBits - bits.length));
  pushBits(bits, 0, (8 - (bits.length % 8)) % 8);
  const out = [];
  for (let i = 0; i < bits.length; i += 8) {
    out.push(bits.slice(i, i + 8).reduce((acc, b) => (acc << 1) | b, 0));
  }
  for (let pad = 0xec; out.length < capacityBits / 8; pad ^= 0xec ^ 0x11) out.push(pad);
  return out;
}

// ---- Reed–Solomon over GF(256), polynomial x^8+x^4+x^3+x^2+1 ---------------

function gfMul(x, y) {
  let z = 0;
  for (let i = 7; i >= 0; i--) {
    z = (z << 1) ^ ((z >>> 7) * 0x11d);
    z ^= ((y >>> i) & 1) * x;
  }
  return z;
}

// Generator (x - α^0)…(x - α^(degree-1)), highest coefficient first, the leading 1 left out.
export function rsGenerator(degree) {
  const g = new Array(degree).fill(0);
  g[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      g[j] = gfMul(g[j], root);
      if (j + 1 < degree) g[j] ^= g[j + 1];
    }
    root = gfMul(root, 2);
  }
  return g;
}

export function rsRemainder(data, generator) {
  const rem = new Array(generator.length).fill(0);
  for (const b of data) {
    const factor = b ^ rem.shift();
    rem.push(0);
    generator.forEach((c, i) => { rem[i] ^= gfMul(c, factor); });
  }
  return rem;
}

// Splits the data into blocks (the short ones first), adds each block's EC codewords and
// interleaves: data column by column, then EC column by column.
export function withErrorCorrection(data, version) {
  const count = BLOCKS[version];
  const eccLen = ECC_PER_BLOCK[version];
  const total = Math.floor(rawModules(version) / 8);
  const shortData = Math.floor(total / count) - eccLen;
  const longBlocks = total % count;
  const generator = rsGenerator(eccLen);
  const blocks = [];
  for (let i = 0, at = 0; i < count; i++) {
    const len = shortData + (i >= count - longBlocks ? 1 : 0);
    const part = data.slice(at, at + len);
    at += len;
    blocks.push({ part, ecc: rsRemainder(part, generator) });
  }
  const out = [];
  for (let i = 0; i <= shortData; i++) {
    for (const b of blocks) if (i < b.part.length) out.push(b.part[i]);
  }
  for (let i = 0; i < eccLen; i++) for (const b of blocks) out.push(b.ecc[i]);
  return out;
}

// ---- Format and version information (BCH codes) ---------------------------

export function formatBits(mask) {
  const data = (LEVEL_M << 3) | mask;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  return ((data << 10) | rem) ^ 0x5412;
}

export function versionBits(version) {
  let rem = version;
  for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
  return (version << 12) | rem;
}

// ---- The matrix -----------------------------------------------------------

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

class Grid {
  constructor(size) {
    this.size = size;
    this.dark = new Uint8Array(size * size);
    this.fixed = new Uint8Array(size * size); // function patterns: never data, never masked
  }
  get(x, y) { return this.dark[y * this.size + x] === 1; }
  set(x, y, dark) { this.dark[y * this.size + x] = dark ? 1 : 0; }
  fix(x, y, dark) { this.set(x, y, dark); this.fixed[y * this.size + x] = 1; }
  isFixed(x, y) { return this.fixed[y * this.size + x] === 1; }
}

function drawFinder(grid, cx, cy) {
  // 7×7 rings (dark, light, 3×3 dark) plus the light separator around them.
  for (let dy = -4; dy <= 4; dy++) {
    for (let dx = -4; dx <= 4; dx++) {
      const x = cx + dx;
      const y = cy + dy;
      if (x < 0 || y < 0 || x >= grid.size || y >= grid.size) continue;
      const ring = Math.max(Math.abs(dx), Math.abs(dy));
      grid.fix(x, y, ring !== 2 && ring !== 4);
    }
  }
}

function drawAlignment(grid, cx, cy) {
  for (let dy = -2; dy <= 2; dy++) {
    for (let dx = -2; dx <= 2; dx++) grid.fix(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
  }
}

function drawFormat(grid, mask) {
  const bits = formatBits(mask);
  const bit = (i) => ((bits >>> i) & 1) === 1;
  const n = grid.size;
  // Copy 1, around the top-left finder (skipping the timing pattern at 6).
  for (let i = 0; i <= 5; i++) grid.fix(8, i, bit(i));
  grid.fix(8, 7, bit(6));
  grid.fix(8, 8, bit(7));
  grid.fix(7, 8, bit(8));
  for (let i = 9; i < 15; i++) grid.fix(14 - i, 8, bit(i));
  // Copy 2, split between the top-right and bottom-left finders.
  for (let i = 0; i < 8; i++) grid.fix(n - 1 - i, 8, bit(i));
  for (let i = 8; i < 15; i++) grid.fix(8, n - 15 + i, bit(i));
  grid.fix(8, n - 8, true); // the dark module, always dark
}

function drawFunctionPatterns(grid, version) {
  const n = grid.size;
  for (let i = 0; i < n; i++) {
    grid.fix(6, i, i % 2 === 0);
    grid.fix(i, 6, i % 2 === 0);
  }
  drawFinder(grid, 3, 3);
  drawFinder(grid, n - 4, 3);
  drawFinder(grid, 3, n - 4);
  const pos = alignmentPositions(version);
  const last = pos.length - 1;
  for (let i = 0; i <= last; i++) {
    for (let j = 0; j <= last; j++) {
      // Skip the three corners taken by finder patterns.
      if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) continue;
      drawAlignment(grid, pos[i], pos[j]);
    }
  }
  drawFormat(grid, 0); // reserves the area; redrawn for the chosen mask
  if (version >= 7) {
    const bits = versionBits(version);
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const a = n - 11 + (i % 3);
      const b = Math.floor(i / 3);
      grid.fix(a, b, dark);
      grid.fix(b, a, dark);
    }
  }
}

// Codeword bits go up and down two-module columns from the bottom right, skipping the
// vertical timing column; remainder bits stay light.
function drawCodewords(grid, codewords) {
  const n = grid.size;
  let i = 0;
  for (let right = n - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let step = 0; step < n; step++) {
      const y = upward ? n - 1 - step : step;
      for (let j = 0; j < 2; j++) {
        const x = right - j;
        if (grid.isFixed(x, y)) continue;
        if (i < codewords.length * 8) {
          grid.set(x, y, ((codewords[i >>> 3] >>> (7 - (i & 7))) & 1) === 1);
          i++;
        }
      }
    }
  }
}

function applyMask(grid, mask) {
  const test = MASKS[mask];
  for (let y = 0; y < grid.size; y++) {
    for (let x = 0; x < grid.size; x++) {
      if (!grid.isFixed(x, y) && test(x, y)) grid.set(x, y, !grid.get(x, y));
    }
  }
}

// ---- Penalty (ISO/IEC 18004 §7.8.3) ----------------------------------------

// N3 looks for 1:1:3:1:1 with four light modules on one side inside the symbol (the quiet
// zone is not counted). Encoders differ in such details and so may pick other masks; every
// mask is valid and decodes the same.
const FINDER_LIKE = ['10111010000', '00001011101'];

// N1 and N3 of one row or column as a string of 0 (light) and 1 (dark); exported for tests.
export function linePenalty(line) {
  let score = 0;
  let run = 1;
  for (let i = 1; i <= line.length; i++) {
    if (i < line.length && line[i] === line[i - 1]) {
      run++;
    } else {
      if (run >= 5) score += 3 + (run - 5); // N1: runs of five or more
      run = 1;
    }
  }
  for (const pattern of FINDER_LIKE) {
    for (let at = line.indexOf(pattern); at !== -1; at = line.indexOf(pattern, at + 1)) score += 40; // N3
  }
  return score;
}

// modules[y][x], true = dark. Scored with the format information drawn, as decoders see it.
export function penalty(modules) {
  const n = modules.length;
  let score = 0;
  let dark = 0;
  for (let y = 0; y < n; y++) {
    let row = '';
    let col = '';
    for (let x = 0; x < n; x++) {
      const c = modules[y][x];
      row += c ? '1' : '0';
      col += modules[x][y] ? '1' : '0';
      if (c) dark++;
      if (x < n - 1 && y < n - 1 && c === modules[y][x + 1] && c === modules[y + 1][x] && c === modules[y + 1][x + 1]) {
        score += 3; // N2: each 2×2 block of one colour
      }
    }
    score += linePenalty(row) + linePenalty(col);
  }
  const total = n * n;
  return score + Math.floor(Math.abs(dark * 20 - total * 10) / total) * 10; // N4: 10 per 5 % off half
}

// ---- Public API -----------------------------------------------------------

function rows(grid) {
  return Array.from({ length: grid.size }, (_, y) => Array.from({ length: grid.size }, (_, x) => grid.get(x, y)));
}

// The symbol of final (interleaved) codewords; mask -1 picks the lowest penalty.
export function buildMatrix(version, codewords, mask = -1) {
  const grid = new Grid(sizeOf(version));
  drawFunctionPatterns(grid, version);
  drawCodewords(grid, codewords);
  let chosen = mask;
  if (chosen < 0) {
    let best = Infinity;
    for (let m = 0; m < 8; m++) {
      applyMask(grid, m);
      drawFormat(grid, m);
      const score = penalty(rows(grid));
      if (score < best) { best = score; chosen = m; }
      applyMask(grid, m); // XOR again undoes it
    }
  }
  applyMask(grid, chosen);
  drawFormat(grid, chosen);
  return { version, size: grid.size, mask: chosen, modules: rows(grid) };
}

/**
 * Encodes text (UTF-8) or bytes in the smallest version that fits.
 * @returns {{version:number, size:number, mask:number, modules:boolean[][]}} modules[y][x], true = dark
 */
export function encodeQr(input, { mask = -1, minVersion = 1 } = {}) {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : Uint8Array.from(input);
  let version = minVersion;
  while (byteCapacity(version) < bytes.length) {
    if (++version > MAX_VERSION) throw new RangeError('text too long for a QR code up to version 10');
  }
  return buildMatrix(version, withErrorCorrection(dataCodewords(bytes, version), version), mask);
}

// Paints the symbol with its 4-module light margin (the quiet zone scanners need).
export function drawQr(canvas, qr, scale = 6) {
  const quiet = 4;
  const side = (qr.size + quiet * 2) * scale;
  canvas.width = side;
  canvas.height = side;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, side, side);
  ctx.fillStyle = '#000';
  qr.modules.forEach((row, y) => row.forEach((dark, x) => {
    if (dark) ctx.fillRect((x + quiet) * scale, (y + quiet) * scale, scale, scale);
  }));
}
