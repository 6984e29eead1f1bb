import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32, inflateSync } from 'node:zlib';

import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cdnUrlIn, defaultCdnUrl, mediaFileName, mediaIdOf, mediaUrl } from '../src/core/generations/mediaPaths.js';
import { createSimulator } from '../src/index.js';
import { createMediaRouter, parseByteRange, type MediaCatalog } from '../src/http/media.js';
import { loopClip, Mp4Error, parseClip } from '../src/media/mp4.js';
import { advance, createVideo, getVideo, makeSim } from './helpers.js';
import { pngDimensions, renderPlaceholderPng, THUMBNAIL_DIMENSIONS } from '../src/media/png.js';

// ---------------------------------------------------------------------------------------------
// Fixtures.

type VideoRecord = {
  status: 'queued' | 'in_progress' | 'succeeded';
  resolution: '720p' | '1080p';
  durationSeconds: number;
  prompt: string;
};
type ImageRecord = { aspectRatio: '16:9' | '9:16' | '1:1'; prompt: string };

const videos: Record<string, VideoRecord> = {
  vid_720: { status: 'succeeded', resolution: '720p', durationSeconds: 5, prompt: 'A lighthouse at dawn, waves crashing' },
  vid_1080: { status: 'succeeded', resolution: '1080p', durationSeconds: 8, prompt: 'A red fox running through snow' },
  vid_pending: { status: 'in_progress', resolution: '1080p', durationSeconds: 8, prompt: 'Still rendering' },
};
const images: Record<string, ImageRecord> = {
  img_wide: { aspectRatio: '16:9', prompt: 'Mountain lake at sunset' },
  img_tall: { aspectRatio: '9:16', prompt: 'City street in the rain' },
  img_square: { aspectRatio: '1:1', prompt: 'A bowl of oranges' },
  img_wide_2: { aspectRatio: '16:9', prompt: 'Mountain lake at sunset' },
};

const catalog: MediaCatalog = {
  videoFile(id) {
    const v = Object.hasOwn(videos, id) ? videos[id] : undefined;
    return v && v.status === 'succeeded' ? { resolution: v.resolution, durationSeconds: v.durationSeconds, prompt: v.prompt } : undefined;
  },
  imageFile(id) {
    return Object.hasOwn(images, id) ? images[id] : undefined;
  },
};

function makeApp(): express.Express {
  const app = express();
  app.use('/cdn', createMediaRouter(catalog));
  return app;
}

const app = makeApp();

const CLIP_720 = readFileSync(new URL('../assets/clip-720p.mp4', import.meta.url));
const CLIP_1080 = readFileSync(new URL('../assets/clip-1080p.mp4', import.meta.url));
/** The files the fixtures' videos are served as (vid_720 lasts 5 s, vid_1080 8 s). */
const VIDEO_720 = loopClip(parseClip(CLIP_720), 5);
const VIDEO_1080 = loopClip(parseClip(CLIP_1080), 8);

/** Collects any response body as a Buffer (superagent does not buffer video/mp4 by itself). */
function binary(res: request.Response, done: (err: Error | null, body: unknown) => void): void {
  const stream = res as unknown as NodeJS.ReadableStream; // in Node, superagent passes the raw response
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
}

function get(path: string) {
  return request(app).get(path).buffer(true).parse(binary);
}

