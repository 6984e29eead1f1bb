/**
 * Scenario files: the bundled ones, `extends`, validation messages, and the promises of `default`
 * and `fast`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

import type { Distribution } from '../src/core/scenario/distribution.js';
import { BASE_SCENARIO, PROCESSING_STAGES, type Scenario } from '../src/core/scenario/scenario.js';
import {
  BUNDLED_SCENARIOS_DIR,
  ScenarioError,
  listBundledScenarios,
  loadScenario,
  validateScenarioFile,
} from '../src/scenarios/load.js';
import { ALIAS_BOMB, advance, bearer, expectError, makeSim } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-scenarios-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
/** Writes a YAML file into the temp folder and returns its absolute path. */
function yamlFile(text: string, name = `s${++counter}.yaml`): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The ScenarioError that loading `path` throws. */
function loadError(path: string): ScenarioError {
  try {
    loadScenario(path);
  } catch (e) {
    if (e instanceof ScenarioError) return e;
    throw e;
  }
  throw new Error(`expected ${path} to be refused`);
}

function upper(d: Distribution): number {
  switch (d.type) {
    case 'fixed':
      return d.value;
    case 'uniform':
      return d.max;
    case 'lognormal':
      return d.max ?? Infinity;
  }
}

/** The longest a generation can take in a scenario (every stage at its maximum, 16 s of output). */
function longestResolutionSeconds(s: Scenario): number {
  return PROCESSING_STAGES.reduce((sum, stage) => {
    const spec = s.stages[stage];
    return sum + upper(spec.duration) * (spec.per_output_second ? 16 : 1);
  }, 0);
}

// ---------------------------------------------------------------------------------------------

describe('bundled scenarios', () => {
  const bundled = listBundledScenarios();

  it('are what the build resolved into dist/scenarios/bundled.json, which starts read instead of the YAML', () => {
    const built = JSON.parse(readFileSync(new URL('../dist/scenarios/bundled.json', import.meta.url), 'utf8')) as Record<string, Scenario>;
    expect(Object.keys(built)).toEqual(bundled.map((s) => s.name));
    for (const { name } of bundled) expect(built[name], name).toEqual(loadScenario(name));
  });

  it('include default and fast', () => {
    expect(bundled.map((s) => s.name)).toEqual(expect.arrayContaining(['default', 'fast']));
  });

  for (const { name, purpose } of bundled) {
    it(`'${name}' loads and resolves to a scenario named '${name}'`, () => {
      const scenario = loadScenario(name);
      expect(scenario.name).toBe(name);
      expect(scenario.models.video.length).toBeGreaterThan(0);
      expect(validateScenarioFile(resolve(BUNDLED_SCENARIOS_DIR, `${name}.yaml`))).toEqual([]);
    });

    it(`'${name}' starts with a '# ${name}: purpose' comment, which is its listed purpose`, () => {
      const firstLine = readFileSync(resolve(BUNDLED_SCENARIOS_DIR, `${name}.yaml`), 'utf8').split('\n')[0] ?? '';
      expect(firstLine.startsWith(`# ${name}: `)).toBe(true);
      const text = firstLine.slice(`# ${name}: `.length);
      expect(text.trim().length).toBeGreaterThan(10);
      expect(purpose).toBe(text);
    });
  }
});

// ---------------------------------------------------------------------------------------------

