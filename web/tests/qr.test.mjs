// Tests of the QR encoder (web/app/qr.js). Run: node --test web/tests/
// Vectors come from ISO/IEC 18004 (format/version tables, the Annex I example symbol), from
// hand-derived bit streams, and, for byte mode, from an independent encoder (segno, with its
// extra padding byte after an already byte-aligned terminator corrected to the standard) whose
// symbols a decoder (zbar) read back to the same text.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  alignmentPositions, buildMatrix, byteCapacity, dataCodewords, encodeQr, formatBits, linePenalty,
  penalty, rawModules, rsGenerator, rsRemainder, sizeOf, versionBits, withErrorCorrection,
} from '../app/qr.js';

const text = (qr) => qr.modules.map((row) => row.map((d) => (d ? '#' : '.')).join(''));
const bytes = (s) => [...new TextEncoder().encode(s)];

test('format information of level M, masks 0–7 (ISO 18004 Table C.1)', () => {
  const table = [
    '101010000010010', '101000100100101', '101111001111100', '101101101001011',
    '100010111111001', '100000011001110', '100111110010111', '100101010100000',
  ];
  table.forEach((bits, mask) => assert.equal(formatBits(mask).toString(2).padStart(15, '0'), bits));
});

test('version information of versions 7–10 (ISO 18004 Table D.1)', () => {
  assert.equal(versionBits(7), 0x07c94);
  assert.equal(versionBits(8), 0x085bc);
  assert.equal(versionBits(9), 0x09a99);
  assert.equal(versionBits(10), 0x0a4d3);
});

test('sizes, codeword counts, byte capacities and alignment centres', () => {
  assert.deepEqual([1, 2, 7, 10].map(sizeOf), [21, 25, 45, 57]);
  // Total codewords per version.
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((v) => Math.floor(rawModules(v) / 8)),
    [26, 44, 70, 100, 134, 172, 196, 242, 292, 346]);
  // Byte-mode capacity at level M (ISO 18004 Table 7).
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(byteCapacity),
    [14, 26, 42, 62, 84, 106, 122, 152, 180, 213]);
  assert.deepEqual(alignmentPositions(1), []);
  assert.deepEqual(alignmentPositions(2), [6, 18]);
  assert.deepEqual(alignmentPositions(7), [6, 22, 38]);
  assert.deepEqual(alignmentPositions(10), [6, 28, 50]);
});

test('byte-mode bit stream of "hi", derived by hand', () => {
  // 0100 | 00000010 | 01101000 01101001 | 0000 (terminator) = 0x40 0x26 0x86 0x90, then pads.
  const pads = [0xec, 0x11, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11];
  assert.deepEqual(dataCodewords(bytes('hi'), 1), [0x40, 0x26, 0x86, 0x90, ...pads]);
  // Version 10 counts in 16 bits: 0100 | 00000000 00000001 | 01000001 | 0000.
  assert.deepEqual(dataCodewords(bytes('A'), 10).slice(0, 4), [0x40, 0x00, 0x14, 0x10]);
});

test('Reed–Solomon error correction codewords', () => {
  // ISO 18004 Annex I: "01234567" at 1-M.
  const iso = [16, 32, 12, 86, 97, 128, 236, 17, 236, 17, 236, 17, 236, 17, 236, 17];
  assert.deepEqual(rsRemainder(iso, rsGenerator(10)), [165, 36, 212, 193, 237, 54, 199, 135, 44, 85]);
  // "HELLO WORLD" at 1-M (alphanumeric data, the codewords are what matter here).
  const hello = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17];
  assert.deepEqual(rsRemainder(hello, rsGenerator(10)), [196, 35, 39, 119, 235, 215, 231, 226, 93, 23]);
});

test('blocks are interleaved: short blocks first, data then EC column by column', () => {
  // Version 8-M: 2 blocks of 38 and 2 of 39 data codewords, 22 EC each, 242 in all.
  const data = Array.from({ length: 154 }, (_, i) => i);
  const all = withErrorCorrection(data, 8);
  assert.equal(all.length, 242);
  assert.deepEqual(all.slice(0, 8), [0, 38, 76, 115, 1, 39, 77, 116]);
  // After 38 rounds of four, only the two long blocks have a 39th codeword.
  assert.deepEqual(all.slice(152, 154), [114, 153]);
  // EC codewords of block 0 come every fourth place after the data.
  const ecc0 = rsRemainder(data.slice(0, 38), rsGenerator(22));
  assert.deepEqual(ecc0.map((_, i) => all[154 + i * 4]), ecc0);
  const ecc3 = rsRemainder(data.slice(115, 154), rsGenerator(22));
  assert.deepEqual(ecc3.map((_, i) => all[157 + i * 4]), ecc3);
});

