// Writes a generated source file, only when its text changed (so that an unchanged openapi.yaml
// leaves the file's time alone and tsc and vitest see nothing new).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

export function writeGenerated(target, text) {
  mkdirSync(new URL('./', target), { recursive: true });
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // first build
  }
  if (current !== text) writeFileSync(target, text);
}