describe('extends', () => {
  it("changes only the stage a child names and keeps the parent's other stages and settings", () => {
    const fast = loadScenario('fast');
    const path = yamlFile('extends: fast\nstages:\n  queue:\n    duration: { type: fixed, value: 3 }\n', 'slower-queue.yaml');
    const child = loadScenario(path);
    expect(child.stages.queue.duration).toEqual({ type: 'fixed', value: 3 });
    for (const stage of PROCESSING_STAGES) {
      if (stage !== 'queue') expect(child.stages[stage]).toEqual(fast.stages[stage]);
    }
    expect(child.rate_limits).toEqual(fast.rate_limits);
    expect(child.models).toEqual(fast.models);
    expect(child.seed).toBe(fast.seed);
    // A file without a name is named after itself.
    expect(child.name).toBe('slower-queue');
  });

  it('follows a chain of files, relative paths resolved from the extending file', () => {
    const parent = yamlFile('extends: fast\nname: parent\nseed: 5\n', 'chain-parent.yaml');
    const child = yamlFile('extends: ./chain-parent.yaml\nname: child\nrate_limits:\n  capacity: 7\n', 'chain-child.yaml');
    expect(loadScenario(parent).seed).toBe(5);
    const loaded = loadScenario(child);
    expect(loaded.name).toBe('child');
    expect(loaded.seed).toBe(5);
    expect(loaded.rate_limits).toEqual({ capacity: 7, refill_per_second: loadScenario('fast').rate_limits.refill_per_second });
    expect(loaded.stages).toEqual(loadScenario('fast').stages);
  });

  it('refuses a cycle, naming extends', () => {
    const a = yamlFile('extends: ./cycle-b.yaml\n', 'cycle-a.yaml');
    yamlFile('extends: ./cycle-a.yaml\n', 'cycle-b.yaml');
    const error = loadError(a);
    expect(error.problems.join('\n')).toMatch(/extends: .*cycle/);
  });

  it('refuses extending a bundled scenario that does not exist', () => {
    const error = loadError(yamlFile('extends: no-such-scenario\n'));
    expect(error.message).toContain('no-such-scenario');
  });
});

// ---------------------------------------------------------------------------------------------

