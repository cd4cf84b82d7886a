/**
 * A real OpenSSH server for the ssh transport tests: Debian's sshd on 127.0.0.1 and a
 * free port, with its own host key, one authorized client key, and nothing of the
 * machine's /etc/ssh (`-f` our config, every file in a temp folder). git runs over it
 * exactly as over any ssh remote: `ssh://<user>@127.0.0.1:<port>/<abs path>` runs
 * `git-receive-pack '<abs path>'` as the current user.
 *
 * It logs in as the user running the tests (root in CI: hence `PermitRootLogin`), with
 * `StrictModes no` (temp folders are not what sshd expects of a home), `UsePAM no` (no
 * PAM stack in a container) and `PidFile none`.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureDebianPackages, freePort } from '@operators/controlplane/testing';

const execFileP = promisify(execFile);

/** Debian's sshd; it must be started by absolute path. */
const SSHD = '/usr/sbin/sshd';

/** sshd's privilege-separation folder, which Debian creates only when the service starts. */
const PRIVSEP_DIR = '/run/sshd';

/** How long sshd gets to say it listens. */
const READY_TIMEOUT_MS = 10_000;

/** Ports tried before giving up (another process may take the free port between probe and bind). */
const PORT_ATTEMPTS = 5;

/** util-linux's setpriv, to have the kernel kill sshd if the test process dies without cleaning up. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

export interface SshKeyPair {
  /** The private key, OpenSSH format. */
  readonly privateKey: string;
  /** `ssh-ed25519 AAAA… comment`. */
  readonly publicKey: string;
}

export interface Sshd {
  readonly port: number;
  readonly user: string;
  /** The key sshd accepts. */
  readonly clientKey: SshKeyPair;
  /** A known_hosts line vouching for this server's real host key. */
  readonly knownHosts: string;
  /** A known_hosts line for this server with some other host key. */
  readonly wrongKnownHosts: string;
  /** The ssh URL of a repository at an absolute path. */
  url(repoPath: string): string;
  /** What sshd logged, for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

/** A fresh ed25519 key pair, made by ssh-keygen in `dir` under `name`. */
export async function generateKey(dir: string, name: string): Promise<SshKeyPair> {
  const file = join(dir, name);
  await execFileP('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]);
  return {
    privateKey: await readFile(file, 'utf8'),
    publicKey: (await readFile(`${file}.pub`, 'utf8')).trim(),
  };
}

/** The `type base64` part of a public key line (without its comment). */
function keyBody(publicKey: string): string {
  return publicKey.split(/\s+/).slice(0, 2).join(' ');
}

/** Starts sshd; the caller stops it. Installs openssh-server first when it is missing. */
export async function startSshd(): Promise<Sshd> {
  await ensureDebianPackages(['openssh-server']);
  const isRoot = process.getuid?.() === 0;
  if (isRoot) await mkdir(PRIVSEP_DIR, { recursive: true, mode: 0o755 });
  const dir = await mkdtemp(join(tmpdir(), 'gitops-reverser-sshd-'));
  const user = userInfo().username;
  const host = await generateKey(dir, 'host_ed25519');
  const otherHost = await generateKey(dir, 'other_host_ed25519');
  const clientKey = await generateKey(dir, 'client_ed25519');
  await writeFile(join(dir, 'authorized_keys'), `${clientKey.publicKey}\n`, { mode: 0o600 });

  let lastError = '';
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    const config = join(dir, 'sshd_config');
    await writeFile(
      config,
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${join(dir, 'host_ed25519')}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        isRoot ? 'PermitRootLogin yes' : 'PermitRootLogin no',
        `AllowUsers ${user}`,
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'StrictModes no',
        'UsePAM no',
        'PidFile none',
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    const [cmd, args] = SETPRIV
      ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', SSHD, '-D', '-e', '-f', config]]
      : [SSHD, ['-D', '-e', '-f', config]];
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = once(child, 'exit');
    const ready = await new Promise<boolean>((resolve) => {
      const deadline = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
      const check = (): void => {
        if (output.includes(`Server listening on 127.0.0.1 port ${port}`)) {
          clearTimeout(deadline);
          resolve(true);
        }
      };
      child.stderr.on('data', check);
      child.once('exit', () => {
        clearTimeout(deadline);
        resolve(false);
      });
    });
    if (!ready) {
      child.kill('SIGKILL');
      await exited;
      lastError = output;
      continue;
    }
    const stop = async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    };
    return {
      port,
      user,
      clientKey,
      knownHosts: `[127.0.0.1]:${port} ${keyBody(host.publicKey)}\n`,
      wrongKnownHosts: `[127.0.0.1]:${port} ${keyBody(otherHost.publicKey)}\n`,
      url: (repoPath) => `ssh://${user}@127.0.0.1:${port}${repoPath}`,
      log: () => output,
      stop,
    };
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(`sshd did not start after ${PORT_ATTEMPTS} attempts:\n${lastError}`);
}
