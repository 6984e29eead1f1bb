/**
 * The operations of openapi.yaml, by operationId: each takes a request that passed every check
 * before it (authenticated, within its rate limit, its parameters valid) and answers the body of a
 * 200, or throws a catalogue error (existence, balance, claim linking, the control API's own rules).
 */
import type { Account } from '../core/account.js';
import { clientReport } from '../core/clientReport.js';
import { fail } from '../core/errors.js';
import { patternMatchesServiceRoute } from './contract.js';
import type { FaultRequest } from '../core/faults.js';
import type { ForcedOutcome } from '../core/fate.js';
import { PIPELINE, type VideoStatus } from '../core/pipeline.js';
import { mergeNegativePrompts, type CreateImageInput, type CreateVideoInput, type Simulator } from '../core/simulator.js';
import type { RecordingStatus } from '../transcript/recorder.js';
import type { StreamedBody } from './handleRequest.js';

/** What the control API needs beyond the core: parts of the app around it. */
export interface Control {
  /** The transcript recorded so far (NDJSON, to be streamed), or undefined when recording is off. */
  transcript(): StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the recording, or undefined when recording is off. */
  recording(): RecordingStatus | undefined;
  /** The bundled scenarios, by name, each with its purpose in one line (read from the scenario files). */
  scenarios(): { name: string; purpose: string }[];
}

/** What an operation tells the journal about itself. */
export interface OperationEffects {
  /** A create's merged negative prompt (the request's plus the account's default). */
  negativePromptEffective?: string | null;
}

export interface OperationInput {
  sim: Simulator;
  control: Control;
  /** The authenticated account (`/v1` operations). */
  account: Account | null;
  params: Record<string, string>;
  /** The query, read and valid: integer parameters are numbers. */
  query: Record<string, unknown>;
  /** The JSON body, valid, without null-valued fields (`{}` when the operation takes none). */
  body: Record<string, unknown>;
  forcedOutcome: ForcedOutcome | null;
  effects: OperationEffects;
}

/** An operation's answer that is not JSON. */
export class RawAnswer {
  constructor(
    readonly text: string,
    readonly contentType: string,
  ) {}
}

/** An operation's answer sent from a stream by the HTTP adapter (the transcript: any size). */
export class StreamAnswer {
  constructor(
    readonly stream: StreamedBody,
    readonly contentType: string,
  ) {}
}

type Handler = (input: OperationInput) => unknown;

function accountOf(input: OperationInput): Account {
  if (!input.account) throw new Error('a /v1 operation was reached without an authenticated account');
  return input.account;
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * The account an account-scoped control call names: `api_key` in the query string or in the body
 * (both given: the same key, else 400).
 */
function accountKeyOf({ query, body }: OperationInput): string | null {
  const inQuery = str(query.api_key);
  const inBody = str(body.api_key);
  if (inQuery !== null && inBody !== null && inQuery !== inBody) {
    throw fail('invalid_parameter', {
      param: 'api_key',
      message: 'api_key is given in the query string and in the body with different values; give it once, or the same in both.',
    });
  }
  return inQuery ?? inBody;
}
const int = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

export const OPERATION_HANDLERS: Readonly<Record<string, Handler>> = {
  // ---- the service (interface document, section 4) ----
  createVideo(input) {
    const account = accountOf(input);
    const body = input.body as unknown as CreateVideoInput;
    input.effects.negativePromptEffective = mergeNegativePrompts(account.negativePrompt, body.negative_prompt ?? null);
    return input.sim.createVideo(account, body, input.forcedOutcome);
  },
  listVideos: (input) =>
    input.sim.listVideos(accountOf(input), {
      limit: int(input.query.limit),
      after: str(input.query.after),
      status: str(input.query.status) as VideoStatus | null,
    }),
  retrieveVideo: (input) => input.sim.getVideo(accountOf(input), input.params.id as string),
  cancelVideo: (input) => input.sim.cancelVideo(accountOf(input), input.params.id as string),
  createImage: (input) => input.sim.createImage(accountOf(input), input.body as unknown as CreateImageInput, input.forcedOutcome),

  // ---- the control API ----
  simHealth({ sim, control }) {
    const recording = control.recording();
    return recording ? { ...sim.health(), recording } : sim.health();
  },
  simClock: ({ sim, query }) => sim.clockState(str(query.api_key)),
  simAdvanceClock: (input) => input.sim.advance(input.body.seconds as number, accountKeyOf(input)),
  simReset: (input) =>
    input.sim.reset({ scenario: str(input.body.scenario), seed: int(input.body.seed) ?? null, apiKey: accountKeyOf(input) }),
  simScenario: ({ sim }) => sim.scenario,
  simScenarios: ({ control }) => ({ object: 'list', data: control.scenarios() }),
  simPipeline: ({ sim }) => ({
    object: 'list',
    data: PIPELINE.map(({ name, status, fills, failable, cancelable }) => ({ name, status, fills, failable, cancelable, failure_codes: sim.stageFailureCodes(name) })),
  }),
  simRequests({ sim, query }) {
    const { data, has_more } = sim.journal.recent(int(query.limit) ?? 100, str(query.api_key) ?? undefined);
    return { object: 'list', data, has_more };
  },
  simQueueFault(input) {
    const { sim, body } = input;
    const fault = { ...body, api_key: accountKeyOf(input) } as unknown as FaultRequest;
    if (!patternMatchesServiceRoute(fault.path)) {
      throw fail('invalid_parameter', {
        param: 'path',
        message: `'${fault.path}' matches no route of the service's API (/v1/videos, /v1/videos/{id}, /v1/images), exactly or as a prefix ending with '*'.`,
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
    sim.controlGenerations({
      apiKey: str(query.api_key),
      status: str(query.status) as VideoStatus | null,
      limit: int(query.limit),
      after: str(query.after),
      changedSince: int(query.changed_since) ?? null,
    }),
  simGeneration: ({ sim, params }) => sim.controlGeneration(params.id as string),
  simAdvanceGeneration: ({ sim, params }) => sim.advanceGeneration(params.id as string),
  simFinishGeneration: ({ sim, params }) => sim.finishGeneration(params.id as string),
  simFailGeneration: ({ sim, params, body }) => sim.failGeneration(params.id as string, str(body.code)),
  simCancelGeneration: ({ sim, params }) => sim.cancelGeneration(params.id as string),
  simShutdown: () => ({ status: 'shutting_down' }),
  simTranscript({ control }) {
    const stream = control.transcript();
    if (stream === undefined) {
      throw fail('unknown_route', { message: 'Recording is off: GET /_sim/transcript answers only when the simulator was started with --record FILE.' });
    }
    return new StreamAnswer(stream, 'application/x-ndjson');
  },
};
