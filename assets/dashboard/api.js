// The dashboard speaks only to the simulator's control endpoints (/_sim/...) and its media files.
// Addresses are relative to the page (served at <base>/_sim/), so a path prefix in front of the
// simulator keeps working. Every control request goes through `control` below, which sends the
// control token (token.js) and asks for it when the simulator answers 401. Each endpoint's method
// and path, and the forms of media files, are the server's (addresses.js, which the simulator
// writes from the one place it states them); here they are only named.
//
// Behind the proxy in front of N shards (health says `shard.count` > 1; docs/scaling.md), `api`
// reads every shard through <base>/shards/I/_sim/ and merges the answers into one view, each
// generation carrying the `shard` that holds it; a call for one account goes through the proxy,
// which routes it by `api_key`; an action on a generation goes to its shard.
import { CONTROL_ENDPOINTS, CONTROL_ROOT, MEDIA_FORMS, MEDIA_ROOT, SHARD_PREFIX } from './addresses.js';
import { askForToken, controlToken } from './token.js';

const SIM = new URL('./', window.location.href); // .../_sim/

/** A control endpoint's error answer: the section-7 message, with the status and code. */
class ControlError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKEN_CODES = ['control_token_required', 'invalid_control_token'];

/** A form of addresses.js (`generations/{id}`) with the id filled in. */
const filled = (form, id) => (id === undefined ? form : form.replace('{id}', encodeURIComponent(id)));

/**
 * Sends a control endpoint's request (`operation`, its name in addresses.js; `id`, the generation
 * its path names); resolves to the JSON body, rejects with a ControlError. Refused for want of the
 * control token, it waits for the token (asked once for all requests) and is sent again.
 */
