// throttle-429: injected 429s (x-ms-retry-after-ms 150) on document writes
// and reads are retried by the SDK on the same region until they succeed; the
// SDK reports its retries in x-ms-throttle-retry-count. A 429 that outlasts
// the SDK's retry budget surfaces as 429. Then the emulator's own request-unit
// budget (admin /throughput) throttles a burst, which still completes.
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, addFault, clearFaults, admin, counters, delta, rejectsWith,
  uniqueName,
} from '../lib/harness.mjs';

await scenario('throttle-429', async () => {
  const client = makeClient();
  const { database } = await client.databases.create({ id: uniqueName('throttle') });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });
  await container.items.create({ id: 'seed', pk: 'a' });

  stepOf('two 429s on a document write, then success');
  await addFault({ resource_type: 'docs', operation: 'write', status: 429, substatus: 3200,
    retry_after_ms: 150, count: 2 });
  const c0 = await counters();
  const w = await container.items.create({ id: 'w', pk: 'a', v: 1 });
  const d0 = delta(c0, await counters());
  assert.equal(w.statusCode, 201, 'the write succeeds after the retries');
  assert.equal(d0['West US']?.['429'], 2, `two 429s at the write region: ${JSON.stringify(d0)}`);
  assert.equal(d0['West US']?.['201'], 1, `then one 201: ${JSON.stringify(d0)}`);
  assert.equal(Number(w.headers['x-ms-throttle-retry-count']), 2, 'the SDK counts its two retries');
  assert.ok(Number(w.headers['x-ms-throttle-retry-wait-time-ms']) >= 300,
    `it waited the retry-after twice: ${w.headers['x-ms-throttle-retry-wait-time-ms']} ms`);
  assert.equal((await container.item('w', 'a').read()).resource.v, 1, 'exactly the one write landed');

  stepOf('two 429s on a point read, then success');
  await addFault({ resource_type: 'docs', operation: 'read', status: 429, retry_after_ms: 150, count: 2 });
  const c1 = await counters();
  const r = await container.item('seed', 'a').read();
  const d1 = delta(c1, await counters());
  assert.equal(r.statusCode, 200);
  assert.ok((d1['West US']?.['429'] ?? 0) >= 2, `429s counted: ${JSON.stringify(d1)}`);
  assert.equal(Number(r.headers['x-ms-throttle-retry-count']), 2);

  stepOf('429 beyond the retry budget surfaces as 429');
  const strict = makeClient({ connectionPolicy: { retryOptions: { maxRetryAttemptCount: 2 } } });
  const scont = strict.database(database.id).container('c');
  await scont.item('seed', 'a').read(); // load metadata before the fault
  const id = await addFault({ resource_type: 'docs', operation: 'write', status: 429, retry_after_ms: 20 });
  const c2 = await counters();
  const err = await rejectsWith(scont.items.create({ id: 'never', pk: 'a' }), 'a write throttled for good');
  const d2 = delta(c2, await counters());
  await admin('DELETE', `faults/${id}`);
  assert.equal(err.code, 429, `surfaced: ${err.message}`);
  assert.equal(d2['West US']?.['429'], 3, `1 try + 2 retries: ${JSON.stringify(d2)}`);
  assert.equal((await container.item('never', 'a').read()).statusCode, 404, 'the throttled write did not land');

  stepOf('the request-unit budget throttles 20 writes in a row; the SDK rides it out');
  await clearFaults();
  await admin('POST', 'throughput', { region: '', ru_per_second: 50 });
  const c3 = await counters();
  // One after the other: concurrent writers would all retry at the same
  // retry-after and some would run out of the SDK's 9 retries.
  const results = [];
  for (let i = 0; i < 20; i++) results.push(await container.items.create({ id: `b${i}`, pk: `p${i % 4}`, burst: true }));
  const d3 = delta(c3, await counters());
  await admin('POST', 'throughput', { region: '', ru_per_second: 0 });
  assert.ok(results.every((x) => x.statusCode === 201), 'every write of the burst lands');
  assert.equal(d3['West US']?.['201'], 20, `20 writes: ${JSON.stringify(d3)}`);
  assert.ok((d3['West US']?.['429'] ?? 0) >= 1, `100 RU against 50 RU/s throttles: ${JSON.stringify(d3)}`);
  const { resources } = await container.items.query('SELECT VALUE COUNT(1) FROM c WHERE c.burst = true').fetchAll();
  assert.deepEqual(resources, [20]);

  await database.delete();
});
