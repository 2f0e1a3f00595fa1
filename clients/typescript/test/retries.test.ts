/** The wrapper against a scripted HTTP server on 127.0.0.1: retries on 429/5xx with the same
 * Idempotency-Key, Retry-After honoured, POSTs without a key not retried on 5xx, errors as ApiError.
 * Waits go through an injected `sleep` that records them, so no test waits for real time. */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { ApiError, EdgeCron, parseRetryAfter, TransportError } from "../src/index.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

let server: Server;
let baseUrl: string;
let replies: Reply[] = [];
let seen: Seen[] = [];

before(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const reply = replies.shift() ?? { status: 500, body: { error: { code: "UNSCRIPTED", message: "no reply" } } };
      response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      response.end(reply.body === undefined ? "" : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function client(waits: number[]): EdgeCron {
  seen = [];
  return new EdgeCron({
    baseUrl,
    apiKey: "ek_test",
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
}

const unavailable: Reply = { status: 503, body: { error: { code: "UNAVAILABLE", message: "try again" } } };

test("a create answered 503 is retried with the same Idempotency-Key and returns the created run", async () => {
  const waits: number[] = [];
  const edgecron = client(waits);
  replies = [unavailable, unavailable, { status: 201, body: { id: "run_1", status: "pending" } }];
  const run = await edgecron.taskRuns.create({ endpoint_id: "ep_1", payload: { n: 1 } });
  assert.equal(run.id, "run_1");
  assert.equal(seen.length, 3);
  const keys = new Set(seen.map((s) => s.headers["idempotency-key"]));
  assert.equal(keys.size, 1);
  assert.match(String([...keys][0]), /^[0-9a-f-]{36}$/);
  assert.equal(seen[0]?.headers.authorization, "Bearer ek_test");
  assert.deepEqual(JSON.parse(seen[0]?.body ?? ""), { endpoint_id: "ep_1", payload: { n: 1 } });
  assert.equal(waits.length, 2);
  assert.ok(waits.every((ms) => ms > 0 && ms <= 10_000));
});

test("the caller's idempotency key is sent as given", async () => {
  const edgecron = client([]);
  replies = [{ status: 202, body: { id: "evt_1", name: "order.created" } }];
  await edgecron.events.publish("order.created", { order: 42 }, { idempotencyKey: "order-42" });
  assert.equal(seen[0]?.headers["idempotency-key"], "order-42");
});

test("a 429 with Retry-After is waited for as asked, then retried", async () => {
  const waits: number[] = [];
  const edgecron = client(waits);
  replies = [
    { status: 429, body: { error: { code: "RATE_LIMITED", message: "slow down" } }, headers: { "retry-after": "2" } },
    { status: 200, body: { data: [], next_cursor: null } },
  ];
  const page = await edgecron.endpoints.list();
  assert.deepEqual(page.data, []);
  assert.deepEqual(waits, [2000]);
});

test("a POST without an idempotency key is not retried on 5xx, and the error is an ApiError", async () => {
  const edgecron = client([]);
  replies = [{ status: 500, body: { error: { code: "INTERNAL", message: "boom", field: null } } }];
  await assert.rejects(edgecron.schedules.pause("sch_1"), (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 500);
    assert.equal(error.code, "INTERNAL");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("a 400 is not retried and names the field", async () => {
  const edgecron = client([]);
  replies = [{ status: 400, body: { error: { code: "PARAM_INVALID", message: "bad url", field: "url" } } }];
  await assert.rejects(edgecron.endpoints.create({ url: "nope" }), (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.field, "url");
    assert.equal(error.message, "PARAM_INVALID: bad url (field: url)");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("retries stop when the API keeps failing, after the configured attempts", async () => {
  const waits: number[] = [];
  const edgecron = client(waits);
  replies = [unavailable, unavailable, unavailable, unavailable, unavailable];
  await assert.rejects(edgecron.taskRuns.get("run_1"), ApiError);
  assert.equal(seen.length, 4);
  assert.equal(waits.length, 3);
});

test("iter follows next_cursor across pages and stops on the last", async () => {
  const edgecron = client([]);
  replies = [
    { status: 200, body: { data: [{ id: "a" }, { id: "b" }], next_cursor: "c1" } },
    { status: 200, body: { data: [{ id: "c" }], next_cursor: null } },
  ];
  const ids: string[] = [];
  for await (const run of edgecron.taskRuns.iter({ status: "failed", limit: 2 })) ids.push(run.id);
  assert.deepEqual(ids, ["a", "b", "c"]);
  assert.equal(seen[0]?.url, "/v1/task-runs?status=failed&limit=2");
  assert.equal(seen[1]?.url, "/v1/task-runs?status=failed&limit=2&cursor=c1");
});

test("a refused connection is a TransportError that says so", async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const edgecron = new EdgeCron({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "ek_test" });
  await assert.rejects(edgecron.endpoints.list(), (error: unknown) => {
    assert.ok(error instanceof TransportError);
    assert.equal(error.message, `cannot reach http://127.0.0.1:${port}: connection refused`);
    return true;
  });
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  assert.equal(parseRetryAfter("3"), 3000);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2099 00:00:10 GMT", Date.parse("Thu, 01 Jan 2099 00:00:00 GMT")), 10_000);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});
