// preferred-and-excluded: preferredLocations [East US, West US] sends reads to
// East US (writes stay with the single write region, West US); a per-request
// excludedLocations ['East US'] sends that read to the next preferred region.
// Checked on both sides: the emulator's per-region counters and the SDK's
// diagnostics.
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, regionEndpoints, counters, delta, contacted, sameEndpoint,
  uniqueName,
} from '../lib/harness.mjs';

/// Runs `op` and returns [its result, the per-region counter changes].
async function observed(op) {
  const before = await counters();
  const result = await op();
  return [result, delta(before, await counters())];
}

const only = (d, region, what) => {
  const regions = Object.keys(d).filter((r) => r !== '');
  assert.deepEqual(regions, [region], `${what} was served by ${JSON.stringify(d)}, expected only ${region}`);
};

await scenario('preferred-and-excluded', async () => {
  const regions = await regionEndpoints();
  const dbId = uniqueName('pref');
  // Set-up with a default client: everything in West US.
  const setup = makeClient();
  const { database } = await setup.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });
  await container.items.create({ id: 'x', pk: 'a', v: 1 });

  const client = makeClient({ connectionPolicy: { preferredLocations: ['East US', 'West US'] } });
  const cont = client.database(dbId).container('c');

  stepOf('the SDK resolves reads to East US and writes to West US');
  assert.ok(sameEndpoint(await client.getReadEndpoint(), regions.get('East US')),
    `read endpoint ${await client.getReadEndpoint()}`);
  assert.ok(sameEndpoint(await client.getWriteEndpoint(), regions.get('West US')),
    `write endpoint ${await client.getWriteEndpoint()}`);
  // getReadEndpoints lists the account's readable regions (account order in
  // 4.9.3, not preference order): only check it names them all.
  const reads = await client.getReadEndpoints();
  assert.equal(reads.length, regions.size, `read endpoints: ${JSON.stringify(reads)}`);
  for (const url of regions.values())
    assert.ok(reads.some((e) => sameEndpoint(e, url)), `${url} missing from ${JSON.stringify(reads)}`);

  stepOf('warm up: the first operation loads the collection definition');
  await cont.item('x', 'a').read();

  stepOf('a point read goes to East US');
  const [r1, d1] = await observed(() => cont.item('x', 'a').read());
  assert.equal(r1.statusCode, 200);
  assert.equal(r1.resource.v, 1);
  only(d1, 'East US', 'the read');
  assert.ok(contacted(r1).every((e) => sameEndpoint(e, regions.get('East US'))),
    `diagnostics: ${JSON.stringify(contacted(r1))}`);

  stepOf('a query goes to East US');
  const [q1, dq1] = await observed(() =>
    cont.items.query('SELECT * FROM c WHERE c.pk = "a"', { partitionKey: 'a' }).fetchAll());
  assert.deepEqual(q1.resources.map((d) => d.id), ['x']);
  only(dq1, 'East US', 'the query');

  stepOf('a write goes to the write region West US');
  const [w1, dw1] = await observed(() => cont.items.create({ id: 'y', pk: 'a', v: 2 }));
  assert.equal(w1.statusCode, 201);
  // (The SDK may read metadata on the way, from the read region.)
  assert.equal(dw1['West US']?.['201'], 1, `the write was served by ${JSON.stringify(dw1)}`);
  for (const [region, byStatus] of Object.entries(dw1))
    assert.ok(region === 'West US' || !byStatus['201'], `a write was served by ${region}: ${JSON.stringify(dw1)}`);

  stepOf('excludedLocations [East US]: the read goes to West US');
  const [r2, d2] = await observed(() => cont.item('x', 'a').read({ excludedLocations: ['East US'] }));
  assert.equal(r2.statusCode, 200);
  only(d2, 'West US', 'the read excluding East US');
  assert.ok(contacted(r2).every((e) => sameEndpoint(e, regions.get('West US'))),
    `diagnostics: ${JSON.stringify(contacted(r2))}`);

  stepOf('excludedLocations on a query');
  const [q2, dq2] = await observed(() =>
    cont.items.query('SELECT * FROM c', { partitionKey: 'a', excludedLocations: ['East US'] }).fetchAll());
  assert.deepEqual(q2.resources.map((d) => d.id).sort(), ['x', 'y']);
  only(dq2, 'West US', 'the query excluding East US');

  stepOf('excluding both preferred regions: the read goes to the remaining region');
  const [r3, d3] = await observed(() => cont.item('x', 'a').read({ excludedLocations: ['East US', 'West US'] }));
  assert.equal(r3.statusCode, 200);
  only(d3, 'North Europe', 'the read excluding East US and West US');

  stepOf('the exclusion is per request: the next read is back in East US');
  const [r4, d4] = await observed(() => cont.item('x', 'a').read());
  assert.equal(r4.statusCode, 200);
  only(d4, 'East US', 'the read after the excluded ones');

  stepOf('preferredLocations [North Europe]: reads go there');
  const ne = makeClient({ connectionPolicy: { preferredLocations: ['North Europe'] } });
  const necont = ne.database(dbId).container('c');
  await necont.item('x', 'a').read();
  const [r5, d5] = await observed(() => necont.item('y', 'a').read());
  assert.equal(r5.statusCode, 200);
  only(d5, 'North Europe', 'the read preferring North Europe');

  await setup.database(dbId).delete();
});
