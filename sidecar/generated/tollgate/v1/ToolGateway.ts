// Original file: proto/tollgate/v1/gateway.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CompleteChainRequest as _tollgate_v1_CompleteChainRequest, CompleteChainRequest__Output as _tollgate_v1_CompleteChainRequest__Output } from '../../tollgate/v1/CompleteChainRequest.js';
import type { CompleteChainResponse as _tollgate_v1_CompleteChainResponse, CompleteChainResponse__Output as _tollgate_v1_CompleteChainResponse__Output } from '../../tollgate/v1/CompleteChainResponse.js';
import type { Decision as _tollgate_v1_Decision, Decision__Output as _tollgate_v1_Decision__Output } from '../../tollgate/v1/Decision.js';
import type { GetDecisionRequest as _tollgate_v1_GetDecisionRequest, GetDecisionRequest__Output as _tollgate_v1_GetDecisionRequest__Output } from '../../tollgate/v1/GetDecisionRequest.js';
import type { GetReceiptRequest as _tollgate_v1_GetReceiptRequest, GetReceiptRequest__Output as _tollgate_v1_GetReceiptRequest__Output } from '../../tollgate/v1/GetReceiptRequest.js';
import type { GetReceiptResponse as _tollgate_v1_GetReceiptResponse, GetReceiptResponse__Output as _tollgate_v1_GetReceiptResponse__Output } from '../../tollgate/v1/GetReceiptResponse.js';
import type { InvokeRequest as _tollgate_v1_InvokeRequest, InvokeRequest__Output as _tollgate_v1_InvokeRequest__Output } from '../../tollgate/v1/InvokeRequest.js';
import type { InvokeResponse as _tollgate_v1_InvokeResponse, InvokeResponse__Output as _tollgate_v1_InvokeResponse__Output } from '../../tollgate/v1/InvokeResponse.js';
import type { InvokeUpdate as _tollgate_v1_InvokeUpdate, InvokeUpdate__Output as _tollgate_v1_InvokeUpdate__Output } from '../../tollgate/v1/InvokeUpdate.js';
import type { OpenChainRequest as _tollgate_v1_OpenChainRequest, OpenChainRequest__Output as _tollgate_v1_OpenChainRequest__Output } from '../../tollgate/v1/OpenChainRequest.js';
import type { OpenChainResponse as _tollgate_v1_OpenChainResponse, OpenChainResponse__Output as _tollgate_v1_OpenChainResponse__Output } from '../../tollgate/v1/OpenChainResponse.js';

/**
 * Governed tool invocation through the sidecar.
 */
