/**
 * The media adapter: real files under the simulator's CDN address (mounted at `MEDIA_ROOT`), in the
 * forms `src/core/mediaPaths.ts` gives:
 *
 *   GET|HEAD a video's file      the committed clip for the video's resolution, looped to its duration
 *   GET|HEAD a thumbnail         a 16:9 PNG thumbnail of a succeeded video
 *   GET|HEAD an image's file     the image's PNG in its aspect ratio
 *
 * Only the two committed clips in `assets/` are ever read from disk, by fixed names; nothing built
 * from the request touches the file system, so no path can escape the media root. A video's file
 * is its resolution's clip with sample tables rewritten to repeat it for the video's duration
 * (`src/media/mp4.ts`, no re-encoding), kept in a small LRU. PNGs are drawn in memory
 * (`src/media/png.ts`) and kept in a small LRU. Every file answer carries a strong ETag
 * (SHA-256 of the bytes) and `Cache-Control: no-cache`, and supports If-Match (412),
 * If-None-Match (304, by `fresh`) and a single byte range (206 / 416, by `range-parser`). Anything else under the router is a
 * 404 in the section-7 shape.
 *
 * Never immutable: ids repeat across runs by design (same seed, same ids), so after a restart or a
 * reset one URL can name other content (a thumbnail is drawn from its video's prompt). A cache
 * must ask again each time; the ETag, taken from the bytes, makes that a 304 when nothing changed.
 */

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

import type { NextFunction, Request, Response, Router } from 'express';
import fresh from 'fresh';
import { LRUCache } from 'lru-cache';
import parseRange from 'range-parser';

import { SimError } from '../core/errors.js';
import { MEDIA_FILES, mediaFileName, mediaFilePath, mediaIdOf, mediaUrlForms, type MediaKind } from '../core/mediaPaths.js';
import { loopClip, parseClip, type Mp4Clip } from '../media/mp4.js';
import { pngDimensions, renderPlaceholderPng, THUMBNAIL_DIMENSIONS } from '../media/png.js';
import { loadExpress } from './express.js';

export interface MediaCatalog {
  /** A video that has succeeded: its resolution, duration and prompt; undefined when no such video exists or it has not succeeded. */
  videoFile(id: string): { resolution: '720p' | '1080p'; durationSeconds: number; prompt: string } | undefined;
  /** An existing image: its aspect ratio and prompt; undefined otherwise. */
  imageFile(id: string): { aspectRatio: '16:9' | '9:16' | '1:1'; prompt: string } | undefined;
}

/** A file ready to serve. */
interface MediaFile {
  readonly body: Buffer;
  readonly etag: string;
  readonly contentType: string;
}

/** Caches may store media but must revalidate (If-None-Match) before each use. */
export const MEDIA_CACHE_CONTROL = 'no-cache';

/** How many generated PNGs each router keeps. */
const PNG_CACHE_CAP = 256;

/** How many looped videos are kept (shared by all routers): every duration of 4-16 s at both resolutions. */
const VIDEO_CACHE_CAP = 32;

/** The committed clips. Works from `src/http/` (vitest, tsx) and from `dist/http/` (after tsc). */
const ASSETS_DIR = new URL('../../assets/', import.meta.url);
const CLIP_NAMES = { '720p': 'clip-720p.mp4', '1080p': 'clip-1080p.mp4' } as const;

function mediaFile(body: Buffer, contentType: string): MediaFile {
  const digest = createHash('sha256').update(body).digest('base64url').slice(0, 27);
  return { body, etag: `"${digest}"`, contentType };
}

/** Clips are immutable, so one read and parse per process is enough (shared by all routers). */
const clipCache = new Map<keyof typeof CLIP_NAMES, Promise<Mp4Clip>>();

function loadClip(resolution: keyof typeof CLIP_NAMES): Promise<Mp4Clip> {
  let pending = clipCache.get(resolution);
  if (pending === undefined) {
    pending = readFile(new URL(CLIP_NAMES[resolution], ASSETS_DIR)).then(parseClip);
    // A failed read (missing asset) is not cached, so a later request can retry.
    pending.catch(() => clipCache.delete(resolution));
    clipCache.set(resolution, pending);
  }
  return pending;
}

/** The video file for a resolution and duration: built once, then served from the cache. */
async function loadVideo(resolution: keyof typeof CLIP_NAMES, durationSeconds: number): Promise<MediaFile> {
  const key = `${resolution}/${durationSeconds}`;
  let file = videoCache.get(key);
  if (file === undefined) {
    file = mediaFile(loopClip(await loadClip(resolution), durationSeconds), 'video/mp4');
    videoCache.set(key, file);
  }
  return file;
}

