"""Every Ogg Opus file the voice tests produce is checked with ``opusinfo`` (opus-tools).

An independent reader of the format: a file it warns about (a page holding
seconds of audio, trimming beyond the last packet, a bad granule position)
fails the test that produced it. Each :class:`bot.voice.ogg.OggOpusWriter`
(recordings, the bot's and the tests' own, and re-encoded uploads) is teed
into memory while it writes; once it is closed the copy is checked after the
test. Where opusinfo is not installed nothing is checked here and
``test_opusinfo.py`` says so with a skip.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from bot.voice import ogg

OPUSINFO = shutil.which("opusinfo")


def opusinfo_problems(data: bytes) -> list[str]:
    """What opusinfo says is wrong with an Ogg Opus file: its warnings and errors."""
    assert OPUSINFO is not None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recording.opus"
        path.write_bytes(data)
        run = subprocess.run(
            [OPUSINFO, str(path)], capture_output=True, text=True, timeout=60, check=False
        )
    lines = (run.stdout + run.stderr).splitlines()
    problems = [line.strip() for line in lines if "WARNING" in line or "ERROR" in line]
    if run.returncode != 0:
        problems.append(f"opusinfo exited with {run.returncode}")
    return problems


class _Tee(io.RawIOBase):
    """Writes to the writer's sink and keeps a copy."""

    def __init__(self, sink: BinaryIO) -> None:
        super().__init__()
        self.sink = sink
        self.copy = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.copy += data
        return self.sink.write(data)

    def tell(self) -> int:
        return self.sink.tell()


@pytest.fixture(autouse=True)
def every_recording_passes_opusinfo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tee every Ogg writer of the test; check what was closed with opusinfo afterwards."""
    if OPUSINFO is None:
        yield
        return
    finished: list[bytes] = []
    lock = threading.Lock()
    original_init = ogg.OggOpusWriter.__init__
    original_close = ogg.OggOpusWriter.close

    def init(self: ogg.OggOpusWriter, sink: BinaryIO, **options: Any) -> None:
        original_init(self, _Tee(sink), **options)  # type: ignore[arg-type]

    def close(self: ogg.OggOpusWriter, **options: Any) -> ogg.RecordingInfo:
        info = original_close(self, **options)
        tee = self._sink
        if isinstance(tee, _Tee):
            with lock:
                finished.append(bytes(tee.copy))
        return info

    monkeypatch.setattr(ogg.OggOpusWriter, "__init__", init)
    monkeypatch.setattr(ogg.OggOpusWriter, "close", close)
    yield
    failures = [
        f"recording {index} ({len(data)} bytes): {'; '.join(problems)}"
        for index, data in enumerate(finished)
        if (problems := opusinfo_problems(data))
    ]
    assert not failures, "opusinfo: " + " | ".join(failures[:5])
