/** A remote ClusterProvider's kubeconfig: inline credentials only; programs and local files refused. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkKubeconfig } from '../src/domain/kubeconfig.ts';

const base = (cluster: string, user: string): string => `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u}
clusters:
- name: k
  cluster: {server: "https://10.0.0.1:6443"${cluster}}
users:
- name: u
  user: {${user}}
`;

describe('checkKubeconfig', () => {
  it('accepts inline certificate data and a token', () => {
    assert.deepEqual(checkKubeconfig(base(', certificate-authority-data: QUJD', 'token: abc')), { ok: true });
  });
  const refused: [string, string, RegExp][] = [
    ['an exec plugin', base('', 'exec: {command: /bin/sh}'), /user\.exec would run a program/],
    ['an auth-provider', base('', 'auth-provider: {name: gcp}'), /auth-provider is refused/],
    ['a client key file', base('', 'client-key: /etc/key'), /user\.client-key reads a file/],
    ['a token file', base('', 'tokenFile: /var/run/token'), /user\.tokenFile reads a file/],
    [
      'a CA file',
      base(', certificate-authority: /etc/ca', 'token: a'),
      /cluster\.certificate-authority reads a file/,
    ],
    ['text that is not YAML', 'a: [b', /does not parse/],
    ['a YAML list', '- a', /not a YAML mapping/],
    ['no current-context', 'apiVersion: v1\nkind: Config\n', /no current-context/],
    [
      'a current-context not listed',
      base('', 'token: a').replace('current-context: c', 'current-context: x'),
      /"x" is not among/,
    ],
  ];
  for (const [what, text, message] of refused) {
    it(`refuses ${what}, saying why`, () => {
      const r = checkKubeconfig(text);
      assert.equal(r.ok, false);
      assert.match(r.ok ? '' : r.message, message);
    });
  }
});
