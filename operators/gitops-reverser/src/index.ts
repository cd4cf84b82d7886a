export { createOperator, LEASE_NAME, type Operator, type OperatorOptions } from './operator.ts';
