"""The bytes between the child (``child.py``) and the parent (``parent.py``), both directions.

A frame is a tag (b"J": a JSON object, b"A": an array as .npy bytes), a 4-byte big-endian
length and the payload.  The child sends the events

    ready | setup_error | import_error | imported {defined} | start {function, problem}
    | raised {function, problem, error, stub} | result {function, problem, answer, arrays} | done

where ``answer`` is ``encode``'s tree (an array by its index among the ``arrays`` .npy frames
that follow, None, a tuple/list item by item, or a description) and the parent's ``Reader``
parses them strictly into a ``ChildRun``: each event is accepted only in its state (setup_error
before ready, import_error before imported, a result only for the call started, ...); unknown
events, frames larger than MAX_FRAME, JSON nested deeper than MAX_DEPTH, non-numeric arrays and
more than RESULTS_CAP bytes in all raise ``Malformed``.  Nothing received is executed or
unpickled (np.lib.format.read_array with allow_pickle=False).

The parent sends the request the same way (``send_request``): one JSON frame, then its arrays;
a call's arguments are trees of arrays, strings and the kit's containers by type name
(``arguments``), rebuilt by the child.
"""
from __future__ import annotations

import io
import json
import posix
import struct
from dataclasses import dataclass, field

import numpy as np

MAX_ARRAY_BYTES = 8 * 2**20     # a returned array larger than this is described, not sent
MAX_ITEMS = 16                  # a returned tuple/list: at most this many items, nested 3 deep
RESULTS_CAP = 64 * 2**20        # a child sending more than this in frames is stopped
MAX_FRAME = 16 * 2**20          # one frame: an array of MAX_ARRAY_BYTES and its .npy header fit
MAX_DEPTH = 12                  # JSON nesting a message may have (encode's trees need 8)
_write = posix.write


class Items(tuple):
    """A returned tuple or list, decoded item by item; ``type_name`` and ``fields`` (for a
    NamedTuple such as Params) as the student's object had them."""

    type_name: str = "tuple"
    fields: tuple = ()

    @classmethod
    def of(cls, items, type_name="tuple", fields=()):
        out = cls(items)
        out.type_name, out.fields = type_name, tuple(fields or ())
        return out


class Other(str):
    """A returned value that is not numbers, described by its type ("a dict", ...)."""


@dataclass(frozen=True)
class Call:
    """One call's outcome: what it returned, or ``error`` (what it raised, or why it stopped)
    with a short ``note`` for the table ("raised IndexError", "time limit").  ``stub``: it raised
    NotImplementedError (the hand-out's stub)."""

    returned: bool = False
    answer: object = None
    error: str = ""
    note: str = ""
    stub: bool = False
    cpu: float = float("nan")       # CPU seconds, when the call had a child of its own


@dataclass
class ChildRun:
    """What one child did: ``ended`` is "" when it finished, else why it stopped early."""

    ready: bool = False
    setup_error: str = ""
    imported: bool = False
    import_error: str = ""
    defined: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)       # (function, problem index) -> Call
    running: tuple | None = None                    # the call started and not finished
    done: bool = False
    ended: str = ""
    exitcode: int | None = None
    pid: int | None = None
    output: bytes = b""
    output_bytes: int = 0
    cpu: float = float("nan")                       # CPU seconds from "ready" ("imported" with an import limit) to the end


# ---- the child's side -------------------------------------------------------------------------

def send(fd: int, tag: bytes, payload: bytes) -> None:
    data = tag + struct.pack(">I", len(payload)) + payload
    while data:
        data = data[_write(fd, data):]


def send_json(fd: int, message: dict) -> None:
    send(fd, b"J", json.dumps(message).encode())


def send_array(fd: int, a: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, a, allow_pickle=False)
    send(fd, b"A", buffer.getvalue())


