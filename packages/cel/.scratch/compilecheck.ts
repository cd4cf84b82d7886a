import { readFileSync } from 'node:fs';
import { KubeClient, isApiError } from '@operators/kit';
const admin = await KubeClient.load(readFileSync('/tmp/exp/kubeconfig-path', 'utf8'));
const exprs = readFileSync(0, 'utf8').split('\n').filter(Boolean);
const validations = exprs.map((e) => ({ expression: `dyn(${e}) == dyn(${e}) || true` }));
try {
  await admin.create({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'cc' },
    spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ apiGroups: ['cel.test'], apiVersions: ['*'], resources: ['probes'], operations: ['CREATE'] }] }, validations } } as never, { dryRun: true });
  console.log('all compiled');
} catch (e) {
  if (!isApiError(e)) throw e;
  const bad = new Map(e.causes.map((c) => [Number(/\[(\d+)\]/.exec(c.field ?? '')?.[1]), c.message?.split('\n')[0]]));
  exprs.forEach((x, i) => console.log(bad.has(i) ? 'ERR ' : 'ok  ', x, bad.get(i) ?? ''));
}