test('the symbol of ISO 18004 Annex I ("01234567", 1-M, mask 010) is drawn exactly', () => {
  const data = [16, 32, 12, 86, 97, 128, 236, 17, 236, 17, 236, 17, 236, 17, 236, 17];
  const qr = buildMatrix(1, withErrorCorrection(data, 1), 2);
  assert.deepEqual(text(qr), [
    '#######..#.##.#######',
    '#.....#..####.#.....#',
    '#.###.#.#.....#.###.#',
    '#.###.#.##....#.###.#',
    '#.###.#.#.###.#.###.#',
    '#.....#.#...#.#.....#',
    '#######.#.#.#.#######',
    '........#..##........',
    '#.#####..#..#.#####..',
    '...#.#.##.#.#..#.##..',
    '..#...##.#.#.#..#####',
    '....#....#.....####..',
    '...######..#.#..#....',
    '........#.#####..##..',
    '#######..##.#.##.....',
    '#.....#.#.#####...#.#',
    '#.###.#.#...#..#.##..',
    '#.###.#.##..#..#.....',
    '#.###.#.#.##.#..#.#..',
    '#.....#........##.##.',
    '#######.####.#..#.#..',
  ]);
});

test('a confirmation code in byte mode, 1-M mask 2, matches the reference symbol', () => {
  assert.deepEqual(text(encodeQr('K7M2X9QA', { mask: 2 })), [
  '#######....##.#######',
  '#.....#...##..#.....#',
  '#.###.#.#.#.#.#.###.#',
  '#.###.#.###...#.###.#',
  '#.###.#.##.##.#.###.#',
  '#.....#.#.#.#.#.....#',
  '#######.#.#.#.#######',
  '........#.###........',
  '#.#####.....#.#####..',
  '##.#.#.#..#.#..#.####',
  '###.###.##.#.#...#...',
  '.#.##..##.#......####',
  '#.#.#.###.##...#..#.#',
  '........#######..#...',
  '#######...#.#.#..###.',
  '#.....#.##.####...#..',
  '#.###.#.#.#.#..###..#',
  '#.###.#.###.#...#.#..',
  '#.###.#.##.#.#.#.....',
  '#.....#........#.##..',
  '#######.##.#.#.#####.',
  ]);
});

test('UTF-8 text at version 7 (version information, 4 blocks), mask 5, matches the reference', () => {
  const qr = encodeQr('Билет K7M2X9QA', { mask: 5, minVersion: 7 });
  assert.equal(qr.size, 45);
  assert.deepEqual(text(qr), [
  '#######...#.##.#..#########.###.##..#.#######',
  '#.....#.##..#.#.##.#.#.#.#...#.###.#..#.....#',
  '#.###.#.####..##.....#...###..#..#.#..#.###.#',
  '#.###.#.#.#.#.#..#..####...#.###...##.#.###.#',
  '#.###.#..##..###..###########.#.#####.#.###.#',
  '#.....#..###..#...###...#..#######....#.....#',
  '#######.#.#.#.#.#.#.#.#.#.#.#.#.#.#.#.#######',
  '........#...#.#..##.#...###..#.#....#........',
  '#.....#.#..###.##.#######.##........###..###.',
  '..###..#####.....###.#..##.###.##..#....##.##',
  '...#.####.#..####.#..###...#..#..#...###....#',
  '.###.....#...#...######....#..#..###.###.#...',
  '###..###..#.####.###.##...###.#..#..##.######',
  '.#...#.#...#..##.####..##..#..#.###.####..##.',
  '.#....#....##.##.#.#....##.#.#####.##..#.##..',
  '#...##.##.###..##...#.####..#.#.#.#.#.#.#.###',
  '##.##.#.##.###.#.#.#....#.#.#..#...###..###..',
  '...#......##..##..#.....###.#####..#....##...',
  '#..##.#.#..#.##..####.#..##...#.#.#.#.#..#...',
  '...###.#.....########......#.#.#.#######.#..#',
  '#.########..####..#.######.#.....##.#####.###',
  '.#..#...#.#..###.####...#.####.###..#...#.###',
  '#.#.#.#.#...#..#.#.##.#.##.#..#..#.##.#.###..',
  '.##.#...#...#.###..##...#.....#....##...##.#.',
  '#.#########.#..##...#####.#.#.#..#.######.###',
  '...##..##.##.#.#..#..#.#...#..#.#..#..#...##.',
  '#.###.##....###.#...#.####.#.#######.##..####',
  '.#####...##..#.#....#...##..##.##.#.#.#.#.##.',
  '.#.#.######..##.##..#.###.#.#.........#..##..',
  '.#.###.##..#...#.#......###.##.#....######...',
  '##.#####.##.###.####.##.###..####.###..###...',
  '.##..#.#...##.#.#.#..#..#..#...####..#..##..#',
  '##..####.########....#.###.#..#..####..#..###',
  '.......#...#.#####...##.#.###.##.#.#.###..###',
  '....#.##.##.#......#..#.##.#.#..##.#...####..',
  '.####...#....##..####.##.##...#....###.##.##.',
  '#..##.#....#.....#..######....#...#.#####.###',
  '........#.###.##...##...###.#.#.#...#...#.#..',
  '#######..#..###...#.#.#.#...#####...#.#.#.###',
  '#.....#...##..#...#.#...##.###.##.#.#...#....',
  '#.###.#..###.####...#####.#......#..######.##',
  '#.###.#...##.###.#.#.##..###.#.#.#.#####.#.#.',
  '#.###.#...#####.#.#####..###.#########.###.##',
  '#.....#..#.#.#.......####..#..#..#######.#...',
  '#######.##..#.#.#..####.##.#.######.#..#..##.',
  ]);
});

