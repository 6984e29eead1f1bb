/**
 * A keyframe image (interface document, sections 2.2 and 4.5): what is stored of it, the image
 * object, and the still a video's keyframe stage makes. `POST /v1/images` is in `images.ts`.
 */
import { isoTime } from '../time/clock.js';
import type { Generation } from './generation.js';
import { mediaUrl } from './mediaPaths.js';
import { REQUEST_DEFAULTS } from '../../generated/request-defaults.js';

export type AspectRatio = '16:9' | '9:16' | '1:1';

/**
 * A stored image: what is read of it later (its file on the CDN, its use as `keyframe_id`). Its
 * model, price and creation time are in the answer that created it and nowhere else, since no
 * endpoint shows an image again.
 */
export interface Image {
  id: string;
  account: string;
  prompt: string;
  aspectRatio: AspectRatio;
  /** The store's bookkeeping: its slot in the order things resolved (-1: none, as for a keyframe generated for a video). */
  resolvedSlot: number;
}

/** The image object of section 2.2. */
export function imageView(image: Image, model: string, costCents: number, createdAt: number, cdnUrl: string) {
  return {
    id: image.id,
    object: 'image' as const,
    status: 'ready' as const,
    model,
    prompt: image.prompt,
    url: mediaUrl(cdnUrl, 'image', image.id),
    cost_cents: costCents,
    created_at: isoTime(createdAt),
  };
}

/** Section 4.5's default, as openapi.yaml gives it; a video's keyframe still has it too. */
export const DEFAULT_ASPECT_RATIO: AspectRatio = REQUEST_DEFAULTS.createImage.aspect_ratio;

/**
 * The still a video's keyframe stage generates: the image endpoint's generation step, so it
 * becomes an image of the account, reusable as `keyframe_id`. Its price is part of the video's.
 */
export function keyframeImage(g: Generation): Image {
  return {
    id: g.fate.keyframeImageId as string,
    account: g.account,
    prompt: g.request.prompt,
    aspectRatio: DEFAULT_ASPECT_RATIO,
    resolvedSlot: -1,
  };
}
