/**
 * A tiny, pure, deterministic PNG encoder for placeholder media.
 *
 * Draws a vertical two-colour gradient plus a few translucent discs, all derived from a hash of
 * `seed` (so different ids look different), and writes the first words of `label` on a darkened
 * band in a built-in 5x7 bitmap font. Output is 8-bit RGB, filter type 0 on every row, one IDAT
 * chunk, compressed by `fflate` and checksummed by `crc-32` (a 640x360 image is about 8 KB): both
 * plain JavaScript, so a browser page (`video-service-sim/msw`) draws the very bytes the server
 * does. No randomness, no clock: the same options give byte-identical output.
 */

import CRC32 from 'crc-32';
import { zlibSync } from 'fflate';
import { fnv1a32 } from '../core/hash.js';
import type { AspectRatio } from '../core/generations/image.js';

export type { AspectRatio };

export interface PlaceholderPngOptions {
  /** Drives the colours and shapes, typically the resource id. */
  seed: string;
  /** Text drawn on the image (first few words, upper-cased), typically the prompt. */
  label: string;
  width: number;
  height: number;
}

/** The largest width or height accepted, to keep memory bounded. */
const MAX_PNG_DIMENSION = 4096;

/** Size of a generated image in each aspect ratio. */
export function pngDimensions(aspectRatio: AspectRatio): { width: number; height: number } {
  switch (aspectRatio) {
    case '16:9':
      return { width: 640, height: 360 };
    case '9:16':
      return { width: 360, height: 640 };
    case '1:1':
      return { width: 512, height: 512 };
    default: {
      const never: never = aspectRatio;
      throw new RangeError(`Unknown aspect ratio: ${String(never)}`);
    }
  }
}

/** Size of a video thumbnail (16:9). */
export const THUMBNAIL_DIMENSIONS: Readonly<{ width: number; height: number }> = Object.freeze({
  width: 480,
  height: 270,
});

// ---------------------------------------------------------------------------------------------
// A small seeded generator (mulberry32, seeded by FNV-1a of the seed), so colours follow the seed.

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rgb = [number, number, number];

/** HSL (h in [0,1), s and l in [0,1]) to 8-bit RGB. */
function hsl(h: number, s: number, l: number): Rgb {
  const hue = (t: number): number => {
    let x = t;
    if (x < 0) x += 1;
    if (x > 1) x -= 1;
    if (x < 1 / 6) return p + (q - p) * 6 * x;
    if (x < 1 / 2) return q;
    if (x < 2 / 3) return p + (q - p) * (2 / 3 - x) * 6;
    return p;
  };
  const q = l < 0.5 ? l * (1 + s) : l + s - l * s;
  const p = 2 * l - q;
  return [
    Math.round(hue(h + 1 / 3) * 255),
    Math.round(hue(h) * 255),
    Math.round(hue(h - 1 / 3) * 255),
  ];
}

// ---------------------------------------------------------------------------------------------
// 5x7 bitmap font: 5 column bytes per glyph, bit 0 is the top row.

const FONT: Readonly<Record<string, readonly number[]>> = {
  ' ': [0x00, 0x00, 0x00, 0x00, 0x00],
  A: [0x7c, 0x12, 0x11, 0x12, 0x7c],
  B: [0x7f, 0x49, 0x49, 0x49, 0x36],
  C: [0x3e, 0x41, 0x41, 0x41, 0x22],
  D: [0x7f, 0x41, 0x41, 0x22, 0x1c],
  E: [0x7f, 0x49, 0x49, 0x49, 0x41],
  F: [0x7f, 0x09, 0x09, 0x09, 0x01],
  G: [0x3e, 0x41, 0x49, 0x49, 0x7a],
  H: [0x7f, 0x08, 0x08, 0x08, 0x7f],
  I: [0x00, 0x41, 0x7f, 0x41, 0x00],
  J: [0x20, 0x40, 0x41, 0x3f, 0x01],
  K: [0x7f, 0x08, 0x14, 0x22, 0x41],
  L: [0x7f, 0x40, 0x40, 0x40, 0x40],
  M: [0x7f, 0x02, 0x0c, 0x02, 0x7f],
  N: [0x7f, 0x04, 0x08, 0x10, 0x7f],
  O: [0x3e, 0x41, 0x41, 0x41, 0x3e],
  P: [0x7f, 0x09, 0x09, 0x09, 0x06],
  Q: [0x3e, 0x41, 0x51, 0x21, 0x5e],
  R: [0x7f, 0x09, 0x19, 0x29, 0x46],
  S: [0x46, 0x49, 0x49, 0x49, 0x31],
  T: [0x01, 0x01, 0x7f, 0x01, 0x01],
  U: [0x3f, 0x40, 0x40, 0x40, 0x3f],
  V: [0x1f, 0x20, 0x40, 0x20, 0x1f],
  W: [0x3f, 0x40, 0x38, 0x40, 0x3f],
  X: [0x63, 0x14, 0x08, 0x14, 0x63],
  Y: [0x07, 0x08, 0x70, 0x08, 0x07],
  Z: [0x61, 0x51, 0x49, 0x45, 0x43],
  '0': [0x3e, 0x51, 0x49, 0x45, 0x3e],
  '1': [0x00, 0x42, 0x7f, 0x40, 0x00],
  '2': [0x42, 0x61, 0x51, 0x49, 0x46],
  '3': [0x21, 0x41, 0x45, 0x4b, 0x31],
  '4': [0x18, 0x14, 0x12, 0x7f, 0x10],
  '5': [0x27, 0x45, 0x45, 0x45, 0x39],
  '6': [0x3c, 0x4a, 0x49, 0x49, 0x30],
  '7': [0x01, 0x71, 0x09, 0x05, 0x03],
  '8': [0x36, 0x49, 0x49, 0x49, 0x36],
  '9': [0x06, 0x49, 0x49, 0x29, 0x1e],
  '.': [0x00, 0x60, 0x60, 0x00, 0x00],
  ',': [0x00, 0x50, 0x30, 0x00, 0x00],
  '-': [0x08, 0x08, 0x08, 0x08, 0x08],
  '!': [0x00, 0x00, 0x5f, 0x00, 0x00],
  '?': [0x02, 0x01, 0x51, 0x09, 0x06],
  "'": [0x00, 0x00, 0x07, 0x00, 0x00],
  ':': [0x00, 0x36, 0x36, 0x00, 0x00],
};

