/**
 * The chart's PrometheusRule (RFC 0002, Exploitation: a target Detaching for more than 10
 * minutes, a rule in error, no leader), checked by Prometheus's own promtool: `check rules`
 * on the rendered groups, then `test rules` with series that must, and must not, fire each
 * alert. Expected alerts and their texts are written out here, not derived from the chart.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { resolveBinaries } from '@operators/controlplane';
import { stringify } from 'yaml';
import { renderChart } from '../src/chart.ts';

const exec = promisify(execFile);
const NS = 'weebo-link';
let helm: string;
let promtool: string;
let dir: string;
before(async () => {
  ({ helm, promtool } = await resolveBinaries(() => {}));
  dir = await mkdtemp(join(tmpdir(), 'weebo-link-alerts-'));
});
after(() => rm(dir, { recursive: true, force: true }));

async function prometheusRules(values: Record<string, unknown>): Promise<{ spec: { groups: unknown[] } }[]> {
  const { objects } = await renderChart(helm, { namespace: NS, values });
  return objects.filter((o) => o.kind === 'PrometheusRule') as unknown as { spec: { groups: unknown[] } }[];
}

/** Writes the rendered groups as a Prometheus rules file and returns its path. */
async function rulesFile(): Promise<string> {
  const [rule, ...more] = await prometheusRules({ prometheusRule: { enabled: true } });
  assert.ok(rule, 'prometheusRule.enabled renders a PrometheusRule');
  assert.equal(more.length, 0);
  const path = join(dir, 'rules.yaml');
  await writeFile(path, stringify({ groups: rule.spec.groups }));
  return path;
}

const detachingText = (link: string, age: string): Record<string, string> => ({
  summary: `weebo-link: a target of rule ${link} has been Detaching for ${age}`,
  description:
    `A target of link rule ${link} has not reached its safe state for more than 10 minutes: its source ` +
    "left, the onRemoval patch is applied, and the rule's safe condition is still false (or in error). " +
    `Find it with kubectl get <target kind> -A -l link.weebo.io/link=${link},link.weebo.io/state=Detaching; ` +
    "read its Events (SafeFailed) and its status: is the target's operator running and has it observed " +
    "the patch? Fix the operator or the rule's safe; never remove the labels by hand. See " +
    'docs/weebo-link.md, Alerts.',
});
const ruleErrorText = (link: string): Record<string, string> => ({
  summary: `weebo-link: link rule ${link} is refused`,
  description:
    `Link rule ${link} is refused at load ((configmap): the rules document itself), so its sources are ` +
    'not linked and its departures not handled; its targets are untouched and the other rules keep ' +
    `running. Read the Events on the ConfigMap weebo-link-rules in ${NS} and run weebo-link check-rules ` +
    'on your values (with --kubeconfig for discovery: a CRD missing or a resource misnamed), then fix the ' +
    'rule. See docs/weebo-link.md, Alerts.',
});
const noLeader = {
  exp_labels: { severity: 'critical' },
  exp_annotations: {
    summary: `weebo-link has no leader in ${NS}`,
    description:
      `No weebo-link replica in ${NS} holds the Lease weebo-link (or none is scraped): no link is created, ` +
      `updated or detached until one does. Check the pods (kubectl -n ${NS} get pods -l ` +
      `app.kubernetes.io/name=weebo-link, their logs, their readiness), the Lease (kubectl -n ${NS} get ` +
      'lease weebo-link) and the scrape targets. See docs/weebo-link.md, Alerts.',
  },
};

const oldest = (link: string, ns = NS): string =>
  `weebo_link_links_detaching_oldest_seconds{namespace="${ns}",link="${link}",pod="weebo-link-a"}`;
const leader = (pod: string, ns = NS, name = 'weebo-link'): string =>
  `leader_election_master_status{namespace="${ns}",name="${name}",pod="${pod}"}`;

