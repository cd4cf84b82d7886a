/**
 * The site's configuration as the decider reads it: the ConfigMap `<site>-edge`, one
 * JSON document under `config.json`, every default resolved so the decider applies no
 * default of its own (one place decides what an absent field means: the operator).
 *
 * No secret is ever written here: the captcha's secret key is named (Secret and key),
 * and the decider's pods receive its value from the kubelet (`decider.ts`).
 */
import {
  type CaptchaProvider,
  DEFAULT_CAPTCHA_SECRET_KEY,
  DEFAULT_CLEARANCE,
  DEFAULT_DIFFICULTY,
  DEFAULT_FAILURE_POLICY,
  DEFAULT_POSTURE,
  type EdgeSiteSpec,
  type FailurePolicy,
  type Posture,
  type ServiceRef,
} from '../../api/edge-site.ts';
import { OwnedKind } from './kinds.ts';
import { siteConfigMapName } from './names.ts';
import { owned, type SiteRef } from './owner.ts';
import { type BlocklistSelection, effectiveSecurity } from './security.ts';

/** The ConfigMap key holding the configuration. */
export const SITE_CONFIG_KEY = 'config.json';

/** The request filters' settings, resolved. */
export interface FilterSettings {
  readonly failurePolicy: FailurePolicy;
  readonly difficulty: number;
  readonly clearance: string;
}

/** What the decider is told about its site. */
export interface SiteConfig {
  readonly posture: Posture;
  /** Absent: challenges are proofs of work. */
  readonly captcha?: {
    readonly provider: CaptchaProvider;
    readonly siteKey: string;
    /** Where the secret key is: the decider's pods get its value, this file only its name. */
    readonly secretRef: { readonly name: string; readonly key: string };
  };
  readonly upstream: ServiceRef;
  readonly filter: FilterSettings;
  /** False: no filter can serve a challenge, so challenge verdicts become pass (drop stays). */
  readonly challenge: boolean;
  readonly blocklists: BlocklistSelection;
  /** ConfigMaps of the site's namespace, mounted in the decider's pods (`decider.ts`). */
  readonly allowlists: readonly string[];
}

export function filterSettings(spec: Pick<EdgeSiteSpec, 'filter'>): FilterSettings {
  return {
    failurePolicy: spec.filter?.failurePolicy ?? DEFAULT_FAILURE_POLICY,
    difficulty: spec.filter?.difficulty ?? DEFAULT_DIFFICULTY,
    clearance: spec.filter?.clearance ?? DEFAULT_CLEARANCE,
  };
}

export function siteConfig(spec: EdgeSiteSpec): SiteConfig {
  const security = effectiveSecurity(spec);
  const { captcha } = spec;
  return {
    posture: spec.posture ?? DEFAULT_POSTURE,
    ...(captcha
      ? {
          captcha: {
            provider: captcha.provider,
            siteKey: captcha.siteKey,
            secretRef: {
              name: captcha.secretRef.name,
              key: captcha.secretRef.key ?? DEFAULT_CAPTCHA_SECRET_KEY,
            },
          },
        }
      : {}),
    upstream: { name: spec.upstream.name, port: spec.upstream.port },
    filter: filterSettings(spec),
    challenge: security.challenge,
    blocklists: security.blocklists,
    allowlists: security.allowlists,
  };
}

/** The text stored under {@link SITE_CONFIG_KEY}: the same spec always gives the same bytes. */
export function siteConfigText(spec: EdgeSiteSpec): string {
  return `${JSON.stringify(siteConfig(spec), null, 2)}\n`;
}

export function siteConfigMap(site: SiteRef, spec: EdgeSiteSpec) {
  return owned(site, OwnedKind.ConfigMap, siteConfigMapName(site.name), {
    data: { [SITE_CONFIG_KEY]: siteConfigText(spec) },
  });
}
