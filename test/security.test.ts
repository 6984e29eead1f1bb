/**
 * The control plane is safe by default (docs/security.md), over HTTP against
 * the in-process app: no CORS on /_sim, cross-origin control requests refused, the Host check
 * against DNS rebinding, the control token, and resets that name scenarios, never files. The
 * command line's side (generated token, flags) is in security-cli.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { ScenarioError } from '../src/scenarios/load.js';
import { ALIAS_BOMB, advance, bearer, createVideo, expectError, expectNoInternalErrors, getVideo, makeSim, postFault } from './helpers.js';
import { getWithHost } from './processes.js';

const EVIL = 'http://evil.example';
const TOKEN = 'control-token-for-tests';
const dir = mkdtempSync(join(tmpdir(), 'sim-security-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const started: SimulatorHandle[] = [];
afterEach(async () => {
  for (const sim of started.splice(0)) await sim.close();
});

/** The Access-Control-* headers of an answer. */
function corsHeaders(res: { headers: Record<string, string | undefined> }): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
}

function scenarioFile(name: string, text: string, folder = dir): string {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
}

describe('CORS', () => {
  it('no /_sim answer carries Access-Control-* headers: control answers, errors, the dashboard and its files', async () => {
    const sim = makeSim();
    const answers = [
      await request(sim.app).get('/_sim/health'),
      await request(sim.app).post('/_sim/reset'),
      await request(sim.app).get('/_sim/nope'),
      await request(sim.app).get('/_sim/'),
      await request(sim.app).get('/_sim/ui/app.js'),
      await request(sim.app).get('/_sim/health').set('Origin', EVIL),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 404, 200, 200, 403]);
    for (const res of answers) expect(corsHeaders(res)).toEqual([]);
  });

  it('a preflight of a control request is not approved: no 204, no Access-Control-* headers, from any origin', async () => {
    const sim = makeSim();
    const own = await request(sim.app).options('/_sim/reset').set('Origin', 'http://127.0.0.1').set('Host', '127.0.0.1').set('Access-Control-Request-Method', 'POST');
    expectError(own, 404, 'invalid_request_error', 'unknown_route');
    expect(corsHeaders(own)).toEqual([]);
    const evil = await request(sim.app).options('/_sim/reset').set('Origin', EVIL).set('Access-Control-Request-Method', 'POST');
    expectError(evil, 403, 'permission_error', 'cross_origin_request');
    expect(corsHeaders(evil)).toEqual([]);
  });

  it('/v1 and /cdn keep Access-Control-Allow-Origin: * and their preflights', async () => {
    const sim = makeSim();
    const video = await request(sim.app).get('/v1/videos').set(bearer()).set('Origin', 'http://localhost:5173');
    expect(video.headers['access-control-allow-origin']).toBe('*');
    const preflight = await request(sim.app).options('/cdn/images/img_x.png').set('Origin', 'http://localhost:5173').set('Access-Control-Request-Method', 'GET');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
  });
});

