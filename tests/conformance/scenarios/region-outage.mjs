// region-outage: two region failures the SDK is meant to route around (B9):
// - East US hangs (accepts, never answers): with requestTimeout 1 s the read
//   times out there and is retried in West US (TimeoutFailover, B4);
// - East US is removed from the account (403/1008): the SDK re-reads the
//   account on the global endpoint and reads from West US from then on.
// Not covered on purpose: a refused connection (offline_refuse), which the
// SDK neither retries nor fails over (B8.2). The global endpoint stays up
// throughout, so the account refresh never fails while preferredLocations
// is set (B2).
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, admin, regionEndpoints, counters, delta, contacted,
  sameEndpoint, uniqueName,
} from '../lib/harness.mjs';

const EAST = encodeURIComponent('East US');

await scenario('region-outage', async () => {
  const regions = await regionEndpoints();
  const dbId = uniqueName('outage');
  const setup = makeClient();
  const { database } = await setup.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });
  await container.items.create({ id: 'x', pk: 'a', v: 3 });

  const client = makeClient({
    connectionPolicy: { preferredLocations: ['East US', 'West US'], requestTimeout: 1000 },
  });
  const cont = client.database(dbId).container('c');
  await cont.item('x', 'a').read(); // metadata, before any fault

  stepOf('East US hangs: the read times out there and succeeds in West US');
  await admin('POST', `regions/${EAST}/state`, { state: 'hang' });
  const c0 = await counters();
  const r0 = await cont.item('x', 'a').read();
  const d0 = delta(c0, await counters());
  await admin('POST', `regions/${EAST}/state`, { state: 'online' });
  assert.equal(r0.statusCode, 200);
  assert.equal(r0.resource.v, 3);
  assert.equal(d0['West US']?.['200'], 1, `West US served the read: ${JSON.stringify(d0)}`);
  assert.ok(!d0['East US'], `a hung region answers nothing: ${JSON.stringify(d0)}`);
  const seen = contacted(r0);
  assert.ok(sameEndpoint(seen[0], regions.get('East US')) && seen.some((e) => sameEndpoint(e, regions.get('West US'))),
    `the SDK tried East US first, then West US: ${JSON.stringify(seen)}`);
  const state = await admin('GET', 'state');
  assert.equal(state.regions.find((r) => r.name === 'East US').state, 'online', 'the region is back online');

  stepOf('East US back online: a read succeeds');
  assert.equal((await cont.item('x', 'a').read()).statusCode, 200);

  stepOf('East US removed: 403/1008, account refresh, the read succeeds in West US');
  await admin('POST', `regions/${EAST}/remove`);
  const c1 = await counters();
  const r1 = await cont.item('x', 'a').read();
  const d1 = delta(c1, await counters());
  assert.equal(r1.statusCode, 200);
  assert.equal(d1['West US']?.['200'], 1, `West US served the read: ${JSON.stringify(d1)}`);
  assert.ok((d1['']?.['200'] ?? 0) >= 1, `the account was re-read: ${JSON.stringify(d1)}`);
  for (const [region, byStatus] of Object.entries(d1))
    assert.ok(region !== 'East US' || Object.keys(byStatus).every((s) => s === '403'),
      `the removed region only refuses: ${JSON.stringify(d1)}`);
  const acct = (await client.getDatabaseAccount()).resource;
  assert.deepEqual(acct.readableLocations.map((l) => l.name), ['West US', 'North Europe'],
    'the removed region left the account');

  stepOf('later reads stay away from the removed region');
  const c2 = await counters();
  const r2 = await cont.item('x', 'a').read();
  const d2 = delta(c2, await counters());
  assert.equal(r2.statusCode, 200);
  assert.ok(!d2['East US'], `no request to the removed region: ${JSON.stringify(d2)}`);

  await admin('POST', `regions/${EAST}/restore`);
  await setup.database(dbId).delete();
});