const GLYPH_W = 5;
const GLYPH_H = 7;
const MAX_LINES = 3;

/** Upper-cases, strips accents, drops characters the font lacks, and wraps into short lines. */
function layoutLabel(label: string, maxChars: number): string[] {
  if (maxChars < 1) return [];
  const words = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .split(/\s+/)
    .map((w) => [...w].filter((ch) => ch !== ' ' && FONT[ch] !== undefined).join(''))
    .filter((w) => w.length > 0)
    .slice(0, 12);
  const lines: string[] = [];
  let current = '';
  for (const raw of words) {
    const word = raw.length > maxChars ? raw.slice(0, maxChars) : raw;
    if (current === '') current = word;
    else if (current.length + 1 + word.length <= maxChars) current += ` ${word}`;
    else {
      lines.push(current);
      if (lines.length === MAX_LINES) return lines;
      current = word;
    }
  }
  if (current !== '' && lines.length < MAX_LINES) lines.push(current);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Drawing.

function assertDimension(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1 || value > MAX_PNG_DIMENSION) {
    throw new RangeError(`${name} must be an integer from 1 to ${MAX_PNG_DIMENSION}, got ${value}`);
  }
}

/**
 * The image being drawn, held as the PNG scanline buffer itself: each row is a filter-type byte
 * (0, None) followed by `width` RGB triples, so pixel (x, y) starts at `y * row + 1 + x * 3`.
 */
interface Canvas {
  readonly width: number;
  readonly height: number;
  /** Bytes of pixel data in a row. */
  readonly stride: number;
  /** Bytes of a whole scanline: the filter byte and the pixel data. */
  readonly row: number;
  readonly px: Buffer;
}

function createCanvas(width: number, height: number): Canvas {
  const stride = width * 3;
  const row = stride + 1;
  return { width, height, stride, row, px: Buffer.alloc(row * height) };
}

/**
 * A vertical gradient from `top` to `bottom`: every row is one colour, which deflate compresses to
 * almost nothing, so the file stays small and the encoder fast.
 */
function paintGradient({ height, stride, row, px }: Canvas, top: Rgb, bottom: Rgb): void {
  for (let y = 0; y < height; y++) {
    const t = height > 1 ? y / (height - 1) : 0;
    const start = y * row + 1;
    px[start] = (top[0] + (bottom[0] - top[0]) * t) | 0;
    px[start + 1] = (top[1] + (bottom[1] - top[1]) * t) | 0;
    px[start + 2] = (top[2] + (bottom[2] - top[2]) * t) | 0;
    for (let filled = 3; filled < stride; filled *= 2) {
      px.copyWithin(start + filled, start, start + Math.min(filled, stride - filled));
    }
  }
}

/** Three to five translucent discs, their places, sizes and colours drawn from `rand`. */
function paintDiscs(canvas: Canvas, rand: () => number, hue: number): void {
  const { width, height } = canvas;
  const minSide = Math.min(width, height);
  const discs = 3 + Math.floor(rand() * 3);
  for (let d = 0; d < discs; d++) {
    const cx = rand() * width;
    const cy = rand() * height;
    const r = minSide * (0.08 + rand() * 0.22);
    const col = hsl((hue + 0.5 + rand() * 0.3) % 1, 0.6, 0.45 + rand() * 0.3);
    const alpha = 0.3 + rand() * 0.25;
    blendDisc(canvas, cx, cy, r, col, alpha);
  }
}

