// crud: databases, a container partitioned on /pk, and every point operation
// on items, with the status codes the SDK must see: 201/200/204, 404 for a
// missing item, 409 for a duplicate id, 412 for a stale If-Match etag.
// emulator-args:

import {
  assert, scenario, stepOf, makeClient, rejectsWith, uniqueName,
} from '../lib/harness.mjs';

await scenario('crud', async () => {
  const client = makeClient();
  const dbId = uniqueName('crud');

  stepOf('create database and container (partitionKey /pk)');
  const dbRes = await client.databases.create({ id: dbId });
  assert.equal(dbRes.statusCode, 201, 'database create');
  const db = dbRes.database;
  const again = await rejectsWith(client.databases.create({ id: dbId }), 'database create twice');
  assert.equal(again.code, 409, `second database create: ${again.message}`);
  const collRes = await db.containers.create({ id: 'items', partitionKey: { paths: ['/pk'] } });
  assert.equal(collRes.statusCode, 201, 'container create');
  const container = collRes.container;
  const def = (await container.read()).resource;
  assert.deepEqual(def.partitionKey.paths, ['/pk'], 'the container keeps its partition key');

  stepOf('create items');
  const a = { id: 'a', pk: 'p1', n: 1, tags: ['x', 'y'], nested: { deep: true } };
  const created = await container.items.create(a);
  assert.equal(created.statusCode, 201);
  assert.equal(created.resource.id, 'a');
  assert.deepEqual(created.resource.nested, { deep: true });
  assert.ok(created.etag && created.resource._etag === created.etag, 'create returns the etag');
  assert.ok(created.resource._rid && created.resource._ts > 0, 'system properties present');
  const b = (await container.items.create({ id: 'b', pk: 'p2', n: 2 })).resource;
  assert.equal(b.pk, 'p2');

  stepOf('create a duplicate id in the same partition -> 409');
  const dup = await rejectsWith(container.items.create({ id: 'a', pk: 'p1', n: 99 }), 'duplicate create');
  assert.equal(dup.code, 409, `duplicate create: ${dup.message}`);
  // The same id in another partition is a different item.
  const sameIdOtherPk = await container.items.create({ id: 'a', pk: 'p9', n: 9 });
  assert.equal(sameIdOtherPk.statusCode, 201, 'same id, other partition key');

  stepOf('read items');
  const readA = await container.item('a', 'p1').read();
  assert.equal(readA.statusCode, 200);
  assert.equal(readA.resource.n, 1);
  assert.deepEqual(readA.resource.tags, ['x', 'y']);
  assert.equal(readA.etag, created.etag, 'read returns the stored etag');
  assert.equal((await container.item('a', 'p9').read()).resource.n, 9, 'id a under pk p9');

  stepOf('read a missing item -> 404');
  const missing = await container.item('nope', 'p1').read();
  assert.equal(missing.statusCode, 404, 'missing item');
  assert.equal(missing.resource, undefined);
  const wrongPk = await container.item('a', 'p2').read();
  assert.equal(wrongPk.statusCode, 404, 'existing id under another partition key');

  stepOf('replace with a current If-Match etag');
  const replaced = await container.item('a', 'p1').replace(
    { ...readA.resource, n: 10 },
    { accessCondition: { type: 'IfMatch', condition: readA.etag } },
  );
  assert.equal(replaced.statusCode, 200);
  assert.equal(replaced.resource.n, 10);
  assert.notEqual(replaced.etag, readA.etag, 'a replace changes the etag');

  stepOf('replace with the stale etag -> 412, item unchanged');
  const stale = await rejectsWith(
    container.item('a', 'p1').replace(
      { ...readA.resource, n: 11 },
      { accessCondition: { type: 'IfMatch', condition: readA.etag } },
    ),
    'replace with a stale etag',
  );
  assert.equal(stale.code, 412, `stale replace: ${stale.message}`);
  assert.equal((await container.item('a', 'p1').read()).resource.n, 10, 'the stale replace changed nothing');

  stepOf('replace of a missing item -> 404');
  const replaceMissing = await rejectsWith(
    container.item('ghost', 'p1').replace({ id: 'ghost', pk: 'p1' }), 'replace missing');
  assert.equal(replaceMissing.code, 404, `replace missing: ${replaceMissing.message}`);

  stepOf('upsert: insert then update');
  const up1 = await container.items.upsert({ id: 'c', pk: 'p1', n: 3 });
  assert.equal(up1.statusCode, 201, 'upsert of a new item creates it');
  const up2 = await container.items.upsert({ id: 'c', pk: 'p1', n: 4 });
  assert.equal(up2.statusCode, 200, 'upsert of an existing item replaces it');
  assert.equal((await container.item('c', 'p1').read()).resource.n, 4);

  stepOf('read all items (feed)');
  const { resources: all } = await container.items.readAll().fetchAll();
  assert.deepEqual(all.map((d) => `${d.pk}/${d.id}`).sort(), ['p1/a', 'p1/c', 'p2/b', 'p9/a']);

  stepOf('delete, then read -> 404, delete again -> 404');
  const del = await container.item('b', 'p2').delete();
  assert.equal(del.statusCode, 204);
  assert.equal((await container.item('b', 'p2').read()).statusCode, 404, 'deleted item');
  const delAgain = await rejectsWith(container.item('b', 'p2').delete(), 'second delete');
  assert.equal(delAgain.code, 404, `second delete: ${delAgain.message}`);
  // Re-create after delete works.
  assert.equal((await container.items.create({ id: 'b', pk: 'p2', n: 5 })).statusCode, 201);

  stepOf('delete container and database');
  assert.equal((await container.delete()).statusCode, 204);
  assert.equal((await container.read().catch((e) => ({ statusCode: e.code }))).statusCode, 404,
    'deleted container');
  assert.equal((await db.delete()).statusCode, 204);
  const { resources: dbs } = await client.databases.readAll().fetchAll();
  assert.ok(!dbs.some((d) => d.id === dbId), 'the database is gone from the list');
});
