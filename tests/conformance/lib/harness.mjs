// Shared plumbing of the conformance scenarios: where the emulator is, its
// admin API (/_emulator/ on the global endpoint, plain JSON over Node's
// fetch), a CosmosClient built the way gateway-protocol.md B9 says, and the
// pass/fail frame every scenario runs in.
//
// A scenario is started as
//   node scenarios/<name>.mjs --endpoint=http://127.0.0.1:PORT/ [--key=BASE64]
// (or with GEOROUTE_EMULATOR_ENDPOINT / GEOROUTE_EMULATOR_KEY in the
// environment). run.sh starts a fresh `georoute emulator` per scenario and
// passes both.

import assert from 'node:assert/strict';
import { CosmosClient } from '@azure/cosmos';

/// The well-known public emulator key, the emulator's default.
export const WELL_KNOWN_KEY =
  'C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==';

function argValue(name) {
  const prefix = `--${name}=`;
  const hit = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return hit === undefined ? undefined : hit.slice(prefix.length);
}

function loopbackUrl(text, what) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${what}: '${text}' is not a URL`);
  }
  // Every byte of this suite stays on loopback (gateway-protocol.md B2).
  if (url.hostname !== '127.0.0.1')
    throw new Error(`${what}: '${text}' is not on 127.0.0.1`);
  return url.origin + '/';
}

const endpointText = argValue('endpoint') ?? process.env.GEOROUTE_EMULATOR_ENDPOINT;
if (!endpointText) {
  console.error(
    'usage: node <scenario>.mjs --endpoint=http://127.0.0.1:PORT/ [--key=BASE64]\n' +
      '  (the global endpoint `georoute emulator` prints; or set GEOROUTE_EMULATOR_ENDPOINT)',
  );
  process.exit(2);
}

/// The emulator's global (account) endpoint, "http://127.0.0.1:PORT/".
export const endpoint = loopbackUrl(endpointText, '--endpoint');
/// The master key the emulator checks signatures with.
export const key = argValue('key') ?? process.env.GEOROUTE_EMULATOR_KEY ?? WELL_KNOWN_KEY;

/// "http://127.0.0.1:1234" and "http://127.0.0.1:1234/" compare equal.
export function sameEndpoint(a, b) {
  return new URL(a).origin === new URL(b).origin;
}

// -- admin API ----------------------------------------------------------------

/// One admin call; a non-2xx answer throws with the emulator's error text.
export async function admin(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(new URL(`_emulator/${path}`, endpoint), init);
  const text = await res.text();
  if (!res.ok)
    throw new Error(`admin ${method} /_emulator/${path} -> ${res.status}: ${text}`);
  return text ? JSON.parse(text) : {};
}

/// GET /_emulator/state.
export const emulatorState = () => admin('GET', 'state');

/// Region name -> endpoint, in account order.
export async function regionEndpoints() {
  const state = await emulatorState();
  return new Map(state.regions.map((r) => [r.name, r.endpoint]));
}

/// GET /_emulator/counters: {region: {status: n}}; "" is the global endpoint.
export const counters = () => admin('GET', 'counters');
export const resetCounters = () => admin('POST', 'counters/reset');

/// Requests `region` answered with `status` (0 when none).
export function count(snapshot, region, status) {
  return snapshot?.[region]?.[String(status)] ?? 0;
}

/// Requests `region` answered with any status.
export function total(snapshot, region) {
  return Object.values(snapshot?.[region] ?? {}).reduce((a, b) => a + b, 0);
}

/// `after - before` per region and status, only the non-zero entries.
export function delta(before, after) {
  const out = {};
  for (const [region, byStatus] of Object.entries(after)) {
    for (const [status, n] of Object.entries(byStatus)) {
      const d = n - (before?.[region]?.[status] ?? 0);
      if (d !== 0) (out[region] ??= {})[status] = d;
    }
  }
  return out;
}

/// POST /_emulator/faults; returns the rule id.
export async function addFault(rule) {
  const { id } = await admin('POST', 'faults', rule);
  assert.ok(id !== undefined, `the emulator returned no fault id for ${JSON.stringify(rule)}`);
  return id;
}

export const clearFaults = () => admin('DELETE', 'faults');

// -- the SDK ------------------------------------------------------------------

const clients = [];

/// A CosmosClient on the global endpoint: no custom agent (it would disable
/// plain http, B2), no background refresh (B9). Disposed by `scenario`.
export function makeClient(options = {}) {
  const { connectionPolicy, ...rest } = options;
  const client = new CosmosClient({
    endpoint,
    key,
    ...rest,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, ...connectionPolicy },
  });
  clients.push(client);
  return client;
}

/// Endpoints the SDK contacted for one operation (from its diagnostics).
export function contacted(response) {
  return response?.diagnostics?.clientSideRequestStatistics?.locationEndpointsContacted ?? [];
}

/// The HTTP attempts of one operation, in order, as the SDK's diagnostics
/// record them: [{statusCode, subStatusCode, operationType, resourceType}].
export function attempts(response) {
  return response?.diagnostics?.clientSideRequestStatistics?.gatewayStatistics ?? [];
}

/// The status code of a rejected SDK call (its `code`), or a failure if it
/// resolved.
export async function rejectsWith(promise, what) {
  try {
    const res = await promise;
    assert.fail(`${what}: expected an error, got status ${res?.statusCode}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

/// A fresh, unique name for databases and containers.
export function uniqueName(prefix) {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}`;
}

// -- the frame ----------------------------------------------------------------

let step = '(setup)';

/// Names the step that runs next, so a failure says where it happened.
export function stepOf(name) {
  step = name;
  console.log(`  - ${name}`);
}

/// Runs `body`; prints PASS/FAIL and exits 0/1. Faults are cleared and clients
/// disposed either way.
export async function scenario(name, body) {
  console.log(`scenario ${name}: emulator ${endpoint}`);
  let failure;
  try {
    // Preflight with no preferredLocations: if the account read failed in a
    // client that has them, the SDK would retry at made-up host names outside
    // loopback (gateway-protocol.md B2). So a wrong key or a dead emulator
    // stops the scenario here.
    stepOf('preflight: a signed account read on the global endpoint');
    await makeClient().getDatabaseAccount();
    await body();
  } catch (err) {
    failure = err;
  }
  for (const c of clients) {
    try {
      c.dispose();
    } catch {
      // nothing to release
    }
  }
  try {
    await clearFaults();
  } catch {
    // the emulator may be gone; the runner stops it anyway
  }
  if (failure === undefined) {
    console.log(`PASS ${name}`);
    process.exit(0);
  }
  const code =
    failure?.code !== undefined && !(failure instanceof assert.AssertionError)
      ? ` [status ${failure.code}${failure.substatus !== undefined ? `/${failure.substatus}` : ''}]`
      : '';
  const detail = failure instanceof Error ? failure.stack ?? failure.message : String(failure);
  console.error(`FAIL ${name} at step '${step}'${code}:\n${detail}`);
  process.exit(1);
}

export { assert };
