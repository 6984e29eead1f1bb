/**
 * A video generation's state and its public views (interface document 2.1 and 4.3).
 */
import { isoTime } from '../time/clock.js';
import { errorObject, type ErrorObject } from '../errors.js';
import { COMPLIANCE_PASSED, stagesFor, type Compliance, type Fate, type KeyframeMode, type PlannedFailure } from './fate.js';
import { mediaUrl } from './mediaPaths.js';
import type { PipelineStageName, VideoStatus } from './pipeline.js';
import type { Resolution } from '../scenario/scenario.js';
import type { ScheduledEntry } from '../time/scheduler.js';

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
  /** Drawn at creation; a control request that forces a transition replaces it (never changes it: see lifecycle.ts). */
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
  /** The same, counted within its account (the cursor of a control list of one account). */
  accountChangeSeq: number;
  /** The scheduled end of the current stage, while in flight. */
  pending: ScheduledEntry<Generation> | null;
  /** The store's bookkeeping: its slot in each of the store's lists (-1: in none). */
  listSlot: number;
  orderSlot: number;
  changeSlot: number;
  accountChangeSlot: number;
  resolvedSlot: number;
}

/** What a generation is made of; the rest starts alike for every one (`newGeneration`). */
export type GenerationFields = Omit<Generation, 'evicted' | 'pending' | 'listSlot' | 'orderSlot' | 'changeSlot' | 'accountChangeSlot' | 'resolvedSlot'>;

/**
 * A generation of `f`, created or restored: not evicted, nothing scheduled (the lifecycle
 * schedules its stage), in none of the store's lists (the store adds it). Every field is written
 * out in one literal, in one order: a generation is kept as long as it is stored, and an object
 * made by spreading another has no fixed shape (V8 keeps its properties in a dictionary, which
 * doubled a stored generation's memory and made every pass over them several times slower).
 */
export function newGeneration(f: GenerationFields): Generation {
  return {
    fate: f.fate,
    account: f.account,
    globalSeq: f.globalSeq,
    index: f.index,
    request: f.request,
    createdAt: f.createdAt,
    status: f.status,
    stageIndex: f.stageIndex,
    keyframeReady: f.keyframeReady,
    routedModel: f.routedModel,
    compliance: f.compliance,
    error: f.error,
    costCents: f.costCents,
    completedAt: f.completedAt,
    evicted: false,
    changeSeq: f.changeSeq,
    accountChangeSeq: f.accountChangeSeq,
    pending: null,
    listSlot: -1,
    orderSlot: -1,
    changeSlot: -1,
    accountChangeSlot: -1,
    resolvedSlot: -1,
  };
}

/**
 * A stored generation as plain data (a snapshot), with what follows from the rest left out: its
 * scheduled transition (its account schedules it again from `stage` and the fate's durations), its
 * stage list (from the keyframe mode), its error (a generation fails only as its fate says), the
 * routed model and compliance report it shows (the fate's, once shown), and null fields.
 */
export interface GenerationState {
  id: string;
  account: string;
  seq: number;
  index: number;
  /** The request, without its null fields. */
  request: Partial<VideoRequest> & Pick<VideoRequest, 'model' | 'prompt' | 'duration_seconds' | 'resolution'>;
  created_at: number;
  status: VideoStatus;
  stage: number;
  keyframe_ready?: true;
  routed_model_shown?: true;
  compliance_shown?: true;
  cost_cents?: number;
  completed_at?: number;
  change: number;
  /** The account's change number of its latest change (absent in snapshots written before it was kept). */
  account_change?: number;
  fate: {
    keyframe_mode: KeyframeMode;
    keyframe_image_id?: string;
    routed_model: string;
    durations_ms: number[];
    failure?: PlannedFailure;
    /** Left out when verification passed with no flag. */
    compliance?: Compliance;
    price_cents: number;
    failure_cost_cents?: number;
  };
}

export function generationToState(g: Generation): GenerationState {
  const { fate } = g;
  const request: GenerationState['request'] = { model: g.request.model, prompt: g.request.prompt, duration_seconds: g.request.duration_seconds, resolution: g.request.resolution };
  if (g.request.negative_prompt !== null) request.negative_prompt = g.request.negative_prompt;
  if (g.request.keyframe_id !== null) request.keyframe_id = g.request.keyframe_id;
  const state: GenerationState = {
    id: fate.id,
    account: g.account,
    seq: g.globalSeq,
    index: g.index,
    request,
    created_at: g.createdAt,
    status: g.status,
    stage: g.stageIndex,
    change: g.changeSeq,
    account_change: g.accountChangeSeq,
    fate: { keyframe_mode: fate.keyframeMode, routed_model: fate.routedModel, durations_ms: fate.durationsMs, price_cents: fate.priceCents },
  };
  if (g.keyframeReady) state.keyframe_ready = true;
  if (g.routedModel !== null) state.routed_model_shown = true;
  if (g.compliance !== null) state.compliance_shown = true;
  if (g.costCents !== null) state.cost_cents = g.costCents;
  if (g.completedAt !== null) state.completed_at = g.completedAt;
  if (fate.keyframeImageId !== null) state.fate.keyframe_image_id = fate.keyframeImageId;
  if (fate.failure !== null) state.fate.failure = fate.failure;
  if (!fate.compliance.verified || fate.compliance.flags.length > 0) state.fate.compliance = fate.compliance;
  if (fate.failureCostCents !== 0) state.fate.failure_cost_cents = fate.failureCostCents;
  return state;
}

/** The generation a state of `generationToState` describes, with nothing scheduled yet. */
export function generationFromState(s: GenerationState): Generation {
  const f = s.fate;
  const fate: Fate = {
    id: s.id,
    keyframeMode: f.keyframe_mode,
    keyframeImageId: f.keyframe_image_id ?? null,
    routedModel: f.routed_model,
    stageNames: stagesFor(f.keyframe_mode),
    durationsMs: f.durations_ms,
    failure: f.failure ?? null,
    compliance: f.compliance ?? COMPLIANCE_PASSED,
    priceCents: f.price_cents,
    failureCostCents: f.failure_cost_cents ?? 0,
  };
  return newGeneration({
    fate,
    account: s.account,
    globalSeq: s.seq,
    index: s.index,
    request: {
      model: s.request.model,
      prompt: s.request.prompt,
      negative_prompt: s.request.negative_prompt ?? null,
      duration_seconds: s.request.duration_seconds,
      resolution: s.request.resolution,
      keyframe_id: s.request.keyframe_id ?? null,
    },
    createdAt: s.created_at,
    status: s.status,
    stageIndex: s.stage,
    keyframeReady: s.keyframe_ready === true,
    // Shown fields are the fate's (one object, as when they were filled).
    routedModel: s.routed_model_shown ? fate.routedModel : null,
    compliance: s.compliance_shown ? fate.compliance : null,
    error: s.status === 'failed' ? failureError(fate) : null,
    costCents: s.cost_cents ?? null,
    completedAt: s.completed_at ?? null,
    changeSeq: s.change,
    accountChangeSeq: s.account_change ?? 0,
  });
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
        ? { url: mediaUrl(cdnUrl, 'video', g.fate.id), thumbnail_url: mediaUrl(cdnUrl, 'thumbnail', g.fate.id) }
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
function stageVisits(g: Generation): StageVisit[] {
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
