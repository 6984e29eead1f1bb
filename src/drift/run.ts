/**
 * One drift run: the free probes, then the paid ones that fit the spend limit, then the checks
 * over every answer; one row per assumption of openapi.yaml plus `contract.schema`. Every video a
 * probe creates is canceled at once (and a cancel that fails is reported); the spend counted is
 * every request that may have created something, at its full list price.
 */
import { randomUUID } from 'node:crypto';
import stableStringify from 'safe-stable-stringify';
import { ASSUMPTIONS, SCHEMA_ROW } from './assumptions.js';
import { checkEveryAnswer, checkListPages, checkSchema, checkVideosSeen, videosIn, type VideoSeen } from './answers.js';
import { DriftClient, KeyRefused, TargetUnreachable, type ServiceExchange, type ProbeRequest } from './serviceClient.js';
import { Findings, describeAnswer, describeRequest, errorOf, isReplay, type Row } from './findings.js';
import { DEFAULT_PRICES, type Prices } from './prices.js';
import {
  FREE_PROBES,
  FREE_SEQUENCES,
  NEGATIVE_PROMPT,
  NO_ASPECT,
  NO_MODEL,
  PAID_PROBES,
  PAID_VIDEO,
  PROMPT,
  type PaidProbe,
} from './probes.js';

export interface DriftOptions {
  /** The service's base URL (`{base_url}`): the probes go to `<target>/v1/...`. */
  target: string;
  apiKey: string;
  /** What the paid probes may cost, in cents, each counted at its full list price. Default 0. */
  spendLimitCents?: number;
  /** The list prices the paid probes are counted at. Default: the bundled `default` scenario's. */
  prices?: Prices;
  /** Waits between retries (tests pass a fake). */
  sleep?: (ms: number) => Promise<void>;
}

interface CancelResult {
  id: string;
  ok: boolean;
  /** The cancel's HTTP status (null when no answer came). */
  status: number | null;
  detail: string;
}

interface SpendItem {
  what: string;
  cents: number;
  /** A request that should have created nothing, but did. */
  unexpected: boolean;
}

export interface DriftReport {
  target: string;
  /** Requests sent to the service's API (retries included). */
  requests: number;
  rows: Row[];
  cancels: CancelResult[];
  spend: {
    limitCents: number;
    countedCents: number;
    items: SpendItem[];
    /** Paid probes left out because their price did not fit the limit. */
    skipped: { probe: string; cents: number }[];
  };
  /** Why the run stopped early: the target cannot be reached, or it refused the key. */
  aborted?: string;
  /** 0: nothing contradicted; 1: something is; 2: the run stopped early. */
  exitCode: 0 | 1 | 2;
}

const is2xx = (status: number): boolean => status >= 200 && status < 300;

class Spend {
  counted = 0;
  readonly items: SpendItem[] = [];
  readonly skipped: { probe: string; cents: number }[] = [];
  constructor(readonly limit: number) {}
  fits(cents: number): boolean {
    return this.counted + cents <= this.limit;
  }
  count(what: string, cents: number, unexpected = false): void {
    this.counted += cents;
    this.items.push({ what, cents, unexpected });
  }
  /** Counts a retry if it fits the limit. */
  tryCount(what: string, cents: number): boolean {
    if (!this.fits(cents)) return false;
    this.count(what, cents);
    return true;
  }
}

/** The state of one run, shared by its steps. */
class Run {
  readonly client: DriftClient;
  readonly findings = new Findings();
  readonly spend: Spend;
  readonly cancels: CancelResult[] = [];
  /** Videos created by this run, canceled or not yet. */
  readonly ours = new Set<string>();
  readonly uncanceled = new Set<string>();
  readonly tag = randomUUID().slice(0, 8);
  image?: { id: string };
  /** The paid video, then the idempotent create: created in this order. */
  first?: VideoSeen & { id: string; created_at: string };
  second?: VideoSeen & { id: string; created_at: string };

