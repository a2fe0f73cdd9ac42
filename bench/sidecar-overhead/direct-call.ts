/**
 * The direct call to the tool: bench/sidecar-overhead's baseline, and each hop of its Node.js
 * minimal relay. A module of its own so that minimal.ts loads node:http and nothing else of the
 * benchmark's (its memory is compared with the Go relay's).
 */
import http from "node:http";

/**
 * One direct call: the same request the sidecar's http upstream makes (a JSON POST); resolves
 * with the response text.
 * @throws Error when the answer is not 200 or not JSON, or on a network error.
 */
export function directCall(url: URL, agent: http.Agent, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          accept: "application/json",
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`upstream answered ${res.statusCode}`));
          const text = Buffer.concat(chunks).toString("utf8");
          JSON.parse(text);
          resolve(text);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
