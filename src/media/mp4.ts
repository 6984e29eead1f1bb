/**
 * A small, pure MP4 (ISO BMFF) rewriter that makes a clip last any duration without re-encoding.
 *
 * `parseClip` reads a short progressive MP4 once: its first video track's sample tables (stts,
 * stsz, stsc, stco/co64, stss, ctts) expanded to one record per sample, the durations of mvhd,
 * tkhd, mdhd and the edit list, and the byte span of the samples. `loopClip` then writes a file
 * whose sample tables play the clip's samples over and over, each repetition from the first
 * sample (which must be a sync sample, so every repetition starts on a keyframe), the last
 * repetition cut in decode order at the sample that reaches the requested duration, whose own
 * duration is shortened so that the total is exact. Every chunk offset points back at the one
 * copy of the samples in `mdat`, so a 16 s file costs a few hundred bytes more than the clip.
 *
 * The output is `ftyp`, `moov` (before `mdat`, so players can start early), `mdat`. Only the first
 * video track is kept: other tracks (audio, timed text) are dropped, so a looped file is silent.
 * Per-sample boxes other than the rebuilt tables (sdtp, sbgp, subs...) are dropped as well, since
 * they would no longer match. Everything else (stsd, hdlr, udta...) is copied byte for byte.
 * No I/O, no clock: the same clip and duration give the same bytes.
 */

/** A clip this module cannot loop, with the reason. */
export class Mp4Error extends Error {
  override readonly name = 'Mp4Error';
}

/** One sample of the source clip. */
interface Sample {
  readonly offset: number;
  readonly size: number;
  readonly duration: number;
  readonly compositionOffset: number;
  readonly sync: boolean;
  readonly descriptionIndex: number;
}

/** A parsed clip, ready to be looped to any duration. */
export interface Mp4Clip {
  readonly width: number;
  readonly height: number;
  /** Ticks per second of mvhd, tkhd and the edit list. */
  readonly movieTimescale: number;
  /** Ticks per second of the video track's samples (mdhd). */
  readonly mediaTimescale: number;
  /** The clip's own length in seconds (sum of its sample durations). */
  readonly durationSeconds: number;
  readonly sampleCount: number;
  /** @internal */ readonly source: ClipSource;
}

interface Box {
  readonly type: string;
  /** Offset of the box's first byte (its size field). */
  readonly start: number;
  /** Offset of the first byte of the payload. */
  readonly body: number;
  /** Offset just past the box. */
  readonly end: number;
}

interface ClipSource {
  readonly bytes: Buffer;
  readonly ftyp: Box | undefined;
  readonly moov: Box;
  readonly trak: Box;
  readonly samples: readonly Sample[];
  readonly hasSyncTable: boolean;
  readonly compositionVersion: number | undefined;
  readonly spanStart: number;
  readonly spanEnd: number;
}

const UINT32_LIMIT = 2 ** 32;

// ---------------------------------------------------------------------------------------------
// Reading.

function childBoxes(bytes: Buffer, from: number, to: number, where: string): Box[] {
  const boxes: Box[] = [];
  let at = from;
  while (at < to) {
    if (to - at < 8) throw new Mp4Error(`${where}: ${to - at} stray bytes at offset ${at}.`);
    let size = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (to - at < 16) throw new Mp4Error(`${where}: box "${type}" at offset ${at} is cut short.`);
      size = Number(bytes.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) {
      size = to - at; // extends to the end of its parent
    }
    if (size < header || at + size > to) {
      throw new Mp4Error(`${where}: box "${type}" at offset ${at} claims ${size} bytes, past its parent's end.`);
    }
    boxes.push({ type, start: at, body: at + header, end: at + size });
    at += size;
  }
  return boxes;
}

function find(boxes: readonly Box[], type: string): Box | undefined {
  return boxes.find((b) => b.type === type);
}

function need(bytes: Buffer, parent: Box, type: string): Box {
  const box = find(childBoxes(bytes, parent.body, parent.end, parent.type), type);
  if (box === undefined) throw new Mp4Error(`"${parent.type}" has no "${type}" box.`);
  return box;
}

/** A full box's version and the bounds check every table read relies on. */
function fullBox(bytes: Buffer, box: Box, minBody: number): number {
  if (box.end - box.body < minBody) throw new Mp4Error(`"${box.type}" is ${box.end - box.body} bytes, too short.`);
  return bytes[box.body] ?? 0;
}

