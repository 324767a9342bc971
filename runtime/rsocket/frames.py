"""The frames the RSocket engine's handlers take, as unions of both versions' classes.

A handler of ``RSocketConnection`` serves RSocket 1.0 and ReactiveSocket 0.2 alike, so it
takes either version's class of its frame; each generated handler protocol names one
version's class, which the union accepts, so ``mypy --strict`` checks every handler
against both versions (``bindings``) and a handler given another frame fails there.

The request and message handlers (``_on_request``, ``on_stream_payload``,
``on_stream_request_channel``) take ``Frame`` (Any) instead: which fields they read is
decided by the stream's interaction model and the version (0.2's channel requester sends
its later messages as REQUEST_CHANNEL), which a type checker cannot narrow to.
"""

from __future__ import annotations

from typing import Union

import wirestream.generated.rsocket.v0_2 as v0_2
import wirestream.generated.rsocket.v1_0 as v1_0

__all__ = [
    "CancelFrame",
    "ErrorFrame",
    "ExtFrame",
    "KeepaliveFrame",
    "LeaseFrame",
    "MetadataPushFrame",
    "RequestNFrame",
    "ResumeFrame",
    "ResumeOkFrame",
    "SetupFrame",
]

SetupFrame = Union[v1_0.Setup, v0_2.Setup]
LeaseFrame = Union[v1_0.Lease, v0_2.Lease]
KeepaliveFrame = Union[v1_0.Keepalive, v0_2.Keepalive]
ErrorFrame = Union[v1_0.Error, v0_2.Error]
MetadataPushFrame = Union[v1_0.MetadataPush, v0_2.MetadataPush]
ExtFrame = Union[v1_0.Ext, v0_2.Ext]
ResumeFrame = Union[v1_0.Resume, v0_2.Resume]
ResumeOkFrame = Union[v1_0.ResumeOk, v0_2.ResumeOk]
RequestNFrame = Union[v1_0.RequestN, v0_2.RequestN]
CancelFrame = Union[v1_0.Cancel, v0_2.Cancel]
