/**
 * The simulator in Storybook's preview: one set of handlers for the page (MSW's worker answers
 * `/api` with them), on the manual clock: nothing moves unless a story's loader moves it.
 */
import { createSimulatorHandlers } from 'video-service-sim/msw';

export const API = '/api';
export const sim = createSimulatorHandlers({ baseUrl: API, scenario: 'fast', clock: 'manual', seed: 5 });

export interface Video {
  id: string;
  status: 'queued' | 'processing' | 'verifying' | 'succeeded' | 'failed' | 'canceled';
  prompt: string;
  duration_seconds: number;
  resolution: string;
  output: { url: string; thumbnail_url: string } | null;
  error: { type: string; code: string; message: string } | null;
}

/** A call to the service, as the app makes it (through the worker). */
export async function api<T>(apiKey: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${API}${path}`, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${res.status} ${json.error?.code}: ${json.error?.message}`);
  return json as T;
}
