/** Test helpers: a fresh account per test, and that account's clock. */
import { inject } from 'vitest';

export const simUrl = (): string => inject('simUrl');

/** A new API key: a new, empty account on the shared simulator (any `sk_test_` key is one). */
export function newApiKey(): string {
  return `sk_test_${crypto.randomUUID().replaceAll('-', '')}`;
}

/** Moves only this account's virtual clock (other tests' accounts are untouched). */
export async function advance(apiKey: string, seconds: number): Promise<void> {
  const res = await fetch(`${simUrl()}/_sim/clock/advance`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ seconds, api_key: apiKey }),
  });
  if (!res.ok) throw new Error(`advance failed: ${res.status} ${await res.text()}`);
}

/** A `sleep` for the client under test that advances the account's clock instead of waiting. */
export function virtualSleep(apiKey: string, waits: number[] = []): (ms: number) => Promise<void> {
  return async (ms) => {
    waits.push(ms);
    await advance(apiKey, ms / 1_000);
  };
}

/** Queues a one-shot fault for this account only (POST /_sim/faults). */
export async function queueFault(apiKey: string, fault: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${simUrl()}/_sim/faults`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...fault, api_key: apiKey }),
  });
  if (!res.ok) throw new Error(`fault failed: ${res.status} ${await res.text()}`);
}

/** The journal of this account's /v1 requests, oldest first. */
export async function journal(apiKey: string): Promise<Array<{ method: string; path: string; status: number; fault?: string }>> {
  const res = await fetch(`${simUrl()}/_sim/requests?api_key=${encodeURIComponent(apiKey)}`);
  return ((await res.json()) as { data: Array<{ method: string; path: string; status: number; fault?: string }> }).data;
}
