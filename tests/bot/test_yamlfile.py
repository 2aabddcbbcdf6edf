"""bot/yamlfile.py: libyaml's parser, duplicate keys refused, PyYAML's own words for a bad file."""

import pytest
import yaml

from bot.yamlfile import YamlFileError, parse_yaml, parse_yaml_node


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_files_are_parsed_by_libyaml():
    data, root = parse_yaml_node("a: 1\nsteps:\n  - x\n  - y\n")
    assert data == {"a": 1, "steps": ["x", "y"]}
    # libyaml's marks are its own type; PyYAML's pure parser makes yaml.Mark
    assert type(root.start_mark).__module__ == "yaml._yaml"


def test_the_node_tree_keeps_every_line():
    text = "# a comment\nseed: 3\n\nsteps:\n  - a b\n  # between\n  - c d\n  - {e: f}\n"
    data, root = parse_yaml_node(text)
    assert data["steps"] == ["a b", "c d", {"e": "f"}]
    steps = dict((k.value, v) for k, v in root.value)["steps"]
    assert [item.start_mark.line + 1 for item in steps.value] == [5, 7, 8]


def test_an_empty_text_is_none():
    assert parse_yaml_node("") == (None, None)
    assert parse_yaml("# nothing\n") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb:\n  c: 2\n  c: 3\n", "duplicate key 'c' at line 4 (first at line 3)"),
        ("x: {k: 1, k: 2}\n", "duplicate key 'k' at line 1 (first at line 1)"),
        ("base: &b {k: 1}\nm:\n  <<: *b\n  k: 2\n  <<: *b\n", None),
    ],
)
def test_duplicate_keys(text, message):
    if message is None:  # "<<" merges may repeat, and their keys may be overridden
        assert parse_yaml(text)["m"] == {"k": 2}
        return
    with pytest.raises(YamlFileError) as error:
        parse_yaml(text)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # libyaml says "did not find expected ',' or '}'": PyYAML says what it found
        (
            "cities: {V: {a: citizen\nsteps: [",
            "unparsable YAML at line 2: expected ',' or '}', but got ':'",
        ),
        ("a: b: c\n", "unparsable YAML at line 1: mapping values are not allowed here"),
        (
            "\tx: 1\n",
            "unparsable YAML at line 1: found character '\\t' that cannot start any token",
        ),
    ],
)
def test_a_file_libyaml_refuses_is_named_in_pyyamls_words(text, message):
    with pytest.raises(YamlFileError) as error:
        parse_yaml(text)
    assert str(error.value) == message
