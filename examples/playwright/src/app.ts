/**
 * The UI under test: a queue of video generations. Each Generate posts `/api/v1/videos` and adds
 * a row, which follows its video (a poll a second, real time) until it resolves. Mock Service
 * Worker answers `/api` in the browser with the simulator's handlers (`video-service-sim/msw`, the
 * manual clock), and `window.sim` is their control API, through which a test moves the clock.
 */
import { setupWorker } from 'msw/browser';
import { createSimulatorHandlers } from 'video-service-sim/msw';

const API = '/api';
// One account per page load, so reloads never see each other's videos.
const API_KEY = `sk_test_ui_${crypto.randomUUID().slice(0, 8)}`;

const sim = createSimulatorHandlers({ baseUrl: API, scenario: 'fast', clock: 'manual' });
Object.assign(window, { sim: sim.control, apiKey: API_KEY });

interface Video {
  id: string;
  prompt: string;
  status: string;
  output: { url: string } | null;
  error: { code: string } | null;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${API}${path}`, {
    method,
    headers: { Authorization: `Bearer ${API_KEY}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${json.error?.code ?? res.status}: ${json.error?.message ?? ''}`);
  return json as T;
}

function render(row: HTMLTableRowElement, video: Video): void {
  row.dataset.status = video.status;
  const detail = video.output ? `<a href="${video.output.url}">video</a>` : (video.error?.code ?? '');
  row.innerHTML = `<td>${video.id}</td><td></td><td data-testid="status">${video.status}</td><td data-testid="detail">${detail}</td>`;
  row.children[1]!.textContent = video.prompt;
}

async function follow(row: HTMLTableRowElement, id: string): Promise<void> {
  for (;;) {
    const video = await call<Video>('GET', `/v1/videos/${id}`);
    render(row, video);
    if (['succeeded', 'failed', 'canceled'].includes(video.status)) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const form = document.getElementById('create') as HTMLFormElement;
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = document.getElementById('prompt') as HTMLInputElement;
  const row = document.createElement('tr');
  document.getElementById('videos')!.append(row);
  try {
    const video = await call<Video>('POST', '/v1/videos', { model: 'video-3.2', prompt: input.value });
    render(row, video);
    input.value = '';
    await follow(row, video.id);
  } catch (e) {
    row.innerHTML = `<td></td><td></td><td data-testid="status">error</td><td data-testid="detail"></td>`;
    row.children[3]!.textContent = (e as Error).message;
  }
});

await setupWorker(...sim.handlers).start({ onUnhandledFrame: 'bypass', quiet: true });
await sim.ready;
document.getElementById('worker')!.textContent = 'Mock service ready';
form.querySelector('button')!.disabled = false;
