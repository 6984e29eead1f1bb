import type { Preview } from '@storybook/html-vite';
import { setupWorker } from 'msw/browser';
import { mswLoader } from 'msw-storybook-addon/csf3';
import { sim } from '../src/sim';

const preview: Preview = {
  // Project loaders finish before the stories' own: the worker answers before a story's loader
  // calls the API. The simulator's handlers are the worker's initial handlers, so they survive the
  // addon's reset between stories.
  loaders: [
    mswLoader(async () => {
      const worker = setupWorker(...sim.handlers);
      await worker.start({ onUnhandledFrame: 'bypass', quiet: true });
      await sim.ready;
      return worker;
    }),
  ],
};

export default preview;
