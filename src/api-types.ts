/**
 * The API's types for client authors, `import type { Video, ApiError } from 'video-service-sim'`.
 *
 * Names only: every field list comes from the types that openapi-typescript generates from
 * openapi.yaml at build time (./generated/openapi-types.ts), so these types describe exactly what
 * the simulator answers (it validates every answer against the same file).
 */
import type { components } from './generated/openapi-types.js';

type Schemas = components['schemas'];

/**
 * A video generation: the answer of `POST /v1/videos` and `GET /v1/videos/{id}`, and an item of
 * `GET /v1/videos`. All sixteen fields are always present; those not known yet are `null`.
 */
export type Video = Schemas['Video'];

/** A page of `GET /v1/videos`: `{ object: 'list', data: Video[], has_more }`. */
export type VideoList = Schemas['VideoList'];

/** A keyframe image: the answer of `POST /v1/images` (its `id` is a video's `keyframe_id`). */
export type Image = Schemas['Image'];

/**
 * The answer of `DELETE /v1/videos/{id}`: exactly five fields, `id`, `object`, `status`
 * (`'canceled'`), `created_at` and `completed_at` (schema `CanceledVideo`).
 */
export type CancelResponse = Schemas['CanceledVideo'];

/** Every error response body the API documents (schemas named `...ErrorResponse`). */
type ErrorResponseBody = Schemas[Extract<keyof Schemas, `${string}ErrorResponse`>];

/**
 * The body of every error answer (4xx and 5xx): `{ error: { type, code, message, ... } }`, a union
 * discriminated by `error.type`, so that narrowing on it gives the fields of that type: `param`
 * (a string or null) only on `invalid_request_error`, `stage` only on `compliance_error`.
 *
 * ```ts
 * const body = (await res.json()) as ApiError;
 * if (body.error.type === 'invalid_request_error') console.log(body.error.param);
 * ```
 *
 * The error object alone is `ApiError['error']`. (openapi.yaml's schema named `ApiError` is
 * narrower: the object of type `api_error` only, the 500s and a failed video's `error`.)
 */
export type ApiError = ErrorResponseBody;

/** Every `error.code` the API answers with (openapi.yaml's `ErrorCode`): stable, safe to branch on. */
export type ErrorCode = Schemas['ErrorCode'];

/**
 * A video's `status`: `queued`, `processing`, `verifying`, then one of the resolved (final)
 * `succeeded`, `failed`, `canceled`.
 */
export type VideoStatus = Schemas['VideoStatus'];
