/**
 * The media files, as plain answers: what a request for a file under the CDN address (`MEDIA_ROOT`)
 * gets, in the forms `src/core/generations/mediaPaths.ts` gives, with no framework, so that the server
 * (`src/http/media.ts`) and a page's handlers (`src/msw/`) answer the same bytes and headers:
 *
 *   GET|HEAD a video's file      the committed clip for the video's resolution, looped to its duration
 *   GET|HEAD a thumbnail         a 16:9 PNG thumbnail of a succeeded video
 *   GET|HEAD an image's file     the image's PNG in its aspect ratio
 *
 * Only the two committed clips are ever read (`src/runtime/clips.ts`), by fixed names; nothing built
 * from the request names a file. A video's file is its resolution's clip with sample tables
 * rewritten to repeat it for the video's duration (`mp4.ts`, no re-encoding), kept in a small LRU.
 * PNGs are drawn in memory (`png.ts`) and kept in a small LRU. Every file answer carries a strong
 * ETag (SHA-256 of the bytes) and `Cache-Control: no-cache`, and supports If-Match (412),
 * If-None-Match (304, by `fresh`) and a single byte range (206 / 416, by `range-parser`). Anything
 * else is a 404 in the section-7 shape.
 *
 * Never immutable: ids repeat across runs by design (same seed, same ids), so after a restart or a
 * reset one URL can name other content (a thumbnail is drawn from its video's prompt). A cache
 * must ask again each time; the ETag, taken from the bytes, makes that a 304 when nothing changed.
 */
import fresh from 'fresh';
import QuickLRU from 'quick-lru';
import parseRange from 'range-parser';

import { SimError } from '../core/errors.js';
import { MEDIA_FILES, MEDIA_ROOT, mediaFileName, mediaFilePath, mediaIdOf, mediaUrlForms, type MediaKind } from '../core/generations/mediaPaths.js';
import { JSON_TYPE } from '../jsonType.js';
import { clipBytes, type ClipResolution } from '../runtime/clips.js';
import { sha256Base64Url } from '../runtime/digest.js';
import { loopClip, parseClip, type Mp4Clip } from './mp4.js';
import { pngDimensions, renderPlaceholderPng, THUMBNAIL_DIMENSIONS } from './png.js';

export interface MediaCatalog {
  /** A video that has succeeded: its resolution, duration and prompt; undefined when no such video exists or it has not succeeded. */
  videoFile(id: string): { resolution: '720p' | '1080p'; durationSeconds: number; prompt: string } | undefined;
  /** An existing image: its aspect ratio and prompt; undefined otherwise. */
  imageFile(id: string): { aspectRatio: '16:9' | '9:16' | '1:1'; prompt: string } | undefined;
}

/** A request for a media file: its method, its path below `MEDIA_ROOT` (`/videos/vid_x.mp4`, percent-encoded as sent), its headers. */
export interface MediaRequest {
  method: string;
  path: string;
  /** A request header by its name in lower case, undefined when absent. */
  header(name: string): string | undefined;
}

/** A media answer: its status, headers and body (none for HEAD and 304). */
export interface MediaAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
}

/** A file ready to serve. */
interface MediaFile {
  readonly body: Uint8Array;
  readonly etag: string;
  readonly contentType: string;
}

/** Caches may store media but must revalidate (If-None-Match) before each use. */
const MEDIA_CACHE_CONTROL = 'no-cache';

/** How many generated PNGs each catalogue's files keep. */
const PNG_CACHE_CAP = 256;

/** How many looped videos are kept (shared by all): every duration of 4-16 s at both resolutions. */
const VIDEO_CACHE_CAP = 32;

function mediaFile(body: Uint8Array, contentType: string): MediaFile {
  return { body, etag: `"${sha256Base64Url(body).slice(0, 27)}"`, contentType };
}

/** Clips are immutable, so one read and parse per process is enough (shared by all). */
const clipCache = new Map<ClipResolution, Promise<Mp4Clip>>();

function loadClip(resolution: ClipResolution): Promise<Mp4Clip> {
  let pending = clipCache.get(resolution);
  if (pending === undefined) {
    pending = clipBytes(resolution).then(parseClip);
    // A failed read (missing asset) is not cached, so a later request can retry.
    pending.catch(() => clipCache.delete(resolution));
    clipCache.set(resolution, pending);
  }
  return pending;
}

const videoCache = new QuickLRU<string, MediaFile>({ maxSize: VIDEO_CACHE_CAP });

/** The video file for a resolution and duration: built once, then served from the cache. */
async function loadVideo(resolution: ClipResolution, durationSeconds: number): Promise<MediaFile> {
  const key = `${resolution}/${durationSeconds}`;
  let file = videoCache.get(key);
  if (file === undefined) {
    file = mediaFile(loopClip(await loadClip(resolution), durationSeconds), 'video/mp4');
    videoCache.set(key, file);
  }
  return file;
}

// ---------------------------------------------------------------------------------------------
// Conditional and range requests.

/**
 * If-None-Match, by `fresh` (Express's own check, weak comparison as RFC 9110 13.1.2 asks). Only
 * that header is handed over: a request's `Cache-Control: no-cache` does not turn a matching tag
 * into a full answer, and If-Modified-Since never matches a file without Last-Modified.
 */
function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  return fresh({ 'if-none-match': ifNoneMatch }, { etag });
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
 * than the file means the whole file, and only the rest is unsatisfiable.
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

