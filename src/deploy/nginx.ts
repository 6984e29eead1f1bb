/**
 * The nginx configuration in front of N shards (`sim deploy nginx`), as text. The simulator does
 * not route: nginx does, and this is its whole configuration (docs/scaling.md):
 *
 * - `/v1/*` goes to the shard of the Bearer key, and a control call that names an account
 *   (`/_sim/...?api_key=`) to the shard of that key: nginx's `split_clients` over the key, which
 *   every shard computes too (`shardOfKey`, src/core/accounts/shard.ts) and refuses a key that is not its
 *   own (421 `wrong_shard`). So nginx must read exactly the key the shards read, from the same
 *   bytes: the Bearer credential as `bearerCredential` reads it (spaces and tabs around it left
 *   out), and an `api_key` only when it is written as it is read (no percent-encoding, no `+`,
 *   which the shards decode and nginx cannot): any other `api_key` is answered 421
 *   `unroutable_api_key`;
 * - a shard is never skipped: no retry on another shard and no shard marked failed
 *   (`proxy_next_upstream off`, `max_fails=0`), so a shard that is down is a 502 for its own keys
 *   only, and no key ever moves to a shard without its state;
 * - `/shards/I/...` goes to shard I with the prefix stripped (media, whose URLs carry the prefix
 *   through `--cdn-url`, and calls meant for one shard);
 * - a control call that names no account is answered 421 `sharded_global_call` in the service's
 *   error shape (send it to every shard: the typed client does); `GET /_sim/health` and the
 *   dashboard's files go to shard 0;
 * - it listens on 127.0.0.1 unless given a wider address (`--listen 0.0.0.0:8080`), and has room
 *   for every connection the shards may hold (`limits.max_hung_connections` each) beside the rest.
 *
 * It runs as `nginx -p DIR -c FILE -e stderr -g 'daemon off;'` with Debian's nginx 1.22 or later,
 * as any user: the pid file, temporary files and logs are inside the prefix DIR.
 */
import { CONTROL_ROOT, shardPrefix } from '../control-client/endpoints.js';
import { fail, type ErrorCode } from '../core/errors.js';
import { BASE_SCENARIO } from '../core/scenario/scenario.js';
import { MAX_SHARDS, shardShares } from '../core/accounts/shard.js';
import { KEEP_ALIVE_TIMEOUT_MS } from '../http/server.js';
import { hostInUrl } from '../hostNames.js';
import { JSON_TYPE } from '../jsonType.js';

export interface NginxOptions {
  /** The shards' base URLs, shard 0 first (`http://sim-0.sim:8080`). */
  shards: string[];
  /** What nginx listens on: a port (on 127.0.0.1), or `ADDRESS:PORT` (`0.0.0.0:8080` for every interface). */
  listen: string;
  /** nginx's worker processes: a number, or `auto` (one per core). Default: `defaultWorkers(shards.length)`. */
  workers?: number | 'auto';
  /** The shards' `limits.max_hung_connections` (connections each may hold at once). Default: the bundled scenarios' (1000). */
  maxHungConnections?: number;
}

/** The connections nginx keeps for everything but held ones: nginx's own default. */
const OTHER_CONNECTIONS = 1024;

/**
 * nginx's `worker_connections` for `shards` shards that may each hold `maxHung` connections: a
 * held request is two connections in nginx (the client's and the shard's), and one worker may get
 * every one of them; `OTHER_CONNECTIONS` more for every other request.
 */
function workerConnections(shards: number, maxHung: number): number {
  return 2 * shards * maxHung + OTHER_CONNECTIONS;
}

/**
 * nginx's worker processes for N shards when none is asked for: one per two shards. A worker
 * proxies a request in about half the CPU a shard takes to answer it, so one worker keeps up with
 * two busy shards; a worker more than that only spends CPU waking up (on 2 cores, 2 shards behind
 * `worker_processes auto` cost 15-20% more CPU per poll than behind one worker).
 */
function defaultWorkers(shards: number): number {
  return Math.max(1, Math.ceil(shards / 2));
}

/** A `--workers` value: a whole number from 1 to 1024, or `auto`. Throws an `NginxOptionsError` naming it. */
export function checkWorkers(value: string): number | 'auto' {
  if (value === 'auto') return value;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1024) {
    throw new NginxOptionsError(`--workers: '${value}' is not a number of worker processes (1 to 1024) or auto (one per core)`);
  }
  return Number(value);
}

/** A value `deploy nginx` cannot use; the message names it. */
export class NginxOptionsError extends Error {
  override readonly name = 'NginxOptionsError';
}

/** `host:port` of a shard's URL: plain HTTP, no path. Throws an `NginxOptionsError` naming it. */
export function shardAddress(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new NginxOptionsError(`--shards: '${url}' is not a URL; give each shard's base URL, such as http://127.0.0.1:8081 or http://sim-0.sim:8080`);
  }
  if (parsed.protocol !== 'http:') throw new NginxOptionsError(`--shards: '${url}' is not an http:// URL (nginx talks plain HTTP to the shards)`);
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new NginxOptionsError(`--shards: '${url}' has more than a host and a port; give the shard's base URL (http://HOST:PORT)`);
  }
  return `${hostInUrl(parsed.hostname)}:${parsed.port || '80'}`;
}

