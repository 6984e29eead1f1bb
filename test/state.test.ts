/**
 * Durable state in-process (`createSimulator({ state })`): what the file holds and when it is
 * written, health and the download, the in-process control calls kept like HTTP ones, refusals.
 */
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { compactStateFile } from '../src/persistence/compact.js';
import { readStateRows } from '../src/persistence/stateLines.js';
import { StateRefusedError } from '../src/persistence/open.js';
import { parseStateText, tempStateFiles } from './stateFiles.js';
import { VALID_IMAGE, VALID_VIDEO, bearer, createVideo, getVideo, makeSim } from './helpers.js';

const { dir, stateFile } = tempStateFiles('sim-state-inprocess-');
const methodsIn = (file: string): string[] =>
  parseStateText(readFileSync(file, 'utf8')).entries.flatMap((e) => ('line' in e ? [`${e.line.method} ${e.line.path}`] : []));

/** A state file that holds one create. */
async function fileWithOneCreate(): Promise<string> {
  const file = stateFile();
  const sim = makeSim({ state: file });
  await createVideo(sim);
  await sim.close();
  return file;
}

describe('createSimulator({ state })', () => {
  it('writes a state-changing request before answering it, and a poll with the next one, in order', async () => {
    const file = stateFile();
    const sim = makeSim({ state: file });
    await sim.listen(0);
    const created = await createVideo(sim);
    expect(methodsIn(file)).toEqual(['POST /v1/videos']);
    await getVideo(sim, created.body.id);
    // The poll waits in memory (at most a second)...
    expect(methodsIn(file)).toEqual(['POST /v1/videos']);
    await request(sim.app).delete(`/v1/videos/${created.body.id}`).set(bearer());
    // ...and is written ahead of the next state-changing request.
    expect(methodsIn(file)).toEqual(['POST /v1/videos', `GET /v1/videos/${created.body.id}`, `DELETE /v1/videos/${created.body.id}`]);
    await getVideo(sim, created.body.id);
    await sim.close();
    // Closing writes what was held.
    expect(methodsIn(file)).toHaveLength(4);
  });

  it('keeps in-process control calls like HTTP ones, and restores them', async () => {
    const file = stateFile();
    const first = makeSim({ state: file });
    const created = await createVideo(first);
    first.clock.advance(3, 'sk_test_alice');
    first.faults.queue({ method: 'POST', path: '/v1/videos', api_key: 'sk_test_alice', status: 500, times: 2 });
    const before = { clock: first.clock.get('sk_test_alice'), faults: first.faults.list(), video: (await getVideo(first, created.body.id)).body };
    await first.close();

    const second = makeSim({ state: file });
    // The create, the advance, the queued fault, the read of the account's clock (its request id
    // counts in that account) and the poll; control reads that name no account leave no line.
    expect(second.stateRestored).toBe(5);
    expect({ clock: second.clock.get('sk_test_alice'), faults: second.faults.list(), video: (await getVideo(second, created.body.id)).body }).toEqual(before);
    expect((await createVideo(second)).status).toBe(500);
    await second.close();
  });

  it('keeps a download’s take of a queued media fault: after a restart the fault has the shots it had left', async () => {
    const file = stateFile();
    const first = makeSim({ state: file });
    const created = await createVideo(first);
    await request(first.app).post(`/_sim/generations/${created.body.id}/finish`).expect(200);
    first.faults.queue({ path: '/cdn/videos/*', network: 'slow', bytes_per_second: 10_485_760, times: 2 });
    const video = `/cdn/videos/${created.body.id}.mp4`;
    await request(first.app).get(video).expect(200);
    const left = first.faults.list();
    expect(left.faults.map((f) => f.times_left)).toEqual([1]);
    await first.close();
    const takes = [...readStateRows(readFileSync(file, 'utf8').split('\n')).entries].flatMap((e) => ('mediaFault' in e ? [e.mediaFault] : []));
    expect(takes).toEqual([{ method: 'GET', path: video }]);
    // A compaction keeps it too (in its snapshot of the queue).
    const compacted = stateFile();
    copyFileSync(file, compacted);
    await compactStateFile(compacted, () => {});
    const fromSnapshot = makeSim({ state: compacted });
    expect(fromSnapshot.faults.list()).toEqual(left);
    await fromSnapshot.close();

    const second = makeSim({ state: file });
    expect(second.faults.list()).toEqual(left);
    // The last shot is taken once, by the next download, and that take is kept as well.
    await request(second.app).get(video).expect(200);
    expect(second.faults.list().faults).toEqual([]);
    await second.close();
    const third = makeSim({ state: file });
    expect(third.faults.list().faults).toEqual([]);
    await third.close();
  });

  it('says which media fault take found nothing queued, and refuses one that names no path', async () => {
    const file = await fileWithOneCreate();
    const header = `${readFileSync(file, 'utf8').split('\n')[0]}\n`;
    writeFileSync(file, `${header}{"media_fault":{"method":"GET","path":"/cdn/videos/vid_gone.mp4"}}\n`);
    const sim = makeSim({ state: file });
    expect(sim.logs).toEqual([
      `state: ${file}: line 2 (GET /cdn/videos/vid_gone.mp4): took a queued media fault when first downloaded, none is queued for it now (the state was written by a simulator that answers differently: version 0.1.0)`,
    ]);
    await sim.close();
    writeFileSync(file, `${header}{"media_fault":{"method":"GET"}}\n`);
    expect(() => makeSim({ state: file })).toThrow(/line 2: media_fault\.path: expected a path \(a string that begins with \/\)/);
    writeFileSync(file, `${header}{"media_fault":{"method":"GET\\n${'x'.repeat(5000)}","path":"/cdn/videos/vid_gone.mp4"}}\n`);
    expect(() => makeSim({ state: file })).toThrow(/line 2: media_fault\.method: expected an HTTP method, such as "GET"/);
  });

  it('shows the file in health, and answers the state compacted as a download at GET /_sim/state', async () => {
    const file = stateFile();
    const sim = makeSim({ state: file });
    await sim.listen(0);
    await createVideo(sim);
    const health = await request(sim.app).get('/_sim/health');
    expect(health.body.state).toEqual({ file, bytes: statSync(file).size, lines: 1, compacted_at: null });
    const download = await request(sim.app).get('/_sim/state').buffer(true).parse((res, done) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => done(null, text));
    });
    expect(download.status).toBe(200);
    expect(download.headers['content-type']).toBe('application/x-ndjson');
    expect(download.headers['content-disposition']).toBe('attachment; filename="state.jsonl"');
    // The header and a snapshot of the state now (its head, its rows, its end): no request line, and the file left as it is.
    const rows = (download.body as string).split('\n');
    expect(rows[0]).toBe(readFileSync(file, 'utf8').split('\n')[0]);
    expect(JSON.parse(rows[1] as string).snapshot).toMatchObject({ format: 2, seq: 1 });
    expect(rows.slice(-2)).toEqual([`{"snapshot_end":{"rows":${rows.length - 4}}}`, '']);
    expect(parseStateText(download.body as string).entries).toEqual([]);
    expect(methodsIn(file)).toEqual(['POST /v1/videos']);
    await sim.close();
  });

  /**
   * A state file of one create that says it was answered 402, as if another simulator had refused
   * it. Never listening, the simulator that wrote it answered with the address http://localhost/cdn.
   */
  async function fileAnsweredOtherwise(): Promise<string> {
    const file = stateFile();
    const first = makeSim({ state: file });
    await createVideo(first);
    await first.close();
    writeFileSync(file, readFileSync(file, 'utf8').replace('"status":200}', '"status":402}'));
    return file;
  }

  it('says which line answered otherwise than when it was written', async () => {
    const file = await fileAnsweredOtherwise();
    const second = makeSim({ state: file });
    expect(second.logs).toEqual([
      `state: ${file}: line 2 (POST /v1/videos): answered 402 when first handled, 200 now (the state was written by a simulator that answers differently: version 0.1.0)`,
    ]);
    await second.close();
  });

  it('replays the file once, also when the simulator then listens on another address than the file names', async () => {
    const second = makeSim({ state: await fileAnsweredOtherwise() });
    await second.listen(0);
    // Every replay of the line says it answered otherwise.
    expect(second.logs.filter((line) => line.includes('line 2 (POST /v1/videos): answered 402 when first handled'))).toHaveLength(1);
    await second.close();
  });

  it('answers a key stored before a restart with the media address the restored simulator listens on', async () => {
    const file = stateFile();
    const first = makeSim({ state: file });
    const create = () => request(first.app).post('/v1/images').set(bearer()).set('Idempotency-Key', 'image-once').send(VALID_IMAGE);
    const image = await create();
    expect(image.body.url).toMatch(/^http:\/\/localhost\/cdn\/images\/img_/);
    await first.close();

    const second = makeSim({ state: file });
    const url = await second.listen(0);
    const again = await request(second.app).post('/v1/images').set(bearer()).set('Idempotency-Key', 'image-once').send(VALID_IMAGE);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(image.text.replace('"http://localhost/cdn/', `"${url}/cdn/`));
    expect((await request(second.app).get(new URL(again.body.url as string).pathname)).status).toBe(200);
    await second.close();
  });

  it('gives a restored answer the new media address in its URLs only: a prompt that reads like one comes back as sent', async () => {
    const file = stateFile();
    const first = makeSim({ state: file });
    const lookalike = 'http://localhost/cdn/x';
    const video = { ...VALID_VIDEO, prompt: lookalike, negative_prompt: `${lookalike}/blurry` };
    const image = { prompt: lookalike };
    const createdVideo = await request(first.app).post('/v1/videos').set(bearer()).set('Idempotency-Key', 'video-once').send(video);
    const createdImage = await request(first.app).post('/v1/images').set(bearer()).set('Idempotency-Key', 'image-once').send(image);
    expect(createdImage.body.url).toMatch(/^http:\/\/localhost\/cdn\/images\/img_/);
    await first.close();

    const second = makeSim({ state: file });
    const url = await second.listen(0);
    const againVideo = await request(second.app).post('/v1/videos').set(bearer()).set('Idempotency-Key', 'video-once').send(video);
    const againImage = await request(second.app).post('/v1/images').set(bearer()).set('Idempotency-Key', 'image-once').send(image);
    expect(againVideo.headers['idempotent-replayed']).toBe('true');
    expect(againVideo.text).toBe(createdVideo.text);
    expect(againVideo.body).toMatchObject({ prompt: lookalike, negative_prompt: `${lookalike}/blurry` });
    expect(againImage.headers['idempotent-replayed']).toBe('true');
    expect(againImage.body).toEqual({ ...createdImage.body, url: createdImage.body.url.replace('http://localhost/cdn/', `${url}/cdn/`) });
    expect(againImage.body.prompt).toBe(lookalike);
    await second.close();
  });

  it('refuses a scenario or a clock that differs from the file\'s, and what is not a state file', async () => {
    const file = await fileWithOneCreate();
    expect(() => makeSim({ state: file, scenario: 'default' })).toThrow(StateRefusedError);
    expect(() => makeSim({ state: file, clock: 'realtime' })).toThrow(/--clock realtime asks for another clock/);

    const transcript = join(dir, 'a-transcript.jsonl');
    writeFileSync(transcript, '{"transcript":1}\n');
    expect(() => makeSim({ state: transcript })).toThrow(/this is a transcript \(written by --record\), not a state file/);
    const future = join(dir, 'future.jsonl');
    writeFileSync(future, '{"state":2,"version":"9.0.0"}\n');
    expect(() => makeSim({ state: future })).toThrow(/state format 2 \(written by version "9.0.0" of the simulator\); this version reads format 1/);
    expect(() => makeSim({ state: '/dev/null' })).toThrow(/\/dev\/null is not a regular file/);
  });
});