/** promtool's unit tests: one scenario each, every evaluation saying exactly which alerts fire. */
const scenarios = [
  {
    name: 'one target stuck Detaching alerts after 10 minutes; a stream of short departures never does',
    interval: '1m',
    input_series: [
      // One target Detaching from 0 on: its age grows one minute per minute.
      { series: oldest('stuck'), values: '0+60x20' },
      // A departure every 9 minutes, each one done in 8: some target is Detaching at
      // every instant for 27 minutes, none for 10.
      { series: oldest('churn'), values: '0+60x8 0+60x8 0+60x8' },
      // (So a rule on this count, "above 0 for 10 minutes", would fire.)
      {
        series: `weebo_link_links_targets{namespace="${NS}",link="churn",state="Detaching",pod="weebo-link-a"}`,
        values: '1x26',
      },
      // Another release's series (another namespace): not this rule's business.
      { series: oldest('stuck', 'elsewhere'), values: '0+60x20' },
    ],
    alert_rule_test: [
      { eval_time: '10m', alertname: 'WeeboLinkTargetDetachingTooLong', exp_alerts: [] },
      {
        eval_time: '11m',
        alertname: 'WeeboLinkTargetDetachingTooLong',
        exp_alerts: [
          {
            exp_labels: { severity: 'warning', namespace: NS, link: 'stuck' },
            exp_annotations: detachingText('stuck', '11m 0s'),
          },
        ],
      },
      {
        eval_time: '20m',
        alertname: 'WeeboLinkTargetDetachingTooLong',
        exp_alerts: [
          {
            exp_labels: { severity: 'warning', namespace: NS, link: 'stuck' },
            exp_annotations: detachingText('stuck', '20m 0s'),
          },
        ],
      },
    ],
  },
  {
    name: 'a rule refused for 5 minutes alerts; one fixed within them does not',
    interval: '1m',
    input_series: [
      {
        series: `weebo_link_links_rule_errors{namespace="${NS}",link="bad",pod="weebo-link-a"}`,
        values: '1x10',
      },
      {
        series: `weebo_link_links_rule_errors{namespace="${NS}",link="fixed",pod="weebo-link-a"}`,
        values: '1 1 1 0x8',
      },
      {
        series: `weebo_link_links_rule_errors{namespace="${NS}",link="good",pod="weebo-link-a"}`,
        values: '0x10',
      },
    ],
    alert_rule_test: [
      { eval_time: '4m', alertname: 'WeeboLinkRuleError', exp_alerts: [] },
      {
        eval_time: '6m',
        alertname: 'WeeboLinkRuleError',
        exp_alerts: [
          {
            exp_labels: { severity: 'warning', namespace: NS, link: 'bad' },
            exp_annotations: ruleErrorText('bad'),
          },
        ],
      },
    ],
  },
  {
    name: 'a leader and a standby: no alert',
    interval: '1m',
    input_series: [
      { series: leader('weebo-link-a'), values: '1x20' },
      { series: leader('weebo-link-b'), values: '0x20' },
    ],
    alert_rule_test: [{ eval_time: '20m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] }],
  },
  {
    name: 'two standbys for 5 minutes: no leader',
    interval: '1m',
    input_series: [
      { series: leader('weebo-link-a'), values: '0x20' },
      { series: leader('weebo-link-b'), values: '0x20' },
    ],
    alert_rule_test: [
      { eval_time: '4m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] },
      { eval_time: '6m', alertname: 'WeeboLinkNoLeader', exp_alerts: [noLeader] },
    ],
  },
  {
    name: "no series of this release's weebo-link at all: no leader (another operator's or release's do not count)",
    interval: '1m',
    input_series: [
      { series: leader('other-operator-a', NS, 'other-operator'), values: '1x20' },
      { series: leader('weebo-link-a', 'elsewhere'), values: '1x20' },
    ],
    alert_rule_test: [
      { eval_time: '4m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] },
      { eval_time: '6m', alertname: 'WeeboLinkNoLeader', exp_alerts: [noLeader] },
    ],
  },
  {
    name: 'a failover (the leader gone, the standby leading 2 minutes later): no alert',
    interval: '1m',
    input_series: [
      { series: leader('weebo-link-a'), values: '1x4 stale' },
      { series: leader('weebo-link-b'), values: '0x6 1x14' },
    ],
    alert_rule_test: [
      { eval_time: '6m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] },
      { eval_time: '15m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] },
    ],
  },
  {
    name: 'the leader gone and the standby never leading: no leader after 5 minutes',
    interval: '1m',
    input_series: [
      { series: leader('weebo-link-a'), values: '1x4 stale' },
      { series: leader('weebo-link-b'), values: '0x20' },
    ],
    alert_rule_test: [
      { eval_time: '9m', alertname: 'WeeboLinkNoLeader', exp_alerts: [] },
      { eval_time: '11m', alertname: 'WeeboLinkNoLeader', exp_alerts: [noLeader] },
    ],
  },
];

describe('the PrometheusRule', () => {
  it('is not rendered by default (the Prometheus Operator is optional)', async () => {
    assert.deepEqual(await prometheusRules({}), []);
  });

  it('passes promtool check rules: three alerts', async () => {
    const { stdout } = await exec(promtool, ['check', 'rules', await rulesFile()]);
    assert.match(stdout, /SUCCESS: 3 rules found/);
  });

  it('fires each alert when it should and not when it should not (promtool test rules)', async () => {
    const rules = await rulesFile();
    const tests = join(dir, 'tests.yaml');
    await writeFile(tests, stringify({ rule_files: [rules], evaluation_interval: '1m', tests: scenarios }));
    const run = await exec(promtool, ['test', 'rules', tests]).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /SUCCESS/);
  });
});
