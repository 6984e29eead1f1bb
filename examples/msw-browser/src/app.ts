/**
 * The page: a small video maker that calls the service at `/api` (its own origin) with `fetch`, as
 * a real frontend would. In development and in tests, Mock Service Worker answers `/api` in the
 * browser with the simulator's handlers (`video-service-sim/msw`): no server behind it at all.
 * The control API is on `window.sim` (a test moves the manual clock with it).
 */
import { setupWorker } from 'msw/browser';
import { createSimulatorHandlers } from 'video-service-sim/msw';

const API = '/api';
const API_KEY = 'sk_test_browser_page';

const sim = createSimulatorHandlers({ baseUrl: API, scenario: 'fast', clock: 'manual', seed: 1 });
const worker = setupWorker(...sim.handlers);
(window as unknown as { sim: typeof sim.control }).sim = sim.control;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $('status');

interface Video {
  id: string;
  status: string;
  duration_seconds: number;
  resolution: string;
  output: { url: string } | null;
  error: { code: string; message: string } | null;
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${API}${path}`, {
    method,
    headers: { Authorization: `Bearer ${API_KEY}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${res.status} ${json.error?.code}: ${json.error?.message}`);
  return json as T;
}

/** Polls every half second (real time) until the video resolves; the test moves virtual time. */
async function follow(id: string): Promise<void> {
  for (;;) {
    const video = await api<Video>('GET', `/v1/videos/${id}`);
    status.textContent = video.status;
    if (video.status === 'succeeded') {
      const player = $<HTMLVideoElement>('player');
      player.dataset.expectedDuration = String(video.duration_seconds);
      player.dataset.resolution = video.resolution;
      player.src = video.output!.url;
      player.hidden = false;
      await player.play();
      return;
    }
    if (video.status === 'failed' || video.status === 'canceled') {
      $('error').textContent = video.error ? `${video.error.code}: ${video.error.message}` : video.status;
      $('error').hidden = false;
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

$('create').addEventListener('submit', (event) => {
  event.preventDefault();
  const prompt = $<HTMLInputElement>('prompt').value;
  const duration_seconds = Number($<HTMLInputElement>('duration').value);
  status.textContent = 'creating';
  api<Video>('POST', '/v1/videos', { model: 'video-3.2', prompt, duration_seconds })
    .then((video) => {
      $('video-id').textContent = video.id;
      return follow(video.id);
    })
    .catch((e: Error) => {
      status.textContent = 'error';
      $('error').textContent = e.message;
      $('error').hidden = false;
    });
});

// Requests to anything but /api (the page's own files) go to the network as usual.
await worker.start({ onUnhandledFrame: 'bypass', quiet: true });
await sim.ready;
status.textContent = 'ready';
$<HTMLButtonElement>('create-button').disabled = false;
