/**
 * The six pipeline stages as data: the one place the stage list is written. Statuses, which stage
 * fills which field of the video object, which stages a scenario may fail and which may be
 * canceled are read from this table by the generation's state machine (`lifecycle.ts`), the
 * scenario schema (`TIMED_STAGES`) and, through the control API, the dashboard. It names the error
 * codes of each stage; the error catalogue (`errors.ts`) does not read it back.
 *
 * Status `queued` is the `queue` stage; `processing` is `keyframe`, `routing` and `render`;
 * `verifying` is `output_verification`. Claim linking runs synchronously, during the create request.
 */

import type { ErrorCode } from '../errors.js';

export type VideoStatus = 'queued' | 'processing' | 'verifying' | 'succeeded' | 'failed' | 'canceled';

/** A field of the video object that a stage fills when it ends. */
export type FilledField = 'keyframe' | 'routed_model' | 'compliance';

export interface StageDefinition {
  readonly name: string;
  /** The status a generation shows while in this stage; null for the synchronous claim-linking stage. */
  readonly status: VideoStatus | null;
  /** The field this stage fills when it ends, if any. */
  readonly fills: FilledField | null;
  /** Whether it fills that field even when the generation fails at this stage (a rejected output still reports its compliance). */
  readonly fillsOnFailure: boolean;
  /** May a scenario make generations fail at the end of this stage with an `api_error`? */
  readonly failable: boolean;
  /** May a generation in this stage be canceled (interface document, section 4.3)? */
  readonly cancelable: boolean;
  /** Why it may not, as a cancel's 400 says; null where it may (or the stage has no status). */
  readonly notCancelableBecause: string | null;
  /**
   * The error codes a generation failed at this stage can carry, the usual one first (a scenario's
   * failure there may name another `api_error` code: see `stageFailureCodes` in fate.ts). Empty
   * where a generation cannot fail. The control API's `fail` takes one of them.
   */
  readonly failureCodes: readonly ErrorCode[];
}

/** The pipeline, in order. */
export const PIPELINE = [
  { name: 'claim_linking', status: null, fills: null, fillsOnFailure: false, failable: false, cancelable: false, notCancelableBecause: null, failureCodes: ['claim_linking_rejected'] },
  { name: 'queue', status: 'queued', fills: null, fillsOnFailure: false, failable: false, cancelable: true, notCancelableBecause: null, failureCodes: [] },
  { name: 'keyframe', status: 'processing', fills: 'keyframe', fillsOnFailure: false, failable: true, cancelable: true, notCancelableBecause: null, failureCodes: ['keyframe_failed', 'upstream_timeout', 'internal_error'] },
  { name: 'routing', status: 'processing', fills: 'routed_model', fillsOnFailure: false, failable: true, cancelable: true, notCancelableBecause: null, failureCodes: ['routing_failed', 'upstream_timeout', 'internal_error'] },
  { name: 'render', status: 'processing', fills: null, fillsOnFailure: false, failable: true, cancelable: true, notCancelableBecause: null, failureCodes: ['render_failed', 'upstream_timeout', 'internal_error'] },
  { name: 'output_verification', status: 'verifying', fills: 'compliance', fillsOnFailure: true, failable: false, cancelable: false, notCancelableBecause: 'the render has already happened', failureCodes: ['output_rejected'] },
] as const satisfies readonly StageDefinition[];

export type PipelineStageName = (typeof PIPELINE)[number]['name'];

/** The stages that take time (all but the synchronous claim linking), in order. */
export type TimedStage = Exclude<PipelineStageName, 'claim_linking'>;
export const TIMED_STAGES: readonly TimedStage[] = PIPELINE.filter((s) => s.status !== null).map((s) => s.name);

/** The stages a scenario may make fail with an `api_error`. */
export const FAILABLE_STAGES: readonly PipelineStageName[] = PIPELINE.filter((s) => s.failable).map((s) => s.name);

export const STAGE_BY_NAME: ReadonlyMap<PipelineStageName, StageDefinition> = new Map(PIPELINE.map((stage) => [stage.name, stage]));

/** The statuses that can be canceled: those of the cancelable stages (interface document, section 4.3). */
export const CANCELABLE_STATUSES: ReadonlySet<VideoStatus> = new Set(
  PIPELINE.filter((s) => s.cancelable && s.status !== null).map((s) => s.status as VideoStatus),
);

/** The timed stages of keyframe-first (or reused-keyframe) and of direct text-to-video generations. */
export const KEYFRAME_FIRST_STAGES: readonly TimedStage[] = Object.freeze([...TIMED_STAGES]);
export const DIRECT_STAGES: readonly TimedStage[] = Object.freeze(TIMED_STAGES.filter((s) => s !== 'keyframe'));

/** The statuses a generation ends in (section 3): nothing moves it out of them. */
export const RESOLVED_STATUSES: ReadonlySet<VideoStatus> = new Set(['succeeded', 'failed', 'canceled']);

/** The statuses of a generation in flight: those of the timed stages, in pipeline order. */
export const IN_FLIGHT_STATUSES: ReadonlySet<VideoStatus> = new Set(
  PIPELINE.flatMap((s) => (s.status === null ? [] : [s.status as VideoStatus])),
);

/** Items as a message names them: "queued and processing", "queued, processing or verifying". */
export function inWords(items: Iterable<string>, conjunction: 'and' | 'or'): string {
  const list = [...items];
  return list.length < 2 ? list.join('') : `${list.slice(0, -1).join(', ')} ${conjunction} ${list[list.length - 1]}`;
}
