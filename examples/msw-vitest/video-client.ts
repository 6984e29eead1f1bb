/**
 * The app's own code under test: a small client of the video service. It creates a video with an
 * Idempotency-Key and retries 429, 5xx and network errors with that same key (honouring
 * Retry-After), retries its polls alike, and polls until the video resolves. Nothing here knows
 * about the simulator: in the tests, MSW answers `baseUrl`, and `sleep` moves the simulator's clock.
 */

export interface Video {
  id: string;
  status: 'queued' | 'processing' | 'verifying' | 'succeeded' | 'failed' | 'canceled';
  prompt: string;
  duration_seconds: number;
  resolution: string;
  output: { url: string; thumbnail_url: string } | null;
  error: { type: string; code: string; message: string } | null;
}

export interface VideoClientOptions {
  baseUrl: string;
  apiKey: string;
  /** How the client waits (ms): a timer in production; in tests, a move of the simulator's clock. */
  sleep?: (ms: number) => Promise<void>;
  /** How many times a 429, a 5xx or a network error is retried. */
  maxRetries?: number;
  pollIntervalMs?: number;
  maxPolls?: number;
}

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`${status}: ${body.slice(0, 200)}`);
  }
}

const RESOLVED = new Set(['succeeded', 'failed', 'canceled']);
const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class VideoClient {
  /** What the client retried, for the tests to read: `500`, `429`, `network`. */
  readonly retries: string[] = [];
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: VideoClientOptions) {
    this.sleep = options.sleep ?? timer;
  }

  /** POST /v1/videos with one Idempotency-Key for every attempt: however often it retries, one video. */
  create(body: { model: string; prompt: string; duration_seconds?: number; resolution?: string }): Promise<Video> {
    const key = crypto.randomUUID();
    return this.send<Video>('POST', '/v1/videos', { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key } });
  }

  get(id: string): Promise<Video> {
    return this.send<Video>('GET', `/v1/videos/${encodeURIComponent(id)}`);
  }

  /** Polls until the video has succeeded, failed or been canceled. */
  async waitFor(id: string): Promise<Video> {
    for (let polls = 0; polls < (this.options.maxPolls ?? 300); polls++) {
      const video = await this.get(id);
      if (RESOLVED.has(video.status)) return video;
      await this.sleep(this.options.pollIntervalMs ?? 2_000);
    }
    throw new Error(`video ${id} did not resolve`);
  }

  private async send<T>(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<T> {
    const maxRetries = this.options.maxRetries ?? 6;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.options.baseUrl}${path}`, {
          method,
          body: init.body,
          headers: { Authorization: `Bearer ${this.options.apiKey}`, ...init.headers },
        });
      } catch (error) {
        // A connection lost before the answer: the request may have taken effect; the same
        // Idempotency-Key makes the retry safe.
        if (attempt >= maxRetries) throw error;
        this.retries.push('network');
        await this.sleep(500 * 2 ** attempt);
        continue;
      }
      if (res.ok) return (await res.json()) as T;
      const text = await res.text();
      if ((res.status === 429 || res.status >= 500) && attempt < maxRetries) {
        this.retries.push(String(res.status));
        const retryAfter = Number(res.headers.get('Retry-After'));
        await this.sleep(retryAfter > 0 ? retryAfter * 1000 : 500 * 2 ** attempt);
        continue;
      }
      throw new ServiceError(res.status, text);
    }
  }
}
