/**
 * `npm run docs`: generates the Reference pages of the documentation site from the sources, then
 * builds the site with `mkdocs build --strict` (MkDocs Material; a broken internal link, a missing
 * page or a broken anchor fails the build).
 *
 *   tsx scripts/docs.ts [--site-dir DIR] [--generate-only]
 *
 * Generated (never hand-edited; .gitignore'd), under docs/reference/:
 *   http-api.md, openapi.json  the service's GET /openapi.json (app built without a database)
 *   grpc.md                    proto/tollgate/v1/gateway.proto (protobufjs)
 *   crds.md                    crds/*.yaml
 *   chart-values.md            charts/tollgate/values.schema.json + values.yaml
 *   alerts.md                  charts/tollgate/files/alerts.yaml (the alerting rules)
 *   configuration.md           the zod schemas of the service, the sidecar and the operator
 *   errors.md                  src/contract/v1/errors.ts and sidecar/wire/errors.ts
 *   typescript-sdk/            TypeDoc + typedoc-plugin-markdown over src/sdk's package entries
 *   python-sdk/                pdoc (HTML) over python/src/sdk
 * The Python tools (mkdocs, pdoc) come from the virtualenv of scripts/docs-env.sh.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { alertsMarkdown } from "./docs/alerts.js";
import { chartMarkdown } from "./docs/chart.js";
import { configMarkdown } from "./docs/config.js";
import { crdsMarkdown } from "./docs/crds.js";
import { errorsMarkdown } from "./docs/errors.js";
import { loadOpenApi, openApiMarkdown } from "./docs/openapi.js";
import { protoMarkdown } from "./docs/proto.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const reference = path.join(root, "docs/reference");

/** The generated files and folders (relative to docs/reference), also listed in .gitignore. */
export const GENERATED = [
  "http-api.md",
  "openapi.json",
  "grpc.md",
  "crds.md",
  "chart-values.md",
  "alerts.md",
  "configuration.md",
  "errors.md",
  "typescript-sdk",
  "python-sdk",
];

/** The Python modules pdoc documents (`sdk` itself lists only its `__all__`; sdk.exceptions comes with it). */
const PYTHON_MODULES = ["sdk", "sdk.chain", "sdk.client", "sdk.config", "sdk.models", "sdk.policy"];

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; capture?: boolean } = {}): string {
  const r = spawnSync(cmd, args, {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", opts.capture ? "pipe" : "inherit", "inherit"],
    env: { ...process.env, ...opts.env },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${r.status ?? r.signal}`);
  return r.stdout ?? "";
}

/** The bin/ folder of the docs virtualenv (created on first use, then cached). */
export function docsVenvBin(): string {
  const bin = run("bash", ["scripts/docs-env.sh"], { capture: true }).trim().split("\n").pop();
  if (!bin) throw new Error("scripts/docs-env.sh printed no path");
  return bin;
}

const timed = async (what: string, f: () => unknown) => {
  const start = Date.now();
  await f();
  console.log(`docs: ${what} (${((Date.now() - start) / 1000).toFixed(1)} s)`);
};

export async function generate(bin: string): Promise<void> {
  for (const g of GENERATED) rmSync(path.join(reference, g), { recursive: true, force: true });
  mkdirSync(reference, { recursive: true });
  const write = (name: string, text: string) => writeFileSync(path.join(reference, name), text);
  await timed("HTTP API from /openapi.json", async () => {
    const doc = await loadOpenApi();
    write("openapi.json", `${JSON.stringify(doc, null, 2)}\n`);
    write("http-api.md", openApiMarkdown(doc));
  });
  await timed("gRPC contract from proto/", () => write("grpc.md", protoMarkdown(path.join(root, "proto"))));
  await timed("CRDs from crds/", () => write("crds.md", crdsMarkdown(path.join(root, "crds"))));
  await timed("chart values", () =>
    write("chart-values.md", chartMarkdown(path.join(root, "charts/tollgate"))),
  );
  await timed("alerts from the chart's rule file", () => write("alerts.md", alertsMarkdown(root)));
  await timed("configuration from the zod schemas", () => write("configuration.md", configMarkdown(root)));
  await timed("error codes", () => write("errors.md", errorsMarkdown(root)));
  await timed("TypeScript SDK (TypeDoc)", () =>
    run(process.execPath, [
      path.join(root, "node_modules/typedoc/bin/typedoc"),
      "--options",
      "docs/typedoc.json",
      "--logLevel",
      "Error",
    ]),
  );
  await timed("Python library (pdoc)", () =>
    run(
      path.join(bin, "pdoc"),
      [
        "--output-directory",
        path.join(reference, "python-sdk"),
        "--no-show-source",
        // The package and its modules that import no framework (the adapters import theirs).
        ...PYTHON_MODULES,
      ],
      { env: { PYTHONPATH: path.join(root, "python/src") } },
    ),
  );
}

export function build(bin: string, siteDir: string): void {
  run(
    path.join(bin, "mkdocs"),
    ["build", "--strict", "--clean", "--config-file", "mkdocs.yml", "--site-dir", siteDir],
    {
      env: { NO_MKDOCS_2_WARNING: "1" },
    },
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--site-dir");
  const siteDir = path.resolve(at >= 0 && args[at + 1] ? args[at + 1]! : path.join(root, "site"));
  const start = Date.now();
  const bin = docsVenvBin();
  await generate(bin);
  if (!args.includes("--generate-only"))
    await timed(`mkdocs build --strict → ${siteDir}`, () => build(bin, siteDir));
  console.log(`docs: done in ${((Date.now() - start) / 1000).toFixed(1)} s`);
}
