import { readFileSync } from 'node:fs';
import { KubeClient, isApiError } from '@operators/kit';
import { installCrds } from '@operators/controlplane/testing';
const admin = await KubeClient.load(readFileSync('/tmp/exp/kubeconfig-path', 'utf8'));
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
  metadata: { name: 'probes.cel.test' },
  spec: { group: 'cel.test', scope: 'Namespaced', names: { plural: 'probes', singular: 'probe', kind: 'Probe', listKind: 'ProbeList' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: {
      spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } }] },
};
await installCrds(admin, [crd as never]);
const exprs = process.argv.slice(2);
const validations = exprs.map((e, i) => ({
  expression: `object.spec.probe != ${i}`,
  message: `${i}:error`,
  messageExpression: `'${i}:' + string(${e})`,
}));
validations.push({ expression: `object.spec.probe != 999 || (${exprs[0]}) == 1`, message: 'direct', messageExpression: "'direct-false'" });
await admin.apply({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'probe' },
  spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ apiGroups: ['cel.test'], apiVersions: ['*'], resources: ['probes'], operations: ['CREATE', 'UPDATE'] }] }, validations } } as never, { fieldManager: 'x', force: true });
await admin.apply({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'probe' },
  spec: { policyName: 'probe', validationActions: ['Deny'] } } as never, { fieldManager: 'x', force: true });
await new Promise((r) => setTimeout(r, 2000));
const pol = await admin.get({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' }, 'probe');
console.log(JSON.stringify((pol as never as {status: unknown}).status));
for (const i of [...exprs.keys(), 999]) {
  try {
    await admin.create({ apiVersion: 'cel.test/v1', kind: 'Probe', metadata: { name: `p${i}`, namespace: 'default' }, spec: { probe: i, n: 3, f: 2.0, g: 2.5, s: 'héllo' } } as never, { dryRun: true });
    console.log(i, 'admitted');
  } catch (e) { console.log(i, isApiError(e) ? `${e.reason}: ${e.message}` : e); }
}
