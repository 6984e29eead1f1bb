/**
 * Robustness: a property-based fuzzer breaks valid requests in every way a buggy client might, and
 * every answer must be exactly the error the simulator documents (400, 401 or 404, section-7 shape,
 * the type that goes with the status), never a 5xx, a hang or a stack trace.
 */
import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROMPT, makeSim } from './helpers.js';

// Deterministic runs (npm test must be); set FC_SEED to explore other inputs. The setting is
// process-wide: it is taken back after this file, for the next file its worker runs.
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20261122) });
afterAll(() => fc.resetConfigureGlobal());

const sim = makeSim();
let url: string;
const KEY = 'sk_test_fuzz';
const auth = { Authorization: `Bearer ${KEY}` };

beforeAll(async () => {
  url = await sim.listen(0);
});
afterAll(() => sim.close());

const TYPE_OF_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'invalid_request_error',
};

/** The answer is a clean client error in the section-7 shape. */
function expectClientError(res: request.Response, allowed: number[] = [400, 401, 404]): void {
  const context = `${res.status} ${res.text.slice(0, 300)}`;
  expect(allowed, context).toContain(res.status);
  expect(res.headers['content-type'], context).toMatch(/^application\/json/);
  const error = (res.body as { error: Record<string, unknown> }).error;
  expect(Object.keys(res.body as object), context).toEqual(['error']);
  expect(error.type, context).toBe(TYPE_OF_STATUS[res.status]);
  expect(typeof error.code, context).toBe('string');
  expect(typeof error.message, context).toBe('string');
  expect(res.text, context).not.toMatch(/\bat .+\.(js|ts):\d+/); // no stack trace
  if (error.type === 'invalid_request_error') expect('param' in error, context).toBe(true);
}

const VIDEO_FIELDS = ['model', 'prompt', 'negative_prompt', 'duration_seconds', 'resolution', 'keyframe_id'] as const;

