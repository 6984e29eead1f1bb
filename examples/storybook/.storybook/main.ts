import type { StorybookConfig } from '@storybook/html-vite';

const config: StorybookConfig = {
  stories: ['../src/**/*.stories.ts'],
  addons: ['msw-storybook-addon'],
  framework: { name: '@storybook/html-vite', options: {} },
  // public/ holds msw's mockServiceWorker.js (`msw init`), served at /mockServiceWorker.js.
  staticDirs: ['../public'],
  core: { disableTelemetry: true },
};

export default config;
