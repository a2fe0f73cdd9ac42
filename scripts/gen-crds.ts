/**
 * Writes crds/*.yaml — and the Helm chart's copies in charts/tollgate/files/crds/ (a chart
 * cannot read files outside its folder) — from the zod schemas in operator/crds/schema.ts
 * (npm run gen:crds).
 * `--check` writes nothing and exits 1 when a file differs (CI drift check; the unit test
 * test/unit/operator/crds.test.ts does the same).
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { renderCrds } from "../operator/crds/generate.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
let drift = 0;
for (const { file, yaml } of renderCrds()) {
  for (const dir of ["crds", "charts/tollgate/files/crds"]) {
    const target = path.join(root, dir, file);
    const current = await readFile(target, "utf8").catch(() => null);
    if (current === yaml) continue;
    if (check) {
      console.error(`${dir}/${file} is out of date: run npm run gen:crds`);
      drift++;
    } else {
      await writeFile(target, yaml);
      console.log(`wrote ${dir}/${file}`);
    }
  }
}
if (drift) process.exit(1);
