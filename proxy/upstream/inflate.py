"""Decoding a gzip or deflate upstream body a bounded step at a time.

The proxy asks for ``identity``, but a hostile upstream may compress anyway, and deflate turns
1 KB into up to 1 MB: decoded in one call, one socket read could become hundreds of MB before
any limit looks at it. :class:`Inflater` keeps the compressed bytes and hands out at most
``limit`` decoded bytes per :meth:`pull`, so the connection can stop decoding (and reading)
while the body's reader is full, exactly as it stops for plain bytes.

gzip bodies may hold several members one after the other (RFC 1952 2.2; streaming compressors
write them): each is decoded in turn. Bytes after the last member that start no new member,
and a body that ends inside a member, are errors (``zlib.error``): a body only partly readable
is not checked as if it were whole.
"""

from __future__ import annotations

import zlib

__all__ = ["Inflater", "readable_codings"]

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_OR_ZLIB = 47  # wbits: a gzip or zlib header, detected
_RAW_DEFLATE = -15  # wbits: deflate data without any header

readable_codings = frozenset({"gzip", "x-gzip", "deflate"})


def _zlib_header(data: bytes) -> bool:
    """Whether ``data`` starts with a zlib header (RFC 1950: method 8, a valid check)."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0


class Inflater:
    """One body's decoder: :meth:`push` compressed bytes, :meth:`pull` decoded ones."""

    __slots__ = ("_coding", "_decoder", "_pending", "_started")

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._decoder: zlib._Decompress | None = None
        self._pending = b""
        self._started = False

    @property
    def pending(self) -> bool:
        """Whether compressed bytes wait to be decoded."""
        return bool(self._pending)

    def push(self, data: bytes) -> None:
        self._pending = self._pending + data if self._pending else data

    def pull(self, limit: int) -> bytes:
        """Up to ``limit`` decoded bytes; ``b""`` when the pushed bytes are all decoded."""
        while self._pending:
            decoder = self._decoder
            if decoder is None:
                decoder = self._decoder = self._new_decoder(self._pending)
            out = decoder.decompress(self._pending, limit)
            self._pending = decoder.unconsumed_tail
            if decoder.eof:
                rest = decoder.unused_data + self._pending
                if rest and not (self._coding != "deflate" and rest.startswith(_GZIP_MAGIC)):
                    raise zlib.error("bytes after the end of the compressed body")
                self._pending = rest
                self._decoder = None  # the next member, if any, gets a decoder of its own
            if out:
                return out
        return b""

    def end(self) -> bytes:
        """The body is over: the last decoded bytes; ``zlib.error`` when it was cut off."""
        if self._pending:
            raise zlib.error("the body ended with bytes not yet decoded")
        decoder = self._decoder
        if decoder is None:
            return b""  # nothing, or whole members only
        rest = decoder.flush()
        if not decoder.eof:
            raise zlib.error("the compressed body is cut off")
        return rest

    def _new_decoder(self, data: bytes) -> zlib._Decompress:
        if self._coding == "deflate" and not self._started and not _zlib_header(data):
            # "deflate" is zlib data by the RFC, raw deflate by some servers' reading of it.
            self._started = True
            return zlib.decompressobj(_RAW_DEFLATE)
        self._started = True
        return zlib.decompressobj(_GZIP_OR_ZLIB)
