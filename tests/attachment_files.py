"""Small real files for the attachment tests, built in the test: a PDF whose page shows a line of
text, a JPEG whose EXIF holds a date and a GPS place, a WAV with ID3 title and artist tags."""

from __future__ import annotations

import io
import os
import struct
import tempfile
import wave


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF whose page shows `text` (Helvetica), with a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def jpeg_with_exif(when: str, lat: tuple, lat_ref: str, lon: tuple, lon_ref: str) -> bytes:
    """A JPEG (markers only, no image data a viewer needs) with an EXIF APP1 segment: IFD0's
    DateTime and a GPS IFD with latitude and longitude (degrees, minutes, seconds)."""

    def rationals(values):
        return b"".join(struct.pack(">II", int(v * 100), 100) for v in values)

    date = when.encode("ascii") + b"\x00"  # 20 bytes
    # layout (offsets from the TIFF header): header 8, IFD0 at 8 with 2 entries, then the GPS IFD
    ifd0_at = 8
    ifd0_size = 2 + 2 * 12 + 4
    gps_at = ifd0_at + ifd0_size
    gps_size = 2 + 4 * 12 + 4
    data_at = gps_at + gps_size
    date_at = data_at
    lat_at = date_at + len(date)
    lon_at = lat_at + 24
    tiff = b"MM\x00\x2a" + struct.pack(">I", ifd0_at)
    tiff += struct.pack(">H", 2)
    tiff += struct.pack(">HHII", 0x0132, 2, len(date), date_at)  # DateTime, ASCII
    tiff += struct.pack(">HHII", 0x8825, 4, 1, gps_at)  # GPS IFD pointer, LONG
    tiff += struct.pack(">I", 0)
    tiff += struct.pack(">H", 4)
    tiff += struct.pack(">HHI", 0x0001, 2, 2) + lat_ref.encode() + b"\x00\x00\x00"
    tiff += struct.pack(">HHII", 0x0002, 5, 3, lat_at)
    tiff += struct.pack(">HHI", 0x0003, 2, 2) + lon_ref.encode() + b"\x00\x00\x00"
    tiff += struct.pack(">HHII", 0x0004, 5, 3, lon_at)
    tiff += struct.pack(">I", 0)
    tiff += date + rationals(lat) + rationals(lon)
    app1 = b"Exif\x00\x00" + tiff
    return b"\xff\xd8" + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + b"\xff\xd9"


def wav_with_tags(title: str, artist: str, seconds: float = 1.0) -> bytes:
    """A silent mono WAV with an ID3 chunk (title, artist), written by mutagen."""

    from mutagen.id3 import TIT2, TPE1
    from mutagen.wave import WAVE

    raw = io.BytesIO()
    with wave.open(raw, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * int(8000 * seconds))
    with tempfile.NamedTemporaryFile(suffix=".wav", delete=False) as handle:
        handle.write(raw.getvalue())
    try:
        audio = WAVE(handle.name)
        audio.add_tags()
        audio.tags.add(TIT2(encoding=3, text=title))
        audio.tags.add(TPE1(encoding=3, text=artist))
        audio.save()
        with open(handle.name, "rb") as done:
            return done.read()
    finally:
        os.unlink(handle.name)
