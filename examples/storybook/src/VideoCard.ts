/**
 * The component of the stories: a card showing one video generation as an app would, its status,
 * its prompt, and by status its player (succeeded), its error (failed) or a note.
 */
import type { Video } from './sim';

const NOTES: Record<string, string> = {
  queued: 'Waiting for a render slot.',
  processing: 'Rendering…',
  verifying: 'Checking the output…',
  canceled: 'Canceled before it finished.',
};

export function createVideoCard(video: Video): HTMLElement {
  const card = document.createElement('article');
  card.className = 'video-card';
  card.dataset.status = video.status;
  card.style.cssText = 'font-family: system-ui, sans-serif; border: 1px solid #ccc; border-radius: 8px; padding: 16px; width: 660px;';

  const heading = document.createElement('h2');
  heading.style.margin = '0 0 8px';
  const status = document.createElement('span');
  status.dataset.testid = 'status';
  status.textContent = video.status;
  status.style.color = { succeeded: '#070', failed: '#a00', canceled: '#666' }[video.status as string] ?? '#05a';
  heading.append('Status: ', status);

  const prompt = document.createElement('p');
  prompt.textContent = video.prompt;
  const id = document.createElement('code');
  id.textContent = video.id;
  card.append(heading, prompt, id);

  if (video.status === 'succeeded' && video.output) {
    const player = document.createElement('video');
    player.dataset.testid = 'player';
    player.src = video.output.url;
    player.poster = video.output.thumbnail_url;
    player.controls = true;
    player.muted = true;
    player.preload = 'auto';
    player.width = 640;
    player.style.display = 'block';
    player.style.marginTop = '8px';
    card.append(player);
  } else if (video.status === 'failed' && video.error) {
    const error = document.createElement('p');
    error.dataset.testid = 'error';
    error.style.color = '#a00';
    error.textContent = `${video.error.code}: ${video.error.message}`;
    card.append(error);
  } else {
    const note = document.createElement('p');
    note.textContent = NOTES[video.status] ?? '';
    card.append(note);
  }
  return card;
}
