/**
 * The media files on the server: the Express router mounted at `MEDIA_ROOT` that hands each
 * request to the media files (`src/media/files.ts`, where every rule of them lives) and writes
 * their answer.
 */
import type { NextFunction, Request, Response, Router } from 'express';
import { createMediaFiles, type MediaCatalog } from '../media/files.js';
import { loadExpress } from './express.js';

export type { MediaCatalog };
export { parseByteRange } from '../media/files.js';

export function createMediaRouter(catalog: MediaCatalog): Router {
  const router = loadExpress().Router();
  const files = createMediaFiles(catalog);
  router.use((req: Request, res: Response, next: NextFunction) => {
    const path = req.url.split('?')[0] ?? '/';
    files({ method: req.method, path, header: (name) => req.get(name) }).then((answer) => {
      res.status(answer.status).set(answer.headers);
      res.end(answer.body === undefined ? undefined : Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
    }, next);
  });
  return router;
}
