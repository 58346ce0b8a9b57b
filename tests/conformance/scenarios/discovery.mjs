// discovery: the SDK reads the account (GET / on the global endpoint) and
// routes reads and writes to the region endpoints the emulator publishes.
// emulator-args: "--regions=West US,East US,North Europe"

import {
  assert, scenario, stepOf, makeClient, regionEndpoints, emulatorState, counters,
  count, total, sameEndpoint, endpoint,
} from '../lib/harness.mjs';

await scenario('discovery', async () => {
  const regions = await regionEndpoints();
  const names = [...regions.keys()];
  assert.deepEqual(names, ['West US', 'East US', 'North Europe'], 'admin state lists the regions');
  for (const [name, url] of regions)
    assert.ok(!sameEndpoint(url, endpoint), `region ${name} has its own endpoint, not the global one`);

  const client = makeClient();

  stepOf('getDatabaseAccount returns the emulator account');
  const account = await client.getDatabaseAccount();
  assert.equal(account.statusCode, 200);
  const acct = account.resource;
  const readable = acct.readableLocations.map((l) => [l.name, l.databaseAccountEndpoint]);
  const writable = acct.writableLocations.map((l) => [l.name, l.databaseAccountEndpoint]);
  assert.deepEqual(readable.map(([n]) => n), names, 'readableLocations in account order');
  for (const [name, url] of readable)
    assert.ok(sameEndpoint(url, regions.get(name)), `readable ${name}: ${url} vs ${regions.get(name)}`);
  const state = await emulatorState();
  assert.deepEqual(writable.map(([n]) => n), [state.write_regions[0]], 'single-write: one writable location');
  assert.ok(sameEndpoint(writable[0][1], regions.get('West US')), 'the writer is West US');
  assert.equal(acct.enableMultipleWritableLocations, false, 'single-write account');
  assert.equal(acct.consistencyPolicy, 'Session', 'default consistency');

  stepOf('getReadEndpoint / getWriteEndpoint report the region endpoints');
  const readEndpoint = await client.getReadEndpoint();
  const writeEndpoint = await client.getWriteEndpoint();
  assert.ok(sameEndpoint(readEndpoint, regions.get('West US')),
    `read endpoint ${readEndpoint} is the first readable region ${regions.get('West US')}`);
  assert.ok(sameEndpoint(writeEndpoint, regions.get('West US')),
    `write endpoint ${writeEndpoint} is the write region ${regions.get('West US')}`);

  stepOf('getReadEndpoints lists every readable region in account order');
  const readEndpoints = await client.getReadEndpoints();
  assert.equal(readEndpoints.length, regions.size, `read endpoints: ${JSON.stringify(readEndpoints)}`);
  names.forEach((name, i) =>
    assert.ok(sameEndpoint(readEndpoints[i], regions.get(name)),
      `read endpoint #${i} ${readEndpoints[i]} is ${name} ${regions.get(name)}`));
  const writeEndpoints = await client.getWriteEndpoints();
  assert.ok(writeEndpoints.length >= 1 && sameEndpoint(writeEndpoints[0], regions.get('West US')),
    `write endpoints: ${JSON.stringify(writeEndpoints)}`);

  stepOf('a metadata write goes to the write region, not the global endpoint');
  const before = await counters();
  const { database } = await client.databases.createIfNotExists({ id: 'discovery' });
  await database.read();
  const after = await counters();
  const served = (region) => total(after, region) - total(before, region);
  assert.ok(served('West US') >= 2, `West US served the create and read: ${JSON.stringify(after)}`);
  assert.equal(served('East US') + served('North Europe'), 0,
    `no other region was used: ${JSON.stringify(after)}`);
  assert.ok(count(after, '', 200) >= 1, `the account was read on the global endpoint: ${JSON.stringify(after)}`);
});
