/**
 * The dashboard at /_sim/: static files from assets/dashboard, no build step.
 */
import type { Router } from 'express';
import { fileURLToPath } from 'node:url';
import { loadExpress } from './express.js';

export const DASHBOARD_DIR: string = fileURLToPath(new URL('../../assets/dashboard/', import.meta.url));

/** Mounted at /_sim: `/_sim` redirects to `/_sim/`, which serves the page; `/_sim/ui/*` its files. */
export function createDashboardRouter(): Router {
  const express = loadExpress();
  const router = express.Router();
  // Inside the mount, '/_sim' and '/_sim/' both arrive as '/': tell them apart by the original URL.
  router.get('/', (req, res) => {
    if (req.originalUrl.split('?')[0] === '/_sim') res.redirect(301, '/_sim/');
    else res.sendFile('index.html', { root: DASHBOARD_DIR });
  });
  router.use('/ui', express.static(DASHBOARD_DIR, { fallthrough: true, index: false }));
  return router;
}