function tableLength(bytes: Buffer, box: Box, countAt: number, entrySize: number): number {
  const count = bytes.readUInt32BE(countAt);
  if (countAt + 4 + count * entrySize > box.end) {
    throw new Mp4Error(`"${box.type}" lists ${count} entries but has room for fewer.`);
  }
  return count;
}

function readUint(bytes: Buffer, at: number, wide: boolean): number {
  return wide ? Number(bytes.readBigUInt64BE(at)) : bytes.readUInt32BE(at);
}

/** mvhd and mdhd share a layout: timescale then duration after the two timestamps. */
function timescaleOf(bytes: Buffer, box: Box): number {
  const v1 = fullBox(bytes, box, 24) === 1;
  const timescale = bytes.readUInt32BE(box.body + (v1 ? 20 : 12));
  if (timescale === 0) throw new Mp4Error(`"${box.type}" has a timescale of 0.`);
  return timescale;
}

function readSamples(bytes: Buffer, stbl: Box): { samples: Sample[]; hasSyncTable: boolean; compositionVersion: number | undefined } {
  const boxes = childBoxes(bytes, stbl.body, stbl.end, 'stbl');
  const get = (type: string): Box => {
    const box = find(boxes, type);
    if (box === undefined) throw new Mp4Error(`"stbl" has no "${type}" box.`);
    return box;
  };

  // Sizes.
  const stsz = get('stsz');
  fullBox(bytes, stsz, 12);
  const uniformSize = bytes.readUInt32BE(stsz.body + 4);
  const count = bytes.readUInt32BE(stsz.body + 8);
  if (count === 0) throw new Mp4Error('The video track has no samples.');
  if (uniformSize === 0) tableLength(bytes, stsz, stsz.body + 8, 4);
  const sizes = Array.from({ length: count }, (_, i) => (uniformSize !== 0 ? uniformSize : bytes.readUInt32BE(stsz.body + 12 + 4 * i)));

  // Durations.
  const stts = get('stts');
  fullBox(bytes, stts, 8);
  const durations: number[] = [];
  for (let e = 0, n = tableLength(bytes, stts, stts.body + 4, 8); e < n; e++) {
    const run = bytes.readUInt32BE(stts.body + 8 + 8 * e);
    const delta = bytes.readUInt32BE(stts.body + 12 + 8 * e);
    for (let i = 0; i < run && durations.length < count; i++) durations.push(delta);
  }
  if (durations.length !== count) throw new Mp4Error(`"stts" covers ${durations.length} samples, "stsz" has ${count}.`);

  // Composition offsets (B-frames), when present.
  const ctts = find(boxes, 'ctts');
  let compositionVersion: number | undefined;
  const compositionOffsets = new Array<number>(count).fill(0);
  if (ctts !== undefined) {
    compositionVersion = fullBox(bytes, ctts, 8);
    let i = 0;
    for (let e = 0, n = tableLength(bytes, ctts, ctts.body + 4, 8); e < n; e++) {
      const run = bytes.readUInt32BE(ctts.body + 8 + 8 * e);
      const value = compositionVersion === 1 ? bytes.readInt32BE(ctts.body + 12 + 8 * e) : bytes.readUInt32BE(ctts.body + 12 + 8 * e);
      for (let k = 0; k < run && i < count; k++) compositionOffsets[i++] = value;
    }
    if (i !== count) throw new Mp4Error(`"ctts" covers ${i} samples, "stsz" has ${count}.`);
  }

  // Sync samples: without stss, every sample is one.
  const stss = find(boxes, 'stss');
  const sync = new Array<boolean>(count).fill(stss === undefined);
  if (stss !== undefined) {
    fullBox(bytes, stss, 8);
    for (let e = 0, n = tableLength(bytes, stss, stss.body + 4, 4); e < n; e++) {
      const number = bytes.readUInt32BE(stss.body + 8 + 4 * e);
      if (number >= 1 && number <= count) sync[number - 1] = true;
    }
  }

  // Offsets: chunks from stco/co64, samples per chunk from stsc.
  const stco = find(boxes, 'stco') ?? find(boxes, 'co64');
  if (stco === undefined) throw new Mp4Error('"stbl" has neither "stco" nor "co64".');
  fullBox(bytes, stco, 8);
  const wide = stco.type === 'co64';
  const chunkCount = tableLength(bytes, stco, stco.body + 4, wide ? 8 : 4);
  const chunkOffsets = Array.from({ length: chunkCount }, (_, c) => readUint(bytes, stco.body + 8 + (wide ? 8 : 4) * c, wide));
  const stsc = get('stsc');
  fullBox(bytes, stsc, 8);
  const runs = tableLength(bytes, stsc, stsc.body + 4, 12);
  const samples: Sample[] = [];
  for (let e = 0; e < runs && samples.length < count; e++) {
    const entry = stsc.body + 8 + 12 * e;
    const firstChunk = bytes.readUInt32BE(entry);
    const perChunk = bytes.readUInt32BE(entry + 4);
    const descriptionIndex = bytes.readUInt32BE(entry + 8);
    const nextFirst = e + 1 < runs ? bytes.readUInt32BE(entry + 12) : chunkCount + 1;
    if (firstChunk < 1 || nextFirst <= firstChunk || nextFirst > chunkCount + 1) {
      throw new Mp4Error(`"stsc" entry ${e + 1} names chunks ${firstChunk}-${nextFirst - 1} of ${chunkCount}.`);
    }
    for (let chunk = firstChunk; chunk < nextFirst && samples.length < count; chunk++) {
      let offset = chunkOffsets[chunk - 1] ?? 0;
      for (let k = 0; k < perChunk && samples.length < count; k++) {
        const i = samples.length;
        const size = sizes[i] ?? 0;
        if (offset + size > bytes.length) throw new Mp4Error(`Sample ${i + 1} lies past the end of the file.`);
        samples.push({
          offset,
          size,
          duration: durations[i] ?? 0,
          compositionOffset: compositionOffsets[i] ?? 0,
          sync: sync[i] ?? false,
          descriptionIndex,
        });
        offset += size;
      }
    }
  }
  if (samples.length !== count) throw new Mp4Error(`"stsc" and "stco" place ${samples.length} samples, "stsz" has ${count}.`);
  return { samples, hasSyncTable: stss !== undefined, compositionVersion };
}

