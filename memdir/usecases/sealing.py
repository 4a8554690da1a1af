"""The encrypted container of `memdir export --encrypt` (format in docs/EXPORT.md).

A small versioned header (magic, version, Argon2id parameters, a random salt, a random nonce
prefix, the chunk size) followed by the payload cut into chunks, each sealed with
ChaCha20-Poly1305. The key comes from a passphrase through Argon2id. Every chunk's nonce is
the prefix, a chunk counter and a last-chunk flag, and every chunk authenticates the whole
header, so a changed header, a reordered, dropped or truncated chunk, or a flipped bit is an
error, as is a wrong passphrase (which cannot be told apart from tampering, by design).
Decryption releases a chunk only after its tag checks out.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from memdir.archive_format.errors import BadInputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

MAGIC = b"MEMDIR\x00X"  # 8 bytes: a sealed memdir export
VERSION = 1
KDF_ARGON2ID = 1
CHUNK = 1 << 20
TAG = 16
SALT = 16
NONCE_PREFIX = 7
# RFC 9106's second recommended Argon2id option: 3 passes over 64 MiB, 4 lanes (~0.35 s here).
TIME_COST, MEMORY_KIB, LANES = 3, 64 * 1024, 4
# magic, version, kdf, time cost, memory (KiB), lanes, salt, nonce prefix, chunk size
_HEADER = struct.Struct(f">8sBBIIB{SALT}s{NONCE_PREFIX}sI")
HEADER_SIZE = _HEADER.size
# Refuse header values that would make a hostile file exhaust memory or time before the
# passphrase is even checked: at most 4x what `export` itself writes (docs/FORMAT.md), so the
# worst header costs ~16x one normal unlock (~5 s here), never minutes or gigabytes.
_LIMITS = {"time": 4 * TIME_COST, "memory": 4 * MEMORY_KIB, "lanes": 4 * LANES, "chunk": 4 * CHUNK}


class SealError(BadInputError):
    """A sealed export that cannot be opened: wrong passphrase, tampered, or not one at all."""


@dataclass(frozen=True)
class Header:
    time_cost: int
    memory_kib: int
    lanes: int
    salt: bytes
    nonce_prefix: bytes
    chunk: int

    def pack(self) -> bytes:
        return _HEADER.pack(MAGIC, VERSION, KDF_ARGON2ID, self.time_cost, self.memory_kib,
                            self.lanes, self.salt, self.nonce_prefix, self.chunk)  # fmt: skip

    @classmethod
    def new(cls) -> Header:
        return cls(TIME_COST, MEMORY_KIB, LANES, os.urandom(SALT), os.urandom(NONCE_PREFIX), CHUNK)

    @classmethod
    def unpack(cls, data: bytes) -> Header:
        if len(data) < 8 or data[:8] != MAGIC:
            raise SealError("not an encrypted memdir export (bad magic bytes)")
        if len(data) < HEADER_SIZE:
            raise SealError("the encrypted export is truncated (incomplete header)")
        _, version, kdf, time_cost, memory, lanes, salt, prefix, chunk = _HEADER.unpack(
            data[:HEADER_SIZE]
        )
        if version != VERSION:
            raise SealError(
                f"encrypted export format version {version} is not supported (this memdir "
                f"reads version {VERSION})",
                hint="use a memdir release that supports it",
            )
        if kdf != KDF_ARGON2ID:
            raise SealError(f"unknown key derivation {kdf} in the export header")
        limits = (time_cost, memory, lanes, chunk)
        maxima = (_LIMITS["time"], _LIMITS["memory"], _LIMITS["lanes"], _LIMITS["chunk"])
        if not all(0 < value <= top for value, top in zip(limits, maxima, strict=True)):
            raise SealError(
                "the export header asks for Argon2 or chunk parameters above memdir's maximum "
                f"(passes {time_cost}, memory {memory} KiB, lanes {lanes}, chunk {chunk}; at most "
                f"{_LIMITS['time']}, {_LIMITS['memory']}, {_LIMITS['lanes']}, {_LIMITS['chunk']}): "
                "tampered? nothing was restored"
            )
        return cls(time_cost, memory, lanes, salt, prefix, chunk)


def is_sealed(path: os.PathLike[str] | str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def derive_key(passphrase: str, header: Header) -> bytes:
    """Argon2id over the passphrase with the header's salt and cost."""
    from argon2.low_level import Type, hash_secret_raw

    return hash_secret_raw(
        passphrase.encode("utf-8"),
        header.salt,
        time_cost=header.time_cost,
        memory_cost=header.memory_kib,
        parallelism=header.lanes,
        hash_len=32,
        type=Type.ID,
    )


