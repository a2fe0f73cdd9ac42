#!/usr/bin/env node
// The `tollgate` command (package.json "bin"): runs src/cli/main.ts through tsx.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
