/**
 * The cluster's own guarantee that the bridge never writes. RBAC cannot grant a dry-run
 * alone: the `create` and `patch` on EdgeSites a dry-run apply needs would let the same
 * identity really write. This ValidatingAdmissionPolicy closes that gap: every write to
 * an EdgeSite by the bridge's identity that is not a dry-run is denied at admission, so
 * a bug of the bridge (or its stolen token) cannot change a site, whatever its code does.
 * The bridge's code keeps `dryRun=All` constant (apiserver-dry-run.ts); this policy makes
 * the cluster check it too.
 */
import type { KubeObject } from '@operators/kit';
import { EDGE_SITE_DEFINITION } from '../api/edge-site.ts';

const ADMISSION = 'admissionregistration.k8s.io/v1';

/**
 * The policy and its binding, named `name`, for the user the apiserver authenticates the
 * bridge as (for a service account, `system:serviceaccount:<namespace>:<name>`).
 */
export function dryRunOnlyPolicy(name: string, username: string): readonly KubeObject[] {
  return [
    {
      apiVersion: ADMISSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [EDGE_SITE_DEFINITION.group],
              apiVersions: ['*'],
              resources: [EDGE_SITE_DEFINITION.plural, `${EDGE_SITE_DEFINITION.plural}/status`],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
            },
          ],
        },
        // JSON's string syntax is CEL's for a name of this alphabet.
        matchConditions: [
          {
            name: 'the-console-bridge',
            expression: `request.userInfo.username == ${JSON.stringify(username)}`,
          },
        ],
        validations: [
          {
            expression: 'request.dryRun == true',
            message:
              'the console bridge only validates EdgeSites (dryRun=All); Git, through its applier, writes them',
          },
        ],
      },
    },
    {
      apiVersion: ADMISSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  ];
}