/** Reads the clip's first video track. Throws Mp4Error when the file cannot be looped. */
export function parseClip(input: Uint8Array): Mp4Clip {
  const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  const top = childBoxes(bytes, 0, bytes.length, 'file');
  const moov = find(top, 'moov');
  if (moov === undefined) throw new Mp4Error('The file has no "moov" box.');
  const moovChildren = childBoxes(bytes, moov.body, moov.end, 'moov');
  const mvhd = find(moovChildren, 'mvhd');
  if (mvhd === undefined) throw new Mp4Error('"moov" has no "mvhd" box.');

  const trak = moovChildren.find((box) => {
    if (box.type !== 'trak') return false;
    const hdlr = need(bytes, need(bytes, box, 'mdia'), 'hdlr');
    fullBox(bytes, hdlr, 12);
    return bytes.toString('latin1', hdlr.body + 8, hdlr.body + 12) === 'vide';
  });
  if (trak === undefined) throw new Mp4Error('The file has no video track.');

  const tkhd = need(bytes, trak, 'tkhd');
  const tkhdV1 = fullBox(bytes, tkhd, 84) === 1;
  const sizeAt = tkhd.body + (tkhdV1 ? 88 : 76);
  if (sizeAt + 8 > tkhd.end) throw new Mp4Error('"tkhd" is too short.');
  const mdia = need(bytes, trak, 'mdia');
  const mdhd = need(bytes, mdia, 'mdhd');
  const stbl = need(bytes, need(bytes, mdia, 'minf'), 'stbl');
  const { samples, hasSyncTable, compositionVersion } = readSamples(bytes, stbl);
  if (!(samples[0]?.sync ?? false)) throw new Mp4Error('The first sample is not a sync sample, so repetitions could not start on a keyframe.');

  const edts = find(childBoxes(bytes, trak.body, trak.end, 'trak'), 'edts');
  if (edts !== undefined) {
    const elst = need(bytes, edts, 'elst');
    const v1 = fullBox(bytes, elst, 8) === 1;
    const entries = tableLength(bytes, elst, elst.body + 4, v1 ? 20 : 12);
    const mediaTime = v1 ? Number(bytes.readBigInt64BE(elst.body + 16)) : bytes.readInt32BE(elst.body + 12);
    if (entries !== 1 || mediaTime < 0) throw new Mp4Error('Only an edit list of one non-empty edit can be rewritten.');
  }

  const mediaTimescale = timescaleOf(bytes, mdhd);
  if (samples.every((s) => s.duration === 0)) throw new Mp4Error('The video track\'s samples have no duration.');
  const spanStart = Math.min(...samples.map((s) => s.offset));
  const spanEnd = Math.max(...samples.map((s) => s.offset + s.size));
  return {
    width: bytes.readUInt32BE(sizeAt) / 65536,
    height: bytes.readUInt32BE(sizeAt + 4) / 65536,
    movieTimescale: timescaleOf(bytes, mvhd),
    mediaTimescale,
    durationSeconds: samples.reduce((sum, s) => sum + s.duration, 0) / mediaTimescale,
    sampleCount: samples.length,
    source: { bytes, ftyp: find(top, 'ftyp'), moov, trak, samples, hasSyncTable, compositionVersion, spanStart, spanEnd },
  };
}