  constructor(
    readonly options: Required<Pick<DriftOptions, 'target' | 'apiKey'>> & DriftOptions,
    readonly prices: Prices,
  ) {
    this.client = new DriftClient(options.target, options.apiKey, options.sleep);
    this.spend = new Spend(options.spendLimitCents ?? 0);
  }

  send(request: ProbeRequest, options?: Parameters<DriftClient['send']>[1]): Promise<ServiceExchange> {
    return this.client.send(request, options);
  }

  /** A video this run created: noted, and canceled at once. */
  async created(id: string): Promise<void> {
    this.ours.add(id);
    await this.cancel(id);
  }

  async cancel(id: string, tolerate401 = false): Promise<ServiceExchange | undefined> {
    this.uncanceled.add(id);
    const exchange = await this.send({ method: 'DELETE', path: `/v1/videos/${encodeURIComponent(id)}` }, { tolerate401 });
    this.uncanceled.delete(id);
    const body = exchange.json as { status?: unknown } | undefined;
    const ok = is2xx(exchange.status) && body?.status === 'canceled';
    this.cancels.push({ id, ok, status: exchange.status, detail: ok ? 'canceled' : describeAnswer(exchange) });
    return exchange;
  }

  /**
   * A request that should have created nothing: if it created a video, that video is canceled at
   * once; whatever it created is counted at its full price, as unexpected.
   */
  async unexpectedCreation(exchange: ServiceExchange): Promise<void> {
    if (exchange.request.method !== 'POST' || !is2xx(exchange.status)) return;
    const body = exchange.json as { id?: unknown; object?: unknown } | undefined;
    if (exchange.request.path === '/v1/images') {
      this.spend.count(`an image made by ${describeRequest(exchange.request)}`, this.prices.imageCents, true);
    } else if (exchange.request.path === '/v1/videos' && typeof body?.id === 'string' && !this.ours.has(body.id)) {
      this.spend.count(`the video ${body.id} made by ${describeRequest(exchange.request)}`, this.prices.videoCents, true);
      await this.created(body.id);
    }
  }

  /** Sends a paid create, counted at `cents` (and each retry too, while it fits the limit). */
  paid(what: string, cents: number, request: ProbeRequest): Promise<ServiceExchange> {
    this.spend.count(what, cents);
    return this.send(request, { mayRetry: () => this.spend.tryCount(`${what} (retried)`, cents) });
  }
}

/** A video object in a create's answer, when the create made one. */
function createdVideo(exchange: ServiceExchange): (VideoSeen & { id: string; created_at: string }) | undefined {
  const body = exchange.json as VideoSeen | undefined;
  return is2xx(exchange.status) && body && typeof body.id === 'string' ? (body as VideoSeen & { id: string; created_at: string }) : undefined;
}

export async function runDrift(options: DriftOptions): Promise<DriftReport> {
  const target = options.target.replace(/\/+$/, '');
  const run = new Run({ ...options, target }, options.prices ?? DEFAULT_PRICES);
  let aborted: string | undefined;
  try {
    await probe(run);
  } catch (e) {
    if (e instanceof TargetUnreachable) aborted = `cannot reach the target: ${e.message}`;
    else if (e instanceof KeyRefused) aborted = e.message;
    else throw e;
  } finally {
    // A video whose cancel did not get through (the run stopped in between): one more try.
    for (const id of [...run.uncanceled]) {
      try {
        await run.cancel(id, true);
      } catch (e) {
        run.uncanceled.delete(id);
        run.cancels.push({ id, ok: false, status: null, detail: e instanceof Error ? e.message : String(e) });
      }
    }
  }
  const spend = { limitCents: run.spend.limit, countedCents: run.spend.counted, items: run.spend.items, skipped: run.spend.skipped };
  const requests = run.client.exchanges.length;
  if (aborted !== undefined) return { target, requests, rows: [], cancels: run.cancels, spend, aborted, exitCode: 2 };

  const exchanges = run.client.exchanges;
  checkEveryAnswer(run.findings, exchanges);
  checkListPages(run.findings, exchanges);
  checkVideosSeen(run.findings, exchanges.flatMap(videosIn));
  checkSchema(run.findings, exchanges);
  const rows = [
    ...ASSUMPTIONS.map((a) => run.findings.row(a.id, a.notObserved)),
    run.findings.row(SCHEMA_ROW, 'no answer was checked'),
  ];
  const exitCode = rows.some((r) => r.result === 'contradicted') ? 1 : 0;
  return { target, requests, rows, cancels: run.cancels, spend, exitCode };
}

