/** The SDK against the local stack (EDGECRON_URL and EDGECRON_ADMIN_KEY, set by `make typescript`):
 * a fresh App, paging through what it created, a create retried with its key answering the first
 * object, and a round trip: create an Endpoint whose receiver verifies signatures with the
 * `standardwebhooks` package, deliver to it (a direct run, then a schedule bound to it), verify. */
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { createReceiver, type Delivery } from "../examples/receiver.js";
import { EdgeCron, type TaskRun } from "../src/index.js";

const URL_ = process.env.EDGECRON_URL;
const ADMIN_KEY = process.env.EDGECRON_ADMIN_KEY;
const skip = (!URL_ || !ADMIN_KEY) && "needs EDGECRON_URL and EDGECRON_ADMIN_KEY (make typescript sets them)";
const WAIT_MS = 30_000;

let client: EdgeCron;
const servers: Server[] = [];

before(async () => {
  if (skip) return;
  const created = await new EdgeCron({ baseUrl: URL_!, apiKey: ADMIN_KEY! }).apps.create("typescript-sdk");
  client = new EdgeCron({ baseUrl: URL_!, apiKey: created.api_key });
});

after(() => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))));

async function listening(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

/** An Endpoint whose receiver (the example) verifies with the secret EdgeCron generated for it: the
 * Endpoint is created first (its secret is shown once, by the create), then pointed at the receiver. */
async function receiverEndpoint(
  secretOf: (secret: string) => string,
  onDelivery: (delivery: Delivery) => void,
): Promise<{ id: string }> {
  const endpoint = await client.endpoints.create({ url: "http://127.0.0.1:9/not-yet" });
  assert.ok(endpoint.secret, "the create shows the signing secret");
  const url = await listening(createReceiver(secretOf(endpoint.secret), onDelivery));
  await client.endpoints.update(endpoint.id, { url });
  return endpoint;
}

const itsOwn = (secret: string): string => secret;
const another = (): string => "whsec_" + Buffer.alloc(24, 7).toString("base64");

async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test("list, pages and iter walk everything created, page by page", { skip }, async () => {
  const ids: string[] = [];
  for (let n = 0; n < 5; n++) {
    ids.push((await client.endpoints.create({ url: `http://127.0.0.1:9/page/${n}`, active: false })).id);
  }
  const first = await client.endpoints.list({ limit: 2 });
  assert.equal(first.data.length, 2);
  assert.ok(first.next_cursor);
  const sizes: number[] = [];
  for await (const page of client.endpoints.pages({ limit: 2 })) sizes.push(page.data.length);
  assert.deepEqual(sizes, [2, 2, 1]);
  const every: string[] = [];
  for await (const endpoint of client.endpoints.iter({ limit: 2 })) every.push(endpoint.id);
  assert.deepEqual([...every].sort(), [...ids].sort());
  await Promise.all(ids.map((id) => client.endpoints.delete(id)));
});

test("a create sent again with its idempotency key answers the first object", { skip }, async () => {
  const body = { strategy: "fixed" as const, max_attempts: 2, base_delay_sec: 1 };
  const first = await client.retryPolicies.create(body, { idempotencyKey: "ts-policy-1" });
  const again = await client.retryPolicies.create(body, { idempotencyKey: "ts-policy-1" });
  assert.equal(again.id, first.id);
  const other = await client.retryPolicies.create(body);
  assert.notEqual(other.id, first.id);
});

test("a run is delivered signed, and the receiver example verifies it", { skip }, async () => {
  const deliveries: Delivery[] = [];
  const endpoint = await receiverEndpoint(itsOwn, (delivery) => deliveries.push(delivery));

  const run = await client.taskRuns.create({ endpoint_id: endpoint.id, payload: { order: 42 } });
  const delivered = await eventually("the verified delivery", async () => deliveries[0]);
  assert.deepEqual(delivered.payload, { order: 42 });
  assert.ok(delivered.id);
  const done = await eventually("the run's success", async () => {
    const current: TaskRun = await client.taskRuns.get(run.id);
    return current.status === "success" ? current : undefined;
  });
  assert.equal(done.attempt_count, 1);
  const attempts = [];
  for await (const attempt of client.taskRuns.attempts.iter(run.id)) attempts.push(attempt);
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]?.status_code, 204);
});

test("a receiver holding the wrong secret refuses the delivery, and the run fails", { skip }, async () => {
  const deliveries: Delivery[] = [];
  const endpoint = await receiverEndpoint(another, (delivery) => deliveries.push(delivery));
  const run = await client.taskRuns.create({ endpoint_id: endpoint.id, payload: { order: 43 } });
  const failed = await eventually("the run's failure", async () => {
    const current = await client.taskRuns.get(run.id);
    return current.status === "failed" ? current : undefined;
  });
  assert.equal(failed.last_status_code, 400);
  assert.deepEqual(deliveries, []);
});

test("a schedule bound to one Endpoint delivers to it, pauses and lists its fires with their runs", { skip }, async () => {
  const deliveries: Delivery[] = [];
  const endpoint = await receiverEndpoint(itsOwn, (delivery) => deliveries.push(delivery));

  const schedule = await client.schedules.create({
    cron: "* * * * * *",
    endpoint_ids: [endpoint.id],
    payload: { report: "daily" },
  });
  assert.deepEqual(schedule.endpoint_ids, [endpoint.id]);
  const delivered = await eventually("a scheduled delivery", async () => deliveries[0]);
  assert.deepEqual(delivered.payload, { report: "daily" });
  const paused = await client.schedules.pause(schedule.id, "enough");
  assert.equal(paused.status, "PAUSED");
  const fires = [];
  for await (const fire of client.schedules.fires.iter(schedule.id)) fires.push(fire);
  assert.ok(fires.length >= 1);
  assert.ok(fires.every((fire) => fire.runs.every((run) => run.endpoint_id === endpoint.id)));
});