describe('cross-origin control requests', () => {
  it('a bodyless POST /_sim/reset from another origin is 403 cross_origin_request and resets nothing', async () => {
    const sim = makeSim();
    const id = (await createVideo(sim)).body.id as string;
    const res = await request(sim.app).post('/_sim/reset').set('Origin', EVIL);
    expectError(res, 403, 'permission_error', 'cross_origin_request');
    expect((await getVideo(sim, id)).status).toBe(200);
  });

  it('POST /_sim/clock/advance and POST /_sim/shutdown from another origin change nothing', async () => {
    let shutdowns = 0;
    const sim = makeSim({ onShutdown: () => shutdowns++ });
    const before = (await request(sim.app).get('/_sim/clock')).body.now as string;
    expectError(await advance(sim, 60).set('Origin', EVIL), 403, 'permission_error', 'cross_origin_request');
    expectError(await request(sim.app).post('/_sim/shutdown').set('Origin', EVIL), 403, 'permission_error', 'cross_origin_request');
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(before);
    expect(shutdowns).toBe(0);
  });

  it('reads are refused too (the journal shows keys, generations show prompts), and so is Origin: null', async () => {
    const sim = makeSim();
    await createVideo(sim);
    expectError(await request(sim.app).get('/_sim/requests').set('Origin', EVIL), 403, 'permission_error', 'cross_origin_request');
    expectError(await request(sim.app).get('/_sim/generations').set('Origin', 'null'), 403, 'permission_error', 'cross_origin_request');
    expectError(await request(sim.app).get('/_sim/').set('Origin', EVIL), 403, 'permission_error', 'cross_origin_request');
  });

  it("accepts the simulator's own origin (http:// + Host, any case) and the base URL's, and requests without Origin", async () => {
    const sim = makeSim({ baseUrl: 'https://sim.example.test:9443' });
    const own = await advance(sim, 1).set('Host', 'LocalHost:8080').set('Origin', 'http://localhost:8080');
    expect(own.status).toBe(200);
    const base = await advance(sim, 1).set('Host', 'localhost:8080').set('Origin', 'https://sim.example.test:9443');
    expect(base.status).toBe(200);
    expect((await advance(sim, 1)).status).toBe(200);
    // Another scheme or port is another origin.
    expectError(await advance(sim, 1).set('Host', 'localhost:8080').set('Origin', 'https://localhost:8080'), 403, 'permission_error', 'cross_origin_request');
    expectError(await advance(sim, 1).set('Host', 'localhost:8080').set('Origin', 'http://localhost:8081'), 403, 'permission_error', 'cross_origin_request');
  });

  it('does not apply to /v1: a web page of any origin uses the API with its key', async () => {
    const sim = makeSim();
    const res = await createVideo(sim).set('Origin', EVIL);
    expect(res.status).toBe(200);
  });
});

describe('control origins (--control-origin)', () => {
  const TOOLBAR = 'http://localhost:5173';

  it("a listed origin's preflight is approved for that origin alone, and its requests carry CORS headers naming it", async () => {
    const sim = makeSim({ controlOrigins: [TOOLBAR] });
    const preflight = await request(sim.app).options('/_sim/clock/advance').set('Origin', TOOLBAR).set('Access-Control-Request-Method', 'POST').set('Access-Control-Request-Headers', 'content-type,authorization');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(TOOLBAR);
    expect(preflight.headers['access-control-allow-methods']).toBe('GET,HEAD,POST,DELETE');
    expect(preflight.headers['access-control-allow-headers']).toBe('Authorization,Content-Type');
    const moved = await advance(sim, 60).set('Origin', TOOLBAR);
    expect(moved.status).toBe(200);
    expect(moved.body.now).toBe('2026-01-01T00:01:00.000Z');
    expect(moved.headers['access-control-allow-origin']).toBe(TOOLBAR);
    expect(moved.headers.vary).toBe('Origin');
    expect(moved.headers['access-control-expose-headers']).toBe('X-Request-Id,Retry-After');
  });

  it('every other origin is refused as before, and answers without Origin carry no CORS headers', async () => {
    const sim = makeSim({ controlOrigins: [TOOLBAR] });
    const other = await advance(sim, 60).set('Origin', 'http://localhost:5174');
    expectError(other, 403, 'permission_error', 'cross_origin_request');
    expect(corsHeaders(other)).toEqual([]);
    const evil = await request(sim.app).options('/_sim/reset').set('Origin', EVIL).set('Access-Control-Request-Method', 'POST');
    expectError(evil, 403, 'permission_error', 'cross_origin_request');
    expect(corsHeaders(await request(sim.app).get('/_sim/clock'))).toEqual([]);
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe('2026-01-01T00:00:00.000Z');
  });

  it('the control token is still needed: its refusal carries the CORS headers, so the page can read why', async () => {
    const sim = makeSim({ controlOrigins: [TOOLBAR], controlToken: TOKEN });
    const refused = await advance(sim, 60).set('Origin', TOOLBAR);
    expectError(refused, 401, 'authentication_error', 'control_token_required');
    expect(refused.headers['access-control-allow-origin']).toBe(TOOLBAR);
    const moved = await advance(sim, 60).set('Origin', TOOLBAR).set('Authorization', `Bearer ${TOKEN}`);
    expect(moved.status).toBe(200);
  });

  it.each(['localhost:5173', 'http://localhost:5173/app', '*', 'ftp://localhost'])('createSimulator({ controlOrigins: [%j] }) throws a RangeError naming it', (origin) => {
    expect(() => createSimulator({ controlOrigins: [origin] })).toThrow(RangeError);
    expect(() => createSimulator({ controlOrigins: [origin] })).toThrow(/controlOrigins: '.*' is not an origin/);
  });
});

