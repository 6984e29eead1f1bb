/**
 * The downstream application's code under test: a small client of the video service that creates a
 * video (retrying 429 and 500 with the same Idempotency-Key), polls it until it resolves, and
 * returns its media. Nothing here knows about the simulator; only `baseUrl` points at it in tests.
 */

export interface Video {
  id: string;
  object: 'video';
  status: 'queued' | 'processing' | 'verifying' | 'succeeded' | 'failed' | 'canceled';
  model: string;
  prompt: string;
  output: { url: string; thumbnail_url: string } | null;
  error: { type: string; code: string; message: string } | null;
  cost_cents: number | null;
  [field: string]: unknown;
}

export interface ServiceError {
  type: string;
  code: string;
  message: string;
  param?: string | null;
  stage?: string;
}

export class ServiceRequestError extends Error {
  constructor(
    readonly status: number,
    readonly error: ServiceError,
  ) {
    super(`${status} ${error.type}/${error.code}: ${error.message}`);
  }
}

export class VideoFailedError extends Error {
  constructor(readonly video: Video) {
    super(`video ${video.id} ${video.status}: ${video.error?.code ?? 'no error'}`);
  }
}

export interface VideoClientOptions {
  baseUrl: string;
  apiKey: string;
  /** How the client waits (ms). Production: a timer. Tests: advance the simulator's clock instead. */
  sleep?: (ms: number) => Promise<void>;
  /** Poll interval in ms (the service recommends 2-5 s). */
  pollIntervalMs?: number;
  /** How many times a 429 or 500 is retried before giving up. */
  maxRetries?: number;
  /** Gives up polling after this many polls. */
  maxPolls?: number;
}

export interface CreateVideoRequest {
  model: string;
  prompt: string;
  negative_prompt?: string;
  duration_seconds?: number;
  resolution?: '720p' | '1080p';
  keyframe_id?: string;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class VideoClient {
  private readonly baseUrl: string;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly pollIntervalMs: number;
  private readonly maxRetries: number;
  private readonly maxPolls: number;

  constructor(private readonly options: VideoClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.sleep = options.sleep ?? timer;
    this.pollIntervalMs = options.pollIntervalMs ?? 2_000;
    this.maxRetries = options.maxRetries ?? 5;
    this.maxPolls = options.maxPolls ?? 300;
  }

  /** POST /v1/videos, retrying 429 (after Retry-After) and 500 (backing off) with one Idempotency-Key. */
  async createVideo(body: CreateVideoRequest, idempotencyKey: string = crypto.randomUUID()): Promise<Video> {
    return this.request<Video>('POST', '/v1/videos', body, idempotencyKey);
  }

  async retrieveVideo(id: string): Promise<Video> {
    return this.request<Video>('GET', `/v1/videos/${encodeURIComponent(id)}`);
  }

  /** Creates a video and polls it until it resolves; throws VideoFailedError unless it succeeded. */
  async generate(body: CreateVideoRequest): Promise<Video> {
    let video = await this.createVideo(body);
    for (let polls = 0; !['succeeded', 'failed', 'canceled'].includes(video.status); polls++) {
      if (polls >= this.maxPolls) throw new Error(`video ${video.id} still ${video.status} after ${polls} polls`);
      await this.sleep(this.pollIntervalMs);
      video = await this.retrieveVideo(video.id);
    }
    if (video.status !== 'succeeded') throw new VideoFailedError(video);
    return video;
  }

  private async request<T>(method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { Authorization: `Bearer ${this.options.apiKey}` };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
      const res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as T | { error: ServiceError };
      if (res.ok) return json as T;
      const retryable = res.status === 429 || res.status >= 500;
      if (!retryable || attempt >= this.maxRetries) {
        throw new ServiceRequestError(res.status, (json as { error: ServiceError }).error);
      }
      const retryAfter = Number(res.headers.get('Retry-After'));
      await this.sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1_000 : 500 * 2 ** attempt);
    }
  }
}
