"""msgspec types for the events of a Kineto Chrome trace.

Only the args the model promotes to columns are typed here; the recorded shapes (big) and every
other arg (and any key a future PyTorch adds) are read
on demand from the raw JSON of the events (:meth:`Trace.shapes`, :meth:`Trace.event_args`).
Numeric fields accept strings because real traces write ``"inf"`` and ``"N/A"`` where numbers
are expected.
"""

from __future__ import annotations

import msgspec

Num = int | float | str | None
RAW_EMPTY = msgspec.Raw(b"")

# Python field name -> JSON key of the promoted args.
ARG_KEYS: dict[str, str] = {
    "external_id": "External id",
    "correlation": "correlation",
    "cbid": "cbid",
    "stream": "stream",
    "device": "device",
    "grid": "grid",
    "block": "block",
    "registers": "registers per thread",
    "shared_memory": "shared memory",
    "blocks_per_sm": "blocks per SM",
    "warps_per_sm": "warps per SM",
    "occupancy": "est. achieved occupancy %",
    "bytes": "bytes",
    "bandwidth": "memory bandwidth (GB/s)",
    "seq": "Sequence number",
    "fwd_tid": "Fwd thread id",
    "py_id": "Python id",
    "py_parent_id": "Python parent id",
    # "M" metadata events
    "meta_name": "name",
    "labels": "labels",
    "sort_index": "sort_index",
    # [memory] instants
    "total_reserved": "Total Reserved",
    "total_allocated": "Total Allocated",
    "alloc_bytes": "Bytes",
    "device_id": "Device Id",
    "device_type": "Device Type",
    "addr": "Addr",
    # collectives (NCCL kernels, record_param_comms)
    "collective": "Collective name",
    "in_msg_nelems": "In msg nelems",
    "out_msg_nelems": "Out msg nelems",
    "group_size": "Group size",
    "dtype": "dtype",
    "pg_name": "Process Group Name",
    "pg_desc": "Process Group Description",
    "pg_ranks": "Process Group Ranks",
    "coll_seq": "Seq",
}
SHAPE_KEYS = {
    "input_dims": "Input Dims",
    "input_type": "Input type",
    "input_strides": "Input Strides",
    "concrete_inputs": "Concrete Inputs",
}


class Args(msgspec.Struct, frozen=True, gc=False, rename=ARG_KEYS | SHAPE_KEYS):
    """The promoted args of one event (missing keys are None / empty)."""

    external_id: Num = None
    correlation: Num = None
    cbid: Num = None
    stream: Num = None
    device: Num = None
    grid: msgspec.Raw = RAW_EMPTY
    block: msgspec.Raw = RAW_EMPTY
    registers: Num = None
    shared_memory: Num = None
    blocks_per_sm: Num = None
    warps_per_sm: Num = None
    occupancy: Num = None
    bytes: Num = None
    bandwidth: Num = None
    seq: Num = None
    fwd_tid: Num = None
    py_id: Num = None
    py_parent_id: Num = None
    meta_name: Num = None
    labels: Num = None
    sort_index: Num = None
    total_reserved: Num = None
    total_allocated: Num = None
    alloc_bytes: Num = None
    device_id: Num = None
    device_type: Num = None
    addr: Num = None
    collective: Num = None
    in_msg_nelems: Num = None
    out_msg_nelems: Num = None
    group_size: Num = None
    dtype: Num = None
    pg_name: Num = None
    pg_desc: Num = None
    pg_ranks: Num = None
    coll_seq: Num = None
    input_dims: msgspec.Raw = RAW_EMPTY
    input_type: msgspec.Raw = RAW_EMPTY
    input_strides: msgspec.Raw = RAW_EMPTY
    concrete_inputs: msgspec.Raw = RAW_EMPTY


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    """One element of ``traceEvents``."""

    ph: str = ""
    cat: str | None = None
    name: Num = None
    pid: Num = None
    tid: Num = None
    ts: Num = None
    dur: Num = None
    id: Num = None
    bp: str | None = None
    s: str | None = None
    args: Args = NO_ARGS


class RawArgsEvent(msgspec.Struct, gc=False):
    """An event whose args are kept as raw JSON (for :meth:`Trace.event_args`)."""

    args: msgspec.Raw = RAW_EMPTY


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
RAW_ARGS_DECODER = msgspec.json.Decoder(list[RawArgsEvent])
TOP_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])
