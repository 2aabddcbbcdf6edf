"""Every Ogg Opus file the voice tests produce is checked with ``opusinfo`` (opus-tools),
``oggz-validate`` (oggz-tools) and ffmpeg's decoder (through PyAV).

Independent readers of the format: a file opusinfo warns about (a page
holding seconds of audio, trimming beyond the last packet, a bad granule
position) or oggz-validate refuses (page order, granule positions, packet
continuation) fails the test that produced it, and so does one whose decoded
length is not the ``duration_secs`` its writer reported (what a voice message
tells Discord). Each :class:`bot.voice.ogg.OggOpusWriter` (recordings, the
bot's and the tests' own, and re-encoded uploads) is teed into memory while
it writes; once it is closed the copy is checked after the test. Where a tool
is not installed its check is left out and ``test_opusinfo.py`` says so with
a skip.
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

import av
import pytest

from bot.voice import ogg

OPUSINFO = shutil.which("opusinfo")
OGGZ_VALIDATE = shutil.which("oggz-validate")


def _run_on(tool: str | None, data: bytes) -> subprocess.CompletedProcess[str]:
    """Run a checking tool on the bytes, written to a temporary file."""
    assert tool is not None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recording.opus"
        path.write_bytes(data)
        return subprocess.run(
            [tool, str(path)], capture_output=True, text=True, timeout=60, check=False
        )


def oggz_problems(data: bytes) -> list[str]:
    """What oggz-validate says is wrong with an Ogg file (nothing when it is valid)."""
    run = _run_on(OGGZ_VALIDATE, data)
    if run.returncode == 0:
        return []
    lines = [line.strip() for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    return [f"oggz-validate: {line}" for line in lines] or [
        f"oggz-validate exited with {run.returncode}"
    ]


def decoded_problems(data: bytes, duration_secs: float) -> list[str]:
    """Whether ffmpeg (PyAV) decodes exactly ``duration_secs`` of audio from the file.

    An empty recording (no audio, never posted) is left out: ffmpeg does not
    trim a lone page's pre-skip in full (see test_ogg.py).
    """
    if duration_secs == 0:
        return []
    with av.open(io.BytesIO(data), "r") as container:
        samples = sum(frame.samples for frame in container.decode(audio=0))
    if samples != round(duration_secs * 48_000):
        return [f"decodes to {samples} samples, duration_secs says {duration_secs * 48_000:.0f}"]
    return []


def opusinfo_problems(data: bytes) -> list[str]:
    """What opusinfo says is wrong with an Ogg Opus file: its warnings and errors."""
    run = _run_on(OPUSINFO, data)
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
    """Tee every Ogg writer of the test; check what was closed with opusinfo, oggz-validate
    and ffmpeg afterwards."""
    finished: list[tuple[bytes, float]] = []
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
                finished.append((bytes(tee.copy), info.duration_secs))
        return info

    monkeypatch.setattr(ogg.OggOpusWriter, "__init__", init)
    monkeypatch.setattr(ogg.OggOpusWriter, "close", close)
    yield
    failures = []
    for index, (data, duration) in enumerate(finished):
        problems = decoded_problems(data, duration)
        if OPUSINFO is not None:
            problems += opusinfo_problems(data)
        if OGGZ_VALIDATE is not None:
            problems += oggz_problems(data)
        if problems:
            failures.append(f"recording {index} ({len(data)} bytes): {'; '.join(problems)}")
    assert not failures, "recordings: " + " | ".join(failures[:5])
