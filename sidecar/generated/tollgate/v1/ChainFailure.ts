// Original file: proto/tollgate/v1/gateway.proto


export interface ChainFailure {
  /**
   * What ended the chain, e.g. an error class name. Required.
   */
  'mode'?: (string);
  'message'?: (string);
}

export interface ChainFailure__Output {
  /**
   * What ended the chain, e.g. an error class name. Required.
   */
  'mode': (string);
  'message': (string);
}
