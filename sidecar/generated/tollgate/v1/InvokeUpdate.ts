// Original file: proto/tollgate/v1/gateway.proto

import type { ApprovalUpdate as _tollgate_v1_ApprovalUpdate, ApprovalUpdate__Output as _tollgate_v1_ApprovalUpdate__Output } from '../../tollgate/v1/ApprovalUpdate.js';
import type { InvokeResponse as _tollgate_v1_InvokeResponse, InvokeResponse__Output as _tollgate_v1_InvokeResponse__Output } from '../../tollgate/v1/InvokeResponse.js';

/**
 * One message of WatchInvoke: approval updates, then the result.
 */
export interface InvokeUpdate {
  'approval'?: (_tollgate_v1_ApprovalUpdate | null);
  'result'?: (_tollgate_v1_InvokeResponse | null);
  'update'?: "approval"|"result";
}

/**
 * One message of WatchInvoke: approval updates, then the result.
 */
export interface InvokeUpdate__Output {
  'approval'?: (_tollgate_v1_ApprovalUpdate__Output | null);
  'result'?: (_tollgate_v1_InvokeResponse__Output | null);
  'update'?: "approval"|"result";
}