describe('scenario validation', () => {
  it('names the file, the field path and what was expected', () => {
    const path = yamlFile('extends: fast\nstages:\n  render:\n    duration: { type: exponential, mean: 2 }\nrate_limits:\n  capacity: many\n');
    const error = loadError(path);
    expect(error.file).toBe(path);
    expect(error.message).toContain(path);
    const render = error.problems.find((p) => p.startsWith('stages.render.duration.type:'));
    expect(render, error.message).toBeDefined();
    expect(render).toMatch(/expected .*fixed.*uniform.*lognormal/);
    const capacity = error.problems.find((p) => p.startsWith('rate_limits.capacity:'));
    expect(capacity, error.message).toBeDefined();
    expect(capacity).toMatch(/expected integer/);
  });

  it('says what a field of the wrong type got', () => {
    const error = loadError(yamlFile('extends: fast\nrate_limits:\n  capacity: many\nseed: abc\n'));
    const capacity = error.problems.find((p) => p.startsWith('rate_limits.capacity:')) ?? '';
    const seed = error.problems.find((p) => p.startsWith('seed:')) ?? '';
    expect(capacity).toMatch(/expected integer, got .*many/);
    expect(seed).toMatch(/expected integer, got .*abc/);
    for (const p of error.problems) expect(p).not.toMatch(/undefined/);
  });

  it('refuses unknown keys at any depth, naming each one', () => {
    const path = yamlFile(
      [
        'extends: fast',
        'bogus: 1',
        'clock:',
        '  tick: 1',
        'accounts:',
        '  sk_test_x:',
        '    colour: red',
        'routing:',
        '  - targets:',
        '      - { model: r, colour: blue }',
        'stages:',
        '  render:',
        '    duraton: { type: fixed, value: 1 }',
        '  routing:',
        '    duration: { type: fixed, value: 1, extra: 2 }',
        '',
      ].join('\n'),
    );
    const problems = loadError(path).problems;
    for (const field of [
      'bogus',
      'clock.tick',
      'accounts.sk_test_x.colour',
      'routing[0].targets[0].colour',
      'stages.render.duraton',
      'stages.routing.duration.extra',
    ]) {
      expect(problems.some((p) => p.startsWith(`${field}: unknown key`)), `${field} in ${problems.join(' | ')}`).toBe(true);
    }
  });

  it('lists the keys that are allowed where an unknown key stands', () => {
    const problems = loadError(yamlFile('extends: fast\nstages:\n  render:\n    duraton: { type: fixed, value: 1 }\n')).problems;
    expect(problems).toHaveLength(1);
    // "What was expected": the keys a stage may have.
    expect(problems[0]).toBe('stages.render.duraton: unknown key, did you mean duration? (expected one of: duration, per_output_second, failure)');
  });

  it('reports every problem, one line each', () => {
    const path = yamlFile(
      'extends: fast\nstages:\n  queue:\n    duration: { type: uniform, min: 5, max: 1 }\ncompliance:\n  claim_linking:\n    rules:\n      - pattern: "([unclosed"\n',
    );
    const problems = validateScenarioFile(path);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^stages\.queue\.duration: expected min <= max/);
    expect(problems[1]).toMatch(/^compliance\.claim_linking\.rules\[0\]\.pattern: expected a valid regular expression/);
    expect(loadError(path).message.split('\n').filter((l) => l.startsWith('  - '))).toHaveLength(2);
  });

  it('refuses a failure on a stage that cannot fail (queue, output_verification)', () => {
    const path = yamlFile(
      'extends: fast\nstages:\n  queue:\n    failure: { probability: 0.1, code: internal_error }\n  output_verification:\n    failure: { probability: 0.1, code: internal_error }\n',
    );
    const problems = validateScenarioFile(path);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^stages\.queue\.failure: only keyframe, routing, render can fail/);
    expect(problems[1]).toMatch(/^stages\.output_verification\.failure: .*reject_share/);
  });

  it('reports schema problems and range or pattern problems of one file together', () => {
    const path = yamlFile(
      'extends: fast\nbogus: 1\nstages:\n  queue:\n    duration: { type: uniform, min: 5, max: 1 }\ncompliance:\n  claim_linking:\n    rules:\n      - pattern: "([unclosed"\n',
    );
    const problems = validateScenarioFile(path);
    expect(problems).toEqual([
      'bogus: unknown key (expected one of: extends, name, description, seed, clock, auth, account_defaults, accounts, models, routing, keyframe_first_share, stages, compliance, http, rate_limits, pricing, idempotency, prompt_triggers, limits)',
      'stages.queue.duration: expected min <= max, got min 5 and max 1',
      "compliance.claim_linking.rules[0].pattern: expected a valid regular expression, got '([unclosed' (Invalid regular expression: /([unclosed/i: Unterminated character class)",
    ]);
  });

  it('names a misspelled key inside a distribution, with the key it was likely meant to be', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\nstages:\n  queue:\n    duration: { tpye: fixed, value: 3 }\n'));
    expect(problems).toEqual([
      'stages.queue.duration.tpye: unknown key, did you mean type? (expected one of: type, value, min, max, median, p95)',
      'stages.queue.duration.type: required, but missing (expected one of "fixed", "uniform", "lognormal")',
    ]);
  });

  it('names a misspelled key of a latency distribution, without complaining that it is not null', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\nhttp:\n  latency: { tpye: uniform, min: 1, max: 2 }\n'));
    expect(problems).toEqual([
      'http.latency.tpye: unknown key, did you mean type? (expected one of: type, value, min, max, median, p95)',
      'http.latency.type: required, but missing (expected one of "fixed", "uniform", "lognormal")',
    ]);
  });

  it("names a key that the distribution's type does not have, listing the keys it has", () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\nstages:\n  queue:\n    duration: { type: fixed, value: 3, vlaue: 4 }\n'));
    expect(problems).toEqual(['stages.queue.duration.vlaue: unknown key, did you mean value? (expected one of: type, value)']);
  });

  it('says what a misspelled distribution type got', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\nstages:\n  queue:\n    duration: { type: fixd, value: 3 }\n'));
    expect(problems).toEqual(['stages.queue.duration.type: expected one of "fixed", "uniform", "lognormal", got string "fixd"']);
  });

  it('suggests the key a misspelled one was likely meant to be, at any depth', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\nrate_limits:\n  capacty: 5\n'));
    expect(problems).toEqual(['rate_limits.capacty: unknown key, did you mean capacity? (expected one of: capacity, refill_per_second, groups)']);
  });

  it('refuses a YAML syntax error, saying where it is: line and column, never the text of the file', () => {
    const problems = validateScenarioFile(yamlFile('name: x\nseed: [1, 2\nfoo: : bar\n'));
    expect(problems).toEqual([
      'YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1',
      'YAML: Nested mappings are not allowed in compact mappings at line 3, column 6',
    ]);
  });

  it('says where a badly indented line is', () => {
    const problems = validateScenarioFile(yamlFile('name: x\nclock:\n  mode: manual\n speed: 2\nseed: 3\n'));
    expect(problems).toEqual(['YAML: All mapping items must start at the same column at line 4, column 1']);
  });

  it.each([
    ['a stray token', 'name: x\n]secret\n', ['YAML: Unexpected characters here at line 2, column 1', 'YAML: Unexpected characters here at line 2, column 2']],
    ['a block scalar header with extra characters', 'name: |2secret\n  x\n', ['YAML: Unexpected characters here at line 1, column 9']],
    ['an invalid escape sequence', 'name: "a\\qsecret"\n', ['YAML: An invalid escape sequence in a double-quoted string at line 1, column 9']],
    ['a reserved first character', 'name: @secret\n', ['YAML: A plain value cannot start with this character; quote the value at line 1, column 7']],
  ])('describes %s without quoting the file', (_label, text, expected) => {
    const problems = validateScenarioFile(yamlFile(text));
    expect(problems).toEqual(expected);
  });

  it('refuses collections nested deeper than the parser goes, saying where', () => {
    const problems = validateScenarioFile(yamlFile(`extends: fast\nseed: ${'['.repeat(20_000)}1${']'.repeat(20_000)}\n`));
    // The YAML parser stops where the call stack runs out, so the column depends on how deep the
    // caller's stack already is.
    expect(problems.map((p) => p.replace(/column \d+$/, 'column N'))).toEqual(['YAML: Collections nested too deeply at line 2, column N']);
  });

  it('repeats at most 100 characters of a value or an unknown key of the file', () => {
    const problems = validateScenarioFile(yamlFile(`extends: fast\nseed: ${'v'.repeat(5000)}\n${'k'.repeat(1000)}: 1\n`));
    expect(problems).toEqual([
      expect.stringMatching(new RegExp(`^k{100}…: unknown key \\(expected one of: extends, name, `)),
      `seed: expected integer, got string "${'v'.repeat(99)}…`,
    ]);
  });

  it('indents the lines of a multi-line problem under its item in the error message', () => {
    const error = new ScenarioError('x.yaml', ['first line\nsecond line']);
    expect(error.message.split('\n').slice(1)).toEqual(['  - first line', '    second line']);
  });

  it('names the file only once for a relative path (each problem is its own file\'s)', () => {
    const path = yamlFile('extends: fast\nbogus: 1\n', 'relative.yaml');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(validateScenarioFile('relative.yaml')).toEqual([expect.stringMatching(/^bogus: unknown key/)]);
    } finally {
      process.chdir(cwd);
    }
    expect(validateScenarioFile(path)).toEqual([expect.stringMatching(/^bogus: unknown key/)]);
  });

  it('refuses a duplicate key', () => {
    const problems = validateScenarioFile(yamlFile('seed: 1\nseed: 2\n'));
    expect(problems).toEqual(['YAML: Map keys must be unique at line 2, column 1']);
  });

  it('refuses a missing file, naming it', () => {
    const path = join(dir, 'missing.yaml');
    const error = loadError(path);
    expect(error.message).toContain(path);
    expect(error.problems[0]).toMatch(/^file: expected/);
  });

  it('refuses an unknown bundled name, listing the bundled ones', () => {
    const error = loadError('no-such-scenario');
    expect(error.problems[0]).toMatch(/^scenario: expected .*default.*fast.*no-such-scenario/);
  });

  it('accepts a valid file with no problems', () => {
    expect(validateScenarioFile(yamlFile('extends: default\nseed: 9\n'))).toEqual([]);
    expect(loadScenario(yamlFile('extends: default\nseed: 9\n')).seed).toBe(9);
  });
});

