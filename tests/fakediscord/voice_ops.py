"""Constants of the fake voice server: its transport mode, DAVE's version, Opus framing, the voice
gateway's opcodes and close codes."""

from __future__ import annotations

TRANSPORT_MODE = "aead_xchacha20_poly1305_rtpsize"
DAVE_VERSION = 1
SAMPLES_PER_FRAME = 960
FRAME_SECONDS = 0.02
SAMPLE_RATE = 48_000

# Voice gateway opcodes (discord.py names them on DiscordVoiceWebSocket).
OP_IDENTIFY = 0
OP_SELECT_PROTOCOL = 1
OP_READY = 2
OP_HEARTBEAT = 3
OP_SESSION_DESCRIPTION = 4
OP_SPEAKING = 5
OP_HEARTBEAT_ACK = 6
OP_RESUME = 7
OP_HELLO = 8
OP_CLIENTS_CONNECT = 11
OP_CLIENT_DISCONNECT = 13
OP_DAVE_PREPARE_TRANSITION = 21
OP_DAVE_EXECUTE_TRANSITION = 22
OP_DAVE_TRANSITION_READY = 23
OP_DAVE_PREPARE_EPOCH = 24
OP_MLS_EXTERNAL_SENDER = 25
OP_MLS_KEY_PACKAGE = 26
OP_MLS_PROPOSALS = 27
OP_MLS_COMMIT_WELCOME = 28
OP_MLS_ANNOUNCE_COMMIT_TRANSITION = 29
OP_MLS_WELCOME = 30
OP_MLS_INVALID_COMMIT_WELCOME = 31

CLOSE_AUTHENTICATION_FAILED = 4004

#: What Discord's voice servers offer in READY, in their order (Discord's voice
#: docs): a client must pick the first one it supports, not the first one.
OFFERED_MODES = (
    "aead_aes256_gcm_rtpsize",
    TRANSPORT_MODE,
    "xsalsa20_poly1305_lite_rtpsize",
)
