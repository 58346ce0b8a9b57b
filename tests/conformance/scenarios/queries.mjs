// queries: the SQL subset through the SDK's query pipeline on a container of
// four partition-key ranges. Single-partition queries with parameters, plain
// cross-partition queries, ORDER BY (asc/desc, numbers and strings), VALUE
// aggregates (COUNT/SUM/MIN/MAX/AVG), DISTINCT, OFFSET/LIMIT, TOP, and
// paging with maxItemCount and continuation tokens. Every expected result is
// computed here in JS from the inserted documents.
// (No 410/1002 is ever injected here: the SDK's pipelined queries never
// recover from one -- gateway-protocol.md B8.1.)
// emulator-args: --initial-ranges=4

import { assert, scenario, stepOf, makeClient, uniqueName } from '../lib/harness.mjs';

const N = 40;
const CATS = ['apple', 'banana', 'cherry', 'date', 'elder'];

function makeDocs() {
  const docs = [];
  for (let i = 0; i < N; i++) {
    docs.push({
      id: `d${String(i).padStart(2, '0')}`,
      pk: `p${i % 10}`,
      n: (i * 17) % N, // a permutation of 0..39: unique sort keys
      cat: CATS[i % CATS.length],
      price: Math.round(((i * 7) % 13) * 2.5 * 100) / 100,
      name: `name-${String.fromCharCode(97 + ((i * 11) % 26))}${i}`,
    });
  }
  return docs;
}

const strip = (d) => ({ id: d.id, pk: d.pk, n: d.n, cat: d.cat, price: d.price, name: d.name });
const ids = (rows) => rows.map((r) => r.id);
const byN = (a, b) => a.n - b.n;
const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