// ---------------------------------------------------------------------------------------------

describe("the 'default' scenario", () => {
  const s = loadScenario('default');

  it('restates the built-in limits, which openapi.yaml documents as the defaults', () => {
    // default.yaml, read by the loader over a parent whose every limit is another value: the limits
    // that come out are the ones the file itself states.
    const others = Object.entries(BASE_SCENARIO.limits).map(([name, value]) => `  ${name}: ${value + 1}`);
    const parent = yamlFile(['limits:', ...others, ''].join('\n'), 'other-limits.yaml');
    const otherLimits = loadScenario(parent).limits;
    for (const [name, value] of Object.entries(BASE_SCENARIO.limits)) expect(otherLimits[name as keyof typeof otherLimits], name).toBe(value + 1);
    const defaultText = readFileSync(join(BUNDLED_SCENARIOS_DIR, 'default.yaml'), 'utf8');
    const overOthers = yamlFile(`extends: ./other-limits.yaml\n${defaultText}`, 'default-over-other-limits.yaml');
    expect(loadScenario(overOthers).limits).toEqual(BASE_SCENARIO.limits);
    const contract = parseYaml(readFileSync(resolve('openapi.yaml'), 'utf8')) as {
      components: { schemas: { SimScenario: { properties: { limits: { properties: Record<string, { default: unknown }> } } } } };
    };
    const documented = contract.components.schemas.SimScenario.properties.limits.properties;
    expect(Object.fromEntries(Object.entries(documented).map(([name, schema]) => [name, schema.default]))).toEqual(BASE_SCENARIO.limits);
  });

  it('offers video-3.0, video-3.1 and video-3.2 and the keyframe model video-3.2-keyframe', () => {
    expect(s.models.video).toEqual(['video-3.0', 'video-3.1', 'video-3.2']);
    expect(s.models.keyframe).toBe('video-3.2-keyframe');
  });

  it('accepts any sk_test_ key and revokes sk_test_revoked', () => {
    expect(s.auth.key_prefix).toBe('sk_test_');
    const revoked = s.auth.revoked_keys.includes('sk_test_revoked') || s.accounts.sk_test_revoked?.revoked === true;
    expect(revoked).toBe(true);
    expect(s.account_defaults.balance_cents).toBeNull();
  });

  it('authenticates like the contract says over HTTP', async () => {
    const sim = makeSim({ scenario: 'default' });
    expect((await request(sim.app).get('/v1/videos').set(bearer('sk_test_anything'))).status).toBe(200);
    expectError(await request(sim.app).get('/v1/videos').set(bearer('sk_test_revoked')), 401, 'authentication_error', 'revoked_api_key');
    expectError(await request(sim.app).get('/v1/videos').set(bearer('sk_live_123')), 401, 'authentication_error', 'invalid_api_key');
  });

  it('has a bucket of 1,000 requests refilled at 20 per second', () => {
    expect(s.rate_limits.capacity).toBe(1000);
    expect(s.rate_limits.refill_per_second).toBe(20);
  });

  it('injects no faults, no latency, no stage failures and no compliance outcomes', () => {
    expect(s.http.faults).toEqual([]);
    expect(s.http.latency).toBeNull();
    for (const stage of PROCESSING_STAGES) expect(s.stages[stage].failure).toBeUndefined();
    expect(s.compliance.claim_linking.rules).toEqual([]);
    expect(s.compliance.claim_linking.probability).toBe(0);
    expect(s.compliance.output_verification.reject_share).toBe(0);
    expect(s.compliance.output_verification.flag_share).toBe(0);
  });

  it('resolves every generation within 600 virtual seconds', () => {
    expect(longestResolutionSeconds(s)).toBeLessThanOrEqual(600);
  });
});

