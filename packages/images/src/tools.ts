/**
 * The Debian tools an image build runs, and one clear error when one is missing: which
 * tools, which packages hold them, the command that installs them. `npm run images`
 * never installs anything itself (a build script that runs apt-get as root surprises);
 * the test that builds an image installs them as the other tests install theirs.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { aptCommand } from '@operators/controlplane/testing';

const execFileP = promisify(execFile);

export interface Tool {
  /** The command run. */
  readonly command: string;
  /** The Debian package that holds it. */
  readonly debianPackage: string;
  /** What the build uses it for, for the error message. */
  readonly purpose: string;
}

export const BUILD_TOOLS: readonly Tool[] = [
  { command: 'mmdebstrap', debianPackage: 'mmdebstrap', purpose: "the base layer from Debian's packages" },
  { command: 'umoci', debianPackage: 'umoci', purpose: 'the OCI layout: layers, configuration, tags' },
  { command: 'skopeo', debianPackage: 'skopeo', purpose: 'pushing to a registry' },
];

/** The Debian packages the build needs, for `ensureDebianPackages` in tests and for docs. */
export const BUILD_PACKAGES: readonly string[] = BUILD_TOOLS.map((t) => t.debianPackage);

/** Whether `command` is on PATH. */
async function onPath(command: string): Promise<boolean> {
  try {
    await execFileP('sh', ['-c', `command -v "$0" >/dev/null`, command]);
    return true;
  } catch {
    return false;
  }
}

/** The tools of `tools` that are not on PATH. */
export async function missingTools(tools: readonly Tool[] = BUILD_TOOLS): Promise<Tool[]> {
  const out: Tool[] = [];
  for (const t of tools) if (!(await onPath(t.command))) out.push(t);
  return out;
}

/** A build that cannot start: the tools missing, and the fix. */
export class MissingToolsError extends Error {
  readonly missing: readonly Tool[];
  constructor(missing: readonly Tool[]) {
    super(
      `the image build needs ${missing.map((t) => `${t.command} (${t.purpose})`).join(', ')}, ` +
        `not found on PATH; install them with:\n  ${aptCommand(missing.map((t) => t.debianPackage))}`,
    );
    this.name = 'MissingToolsError';
    this.missing = missing;
  }
}

/** Throws `MissingToolsError` naming every missing tool of `tools`. */
export async function requireTools(tools: readonly Tool[] = BUILD_TOOLS): Promise<void> {
  const missing = await missingTools(tools);
  if (missing.length > 0) throw new MissingToolsError(missing);
}
