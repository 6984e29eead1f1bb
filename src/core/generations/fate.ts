/**
 * The fate of a generation: everything about its future, drawn once, when it is created, from its
 * own stream, so nothing outside the generation (polling, other accounts, the timing of advances)
 * can change it. Only a control request on that generation does: ending a stage early makes the
 * stage's duration what it lasted, and a forced failure replaces the fate (`failedFate`).
 */
import { clip, fail, isErrorCode, ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import { DIRECT_STAGES, KEYFRAME_FIRST_STAGES, STAGE_BY_NAME, TIMED_STAGES, type TimedStage } from './pipeline.js';
import type { RandomStream } from '../random.js';
import { sample } from '../scenario/distribution.js';
import type { ComplianceFlagSpec, Resolution, Scenario } from '../scenario/scenario.js';

/** How the generation gets its keyframe. */
export type KeyframeMode = 'generated' | 'reused' | 'none';

export interface ComplianceFlag {
  code: string;
  severity: ComplianceFlagSpec['severity'];
  message: string;
}

export interface Compliance {
  verified: boolean;
  flags: ComplianceFlag[];
}

/** A failure at a stage: an `api_error`, or the output verification's compliance rejection. */
export type PlannedFailure = { code: string; message: string } & (
  | { stage: TimedStage; type: 'api_error' }
  | { stage: 'output_verification'; type: 'compliance_error' }
);

/** Everything about a generation's future, decided at creation. */
export interface Fate {
  id: string;
  keyframeMode: KeyframeMode;
  /** Id of the keyframe image (generated: a new `img_` id; reused: the request's keyframe_id). */
  keyframeImageId: string | null;
  routedModel: string;
  /** The timed stages the generation walks through, in order (shared, read-only lists). */
  stageNames: readonly TimedStage[];
  /** Milliseconds spent in each stage it walks through; shorter than stageNames when it fails early. */
  durationsMs: number[];
  /** Set when the generation fails: it resolves as `failed` at the end of `failure.stage`. */
  failure: PlannedFailure | null;
  /** What output verification reports (when the generation reaches its end). */
  compliance: Compliance;
  /** Price in cents if it succeeds. */
  priceCents: number;
  /** Cost in cents if it fails as planned. */
  failureCostCents: number;
}

/** The timed stages a generation walks through: the keyframe stage first unless it makes none (shared lists). */
export function stagesFor(keyframeMode: KeyframeMode): readonly TimedStage[] {
  return keyframeMode === 'none' ? DIRECT_STAGES : KEYFRAME_FIRST_STAGES;
}

export interface FateRequest {
  model: string;
  resolution: Resolution;
  durationSeconds: number;
  keyframeId: string | null;
}

/**
 * Optional outcome forced by a queued fault (see the control endpoint /_sim/faults), or by the
 * prompt's triggers (`promptTriggers.ts`), which force the same.
 */
export interface ForcedOutcome {
  /** Fail with an api_error at the end of this stage. */
  fail_stage?: 'keyframe' | 'routing' | 'render';
  /** Reject the create at once with a 422 (stage claim_linking). */
  claim_linking_rejected?: boolean;
  /** Reject the output (failed, compliance_error, stage output_verification). */
  output_rejected?: boolean;
  /** The compliance flags output verification reports (a block flag rejects). */
  flags?: ComplianceFlag[];
}

/** The usual outcome, shared by every generation that has it (views copy it). */
export const COMPLIANCE_PASSED: Compliance = Object.freeze({ verified: true, flags: Object.freeze([]) as unknown as ComplianceFlag[] });

const DEFAULT_BLOCK_FLAG: ComplianceFlag = {
  code: 'policy_violation',
  severity: 'block',
  message: 'The output was found to violate the content policy.',
};

/**
 * Draws a generation's fate. The draws happen in a fixed order from `rng`, which is the stream of
 * this generation alone, so nothing outside the generation can change the result: the id, the
 * keyframe, the routing, each timed stage, then output verification.
 */
export function drawFate(
  scenario: Scenario,
  request: FateRequest,
  rng: RandomStream,
  forced?: ForcedOutcome,
): Fate {
  const id = rng.token(24, 'vid_');
  const { keyframeMode, keyframeImageId } = drawKeyframe(scenario, request, rng, forced);
  const routedModel = drawRoutedModel(scenario, request, keyframeMode, rng);
  const { durationsMs, failure: stageFailure } = drawStages(scenario, request, keyframeMode, rng, forced);
  const { compliance, rejected } = drawCompliance(scenario, rng, forced);
  const failure = stageFailure ?? (rejected ? outputRejection(compliance) : null);
  const { priceCents, failureCostCents } = pricesOf(scenario, request, keyframeMode, failure);

  return {
    id,
    keyframeMode,
    keyframeImageId,
    routedModel,
    stageNames: stagesFor(keyframeMode),
    // A copy holds exactly its elements, without the spare capacity `push` leaves: the array is
    // kept as long as the generation is stored.
    durationsMs: durationsMs.slice(),
    failure,
    compliance,
    priceCents: Math.round(priceCents),
    failureCostCents: Math.round(failureCostCents),
  };
}

/** How the generation gets its keyframe, and the id of that image. */
function drawKeyframe(
  scenario: Scenario,
  request: FateRequest,
  rng: RandomStream,
  forced: ForcedOutcome | undefined,
): { keyframeMode: KeyframeMode; keyframeImageId: string | null } {
  const keyframeFirst = rng.chance(scenario.keyframe_first_share);
  // A forced keyframe failure needs a keyframe stage to fail in.
  const keyframeMode: KeyframeMode = request.keyframeId
    ? 'reused'
    : keyframeFirst || forced?.fail_stage === 'keyframe'
      ? 'generated'
      : 'none';
  const keyframeImageId =
    keyframeMode === 'reused' ? request.keyframeId : keyframeMode === 'generated' ? rng.token(24, 'img_') : null;
  return { keyframeMode, keyframeImageId };
}

/** The model the first matching routing rule sends the generation to (the last rule if none matches). */
function drawRoutedModel(scenario: Scenario, request: FateRequest, keyframeMode: KeyframeMode, rng: RandomStream): string {
  const rule =
    scenario.routing.find(
      (r) =>
        (r.when?.model === undefined || r.when.model === request.model) &&
        (r.when?.resolution === undefined || r.when.resolution === request.resolution) &&
        (r.when?.keyframe_first === undefined || r.when.keyframe_first === (keyframeMode !== 'none')),
    ) ?? scenario.routing[scenario.routing.length - 1];
  return rule ? rng.weighted(rule.targets, (t) => t.weight ?? 1).model : 'render-core-1';
}

/**
 * The duration of each timed stage the generation walks through, up to the one it fails in, if it
 * fails in one. Every stage draws its duration and its failure, walked or not, so that the draws
 * after them do not depend on the keyframe mode or on a failure.
 */
function drawStages(
  scenario: Scenario,
  request: FateRequest,
  keyframeMode: KeyframeMode,
  rng: RandomStream,
  forced: ForcedOutcome | undefined,
): { durationsMs: number[]; failure: PlannedFailure | null } {
  const durationsMs: number[] = [];
  let failure: PlannedFailure | null = null;
  for (const stage of TIMED_STAGES) {
    const spec = scenario.stages[stage];
    let seconds = sample(spec.duration, rng);
    if (spec.per_output_second) seconds *= request.durationSeconds;
    const failDraw = rng.next();
    if (stage === 'keyframe' && keyframeMode === 'none') continue;
    // A reused keyframe is looked up, not generated: the stage passes at once.
    const durationMs = stage === 'keyframe' && keyframeMode === 'reused' ? 0 : Math.round(seconds * 1000);
    if (failure) continue;
    durationsMs.push(durationMs);
    const canFail = stage !== 'keyframe' || keyframeMode === 'generated';
    if (forced?.fail_stage === stage) {
      failure = {
        stage,
        type: 'api_error',
        code: spec.failure?.code ?? `${stage}_failed`,
        message: `The ${stage} stage failed (forced by a queued fault).`,
      };
    } else if (!forced && canFail && spec.failure && failDraw < spec.failure.probability) {
      // A forced outcome replaces the scenario's random failures, so that it always happens.
      failure = {
        stage,
        type: 'api_error',
        code: spec.failure.code,
        message:
          spec.failure.message ??
          `The ${stage} stage failed (injected by scenario '${scenario.name}', failure probability ${spec.failure.probability}).`,
      };
    }
  }
  return { durationsMs, failure };
}

/** What output verification reports, and whether it rejects the output. */
function drawCompliance(
  scenario: Scenario,
  rng: RandomStream,
  forced: ForcedOutcome | undefined,
): { compliance: Compliance; rejected: boolean } {
  const verification = scenario.compliance.output_verification;
  const rejectDraw = rng.next();
  const flagDraw = rng.next();
  const flagPick = rng.next();
  const rejected =
    forced?.output_rejected ??
    (forced?.flags ? forced.flags.some((f) => f.severity === 'block') : rejectDraw < verification.reject_share);
  const blockFlag = (): ComplianceFlag => {
    const blocks = verification.flags.filter((f) => f.severity === 'block');
    return { ...(blocks.length > 0 ? (blocks[Math.floor(flagPick * blocks.length)] as ComplianceFlag) : DEFAULT_BLOCK_FLAG) };
  };
  if (forced?.flags) {
    const isBlock = (f: ComplianceFlag) => f.severity === 'block';
    // A forced rejection whose forced flags hold no block flag reports the block flag that rejected it too.
    const flags = rejected && !forced.flags.some(isBlock) ? [...forced.flags, blockFlag()] : forced.flags;
    return { compliance: { verified: !flags.some(isBlock), flags }, rejected };
  }
  if (rejected) return { compliance: { verified: false, flags: [blockFlag()] }, rejected };
  if (flagDraw < verification.flag_share) {
    const soft = verification.flags.filter((f) => f.severity !== 'block');
    const flag = soft[Math.floor(flagPick * soft.length)];
    if (flag) return { compliance: { verified: true, flags: [{ ...flag }] }, rejected };
  }
  return { compliance: COMPLIANCE_PASSED, rejected };
}

/** The failure of a generation whose output verification rejects it. */
function outputRejection(compliance: Compliance): PlannedFailure {
  const blockFlag = compliance.flags.find((f) => f.severity === 'block');
  return {
    stage: 'output_verification',
    type: 'compliance_error',
    code: 'output_rejected',
    message: `The output was rejected by output verification${blockFlag ? ` (${blockFlag.code})` : ''}.`,
  };
}

/** The price if the generation succeeds, and what it costs if it fails as planned (unrounded). */
function pricesOf(
  scenario: Scenario,
  request: FateRequest,
  keyframeMode: KeyframeMode,
  failure: PlannedFailure | null,
): { priceCents: number; failureCostCents: number } {
  const priceCents =
    scenario.pricing.per_second_cents[request.resolution] * request.durationSeconds +
    (keyframeMode === 'generated' ? scenario.pricing.keyframe_cents : 0);
  const failureCostCents = failure ? failureCost(scenario, priceCents, failure.stage) : 0;
  return { priceCents, failureCostCents };
}

/** What a failure at `stage` charges: the scenario's `failure_charge` (the render happened once output verification is reached). */
function failureCost(scenario: Scenario, priceCents: number, stage: TimedStage): number {
  const charge = scenario.pricing.failure_charge;
  return charge === 'full' || (charge === 'render_if_happened' && stage === 'output_verification') ? priceCents : 0;
}

/**
 * The codes a generation failed at `stage` can carry under `scenario`: the one a scenario failure
 * there gives first (the scenario's `stages.<stage>.failure.code`, else the pipeline's usual one),
 * then the stage's others. Empty where a generation cannot fail.
 */
export function stageFailureCodes(scenario: Scenario, stage: string): ErrorCode[] {
  const codes = [...(STAGE_BY_NAME.get(stage as TimedStage)?.failureCodes ?? [])];
  const own = (TIMED_STAGES as readonly string[]).includes(stage) ? scenario.stages[stage as TimedStage]?.failure?.code : undefined;
  if (codes.length > 0 && own !== undefined && isErrorCode(own)) return [own, ...codes.filter((c) => c !== own)];
  return codes;
}

/**
 * The fate of a generation made to fail now at `stage` (the control API's `fail`), instead of the
 * one it drew: it fails with `code` (default: the code a scenario failure there gives), charges what
 * a failure there charges, and stops walking at this stage; at output verification the failure is
 * an output rejection, whose compliance report carries a `block` flag. The caller passes the
 * stage the generation is in; a stage that cannot fail, or a code that does not belong to it, is
 * 400 `invalid_parameter`.
 */
export function failedFate(scenario: Scenario, fate: Fate, stage: TimedStage, code: string | null): Fate {
  const codes = stage === 'keyframe' && fate.keyframeMode !== 'generated' ? [] : stageFailureCodes(scenario, stage);
  // A stage that cannot fail says so whatever code was asked for.
  const chosen = codes.length === 0 ? undefined : (code ?? codes[0]);
  if (chosen === undefined) {
    const later = fate.stageNames.slice(fate.stageNames.indexOf(stage) + 1);
    throw fail('invalid_parameter', {
      param: 'id',
      message: `A generation in the ${stage} stage cannot fail. Advance it to a stage that can (${later.join(', ')}) first.`,
    });
  }
  if (!(codes as string[]).includes(chosen)) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `'${clip(chosen)}' is not a failure of the ${stage} stage; it can fail with ${codes.join(', ')}.`,
    });
  }
  const index = fate.stageNames.indexOf(stage);
  const durationsMs = fate.durationsMs.slice(0, index + 1);
  if (stage === 'output_verification') {
    const drawnBlock = fate.compliance.flags.find((f) => f.severity === 'block');
    const block =
      drawnBlock ?? scenario.compliance.output_verification.flags.find((f) => f.severity === 'block') ?? DEFAULT_BLOCK_FLAG;
    const flags = drawnBlock ? fate.compliance.flags.map((f) => ({ ...f })) : [...fate.compliance.flags.map((f) => ({ ...f })), { ...block }];
    return {
      ...fate,
      durationsMs,
      compliance: { verified: false, flags },
      failure: {
        stage,
        type: 'compliance_error',
        code: 'output_rejected',
        message: `The output was rejected by output verification (${block.code}; forced through the control API).`,
      },
      failureCostCents: failureCost(scenario, fate.priceCents, stage),
    };
  }
  return {
    ...fate,
    durationsMs,
    failure: {
      stage,
      type: 'api_error',
      code: chosen,
      message: `${ERROR_CATALOGUE[chosen as ErrorCode].message.replace(/\.$/, '')} (the ${stage} stage, forced through the control API).`,
    },
    failureCostCents: failureCost(scenario, fate.priceCents, stage),
  };
}