async function probe(run: Run): Promise<void> {
  const { findings } = run;

  // The first authenticated request tells whether the target answers and takes the key.
  const list = await run.send({ method: 'GET', path: '/v1/videos?limit=100' });
  const listed = videosIn(list);
  const firstListed = listed[0];
  if (firstListed && typeof firstListed.id === 'string') await run.send({ method: 'GET', path: `/v1/videos/${encodeURIComponent(firstListed.id)}` });

  for (const p of FREE_PROBES) {
    const exchange = await run.send(p.request);
    findings.expect(p.assumption, exchange, p.expect, p.why);
    await run.unexpectedCreation(exchange);
  }

  // Only successes are stored under a key: a refused create, then another body under its key.
  const [refused, other] = FREE_SEQUENCES['idempotency-success-only'](`drift-${run.tag}-refused`);
  const first = await run.send(refused);
  await run.unexpectedCreation(first);
  if (is2xx(first.status)) {
    findings.notObserved('idempotency-success-only', `the create meant to be refused answered ${describeAnswer(first)}`);
  } else {
    const second = await run.send(other);
    await run.unexpectedCreation(second);
    findings.expect('idempotency-success-only', second, { notCode: 'idempotency_key_reused', notReplayed: true }, `the ${first.status} under this key was not stored`);
  }

  await checkOutputMedia(run, listed);

  for (const paid of PAID_PROBES) {
    const cents = paid.cents(run.prices);
    if (!run.spend.fits(cents)) {
      run.spend.skipped.push({ probe: paid.name, cents });
      for (const id of paid.assumptions) findings.notObserved(id, `the paid ${paid.name} probe (${cents} cents) was skipped for the spend limit`);
      continue;
    }
    await PAID_RUNNERS[paid.name](run, paid);
  }

  await checkOwnOrder(run);
  await checkNotCancelable(run, listed);
}

