// patch-batch-bulk: partial updates, transactional batches and bulk through
// the SDK against the emulator. item.patch with an operation array and with
// {condition, operations} (every operation type the SDK exposes: add, set,
// replace, remove, incr), 412 on a false condition and on a stale IfMatch,
// 400 on 11 operations. items.batch: 200 with every operation type, 207
// with 424s returned without throwing and nothing applied.
// items.executeBulkOperations: many operations over four ranges under a
// per-range ops budget (some operations get 429 and the SDK retries them),
// under a small response cap (413/3402, resent), and across a split made
// while the bulk is running (410/1002, the SDK re-groups); every document
// read back, each written exactly once (the emulator's write count).
// emulator-args: --initial-ranges=4

import {
  assert, scenario, stepOf, makeClient, admin, rejectsWith, uniqueName,
} from '../lib/harness.mjs';
import { BulkOperationType, PatchOperationType } from '@azure/cosmos';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// Sum of the bulk op statuses in /_emulator/counters/ops for a collection:
/// {status: n}, over every region and range.
async function bulkOpStatuses(coll) {
  const ops = await admin('GET', 'counters/ops');
  const out = {};
  for (const byColl of Object.values(ops))
    for (const byRange of Object.values(byColl[coll] ?? {}))
      for (const [status, n] of Object.entries(byRange.bulk ?? {}))
        out[status] = (out[status] ?? 0) + n;
  return out;
}

/// Whole-request statuses per range of a collection (counters/ranges).
async function rangeStatuses(coll) {
  const ranges = await admin('GET', 'counters/ranges');
  const out = {};
  for (const byColl of Object.values(ranges))
    for (const [range, tally] of Object.entries(byColl[coll] ?? {}))
      for (const [status, n] of Object.entries(tally.status ?? {})) {
        out[range] ??= {};
        out[range][status] = (out[range][status] ?? 0) + n;
      }
  return out;
}

/// id -> writes, from the emulator's record of the collection.
async function writesById(dbId) {
  const { documents } = await admin('GET', `documents/${encodeURIComponent(dbId)}/c`);
  return new Map(documents.map((d) => [d.id, d]));
}

/// Every result of executeBulkOperations succeeded with `status`.
function allSucceeded(results, status, what) {
  const failed = results.filter((r) => r.error || r.response?.statusCode !== status);
  assert.equal(
    failed.length, 0,
    `${what}: ${failed.length} of ${results.length} failed, e.g. ` +
      JSON.stringify(failed.slice(0, 3).map((r) => ({
        id: r.operationInput?.resourceBody?.id ?? r.operationInput?.id,
        code: r.error?.code ?? r.response?.statusCode,
        substatus: r.error?.substatus,
        message: r.error?.message,
      }))),
  );
}

