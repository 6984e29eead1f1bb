/**
 * What reading a scenario file needs and a start with a bundled scenario does not: the YAML parser,
 * and a cache of the files already read and found valid.
 *
 * The command line's and the library's bundles (scripts/build-node.mjs) carry a build id. With
 * one, the parser is the bundle's one-file copy of the `yaml` package (`dist/bundle/yaml.cjs`: a
 * module instead of some sixty), and a file's text that was parsed and checked without a problem
 * is kept with the value it parsed to, in a folder of the user's own under the system's temporary
 * folder, named by a hash of the text and the build id: the next start with the same text (the
 * entry's text is compared whole) takes the value from there, and loads neither the parser nor the
 * schema's validator. The value is a function of the text and the build alone, so nothing else can
 * make it stale: the path, the files it extends (each read and checked in turn, or taken from the
 * build's resolved bundled scenarios) and the range rules over the merged scenario are never taken
 * from the cache. A text with a problem is never kept. `NODE_DISABLE_COMPILE_CACHE=1`, Node's switch
 * for its own compile cache, turns this one off too. Without a build id (tsc's output, the sources
 * under test) there is no cache, and the parser is the `yaml` package.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { ScenarioFile } from '../core/scenario/scenario.js';
import { fnv1a32 } from '../core/hash.js';
import type { Yaml } from './resolve.js';

/** Written in by scripts/build-node.mjs: a hash of what the bundle was built from. */
declare const __SIM_BUNDLE_ID__: string | undefined;

const BUNDLE_ID: string | undefined = typeof __SIM_BUNDLE_ID__ === 'string' ? __SIM_BUNDLE_ID__ : undefined;

/** The most files the cache keeps: past it, the least recently used go. */
const MAX_CACHED_FILES = 64;

let yaml: Yaml | undefined;

/** The YAML parser, loaded on first use. */
export function yamlParser(): Yaml {
  return (yaml ??= createRequire(import.meta.url)(BUNDLE_ID === undefined ? 'yaml' : '../bundle/yaml.cjs') as Yaml);
}

/** The cache's folder: undefined until looked for, null when there is none (or it cannot be trusted). */
let folder: string | null | undefined;

function cacheFolder(): string | undefined {
  if (folder === undefined) {
    folder = null;
    if (BUNDLE_ID !== undefined && process.env.NODE_DISABLE_COMPILE_CACHE !== '1') {
      try {
        const uid = process.getuid?.();
        const dir = join(tmpdir(), `video-service-sim-scenarios${uid === undefined ? '' : `-${uid}`}`);
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        // Another user's folder, or one others may write to, is not read.
        const { uid: owner, mode } = statSync(dir);
        if (uid === undefined || (owner === uid && (mode & 0o022) === 0)) folder = dir;
      } catch {
        // No cache: the file is read as it always was.
      }
    }
  }
  return folder ?? undefined;
}

/**
 * The entry's file name: a hash of the build id and the text. Two texts of one name only take each
 * other's place: an entry holds its text, and is taken only for that text.
 */
function entryName(text: string): string {
  return `${fnv1a32(`${BUNDLE_ID}\0${text}`).toString(16).padStart(8, '0')}.json`;
}

/** What an entry holds: the text, and the value it parsed to. */
interface Entry {
  text: string;
  file: ScenarioFile;
}

/** The value a valid file of this text parsed to, from the cache; undefined when it has none. */
export function cachedScenarioFile(text: string): ScenarioFile | undefined {
  const dir = cacheFolder();
  if (dir === undefined) return undefined;
  const path = join(dir, entryName(text));
  try {
    const entry = JSON.parse(readFileSync(path, 'utf8')) as Partial<Entry> | null;
    const file = entry?.file;
    if (entry?.text !== text || typeof file !== 'object' || file === null || Array.isArray(file)) return undefined;
    const now = new Date();
    utimesSync(path, now, now);
    return file;
  } catch {
    return undefined;
  }
}

/**
 * Keeps the value a file of this text parsed to, which the schema found no problem with. A value
 * JSON would not give back as it is (a YAML `.inf`, a `-0`) is not kept.
 */
export function keepScenarioFile(text: string, file: ScenarioFile): void {
  const dir = cacheFolder();
  if (dir === undefined) return;
  try {
    const json = JSON.stringify({ text, file } satisfies Entry);
    if (!isDeepStrictEqual((JSON.parse(json) as Entry).file, file)) return;
    const path = join(dir, entryName(text));
    const written = `${path}.${process.pid}.tmp`;
    writeFileSync(written, json, { mode: 0o600 });
    renameSync(written, path);
    // A write cut short (its `.tmp` file) is among the oldest in time and goes too.
    const entries = readdirSync(dir);
    if (entries.length > MAX_CACHED_FILES) {
      const byAge = entries.map((name) => ({ name, at: statSync(join(dir, name)).mtimeMs })).sort((x, y) => x.at - y.at);
      for (const { name } of byAge.slice(0, entries.length - MAX_CACHED_FILES)) rmSync(join(dir, name), { force: true });
    }
  } catch {
    // Not kept: the next start reads the file again.
  }
}
