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
import type { ApiError } from '../api-types.js';
import { controlMethods, queryString, type ControlCall, type ControlMethods } from './api.js';

export interface SimulatorControlOptions {
  /** The simulator's address, `http://localhost:8080` (a trailing slash is fine). */
  baseUrl: string;
  /** The control token (`--control-token`), sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** The `fetch` to send with. Default: the global one. */
  fetch?: typeof fetch;
}

/**
 * A control request the simulator refused: the HTTP status and the error body
 * (`{ error: { type, code, message, ... } }`). `body` is null when the answer was not in the error
 * shape (a proxy's page, say); `text` holds what was answered.
 */
export class SimulatorControlError extends Error {
  readonly status: number;
  readonly body: ApiError | null;
  readonly text: string;

  constructor(status: number, text: string, what: string) {
    const body = errorBody(text);
    super(body ? `${what} answered ${status} ${body.error.code}: ${body.error.message}` : `${what} answered ${status}: ${text.slice(0, 200)}`);
    this.name = 'SimulatorControlError';
    this.status = status;
    this.body = body;
    this.text = text;
  }

  /** The error's `code` (`generation_resolved`, `invalid_control_token`...), or undefined. */
  get code(): string | undefined {
    return this.body?.error.code;
  }
}

/** The control API of a simulator over HTTP; every method returns a promise. See `ControlMethods`. */
export class SimulatorControl implements ControlMethods<true> {
  readonly baseUrl: string;
  readonly clock: ControlMethods<true>['clock'];
  readonly faults: ControlMethods<true>['faults'];
  readonly generations: ControlMethods<true>['generations'];
  private readonly methods: ControlMethods<true>;
  private readonly token: string | undefined;
  private readonly fetch: typeof fetch;

  constructor(options: SimulatorControlOptions) {
    if (typeof options?.baseUrl !== 'string' || !/^https?:\/\/[^/]/.test(options.baseUrl)) {
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

  health() {
    return this.methods.health();
  }

  reset(options?: Parameters<ControlMethods<true>['reset']>[0]) {
    return this.methods.reset(options);
  }

  report(apiKey: string) {
    return this.methods.report(apiKey);
  }

  transcript() {
    return this.methods.transcript();
  }

  private async send(call: ControlCall): Promise<unknown> {
    const query = queryString(call.query);
    const url = `${this.baseUrl}${call.path}${query === '' ? '' : `?${query}`}`;
    const headers: Record<string, string> = {};
    if (this.token !== undefined) headers.Authorization = `Bearer ${this.token}`;
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await this.fetch(url, {
      method: call.method,
      headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new SimulatorControlError(res.status, text, `${call.method} ${call.path}`);
    return call.text ? text : JSON.parse(text);
  }
}

function errorBody(text: string): ApiError | null {
  try {
    const value = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } } | null;
    return value !== null && typeof value === 'object' && typeof value.error?.code === 'string' && typeof value.error.message === 'string'
      ? (value as ApiError)
      : null;
  } catch {
    return null;
  }
}