const PAID_RUNNERS: Record<PaidProbe['name'], (run: Run, paid: PaidProbe) => Promise<void>> = {
  async image(run, paid) {
    const { findings } = run;
    const request: ProbeRequest = {
      method: 'POST',
      path: '/v1/images',
      json: { prompt: PROMPT, aspect_ratio: '1:1' },
      idempotencyKey: `drift-${run.tag}-image`,
    };
    const exchange = await run.paid('the image probe', run.prices.imageCents, request);
    const body = exchange.json as { id?: unknown; status?: unknown; model?: unknown } | undefined;
    if (!is2xx(exchange.status) || !body || typeof body.id !== 'string') {
      for (const id of paid.assumptions) findings.notObserved(id, `the paid image probe answered ${describeAnswer(exchange)}`);
      return;
    }
    run.image = { id: body.id };
    const ev = (expected: string, observed: string) => () => ({ request: describeRequest(request), expected, observed });
    const status = `status ${JSON.stringify(body.status)}`;
    findings.record('image-ready-sync', body.status === 'ready', ev('status "ready" in the create answer', status));
    findings.record('image-status-ready', body.status === 'ready', ev('status "ready"', status));
    findings.record('image-model-name', body.model === 'video-3.2-keyframe', ev('model "video-3.2-keyframe"', `model ${JSON.stringify(body.model)}`));
  },

  async video(run, paid) {
    const { findings } = run;
    const request: ProbeRequest = {
      method: 'POST',
      path: '/v1/videos',
      json: { ...PAID_VIDEO, negative_prompt: NEGATIVE_PROMPT, ...(run.image ? { keyframe_id: run.image.id } : {}) },
      idempotencyKey: `drift-${run.tag}-video`,
    };
    const exchange = await run.paid('the video probe', run.prices.videoCents, request);
    const video = createdVideo(exchange);
    if (!video) {
      if (run.image && errorOf(exchange)?.code === 'keyframe_not_found') {
        findings.contradict('keyframe-not-found-400', {
          request: describeRequest(request),
          expected: `a video: the account's image ${run.image.id} is found`,
          observed: describeAnswer(exchange),
        });
      }
      for (const id of paid.assumptions) findings.notObserved(id, `the paid video probe answered ${describeAnswer(exchange)}`);
      return;
    }
    run.first = video;
    await run.created(video.id);
    const ev = (expected: string, observed: string) => () => ({ request: describeRequest(request), expected, observed });
    findings.record('negative-prompt-as-submitted', video.negative_prompt === NEGATIVE_PROMPT, ev(`negative_prompt ${JSON.stringify(NEGATIVE_PROMPT)}`, `negative_prompt ${JSON.stringify(video.negative_prompt)}`));
    if (run.image) findings.confirm('keyframe-not-found-400');

    const again = await run.send({ method: 'DELETE', path: `/v1/videos/${encodeURIComponent(video.id)}` });
    findings.expect('cancel-not-cancelable', again, { status: 400, code: 'not_cancelable', param: null }, 'it is canceled already');
    await run.send({ method: 'GET', path: `/v1/videos/${encodeURIComponent(video.id)}` });
  },

  async 'idempotent create and replay'(run, paid) {
    const { findings } = run;
    const key = `drift-${run.tag}-idempotent`;
    const body = { ...PAID_VIDEO, prompt: `${PROMPT} Idempotency.` };
    const request: ProbeRequest = { method: 'POST', path: '/v1/videos', json: body, idempotencyKey: key };
    const original = await run.paid('the idempotent create', run.prices.videoCents, request);
    const video = createdVideo(original);
    if (!video) {
      for (const id of paid.assumptions) findings.notObserved(id, `the paid idempotent create answered ${describeAnswer(original)}`);
      return;
    }
    run.second = video;
    await run.created(video.id);
    const at = describeRequest(request);
    findings.record('idempotency-replay-header', !isReplay(original), () => ({
      request: at,
      expected: 'the first answer under a key is not a replay',
      observed: describeAnswer(original),
    }));

    const replay = await run.paid('the replay of the idempotent create', run.prices.videoCents, request);
    const replayed = createdVideo(replay);
    if (replayed && replayed.id !== video.id) {
      run.spend.items.push({ what: `the replay made a second video, ${replayed.id}`, cents: 0, unexpected: true });
      await run.created(replayed.id);
    }
    const ev = (expected: string, observed: string) => () => ({ request: `${at}, sent again`, expected, observed });
    findings.record('idempotency-replay-header', replay.status === original.status, ev(`the original status, ${original.status}`, String(replay.status)));
    findings.record('idempotency-replay-header', replay.headers['idempotent-replayed'] === 'true', ev('Idempotent-Replayed: true', describeAnswer(replay) + (isReplay(replay) ? '' : ', no Idempotent-Replayed')));
    findings.record('idempotency-replay-header', stableStringify(replay.json) === stableStringify(original.json), ev(
      `the original body (${video.id} as first answered)`,
      replayed ? `${replayed.id}, status ${String(replayed.status)}${replayed.id === video.id ? ' (a body that differs from the original)' : ' (a new generation)'}` : describeAnswer(replay),
    ));

    const reused = await run.send({ method: 'POST', path: '/v1/videos', json: { model: NO_MODEL, prompt: body.prompt }, idempotencyKey: key });
    findings.expect('idempotency-key-reused-400', reused, { status: 400, code: 'idempotency_key_reused' }, 'the key was used with another body');
    await run.unexpectedCreation(reused);

    const unreadable = await run.send({ method: 'POST', path: '/v1/videos', raw: '{"model":', idempotencyKey: key });
    findings.expect('check-order', unreadable, { code: 'idempotency_key_reused' }, 'the key is judged before the body');

    const image = await run.send({ method: 'POST', path: '/v1/images', json: { prompt: '   ', aspect_ratio: NO_ASPECT }, idempotencyKey: key });
    findings.expect('idempotency-scope', image, { notCode: 'idempotency_key_reused', notReplayed: true }, "keys are scoped by endpoint: the image request is judged on its own");
    await run.unexpectedCreation(image);
  },
};