const videoCache = new LRUCache<string, MediaFile>({ max: VIDEO_CACHE_CAP });

// ---------------------------------------------------------------------------------------------
// Conditional and range requests.

/**
 * If-None-Match, by `fresh` (Express's own check, weak comparison as RFC 9110 13.1.2 asks). Only
 * that header is handed over: a request's `Cache-Control: no-cache` does not turn a matching tag
 * into a full answer, and If-Modified-Since never matches a file without Last-Modified.
 */
function notModified(req: Request, etag: string): boolean {
  return fresh({ 'if-none-match': req.headers['if-none-match'] }, { etag });
}

/**
 * If-Match uses the strong comparison (RFC 9110, 13.1.1): a weak tag never matches. (There is no
 * Last-Modified, so If-Unmodified-Since is ignored, as 13.1.4 says.) `fresh` only compares
 * weakly, so this stays here.
 */
function ifMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined || header.trim() === '*') return true;
  return header
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === etag);
}

/** If-Range: the range applies only when the strong validator matches; dates never match (no Last-Modified). */
function ifRangeAllows(header: string | undefined, etag: string): boolean {
  if (header === undefined) return true;
  return header.trim() === etag;
}

type RangeDecision =
  | { kind: 'whole' }
  | { kind: 'unsatisfiable' }
  | { kind: 'partial'; start: number; end: number };

const WHOLE: RangeDecision = { kind: 'whole' };
const UNSATISFIABLE: RangeDecision = { kind: 'unsatisfiable' };

/**
 * One `bytes=a-b`, `bytes=a-` or `bytes=-n` range (RFC 9110, 14.1.2), read by `range-parser`
 * (the parser Express's static files use). A malformed header, another unit or several ranges
 * are ignored (whole file), as 14.2 allows; a well-formed range that does not overlap the file is
 * unsatisfiable.
 *
 * range-parser 1.x answers -1 for three cases RFC 9110 tells apart, so they are sorted here: a
 * range whose last position is below its first is invalid (ignored: whole file), a suffix longer
 * than the file means the whole file, and only the rest is unsatisfiable. (range-parser 2 makes
 * these distinctions itself but needs Node 22.)
 */
export function parseByteRange(header: string, size: number): RangeDecision {
  const equals = header.indexOf('=');
  if (equals === -1 || header.includes(',') || header.slice(0, equals).trim().toLowerCase() !== 'bytes') return WHOLE;
  const ranges = parseRange(size, header);
  if (ranges === -2) return WHOLE;
  if (ranges !== -1) {
    const [range] = ranges;
    return range === undefined ? WHOLE : { kind: 'partial', start: range.start, end: range.end };
  }
  const [first = '', last = ''] = header.slice(equals + 1).split('-').map((part) => part.trim());
  if (first === '') return Number(last) > 0 && size > 0 ? { kind: 'partial', start: 0, end: size - 1 } : UNSATISFIABLE;
  return last !== '' && Number(last) < Number(first) ? WHOLE : UNSATISFIABLE;
}

