// change-feed: the SDK's pull-model change feed (latest-version mode) against
// the emulator. container.items.getChangeFeedIterator from
// ChangeFeedStartFrom.Beginning(), .Now(), .Time(date) and
// .Continuation(token); over one feed range of container.getFeedRanges(),
// over one partition key and over a hierarchical-key prefix; across a split
// and a merge made through the admin API while the iterator is half-way
// (the SDK's 410/1002 handling: every document seen, none lost); and in a
// region that lags. Also the SDK's contract: hasMoreResults is always true,
// readNext answers 200 with changes or 304 once every range was caught up,
// an update shows the latest version and a delete is not shown.
// emulator-args: --initial-ranges=2

import {
  assert, scenario, stepOf, makeClient, admin, counters, delta, count, uniqueName,
} from '../lib/harness.mjs';
import { ChangeFeedStartFrom } from '@azure/cosmos';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sorted = (xs) => [...xs].sort();

/// Reads `it` until a 304; every page checked. Returns the items, the
/// number of 200 pages and the last response (the 304).
async function drain(it, what, maxPages = 200) {
  const items = [];
  let pages = 0;
  for (let i = 0; i < maxPages; i++) {
    assert.equal(it.hasMoreResults, true, `${what}: hasMoreResults is always true`);
    const res = await it.readNext();
    if (res.statusCode === 304) {
      assert.equal(res.result.length, 0, `${what}: a 304 carries no items`);
      assert.ok(res.continuationToken, `${what}: a 304 still has a continuation token`);
      return { items, pages, last: res };
    }
    assert.equal(res.statusCode, 200, `${what}: readNext answered ${res.statusCode}`);
    assert.ok(res.result.length > 0, `${what}: a 200 page with no items`);
    assert.ok(res.continuationToken, `${what}: a page without a continuation token`);
    for (const item of res.result)
      assert.equal(typeof item._lsn, 'number', `${what}: item ${item.id} has no numeric _lsn`);
    items.push(...res.result);
    pages++;
  }
  assert.fail(`${what}: no 304 after ${maxPages} pages`);
}

const idsOf = (items) => items.map((d) => d.id);

/// Every id once: no repeat.
function once(items, what) {
  const ids = idsOf(items);
  assert.equal(new Set(ids).size, ids.length, `${what}: repeated ids in ${JSON.stringify(ids)}`);
  return ids;
}