def encode(value, arrays: list, depth: int = 0) -> dict:
    """A JSON tree for ``value``, numeric arrays replaced by their index in ``arrays``: a list
    of numbers becomes one array, a tuple (a NamedTuple such as Params too) stays a structure."""
    if value is None:
        return {"none": True}
    if isinstance(value, (np.ndarray, np.generic, int, float, complex)):
        return _array_node(np.asarray(value), arrays)
    if isinstance(value, (tuple, list)):
        fields = getattr(value, "_fields", None) if isinstance(value, tuple) else None
        if isinstance(value, list):                 # a list of numbers is an array; a tuple, a structure
            try:
                converted = np.asarray(value)
            except (ValueError, TypeError):
                converted = None
            if converted is not None and converted.dtype.kind in "biufc":
                return _array_node(converted, arrays)
        if depth >= 3 or len(value) > MAX_ITEMS:
            return {"other": f"a {type(value).__name__} of {len(value)} items"}
        return {"items": [encode(v, arrays, depth + 1) for v in value], "type": type(value).__name__,
                "fields": [str(f) for f in fields] if fields else None}
    return {"other": f"a {type(value).__module__}.{type(value).__qualname__}"[:200]}


def _array_node(a: np.ndarray, arrays: list) -> dict:
    if a.dtype.kind not in "biufc" or a.dtype.fields is not None:
        return {"other": f"an array of dtype {a.dtype}"[:200]}
    if a.nbytes > MAX_ARRAY_BYTES:
        return {"other": f"an array of shape {a.shape} ({a.nbytes} bytes, too large to be an answer)"}
    arrays.append(np.ascontiguousarray(a))
    return {"array": len(arrays) - 1}


class FrameStream:
    """Blocking reads of whole frames from ``fd`` (the child reading its request)."""

    def __init__(self, fd: int):
        self.fd = fd

    def _exactly(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            data = posix.read(self.fd, min(left, 1 << 20))
            if not data:
                raise EOFError("the request ended early")
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)

    def read(self, tag: bytes):
        """The next frame's payload: a JSON object (tag b"J") or an array (tag b"A")."""
        head = self._exactly(5)
        payload = self._exactly(struct.unpack(">I", head[1:])[0])
        if head[:1] != tag:
            raise ValueError(f"expected a frame of tag {tag!r}")
        return json.loads(payload) if tag == b"J" else np.lib.format.read_array(io.BytesIO(payload),
                                                                                allow_pickle=False)


# ---- the parent's side ------------------------------------------------------------------------

def arguments(value, arrays: list, types_used: set):
    """The tree of one call argument: arrays by index in ``arrays``, strings, None, and
    NamedTuples (Params, LayerCache, ...) by type name and fields, recorded in ``types_used``."""
    if value is None:
        return {"none": True}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, np.ndarray) or isinstance(value, (int, float, np.generic)):
        arrays.append(np.ascontiguousarray(value))
        return {"array": len(arrays) - 1}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        types_used.add(type(value))
        return {"call": type(value).__name__, "args": [arguments(v, arrays, types_used) for v in value]}
    raise TypeError(f"cannot send a {type(value).__name__} to the child: arrays, strings, None and "
                    "NamedTuples of them only")


def send_request(fd: int, request: dict, arrays: list) -> None:
    send(fd, b"J", json.dumps(dict(request, n_arrays=len(arrays))).encode())
    for a in arrays:
        send_array(fd, a)


def _depth_ok(payload: bytes) -> bool:
    """No JSON nesting deeper than MAX_DEPTH (counted on brackets outside strings), so that
    json.loads cannot recurse without bound."""
    depth, in_string, escaped = 0, False, False
    for byte in payload:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:                      # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return True


class Malformed(Exception):
    """The child sent something the protocol does not allow."""


def decode(tree, arrays: list, depth: int = 0):
    """A returned value from ``encode``'s tree; Malformed on anything else."""
    if not isinstance(tree, dict) or depth > 4:
        raise Malformed("answer is not an object")
    if tree == {"none": True}:
        return None
    if set(tree) == {"array"} and type(tree["array"]) is int and 0 <= tree["array"] < len(arrays):
        return arrays[tree["array"]]
    if set(tree) == {"other"} and isinstance(tree["other"], str):
        return Other(tree["other"][:200])
    if set(tree) == {"items", "type", "fields"} and isinstance(tree["items"], list) and len(tree["items"]) <= MAX_ITEMS:
        fields = tree["fields"] or []
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise Malformed("bad fields")
        return Items.of([decode(t, arrays, depth + 1) for t in tree["items"]],
                        str(tree["type"])[:60], [f[:40] for f in fields])
    raise Malformed("unknown answer")


