/**
 * A webhook receiver that accepts only what EdgeCron signed: it verifies every delivery's Standard
 * Webhooks signature (webhook-id, webhook-timestamp, webhook-signature) with the `standardwebhooks`
 * package, answers 204 to a verified delivery and 400 to anything else.
 *
 *   EDGECRON_WEBHOOK_SECRET=whsec_... node dist/examples/receiver.js 8080
 *
 * The secret is the Endpoint's, shown once by `endpoints.create` or `endpoints.rotateSecret` (after a
 * rotation EdgeCron signs with both secrets for 24 h, so a receiver holding either one keeps verifying).
 * webhook-id is the same on every retry of one run: a receiver that has seen it can skip the work.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { pathToFileURL } from "node:url";

import { Webhook } from "standardwebhooks";

export interface Delivery {
  /** webhook-id: stable across the retries of one run. */
  id: string;
  /** The request's headers, lower-case names (edgecron-schedule-id, edgecron-attempt, …). */
  headers: Record<string, string>;
  /** The verified body, parsed as JSON. */
  payload: unknown;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

/** An HTTP server (not yet listening) that calls `onDelivery` for each verified delivery. */
export function createReceiver(secret: string, onDelivery: (delivery: Delivery) => void): Server {
  const webhook = new Webhook(secret);
  return createServer((request, response) => {
    readBody(request).then(
      (body) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
        }
        let payload: unknown;
        try {
          payload = webhook.verify(body.toString("utf8"), headers); // throws unless signed with `secret`
        } catch {
          response.writeHead(400, { "content-type": "text/plain" }).end("signature not verified\n");
          return;
        }
        onDelivery({ id: headers["webhook-id"] ?? "", headers, payload });
        response.writeHead(204).end();
      },
      () => response.writeHead(400).end(),
    );
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.EDGECRON_WEBHOOK_SECRET;
  if (!secret) {
    console.error("set EDGECRON_WEBHOOK_SECRET to the Endpoint's signing secret (whsec_…)");
    process.exit(2);
  }
  const port = Number(process.argv[2] ?? 8080);
  createReceiver(secret, (delivery) => {
    console.log(`${new Date().toISOString()} ${delivery.id} ${JSON.stringify(delivery.payload)}`);
  }).listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}/`));
}