async function control(operation, { id, query, body, base = SIM } = {}) {
  const { method, path } = CONTROL_ENDPOINTS[operation];
  const url = new URL(filled(path, id), base);
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

// ---- shards behind a proxy ----

/** How many shards answer behind this page's address (1: a simulator alone), as health last said. */
let shardCount = 1;
/** Health read once before anything else, so that the first reads already know whether to merge. */
let topology = null;
const sharded = async () => {
  await (topology ??= control('simHealth').then(
    (health) => (shardCount = health.shard?.count ?? 1),
    (error) => {
      topology = null; // asked again next time
      throw error;
    },
  ));
  return shardCount > 1;
};
/** The control API of shard `i`, through the proxy. */
/** Shard `i`'s prefix behind the proxy, from the root: `../shards/1` (SIM is the control root's folder). */
const shardRoot = (i) => `..${SHARD_PREFIX.replace('{i}', String(i))}`;
const shardBase = (i) => new URL(`${shardRoot(i)}${CONTROL_ROOT}/`, SIM);
/** The shard of every generation seen (an action on it goes there). */
const shardOf = new Map();
/** For a merged page's last generation: the last generation of each shard shown up to it (the next page goes on from there). */
const pageEnds = new Map();

/** The same request to every shard (each `options(i)`), all answered, in shard order; a failure names its shard. */
function everyShard(operation, options = () => ({})) {
  return Promise.all(
    Array.from({ length: shardCount }, (_, i) =>
      control(operation, { ...options(i), base: shardBase(i) }).catch((error) => {
        throw new ControlError(`shard ${i}: ${error.message}`, error.status, error.code);
      }),
    ),
  );
}

/** Marks the generations of shard `i` with it. */
function tag(generations, i) {
  for (const g of generations) {
    g.shard = i;
    shardOf.set(g.id, i);
  }
  return generations;
}

const byCreation = (a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Every shard's page from where the page before this one left each shard, merged in creation order, then by id. */
async function mergedPage({ limit, after, status, account }) {
  const from = (after && pageEnds.get(after)) || {};
  const pages = await everyShard('simGenerations', (i) => ({ query: { limit, after: from[i], status, api_key: account } }));
  const all = pages.flatMap((page, i) => tag(page.data, i)).sort(byCreation);
  const data = all.slice(0, limit);
  const ends = { ...from };
  for (const g of data) ends[g.shard] = g.id;
  if (data.length > 0) pageEnds.set(data.at(-1).id, ends);
  // The cursor of a merged view is every shard's.
  return { object: 'list', data, has_more: all.length > limit || pages.some((p) => p.has_more), cursor: pages.map((p) => p.cursor) };
}

/** What changed on every shard since each one's cursor. */
async function mergedChanges({ cursor, account, limit }) {
  const cursors = Array.isArray(cursor) ? cursor : [];
  const pages = await everyShard('simGenerations', (i) => ({ query: { changed_since: cursors[i], limit, api_key: account } }));
  return { object: 'list', data: pages.flatMap((page, i) => tag(page.data, i)), has_more: pages.some((p) => p.has_more), cursor: pages.map((p) => p.cursor) };
}

/** The shard that holds generation `id` (asked of each in turn when not seen yet). */
async function holderOf(id) {
  if (shardOf.has(id)) return shardOf.get(id);
  for (let i = 0; i < shardCount; i++) {
    try {
      tag([await control('simGeneration', { id, base: shardBase(i) })], i);
      return i;
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }
  return 0; // held by none: shard 0 answers the 404
}

/** The endpoint of each live-control action on one generation. */
const MOVES = { advance: 'simAdvanceGeneration', finish: 'simFinishGeneration', fail: 'simFailGeneration', cancel: 'simCancelGeneration' };

const latest = (clocks) => clocks.reduce((a, b) => (Date.parse(b.now) > Date.parse(a.now) ? b : a));

export const api = {
  health: async () => {
    const health = await control('simHealth');
    shardCount = health.shard?.count ?? 1;
    topology ??= Promise.resolve(shardCount);
    return health;
  },
  // The same on every shard: shard 0's.
  scenario: async () => control('simScenario', (await sharded()) ? { base: shardBase(0) } : {}),
  /** The bundled scenarios: { data: [{ name, purpose }] }. */
  scenarios: async () => control('simScenarios', (await sharded()) ? { base: shardBase(0) } : {}),
  /** The pipeline's stages in order: { data: [{ name, status, fills, failable, failure_codes }] }. */
  pipeline: async () => control('simPipeline', (await sharded()) ? { base: shardBase(0) } : {}),
  /** The global clock, or an account's (its own offset included). */
  clock: async (account) => ((await sharded()) && !account ? latest(await everyShard('simClock')) : control('simClock', { query: { api_key: account } })),
  /** The global clock moves; over shards, every one to the same instant (the latest plus `seconds`). */
  advance: async (seconds) => {
    if (!(await sharded())) return control('simAdvanceClock', { body: { seconds } });
    const to = new Date(Date.parse(latest(await everyShard('simClock')).now) + Math.round(seconds * 1000)).toISOString();
    return latest(await everyShard('simAdvanceClock', () => ({ body: { to } })));
  },
  reset: async (scenario) => {
    const body = scenario ? { scenario } : {};
    if (!(await sharded())) return control('simReset', { body });
    shardOf.clear();
    pageEnds.clear();
    return (await everyShard('simReset', () => ({ body })))[0];
  },
  /** A page in creation order: { data, has_more, cursor }. */
  generations: async ({ limit, after, status, account }) =>
    (await sharded()) ? mergedPage({ limit, after, status, account }) : control('simGenerations', { query: { limit, after, status, api_key: account } }),
  /** What changed since `cursor`, in the order of the latest change: { data, has_more, cursor }. */
  changes: async ({ cursor, account, limit = 1000 }) =>
    (await sharded()) ? mergedChanges({ cursor, account, limit }) : control('simGenerations', { query: { changed_since: cursor, limit, api_key: account } }),
  journal: async ({ limit, account }) => {
    if (!(await sharded()) || account) return control('simRequests', { query: { limit, api_key: account } });
    const journals = await everyShard('simRequests', () => ({ query: { limit } }));
    const data = journals.flatMap((j) => j.data).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    return { object: 'list', data: data.slice(-limit), has_more: data.length > limit || journals.some((j) => j.has_more) };
  },
  /**
   * The journal's entries matching a request pattern (of one account too, with `account`), oldest
   * first: a wait that does not wait (`timeout_ms: 0`) on every shard, which answers the first
   * 10,000 it matches, of which the latest `limit` are kept (the latest of all but on a journal
   * larger than the default limits allow).
   */
  matching: async ({ pattern, limit, account }) => {
    const request = account ? { ...pattern, api_key: account } : pattern;
    const body = { request, count: 10000, timeout_ms: 0 };
    const answers = (await sharded()) ? await everyShard('simWaitRequests', () => ({ body })) : [await control('simWaitRequests', { body })];
    const data = answers.flatMap((a) => a.matched).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    return { object: 'list', data: data.slice(-limit), has_more: data.length > limit };
  },
  /**
   * POST /_sim/verify of a pattern (at least one request): { verified, count, message, closest,
   * dropped }. Over shards, every shard's count and dropped requests summed, their closest merged.
   */
  verify: async (pattern) => {
    if (!(await sharded())) return control('simVerify', { body: { request: pattern } });
    const answers = await everyShard('simVerify', () => ({ body: { request: pattern, times: { at_least: 1 } } }));
    const count = answers.reduce((n, a) => n + a.count, 0);
    const dropped = answers.reduce((n, a) => n + a.dropped, 0);
    if (count >= 1) return { verified: true, count, message: null, closest: [], dropped };
    const closest = answers
      .flatMap((a) => a.closest)
      .sort((a, b) => a.differs.length - b.differs.length || (a.at > b.at ? -1 : a.at < b.at ? 1 : 0))
      .slice(0, 3);
    return { verified: false, count, message: answers.find((a) => a.message)?.message ?? null, closest, dropped };
  },
  /** How well an account's client follows the interface document: coverage and findings. */
  report: (account) => control('simReport', { query: { api_key: account } }),
  generation: async (id) => {
    if (!(await sharded())) return control('simGeneration', { id });
    const i = await holderOf(id);
    return tag([await control('simGeneration', { id, base: shardBase(i) })], i)[0];
  },
  /** Live control of one generation (`advance`, `finish`, `fail`, `cancel`), on the shard that holds it: each answers the generation. */
  moveGeneration: async (id, action, body) => {
    if (!(await sharded())) return control(MOVES[action], { id, body });
    const i = await holderOf(id);
    return tag([await control(MOVES[action], { id, body, base: shardBase(i) })], i)[0];
  },
  /** Queues a fault (POST /_sim/faults): { queued }. Its account goes in the query, which the proxy in front of shards routes by. */
  queueFault: (fault) => control('simQueueFault', { body: fault, query: { api_key: fault.api_key } }),
  /** The queued faults: { queued, faults: [{ path, method, status?, latency_ms?, outcome?, times_left, api_key }] }. */
  faults: async () => {
    if (!(await sharded())) return control('simListFaults');
    const lists = await everyShard('simListFaults');
    return { queued: lists.reduce((n, l) => n + l.queued, 0), faults: lists.flatMap((l) => l.faults) };
  },
  /** The state file (`--state`), as a Blob to save. */
  stateFile: () => controlDownload('simState'),
  /** Drops one account's queued faults: { queued }. */
  clearFaults: (account) => control('simClearFaults', { query: { api_key: account } }),
};

/**
 * A control endpoint's file (GET /_sim/state), fetched with the control token like every control
 * request: resolves to a Blob, rejects with a ControlError.
 */
async function controlDownload(operation) {
  const { method, path } = CONTROL_ENDPOINTS[operation];
  const response = await controlFetch(new URL(path, SIM), method, undefined);
  if (!response.ok) throw controlError(response, await response.json().catch(() => null), `${method} ${path}`);
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

// The CDN address (--cdn-url may move it): learnt from the first output URL seen, else where the
// simulator serves media (<base>/cdn).
let cdnBase = new URL(`..${MEDIA_ROOT}/`, SIM).href;

/** Learns the CDN address from a succeeded generation's thumbnail URL, which ends in its file's form. */
export function learnCdn(generation) {
  const thumb = generation.output?.thumbnail_url;
  const file = filled(MEDIA_FORMS.thumbnail, generation.id);
  if (thumb?.endsWith(`/${file}`) && generation.shard === undefined) cdnBase = thumb.slice(0, -file.length);
}

/**
 * A keyframe image's PNG: a video's keyframe has an id but no URL in the answers, so its URL is
 * built in the form of an image's (behind the proxy in front of shards, under the prefix of the shard that holds it).
 */
export function keyframeUrl(imageId, shard) {
  const base = shard === undefined ? cdnBase : new URL(`${shardRoot(shard)}${MEDIA_ROOT}/`, SIM).href;
  return mediaUrl(`${base}${filled(MEDIA_FORMS.image, imageId)}`);
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