describe('Host check (DNS rebinding)', () => {
  it('answers a request to any path whose Host is not served with 403 host_not_allowed, and journals nothing', async () => {
    const sim = makeSim();
    const id = (await createVideo(sim)).body.id as string;
    const refused = [
      await request(sim.app).get('/v1/videos').set(bearer()).set('Host', 'evil.example:8080'),
      await request(sim.app).post('/v1/videos').set(bearer()).set('Host', 'evil.example').send({ model: 'video-3.2', prompt: 'x' }),
      await request(sim.app).get('/_sim/health').set('Host', 'evil.example'),
      await request(sim.app).post('/_sim/reset').set('Host', 'evil.example'),
      await request(sim.app).get('/_sim/').set('Host', 'evil.example'),
      await request(sim.app).get(`/cdn/videos/${id}.mp4`).set('Host', 'evil.example'),
    ];
    for (const res of refused) expectError(res, 403, 'permission_error', 'host_not_allowed');
    const journal = (await request(sim.app).get('/_sim/requests')).body.data as unknown[];
    expect(journal).toHaveLength(1);
    expect((await getVideo(sim, id)).status).toBe(200);
  });

  it('a refusal outside /_sim keeps the CORS header, so a web page can read why', async () => {
    const sim = makeSim();
    const v1 = await request(sim.app).get('/v1/videos').set(bearer()).set('Host', 'evil.example');
    expect(v1.headers['access-control-allow-origin']).toBe('*');
    const control = await request(sim.app).get('/_sim/health').set('Host', 'evil.example');
    expect(corsHeaders(control)).toEqual([]);
  });

  it.each(['localhost', 'localhost:8080', 'LOCALHOST.', 'app.localhost:3000', '127.0.0.1', '127.1.2.3:80', '[::1]:8080', '[::1]'])(
    'serves the loopback host %s',
    async (host) => {
      const sim = makeSim();
      expect((await request(sim.app).get('/_sim/health').set('Host', host)).status).toBe(200);
    },
  );

  it.each([
    'evil.example',
    'localhost.evil.example',
    '127.0.0.1.evil.example',
    '127.0.0.256',
    '0.0.0.0:8080',
    '[::2]:8080',
    '10.0.0.5',
    // One strict parse of host and port: nothing after a loopback name makes it another host.
    'localhost:80@evil.example',
    '[::1]evil',
    '127.0.0.1:abc',
    'localhost:',
    'localhost:123456',
    '[::1',
    '.localhost',
    'localhost..',
    '::1',
  ])(
    'refuses the host %s',
    async (host) => {
      const sim = makeSim();
      expectError(await request(sim.app).get('/_sim/health').set('Host', host), 403, 'permission_error', 'host_not_allowed');
    },
  );

  it('serves the hosts of baseUrl and cdnUrl, and those of allowedHosts (a leading dot: the domain and its subdomains)', async () => {
    const sim = makeSim({ baseUrl: 'http://sim.internal:8080', cdnUrl: 'http://media.internal/cdn', allowedHosts: ['devbox', '.example.test'] });
    for (const host of ['sim.internal:8080', 'media.internal', 'devbox:8080', 'example.test', 'a.b.example.test']) {
      expect((await request(sim.app).get('/_sim/health').set('Host', host)).status, host).toBe(200);
    }
    for (const host of ['other.internal', 'devbox.evil', 'notexample.test']) {
      expectError(await request(sim.app).get('/_sim/health').set('Host', host), 403, 'permission_error', 'host_not_allowed');
    }
  });

  it('is on while listening on a loopback address, and off on another (the token protects control there)', async () => {
    const loopback = createSimulator({ scenario: 'fast', clock: 'manual' });
    const wildcard = createSimulator({ scenario: 'fast', clock: 'manual' });
    started.push(loopback, wildcard);
    await loopback.listen(0, '127.0.0.1');
    await wildcard.listen(0, '0.0.0.0');
    const refused = await getWithHost(loopback.port!, '/_sim/health', 'evil.example');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('host_not_allowed');
    expect((await getWithHost(wildcard.port!, '/_sim/health', 'sim.lan.example')).status).toBe(200);
  });
});

