"""Minimal safetensors reader/writer (json + numpy only).

File layout: 8-byte little-endian u64 header length N, N bytes of JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, optional "__metadata__"},
then the raw little-endian tensor bytes; offsets are relative to the first byte after the header.
"""
import json
import struct

import numpy as np

_DTYPES = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def load(path):
    """Return ({name: np.ndarray}, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds the file size")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, info in header.items():
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {info['dtype']}")
        dt = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        shape = tuple(int(s) for s in info["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dt.itemsize or end > len(data):
            raise ValueError(f"{path}: tensor {name!r} offsets {begin}..{end} do not match shape {shape}")
        out[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape).copy()
    return out, meta


def save(path, tensors, metadata=None):
    """Write {name: array-like} (float32/float64/int32/int64) to `path`."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(np.asarray(tensors[name]))
        dt = arr.dtype.newbyteorder("<")
        if dt not in _NAMES:
            raise ValueError(f"tensor {name!r}: unsupported dtype {arr.dtype}")
        raw = arr.astype(dt, copy=False).tobytes()
        header[name] = {"dtype": _NAMES[dt], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * (-len(hbytes) % 8)  # align the data section to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for raw in chunks:
            f.write(raw)
