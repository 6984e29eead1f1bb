/**
 * `clips.ts` for a browser page (see there): each clip is a module of its own, written by the
 * build (`scripts/build-msw.mjs`), that the bundle imports only when a video's file is first asked
 * for, so a page that never plays a video never loads one.
 */
export const CLIP_NAMES = { '720p': 'clip-720p.mp4', '1080p': 'clip-1080p.mp4' } as const;
export type ClipResolution = keyof typeof CLIP_NAMES;

export async function clipBytes(resolution: ClipResolution): Promise<Uint8Array> {
  const { base64 } = (resolution === '720p' ? await import('video-service-sim-clips/720p') : await import('video-service-sim-clips/1080p')) as { base64: string };
  return Buffer.from(base64, 'base64');
}
