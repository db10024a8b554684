"""The wire protocol: the versioned msgpack codec (:mod:`.codec`), inter-worker frames (:mod:`.messages`)."""

from __future__ import annotations

from storm_py.protocol.codec import CODEC_VERSION, decode, encode, register_ext, unregister_ext

__all__ = ["CODEC_VERSION", "decode", "encode", "register_ext", "unregister_ext"]
