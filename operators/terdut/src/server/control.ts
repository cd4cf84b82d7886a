/**
 * The terdut-server stand-in's HTTP control surface, under `/_standin/`, for a stand-in
 * run as its own process (`main.ts`) where tests cannot call the knobs directly. It is
 * stand-in only — the real server has nothing like it — and it has no auth, so it serves
 * the state snapshot (never key secrets) but nothing that would hand out a credential.
 * Requests to it are neither logged nor subject to the knobs they set.
 */
import { ApiError, fieldMustBe, MSG } from './errors.ts';
import type { FaultFilter, FaultKind, Faults } from './faults.ts';
import { isObject, type JsonObject, parseJsonObject } from './input.ts';
import type { StandInSnapshot } from './model.ts';
import type { RecordedRequest } from './request-log.ts';
import { Router } from './router.ts';
import type { Reply } from './routes.ts';

export const CONTROL_PREFIX = '/_standin/';

export interface ControlDeps {
  readonly faults: Faults;
  readonly requests: () => readonly RecordedRequest[];
  readonly clearRequests: () => void;
  readonly snapshot: () => StandInSnapshot;
}

/** The body field of POST /_standin/faults for each knob. */
const KNOB_FIELDS: readonly (readonly [string, FaultKind])[] = [
  ['failNext', 'fail'],
  ['malformedNext', 'malformed'],
  ['dropAfterCommitNext', 'dropAfterCommit'],
];

type Handler = (deps: ControlDeps, body: string) => Reply;

const router = new Router<Handler>([
  {
    pattern: '/_standin/faults',
    methods: {
      POST: (deps, raw) => {
        const body = parseJsonObject(raw);
        // Everything is read before anything is armed: a bad request changes nothing.
        const arms = KNOB_FIELDS.flatMap(([field, kind]) =>
          body[field] === undefined ? [] : [{ kind, ...readKnob(body[field], field) }],
        );
        const latency = body.latencyMs;
        if (latency !== undefined && (typeof latency !== 'number' || !(latency >= 0))) {
          throw new ApiError(400, fieldMustBe('latencyMs', 'a non-negative number'));
        }
        for (const a of arms) deps.faults.arm(a.kind, a.n, a.filter, a.status);
        if (typeof latency === 'number') deps.faults.setLatency(latency);
        return { status: 204 };
      },
      DELETE: (deps) => {
        deps.faults.clear();
        return { status: 204 };
      },
    },
  },
  {
    pattern: '/_standin/requests',
    methods: {
      GET: (deps) => ({ status: 200, body: deps.requests() }),
      DELETE: (deps) => {
        deps.clearRequests();
        return { status: 204 };
      },
    },
  },
  { pattern: '/_standin/state', methods: { GET: (deps) => ({ status: 200, body: deps.snapshot() }) } },
]);

interface Knob {
  readonly n: number;
  readonly status?: number;
  readonly filter: FaultFilter;
}

function readKnob(value: unknown, field: string): Knob {
  if (!isObject(value)) throw new ApiError(400, fieldMustBe(field, 'an object'));
  const v: JsonObject = value;
  if (typeof v.n !== 'number' || !Number.isSafeInteger(v.n) || v.n < 0) {
    throw new ApiError(400, fieldMustBe(`${field}.n`, 'a non-negative integer'));
  }
  const s = v.status;
  if (s !== undefined && (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 100 || s > 599)) {
    throw new ApiError(400, fieldMustBe(`${field}.status`, 'an HTTP status (100-599)'));
  }
  if (v.method !== undefined && typeof v.method !== 'string') {
    throw new ApiError(400, fieldMustBe(`${field}.method`, 'a string'));
  }
  if (v.path !== undefined && typeof v.path !== 'string') {
    throw new ApiError(400, fieldMustBe(`${field}.path`, 'a regular expression (a string)'));
  }
  let path: RegExp | undefined;
  try {
    path = v.path === undefined ? undefined : new RegExp(v.path);
  } catch {
    throw new ApiError(400, fieldMustBe(`${field}.path`, 'a valid regular expression'));
  }
  return {
    n: v.n,
    ...(s !== undefined ? { status: s } : {}),
    filter: { ...(v.method !== undefined ? { method: v.method } : {}), ...(path ? { path } : {}) },
  };
}

export function handleControl(deps: ControlDeps, method: string, path: string, body: string): Reply {
  const m = router.match(method, path);
  if (m.kind === 'no-route') return { status: 404, body: { error: MSG.notFound } };
  if (m.kind === 'wrong-method') {
    return { status: 405, body: { error: MSG.methodNotAllowed }, headers: { allow: m.allow.join(', ') } };
  }
  try {
    return m.endpoint(deps, body);
  } catch (e) {
    if (e instanceof ApiError) return { status: e.status, body: { error: e.message } };
    throw e;
  }
}