/** With two videos of this run, the list shows the older first, and `after` the newer. */
async function checkOwnOrder(run: Run): Promise<void> {
  const { findings } = run;
  const older = run.first;
  const newer = run.second;
  // Without both, the paid probes that did not make them have said why.
  if (!older || !newer) return;
  const afterRequest: ProbeRequest = { method: 'GET', path: `/v1/videos?after=${encodeURIComponent(older.id)}&limit=100` };
  const after = await run.send(afterRequest);
  const ids = videosIn(after).map((v) => v.id);
  findings.record('list-order-ascending', after.status === 200 && ids.includes(newer.id) && !ids.includes(older.id), () => ({
    request: describeRequest(afterRequest),
    expected: `the generations created after ${older.id}, ${newer.id} (created next) among them`,
    observed: after.status === 200 ? `data ${JSON.stringify(ids)}` : describeAnswer(after),
  }));
  const allRequest: ProbeRequest = { method: 'GET', path: '/v1/videos?limit=100' };
  const all = await run.send(allRequest);
  const allIds = videosIn(all).map((v) => v.id);
  const i = allIds.indexOf(older.id);
  const j = allIds.indexOf(newer.id);
  if (i >= 0 && j >= 0) {
    findings.record('list-order-ascending', i < j, () => ({
      request: describeRequest(allRequest),
      expected: `${older.id} (created first) before ${newer.id}`,
      observed: `${newer.id} at ${j}, ${older.id} at ${i}`,
    }));
  }
}

/** A cancel of a canceled generation: this run's own, else one the account lists as canceled. */
async function checkNotCancelable(run: Run, listed: VideoSeen[]): Promise<void> {
  if (run.first) return; // the paid video probe did it
  const canceled = listed.find((v) => v.status === 'canceled' && typeof v.id === 'string');
  if (!canceled) {
    run.findings.notObserved('cancel-not-cancelable', 'the account lists no canceled generation to cancel again');
    return;
  }
  const exchange = await run.send({ method: 'DELETE', path: `/v1/videos/${encodeURIComponent(canceled.id as string)}` });
  run.findings.expect('cancel-not-cancelable', exchange, { status: 400, code: 'not_cancelable', param: null }, 'the account lists it as canceled');
}

const MP4 = (bytes: Uint8Array) => bytes.length >= 8 && String.fromCharCode(...bytes.slice(4, 8)) === 'ftyp';
const PNG = (bytes: Uint8Array) => [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => bytes[i] === b);

/** A succeeded video's files: a real MP4 and a real PNG (their first bytes). */
async function checkOutputMedia(run: Run, listed: VideoSeen[]): Promise<void> {
  const succeeded = listed.find((v) => v.status === 'succeeded' && v.output !== null && typeof v.output === 'object');
  if (!succeeded) {
    run.findings.notObserved('output-media', "no succeeded video in the account's first page of the list (a paid render would have to run to its end)");
    return;
  }
  const output = succeeded.output as { url?: unknown; thumbnail_url?: unknown };
  for (const [field, url, kind, test] of [
    ['url', output.url, 'an MP4 (ftyp box)', MP4],
    ['thumbnail_url', output.thumbnail_url, 'a PNG (its signature)', PNG],
  ] as const) {
    const request = `GET ${String(url)} (output.${field} of ${String(succeeded.id)}, first 64 bytes)`;
    if (typeof url !== 'string') {
      run.findings.contradict('output-media', { request, expected: `output.${field}, an address`, observed: JSON.stringify(url) });
      continue;
    }
    const media = await run.client.fetchMedia(url);
    const observed = 'error' in media ? media.error : `${media.status} ${media.contentType}, bytes ${Buffer.from(media.bytes.slice(0, 12)).toString('hex')}`;
    run.findings.record('output-media', !('error' in media) && is2xx(media.status) && test(media.bytes), () => ({ request, expected: kind, observed }));
  }
}
