/**
 * The Tollgate TypeScript client library (spec: "Client library operations (module sdk)",
 * "Errors", "Verification helpers"). Talks to the governance service over HTTP only.
 *
 * Entry points: init / createConfig, Chain / withChain, ServiceClient (low level and
 * verification helpers), the errors of ./exceptions, and the adapters in ./mcp, ./langgraph
 * and ./langchain (imported from their own modules so that their frameworks stay optional).
 */

// The wire shapes the client reads and sends are the contract's (src/contract/v1).
export type { ApprovalStatusResponse, ApprovalView } from "../contract/v1/approvals.js";
export type {
  ChainDetail,
  ChainEvent,
  ChainView,
  CompleteChainRequest,
  CompleteResponse,
  CreateChainRequest,
  OutcomeReport,
  OutcomeReportResult,
  RecordActionRequest,
} from "../contract/v1/chains.js";
export {
  type ApprovalVerification,
  ArtifactType,
  type IssuedToken,
  type LegacyReceiptVerification,
  type PublicVerificationResult,
  type ReceiptVerification,
  type RevokedToken,
  type TokenList,
  type TokenRecord,
  TokenStatus,
} from "../contract/v1/verification.js";
export {
  ApprovalStatus,
  type EventOutcome,
  EventOutcomeSchema,
  MAX_OUTCOMES_PER_BATCH,
} from "../contract/v1/wire.js";
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
  type CallOptions,
  type Receipt,
  ServiceClient,
  type ServiceClientOptions,
  type TokenListFilter,
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
  type SdkInternals,
} from "./config.js";
export {
  DecisionSource,
  type DecisionWhere,
  Outcome,
  type PolicyDecision,
  PolicyDecisionSchema,
  type RecordActionResponse,
  recordedDecision,
  /** @deprecated the same function as recordedDecision (no conversion any more). */
  recordedDecision as decisionFromWire,
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
