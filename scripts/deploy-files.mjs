// Writes the nginx.conf of each deployment under deploy/ with `sim deploy nginx` (dist/ must be
// built), for the shards that deployment declares: the sim-N services of deploy/compose/compose.yaml,
// the replicas of the StatefulSet in deploy/kubernetes/statefulset.yaml. `npm run deploy:files`;
// test/shards/deploy-files.test.ts checks that the committed files are what this writes.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deployments } from './deployments.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
for (const { file, args } of deployments(root, (path) => readFileSync(path, 'utf8'))) {
  const config = execFileSync(process.execPath, [`${root}dist/cli.js`, 'deploy', 'nginx', ...args], { encoding: 'utf8' });
  writeFileSync(`${root}${file}`, config);
  console.log(`wrote ${file} (sim deploy nginx ${args.join(' ')})`);
}