await scenario('queries', async () => {
  const client = makeClient();
  const { database } = await client.databases.create({ id: uniqueName('queries') });
  const { container } = await database.containers.create({ id: 'q', partitionKey: { paths: ['/pk'] } });

  stepOf('the container has four partition-key ranges');
  const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 4, `pkranges: ${JSON.stringify(ranges.map((r) => r.id))}`);

  stepOf(`insert ${N} documents across the ranges`);
  const docs = makeDocs();
  const usedRanges = new Set();
  for (const d of docs) {
    const res = await container.items.create(d);
    assert.equal(res.statusCode, 201);
    usedRanges.add(res.headers['x-ms-documentdb-partitionkeyrangeid']);
  }
  assert.ok(usedRanges.size >= 3, `documents landed in ${usedRanges.size} ranges: ${[...usedRanges]}`);

  const q = async (query, options = {}) => {
    const { resources } = await container.items.query(query, options).fetchAll();
    return resources;
  };

  stepOf('single-partition query with parameters');
  {
    const pk = 'p3';
    const min = 10;
    const rows = await q(
      {
        query: 'SELECT * FROM c WHERE c.pk = @pk AND c.n >= @min',
        parameters: [{ name: '@pk', value: pk }, { name: '@min', value: min }],
      },
      { partitionKey: pk },
    );
    const want = docs.filter((d) => d.pk === pk && d.n >= min);
    assert.ok(want.length > 0, 'the test data has matches');
    assert.deepEqual(ids(rows).sort(), ids(want).sort());
    assert.deepEqual(strip(rows.find((r) => r.id === want[0].id)), want[0], 'whole documents come back');
    const names = await q(
      { query: 'SELECT VALUE c.name FROM c WHERE c.cat = @cat', parameters: [{ name: '@cat', value: 'banana' }] },
      { partitionKey: 'p1' },
    );
    assert.deepEqual(names.sort(), docs.filter((d) => d.pk === 'p1' && d.cat === 'banana').map((d) => d.name).sort());
  }

  stepOf('cross-partition plain query (fetchAll)');
  {
    const rows = await q('SELECT * FROM c');
    assert.equal(rows.length, N, 'every document once');
    assert.deepEqual(ids(rows).sort(), ids(docs).sort());
    const filtered = await q({
      query: 'SELECT c.id, c.n FROM c WHERE c.n < @lim AND c.cat != @cat',
      parameters: [{ name: '@lim', value: 20 }, { name: '@cat', value: 'date' }],
    });
    const want = docs.filter((d) => d.n < 20 && d.cat !== 'date');
    assert.deepEqual(filtered.map((r) => `${r.id}:${r.n}`).sort(), want.map((d) => `${d.id}:${d.n}`).sort());
    assert.ok(filtered.every((r) => Object.keys(r).sort().join() === 'id,n'), 'projection keeps only id and n');
  }

  stepOf('ORDER BY across ranges: asc and desc');
  {
    const asc = [...docs].sort(byN);
    assert.deepEqual(ids(await q('SELECT * FROM c ORDER BY c.n')), ids(asc), 'ORDER BY c.n (default asc)');
    assert.deepEqual(ids(await q('SELECT * FROM c ORDER BY c.n ASC')), ids(asc), 'ORDER BY c.n ASC');
    assert.deepEqual(ids(await q('SELECT * FROM c ORDER BY c.n DESC')), ids([...asc].reverse()), 'ORDER BY c.n DESC');
    const byName = [...docs].sort((a, b) => cmpStr(a.name, b.name));
    assert.deepEqual(ids(await q('SELECT c.id, c.name FROM c ORDER BY c.name DESC')), ids([...byName].reverse()),
      'ORDER BY a string DESC');
    const where = await q({
      query: 'SELECT VALUE c.n FROM c WHERE c.cat = @cat ORDER BY c.n DESC',
      parameters: [{ name: '@cat', value: 'cherry' }],
    });
    assert.deepEqual(where, docs.filter((d) => d.cat === 'cherry').map((d) => d.n).sort((a, b) => b - a),
      'ORDER BY with WHERE and SELECT VALUE');
  }

  stepOf('SELECT VALUE COUNT/SUM/MIN/MAX/AVG across ranges');
  {
    const ns = docs.map((d) => d.n);
    const prices = docs.map((d) => d.price);
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    assert.deepEqual(await q('SELECT VALUE COUNT(1) FROM c'), [N], 'COUNT(1)');
    assert.deepEqual(await q('SELECT VALUE SUM(c.n) FROM c'), [sum(ns)], 'SUM');
    assert.deepEqual(await q('SELECT VALUE MIN(c.n) FROM c'), [Math.min(...ns)], 'MIN');
    assert.deepEqual(await q('SELECT VALUE MAX(c.n) FROM c'), [Math.max(...ns)], 'MAX');
    const [avg] = await q('SELECT VALUE AVG(c.price) FROM c');
    assert.ok(Math.abs(avg - sum(prices) / N) < 1e-9, `AVG(c.price) = ${avg}, want ${sum(prices) / N}`);
    assert.deepEqual(await q('SELECT VALUE MIN(c.name) FROM c'), [docs.map((d) => d.name).sort()[0]], 'MIN of strings');
    const apples = docs.filter((d) => d.cat === 'apple');
    assert.deepEqual(await q({
      query: 'SELECT VALUE COUNT(1) FROM c WHERE c.cat = @cat',
      parameters: [{ name: '@cat', value: 'apple' }],
    }), [apples.length], 'COUNT with WHERE');
    assert.deepEqual(await q('SELECT VALUE MAX(c.n) FROM c WHERE c.pk = "p4"'),
      [Math.max(...docs.filter((d) => d.pk === 'p4').map((d) => d.n))], 'MAX with a partition filter');
    assert.deepEqual(await q('SELECT VALUE SUM(c.n) FROM c', { partitionKey: 'p7' }),
      [sum(docs.filter((d) => d.pk === 'p7').map((d) => d.n))], 'SUM in one partition');
    assert.deepEqual(await q('SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000'), [0], 'COUNT of nothing is 0');
  }

  stepOf('DISTINCT');
  {
    const cats = await q('SELECT DISTINCT VALUE c.cat FROM c');
    assert.deepEqual([...cats].sort(), [...CATS].sort(), `DISTINCT VALUE c.cat: ${JSON.stringify(cats)}`);
    const objs = await q('SELECT DISTINCT c.cat FROM c');
    assert.deepEqual(objs.map((o) => o.cat).sort(), [...CATS].sort(), `DISTINCT c.cat: ${JSON.stringify(objs)}`);
    const ordered = await q('SELECT DISTINCT VALUE c.cat FROM c ORDER BY c.cat DESC');
    assert.deepEqual(ordered, [...CATS].sort().reverse(), 'DISTINCT with ORDER BY');
  }

  stepOf('OFFSET/LIMIT');
  {
    const asc = [...docs].sort(byN);
    assert.deepEqual(ids(await q('SELECT * FROM c ORDER BY c.n OFFSET 5 LIMIT 10')), ids(asc.slice(5, 15)),
      'ORDER BY ... OFFSET 5 LIMIT 10');
    assert.deepEqual(ids(await q('SELECT * FROM c ORDER BY c.n DESC OFFSET 35 LIMIT 10')),
      ids([...asc].reverse().slice(35, 45)), 'OFFSET near the end');
    const unordered = await q('SELECT c.id FROM c OFFSET 3 LIMIT 12');
    assert.equal(unordered.length, 12, 'OFFSET 3 LIMIT 12 without ORDER BY: 12 rows');
    assert.equal(new Set(ids(unordered)).size, 12, 'no duplicates');
  }

  stepOf('TOP');
  {
    const asc = [...docs].sort(byN);
    assert.deepEqual(ids(await q('SELECT TOP 7 * FROM c ORDER BY c.n DESC')), ids([...asc].reverse().slice(0, 7)),
      'TOP 7 ... ORDER BY DESC');
    const top5 = await q('SELECT TOP 5 c.id FROM c');
    assert.equal(top5.length, 5, 'TOP 5 without ORDER BY');
    assert.ok(top5.every((r) => docs.some((d) => d.id === r.id)));
    assert.equal((await q('SELECT TOP 100 * FROM c')).length, N, 'TOP larger than the data');
  }

  stepOf('paging: single partition, maxItemCount 3, resume from a continuation');
  {
    const pk = 'p5';
    const want = docs.filter((d) => d.pk === pk);
    const query = 'SELECT * FROM c';
    const it = container.items.query(query, { partitionKey: pk, maxItemCount: 2 });
    const first = await it.fetchNext();
    assert.equal(first.resources.length, 2, 'first page: maxItemCount rows');
    assert.ok(first.hasMoreResults && first.continuationToken, 'a continuation after the first page');
    const rest = [];
    const resumed = container.items.query(query, {
      partitionKey: pk, maxItemCount: 2, continuationToken: first.continuationToken,
    });
    while (resumed.hasMoreResults()) {
      const page = await resumed.fetchNext();
      assert.ok(page.resources.length <= 2, `page of ${page.resources.length} rows > maxItemCount`);
      rest.push(...page.resources);
    }
    assert.deepEqual([...ids(first.resources), ...ids(rest)].sort(), ids(want).sort(),
      'first page + resumed pages = the partition, each document once');
  }

  stepOf('paging: cross-partition, maxItemCount 7');
  {
    const it = container.items.query('SELECT * FROM c', { maxItemCount: 7 });
    const seen = [];
    let pages = 0;
    while (it.hasMoreResults()) {
      const page = await it.fetchNext();
      assert.ok(page.resources.length <= 7, `page of ${page.resources.length} rows > maxItemCount`);
      seen.push(...page.resources);
      if (++pages > 100) assert.fail('more than 100 pages for 40 documents');
    }
    assert.ok(pages >= Math.ceil(N / 7), `${pages} pages`);
    assert.deepEqual(ids(seen).sort(), ids(docs).sort(), 'every document exactly once');
  }

  stepOf('paging: ORDER BY, maxItemCount 6, via the async iterator');
  {
    const got = [];
    for await (const page of container.items.query('SELECT * FROM c ORDER BY c.n DESC', { maxItemCount: 6 }).getAsyncIterator()) {
      assert.ok(page.resources.length <= 6, `page of ${page.resources.length} rows`);
      got.push(...page.resources);
    }
    assert.deepEqual(ids(got), ids([...docs].sort(byN).reverse()), 'pages concatenate in order');
  }

  await database.delete();
});