function sendMediaFile(req: Request, res: Response, file: MediaFile): void {
  const size = file.body.length;
  const cacheHeaders = {
    ETag: file.etag,
    'Cache-Control': MEDIA_CACHE_CONTROL,
    'Accept-Ranges': 'bytes',
  };

  if (!ifMatchHolds(req.get('If-Match'), file.etag)) {
    res.status(412).json(
      new SimError('precondition_failed', {
        param: 'If-Match',
        message: 'The condition in If-Match does not hold for this file: its ETag is another. Fetch it again without the condition.',
      }).toBody(),
    );
    return;
  }

  if (notModified(req, file.etag)) {
    res.status(304).set(cacheHeaders).end();
    return;
  }

  const rangeHeader = req.get('Range');
  const range: RangeDecision =
    rangeHeader !== undefined && ifRangeAllows(req.get('If-Range'), file.etag)
      ? parseByteRange(rangeHeader, size)
      : { kind: 'whole' };

  if (range.kind === 'unsatisfiable') {
    res
      .status(416)
      .set({ 'Accept-Ranges': 'bytes', 'Content-Range': `bytes */${size}` })
      .json(
        new SimError('range_not_satisfiable', {
          param: 'Range',
          message: `The requested range "${rangeHeader?.slice(0, 100) ?? ''}" is not satisfiable: this file is ${size} bytes long (valid byte positions are 0-${size - 1}).`,
        }).toBody(),
      );
    return;
  }

  let body = file.body;
  res.set(cacheHeaders).set({
    'Content-Type': file.contentType,
    'X-Content-Type-Options': 'nosniff',
  });
  if (range.kind === 'partial') {
    body = file.body.subarray(range.start, range.end + 1);
    res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  } else {
    res.status(200);
  }
  res.set('Content-Length', String(body.length));
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

// ---------------------------------------------------------------------------------------------
// 404s.

const MEDIA_URL_FORMS = `Media URLs have the form ${mediaUrlForms()}.`;

function notFound(res: Response, message: string): void {
  res.status(404).json(new SimError('resource_not_found', { param: 'id', message }).toBody());
}

function fileParam(req: Request): string | undefined {
  const value: unknown = req.params['file'];
  return typeof value === 'string' ? value : undefined;
}

/** The file name, echoed in messages only when it is harmless and short. */
function describe(base: string, file: string | undefined): string {
  return file !== undefined && /^[A-Za-z0-9_.-]{1,140}$/.test(file) && !file.includes('..')
    ? `${base}/${file}`
    : base;
}

/**
 * The id in a request for a file of this kind; when the file name is not of its form, answers 404
 * (saying how `files` of the kind are named) and gives undefined.
 */
function requestedId(req: Request, res: Response, kind: MediaKind, files: string): string | undefined {
  const file = fileParam(req);
  const id = mediaIdOf(kind, file);
  if (id === undefined) {
    const naming = `${files} are named ${mediaFileName(kind, '{id}')}.`;
    notFound(res, `No media file ${describe(`${req.baseUrl}/${MEDIA_FILES[kind].folder}`, file)}: ${naming} ${MEDIA_URL_FORMS}`);
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// Placeholder PNGs.

type Placeholders = (kind: string, seed: string, label: string, size: { width: number; height: number }) => MediaFile;

/** Draws placeholder PNGs, keeping the last PNG_CACHE_CAP drawn. */
function placeholderCache(): Placeholders {
  const pngCache = new LRUCache<string, MediaFile>({ max: PNG_CACHE_CAP });
  return (kind, seed, label, size) => {
    const key = `${kind}\u0000${size.width}x${size.height}\u0000${seed}\u0000${label}`;
    let file = pngCache.get(key);
    if (file === undefined) {
      file = mediaFile(renderPlaceholderPng({ seed, label, ...size }), 'image/png');
      pngCache.set(key, file);
    }
    return file;
  };
}

// ---------------------------------------------------------------------------------------------
// The router.

export function createMediaRouter(catalog: MediaCatalog): Router {
  const router = loadExpress().Router();
  const placeholder = placeholderCache();

  // Express 5 answers HEAD with the GET route; sendMediaFile leaves the body out.
  /** GET a file of this kind: the file `file(id)` gives, or a 404 saying how `files` are named or why it is missing. */
  const route = (
    kind: MediaKind,
    files: string,
    missing: string,
    file: (id: string) => MediaFile | Promise<MediaFile> | undefined,
  ): void => {
    router.get(`/${MEDIA_FILES[kind].folder}/:file`, async (req: Request, res: Response) => {
      const id = requestedId(req, res, kind, files);
      if (id === undefined) return;
      const found = await file(id);
      if (found === undefined) notFound(res, `No media file ${req.baseUrl}/${mediaFilePath(kind, id)}: ${missing}`);
      else sendMediaFile(req, res, found);
    });
  };
  const videoMissing = 'the video does not exist or has not succeeded yet.';
  route('video', 'video files', videoMissing, (id) => {
    const video = catalog.videoFile(id);
    return video && loadVideo(video.resolution, video.durationSeconds);
  });
  route('thumbnail', 'thumbnails', videoMissing, (id) => {
    const video = catalog.videoFile(id);
    return video && placeholder('thumbnail', id, video.prompt, THUMBNAIL_DIMENSIONS);
  });
  route('image', 'images', 'no image with this id exists.', (id) => {
    const image = catalog.imageFile(id);
    return image && placeholder('image', id, image.prompt, pngDimensions(image.aspectRatio));
  });

  // Everything else under the media root: other paths, other methods, traversal attempts.
  router.use((req: Request, res: Response) => {
    notFound(res, `No media file at this address. ${MEDIA_URL_FORMS}`);
  });

  // A parameter that fails to percent-decode (e.g. "%E0%A4%A") is not a file either; other
  // errors (such as a missing asset) go on to the app's error handler.
  router.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (err instanceof URIError && !res.headersSent) {
      notFound(res, `No media file at this address. ${MEDIA_URL_FORMS}`);
      return;
    }
    next(err);
  });

  return router;
}
