export * from './domain/blocklist/index.ts';
