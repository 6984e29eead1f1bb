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
 *      than `http://` + Host, the base URL's origin or one of the control origins) is 403
 *      `cross_origin_request`. Requests without `Origin` (curl, SDKs, tests) pass. `/_sim` answers
 *      carry no CORS headers (paths.ts), so a browser never lets another origin read them either;
 *      but for the control origins (`--control-origin`, a frontend's dev toolbar), whose requests
 *      are answered with CORS headers naming that origin, and whose preflights (which hold no
 *      state and carry no token) are answered here.
 *   3. Control token (`/_sim`, when one is set): every control request but `GET /_sim/health` and
 *      the dashboard's own files needs `Authorization: Bearer TOKEN`, compared in constant time;
 *      else 401 `control_token_required` (none sent) or `invalid_control_token`.
 *
 * A control request's `Authorization` header is dropped once checked: nothing after this reads it,
 * and a transcript must not keep the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIPv6 } from 'node:net';
import { bearerCredential } from '../core/accounts/auth.js';
import { fail, type ErrorCode } from '../core/errors.js';
import { isLoopbackHostName } from '../hostNames.js';
import { sendError } from './errorAnswers.js';
import { corsHeaders, isControlPath, isOpenControlPath, pathOf } from './paths.js';

/** What the checks accept; read at every request, so the owner may change it (at `listen`). */
export interface AccessPolicy {
  /** Whether the Host check runs: on while listening on a loopback address or not listening. */
  checkHost: boolean;
  /** Host names accepted beside loopback ones; one starting with `.` accepts its subdomains too. */
  allowedHosts: string[];
  /** Origins whose control requests are accepted beside the request's own (`http://` + Host). */
  ownOrigins: string[];
  /**
   * Origins of web pages that may call the control API with CORS (`--control-origin`), serialised
   * (`http://localhost:5173`); the control token is still needed when one is set.
   */
  controlOrigins: readonly string[];
  /** The control token; undefined when the control API needs none. */
  controlToken: string | undefined;
}

/** The shortest control token accepted: a shorter one could be guessed over the network. */
const MIN_CONTROL_TOKEN_LENGTH = 16;

/**
 * What is wrong with a control token, as the end of a sentence that starts with where it was given
 * (`--control-token`, `controlToken`), or undefined when it can be used.
 */
export function controlTokenProblem(token: string): string | undefined {
  if (!isPrintableAscii(token)) return 'must be printable ASCII without spaces (it travels in an Authorization header)';
  if (token.length < MIN_CONTROL_TOKEN_LENGTH) {
    return `must be at least ${MIN_CONTROL_TOKEN_LENGTH} characters long (got ${token.length}): a short token can be guessed; make one with \`openssl rand -hex 16\``;
  }
  return undefined;
}

function isPrintableAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return text.length > 0;
}

/**
 * The three checks, on Node's own request and response (so Express middleware too): each refusal
 * is answered here; a request that passes goes on to `next`. `requestId` numbers the refusals.
 */
export function createAccessGuard(
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
    const host = req.headers.host;
    if (policy.checkHost && host !== undefined && !allowedHost(host)) {
      const shown = host.length > 100 ? `${host.slice(0, 100)}…` : host;
      return refuse(res, requestId, 'host_not_allowed', path, {
        message: `The Host header names '${shown}', a host this simulator does not serve (a guard against DNS rebinding). Reach it as localhost or 127.0.0.1, or allow the name with --allowed-hosts (allowedHosts of createSimulator).`,
      });
    }
    if (!isControlPath(path)) return next();
    const origin = req.headers.origin;
    const corsOrigin = origin === undefined ? undefined : controlOrigin(origin, policy.controlOrigins);
    if (corsOrigin !== undefined) {
      setHeaders(res, controlCorsHeaders(corsOrigin));
      if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) return answerPreflight(res, requestId);
    } else if (origin !== undefined && !isOwnOrigin(origin, host, policy.ownOrigins)) {
      return refuse(res, requestId, 'cross_origin_request', path, {
        message: `The control API (/_sim) does not answer requests made by a web page of another origin (${origin.length > 100 ? `${origin.slice(0, 100)}…` : origin}). Call it from the dashboard, or without a browser.`,
      });
    }
    const token = policy.controlToken;
    if (token !== undefined && !isOpenControlFile(req.method ?? 'GET', path)) {
      const sent = bearerToken(req.headers.authorization);
      if (sent === undefined) return refuse(res, requestId, 'control_token_required', path);
      if (!timingSafeEqual(sha256(sent), digestOf(token))) return refuse(res, requestId, 'invalid_control_token', path);
    }
    delete req.headers.authorization;
    next();
  };
}

/** What needs no control token: the health check and the dashboard's own static files. */
function isOpenControlFile(method: string, path: string): boolean {
  return (method === 'GET' || method === 'HEAD') && isOpenControlPath(path);
}

/** The credential of an `Authorization` header; a header of another form is a wrong credential, not a missing one. */
function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return bearerCredential(header) ?? header;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The longest host name (RFC 1035: 253 characters, and a trailing dot). */
const MAX_HOST_NAME = 254;
/** The longest IPv6 address in text (`ffff:...:ffff:255.255.255.255`). */
const MAX_IPV6_TEXT = 45;

