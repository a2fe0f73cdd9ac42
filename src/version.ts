/**
 * The Tollgate version of every component (package.json "version") and the commit it was built
 * from: the OpenAPI document, `--version` and the `tollgate_*_build_info` metrics report them.
 * esbuild inlines the JSON and the commit (scripts/build.mjs) in the production bundles.
 */
import pkg from "../package.json" with { type: "json" };

/** Semantic version of this build, e.g. "0.1.0". */
export const VERSION: string = pkg.version;

/**
 * Git commit of this build: set by scripts/build.mjs in the bundles (TOLLGATE_BUILD_COMMIT, or
 * `git rev-parse HEAD` where a checkout is at hand), "unknown" when neither was available.
 */
export const COMMIT: string = process.env.TOLLGATE_BUILD_COMMIT || "unknown";