test('the smallest version that fits is chosen, up to 10', () => {
  assert.equal(encodeQr('A'.repeat(14)).version, 1);
  assert.equal(encodeQr('A'.repeat(15)).version, 2);
  assert.equal(encodeQr('A'.repeat(213)).version, 10);
  assert.equal(encodeQr('Я'.repeat(7)).version, 1, 'two UTF-8 bytes per letter');
  assert.throws(() => encodeQr('A'.repeat(214)), RangeError);
});

// Structure every symbol must have, whatever the data and mask.
function assertStructure(qr) {
  const n = qr.size;
  const at = (x, y) => qr.modules[y][x];
  for (const [cx, cy] of [[3, 3], [n - 4, 3], [3, n - 4]]) {
    for (let dy = -3; dy <= 3; dy++) {
      for (let dx = -3; dx <= 3; dx++) {
        const ring = Math.max(Math.abs(dx), Math.abs(dy));
        assert.equal(at(cx + dx, cy + dy), ring !== 2, `finder at ${cx},${cy}`);
      }
    }
  }
  for (let i = 0; i < 8; i++) {
    // Separators: light around each finder.
    assert.equal(at(7, i), false);
    assert.equal(at(i, 7), false);
    assert.equal(at(n - 8, i), false);
    assert.equal(at(i, n - 8), false);
  }
  for (let i = 8; i < n - 8; i++) {
    assert.equal(at(i, 6), i % 2 === 0, 'horizontal timing');
    assert.equal(at(6, i), i % 2 === 0, 'vertical timing');
  }
  assert.equal(at(8, n - 8), true, 'dark module');
  // Both copies of the format information say level M and the mask used.
  const first = [0, 1, 2, 3, 4, 5, 7, 8].map((y) => at(8, y)).concat([7, 5, 4, 3, 2, 1, 0].map((x) => at(x, 8)));
  const second = Array.from({ length: 8 }, (_, i) => at(n - 1 - i, 8))
    .concat(Array.from({ length: 7 }, (_, i) => at(8, n - 7 + i)));
  const read = (bits) => bits.reduce((acc, b, i) => acc | ((b ? 1 : 0) << i), 0);
  assert.equal(read(first), formatBits(qr.mask));
  assert.equal(read(second), formatBits(qr.mask));
  if (qr.version >= 7) {
    const bits = versionBits(qr.version);
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const a = n - 11 + (i % 3);
      const b = Math.floor(i / 3);
      assert.equal(at(a, b), dark, 'version information, top right');
      assert.equal(at(b, a), dark, 'version information, bottom left');
    }
  }
}

test('finder, separator, timing, dark module, format and version information', () => {
  for (let v = 1; v <= 10; v++) {
    const qr = encodeQr(`bilet ${v}`, { minVersion: v });
    assert.equal(qr.version, v);
    assert.equal(qr.size, 17 + 4 * v);
    assertStructure(qr);
  }
});

test('penalty rules score symbols as the standard counts them', () => {
  const grid = (dark) => Array.from({ length: 21 }, (_, y) => Array.from({ length: 21 }, (_, x) => dark(x, y)));
  // Blank. N1: 42 lines of 21 alike = 42 × (3 + 16); N2: 20 × 20 blocks × 3; N4: 50 % off = 10 × 10.
  assert.equal(penalty(grid(() => false)), 42 * 19 + 400 * 3 + 100);
  // Checkerboard: no run, no block, no finder-like run, 221 of 441 dark (within 5 %).
  assert.equal(penalty(grid((x, y) => (x + y) % 2 === 0)), 0);
  // Vertical stripes: each of the 21 columns is one run of 21 (N1 = 19 each), nothing else.
  assert.equal(penalty(grid((x) => x % 2 === 0)), 21 * 19);
});

test('N1 and N3 on single lines', () => {
  assert.equal(linePenalty('10111010000'), 40, 'finder-like with four light after');
  assert.equal(linePenalty('0000101110100001'), 80, 'four light before and, overlapping, after');
  assert.equal(linePenalty('1011101'), 0, 'no light margin');
  assert.equal(linePenalty('111111'), 4, 'run of six: 3 + 1');
  assert.equal(linePenalty('0101'), 0);
});

test('the mask with the lowest penalty is chosen', () => {
  for (const input of ['K7M2X9QA', 'hi', 'x'.repeat(130)]) {
    const scores = [0, 1, 2, 3, 4, 5, 6, 7].map((mask) => penalty(encodeQr(input, { mask }).modules));
    const chosen = encodeQr(input).mask;
    assert.equal(scores[chosen], Math.min(...scores));
    assert.equal(chosen, scores.indexOf(Math.min(...scores)), 'lowest index on a tie');
  }
});
