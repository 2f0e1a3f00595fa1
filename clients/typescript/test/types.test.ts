/** The SDK's types are generated from the OpenAPI document the API serves: the committed openapi.json
 * is what GET /openapi.json answers, and src/schema.ts is what openapi-typescript makes of it. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const PACKAGE = new URL("../../", import.meta.url);
const URL_ = process.env.EDGECRON_URL;

test("the committed openapi.json is the document the API serves", { skip: !URL_ && "needs EDGECRON_URL" }, async () => {
  const served: unknown = await (await fetch(`${URL_}/openapi.json`)).json();
  const committed: unknown = JSON.parse(readFileSync(new URL("openapi.json", PACKAGE), "utf8"));
  assert.deepEqual(committed, served, "run: make sdk-types");
});

test("src/schema.ts is what openapi-typescript generates from openapi.json", () => {
  const check = spawnSync("npm", ["run", "--silent", "check-types"], { cwd: PACKAGE, encoding: "utf8" });
  assert.equal(check.status, 0, `run: make sdk-types\n${check.stdout}${check.stderr}`);
});
