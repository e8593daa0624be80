// The subset of onnx.proto (ONNX IR) that the graph builder writes, as a protobufjs JSON
// descriptor. Field numbers follow the official onnx.proto so any ONNX runtime can read the result.
import protobuf from 'protobufjs';

const descriptor = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            s: { type: 'bytes', id: 4 },
            t: { type: 'TensorProto', id: 5 },
            floats: { rule: 'repeated', type: 'float', id: 7 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
            type: { type: 'int32', id: 20 },
          },
        },
        ValueInfoProto: {
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'TypeProto', id: 2 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            domain: { type: 'string', id: 7 },
          },
        },
        StringStringEntryProto: {
          fields: {
            key: { type: 'string', id: 1 },
            value: { type: 'string', id: 2 },
          },
        },
        ModelProto: {
          fields: {
            irVersion: { type: 'int64', id: 1 },
            producerName: { type: 'string', id: 2 },
            producerVersion: { type: 'string', id: 3 },
            docString: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 14 },
          },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            dataType: { type: 'int32', id: 2 },
            name: { type: 'string', id: 8 },
            rawData: { type: 'bytes', id: 9 },
            externalData: { rule: 'repeated', type: 'StringStringEntryProto', id: 13 },
            dataLocation: { type: 'int32', id: 14 },
          },
        },
        TensorShapeProto: {
          fields: {
            dim: { rule: 'repeated', type: 'Dimension', id: 1 },
          },
          nested: {
            Dimension: {
              oneofs: { value: { oneof: ['dimValue', 'dimParam'] } },
              fields: {
                dimValue: { type: 'int64', id: 1 },
                dimParam: { type: 'string', id: 2 },
              },
            },
          },
        },
        TypeProto: {
          fields: {
            tensorType: { type: 'Tensor', id: 1 },
          },
          nested: {
            Tensor: {
              fields: {
                elemType: { type: 'int32', id: 1 },
                shape: { type: 'TensorShapeProto', id: 2 },
              },
            },
          },
        },
        OperatorSetIdProto: {
          fields: {
            domain: { type: 'string', id: 1 },
            version: { type: 'int64', id: 2 },
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(descriptor);
export const ModelProtoType = root.lookupType('onnx.ModelProto');

/** ONNX TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, UINT8: 2, INT32: 6, INT64: 7, FLOAT16: 10, BFLOAT16: 16 } as const;
/** ONNX AttributeProto.AttributeType values used here. */
export const AttributeType = { FLOAT: 1, INT: 2, TENSOR: 4, INTS: 7 } as const;

export interface TensorProtoJs {
  name: string;
  dims: number[];
  dataType: number;
  rawData?: Uint8Array;
  externalData?: { key: string; value: string }[];
  dataLocation?: number;
}
export interface AttributeProtoJs {
  name: string;
  type: number;
  f?: number;
  i?: number;
  ints?: number[];
  t?: TensorProtoJs;
}
export interface NodeProtoJs {
  name: string;
  opType: string;
  input: string[];
  output: string[];
  attribute: AttributeProtoJs[];
  /** Operator set domain; absent = the default ONNX domain. */
  domain?: string;
}
export interface ValueInfoProtoJs {
  name: string;
  type: { tensorType: { elemType: number; shape: { dim: ({ dimValue: number } | { dimParam: string })[] } } };
}
export interface ModelProtoJs {
  irVersion: number;
  producerName: string;
  producerVersion: string;
  opsetImport: { domain: string; version: number }[];
  metadataProps: { key: string; value: string }[];
  graph: {
    name: string;
    node: NodeProtoJs[];
    initializer: TensorProtoJs[];
    input: ValueInfoProtoJs[];
    output: ValueInfoProtoJs[];
  };
}

export function encodeModel(model: ModelProtoJs): Uint8Array {
  return ModelProtoType.encode(ModelProtoType.fromObject(model)).finish();
}