/**
 * The host name of a `Host` header (or of a host list entry), by one strict parse of
 * `host [":" port]` (RFC 9110, 7.2): `host` is a DNS name (letters, digits, `-`, `_`, non-empty
 * labels, one trailing dot allowed), a dotted IPv4 address or an IPv6 address in brackets; `port`
 * is 1 to 5 digits. Lower case, without the port or the trailing dot. Undefined for anything else
 * (`localhost:80@evil.example`, `[::1]evil`, `127.0.0.1:abc`, an empty port), which no check
 * accepts. Each character is looked at a bounded number of times: no backtracking.
 */
export function hostNameOf(value: string): string | undefined {
  let name: string;
  let rest: string;
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close < 0 || close - 1 > MAX_IPV6_TEXT) return undefined;
    const address = value.slice(1, close);
    if (address.includes('%') || !isIPv6(address)) return undefined;
    name = `[${address.toLowerCase()}]`;
    rest = value.slice(close + 1);
  } else {
    const colon = value.indexOf(':');
    name = colon < 0 ? value : value.slice(0, colon);
    rest = colon < 0 ? '' : value.slice(colon);
    if (!isDnsName(name)) return undefined;
    name = name.toLowerCase();
    if (name.endsWith('.')) name = name.slice(0, -1);
  }
  return rest === '' || isPort(rest) ? name : undefined;
}

/** Letters, digits, `-` and `_` in non-empty labels separated by dots; one trailing dot allowed. */
function isDnsName(name: string): boolean {
  if (name.length === 0 || name.length > MAX_HOST_NAME) return false;
  let label = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x2e) {
      if (label === 0) return false;
      label = 0;
    } else if (isAlphanumeric(c) || c === 0x2d || c === 0x5f) label++;
    else return false;
  }
  // Ending on a dot (the last label empty) is the one trailing dot a name may have.
  return true;
}

/** `:` and 1 to 5 digits. */
function isPort(rest: string): boolean {
  if (rest.length < 2 || rest.length > 6 || rest.charCodeAt(0) !== 0x3a) return false;
  for (let i = 1; i < rest.length; i++) if (!isDigit(rest.charCodeAt(i))) return false;
  return true;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isAlphanumeric = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

function isAllowedHost(host: string, allowed: readonly string[]): boolean {
  const name = hostNameOf(host);
  if (name === undefined) return false;
  if (isLoopbackHostName(name)) return true;
  return allowed.some((entry) => {
    // `.example.test`: the domain and its subdomains.
    const domain = entry.startsWith('.');
    const wanted = hostNameOf(domain ? entry.slice(1) : entry);
    if (wanted === undefined) return false;
    return name === wanted || (domain && name.endsWith(`.${wanted}`));
  });
}

/** The origin of a page's request when it is one of the control origins, else undefined. */
function controlOrigin(origin: string, controlOrigins: readonly string[]): string | undefined {
  if (controlOrigins.length === 0) return undefined;
  const sent = originOf(origin);
  return sent !== undefined && controlOrigins.includes(sent) ? sent : undefined;
}

/** What a control origin's page needs to read a control answer: its own origin allowed, and the headers it may read. */
function controlCorsHeaders(origin: string): readonly string[] {
  return ['Access-Control-Allow-Origin', origin, 'Vary', 'Origin', 'Access-Control-Expose-Headers', 'X-Request-Id,Retry-After'];
}

/** A control origin's preflight: any control method, with a token and a JSON body. */
function answerPreflight(res: ServerResponse, requestId: () => string): void {
  setHeaders(res, [
    'Access-Control-Allow-Methods', 'GET,HEAD,POST,DELETE',
    'Access-Control-Allow-Headers', 'Authorization,Content-Type',
    'Access-Control-Max-Age', '600',
    'X-Request-Id', requestId(),
    'Content-Length', '0',
  ]);
  res.statusCode = 204;
  res.end();
}

function setHeaders(res: ServerResponse, head: readonly string[]): void {
  for (let i = 0; i < head.length; i += 2) res.setHeader(head[i] as string, head[i + 1] as string);
}

/**
 * The serialised origins of `--control-origin` (`http://localhost:5173,https://app.example.test`):
 * each must be an origin alone (scheme, host, port: no path, query or `*`). Throws a RangeError
 * naming the one that is not.
 */
export function parseControlOrigins(values: readonly string[], name: string): string[] {
  return values.map((value) => {
    const origin = originOf(value);
    if (origin === undefined || !/^https?:/.test(origin) || origin !== value.replace(/\/$/, '').toLowerCase()) {
      throw new RangeError(`${name}: '${value.length > 100 ? `${value.slice(0, 100)}…` : value}' is not an origin (scheme, host and port, such as http://localhost:5173)`);
    }
    return origin;
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
 * The error answer of a check on `path`, sent directly (no body is read). It carries the CORS
 * header that answers on its path carry, so that a web page allowed to read them can read why.
 */
function refuse(res: ServerResponse, requestId: () => string, code: ErrorCode, path: string, options: { message?: string } = {}): void {
  const headers: Record<string, string> = { 'X-Request-Id': requestId(), ...corsHeaders(path) };
  // The request's body (if any) is not read: the connection is not reused after the answer.
  if (!isBodyless(res.req)) headers.Connection = 'close';
  sendError(res, res.req.method ?? 'GET', fail(code, options), headers);
}

function isBodyless(req: IncomingMessage): boolean {
  return req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined;
}
