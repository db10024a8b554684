"""This module owns how a request's body is framed for every HTTP endpoint: its header fields as one value per
name, and the one ``Content-Length`` the server reads.

Two framings of one body let a check read one and the read use the other (a request naming
``Content-Length: 314572800`` then ``Content-Length: 0`` passed the size check and had hundreds of megabytes
read).  So a field sent twice reaches every check joined as one value (:func:`merged_headers`), and
:func:`body_length` refuses, from the headers alone, a second length, any ``Transfer-Encoding`` (bodies here
always carry a length) and a body on a method that takes none; the server reads exactly the length returned.
Pure decisions over headers; :class:`~storm_py.node.http_api.JsonApiServer` applies them to every request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from storm_py.errors import StormPyError
from storm_py.node.http_guard import BODY_METHODS, header

_DIGITS = re.compile(r"[0-9]{1,20}")


class FramingError(StormPyError):
    """A request whose body's length is ambiguous or not allowed (400)."""

    code = "bad_request"


class LengthRequiredError(StormPyError):
    """A request whose body is not framed by a ``Content-Length`` (a ``Transfer-Encoding``; 411)."""

    code = "length_required"


def merged_headers(fields: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A request's header fields as one value per name: a name sent more than once (in any case) has its values
    joined with ``", "`` (HTTP's list form), so no check can read one copy while the server acts on another."""
    out: dict[str, str] = {}
    names: dict[str, str] = {}
    for name, value in fields:
        first = names.setdefault(name.lower(), name)
        out[first] = f"{out[first]}, {value}" if first in out else value
    return out


def body_length(method: str, headers: Mapping[str, str]) -> int:
    """The bytes of body to read for a request with ``headers`` (as :func:`merged_headers` gives them): its one
    ``Content-Length``, 0 without one.  Refused with an error naming the header: a length that is not a decimal
    number or was sent twice, any ``Transfer-Encoding`` (with a length too, the body's end is ambiguous) and a
    body on a method that takes none."""
    raw = header(headers, "content-length")
    coding = header(headers, "transfer-encoding")
    if coding is not None:
        if raw is not None:
            raise FramingError(f"a request with both Transfer-Encoding {coding[:40]!r} and Content-Length is "
                               "refused (its body's end is ambiguous)", header="Transfer-Encoding")
        raise LengthRequiredError(f"Transfer-Encoding {coding[:40]!r} is not accepted: send the body with one "
                                  "Content-Length", header="Transfer-Encoding")
    if raw is None:
        return 0
    if "," in raw:
        raise FramingError(f"a request with more than one Content-Length ({raw[:60]!r}) is refused",
                           header="Content-Length")
    if not _DIGITS.fullmatch(raw.strip()):
        raise FramingError(f"bad Content-Length {raw[:40]!r}", header="Content-Length")
    length = int(raw)
    if length and method not in BODY_METHODS:
        raise FramingError(f"a {method} request takes no body (it declared Content-Length {length})",
                           header="Content-Length")
    return length
