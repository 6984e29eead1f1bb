/**
 * POST /v1/videos and POST /v1/images bodies, over HTTP: malformed JSON, JSON that is not an
 * object, invalid UTF-8, content types, the 1 MiB limit (400 request_too_large, never 413). And
 * the endpoints without a request body (a cancel): an empty body or `{}` is none, whatever the
 * Content-Type; a field is an unknown parameter.
 */
import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { controlGenerations } from '../src/core/generations/generationControl.js';
import { PROMPT, VALID_IMAGE, VALID_VIDEO, bearer, createVideo, expectError, getVideo, makeSim, queueFault, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

const VALID_BODY: Record<string, Record<string, unknown>> = {
  '/v1/videos': VALID_VIDEO,
  '/v1/images': VALID_IMAGE,
};

/** POSTs raw bytes with exactly the headers given (no Content-Type unless named), over a real socket. */
async function rawPost(
  target: Sim,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }> {
  const base = await target.listen(0);
  try {
    return await new Promise((resolve, reject) => {
      const req = httpRequest(
        `${base}${path}`,
        { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    await target.close();
  }
}

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe.each(['/v1/videos', '/v1/images'])('POST %s body parsing', (path) => {
  const post = () => request(sim.app).post(path).set(bearer());

  it('malformed JSON is 400 invalid_json param null', async () => {
    const res = await post().set('Content-Type', 'application/json').send('{"model": "video-3.2", ');
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('an empty body with Content-Type application/json is 400 invalid_json param null', async () => {
    const res = await rawPost(sim, path, Buffer.alloc(0), { ...bearer(), 'Content-Type': 'application/json' });
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it.each([
    ['an array', '[]'],
    ['an array of a valid body', JSON.stringify([{ model: 'video-3.2', prompt: PROMPT }])],
    ['a number', '42'],
    ['null', 'null'],
    ['a string', '"hello"'],
    ['true', 'true'],
  ])('a JSON value that is not an object (%s) is 400 invalid_json param null', async (_label, text) => {
    const res = await post().set('Content-Type', 'application/json').send(text);
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('invalid UTF-8 bytes are 400 invalid_json param null', async () => {
    const bytes = Buffer.concat([Buffer.from('{"prompt": "'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    const res = await rawPost(sim, path, bytes, { ...bearer(), 'Content-Type': 'application/json' });
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('valid multi-byte UTF-8 in a JSON body is accepted (200) and echoed', async () => {
    const prompt = 'Une ruelle sous la pluie, néons reflétés, 雨の夜 🌧';
    const res = await rawPost(sim, path, Buffer.from(JSON.stringify({ ...VALID_BODY[path], prompt }), 'utf8'), {
      ...bearer(),
      'Content-Type': 'application/json',
    });
    expect(res.status).toBe(200);
    expect((res.body as { prompt: string }).prompt).toBe(prompt);
  });

  it('Content-Type text/plain (with a valid JSON body) is 400 unsupported_content_type param null', async () => {
    const res = await post().set('Content-Type', 'text/plain').send(JSON.stringify(VALID_BODY[path]));
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('Content-Type application/x-www-form-urlencoded is 400 unsupported_content_type param null', async () => {
    const res = await post().type('form').send('model=video-3.2&prompt=hello');
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('no Content-Type at all (with a valid JSON body) is 400 unsupported_content_type param null', async () => {
    const res = await rawPost(sim, path, Buffer.from(JSON.stringify(VALID_BODY[path])), bearer());
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('no Content-Type and no body is 400 unsupported_content_type param null (the content type is judged before the body)', async () => {
    const res = await rawPost(sim, path, Buffer.alloc(0), bearer());
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('Content-Type application/json; charset=utf-8 is accepted (200)', async () => {
    const res = await post().set('Content-Type', 'application/json; charset=utf-8').send(JSON.stringify(VALID_BODY[path]));
    expect(res.status).toBe(200);
  });

  it('a body over 1 MiB is 400 request_too_large param null (never 413)', async () => {
    const body = JSON.stringify({ ...VALID_BODY[path], prompt: 'x'.repeat(1024 * 1024 + 1) });
    const res = await post().set('Content-Type', 'application/json').send(body);
    expect(res.status).not.toBe(413);
    expectError(res, 400, 'invalid_request_error', 'request_too_large', null);
  });

  it('a body over 1 MiB with a non-JSON content type is 400 request_too_large (the size is judged first), never 413', async () => {
    const res = await post().set('Content-Type', 'text/plain').send('x'.repeat(2 * 1024 * 1024));
    expectError(res, 400, 'invalid_request_error', 'request_too_large', null);
  });

  it('a body of exactly 1 MiB is not request_too_large', async () => {
    // Pad with white space (valid JSON) up to exactly 1 MiB; the prompt stays valid.
    const text = JSON.stringify(VALID_BODY[path]);
    const padded = text + ' '.repeat(1024 * 1024 - Buffer.byteLength(text));
    expect(Buffer.byteLength(padded)).toBe(1024 * 1024);
    const res = await post().set('Content-Type', 'application/json').send(padded);
    expect(res.status).toBe(200);
  });

  it('a body error stores nothing', async () => {
    await post().set('Content-Type', 'application/json').send('{');
    await post().set('Content-Type', 'text/plain').send('{}');
    expect(controlGenerations(sim.core, {}).data).toEqual([]);
    expect(sim.core.store.imagesOf('sk_test_alice').size).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('an endpoint without a request body (DELETE /v1/videos/{id}, DELETE /_sim/faults, POST /_sim/shutdown)', () => {
  const created = async (): Promise<string> => (await createVideo(sim)).body.id as string;
  const cancel = (id: string) => request(sim.app).delete(`/v1/videos/${id}`).set(bearer());

  it('a cancel sent with Content-Type: application/json and no body cancels', async () => {
    const id = await created();
    const res = await cancel(id).set('Content-Type', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'canceled' });
  });

  it.each([
    ['application/json', '{}'],
    ['application/json; charset=utf-8', ' { } '],
    ['text/plain', '{}'],
    ['application/x-www-form-urlencoded', '{}'],
  ])('a cancel with Content-Type %s and the body %j cancels', async (contentType, body) => {
    const id = await created();
    const res = await cancel(id).set('Content-Type', contentType).send(body);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('canceled');
  });

  it('a cancel with a field in its body is 400 unknown_parameter naming it, and cancels nothing', async () => {
    const id = await created();
    expectError(await cancel(id).send({ x: 1 }), 400, 'invalid_request_error', 'unknown_parameter', 'x');
    expectError(await cancel(id).send({ x: null }), 400, 'invalid_request_error', 'unknown_parameter', 'x');
    expect((await getVideo(sim, id)).body.status).toBe('queued');
  });

  it('a cancel with a body that is not a JSON object is refused as any body is', async () => {
    const id = await created();
    expectError(await cancel(id).set('Content-Type', 'text/plain').send('cancel'), 400, 'invalid_request_error', 'unsupported_content_type', null);
    expectError(await cancel(id).set('Content-Type', 'application/json').send('[]'), 400, 'invalid_request_error', 'invalid_json', null);
    expectError(await cancel(id).set('Content-Type', 'application/json').send('{"x":'), 400, 'invalid_request_error', 'invalid_json', null);
    expect((await getVideo(sim, id)).body.status).toBe('queued');
  });

  it('DELETE /_sim/faults takes Content-Type: application/json without a body, and refuses a field in one', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 500 });
    const refused = await request(sim.app).delete('/_sim/faults').send({ api_key: 'sk_test_bob' });
    expectError(refused, 400, 'invalid_request_error', 'unknown_parameter', 'api_key');
    expect((await request(sim.app).get('/_sim/faults')).body.queued).toBe(1);
    const cleared = await request(sim.app).delete('/_sim/faults').set('Content-Type', 'application/json');
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ queued: 0 });
  });

  it('POST /_sim/shutdown refuses a field in its body (and does not shut down)', async () => {
    expectError(await request(sim.app).post('/_sim/shutdown').send({ now: true }), 400, 'invalid_request_error', 'unknown_parameter', 'now');
    expect((await request(sim.app).get('/_sim/health')).status).toBe(200);
  });
});