/** A JSON error answer. */
function errorAnswer(status: number, error: SimError, headers: Record<string, string> = {}): MediaAnswer {
  const body = new TextEncoder().encode(JSON.stringify(error.toBody()));
  return { status, headers: { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': String(body.length) }, body };
}

function fileAnswer(request: MediaRequest, file: MediaFile): MediaAnswer {
  const size = file.body.length;
  const cacheHeaders = { ETag: file.etag, 'Cache-Control': MEDIA_CACHE_CONTROL, 'Accept-Ranges': 'bytes' };

  if (!ifMatchHolds(request.header('if-match'), file.etag)) {
    return errorAnswer(
      412,
      new SimError('precondition_failed', {
        param: 'If-Match',
        message: 'The condition in If-Match does not hold for this file: its ETag is another. Fetch it again without the condition.',
      }),
    );
  }
  if (notModified(request.header('if-none-match'), file.etag)) return { status: 304, headers: cacheHeaders, body: undefined };

  const rangeHeader = request.header('range');
  const range = rangeHeader !== undefined && ifRangeAllows(request.header('if-range'), file.etag) ? parseByteRange(rangeHeader, size) : WHOLE;
  if (range.kind === 'unsatisfiable') {
    return errorAnswer(
      416,
      new SimError('range_not_satisfiable', {
        param: 'Range',
        message: `The requested range "${rangeHeader?.slice(0, 100) ?? ''}" is not satisfiable: this file is ${size} bytes long (valid byte positions are 0-${size - 1}).`,
      }),
      { 'Accept-Ranges': 'bytes', 'Content-Range': `bytes */${size}` },
    );
  }
  const body = range.kind === 'partial' ? file.body.subarray(range.start, range.end + 1) : file.body;
  const headers: Record<string, string> = { ...cacheHeaders, 'Content-Type': file.contentType, 'X-Content-Type-Options': 'nosniff' };
  if (range.kind === 'partial') headers['Content-Range'] = `bytes ${range.start}-${range.end}/${size}`;
  headers['Content-Length'] = String(body.length);
  return { status: range.kind === 'partial' ? 206 : 200, headers, body: request.method === 'HEAD' ? undefined : body };
}

// ---------------------------------------------------------------------------------------------
// 404s.

const MEDIA_URL_FORMS = `Media URLs have the form ${mediaUrlForms()}.`;

function notFound(message: string): MediaAnswer {
  return errorAnswer(404, new SimError('resource_not_found', { param: 'id', message }));
}

/** The file name, echoed in messages only when it is harmless and short. */
function describe(base: string, file: string): string {
  return /^[A-Za-z0-9_.-]{1,140}$/.test(file) && !file.includes('..') ? `${base}/${file}` : base;
}

/** A file path below the media root: its folder (as named, letter case aside) and its file name, percent-decoded; a trailing slash allowed. */
const FILE_PATH = /^\/([^/]+)\/([^/]+)\/?$/;

// ---------------------------------------------------------------------------------------------
// The files.

/** How each kind is named in messages, and why a well-named file of it may be missing. */
const KINDS: readonly { kind: MediaKind; files: string; missing: string }[] = [
  { kind: 'video', files: 'video files', missing: 'the video does not exist or has not succeeded yet.' },
  { kind: 'thumbnail', files: 'thumbnails', missing: 'the video does not exist or has not succeeded yet.' },
  { kind: 'image', files: 'images', missing: 'no image with this id exists.' },
];

/** Answers requests for the media files of `catalog`, keeping the last PNGs drawn. */
export function createMediaFiles(catalog: MediaCatalog): (request: MediaRequest) => Promise<MediaAnswer> {
  const pngCache = new QuickLRU<string, MediaFile>({ maxSize: PNG_CACHE_CAP });
  const placeholder = (kind: string, seed: string, label: string, size: { width: number; height: number }): MediaFile => {
    const key = `${kind}\u0000${size.width}x${size.height}\u0000${seed}\u0000${label}`;
    let file = pngCache.get(key);
    if (file === undefined) {
      file = mediaFile(renderPlaceholderPng({ seed, label, ...size }), 'image/png');
      pngCache.set(key, file);
    }
    return file;
  };
  const fileOf = (kind: MediaKind, id: string): MediaFile | Promise<MediaFile> | undefined => {
    if (kind === 'image') {
      const image = catalog.imageFile(id);
      return image && placeholder('image', id, image.prompt, pngDimensions(image.aspectRatio));
    }
    const video = catalog.videoFile(id);
    if (video === undefined) return undefined;
    return kind === 'video' ? loadVideo(video.resolution, video.durationSeconds) : placeholder('thumbnail', id, video.prompt, THUMBNAIL_DIMENSIONS);
  };

  return async (request) => {
    const match = request.method === 'GET' || request.method === 'HEAD' ? FILE_PATH.exec(request.path) : null;
    const folder = match?.[1]?.toLowerCase();
    const named = KINDS.find(({ kind }) => MEDIA_FILES[kind].folder === folder);
    if (match === null || named === undefined) return notFound(`No media file at this address. ${MEDIA_URL_FORMS}`);
    let file: string;
    try {
      file = decodeURIComponent(match[2] as string);
    } catch {
      // A name that fails to percent-decode (e.g. "%E0%A4%A") is not a file either.
      return notFound(`No media file at this address. ${MEDIA_URL_FORMS}`);
    }
    const { kind, files, missing } = named;
    const id = mediaIdOf(kind, file);
    if (id === undefined) {
      const naming = `${files} are named ${mediaFileName(kind, '{id}')}.`;
      return notFound(`No media file ${describe(`${MEDIA_ROOT}/${MEDIA_FILES[kind].folder}`, file)}: ${naming} ${MEDIA_URL_FORMS}`);
    }
    const found = await fileOf(kind, id);
    if (found === undefined) return notFound(`No media file ${MEDIA_ROOT}/${mediaFilePath(kind, id)}: ${missing}`);
    return fileAnswer(request, found);
  };
}