def _nonce(header: Header, counter: int, last: bool) -> bytes:
    if counter >= 1 << 32:
        raise SealError("the export is too large for one sealed stream (4 Pi chunks)")
    return header.nonce_prefix + struct.pack(">IB", counter, 1 if last else 0)


def _cipher(key: bytes) -> ChaCha20Poly1305:
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    return ChaCha20Poly1305(key)


class SealedWriter:
    """A write-only file object that seals what is written to it into `out`."""

    def __init__(self, out: IO[bytes], passphrase: str, header: Header | None = None) -> None:
        self.out = out
        self.header = header or Header.new()
        self.aad = self.header.pack()
        self.cipher = _cipher(derive_key(passphrase, self.header))
        self.buffer = bytearray()
        self.counter = 0
        self.closed = False
        out.write(self.aad)

    def write(self, data: bytes) -> int:
        self.buffer.extend(data)
        size = self.header.chunk
        # Keep at least one byte back: the last chunk must be sealed with the last flag.
        while len(self.buffer) > size:
            self._seal(bytes(self.buffer[:size]), last=False)
            del self.buffer[:size]
        return len(data)

    def _seal(self, chunk: bytes, last: bool) -> None:
        nonce = _nonce(self.header, self.counter, last)
        self.out.write(self.cipher.encrypt(nonce, chunk, self.aad))
        self.counter += 1

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        """Seal the last chunk (possibly empty). The underlying file stays open."""
        if not self.closed:
            self._seal(bytes(self.buffer), last=True)
            self.buffer.clear()
            self.closed = True
            self.out.flush()


class SealedReader:
    """A read-only file object over a sealed stream; raises SealError at the first bad chunk."""

    def __init__(self, source: IO[bytes], passphrase: str) -> None:
        self.source = source
        self.aad = source.read(HEADER_SIZE)
        self.header = Header.unpack(self.aad)
        self.cipher = _cipher(derive_key(passphrase, self.header))
        self.counter = 0
        self.pending = source.read(self.header.chunk + TAG)
        self.plain = b""
        self.position = 0
        self.done = False

    def _next_chunk(self) -> bytes:
        from cryptography.exceptions import InvalidTag

        sealed = self.pending
        self.pending = self.source.read(self.header.chunk + TAG)
        last = not self.pending
        if len(sealed) < TAG:
            raise SealError("the encrypted export is truncated")
        try:
            plain = self.cipher.decrypt(_nonce(self.header, self.counter, last), sealed, self.aad)
        except InvalidTag:
            if self.counter == 0:
                raise SealError(
                    "cannot decrypt the export: wrong passphrase, or the file was changed",
                    hint="check the passphrase ($MEMDIR_PASSPHRASE or the prompt)",
                ) from None
            raise SealError(
                f"the encrypted export was tampered with or truncated (chunk {self.counter} "
                "fails authentication)"
            ) from None
        self.counter += 1
        self.done = last
        return plain

    def read(self, size: int = -1) -> bytes:
        parts: list[bytes] = []
        wanted = size if size >= 0 else None
        while wanted is None or wanted > 0:
            if self.position >= len(self.plain):
                if self.done:
                    break
                self.plain, self.position = self._next_chunk(), 0
                continue
            take = len(self.plain) - self.position if wanted is None else wanted
            piece = self.plain[self.position : self.position + take]
            self.position += len(piece)
            parts.append(piece)
            if wanted is not None:
                wanted -= len(piece)
        return b"".join(parts)

    def verify_to_end(self) -> None:
        """Authenticate whatever is left (trailing chunks a reader did not need)."""
        while not self.done:
            self._next_chunk()
