// Original file: proto/tollgate/v1/gateway.proto

import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct.js';

export interface OpenChainRequest {
  /**
   * Human-readable label; convention lowercase hyphen-separated. Required, at most 200 chars.
   */
  'name'?: (string);
  /**
   * Arbitrary JSON, set once, visible in the receipt.
   */
  'metadata'?: (_google_protobuf_Struct | null);
}

export interface OpenChainRequest__Output {
  /**
   * Human-readable label; convention lowercase hyphen-separated. Required, at most 200 chars.
   */
  'name': (string);
  /**
   * Arbitrary JSON, set once, visible in the receipt.
   */
  'metadata': (_google_protobuf_Struct__Output | null);
}
