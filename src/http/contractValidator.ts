/**
 * Validation of every request and response against openapi.yaml (express-openapi-validator), cut
 * in two so that it fits contract.md's order of checks:
 *
 * - `prepare` runs before the simulator's own checks: it matches the request to its operation and
 *   hooks the validation of whatever response the request gets, so that the answers of the checks
 *   made before the parameters (401, 429, a body that cannot be read, an idempotent replay) are
 *   validated too, not only the routes' own. A problem matching the route (a malformed
 *   percent-encoding) is kept for its turn.
 * - `validate` runs at the parameters' turn: that kept problem, then the request's parameters and
 *   body.
 *
 * Compiling the validator takes a few hundred milliseconds, so every app of the process shares one
 * (it keeps no per-app state that the simulator uses: path parameters are read raw by the routes).
 * It is two validators, one for the /v1 paths of the contract and one for the /_sim paths, each run
 * only on its own requests: the validator looks a request's route up by trying every path of its
 * document in turn, so the /v1 requests, the hot path, try three paths instead of fifteen.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { loadOpenapiDocument } from '../openapi.js';
import { context } from './context.js';
import { SIM_PATH, V1_PATH, onPaths } from './paths.js';
import { invoke, isError, series } from './series.js';
import './routeMatcherCache.js';

export interface ContractValidator {
  /** Before the checks: matches the operation (problems kept for `validate`) and hooks response validation. */
  prepare: RequestHandler;
  /** At the parameters' turn: a kept problem, then the request's parameters and body. */
  validate: RequestHandler;
}

/** The validator's middlewares, by the names express-openapi-validator 5 gives them, in its order. */
const PREPARE = ['pathParamsMiddleware', 'metadataMiddleware', 'responseMiddleware'];
const VALIDATE = ['securityMiddleware', 'requestMiddleware'];

let shared: { v1: ContractValidator; control: ContractValidator } | undefined;

/** The shared validators of the /v1 paths and of the /_sim paths. */
export function contractValidators(): { v1: ContractValidator; control: ContractValidator } {
  shared ??= {
    v1: validatorFor((path) => path.startsWith('/v1/')),
    control: validatorFor((path) => path.startsWith('/_sim/')),
  };
  return shared;
}

/**
 * Both halves in one middleware, for a server without checks of its own in between: the bench's
 * floor baseline (bench/baselines/express-validator.mjs) puts exactly the simulator's validation
 * in front of trivial handlers with it.
 */
export function contractValidator(): RequestHandler {
  const { v1, control } = contractValidators();
  return series(onPaths(V1_PATH, series(v1.prepare, v1.validate)), onPaths(SIM_PATH, series(control.prepare, control.validate)));
}

/** express-openapi-validator on the contract restricted to some of its paths, cut in two. */
function validatorFor(keep: (path: string) => boolean): ContractValidator {
  const document = loadOpenapiDocument();
  const paths = document.paths as Record<string, unknown>;
  document.paths = Object.fromEntries(Object.entries(paths).filter(([path]) => keep(path)));
  const middlewares = OpenApiValidator.middleware({
    apiSpec: document as never,
    // openapi.yaml is linted in CI (redocly, spectral) and checked by the test suite; validating it
    // again against the OpenAPI meta-schema at every start would cost ~0.4 s of start-up.
    validateApiSpec: false,
    // The contract has no multipart bodies: no file-upload middleware on every request.
    fileUploader: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: false },
    validateResponses: true,
    validateSecurity: false,
    validateFormats: true,
  }) as RequestHandler[];
  const byName = new Map(middlewares.map((m) => [m.name, m]));
  const names = [...byName.keys()];
  if (names.length !== PREPARE.length + VALIDATE.length || ![...PREPARE, ...VALIDATE].every((n) => byName.has(n))) {
    // A new version of the validator named or ordered its middlewares otherwise: say so at start.
    throw new Error(`express-openapi-validator's middlewares are ${names.join(', ')}; expected ${[...PREPARE, ...VALIDATE].join(', ')}`);
  }
  const pick = (n: string) => byName.get(n) as RequestHandler;
  const [pathParams, metadata, response] = PREPARE.map(pick) as [RequestHandler, RequestHandler, RequestHandler];
  return {
    prepare: series(pathParams, keepProblem(metadata), answerLateErrors(response)),
    validate: series(reportKeptProblem, ...VALIDATE.map(pick)),
  };
}

/**
 * Where an app renders an error that comes after its middleware chain has moved on (see
 * `answerLateErrors`): its last error handler, set by createApp.
 */
export interface ContractValidatorLocals {
  renderError?: ErrorRequestHandler;
}

/**
 * The response validator installs its hook and passes the request on at once; when a response then
 * fails validation, it reports the error through that same `next`, long after the chain moved on
 * (even from within the error handler, for the checks' own answers). Such a late error is rendered
 * by the app's error handler directly, as a logged and counted 500.
 */
function answerLateErrors(response: RequestHandler): RequestHandler {
  return (req, res, next) => {
    let passed = false;
    return response(req, res, (err?: unknown) => {
      if (!passed) {
        passed = true;
        return next(err);
      }
      const renderError = (req.app.locals as ContractValidatorLocals).renderError;
      if (renderError) renderError(err, req, res, () => undefined);
      else next(err);
    });
  };
}

/** Runs a middleware; an error it reports is kept in the request's context instead of answered. */
function keepProblem(handler: RequestHandler): RequestHandler {
  return (req, res, next) =>
    invoke(handler, req, res, (err?: unknown) => {
      if (isError(err)) context(req).validatorProblem = err;
      next();
    });
}

const reportKeptProblem: RequestHandler = (req, _res, next) => {
  next(context(req).validatorProblem);
};