describe("the 'fast' scenario", () => {
  it('is bounded to 10 virtual seconds by its stage distributions', () => {
    expect(longestResolutionSeconds(loadScenario('fast'))).toBeLessThanOrEqual(10);
  });

  it('injects nothing', () => {
    const s = loadScenario('fast');
    expect(s.http.faults).toEqual([]);
    expect(s.http.latency).toBeNull();
    for (const stage of PROCESSING_STAGES) expect(s.stages[stage].failure).toBeUndefined();
    expect(s.compliance.output_verification.reject_share).toBe(0);
    expect(s.compliance.claim_linking.probability).toBe(0);
  });

  it('resolves 200 mixed generations as succeeded within 10 virtual seconds', async () => {
    const sim = makeSim();
    const models = ['video-3.0', 'video-3.1', 'video-3.2'];
    const resolutions = ['720p', '1080p'];
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const key = `sk_test_fast_${i % 4}`;
      const res = await request(sim.app)
        .post('/v1/videos')
        .set(bearer(key))
        .send({
          model: models[i % 3],
          prompt: `A paper boat drifting down a gutter stream after rain, take ${i}.`,
          duration_seconds: 4 + (i % 13),
          resolution: resolutions[i % 2],
        });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.id as string);
    }
    await advance(sim, 10).expect(200);
    const res = await request(sim.app).get('/_sim/generations').query({ limit: 1000 });
    expect(res.status).toBe(200);
    const data = res.body.data as { id: string; status: string; created_at: string; completed_at: string; duration_seconds: number }[];
    expect(data.map((g) => g.id)).toEqual(ids);
    const notDone = data.filter((g) => g.status !== 'succeeded');
    expect(notDone.map((g) => `${g.id} ${g.status} (${g.duration_seconds} s)`)).toEqual([]);
    for (const g of data) {
      expect(Date.parse(g.completed_at) - Date.parse(g.created_at)).toBeLessThanOrEqual(10_000);
    }
    expect(new Set(data.map((g) => g.duration_seconds)).size).toBe(13);
  });
});