/** Values of a type a field does not take. */
const wrongTypeFor = (field: string): fc.Arbitrary<unknown> => {
  const others: fc.Arbitrary<unknown>[] = [
    fc.boolean(),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  ];
  if (field === 'duration_seconds') {
    others.push(fc.string({ maxLength: 10 }), fc.constantFrom('NaN', 'Infinity', '-Infinity', '8'), fc.double({ noInteger: true, noDefaultInfinity: true, noNaN: true }));
  } else {
    others.push(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
  }
  return fc.oneof(...others);
};

describe('fuzzed requests to /v1', () => {
  it('a create with one field of a wrong type is 400 invalid_parameter naming that field', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...VIDEO_FIELDS).chain((field) => fc.tuple(fc.constant(field), wrongTypeFor(field))),
        async ([field, value]) => {
          const res = await request(url).post('/v1/videos').set(auth).send({ model: 'video-3.2', prompt: PROMPT, [field]: value });
          expectClientError(res, [400]);
          expect(res.body.error.code).toBe('invalid_parameter');
          expect(res.body.error.param).toBe(field);
        },
      ),
      { numRuns: 120 },
    );
  });

  it('an out-of-range duration_seconds is 400 invalid_parameter, param duration_seconds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -1_000_000, max: 1_000_000 }).filter((n) => n < 4 || n > 16), async (n) => {
        const res = await request(url).post('/v1/videos').set(auth).send({ model: 'video-3.2', prompt: PROMPT, duration_seconds: n });
        expectClientError(res, [400]);
        expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'duration_seconds' });
      }),
      { numRuns: 60 },
    );
  });

  it('unknown keys, including __proto__, constructor and prototype, are 400 unknown_parameter', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'),
          fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !(VIDEO_FIELDS as readonly string[]).includes(k)),
        ),
        fc.jsonValue({ maxDepth: 2 }),
        async (key, value) => {
          const raw = `{"model":"video-3.2","prompt":${JSON.stringify(PROMPT)},${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}}`;
          const res = await request(url).post('/v1/videos').set(auth).set('Content-Type', 'application/json').send(raw);
          expectClientError(res, [400]);
          expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: key });
        },
      ),
      { numRuns: 80 },
    );
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('arbitrary bodies and content types never get anything but a clean 400 (or a 200 for a valid one)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 200 }), fc.json({ maxDepth: 3 })),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8', ''),
        fc.constantFrom('/v1/videos', '/v1/images'),
        async (body, contentType, path) => {
          let req = request(url).post(path).set(auth);
          if (contentType) req = req.set('Content-Type', contentType);
          const res = await req.send(body);
          if (res.status === 200) return; // fast-check can build a valid body; that is fine
          expectClientError(res, [400]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('arbitrary paths, methods and query strings answer 200, 400 or 404, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('get', 'post', 'delete', 'put', 'patch'),
        fc.oneof(
          fc.webPath(),
          fc.string({ maxLength: 40 }).map((s) => `/v1/videos/${encodeURIComponent(s)}`),
          fc.constantFrom('/v1/videos/%E0%A4%A', '/v1/%zz', '/v1/videos?limit=%', '/v1/videos?after=%E0%A4%A', '/v1/videos?limit=1&limit=2'),
        ),
        fc.webQueryParameters(),
        async (method, path, query) => {
          const target = query && !path.includes('?') ? `${path}?${query}` : path;
          const res = await request(url)[method as 'get'](target.startsWith('/') ? target : `/${target}`).set(auth);
          if (res.status === 200) return;
          expectClientError(res, [400, 404]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('malformed Authorization headers are 401 authentication_error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 60 }).filter((s) => !/^Bearer +sk_test_\S+ *$/i.test(s)),
          fc.string({ maxLength: 30 }).map((s) => `Bearer ${s}`).filter((s) => !/^Bearer +sk_test_\S+ *$/i.test(s)),
          fc.constantFrom('Bearer', 'Bearer ', 'Basic c2tfdGVzdF94Og==', 'bearer', 'sk_test_x', `Bearer ${'x'.repeat(8192)}`),
          // Keys named like Object.prototype's members (found by this fuzzer once).
          fc.constantFrom('Bearer valueOf', 'Bearer __proto__', 'Bearer constructor', 'Bearer toString', 'Bearer hasOwnProperty'),
        ),
        async (header) => {
          // Header values with control characters cannot be sent at all: skip those.
          if (/[^\t\x20-\x7e]/.test(header)) return;
          const res = await request(url).get('/v1/videos').set('Authorization', header);
          expectClientError(res, [401]);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('bad input, one case each', () => {
  it('API keys named like Object.prototype members are 401 invalid_api_key, not accounts', async () => {
    for (const name of Object.getOwnPropertyNames(Object.prototype)) {
      const res = await request(url).get('/v1/videos').set('Authorization', `Bearer ${name}`);
      expectClientError(res, [401]);
      expect(res.body.error.code, name).toBe('invalid_api_key');
    }
  });

  it('1 MiB and 2 MiB bodies: a prompt over 4,000 characters is 400 invalid_parameter, over 1 MiB 400 request_too_large', async () => {
    const nearMiB = await request(url)
      .post('/v1/videos')
      .set(auth)
      .send({ model: 'video-3.2', prompt: 'a'.repeat(1024 * 1024 - 100) });
    expectClientError(nearMiB, [400]);
    expect(nearMiB.body.error).toMatchObject({ code: 'invalid_parameter', param: 'prompt' });
    const twoMiB = await request(url)
      .post('/v1/videos')
      .set(auth)
      .send({ model: 'video-3.2', prompt: 'a'.repeat(2 * 1024 * 1024) });
    expectClientError(twoMiB, [400]);
    expect(twoMiB.body.error).toMatchObject({ code: 'request_too_large', param: null });
  });

  it('nesting 10,000 deep is 400 invalid_parameter, not a crash', async () => {
    const deep = `{"model":${'['.repeat(10_000)}${']'.repeat(10_000)},"prompt":"x"}`;
    const res = await request(url).post('/v1/videos').set(auth).set('Content-Type', 'application/json').send(deep);
    expectClientError(res, [400]);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'model' });
  });

  it('nesting 10,000 deep with an Idempotency-Key is the same 400, not a 500', async () => {
    const deep = `{"model":"video-3.2","prompt":"x","a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const res = await request(url).post('/v1/videos').set(auth).set('Idempotency-Key', 'deep').set('Content-Type', 'application/json').send(deep);
    expectClientError(res, [400]);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'a' });
  });

  it('invalid UTF-8 is 400 invalid_json', async () => {
    // fetch sends the bytes as they are (supertest would serialise a Buffer as JSON).
    const res = await fetch(`${url}/v1/videos`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param: unknown } };
    expect(body.error).toMatchObject({ code: 'invalid_json', param: null });
  });

  it('a malformed percent-encoded id is 404 resource_not_found, a malformed route 404 unknown_route', async () => {
    const id = await request(url).get('/v1/videos/%E0%A4%A').set(auth);
    expectClientError(id, [404]);
    expect(id.body.error).toMatchObject({ code: 'resource_not_found', param: 'id' });
    const route = await request(url).get('/v1/%zz/x').set(auth);
    expectClientError(route, [404]);
    expect(route.body.error.code).toBe('unknown_route');
  });

  it('an 8 KiB id is 404 resource_not_found', async () => {
    const res = await request(url).get(`/v1/videos/vid_${'a'.repeat(8192)}`).set(auth);
    expectClientError(res, [404]);
    expect(res.body.error.code).toBe('resource_not_found');
  });

  it('the valid boundaries succeed: duration 4 and 16, limit 1 and 100, a 4,000-character prompt', async () => {
    for (const duration_seconds of [4, 16]) {
      const res = await request(url).post('/v1/videos').set(auth).send({ model: 'video-3.2', prompt: PROMPT, duration_seconds });
      expect(res.status, res.text).toBe(200);
    }
    for (const limit of [1, 100]) {
      const res = await request(url).get(`/v1/videos?limit=${limit}`).set(auth);
      expect(res.status, res.text).toBe(200);
    }
    const long = await request(url).post('/v1/videos').set(auth).send({ model: 'video-3.2', prompt: 'p'.repeat(4000) });
    expect(long.status, long.text).toBe(200);
  });

  it('the server is healthy after all of it', async () => {
    const res = await request(url).get('/_sim/health');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
  });
});

describe('concurrency', () => {
  it('50 concurrent creates with one Idempotency-Key give exactly one generation', async () => {
    const key = 'sk_test_concurrent';
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        request(url)
          .post('/v1/videos')
          .set({ Authorization: `Bearer ${key}`, 'Idempotency-Key': 'same-key' })
          .send({ model: 'video-3.2', prompt: PROMPT }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(responses.map((r) => r.text)).size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(49);
    const list = await request(url).get('/v1/videos').set({ Authorization: `Bearer ${key}` });
    expect(list.body.data).toHaveLength(1);
  });

  it('concurrent cancels and clock advances never produce an impossible state', async () => {
    const key = 'sk_test_race';
    const headers = { Authorization: `Bearer ${key}` };
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(url).post('/v1/videos').set(headers).send({ model: 'video-3.2', prompt: PROMPT });
      ids.push(res.body.id as string);
    }
    await Promise.all([
      ...ids.map((id) => request(url).delete(`/v1/videos/${id}`).set(headers)),
      ...Array.from({ length: 10 }, () => request(url).post('/_sim/clock/advance').send({ seconds: 0.4, api_key: key })),
      ...ids.map((id) => request(url).delete(`/v1/videos/${id}`).set(headers)),
    ]);
    await request(url).post('/_sim/clock/advance').send({ seconds: 60, api_key: key });
    for (const id of ids) {
      const { body } = await request(url).get(`/v1/videos/${id}`).set(headers);
      const history = (await request(url).get(`/_sim/generations/${id}`)).body.stages as { stage: string }[];
      if (body.status === 'canceled') {
        expect(body.cost_cents).toBeNull();
        expect(body.output).toBeNull();
        expect(history.at(-1)?.stage).not.toBe('output_verification');
      } else {
        expect(['succeeded', 'failed']).toContain(body.status);
        expect(body.cost_cents).not.toBeNull();
      }
      expect(body.completed_at).not.toBeNull();
    }
  });
});

describe('isolation under generated traffic', () => {
  it('one account can never read, list, cancel or reuse as keyframe_id what another created', async () => {
    const owner = { Authorization: 'Bearer sk_test_owner' };
    const other = { Authorization: 'Bearer sk_test_other' };
    const video = (await request(url).post('/v1/videos').set(owner).send({ model: 'video-3.2', prompt: PROMPT })).body.id as string;
    const image = (await request(url).post('/v1/images').set(owner).send({ prompt: PROMPT })).body.id as string;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('get', 'cancel', 'list', 'list-after', 'keyframe'), async (action) => {
        switch (action) {
          case 'get': {
            const res = await request(url).get(`/v1/videos/${video}`).set(other);
            expect(res.status).toBe(404);
            break;
          }
          case 'cancel': {
            const res = await request(url).delete(`/v1/videos/${video}`).set(other);
            expect(res.status).toBe(404);
            break;
          }
          case 'list': {
            const res = await request(url).get('/v1/videos?limit=100').set(other);
            expect((res.body.data as { id: string }[]).map((v) => v.id)).not.toContain(video);
            break;
          }
          case 'list-after': {
            const res = await request(url).get(`/v1/videos?after=${video}`).set(other);
            expect(res.status).toBe(400);
            expect(res.body.error.param).toBe('after');
            break;
          }
          case 'keyframe': {
            const res = await request(url).post('/v1/videos').set(other).send({ model: 'video-3.2', prompt: PROMPT, keyframe_id: image });
            expect(res.status).toBe(400);
            expect(res.body.error.code).toBe('keyframe_not_found');
            break;
          }
        }
      }),
      { numRuns: 40 },
    );
    const mine = await request(url).get(`/v1/videos/${video}`).set(owner);
    expect(mine.body.status).toBe('queued');
  });
});
