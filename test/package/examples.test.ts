/**
 * The examples in examples/ stay in step with the simulator: they parse, use only environment
 * variables the CLI reads, name bundled scenarios, and point at files that exist. (The downstream
 * vitest example is run for real by package.test.ts, against the packed tarball.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { listBundledScenarios } from '../../src/scenarios/load.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLES = join(ROOT, 'examples');
const read = (path: string) => readFileSync(join(EXAMPLES, path), 'utf8');

/** The environment variables behind the server's flags, read from src/commands/start.ts. */
const CLI_ENV = [...readFileSync(join(ROOT, 'src', 'commands', 'start.ts'), 'utf8').matchAll(/\.env\('([A-Z_]+)'\)/g)].map((m) => m[1]!);
const SCENARIOS = listBundledScenarios().map((s) => s.name);

function expectSimEnvironment(env: Record<string, string>): void {
  for (const name of Object.keys(env).filter((k) => k.startsWith('SIM_') || k === 'PORT')) {
    expect(CLI_ENV, `${name} is not read by the CLI`).toContain(name);
  }
  if (env.SIM_SCENARIO) expect(SCENARIOS).toContain(env.SIM_SCENARIO);
  if (env.SIM_CLOCK) expect(['manual', 'realtime']).toContain(env.SIM_CLOCK);
}

describe('examples/', () => {
  it('the CLI reads exactly the environment variables the Dockerfile and README promise', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    // "Every flag of `sim` has an environment variable: PORT, ... ." and "Every flag has an environment variable (`PORT`, ...)"
    const promised = (text: string, from: RegExp, end: string) => {
      const start = text.search(from);
      expect(start, String(from)).toBeGreaterThanOrEqual(0);
      const sentence = text.slice(start, text.indexOf(end, start));
      return [...sentence.matchAll(/\b(PORT|SIM_[A-Z_]+)\b/g)].map((m) => m[1]!).sort();
    };
    const cli = [...CLI_ENV].sort();
    expect(cli).toContain('PORT');
    expect(promised(dockerfile, /Every flag of `sim` has an environment variable:/, '. ')).toEqual(cli);
    expect(promised(readme, /Every flag has an environment variable \(/, ')')).toEqual(cli);
  });

  it('github-actions.yml: a job with the image as a service container on 8080', () => {
    const workflow = parse(read('github-actions.yml')) as {
      jobs: Record<string, { services: Record<string, { image: string; env: Record<string, string>; ports: string[]; options: string }>; steps: unknown[] }>;
    };
    const job = Object.values(workflow.jobs)[0]!;
    const service = Object.values(job.services)[0]!;
    expect(service.image).toMatch(/video-service-sim/);
    expect(service.ports).toContain('8080:8080');
    expect(service.env).toMatchObject({ SIM_SCENARIO: 'fast', SIM_CLOCK: 'manual' });
    expectSimEnvironment(service.env);
    expect(service.options).toMatch(/--health-interval/);
    expect(job.steps.length).toBeGreaterThan(2);
  });

  it('docker-compose.yml: the simulator (built from this repository) and a static app', () => {
    const compose = parse(read('docker-compose.yml')) as {
      services: Record<string, { build?: { context: string }; environment?: Record<string, string>; ports?: string[]; volumes?: string[] }>;
    };
    const sim = compose.services['video-sim']!;
    expect(existsSync(join(EXAMPLES, sim.build!.context, 'Dockerfile'))).toBe(true);
    expect(sim.ports).toContain('8080:8080');
    expect(sim.environment).toMatchObject({ SIM_BASE_URL: 'http://localhost:8080', SIM_CDN_URL: 'http://localhost:8080/cdn' });
    expectSimEnvironment(sim.environment!);
    const web = compose.services.web!;
    const [hostDir] = web.volumes![0]!.split(':');
    expect(existsSync(join(EXAMPLES, hostDir!, 'index.html'))).toBe(true);
    expect(read('frontend/index.html')).toContain("const API = 'http://localhost:8080'");
  });

  it('vitest-downstream/: imports the package by its name, never the repository sources', () => {
    for (const file of ['global-setup.ts', 'in-process.test.ts', 'video-client.test.ts', 'sim-helpers.ts', 'video-client.ts']) {
      const source = read(join('vitest-downstream', file));
      expect(source, file).not.toMatch(/from '\.\.\/\.\.\/|src\//);
    }
    expect(read('vitest-downstream/global-setup.ts')).toContain("from 'video-service-sim'");
    expect(read('vitest-downstream/in-process.test.ts')).toContain("from 'video-service-sim'");
  });
});
