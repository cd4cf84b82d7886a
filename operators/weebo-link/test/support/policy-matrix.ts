/**
 * RFC 0002's verification matrix (Vérifications): 12 rows, 18 scenarios of link-targets and
 * 7 cases of link-headers, played on a real apiserver by impersonation as weebo-link (its
 * controller, running as its service account), the target operator, a human, the importer
 * and the source operator, with the chart's policies installed by the caller.
 *
 * Each case keeps, beside the apiserver's answer, the admission request it made as the
 * offline evaluator takes it (resource, operation, user, object, oldObject): the object
 * sent, or the live object before the write with the patch applied to it. Shared by
 * chart-policies.test.ts (each answer is the RFC's) and check-rules.test.ts (the offline
 * evaluator gives the apiserver's answer on each).
 */
import type { TestContext } from 'node:test';
import { eventually, type TestEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { startWeeboLink } from '../../src/app.ts';
import type { AdmissionRequest, RequestResource } from '../../src/domain/policy.ts';
import {
  AUTHENTIK_USER,
  authentikUser,
  STALWART_ACCOUNT,
  type StalwartAccount,
} from '../../src/testkit/crds.ts';
import { account, quiet, startStalwart, waitState } from '../harness.ts';

export type Outcome = 'OK' | 'refused';

/** The resources of the test CRDs, as the apiserver serves them (written here, not derived). */
export const ACCOUNTS: RequestResource = {
  group: 'stalwart.weebo.io',
  version: 'v1alpha1',
  resource: 'stalwartaccounts',
};
export const USERS: RequestResource = {
  group: 'authentik.weebo.io',
  version: 'v1alpha1',
  resource: 'authentikusers',
};

export interface PlayedCase {
  readonly name: string;
  /** The RFC's answer. */
  readonly expected: Outcome;
  /** The apiserver's answer. */
  readonly got: Outcome;
  /** The policy the apiserver names in its refusal (none when it admitted the request). */
  readonly deniedBy?: string;
  /** The request as the offline evaluator (and a check-rules sample) takes it. */
  readonly request: AdmissionRequest;
}

export interface MatrixContext {
  readonly env: TestEnv;
  readonly t: TestContext;
  /** The rules' source namespace, target namespace, and the release namespace. */
  readonly auth: string;
  readonly mail: string;
  readonly system: string;
}

/** A write of the matrix, as sent. */
type Call =
  | { readonly verb: 'create'; readonly body: KubeObject }
  | { readonly verb: 'patch'; readonly name: string; readonly body: unknown; readonly status?: true }
  | { readonly verb: 'apply'; readonly body: KubeObject; readonly fieldManager: string }
  | { readonly verb: 'delete'; readonly name: string };

interface Actor {
  readonly client: KubeClient;
  readonly username: string;
  readonly groups?: readonly string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386 JSON merge patch: what the apiserver does with a merge patch (and, for the
 * matrix's single applies of whole fields, with a server-side apply). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** The admission policy an apiserver refusal names ("ValidatingAdmissionPolicy 'x' with binding 'y' denied request"). */
function deniedBy(err: unknown): string | undefined {
  const m = /ValidatingAdmissionPolicy '([^']+)' with binding '[^']+' denied request/.exec(
    err instanceof Error ? err.message : '',
  );
  return m?.[1];
}

/**
 * Plays the 25 cases in order (each row starts from the state the previous ones left) and
 * returns them. Waits first until the apiserver enforces both policies; starts the fake
 * target operator and weebo-link (as its service account, with the chart's RBAC).
 */
export async function playMatrix(ctx: MatrixContext): Promise<PlayedCase[]> {
  const { env, t, auth, mail, system } = ctx;
  const actor = (client: KubeClient, username: string, groups?: readonly string[]): Actor => ({
    client,
    username,
    ...(groups ? { groups } : {}),
  });
  const weeboLinkUser = `system:serviceaccount:${system}:weebo-link`;
  const weeboLink = actor(env.asServiceAccount(system, 'weebo-link'), weeboLinkUser);
  const operator = actor(
    env.asServiceAccount('stalwart', 'weebo-stalwart'),
    'system:serviceaccount:stalwart:weebo-stalwart',
  );
  const human = actor(env.as('jane', ['system:masters']), 'jane', ['system:masters']);
  const importerUser = 'system:serviceaccount:mail:weebo-stalwart-importer';
  const importer = actor(env.as(importerUser, ['system:masters']), importerUser, ['system:masters']);
  const authentikUserName = 'system:serviceaccount:auth:weebo-authentik';
  const authentik = actor(env.as(authentikUserName, ['system:masters']), authentikUserName, [
    'system:masters',
  ]);

  // The policies are enforced once the apiserver has loaded them.
  const fake = (
    name: string,
    labels: Record<string, string> = {},
    annotations: Record<string, string> = {},
  ): KubeObject => ({
    ...STALWART_ACCOUNT,
    metadata: { name, namespace: mail, labels, annotations },
    spec: { domainRef: { name: 'weebo.poc' }, name, state: 'Active', deletionPolicy: 'Orphan' },
  });
  await eventually('link-targets enforced', async () => {
    const r = await outcome(
      human.client.create(fake('probe', { 'link.weebo.io/link': 'x' }), { dryRun: true }),
    );
    return r.got === 'refused' ? true : undefined;
  });
  await eventually('link-headers enforced', async () => {
    const u = authentikUser('probe', auth, { links: [], annotations: { 'link.weebo.io/stalwart': 'true' } });
    return (await outcome(human.client.create(u, { dryRun: true }))).got === 'refused' ? true : undefined;
  });

  // weebo-link runs as its service account, with only the chart's RBAC.
  await startStalwart(env, t, mail);
  const link = await startWeeboLink({ client: weeboLink.client, namespace: system, logger: quiet });
  t.after(() => link.stop());

  const results: PlayedCase[] = [];
  const request = (
    who: Actor,
    resource: RequestResource,
    namespace: string,
    operation: AdmissionRequest['operation'],
    object: KubeObject | null,
    oldObject: KubeObject | null,
  ): AdmissionRequest => ({
    operation,
    resource,
    namespace,
    object,
    oldObject,
    userInfo: { username: who.username, ...(who.groups ? { groups: who.groups } : {}) },
  });
  /** One write by one actor: the request it makes, sent to the apiserver. */
  const play = async (
    name: string,
    expected: Outcome,
    who: Actor,
    resource: RequestResource,
    call: Call,
  ): Promise<void> => {
    const namespace = resource === USERS ? auth : mail;
    const type = resource === USERS ? AUTHENTIK_USER : STALWART_ACCOUNT;
    const old =
      call.verb === 'create'
        ? null
        : await env.admin.get(
            type,
            call.verb === 'apply' ? (call.body.metadata.name ?? '') : call.name,
            namespace,
          );
    let req: AdmissionRequest;
    let p: Promise<unknown>;
    switch (call.verb) {
      case 'create':
        req = request(who, resource, namespace, 'CREATE', call.body, null);
        p = who.client.create(call.body);
        break;
      case 'patch':
        req = request(
          who,
          call.status ? { ...resource, subresource: 'status' } : resource,
          namespace,
          'UPDATE',
          mergePatch(old, call.body) as KubeObject,
          old,
        );
        p = call.status
          ? who.client.patchStatus(type, call.name, namespace, merge(call.body))
          : who.client.patch(type, call.name, namespace, merge(call.body));
        break;
      case 'apply':
        req = request(who, resource, namespace, 'UPDATE', mergePatch(old, call.body) as KubeObject, old);
        p = who.client.apply(call.body, { fieldManager: call.fieldManager, force: true });
        break;
      case 'delete':
        req = request(who, resource, namespace, 'DELETE', null, old);
        p = who.client.delete(type, call.name, namespace);
        break;
      default:
        return call satisfies never;
    }
    results.push({ name, expected, ...(await outcome(p)), request: req });
  };

  // Row 1: weebo-link creates a linked target; changes spec.state. Its controller makes the
  // writes; the requests are read back from their results.
  await env.admin.create(authentikUser('alice', auth));
  const created = await waitState(
    env,
    mail,
    'alice',
    'Linked',
    (x) => x.status?.conditions?.[0]?.status === 'True',
  );
  results.push({
    name: 'weebo-link creates a linked target',
    expected: 'OK',
    got: 'OK',
    request: request(weeboLink, ACCOUNTS, mail, 'CREATE', created, null),
  });
  await env.admin.patch(AUTHENTIK_USER, 'alice', auth, merge({ spec: { isActive: false } }));
  const a = await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Locked');
  results.push({
    name: 'weebo-link changes spec.state',
    expected: 'OK',
    got: 'OK',
    request: request(weeboLink, ACCOUNTS, mail, 'UPDATE', a, created),
  });
  // Row 2.
  await play('a human creates a target with the link label', 'refused', human, ACCOUNTS, {
    verb: 'create',
    body: fake('bob', { 'link.weebo.io/link': 'authentik-user-stalwart-account' }),
  });
  // Row 3: the operator's finalizer (put by the fake operator already) and status.
  if (!a.metadata.finalizers?.includes('stalwart.weebo.io/account'))
    throw new Error('the fake operator has not put its finalizer on alice');
  await play('the operator puts its finalizer', 'OK', operator, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { finalizers: ['stalwart.weebo.io/account', 'stalwart.weebo.io/other'] } },
  });
  await play('the operator writes status', 'OK', operator, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { status: { address: 'alice@weebo.poc' } },
    status: true,
  });
  // Row 4.
  await play('a human puts force-orphan', 'OK', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { annotations: { 'stalwart.weebo.io/force-orphan': 'true' } } },
  });
  await play('a human puts rotate-secret', 'OK', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { annotations: { 'stalwart.weebo.io/rotate-secret': 'now' } } },
  });
  // Row 5.
  await play('the importer puts import-pending', 'OK', importer, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { annotations: { 'stalwart.weebo.io/import-pending': 'true' } } },
  });
  await play('the importer removes import-pending', 'OK', importer, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { annotations: { 'stalwart.weebo.io/import-pending': null } } },
  });
  // Row 6: a forced SSA with the identical spec.
  const live = (await account(env, mail, 'alice')) as StalwartAccount;
  await play('the importer force-applies an identical spec', 'OK', importer, ACCOUNTS, {
    verb: 'apply',
    body: { ...STALWART_ACCOUNT, metadata: { name: 'alice', namespace: mail }, spec: live.spec },
    fieldManager: 'weebo-stalwart-importer',
  });
  // Row 7.
  await play('a human changes spec.state', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { spec: { state: 'Active' } },
  });
  // Row 8.
  await play('a human removes link.weebo.io/link', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { labels: { 'link.weebo.io/link': null } } },
  });
  await play('a human changes the state label', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: { metadata: { labels: { 'link.weebo.io/state': 'Detached' } } },
  });
  await play('a human changes the source annotation', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'alice',
    body: {
      metadata: { annotations: { 'link.weebo.io/source': 'authentik.weebo.io/AuthentikUser/auth/eve' } },
    },
  });
  // Row 9.
  await play('a human creates a target without header', 'OK', human, ACCOUNTS, {
    verb: 'create',
    body: fake('carol'),
  });
  // Row 10.
  await play('a human puts the link label on it', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'carol',
    body: { metadata: { labels: { 'link.weebo.io/link': 'authentik-user-stalwart-account' } } },
  });
  // Row 11.
  await play('a human puts only link.weebo.io/source', 'refused', human, ACCOUNTS, {
    verb: 'patch',
    name: 'carol',
    body: {
      metadata: { annotations: { 'link.weebo.io/source': `authentik.weebo.io/AuthentikUser/${auth}/carol` } },
    },
  });
  // Row 12.
  await play('a human deletes a linked target', 'OK', human, ACCOUNTS, { verb: 'delete', name: 'alice' });

  // link-headers, 7 cases (as Argo CD would write the source).
  const h = (name: string, annotations: Record<string, string>) =>
    authentikUser(name, auth, { links: [], annotations });
  await play('headers: no annotation', 'OK', human, USERS, { verb: 'create', body: h('u1', {}) });
  await play('headers: enabled', 'OK', human, USERS, {
    verb: 'create',
    body: h('u2', { 'link.weebo.io/stalwart': 'enabled' }),
  });
  await play('headers: value "true"', 'refused', human, USERS, {
    verb: 'create',
    body: h('u3', { 'link.weebo.io/stalwart': 'true' }),
  });
  await play('headers: unknown header', 'refused', human, USERS, {
    verb: 'create',
    body: h('u4', { 'link.weebo.io/forgejo': 'enabled' }),
  });
  await play('headers: other annotations', 'OK', human, USERS, {
    verb: 'create',
    body: h('u5', { 'argocd.argoproj.io/sync-wave': '4' }),
  });
  await play('headers: status written by weebo-authentik', 'OK', authentik, USERS, {
    verb: 'patch',
    name: 'u2',
    body: { status: { observedGeneration: 1 } },
    status: true,
  });
  await play('headers: header removed', 'OK', human, USERS, {
    verb: 'patch',
    name: 'u2',
    body: { metadata: { annotations: { 'link.weebo.io/stalwart': null } } },
  });
  return results;
}

const merge = (body: unknown) => ({ type: 'merge', body }) as const;

/** The apiserver's answer to a write: admitted, or refused (and by which policy). */
async function outcome(p: Promise<unknown>): Promise<{ got: Outcome; deniedBy?: string }> {
  try {
    await p;
    return { got: 'OK' };
  } catch (err) {
    if (isApiError(err, ApiErrorReason.Forbidden) || isApiError(err, ApiErrorReason.Invalid)) {
      const by = deniedBy(err);
      return { got: 'refused', ...(by ? { deniedBy: by } : {}) };
    }
    throw err;
  }
}