describe('control token', () => {
  it('a /_sim request without it is 401 control_token_required, with another one 401 invalid_control_token, and changes nothing', async () => {
    const sim = makeSim({ controlToken: TOKEN });
    const id = (await createVideo(sim)).body.id as string;
    expectError(await request(sim.app).post('/_sim/reset'), 401, 'authentication_error', 'control_token_required');
    expectError(await request(sim.app).post('/_sim/reset').set(bearer('wrong')), 401, 'authentication_error', 'invalid_control_token');
    expectError(await request(sim.app).post('/_sim/reset').set('Authorization', `Basic ${TOKEN}`), 401, 'authentication_error', 'invalid_control_token');
    expectError(await request(sim.app).post('/_sim/reset').set(bearer(`${TOKEN}x`)), 401, 'authentication_error', 'invalid_control_token');
    expectError(await request(sim.app).get('/_sim/requests'), 401, 'authentication_error', 'control_token_required');
    // An unknown control route tells nothing without the token either.
    expectError(await request(sim.app).get('/_sim/nope'), 401, 'authentication_error', 'control_token_required');
    expect((await getVideo(sim, id)).status).toBe(200);
  });

  it('with the token, every control request is answered', async () => {
    const sim = makeSim({ controlToken: TOKEN });
    await createVideo(sim);
    expect((await request(sim.app).get('/_sim/requests').set(bearer(TOKEN))).body.data).toHaveLength(1);
    expect((await request(sim.app).post('/_sim/reset').set('Authorization', `bearer  ${TOKEN} `)).status).toBe(200);
    expect((await request(sim.app).get('/_sim/requests').set(bearer(TOKEN))).body.data).toHaveLength(0);
  });

  it('GET /_sim/health and the dashboard with its files need none', async () => {
    const sim = makeSim({ controlToken: TOKEN });
    expect((await request(sim.app).get('/_sim/health')).status).toBe(200);
    expect((await request(sim.app).get('/_sim')).status).toBe(301);
    expect((await request(sim.app).get('/_sim/')).status).toBe(200);
    expect((await request(sim.app).get('/_sim/ui/api.js')).status).toBe(200);
    expect((await request(sim.app).get('/_sim/ui/token.js')).status).toBe(200);
    // Only GET and HEAD: a POST to health is a control request like any other.
    expectError(await request(sim.app).post('/_sim/health'), 401, 'authentication_error', 'control_token_required');
  });

  it('/v1 still takes API keys, not the control token', async () => {
    const sim = makeSim({ controlToken: TOKEN });
    expect((await createVideo(sim)).status).toBe(200);
    expectError(await request(sim.app).get('/v1/videos').set(bearer(TOKEN)), 401, 'authentication_error', 'invalid_api_key');
  });

  it('a recorded transcript never keeps the token', async () => {
    const file = join(dir, 'token-transcript.jsonl');
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', controlToken: TOKEN, record: file });
    started.push(sim);
    await request(sim.app).post('/_sim/clock/advance').set(bearer(TOKEN)).send({ seconds: 5 }).expect(200);
    await sim.close();
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('/_sim/clock/advance');
    expect(text).not.toContain(TOKEN);
  });

  it('a queued fault cannot inject an access check answer into /v1', async () => {
    const sim = makeSim();
    for (const code of ['control_token_required', 'invalid_control_token']) {
      const res = await postFault(sim, { path: '/v1/videos', status: 401, code });
      expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'code');
    }
    expectError(await postFault(sim, { path: '/v1/videos', status: 403 }), 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });
});

