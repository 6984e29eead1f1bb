/**
 * Checks a rendered Kubernetes object against the Kubernetes schemas; answers the problems found
 * ([] when none).
 *
 * With the package `kubernetes-models` installed (its validators are generated from Kubernetes'
 * own OpenAPI schemas), each object is checked by the model of its kind: that is the check this
 * test is meant to run, and it is used as soon as the package is a devDependency. Until then, a
 * stand-in does: the part of those schemas that the kinds rendered here use, closed (a field the
 * schema does not have, misspelt or misplaced, is a problem), with their required fields and types,
 * checked by Ajv.
 */
import { Ajv, type ErrorObject } from 'ajv';

type KubernetesObject = { apiVersion?: string; kind: string; [key: string]: unknown };

export async function validateKubernetesObject(object: KubernetesObject): Promise<string[]> {
  const models = await importModels();
  if (models) {
    const [group, version] = (object.apiVersion ?? '').includes('/') ? (object.apiVersion as string).split('/') : ['core', object.apiVersion];
    const module = await import(`kubernetes-models/${group === 'core' ? '' : `${group}/`}${version}/${object.kind}`).catch(() => undefined);
    if (!module) return [`kubernetes-models has no model of ${object.apiVersion} ${object.kind}`];
    try {
      new module[object.kind](object).validate();
      return [];
    } catch (e) {
      return [(e as Error).message];
    }
  }
  const check = standIn.getSchema(`${object.apiVersion} ${object.kind}`);
  if (!check) return [`no schema of ${object.apiVersion} ${object.kind}`];
  return check(object) ? [] : (check.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`);
}

async function importModels(): Promise<unknown> {
  try {
    return await import(/* @vite-ignore */ ['kubernetes', 'models'].join('-'));
  } catch {
    return undefined;
  }
}

// ---- the stand-in: the Kubernetes schemas (v1.30) of the fields these kinds use, closed ----

const closed = (properties: Record<string, object>, required: string[] = []) => ({ type: 'object', additionalProperties: false, required, properties });
const str = { type: 'string' };
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const strMap = { type: 'object', additionalProperties: { type: 'string' } };
const intOrString = { anyOf: [{ type: 'integer' }, { type: 'string' }] };
const arrayOf = (items: object) => ({ type: 'array', items });
const quantity = intOrString;

const objectMeta = closed({ name: str, namespace: str, labels: strMap, annotations: strMap, generateName: str });
const labelSelector = closed({ matchLabels: strMap, matchExpressions: arrayOf(closed({ key: str, operator: str, values: arrayOf(str) }, ['key', 'operator'])) });
const resources = closed({ requests: { type: 'object', additionalProperties: quantity }, limits: { type: 'object', additionalProperties: quantity } });
const probe = closed({
  httpGet: closed({ path: str, port: intOrString, host: str, scheme: str, httpHeaders: arrayOf(closed({ name: str, value: str }, ['name', 'value'])) }, ['port']),
  tcpSocket: closed({ port: intOrString, host: str }, ['port']),
  exec: closed({ command: arrayOf(str) }),
  initialDelaySeconds: int,
  periodSeconds: int,
  timeoutSeconds: int,
  successThreshold: int,
  failureThreshold: int,
});
const keyRef = (extra: Record<string, object> = {}) => closed({ name: str, key: str, optional: bool, ...extra }, ['key']);
const envVar = closed(
  {
    name: str,
    value: str,
    valueFrom: closed({
      fieldRef: closed({ fieldPath: str, apiVersion: str }, ['fieldPath']),
      configMapKeyRef: keyRef(),
      secretKeyRef: keyRef(),
      resourceFieldRef: closed({ resource: str, containerName: str, divisor: quantity }, ['resource']),
    }),
  },
  ['name'],
);
const securityContext = closed({ runAsNonRoot: bool, runAsUser: int, runAsGroup: int, fsGroup: int, readOnlyRootFilesystem: bool, allowPrivilegeEscalation: bool });
const container = closed(
  {
    name: str,
    image: str,
    imagePullPolicy: str,
    command: arrayOf(str),
    args: arrayOf(str),
    ports: arrayOf(closed({ name: str, containerPort: int, protocol: str }, ['containerPort'])),
    env: arrayOf(envVar),
    volumeMounts: arrayOf(closed({ name: str, mountPath: str, readOnly: bool, subPath: str }, ['name', 'mountPath'])),
    readinessProbe: probe,
    livenessProbe: probe,
    startupProbe: probe,
    resources,
    securityContext,
  },
  ['name'],
);
const volume = closed(
  {
    name: str,
    configMap: closed({ name: str, items: arrayOf(closed({ key: str, path: str }, ['key', 'path'])), defaultMode: int, optional: bool }),
    secret: closed({ secretName: str, defaultMode: int, optional: bool }),
    emptyDir: closed({ medium: str, sizeLimit: quantity }),
    persistentVolumeClaim: closed({ claimName: str, readOnly: bool }, ['claimName']),
  },
  ['name'],
);
const podTemplate = closed(
  {
    metadata: objectMeta,
    spec: closed(
      { containers: arrayOf(container), initContainers: arrayOf(container), volumes: arrayOf(volume), securityContext, serviceAccountName: str, terminationGracePeriodSeconds: int },
      ['containers'],
    ),
  },
);
const pvcTemplate = closed(
  {
    metadata: objectMeta,
    spec: closed({ accessModes: arrayOf({ enum: ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] }), resources, storageClassName: str, volumeMode: str }),
  },
);
const top = (apiVersion: string, kind: string, spec: object | undefined, extra: Record<string, object> = {}) =>
  closed({ apiVersion: { const: apiVersion }, kind: { const: kind }, metadata: objectMeta, ...(spec && { spec }), ...extra }, ['apiVersion', 'kind', 'metadata']);

const standIn = new Ajv({ allErrors: true, strict: false });
standIn.addSchema(
  top(
    'apps/v1',
    'StatefulSet',
    closed(
      {
        serviceName: str,
        replicas: { type: 'integer', minimum: 0 },
        podManagementPolicy: { enum: ['OrderedReady', 'Parallel'] },
        selector: labelSelector,
        template: podTemplate,
        volumeClaimTemplates: arrayOf(pvcTemplate),
        updateStrategy: closed({ type: str }),
      },
      ['selector', 'template'],
    ),
  ),
  'apps/v1 StatefulSet',
);
standIn.addSchema(
  top('apps/v1', 'Deployment', closed({ replicas: { type: 'integer', minimum: 0 }, selector: labelSelector, template: podTemplate, strategy: closed({ type: str }) }, ['selector', 'template'])),
  'apps/v1 Deployment',
);
standIn.addSchema(
  top(
    'v1',
    'Service',
    closed({
      type: { enum: ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] },
      clusterIP: str,
      publishNotReadyAddresses: bool,
      selector: strMap,
      ports: arrayOf(closed({ name: str, port: int, targetPort: intOrString, protocol: str, nodePort: int }, ['port'])),
    }),
  ),
  'v1 Service',
);
standIn.addSchema(top('v1', 'ConfigMap', undefined, { data: strMap, binaryData: strMap, immutable: bool }), 'v1 ConfigMap');
