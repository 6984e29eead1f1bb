/**
 * The error a control call over HTTP rejects with (`SimulatorControl`, and each shard's call
 * behind a proxy): apart from the client, so that the shards' fan-out can name it without
 * importing the client that uses the fan-out.
 */
import type { ApiError } from '../api-types.js';

/**
 * A control request the simulator refused: the HTTP status and the error body
 * (`{ error: { type, code, message, ... } }`). `body` is null when the answer was not in the error
 * shape (a proxy's page, say); `text` holds what was answered.
 */
export class SimulatorControlError extends Error {
  /**
   * `instanceof` holds across copies of the class: a page's handlers (`video-service-sim/msw`, a
   * bundle of its own) reject with theirs, which a test checks against the package's.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  readonly status: number;
  readonly body: ApiError | null;
  readonly text: string;

  constructor(status: number, text: string, what: string) {
    const body = errorBody(text);
    super(body ? `${what} answered ${status} ${body.error.code}: ${body.error.message}` : `${what} answered ${status}: ${text.slice(0, 200)}`);
    this.name = 'SimulatorControlError';
    (this as unknown as Record<symbol, boolean>)[BRAND] = true;
    this.status = status;
    this.body = body;
    this.text = text;
  }

  /** The error's `code` (`generation_resolved`, `invalid_control_token`...), or undefined. */
  get code(): string | undefined {
    return this.body?.error.code;
  }
}

/** What marks a SimulatorControlError, whichever copy of the class made it. */
const BRAND = Symbol.for('video-service-sim.SimulatorControlError');

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
