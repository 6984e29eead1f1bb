/**
 * One home per network-fault kind: the descriptors of src/core/faults/network.ts against every place that
 * lists the kinds (openapi.yaml's enums and bounds, the scenario schema, the transcript's checks,
 * the dashboard's list) and the adapters' tables (the socket's, the page's). A new kind added to
 * the descriptors without its parts fails here; the adapters' tables are `Record<NetworkKind, ...>`,
 * so the compiler asks for their entries first.
 */
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MEDIA_NETWORK_KINDS,
  NETWORK,
  NETWORK_FIELDS,
  NETWORK_KINDS,
  NETWORK_PHASES,
  describeNetwork,
  gatewayPage,
  networkFault,
  networkSpecOf,
  recognisedKind,
  type NetworkFault,
  type NetworkKind,
  type NetworkSpec,
  type WireSeen,
} from '../src/core/faults/network.js';
import { SCENARIO_FILE_SCHEMA } from '../src/core/scenario/scenarioSchema.js';
import { ON_SOCKET } from '../src/http/network.js';
import { IN_PAGE } from '../src/msw/answers.js';
import { checkRecordedRequest } from '../src/transcript/lineFormat.js';
import { openapiPath } from '../src/index.js';
import { makeSim } from './helpers.js';

type Json = Record<string, any>;
const doc = parse(readFileSync(openapiPath, 'utf8')) as Json;
const schemas = doc.components.schemas as Json;

let open: ReturnType<typeof makeSim>[] = [];
afterEach(async () => {
  await Promise.all(open.map((s) => s.close()));
  open = [];
});

describe('openapi.yaml states the kinds as their descriptors do', () => {
  it('SimNetworkKind and SimNetworkLoss: every kind, in order', () => {
    expect(schemas.SimNetworkKind.enum).toEqual([...NETWORK_KINDS, null]);
    expect(schemas.SimNetworkLoss.properties.kind.enum).toEqual([...NETWORK_KINDS]);
    expect(schemas.SimNetworkLoss.properties.phase.enum).toEqual([...NETWORK_PHASES]);
  });

  it("a fault request's phase, and each kind's own field with its bounds and default", () => {
    const props = schemas.SimFaultRequest.properties as Json;
    expect(props.phase.enum).toEqual([...NETWORK_PHASES, null]);
    // The fields that go with `network` (their descriptions say so) are the descriptors' own fields.
    const documented = Object.keys(props).filter((name) => /^With `network` `/.test(props[name].description ?? ''));
    expect(documented).toEqual(NETWORK_FIELDS.map((f) => f.name));
    for (const field of NETWORK_FIELDS) {
      const prop = props[field.name] as Json;
      expect(prop.description, field.name).toMatch(new RegExp(`^With \`network\` \`${field.kind}\``));
      if ('enum' in field.values) {
        expect(prop, field.name).toMatchObject({ type: ['integer', 'null'], enum: [...field.values.enum, null] });
      } else {
        expect([prop.type, prop.minimum, prop.maximum], field.name).toEqual([['integer', 'null'], field.values.minimum, field.values.maximum]);
      }
      if (field.default !== null) expect(prop.description, field.name).toContain(`Default ${field.default}.`);
    }
  });

  it("the fault list shows each kind's own field", () => {
    const item = schemas.SimFaultList.properties.faults.items as Json;
    expect(item.properties.network.$ref).toBe('#/components/schemas/SimNetworkKind');
    expect(item.properties.phase.enum).toEqual([...NETWORK_PHASES]);
    for (const field of NETWORK_FIELDS) expect(item.properties[field.name], field.name).toEqual({ type: 'integer' });
  });
});