// ---------------------------------------------------------------------------------------------
// Writing.

function box(type: string, ...parts: Buffer[]): Buffer {
  const header = Buffer.alloc(8);
  const size = parts.reduce((sum, p) => sum + p.length, 8);
  if (size >= UINT32_LIMIT) throw new Mp4Error(`A "${type}" box of ${size} bytes is too large.`);
  header.writeUInt32BE(size, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, ...parts]);
}

/** A full box (version, flags) whose payload is a list of 32-bit words. */
function table(type: string, version: number, words: readonly number[]): Buffer {
  const body = Buffer.alloc(4 + 4 * words.length);
  body.writeUInt32BE(version << 24, 0);
  words.forEach((w, i) => (w < 0 ? body.writeInt32BE(w, 4 + 4 * i) : body.writeUInt32BE(w, 4 + 4 * i)));
  return box(type, body);
}

/** Run-length entries `[count, value]` of consecutive equal values. */
function runs(values: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; ) {
    let j = i + 1;
    while (j < values.length && values[j] === values[i]) j++;
    out.push(j - i, values[i] ?? 0);
    i = j;
  }
  return out;
}

/** A copy of a mvhd/tkhd/mdhd box with its duration field set. */
function withDuration(bytes: Buffer, b: Box, duration: number, kind: 'header' | 'tkhd'): Buffer {
  const copy = Buffer.from(bytes.subarray(b.start, b.end));
  const v1 = copy[b.body - b.start] === 1;
  const at = b.body - b.start + (kind === 'tkhd' ? (v1 ? 28 : 20) : v1 ? 24 : 16);
  if (v1) copy.writeBigUInt64BE(BigInt(duration), at);
  else if (duration < UINT32_LIMIT) copy.writeUInt32BE(duration, at);
  else throw new Mp4Error(`A duration of ${duration} ticks does not fit "${b.type}" version 0.`);
  return copy;
}

/** A copy of a one-entry elst with its segment duration set. */
function withEditDuration(bytes: Buffer, elst: Box, duration: number): Buffer {
  const copy = Buffer.from(bytes.subarray(elst.start, elst.end));
  const at = elst.body - elst.start + 8;
  if (copy[elst.body - elst.start] === 1) copy.writeBigUInt64BE(BigInt(duration), at);
  else if (duration < UINT32_LIMIT) copy.writeUInt32BE(duration, at);
  else throw new Mp4Error(`A duration of ${duration} ticks does not fit "elst" version 0.`);
  return copy;
}

/** The clip's samples, repeated from the first until `ticks` is reached; the last one shortened to end exactly there. */
function loopSamples(samples: readonly Sample[], ticks: number): Sample[] {
  const out: Sample[] = [];
  let total = 0;
  for (let i = 0; total < ticks; i = (i + 1) % samples.length) {
    const sample = samples[i] as Sample;
    out.push(sample);
    total += sample.duration;
  }
  const last = out[out.length - 1];
  if (last !== undefined && total > ticks) out[out.length - 1] = { ...last, duration: last.duration - (total - ticks) };
  return out;
}

