/**
 * What a request's path says before anything else is read: whether it is the control API's, and
 * whether its answers carry CORS headers. The access checks (accessGuard.ts), the API's handler
 * (api.ts) and the error answers made outside it (errorAnswers.ts) all ask here.
 */

/** The path of a request target, without its query string. */
export function pathOf(url: string | undefined = '/'): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}

/** The control API and the dashboard: `/_sim` and everything under it. */
export function isControlPath(path: string): boolean {
  return path === '/_sim' || path.startsWith('/_sim/');
}

/**
 * Whether answers on `path` carry CORS headers: `/v1` and `/cdn` answers do (a web page may call
 * the service and read its answers, errors and refusals included); `/_sim` answers never do, so that
 * a browser lets no page of another origin read the control API.
 */
export function allowsCors(path: string): boolean {
  return !isControlPath(path);
}

const ANY_ORIGIN: Readonly<Record<string, string>> = Object.freeze({ 'Access-Control-Allow-Origin': '*' });
const NONE: Readonly<Record<string, string>> = Object.freeze({});

/** The CORS header of an answer made outside the API's handler (a refusal, an error) on `path`: any origin, or none. */
export function corsHeaders(path: string): Readonly<Record<string, string>> {
  return allowsCors(path) ? ANY_ORIGIN : NONE;
}
