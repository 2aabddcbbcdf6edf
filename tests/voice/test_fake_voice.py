"""The fake voice server against the real discord.py 2.7.1 voice client, end to end.

Also home of :func:`voice_world`, the harness the receiver and recorder tests
share: the project's fake Discord (tests/fakediscord: REST and main gateway)
with the standard guild, a :class:`FakeVoiceServer` attached to it, and a real
``discord.Client`` logged in. The bot's op 4 travels through the fake's
gateway, which answers with VOICE_STATE_UPDATE and VOICE_SERVER_UPDATE
pointing at the voice server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import davey
import discord
import pytest

from bot.voice.receiver import ReceivingVoiceClient
from tests.fakediscord.fixtures import StandardGuild, build_standard_guild
from tests.fakediscord.harness import running_client
from tests.fakediscord.server import FakeDiscord
from tests.fakediscord.voice import (
    OFFERED_MODES,
    FakeSpeaker,
    FakeVoiceServer,
    split_commit_welcome,
)
from tests.voice.speech import opus_packets


@dataclass
class VoiceWorld:
    """A logged-in bot, the fake Discord and the voice server of the standard guild."""

    fake: FakeDiscord
    standard: StandardGuild
    server: FakeVoiceServer
    client: discord.Client

    @property
    def bot_id(self) -> int:
        return self.fake.bot_user.id

    @property
    def nominee_id(self) -> int:
        """The player whose last word is recorded in these tests."""
        return self.standard.players[0].user.id

    @property
    def neighbour_id(self) -> int:
        """Another player in the voice channel."""
        return self.standard.players[1].user.id

    @property
    def channel(self) -> discord.VoiceChannel:
        channel = self.client.get_channel(self.standard.voice_channel.id)
        assert isinstance(channel, discord.VoiceChannel)
        return channel

    async def connect(self) -> ReceivingVoiceClient:
        """The bot joins the voice channel (returns before DAVE is ready, as discord.py does).

        Its receiver runs on the call's clock, and the fake waits for it to
        read each packet (see :class:`tests.fakediscord.voice.MediaClock`).
        """
        voice_client = await self.channel.connect(cls=ReceivingVoiceClient)
        assert isinstance(voice_client, ReceivingVoiceClient)
        receiver = voice_client.receiver
        receiver.clock = self.server.clock
        self.server.receipts = lambda: receiver.stats.datagrams
        self.server.ssrc_known = lambda user, ssrc: voice_client.speakers.ssrc_for(user) == ssrc
        return voice_client

    async def join(self, user_id: int, *, dave: bool = True) -> FakeSpeaker:
        """A member comes into the channel: main gateway voice state, then the voice server."""
        self.fake.set_voice_state(self.standard.guild.id, user_id, self.standard.voice_channel.id)
        return self.server.add_speaker(
            user_id, channel_id=self.standard.voice_channel.id, dave=dave
        )

    async def leave(self, speaker: FakeSpeaker) -> None:
        """A member leaves: the voice server drops him, the main gateway says so."""
        await speaker.leave()
        self.fake.set_voice_state(self.standard.guild.id, speaker.user_id, None)


@contextlib.asynccontextmanager
async def voice_world(**server_options: Any) -> AsyncIterator[VoiceWorld]:
    """Start a fake voice server and the fake Discord, and log a real discord.py client in."""
    server = FakeVoiceServer(**server_options)
    await server.start()
    fake = FakeDiscord()
    standard = build_standard_guild(fake)
    fake.voice_server = server
    await fake.start()
    intents = discord.Intents.none()
    intents.guilds = True
    intents.voice_states = True
    try:
        async with running_client(fake, discord.Client(intents=intents)) as client:
            yield VoiceWorld(fake, standard, server, client)
    finally:
        await fake.close()
        await server.close()


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        await asyncio.sleep(0.005)


async def connected_with_dave(world: VoiceWorld) -> ReceivingVoiceClient:
    """Connect and wait until DAVE is settled (with whoever is in the channel)."""
    voice_client = await world.connect()
    await wait_until(voice_client.dave_ready)
    return voice_client


# --------------------------------------------------------------------------


async def test_handshake_over_tls_and_dave_via_welcome_when_a_member_commits() -> None:
    async with voice_world() as world:
        speaker = await world.join(world.nominee_id)
        voice_client = await world.connect()
        await wait_until(voice_client.dave_ready)
        await speaker.wait_in_group()

        session = voice_client._connection.dave_session
        assert session is not None and session.ready
        assert voice_client.dave_members() == {world.bot_id, world.nominee_id}
        assert not voice_client._connection.dave_pending_transitions
        ops = [message["op"] for message in world.server.bot_messages]
        identify = world.server.bot_messages[ops.index(0)]["d"]
        assert identify["max_dave_protocol_version"] == 1
        select = world.server.bot_messages[ops.index(1)]["d"]["data"]
        assert select["mode"] == "aead_xchacha20_poly1305_rtpsize"
        assert select["address"] == "127.0.0.1"
        assert 5 in ops  # discord.py announces its SSRC with SPEAKING
        transition = world.server.transitions_executed[-1]
        assert {"op": 23, "d": {"transition_id": transition}} in world.server.bot_messages
        assert any("speaker" in event and "commits" in event for event in world.server.dave_log)
        assert voice_client.speakers.connected_users == {world.nominee_id}


async def test_bot_commits_when_a_member_joins_after_it() -> None:
    async with voice_world() as world:
        voice_client = await world.connect()
        await wait_until(lambda: voice_client._connection.dave_session is not None)
        assert not voice_client.dave_ready()  # alone: its group is only pending

        speaker = await world.join(world.nominee_id)
        await speaker.wait_in_group()
        await wait_until(voice_client.dave_ready)

        assert voice_client.dave_members() == {world.bot_id, world.nominee_id}
        assert any(event.endswith("(bot committed)") for event in world.server.dave_log)
        neighbour = await world.join(world.neighbour_id)
        await neighbour.wait_in_group()
        await wait_until(
            lambda: (
                voice_client.dave_members() == {world.bot_id, world.nominee_id, world.neighbour_id}
            )
        )


async def test_a_member_who_leaves_is_removed_from_the_group() -> None:
    async with voice_world() as world:
        speaker = await world.join(world.nominee_id)
        neighbour = await world.join(world.neighbour_id)
        voice_client = await connected_with_dave(world)
        await speaker.play(opus_packets()[:3])
        await wait_until(lambda: voice_client.speakers.ssrc_for(world.nominee_id) == speaker.ssrc)

        await world.leave(speaker)

        await wait_until(lambda: voice_client.dave_members() == {world.bot_id, world.neighbour_id})
        await wait_until(lambda: voice_client.speakers.ssrc_for(world.nominee_id) is None)
        await wait_until(voice_client.dave_ready)
        assert neighbour.session is not None and neighbour.session.ready


async def test_bot_audio_reaches_the_fake_and_a_member_decrypts_it() -> None:
    async with voice_world() as world:
        speaker = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await speaker.wait_in_group()
        packets = opus_packets()[:5]

        for packet in packets:
            voice_client.send_audio_packet(packet, encode=False)
        await wait_until(lambda: len(world.server.bot_rtp) == len(packets))

        frames = [rtp.payload for rtp in world.server.bot_rtp]
        assert all(frame.endswith(b"\xfa\xfa") for frame in frames)
        assert speaker.session is not None
        decrypted = [
            speaker.session.decrypt(world.bot_id, davey.MediaType.audio, f) for f in frames
        ]
        assert decrypted == packets
        assert [rtp.header.ssrc for rtp in world.server.bot_rtp] == [voice_client.ssrc] * 5


async def test_bad_proposal_signature_leaves_dave_never_ready_but_the_link_up() -> None:
    async with voice_world(bad_proposal_signature=True, response_timeout=0.3) as world:
        voice_client = await world.connect()
        await wait_until(lambda: voice_client._connection.dave_session is not None)
        speaker = await world.join(world.nominee_id)

        await wait_until(lambda: any("never answered" in e for e in world.server.dave_log))

        assert not voice_client.dave_ready()
        assert not speaker.in_group.is_set()
        assert voice_client.is_connected() and voice_client.link_alive()
        # VOICE_FACTS item 7: discord.py's websocket poller died on the proposal.
        runner = voice_client._connection._runner
        assert runner is not None and runner.done()
        assert "InvalidSignature" in str(runner.exception())


async def test_drop_connection_is_seen_by_the_voice_client() -> None:
    async with voice_world() as world:
        await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)

        await world.server.drop_connection()

        await wait_until(lambda: not voice_client.link_alive())


def test_split_commit_welcome_rejects_what_is_not_a_commit() -> None:
    with pytest.raises(ValueError):
        split_commit_welcome(b"\x00\x01\x00\x01")
    with pytest.raises(ValueError):
        split_commit_welcome(b"\x00\x02\x00\x01" + bytes(20))


def test_ready_offers_the_modes_in_discords_order() -> None:
    # Discord's voice docs: AES-GCM first. discord.py must skip it (it cannot do it).
    assert OFFERED_MODES == (
        "aead_aes256_gcm_rtpsize",
        "aead_xchacha20_poly1305_rtpsize",
        "xsalsa20_poly1305_lite_rtpsize",
    )
    assert "aead_aes256_gcm_rtpsize" not in ReceivingVoiceClient.supported_modes


async def test_speakers_switch_keys_when_the_transition_executes_not_at_the_commit() -> None:
    async with voice_world(transition_delay=0.5) as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        bot_session = voice_client._connection.dave_session
        assert bot_session is not None and nominee.session is not None
        epoch = bot_session.epoch
        assert epoch is not None
        executed = len(world.server.transitions_executed)

        await world.join(world.neighbour_id)
        # The bot has the commit (op 29) and said it is ready (op 23); op 22 is half a second away.
        await wait_until(lambda: bot_session.epoch == epoch + 1)
        assert nominee.session.epoch == epoch, "the speaker still sends with the old keys"
        await wait_until(lambda: len(world.server.transitions_executed) > executed)
        await wait_until(lambda: nominee.session is not None and nominee.session.epoch == epoch + 1)
        ready = [m["d"]["transition_id"] for m in world.server.bot_messages if m["op"] == 23]
        assert world.server.transitions_executed[-1] in ready, "op 23 came before op 22"


async def test_a_client_without_dave_downgrades_the_call_and_its_leaving_upgrades_it() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        connection = voice_client._connection

        legacy = await world.join(world.neighbour_id, dave=False)
        await wait_until(
            lambda: connection.dave_protocol_version == 0 and connection.dave_downgraded
        )
        downgrade = world.server.downgrades[0]
        ops = [(m["op"], m["d"].get("transition_id")) for m in world.server.bot_messages]
        assert (23, downgrade) in ops, "the bot got op 21 and answered op 23"
        assert downgrade in world.server.transitions_executed
        assert nominee.mode == "plain" and legacy.mode == "plain"

        await world.leave(legacy)
        await wait_until(lambda: voice_client.dave_ready() and not connection.dave_downgraded)
        assert connection.dave_protocol_version == 1
        assert voice_client.dave_members() == {world.bot_id, world.nominee_id}
        assert "upgrading to DAVE: a new group" in world.server.dave_log
        await wait_until(lambda: nominee.mode == "e2ee")


async def test_a_sole_remaining_member_is_reset_and_founds_the_next_group() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()

        await world.leave(nominee)
        await wait_until(lambda: f"sole member {world.bot_id} is reset" in world.server.dave_log)
        await wait_until(lambda: not voice_client.dave_ready())
        founded = f"{world.bot_id} founds the group"
        await wait_until(lambda: any(founded in event for event in world.server.dave_log))

        neighbour = await world.join(world.neighbour_id)
        await neighbour.wait_in_group()
        await wait_until(lambda: voice_client.dave_members() == {world.bot_id, world.neighbour_id})


async def test_a_speaker_left_alone_by_the_bot_sends_nothing_until_a_new_group_takes_him() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()

        async def hang_up() -> None:
            # The bot leaves while he talks: he is the sole member, reset to a pending group.
            await voice_client.disconnect(force=True)
            await wait_until(
                lambda: f"sole member {world.nominee_id} is reset" in world.server.dave_log
            )

        sent = await nominee.play(opus_packets()[:6], at={3: hang_up})
        assert [packet.index for packet in sent] == [0, 1, 2], "libdave has no key: nothing is sent"
        assert nominee.mode == "pending" and not nominee.in_group.is_set()
        assert nominee.session is not None and not nominee.session.ready

        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        assert voice_client.dave_members() == {world.bot_id, world.nominee_id}
        assert len(await nominee.play(opus_packets()[6:9])) == 3


async def test_a_reconnecting_client_comes_back_with_a_new_ssrc_and_counters() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        first = await nominee.play(opus_packets()[:5])
        old_ssrc = nominee.ssrc

        await nominee.reconnect(away=1.0)
        await nominee.wait_in_group()
        second = await nominee.play(opus_packets()[5:10])

        assert (
            nominee.ssrc != old_ssrc
            and voice_client.speakers.ssrc_for(world.nominee_id) == nominee.ssrc
        )
        assert voice_client.speakers.user_for(old_ssrc) is None
        assert (first[0].sequence, first[0].timestamp) == (0, 0)
        assert (second[0].sequence, second[0].timestamp) != (5, 5 * 960), "new random counters"
        assert second[0].sent_at - first[-1].sent_at >= 1.0
        assert voice_client.dave_members() == {world.bot_id, world.nominee_id}