function sampleTable(source: ClipSource, looped: readonly Sample[], mdatPayloadAt: number): Buffer {
  // Chunks: runs of samples that follow each other in the file, with one sample description.
  const chunkOffsets: number[] = [];
  const chunkSizes: number[] = [];
  const chunkDescriptions: number[] = [];
  let previous: Sample | undefined;
  for (const s of looped) {
    if (previous !== undefined && s.offset === previous.offset + previous.size && s.descriptionIndex === previous.descriptionIndex) {
      chunkSizes[chunkSizes.length - 1] = (chunkSizes[chunkSizes.length - 1] ?? 0) + 1;
    } else {
      chunkOffsets.push(s.offset - source.spanStart + mdatPayloadAt);
      chunkSizes.push(1);
      chunkDescriptions.push(s.descriptionIndex);
    }
    previous = s;
  }
  const stsc: number[] = [];
  chunkSizes.forEach((n, c) => {
    const d = chunkDescriptions[c] ?? 1;
    if (c === 0 || n !== chunkSizes[c - 1] || d !== chunkDescriptions[c - 1]) stsc.push(c + 1, n, d);
  });

  const stts = runs(looped.map((s) => s.duration));
  const sizes = looped.map((s) => s.size);
  const uniform = sizes.every((size) => size === sizes[0]);
  const optional: Buffer[] = [];
  if (source.compositionVersion !== undefined) {
    const ctts = runs(looped.map((s) => s.compositionOffset));
    optional.push(table('ctts', source.compositionVersion, [ctts.length / 2, ...ctts]));
  }
  if (source.hasSyncTable) {
    const syncNumbers = looped.flatMap((s, i) => (s.sync ? [i + 1] : []));
    optional.push(table('stss', 0, [syncNumbers.length, ...syncNumbers]));
  }
  return box(
    'stbl',
    findStsd(source),
    table('stts', 0, [stts.length / 2, ...stts]),
    ...optional,
    table('stsc', 0, [stsc.length / 3, ...stsc]),
    table('stsz', 0, uniform ? [sizes[0] ?? 0, sizes.length] : [0, sizes.length, ...sizes]),
    table('stco', 0, [chunkOffsets.length, ...chunkOffsets]),
  );
}

function findStsd(source: ClipSource): Buffer {
  const { bytes, trak } = source;
  const stsd = need(bytes, need(bytes, need(bytes, need(bytes, trak, 'mdia'), 'minf'), 'stbl'), 'stsd');
  return bytes.subarray(stsd.start, stsd.end);
}

/** A copy of `parent` with each child replaced by what `rewrite` returns (null drops it). */
function rebuild(bytes: Buffer, parent: Box, rewrite: (child: Box) => Buffer | null): Buffer {
  const kept: Buffer[] = [];
  for (const child of childBoxes(bytes, parent.body, parent.end, parent.type)) {
    const out = rewrite(child);
    if (out !== null) kept.push(out);
  }
  return box(parent.type, ...kept);
}

function moovFor(clip: Mp4Clip, durationSeconds: number, mdatPayloadAt: number): Buffer {
  const source = clip.source;
  const { bytes } = source;
  const raw = (b: Box): Buffer => bytes.subarray(b.start, b.end);
  const movieTicks = Math.round(durationSeconds * clip.movieTimescale);
  const mediaTicks = Math.round(durationSeconds * clip.mediaTimescale);
  const looped = loopSamples(source.samples, mediaTicks);

  return rebuild(bytes, source.moov, (child) => {
    if (child.type === 'mvhd') return withDuration(bytes, child, movieTicks, 'header');
    if (child.type === 'trak') {
      if (child.start !== source.trak.start) return null; // other tracks are dropped
      return rebuild(bytes, child, (t) => {
        if (t.type === 'tkhd') return withDuration(bytes, t, movieTicks, 'tkhd');
        if (t.type === 'edts') return rebuild(bytes, t, (e) => (e.type === 'elst' ? withEditDuration(bytes, e, movieTicks) : raw(e)));
        if (t.type === 'mdia') {
          return rebuild(bytes, t, (m) => {
            if (m.type === 'mdhd') return withDuration(bytes, m, mediaTicks, 'header');
            if (m.type === 'minf') {
              return rebuild(bytes, m, (n) => (n.type === 'stbl' ? sampleTable(source, looped, mdatPayloadAt) : raw(n)));
            }
            return raw(m);
          });
        }
        return raw(t);
      });
    }
    return raw(child);
  });
}

/**
 * The clip looped (and cut) to last exactly `durationSeconds` (rounded to the clip's timescales),
 * as a complete MP4 file.
 */
export function loopClip(clip: Mp4Clip, durationSeconds: number): Buffer {
  if (!Number.isFinite(durationSeconds) || durationSeconds <= 0 || durationSeconds > 3600) {
    throw new Mp4Error(`A looped clip lasts more than 0 and at most 3600 seconds, not ${durationSeconds}.`);
  }
  const source = clip.source;
  const ftyp = source.ftyp === undefined ? Buffer.alloc(0) : source.bytes.subarray(source.ftyp.start, source.ftyp.end);
  const payload = source.bytes.subarray(source.spanStart, source.spanEnd);
  // The moov's size does not depend on the offsets it holds, so a first pass gives mdat's place.
  // The file stays far below 4 GiB (box() refuses larger), so 32-bit offsets (stco) always fit.
  const payloadAt = ftyp.length + moovFor(clip, durationSeconds, 0).length + 8;
  const moov = moovFor(clip, durationSeconds, payloadAt);
  return Buffer.concat([ftyp, moov, box('mdat', payload)]);
}
