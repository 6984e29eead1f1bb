/**
 * A video generation's state and its public views (interface document 2.1 and 4.3).
 */
import { isoTime } from './clock.js';
import { errorObject, type ErrorObject, type PipelineStageName } from './errors.js';
import type { Compliance, Fate } from './fate.js';
import type { VideoStatus } from './pipeline.js';
import type { Resolution } from './scenario.js';
import type { ScheduledEntry } from './scheduler.js';

export interface VideoRequest {
  model: string;
  prompt: string;
  negative_prompt: string | null;
  duration_seconds: number;
  resolution: Resolution;
  keyframe_id: string | null;
}

export interface StageVisit {
  stage: PipelineStageName;
  enteredAt: number;
  leftAt: number | null;
}

export interface Generation {
  /** Drawn at creation; a control request that forces a transition rewrites it (see lifecycle.ts). */
  fate: Fate;
  readonly account: string;
  /** Creation order across all accounts (for the control API). */
  readonly globalSeq: number;
  /** Creation order within the account. */
  readonly index: number;
  readonly request: VideoRequest;
  readonly createdAt: number;
  status: VideoStatus;
  /** Index into fate.stageNames of the current (or, once resolved, the last) stage. */
  stageIndex: number;
  /** Set at the end of the keyframe stage: the `keyframe` field shows fate.keyframeImageId. */
  keyframeReady: boolean;
  routedModel: string | null;
  compliance: Compliance | null;
  error: ErrorObject | null;
  costCents: number | null;
  completedAt: number | null;
  evicted: boolean;
  /** The store's change sequence number of this generation's latest change. */
  changeSeq: number;
  /** The scheduled end of the current stage, while in flight. */
  pending: ScheduledEntry<Generation> | null;
}

/** The video object of section 2.1. */
export interface VideoView {
  id: string;
  object: 'video';
  status: VideoStatus;
  model: string;
  prompt: string;
  negative_prompt: string | null;
  duration_seconds: number;
  resolution: Resolution;
  routed_model: string | null;
  keyframe: { id: string; status: 'ready' } | null;
  compliance: Compliance | null;
  output: { url: string; thumbnail_url: string } | null;
  error: ErrorObject | null;
  cost_cents: number | null;
  created_at: string;
  completed_at: string | null;
}

export function videoView(g: Generation, cdnUrl: string): VideoView {
  return {
    id: g.fate.id,
    object: 'video',
    status: g.status,
    model: g.request.model,
    prompt: g.request.prompt,
    negative_prompt: g.request.negative_prompt,
    duration_seconds: g.request.duration_seconds,
    resolution: g.request.resolution,
    routed_model: g.routedModel,
    keyframe: g.keyframeReady && g.fate.keyframeImageId ? { id: g.fate.keyframeImageId, status: 'ready' } : null,
    compliance: g.compliance ? { verified: g.compliance.verified, flags: g.compliance.flags.map((f) => ({ ...f })) } : null,
    output:
      g.status === 'succeeded'
        ? { url: `${cdnUrl}/videos/${g.fate.id}.mp4`, thumbnail_url: `${cdnUrl}/thumbnails/${g.fate.id}.png` }
        : null,
    error: g.error ? { ...g.error } : null,
    cost_cents: g.costCents,
    created_at: isoTime(g.createdAt),
    completed_at: g.completedAt === null ? null : isoTime(g.completedAt),
  };
}

/** The cancel response: exactly the five fields of section 4.3. */
export function cancelView(g: Generation): {
  id: string;
  object: 'video';
  status: 'canceled';
  created_at: string;
  completed_at: string;
} {
  return {
    id: g.fate.id,
    object: 'video',
    status: 'canceled',
    created_at: isoTime(g.createdAt),
    completed_at: isoTime(g.completedAt as number),
  };
}

/** The control API's view: the video object plus its account and stage history. */
export function controlView(g: Generation, cdnUrl: string) {
  return {
    ...videoView(g, cdnUrl),
    account: g.account,
    stages: stageVisits(g).map((v) => ({
      stage: v.stage,
      entered_at: isoTime(v.enteredAt),
      left_at: v.leftAt === null ? null : isoTime(v.leftAt),
    })),
  };
}

/**
 * The stage history, derived from the fate (stages follow each other without gaps): claim linking
 * at creation, then every stage up to the current one, which is still open unless resolved.
 */
export function stageVisits(g: Generation): StageVisit[] {
  const visits: StageVisit[] = [{ stage: 'claim_linking', enteredAt: g.createdAt, leftAt: g.createdAt }];
  let t = g.createdAt;
  for (let i = 0; i <= g.stageIndex; i++) {
    const stage = g.fate.stageNames[i];
    if (stage === undefined) break;
    if (i < g.stageIndex) {
      const left = t + (g.fate.durationsMs[i] as number);
      visits.push({ stage, enteredAt: t, leftAt: left });
      t = left;
    } else {
      visits.push({ stage, enteredAt: t, leftAt: g.completedAt });
    }
  }
  return visits;
}

export function failureError(fate: Fate): ErrorObject | null {
  const f = fate.failure;
  if (!f) return null;
  return errorObject(f.type, f.code, f.message, f.type === 'compliance_error' ? { stage: f.stage } : {});
}
