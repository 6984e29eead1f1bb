/**
 * `sim drift --target URL --api-key KEY [--spend-limit-cents N] [--json FILE]`: puts the
 * simulator's assumptions to a service and prints which still hold. Exit 0 when nothing is
 * contradicted, 1 when something is, 2 when the target cannot be reached or refuses the key (and
 * on a usage error, through the program's own handling).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { DEFAULT_PRICES } from '../drift/prices.js';
import { url } from './parsers.js';

interface DriftFlags {
  target: string;
  apiKey: string;
  spendLimitCents: number;
  videoPriceCents: number;
  imagePriceCents: number;
  json?: string;
}

function cents(name: string) {
  return (value: string): number => {
    if (!/^\d{1,9}$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be a whole number of cents (0 or more).`);
    return Number(value);
  };
}

const HELP = `
What it sends: free probes always (authentication errors, validation errors, unknown ids and
routes, the list); paid probes only within --spend-limit-cents, in this order: an image; a video
created and canceled at once; an idempotent create and its replay (the video canceled at once).
Each request that may create something is counted at its full list price, by default the bundled
default scenario's (a probe video, 4 s at 720p: ${DEFAULT_PRICES.videoCents} cents with its keyframe; an image:
${DEFAULT_PRICES.imageCents} cents), so all of them run from --spend-limit-cents ${DEFAULT_PRICES.imageCents + 3 * DEFAULT_PRICES.videoCents}. A canceled video is not charged.

Each row: confirmed, contradicted (with the request, what the simulator expects and what the
target answered) or not_observed (with why); contract.schema is contradicted when an answer does
not match openapi.yaml.

Exit status: 0 nothing contradicted; 1 something contradicted; 2 the target cannot be reached,
refused the key, or a flag is wrong.`;

export function registerDriftCommand(program: Command): void {
  program
    .command('drift')
    .description("put the simulator's assumptions to a service (the real one) and report which still hold")
    .addOption(new Option('--target <url>', "the service's base URL ({base_url}); probes go to <url>/v1/...").makeOptionMandatory().argParser(url))
    .addOption(new Option('--api-key <key>', 'the API key the probes authenticate with').env('SIM_DRIFT_API_KEY').makeOptionMandatory())
    .addOption(new Option('--spend-limit-cents <n>', 'what the paid probes may cost at most, in cents').default(0).argParser(cents('--spend-limit-cents')))
    .addOption(
      new Option('--video-price-cents <n>', 'the list price a probe video (4 s, 720p, with a keyframe) is counted at').default(DEFAULT_PRICES.videoCents).argParser(cents('--video-price-cents')),
    )
    .addOption(new Option('--image-price-cents <n>', 'the list price an image is counted at').default(DEFAULT_PRICES.imageCents).argParser(cents('--image-price-cents')))
    .addOption(new Option('--json <file>', 'also write the rows, the cancels and the spend as JSON to FILE'))
    .addHelpText('after', HELP)
    .action(async (flags: DriftFlags) => {
      try {
        // The drift check is loaded only when asked for: the server's start does not pay for it.
        const [{ runDrift }, { formatReport, reportJson }] = await Promise.all([import('../drift/run.js'), import('../drift/report.js')]);
        const report = await runDrift({
          target: flags.target,
          apiKey: flags.apiKey,
          spendLimitCents: flags.spendLimitCents,
          prices: { videoCents: flags.videoPriceCents, imageCents: flags.imagePriceCents },
        });
        const text = formatReport(report);
        if (report.aborted !== undefined) process.stderr.write(text);
        else process.stdout.write(text);
        if (flags.json !== undefined) writeFileSync(flags.json, reportJson(report));
        process.exitCode = report.exitCode;
      } catch (e) {
        process.stderr.write(`sim drift: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
        process.exitCode = 2;
      }
    });
}
