export { type DecryptedSops, decryptSops, decryptSopsFile, sopsRecipients } from './decrypt.ts';
export { type EncryptOptions, encryptSecret } from './encrypt.ts';
export { isSopsError, SopsError, SopsErrorKind } from './errors.ts';
export { parseIdentities, parseRecipients } from './recipients.ts';
export { type ContentComparison, compareSecretContent, sameSecretContent } from './same-content.ts';