describe('POST /_sim/reset {"scenario"}: a name, never a file', () => {
  const team = 'name: team\nextends: fast\nseed: 7\n';

  it('accepts a bundled name, and the name of the scenario given at start, whose file it reads again', async () => {
    const file = scenarioFile('started.yaml', 'name: started\nextends: fast\nseed: 5\n', join(dir, 'start'));
    const sim = makeSim({ scenario: file });
    expect((await request(sim.app).post('/_sim/reset').send({ scenario: 'flaky' })).body.scenario).toBe('flaky');
    writeFileSync(file, 'name: started\nextends: fast\nseed: 6\n');
    const back = await request(sim.app).post('/_sim/reset').send({ scenario: 'started' });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ scenario: 'started', seed: 6 });
  });

  it('accepts the file name of a YAML file of scenariosDir, and no path', async () => {
    const scenarios = join(dir, 'scenarios');
    scenarioFile('team.yaml', team, scenarios);
    const sim = makeSim({ scenariosDir: scenarios });
    const res = await request(sim.app).post('/_sim/reset').send({ scenario: 'team.yaml' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ scenario: 'team', seed: 7 });
    for (const name of [join(scenarios, 'team.yaml'), './team.yaml', `../${'scenarios'}/team.yaml`, 'team']) {
      expectError(await request(sim.app).post('/_sim/reset').send({ scenario: name }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    }
  });

  it('refuses any other name with the list of the names it accepts, the same for existing and missing files, echoing no content', async () => {
    const scenarios = join(dir, 'listed');
    scenarioFile('team.yaml', team, scenarios);
    const secret = scenarioFile('secret.yaml', 'password: hunter2\nnot yaml: [\n');
    const sim = makeSim({ scenariosDir: scenarios });
    const message = async (scenario: string) => {
      const res = await request(sim.app).post('/_sim/reset').send({ scenario });
      const error = expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
      return (error.message as string).replace(scenario, 'NAME');
    };
    const existing = await message(secret);
    const missing = await message(join(dir, 'no-such-file.yaml'));
    expect(existing).toBe(missing);
    expect(await message('/etc/passwd')).toBe(missing);
    expect(existing).not.toContain('hunter2');
    expect(existing).toContain('one of fast, compliance, default, flaky, low-balance, rate-limited, slow, unreliable-network, team.yaml;');
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('fast');
  });

  it('suggests the closest accepted name', async () => {
    const sim = makeSim();
    const error = expectError(await request(sim.app).post('/_sim/reset').send({ scenario: 'flakey' }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect(error.message).toMatch(/Did you mean flaky\?$/);
  });

  it('refuses a file of scenariosDir over 1 MiB before parsing it, and keeps the current scenario', async () => {
    const scenarios = join(dir, 'big');
    scenarioFile('big.yaml', `name: big\n# ${'x'.repeat(1024 * 1024)}\n`, scenarios);
    scenarioFile('edge.yaml', `name: edge\nextends: fast\n${'#'.repeat(1024 * 1024 - 26)}\n`, scenarios);
    const sim = makeSim({ scenariosDir: scenarios });
    const error = expectError(await request(sim.app).post('/_sim/reset').send({ scenario: 'big.yaml' }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect(error.message).toMatch(/at most 1 MiB \(1048576 bytes\), got 1048589 bytes/);
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('fast');
    // Exactly 1 MiB is read.
    expect(readFileSync(join(scenarios, 'edge.yaml')).length).toBe(1024 * 1024);
    expect((await request(sim.app).post('/_sim/reset').send({ scenario: 'edge.yaml' })).body.scenario).toBe('edge');
    expectNoInternalErrors(sim);
  });

  it('refuses a scenario file over 1 MiB given at start, naming it', () => {
    const big = scenarioFile('huge.yaml', `name: huge\n# ${'x'.repeat(1024 * 1024)}\n`);
    expect(() => createSimulator({ scenario: big })).toThrow(ScenarioError);
    expect(() => createSimulator({ scenario: big })).toThrow(/huge\.yaml[\s\S]*at most 1 MiB/);
  });

  it('refuses a symbolic link of scenariosDir that leads out of it like an unknown name, and does not list it', async () => {
    const scenarios = join(dir, 'linked');
    scenarioFile('team.yaml', team, scenarios);
    const outside = scenarioFile('shadow-like.yaml', 'root:*:19000:0:99999:7:::\n', join(dir, 'outside'));
    symlinkSync(outside, join(scenarios, 'shadow.yaml'));
    symlinkSync(join(dir, 'outside'), join(scenarios, 'sub'));
    // A link that stays inside the directory is a file of it like any other.
    symlinkSync(join(scenarios, 'team.yaml'), join(scenarios, 'alias.yaml'));
    const sim = makeSim({ scenariosDir: scenarios });
    const refused = await request(sim.app).post('/_sim/reset').send({ scenario: 'shadow.yaml' });
    const error = expectError(refused, 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect(error.message).toContain('one of fast, compliance, default, flaky, low-balance, rate-limited, slow, unreliable-network, alias.yaml, team.yaml;');
    expect(error.message).not.toContain('root');
    const unknown = expectError(await request(sim.app).post('/_sim/reset').send({ scenario: 'nothing.yaml' }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect((error.message as string).replace('shadow.yaml', 'NAME')).toBe((unknown.message as string).replace('nothing.yaml', 'NAME'));
    expect((await request(sim.app).post('/_sim/reset').send({ scenario: 'alias.yaml' })).body.scenario).toBe('team');
  });

  it('a file of scenariosDir extends a bundled scenario or a file of the same directory, never a path, and never a link out', async () => {
    const scenarios = join(dir, 'extending');
    scenarioFile('base.yaml', 'name: base\nextends: fast\nseed: 11\n', scenarios);
    scenarioFile('child.yaml', 'name: child\nextends: base.yaml\n', scenarios);
    scenarioFile('dotted.yaml', 'name: dotted\nextends: ./base.yaml\n', scenarios);
    const secret = scenarioFile('secret.yaml', 'root:*:19000:0:99999:7:::\n', join(dir, 'elsewhere'));
    scenarioFile('absolute.yaml', `name: absolute\nextends: ${secret}\n`, scenarios);
    scenarioFile('parent.yaml', 'name: parent\nextends: ../elsewhere/secret.yaml\n', scenarios);
    scenarioFile('sub.yaml', 'name: sub\nextends: elsewhere/secret.yaml\n', scenarios);
    symlinkSync(secret, join(scenarios, 'link.yml'));
    scenarioFile('linked.yaml', 'name: linked\nextends: link.yml\n', scenarios);
    const sim = makeSim({ scenariosDir: scenarios });
    for (const name of ['child.yaml', 'dotted.yaml']) {
      const res = await request(sim.app).post('/_sim/reset').send({ scenario: name });
      expect(res.body, name).toMatchObject({ scenario: name.replace('.yaml', ''), seed: 11 });
    }
    const refusal = async (name: string) => {
      const error = expectError(await request(sim.app).post('/_sim/reset').send({ scenario: name }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
      expect(error.message).not.toContain('root');
      return error.message as string;
    };
    expect(await refusal('absolute.yaml')).toContain(`extends: expected a bundled scenario or the file name of a YAML file in the same directory (base.yaml), never a path; got '${secret}'`);
    expect(await refusal('parent.yaml')).toContain("never a path; got '../elsewhere/secret.yaml'");
    expect(await refusal('sub.yaml')).toContain("never a path; got 'elsewhere/secret.yaml'");
    expect(await refusal('linked.yaml')).toContain("extends: expected an existing YAML file at 'link.yml', but there is none at this path");
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('dotted');
  });

  it('refuses an alias bomb in a file of scenariosDir with a 400 naming its line and column, and keeps the current scenario', async () => {
    const scenarios = join(dir, 'bombs');
    scenarioFile('bomb.yaml', ALIAS_BOMB, scenarios);
    const sim = makeSim({ scenariosDir: scenarios });
    const error = expectError(await request(sim.app).post('/_sim/reset').send({ scenario: 'bomb.yaml' }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect(error.message).toMatch(/bomb\.yaml:\n {2}- YAML: Aliases repeat more than 10,000 values in all \(an alias bomb\) at line 5, column 8$/);
    expect(error.message).not.toContain('lol');
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('fast');
    expectNoInternalErrors(sim);
  });

  it('sim.reset (in-process) follows the same rule', () => {
    const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
    expect(() => sim.reset({ scenario: join(dir, 'secret.yaml') })).toThrow(/scenario must name a bundled scenario/);
    expect(sim.reset({ scenario: 'slow' }).scenario).toBe('slow');
  });
});
