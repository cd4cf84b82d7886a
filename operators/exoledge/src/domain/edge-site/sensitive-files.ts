/**
 * The file suffixes a site never serves when `security.sensitiveFiles` is on (the default):
 * an Istio AuthorizationPolicy with action DENY matches each as a path suffix (`*<suffix>`)
 * on the site's Gateway. The seed names their number, 93, not the list; this is ours,
 * grouped by why a request for them is an attack and never a visitor, and listed in
 * docs/exoledge.md (a test keeps the two the same).
 *
 * Deliberately absent: suffixes that real sites serve to visitors (`.zip`, `.tar.gz`,
 * `.json`, `.xml`, `.txt`, `.crt`): denying those by default would break downloads and APIs.
 * Entries with a leading `/` are whole file names (the suffix includes the slash, so
 * `/.env` denies `/app/.env` but not `/docs/my.env`); the others are extensions.
 */

/** One group of suffixes, with the reason they are denied. */
export interface SensitiveFileGroup {
  readonly why: string;
  readonly suffixes: readonly string[];
}

export const SENSITIVE_FILE_GROUPS: readonly SensitiveFileGroup[] = [
  {
    why: "Version-control metadata: the repository's history, remotes and sometimes credentials",
    suffixes: [
      '/.git/config',
      '/.git/HEAD',
      '/.git/index',
      '/.git/logs/HEAD',
      '/.git-credentials',
      '/.gitconfig',
      '/.svn/entries',
      '/.svn/wc.db',
      '/.hg/hgrc',
      '/.bzr/branch-format',
      '/CVS/Root',
      '/CVS/Entries',
    ],
  },
  {
    why: 'Environment files and tool credentials: secrets by design',
    suffixes: [
      '/.env',
      '/.env.local',
      '/.env.production',
      '/.env.development',
      '/.env.backup',
      '/.env.bak',
      '/.env.old',
      '/.env.save',
      '/.npmrc',
      '/.pypirc',
      '/.netrc',
      '/.dockercfg',
      '/.docker/config.json',
      '/.aws/credentials',
      '/.s3cfg',
      '/.kube/config',
    ],
  },
  {
    why: 'Web-server and runtime configuration',
    suffixes: [
      '/.htaccess',
      '/.htpasswd',
      '/web.config',
      '/nginx.conf',
      '/httpd.conf',
      '/php.ini',
      '/.user.ini',
    ],
  },
  {
    why: 'Application configuration that holds database passwords or keys',
    suffixes: [
      '/wp-config.php.bak',
      '/wp-config.php.old',
      '/wp-config.php.save',
      '/wp-config.php~',
      '/config.php.bak',
      '/configuration.php.bak',
      '/settings.php.bak',
      '/database.yml',
      '/secrets.yml',
      '/credentials.json',
      '/appsettings.json',
      '/application.properties',
      '/parameters.yml',
      '/app/etc/local.xml',
      '/app/etc/env.php',
    ],
  },
  {
    why: 'Private keys and keystores',
    suffixes: [
      '.pem',
      '.key',
      '.p12',
      '.pfx',
      '.jks',
      '.keystore',
      '.ppk',
      '/id_rsa',
      '/id_dsa',
      '/id_ecdsa',
      '/id_ed25519',
      '/.ssh/authorized_keys',
    ],
  },
  {
    why: 'Database files and dumps',
    suffixes: ['.sql', '.sql.gz', '.sql.bz2', '.sql.zip', '.dump', '.sqlite', '.sqlite3', '.mdb'],
  },
  {
    why: "Backups, editor swap and temporary files: yesterday's source, served as text",
    suffixes: ['.bak', '.backup', '.old', '.orig', '.save', '.swp', '.swo', '.tmp', '~', '.un~'],
  },
  {
    why: 'Logs and shell histories',
    suffixes: [
      '.log',
      '/error_log',
      '/.bash_history',
      '/.zsh_history',
      '/.mysql_history',
      '/.psql_history',
      '/.viminfo',
    ],
  },
  {
    why: 'Operating-system and IDE metadata',
    suffixes: [
      '/.DS_Store',
      '/Thumbs.db',
      '/desktop.ini',
      '/.idea/workspace.xml',
      '/.vscode/settings.json',
      '/nbproject/project.properties',
    ],
  },
];

/** Every suffix, in the groups' order: what the AuthorizationPolicy lists. */
export const SENSITIVE_FILE_SUFFIXES: readonly string[] = SENSITIVE_FILE_GROUPS.flatMap((g) => g.suffixes);
