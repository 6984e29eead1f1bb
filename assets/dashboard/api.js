// The dashboard speaks only to the simulator's control endpoints (/_sim/...) and its media files.
// Addresses are relative to the page (served at <base>/_sim/), so a path prefix in front of the
// simulator keeps working.

const SIM = new URL('./', window.location.href); // .../_sim/

/** GET or POST a control endpoint; resolves to the JSON body, rejects with the section-7 message. */
export async function control(path, { method = 'GET', query, body } = {}) {
  const url = new URL(path, SIM);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) {
    const message = json?.error?.message ?? `${method} ${url.pathname} answered ${response.status}`;
    throw new Error(message);
  }
  return json;
}

export const api = {
  health: () => control('health'),
  scenario: () => control('scenario'),
  advance: (seconds) => control('clock/advance', { method: 'POST', body: { seconds } }),
  reset: (scenario) => control('reset', { method: 'POST', body: scenario ? { scenario } : {} }),
  /** A page in creation order: { data, has_more, cursor }. */
  generations: ({ limit, after, status, account }) =>
    control('generations', { query: { limit, after, status, api_key: account } }),
  /** What changed since `cursor`, in the order of the latest change: { data, has_more, cursor }. */
  changes: ({ cursor, account, limit = 1000 }) =>
    control('generations', { query: { changed_since: cursor, limit, api_key: account } }),
  journal: ({ limit, account }) => control('requests', { query: { limit, api_key: account } }),
};

// The CDN address (--cdn-url may move it): learnt from the first output URL seen, else <base>/cdn.
let cdnBase = new URL('../cdn/', SIM).href;

export function learnCdn(generation) {
  const thumb = generation.output?.thumbnail_url;
  const at = thumb ? thumb.lastIndexOf('/thumbnails/') : -1;
  if (at > 0) cdnBase = thumb.slice(0, at + 1);
}

/** A keyframe image's PNG. */
export function keyframeUrl(imageId) {
  return `${cdnBase}images/${encodeURIComponent(imageId)}.png`;
}
