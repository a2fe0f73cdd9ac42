import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue.js';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct.js';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value.js';
import type { ApprovalUpdate as _tollgate_v1_ApprovalUpdate, ApprovalUpdate__Output as _tollgate_v1_ApprovalUpdate__Output } from './tollgate/v1/ApprovalUpdate.js';
import type { ChainFailure as _tollgate_v1_ChainFailure, ChainFailure__Output as _tollgate_v1_ChainFailure__Output } from './tollgate/v1/ChainFailure.js';
import type { CompleteChainRequest as _tollgate_v1_CompleteChainRequest, CompleteChainRequest__Output as _tollgate_v1_CompleteChainRequest__Output } from './tollgate/v1/CompleteChainRequest.js';
import type { CompleteChainResponse as _tollgate_v1_CompleteChainResponse, CompleteChainResponse__Output as _tollgate_v1_CompleteChainResponse__Output } from './tollgate/v1/CompleteChainResponse.js';
import type { Decision as _tollgate_v1_Decision, Decision__Output as _tollgate_v1_Decision__Output } from './tollgate/v1/Decision.js';
import type { GetDecisionRequest as _tollgate_v1_GetDecisionRequest, GetDecisionRequest__Output as _tollgate_v1_GetDecisionRequest__Output } from './tollgate/v1/GetDecisionRequest.js';
import type { GetReceiptRequest as _tollgate_v1_GetReceiptRequest, GetReceiptRequest__Output as _tollgate_v1_GetReceiptRequest__Output } from './tollgate/v1/GetReceiptRequest.js';
import type { GetReceiptResponse as _tollgate_v1_GetReceiptResponse, GetReceiptResponse__Output as _tollgate_v1_GetReceiptResponse__Output } from './tollgate/v1/GetReceiptResponse.js';
import type { InvokeRequest as _tollgate_v1_InvokeRequest, InvokeRequest__Output as _tollgate_v1_InvokeRequest__Output } from './tollgate/v1/InvokeRequest.js';
import type { InvokeResponse as _tollgate_v1_InvokeResponse, InvokeResponse__Output as _tollgate_v1_InvokeResponse__Output } from './tollgate/v1/InvokeResponse.js';
import type { InvokeUpdate as _tollgate_v1_InvokeUpdate, InvokeUpdate__Output as _tollgate_v1_InvokeUpdate__Output } from './tollgate/v1/InvokeUpdate.js';
import type { OpenChainRequest as _tollgate_v1_OpenChainRequest, OpenChainRequest__Output as _tollgate_v1_OpenChainRequest__Output } from './tollgate/v1/OpenChainRequest.js';
import type { OpenChainResponse as _tollgate_v1_OpenChainResponse, OpenChainResponse__Output as _tollgate_v1_OpenChainResponse__Output } from './tollgate/v1/OpenChainResponse.js';
import type { ToolGatewayClient as _tollgate_v1_ToolGatewayClient, ToolGatewayDefinition as _tollgate_v1_ToolGatewayDefinition } from './tollgate/v1/ToolGateway.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  google: {
    protobuf: {
      ListValue: MessageTypeDefinition<_google_protobuf_ListValue, _google_protobuf_ListValue__Output>
      NullValue: EnumTypeDefinition
      Struct: MessageTypeDefinition<_google_protobuf_Struct, _google_protobuf_Struct__Output>
      Value: MessageTypeDefinition<_google_protobuf_Value, _google_protobuf_Value__Output>
    }
  }
  tollgate: {
    v1: {
      ApprovalUpdate: MessageTypeDefinition<_tollgate_v1_ApprovalUpdate, _tollgate_v1_ApprovalUpdate__Output>
      ChainFailure: MessageTypeDefinition<_tollgate_v1_ChainFailure, _tollgate_v1_ChainFailure__Output>
      CompleteChainRequest: MessageTypeDefinition<_tollgate_v1_CompleteChainRequest, _tollgate_v1_CompleteChainRequest__Output>
      CompleteChainResponse: MessageTypeDefinition<_tollgate_v1_CompleteChainResponse, _tollgate_v1_CompleteChainResponse__Output>
      Decision: MessageTypeDefinition<_tollgate_v1_Decision, _tollgate_v1_Decision__Output>
      GetDecisionRequest: MessageTypeDefinition<_tollgate_v1_GetDecisionRequest, _tollgate_v1_GetDecisionRequest__Output>
      GetReceiptRequest: MessageTypeDefinition<_tollgate_v1_GetReceiptRequest, _tollgate_v1_GetReceiptRequest__Output>
      GetReceiptResponse: MessageTypeDefinition<_tollgate_v1_GetReceiptResponse, _tollgate_v1_GetReceiptResponse__Output>
      InvokeRequest: MessageTypeDefinition<_tollgate_v1_InvokeRequest, _tollgate_v1_InvokeRequest__Output>
      InvokeResponse: MessageTypeDefinition<_tollgate_v1_InvokeResponse, _tollgate_v1_InvokeResponse__Output>
      InvokeUpdate: MessageTypeDefinition<_tollgate_v1_InvokeUpdate, _tollgate_v1_InvokeUpdate__Output>
      OpenChainRequest: MessageTypeDefinition<_tollgate_v1_OpenChainRequest, _tollgate_v1_OpenChainRequest__Output>
      OpenChainResponse: MessageTypeDefinition<_tollgate_v1_OpenChainResponse, _tollgate_v1_OpenChainResponse__Output>
      /**
       * Governed tool invocation through the sidecar.
       */
      ToolGateway: SubtypeConstructor<typeof grpc.Client, _tollgate_v1_ToolGatewayClient> & { service: _tollgate_v1_ToolGatewayDefinition }
    }
  }
}

