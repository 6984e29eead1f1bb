/**
 * The video endpoints (interface document, sections 4.1 to 4.4): create, retrieve, list, cancel.
 * Each takes the account's time of the request (its clock caught up once, by the request path).
 */
import type { Account } from '../accounts/account.js';
import { clip, fail } from '../errors.js';
import { drawFate, type ForcedOutcome } from './fate.js';
import { cancelView, newGeneration, videoView, type Generation, type VideoRequest, type VideoView } from './generation.js';
import * as lifecycle from './lifecycle.js';
import type { ServiceParts } from './lifecycle.js';
import { checkClaimLinking } from './claimLinking.js';
import type { VideoStatus } from './pipeline.js';
import type { Resolution } from '../scenario/scenario.js';
import { REQUEST_DEFAULTS } from '../../generated/request-defaults.js';

export interface CreateVideoInput {
  model: string;
  prompt: string;
  negative_prompt?: string | null;
  duration_seconds?: number | null;
  resolution?: Resolution | null;
  keyframe_id?: string | null;
}

export interface ListInput {
  limit?: number;
  after?: string | null;
  status?: VideoStatus | null;
}

/**
 * Section 4.1: a new generation, `queued`, once the model and the keyframe image (one of the
 * account's) exist, the balance covers its price, claim linking accepts it and the store has room
 * for it (`GenerationStore.makeRoom`: a 429 when it is full of generations still in flight).
 */
export function createVideo(parts: ServiceParts, account: Account, nowMs: number, input: CreateVideoInput, forced: ForcedOutcome | null): VideoView {
  const { scenario } = parts;
  const request: VideoRequest = {
    model: input.model,
    prompt: input.prompt,
    negative_prompt: input.negative_prompt ?? null,
    // Section 4.1's defaults, as openapi.yaml gives them.
    duration_seconds: input.duration_seconds ?? REQUEST_DEFAULTS.createVideo.duration_seconds,
    resolution: input.resolution ?? REQUEST_DEFAULTS.createVideo.resolution,
    keyframe_id: input.keyframe_id ?? null,
  };
  if (!scenario.models.video.includes(request.model)) {
    throw fail('model_not_found', {
      param: 'model',
      message: `Model '${clip(request.model)}' does not exist. Available models: ${scenario.models.video.join(', ')}.`,
    });
  }
  if (request.keyframe_id !== null && !parts.store.imagesOf(account.key).has(request.keyframe_id)) {
    throw fail('keyframe_not_found', {
      param: 'keyframe_id',
      message: `No keyframe image '${clip(request.keyframe_id)}' exists. Create one with POST /v1/images and pass its id.`,
    });
  }
  const index = account.videoDraws++;
  const fate = drawFate(
    scenario,
    { model: request.model, resolution: request.resolution, durationSeconds: request.duration_seconds, keyframeId: request.keyframe_id },
    account.streamFor('video', index),
    forced ?? undefined,
  );
  account.requireBalance(fate.priceCents);
  checkClaimLinking(scenario, parts.seed, account.key, [request.prompt, request.negative_prompt], forced);
  parts.store.makeRoom();
  const generation = newGeneration({
    fate,
    account: account.key,
    globalSeq: parts.store.takeSeq(),
    index,
    request,
    createdAt: nowMs,
    status: 'queued',
    stageIndex: 0,
    keyframeReady: false,
    routedModel: null,
    compliance: null,
    error: null,
    costCents: null,
    completedAt: null,
    changeSeq: 0,
    accountChangeSeq: 0,
  });
  parts.store.add(generation);
  account.reserve(fate.priceCents);
  lifecycle.start(parts, account, generation);
  return videoView(generation, parts.cdnUrl);
}

/** Section 4.2. */
export function getVideo(parts: ServiceParts, account: Account, id: string): VideoView {
  return videoView(ownGeneration(parts, account, id), parts.cdnUrl);
}

/** Section 4.4: the account's generations in creation order, `after` an id of its own; openapi.yaml gives the default page size. */
export function listVideos(parts: ServiceParts, account: Account, input: ListInput): { object: 'list'; data: VideoView[]; has_more: boolean } {
  const page = parts.store.page(account.key, input.after ?? null, input.limit ?? REQUEST_DEFAULTS.listVideos.limit, input.status ?? null);
  if (!page) {
    throw fail('invalid_parameter', {
      param: 'after',
      message: `'after' must be the id of one of your generations; '${clip(String(input.after))}' is not.`,
    });
  }
  return { object: 'list', data: page.data.map((g) => videoView(g, parts.cdnUrl)), has_more: page.hasMore };
}

/** Section 4.3: the cancel table, then no charge. */
export function cancelVideo(parts: ServiceParts, account: Account, nowMs: number, id: string): ReturnType<typeof cancelView> {
  const generation = ownGeneration(parts, account, id);
  lifecycle.cancel(parts, account, generation, nowMs);
  return cancelView(generation);
}

/**
 * Section 4.1: the request's negative prompt is merged with the account's default, not replacing
 * it. The simulator renders nothing, so the merged prompt shows in the journal only.
 */
export function effectiveNegativePrompt(accountDefault: string | null, requested: string | null): string | null {
  const parts = [accountDefault, requested].filter((p): p is string => p !== null && p.trim() !== '');
  return parts.length > 0 ? parts.join(', ') : null;
}

function ownGeneration(parts: ServiceParts, account: Account, id: string): Generation {
  const g = parts.store.ownedBy(account.key, id);
  if (!g) throw fail('resource_not_found', { param: 'id', message: `No video generation with id '${clip(id)}' exists.` });
  return g;
}