describe('The derived lists', () => {
  it("the scenario schema's http.faults items: the kinds, the phases, each own field's values", () => {
    const item = (SCENARIO_FILE_SCHEMA as Json).properties.http.properties.faults.items.properties as Json;
    expect(item.network).toEqual({ enum: [...NETWORK_KINDS] });
    expect(item.phase).toEqual({ enum: [...NETWORK_PHASES] });
    expect(item).toMatchObject({
      hang_ms: { type: 'integer', minimum: 0, maximum: 600_000 },
      truncate_bytes: { type: 'integer', minimum: 0 },
      gateway_status: { enum: [502, 503, 504] },
      bytes_per_second: { type: 'integer', minimum: 1, maximum: 10_485_760 },
    });
    for (const field of NETWORK_FIELDS) expect(item[field.name], field.name).toBeDefined();
  });

  it("the transcript's checks take every kind and phase, and nothing else", () => {
    const wrong = (field: string, expected: string): never => {
      throw new Error(`${field}: ${expected}`);
    };
    const line = (network: unknown) => ({ seq: 1, now: '2025-01-01T00:00:00.000Z', at: null, method: 'GET', path: '/v1/videos', headers: {}, body: null, status: null, network });
    for (const kind of NETWORK_KINDS) {
      for (const phase of NETWORK_PHASES) expect(() => checkRecordedRequest(line({ kind, phase, body_bytes: 0 }), wrong)).not.toThrow();
    }
    expect(() => checkRecordedRequest(line({ kind: 'not-a-kind', phase: 'after', body_bytes: 0 }), wrong)).toThrow(`network: a kind of ${NETWORK_KINDS.join(', ')}`);
    expect(() => checkRecordedRequest(line({ kind: 'reset', phase: 'during', body_bytes: 0 }), wrong)).toThrow('network: a phase before or after');
  });

  it('the media kinds: those a CDN makes (not the gateway)', () => {
    expect(MEDIA_NETWORK_KINDS).toEqual(NETWORK_KINDS.filter((kind) => NETWORK[kind].media));
    expect(MEDIA_NETWORK_KINDS.filter((kind) => SIX.includes(kind))).toEqual(['reset', 'close', 'hang', 'truncate', 'slow']);
  });

  it("the dashboard's list: every kind, its words, whether it delivers and whether it may happen before (ui/addresses.js)", async () => {
    const sim = makeSim({ controlToken: 'dashboard-token-0123456789' });
    open.push(sim);
    const res = await request(sim.app).get('/_sim/ui/addresses.js');
    const served: Record<string, unknown> = {};
    // The served module, run as the dashboard runs it (its exports collected instead of exported).
    // oxlint-disable-next-line typescript/no-implied-eval
    new Function('served', res.text.replaceAll(/^export const (\w+) =/gm, 'served.$1 ='))(served);
    expect(served.NETWORK_FAULTS).toEqual(NETWORK_KINDS.map((kind) => ({ kind, label: NETWORK[kind].label, delivers: NETWORK[kind].delivers, before: NETWORK[kind].phase.before })));
    // The page writes no kind of its own: its network options come from that list.
    const page = readFileSync(new URL('../assets/dashboard/index.html', import.meta.url), 'utf8');
    expect(page).not.toMatch(/value="network:/);
  });
});

describe('Each kind has its parts', () => {
  it('a socket handler and a page handler', () => {
    expect(Object.keys(ON_SOCKET)).toEqual([...NETWORK_KINDS]);
    expect(Object.keys(IN_PAGE)).toEqual([...NETWORK_KINDS]);
  });

  it('a descriptor that holds together: a kind that delivers is after only; a field default within its values', () => {
    for (const kind of NETWORK_KINDS) {
      const d = NETWORK[kind];
      expect(d.label, kind).not.toBe('');
      if (d.delivers) expect(d.phase, kind).toEqual({ default: 'after', before: false });
      if (!d.phase.before) expect(d.phase.default, kind).toBe('after');
      const f = d.field;
      if (f?.default != null) {
        if ('enum' in f.values) expect(f.values.enum, kind).toContain(f.default);
        else expect(f.default, kind).toBeGreaterThanOrEqual(f.values.minimum);
      }
    }
  });
});

/** The kinds as they were before they had descriptors: what each gave then, it gives now (a new kind is not pinned here). */
const SIX: readonly NetworkKind[] = ['reset', 'close', 'hang', 'truncate', 'gateway', 'slow'];
const faultOf = (spec: NetworkSpec): NetworkFault => networkFault(spec) as NetworkFault;

describe('The descriptors give what the kinds gave before', () => {
  it('the defaults, in the shape a state file keeps', () => {
    const shape = (kind: NetworkKind) => JSON.stringify(networkFault({ network: kind }));
    expect(SIX.map(shape)).toEqual(
      SIX.map((kind) =>
        JSON.stringify({ kind, phase: kind === 'truncate' || kind === 'slow' ? 'after' : 'before', hangMs: 30000, truncateBytes: null, gatewayStatus: 502, bytesPerSecond: 1024 }),
      ),
    );
  });

  it('the words in the journal, and the fault list', () => {
    const words = SIX.map((kind) => describeNetwork(faultOf({ network: kind })));
    expect(words).toEqual(['network reset (before)', 'network close (before)', 'network hang 30000 ms (before)', 'network truncate (after)', 'network gateway 502 (before)', 'network slow 1024 B/s (after)']);
    expect(describeNetwork(faultOf({ network: 'truncate', truncate_bytes: 7 }))).toBe('network truncate 7 bytes (after)');
    expect(SIX.map((kind) => networkSpecOf(faultOf({ network: kind, phase: 'after' })))).toEqual([
      { network: 'reset', phase: 'after' },
      { network: 'close', phase: 'after' },
      { network: 'hang', phase: 'after', hang_ms: 30000 },
      { network: 'truncate', phase: 'after' },
      { network: 'gateway', phase: 'after', gateway_status: 502 },
      { network: 'slow', phase: 'after', bytes_per_second: 1024 },
    ]);
  });

  it('what a replay recognises on the wire', () => {
    const pageSeen: WireSeen = { ended: 'answered', status: 503, headers: { 'content-type': 'text/html' } };
    const answer: WireSeen = { ended: 'answered', status: 200, headers: { 'content-type': 'application/json', 'x-request-id': 'req_1' } };
    const cases: [WireSeen, NetworkKind | undefined, NetworkKind | undefined][] = [
      [{ ended: 'reset' }, 'reset', 'reset'],
      [{ ended: 'close' }, 'close', 'close'],
      [{ ended: 'close' }, 'hang', 'hang'],
      [{ ended: 'close' }, undefined, 'close'],
      [{ ended: 'hang' }, 'hang', 'hang'],
      [{ ended: 'truncated', status: 200 }, 'truncate', 'truncate'],
      [pageSeen, 'gateway', 'gateway'],
      [pageSeen, 'slow', 'gateway'],
      [answer, 'slow', 'slow'],
      [answer, 'gateway', undefined],
      [answer, undefined, undefined],
      [{ ended: 'answered', status: 503, headers: { 'content-type': 'text/html', 'x-request-id': 'req_1' } }, undefined, undefined],
    ];
    expect(cases.map(([seen, journaled]) => recognisedKind(seen, journaled))).toEqual(cases.map(([, , kind]) => kind));
    expect(SIX.filter((kind) => NETWORK[kind].replay.letGo)).toEqual(['hang']);
  });

  it('which hold a connection, what the client sees, how many body bytes reach it', () => {
    const fault = (kind: NetworkKind) => faultOf({ network: kind });
    expect(SIX.filter((kind) => NETWORK[kind].holdsConnection)).toEqual(['hang', 'slow']);
    expect(SIX.map((kind) => NETWORK[kind].statusSeen(fault(kind), 201))).toEqual([null, null, null, 201, 502, 201]);
    expect(SIX.map((kind) => NETWORK[kind].bodyBytesSent(fault(kind), 10))).toEqual([0, 0, 0, 5, gatewayPage(502).length, 10]);
    expect(SIX.filter((kind) => !NETWORK[kind].readable)).toEqual(['reset', 'close', 'hang', 'truncate']);
    expect(SIX.filter((kind) => NETWORK[kind].delivers !== 'whole')).toEqual(['reset', 'close', 'hang', 'truncate', 'gateway']);
  });
});
