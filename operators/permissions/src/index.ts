export * from './api/index.ts';
export {
  createOperator,
  DEFAULT_BUNDLE_PORT,
  LEASE_NAME,
  type Operator,
  type OperatorOptions,
} from './operator.ts';
export { WEBHOOK_CONFIGURATION_NAME, webhookConfiguration } from './webhooks/configuration.ts';
