"""The README's five-line host guide names every command under its real Russian name."""

from __future__ import annotations

import re
from pathlib import Path

from cogs.mentions import localised_name

README = Path(__file__).resolve().parents[2] / "README.md"
#: "`/host extend 10m` (`/ведущий продлить 10м`)": the command, an optional duration, its Russian name
PAIR = re.compile(r"`/([a-z ]+?)(?: \d+[a-z]*)?` \(`/([а-яё ]+?)(?: \d+[а-яё]*)?`")


def test_the_first_screen_has_five_lines_with_each_command_beside_its_russian_name():
    text = README.read_text(encoding="utf-8")
    guide = text[text.index("**Host a game in five lines**") : text.index("## Run the bot")]
    steps = [line for line in guide.splitlines() if re.match(r"\d\. ", line)]
    assert len(steps) == 5
    assert text.index("**Host a game in five lines**") < 3000, "not on the first screen"
    assert text.index("Install everything") < text.index("**Host a game in five lines**"), (
        "the two commands come first"
    )
    pairs = PAIR.findall(guide)
    assert len(pairs) >= 14
    for english, russian in pairs:
        assert localised_name("ru", english) == russian, (english, russian)
    assert ("host extend", "ведущий продлить") in pairs and (
        "host cohost add",
        "ведущий соведущий добавить",
    ) in pairs
