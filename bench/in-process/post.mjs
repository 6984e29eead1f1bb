// Shared by the two in-process start-up scripts: one POST /v1/videos on a fresh connection, and the
// line each prints once answered. Only node:http, so that both processes load the same client.
import http from 'node:http';

export const CREATE_BODY = JSON.stringify({ model: 'video-3.2', prompt: 'A lighthouse on a cliff at dawn, waves crashing below.' });

/** POSTs CREATE_BODY to `${url}/v1/videos`; resolves `{ status, text }`. */
export function postCreate(url) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/videos`, {
      method: 'POST',
      agent: false,
      headers: {
        Authorization: 'Bearer sk_test_bench',
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(CREATE_BODY),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(CREATE_BODY);
  });
}

/**
 * Prints `answered {"status":..,"ms":..,"cpuMs":..}` (ms: performance.now(), from the process's
 * start; cpuMs: the CPU time it used, user and system) and exits: 0 on a 200, 1 otherwise.
 */
export function report(answer, label) {
  const ok = answer.status === 200;
  const { user, system } = process.cpuUsage();
  process.stdout.write(`answered ${JSON.stringify({ status: answer.status, ms: performance.now(), cpuMs: (user + system) / 1000 })}\n`);
  if (!ok) process.stderr.write(`${label}: POST /v1/videos answered ${answer.status}: ${answer.text.slice(0, 500)}\n`);
  process.exit(ok ? 0 : 1);
}
