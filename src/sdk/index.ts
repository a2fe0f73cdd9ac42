/**
 * The Tollgate TypeScript client library (spec: "Client library operations (module sdk)",
 * "Errors", "Verification helpers"). Talks to the governance service over HTTP only.
 *
 * Entry points: init / createConfig, Chain / withChain, ServiceClient (low level and
 * verification helpers), the errors of ./exceptions, and the adapters in ./mcp, ./langgraph
 * and ./langchain (imported from their own modules so that their frameworks stay optional).
 */
export {
  type AgentAction,
  Chain,
  type ChainOptions,
  type CompleteResult,
  type PolicyConfigInput,
  type RecordOptions,
  withChain,
} from "./chain.js";
export {
  ApprovalStatus,
  type ApprovalStatusResponse,
  type ApprovalView,
  ArtifactType,
  type CallOptions,
  type ChainDetail,
  type ChainEvent,
  type ChainView,
  type CompleteChainRequest,
  type CompleteResponse,
  type CreateChainRequest,
  type EventOutcome,
  type IssuedToken,
  MAX_OUTCOMES_PER_BATCH,
  type OutcomeReport,
  type OutcomeReportResult,
  type PublicVerificationResult,
  type Receipt,
  type RecordActionRequest,
  ServiceClient,
  type ServiceClientOptions,
  type TokenListFilter,
  type TokenRecord,
  type VerificationResult,
} from "./client.js";
export {
  ChainConfig,
  createConfig,
  DEFAULT_BACKEND_URL,
  DEFAULT_FAIL_MODES,
  DEFAULT_POLL_INTERVAL_MS,
  FailMode,
  getConfig,
  type InitOptions,
  type InitPolicySettings,
  init,
  resetConfig,
  type SdkInternals,
} from "./config.js";
export {
  DecisionSource,
  type DecisionWhere,
  fromWire as decisionFromWire,
  Outcome,
  type PolicyDecision,
  type RecordActionResponse,
} from "./decision.js";
export {
  ActionDeniedError,
  type ArgumentIssue,
  BackendUnavailableError,
  ChainAutoPausedError,
  ChainTimeoutError,
  InvalidArgumentError,
  PolicyViolationError,
  RuntimeError,
  ServiceApiError,
  ServiceKillSwitchError,
  ServicePolicyError,
  ServiceTransportError,
  VerificationError,
} from "./exceptions.js";
export { McpAdapter, type McpAdapterOptions, type ToolCallOptions } from "./mcp.js";
export { sanitizeForConfig } from "./sanitize.js";
export { realSleep } from "./sleep.js";
export { type PendingApproval, waitForApproval } from "./wait.js";
