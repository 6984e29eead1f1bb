/**
 * A generation's state machine: entering and leaving the pipeline's stages, failing, succeeding,
 * being canceled. What each stage does is read from the pipeline table (`pipeline.ts`): the status
 * it shows, the field it fills when it ends, whether it may be canceled. Each transition schedules
 * on and charges the generation's account, and tells the store (`generationStore.ts`) of the change.
 */
import type { Account } from '../accounts/account.js';
import { fail, type SimError } from '../errors.js';
import type { Fate } from './fate.js';
import { failureError, type Generation } from './generation.js';
import { keyframeImage } from './image.js';
import { CANCELABLE_STATUSES, RESOLVED_STATUSES, STAGE_BY_NAME, inWords, type FilledField } from './pipeline.js';
import type { Scenario } from '../scenario/scenario.js';
import type { GenerationStore } from './generationStore.js';

/** What a transition works on besides the generation and its account. */
export interface PipelineParts {
  readonly store: GenerationStore;
}

/** What the service's operations (`videos.ts`, `images.ts`) read and change. */
export interface ServiceParts extends PipelineParts {
  readonly scenario: Scenario;
  readonly seed: number;
  /** The address written into `output.url`, `thumbnail_url` and image `url`. */
  readonly cdnUrl: string;
}

/** How each field of the video object is filled when the stage that fills it ends. */
const FILL: Readonly<Record<FilledField, (parts: PipelineParts, g: Generation, atMs: number) => void>> = {
  keyframe(parts, g) {
    g.keyframeReady = true;
    if (g.fate.keyframeMode === 'generated') parts.store.addKeyframe(keyframeImage(g));
  },
  routed_model(_parts, g) {
    g.routedModel = g.fate.routedModel;
  },
  compliance(_parts, g) {
    g.compliance = g.fate.compliance;
  },
};

/** A new generation enters its first timed stage. */
export function start(parts: PipelineParts, account: Account, g: Generation): void {
  enterStage(parts, account, g, 0, g.createdAt);
}

/** The current stage ends at `atMs`: fill its field, then fail, move on, or succeed. */
export function endStage(parts: PipelineParts, account: Account, g: Generation, atMs: number): void {
  g.pending = null;
  const name = g.fate.stageNames[g.stageIndex];
  const stage = name === undefined ? undefined : STAGE_BY_NAME.get(name);
  if (name === undefined || stage === undefined) return;
  const failedHere = g.fate.failure?.stage === name;
  if (stage.fills !== null && (!failedHere || stage.fillsOnFailure)) FILL[stage.fills](parts, g, atMs);
  if (failedHere) {
    g.error = failureError(g.fate);
    resolve(parts, account, g, 'failed', g.fate.failureCostCents, atMs);
  } else if (g.stageIndex + 1 < g.fate.durationsMs.length) {
    enterStage(parts, account, g, g.stageIndex + 1, atMs);
  } else {
    resolve(parts, account, g, 'succeeded', g.fate.priceCents, atMs);
  }
}

/**
 * Ends the current stage at `atMs`, before its scheduled end (a control request): the stage's
 * duration becomes what it lasted, and it ends as a scheduled end would, through `endStage`.
 */
export function endStageNow(parts: PipelineParts, account: Account, g: Generation, atMs: number): void {
  const entry = g.pending;
  if (entry === null) return;
  account.scheduler.cancel(entry);
  // A fate is replaced, never changed (a snapshot keeps a reference to it).
  const durationsMs = g.fate.durationsMs.slice();
  durationsMs[g.stageIndex] = (durationsMs[g.stageIndex] ?? 0) - (entry.due - atMs);
  g.fate = { ...g.fate, durationsMs };
  endStage(parts, account, g, atMs);
}

/** Walks every remaining stage at `atMs`, to the end its fate holds. */
export function finishNow(parts: PipelineParts, account: Account, g: Generation, atMs: number): void {
  while (g.pending !== null) endStageNow(parts, account, g, atMs);
}

/**
 * Replaces the generation's fate with `failed` (one that fails at its current stage, from
 * `failedFate`) and ends the stage at `atMs`: it fails there as a drawn failure would.
 */
export function failNow(parts: PipelineParts, account: Account, g: Generation, failed: Fate, atMs: number): void {
  g.fate = failed;
  endStageNow(parts, account, g, atMs);
}

/**
 * Why a generation cannot be canceled (section 4.3), as the 400 to answer; undefined when it can.
 * The cancelable statuses are those of the pipeline's cancelable stages.
 */
function notCancelable(g: Generation): SimError | undefined {
  if (CANCELABLE_STATUSES.has(g.status)) return undefined;
  const stage = g.fate.stageNames[g.stageIndex];
  const why = RESOLVED_STATUSES.has(g.status)
    ? `it has already resolved as '${g.status}'`
    : ((stage && STAGE_BY_NAME.get(stage)?.notCancelableBecause) ?? 'its stage cannot be canceled');
  return fail('not_cancelable', {
    message: `Generation ${g.fate.id} is '${g.status}' and cannot be canceled: ${why}. Only ${CANCELABLE_IN_WORDS} generations can be canceled.`,
  });
}

const CANCELABLE_IN_WORDS = inWords(CANCELABLE_STATUSES, 'and');

/** Cancels a generation that can still be canceled (else throws the 400 `not_cancelable`): it is not charged. */
export function cancel(parts: PipelineParts, account: Account, g: Generation, atMs: number): void {
  const refused = notCancelable(g);
  if (refused) throw refused;
  if (g.pending) account.scheduler.cancel(g.pending);
  g.pending = null;
  g.status = 'canceled';
  g.completedAt = atMs;
  account.settle(g.fate.priceCents, 0);
  parts.store.recordChange(g);
  parts.store.recordResolved(g);
}

/** When an in-flight generation's current stage ends: its stages follow each other without gaps from its creation. */
export function currentStageEnd(g: Generation): number {
  let end = g.createdAt;
  for (let i = 0; i <= g.stageIndex; i++) end += g.fate.durationsMs[i] ?? 0;
  return end;
}

/** Schedules the end of an in-flight generation's current stage again (its account restored from a snapshot). */
export function scheduleAgain(account: Account, g: Generation): void {
  g.pending = account.scheduler.schedule(currentStageEnd(g), g);
}

function enterStage(parts: PipelineParts, account: Account, g: Generation, stageIndex: number, atMs: number): void {
  const name = g.fate.stageNames[stageIndex];
  const durationMs = g.fate.durationsMs[stageIndex];
  if (name === undefined || durationMs === undefined) return;
  g.stageIndex = stageIndex;
  g.status = STAGE_BY_NAME.get(name)?.status ?? g.status;
  g.pending = account.scheduler.schedule(atMs + durationMs, g);
  parts.store.recordChange(g);
}

function resolve(parts: PipelineParts, account: Account, g: Generation, status: 'succeeded' | 'failed', chargeCents: number, atMs: number): void {
  g.status = status;
  g.costCents = chargeCents;
  g.completedAt = atMs;
  account.settle(g.fate.priceCents, chargeCents);
  parts.store.recordChange(g);
  parts.store.recordResolved(g);
}
