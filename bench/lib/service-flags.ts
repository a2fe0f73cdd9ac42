/**
 * The V8 flags the chart gives the governance service (charts/tollgate/values.yaml
 * `service.nodeOptions`, its NODE_OPTIONS), read from the chart so that benchmarks run the
 * service as it is deployed.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { repoRoot } from "./parts.js";

/** `service.nodeOptions` of the chart's values ("" when unset). */
export const SERVICE_NODE_OPTIONS: string =
  (parse(readFileSync(path.join(repoRoot, "charts/tollgate/values.yaml"), "utf8"))?.service?.nodeOptions as
    | string
    | undefined) ?? "";
