/**
 * `SimulatorControl`: the control API of a running simulator, typed from openapi.yaml.
 *
 * ```ts
 * import { SimulatorControl } from 'video-service-sim';
 * const control = new SimulatorControl({ baseUrl: 'http://localhost:8080', token: process.env.SIM_CONTROL_TOKEN });
 * await control.clock.advance(30);
 * await control.generations.fail('vid_...', 'render_failed');
 * ```
 */
import { OPERATION_FACTS } from '../generated/operations.js';
import { isHttpUrl } from '../hostNames.js';
import { JSON_MEDIA_TYPE } from '../jsonType.js';
import {
  controlCall,
  controlMethods,
  queryString,
  shardPrefix,
  type ControlCall,
  type ControlMethods,
  type RequestPattern,
  type SimHealth,
  type VerifyTimes,
  type WaitOptions,
} from './endpoints.js';
import { SimulatorControlError } from './controlError.js';
import { mergeHealth, sendToEveryShard, type ShardedHealth } from './shards.js';
import { VerificationError } from './verificationError.js';

export { SimulatorControlError, VerificationError };

export interface SimulatorControlOptions {
  /** The simulator's address, `http://localhost:8080` (a trailing slash is fine). */
  baseUrl: string;
  /** The control token (`--control-token`), sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** The `fetch` to send with. Default: the global one. */
  fetch?: typeof fetch;
}

/**
 * The control API of a simulator over HTTP; every method returns a promise. See `ControlMethods`.
 *
 * Given the address of a proxy in front of N shards (docs/scaling.md), it finds the shards from
 * health (`shard.count`) the first time the proxy refuses a call that names no account (421
 * `sharded_global_call`), and from then on sends such calls to every shard (`/shards/I`) and merges
 * the answers (client/shards.ts); a call that names an account goes through the proxy once.
 */
export class SimulatorControl implements ControlMethods<true> {
  readonly baseUrl: string;
  readonly clock: ControlMethods<true>['clock'];
  readonly faults: ControlMethods<true>['faults'];
  readonly generations: ControlMethods<true>['generations'];
  private readonly methods: ControlMethods<true>;
  private readonly token: string | undefined;
  private readonly fetch: typeof fetch;
  /** How many shards answer behind `baseUrl`, once a proxy said it has more than one. */
  private shardCount: number | undefined;

  constructor(options: SimulatorControlOptions) {
    if (typeof options?.baseUrl !== 'string' || !isHttpUrl(options.baseUrl)) {
      throw new TypeError(`SimulatorControl needs a baseUrl such as 'http://localhost:8080'; got ${JSON.stringify(options?.baseUrl)}.`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.fetch = options.fetch ?? fetch;
    this.methods = controlMethods<true>((call) => this.send(call));
    this.clock = this.methods.clock;
    this.faults = this.methods.faults;
    this.generations = this.methods.generations;
  }

  /** `GET /_sim/health`; behind a proxy in front of shards, every shard's health under `shards` too. */
  async health(): Promise<ShardedHealth> {
    const health = await this.methods.health();
    const count = health.shard?.count ?? 1;
    if (count <= 1) return health;
    this.shardCount = count;
    return mergeHealth((await sendToEveryShard(count, controlCall('simHealth'), (i, c) => this.sendTo(shardPrefix(i), c))) as SimHealth[]);
  }

  /** The control API of shard `i` alone, through the proxy (`BASE/shards/i`). */
  shard(i: number): SimulatorControl {
    return new SimulatorControl({ baseUrl: `${this.baseUrl}${shardPrefix(i)}`, token: this.token, fetch: this.fetch });
  }

  /** `POST /_sim/reset`; behind a proxy in front of shards, a global reset reaches every shard and answers every shard's health under `shards`. */
  reset(options?: Parameters<ControlMethods<true>['reset']>[0]): Promise<ShardedHealth> {
    return this.methods.reset(options);
  }

  report(apiKey: string) {
    return this.methods.report(apiKey);
  }

  transcript() {
    return this.methods.transcript();
  }

  /** `POST /_sim/verify`; behind a proxy in front of shards, every shard's count summed. See `ControlMethods.verify`. */
  verify(pattern: RequestPattern, times?: VerifyTimes) {
    return this.methods.verify(pattern, times);
  }

  /** `POST /_sim/verify {sequence}`; behind a proxy in front of shards, verified when one shard holds the whole sequence. */
  verifySequence(patterns: RequestPattern[]) {
    return this.methods.verifySequence(patterns);
  }

  /** `POST /_sim/requests/wait`; behind a proxy in front of shards, a wait on each, the matches counted together. */
  waitForRequest(pattern: RequestPattern, options?: WaitOptions) {
    return this.methods.waitForRequest(pattern, options);
  }

  /** The journal's entries matching `pattern`; behind a proxy in front of shards, every shard's. */
  requests(pattern?: RequestPattern) {
    return this.methods.requests(pattern);
  }

  private async send(call: ControlCall): Promise<unknown> {
    const keyed = call.query?.api_key !== undefined;
    // A call that names an account goes to its shard through the proxy, as does the health (shard 0's).
    if (keyed || OPERATION_FACTS[call.operation].shards === 'proxy') return this.sendTo('', call);
    if (this.shardCount !== undefined) return this.toEveryShard(call);
    try {
      return await this.sendTo('', call);
    } catch (e) {
      // The proxy in front of shards sent this call nowhere: it goes to every shard.
      if (!(e instanceof SimulatorControlError && e.status === 421 && e.code === 'sharded_global_call')) throw e;
      const health = await this.methods.health();
      if ((health.shard?.count ?? 1) <= 1) throw e;
      this.shardCount = health.shard?.count;
      return this.toEveryShard(call);
    }
  }

  private toEveryShard(call: ControlCall): Promise<unknown> {
    return sendToEveryShard(this.shardCount as number, call, (i, c) => this.sendTo(shardPrefix(i), c));
  }

  private async sendTo(prefix: string, call: ControlCall): Promise<unknown> {
    const query = queryString(call.query);
    const url = `${this.baseUrl}${prefix}${call.path}${query === '' ? '' : `?${query}`}`;
    const headers: Record<string, string> = {};
    if (this.token !== undefined) headers.Authorization = `Bearer ${this.token}`;
    if (call.body !== undefined) headers['Content-Type'] = JSON_MEDIA_TYPE;
    const res = await this.fetch(url, {
      method: call.method,
      headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      ...(call.signal && { signal: call.signal }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new SimulatorControlError(res.status, text, `${call.method} ${prefix}${call.path}`);
    return call.text ? text : JSON.parse(text);
  }
}
