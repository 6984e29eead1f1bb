/**
 * The API types the package exports (Video, VideoList, Image, CancelResponse, ApiError, ErrorCode,
 * VideoStatus), generated from openapi.yaml: they compile as a client uses them (test/types, run
 * through tsc), and their keys are exactly those of the simulator's real answers.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/index.js';
import { PROMPT, advanceOk, bearer, cancelVideo, createVideo, getVideo, makeSim, queueFault } from './helpers.js';
import {
  API_ERROR_KEYS,
  CANCEL_RESPONSE_KEYS,
  COMPLIANCE_KEYS,
  ERROR_CODE_MEMBERS,
  ERROR_OBJECT_KEYS,
  IMAGE_KEYS,
  KEYFRAME_KEYS,
  OUTPUT_KEYS,
  VIDEO_ERROR_KEYS,
  VIDEO_KEYS,
  VIDEO_LIST_KEYS,
  VIDEO_STATUSES,
  keysOf,
} from './types/api-types.witnesses.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

type Json = Record<string, unknown>;

describe('the exported API types (tsc on test/types)', () => {
  it('compile as a client uses them; every line marked @ts-expect-error is an error', async () => {
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(process.execPath, [TSC, '-p', 'test/types/tsconfig.json', '--listFiles'], { cwd: ROOT }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out: `${stdout}${stderr}` }),
      );
    });
    const errors = result.out.split('\n').filter((line) => line.includes('error TS'));
    expect(errors).toEqual([]);
    expect(result.code).toBe(0);
    // Not vacuous: both files were checked, against the generated types.
    for (const file of ['test/types/api-types.usage.ts', 'test/types/api-types.witnesses.ts', 'src/generated/openapi-types.ts']) {
      expect(result.out).toContain(file);
    }
  }, 60_000);
});

describe('the exported API types against real answers', () => {
  const sim = makeSim();
  const key = 'sk_test_types';
  const statuses = new Set<string>();
  const errorTypes = new Set<string>();

  function expectVideo(body: Json): void {
    expect(keysOf(body)).toEqual(keysOf(VIDEO_KEYS));
    expect(keysOf(VIDEO_STATUSES)).toContain(body.status);
    statuses.add(body.status as string);
    if (body.keyframe !== null) expect(keysOf(body.keyframe as Json)).toEqual(keysOf(KEYFRAME_KEYS));
    if (body.compliance !== null) expect(keysOf(body.compliance as Json)).toEqual(keysOf(COMPLIANCE_KEYS));
    if (body.output !== null) expect(keysOf(body.output as Json)).toEqual(keysOf(OUTPUT_KEYS));
    if (body.error !== null) {
      const error = body.error as Json;
      const type = error.type as keyof typeof VIDEO_ERROR_KEYS;
      expect(Object.keys(VIDEO_ERROR_KEYS)).toContain(type);
      expect(keysOf(error)).toEqual(keysOf(VIDEO_ERROR_KEYS[type]));
      expect(keysOf(ERROR_CODE_MEMBERS)).toContain(error.code);
    }
  }

  function expectApiError(res: { status: number; body: Json }, status: number, type: string): void {
    expect(res.status).toBe(status);
    expect(keysOf(res.body)).toEqual(keysOf(API_ERROR_KEYS));
    const error = res.body.error as Json;
    expect(error.type).toBe(type);
    expect(keysOf(error)).toEqual(keysOf(ERROR_OBJECT_KEYS[type as keyof typeof ERROR_OBJECT_KEYS]));
    expect(keysOf(ERROR_CODE_MEMBERS)).toContain(error.code);
    errorTypes.add(type);
  }

  /** Creates a video and polls it every virtual second until it resolves, checking every answer. */
  async function createAndFollow(fault?: Json): Promise<Json> {
    if (fault) await queueFault(sim, { path: '/v1/videos', method: 'POST', api_key: key, ...fault });
    const created = await createVideo(sim, {}, key).expect(200);
    expectVideo(created.body as Json);
    let video = created.body as Json;
    for (let i = 0; i < 120 && !['succeeded', 'failed', 'canceled'].includes(video.status as string); i++) {
      await advanceOk(sim, 1, key);
      video = (await getVideo(sim, video.id as string, key).expect(200)).body as Json;
      expectVideo(video);
    }
    return video;
  }

  afterAll(() => sim.close());

  it('Video: a create, every poll until succeeded, and its keyframe, compliance and output', async () => {
    const video = await createAndFollow();
    expect(video.status).toBe('succeeded');
    expect(video.output).not.toBeNull();
    expect(video.compliance).not.toBeNull();
  });

  it("Video: a failed video's error, of type api_error and compliance_error", async () => {
    const render = await createAndFollow({ outcome: { fail_stage: 'render' } });
    expect(render).toMatchObject({ status: 'failed', error: { type: 'api_error' } });
    const rejected = await createAndFollow({ outcome: { output_rejected: true } });
    expect(rejected).toMatchObject({ status: 'failed', error: { type: 'compliance_error', stage: 'output_verification' } });
  });

  it('CancelResponse: the answer of DELETE /v1/videos/{id}', async () => {
    const created = await createVideo(sim, {}, key).expect(200);
    const res = await cancelVideo(sim, created.body.id as string, key).expect(200);
    expect(keysOf(res.body as Json)).toEqual(keysOf(CANCEL_RESPONSE_KEYS));
    expectVideo((await getVideo(sim, created.body.id as string, key).expect(200)).body as Json);
  });

  it('VideoList: a page of GET /v1/videos, each item a Video', async () => {
    const res = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key)).expect(200);
    expect(keysOf(res.body as Json)).toEqual(keysOf(VIDEO_LIST_KEYS));
    expect((res.body.data as Json[]).length).toBeGreaterThan(3);
    for (const item of res.body.data as Json[]) expectVideo(item);
  });

  it('Image: the answer of POST /v1/images', async () => {
    const res = await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT }).expect(200);
    expect(keysOf(res.body as Json)).toEqual(keysOf(IMAGE_KEYS));
  });

  it('ApiError: an answer of each error type', async () => {
    expectApiError(await request(sim.app).post('/v1/videos').set(bearer(key)).send({ model: 'video-3.2' }), 400, 'invalid_request_error');
    expectApiError(await request(sim.app).get('/v1/videos'), 401, 'authentication_error');
    expectApiError(await getVideo(sim, 'vid_unknown', key), 404, 'invalid_request_error');
    expectApiError(await request(sim.app).get('/v1/videos').set(bearer(key)).set('Host', 'evil.example'), 403, 'permission_error');
    for (const [status, type] of [
      [402, 'insufficient_balance'],
      [422, 'compliance_error'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
    ] as const) {
      await queueFault(sim, { path: '/v1/videos', method: 'POST', api_key: key, status });
      expectApiError(await createVideo(sim, {}, key), status, type);
    }
  });

  it('every status and every error type of the types met a real answer', () => {
    expect([...statuses].sort()).toEqual(keysOf(VIDEO_STATUSES));
    expect([...errorTypes].sort()).toEqual(keysOf(ERROR_OBJECT_KEYS));
  });

  it("ErrorCode has exactly the catalogue's codes", () => {
    expect(keysOf(ERROR_CODE_MEMBERS)).toEqual([...ERROR_CODES].sort());
  });
});
