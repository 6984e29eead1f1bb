/**
 * The operations of openapi.yaml, by operationId: each takes a request that passed the checks
 * before it (see handleRequest.ts), asks the core, and answers the body of a 200 or throws the
 * core's catalogue error. The table is typed by the operation ids the build reads from openapi.yaml
 * (`OPERATION_IDS`, src/generated/operations.ts): an operation without its handler, or a handler
 * without its operation, does not compile. What else the simulator reads of an operation (a
 * create, its fan-out over shards...) is declared once, in its `x-sim-operation` in openapi.yaml,
 * and read from `OPERATION_FACTS` there.
 */
import type { Account } from '../core/accounts/account.js';
import { clientReport } from '../core/journal/clientReport.js';
import { advanceGeneration, cancelGeneration, controlGeneration, controlGenerations, failGeneration, finishGeneration } from '../core/generations/generationControl.js';
import { clip, fail } from '../core/errors.js';
import { stageFailureCodes, type ForcedOutcome } from '../core/generations/fate.js';
import { isMediaPattern, type FaultRequest } from '../core/faults/faults.js';
import { createImage, type CreateImageInput } from '../core/generations/images.js';
import { MEDIA_ROOT } from '../core/generations/mediaPaths.js';
import { PIPELINE, type VideoStatus } from '../core/generations/pipeline.js';
import { CompiledPattern, RequestWait, verifyCount, verifySequence, type RequestPattern, type VerifyTimes } from '../core/journal/requestPattern.js';
import { wrongShard } from '../core/accounts/shard.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { cancelVideo, createVideo, getVideo, listVideos, type CreateVideoInput } from '../core/generations/videos.js';
import type { OperationId } from '../generated/operations.js';
import type { operations } from '../generated/openapi-types.js';
import { REQUEST_DEFAULTS } from '../generated/request-defaults.js';
import { JSON_LINES_TYPE } from '../jsonType.js';
import type { RecordingStatus } from '../transcript/recorder.js';
import type { StateStatus } from '../persistence/stateStore.js';
import { digest } from './body.js';
import { patternMatchesServiceRoute, serviceRoutesInWords } from './router.js';
import type { StreamedBody } from './exchange.js';

/** What the control API needs beyond the core: parts of the app around it. */
export interface AppParts {
  /** The transcript recorded so far (NDJSON, to be streamed), or undefined when recording is off. */
  transcript?(): StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the recording, or undefined when recording is off. */
  recording?(): RecordingStatus | undefined;
  /** The state as a compacted state file (NDJSON), or undefined where there is none (a restore's own request path). */
  snapshot?(): StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the state file, or undefined when state is off. */
  stateStatus?(): StateStatus | undefined;
  /** The bundled scenarios, by name, each with its purpose in one line (read from the scenario files). */
  scenarios(): { name: string; purpose: string }[];
}

export interface OperationInput<Params extends Record<string, string> = Record<string, string>> {
  readonly sim: Simulator;
  readonly app: AppParts;
  /** The authenticated account (`/v1` operations). */
  readonly account: Account | null;
  /** The account's time of the request (ms): its clock caught up once, before the checks. */
  readonly atMs: number;
  /** The path parameters, percent-decoded. */
  readonly params: Params;
  /** The query, read and valid: integer parameters are numbers. */
  readonly query: Record<string, unknown>;
  /** The JSON body, valid, without null-valued fields (`{}` when the operation takes none). */
  readonly body: Record<string, unknown>;
  readonly forcedOutcome: ForcedOutcome | null;
}

/** An operation's answer sent from a stream by the HTTP adapter (the transcript: any size). */
export class StreamAnswer {
  constructor(
    readonly stream: StreamedBody,
    readonly contentType: string,
    /** Headers the answer carries beside the request id. */
    readonly headers: Record<string, string> = {},
  ) {}
}

/** A wait for requests that must be held (`POST /_sim/requests/wait`): the request path hands it to the adapter (`HeldWait`). */
export class HeldWaitAnswer {
  constructor(
    readonly wait: RequestWait,
    readonly timeoutMs: number,
  ) {}
}

