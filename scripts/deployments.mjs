// The deployments under deploy/ and the `sim deploy nginx` arguments of each, read from the files
// that declare their shards (one place each): the sim-N services of the Compose file, the replicas
// of the Kubernetes StatefulSet. Used by scripts/deploy-files.mjs and its test. The proxy listens on
// every interface of its container (0.0.0.0): what reaches it is what publishes it (Compose's port,
// by default on the host's loopback; the Kubernetes Service).
import { parse, parseAllDocuments } from 'yaml';

export function deployments(root, read) {
  const compose = parse(read(`${root}deploy/compose/compose.yaml`));
  const composeShards = Object.keys(compose.services).filter((name) => /^sim-\d+$/.test(name)).sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  const statefulSet = parseAllDocuments(read(`${root}deploy/kubernetes/statefulset.yaml`))
    .map((d) => d.toJS())
    .find((o) => o?.kind === 'StatefulSet');
  const replicas = statefulSet.spec.replicas;
  return [
    {
      file: 'deploy/compose/nginx.conf',
      args: ['--shards', composeShards.map((name) => `http://${name}:8080`).join(','), '--listen', '0.0.0.0:8080'],
    },
    {
      file: 'deploy/kubernetes/nginx.conf',
      args: ['--shards', Array.from({ length: replicas }, (_, i) => `http://${statefulSet.metadata.name}-${i}.${statefulSet.spec.serviceName}:8080`).join(','), '--listen', '0.0.0.0:8080'],
    },
  ];
}
