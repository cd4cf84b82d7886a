/**
 * The Go toolchain, used only to build the control-plane binaries and to download
 * the modules that carry third-party CRDs. Every call goes through {@link runGo},
 * which turns the toolchain's failures into a {@link ControlPlaneError} that says
 * what went wrong and what to do: a missing toolchain, an unreachable module proxy,
 * a module the proxy refuses, a failed compile.
 */
import { spawn } from 'node:child_process';
import { ControlPlaneError, tail } from './errors.ts';

export interface GoRun {
  readonly stdout: string;
  readonly stderr: string;
}

export interface GoOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Called with each line the toolchain prints on stderr (go build -v lists packages there). */
  readonly onLine?: (line: string) => void;
  /** What the command is for, used in error messages ("building kube-apiserver"). */
  readonly purpose: string;
}

/** Runs `go <args>`; resolves with its output, rejects with a ControlPlaneError. */
export function runGo(args: readonly string[], opts: GoOptions): Promise<GoRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, {
      cwd: opts.cwd,
      env: { ...process.env, GOFLAGS: '-buildvcs=false', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (!opts.onLine) return;
      partial += d;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) opts.onLine(l);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        reject(
          new ControlPlaneError(
            `${opts.purpose}: the Go toolchain is not on PATH.`,
            'install Go 1.26 or later (https://go.dev/doc/install), or set KUBEBUILDER_ASSETS to a folder ' +
              'holding kube-apiserver, etcd, kubectl and helm built for this Kubernetes version.',
          ),
        );
      } else reject(err);
    });
    child.on('close', (code, signal) => {
      if (code === 0) return resolve({ stdout, stderr });
      // `go mod download -json` reports its errors in the JSON on stdout, not on stderr.
      reject(classifyGoFailure(opts.purpose, args, `${stderr}${stdout}`, code, signal));
    });
  });
}

/** Maps the toolchain's own words to a cause and a fix. */
export function classifyGoFailure(
  purpose: string,
  args: readonly string[],
  stderr: string,
  code: number | null,
  signal: NodeJS.Signals | null,
): ControlPlaneError {
  const cmd = `go ${args.join(' ')}`;
  if (signal) {
    return new ControlPlaneError(`${purpose}: \`${cmd}\` was killed by ${signal}.`, 'run the command again.');
  }
  if (
    /dial tcp|no such host|connection refused|i\/o timeout|TLS handshake timeout|proxyconnect/.test(stderr)
  ) {
    return new ControlPlaneError(
      `${purpose}: the Go module proxy cannot be reached.`,
      `check the network and GOPROXY (now ${process.env.GOPROXY ?? 'the default'}); or set KUBEBUILDER_ASSETS to ` +
        'prebuilt binaries so nothing is downloaded.',
      tail(stderr, 10),
    );
  }
  if (/40[34] Forbidden|404 Not Found|not available|unknown revision|invalid version/.test(stderr)) {
    return new ControlPlaneError(
      `${purpose}: the Go module proxy does not serve a module this build needs.`,
      'check the versions in packages/controlplane/src/versions.ts against what the proxy serves ' +
        '(`go list -m -versions MODULE`).',
      tail(stderr, 10),
    );
  }
  if (/requires go >=|toolchain not available/.test(stderr)) {
    return new ControlPlaneError(
      `${purpose}: the installed Go is older than the module requires.`,
      'install the Go release the error names, or set GOTOOLCHAIN to it.',
      tail(stderr, 10),
    );
  }
  if (/no space left on device/.test(stderr)) {
    return new ControlPlaneError(
      `${purpose}: the disk is full.`,
      'free space under the Go build cache (`go clean -cache`) and ~/.cache.',
      tail(stderr, 5),
    );
  }
  return new ControlPlaneError(
    `${purpose}: \`${cmd}\` failed with exit code ${code}.`,
    'read the compiler output below; a clean retry after `go clean -cache` fixes a corrupted build cache.',
    tail(stderr),
  );
}

export interface DownloadedModule {
  readonly path: string;
  readonly version: string;
  /** Where the module's files were extracted (read-only, in the module cache). */
  readonly dir: string;
  /** The module's own go.mod, as served. */
  readonly goMod: string;
}

/**
 * `go mod download` one module version into the module cache; idempotent and fast once cached.
 * `cwd` should hold no go.mod, so that no module's requirements interfere.
 */
export async function downloadModule(
  module: string,
  version: string,
  cwd: string,
): Promise<DownloadedModule> {
  const { stdout } = await runGo(['mod', 'download', '-json', `${module}@${version}`], {
    cwd,
    purpose: `downloading ${module}@${version}`,
  });
  const info = JSON.parse(stdout) as {
    Path: string;
    Version: string;
    Dir?: string;
    GoMod?: string;
    Error?: string;
  };
  if (info.Error || !info.Dir || !info.GoMod) {
    throw new ControlPlaneError(
      `downloading ${module}@${version}: ${info.Error ?? 'the toolchain returned no directory'}`,
      'check that the version exists on the module proxy (`go list -m -versions MODULE`).',
    );
  }
  return { path: info.Path, version: info.Version, dir: info.Dir, goMod: info.GoMod };
}
