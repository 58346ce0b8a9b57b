// write-redirect-403-3: a single-write account moves its write region (admin
// POST /_emulator/write-regions). The old writer answers the SDK's next write
// with 403/3 (WriteForbidden); the SDK re-reads the account on the global
// endpoint and retries in the new write region, where the write succeeds.
// The SDK waits 1 s before that retry (EndpointDiscovery policy, B4).
// No preferredLocations: with them set, a failing account refresh would make
// the SDK look up non-loopback host names (B2); the global endpoint never
// fails here anyway.
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, admin, regionEndpoints, emulatorState, counters, delta,
  sameEndpoint, uniqueName,
} from '../lib/harness.mjs';

await scenario('write-redirect-403-3', async () => {
  const regions = await regionEndpoints();
  const client = makeClient();
  const { database } = await client.databases.create({ id: uniqueName('redirect') });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });

  stepOf('before the move: writes go to West US');
  const c0 = await counters();
  const w0 = await container.items.create({ id: 'w0', pk: 'a' });
  assert.equal(w0.statusCode, 201);
  assert.equal(delta(c0, await counters())['West US']?.['201'], 1, 'West US took the write');
  assert.ok(sameEndpoint(await client.getWriteEndpoint(), regions.get('West US')));

  stepOf('move the write region to East US (admin API)');
  await admin('POST', 'write-regions', { order: ['East US', 'West US', 'North Europe'] });
  const state = await emulatorState();
  assert.equal(state.write_regions[0], 'East US', `admin state: ${JSON.stringify(state.write_regions)}`);

  stepOf('the next write: 403/3 at West US, account refresh, 201 at East US');
  const c1 = await counters();
  const w1 = await container.items.create({ id: 'w1', pk: 'a', v: 1 });
  const d1 = delta(c1, await counters());
  assert.equal(w1.statusCode, 201, 'the write succeeds after the redirect');
  assert.equal(d1['West US']?.['403'], 1, `one 403 at the old writer: ${JSON.stringify(d1)}`);
  assert.equal(d1['East US']?.['201'], 1, `one 201 at the new writer: ${JSON.stringify(d1)}`);
  assert.ok((d1['']?.['200'] ?? 0) >= 1, `the SDK re-read the account on the global endpoint: ${JSON.stringify(d1)}`);
  assert.ok(!d1['North Europe'], `North Europe was not involved: ${JSON.stringify(d1)}`);
  assert.ok(sameEndpoint(await client.getWriteEndpoint(), regions.get('East US')),
    `write endpoint after the refresh: ${await client.getWriteEndpoint()}`);
  const forbidden = w1.diagnostics?.clientSideRequestStatistics?.gatewayStatistics
    ?.filter((g) => g.resourceType === 'docs').map((g) => [g.statusCode, g.subStatusCode ?? 0]);
  assert.deepEqual(forbidden, [[403, 3], [201, 0]], 'the SDK saw 403/3 then 201');

  stepOf('later writes go straight to East US');
  const c2 = await counters();
  await container.items.upsert({ id: 'w1', pk: 'a', v: 2 });
  await container.item('w0', 'a').delete();
  const d2 = delta(c2, await counters());
  assert.ok(!d2['West US']?.['403'], `no more 403: ${JSON.stringify(d2)}`);
  assert.equal(d2['East US']?.['200'], 1, `the upsert at East US: ${JSON.stringify(d2)}`);
  assert.equal(d2['East US']?.['204'], 1, `the delete at East US: ${JSON.stringify(d2)}`);

  stepOf('the data written in either region is there');
  const read = await container.item('w1', 'a').read();
  assert.equal(read.statusCode, 200);
  assert.equal(read.resource.v, 2);
  assert.equal((await container.item('w0', 'a').read()).statusCode, 404);

  stepOf('a second move, to North Europe: 403/3 at East US, 201 at North Europe');
  await admin('POST', 'write-regions', { order: ['North Europe'] });
  const c3 = await counters();
  const w3 = await container.items.create({ id: 'w3', pk: 'b' });
  const d3 = delta(c3, await counters());
  assert.equal(w3.statusCode, 201);
  assert.equal(d3['East US']?.['403'], 1, `one 403 at East US: ${JSON.stringify(d3)}`);
  assert.equal(d3['North Europe']?.['201'], 1, `one 201 at North Europe: ${JSON.stringify(d3)}`);

  await database.delete();
});
