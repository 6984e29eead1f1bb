/**
 * The nginx configuration in front of N shards (`sim deploy nginx`), as text. The simulator does
 * not route: nginx does, and this is its whole configuration (docs/scaling.md):
 *
 * - `/v1/*` goes to the shard of the Bearer key, and a control call that names an account
 *   (`/_sim/...?api_key=`) to the shard of that key: one consistent hash over the fixed list of
 *   shards, so a key always lands on the same shard;
 * - a shard is never skipped: no retry on another shard and no shard marked failed
 *   (`proxy_next_upstream off`, `max_fails=0`), so a shard that is down is a 502 for its own keys
 *   only, and no key ever moves to a shard without its state;
 * - `/shards/I/...` goes to shard I with the prefix stripped (media, whose URLs carry the prefix
 *   through `--cdn-url`, and calls meant for one shard);
 * - a control call that names no account is answered 421 `sharded_global_call` in the service's
 *   error shape (send it to every shard: the typed client does); `GET /_sim/health` and the
 *   dashboard's files go to shard 0.
 *
 * It runs as `nginx -p DIR -c FILE -e stderr -g 'daemon off;'` with Debian's nginx 1.22 or later,
 * as any user: the pid file, temporary files and logs are inside the prefix DIR.
 */
import { CONTROL_ROOT, shardPrefix } from '../client/api.js';
import { fail } from '../core/errors.js';
import { KEEP_ALIVE_TIMEOUT_MS } from '../http/server.js';
import { hostInUrl } from '../hostNames.js';
import { JSON_TYPE } from '../jsonType.js';

export interface NginxOptions {
  /** The shards' base URLs, shard 0 first (`http://sim-0.sim:8080`). */
  shards: string[];
  /** What nginx listens on: a port, or `ADDRESS:PORT`. */
  listen: string;
  /** nginx's worker processes: a number, or `auto` (one per core). Default: `defaultWorkers(shards.length)`. */
  workers?: number | 'auto';
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

/** A listen value: `8080`, `127.0.0.1:8080` or `[::1]:8080`. Throws an `NginxOptionsError` naming it. */
export function checkListen(listen: string): string {
  const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$/.exec(listen);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new NginxOptionsError(`--listen: '${listen}' is not a port (8080) or ADDRESS:PORT (127.0.0.1:8080)`);
  return listen;
}

/** The JSON error the proxy answers, in the service's shape, as an nginx string. */
function errorBody(message: string): string {
  return nginxString(JSON.stringify(fail('sharded_global_call', { message }).toBody()));
}

/** `text` as a single-quoted nginx string (nginx expands `$name` in `return` text: the bodies hold none). */
function nginxString(text: string): string {
  if (text.includes('$')) throw new Error(`an nginx string cannot hold '$' here: ${text}`);
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

export function nginxConfig(options: NginxOptions): string {
  if (options.shards.length === 0) throw new NginxOptionsError('--shards: give at least one shard URL');
  const addresses = options.shards.map(shardAddress);
  const listen = checkListen(options.listen);
  const workers = options.workers ?? defaultWorkers(addresses.length);
  const workersComment =
    options.workers === undefined ? '# One worker per two shards (--workers): a worker proxies a request in about half the CPU a\n# shard takes to answer it.\n' : '';
  const n = addresses.length;
  const last = n - 1;
  const everyShard = `${shardPrefix(0)}${CONTROL_ROOT}/...${n > 1 ? ` to ${shardPrefix(last)}${CONTROL_ROOT}/...` : ''}`;
  const globalCall = errorBody(
    `This deployment has ${n} shard${n === 1 ? '' : 's'} and this control call names no account, so the proxy cannot choose a shard. ` +
      `Send it to every shard (${everyShard}; SimulatorControl does), or name the account with ?api_key=.`,
  );
  const unprefixedMedia = errorBody(
    `Media of a sharded deployment are served under /shards/I/cdn/...: start each shard with --cdn-url ending in /shards/I/cdn, and follow the URLs its answers carry.`,
  );
  const server = (address: string) => `        server ${address} max_fails=0;`;
  // Idle connections to a shard are dropped by nginx a second before the shard drops them: a
  // request sent on a connection the shard is closing would be a 502, and nothing retries it.
  const keepalive = (connections: number) =>
    `        keepalive ${connections};\n        keepalive_timeout ${KEEP_ALIVE_TIMEOUT_MS / 1000 - 1}s;\n        keepalive_requests 100000;`;
  return `# nginx in front of ${n} simulator shard${n === 1 ? '' : 's'}, written by \`sim deploy nginx\`
# (video-service-sim). Regenerate it rather than edit it:
#   sim deploy nginx --shards ${options.shards.join(',')} --listen ${listen}${options.workers === undefined ? '' : ` --workers ${workers}`}
# Run it, as any user, with Debian's nginx 1.22 or later (everything it writes stays in DIR):
#   nginx -p DIR -c nginx.conf -e stderr -g 'daemon off;'
# Keys are hashed to shards with a consistent hash over this fixed list: changing the list moves
# keys to shards that do not hold their state (a redeploy; see docs/scaling.md).

${workersComment}worker_processes ${workers};
pid nginx.pid;
error_log error.log warn;

events {
    worker_connections 1024;
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

    # The account of a /v1 request: its Bearer key.
    map $http_authorization $sim_bearer_key {
        "~*^Bearer +(?<key>[^ ]+) *$" $key;
        default "";
    }

    # Every shard, chosen by the key: a key always lands on the same shard.
    upstream sim_by_key {
        hash $sim_key consistent;
${addresses.map(server).join('\n')}
${keepalive(32)}
    }
${addresses
  .map(
    (address, i) => `
    upstream sim_shard_${i} {
${server(address)}
${keepalive(8)}
    }`,
  )
  .join('\n')}

    server {
        listen ${listen};

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
            set $sim_key $sim_bearer_key;
            proxy_pass http://sim_by_key;
        }

        # The control API: a call that names an account (?api_key=) goes to that account's shard.
        location /_sim/ {
            default_type "${JSON_TYPE}";
            if ($arg_api_key = "") {
                add_header X-Request-Id "req_proxy_$request_id" always;
                return 421 ${globalCall};
            }
            set $sim_key $arg_api_key;
            proxy_pass http://sim_by_key;
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