/**
 * A listen value: `8080`, `127.0.0.1:8080`, `0.0.0.0:8080` or `[::1]:8080`. Throws an
 * `NginxOptionsError` naming it.
 */
export function checkListen(listen: string): string {
  const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$/.exec(listen);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
    throw new NginxOptionsError(`--listen: '${listen}' is not a port (8080, on 127.0.0.1) or ADDRESS:PORT (0.0.0.0:8080 for every interface)`);
  }
  return listen;
}

/**
 * nginx's `listen` for a listen value: a port alone is on 127.0.0.1 (nginx's own default is every
 * interface); a wider address only when it is written out.
 */
function listenAddress(listen: string): string {
  return /^\d+$/.test(listen) ? `127.0.0.1:${listen}` : listen;
}

/** A `--max-hung-connections` value: a whole number from 0 to 1,000,000. Throws an `NginxOptionsError` naming it. */
export function checkMaxHung(value: string): number {
  if (!/^\d{1,7}$/.test(value) || Number(value) > 1_000_000) {
    throw new NginxOptionsError(`--max-hung-connections: '${value}' is not a number of connections (0 to 1000000): the shards' limits.max_hung_connections`);
  }
  return Number(value);
}

/** The JSON error the proxy answers, in the service's shape, as an nginx string. */
function errorBody(code: ErrorCode, message: string): string {
  return nginxString(JSON.stringify(fail(code, { message }).toBody()));
}

