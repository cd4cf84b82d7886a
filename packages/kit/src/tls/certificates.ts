/**
 * A self-signed CA and a serving certificate it signs, for webhook servers and the secure
 * metrics endpoint in tests and local runs. In a cluster, cert-manager issues the serving
 * certificate into a Secret mounted at the server's certificate directory, and its CA
 * injector fills the `caBundle` (docs/kit.md, Webhooks).
 *
 * The same library and key type as the control plane's PKI (`@peculiar/x509`, P-256
 * ECDSA: generated in milliseconds): Node has no X.509 generator of its own. The kit
 * must not import the control plane package (it depends on the kit), so the library is
 * a dependency of the kit too, loaded on first use only: an operator that never makes
 * a certificate never loads it, nor the `reflect-metadata` polyfill it needs.
 *
 * The files are named as cert-manager's Secret keys and controller-runtime's
 * certificate directory: `tls.crt`, `tls.key`, `ca.crt`.
 */
import { webcrypto } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface PemPair {
  /** PEM certificate (for a serving certificate: the leaf only). */
  readonly cert: string;
  /** PEM PKCS#8 private key. */
  readonly key: string;
}

export interface WebhookCertificates {
  readonly ca: PemPair;
  readonly serving: PemPair;
}

export interface SelfSignedOptions {
  /** DNS names of the serving certificate; default `localhost`. */
  readonly dnsNames?: readonly string[];
  /** IP addresses of the serving certificate; default `127.0.0.1` and `::1`. */
  readonly ipAddresses?: readonly string[];
  /** Validity from now; back-dated an hour against clock skew. Default 7 days. */
  readonly validForMs?: number;
  /** Sign with this CA instead of a new one (a rotation that keeps the caBundle valid). */
  readonly ca?: PemPair;
}

/** The file names of a certificate directory (cert-manager's Secret keys). */
export const CERT_FILE = 'tls.crt';
export const KEY_FILE = 'tls.key';
export const CA_FILE = 'ca.crt';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

type X509 = typeof import('@peculiar/x509');
let x509: Promise<X509> | undefined;

function library(): Promise<X509> {
  x509 ??= (async () => {
    // @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
    await import('reflect-metadata');
    const lib = await import('@peculiar/x509');
    lib.cryptoProvider.set(webcrypto as unknown as webcrypto.Crypto);
    return lib;
  })();
  return x509;
}

async function keys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function privatePem(lib: X509, key: webcrypto.CryptoKey): Promise<string> {
  return lib.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

async function loadCa(
  lib: X509,
  ca: PemPair,
): Promise<{ cert: InstanceType<X509['X509Certificate']>; keys: webcrypto.CryptoKeyPair }> {
  const cert = new lib.X509Certificate(ca.cert);
  const der = lib.PemConverter.decode(ca.key)[0];
  if (!der) throw new Error('the CA key PEM holds no key');
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
  const publicKey = await cert.publicKey.export(ALG, ['verify'], webcrypto as unknown as webcrypto.Crypto);
  return { cert, keys: { privateKey, publicKey } };
}

/** A CA (new, or `opts.ca`) and a serving certificate for `dnsNames` and `ipAddresses`, signed by it. */
export async function selfSignedCertificates(opts: SelfSignedOptions = {}): Promise<WebhookCertificates> {
  const lib = await library();
  const now = Date.now();
  const validity = {
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + (opts.validForMs ?? 7 * 86_400_000)),
  };
  let ca: { cert: InstanceType<X509['X509Certificate']>; keys: webcrypto.CryptoKeyPair };
  let caPem: PemPair;
  if (opts.ca) {
    ca = await loadCa(lib, opts.ca);
    caPem = opts.ca;
  } else {
    const caKeys = await keys();
    const caCert = await lib.X509CertificateGenerator.createSelfSigned({
      name: 'CN=operator kit webhook CA',
      keys: caKeys,
      signingAlgorithm: ALG,
      extensions: [
        new lib.BasicConstraintsExtension(true, 0, true),
        new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign, true),
        await lib.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
      ],
      ...validity,
    });
    ca = { cert: caCert, keys: caKeys };
    caPem = { cert: caCert.toString('pem'), key: await privatePem(lib, caKeys.privateKey) };
  }
  const dnsNames = opts.dnsNames ?? ['localhost'];
  const ips = opts.ipAddresses ?? ['127.0.0.1', '::1'];
  const leafKeys = await keys();
  const leaf = await lib.X509CertificateGenerator.create({
    // Clients check the SANs only; the CN is for people reading the certificate.
    subject: `CN=${dnsNames[0] ?? ips[0] ?? 'webhook'}`,
    issuer: ca.cert.subject,
    publicKey: leafKeys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: ALG,
    extensions: [
      new lib.BasicConstraintsExtension(false, undefined, true),
      new lib.KeyUsagesExtension(
        lib.KeyUsageFlags.digitalSignature | lib.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new lib.ExtendedKeyUsageExtension([lib.ExtendedKeyUsage.serverAuth]),
      await lib.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
      new lib.SubjectAlternativeNameExtension([
        ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
        ...ips.map((value) => ({ type: 'ip' as const, value })),
      ]),
    ],
    ...validity,
  });
  return {
    ca: caPem,
    serving: { cert: leaf.toString('pem'), key: await privatePem(lib, leafKeys.privateKey) },
  };
}