/** Waits held at once when the scenario does not say (`limits.max_waits`). */
const DEFAULT_MAX_WAITS = 100;

/** The path parameters of an operation of openapi.yaml (`{ id: string }`), none for one without. */
type PathParams<K extends OperationId> = operations[K] extends { parameters: { path: infer P extends Record<string, string> } } ? P : Record<never, string>;

/** The handler of an operation: its request's path parameters are the operation's own. */
export type Handler<K extends OperationId = OperationId> = (input: OperationInput<PathParams<K>>) => unknown;

/** A request pattern of a body, checked by openapi.yaml's `SimRequestPattern`, ready to match. */
const patternOf = (value: unknown): CompiledPattern => new CompiledPattern(value as RequestPattern, digest);

function accountOf(input: OperationInput): Account {
  if (!input.account) throw new Error('a /v1 operation was reached without an authenticated account');
  return input.account;
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * The account an account-scoped control call names: `api_key` in the query string or in the body
 * (both given: the same key, else 400). On a shard, a key in the body alone that belongs to another
 * shard is 421 `wrong_shard` (the query's was checked before anything else).
 */
function accountKeyOf({ sim, query, body }: OperationInput): string | null {
  const inQuery = str(query.api_key);
  const inBody = str(body.api_key);
  if (inQuery !== null && inBody !== null && inQuery !== inBody) {
    throw fail('invalid_parameter', {
      param: 'api_key',
      message: 'api_key is given in the query string and in the body with different values; give it once, or the same in both.',
    });
  }
  if (inQuery === null && inBody !== null) {
    const misdirected = wrongShard(sim.shard, inBody);
    if (misdirected) throw misdirected;
  }
  return inQuery ?? inBody;
}
const int = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

export const OPERATION_HANDLERS: { readonly [K in OperationId]: Handler<K> } = {
  // ---- the service (interface document, section 4) ----
  createVideo: (input) => createVideo(input.sim, accountOf(input), input.atMs, input.body as unknown as CreateVideoInput, input.forcedOutcome),
  listVideos: (input) =>
    listVideos(input.sim, accountOf(input), {
      limit: int(input.query.limit),
      after: str(input.query.after),
      status: str(input.query.status) as VideoStatus | null,
    }),
  retrieveVideo: (input) => getVideo(input.sim, accountOf(input), input.params.id),
  cancelVideo: (input) => cancelVideo(input.sim, accountOf(input), input.atMs, input.params.id),
  createImage: (input) => createImage(input.sim, accountOf(input), input.atMs, input.body as unknown as CreateImageInput, input.forcedOutcome),

  // ---- the control API ----
  simHealth({ sim, app }) {
    const recording = app.recording?.();
    const state = app.stateStatus?.();
    return { ...sim.health(), media: { url: sim.cdnUrl, follows_host: sim.answersFollowHost }, ...(recording && { recording }), ...(state && { state }) };
  },
  simClock: ({ sim, query }) => sim.clockState(str(query.api_key)),
  simAdvanceClock(input) {
    // Exactly one of them: openapi.yaml's SimAdvanceRequest requires one and refuses both.
    const { seconds, to } = input.body;
    if (to !== undefined) return input.sim.advanceTo(Date.parse(to as string), accountKeyOf(input));
    return input.sim.advance(seconds as number, accountKeyOf(input));
  },
  simReset: (input) =>
    input.sim.reset({ scenario: str(input.body.scenario), seed: int(input.body.seed) ?? null, apiKey: accountKeyOf(input) }),
  simScenario: ({ sim }) => sim.resolvedScenario,
  simScenarios: ({ app }) => ({ object: 'list', data: app.scenarios() }),
  simPipeline: ({ sim }) => ({
    object: 'list',
    data: PIPELINE.map(({ name, status, fills, failable, cancelable }) => ({ name, status, fills, failable, cancelable, failure_codes: stageFailureCodes(sim.scenario, name) })),
  }),
  simRequests({ sim, query }) {
    const { data, has_more } = sim.journal.recent(int(query.limit) ?? REQUEST_DEFAULTS.simRequests.limit, str(query.api_key) ?? undefined);
    return { object: 'list', data, has_more };
  },
  simVerify({ sim, body }) {
    // openapi.yaml's SimVerifyRequest takes `request` (with `times`) or `sequence`, not both.
    if (Array.isArray(body.sequence)) return verifySequence(sim.journal, body.sequence.map(patternOf));
    return verifyCount(sim.journal, patternOf(body.request), body.times as VerifyTimes | undefined);
  },
  simWaitRequests({ sim, body }) {
    const defaults = REQUEST_DEFAULTS.simWaitRequests;
    const timeoutMs = int(body.timeout_ms) ?? defaults.timeout_ms;
    const wait = new RequestWait(() => sim.journal, patternOf(body.request), int(body.count) ?? defaults.count, int(body.after) ?? defaults.after);
    if (wait.satisfied || timeoutMs === 0) return wait.answer(!wait.satisfied);
    const max = sim.scenario.limits.max_waits ?? DEFAULT_MAX_WAITS;
    if (!sim.waits.take(max)) {
      throw fail('rate_limit_exceeded', {
        message: `The simulator holds ${max} waits for requests, its limit (limits.max_waits). Retry once one has been answered, or raise limits.max_waits.`,
        headers: { 'Retry-After': '1' },
      });
    }
    return new HeldWaitAnswer(wait, timeoutMs);
  },
  simQueueFault(input) {
    const { sim, body } = input;
    const fault = { ...body, api_key: accountKeyOf(input) } as unknown as FaultRequest;
    // A media path (`/cdn/...`) is checked by the fault queue: it takes network faults only.
    if (!isMediaPattern(fault.path) && !patternMatchesServiceRoute(fault.path)) {
      throw fail('invalid_parameter', {
        param: 'path',
        message: `'${clip(fault.path)}' matches no route of the service's API (${serviceRoutesInWords()}), exactly or as a prefix ending with '*', and is no media path (${MEDIA_ROOT}/...).`,
      });
    }
    return { queued: sim.faults.add(fault) };
  },
  simReport: ({ sim, query }) => clientReport(query.api_key as string, sim.journal.recordsOf(query.api_key as string), sim.clock.mode),
  simListFaults: ({ sim }) => ({ queued: sim.faults.waiting(), faults: sim.faults.list() }),
  simClearFaults({ sim, query }) {
    const apiKey = str(query.api_key);
    if (apiKey) sim.faults.forget(apiKey);
    else sim.faults.clear();
    return { queued: sim.faults.waiting() };
  },
  simGenerations: ({ sim, query }) =>
    controlGenerations(sim, {
      apiKey: str(query.api_key),
      status: str(query.status) as VideoStatus | null,
      limit: int(query.limit),
      after: str(query.after),
      changedSince: int(query.changed_since) ?? null,
    }),
  simGeneration: ({ sim, params, query }) => controlGeneration(sim, params.id, str(query.api_key)),
  simAdvanceGeneration: (input) => advanceGeneration(input.sim, input.params.id, accountKeyOf(input)),
  simFinishGeneration: (input) => finishGeneration(input.sim, input.params.id, accountKeyOf(input)),
  simFailGeneration: (input) => failGeneration(input.sim, input.params.id, str(input.body.code), accountKeyOf(input)),
  simCancelGeneration: (input) => cancelGeneration(input.sim, input.params.id, accountKeyOf(input)),
  simShutdown: () => ({ status: 'shutting_down' }),
  simTranscript({ app }) {
    const stream = app.transcript?.();
    if (stream === undefined) {
      throw fail('unknown_route', { message: 'Recording is off: GET /_sim/transcript answers only when the simulator was started with --record FILE.' });
    }
    return new StreamAnswer(stream, JSON_LINES_TYPE);
  },
  simState({ app }) {
    const stream = app.snapshot?.();
    if (stream === undefined) {
      throw fail('unknown_route', { message: 'GET /_sim/state is not served here.' });
    }
    // A download: a browser saves it as a file rather than showing it.
    return new StreamAnswer(stream, JSON_LINES_TYPE, { 'Content-Disposition': 'attachment; filename="state.jsonl"' });
  },
};
