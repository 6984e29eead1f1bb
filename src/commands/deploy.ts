/**
 * `sim deploy nginx --shards URL,URL,... [--listen PORT|ADDR:PORT] [--workers N] [--max-hung-connections N]`: prints the nginx configuration that puts
 * N shards behind one address (src/deploy/nginx.ts says what it routes where; docs/scaling.md how
 * to run it). Exit status 2 for a value it cannot use, naming it.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { NginxOptionsError, checkListen, checkMaxHung, checkWorkers, nginxConfig, shardAddress } from '../deploy/nginx.js';

const wrapped =
  <T>(check: (value: string) => T) =>
  (value: string): T => {
    try {
      return check(value);
    } catch (e) {
      if (e instanceof NginxOptionsError) throw new InvalidArgumentError(e.message);
      throw e;
    }
  };

/** A comma-separated list of shard URLs, shard 0 first. */
function shardList(value: string): string[] {
  const urls = value.split(',').map((u) => u.trim().replace(/\/+$/, '')).filter((u) => u !== '');
  if (urls.length === 0) throw new NginxOptionsError('--shards: give the shards\' base URLs, shard 0 first, separated by commas');
  for (const url of urls) shardAddress(url);
  return urls;
}

export function registerDeployCommand(program: Command): void {
  const deploy = program.command('deploy').description('print the configuration that runs shards behind a proxy (docs/scaling.md)');
  deploy
    .command('nginx')
    .description("print an nginx.conf that routes each API key to its shard (run it with nginx -p DIR -c nginx.conf -e stderr -g 'daemon off;')")
    .addOption(new Option('--shards <url,url,...>', "the shards' base URLs, shard 0 first").argParser(wrapped(shardList)).makeOptionMandatory())
    .addOption(
      new Option('--listen <port|addr:port>', 'what nginx listens on: a port on 127.0.0.1, or ADDRESS:PORT (0.0.0.0:8080: every interface)')
        .default('8080')
        .argParser(wrapped(checkListen)),
    )
    .addOption(new Option('--workers <n|auto>', "nginx's worker processes (default: one per two shards)").argParser(wrapped(checkWorkers)))
    .addOption(
      new Option('--max-hung-connections <n>', "the shards' limits.max_hung_connections, which nginx makes room for (default: the bundled scenarios' 1000)").argParser(
        wrapped(checkMaxHung),
      ),
    )
    .action((opts: { shards: string[]; listen: string; workers?: number | 'auto'; maxHungConnections?: number }) => {
      process.stdout.write(nginxConfig({ shards: opts.shards, listen: opts.listen, workers: opts.workers, maxHungConnections: opts.maxHungConnections }));
    });
}