/**
 * Writes `tls.crt`, `tls.key` and `ca.crt` into `dir` (created if missing), each
 * through a temporary file and a rename, so that a server re-reading them never sees a
 * half-written file. Between the two renames a reader may see a new key with the old
 * certificate: the server's reloader refuses a pair that does not match and tries again
 * at its next check, as it does for cert-manager's own updates of a mounted Secret.
 */
export async function writeCertificates(dir: string, certs: WebhookCertificates): Promise<void> {
  await mkdir(dir, { recursive: true });
  const put = async (name: string, text: string, mode: number): Promise<void> => {
    const tmp = join(dir, `.${name}.${process.pid}.tmp`);
    await writeFile(tmp, text, { mode });
    await rename(tmp, join(dir, name));
  };
  await put(KEY_FILE, certs.serving.key, 0o600);
  await put(CERT_FILE, certs.serving.cert, 0o644);
  await put(CA_FILE, certs.ca.cert, 0o644);
}

/**
 * A client certificate for `commonName`, signed by `ca` (extended key usage
 * `clientAuth`, which a TLS server verifying clients requires): what the apiserver
 * presents to a webhook server configured with a `clientCA`, through the kubeconfig of
 * its `--admission-control-config-file` (docs/kit.md, Webhooks). For tests and local
 * runs; in a cluster the administrator's PKI issues it.
 */
export async function clientCertificate(
  ca: PemPair,
  commonName: string,
  opts: { readonly validForMs?: number } = {},
): Promise<PemPair> {
  const lib = await library();
  const signer = await loadCa(lib, ca);
  const now = Date.now();
  const leafKeys = await keys();
  const leaf = await lib.X509CertificateGenerator.create({
    subject: `CN=${commonName}`,
    issuer: signer.cert.subject,
    publicKey: leafKeys.publicKey,
    signingKey: signer.keys.privateKey,
    signingAlgorithm: ALG,
    extensions: [
      new lib.BasicConstraintsExtension(false, undefined, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature, true),
      new lib.ExtendedKeyUsageExtension([lib.ExtendedKeyUsage.clientAuth]),
      await lib.AuthorityKeyIdentifierExtension.create(signer.keys.publicKey),
    ],
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + (opts.validForMs ?? 7 * 86_400_000)),
  });
  return { cert: leaf.toString('pem'), key: await privatePem(lib, leafKeys.privateKey) };
}