/** `text` as a single-quoted nginx string (nginx expands `$name` in `return` text: the bodies hold none). */
function nginxString(text: string): string {
  if (text.includes('$')) throw new Error(`an nginx string cannot hold '$' here: ${text}`);
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** A share in hundredths of a percent as `split_clients` writes it: `33.33%`. */
function percent(hundredths: number): string {
  return `${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')}%`;
}

/** `split_clients` of `key` into `variable`: shard I's share of the keys is `I` (see `shardOfKey`). */
function splitClients(key: string, variable: string, count: number): string {
  const shares = shardShares(count);
  const parts = shares.map((share, i) => `        ${i === count - 1 ? '*' : percent(share)} ${i};`);
  return `    split_clients "${key}" ${variable} {\n${parts.join('\n')}\n    }`;
}

export function nginxConfig(options: NginxOptions): string {
  if (options.shards.length === 0) throw new NginxOptionsError('--shards: give at least one shard URL');
  if (options.shards.length > MAX_SHARDS) throw new NginxOptionsError(`--shards: at most ${MAX_SHARDS} shards (each takes at least 0.01% of the keys)`);
  const addresses = options.shards.map(shardAddress);
  const listen = checkListen(options.listen);
  const workers = options.workers ?? defaultWorkers(addresses.length);
  const maxHung = options.maxHungConnections ?? BASE_SCENARIO.limits.max_hung_connections;
  const connections = workerConnections(addresses.length, maxHung);
  const workersComment =
    options.workers === undefined ? '# One worker per two shards (--workers): a worker proxies a request in about half the CPU a\n# shard takes to answer it.\n' : '';
  const n = addresses.length;
  const last = n - 1;
  const everyShard = `${shardPrefix(0)}${CONTROL_ROOT}/...${n > 1 ? ` to ${shardPrefix(last)}${CONTROL_ROOT}/...` : ''}`;
  const globalCall = errorBody(
    'sharded_global_call',
    `This deployment has ${n} shard${n === 1 ? '' : 's'} and this control call names no account, so the proxy cannot choose a shard. ` +
      `Send it to every shard (${everyShard}; SimulatorControl does), or name the account with ?api_key=.`,
  );
  const unroutableKey = errorBody(
    'unroutable_api_key',
    `The proxy routes a control call by its api_key as written, and this one is percent-encoded, holds a + or a character outside printable ASCII, ` +
      `which the shards would read otherwise. Send the key unencoded (letters, digits and -._ need no encoding), or call its shard through ${shardPrefix(0)}${CONTROL_ROOT}/... to ${shardPrefix(last)}${CONTROL_ROOT}/....`,
  );
  const unprefixedMedia = errorBody(
    'sharded_global_call',
    `Media of a sharded deployment are served under /shards/I/cdn/...: start each shard with --cdn-url ending in /shards/I/cdn, and follow the URLs its answers carry.`,
  );
  const server = (address: string) => `        server ${address} max_fails=0;`;
  // Idle connections to a shard are dropped by nginx a second before the shard drops them: a
  // request sent on a connection the shard is closing would be a 502, and nothing retries it.
  const keepalive = (connections: number) =>
    `        keepalive ${connections};\n        keepalive_timeout ${KEEP_ALIVE_TIMEOUT_MS / 1000 - 1}s;\n        keepalive_requests 100000;`;
  const given = [
    `--shards ${options.shards.join(',')} --listen ${listen}`,
    options.workers === undefined ? '' : ` --workers ${workers}`,
    options.maxHungConnections === undefined ? '' : ` --max-hung-connections ${maxHung}`,
  ].join('');
  return `# nginx in front of ${n} simulator shard${n === 1 ? '' : 's'}, written by \`sim deploy nginx\`
# (video-service-sim). Regenerate it rather than edit it:
#   sim deploy nginx ${given}
# Run it, as any user, with Debian's nginx 1.22 or later (everything it writes stays in DIR):
#   nginx -p DIR -c nginx.conf -e stderr -g 'daemon off;'
# Each key's shard is computed from the key and the number of shards (split_clients below), by
# nginx and by every shard alike: shard I must be the I-th of the list below, started with
# --shard I/${n}, and changing the number of shards moves keys to shards that do not hold their
# state (a redeploy; see docs/scaling.md).

${workersComment}worker_processes ${workers};
# Each connection is a file descriptor: room for all of them, twice over (logs, temporary files).
worker_rlimit_nofile ${2 * connections};
pid nginx.pid;
error_log error.log warn;

events {
    # A connection a shard holds (limits.max_hung_connections: ${maxHung} each) is two here (the
    # client's and the shard's), and one worker may get all of them; ${OTHER_CONNECTIONS} more for the rest.
    worker_connections ${connections};
}

http {
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    server_tokens off;
    # A client's connection is kept for many requests (a test suite's keep-alive pool).
    keepalive_requests 10000;
    # The shards answer bodies over 1 MiB themselves (400 request_too_large, in the service's shape).
    client_max_body_size 2m;

    # The account of a /v1 request: its Bearer key, read as the shards read it: the scheme in any
    # case after spaces or tabs, one space or more, then visible characters up to spaces or tabs.
    map $http_authorization $sim_bearer_key {
        "~*^[ \\t]*Bearer +(?<key>[^\\x00-\\x20\\x7f]+)[ \\t]*$" $key;
        default "";
    }

    # The account a control call names: its api_key, when written as the shards read it (printable
    # ASCII but % + & and #, which percent-decoding leaves as it is); "%" for any other api_key,
    # which the proxy cannot read as the shards do.
    map $args $sim_query_key {
        "~(?:^|&)api_key=(?<key>[\\x21\\x22\\x24\\x27-\\x2a\\x2c-\\x7e]+)(?:&|$)" $key;
        "~(?:^|&)api_key=[^&]" "%";
        default "";
    }

    # The shard of each key: shard I takes the I-th share of the keys' hashes (MurmurHash2), as
    # every shard computes it too and refuses a key that is not its own.
${splitClients('$sim_bearer_key', '$sim_bearer_shard', n)}
${splitClients('$sim_query_key', '$sim_query_shard', n)}
${addresses
  .map(
    (address, i) => `
    upstream sim_shard_${i} {
${server(address)}
${keepalive(32)}
    }`,
  )
  .join('\n')}

    server {
        listen ${listenAddress(listen)};

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        # The shards check the Host (and a control call's Origin against it): they see the proxy's.
        proxy_set_header Host $http_host;
        # A key's shard and no other: a shard that is down is a 502 for its own keys only.
        proxy_next_upstream off;
        # Answers as the shard sends them (a slow or cut answer stays one), and held connections
        # (a fault of kind hang holds one up to 600 s) are not cut by the proxy first.
        proxy_buffering off;
        proxy_read_timeout 610s;
        proxy_send_timeout 610s;

        location /v1 {
            proxy_pass http://sim_shard_$sim_bearer_shard;
        }

        # The control API: a call that names an account (?api_key=) goes to that account's shard.
        location /_sim/ {
            default_type "${JSON_TYPE}";
            if ($sim_query_key = "") {
                add_header X-Request-Id "req_proxy_$request_id" always;
                return 421 ${globalCall};
            }
            if ($sim_query_key = "%") {
                add_header X-Request-Id "req_proxy_$request_id" always;
                return 421 ${unroutableKey};
            }
            proxy_pass http://sim_shard_$sim_query_shard;
        }

        # Shard 0 answers health and serves the dashboard, which reads every shard through /shards/I/.
        location = /_sim/health {
            proxy_pass http://sim_shard_0;
        }
        location = /_sim {
            proxy_pass http://sim_shard_0;
        }
        location = /_sim/ {
            proxy_pass http://sim_shard_0;
        }
        location /_sim/ui/ {
            proxy_pass http://sim_shard_0;
        }

        # Media URLs name their shard (/shards/I/cdn/...): an unprefixed one cannot be routed.
        location /cdn/ {
            add_header X-Request-Id "req_proxy_$request_id" always;
            default_type "${JSON_TYPE}";
            return 421 ${unprefixedMedia};
        }
${addresses
  .map(
    (_, i) => `
        location ${shardPrefix(i)}/ {
            proxy_pass http://sim_shard_${i}/;
        }`,
  )
  .join('\n')}

        location / {
            proxy_pass http://sim_shard_0;
        }
    }
}
`;
}
