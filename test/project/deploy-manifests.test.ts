/**
 * deploy/kubernetes as a managed cluster would take it: the kustomization rendered (by the
 * test's renderer, compared with `kubectl kustomize` when a kustomize v5 is on PATH), every pod
 * spec checked against the "restricted" Pod Security Standard, every object validated against
 * the Kubernetes JSON schemas of the `kubernetes-models` npm package (prometheus-operator's
 * CRDs: `@kubernetes-models/prometheus-operator`), and the release mechanics: one image tag,
 * a migrate Job per release ordered before the Deployments, PDBs, spread, NetworkPolicies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import {
  PodMonitor,
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import {
  imageName,
  kustomizeBinary,
  podSpecOf,
  renderKustomization,
  type K8sObject,
} from '../support/kustomize.js';
import { restrictedViolations } from '../support/pod-security.js';

const KUBE = join(import.meta.dirname, '..', '..', 'deploy', 'kubernetes');
const app = renderKustomization(KUBE);
const monitoring = renderKustomization(join(KUBE, 'monitoring'));
const of = (kind: string) => app.filter((o) => o.kind === kind);
const workloads = app.filter((o) => podSpecOf(o) !== undefined);

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
};

type Selector = {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
};
function matches(sel: Selector, labels: Record<string, string> = {}): boolean {
  const exprs = sel.matchExpressions ?? [];
  return (
    Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
    exprs.every((e) => {
      const has = e.values?.includes(labels[e.key] ?? '\u0000') ?? false;
      if (e.operator === 'In') return has;
      if (e.operator === 'NotIn') return !has;
      if (e.operator === 'Exists') return e.key in labels;
      if (e.operator === 'DoesNotExist') return !(e.key in labels);
      throw new Error(`operator ${e.operator}`);
    })
  );
}
const podLabels = (o: K8sObject) => o.spec.template.metadata.labels as Record<string, string>;

describe('deploy/kubernetes, rendered', () => {
  it('renders as kustomize v5 does (when one is on PATH)', (ctx) => {
    const tool = kustomizeBinary(KUBE);
    if (!tool) {
      ctx.skip(); // no kustomize v5 here: the renderer alone (Debian's kubectl is v1.20)
      return;
    }
    const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
    const sorted = (os: K8sObject[]) => [...os].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sorted(tool.objects), tool.tool).toEqual(sorted(app));
    expect(sorted(kustomizeBinary(join(KUBE, 'monitoring'))!.objects)).toEqual(sorted(monitoring));
  });

  it('every object validates against its Kubernetes (or prometheus-operator) schema', () => {
    const kinds = [...app, ...monitoring].map((o) => `${o.apiVersion}/${o.kind}`);
    expect(kinds.filter((k) => !MODELS[k])).toEqual([]);
    for (const o of [...app, ...monitoring]) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`]!;
      expect(() => new Model(o).validate(), `${o.kind}/${o.metadata.name}`).not.toThrow();
    }
    // the schemas do catch a wrong type
    const broken = structuredClone(of('Deployment')[0]!);
    broken.spec.replicas = 'two';
    expect(() => new Deployment(broken as any).validate()).toThrow(/replicas/);
  });

  it('every pod spec meets the restricted Pod Security Standard', () => {
    expect(workloads.map((w) => `${w.kind}/${w.metadata.name}`).sort()).toEqual([
      'Deployment/seckill-api',
      'Deployment/seckill-worker',
      'Job/seckill-migrate-0.1.0',
    ]);
    for (const w of workloads) {
      expect(restrictedViolations(podSpecOf(w)), `${w.kind}/${w.metadata.name}`).toEqual([]);
    }
  });

  it('the restricted check fails a pod that breaks any of its rules', () => {
    const base = podSpecOf(of('Deployment')[0]!);
    const breaks: Array<(p: any) => void> = [
      (p) => (p.hostNetwork = true),
      (p) => (p.volumes = [{ name: 'h', hostPath: { path: '/' } }]),
      (p) => (p.automountServiceAccountToken = undefined),
      (p) => (p.securityContext.runAsNonRoot = undefined),
      (p) => (p.securityContext.seccompProfile = { type: 'Unconfined' }),
      (p) => (p.containers[0].securityContext.allowPrivilegeEscalation = true),
      (p) => (p.containers[0].securityContext.capabilities = { drop: ['NET_RAW'] }),
      (p) => (p.containers[0].securityContext.capabilities.add = ['SYS_ADMIN']),
      (p) => (p.containers[0].securityContext.privileged = true),
      (p) => (p.containers[0].securityContext.runAsUser = 0),
      (p) => (p.containers[0].ports = [{ containerPort: 80, hostPort: 80 }]),
      (p) => (p.initContainers = [{ name: 'init', image: 'x' }]),
    ];
    for (const b of breaks) {
      const pod = structuredClone(base);
      b(pod);
      expect(restrictedViolations(pod), b.toString()).not.toEqual([]);
    }
  });

  it('the image is named once, with a tag (never latest), for every container', () => {
    const k = readFileSync(join(KUBE, 'kustomization.yaml'), 'utf8');
    expect(k.match(/newTag:/g)).toHaveLength(1);
    for (const w of workloads) {
      for (const c of podSpecOf(w).containers) {
        expect(c.image).toMatch(/:[\w.-]+$/);
        expect(c.image).not.toMatch(/:latest$/);
        expect(imageName(c.image)).toBe('seckill');
      }
    }
    // the source manifests name no tag of their own: the kustomization is the one place
    for (const f of ['api.yaml', 'worker.yaml', 'migrate-job.yaml']) {
      expect(readFileSync(join(KUBE, f), 'utf8')).toMatch(/image: seckill\n/);
    }
  });

  it('the migrate Job is one per release, bounded, and runs before the Deployments', () => {
    const job = of('Job')[0]!;
    const tag = podSpecOf(job).containers[0].image.split(':')[1];
    expect(job.metadata.name).toBe(`seckill-migrate-${tag}`);
    expect(job.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(job.spec.activeDeadlineSeconds).toBeGreaterThan(0);
    expect(podSpecOf(job).restartPolicy).toBe('Never');
    // step 1 of docs/operations.md selects the settings and the Job, and nothing that runs
    const ops = readFileSync(join(KUBE, '..', '..', 'docs', 'operations.md'), 'utf8');
    const step1 = /kubectl apply -k deploy\/kubernetes -l '([^']+)'/.exec(ops);
    expect(step1, 'the two-step apply in docs/operations.md').not.toBeNull();
    const values = /app\.kubernetes\.io\/component in \(([^)]+)\)/.exec(step1![1]!)![1]!.split(',');
    const first = app.filter((o) =>
      values.includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? ''),
    );
    expect(first.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Job']);
    expect(ops).toContain('kubectl wait --for=condition=complete');
  });

  it('PDBs allow one pod down, pods spread over nodes and zones, readiness fails after 2', () => {
    for (const d of of('Deployment')) {
      const pdb = of('PodDisruptionBudget').find((p) => p.metadata.name === d.metadata.name)!;
      expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
      expect(pdb.spec.minAvailable).toBeUndefined();
      expect(matches(pdb.spec.selector, podLabels(d))).toBe(true);
      const spread = podSpecOf(d).topologySpreadConstraints as Array<{
        topologyKey: string;
        labelSelector: Selector;
      }>;
      expect(spread.map((s) => s.topologyKey).sort()).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const s of spread) expect(matches(s.labelSelector, podLabels(d))).toBe(true);
      expect(podSpecOf(d).containers[0].readinessProbe.failureThreshold).toBe(2);
    }
  });

  it('NetworkPolicies let only the API, workers and migrate Job reach Redis and PostgreSQL', () => {
    const policies = of('NetworkPolicy');
    const stores = { redis: 6379, postgresql: 5432 };
    for (const [store, port] of Object.entries(stores)) {
      const storePod = { 'app.kubernetes.io/name': store };
      const p = policies.find((x) => matches(x.spec.podSelector, storePod));
      expect(p, store).toBeDefined();
      expect(p!.spec.policyTypes).toEqual(['Ingress']);
      const peers = (p!.spec.ingress as Array<{ from: any[]; ports?: any[] }>).flatMap((rule) =>
        rule.from.map((peer) => ({ peer, ports: rule.ports })),
      );
      // every peer is a pod selector (no namespace or IP block opens it wider)
      for (const { peer } of peers) expect(Object.keys(peer)).toEqual(['podSelector']);
      const admits = (labels: Record<string, string>) =>
        peers.filter(({ peer }) => matches(peer.podSelector, labels));
      for (const w of workloads) {
        const a = admits(podLabels(w));
        expect(a.length, `${w.metadata.name} reaches ${store}`).toBeGreaterThan(0);
        expect(a[0]!.ports).toEqual([{ protocol: 'TCP', port }]);
      }
      // anything else is kept out: another app, another seckill component
      expect(admits({ 'app.kubernetes.io/name': 'shop-frontend' })).toEqual([]);
      expect(
        admits({ 'app.kubernetes.io/name': 'seckill', 'app.kubernetes.io/component': 'debug' }),
      ).toEqual([]);
      expect(admits(storePod).length).toBe(1); // its own replicas
    }
  });
});
