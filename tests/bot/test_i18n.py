"""Every player-facing string exists in Russian and English."""

import ast
import re
from pathlib import Path

import pytest

from bot.i18n import catalogue, key_str, plural_tags, t
from bot.translator import CatalogueTranslator
from rules import CODES, Cause, Stage, Status, Winner
from rules.events import GodfatherReason

ROOT = Path(__file__).resolve().parents[2]
# call name -> index of the argument that is a catalogue key
KEY_ARGUMENT = {"phrase": 1, "t": 1, "say": 0, "key_str": 1, "UserError": 0}
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def literal_keys() -> set[str]:
    keys = set()
    for folder in ("bot", "cogs"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                index = KEY_ARGUMENT.get(name or "")
                if index is None or len(node.args) <= index:
                    continue
                argument = node.args[index]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    keys.add(argument.value)
    return keys


def dynamic_keys() -> set[str]:
    keys = {f"error.{code}" for code in CODES}
    keys |= {f"status.{s.value}" for s in Status} | {f"role.help.{s.value}" for s in Status}
    keys |= {f"cause.{c.value}" for c in Cause} | {f"cause_short.{c.value}" for c in Cause}
    keys |= {f"stage.{s.value}" for s in Stage}
    keys |= {f"decided.{w.value}" for w in Winner} | {f"winner.{w.value}" for w in Winner}
    keys |= {f"mafia.godfather_{r.value}" for r in GodfatherReason}
    keys |= {f"answer.{a}" for a in ("same", "different", "mafia", "not mafia")}
    keys |= {f"reminder.{s}" for s in ("discussion", "voting", "night")}
    keys |= {f"phase_name.{k}" for k in ("day", "night")}
    keys |= {f"lobby.state_{s}" for s in ("lobby", "running", "over", "cancelled")}
    keys |= {
        f"lastword.outcome.{o}"
        for o in (
            "complete",
            "stopped",
            "left",
            "not_joined",
            "connection_lost",
            "no_audio",
            "dave_failed",
        )
    }
    keys |= {
        f"upload.{c}"
        for c in (
            "upload_too_large",
            "upload_empty",
            "upload_not_audio",
            "upload_corrupt",
            "upload_unsupported",
            "upload_too_short",
            "upload_silent",
        )
    }
    keys |= {
        f"{base}{tour}"
        for base in ("mafia.decision", "mafia.proposal", "reply.decision", "reply.proposal")
        for tour in ("", "_tour")
    }
    return keys


def test_both_languages_have_the_same_keys():
    ru, en = set(catalogue("ru")), set(catalogue("en"))
    assert ru - en == set(), "missing in English"
    assert en - ru == set(), "missing in Russian"


def test_every_key_the_code_uses_exists():
    used = literal_keys() | dynamic_keys()
    assert len(used) > 200
    missing = sorted(
        key for key in used if key not in catalogue("ru") or key not in catalogue("en")
    )
    assert missing == []


def forms(entry: str | dict[str, str]) -> list[str]:
    """Every text of a catalogue entry (its plural forms, or the text itself)."""
    if isinstance(entry, str):
        return [entry]
    return [text for tag, text in entry.items() if tag != "by"]


def test_placeholders_agree_between_languages():
    for key, russian in catalogue("ru").items():
        english = catalogue("en")[key]
        expected = {name for text in forms(russian) for name in PLACEHOLDER.findall(text)}
        for text in forms(russian) + forms(english):
            assert set(PLACEHOLDER.findall(text)) == expected, key


@pytest.mark.parametrize("language", ["ru", "en"])
def test_plural_entries_have_every_cldr_form_and_name_their_number(language):
    for key, entry in catalogue(language).items():
        if isinstance(entry, str):
            continue
        number = entry.get("by", "count")
        assert set(entry) - {"by"} == set(plural_tags(language)), (key, sorted(entry))
        for text in forms(entry):
            assert "{" + number + "}" in text, (key, text)


@pytest.mark.parametrize(
    ("language", "count", "expected"),
    [
        ("ru", 1, "1 игрок"),
        ("ru", 2, "2 игрока"),
        ("ru", 5, "5 игроков"),
        ("ru", 11, "11 игроков"),
        ("ru", 21, "21 игрок"),
        ("ru", 22, "22 игрока"),
        ("ru", 0, "0 игроков"),
        ("ru", 112, "112 игроков"),
        ("en", 1, "1 player"),
        ("en", 0, "0 players"),
        ("en", 21, "21 players"),
    ],
)
def test_numbers_take_their_cldr_plural_form(language, count, expected):
    assert t(language, "lobby.players", count=count, players="—") == f"{expected}: —"


def test_a_plural_entry_without_its_number_takes_the_other_form():
    assert t("ru", "lobby.players", players="—") == "{count} игрока: —"


def test_texts_are_really_translated():
    same = [
        key
        for key, entry in catalogue("ru").items()
        if entry == catalogue("en")[key]
        and any(re.search("[a-z]{4}", PLACEHOLDER.sub("", text)) for text in forms(entry))
    ]
    assert same == [], "English left in the Russian catalogue"


def test_a_missing_key_or_parameter_never_raises():
    assert t("en", "no.such.key") == "no.such.key"
    assert "{when}" in t("ru", "deadline.at")
    assert t("de", "status.mafioso") == "мафиози"


@pytest.mark.parametrize(
    ("locale", "expected"), [("ru", "новая"), ("en-US", "new"), ("en-GB", "new")]
)
async def test_the_translator_localises_command_names(locale, expected):
    import discord

    translated = await CatalogueTranslator().translate(
        key_str("cmd.mafia.new.name"),
        discord.Locale(locale),
        None,  # type: ignore[arg-type]
    )
    assert translated == expected
    assert (
        await CatalogueTranslator().translate(
            key_str("cmd.mafia.new.name"),
            discord.Locale("fr"),
            None,  # type: ignore[arg-type]
        )
        is None
    )


#: an English clause that tells the user what to do starts with one of these
ENGLISH_IMPERATIVES = (
    "pick",
    "choose",
    "wait",
    "join",
    "name",
    "send",
    "record",
    "check",
    "grant",
    "run",
    "have",
    "give",
    "use",
    "set",
    "remove",
    "fix",
    "vote",
    "propose",
    "export",
    "change",
    "take",
    "ask",
    "kill",
    "nominate",
    "follow",
    "open",
    "tell",
    "please try",
    "try",
    "say",
    "learn",
    "record",
    "turn",
    "get",
    "press",
)


def tells_what_to_do(language: str, text: str) -> bool:
    """A refusal that says what to do instead: it names a command to use, or a clause of it is an
    instruction (a Russian imperative, «выберите», «дождитесь»; an English one, "pick", "wait")."""
    if "{cmd_" in text or "{rules}" in text:
        return True
    words = re.findall(r"[\w-]+", PLACEHOLDER.sub("", text).casefold())
    if language == "ru":
        return any(re.fullmatch(r"\w+(те|тесь)", word) for word in words)
    clauses = re.split(r"[:;.—,]\s+| and | or ", PLACEHOLDER.sub("X", text).casefold())
    return any(clause.strip().startswith(ENGLISH_IMPERATIVES) for clause in clauses)


@pytest.mark.parametrize("language", ["ru", "en"])
def test_every_refusal_says_what_was_wrong_and_what_to_do_instead(language):
    vague = []
    for key, entry in catalogue(language).items():
        if not key.startswith(("error.", "upload.")):
            continue
        for text in forms(entry):
            if not tells_what_to_do(language, text) or len(PLACEHOLDER.sub("", text)) < 40:
                vague.append(f"{key}: {text}")
    assert vague == []


def test_the_wrong_stage_is_not_just_wrong_stage():
    for language in ("ru", "en"):
        for kind in ("discussion", "voting", "day", "night", "execution"):
            assert len(t(language, f"wrong_stage.{kind}")) > 30
