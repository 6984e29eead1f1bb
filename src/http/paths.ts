/**
 * What a request's path says before anything else is read: whether it is the control API's, and
 * whether its answers carry CORS headers. The access checks (accessGuard.ts), the API's handler
 * (jsonHandler.ts) and the error answers made outside it (errorAnswers.ts) all ask here.
 */
import { CONTROL_ROOT, controlPath, isControlPath } from '../control-client/endpoints.js';
import { MEDIA_ROOT } from '../core/generations/mediaPaths.js';

/** The path of a request target, without its query string. */
export function pathOf(url: string | undefined = '/'): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}


/** The dashboard's page (`/_sim`, which redirects, and `/_sim/`) and the folder of its files. */
const DASHBOARD_PAGES: readonly string[] = [CONTROL_ROOT, `${CONTROL_ROOT}/`];
const DASHBOARD_FILES = `${CONTROL_ROOT}/ui`;
const HEALTH = controlPath('simHealth');

/** Whether `path` is `root` or below it: `/cdn` and `/cdn/x`, not `/cdnx`. Letter case counts, as in the app's routes. */
function atOrBelow(path: string, root: string): boolean {
  return path.startsWith(root) && (path.length === root.length || path[root.length] === '/');
}

export { isControlPath };

/**
 * Paths the JSON API answers: all but the files, which the Express app serves (media under `/cdn`;
 * the dashboard at `/_sim`, `/_sim/` and under `/_sim/ui`).
 */
export function isApiPath(path: string): boolean {
  return !atOrBelow(path, MEDIA_ROOT) && !DASHBOARD_PAGES.includes(path) && !atOrBelow(path, DASHBOARD_FILES);
}

/** What a control token does not guard: health, the dashboard's page and its files (they hold no state). */
export function isOpenControlPath(path: string): boolean {
  return path === HEALTH || DASHBOARD_PAGES.includes(path) || path.startsWith(`${DASHBOARD_FILES}/`);
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
