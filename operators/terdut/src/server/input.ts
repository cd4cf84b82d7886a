/**
 * Reading request bodies for the terdut-server stand-in: each reader names the field it
 * refuses, so a client bug shows up as a 400 that says which field, not as a silent
 * default. Types are checked strictly (a number where a string belongs is a 400).
 */
import { ApiError, fieldMustBe, fieldRequired, MSG } from './errors.ts';
import type { EscalationLevel, EscalationTarget } from './model.ts';
import type { PolicyInput } from './store.ts';

export type JsonObject = { readonly [key: string]: unknown };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The parsed body of a POST/PUT/PATCH; an empty body reads as `{}`. */
export function parseJsonObject(raw: string): JsonObject {
  if (raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ApiError(400, MSG.invalidJson);
  }
  if (!isObject(value)) throw new ApiError(400, MSG.bodyNotObject);
  return value;
}

/** Absent, null and "" all count as missing. */
export function requiredString(o: JsonObject, field: string): string {
  const v = o[field];
  if (v === undefined || v === null || v === '') throw new ApiError(400, fieldRequired(field));
  if (typeof v !== 'string') throw new ApiError(400, fieldMustBe(field, 'a string'));
  return v;
}

/** Must be present, but "" is a value (it clears, e.g. an OIDC group). */
export function presentString(o: JsonObject, field: string): string {
  const v = o[field];
  if (v === undefined || v === null) throw new ApiError(400, fieldRequired(field));
  if (typeof v !== 'string') throw new ApiError(400, fieldMustBe(field, 'a string'));
  return v;
}

/** Absent, null and "" all read as "not set", matching how the wire omits empty fields. */
export function optionalString(o: JsonObject, field: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new ApiError(400, fieldMustBe(field, 'a string'));
  return v;
}

function integer(o: JsonObject, field: string, label: string, min: number): number {
  const v = o[field];
  if (v === undefined || v === null) throw new ApiError(400, fieldRequired(label));
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new ApiError(400, fieldMustBe(label, min > 0 ? 'a positive integer' : 'a non-negative integer'));
  }
  return v;
}

export function positiveInteger(o: JsonObject, field: string, label = field): number {
  return integer(o, field, label, 1);
}

export function nonNegativeInteger(o: JsonObject, field: string, label = field): number {
  return integer(o, field, label, 0);
}

/** One of a closed set of strings. */
export function oneOf<T extends string>(o: JsonObject, field: string, allowed: readonly T[]): T {
  const v = requiredString(o, field);
  const found = allowed.find((a) => a === v);
  if (found === undefined) throw new ApiError(400, fieldMustBe(field, `one of ${allowed.join(', ')}`));
  return found;
}

function array(o: JsonObject, field: string, label: string): readonly unknown[] {
  const v = o[field];
  if (v === undefined || v === null) throw new ApiError(400, fieldRequired(label));
  if (!Array.isArray(v)) throw new ApiError(400, fieldMustBe(label, 'an array'));
  return v;
}

function object(v: unknown, label: string): JsonObject {
  if (!isObject(v)) throw new ApiError(400, fieldMustBe(label, 'an object'));
  return v;
}

function target(v: unknown, label: string): EscalationTarget {
  const t = object(v, label);
  const kind = t.kind;
  if (kind === 'oncall') return { kind: 'oncall' };
  if (kind === 'user') return { kind: 'user', userId: positiveInteger(t, 'user_id', `${label}.user_id`) };
  throw new ApiError(400, fieldMustBe(`${label}.kind`, 'one of oncall, user'));
}

/**
 * A whole escalation policy, as PUT /api/teams/{id}/escalation takes it. `team_id` in the
 * body is ignored: the path says which team. Whether user targets exist is the store's call.
 */
export function readPolicy(o: JsonObject): PolicyInput {
  const repeatCount = nonNegativeInteger(o, 'repeat_count');
  const fallbackTopic = optionalString(o, 'fallback_topic');
  const levels = array(o, 'levels', 'levels').map((lv, i): EscalationLevel => {
    const label = `levels[${i}]`;
    const level = object(lv, label);
    return {
      timeoutSeconds: positiveInteger(level, 'timeout_seconds', `${label}.timeout_seconds`),
      targets: array(level, 'targets', `${label}.targets`).map((t, j) => target(t, `${label}.targets[${j}]`)),
    };
  });
  return { repeatCount, ...(fallbackTopic !== undefined ? { fallbackTopic } : {}), levels };
}
