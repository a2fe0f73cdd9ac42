/**
 * Which kind cluster bench/cluster uses, settled before test/cluster/support.ts reads it (that
 * module fixes its kubeconfig and context when it is first imported, so this module is imported
 * first):
 *   TOLLGATE_BENCH_CLUSTER=<name>  reuse that running cluster (made by the `cluster` test project
 *                                  or scripts/kind-up.sh, with the project's images loaded under
 *                                  TOLLGATE_TEST_IMAGE_TAG); it is left running, and only what
 *                                  the benchmark added is removed afterwards;
 *   unset                          a cluster of its own, `tollgate-bench`, created the way the
 *                                  `cluster` test project creates its own (scripts/kind-up.sh,
 *                                  cached node image and images) and deleted afterwards.
 */
export const REUSE = Boolean(process.env.TOLLGATE_BENCH_CLUSTER);
process.env.TOLLGATE_TEST_CLUSTER = process.env.TOLLGATE_BENCH_CLUSTER || "tollgate-bench";
