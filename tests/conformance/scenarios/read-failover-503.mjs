// read-failover-503: one injected 503 on a document read in the first
// preferred region (East US); the SDK retries the read once in the next
// preferred region (West US), where it succeeds. The fault rule names the
// region and the docs resource, so the global endpoint's GET / never fails
// (with preferredLocations set, a failing account read would make the SDK
// look up non-loopback names, B2). The SDK does not mark the region
// unavailable after a 503 (B8.3), so nothing here expects later reads to
// stay away from East US.
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, addFault, regionEndpoints, counters, delta, contacted,
  sameEndpoint, uniqueName,
} from '../lib/harness.mjs';

const docAttempts = (res) =>
  (res?.diagnostics?.clientSideRequestStatistics?.gatewayStatistics ?? [])
    .filter((g) => g.resourceType === 'docs').map((g) => g.statusCode);

await scenario('read-failover-503', async () => {
  const regions = await regionEndpoints();
  const dbId = uniqueName('failover');
  const setup = makeClient();
  const { database } = await setup.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });
  await container.items.create({ id: 'x', pk: 'a', v: 7 });

  const client = makeClient({ connectionPolicy: { preferredLocations: ['East US', 'West US'] } });
  const cont = client.database(dbId).container('c');

  stepOf('warm up: reads go to East US');
  const c0 = await counters();
  assert.equal((await cont.item('x', 'a').read()).statusCode, 200);
  const d0 = delta(c0, await counters());
  assert.equal(d0['East US']?.['200'] >= 1, true, `East US serves reads: ${JSON.stringify(d0)}`);

  stepOf('503 once at East US: the read succeeds from West US');
  await addFault({ region: 'East US', resource_type: 'docs', operation: 'read', status: 503, count: 1 });
  const c1 = await counters();
  const r = await cont.item('x', 'a').read();
  const d1 = delta(c1, await counters());
  assert.equal(r.statusCode, 200, 'the read succeeds');
  assert.equal(r.resource.v, 7);
  assert.deepEqual(d1, { 'East US': { 503: 1 }, 'West US': { 200: 1 } },
    'exactly one 503 at East US and one 200 at West US');
  assert.deepEqual(docAttempts(r), [503, 200], 'the SDK saw 503 then 200');
  const seen = contacted(r);
  assert.ok(seen.some((e) => sameEndpoint(e, regions.get('East US'))) &&
            seen.some((e) => sameEndpoint(e, regions.get('West US'))),
    `diagnostics name both regions: ${JSON.stringify(seen)}`);

  stepOf('the fault was used up: the next read succeeds (wherever the SDK sends it)');
  const c2 = await counters();
  const again = await cont.item('x', 'a').read();
  assert.equal(again.statusCode, 200);
  const d2 = delta(c2, await counters());
  assert.ok(!d2['East US']?.['503'], `no further 503: ${JSON.stringify(d2)}`);

  stepOf('without preferredLocations: 503 at the first readable region (West US), success at East US');
  const plain = makeClient();
  const pcont = plain.database(dbId).container('c');
  await pcont.item('x', 'a').read();
  await addFault({ region: 'West US', resource_type: 'docs', operation: 'read', status: 503, count: 1 });
  const c3 = await counters();
  const r3 = await pcont.item('x', 'a').read();
  const d3 = delta(c3, await counters());
  assert.equal(r3.statusCode, 200);
  assert.deepEqual(d3, { 'West US': { 503: 1 }, 'East US': { 200: 1 } },
    'one 503 at West US, then the second readable region');

  stepOf('a write is not retried on 503 (single-write account)');
  await addFault({ region: 'West US', resource_type: 'docs', operation: 'write', status: 503, count: 1 });
  const c4 = await counters();
  const err = await pcont.items.create({ id: 'y', pk: 'a' }).then(
    (res) => ({ code: res.statusCode }), (e) => e);
  const d4 = delta(c4, await counters());
  assert.equal(err.code, 503, 'the 503 surfaces');
  // (Other entries are the SDK's metadata reads on the way.)
  const writes = Object.fromEntries(Object.entries(d4)
    .map(([region, byStatus]) => [region, (byStatus['503'] ?? 0) + (byStatus['201'] ?? 0)])
    .filter(([, n]) => n > 0));
  assert.deepEqual(writes, { 'West US': 1 }, `one write attempt, no retry elsewhere: ${JSON.stringify(d4)}`);

  await setup.database(dbId).delete();
});