/** Blends `col` with opacity `alpha` over the pixels whose centres lie within the disc. */
function blendDisc({ width, height, row, px }: Canvas, cx: number, cy: number, r: number, col: Rgb, alpha: number): void {
  const x0 = Math.max(0, Math.floor(cx - r));
  const x1 = Math.min(width - 1, Math.ceil(cx + r));
  const y0 = Math.max(0, Math.floor(cy - r));
  const y1 = Math.min(height - 1, Math.ceil(cy + r));
  const r2 = r * r;
  for (let y = y0; y <= y1; y++) {
    const dy = y + 0.5 - cy;
    for (let x = x0; x <= x1; x++) {
      const dx = x + 0.5 - cx;
      if (dx * dx + dy * dy > r2) continue;
      const o = y * row + 1 + x * 3;
      px[o] = (px[o]! + (col[0] - px[o]!) * alpha) | 0;
      px[o + 1] = (px[o + 1]! + (col[1] - px[o + 1]!) * alpha) | 0;
      px[o + 2] = (px[o + 2]! + (col[2] - px[o + 2]!) * alpha) | 0;
    }
  }
}

/** The label: white text with a drop shadow, on a darkened band across the lower middle. */
function paintLabel(canvas: Canvas, label: string): void {
  const { width, height } = canvas;
  const scale = Math.max(1, Math.round(Math.min(width, height) / 100));
  const cellW = (GLYPH_W + 1) * scale;
  const lineH = (GLYPH_H + 3) * scale;
  const margin = 4 * scale;
  const lines = layoutLabel(label, Math.floor((width - 2 * margin) / cellW));
  if (lines.length === 0) return;
  const blockH = lines.length * lineH - 3 * scale;
  const bandY0 = Math.max(0, Math.floor(height * 0.62 - blockH / 2) - 2 * scale);
  darkenRows(canvas, bandY0, Math.min(height, bandY0 + blockH + 4 * scale));
  const shadow = Math.max(1, scale >> 1);
  lines.forEach((line, li) => {
    const textW = line.length * cellW - scale;
    const left = Math.floor((width - textW) / 2);
    const top = bandY0 + 2 * scale + li * lineH;
    drawText(canvas, line, left + shadow, top + shadow, scale, 16);
    drawText(canvas, line, left, top, scale, 250);
  });
}

/** Darkens the rows from `y0` up to (not including) `y1` to 45% of their brightness. */
function darkenRows({ stride, row, px }: Canvas, y0: number, y1: number): void {
  for (let y = y0; y < y1; y++) {
    for (let o = y * row + 1, end = o + stride; o < end; o++) px[o] = (px[o]! * 0.45) | 0;
  }
}

/** Draws `text` in grey level `v`, each font pixel a `scale`-sided square, from (left, top). */
function drawText(canvas: Canvas, text: string, left: number, top: number, scale: number, v: number): void {
  const cellW = (GLYPH_W + 1) * scale;
  for (let i = 0; i < text.length; i++) {
    const glyph = FONT[text[i]!]!;
    for (let col = 0; col < GLYPH_W; col++) {
      const bits = glyph[col]!;
      for (let row = 0; row < GLYPH_H; row++) {
        if (bits & (1 << row)) fillGrey(canvas, left + i * cellW + col * scale, top + row * scale, scale, v);
      }
    }
  }
}

/** Sets the pixels of a `size`-sided square, clipped to the image, to grey level `v`. */
function fillGrey({ width, height, row, px }: Canvas, x0: number, y0: number, size: number, v: number): void {
  for (let y = Math.max(0, y0); y < Math.min(height, y0 + size); y++) {
    for (let x = Math.max(0, x0); x < Math.min(width, x0 + size); x++) {
      const o = y * row + 1 + x * 3;
      px[o] = v;
      px[o + 1] = v;
      px[o + 2] = v;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding.

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(CRC32.buf(out.subarray(4, 8 + data.length)) >>> 0, 8 + data.length);
  return out;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * The PNG file of a canvas. Every row keeps filter type 0 (None): the rows are mostly runs of one
 * colour, which deflate matches at distance 3 on its own, so a filter would only add work and bytes.
 */
function encodePng({ width, height, px }: Canvas): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour (RGB)
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace

  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('IDAT', zlibSync(px, { level: 6 })),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

/** Renders a deterministic placeholder image as a PNG file. */
export function renderPlaceholderPng(options: PlaceholderPngOptions): Buffer {
  const { seed, label, width, height } = options;
  assertDimension('width', width);
  assertDimension('height', height);

  const rand = mulberry32(fnv1a32(seed));
  const hue = rand();
  const top = hsl(hue, 0.55 + rand() * 0.3, 0.32 + rand() * 0.12);
  const bottom = hsl((hue + 0.25 + rand() * 0.25) % 1, 0.55 + rand() * 0.3, 0.55 + rand() * 0.12);

  const canvas = createCanvas(width, height);
  paintGradient(canvas, top, bottom);
  paintDiscs(canvas, rand, hue);
  paintLabel(canvas, label);
  return encodePng(canvas);
}
