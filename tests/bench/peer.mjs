// The peer of `georoute bench`: the official @azure/cosmos SDK doing the
// same point operations against the same emulator. Driven by the bench over
// stdin/stdout, one JSON object per line each way:
//
//   {"cmd":"init","endpoint":...,"key":...,"db":...,"coll":...,"id":...,
//    "pk":...,"preferred":[...],"requestTimeoutMs":N}        -> {"ok":true}
//   {"cmd":"load","inFlight":N,"warmupMs":W,"windowMs":D}     -> round figures
//   {"cmd":"failover","scenario":S,"inFlight":N,"beforeMs":B,"faultMs":F,
//    "afterMs":A}                                             -> failover figures
//   {"cmd":"cold","coll":C,"callers":K}                       -> cold-start figures
//   {"cmd":"feed","coll":C,"pageSize":P}                      -> change-feed drain figures
//   {"cmd":"quit"}
//
// CPU is this process's own (process.cpuUsage), over the measured window.
// Metadata requests are counted as they leave the process
// (diagnostics_channel "http.client.request.start"). Everything goes to
// 127.0.0.1 only.

import { BulkOperationType, ChangeFeedStartFrom, CosmosClient } from '@azure/cosmos';
import diagnostics from 'node:diagnostics_channel';
import readline from 'node:readline';

let cfg = null;
let client = null;

const sent = { collection: 0, pkranges: 0, docs: 0, other: 0 };
const otherPaths = new Set();
diagnostics.subscribe('http.client.request.start', ({ request }) => {
  const path = (request.path ?? '').split('?')[0];
  const segs = path.split('/').filter((s) => s.length > 0);
  if (segs.includes('pkranges')) sent.pkranges++;
  else if (segs.includes('docs')) sent.docs++;
  else if (segs.length === 4 && segs[0] === 'dbs' && segs[2] === 'colls' && request.method === 'GET')
    sent.collection++;
  else {
    sent.other++;
    if (otherPaths.size < 8) otherPaths.add(`${request.method} ${path}`);
  }
});

function loopback(text) {
  const url = new URL(text);
  if (url.hostname !== '127.0.0.1') throw new Error(`${text} is not on 127.0.0.1`);
  return url.origin + '/';
}

function makeClient() {
  return new CosmosClient({
    endpoint: cfg.endpoint,
    key: cfg.key,
    connectionPolicy: {
      enableBackgroundEndpointRefreshing: false,
      preferredLocations: cfg.preferred,
      requestTimeout: cfg.requestTimeoutMs,
    },
  });
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuSeconds = (u) => (u.user + u.system) / 1e6;

function quantileMs(sorted, q) {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] / 1000;
}

// N chains of operation -> operation ...; events [start, end, ok]. After a
// failure a chain pauses 10 ms, as georoute's callers do.
function startLoad(op, inFlight, events) {
  const state = { stopping: false };
  const chain = async () => {
    while (!state.stopping) {
      const start = nowUs();
      let ok = true;
      try {
        await op();
      } catch {
        ok = false;
      }
      if (state.stopping) break;
      events.push([start, nowUs(), ok]);
      if (!ok) await sleep(10);
    }
  };
  state.done = Promise.all(Array.from({ length: inFlight }, chain));
  return state;
}

async function stopLoad(state) {
  state.stopping = true;
  await Promise.race([state.done, sleep(30000)]);
}

function container(c, coll = cfg.coll) {
  return c.database(cfg.db).container(coll);
}

async function load({ inFlight, warmupMs, windowMs }) {
  const cont = container(client);
  const events = [];
  const state = startLoad(() => cont.item(cfg.id, cfg.pk).read(), inFlight, events);
  await sleep(warmupMs);
  const t0 = nowUs();
  const cpu0 = process.cpuUsage();
  await sleep(windowMs);
  const cpu = cpuSeconds(process.cpuUsage(cpu0));
  const t1 = nowUs();
  await stopLoad(state);
  let ok = 0;
  let failed = 0;
  const lat = [];
  for (const [s, e, good] of events) {
    if (e < t0 || e >= t1) continue;
    if (good) {
      ok++;
      lat.push(e - s);
    } else failed++;
  }
  lat.sort((a, b) => a - b);
  const seconds = (t1 - t0) / 1e6;
  return {
    ok, failed, seconds, cpu,
    rps: ok / seconds,
    p50: quantileMs(lat, 0.5),
    p99: quantileMs(lat, 0.99),
  };
}

async function admin(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(new URL(`_emulator/${path}`, cfg.endpoint), init);
  const text = await res.text();
  if (!res.ok) throw new Error(`admin ${method} /_emulator/${path} -> ${res.status}: ${text}`);
  return text ? JSON.parse(text) : {};
}

const region = (name) => `regions/${encodeURIComponent(name)}/state`;

