/**
 * The dashboard at /_sim/: static files from assets/dashboard, no build step, and one module the
 * simulator writes, `ui/addresses.js`: the control endpoints and the forms of media files, from the
 * one place each is stated (`src/client/api.ts`, `src/core/mediaPaths.ts`), so that the page
 * (plain browser JavaScript) names them and never writes them again.
 */
import type { Router } from 'express';
import { fileURLToPath } from 'node:url';
import { CONTROL_ENDPOINTS } from '../client/api.js';
import { MEDIA_FILES, MEDIA_ROOT, mediaFilePath, type MediaKind } from '../core/mediaPaths.js';
import { loadExpress } from './express.js';

export const DASHBOARD_DIR: string = fileURLToPath(new URL('../../assets/dashboard/', import.meta.url));

/** Each media file's path below the CDN address, `{id}` standing for its id: `{ image: 'images/{id}.png', ... }`. */
const MEDIA_FORMS = Object.fromEntries((Object.keys(MEDIA_FILES) as MediaKind[]).map((kind) => [kind, mediaFilePath(kind, '{id}')]));

/** The dashboard's `ui/addresses.js`: each control endpoint's method and path (below `/_sim/`), where media are served, each media file's form. */
export const ADDRESSES_JS = `// Written by the simulator (src/http/dashboard.ts) from src/client/api.ts and src/core/mediaPaths.ts.
export const CONTROL_ENDPOINTS = ${JSON.stringify(CONTROL_ENDPOINTS, null, 2)};
export const MEDIA_ROOT = ${JSON.stringify(MEDIA_ROOT)};
export const MEDIA_FORMS = ${JSON.stringify(MEDIA_FORMS, null, 2)};
`;

/** Mounted at /_sim: `/_sim` redirects to `/_sim/`, which serves the page; `/_sim/ui/*` its files. */
export function createDashboardRouter(): Router {
  const express = loadExpress();
  const router = express.Router();
  // Inside the mount, '/_sim' and '/_sim/' both arrive as '/': tell them apart by the original URL.
  router.get('/', (req, res) => {
    if (req.originalUrl.split('?')[0] === '/_sim') res.redirect(301, '/_sim/');
    else res.sendFile('index.html', { root: DASHBOARD_DIR });
  });
  router.get('/ui/addresses.js', (req, res) => {
    res.set('Cache-Control', 'no-cache').type('text/javascript').send(ADDRESSES_JS);
  });
  router.use('/ui', express.static(DASHBOARD_DIR, { fallthrough: true, index: false }));
  return router;
}