await scenario('patch-batch-bulk', async () => {
  const client = makeClient({ consistencyLevel: 'Session' });
  const dbId = uniqueName('pbb');
  const collPath = `dbs/${dbId}/colls/c`;
  const { database } = await client.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });

  stepOf('item.patch, an operation array: add, set, replace, remove, incr');
  await container.items.create({ id: 'p1', pk: 'a', n: 1, s: 'x', arr: [1, 2], gone: true, o: {} });
  const item = container.item('p1', 'a');
  const patched = await item.patch([
    { op: PatchOperationType.add, path: '/arr/-', value: 3 },
    { op: PatchOperationType.add, path: '/o/new', value: 'made' },
    { op: PatchOperationType.set, path: '/s', value: 'y' },
    { op: PatchOperationType.replace, path: '/n', value: 10 },
    { op: PatchOperationType.remove, path: '/gone' },
    { op: PatchOperationType.incr, path: '/n', value: 5 },
    { op: PatchOperationType.incr, path: '/fresh', value: -2 },
  ]);
  assert.equal(patched.statusCode, 200);
  const afterPatch = patched.resource;
  assert.deepEqual(afterPatch.arr, [1, 2, 3]);
  assert.equal(afterPatch.o.new, 'made');
  assert.equal(afterPatch.s, 'y');
  assert.equal(afterPatch.n, 15);
  assert.equal(afterPatch.fresh, -2);
  assert.equal('gone' in afterPatch, false);
  assert.equal(patched.etag, afterPatch._etag, 'the etag header is the new _etag');
  const { resource: readBack } = await item.read();
  assert.equal(readBack.n, 15);
  assert.equal(readBack._etag, afterPatch._etag);

  stepOf('item.patch {condition, operations}: a true condition applies');
  const conditional = await item.patch({
    condition: 'FROM c WHERE c.n = 15',
    operations: [{ op: PatchOperationType.set, path: '/s', value: 'z' }],
  });
  assert.equal(conditional.statusCode, 200);
  assert.equal(conditional.resource.s, 'z');

  stepOf('item.patch: a false condition is 412 and changes nothing');
  const etagBefore = conditional.resource._etag;
  const falseCond = await rejectsWith(
    item.patch({ condition: 'FROM c WHERE c.n > 100', operations: [{ op: 'set', path: '/s', value: 'no' }] }),
    'false condition',
  );
  assert.equal(falseCond.code, 412);
  assert.equal((await item.read()).resource._etag, etagBefore);

  stepOf('item.patch: a stale IfMatch is 412; eleven operations are 400');
  const stale = await rejectsWith(
    item.patch([{ op: 'set', path: '/s', value: 'no' }], {
      accessCondition: { type: 'IfMatch', condition: '"stale"' },
    }),
    'stale IfMatch',
  );
  assert.equal(stale.code, 412);
  const eleven = Array.from({ length: 11 }, (_, i) => ({ op: 'set', path: `/f${i}`, value: i }));
  const tooMany = await rejectsWith(item.patch(eleven), '11 operations');
  assert.equal(tooMany.code, 400);
  assert.equal((await item.read()).resource._etag, etagBefore);
  const missing = await rejectsWith(
    container.item('nope', 'a').patch([{ op: 'set', path: '/s', value: 1 }]),
    'patch of a missing item',
  );
  assert.equal(missing.code, 404);

  stepOf('items.batch: every operation type, 200, in order');
  await container.items.create({ id: 'b-old', pk: 'b', n: 1 });
  await container.items.create({ id: 'b-gone', pk: 'b', n: 1 });
  const batch = await container.items.batch([
    { operationType: BulkOperationType.Create, resourceBody: { id: 'b1', pk: 'b', n: 1 } },
    { operationType: BulkOperationType.Upsert, resourceBody: { id: 'b-old', pk: 'b', n: 2 } },
    { operationType: BulkOperationType.Read, id: 'b1' },
    { operationType: BulkOperationType.Replace, id: 'b1', resourceBody: { id: 'b1', pk: 'b', n: 3 } },
    {
      operationType: BulkOperationType.Patch, id: 'b1',
      resourceBody: { operations: [{ op: PatchOperationType.incr, path: '/n', value: 4 }] },
    },
    { operationType: BulkOperationType.Delete, id: 'b-gone' },
  ], 'b');
  assert.equal(batch.code, 200);
  assert.deepEqual(batch.result.map((r) => r.statusCode), [201, 200, 200, 200, 200, 204]);
  assert.equal(batch.result[2].resourceBody.n, 1, 'the read sees the create before it');
  assert.equal(batch.result[4].resourceBody.n, 7);
  assert.equal((await container.item('b1', 'b').read()).resource.n, 7);
  assert.equal((await container.item('b-gone', 'b').read()).statusCode, 404);

  stepOf('items.batch: a failing operation gives 207 with 424s, without throwing; nothing applied');
  const failing = await container.items.batch([
    { operationType: BulkOperationType.Create, resourceBody: { id: 'b2', pk: 'b', n: 1 } },
    { operationType: BulkOperationType.Create, resourceBody: { id: 'b1', pk: 'b', n: 1 } }, // exists: 409
    { operationType: BulkOperationType.Upsert, resourceBody: { id: 'b-old', pk: 'b', n: 99 } },
  ], 'b');
  assert.equal(failing.code, 207);
  assert.deepEqual(failing.result.map((r) => r.statusCode), [424, 409, 424]);
  assert.equal((await container.item('b2', 'b').read()).statusCode, 404);
  assert.equal((await container.item('b-old', 'b').read()).resource.n, 2);

  const writesBefore = await writesById(dbId);
  const ids = new Set();
  const bulkCreates = (prefix, n, keys) => Array.from({ length: n }, (_, i) => {
    const id = `${prefix}${String(i).padStart(4, '0')}`;
    ids.add(id);
    return {
      operationType: BulkOperationType.Create,
      partitionKey: `${prefix}k${i % keys}`,
      resourceBody: { id, pk: `${prefix}k${i % keys}`, i },
    };
  });

  stepOf('executeBulkOperations under a per-range ops budget: some 429s, retried, all 201');
  // 20 a second per range: each range's first request (~30 ops) has a third
  // turned away. @azure/cosmos sleeps each op's retryAfterMilliseconds in
  // turn, one op after the other, so the budget is not spread (every op
  // turned away waits for the next token, 50 ms) to keep that short.
  const budget = await admin('POST', 'ops-budget', {
    collection: collPath, ops_per_second: 20, spread: false,
  });
  const before429 = (await bulkOpStatuses(collPath))['429'] ?? 0;
  const throttled = await container.items.executeBulkOperations(bulkCreates('t', 120, 40));
  allSucceeded(throttled, 201, 'budgeted bulk');
  const after = await bulkOpStatuses(collPath);
  assert.ok((after['429'] ?? 0) > before429, `no per-op 429 under the budget: ${JSON.stringify(after)}`);
  console.log(`    ${throttled.length} ops, ${(after['429'] ?? 0) - before429} per-op 429s retried`);

  stepOf('executeBulkOperations under a small response cap: 413/3402, resent, all 201');
  await admin('DELETE', `ops-budget/${budget.id}`);
  await admin('POST', 'bulk-response-cap', { bytes: 3000 });
  const before413 = (await bulkOpStatuses(collPath))['413'] ?? 0;
  const capped = await container.items.executeBulkOperations(bulkCreates('r', 30, 3));
  allSucceeded(capped, 201, 'capped bulk');
  assert.ok(((await bulkOpStatuses(collPath))['413'] ?? 0) > before413, 'no 413/3402 under the cap');
  await admin('POST', 'bulk-response-cap', { bytes: 4 * 1024 * 1024 });

  stepOf('executeBulkOperations across a split made while it runs: 410/1002, re-grouped, all 201');
  await admin('POST', 'ops-budget', { collection: collPath, ops_per_second: 20, spread: false });
  const base = await rangeStatuses(collPath);
  const running = container.items.executeBulkOperations(bulkCreates('s', 120, 48));
  // Split the first range that answers a throttled (207) request: its
  // turned-away operations come back after the split, to a range id that is
  // gone.
  let target;
  let split;
  for (let i = 0; i < 300 && !split; i++) {
    const now = await rangeStatuses(collPath);
    target = Object.keys(now).find((r) => (now[r]['207'] ?? 0) > (base[r]?.['207'] ?? 0));
    if (target !== undefined) split = await admin('POST', 'split', { db: dbId, coll: 'c', range: target });
    else await sleep(10);
  }
  assert.ok(split, `no range answered a throttled bulk request: ${JSON.stringify(await rangeStatuses(collPath))}`);
  const splitResults = await running;
  allSucceeded(splitResults, 201, 'bulk across a split');
  const gone = (await rangeStatuses(collPath))[target]?.['410'] ?? 0;
  assert.ok(gone > 0, `the SDK never met the split (no 410 on range ${target})`);
  console.log(`    split ${target} into ${split.children}; ${gone} bulk requests met the 410`);
  await admin('DELETE', 'ops-budget');

  stepOf('read back: every document once, each written exactly once');
  const { resources: all } = await container.items
    .query('SELECT c.id FROM c WHERE c.i >= 0')
    .fetchAll();
  const seen = all.map((d) => d.id).sort();
  assert.equal(new Set(seen).size, seen.length, 'a document listed twice');
  assert.deepEqual(seen, [...ids].sort());
  const writes = await writesById(dbId);
  const wrong = [...ids].filter((id) => writes.get(id)?.writes !== 1 || !writes.get(id)?.live);
  assert.deepEqual(wrong, [], `documents not written exactly once: ${wrong.slice(0, 5).join(', ')}`);
  for (const [id, d] of writesBefore)
    assert.equal(writes.get(id).writes, d.writes, `${id} written again by a bulk`);
});