/** A request whose path reaches the server exactly as written (no URL normalisation). */
let server: http.Server;
let port = 0;
beforeAll(async () => {
  server = http.createServer(makeApp());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function rawGet(path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// Binary helpers.

function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Walks the chunks, checking each CRC; returns the chunk types and the concatenated IDAT data. */
function readPngChunks(png: Buffer): { types: string[]; idat: Buffer } {
  const types: string[] = [];
  const idat: Buffer[] = [];
  let o = 8;
  while (o < png.length) {
    const len = png.readUInt32BE(o);
    const type = png.toString('latin1', o + 4, o + 8);
    const data = png.subarray(o + 8, o + 8 + len);
    expect(png.readUInt32BE(o + 8 + len)).toBe(crc32(png.subarray(o + 4, o + 8 + len)));
    types.push(type);
    if (type === 'IDAT') idat.push(data);
    o += 12 + len;
  }
  return { types, idat: Buffer.concat(idat) };
}

/** Width and height of the (only) video track, from the tkhd box (16.16 fixed point). */
function tkhdSize(mp4: Buffer): { width: number; height: number } {
  const at = mp4.indexOf('tkhd', 0, 'latin1');
  expect(at).toBeGreaterThan(0);
  const p = at + 4; // version + flags
  const version = mp4[p];
  const fields = version === 1 ? 32 : 20; // times, track id, reserved, duration
  const w = p + 4 + fields + 8 + 2 + 2 + 2 + 2 + 36; // reserved, layer, alt group, volume, reserved, matrix
  return { width: mp4.readUInt32BE(w) / 65536, height: mp4.readUInt32BE(w + 4) / 65536 };
}

/** Width and height of the avc1 sample entry (searched after stsd: "avc1" is also an ftyp brand). */
function avc1Size(mp4: Buffer): { width: number; height: number } {
  const stsd = mp4.indexOf('stsd', 0, 'latin1');
  const at = mp4.indexOf('avc1', stsd, 'latin1');
  expect(stsd).toBeGreaterThan(0);
  expect(at).toBeGreaterThan(stsd);
  return { width: mp4.readUInt16BE(at + 28), height: mp4.readUInt16BE(at + 30) };
}

function expectNotFound(status: number, body: unknown): void {
  expect(status).toBe(404);
  expect(body).toEqual({
    error: {
      type: 'invalid_request_error',
      code: 'resource_not_found',
      message: expect.any(String),
      param: 'id',
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Videos.

describe('videos', () => {
  it('serves a 1080p video with Content-Type video/mp4: the 1080p clip looped to its duration', async () => {
    const res = await get('/cdn/videos/vid_1080.mp4');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(res.headers['content-length']).toBe(String(VIDEO_1080.length));
    expect(Buffer.compare(res.body as Buffer, VIDEO_1080)).toBe(0);
  });

  it('serves the 720p clip, looped to its duration, for a 720p video', async () => {
    const res = await get('/cdn/videos/vid_720.mp4');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(Buffer.compare(res.body as Buffer, VIDEO_720)).toBe(0);
  });

  it('ships clips that really are 1920x1080 and 1280x720 H.264, small, with moov before mdat', () => {
    expect(tkhdSize(CLIP_1080)).toEqual({ width: 1920, height: 1080 });
    expect(avc1Size(CLIP_1080)).toEqual({ width: 1920, height: 1080 });
    expect(tkhdSize(CLIP_720)).toEqual({ width: 1280, height: 720 });
    expect(avc1Size(CLIP_720)).toEqual({ width: 1280, height: 720 });
    for (const clip of [CLIP_720, CLIP_1080]) {
      expect(clip.toString('latin1', 4, 8)).toBe('ftyp');
      expect(clip.indexOf('avcC', 0, 'latin1')).toBeGreaterThan(0);
      expect(clip.indexOf('moov', 0, 'latin1')).toBeLessThan(clip.indexOf('mdat', 0, 'latin1'));
      expect(clip.length).toBeLessThan(25_000);
    }
  });

  it('makes caches revalidate every file answer (no-cache, never immutable), with a strong ETag and Accept-Ranges', async () => {
    const res = await get('/cdn/videos/vid_1080.mp4');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const other = await get('/cdn/videos/vid_720.mp4');
    expect(other.headers['etag']).not.toBe(res.headers['etag']);
  });

  it('ignores a query string: the file and its ETag are those of the path', async () => {
    const plain = await get('/cdn/thumbnails/vid_720.png');
    const queried = await get('/cdn/thumbnails/vid_720.png?view=3');
    expect(queried.status).toBe(200);
    expect(queried.headers['etag']).toBe(plain.headers['etag']);
    expect(Buffer.compare(queried.body as Buffer, plain.body as Buffer)).toBe(0);
  });

  it('answers HEAD with the headers and no body', async () => {
    const res = await request(app).head('/cdn/videos/vid_1080.mp4');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(res.headers['content-length']).toBe(String(VIDEO_1080.length));
    expect(res.text ?? '').toBe('');
  });

  it('answers 404 for a video that has not succeeded yet', async () => {
    const res = await request(app).get('/cdn/videos/vid_pending.mp4');
    expectNotFound(res.status, res.body);
    expect(res.body.error.message).toBe(
      'No media file /cdn/videos/vid_pending.mp4: the video does not exist or has not succeeded yet.',
    );
  });

  it('answers 404 for an unknown video id', async () => {
    const res = await request(app).get('/cdn/videos/vid_nope.mp4');
    expectNotFound(res.status, res.body);
  });

  it('answers 404 for a video asked with the wrong extension', async () => {
    const res = await request(app).get('/cdn/videos/vid_1080.webm');
    expectNotFound(res.status, res.body);
    expect(res.body.error.message).toContain('{id}.mp4');
  });
});

// ---------------------------------------------------------------------------------------------
// Video files last the requested duration. The boxes are read here independently of
// src/media/mp4.ts, field by field from ISO/IEC 14496-12.

interface Mp4Facts {
  movie: { timescale: number; duration: number };
  track: { duration: number; width: number; height: number };
  media: { timescale: number; duration: number };
  editDurations: number[];
  sampleDurations: number[];
  sampleSizes: number[];
  syncSamples: number[];
  /** File offset of every sample, from stsc and stco. */
  sampleOffsets: number[];
  mdat: { start: number; end: number };
  topLevel: string[];
  videoTracks: number;
}

function boxesIn(mp4: Buffer, from: number, to: number): { type: string; body: number; end: number }[] {
  const out: { type: string; body: number; end: number }[] = [];
  for (let at = from; at < to; ) {
    const size = mp4.readUInt32BE(at);
    expect(size).toBeGreaterThanOrEqual(8);
    out.push({ type: mp4.toString('latin1', at + 4, at + 8), body: at + 8, end: at + size });
    at += size;
  }
  return out;
}

function only(mp4: Buffer, parent: { body: number; end: number }, type: string): { type: string; body: number; end: number } {
  const found = boxesIn(mp4, parent.body, parent.end).filter((b) => b.type === type);
  expect(found, `one ${type}`).toHaveLength(1);
  return found[0]!;
}

function readMp4(mp4: Buffer): Mp4Facts {
  const top = boxesIn(mp4, 0, mp4.length);
  const moov = top.find((b) => b.type === 'moov')!;
  const mdat = top.find((b) => b.type === 'mdat')!;
  const mvhd = only(mp4, moov, 'mvhd');
  const traks = boxesIn(mp4, moov.body, moov.end).filter((b) => b.type === 'trak');
  expect(traks).toHaveLength(1);
  const trak = traks[0]!;
  const tkhd = only(mp4, trak, 'tkhd');
  const mdia = only(mp4, trak, 'mdia');
  const mdhd = only(mp4, mdia, 'mdhd');
  expect(mp4.toString('latin1', only(mp4, mdia, 'hdlr').body + 8, only(mp4, mdia, 'hdlr').body + 12)).toBe('vide');
  const stbl = only(mp4, only(mp4, mdia, 'minf'), 'stbl');
  for (const b of [mvhd, tkhd, mdhd]) expect(mp4[b.body], `${b.type} version`).toBe(0);

  const words = (b: { body: number }, from: number, n: number) => Array.from({ length: n }, (_, i) => mp4.readUInt32BE(b.body + from + 4 * i));
  const stts = only(mp4, stbl, 'stts');
  const sttsEntries = words(stts, 8, 2 * mp4.readUInt32BE(stts.body + 4));
  const sampleDurations: number[] = [];
  for (let e = 0; e < sttsEntries.length; e += 2) for (let k = 0; k < sttsEntries[e]!; k++) sampleDurations.push(sttsEntries[e + 1]!);
  const stsz = only(mp4, stbl, 'stsz');
  const count = mp4.readUInt32BE(stsz.body + 8);
  const uniform = mp4.readUInt32BE(stsz.body + 4);
  const sampleSizes = uniform !== 0 ? new Array<number>(count).fill(uniform) : words(stsz, 12, count);
  const stss = only(mp4, stbl, 'stss');
  const syncSamples = words(stss, 8, mp4.readUInt32BE(stss.body + 4));
  const stco = only(mp4, stbl, 'stco');
  const chunkOffsets = words(stco, 8, mp4.readUInt32BE(stco.body + 4));
  const stsc = only(mp4, stbl, 'stsc');
  const stscEntries = words(stsc, 8, 3 * mp4.readUInt32BE(stsc.body + 4));
  const sampleOffsets: number[] = [];
  for (let c = 1; c <= chunkOffsets.length; c++) {
    let perChunk = 0;
    for (let e = 0; e < stscEntries.length; e += 3) if (stscEntries[e]! <= c) perChunk = stscEntries[e + 1]!;
    let offset = chunkOffsets[c - 1]!;
    for (let k = 0; k < perChunk; k++) {
      sampleOffsets.push(offset);
      offset += sampleSizes[sampleOffsets.length - 1]!;
    }
  }
  const elst = only(mp4, only(mp4, trak, 'edts'), 'elst');
  return {
    movie: { timescale: mp4.readUInt32BE(mvhd.body + 12), duration: mp4.readUInt32BE(mvhd.body + 16) },
    track: {
      duration: mp4.readUInt32BE(tkhd.body + 20),
      width: mp4.readUInt32BE(tkhd.body + 76) / 65536,
      height: mp4.readUInt32BE(tkhd.body + 80) / 65536,
    },
    media: { timescale: mp4.readUInt32BE(mdhd.body + 12), duration: mp4.readUInt32BE(mdhd.body + 16) },
    editDurations: words(elst, 8, 3 * mp4.readUInt32BE(elst.body + 4)).filter((_, i) => i % 3 === 0),
    sampleDurations,
    sampleSizes,
    syncSamples,
    sampleOffsets,
    mdat: { start: mdat.body, end: mdat.end },
    topLevel: top.map((b) => b.type),
    videoTracks: traks.length,
  };
}

describe('video files last the requested duration', () => {
  const clips = { '720p': readMp4(CLIP_720), '1080p': readMp4(CLIP_1080) };
  const size = { '720p': { width: 1280, height: 720 }, '1080p': { width: 1920, height: 1080 } } as const;

  it('starts from 2 s clips of 20 frames at 10 fps whose only keyframe is the first frame', () => {
    for (const clip of Object.values(clips)) {
      expect(clip.media.duration / clip.media.timescale).toBe(2);
      expect(clip.sampleSizes).toHaveLength(20);
      expect(clip.syncSamples).toEqual([1]);
    }
    expect(parseClip(CLIP_720)).toMatchObject({ width: 1280, height: 720, durationSeconds: 2, sampleCount: 20 });
    expect(parseClip(CLIP_1080)).toMatchObject({ width: 1920, height: 1080, durationSeconds: 2, sampleCount: 20 });
  });

  describe.each([
    ['720p', 4],
    ['1080p', 5],
    ['720p', 10],
    ['1080p', 16],
  ] as const)('a succeeded %s video of %i s', (resolution, seconds) => {
    let mp4: Buffer;
    let facts: Mp4Facts;
    beforeAll(async () => {
      const sim = makeSim();
      const created = await createVideo(sim, { resolution, duration_seconds: seconds });
      expect(created.status).toBe(200);
      await advance(sim, 60).expect(200);
      const video = await getVideo(sim, created.body.id as string);
      expect(video.body).toMatchObject({ status: 'succeeded', resolution, duration_seconds: seconds });
      const res = await request(sim.app)
        .get(new URL(video.body.output.url as string).pathname)
        .buffer(true)
        .parse(binary);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('video/mp4');
      mp4 = res.body as Buffer;
      facts = readMp4(mp4);
    });

    it('says so in mvhd, tkhd, the edit list and mdhd, and its samples add up to it', () => {
      expect(facts.movie.duration).toBe(seconds * facts.movie.timescale);
      expect(facts.track.duration).toBe(seconds * facts.movie.timescale);
      expect(facts.editDurations).toEqual([seconds * facts.movie.timescale]);
      expect(facts.media.duration).toBe(seconds * facts.media.timescale);
      expect(facts.sampleDurations.reduce((a, b) => a + b, 0)).toBe(facts.media.duration);
    });

    it('has 10 frames a second, a keyframe at the start of each 2 s repetition, one video track at the requested size', () => {
      expect(facts.sampleSizes).toHaveLength(seconds * 10);
      expect(facts.sampleDurations).toHaveLength(seconds * 10);
      expect(facts.sampleOffsets).toHaveLength(seconds * 10);
      expect(facts.syncSamples).toEqual(Array.from({ length: Math.ceil(seconds / 2) }, (_, i) => 1 + 20 * i));
      expect(facts.videoTracks).toBe(1);
      expect(facts.track).toMatchObject(size[resolution]);
      expect(avc1Size(mp4)).toEqual(size[resolution]);
    });

    it('plays the clip\'s frames in order, every repetition reading the one copy of them in mdat', () => {
      const clip = resolution === '720p' ? CLIP_720 : CLIP_1080;
      const source = clips[resolution];
      facts.sampleOffsets.forEach((offset, i) => {
        const k = i % 20;
        expect(offset).toBeGreaterThanOrEqual(facts.mdat.start);
        expect(offset + facts.sampleSizes[i]!).toBeLessThanOrEqual(facts.mdat.end);
        expect(facts.sampleSizes[i]).toBe(source.sampleSizes[k]);
        const at = source.sampleOffsets[k]!;
        expect(mp4.subarray(offset, offset + facts.sampleSizes[i]!).equals(clip.subarray(at, at + source.sampleSizes[k]!))).toBe(true);
      });
      expect(facts.mdat.end - facts.mdat.start).toBe(source.sampleSizes.reduce((a, b) => a + b, 0));
    });

    it('costs kilobytes, not megabytes, with moov before mdat', () => {
      expect(facts.topLevel).toEqual(['ftyp', 'moov', 'mdat']);
      const clip = resolution === '720p' ? CLIP_720 : CLIP_1080;
      expect(mp4.length).toBeLessThan(clip.length + 1_000);
      expect(mp4.length).toBeLessThan(20_000);
    });
  });

  it('cuts the last repetition mid-frame to an exact duration that is not a whole number of frames', () => {
    const facts = readMp4(loopClip(parseClip(CLIP_720), 4.05));
    expect(facts.media.duration).toBe(Math.round(4.05 * facts.media.timescale));
    expect(facts.sampleDurations).toHaveLength(41);
    expect(facts.sampleDurations.slice(0, 40).every((d) => d === facts.media.timescale / 10)).toBe(true);
    expect(facts.sampleDurations[40]).toBe(facts.media.timescale / 20);
    expect(facts.movie.duration).toBe(4050);
  });

  it('gives the same bytes for the same clip and duration, and other bytes (and ETags) for other durations', async () => {
    expect(loopClip(parseClip(CLIP_1080), 7).equals(loopClip(parseClip(CLIP_1080), 7))).toBe(true);
    const sim = makeSim();
    const ids: string[] = [];
    for (const duration_seconds of [6, 6, 7]) ids.push((await createVideo(sim, { resolution: '720p', duration_seconds })).body.id as string);
    await advance(sim, 60).expect(200);
    const etags = [];
    for (const id of ids) etags.push((await request(sim.app).head(`/cdn/videos/${id}.mp4`).expect(200)).headers['etag']);
    expect(etags[0]).toBe(etags[1]);
    expect(etags[2]).not.toBe(etags[0]);
  });

  it('refuses, with a reason, bytes that are not an MP4 it can loop', () => {
    expect(() => parseClip(Buffer.from('not an mp4 at all'))).toThrow(Mp4Error);
    expect(() => parseClip(CLIP_720.subarray(0, 400))).toThrow(/past its parent's end/);
    // The same clip whose only keyframe is said to be the second frame: repetitions would not start on one.
    const shifted = Buffer.from(CLIP_720);
    const stss = shifted.indexOf('stss', 0, 'latin1');
    shifted.writeUInt32BE(2, stss + 12);
    expect(() => parseClip(shifted)).toThrow(/first sample is not a sync sample/);
    expect(() => loopClip(parseClip(CLIP_720), 0)).toThrow(Mp4Error);
  });
});

// ---------------------------------------------------------------------------------------------
// Ranges and conditional requests.

describe('ranges and caching', () => {
  it('answers a bytes=a-b range with 206, Content-Range and the exact slice', async () => {
    const res = await get('/cdn/videos/vid_1080.mp4').set('Range', 'bytes=100-299');
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes 100-299/${VIDEO_1080.length}`);
    expect(res.headers['content-length']).toBe('200');
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(Buffer.compare(res.body as Buffer, VIDEO_1080.subarray(100, 300))).toBe(0);
  });

  it('answers an open-ended bytes=a- range up to the last byte', async () => {
    const start = VIDEO_720.length - 50;
    const res = await get('/cdn/videos/vid_720.mp4').set('Range', `bytes=${start}-`);
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes ${start}-${VIDEO_720.length - 1}/${VIDEO_720.length}`);
    expect(Buffer.compare(res.body as Buffer, VIDEO_720.subarray(start))).toBe(0);
  });

  it('answers a bytes=-100 suffix range with the last 100 bytes', async () => {
    const size = VIDEO_1080.length;
    const res = await get('/cdn/videos/vid_1080.mp4').set('Range', 'bytes=-100');
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes ${size - 100}-${size - 1}/${size}`);
    expect(res.headers['content-length']).toBe('100');
    expect(Buffer.compare(res.body as Buffer, VIDEO_1080.subarray(size - 100))).toBe(0);
  });

  it('clamps a range end past the file to the last byte', async () => {
    const size = VIDEO_720.length;
    const res = await get('/cdn/videos/vid_720.mp4').set('Range', `bytes=10-${size + 5000}`);
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes 10-${size - 1}/${size}`);
  });

  it('answers a range on a PNG too', async () => {
    const whole = await get('/cdn/images/img_square.png');
    const res = await get('/cdn/images/img_square.png').set('Range', 'bytes=0-7');
    expect(res.status).toBe(206);
    expect(Buffer.compare(res.body as Buffer, PNG_SIGNATURE)).toBe(0);
    expect(res.headers['content-range']).toBe(`bytes 0-7/${(whole.body as Buffer).length}`);
  });

  it('answers 416 with Content-Range bytes */SIZE and a JSON error for a start past the end', async () => {
    const size = VIDEO_1080.length;
    const res = await request(app).get('/cdn/videos/vid_1080.mp4').set('Range', `bytes=${size}-`);
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe(`bytes */${size}`);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'range_not_satisfiable',
        message: expect.stringContaining(String(size)),
        param: 'Range',
      },
    });
  });

  it('answers 416 for an empty suffix range bytes=-0', async () => {
    const res = await request(app).get('/cdn/videos/vid_720.mp4').set('Range', 'bytes=-0');
    expect(res.status).toBe(416);
  });

  it.each(['bytes=0-10,20-30', 'bytes=abc', 'items=0-10', 'bytes=50-10', 'bytes=-'])(
    'ignores the malformed or multi-range header %s and serves the whole file',
    async (range) => {
      const res = await get('/cdn/videos/vid_720.mp4').set('Range', range);
      expect(res.status).toBe(200);
      expect(res.headers['content-range']).toBeUndefined();
      expect((res.body as Buffer).length).toBe(VIDEO_720.length);
    },
  );

  it('answers 304 without a body when If-None-Match carries the ETag', async () => {
    const first = await get('/cdn/videos/vid_1080.mp4');
    const etag = first.headers['etag'] as string;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await get('/cdn/videos/vid_1080.mp4').set('If-None-Match', header);
      expect(res.status).toBe(304);
      expect(res.headers['etag']).toBe(etag);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect((res.body as Buffer).length).toBe(0);
    }
  });

  it('answers 304 for a PNG whose ETag matches, even with a Range header', async () => {
    const first = await get('/cdn/thumbnails/vid_720.png');
    const res = await get('/cdn/thumbnails/vid_720.png')
      .set('If-None-Match', first.headers['etag'] as string)
      .set('Range', 'bytes=0-10');
    expect(res.status).toBe(304);
  });

  it('serves 200 when If-None-Match does not match', async () => {
    const res = await get('/cdn/videos/vid_1080.mp4').set('If-None-Match', '"something-else"');
    expect(res.status).toBe(200);
  });

  it('serves the whole file when If-Range does not match the ETag', async () => {
    const res = await get('/cdn/videos/vid_720.mp4').set('Range', 'bytes=0-9').set('If-Range', '"stale"');
    expect(res.status).toBe(200);
    expect((res.body as Buffer).length).toBe(VIDEO_720.length);
    const etag = res.headers['etag'] as string;
    const ranged = await get('/cdn/videos/vid_720.mp4').set('Range', 'bytes=0-9').set('If-Range', etag);
    expect(ranged.status).toBe(206);
  });
});

// ---------------------------------------------------------------------------------------------
// Images and thumbnails.

describe('images and thumbnails', () => {
  it.each([
    ['img_wide', 640, 360],
    ['img_tall', 360, 640],
    ['img_square', 512, 512],
  ])('serves %s as a %ix%i PNG', async (id, width, height) => {
    const res = await get(`/cdn/images/${id}.png`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['accept-ranges']).toBe('bytes');
    const body = res.body as Buffer;
    expect(res.headers['content-length']).toBe(String(body.length));
    expect(body.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(body.toString('latin1', 12, 16)).toBe('IHDR');
    expect(pngSize(body)).toEqual({ width, height });
  });

  it('serves a 16:9 thumbnail of a succeeded video', async () => {
    const res = await get('/cdn/thumbnails/vid_1080.png');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(pngSize(res.body as Buffer)).toEqual({ width: 480, height: 270 });
  });

  it('serves the same bytes and ETag for the same id', async () => {
    const a = await get('/cdn/images/img_wide.png');
    const b = await makeAppGet('/cdn/images/img_wide.png');
    expect(Buffer.compare(a.body as Buffer, b.body as Buffer)).toBe(0);
    expect(a.headers['etag']).toBe(b.headers['etag']);
  });

  it('serves different bytes for different ids with the same prompt', async () => {
    const a = await get('/cdn/images/img_wide.png');
    const b = await get('/cdn/images/img_wide_2.png');
    expect(Buffer.compare(a.body as Buffer, b.body as Buffer)).not.toBe(0);
    expect(a.headers['etag']).not.toBe(b.headers['etag']);
  });

  it('answers 404 for the thumbnail of a video that has not succeeded', async () => {
    const res = await request(app).get('/cdn/thumbnails/vid_pending.png');
    expectNotFound(res.status, res.body);
  });

  it('answers 404 for an unknown image id', async () => {
    const res = await request(app).get('/cdn/images/img_nope.png');
    expectNotFound(res.status, res.body);
    expect(res.body.error.message).toBe('No media file /cdn/images/img_nope.png: no image with this id exists.');
  });

  it('answers 404 for an image asked as .jpg and for a video id under /images', async () => {
    for (const path of ['/cdn/images/img_wide.jpg', '/cdn/images/vid_1080.png', '/cdn/thumbnails/img_wide.png']) {
      const res = await request(app).get(path);
      expectNotFound(res.status, res.body);
    }
  });
});

/** A second, independent router (fresh PNG cache) to prove the bytes do not come from a cache. */
const otherApp = makeApp();
function makeAppGet(path: string) {
  return request(otherApp).get(path).buffer(true).parse(binary);
}

// ---------------------------------------------------------------------------------------------
// Everything else.

describe('unknown paths and traversal attempts', () => {
  it.each([
    '/cdn/videos/..%2F..%2Fpackage.json',
    '/cdn/../package.json',
    '/cdn/videos/../../package.json',
    '/cdn/videos/%2e%2e%2f%2e%2e%2fpackage.json',
    '/cdn/videos/%2e%2e/%2e%2e/assets/clip-720p.mp4',
    '/cdn/images/..%5C..%5Cpackage.json',
    '/cdn/assets/clip-720p.mp4',
    '/cdn/videos/clip-720p.mp4',
    '/cdn/videos/%E0%A4%A.mp4',
    '/cdn/videos/vid_1080.mp4%00.png',
    '/cdn/videos/',
    '/cdn/',
    '/cdn/nothing/here',
  ])('answers %s with a 404 JSON error and no file content', async (path) => {
    const res = await rawGet(path);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expectNotFound(res.status, JSON.parse(res.body));
    expect(res.body).not.toContain('video-service-sim');
  });

  it('answers other methods with 404', async () => {
    const res = await request(app).post('/cdn/videos/vid_1080.mp4');
    expectNotFound(res.status, res.body);
  });
});

// ---------------------------------------------------------------------------------------------
// The PNG encoder and the range parser on their own.

describe('renderPlaceholderPng', () => {
  it('writes valid chunks whose pixel data inflates to RGB scanlines', () => {
    const { width, height } = pngDimensions('9:16');
    const png = renderPlaceholderPng({ seed: 'img_x', label: 'Hello world 42', width, height });
    const { types, idat } = readPngChunks(png);
    expect(types).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(png[24]).toBe(8); // bit depth
    expect(png[25]).toBe(2); // RGB
    const raw = inflateSync(idat);
    expect(raw.length).toBe((width * 3 + 1) * height);
    for (let y = 0; y < height; y++) expect(raw[y * (width * 3 + 1)]).toBeLessThanOrEqual(4);
  });

  it('is byte-identical for the same inputs and differs by seed and label', () => {
    const opts = { seed: 'vid_1', label: 'A cat', ...THUMBNAIL_DIMENSIONS };
    const a = renderPlaceholderPng(opts);
    expect(Buffer.compare(a, renderPlaceholderPng({ ...opts }))).toBe(0);
    expect(Buffer.compare(a, renderPlaceholderPng({ ...opts, seed: 'vid_2' }))).not.toBe(0);
    expect(Buffer.compare(a, renderPlaceholderPng({ ...opts, label: 'A dog' }))).not.toBe(0);
  });

  it('copes with empty, long and non-Latin labels', () => {
    for (const label of ['', 'x'.repeat(5000), '日本語のプロンプト', 'Café — naïve façade!?']) {
      const png = renderPlaceholderPng({ seed: 's', label, width: 64, height: 36 });
      expect(pngSize(png)).toEqual({ width: 64, height: 36 });
    }
  });

  it('rejects sizes that are not positive integers or are too large', () => {
    expect(() => renderPlaceholderPng({ seed: 's', label: '', width: 0, height: 10 })).toThrow(RangeError);
    expect(() => renderPlaceholderPng({ seed: 's', label: '', width: 10.5, height: 10 })).toThrow(RangeError);
    expect(() => renderPlaceholderPng({ seed: 's', label: '', width: 10, height: 100_000 })).toThrow(RangeError);
  });

  it('encodes a 640x360 image in a few kilobytes', () => {
    let bytes = 0;
    for (let i = 0; i < 10; i++) {
      bytes += renderPlaceholderPng({ seed: `img_${i}`, label: 'A quick brown fox jumps over the lazy dog', width: 640, height: 360 }).length;
    }
    expect(bytes / 10).toBeLessThan(40_000);
  });
});

// ---------------------------------------------------------------------------------------------
// Ids repeat across runs: one URL, other content.

describe('media URLs across a reset', () => {
  const thumbnailOf = async (sim: ReturnType<typeof makeSim>, prompt: string) => {
    const created = await createVideo(sim, { prompt });
    expect(created.status).toBe(200);
    await advance(sim, 10).expect(200);
    const video = await getVideo(sim, created.body.id as string);
    expect(video.body.status).toBe('succeeded');
    return { id: created.body.id as string, path: new URL(video.body.output.thumbnail_url as string).pathname };
  };
  const fetchPng = (sim: ReturnType<typeof makeSim>, path: string, etag?: string) => {
    const req = request(sim.app).get(path).buffer(true).parse(binary);
    return etag ? req.set('If-None-Match', etag) : req;
  };

  it('serves the new thumbnail under the same URL after a reset with a new prompt: the old ETag no longer matches', async () => {
    const sim = makeSim();
    const before = await thumbnailOf(sim, 'A red kite over a green hill.');
    const old = await fetchPng(sim, before.path);
    expect(old.status).toBe(200);
    expect(old.headers['cache-control']).toBe('no-cache');
    const oldEtag = old.headers['etag'] as string;
    expect((await fetchPng(sim, before.path, oldEtag)).status).toBe(304);

    await request(sim.app).post('/_sim/reset').send({}).expect(200);
    const after = await thumbnailOf(sim, 'A blue boat on a grey sea.');
    expect(after).toEqual(before); // same seed, same id, same URL

    const fresh = await fetchPng(sim, after.path, oldEtag);
    expect(fresh.status).toBe(200);
    expect(fresh.headers['cache-control']).toBe('no-cache');
    expect(fresh.headers['etag']).not.toBe(oldEtag);
    expect(Buffer.compare(fresh.body as Buffer, old.body as Buffer)).not.toBe(0);
    const revalidated = await fetchPng(sim, after.path, fresh.headers['etag']);
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers['cache-control']).toBe('no-cache');
  });

  it('derives the ETag from the bytes served, not from the URL: two videos of one resolution share the clip and its ETag', async () => {
    const sim = makeSim();
    const a = (await createVideo(sim, { resolution: '720p' })).body.id as string;
    const b = (await createVideo(sim, { resolution: '720p', prompt: 'Another prompt entirely.' })).body.id as string;
    await advance(sim, 10).expect(200);
    const [ra, rb] = [await fetchPng(sim, `/cdn/videos/${a}.mp4`), await fetchPng(sim, `/cdn/videos/${b}.mp4`)];
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect(ra.headers['etag']).toBe(rb.headers['etag']);
    expect((await fetchPng(sim, `/cdn/videos/${b}.mp4`, ra.headers['etag'] as string)).status).toBe(304);
  });
});

describe('media paths', () => {
  it('write an id into each form and read it back; a name of another form, or no plain id, names no file', () => {
    const cdn = 'https://media.example.test/prefix/cdn';
    expect(mediaUrl(cdn, 'video', 'vid_1')).toBe(`${cdn}/videos/vid_1.mp4`);
    expect(mediaUrl(cdn, 'thumbnail', 'vid_1')).toBe(`${cdn}/thumbnails/vid_1.png`);
    expect(mediaUrl(cdn, 'image', 'img_1')).toBe(`${cdn}/images/img_1.png`);
    for (const kind of ['video', 'thumbnail', 'image'] as const) {
      expect(mediaIdOf(kind, mediaFileName(kind, 'abc_1'))).toBe('abc_1');
      expect(cdnUrlIn(mediaUrl(cdn, kind, 'abc_1'), kind, 'abc_1')).toBe(cdn);
    }
    expect([mediaIdOf('video', 'vid_1.png'), mediaIdOf('image', '..png'), mediaIdOf('image', 'a%2Fb.png'), mediaIdOf('image', undefined)]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(cdnUrlIn(`${cdn}/videos/vid_2.mp4`, 'video', 'vid_1')).toBeUndefined();
    expect(defaultCdnUrl('http://localhost:8080//')).toBe('http://localhost:8080/cdn');
  });
});

describe('the addresses createSimulator is given', () => {
  it('refuses a base or media address that is not an http(s) URL with a RangeError naming it', () => {
    expect(() => createSimulator({ scenario: 'fast', cdnUrl: 'media.example.test/cdn' })).toThrow(
      new RangeError('cdnUrl must be an http(s) URL, got "media.example.test/cdn"'),
    );
    expect(() => createSimulator({ scenario: 'fast', baseUrl: 'ftp://sim.example.test' })).toThrow(
      new RangeError('baseUrl must be an http(s) URL, got "ftp://sim.example.test"'),
    );
  });
});

describe('parseByteRange', () => {
  it.each([
    ['bytes=0-0', { kind: 'partial', start: 0, end: 0 }],
    ['bytes=5-', { kind: 'partial', start: 5, end: 999 }],
    ['bytes=-1', { kind: 'partial', start: 999, end: 999 }],
    ['bytes=-5000', { kind: 'partial', start: 0, end: 999 }],
    ['BYTES = 10 - 20', { kind: 'partial', start: 10, end: 20 }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=20-10', { kind: 'whole' }],
    ['bytes=0-1,5-6', { kind: 'whole' }],
    ['bytes=x-1', { kind: 'whole' }],
    ['lines=0-1', { kind: 'whole' }],
  ] as const)('parses %s against a 1000-byte file', (header, expected) => {
    expect(parseByteRange(header, 1000)).toEqual(expected);
  });
});
