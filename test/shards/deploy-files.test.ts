/**
 * The deployment files under deploy/: the nginx.conf each one mounts is exactly what `sim deploy
 * nginx` prints for the shards it declares (one place each), and the Kubernetes base renders
 * offline (`kubectl kustomize`) into the objects docs/scaling.md describes, each checked against
 * the Kubernetes schemas (see kubernetesSchemas.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain script, shared with scripts/deploy-files.mjs
import { deployments } from '../../scripts/deployments.mjs';
import { deployNginx } from './cluster.js';
import { validateKubernetesObject } from './kubernetesSchemas.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): string => readFileSync(path, 'utf8');

describe('deployment files', () => {
  it.each((deployments(ROOT, read) as { file: string; args: string[] }[]).map((d) => [d.file, d.args] as const))(
    '%s is what sim deploy nginx prints for its shards (npm run deploy:files rewrites it)',
    (file, args) => {
      expect(read(`${ROOT}${file}`), `${file} is out of date: run npm run deploy:files`).toBe(deployNginx(args));
    },
  );

  describe('the Kubernetes base', () => {
    const rendered = execFileSync('kubectl', ['kustomize', `${ROOT}deploy/kubernetes`], { encoding: 'utf8' });
    const objects = parseAllDocuments(rendered).map((d) => d.toJS() as { kind: string; metadata: { name: string }; [k: string]: any });
    const find = (kind: string, name: string) => {
      const found = objects.find((o) => o.kind === kind && (o.metadata.name === name || o.metadata.name.startsWith(`${name}-`)));
      expect(found, `${kind} ${name}`).toBeDefined();
      return found as any;
    };

    it('renders a StatefulSet of N shards (--shard auto/N from its replicas), each with its state volume, probes on /_sim/health and the token from a Secret', () => {
      const sts = find('StatefulSet', 'sim');
      const n = sts.spec.replicas;
      expect(n).toBeGreaterThan(1);
      const container = sts.spec.template.spec.containers[0];
      const env = Object.fromEntries(container.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]));
      expect(env.SIM_SHARD).toBe(`auto/${n}`);
      expect(env.SIM_STATE).toBe('/data/state.jsonl');
      expect(env.SIM_CDN_URL).toBe('$(SIM_PUBLIC_URL)/shards/$(POD_INDEX)/cdn');
      expect(env.SIM_CONTROL_TOKEN).toEqual({ secretKeyRef: { name: 'sim-control-token', key: 'token' } });
      expect(container.readinessProbe.httpGet.path).toBe('/_sim/health');
      expect(container.livenessProbe.httpGet.path).toBe('/_sim/health');
      expect(sts.spec.volumeClaimTemplates.map((v: any) => v.metadata.name)).toEqual(['state']);
      const headless = find('Service', sts.spec.serviceName);
      expect(headless.spec.clusterIP).toBe('None');
    });

    it("renders the proxy with the nginx.conf sim deploy nginx writes for the StatefulSet's shards", () => {
      const sts = find('StatefulSet', 'sim');
      const proxy = find('Deployment', 'sim-proxy');
      const configMapName = proxy.spec.template.spec.volumes.find((v: any) => v.name === 'config').configMap.name;
      const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === configMapName);
      const shards = Array.from({ length: sts.spec.replicas }, (_, i) => `http://sim-${i}.${sts.spec.serviceName}:8080`).join(',');
      // On every interface of its pod: the Service is what reaches it.
      expect(configMap?.data['nginx.conf']).toBe(deployNginx(['--shards', shards, '--listen', '0.0.0.0:8080']));
      expect(find('Service', 'sim-proxy').spec.ports[0].targetPort).toBe('http');
    });

    it.each([
      ['StatefulSet', 'sim'],
      ['Deployment', 'sim-proxy'],
    ])('%s %s is hardened: read-only root, no privilege escalation, no capability, RuntimeDefault seccomp, no service account token, a startup probe', (kind, name) => {
      const pod = find(kind, name).spec.template.spec;
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      for (const container of pod.containers) {
        expect(container.securityContext, container.name).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(container.startupProbe, container.name).toBeDefined();
        expect(container.livenessProbe.initialDelaySeconds, 'the startup probe holds liveness off').toBeUndefined();
        expect(container.resources.requests.cpu).toBeDefined();
        expect(container.resources.requests.memory).toBeDefined();
        expect(container.resources.limits.memory).toBeDefined();
        // Every path it writes is a volume: the state (/data), /tmp, nginx's prefix.
        const writable = (container.volumeMounts as { name: string; mountPath: string; readOnly?: boolean }[]).filter((m) => !m.readOnly).map((m) => m.mountPath);
        expect(writable.length, container.name).toBeGreaterThan(0);
      }
    });

    it("gives a shard room for its largest state three times over, and memory for every bound full", () => {
      const sts = find('StatefulSet', 'sim');
      const gib = (quantity: string): number => {
        const m = /^(\d+(?:\.\d+)?)(Mi|Gi)$/.exec(quantity);
        expect(m, quantity).not.toBeNull();
        return Number(m![1]) / (m![2] === 'Mi' ? 1024 : 1);
      };
      expect(gib(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage)).toBeGreaterThanOrEqual(3);
      const container = sts.spec.template.spec.containers[0];
      expect(gib(container.resources.limits.memory)).toBeGreaterThanOrEqual(1.5);
      expect(container.volumeMounts).toEqual([
        { name: 'state', mountPath: '/data' },
        { name: 'tmp', mountPath: '/tmp' },
      ]);
      expect(sts.spec.template.spec.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
      const proxy = find('Deployment', 'sim-proxy').spec.template.spec;
      expect(proxy.containers[0].volumeMounts.find((m: { mountPath: string }) => m.mountPath === '/var/lib/sim-proxy')).toMatchObject({ name: 'prefix' });
      expect(proxy.volumes.find((v: { name: string }) => v.name === 'prefix').emptyDir).toBeDefined();
    });

    it('every rendered object validates against the Kubernetes schemas', async () => {
      expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'ConfigMap', 'Deployment', 'Service', 'Service', 'StatefulSet']);
      for (const object of objects) expect(await validateKubernetesObject(object), `${object.kind} ${object.metadata.name}`).toEqual([]);
    });
  });
});
