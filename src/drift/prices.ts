/**
 * The worst-case list price of the paid probes, from the bundled `default` scenario's pricing
 * (5 cents per output second at 720p, 2 cents per keyframe): a probe video is 4 s at 720p, 20
 * cents, plus 2 for a keyframe if one is generated; an image is one keyframe. Override with
 * `--video-price-cents` and `--image-price-cents` when the service's prices are known to differ.
 */
export const DEFAULT_PRICES = { videoCents: 22, imageCents: 2 } as const;
export type Prices = { videoCents: number; imageCents: number };
