"""Finding and using libopus without any system package.

Debian's ``libopus0`` is not on a fresh machine, but PyAV's wheel bundles
libopus (``av.libs/libopus-*.so*`` on Linux, ``av/.dylibs`` on macOS,
``av.libs``/``av`` DLLs on Windows). This module finds that library, hands it to
``discord.opus`` when the sending side needs an encoder, and wraps the small
part of the decoder API that the waveform needs (decode one packet to PCM).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import threading
import weakref
from pathlib import Path
from typing import Final

#: Largest number of samples per channel in one Opus packet (120 ms at 48 kHz).
MAX_PACKET_SAMPLES_48K: Final = 5760
#: Sample rates libopus can decode to.
DECODER_RATES: Final = (8000, 12000, 16000, 24000, 48000)

_OPUS_RESET_STATE: Final = 4028

_lock = threading.Lock()
_library: ctypes.CDLL | None = None


class OpusLibraryError(RuntimeError):
    """libopus could not be found or loaded, or a decoder could not be made."""


def _candidate_paths() -> list[Path]:
    """Return where PyAV's wheel keeps its bundled libopus, best first."""
    spec = importlib.util.find_spec("av")
    if spec is None or spec.origin is None:
        return []
    package = Path(spec.origin).resolve().parent
    folders = (package.parent / "av.libs", package / ".dylibs", package)
    patterns = ("libopus*.so*", "libopus*.dylib", "opus*.dll", "libopus*.dll")
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            for pattern in patterns:
                found.extend(sorted(folder.glob(pattern)))
    return found


def find_libopus() -> str:
    """Return the path (or loader name) of a usable libopus.

    PyAV's bundled copy comes first so that the bot needs no system package;
    a system libopus found by :func:`ctypes.util.find_library` is the fallback.

    Raises:
        OpusLibraryError: no libopus anywhere.
    """
    bundled = _candidate_paths()
    if bundled:
        return str(bundled[0])
    system = ctypes.util.find_library("opus")
    if system is not None:
        return system
    raise OpusLibraryError("libopus not found: neither in PyAV's wheel nor on the system")


def _bind(lib: ctypes.CDLL) -> None:
    """Declare the argument and result types of the functions used here."""
    lib.opus_get_version_string.argtypes = []
    lib.opus_get_version_string.restype = ctypes.c_char_p
    lib.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.opus_decoder_create.restype = ctypes.c_void_p
    lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
    lib.opus_decoder_destroy.restype = None
    lib.opus_decode.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
    ]
    lib.opus_decode.restype = ctypes.c_int
    lib.opus_decoder_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.opus_decoder_ctl.restype = ctypes.c_int
    lib.opus_strerror.argtypes = [ctypes.c_int]
    lib.opus_strerror.restype = ctypes.c_char_p


def libopus() -> ctypes.CDLL:
    """Return the loaded libopus (loaded once per process, thread-safe).

    Raises:
        OpusLibraryError: the library is missing or cannot be loaded.
    """
    global _library
    with _lock:
        if _library is None:
            path = find_libopus()
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise OpusLibraryError(f"cannot load libopus from {path}: {exc}") from exc
            _bind(lib)
            _library = lib
        return _library


def version() -> str:
    """Return libopus's version string, e.g. ``"libopus 1.6.1"``."""
    raw: bytes = libopus().opus_get_version_string()
    return raw.decode("ascii", "replace")


def load_for_discord() -> str:
    """Make ``discord.opus`` use the same libopus (for its Encoder/Decoder).

    Returns the path loaded. Does nothing but return the path when
    ``discord.opus`` already has a library.

    Raises:
        OpusLibraryError: no libopus anywhere.
    """
    import discord.opus

    path = find_libopus()
    if not discord.opus.is_loaded():
        discord.opus.load_opus(path)
    return path


class OpusDecoder:
    """One libopus decoder: Opus packets in, signed 16-bit interleaved PCM out.

    Not thread-safe (a decoder has state); make one per stream. Decoding at a
    low rate and in mono costs about the same as at 48 kHz for CELT but
    needs less memory, and is plenty for measuring loudness.
    """

    def __init__(self, sample_rate: int = 48000, channels: int = 2) -> None:
        """Create a decoder.

        Raises:
            ValueError: unsupported rate or channel count.
            OpusLibraryError: libopus is missing or refused to make a decoder.
        """
        if sample_rate not in DECODER_RATES:
            raise ValueError(f"sample_rate must be one of {DECODER_RATES}, not {sample_rate}")
        if channels not in (1, 2):
            raise ValueError(f"channels must be 1 or 2, not {channels}")
        self._lib = libopus()
        self.sample_rate = sample_rate
        self.channels = channels
        self._max_samples = MAX_PACKET_SAMPLES_48K * sample_rate // 48000
        self._pcm = (ctypes.c_int16 * (self._max_samples * channels))()
        self._bytes = memoryview(self._pcm).cast("B")
        error = ctypes.c_int(0)
        state = self._lib.opus_decoder_create(sample_rate, channels, ctypes.byref(error))
        if not state or error.value != 0:
            raise OpusLibraryError(f"opus_decoder_create failed: {self._error_text(error.value)}")
        self._state: int = state
        self._finalizer = weakref.finalize(self, self._lib.opus_decoder_destroy, state)

    def _error_text(self, code: int) -> str:
        raw: bytes | None = self._lib.opus_strerror(code)
        return raw.decode("ascii", "replace") if raw else str(code)

    def decode(self, packet: bytes) -> memoryview:
        """Decode one packet; return its PCM (valid until the next call).

        Raises:
            ValueError: libopus rejected the packet (corrupt or invalid).
        """
        samples = self._lib.opus_decode(
            self._state, packet, len(packet), self._pcm, self._max_samples, 0
        )
        if samples < 0:
            raise ValueError(f"opus_decode failed: {self._error_text(samples)}")
        return self._bytes[: samples * 2 * self.channels]

    def reset(self) -> None:
        """Forget the decoder's history (as after a seek)."""
        self._lib.opus_decoder_ctl(self._state, _OPUS_RESET_STATE)

    def close(self) -> None:
        """Free the decoder now rather than at garbage collection."""
        self._finalizer()
