// Original file: proto/tollgate/v1/gateway.proto

import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct.js';

export interface GetReceiptResponse {
  /**
   * The signed receipt as the service returns it (spec: Receipt), snake_case keys.
   */
  'receipt'?: (_google_protobuf_Struct | null);
}

export interface GetReceiptResponse__Output {
  /**
   * The signed receipt as the service returns it (spec: Receipt), snake_case keys.
   */
  'receipt': (_google_protobuf_Struct__Output | null);
}