describe('scenario files that are not what they should be', () => {
  it('refuses a directory given as the scenario, naming it', () => {
    const error = loadError(tmpdir());
    expect(error).toBeInstanceOf(ScenarioError);
    expect(error.problems[0]).toMatch(/^file: expected a YAML file, got a directory/);
  });

  it('refuses prices that are not whole cents (cost_cents is an integer)', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\npricing:\n  keyframe_cents: 1.5\n  per_second_cents: { 720p: 2.5 }\n'));
    expect(problems).toContain('pricing.keyframe_cents: expected integer, got number 1.5');
    expect(problems).toContain('pricing.per_second_cents.720p: expected integer, got number 2.5');
  });
});

describe('YAML aliases', () => {
  it('refuses an alias bomb before expanding it, naming the line and column of the alias that passes the bound', () => {
    expect(validateScenarioFile(yamlFile(ALIAS_BOMB))).toEqual(['YAML: Aliases repeat more than 10,000 values in all (an alias bomb) at line 5, column 8']);
  });

  it('refuses an alias inside the value its own anchor names (a value that would contain itself)', () => {
    const problems = validateScenarioFile(yamlFile('extends: fast\naccounts: &loop\n  sk_test_a: { balance_cents: 5 }\n  sk_test_b: *loop\n'));
    expect(problems).toEqual(['YAML: An alias inside the value its own anchor names (a value that contains itself) at line 4, column 14']);
  });

  it('refuses an alias that names no anchor before it', () => {
    expect(validateScenarioFile(yamlFile('extends: fast\nseed: *nowhere\n'))).toEqual(['YAML: An alias names no anchor set before it at line 2, column 7']);
  });

  it('accepts anchors and aliases a scenario uses for repeated settings', () => {
    const stages = ['queue', 'keyframe', 'routing', 'render', 'output_verification'];
    const scenario = loadScenario(
      yamlFile(
        [
          'extends: fast',
          'stages:',
          '  queue: { duration: &three { type: fixed, value: 3 } }',
          ...stages.slice(1).map((stage) => `  ${stage}: { duration: *three }`),
        ].join('\n'),
      ),
    );
    for (const stage of stages) expect(scenario.stages[stage as keyof Scenario['stages']].duration).toEqual({ type: 'fixed', value: 3 });
  });
});

