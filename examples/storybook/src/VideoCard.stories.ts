/**
 * One story per status of a generation. Each story has its own API key (its own account, with
 * its own clock) and a loader that creates a video through the API (answered by MSW's worker with
 * the simulator's handlers) and brings it to its status with the control API, on the manual clock:
 * `sim.control.generations.advance/finish/cancel`, or a prompt trigger.
 */
import type { Meta, StoryObj } from '@storybook/html-vite';
import { createVideoCard } from './VideoCard';
import { api, sim, type Video } from './sim';

type Status = 'queued' | 'processing' | 'succeeded' | 'failed' | 'canceled';

/** A loader that makes this story's video and moves it to `status`. */
function videoIn(status: Status, prompt = 'A red kite over a windy beach, late afternoon light.') {
  return async (): Promise<{ video: Video }> => {
    const apiKey = `sk_test_story_${status}`;
    // The same story rendered again starts from an empty account.
    await sim.control.reset({ apiKey });
    const { id } = await api<Video>(apiKey, 'POST', '/v1/videos', { model: 'video-3.2', prompt, duration_seconds: 4, resolution: '720p' });
    if (status === 'processing') await sim.control.generations.advance(id, apiKey); // past the queue, into keyframe
    if (status === 'succeeded' || status === 'failed') await sim.control.generations.finish(id, apiKey); // to its end at once
    if (status === 'canceled') await sim.control.generations.cancel(id, apiKey);
    return { video: await api<Video>(apiKey, 'GET', `/v1/videos/${id}`) };
  };
}

const meta: Meta = {
  title: 'Video/Status',
  render: (_args, { loaded }) => createVideoCard((loaded as { video: Video }).video),
};
export default meta;

type Story = StoryObj;

export const Queued: Story = { loaders: [videoIn('queued')] };
export const Processing: Story = { loaders: [videoIn('processing')] };
export const Succeeded: Story = { loaders: [videoIn('succeeded')] };
/** A prompt trigger chooses the outcome: the render stage fails (`render_failed`). */
export const Failed: Story = { loaders: [videoIn('failed', 'A glass city at night [sim:fail=render]')] };
export const Canceled: Story = { loaders: [videoIn('canceled')] };
