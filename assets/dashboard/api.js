// The dashboard speaks only to the simulator's control endpoints (/_sim/...) and its media files.
// Addresses are relative to the page (served at <base>/_sim/), so a path prefix in front of the
// simulator keeps working. Every control request goes through `control` below, which sends the
// control token (token.js) and asks for it when the simulator answers 401.
import { askForToken, controlToken } from './token.js';

const SIM = new URL('./', window.location.href); // .../_sim/

/** A control endpoint's error answer: the section-7 message, with the status and code. */
export class ControlError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKEN_CODES = ['control_token_required', 'invalid_control_token'];

/**
 * GET, POST or DELETE a control endpoint; resolves to the JSON body, rejects with a ControlError.
 * Refused for want of the control token, it waits for the token (asked once for all requests) and
 * is sent again.
 */
export async function control(path, { method = 'GET', query, body } = {}) {
  const url = new URL(path, SIM);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const response = await controlFetch(url, method, body);
  const json = await response.json().catch(() => null);
  if (!response.ok) throw controlError(response, json, `${method} ${url.pathname}`);
  return json;
}

/**
 * Sends a control request with the control token; refused for want of it, waits for the token
 * (asked once for all requests) and sends it again. Resolves to the response, its body unread.
 */
async function controlFetch(url, method, body) {
  for (;;) {
    const token = controlToken();
    const headers = body === undefined ? {} : { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
    if (response.status !== 401) return response;
    const json = await response.clone().json().catch(() => null);
    if (!TOKEN_CODES.includes(json?.error?.code)) return response;
    // Another request may have been given a token meanwhile: ask only when this one was refused.
    if (controlToken() === token) await askForToken(token !== null);
  }
}

/** The ControlError of a refused control request (`json`: its body, or null). */
function controlError(response, json, label) {
  return new ControlError(json?.error?.message ?? `${label} answered ${response.status}`, response.status, json?.error?.code ?? null);
}

export const api = {
  health: () => control('health'),
  scenario: () => control('scenario'),
  /** The bundled scenarios: { data: [{ name, purpose }] }. */
  scenarios: () => control('scenarios'),
  /** The pipeline's stages in order: { data: [{ name, status, fills, failable, failure_codes }] }. */
  pipeline: () => control('pipeline'),
  /** The global clock, or an account's (its own offset included). */
  clock: (account) => control('clock', { query: { api_key: account } }),
  advance: (seconds) => control('clock/advance', { method: 'POST', body: { seconds } }),
  reset: (scenario) => control('reset', { method: 'POST', body: scenario ? { scenario } : {} }),
  /** A page in creation order: { data, has_more, cursor }. */
  generations: ({ limit, after, status, account }) =>
    control('generations', { query: { limit, after, status, api_key: account } }),
  /** What changed since `cursor`, in the order of the latest change: { data, has_more, cursor }. */
  changes: ({ cursor, account, limit = 1000 }) =>
    control('generations', { query: { changed_since: cursor, limit, api_key: account } }),
  journal: ({ limit, account }) => control('requests', { query: { limit, api_key: account } }),
  /** How well an account's client follows the interface document: coverage and findings. */
  report: (account) => control('report', { query: { api_key: account } }),
  generation: (id) => control(`generations/${encodeURIComponent(id)}`),
  /** Live control of one generation (`advance`, `finish`, `fail`, `cancel`): each answers the generation. */
  moveGeneration: (id, action, body) => control(`generations/${encodeURIComponent(id)}/${action}`, { method: 'POST', body }),
  /** Queues a fault (POST /_sim/faults): { queued }. */
  queueFault: (fault) => control('faults', { method: 'POST', body: fault }),
  /** The queued faults: { queued, faults: [{ path, method, status?, latency_ms?, outcome?, times_left, api_key }] }. */
  faults: () => control('faults'),
  /** The state file (`--state`), as a Blob to save. */
  stateFile: () => controlDownload('state'),
  /** Drops one account's queued faults: { queued }. */
  clearFaults: (account) => control('faults', { method: 'DELETE', query: { api_key: account } }),
};

/**
 * A control endpoint's file (GET /_sim/state), fetched with the control token like every control
 * request: resolves to a Blob, rejects with a ControlError.
 */
async function controlDownload(path) {
  const response = await controlFetch(new URL(path, SIM), 'GET', undefined);
  if (!response.ok) throw controlError(response, await response.json().catch(() => null), `GET ${path}`);
  return response.blob();
}

/**
 * A real request to the service's API (`/v1`), made with the API key the user typed, so it is
 * that key's request (journaled, rate limited, reported) like any client's. Answers { status, body }.
 */
export async function serviceRequest(path, { key, body }) {
  const response = await fetch(new URL(`../v1/${path}`, SIM), {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    cache: 'no-store',
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

// The CDN address (--cdn-url may move it): learnt from the first output URL seen, else <base>/cdn.
let cdnBase = new URL('../cdn/', SIM).href;

export function learnCdn(generation) {
  const thumb = generation.output?.thumbnail_url;
  const at = thumb ? thumb.lastIndexOf('/thumbnails/') : -1;
  if (at > 0) cdnBase = thumb.slice(0, at + 1);
}

/** A keyframe image's PNG. */
export function keyframeUrl(imageId) {
  return mediaUrl(`${cdnBase}images/${encodeURIComponent(imageId)}.png`);
}

// Ids repeat across runs (same seed, same ids), so after a reset a media URL can name other
// content. The server makes caches ask again (no-cache, ETag), but a document that has shown an
// image reuses it for the same URL without asking (the HTML standard's list of available images).
// So each time the page starts over it gives media URLs a new `view` query, which the CDN ignores.
let view = 0;

/** Called when the page starts over: media shown from now on is fetched (or revalidated) anew. */
export function newMediaView() {
  view += 1;
}

/** A media URL as this page shows it: the simulator's URL plus the page's current `view`. */
export function mediaUrl(url) {
  if (!url) return url;
  const shown = new URL(url, window.location.href);
  shown.searchParams.set('view', String(view));
  return shown.href;
}
