/**
 * A generation's state machine: entering and leaving the pipeline's stages, failing, succeeding,
 * being canceled. What each stage does is read from the pipeline table (`pipeline.ts`): the status
 * it shows, the field it fills when it ends, whether it may be canceled. Where the generation is
 * stored, scheduled and charged is its account's business, reached through `LifecycleHost`.
 */
import type { Fate } from './fate.js';
import { failureError, type Generation } from './generation.js';
import { STAGE_BY_NAME, type FilledField } from './pipeline.js';
import type { ScheduledEntry } from './scheduler.js';

/** What the state machine needs from the account that holds the generation. */
export interface LifecycleHost {
  /** Schedules the end of the generation's current stage. */
  schedule(atMs: number, g: Generation): ScheduledEntry<Generation>;
  unschedule(entry: ScheduledEntry<Generation>): void;
  /** The keyframe stage generated a still: it becomes one of the account's images. */
  keyframeGenerated(g: Generation, atMs: number): void;
  /** The generation resolved: its reservation becomes `chargeCents` (0 when canceled). */
  settled(g: Generation, chargeCents: number): void;
  /** The generation was created or changed (a stage entered or left, resolved, canceled). */
  changed(g: Generation): void;
  /** The generation resolved and its change was told: it may now be evicted. */
  resolved(g: Generation): void;
}

/** How each field of the video object is filled when the stage that fills it ends. */
const FILL: Readonly<Record<FilledField, (g: Generation, host: LifecycleHost, atMs: number) => void>> = {
  keyframe(g, host, atMs) {
    g.keyframeReady = true;
    if (g.fate.keyframeMode === 'generated') host.keyframeGenerated(g, atMs);
  },
  routed_model(g) {
    g.routedModel = g.fate.routedModel;
  },
  compliance(g) {
    g.compliance = g.fate.compliance;
  },
};

/** A new generation enters its first timed stage. */
export function start(host: LifecycleHost, g: Generation): void {
  enterStage(host, g, 0, g.createdAt);
}

/** The current stage ends at `atMs`: fill its field, then fail, move on, or succeed. */
export function endStage(host: LifecycleHost, g: Generation, atMs: number): void {
  g.pending = null;
  const name = g.fate.stageNames[g.stageIndex];
  const stage = name === undefined ? undefined : STAGE_BY_NAME.get(name);
  if (name === undefined || stage === undefined) return;
  const failedHere = g.fate.failure?.stage === name;
  if (stage.fills !== null && (!failedHere || stage.fillsOnFailure)) FILL[stage.fills](g, host, atMs);
  if (failedHere) {
    g.error = failureError(g.fate);
    resolve(host, g, 'failed', g.fate.failureCostCents, atMs);
  } else if (g.stageIndex + 1 < g.fate.durationsMs.length) {
    enterStage(host, g, g.stageIndex + 1, atMs);
  } else {
    resolve(host, g, 'succeeded', g.fate.priceCents, atMs);
  }
}

/**
 * Ends the current stage at `atMs`, before its scheduled end (a control request): the stage's
 * duration becomes what it lasted, and it ends as a scheduled end would, through `endStage`.
 */
export function endStageNow(host: LifecycleHost, g: Generation, atMs: number): void {
  const entry = g.pending;
  if (entry === null) return;
  host.unschedule(entry);
  const durations = g.fate.durationsMs;
  durations[g.stageIndex] = (durations[g.stageIndex] ?? 0) - (entry.due - atMs);
  endStage(host, g, atMs);
}

/** Walks every remaining stage at `atMs`, to the end its fate holds. */
export function finishNow(host: LifecycleHost, g: Generation, atMs: number): void {
  while (g.pending !== null) endStageNow(host, g, atMs);
}

/**
 * Replaces the generation's fate with `failed` (one that fails at its current stage, from
 * `failedFate`) and ends the stage at `atMs`: it fails there as a drawn failure would.
 */
export function failNow(host: LifecycleHost, g: Generation, failed: Fate, atMs: number): void {
  g.fate = failed;
  endStageNow(host, g, atMs);
}

/** Cancels an in-flight generation (the caller has checked that its stage may be canceled). */
export function cancel(host: LifecycleHost, g: Generation, atMs: number): void {
  if (g.pending) host.unschedule(g.pending);
  g.pending = null;
  g.status = 'canceled';
  g.completedAt = atMs;
  host.settled(g, 0);
  host.changed(g);
  host.resolved(g);
}

function enterStage(host: LifecycleHost, g: Generation, stageIndex: number, atMs: number): void {
  const name = g.fate.stageNames[stageIndex];
  const durationMs = g.fate.durationsMs[stageIndex];
  if (name === undefined || durationMs === undefined) return;
  g.stageIndex = stageIndex;
  g.status = STAGE_BY_NAME.get(name)?.status ?? g.status;
  g.pending = host.schedule(atMs + durationMs, g);
  host.changed(g);
}

function resolve(host: LifecycleHost, g: Generation, status: 'succeeded' | 'failed', chargeCents: number, atMs: number): void {
  g.status = status;
  g.costCents = chargeCents;
  g.completedAt = atMs;
  host.settled(g, chargeCents);
  host.changed(g);
  host.resolved(g);
}
