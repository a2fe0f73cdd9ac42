/**
 * The Tollgate version of every component (package.json "version"): the OpenAPI document, and
 * what `--version` and the `*_build_info` metrics report. esbuild inlines the JSON in the
 * production bundles.
 */
import pkg from "../package.json" with { type: "json" };

/** Semantic version of this build, e.g. "0.1.0". */
export const VERSION: string = pkg.version;
