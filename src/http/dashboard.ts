/**
 * The dashboard at /_sim/: static files from assets/dashboard, no build step.
 */
import express, { Router } from 'express';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_DIR: string = fileURLToPath(new URL('../../assets/dashboard/', import.meta.url));

export function createDashboardRouter(): Router {
  const router = Router();
  // Express matches '/_sim' and '/_sim/' alike: tell them apart by the path itself.
  router.get('/_sim', (req, res) => {
    if (req.path === '/_sim') res.redirect(301, '/_sim/');
    else res.sendFile('index.html', { root: DASHBOARD_DIR });
  });
  router.use('/_sim/ui', express.static(DASHBOARD_DIR, { fallthrough: true, index: false }));
  return router;
}
