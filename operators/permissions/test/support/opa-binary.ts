/**
 * The real Open Policy Agent, so that tests check our `/bundle` against OPA's own
 * bundle downloader and Rego evaluator rather than against our reading of the format.
 *
 * Built once from its Go module (the module proxy is the only network the tests use)
 * into the project's binary cache, `<cacheRoot>/bin/opa-<version>/opa`, the way the
 * control plane builds its binaries: into a temporary folder first and renamed into
 * place when complete, so an interrupted build never looks cached, under a lock so
 * that parallel test processes build it once. The module root is OPA's `main`
 * package. CGO is off: the Wasm engine (cgo, opt-in) is not needed for Rego. A cold
 * build downloads OPA's module graph and compiles it: minutes, once per machine and
 * version.
 */
import { type GoTool, goToolBinary } from '@operators/controlplane';

/** The OPA release the tests run. Its cache folder is per version, so a bump rebuilds. */
export const OPA_VERSION = 'v1.22.3';

export type Log = (message: string) => void;

function defaultLog(message: string): void {
  process.stderr.write(`[opa] ${message}\n`);
}

/** OPA as a Go tool: the module root is its main package; `opa version` prints `Version: 1.22.3` first. */
export const OPA_TOOL: GoTool = {
  name: 'opa',
  version: OPA_VERSION,
  pkg: 'github.com/open-policy-agent/opa',
  versionArgs: ['version'],
  versionMatches: (stdout) =>
    new RegExp(`^Version: ${OPA_VERSION.replace(/^v/, '').replaceAll('.', '\\.')}$`, 'm').test(stdout),
};

/** The path of the opa binary, building it first if the cache does not hold it. */
export function opaBinary(log: Log = defaultLog): Promise<string> {
  return goToolBinary(OPA_TOOL, log);
}
