/**
 * Who may talk to the simulator: three checks every request passes before anything else reads it,
 * each answering in the service's error shape and changing nothing.
 *
 *   1. Host (any path): while the host check is on (listening on a loopback address, or not
 *      listening at all), a `Host` that names neither a loopback host (`localhost`, `*.localhost`,
 *      127.0.0.0/8, `[::1]`), nor an allowed one (the base and media URLs' hosts,
 *      `--allowed-hosts`), is 403 `host_not_allowed`. A web page that rebinds its own name to
 *      127.0.0.1 (DNS rebinding) sends its own name as the Host, so it is refused.
 *   2. Origin (`/_sim`): a control request from a web page of another origin (an `Origin` other
 *      than `http://` + Host or the base URL's origin) is 403 `cross_origin_request`. Requests
 *      without `Origin` (curl, SDKs, tests) pass. `/_sim` answers carry no CORS headers, so a
 *      browser never lets another origin read them either.
 *   3. Control token (`/_sim`, when one is set): every control request but `GET /_sim/health` and
 *      the dashboard's own files needs `Authorization: Bearer TOKEN`, compared in constant time;
 *      else 401 `control_token_required` (none sent) or `invalid_control_token`.
 *
 * A control request's `Authorization` header is dropped once checked: nothing after this reads it,
 * and a transcript must not keep the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type ErrorCode } from '../core/errors.js';
import { sendError } from './errorAnswers.js';

/** What the checks accept; read at every request, so the owner may change it (at `listen`). */
export interface AccessPolicy {
  /** Whether the Host check runs: on while listening on a loopback address or not listening. */
  checkHost: boolean;
  /** Host names accepted beside loopback ones; one starting with `.` accepts its subdomains too. */
  allowedHosts: string[];
  /** Origins whose control requests are accepted beside the request's own (`http://` + Host). */
  ownOrigins: string[];
  /** The control token; undefined when the control API needs none. */
  controlToken: string | undefined;
}

/**
 * The three checks, on Node's own request and response (so Express middleware too): each refusal
 * is answered here; a request that passes goes on to `next`. `requestId` numbers the refusals.
 */
export function createControlGuard(
  policy: AccessPolicy,
  requestId: () => string,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  let tokenDigest: { token: string; digest: Buffer } | undefined;
  const digestOf = (token: string): Buffer => {
    if (tokenDigest?.token !== token) tokenDigest = { token, digest: sha256(token) };
    return tokenDigest.digest;
  };
  // The last Host judged: nearly every request of a run carries the same one.
  let judged: { host: string; allowedHosts: string[]; allowed: boolean } | undefined;
  const allowedHost = (host: string): boolean => {
    if (judged?.host !== host || judged.allowedHosts !== policy.allowedHosts) {
      judged = { host, allowedHosts: policy.allowedHosts, allowed: isAllowedHost(host, policy.allowedHosts) };
    }
    return judged.allowed;
  };
  return (req, res, next) => {
    const path = pathOf(req.url);
    const control = isControlPath(path);
    const host = req.headers.host;
    if (policy.checkHost && host !== undefined && !allowedHost(host)) {
      const shown = host.length > 100 ? `${host.slice(0, 100)}…` : host;
      return refuse(res, requestId, 'host_not_allowed', !control, {
        message: `The Host header names '${shown}', a host this simulator does not serve (a guard against DNS rebinding). Reach it as localhost or 127.0.0.1, or allow the name with --allowed-hosts (allowedHosts of createSimulator).`,
      });
    }
    if (!control) return next();
    const origin = req.headers.origin;
    if (origin !== undefined && !isOwnOrigin(origin, host, policy.ownOrigins)) {
      return refuse(res, requestId, 'cross_origin_request', false, {
        message: `The control API (/_sim) does not answer requests made by a web page of another origin (${origin.length > 100 ? `${origin.slice(0, 100)}…` : origin}). Call it from the dashboard, or without a browser.`,
      });
    }
    const token = policy.controlToken;
    if (token !== undefined && !isOpenControlFile(req.method ?? 'GET', path)) {
      const sent = bearerToken(req.headers.authorization);
      if (sent === undefined) return refuse(res, requestId, 'control_token_required', false);
      if (!timingSafeEqual(sha256(sent), digestOf(token))) return refuse(res, requestId, 'invalid_control_token', false);
    }
    delete req.headers.authorization;
    next();
  };
}

/** The path of a request target, without its query string. */
export function pathOf(url: string | undefined = '/'): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}

/** The control API and the dashboard: `/_sim` and everything under it. */
export function isControlPath(path: string): boolean {
  return path === '/_sim' || path.startsWith('/_sim/');
}

/** What needs no control token: the health check and the dashboard's own static files. */
function isOpenControlFile(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return path === '/_sim/health' || path === '/_sim' || path === '/_sim/' || path.startsWith('/_sim/ui/');
}

function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*Bearer\s+(\S.*?)\s*$/i.exec(header);
  // A header of another scheme is a wrong credential, not a missing one.
  return match ? (match[1] as string) : header;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The host name of a Host header (or a host list entry): lower case, no port, no trailing dot. */
function hostName(host: string): string {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) {
    const end = name.indexOf(']');
    name = end < 0 ? name : name.slice(0, end + 1);
  } else if (name.indexOf(':') === name.lastIndexOf(':')) {
    // One colon: `name:port`. More than one (an IPv6 address without brackets) is left whole.
    const colon = name.indexOf(':');
    if (colon >= 0) name = name.slice(0, colon);
  }
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** `localhost`, `*.localhost`, an address of 127.0.0.0/8, or `[::1]`. */
function isLoopbackHostName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost') || name === '[::1]' || name === '::1') return true;
  const ipv4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return ipv4 !== null && ipv4.slice(1).every((part) => Number(part) <= 255);
}

/** Whether a listen address is a loopback one (then the Host check is on). */
export function isLoopbackAddress(address: string): boolean {
  const name = address.toLowerCase().replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || name.startsWith('::ffff:127.') || isLoopbackHostName(name);
}

function isAllowedHost(host: string, allowed: readonly string[]): boolean {
  const name = hostName(host);
  if (isLoopbackHostName(name)) return true;
  return allowed.some((entry) => {
    const wanted = hostName(entry);
    return wanted.startsWith('.') ? name === wanted.slice(1) || name.endsWith(wanted) : name === wanted;
  });
}

function isOwnOrigin(origin: string, host: string | undefined, ownOrigins: readonly string[]): boolean {
  const sent = originOf(origin);
  if (sent === undefined) return false;
  if (host !== undefined && sent === originOf(`http://${host}`)) return true;
  return ownOrigins.some((own) => originOf(own) === sent);
}

/** The serialised origin of a URL (scheme, host, port; lower case, default port left out). */
function originOf(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/**
 * The error answer of a check, sent directly (no body is read). `withCors`: a refusal outside
 * `/_sim` keeps the CORS header that `/v1` and `/cdn` answers carry, so a web page can read why.
 */
function refuse(res: ServerResponse, requestId: () => string, code: ErrorCode, withCors: boolean, options: { message?: string } = {}): void {
  const headers: Record<string, string> = { 'X-Request-Id': requestId() };
  if (withCors) headers['Access-Control-Allow-Origin'] = '*';
  // The request's body (if any) is not read: the connection is not reused after the answer.
  if (!isBodyless(res.req)) headers.Connection = 'close';
  sendError(res, res.req.method ?? 'GET', fail(code, options), headers);
}

function isBodyless(req: IncomingMessage): boolean {
  return req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined;
}
