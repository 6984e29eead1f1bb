// Build step (after tsc): every bundled scenario, `extends` resolved and checked, into one JSON file,
// dist/scenarios/bundled.json, so that starting the simulator with a bundled scenario reads one
// small JSON file instead of loading the YAML parser and parsing and validating the files.
// src/scenarios/load.ts falls back to the YAML files when this file is missing or older than them.
import { rmSync, writeFileSync } from 'node:fs';
import { listBundledScenarios, loadScenario } from '../dist/scenarios/load.js';

// Resolved from the YAML files, never from an earlier build's file (load.ts would take it, and the
// bundled scenarios a file extends, from there while no YAML file is newer).
rmSync(new URL('../dist/scenarios/bundled.json', import.meta.url), { force: true });
const bundled = Object.fromEntries(listBundledScenarios().map(({ name }) => [name, loadScenario(name)]));
writeFileSync(new URL('../dist/scenarios/bundled.json', import.meta.url), JSON.stringify(bundled));
