/**
 * Creating a keyframe image (interface document, section 4.5): `POST /v1/images`. What an image
 * is, and the same still made by a video's keyframe stage, are in `image.ts`.
 */
import type { Account } from '../accounts/account.js';
import { checkClaimLinking } from './claimLinking.js';
import type { ForcedOutcome } from './fate.js';
import { DEFAULT_ASPECT_RATIO, imageView, type AspectRatio, type Image } from './image.js';
import type { ServiceParts } from './lifecycle.js';

export interface CreateImageInput {
  prompt: string;
  aspect_ratio?: AspectRatio | null;
}

/**
 * Section 4.5: an image, made at once with the keyframe model and charged when made, once the
 * balance covers its price, claim linking accepts it and the store has room for it.
 */
export function createImage(parts: ServiceParts, account: Account, nowMs: number, input: CreateImageInput, forced: ForcedOutcome | null): ReturnType<typeof imageView> {
  const rng = account.streamFor('image', account.imageDraws++);
  const image: Image = {
    id: rng.token(24, 'img_'),
    account: account.key,
    prompt: input.prompt,
    aspectRatio: input.aspect_ratio ?? DEFAULT_ASPECT_RATIO,
    resolvedSlot: -1,
  };
  const costCents = parts.scenario.pricing.keyframe_cents;
  account.requireBalance(costCents);
  checkClaimLinking(parts.scenario, parts.seed, account.key, [input.prompt], forced);
  parts.store.makeRoom();
  parts.store.addImage(image);
  account.charge(costCents);
  return imageView(image, parts.scenario.models.keyframe, costCents, nowMs, parts.cdnUrl);
}
