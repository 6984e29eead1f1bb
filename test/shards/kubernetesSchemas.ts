/**
 * Checks a rendered Kubernetes object against the Kubernetes schemas with `kubernetes-models`,
 * whose validators are generated from Kubernetes' own OpenAPI schemas; answers the problems found
 * ([] when none). No cluster is needed.
 */
type KubernetesObject = { apiVersion?: string; kind: string; [key: string]: unknown };

type Model = new (object: unknown) => { validate(): void };

export async function validateKubernetesObject(object: KubernetesObject): Promise<string[]> {
  const apiVersion = object.apiVersion ?? '';
  // `apps/v1` lives under kubernetes-models/apps/v1, the core group's `v1` under kubernetes-models/v1.
  const module = (await import(`kubernetes-models/${apiVersion}/${object.kind}`).catch(() => undefined)) as Record<string, Model> | undefined;
  const model = module?.[object.kind];
  if (!model) return [`kubernetes-models has no model of ${apiVersion} ${object.kind}`];
  try {
    new model(object).validate();
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
}
