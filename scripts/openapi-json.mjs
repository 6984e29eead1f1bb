// Build step: writes openapi.yaml as dist/openapi.json, which the simulator loads at start-up
// (JSON parses several times faster than YAML). src/openapi.ts falls back to the YAML when the
// JSON is missing or older than the YAML.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

const doc = parse(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8'));
mkdirSync(new URL('../dist/', import.meta.url), { recursive: true });
writeFileSync(new URL('../dist/openapi.json', import.meta.url), JSON.stringify(doc));