export interface ToolGatewayClient extends grpc.Client {
  /**
   * Seals the chain (optionally marked with a failure) and issues its receipt.
   */
  CompleteChain(argument: _tollgate_v1_CompleteChainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  CompleteChain(argument: _tollgate_v1_CompleteChainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  CompleteChain(argument: _tollgate_v1_CompleteChainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  CompleteChain(argument: _tollgate_v1_CompleteChainRequest, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Seals the chain (optionally marked with a failure) and issues its receipt.
   */
  completeChain(argument: _tollgate_v1_CompleteChainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  completeChain(argument: _tollgate_v1_CompleteChainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  completeChain(argument: _tollgate_v1_CompleteChainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  completeChain(argument: _tollgate_v1_CompleteChainRequest, callback: grpc.requestCallback<_tollgate_v1_CompleteChainResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current decision of one recorded event (after a human decision: the resolved one).
   */
  GetDecision(argument: _tollgate_v1_GetDecisionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  GetDecision(argument: _tollgate_v1_GetDecisionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  GetDecision(argument: _tollgate_v1_GetDecisionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  GetDecision(argument: _tollgate_v1_GetDecisionRequest, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  /**
   * The current decision of one recorded event (after a human decision: the resolved one).
   */
  getDecision(argument: _tollgate_v1_GetDecisionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  getDecision(argument: _tollgate_v1_GetDecisionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  getDecision(argument: _tollgate_v1_GetDecisionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  getDecision(argument: _tollgate_v1_GetDecisionRequest, callback: grpc.requestCallback<_tollgate_v1_Decision__Output>): grpc.ClientUnaryCall;
  
  /**
   * The signed receipt of a completed chain (NOT_FOUND before completion).
   */
  GetReceipt(argument: _tollgate_v1_GetReceiptRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  GetReceipt(argument: _tollgate_v1_GetReceiptRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  GetReceipt(argument: _tollgate_v1_GetReceiptRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  GetReceipt(argument: _tollgate_v1_GetReceiptRequest, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The signed receipt of a completed chain (NOT_FOUND before completion).
   */
  getReceipt(argument: _tollgate_v1_GetReceiptRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  getReceipt(argument: _tollgate_v1_GetReceiptRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  getReceipt(argument: _tollgate_v1_GetReceiptRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  getReceipt(argument: _tollgate_v1_GetReceiptRequest, callback: grpc.requestCallback<_tollgate_v1_GetReceiptResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Records one action into the chain, waits for approval when required, forwards an allowed
   * call to the upstream and returns the decision with the upstream's result.
   */
  Invoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _tollgate_v1_InvokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _tollgate_v1_InvokeRequest, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Records one action into the chain, waits for approval when required, forwards an allowed
   * call to the upstream and returns the decision with the upstream's result.
   */
  invoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _tollgate_v1_InvokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _tollgate_v1_InvokeRequest, callback: grpc.requestCallback<_tollgate_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Opens a chain at the governance service (spec: entering the chain context).
   */
  OpenChain(argument: _tollgate_v1_OpenChainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  OpenChain(argument: _tollgate_v1_OpenChainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  OpenChain(argument: _tollgate_v1_OpenChainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  OpenChain(argument: _tollgate_v1_OpenChainRequest, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Opens a chain at the governance service (spec: entering the chain context).
   */
  openChain(argument: _tollgate_v1_OpenChainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  openChain(argument: _tollgate_v1_OpenChainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  openChain(argument: _tollgate_v1_OpenChainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  openChain(argument: _tollgate_v1_OpenChainRequest, callback: grpc.requestCallback<_tollgate_v1_OpenChainResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Invoke, reporting the approval as it goes: an ApprovalUpdate when the call starts waiting
   * (status pending, with the review URL), again every 15 s while it waits (a heartbeat that
   * keeps proxies from closing an idle stream), one when it is resolved (approved, denied,
   * timed_out, cancelled), then the InvokeResponse as the last message. A refused call ends
   * the stream with the same status, trailers and details as Invoke. A call that needs no
   * approval sends only the InvokeResponse. Re-attaches like Invoke. Use it without a deadline;
   * the server sends HTTP/2 keepalive pings every 60 s and accepts client pings every 10 s or
   * more (grpc.keepalive_time_ms >= 10000).
   */
  WatchInvoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_tollgate_v1_InvokeUpdate__Output>;
  WatchInvoke(argument: _tollgate_v1_InvokeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_tollgate_v1_InvokeUpdate__Output>;
  /**
   * Invoke, reporting the approval as it goes: an ApprovalUpdate when the call starts waiting
   * (status pending, with the review URL), again every 15 s while it waits (a heartbeat that
   * keeps proxies from closing an idle stream), one when it is resolved (approved, denied,
   * timed_out, cancelled), then the InvokeResponse as the last message. A refused call ends
   * the stream with the same status, trailers and details as Invoke. A call that needs no
   * approval sends only the InvokeResponse. Re-attaches like Invoke. Use it without a deadline;
   * the server sends HTTP/2 keepalive pings every 60 s and accepts client pings every 10 s or
   * more (grpc.keepalive_time_ms >= 10000).
   */
  watchInvoke(argument: _tollgate_v1_InvokeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_tollgate_v1_InvokeUpdate__Output>;
  watchInvoke(argument: _tollgate_v1_InvokeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_tollgate_v1_InvokeUpdate__Output>;
  
}

/**
 * Governed tool invocation through the sidecar.
 */
export interface ToolGatewayHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Seals the chain (optionally marked with a failure) and issues its receipt.
   */
  CompleteChain: grpc.handleUnaryCall<_tollgate_v1_CompleteChainRequest__Output, _tollgate_v1_CompleteChainResponse>;
  
  /**
   * The current decision of one recorded event (after a human decision: the resolved one).
   */
  GetDecision: grpc.handleUnaryCall<_tollgate_v1_GetDecisionRequest__Output, _tollgate_v1_Decision>;
  
  /**
   * The signed receipt of a completed chain (NOT_FOUND before completion).
   */
  GetReceipt: grpc.handleUnaryCall<_tollgate_v1_GetReceiptRequest__Output, _tollgate_v1_GetReceiptResponse>;
  
  /**
   * Records one action into the chain, waits for approval when required, forwards an allowed
   * call to the upstream and returns the decision with the upstream's result.
   */
  Invoke: grpc.handleUnaryCall<_tollgate_v1_InvokeRequest__Output, _tollgate_v1_InvokeResponse>;
  
  /**
   * Opens a chain at the governance service (spec: entering the chain context).
   */
  OpenChain: grpc.handleUnaryCall<_tollgate_v1_OpenChainRequest__Output, _tollgate_v1_OpenChainResponse>;
  
  /**
   * Invoke, reporting the approval as it goes: an ApprovalUpdate when the call starts waiting
   * (status pending, with the review URL), again every 15 s while it waits (a heartbeat that
   * keeps proxies from closing an idle stream), one when it is resolved (approved, denied,
   * timed_out, cancelled), then the InvokeResponse as the last message. A refused call ends
   * the stream with the same status, trailers and details as Invoke. A call that needs no
   * approval sends only the InvokeResponse. Re-attaches like Invoke. Use it without a deadline;
   * the server sends HTTP/2 keepalive pings every 60 s and accepts client pings every 10 s or
   * more (grpc.keepalive_time_ms >= 10000).
   */
  WatchInvoke: grpc.handleServerStreamingCall<_tollgate_v1_InvokeRequest__Output, _tollgate_v1_InvokeUpdate>;
  
}

export interface ToolGatewayDefinition extends grpc.ServiceDefinition {
  CompleteChain: MethodDefinition<_tollgate_v1_CompleteChainRequest, _tollgate_v1_CompleteChainResponse, _tollgate_v1_CompleteChainRequest__Output, _tollgate_v1_CompleteChainResponse__Output>
  GetDecision: MethodDefinition<_tollgate_v1_GetDecisionRequest, _tollgate_v1_Decision, _tollgate_v1_GetDecisionRequest__Output, _tollgate_v1_Decision__Output>
  GetReceipt: MethodDefinition<_tollgate_v1_GetReceiptRequest, _tollgate_v1_GetReceiptResponse, _tollgate_v1_GetReceiptRequest__Output, _tollgate_v1_GetReceiptResponse__Output>
  Invoke: MethodDefinition<_tollgate_v1_InvokeRequest, _tollgate_v1_InvokeResponse, _tollgate_v1_InvokeRequest__Output, _tollgate_v1_InvokeResponse__Output>
  OpenChain: MethodDefinition<_tollgate_v1_OpenChainRequest, _tollgate_v1_OpenChainResponse, _tollgate_v1_OpenChainRequest__Output, _tollgate_v1_OpenChainResponse__Output>
  WatchInvoke: MethodDefinition<_tollgate_v1_InvokeRequest, _tollgate_v1_InvokeUpdate, _tollgate_v1_InvokeRequest__Output, _tollgate_v1_InvokeUpdate__Output>
}
