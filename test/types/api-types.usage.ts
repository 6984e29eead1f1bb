/**
 * The exported API types as a client author uses them. Compiled by `tsc -p test/types` from
 * test/api-types.test.ts: every line without a directive must compile, and every line marked
 * `@ts-expect-error` must not (tsc reports a directive that no longer catches an error), so the
 * file fails both when a type is too loose and when it is too strict.
 */
import { expectTypeOf } from 'vitest';
import type {
  ApiError,
  CancelResponse,
  ERROR_CATALOGUE,
  ErrorCode,
  Image,
  Video,
  VideoList,
  VideoStatus,
} from '../../src/index.js';

// ---- VideoStatus, ErrorCode --------------------------------------------------------------------
expectTypeOf<VideoStatus>().toEqualTypeOf<'queued' | 'processing' | 'verifying' | 'succeeded' | 'failed' | 'canceled'>();
// The package's ErrorCode is openapi.yaml's enum, and the error catalogue has exactly its codes.
expectTypeOf<ErrorCode>().toEqualTypeOf<keyof typeof ERROR_CATALOGUE>();

export const retryable: ErrorCode = 'rate_limit_exceeded';
// @ts-expect-error: not a code of the API
const unknownCode: ErrorCode = 'rate_limited';
// @ts-expect-error: not a status of the API
const unknownStatus: VideoStatus = 'running';

// ---- Video ------------------------------------------------------------------------------------
expectTypeOf<Video['status']>().toEqualTypeOf<VideoStatus>();
expectTypeOf<Video['resolution']>().toEqualTypeOf<'720p' | '1080p'>();
expectTypeOf<Video['cost_cents']>().toEqualTypeOf<number | null>();
expectTypeOf<Video['completed_at']>().toEqualTypeOf<string | null>();
expectTypeOf<NonNullable<Video['output']>>().toEqualTypeOf<{ url: string; thumbnail_url: string }>();
expectTypeOf<NonNullable<Video['error']>['type']>().toEqualTypeOf<'api_error' | 'compliance_error'>();

const queued: Video = {
  id: 'vid_8fK2mQ0xTz7LwB3nR5vY1cAe',
  object: 'video',
  status: 'queued',
  model: 'video-3.2',
  prompt: 'A lighthouse on a cliff at dawn.',
  negative_prompt: null,
  duration_seconds: 8,
  resolution: '1080p',
  routed_model: null,
  keyframe: null,
  compliance: null,
  output: null,
  error: null,
  cost_cents: null,
  created_at: '2026-01-01T00:00:00.000Z',
  completed_at: null,
};

const failed: Video = {
  ...queued,
  status: 'failed',
  error: { type: 'compliance_error', code: 'output_rejected', message: 'Rejected.', stage: 'output_verification' },
  completed_at: '2026-01-01T00:02:00.000Z',
  cost_cents: 80,
};

// @ts-expect-error: status is one of VideoStatus
const badStatus: Video = { ...queued, status: 'done' };
// @ts-expect-error: cost_cents is a number or null
const badCost: Video = { ...queued, cost_cents: '80' };
// @ts-expect-error: every field is required, output included (null until resolved)
const missingOutput: Video = (({ output: _output, ...rest }) => rest)(queued);
// @ts-expect-error: no field beyond the sixteen
const extraField: Video = { ...queued, progress: 0.5 };
// @ts-expect-error: a failed video's error of type api_error has no stage
const apiErrorWithStage: Video = { ...failed, error: { type: 'api_error', code: 'render_failed', message: 'x', stage: 'render' } };
// @ts-expect-error: a compliance_error carries its stage
const complianceWithoutStage: Video = { ...failed, error: { type: 'compliance_error', code: 'output_rejected', message: 'x' } };

export function resolved(video: Video): boolean {
  switch (video.status) {
    case 'succeeded':
    case 'failed':
    case 'canceled':
      return true;
    case 'queued':
    case 'processing':
    case 'verifying':
      return false;
    default: {
      // Exhaustive: no other status exists.
      const never: never = video.status;
      return never;
    }
  }
}

// ---- VideoList, Image, CancelResponse ------------------------------------------------------------
expectTypeOf<VideoList['data']>().toEqualTypeOf<Video[]>();
export const page: VideoList = { object: 'list', data: [queued, failed], has_more: false };
// @ts-expect-error: a list's object is 'list'
const badPage: VideoList = { object: 'page', data: [], has_more: false };

const image: Image = {
  id: 'img_1',
  object: 'image',
  status: 'ready',
  model: 'video-3.2-keyframe',
  prompt: 'A lighthouse.',
  url: 'http://localhost:8080/cdn/images/img_1.png',
  cost_cents: 2,
  created_at: '2026-01-01T00:00:00.000Z',
};
// @ts-expect-error: images are created synchronously, so 'ready' is their only status
const pendingImage: Image = { ...image, status: 'pending' };

const canceled: CancelResponse = {
  id: queued.id,
  object: 'video',
  status: 'canceled',
  created_at: queued.created_at,
  completed_at: '2026-01-01T00:00:05.000Z',
};
// @ts-expect-error: the cancel answer is canceled, nothing else
const notCanceled: CancelResponse = { ...canceled, status: 'succeeded' };
// @ts-expect-error: the cancel answer has exactly five fields, not a video's sixteen
const cancelWithModel: CancelResponse = { ...canceled, model: 'video-3.2' };

// ---- ApiError: the body of every error answer, discriminated by error.type -----------------------
expectTypeOf<ApiError['error']['type']>().toEqualTypeOf<
  'invalid_request_error' | 'authentication_error' | 'insufficient_balance' | 'permission_error' | 'compliance_error' | 'rate_limit_error' | 'api_error'
>();
expectTypeOf<ApiError['error']['code']>().toEqualTypeOf<ErrorCode>();

export const badRequest: ApiError = {
  error: { type: 'invalid_request_error', code: 'missing_parameter', message: 'prompt is required.', param: 'prompt' },
};
export const rateLimited: ApiError = { error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'Slow down.' } };
// @ts-expect-error: invalid_request_error always carries param (null when no single field is at fault)
const withoutParam: ApiError = { error: { type: 'invalid_request_error', code: 'invalid_json', message: 'x' } };
// @ts-expect-error: param belongs to invalid_request_error only
const paramOn401: ApiError = { error: { type: 'authentication_error', code: 'invalid_api_key', message: 'x', param: null } };
// @ts-expect-error: a synchronous compliance rejection names its stage
const withoutStage: ApiError = { error: { type: 'compliance_error', code: 'claim_linking_rejected', message: 'x' } };
// @ts-expect-error: the body is { error: {...} }, not the bare error object
const bareObject: ApiError = { type: 'api_error', code: 'internal_error', message: 'x' };
// @ts-expect-error: code is one of ErrorCode
const unknownBodyCode: ApiError = { error: { type: 'api_error', code: 'oops', message: 'x' } };

export function describeError(body: ApiError): string {
  const { error } = body;
  if (error.type === 'invalid_request_error') return `${error.code} (${error.param ?? 'no param'})`;
  if (error.type === 'compliance_error') return `${error.code} at ${error.stage}`;
  // @ts-expect-error: outside invalid_request_error there is no param
  return `${error.code} ${error.param}`;
}
