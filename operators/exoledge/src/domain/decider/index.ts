/**
 * The decider's decisions, pure: the verdict (`decide`, and `stateWanted`: whether it
 * depends on what Valkey remembers), whose request it is (`clientAddress`, `clientKey`),
 * the proof-of-work (`mintNonce`, `checkSolution`), the clearance cookie, and the
 * readers of what the decider is given (its environment, its site's `config.json`, its
 * allowlists). The process in `src/decider/` reads, calls these, and answers.
 */
export { type AllowlistFile, type AllowlistRead, REPORTED_LINES, readAllowlist } from './allowlist.ts';
export {
  CLEARANCE_COOKIE,
  clearanceCookie,
  issueClearance,
  readClearanceCookie,
  TOKEN_RANDOM_BYTES,
  verifyClearance,
} from './clearance.ts';
export {
  type AddressHeaders,
  AddressSource,
  type ClientAddress,
  clientAddress,
  formatAddress,
  type IpAddress,
  readAddress,
} from './client-address.ts';
export { clientKey, IPV6_CLIENT_PREFIX } from './client-key.ts';
export {
  type DeciderSettings,
  isValkeyUrl,
  type ListenAddress,
  MAX_TRUSTED_HOPS,
  readDeciderEnv,
  readListen,
  readTrustedHops,
  type SettingsRead,
} from './env.ts';
export {
  ChallengeRejection,
  type CheckInput,
  checkSolution,
  leadingZeroBits,
  type MintInput,
  mintNonce,
  NONCE_RANDOM_BYTES,
  NONCE_TTL_SECONDS,
  type SolutionCheck,
  workDigest,
} from './proof-of-work.ts';
export {
  type DeciderSiteConfig,
  durationSeconds,
  readSiteConfig,
  type SiteConfigRead,
} from './site-config-reader.ts';
export {
  CHALLENGE_FLOOD_THRESHOLD,
  CHALLENGE_WINDOW_SECONDS,
  type ClientState,
  challengeFor,
  type Decision,
  decide,
  isChallenge,
  type ListHit,
  selects,
  stateWanted,
  unreadableClient,
  Verdict,
  type VerdictInput,
  type VerdictPolicy,
  VerdictReason,
} from './verdict.ts';
