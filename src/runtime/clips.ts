/**
 * The committed H.264 clips a video's file is made from, in Node read from `assets/` (from `src/`
 * under vitest and from `dist/` after the build alike). A browser bundle takes `clips.browser.ts`
 * in its place, which loads each clip as a chunk of its own when it is first needed.
 */
import { readFile } from 'node:fs/promises';

const CLIP_NAMES = { '720p': 'clip-720p.mp4', '1080p': 'clip-1080p.mp4' } as const;
export type ClipResolution = keyof typeof CLIP_NAMES;

const ASSETS_DIR = new URL('../../assets/', import.meta.url);

/** The bytes of a resolution's clip. */
export async function clipBytes(resolution: ClipResolution): Promise<Uint8Array> {
  return readFile(new URL(CLIP_NAMES[resolution], ASSETS_DIR));
}