await scenario('change-feed', async () => {
  const client = makeClient({ consistencyLevel: 'Session' });
  const dbId = uniqueName('feed');
  const { database } = await client.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: 'c', partitionKey: { paths: ['/pk'] } });
  const live = new Map(); // id -> n, what the feed must show

  const put = async (id, pk, n) => {
    const res = await container.items.upsert({ id, pk, n });
    assert.ok(res.statusCode === 200 || res.statusCode === 201, `upsert ${id}: ${res.statusCode}`);
    live.set(id, { pk, n });
  };
  for (let i = 0; i < 24; i++) await put(`d${String(i).padStart(2, '0')}`, `p${i % 6}`, i);

  stepOf('Beginning(): every document once, in pages of maxItemCount, then 304');
  const fromStart = container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 5,
  });
  {
    const { items, pages } = await drain(fromStart, 'Beginning');
    assert.deepEqual(sorted(once(items, 'Beginning')), sorted(live.keys()));
    assert.ok(pages >= 5, `${pages} pages for 24 documents at 5 per page`);
    for (const d of items) assert.equal(d.n, live.get(d.id).n, `${d.id}: body as written`);
  }

  stepOf('the same iterator, after its 304: only what changed since, latest version, no deletes');
  await put('d03', 'p3', 103); // update
  await put('d04', 'p4', 104);
  await put('d04', 'p4', 204); // two updates collapse
  await container.item('d05', 'p5').delete();
  live.delete('d05');
  await put('new1', 'p1', 1);
  {
    const { items } = await drain(fromStart, 'after the 304');
    assert.deepEqual(sorted(once(items, 'after the 304')), ['d03', 'd04', 'new1']);
    assert.equal(items.find((d) => d.id === 'd04').n, 204, 'the latest version of d04');
  }
  const token = (await drain(fromStart, 'caught up')).last.continuationToken;

  stepOf('Continuation(token): a fresh iterator sees only newer changes');
  await put('new2', 'p2', 2);
  await put('d00', 'p0', 100);
  {
    const resumed = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Continuation(token),
    });
    const { items } = await drain(resumed, 'Continuation');
    assert.deepEqual(sorted(once(items, 'Continuation')), ['d00', 'new2']);
  }

  stepOf('Now(): 304 first (every range checked), then only later changes');
  {
    const now = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    const first = await now.readNext();
    assert.equal(first.statusCode, 304, `Now() first read: ${first.statusCode}`);
    await put('new3', 'p3', 3);
    const { items } = await drain(now, 'Now');
    assert.deepEqual(once(items, 'Now'), ['new3']);
  }

  stepOf('Time(date): the changes committed from that second on');
  {
    await sleep(1100); // the date has a precision of one second
    const since = new Date();
    await put('new4', 'p4', 4);
    await put('d01', 'p1', 101);
    const timed = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Time(since), maxItemCount: 1,
    });
    // Pages of one: later pages carry the etag and the date; the etag wins.
    // (Ranges are read in turn, so the order across ranges is the SDK's.)
    const { items, pages } = await drain(timed, 'Time');
    assert.deepEqual(sorted(once(items, 'Time')), ['d01', 'new4']);
    assert.equal(pages, 2);
  }

  stepOf('getFeedRanges(): one iterator per range, together every document once');
  {
    const ranges = await container.getFeedRanges();
    assert.equal(ranges.length, 2, `feed ranges: ${JSON.stringify(ranges)}`);
    const all = [];
    for (const range of ranges) {
      const it = container.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Beginning(range), maxItemCount: 4,
      });
      const { items } = await drain(it, `range ${JSON.stringify(range)}`);
      assert.ok(items.length > 0, `range ${JSON.stringify(range)} is empty`);
      all.push(...items);
    }
    assert.deepEqual(sorted(once(all, 'feed ranges')), sorted(live.keys()));
  }

  stepOf('Beginning(partition key): only that partition');
  {
    const it = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning('p4') });
    const { items } = await drain(it, 'partition p4');
    const want = [...live].filter(([, v]) => v.pk === 'p4').map(([id]) => id);
    assert.deepEqual(sorted(once(items, 'partition p4')), sorted(want));
    await put('new5', 'p4', 5);
    await put('other', 'p2', 5);
    assert.deepEqual(idsOf((await drain(it, 'partition p4, later')).items), ['new5']);
  }

  stepOf('Beginning(hierarchical-key prefix): only that prefix');
  {
    const { container: h } = await database.containers.create({
      id: 'h', partitionKey: { paths: ['/a', '/b'], kind: 'MultiHash', version: 2 },
    });
    for (const [id, a, b] of [['1', 'x', 'u'], ['2', 'y', 'u'], ['3', 'x', 'v'], ['4', 'z', 'v']])
      await h.items.create({ id, a, b });
    const it = h.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(['x']) });
    assert.deepEqual(sorted(once((await drain(it, 'prefix x')).items, 'prefix x')), ['1', '3']);
  }

  stepOf('a split while reading: 410/1002 on the old range, the children go on from its etag');
  {
    const it = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 3,
    });
    const seen = [];
    for (let i = 0; i < 2; i++) {
      const res = await it.readNext();
      assert.equal(res.statusCode, 200);
      seen.push(...res.result);
    }
    const before = await counters();
    const { children } = await admin('POST', 'split', { db: dbId, coll: 'c', range: '0' });
    assert.equal(children.length, 2);
    await put('after-split-1', 'p0', 1);
    await put('after-split-2', 'p5', 2);
    await put('after-split-3', 'p3', 3);
    const { items } = await drain(it, 'across the split');
    seen.push(...items);
    assert.deepEqual(sorted(once(seen, 'across the split')), sorted(live.keys()),
      'every live document once, none lost, none repeated');
    const d = delta(before, await counters());
    assert.ok(count(d, 'West US', 410) >= 1, `the SDK met the split as a 410: ${JSON.stringify(d)}`);
    assert.equal((await container.getFeedRanges()).length, 3);
  }

  stepOf('a merge while reading: 410/1002, the merged range read by EPK from the children\'s etags');
  {
    const { resources: pkranges } = await container.readPartitionKeyRanges().fetchAll();
    const ids = pkranges.map((r) => r.id);
    const it = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 4,
    });
    const seen = [];
    const first = await it.readNext();
    assert.equal(first.statusCode, 200);
    seen.push(...first.result);
    const before = await counters();
    // The two children of range 0 ("" up to the old boundary) merge back.
    const lowest = pkranges.filter((r) => r.minInclusive === '')[0];
    const next = pkranges.filter((r) => r.minInclusive === lowest.maxExclusive)[0];
    const { range: merged } = await admin('POST', 'merge', { db: dbId, coll: 'c', ranges: [lowest.id, next.id] });
    assert.ok(!ids.includes(merged), `a new range id: ${merged}`);
    await put('after-merge-1', 'p0', 1);
    await put('after-merge-2', 'p1', 2);
    const { items } = await drain(it, 'across the merge');
    seen.push(...items);
    assert.deepEqual(sorted(once(seen, 'across the merge')), sorted(live.keys()),
      'every live document once, none lost, none repeated');
    const d = delta(before, await counters());
    assert.ok(count(d, 'West US', 410) >= 1, `the SDK met the merge as a 410: ${JSON.stringify(d)}`);
    assert.equal(count(d, 'West US', 400), 0, `no request refused: ${JSON.stringify(d)}`);
    // A later change in the merged range reaches the same iterator.
    await put('after-merge-3', 'p2', 3);
    assert.deepEqual(idsOf((await drain(it, 'after the merge')).items), ['after-merge-3']);
  }

  stepOf('a lagging region: its feed shows a write only once it has it');
  {
    await admin('POST', 'region-lag', { region: 'East US', lag_ms: 1500 });
    try {
      const reader = makeClient({ connectionPolicy: { preferredLocations: ['East US', 'West US'] } });
      const rc = reader.database(dbId).container('c');
      await rc.read(); // the account and the container, before the clock starts
      const it = rc.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
      const first = await it.readNext();
      assert.equal(first.statusCode, 304);
      await put('lagged', 'p1', 1);
      const c0 = await counters();
      const early = await it.readNext();
      assert.equal(early.statusCode, 304, 'East US must not show a write before its lag has passed');
      const d = delta(c0, await counters());
      assert.ok(count(d, 'East US', 304) >= 1 && !d['West US'], `the feed was read in East US: ${JSON.stringify(d)}`);
      await sleep(1700);
      const { items } = await drain(it, 'East US after the lag');
      assert.deepEqual(idsOf(items), ['lagged']);
    } finally {
      await admin('POST', 'region-lag', { region: 'East US', lag_ms: 0 });
    }
  }

  await database.delete();
});