// Each fault: how to start it, how to end it, and the operation under load.
const scenarios = {
  'region-hang': {
    start: () => admin('POST', region(cfg.preferred[0]), { state: 'hang' }),
    end: () => admin('POST', region(cfg.preferred[0]), { state: 'online' }),
    op: (cont) => () => cont.item(cfg.id, cfg.pk).read(),
  },
  'region-refuse': {
    start: () => admin('POST', region(cfg.preferred[0]), { state: 'offline_refuse' }),
    end: () => admin('POST', region(cfg.preferred[0]), { state: 'online' }),
    op: (cont) => () => cont.item(cfg.id, cfg.pk).read(),
  },
  'write-switch': {
    start: async () => {
      const order = (await admin('GET', 'state')).write_regions ?? cfg.writeOrder;
      cfg.savedOrder = order;
      await admin('POST', 'write-regions', { order: [...order.slice(1), order[0]] });
    },
    end: () => admin('POST', 'write-regions', { order: cfg.savedOrder }),
    op: (cont) => () => cont.items.upsert({ id: cfg.id, pk: cfg.pk, n: 1 }),
  },
};

async function failover({ scenario, inFlight, beforeMs, faultMs, afterMs }) {
  const s = scenarios[scenario];
  if (!s) throw new Error(`unknown scenario ${scenario}`);
  const c = makeClient();
  try {
    const cont = container(c);
    const op = s.op(cont);
    await op(); // metadata and connections before the fault
    const events = [];
    const state = startLoad(op, inFlight, events);
    await sleep(beforeMs);
    await s.start();
    const fault = nowUs();
    await sleep(faultMs);
    await s.end();
    const restore = nowUs();
    await sleep(afterMs);
    await stopLoad(state);
    let ok = 0;
    let failed = 0;
    let firstOk = -1;
    let maxLat = 0;
    let slow = 0;
    for (const [st, e, good] of events) {
      if (e < fault) continue;
      if (good) ok++;
      else failed++;
      maxLat = Math.max(maxLat, e - st);
      if (e - st > 100000) slow++;
      if (good && st >= fault && (firstOk < 0 || e < firstOk)) firstOk = e;
    }
    return {
      ok, failed, slow,
      faultSeconds: (restore - fault) / 1e6,
      failoverMs: firstOk < 0 ? -1 : (firstOk - fault) / 1000,
      maxLatencyMs: maxLat / 1000,
    };
  } finally {
    c.dispose();
  }
}

async function cold({ coll, callers }) {
  const c = makeClient();
  try {
    // The account first, as georoute has it before its callers arrive.
    await c.getDatabaseAccount();
    for (const k of Object.keys(sent)) sent[k] = 0;
    otherPaths.clear();
    const cont = container(c, coll);
    const t0 = nowUs();
    const results = await Promise.allSettled(
      Array.from({ length: callers }, () => cont.item(cfg.id, cfg.pk).read()),
    );
    const seconds = (nowUs() - t0) / 1e6;
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    return {
      ok, failed: callers - ok, seconds,
      collectionReads: sent.collection,
      pkrangesReads: sent.pkranges,
      documentReads: sent.docs,
      otherRequests: sent.other,
      otherPaths: [...otherPaths],
    };
  } finally {
    c.dispose();
  }
}

// The change feed of `coll` from the beginning, every range, until the
// iterator answers 304 (caught up), with a fresh client.
async function feed({ coll, pageSize }) {
  const c = makeClient();
  try {
    const cont = container(c, coll);
    await cont.read(); // the collection's metadata before the clock starts
    const it = cont.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: pageSize,
    });
    let documents = 0;
    let pages = 0;
    const t0 = nowUs();
    const cpu0 = process.cpuUsage();
    while (it.hasMoreResults) {
      const res = await it.readNext();
      pages++;
      if (res.statusCode === 304) break;
      documents += res.result?.length ?? 0;
    }
    const cpu = cpuSeconds(process.cpuUsage(cpu0));
    const seconds = (nowUs() - t0) / 1e6;
    return { documents, pages, seconds, cpu };
  } finally {
    c.dispose();
  }
}

// `count` creates into `coll` with executeBulkOperations (every operation
// handed over at once, as the API takes them), with a fresh client.
async function bulk({ coll, count }) {
  const c = makeClient();
  try {
    const cont = container(c, coll);
    await cont.read(); // the collection's metadata before the clock starts
    const filler = 'x'.repeat(200);
    const ops = Array.from({ length: count }, (_, n) => ({
      operationType: BulkOperationType.Create,
      partitionKey: `b${n}`,
      resourceBody: { id: `b${n}`, pk: `b${n}`, v: filler },
    }));
    const t0 = nowUs();
    const cpu0 = process.cpuUsage();
    const results = await cont.items.executeBulkOperations(ops);
    const cpu = cpuSeconds(process.cpuUsage(cpu0));
    const seconds = (nowUs() - t0) / 1e6;
    let ok = 0;
    for (const r of results) if (r.response?.statusCode === 201) ok++;
    return { ok, seconds, cpu };
  } finally {
    c.dispose();
  }
}

const handlers = {
  init: async (msg) => {
    cfg = { ...msg, endpoint: loopback(msg.endpoint) };
    client = makeClient();
    await container(client).item(cfg.id, cfg.pk).read();
    return { ok: true, node: process.versions.node };
  },
  load,
  failover,
  cold,
  feed,
  bulk,
};

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.cmd === 'quit') break;
  let reply;
  try {
    reply = await handlers[msg.cmd](msg);
  } catch (e) {
    reply = { error: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
client?.dispose();
process.exit(0);