def read_array(payload: bytes) -> np.ndarray:
    try:
        a = np.lib.format.read_array(io.BytesIO(payload), allow_pickle=False)
    except Exception as exc:                                  # any malformed .npy
        raise Malformed(f"bad array: {exc}") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biufc" or a.dtype.fields is not None:
        raise Malformed("array of a non-numeric dtype")
    return a


class Reader:
    """Splits the byte stream into frames and applies each event to ``run``."""

    def __init__(self, run: ChildRun):
        self.run, self.buffer, self.total, self.pending = run, bytearray(), 0, None

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if self.total > RESULTS_CAP:
            raise Malformed(f"sent more than {RESULTS_CAP // 2**20} MB")
        self.buffer += data
        while len(self.buffer) >= 5:
            tag, n = bytes(self.buffer[:1]), struct.unpack(">I", self.buffer[1:5])[0]
            if tag not in (b"J", b"A") or n > MAX_FRAME:
                raise Malformed("not a frame of the protocol")
            if len(self.buffer) < 5 + n:
                return
            payload = bytes(self.buffer[5:5 + n])
            del self.buffer[:5 + n]
            self._frame(tag, payload)

    def _frame(self, tag: bytes, payload: bytes) -> None:
        if tag == b"A" and self.pending is not None:
            message, arrays = self.pending
            arrays.append(read_array(payload))
            if len(arrays) == message["arrays"]:
                self._result(message, arrays)
            return
        if tag != b"J" or self.pending is not None:
            raise Malformed("unexpected frame")
        if not _depth_ok(payload):
            raise Malformed(f"JSON nested deeper than {MAX_DEPTH}")
        try:
            message = json.loads(payload)
        except (ValueError, RecursionError):
            raise Malformed("not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("event"), str):
            raise Malformed("not an event")
        self._event(message)

    def _event(self, m: dict) -> None:
        run, event = self.run, m["event"]
        if event == "ready" and not run.ready and not run.setup_error:
            run.ready = True
        elif event == "setup_error" and not run.ready and not run.setup_error:
            run.setup_error = str(m.get("error", ""))[:2000]
        elif event == "import_error" and run.ready and not run.imported:
            run.import_error = str(m.get("error", ""))[:2000] or "the import failed"
        elif event == "imported" and run.ready and not run.imported and not run.import_error \
                and isinstance(m.get("defined"), dict) and len(m["defined"]) <= 64:
            run.imported = True
            run.defined = {str(k): str(v)[:200] for k, v in m["defined"].items()}
        elif event == "start" and run.imported and run.running is None and not run.done:
            run.running = self._key(m)
            if run.running in run.calls:
                raise Malformed("a call started twice")
        elif event == "raised" and run.imported and self._key(m) == run.running:
            error = str(m.get("error", ""))[:2000]
            run.calls[run.running] = Call(error=error, note="raised " + error.split(":")[0].split(" ")[0][:30],
                                          stub=m.get("stub") is True)
            run.running = None
        elif event == "result" and run.imported and self._key(m) == run.running:
            if type(m.get("arrays")) is not int or not 0 <= m["arrays"] <= 64:
                raise Malformed("bad array count")
            self.pending = (m, [])
            if m["arrays"] == 0:
                self._result(m, [])
        elif event == "done" and run.imported and run.running is None and not run.done:
            run.done = True
        else:
            raise Malformed(f"unexpected event {event[:30]!r}")

    def _key(self, m: dict) -> tuple:
        if not isinstance(m.get("function"), str) or type(m.get("problem")) is not int:
            raise Malformed("bad call")
        return m["function"], m["problem"]

    def _result(self, message: dict, arrays: list) -> None:
        self.pending = None
        self.run.calls[self.run.running] = Call(returned=True, answer=decode(message.get("answer"), arrays))
        self.run.running = None
