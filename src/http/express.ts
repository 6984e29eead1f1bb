/**
 * Express, loaded on first use. Only the files (media under `/cdn`, the dashboard) and `sim.app`
 * need it; the JSON API is a plain `node:http` handler. Loading Express and the packages it pulls in
 * is the larger part of what importing the simulator would otherwise cost (bench/README.md), so a
 * simulator that only answers the API never loads it, and the first file request pays it once.
 * Express is CommonJS, so it loads synchronously and `sim.app` can stay a plain property.
 */
import { createRequire } from 'node:module';
import type expressModule from 'express';

export type ExpressModule = typeof expressModule;

let loaded: ExpressModule | undefined;

export function loadExpress(): ExpressModule {
  return (loaded ??= createRequire(import.meta.url)('express') as ExpressModule);
}
