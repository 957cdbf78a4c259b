"""Just enough of the ONNX file format to fold MiniLM's int8 weights into float32 ahead of time.

The shipped model stores each weight as int8 with a float scale, and dequantizes it in the graph
(``Cast`` to float, then ``Mul`` by the scale) in front of each ``MatMul`` and the word-embedding
``Gather``. ``fold_dequantized`` finds those pairs, computes each float weight once with numpy, and
gives a graph in which the weight is a plain float initializer kept outside the file (ONNX's
external data), at an offset onnxruntime can map rather than copy.

An ONNX file is a protocol buffer. The ``onnx`` package is not a runtime dependency (it is larger
than the model), so this reads and writes the wire format itself: only the fields it changes
are decoded (the graph's nodes and initializers); every other field is kept as the bytes it was.
A model it does not understand raises ``EmbedderError``; the caller then runs the original file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.errors import EmbedderError

# ModelProto.graph; GraphProto.node and .initializer; NodeProto.input/.output/.op_type/.attribute;
# AttributeProto.name/.i; TensorProto fields; TensorProto.DataType; DataLocation.EXTERNAL.
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER = 1, 5
NODE_INPUT, NODE_OUTPUT, NODE_OP_TYPE, NODE_ATTRIBUTE = 1, 2, 4, 5
ATTRIBUTE_NAME, ATTRIBUTE_INT = 1, 3
TENSOR_DIMS, TENSOR_DATA_TYPE, TENSOR_FLOAT_DATA, TENSOR_NAME, TENSOR_RAW_DATA = 1, 2, 4, 8, 9
TENSOR_EXTERNAL_DATA, TENSOR_DATA_LOCATION = 13, 14
FLOAT, INT8 = 1, 3
EXTERNAL = 1

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5

#: onnxruntime maps an external weight in place when its offset is a multiple of the page size and
#: of its own allocation granularity; 64 KiB is both on every platform it supports.
ALIGNMENT = 1 << 16


@dataclass(frozen=True)
class Field:
    number: int
    kind: int
    value: int | memoryview  # a varint's value; else the payload (a view of the message, not a copy)


def _varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise EmbedderError("the model file is not a well-formed ONNX protocol buffer")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data: bytes | memoryview) -> Iterator[Field]:
    """The fields of one message, in the order written."""
    data = memoryview(data)
    at = 0
    sizes = {FIXED64: 8, FIXED32: 4}
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == VARINT:
            value, at = _varint(data, at)
            yield Field(number, kind, value)
        elif kind in (LENGTH, FIXED64, FIXED32):
            size = sizes.get(kind)
            if size is None:
                size, at = _varint(data, at)
            if at + size > len(data):
                raise EmbedderError("the model file is not a well-formed ONNX protocol buffer")
            yield Field(number, kind, data[at : at + size])
            at += size
        else:
            raise EmbedderError(f"the model file uses protocol buffer wire type {kind}, which this reader does not")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode(items: list[Field]) -> bytes:
    out = bytearray()
    for item in items:
        out += _encode_varint(item.number << 3 | item.kind)
        if item.kind == VARINT:
            assert isinstance(item.value, int)
            out += _encode_varint(item.value)
        else:
            assert isinstance(item.value, memoryview)
            if item.kind == LENGTH:
                out += _encode_varint(len(item.value))
            out += item.value
    return bytes(out)


def _payload(item: Field) -> memoryview:
    if not isinstance(item.value, memoryview):
        raise EmbedderError(f"field {item.number} of the model is not where a message or text belongs")
    return item.value


def _text(item: Field) -> str:
    try:
        return bytes(_payload(item)).decode()
    except UnicodeDecodeError as exc:
        raise EmbedderError("a name in the model file is not UTF-8") from exc


@dataclass(frozen=True)
class Node:
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, int]  # the integer ones (``Cast``'s ``to``)

    @classmethod
    def parse(cls, data: memoryview) -> Node:
        inputs, outputs, op_type, attributes = [], [], "", {}
        for item in fields(data):
            if item.number == NODE_INPUT:
                inputs.append(_text(item))
            elif item.number == NODE_OUTPUT:
                outputs.append(_text(item))
            elif item.number == NODE_OP_TYPE:
                op_type = _text(item)
            elif item.number == NODE_ATTRIBUTE:
                name, number = "", None
                for part in fields(_payload(item)):
                    if part.number == ATTRIBUTE_NAME:
                        name = _text(part)
                    elif part.number == ATTRIBUTE_INT and isinstance(part.value, int):
                        number = part.value
                if number is not None:
                    attributes[name] = number
        return cls(op_type, tuple(inputs), tuple(outputs), attributes)


def tensor_name(data: memoryview) -> str:
    return next((_text(item) for item in fields(data) if item.number == TENSOR_NAME), "")


def tensor_array(data: memoryview) -> np.ndarray:
    """An int8 or float32 tensor stored in the file itself, as an array."""
    dims: list[int] = []
    data_type, raw, floats = 0, None, bytearray()
    for item in fields(data):
        if item.number == TENSOR_DIMS:
            if isinstance(item.value, int):
                dims.append(item.value)
            else:  # packed
                packed, at = item.value, 0
                while at < len(packed):
                    dim, at = _varint(packed, at)
                    dims.append(dim)
        elif item.number == TENSOR_DATA_TYPE and isinstance(item.value, int):
            data_type = item.value
        elif item.number == TENSOR_RAW_DATA:
            raw = _payload(item)
        elif item.number == TENSOR_FLOAT_DATA and isinstance(item.value, memoryview):
            floats += item.value  # packed little-endian floats (unpacked ones arrive one by one)
        elif item.number == TENSOR_DATA_LOCATION and item.value == EXTERNAL:
            raise EmbedderError("the model keeps a weight outside its file")
    dtypes: dict[int, np.dtype[Any]] = {FLOAT: np.dtype("<f4"), INT8: np.dtype("i1")}
    dtype = dtypes.get(data_type)
    if dtype is None:
        raise EmbedderError(f"the model holds a tensor of ONNX type {data_type}, which the folding does not read")
    payload = raw if raw is not None else floats
    count = math.prod(dims)
    if len(payload) != count * dtype.itemsize:
        raise EmbedderError("a tensor in the model does not hold as many values as its shape says")
    array: np.ndarray = np.frombuffer(payload, dtype=dtype).reshape(dims)
    return array


def _scales(shape: tuple[int, ...], scale: tuple[int, ...]) -> bool:
    """``scale`` broadcasts over ``shape`` without growing it (per tensor, per row or per column)."""
    try:
        return np.broadcast_shapes(shape, scale) == shape
    except ValueError:
        return False


def external_tensor(name: str, shape: tuple[int, ...], location: str, offset: int, length: int) -> bytes:
    """A float32 initializer whose values are ``length`` bytes at ``offset`` of the file ``location``."""
    items = [Field(TENSOR_DIMS, VARINT, dim) for dim in shape]
    items += [Field(TENSOR_DATA_TYPE, VARINT, FLOAT), Field(TENSOR_NAME, LENGTH, memoryview(name.encode()))]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = encode([Field(1, LENGTH, memoryview(key.encode())), Field(2, LENGTH, memoryview(value.encode()))])
        items.append(Field(TENSOR_EXTERNAL_DATA, LENGTH, memoryview(entry)))
    items.append(Field(TENSOR_DATA_LOCATION, VARINT, EXTERNAL))
    return encode(items)


#: Where a folded weight goes: its float32 blocks (rows, in order) written out, and the offset in the
#: weights file answered.
WeightSink = Callable[[Iterator[np.ndarray]], int]
BLOCK_BYTES = 1 << 20


def dequantized(q: np.ndarray, scale: np.ndarray) -> Iterator[np.ndarray]:
    """``Mul(Cast(q), scale)`` as float32, element for element, a block of rows at a time: the word
    table alone is 47 MB as floats, and folding it whole held it twice at once."""
    scales = np.broadcast_to(scale, q.shape)  # a view: no copy
    if q.ndim == 0:
        yield q.astype(np.float32) * scales
        return
    rows = max(1, BLOCK_BYTES // (4 * max(1, math.prod(q.shape[1:]))))
    for start in range(0, q.shape[0], rows):
        yield q[start : start + rows].astype(np.float32) * scales[start : start + rows]


@dataclass(frozen=True)
class Folded:
    """The graph with each dequantized weight replaced by a float initializer in ``weights``, in order."""

    model: bytes
    weights: list[tuple[str, int]]  # (initializer name, offset in the weights file)


def fold_dequantized(model: bytes | memoryview, location: str, write: WeightSink) -> Folded:
    """Fold every ``Mul(Cast(int8 weight), float scale)`` whose operands are initializers. Each float
    weight is handed to ``write`` (at an offset aligned to ``ALIGNMENT``) as soon as it is computed, so
    at most one is held at a time."""
    top = list(fields(model))
    graph_at = next((i for i, item in enumerate(top) if item.number == MODEL_GRAPH), None)
    if graph_at is None:
        raise EmbedderError("the model file holds no graph")
    graph = list(fields(_payload(top[graph_at])))
    nodes = {i: Node.parse(_payload(item)) for i, item in enumerate(graph) if item.number == GRAPH_NODE}
    initializers = {tensor_name(_payload(item)): i for i, item in enumerate(graph) if item.number == GRAPH_INITIALIZER}
    producer = {out: i for i, node in nodes.items() for out in node.outputs}
    uses: dict[str, int] = {}
    for node in nodes.values():
        for name in node.inputs:
            uses[name] = uses.get(name, 0) + 1

    dropped: set[int] = set()
    added: list[Field] = []
    weights: list[tuple[str, int]] = []
    for i, mul in nodes.items():
        if mul.op_type != "Mul" or len(mul.inputs) != 2 or mul.inputs[1] not in initializers:
            continue
        cast_at = producer.get(mul.inputs[0], -1)
        cast = nodes.get(cast_at)
        if cast is None or cast.op_type != "Cast" or cast.attributes.get("to") != FLOAT:
            continue
        quantized, scale = cast.inputs[0], mul.inputs[1]
        if quantized not in initializers or uses.get(cast.outputs[0]) != 1:
            continue
        q = tensor_array(_payload(graph[initializers[quantized]]))
        s = tensor_array(_payload(graph[initializers[scale]]))
        if q.dtype != np.int8 or s.dtype != np.float32 or not _scales(q.shape, s.shape):
            continue
        offset = write(dequantized(q, s))
        tensor = external_tensor(mul.outputs[0], q.shape, location, offset, 4 * q.size)
        added.append(Field(GRAPH_INITIALIZER, LENGTH, memoryview(tensor)))
        weights.append((mul.outputs[0], offset))
        dropped |= {i, cast_at}
        for name in (quantized, scale):
            uses[name] -= 1
            if uses[name] == 0:
                dropped.add(initializers[name])
    if not weights:
        raise EmbedderError("the model holds no int8 weight to fold")
    kept = [item for i, item in enumerate(graph) if i not in dropped]
    top[graph_at] = Field(MODEL_GRAPH, LENGTH, memoryview(encode(kept + added)))
    return Folded(encode(top), weights)
